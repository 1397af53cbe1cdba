//! One `tool_use` → exactly one `tool_result`: lookup, input size, JSON Schema, the tool's
//! `validate` (no capabilities), `call` on a fresh store with the granted capabilities, and
//! the mapping of whatever happened. Every path out produces a result with the same id.

use crate::ToolUse;
use crate::bindings::WitToolError;
use crate::event::Event;
use crate::invoke::{Export, InvokeCtx, Returned, invoke};
use crate::outcome::{Failure, INTERRUPTED, OutcomeKind};
use crate::result::{ToolResult, map_output};
use crate::runtime::{LoadedTool, Runtime};
use crate::session::Session;
use crate::state::CallEnv;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Instant;
use tokio_util::sync::CancellationToken;

/// Context updates a call asks for, in order (`None` deletes).
pub(crate) type Updates = Vec<(String, Option<String>)>;

/// What a guest export may reach.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Access {
    /// Nothing at all (`is-concurrency-safe`, `validate`).
    Nothing,
    /// The tool's effective grant.
    Granted,
    /// The effective grant with every directory read-only: a call inside a parallel batch.
    /// A tool that claimed to be concurrency-safe and writes gets a denial, not a race.
    ReadOnly,
}

impl Runtime {
    /// Run one call through the whole pipeline and apply its context updates to `session`.
    /// Never fails: every failure is an `is_error` result carrying `tool_use.id`.
    pub async fn call(&self, session: &Session, tool_use: &ToolUse) -> ToolResult {
        self.call_cancellable(session, tool_use, &CancellationToken::new()).await
    }

    /// [`Runtime::call`] that `cancel` can interrupt: the result is then an error
    /// ("Interrupted by user"), still carrying the call's id.
    pub async fn call_cancellable(
        &self,
        session: &Session,
        tool_use: &ToolUse,
        cancel: &CancellationToken,
    ) -> ToolResult {
        let (result, updates) = self.run_one(tool_use, session.snapshot(), Access::Granted, cancel).await;
        session.apply(updates);
        result
    }

    /// Whether a call may run beside other concurrency-safe calls: asked of the tool (with no
    /// capabilities) only when the input passes the schema; an unknown tool, a schema
    /// failure, a trap or a timeout all mean "no".
    pub async fn is_concurrency_safe(&self, tool_use: &ToolUse) -> bool {
        let Some(tool) = self.tools.get(&tool_use.name) else { return false };
        let Ok(input) = self.check_input(tool, tool_use) else { return false };
        let context = Arc::default();
        matches!(
            self.invoke(
                tool,
                tool_use,
                &context,
                Access::Nothing,
                &CancellationToken::new(),
                Export::IsConcurrencySafe(&input)
            )
            .await,
            Ok(Returned::IsConcurrencySafe(true))
        )
    }

    /// The pipeline without applying context updates (the batch runner applies them later).
    pub(crate) async fn run_one(
        &self,
        tool_use: &ToolUse,
        context: Arc<BTreeMap<String, String>>,
        access: Access,
        cancel: &CancellationToken,
    ) -> (ToolResult, Updates) {
        let started = Instant::now();
        let (result, updates) = match self.tools.get(&tool_use.name) {
            None => (
                ToolResult::error(
                    &tool_use.id,
                    OutcomeKind::UnknownTool,
                    format!("<tool_use_error>Error: No such tool available: {}</tool_use_error>", tool_use.name),
                ),
                Vec::new(),
            ),
            Some(_) if cancel.is_cancelled() => {
                (ToolResult::error(&tool_use.id, OutcomeKind::Interrupted, INTERRUPTED), Vec::new())
            }
            Some(tool) => self.run_tool(tool, tool_use, context, access, cancel).await,
        };
        self.emit(|| Event::Finish {
            id: tool_use.id.clone(),
            tool: tool_use.name.clone(),
            outcome: result.outcome,
            duration_ms: started.elapsed(),
        });
        (result, updates)
    }

    async fn run_tool(
        &self,
        tool: &LoadedTool,
        tool_use: &ToolUse,
        context: Arc<BTreeMap<String, String>>,
        access: Access,
        cancel: &CancellationToken,
    ) -> (ToolResult, Updates) {
        let id = &tool_use.id;
        let name = &tool.info.name;
        let input = match self.check_input(tool, tool_use) {
            Ok(input) => input,
            Err(result) => return (result, Vec::new()),
        };

        // validate: the tool's own check, with no capabilities.
        match self.invoke(tool, tool_use, &context, Access::Nothing, cancel, Export::Validate(&input)).await {
            Ok(Returned::Validate(Ok(()))) => {}
            Ok(Returned::Validate(Err(message))) => {
                return (
                    ToolResult::error(
                        id,
                        OutcomeKind::ValidateError,
                        format!("<tool_use_error>{message}</tool_use_error>"),
                    ),
                    Vec::new(),
                );
            }
            Ok(_) => unreachable!("validate returns a validation result"),
            Err(f) => return (failure(id, f, "validate"), Vec::new()),
        }

        if cancel.is_cancelled() {
            return (ToolResult::error(id, OutcomeKind::Interrupted, INTERRUPTED), Vec::new());
        }
        self.emit(|| Event::Start { id: id.clone(), tool: name.clone() });
        let output = match self.invoke(tool, tool_use, &context, access, cancel, Export::Call(&input)).await {
            Ok(Returned::Call(Ok(output))) => output,
            Ok(Returned::Call(Err(e))) => {
                let (kind, message) = match e {
                    WitToolError::InvalidInput(m) => (OutcomeKind::InvalidInput, m),
                    WitToolError::Denied(m) => (OutcomeKind::Denied, m),
                    WitToolError::Failed(m) => (OutcomeKind::Failed, m),
                };
                let message = if message.trim().is_empty() {
                    format!("Tool {name} failed ({kind}) without a message.")
                } else {
                    message
                };
                return (ToolResult::error(id, kind, message), Vec::new());
            }
            Ok(_) => unreachable!("call returns a call result"),
            Err(f) => return (failure(id, f, "call"), Vec::new()),
        };

        let size: usize = output
            .content
            .iter()
            .map(|b| match b {
                crate::bindings::WitContentBlock::Text(t) => t.len(),
                crate::bindings::WitContentBlock::Image(i) => i.data.len(),
            })
            .sum::<usize>()
            + output
                .context_updates
                .iter()
                .map(|u| u.key.len() + u.value.as_ref().map_or(0, String::len))
                .sum::<usize>();
        if size > tool.limits.max_output_bytes {
            let message = format!(
                "Tool {name} returned {size} bytes, more than its limit of {} (max_output_bytes).",
                tool.limits.max_output_bytes
            );
            return (ToolResult::error(id, OutcomeKind::OutputLimit, message), Vec::new());
        }
        let updates = output.context_updates.into_iter().map(|u| (u.key, u.value)).collect();
        match map_output(name, id, output.content, tool.limits.max_result_chars, &self.results_dir) {
            Ok(result) => (result, updates),
            Err(message) => (ToolResult::error(id, OutcomeKind::Failed, message), Vec::new()),
        }
    }

    /// Input size and JSON Schema. Returns the input as JSON text for the guest.
    fn check_input(&self, tool: &LoadedTool, tool_use: &ToolUse) -> Result<String, ToolResult> {
        let id = &tool_use.id;
        let name = &tool.info.name;
        let input = serde_json::to_string(&tool_use.input).unwrap_or_default();
        if input.len() > tool.limits.max_input_bytes {
            return Err(ToolResult::error(
                id,
                OutcomeKind::SchemaError,
                format!(
                    "<tool_use_error>InputValidationError: the input is {} bytes, more than {name}'s limit of {} (max_input_bytes)</tool_use_error>",
                    input.len(),
                    tool.limits.max_input_bytes
                ),
            ));
        }
        let issues: Vec<String> = tool
            .validator
            .iter_errors(&tool_use.input)
            .map(|e| {
                let path = e.instance_path().to_string();
                format!("- {}: {e}", if path.is_empty() { "(root)".to_string() } else { format!("`{path}`") })
            })
            .collect();
        if !issues.is_empty() {
            let n = issues.len();
            return Err(ToolResult::error(
                id,
                OutcomeKind::SchemaError,
                format!(
                    "<tool_use_error>InputValidationError: {name} failed due to the following {}:\n{}</tool_use_error>",
                    if n == 1 { "issue" } else { "issues" },
                    issues.join("\n")
                ),
            ));
        }
        Ok(input)
    }

    async fn invoke(
        &self,
        tool: &LoadedTool,
        tool_use: &ToolUse,
        context: &Arc<BTreeMap<String, String>>,
        access: Access,
        cancel: &CancellationToken,
        export: Export<'_>,
    ) -> Result<Returned, Failure> {
        let call_env = CallEnv {
            context: context.clone(),
            workspace_json: self.workspace_json.clone(),
            progress: self
                .events
                .clone()
                .map(|s| (s, Arc::from(tool_use.id.as_str()), Arc::from(tool.info.name.as_str()))),
        };
        let cx = InvokeCtx {
            engine: &self.engine,
            pre: &tool.pre,
            tool: &tool.info.name,
            limits: &tool.limits,
            workspace: &self.workspace,
            env_vars: &self.env,
            call_env,
            grant: match access {
                Access::Nothing => None,
                Access::Granted => Some(&tool.effective),
                Access::ReadOnly => Some(&tool.effective_read_only),
            },
            pool: Some(&tool.pure_pool),
            cancel,
        };
        invoke(cx, export).await
    }

    fn emit(&self, event: impl FnOnce() -> Event) {
        if let Some(sink) = &self.events {
            sink(event());
        }
    }
}

/// A failure as an error result; the stage is named when it is not the call itself.
fn failure(id: &str, f: Failure, stage: &str) -> ToolResult {
    let message = if stage == "call" { f.message } else { format!("{} (in `{stage}`)", f.message) };
    ToolResult::error(id, f.kind, message)
}
