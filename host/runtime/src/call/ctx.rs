//! One call's context: what every step of [`crate::call::pipeline`] reads about the call,
//! passed as one value, and what the call's guest exports may reach.

use crate::ToolUse;
use crate::call::CallOptions;
use crate::registry::LoadedTool;
use crate::turns::session::SessionView;
use tokio_util::sync::CancellationToken;

/// What a guest export may reach.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Access {
    /// Nothing at all (`is-concurrency-safe`, `validate`).
    Nothing,
    /// The tool's effective grant.
    Granted,
    /// The effective grant with every directory read-only: a call running beside other
    /// concurrency-safe calls. A tool that claimed to be concurrency-safe and writes gets a
    /// denial, not a race.
    ReadOnly,
}

/// One call on its way through the steps: what every step reads about it, passed as one
/// value (the steps themselves are in [`crate::Runtime`]'s `run_one`, in order, the permission step
/// in [`crate::call::permission`], the hooks in [`crate::hooks`], the store in [`crate::invoke`]).
pub(crate) struct CallCtx<'a> {
    pub tool: &'a LoadedTool,
    pub tool_use: &'a ToolUse,
    /// The session as the call sees it: its context, and what a person allowed in it.
    pub view: SessionView,
    /// What the call itself may reach (`validate` and `is-concurrency-safe` get nothing).
    pub access: Access,
    pub options: &'a CallOptions,
    /// The hosts the call tried to reach (see [`crate::sandbox::net::HostLog`], reported in
    /// [`Event::Finish`]).
    pub hosts: crate::sandbox::net::HostLog,
    /// The tier of the code the call's last export ran (reported in [`Event::Finish`]).
    pub tier: std::sync::Mutex<Option<crate::Tier>>,
    /// Where its time went and what its guest said (reported in [`Event::Finish`]).
    pub trace: std::sync::Mutex<crate::CallTrace>,
}

impl<'a> CallCtx<'a> {
    pub(crate) fn new(
        tool: &'a LoadedTool,
        tool_use: &'a ToolUse,
        view: SessionView,
        access: Access,
        options: &'a CallOptions,
    ) -> Self {
        CallCtx {
            tool,
            tool_use,
            view,
            access,
            options,
            hosts: crate::sandbox::net::HostLog::default(),
            tier: std::sync::Mutex::new(None),
            trace: std::sync::Mutex::default(),
        }
    }

    pub(crate) fn id(&self) -> &str {
        &self.tool_use.id
    }

    pub(crate) fn name(&self) -> &str {
        &self.tool.info.name
    }

    /// Add the time since `started` to `step` of the call's trace.
    pub(crate) fn step(&self, step: &'static str, started: std::time::Instant) {
        self.trace.lock().unwrap_or_else(|e| e.into_inner()).add(step, started.elapsed());
    }

    pub(crate) fn cancel(&self) -> &CancellationToken {
        &self.options.cancel
    }
}
