//! One `tool_use` → exactly one `tool_result`: lookup, input size, JSON Schema, the tool's
//! `validate` (no capabilities), PreToolUse hooks, the permission check, `call` on a fresh
//! store with the granted capabilities, PostToolUse hooks, and the mapping of whatever
//! happened. Every path out produces a result with the same id.

use crate::ToolUse;
use crate::call::CallOptions;
use crate::call::classify::{CheckedCall, Schema};
use crate::call::ctx::{Access, CallCtx};
use crate::call::outcome::{OutcomeKind, tool_error};
use crate::call::permission::canonical_url_input;
use crate::call::refusal::{Refusal, RefusalKind};
use crate::call::result::ContentBlock;
use crate::call::result::{ToolResult, map_output};
use crate::event::Event;
use crate::hooks::{Combined, ForCall, HookEvent};
use crate::invoke::{Call, CallFunction, CallReturn, RunCommand, Validate};
use crate::kinds::ToolKind;
use crate::kinds::command::CommandInput;
use crate::registry::{LoadedTool, Runtime};
use crate::turns::schedule::Running;
use crate::turns::session::{ContextFull, Session, SessionView, growth};
use serde_json::Value;
use std::borrow::Cow;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};
use toolhost_policy::Decision;

/// Context updates a call asks for, in order (`None` deletes), inside its tool's namespace.
#[derive(Debug, Default)]
pub(crate) struct Updates {
    pub namespace: Arc<str>,
    pub list: Vec<(String, Option<String>)>,
}

impl Runtime {
    /// Run one call through the whole pipeline and apply its context updates to `session`.
    /// Never fails: every failure is an `is_error` result carrying `tool_use.id`; a cancelled
    /// call's is "Interrupted by user".
    ///
    /// The call takes its turn in the runtime's [`crate::Scheduler`] like every call of a turn
    /// or an MCP request: calls made at once from several tasks never run a tool that is not
    /// concurrency-safe beside another call, and at most `max_concurrency` run together. When
    /// the scheduler is idle the call is admitted at once to run alone with its full grant,
    /// without asking the tool whether it is safe (running alone is allowed to every call);
    /// otherwise it is classified first ([`Runtime::check`]) and admitted as its class says.
    pub async fn call(&self, session: &Session, tool_use: &ToolUse, options: CallOptions) -> ToolResult {
        if !self.scheduler.is_idle() {
            return self.run_single(session, tool_use.clone(), options).await;
        }
        let ticket = self.scheduler.ticket();
        let admitted = tokio::select! {
            admitted = ticket.admit(false) => admitted,
            () = options.cancel.cancelled() => return self.interrupted(tool_use),
        };
        let (mut result, updates) = self.run_one(tool_use, None, session.view(), Access::Granted, &options).await;
        self.apply_updates(session, updates, Some(&mut result));
        drop(admitted);
        result
    }

    /// The result of a call cancelled before it ran (while it waited for its turn), with the
    /// [`Event::Finish`] every call has, so the audit log has its line.
    pub fn interrupted(&self, tool_use: &ToolUse) -> ToolResult {
        let result = Refusal::interrupted().into_result(&tool_use.id);
        self.finished(tool_use, &result, Duration::ZERO, Vec::new(), None, Arc::default());
        result
    }

    /// Run a classified call ([`Runtime::check`]) that its scheduler admitted
    /// ([`crate::Ticket::admit`], with the ticket taken when the call arrived, so calls run in
    /// arrival order): admitted as concurrency-safe, it runs with its directories read-only
    /// (beside other safe calls, a tool that claimed to be safe and writes gets a denial, not a
    /// race); otherwise with its full grant. Its context updates are applied when it finishes,
    /// before `admitted` is released.
    pub async fn call_admitted(
        &self,
        session: &Session,
        call: CheckedCall,
        admitted: Running,
        options: CallOptions,
    ) -> ToolResult {
        let access = if admitted.is_safe() { Access::ReadOnly } else { Access::Granted };
        let (mut result, updates) =
            self.run_one(&call.tool_use, Some(call.schema), session.view(), access, &options).await;
        self.apply_updates(session, updates, Some(&mut result));
        drop(admitted);
        result
    }

    /// Apply one call's context updates to `session`. Updates that would pass the session's
    /// bound are dropped whole, and the call's result (when not yet handed out) says so.
    pub(crate) fn apply_updates(&self, session: &Session, updates: Updates, result: Option<&mut ToolResult>) {
        if let Err(full) = session.apply(&updates.namespace, updates.list, self.max_context_bytes) {
            match result {
                Some(result) => *result = context_refused(result.clone(), &full),
                None => tracing::warn!("context updates of a parallel call dropped: {full}"),
            }
        }
    }

    /// The pipeline without applying context updates (the turn applies them later).
    /// `schema`: the outcome of [`Runtime::check`]'s schema check, so it is not done twice.
    pub(crate) async fn run_one(
        &self,
        tool_use: &ToolUse,
        schema: Option<Schema>,
        context: SessionView,
        access: Access,
        options: &CallOptions,
    ) -> (ToolResult, Updates) {
        let started = Instant::now();
        let found = self.lookup(&tool_use.name);
        let (result, updates, hosts, tier, trace) = match &found {
            None => (
                Refusal::unknown_tool(&tool_use.name).into_result(&tool_use.id),
                Updates::default(),
                Vec::new(),
                None,
                Arc::default(),
            ),
            Some(_) if options.cancel.is_cancelled() => {
                (Refusal::interrupted().into_result(&tool_use.id), Updates::default(), Vec::new(), None, Arc::default())
            }
            Some(tool) => {
                // A check made against another runtime's tool of that name counts for nothing.
                let schema = schema.and_then(|s| s.for_tool(tool));
                let cx = CallCtx::new(tool, tool_use, context, access, options);
                let (result, updates) = self.run_tool(&cx, schema).await;
                let hosts = cx.hosts.lock().unwrap_or_else(|e| e.into_inner()).iter().cloned().collect();
                let tier = *cx.tier.lock().unwrap_or_else(|e| e.into_inner());
                let trace = std::mem::take(&mut *cx.trace.lock().unwrap_or_else(|e| e.into_inner()));
                (result, updates, hosts, tier, Arc::new(trace))
            }
        };
        self.finished(tool_use, &result, started.elapsed(), hosts, tier, trace);
        (result, updates)
    }

    /// Tell the event sinks (and so the audit log) that a call finished.
    fn finished(
        &self,
        tool_use: &ToolUse,
        result: &ToolResult,
        duration: Duration,
        hosts: Vec<String>,
        tier: Option<crate::Tier>,
        trace: Arc<crate::CallTrace>,
    ) {
        self.emit(|| Event::Finish {
            id: tool_use.id.clone(),
            tool: tool_use.name.clone(),
            outcome: result.outcome,
            duration_ms: duration,
            session: self.session_id.clone(),
            digest: self.lookup(&tool_use.name).map(|t| t.sha256.clone()).filter(|d| !d.is_empty()),
            input: Arc::new(tool_use.input.clone()),
            bytes_out: result
                .content
                .iter()
                .map(|b| match b {
                    ContentBlock::Text { text } => text.len(),
                    ContentBlock::Image { .. } => 0,
                })
                .sum(),
            hosts,
            tier,
            trace,
        });
    }

    /// Steps 3 to 8 for a tool that exists; whatever hooks said for the model is appended to
    /// the result, refused or not.
    async fn run_tool(&self, cx: &CallCtx<'_>, schema: Option<Result<String, Refusal>>) -> (ToolResult, Updates) {
        let mut after = Aftermath::default();
        let (result, updates) = match self.steps(cx, schema, &mut after).await {
            Ok(done) => done,
            Err(refusal) => (refusal.into_result(cx.id()), Updates::default()),
        };
        let mut result = with_notes(result, &after.notes);
        result.stop = after.stop;
        (result, updates)
    }

    /// What hooks said beyond a decision: context for the model, a stop, messages for the
    /// person (sent as events at once).
    fn heard(&self, cx: &CallCtx<'_>, event: HookEvent, combined: &Combined, after: &mut Aftermath) {
        after.notes.extend(context_notes(event, cx.name(), combined));
        if after.stop.is_none() {
            after.stop.clone_from(&combined.stop);
        }
        for message in &combined.system_messages {
            self.emit(|| Event::HookMessage {
                id: cx.id().to_string(),
                tool: cx.name().to_string(),
                hook_event: event,
                message: message.clone(),
            });
        }
    }

    async fn steps(
        &self,
        cx: &CallCtx<'_>,
        schema: Option<Result<String, Refusal>>,
        after: &mut Aftermath,
    ) -> Result<(ToolResult, Updates), Refusal> {
        let (id, name) = (cx.id(), cx.name());
        // 3-4. Schema and `validate`. The input is borrowed unless rewritten: inputs may be
        // large, calls many.
        let mut value = Cow::Borrowed(&cx.tool_use.input);
        let mut input = self.checked(cx, &value, "", schema).await?;
        // A URL subject from here on is the URL as the rules judge it (hooks, rules, the tool).
        let subject = cx.tool.info.permission_subject.as_deref();
        if let Some(canonical) = canonical_url_input(&value, subject) {
            input = canonical.to_string();
            value = Cow::Owned(canonical);
        }

        // 5. PreToolUse hooks: may block, rewrite the input (checked again), add context, decide.
        let step = Instant::now();
        let pointer = cx.tool.info.permission_subject.as_deref();
        let pre = {
            let subject = || crate::call::permission::subject_value(&value, pointer);
            let call = ForCall { id, tool: name, subject: &subject };
            self.hooks.for_call(&call, HookEvent::PreToolUse, &value, None, None).await
        };
        cx.step("hooks_before", step);
        // A deny wins over a stop: the model reads the reason and the session goes on, as in
        // Claude Code.
        if pre.decision == Some(Decision::Deny) {
            after.notes.extend(context_notes(HookEvent::PreToolUse, name, &pre));
        } else {
            self.heard(cx, HookEvent::PreToolUse, &pre, after);
        }
        if pre.decision == Some(Decision::Deny) {
            let reason = pre.reason.clone().unwrap_or_else(|| format!("PreToolUse:{name} hook blocked the call"));
            self.decided(id, name, "deny", &reason, None);
            return Err(Refusal::new(RefusalKind::HookBlocked, reason));
        }
        if let Some(updated) = pre.updated_input {
            const REWRITTEN: &str = " (after a PreToolUse hook rewrote the input)";
            input = self.checked(cx, &updated, REWRITTEN, None).await?;
            value = Cow::Owned(updated);
            if let Some(canonical) = canonical_url_input(&value, subject) {
                input = canonical.to_string();
                value = Cow::Owned(canonical);
            }
        }

        // 6. Permission.
        let step = Instant::now();
        let approved = self.permit(cx, &value, (pre.decision, pre.reason.as_deref())).await;
        cx.step("permission", step);
        let approved = approved?;
        if cx.cancel().is_cancelled() {
            return Err(Refusal::interrupted());
        }

        // 7. Call.
        self.emit(|| Event::Start { id: id.to_string(), tool: name.to_string() });
        let (result, updates) = self.call_tool(cx, &input, approved).await;

        // 8. PostToolUse / PostToolUseFailure hooks.
        let step = Instant::now();
        let subject = || crate::call::permission::subject_value(&value, pointer);
        let call = ForCall { id, tool: name, subject: &subject };
        let post = if result.is_error {
            let error = Some((result.text(), result.outcome == OutcomeKind::Interrupted));
            self.hooks.for_call(&call, HookEvent::PostToolUseFailure, &value, None, error).await
        } else {
            self.hooks.for_call(&call, HookEvent::PostToolUse, &value, Some(tool_response(&result)), None).await
        };
        cx.step("hooks_after", step);
        let event = if result.is_error { HookEvent::PostToolUseFailure } else { HookEvent::PostToolUse };
        self.heard(cx, event, &post, after);
        // Claude Code's `updatedMCPToolOutput`: for an MCP server's tool, the hook's output
        // replaces the server's (a component's result is its own, as in Claude Code).
        // Mapped as the server's answer is: image types checked, `max_result_chars` and spill.
        let mut result = result;
        if let Some(output) = &post.updated_output
            && !result.is_error
            && matches!(cx.tool.info.kind, crate::ToolKind::Mcp { .. })
        {
            let limit = cx.tool.limits.max_result_chars;
            match map_output(cx.name(), cx.id(), replaced_output(output), limit, &self.spill) {
                Ok(mapped) => result.content = mapped.content,
                Err(message) => {
                    let message = format!("the PostToolUse hooks' updatedMCPToolOutput: {message}");
                    let stop = result.stop.take();
                    result = ToolResult::error(cx.id(), OutcomeKind::Failed, message);
                    result.stop = stop;
                }
            }
        }
        Ok((result, updates))
    }

    /// Steps 3-4: schema and `validate`; `note` is added to messages about a rewritten input;
    /// `schema`: the schema check's outcome when it was made already (by [`Runtime::check`]).
    async fn checked(
        &self,
        cx: &CallCtx<'_>,
        value: &Value,
        note: &str,
        schema: Option<Result<String, Refusal>>,
    ) -> Result<String, Refusal> {
        let step = Instant::now();
        let input = match schema {
            Some(checked) => checked,
            None => self.check_input(cx.tool, value, note),
        };
        cx.step("schema", step);
        let input = input?;
        // Only a toolhost tool has a `validate` of its own; for the other kinds the schema
        // (derived by the host) is the whole check.
        if !cx.tool.info.kind.describes_itself() {
            return Ok(input);
        }
        match self.invoke(cx, Access::Nothing, Validate(&input), Vec::new()).await {
            Ok(Ok(())) => Ok(input),
            Ok(Err(message)) => Err(Refusal::new(RefusalKind::Validate, format!("{message}{note}"))),
            Err(f) => Err(f.in_validate()),
        }
    }

    /// Step 7: the call itself, on a fresh store with the granted capabilities; `approved`:
    /// paths a person allowed this call to write although other programs run them.
    async fn call_tool(&self, cx: &CallCtx<'_>, input: &str, approved: Vec<PathBuf>) -> (ToolResult, Updates) {
        let (id, name, tool, view) = (cx.id(), cx.name(), cx.tool, &cx.view);
        if let (ToolKind::Mcp { tool: on_server, server }, Some(remote)) = (&tool.info.kind, &tool.remote) {
            return (self.call_remote(cx, server, on_server, remote.as_ref(), input).await, Updates::default());
        }
        let called = match &tool.info.kind {
            ToolKind::Function { export } => self.invoke(cx, cx.access, CallFunction { export, input }, approved).await,
            ToolKind::Command => {
                let value = serde_json::from_str(input).unwrap_or_default();
                self.invoke(cx, cx.access, RunCommand(CommandInput::from_json(name, &value)), approved).await
            }
            _ => self.invoke(cx, cx.access, Call(input), approved).await,
        };
        let output = match called {
            Ok(CallReturn::Output(output)) => output,
            Ok(CallReturn::Failed(e)) => return (tool_error(id, name, e, false), Updates::default()),
            Ok(CallReturn::Limited(e)) => return (tool_error(id, name, e, true), Updates::default()),
            Err(f) => return (f.into_result(id), Updates::default()),
        };

        let size = content_bytes(&output.content)
            + output
                .context_updates
                .iter()
                .map(|u| u.key.len() + u.value.as_ref().map_or(0, String::len))
                .sum::<usize>();
        if let Some(over) = over_output_limit(cx, size) {
            return (over, Updates::default());
        }
        let list: Vec<_> = output.context_updates.into_iter().map(|u| (u.key, u.value)).collect();
        let namespace = tool.context_namespace.clone();
        let would = view.bytes.saturating_add_signed(growth(&view.context, &namespace, &list));
        let refused = (would > view.bytes && would > self.max_context_bytes)
            .then_some(ContextFull { would, limit: self.max_context_bytes });
        match map_output(name, id, output.content, tool.limits.max_result_chars, &self.spill) {
            Ok(result) => match refused {
                Some(full) => (context_refused(result, &full), Updates::default()),
                None => (result, Updates { namespace, list }),
            },
            Err(message) => (ToolResult::error(id, OutcomeKind::Failed, message), Updates::default()),
        }
    }

    /// Step 7 for an MCP server's tool: the server makes the call, under the tool's time
    /// limit and the call's cancellation; its answer is sized and spilled as a component's.
    async fn call_remote(
        &self,
        cx: &CallCtx<'_>,
        server: &str,
        on_server: &str,
        remote: &dyn crate::call::remote::RemoteServer,
        input: &str,
    ) -> ToolResult {
        let (id, name, tool) = (cx.id(), cx.name(), cx.tool);
        let value: Value = serde_json::from_str(input).unwrap_or_default();
        let limit = Duration::from_millis(tool.limits.timeout_ms);
        let caller =
            Arc::new(crate::call::remote::Caller::new(id, name, self.asker_of(cx)).with_progress(self.progress_to(cx)));
        let answer = tokio::select! {
            answer = remote.call_for(on_server, value, caller) => answer,
            () = tokio::time::sleep(limit) => {
                let message = format!("Tool {name} timed out after {} ms (timeout_ms): MCP server {server} did not answer.", tool.limits.timeout_ms);
                return ToolResult::error(id, OutcomeKind::Timeout, message);
            }
            () = cx.cancel().cancelled() => return Refusal::interrupted().into_result(id),
        };
        let output = match answer {
            Ok(output) => output,
            Err(why) => {
                return ToolResult::error(
                    id,
                    OutcomeKind::HostError,
                    format!("MCP server {server} could not make the call: {why}"),
                );
            }
        };
        let is_error = output.is_error;
        let blocks = crate::call::remote::wit_blocks(output);
        if let Some(over) = over_output_limit(cx, content_bytes(&blocks)) {
            return over;
        }
        match map_output(name, id, blocks, tool.limits.max_result_chars, &self.spill) {
            // The server's own failure: an error result with what it said (text only).
            Ok(result) if is_error => ToolResult::error(id, OutcomeKind::Failed, result.text()),
            Ok(result) => result,
            Err(message) => ToolResult::error(id, OutcomeKind::Failed, message),
        }
    }

    /// Input size and JSON Schema. Returns the input as JSON text for the guest. `note` is
    /// added to messages about a rewritten input.
    pub(crate) fn check_input(&self, tool: &LoadedTool, value: &Value, note: &str) -> Result<String, Refusal> {
        let name = &tool.info.name;
        let input = serde_json::to_string(value).unwrap_or_default();
        if input.len() > tool.limits.max_input_bytes {
            return Err(Refusal::new(
                RefusalKind::InputTooLarge,
                format!(
                    "the input is {} bytes, more than {name}'s limit of {} (max_input_bytes){note}",
                    input.len(),
                    tool.limits.max_input_bytes
                ),
            ));
        }
        // Most inputs are valid: `is_valid` stops at nothing and builds no errors.
        if tool.validator.is_valid(value) {
            return Ok(input);
        }
        let issues: Vec<String> = tool.validator.iter_errors(value).map(|e| super::issues::issue_line(&e)).collect();
        if !issues.is_empty() {
            let n = issues.len();
            return Err(Refusal::new(
                RefusalKind::Schema,
                format!(
                    "{name} failed due to the following {}{note}:\n{}",
                    if n == 1 { "issue" } else { "issues" },
                    issues.join("\n")
                ),
            ));
        }
        Ok(input)
    }

    pub(crate) fn emit(&self, event: impl FnOnce() -> Event) {
        crate::event::emit_to(self.events.as_ref(), event);
    }
}

/// What a call's hooks said besides their decisions.
#[derive(Default)]
struct Aftermath {
    /// For the model, appended to the result.
    notes: Vec<String>,
    /// `continue: false`: the session stops after this batch.
    stop: Option<String>,
}

/// The bytes of a tool's content as `max_output_bytes` counts them: text and image data.
/// Components' and MCP servers' answers alike.
fn content_bytes(blocks: &[crate::invoke::bindings::WitContentBlock]) -> usize {
    blocks
        .iter()
        .map(|b| match b {
            crate::invoke::bindings::WitContentBlock::Text(t) => t.len(),
            crate::invoke::bindings::WitContentBlock::Image(i) => i.data.len(),
        })
        .sum()
}

/// The call's error result when its tool returned `size` bytes, more than its
/// `max_output_bytes`.
fn over_output_limit(cx: &CallCtx<'_>, size: usize) -> Option<ToolResult> {
    let limit = cx.tool.limits.max_output_bytes;
    (size > limit).then(|| {
        let message =
            format!("Tool {} returned {size} bytes, more than its limit of {limit} (max_output_bytes).", cx.name());
        ToolResult::error(cx.id(), OutcomeKind::OutputLimit, message)
    })
}

/// Hook output for the model: each additional context, and the feedback of a PostToolUse
/// block (the tool already ran, so a block there is only words).
fn context_notes(event: HookEvent, tool: &str, combined: &Combined) -> Vec<String> {
    let mut notes: Vec<String> =
        combined.additional_context.iter().map(|c| format!("{event}:{tool} hook additional context: {c}")).collect();
    if event != HookEvent::PreToolUse
        && combined.decision == Some(Decision::Deny)
        && let Some(reason) = &combined.reason
    {
        notes.push(reason.clone());
    }
    notes
}

/// The result with hook notes appended as text blocks (error results stay one text block).
/// A call whose context updates were refused: an error (the model must not believe a later
/// call will see them), keeping what the tool said.
fn context_refused(mut result: ToolResult, full: &ContextFull) -> ToolResult {
    result.is_error = true;
    result.outcome = OutcomeKind::OutputLimit;
    with_notes(result, &[full.to_string()])
}

fn with_notes(mut result: ToolResult, notes: &[String]) -> ToolResult {
    if notes.is_empty() {
        return result;
    }
    if result.is_error {
        let mut text = result.text();
        for note in notes {
            text.push_str("\n\n");
            text.push_str(note);
        }
        result.content = vec![ContentBlock::Text { text }];
    } else {
        result.content.extend(notes.iter().map(|n| ContentBlock::Text { text: n.clone() }));
    }
    result
}

/// A hook's `updatedMCPToolOutput` as the blocks a server would have sent: a string is one
/// text block; MCP content blocks keep their text and images (undecodable base64 is said as
/// text); anything else is its JSON. They are then mapped like the server's own answer.
fn replaced_output(output: &Value) -> Vec<crate::invoke::bindings::WitContentBlock> {
    use crate::call::remote::RemoteBlock;
    let block = |b: &Value| -> RemoteBlock {
        let field = |k: &str| b.get(k).and_then(Value::as_str);
        match (field("type"), field("text"), field("data"), field("mimeType")) {
            (Some("text"), Some(text), _, _) => RemoteBlock::Text(text.to_string()),
            (Some("image"), _, Some(data), Some(media)) => {
                match base64::Engine::decode(&base64::engine::general_purpose::STANDARD, data) {
                    Ok(data) => RemoteBlock::Image { media_type: media.to_string(), data },
                    Err(_) => RemoteBlock::Text(b.to_string()),
                }
            }
            _ => RemoteBlock::Text(b.to_string()),
        }
    };
    let blocks = match output {
        Value::String(text) => vec![RemoteBlock::Text(text.clone())],
        Value::Array(blocks) if !blocks.is_empty() => blocks.iter().map(block).collect(),
        other => vec![RemoteBlock::Text(other.to_string())],
    };
    crate::call::remote::wit_blocks(crate::RemoteOutput::new(blocks, false))
}

/// What PostToolUse hooks get as `tool_response`: the result's text when it is one text
/// block, else its content blocks.
fn tool_response(result: &ToolResult) -> Value {
    match result.content.as_slice() {
        [ContentBlock::Text { text }] => Value::String(text.clone()),
        blocks => serde_json::to_value(blocks).unwrap_or(Value::Null),
    }
}
