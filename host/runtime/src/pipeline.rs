//! One `tool_use` → exactly one `tool_result`: lookup, input size, JSON Schema, the tool's
//! `validate` (no capabilities), PreToolUse hooks, the permission check, `call` on a fresh
//! store with the granted capabilities, PostToolUse hooks, and the mapping of whatever
//! happened. Every path out produces a result with the same id.

use crate::ToolUse;
use crate::call::CallOptions;
use crate::classify::{CheckedCall, Schema};
use crate::event::Event;
use crate::fsguard::{FsRules, resolve_at};
use crate::hooks::{Combined, HookEvent, HookInput, HookResponse, combine};
use crate::invoke::{Call, CallReturn, Export, FsCall, InvokeCtx, Validate, invoke};
use crate::outcome::{Failure, INTERRUPTED, OutcomeKind, failure, tool_error};
use crate::permission::{AskAnswer, AskRequest, canonical_url_input, claude_mode_name, decide, subject_value};
use crate::result::ContentBlock;
use crate::result::{ToolResult, map_output};
use crate::runtime::{LoadedTool, Runtime};
use crate::schedule::Running;
use crate::session::{ContextFull, Session, SessionView, growth};
use crate::state::{CallEnv, ProgressTo};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;
use toolhost_policy::{Decision, Request, SubjectKind};

/// Context updates a call asks for, in order (`None` deletes), inside its tool's namespace.
#[derive(Debug, Default)]
pub(crate) struct Updates {
    pub namespace: Arc<str>,
    pub list: Vec<(String, Option<String>)>,
}

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

/// The state of one call on its way through the pipeline: its options, and the hosts it tried
/// to reach (see [`crate::net::HostLog`], reported in [`Event::Finish`]).
pub(crate) struct PerCall<'a> {
    pub options: &'a CallOptions,
    pub hosts: crate::net::HostLog,
}

impl PerCall<'_> {
    pub(crate) fn cancel(&self) -> &CancellationToken {
        &self.options.cancel
    }
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
        let result = ToolResult::error(&tool_use.id, OutcomeKind::Interrupted, INTERRUPTED);
        self.finished(tool_use, &result, Duration::ZERO, Vec::new());
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
        let call = PerCall { options, hosts: crate::net::HostLog::default() };
        let (result, updates) = match self.tools.get(&tool_use.name) {
            None => (
                ToolResult::error(
                    &tool_use.id,
                    OutcomeKind::UnknownTool,
                    format!("<tool_use_error>Error: No such tool available: {}</tool_use_error>", tool_use.name),
                ),
                Updates::default(),
            ),
            Some(_) if options.cancel.is_cancelled() => {
                (ToolResult::error(&tool_use.id, OutcomeKind::Interrupted, INTERRUPTED), Updates::default())
            }
            Some(tool) => {
                // A check made against another runtime's tool of that name counts for nothing.
                let schema = schema.and_then(|s| s.for_tool(tool));
                self.run_tool(tool, tool_use, schema, context, access, &call).await
            }
        };
        let hosts = call.hosts.lock().unwrap_or_else(|e| e.into_inner()).iter().cloned().collect();
        self.finished(tool_use, &result, started.elapsed(), hosts);
        (result, updates)
    }

    /// Tell the event sinks (and so the audit log) that a call finished.
    fn finished(&self, tool_use: &ToolUse, result: &ToolResult, duration: Duration, hosts: Vec<String>) {
        self.emit(|| Event::Finish {
            id: tool_use.id.clone(),
            tool: tool_use.name.clone(),
            outcome: result.outcome,
            duration_ms: duration,
            session: self.session_id.clone(),
            digest: self.tools.get(&tool_use.name).map(|t| t.sha256.clone()),
            input_sha256: crate::event::input_sha256(&tool_use.input),
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
        });
    }

    async fn run_tool(
        &self,
        tool: &LoadedTool,
        tool_use: &ToolUse,
        schema: Option<Result<String, ToolResult>>,
        view: SessionView,
        access: Access,
        call: &PerCall<'_>,
    ) -> (ToolResult, Updates) {
        let context = &view.context;
        let id = &tool_use.id;
        let name = &tool.info.name;
        // Borrowed unless a PreToolUse hook rewrites it: inputs may be large, calls many.
        let mut input_value = std::borrow::Cow::Borrowed(&tool_use.input);
        let mut input = match self.checked(tool, tool_use, context, call, &input_value, "", schema).await {
            Ok(input) => input,
            Err(result) => return (result, Updates::default()),
        };
        // A URL subject from here on is the URL as the rules judge it (hooks, rules, the tool).
        let subject = tool.info.permission_subject.as_deref();
        if let Some(canonical) = canonical_url_input(&input_value, subject) {
            input = canonical.to_string();
            input_value = std::borrow::Cow::Owned(canonical);
        }

        // 5. PreToolUse hooks: may block, rewrite the input (checked again), add context, decide.
        let pre = self.run_hooks(HookEvent::PreToolUse, tool, id, &input_value, None, None).await;
        let mut notes = context_notes(HookEvent::PreToolUse, name, &pre);
        if pre.decision == Some(Decision::Deny) {
            let reason = pre.reason.clone().unwrap_or_else(|| format!("PreToolUse:{name} hook blocked the call"));
            self.decided(id, name, "deny", &reason, None);
            return (with_notes(ToolResult::error(id, OutcomeKind::HookBlocked, reason), &notes), Updates::default());
        }
        if let Some(updated) = pre.updated_input {
            const REWRITTEN: &str = " (after a PreToolUse hook rewrote the input)";
            input = match self.checked(tool, tool_use, context, call, &updated, REWRITTEN, None).await {
                Ok(input) => input,
                Err(result) => return (with_notes(result, &notes), Updates::default()),
            };
            input_value = std::borrow::Cow::Owned(updated);
            if let Some(canonical) = canonical_url_input(&input_value, subject) {
                input = canonical.to_string();
                input_value = std::borrow::Cow::Owned(canonical);
            }
        }

        // 6. Permission.
        let hook = (pre.decision, pre.reason.as_deref());
        let approved = match self.permit(tool, id, &input_value, hook, &view, call).await {
            Ok(approved) => approved,
            Err(result) => return (with_notes(result, &notes), Updates::default()),
        };

        if call.cancel().is_cancelled() {
            return (ToolResult::error(id, OutcomeKind::Interrupted, INTERRUPTED), Updates::default());
        }
        // 7. Call.
        self.emit(|| Event::Start { id: id.clone(), tool: name.clone() });
        let (result, updates) = self.call_tool(tool, tool_use, &view, access, call, &input, approved).await;

        // 8. PostToolUse / PostToolUseFailure hooks.
        let post = if result.is_error {
            let error = Some((result.text(), result.outcome == OutcomeKind::Interrupted));
            self.run_hooks(HookEvent::PostToolUseFailure, tool, id, &input_value, None, error).await
        } else {
            let response = tool_response(&result);
            self.run_hooks(HookEvent::PostToolUse, tool, id, &input_value, Some(response), None).await
        };
        let event = if result.is_error { HookEvent::PostToolUseFailure } else { HookEvent::PostToolUse };
        notes.extend(context_notes(event, name, &post));
        (with_notes(result, &notes), updates)
    }

    /// Schema and `validate` (step 3-4); `note` is added to messages about a rewritten input;
    /// `schema`: the schema check's outcome when it was made already (by [`Runtime::check`]).
    #[allow(clippy::too_many_arguments, reason = "the pipeline's state of one call, passed along once")]
    async fn checked(
        &self,
        tool: &LoadedTool,
        tool_use: &ToolUse,
        context: &Arc<BTreeMap<String, String>>,
        call: &PerCall<'_>,
        value: &Value,
        note: &str,
        schema: Option<Result<String, ToolResult>>,
    ) -> Result<String, ToolResult> {
        let id = &tool_use.id;
        let input = match schema {
            Some(checked) => checked?,
            None => self.check_input(tool, id, value, note)?,
        };
        match self.invoke(tool, tool_use, context, Access::Nothing, call, Validate(&input), Vec::new()).await {
            Ok(Ok(())) => Ok(input),
            Ok(Err(message)) => Err(ToolResult::error(
                id,
                OutcomeKind::ValidateError,
                format!("<tool_use_error>{message}{note}</tool_use_error>"),
            )),
            Err(f) => Err(failure(id, f, "validate")),
        }
    }

    /// Step 7: the call itself, on a fresh store with the granted capabilities; `approved`:
    /// paths a person allowed this call to write although other programs run them.
    #[allow(clippy::too_many_arguments, reason = "the pipeline's state of one call, passed along once")]
    async fn call_tool(
        &self,
        tool: &LoadedTool,
        tool_use: &ToolUse,
        view: &SessionView,
        access: Access,
        call: &PerCall<'_>,
        input: &str,
        approved: Vec<PathBuf>,
    ) -> (ToolResult, Updates) {
        let id = &tool_use.id;
        let name = &tool.info.name;
        let output = match self.invoke(tool, tool_use, &view.context, access, call, Call(input), approved).await {
            Ok(CallReturn::Output(output)) => output,
            Ok(CallReturn::Failed(e)) => return (tool_error(id, name, e, false), Updates::default()),
            Ok(CallReturn::Limited(e)) => return (tool_error(id, name, e, true), Updates::default()),
            Err(f) => return (failure(id, f, "call"), Updates::default()),
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
            return (ToolResult::error(id, OutcomeKind::OutputLimit, message), Updates::default());
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

    /// Step 6: rules and mode; an ask goes to the decider, one question at a time. On success,
    /// the paths the call may write although other programs run them (a person said yes).
    async fn permit(
        &self,
        tool: &LoadedTool,
        id: &str,
        input: &Value,
        (hook, hook_reason): (Option<Decision>, Option<&str>),
        view: &SessionView,
        call: &PerCall<'_>,
    ) -> Result<Vec<PathBuf>, ToolResult> {
        let cancel = call.cancel();
        let name = &tool.info.name;
        let subject = subject_value(input, tool.info.permission_subject.as_deref());
        let req = Request {
            tool: name,
            subject: subject.as_ref().map(|(v, k)| (v.as_str(), *k)),
            read_only: tool.info.read_only,
            grant_inside_workspace: tool.grant_inside_workspace,
        };
        // A write to a file other programs run (`.git/hooks/…`) is asked in every mode, and the
        // filesystem guard lets only this call, and only that file, through.
        let guarded = match &subject {
            Some((value, SubjectKind::Path)) if !tool.info.read_only => {
                let real = resolve_at(&self.workspace, value, true);
                self.fs_policy.needs_ask(&real).map(|pattern| (real.clone(), pattern.to_string()))
            }
            _ => None,
        };
        let (decision, reason) = match (decide(&self.permissions, &req, &self.workspace, hook), &guarded) {
            ((Decision::Allow | Decision::Ask, _), Some((real, pattern))) => (
                Decision::Ask,
                format!(
                    "{} matches `{pattern}`, a file other programs run: writing it is asked every time, in every mode",
                    real.display()
                ),
            ),
            (decided, _) => decided,
        };
        // What made the decision, for the audit log: the rule, mode or hook (with its command).
        let by = match hook_reason {
            Some(hook) if reason.contains("PreToolUse hook") => format!("{reason}: {hook}"),
            _ => reason.clone(),
        };
        let approved = || guarded.iter().map(|(real, _)| real.clone()).collect::<Vec<_>>();
        let denied = |message: String| ToolResult::error(id, OutcomeKind::PermissionDenied, message);
        match decision {
            Decision::Allow => {
                self.decided(id, name, "allow", &by, None);
                return Ok(Vec::new());
            }
            Decision::Deny => {
                self.decided(id, name, "deny", &by, None);
                return Err(denied(format!("Permission to use {name} has been denied: {reason}.")));
            }
            Decision::Ask => {}
        }
        let suggested = req.suggested_rule(&self.workspace);
        let asked = |answer: &str| {
            self.emit(|| Event::PermissionAsked {
                id: id.to_string(),
                tool: name.clone(),
                reason: reason.clone(),
                answer: answer.to_string(),
            });
            self.decided(id, name, "ask", &by, Some(answer));
        };
        let _one_at_a_time = tokio::select! {
            guard = self.permissions.ask_lock.lock() => guard,
            _ = cancel.cancelled() => return Err(ToolResult::error(id, OutcomeKind::Interrupted, INTERRUPTED)),
        };
        if guarded.is_none() && view.allows(name) {
            self.decided(id, name, "ask", &by, Some("allowed_earlier"));
            return Ok(Vec::new());
        }
        let request = AskRequest {
            tool_use_id: id.to_string(),
            tool: name.clone(),
            input: input.clone(),
            subject: subject.map(|(v, _)| v),
            reason: reason.clone(),
            session_rule: name.clone(),
            suggested_rule: suggested.clone(),
        };
        let decider = call.options.decider.as_ref().or(self.decider.as_ref());
        let Some(decider) = decider.filter(|d| d.can_ask(&request)) else {
            asked("no_one_to_ask");
            if guarded.is_some() {
                return Err(denied(format!(
                    "Permission to use {name} has been denied: {reason}, and there is no one to ask (no terminal). \
                     No rule or mode allows it: run toolhost where a person can answer, or make the change yourself."
                )));
            }
            return Err(denied(format!(
                "Permission to use {name} has been denied: {reason}, and there is no one to ask (no terminal). \
                 To allow such calls, add the rule \"{suggested}\" to `allow` in [permissions] of toolhost.toml, \
                 or pass --allow '{suggested}'."
            )));
        };
        let answer = tokio::select! {
            answer = decider.ask(&request) => answer,
            _ = cancel.cancelled() => return Err(ToolResult::error(id, OutcomeKind::Interrupted, INTERRUPTED)),
        };
        match answer {
            AskAnswer::AllowOnce => {
                asked("allow_once");
                Ok(approved())
            }
            // "Always" never covers files other programs run: the next write is asked again.
            AskAnswer::AllowAlways if guarded.is_some() => {
                asked("allow_once");
                Ok(approved())
            }
            AskAnswer::AllowAlways => {
                asked("allow_always");
                view.allow(name);
                Ok(Vec::new())
            }
            AskAnswer::Deny(why) => {
                asked("deny");
                let why = why.filter(|w| !w.trim().is_empty()).map(|w| format!(": {w}")).unwrap_or_default();
                Err(denied(format!("Permission to use {name} was denied by the user{why}.")))
            }
        }
    }

    /// Run the hooks of `event` for this call (command hooks and Rust hooks, all at once) and
    /// combine their answers. Failed hooks are reported and otherwise ignored.
    async fn run_hooks(
        &self,
        event: HookEvent,
        tool: &LoadedTool,
        id: &str,
        input: &Value,
        response: Option<Value>,
        error: Option<(String, bool)>,
    ) -> Combined {
        let name = &tool.info.name;
        if self.hooks.is_empty() && !self.command_hooks.has(event, name) {
            return Combined::default();
        }
        let hook_input = HookInput {
            session_id: self.session_id.clone(),
            transcript_path: String::new(),
            cwd: self.workspace.display().to_string(),
            permission_mode: claude_mode_name(self.permissions.mode).to_string(),
            hook_event_name: event,
            tool_name: name.clone(),
            tool_input: input.clone(),
            tool_use_id: id.to_string(),
            tool_response: response,
            is_interrupt: error.as_ref().map(|(_, i)| *i),
            error: error.map(|(e, _)| e),
        };
        let rust = futures::future::join_all(self.hooks.iter().map(|h| {
            let hook_input = &hook_input;
            async move {
                match event {
                    HookEvent::PreToolUse => h.pre_tool_use(hook_input).await,
                    HookEvent::PostToolUse => h.post_tool_use(hook_input).await,
                    HookEvent::PostToolUseFailure => h.post_tool_use_failure(hook_input).await,
                }
            }
        }));
        let (commands, rust) = tokio::join!(self.command_hooks.run(&hook_input), rust);
        let mut responses: Vec<HookResponse> = Vec::with_capacity(commands.len() + rust.len());
        for answer in commands {
            match answer {
                Ok(r) => responses.push(r),
                Err(f) => {
                    tracing::warn!("{f}");
                    self.emit(|| Event::HookFailed {
                        id: id.to_string(),
                        tool: name.clone(),
                        hook_event: event,
                        hook: f.source_name.clone(),
                        message: f.message.clone(),
                    });
                }
            }
        }
        responses.extend(rust.into_iter().map(|mut r| {
            if r.source.is_empty() {
                r.source = "rust hook".to_string();
            }
            r
        }));
        combine(event, name, &responses)
    }

    /// Input size and JSON Schema. Returns the input as JSON text for the guest. `note` is
    /// added to messages about a rewritten input.
    pub(crate) fn check_input(
        &self,
        tool: &LoadedTool,
        id: &str,
        value: &Value,
        note: &str,
    ) -> Result<String, ToolResult> {
        let name = &tool.info.name;
        let input = serde_json::to_string(value).unwrap_or_default();
        if input.len() > tool.limits.max_input_bytes {
            return Err(ToolResult::error(
                id,
                OutcomeKind::SchemaError,
                format!(
                    "<tool_use_error>InputValidationError: the input is {} bytes, more than {name}'s limit of {} (max_input_bytes){note}</tool_use_error>",
                    input.len(),
                    tool.limits.max_input_bytes
                ),
            ));
        }
        let issues: Vec<String> = tool
            .validator
            .iter_errors(value)
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
                    "<tool_use_error>InputValidationError: {name} failed due to the following {}{note}:\n{}</tool_use_error>",
                    if n == 1 { "issue" } else { "issues" },
                    issues.join("\n")
                ),
            ));
        }
        Ok(input)
    }

    #[allow(clippy::too_many_arguments, reason = "the pipeline's state of one call, passed along once")]
    pub(crate) async fn invoke<E: Export>(
        &self,
        tool: &LoadedTool,
        tool_use: &ToolUse,
        context: &Arc<BTreeMap<String, String>>,
        access: Access,
        call: &PerCall<'_>,
        export: E,
        approved: Vec<PathBuf>,
    ) -> Result<E::Output, Failure> {
        let compiled = tool.code.get(&self.engine).await.map_err(|m| {
            Failure::new(
                OutcomeKind::HostError,
                format!("the code of tool {} cannot be made ready: {m}", tool.info.name),
            )
        })?;
        let fs = match access {
            Access::Nothing => FsCall::default(),
            Access::Granted | Access::ReadOnly => {
                let mut policies = vec![self.fs_policy.clone()];
                policies.extend(tool.own_policy.clone());
                FsCall {
                    preopens: tool.preopens.clone(),
                    read_only: access == Access::ReadOnly || tool.info.read_only,
                    rules: FsRules { policies, check_reads: tool.check_reads },
                    approved,
                }
            }
        };
        let call_env = CallEnv {
            context: context.clone(),
            namespace: tool.context_namespace.clone(),
            workspace_json: self.workspace_json.clone(),
            progress: ProgressTo::new(
                self.events.clone(),
                call.options.progress.clone(),
                &tool_use.id,
                &tool.info.name,
            ),
            hosts: match access {
                Access::Nothing => None,
                Access::Granted | Access::ReadOnly => Some(call.hosts.clone()),
            },
        };
        let cx = InvokeCtx {
            engine: &self.engine,
            pre: &compiled.pre,
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
            net: &tool.net_patterns,
            pool: Some(&tool.pure_pool),
            cancel: call.cancel(),
            tls: &self.tls,
            fs,
        };
        invoke(cx, export).await
    }

    /// Report a permission decision: `decision` is `allow`, `deny` or `ask`, `by` the rule,
    /// mode or hook that made it, `answer` what an ask got.
    fn decided(&self, id: &str, tool: &str, decision: &str, by: &str, answer: Option<&str>) {
        self.emit(|| Event::Decided {
            id: id.to_string(),
            tool: tool.to_string(),
            session: self.session_id.clone(),
            decision: decision.to_string(),
            by: by.to_string(),
            answer: answer.map(str::to_string),
        });
    }

    fn emit(&self, event: impl FnOnce() -> Event) {
        if let Some(sink) = &self.events {
            sink(event());
        }
    }
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

/// What PostToolUse hooks get as `tool_response`: the result's text when it is one text
/// block, else its content blocks.
fn tool_response(result: &ToolResult) -> Value {
    match result.content.as_slice() {
        [ContentBlock::Text { text }] => Value::String(text.clone()),
        blocks => serde_json::to_value(blocks).unwrap_or(Value::Null),
    }
}
