//! Classifying a call for the scheduler: may it run beside other concurrency-safe calls? As in
//! Claude Code, the tool is asked (`is-concurrency-safe`, with no capabilities) only once its
//! input passed the schema; an unknown tool, a schema failure, a trap or a timeout all mean
//! "no". The schema check's outcome travels with the call, so the pipeline does not check the
//! same input twice.

use crate::ToolUse;
use crate::call::CallOptions;
use crate::call::ctx::{Access, CallCtx};
use crate::call::refusal::Refusal;
use crate::invoke::IsConcurrencySafe;
use crate::registry::{LoadedTool, Runtime};
use crate::turns::session::SessionView;
use std::sync::Arc;

/// A call classified by [`Runtime::check`], ready for [`Runtime::call_admitted`].
pub struct CheckedCall {
    pub(crate) tool_use: ToolUse,
    pub(crate) schema: Schema,
    safe: bool,
}

impl std::fmt::Debug for CheckedCall {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CheckedCall").field("tool_use", &self.tool_use).field("safe", &self.safe).finish()
    }
}

impl CheckedCall {
    /// Whether the call may run beside other concurrency-safe calls.
    pub fn is_concurrency_safe(&self) -> bool {
        self.safe
    }

    /// The call.
    pub fn tool_use(&self) -> &ToolUse {
        &self.tool_use
    }

    /// A call not classified (the turn is aborted): unsafe, its input checked when it runs.
    pub(crate) fn unchecked(tool_use: ToolUse) -> Self {
        CheckedCall { tool_use, schema: Schema { tool: None, outcome: None }, safe: false }
    }
}

/// The schema check made while classifying, and the tool it was made against.
pub(crate) struct Schema {
    tool: Option<Arc<LoadedTool>>,
    /// The input as JSON text for the guest, or the check's refusal.
    outcome: Option<Result<String, Refusal>>,
}

impl Schema {
    /// The outcome, when it was checked against `tool` itself (not a same-named tool of
    /// another runtime, e.g. before an MCP server's reload).
    pub(crate) fn for_tool(self, tool: &Arc<LoadedTool>) -> Option<Result<String, Refusal>> {
        let same = self.tool.as_ref().is_some_and(|checked| Arc::ptr_eq(checked, tool));
        if same { self.outcome } else { None }
    }
}

impl Runtime {
    /// Classify a call: check its input against the tool's schema and, when it passes, ask the
    /// tool whether the call is concurrency-safe. Never fails: whatever goes wrong makes the
    /// call unsafe, and the pipeline reports it when the call runs.
    pub async fn check(&self, tool_use: ToolUse) -> CheckedCall {
        let Some(tool) = self.lookup(&tool_use.name) else {
            return CheckedCall::unchecked(tool_use);
        };
        let tool = &tool;
        let outcome = self.check_input(tool, &tool_use.input, "");
        let safe = match &outcome {
            // A kind that cannot say: what the config says, or not.
            Ok(_) if !tool.info.kind.describes_itself() => tool.concurrency_safe,
            Ok(input) => {
                let options = CallOptions::default();
                let cx = CallCtx::new(tool, &tool_use, SessionView::empty(), Access::Nothing, &options);
                matches!(self.invoke(&cx, Access::Nothing, IsConcurrencySafe(input), Vec::new()).await, Ok(true))
            }
            Err(_) => false,
        };
        CheckedCall { tool_use, schema: Schema { tool: Some(tool.clone()), outcome: Some(outcome) }, safe }
    }
}
