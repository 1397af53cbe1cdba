//! # The loop
//!
//! One turn = one request to the model. Tool calls stream into the runtime's turn
//! ([`toolhost::Runtime::run_turn`]) as their inputs complete: safe calls run in parallel
//! beside the rest of the model's answer, others alone, as in `toolhost run`. When the answer
//! is complete and every call is answered, the results go back as one user message, one
//! `tool_result` per `tool_use` block, paired by id, in the blocks' order.
//!
//! Stop reasons: `end_turn` (and `stop_sequence`) ends the run with the answer; `tool_use`
//! continues; `pause_turn` sends the paused answer back as it is; `max_tokens` and `refusal`
//! end it early. So do `max_turns`, the token budget and the cost budget, checked after each
//! response.

use crate::deferral::Deferral;
use crate::error::{Error, Result, RetryNotice};
use crate::message::{Block, Message, ModelRequest, ModelResponse, Role, StopReason, ToolDef, Usage};
use crate::provider::{Provider, TurnSink};
use crate::transcript::Transcript;
use serde_json::json;
use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::mpsc;
use toolhost::{
    CancellationToken, Refusal, RefusalKind, Runtime, Session, SessionEvent, Submission, ToolResult, ToolUse,
};

/// Prices in US dollars per million tokens, for the cost in the summary and a cost budget.
/// Cache writes and reads default to 1.25× and 0.1× the input price (Anthropic's multipliers).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Pricing {
    /// Input tokens.
    pub input: f64,
    /// Output tokens.
    pub output: f64,
    /// Tokens written to the cache.
    pub cache_write: f64,
    /// Tokens read from the cache.
    pub cache_read: f64,
}

impl Pricing {
    /// Input and output prices, cache prices derived from the input price.
    pub fn new(input: f64, output: f64) -> Self {
        Pricing { input, output, cache_write: input * 1.25, cache_read: input * 0.1 }
    }

    /// What `usage` costs.
    pub fn cost(&self, usage: &Usage) -> f64 {
        (usage.input_tokens as f64 * self.input
            + usage.output_tokens as f64 * self.output
            + usage.cache_creation_input_tokens as f64 * self.cache_write
            + usage.cache_read_input_tokens as f64 * self.cache_read)
            / 1e6
    }
}

/// How a run is bounded and what it says. Build with [`AgentOptions::new`].
#[derive(Debug, Clone)]
pub struct AgentOptions {
    /// The model's name.
    pub model: String,
    /// The system prompt.
    pub system: Option<String>,
    /// The most requests (default 30).
    pub max_turns: u32,
    /// `max_tokens` of each request (default 8192).
    pub max_output_tokens: u32,
    /// Stop once this many tokens (input, cached or not, and output) were spent.
    pub token_budget: Option<u64>,
    /// Stop once this many US dollars were spent (needs `pricing`).
    pub cost_budget: Option<f64>,
    /// Prices, for the cost.
    pub pricing: Option<Pricing>,
    /// Defer the tools when their definitions exceed this many tokens (default 20,000: 10 %
    /// of a 200,000-token context window).
    pub defer_threshold_tokens: u64,
    /// Offer only these of the runtime's tools (default: all). A call to any other is
    /// answered "No such tool available" and never runs.
    pub only_tools: Option<Vec<String>>,
}

impl AgentOptions {
    /// Options for `model`: no system prompt, 30 turns, 8192 output tokens per request, no
    /// budget, no pricing, every tool offered, tools deferred past 20,000 tokens of
    /// definitions.
    pub fn new(model: impl Into<String>) -> Self {
        AgentOptions {
            model: model.into(),
            system: None,
            max_turns: 30,
            max_output_tokens: 8192,
            token_budget: None,
            cost_budget: None,
            pricing: None,
            defer_threshold_tokens: 20_000,
            only_tools: None,
        }
    }
}

/// Watches a run (progress output). Every method has a default that does nothing.
pub trait Observer: Send + Sync {
    /// A tool call has its result (in model order).
    fn tool_finished(&self, call: &ToolUse, result: &ToolResult, elapsed: Duration) {
        let _ = (call, result, elapsed);
    }
    /// A request failed and is about to be retried.
    fn retrying(&self, notice: &RetryNotice) {
        let _ = notice;
    }
    /// The model answered a turn.
    fn response(&self, turn: u32, response: &ModelResponse) {
        let _ = (turn, response);
    }
}

/// Why a run ended.
#[derive(Debug, Clone, PartialEq)]
pub enum Stop {
    /// The model finished (`end_turn` or `stop_sequence`).
    EndTurn,
    /// The model's answer was cut at `max_tokens` (a tool call cut there is never run).
    MaxTokens,
    /// The model refused.
    Refusal,
    /// The last allowed turn asked for more.
    MaxTurns(u32),
    /// The token budget is spent.
    TokenBudget {
        /// Tokens spent.
        used: u64,
        /// The budget.
        budget: u64,
    },
    /// The cost budget is spent.
    CostBudget {
        /// Dollars spent.
        spent: f64,
        /// The budget.
        budget: f64,
    },
    /// Cancelled (Ctrl-C).
    Interrupted,
    /// A hook answered `continue: false` (its `stopReason`): the batch was answered, then the
    /// run ended, as in Claude Code.
    HookStopped(String),
    /// A `UserPromptSubmit` hook blocked the prompt (its reason): nothing was sent.
    PromptBlocked(String),
    /// A stop reason the loop does not know.
    Other(String),
}

impl Stop {
    /// The exit code: 0 for `end_turn`, 1 for every early end (a limit, the model), 130 after
    /// an interrupt.
    pub fn exit_code(&self) -> u8 {
        match self {
            Stop::EndTurn => 0,
            Stop::Interrupted => 130,
            _ => 1,
        }
    }
}

impl std::fmt::Display for Stop {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Stop::EndTurn => write!(f, "end_turn"),
            Stop::MaxTokens => {
                write!(f, "max_tokens: the model's answer was cut off (raise --max-output-tokens)")
            }
            Stop::Refusal => write!(f, "refusal: the model declined to continue"),
            Stop::MaxTurns(n) => write!(f, "max turns: {n} turns used and the model wanted more (raise --max-turns)"),
            Stop::TokenBudget { used, budget } => write!(f, "token budget spent: {used} of {budget} tokens"),
            Stop::CostBudget { spent, budget } => write!(f, "cost budget spent: ${spent:.4} of ${budget:.4}"),
            Stop::Interrupted => write!(f, "interrupted"),
            Stop::HookStopped(reason) => write!(f, "stopped by a hook: {reason}"),
            Stop::PromptBlocked(reason) => write!(f, "UserPromptSubmit operation blocked by hook: {reason}"),
            Stop::Other(reason) => write!(f, "stop reason {reason:?}"),
        }
    }
}

/// What a run did.
#[derive(Debug, Clone)]
pub struct Outcome {
    /// Why it ended.
    pub stop: Stop,
    /// The text of the model's last answer.
    pub text: String,
    /// Requests made.
    pub turns: u32,
    /// Tool calls answered.
    pub tool_calls: u32,
    /// Of which ended in an error result (tool errors, denials, …).
    pub tool_errors: u32,
    /// Tokens over every turn.
    pub usage: Usage,
    /// Dollars over every turn, when prices were given.
    pub cost: Option<f64>,
    /// Wall time of the whole run.
    pub elapsed: Duration,
    /// The whole conversation.
    pub messages: Vec<Message>,
}

impl Outcome {
    /// One line: stop, turns, tool calls, errors, tokens, cost, wall time.
    pub fn summary(&self) -> String {
        let cost = self.cost.map(|c| format!(", ${c:.4}")).unwrap_or_default();
        let stop = match &self.stop {
            Stop::EndTurn => "end_turn".to_string(),
            other => other.to_string(),
        };
        format!(
            "toolhost agent: {stop}; {} turns, {} tool calls ({} errors), {} tokens (in {}, out {}, cache read {}, cache \
             write {}){cost}, {:.1} s",
            self.turns,
            self.tool_calls,
            self.tool_errors,
            self.usage.total(),
            self.usage.input_tokens,
            self.usage.output_tokens,
            self.usage.cache_read_input_tokens,
            self.usage.cache_creation_input_tokens,
            self.elapsed.as_secs_f64()
        )
    }
}

/// The loop: a runtime, a provider and the options. See the module documentation.
pub struct Agent {
    runtime: Arc<Runtime>,
    provider: Arc<dyn Provider>,
    options: AgentOptions,
    observer: Option<Arc<dyn Observer>>,
    transcript: Option<Transcript>,
}

impl std::fmt::Debug for Agent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Agent").field("provider", &self.provider.name()).field("options", &self.options).finish()
    }
}

/// The sink of one turn: calls go to the runtime (or are answered here), retries to the
/// observer and the transcript.
struct Sink<'a> {
    submit: mpsc::UnboundedSender<Submission>,
    deferral: Option<&'a mut Deferral>,
    /// Names of tools offered to the model (deferred or not).
    offered: &'a HashSet<String>,
    /// The runtime, which refuses (and audits) a call of a tool a deny rule names whole.
    runtime: &'a Runtime,
    started: &'a Mutex<HashMap<String, (ToolUse, Instant)>>,
    observer: Option<&'a dyn Observer>,
    transcript: Option<&'a Transcript>,
}

impl TurnSink for Sink<'_> {
    fn tool_use(&mut self, call: ToolUse) {
        self.started.lock().unwrap_or_else(|e| e.into_inner()).insert(call.id.clone(), (call.clone(), Instant::now()));
        let denied_whole = self.runtime.denied_as_a_whole(&call.name) && self.runtime.has_tool(&call.name);
        let answered = if call.name != crate::TOOL_SEARCH && !self.offered.contains(&call.name) && !denied_whole {
            // Not offered: the runtime may have it, but this run does not. (One a deny rule
            // names whole goes to the runtime, whose refusal is audited like any decision.)
            Some(Refusal::unknown_tool(&call.name).into_result(&call.id))
        } else {
            self.deferral.as_deref_mut().and_then(|d| d.answer(&call))
        };
        let submission = match answered {
            Some(result) => Submission::Answered(result),
            None => Submission::Call(call),
        };
        // The receiver lives until the turn is over.
        let _ = self.submit.send(submission);
    }

    fn retry(&mut self, notice: &RetryNotice) {
        if let Some(o) = self.observer {
            o.retrying(notice);
        }
        if let Some(t) = self.transcript {
            let line = json!({
                "type": "retry", "attempt": notice.attempt, "status": notice.status,
                "retry_after_ms": notice.retry_after.map(|d| d.as_millis() as u64),
                "delay_ms": notice.delay.as_millis() as u64,
            });
            if let Err(e) = t.write(&line) {
                tracing::warn!("{e}");
            }
        }
    }
}

/// The results of one turn's calls, in the order they were answered (model order).
type Answered = Vec<(ToolUse, ToolResult, Duration)>;

impl Agent {
    /// A loop over `runtime`'s tools with `provider`.
    pub fn new(runtime: Arc<Runtime>, provider: Arc<dyn Provider>, options: AgentOptions) -> Self {
        Agent { runtime, provider, options, observer: None, transcript: None }
    }

    /// Report progress to `observer`.
    pub fn observer(mut self, observer: Arc<dyn Observer>) -> Self {
        self.observer = Some(observer);
        self
    }

    /// Write the conversation to `transcript`.
    pub fn transcript(mut self, transcript: Transcript) -> Self {
        self.transcript = Some(transcript);
        self
    }

    fn log(&self, line: serde_json::Value) -> Result<()> {
        match &self.transcript {
            Some(t) => t.write(&line),
            None => Ok(()),
        }
    }

    /// The tools offered to the model (the runtime's, or those of
    /// [`AgentOptions::only_tools`]), by name; never one a deny rule names as a whole.
    pub fn tool_defs(&self) -> Vec<ToolDef> {
        let only = self.options.only_tools.as_ref();
        self.runtime
            .offered_tools()
            .into_iter()
            .filter(|t| only.is_none_or(|names| names.contains(&t.info.name)))
            .map(|t| ToolDef {
                name: t.info.name.clone(),
                description: t.info.description.clone(),
                input_schema: t.info.input_schema.clone(),
            })
            .collect()
    }

    /// Run the loop from `prompt` until the model ends its turn or a limit is reached. Tool
    /// calls share `session` (their context, "allow always" answers).
    ///
    /// # Errors
    ///
    /// A provider error (authentication, an error status after the retries, a broken
    /// stream), or a transcript that cannot be written. Limits are not errors: see
    /// [`Outcome::stop`].
    pub async fn run(&self, session: &Session, prompt: &str, cancel: &CancellationToken) -> Result<Outcome> {
        let started = Instant::now();
        let mut tools = self.tool_defs();
        let mut offered: HashSet<String> = tools.iter().map(|t| t.name.clone()).collect();
        let mut deferral = Deferral::plan(&tools, self.options.defer_threshold_tokens);
        let mut system: Vec<String> = self.options.system.iter().cloned().collect();
        // The operator's system blocks; the deferred tools' listing, if any, comes after them.
        let own_system = system.len();
        if let Some(d) = &deferral {
            system.push(d.system_note());
        }
        self.log(json!({
            "type": "start", "provider": self.provider.name(), "model": self.options.model,
            "max_turns": self.options.max_turns, "system": system,
            "tools": tools.iter().map(|t| &t.name).collect::<Vec<_>>(), "deferred": deferral.is_some(),
        }))?;
        let mut outcome = Outcome {
            stop: Stop::MaxTurns(self.options.max_turns),
            text: String::new(),
            turns: 0,
            tool_calls: 0,
            tool_errors: 0,
            usage: Usage::default(),
            cost: self.options.pricing.map(|_| 0.0),
            elapsed: Duration::ZERO,
            messages: Vec::new(),
        };
        // SessionStart and UserPromptSubmit hooks: context for the first message, or the end.
        let first = match self.framing(prompt).await {
            Ok(message) => message,
            Err(stop) => {
                outcome.stop = stop;
                outcome.elapsed = started.elapsed();
                self.log(
                    json!({"type": "end", "stop": outcome.stop.to_string(), "exit_code": outcome.stop.exit_code()}),
                )?;
                return Ok(outcome);
            }
        };
        let mut request = ModelRequest {
            model: self.options.model.clone(),
            system,
            messages: vec![first],
            tools: Vec::new(),
            max_tokens: self.options.max_output_tokens,
        };
        let mut stop_hook_active = false;
        let mut logged = 0;
        for turn in 1..=self.options.max_turns {
            if cancel.is_cancelled() {
                outcome.stop = Stop::Interrupted;
                break;
            }
            // MCP servers' tools are read fresh each turn: one added, changed or gone is so in
            // this request.
            if turn > 1 && self.runtime.has_remote_servers() {
                for e in self.runtime.refresh_remote_tools().await {
                    tracing::warn!("{}", toolhost::error_text(&e));
                }
                let now = self.tool_defs();
                if now != tools {
                    offered = now.iter().map(|t| t.name.clone()).collect();
                    // Deferred or not as the new pool's size says; what was found stays found,
                    // and the system block lists the deferred tools as they are now.
                    deferral = Deferral::replan(deferral.take(), &now, self.options.defer_threshold_tokens);
                    request.system.truncate(own_system);
                    if let Some(d) = &deferral {
                        request.system.push(d.system_note());
                    }
                    self.log(json!({"type": "tools_changed", "turn": turn, "tools": now.iter().map(|t| &t.name).collect::<Vec<_>>()}))?;
                    tools = now;
                }
            }
            request.tools = match &mut deferral {
                Some(d) => d.tools_for_request(),
                None => tools.clone(),
            };
            self.log(json!({
                "type": "request", "turn": turn, "messages": &request.messages[logged..],
                "tools": request.tools.iter().map(|t| &t.name).collect::<Vec<_>>(),
            }))?;
            logged = request.messages.len();
            outcome.turns = turn;
            let t0 = Instant::now();
            let (response, answered) = self.turn(session, &request, deferral.as_mut(), &offered, cancel).await;
            let response = match response {
                Ok(r) => r,
                Err(Error::Interrupted) => {
                    outcome.stop = Stop::Interrupted;
                    break;
                }
                Err(e) => {
                    let _ = self.log(json!({"type": "error", "turn": turn, "message": e.to_string()}));
                    return Err(e);
                }
            };
            outcome.usage.add(&response.usage);
            let cost = self.options.pricing.map(|p| p.cost(&response.usage));
            if let (Some(total), Some(c)) = (&mut outcome.cost, cost) {
                *total += c;
            }
            if let Some(o) = &self.observer {
                o.response(turn, &response);
            }
            self.log(json!({
                "type": "response", "turn": turn, "message": response.message, "stop_reason": response.stop_reason,
                "usage": response.usage, "cost": cost, "attempts": response.attempts,
                "duration_ms": t0.elapsed().as_secs_f64() * 1000.0,
            }))?;
            outcome.text = response.message.text();
            let wants_tools = response.message.tool_uses().next().is_some();
            let stop_reason = response.stop_reason.clone();
            let (results, hook_stop) = self.pair(&response.message, answered, &stop_reason, turn, &mut outcome)?;
            request.messages.push(response.message);
            logged += 1;
            let stop = match stop_reason {
                StopReason::ToolUse => None,
                StopReason::Other(_) if wants_tools => None,
                StopReason::PauseTurn => None,
                StopReason::EndTurn | StopReason::StopSequence => Some(Stop::EndTurn),
                StopReason::MaxTokens => Some(Stop::MaxTokens),
                StopReason::Refusal => Some(Stop::Refusal),
                StopReason::Other(reason) => Some(Stop::Other(reason)),
            };
            if !results.is_empty() && stop.is_none() {
                request.messages.push(Message { role: Role::User, content: results });
            }
            let mut stop = stop.or(hook_stop.map(Stop::HookStopped));
            // Stop hooks: may make the model go on (their reason is its next message).
            if stop == Some(Stop::EndTurn) && turn < self.options.max_turns {
                let said =
                    self.runtime.session_hooks(self.runtime.session_id(), &SessionEvent::stop(stop_hook_active)).await;
                if let Some(reason) = said.stop {
                    stop = Some(Stop::HookStopped(reason));
                } else if let Some(feedback) = said.blocked {
                    stop_hook_active = true;
                    self.log(json!({"type": "stop_hook", "turn": turn, "feedback": feedback}))?;
                    request.messages.push(Message::user_text(format!("Stop hook feedback:\n{feedback}")));
                    stop = None;
                }
            }
            if let Some(stop) = stop {
                outcome.stop = stop;
                break;
            }
            if let Some(budget) = self.options.token_budget
                && outcome.usage.total() >= budget
            {
                outcome.stop = Stop::TokenBudget { used: outcome.usage.total(), budget };
                break;
            }
            if let (Some(budget), Some(spent)) = (self.options.cost_budget, outcome.cost)
                && spent >= budget
            {
                outcome.stop = Stop::CostBudget { spent, budget };
                break;
            }
        }
        outcome.elapsed = started.elapsed();
        outcome.messages = request.messages;
        self.log(json!({
            "type": "end", "stop": outcome.stop.to_string(), "exit_code": outcome.stop.exit_code(),
            "turns": outcome.turns, "tool_calls": outcome.tool_calls, "tool_errors": outcome.tool_errors,
            "usage": outcome.usage, "cost": outcome.cost, "duration_ms": outcome.elapsed.as_secs_f64() * 1000.0,
        }))?;
        Ok(outcome)
    }

    /// The first user message: the prompt, after the `SessionStart` and `UserPromptSubmit`
    /// hooks (their context joins it, as Claude Code's system reminders); or why the run ends
    /// before any request (a hook's `continue: false`, a blocked prompt).
    async fn framing(&self, prompt: &str) -> std::result::Result<Message, Stop> {
        let id = self.runtime.session_id();
        let mut reminders = Vec::new();
        for (event, name) in
            [(SessionEvent::start(), "SessionStart"), (SessionEvent::prompt(prompt), "UserPromptSubmit")]
        {
            if !self.runtime.has_session_hooks(&event) {
                continue;
            }
            let said = self.runtime.session_hooks(id, &event).await;
            if let Some(reason) = said.stop {
                return Err(Stop::HookStopped(reason));
            }
            if let (Some(reason), SessionEvent::Prompt { .. }) = (said.blocked, &event) {
                return Err(Stop::PromptBlocked(reason));
            }
            reminders.extend(
                said.context
                    .into_iter()
                    .map(|c| format!("<system-reminder>\n{name} hook additional context: {c}\n</system-reminder>")),
            );
        }
        let mut message = Message::user_text(prompt);
        message.content.extend(reminders.into_iter().map(Block::Text));
        Ok(message)
    }

    /// One request, with its tool calls run as they stream in.
    async fn turn(
        &self,
        session: &Session,
        request: &ModelRequest,
        deferral: Option<&mut Deferral>,
        offered: &HashSet<String>,
        cancel: &CancellationToken,
    ) -> (Result<ModelResponse>, Answered) {
        let (submit, mut incoming) = mpsc::unbounded_channel();
        let (tx, rx) = mpsc::channel(64);
        let started = Mutex::new(HashMap::new());
        let calls = cancel.child_token();
        let mut answered: Answered = Vec::new();
        let sink = Sink {
            submit,
            deferral,
            offered,
            runtime: &self.runtime,
            started: &started,
            observer: self.observer.as_deref(),
            transcript: self.transcript.as_ref(),
        };
        let model = async {
            let mut sink = sink;
            let response = tokio::select! {
                r = self.provider.send(request, &mut sink) => r,
                () = cancel.cancelled() => Err(Error::Interrupted),
            };
            // A failed response leaves no one to read the results: stop the calls.
            if response.is_err() {
                calls.cancel();
            }
            drop(sink);
            response
        };
        // The sink cannot wait (it is called inside the provider's stream), so calls go
        // through an unbounded channel into the runtime's bounded one.
        let forward = async move {
            while let Some(s) = incoming.recv().await {
                if tx.send(s).await.is_err() {
                    break;
                }
            }
        };
        let run = self.runtime.run_turn(session, rx, toolhost::CallOptions::new().cancel(calls.clone()), |result| {
            let entry = started.lock().unwrap_or_else(|e| e.into_inner()).remove(&result.tool_use_id);
            if let Some((call, at)) = entry {
                let elapsed = at.elapsed();
                if let Some(o) = &self.observer {
                    o.tool_finished(&call, &result, elapsed);
                }
                answered.push((call, result, elapsed));
            }
        });
        let (response, (), ()) = tokio::join!(model, forward, run);
        (response, answered)
    }

    /// The user message of results for `message`'s tool calls: one per `tool_use` block, in
    /// the blocks' order, paired by id. A block that never ran (its input never parsed) gets
    /// an error result, unless the run stops here anyway.
    fn pair(
        &self,
        message: &Message,
        answered: Answered,
        stop: &StopReason,
        turn: u32,
        outcome: &mut Outcome,
    ) -> Result<(Vec<Block>, Option<String>)> {
        let mut hook_stop = None;
        let mut by_id: HashMap<String, Vec<(ToolResult, Duration)>> = HashMap::new();
        for (call, result, elapsed) in answered {
            by_id.entry(call.id).or_default().push((result, elapsed));
        }
        let mut blocks = Vec::new();
        for call in message.tool_uses() {
            let found = by_id.get_mut(&call.id).and_then(|v| (!v.is_empty()).then(|| v.remove(0)));
            let (result, elapsed) = match found {
                Some(found) => found,
                None if matches!(stop, StopReason::MaxTokens) => continue,
                None => {
                    let message = "the input of this call is not valid JSON; it was not run";
                    let r = Refusal::new(RefusalKind::InvalidJson, message).into_result(&call.id);
                    (r, Duration::ZERO)
                }
            };
            outcome.tool_calls += 1;
            if hook_stop.is_none() {
                hook_stop.clone_from(&result.stop);
            }
            if result.is_error {
                outcome.tool_errors += 1;
            }
            self.log(json!({
                "type": "tool_result", "turn": turn, "tool_use_id": call.id, "tool": call.name, "input": call.input,
                "outcome": result.outcome, "is_error": result.is_error, "content": result.content,
                "duration_ms": elapsed.as_secs_f64() * 1000.0,
            }))?;
            blocks.push(Block::ToolResult {
                tool_use_id: result.tool_use_id,
                content: result.content,
                is_error: result.is_error,
            });
        }
        Ok((blocks, hook_stop))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[expect(dead_code, reason = "compiles only if a run can be spawned on a multi-threaded runtime")]
    fn run_is_send(agent: &Agent, session: &Session, cancel: &CancellationToken) {
        fn send<T: Send>(_: T) {}
        send(agent.run(session, "prompt", cancel));
    }

    #[test]
    fn exit_codes_and_cost() {
        assert_eq!(Stop::EndTurn.exit_code(), 0);
        for stop in [Stop::MaxTokens, Stop::Refusal, Stop::MaxTurns(3), Stop::Other("x".into())] {
            assert_eq!(stop.exit_code(), 1, "{stop}");
        }
        assert_eq!(Stop::Interrupted.exit_code(), 130);
        let usage = Usage {
            input_tokens: 1_000_000,
            output_tokens: 1_000_000,
            cache_creation_input_tokens: 1_000_000,
            cache_read_input_tokens: 1_000_000,
        };
        let cost = Pricing::new(3.0, 15.0).cost(&usage);
        assert!((cost - (3.0 + 15.0 + 3.75 + 0.3)).abs() < 1e-9, "{cost}");
    }
}
