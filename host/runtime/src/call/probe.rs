//! A tool's pure exports called directly, outside the pipeline: what `toolhost test` needs to
//! check that `validate` and `is-concurrency-safe` answer the same way every time and never
//! trap. Both run exactly as the pipeline runs them (no capabilities, the tool's limits, the
//! per-tool pool of instances that served them well), so what a probe sees is what a call
//! would meet; only the answer is handed back instead of being folded into a result.

use crate::ToolUse;
use crate::call::CallOptions;
use crate::call::ctx::{Access, CallCtx};
use crate::call::outcome::OutcomeKind;
use crate::invoke::{Export, IsConcurrencySafe, Validate};
use crate::registry::Runtime;
use crate::turns::session::SessionView;
use serde_json::Value;

/// What a probed export did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Probe<T> {
    /// It returned this answer.
    Answered(T),
    /// It did not return: trapped, ran out of time, memory or fuel, or the host failed.
    Failed {
        /// How it ended (`panic`, `stack_overflow`, `timeout`, …).
        outcome: OutcomeKind,
        /// What the host knows of it (the panic message, the trap).
        message: String,
    },
}

impl Runtime {
    /// Call `tool`'s `validate` on `input` (as JSON text, as the pipeline passes it) with no
    /// capabilities. `None` when no toolhost tool of that name is loaded (a function or
    /// command program has no `validate`).
    pub async fn probe_validate(&self, tool: &str, input: &Value) -> Option<Probe<Result<(), String>>> {
        let text = serde_json::to_string(input).unwrap_or_default();
        self.probe(tool, input, Validate(&text)).await
    }

    /// Call `tool`'s `is-concurrency-safe` on `input` with no capabilities (`None` as for
    /// [`Runtime::probe_validate`]).
    pub async fn probe_concurrency_safe(&self, tool: &str, input: &Value) -> Option<Probe<bool>> {
        let text = serde_json::to_string(input).unwrap_or_default();
        self.probe(tool, input, IsConcurrencySafe(&text)).await
    }

    async fn probe<E: Export>(&self, name: &str, input: &Value, export: E) -> Option<Probe<E::Output>> {
        let tool = self.pool.component(name)?;
        if !tool.info.kind.describes_itself() {
            return None;
        }
        let tool_use = ToolUse::new("probe", name, input.clone());
        let options = CallOptions::default();
        let cx = CallCtx::new(tool, &tool_use, SessionView::empty(), Access::Nothing, &options);
        Some(match self.invoke(&cx, Access::Nothing, export, Vec::new()).await {
            Ok(answer) => Probe::Answered(answer),
            Err(f) => Probe::Failed { outcome: f.kind, message: f.message },
        })
    }
}
