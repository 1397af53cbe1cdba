//! Where a call's progress and log messages go, and who answers its questions: one place for
//! a component's call and an MCP server's alike.

use crate::call::ctx::CallCtx;
use crate::registry::Runtime;
use crate::sandbox::state::ProgressTo;
use std::sync::Arc;

impl Runtime {
    /// Where a call's progress and log messages go: the events and the call's own options.
    /// A component's and an MCP server's tool alike.
    pub(crate) fn progress_to(&self, cx: &CallCtx<'_>) -> Option<ProgressTo> {
        ProgressTo::new(
            self.events.clone(),
            cx.options.progress.clone(),
            cx.options.log.clone(),
            &cx.tool_use.id,
            &cx.tool.info.name,
        )
    }

    /// Who answers a call's questions: the call's decider, else the runtime's, else nobody.
    pub(crate) fn asker_of(&self, cx: &CallCtx<'_>) -> Arc<dyn crate::PermissionDecider> {
        cx.options.decider.clone().or_else(|| self.decider.clone()).unwrap_or_else(|| Arc::new(Nobody))
    }
}

/// Who answers when nobody can: every question is cancelled (the trait's default).
struct Nobody;

#[async_trait::async_trait]
impl crate::PermissionDecider for Nobody {
    async fn ask(&self, _request: &crate::AskRequest) -> crate::AskAnswer {
        crate::AskAnswer::Deny(None)
    }
}
