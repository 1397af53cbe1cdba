//! `toolhost agent [PROMPT | --prompt-file F]`: the agent loop for CI. The model (the Messages
//! API, or an OpenAI-compatible server) answers the prompt, every tool call runs through the
//! sandbox under the global options (workspace, config, tools, permission mode, rules), and
//! the run ends with the model's final text on stdout, one line per tool call and a one-line
//! summary on stderr. Exit 0 on `end_turn`, 1 when a limit or the model ended it early, 2 on
//! usage or host errors (an authentication failure among them).

use crate::output::outln;
use crate::setup::{self, GlobalArgs};
use anyhow::{Context, Result, bail};
use clap::{Args, ValueEnum};
use std::io::IsTerminal as _;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;
use toolhost::{Session, ToolResult, ToolUse};
use toolhost_agent::{Agent, AgentOptions, Anthropic, Observer, OpenAi, Pricing, Provider, RetryNotice, RetryPolicy};

/// The model used with the Messages API when `--model` is not given.
const DEFAULT_ANTHROPIC_MODEL: &str = "claude-sonnet-4-5";

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum ProviderKind {
    /// The Anthropic Messages API (ANTHROPIC_API_KEY).
    Anthropic,
    /// OpenAI-compatible Chat Completions (OPENAI_API_KEY, optional for local servers).
    Openai,
}

#[derive(Args, Debug)]
pub struct AgentCommand {
    /// The task for the model.
    prompt: Option<String>,
    /// Read the task from FILE (`-` for stdin).
    #[arg(long, value_name = "FILE", conflicts_with = "prompt")]
    prompt_file: Option<PathBuf>,
    /// The model API.
    #[arg(long, value_enum, default_value = "anthropic")]
    provider: ProviderKind,
    /// The model (default for the Messages API: claude-sonnet-4-5; required with openai).
    #[arg(long, env = "TOOLHOST_AGENT_MODEL")]
    model: Option<String>,
    /// The API's base URL (default <https://api.anthropic.com>, or <https://api.openai.com/v1>;
    /// for a local OpenAI-compatible server e.g. http://127.0.0.1:8000/v1).
    #[arg(long, value_name = "URL")]
    base_url: Option<String>,
    /// The system prompt.
    #[arg(long, conflicts_with = "system_file")]
    system: Option<String>,
    /// Read the system prompt from FILE.
    #[arg(long, value_name = "FILE")]
    system_file: Option<PathBuf>,
    /// The most requests to the model.
    #[arg(long, default_value_t = 30, value_parser = clap::value_parser!(u32).range(1..))]
    max_turns: u32,
    /// `max_tokens` of each request.
    #[arg(long, default_value_t = 8192, value_parser = clap::value_parser!(u32).range(1..))]
    max_output_tokens: u32,
    /// Stop once this many tokens (input, cached or not, plus output) were spent.
    #[arg(long, value_name = "TOKENS")]
    max_total_tokens: Option<u64>,
    /// Stop once this many US dollars were spent (needs --price-input and --price-output).
    #[arg(long, value_name = "USD", requires_all = ["price_input", "price_output"])]
    max_cost: Option<f64>,
    /// Input price in US dollars per million tokens (for the cost; cache writes 1.25×, reads 0.1×).
    #[arg(long, value_name = "USD", requires = "price_output")]
    price_input: Option<f64>,
    /// Output price in US dollars per million tokens.
    #[arg(long, value_name = "USD", requires = "price_input")]
    price_output: Option<f64>,
    /// The model's context window in tokens: tools are deferred (found through ToolSearch)
    /// when their definitions take more than 10 % of it.
    #[arg(long, value_name = "TOKENS", default_value_t = 200_000)]
    context_window: u64,
    /// Offer the model only these tools (comma-separated, e.g. Read,Glob,Grep,LS); a call to
    /// any other is refused without running.
    #[arg(long, value_name = "TOOLS", value_delimiter = ',')]
    only_tools: Option<Vec<String>>,
    /// Write the conversation to FILE as JSON lines (requests, responses, tool results,
    /// timings, token usage, cost).
    #[arg(long, value_name = "FILE")]
    transcript: Option<PathBuf>,
    /// The first retry's backoff ceiling in milliseconds (tests set it low).
    #[arg(long, hide = true, default_value_t = 500)]
    retry_base_ms: u64,
}

impl AgentCommand {
    pub async fn execute(self, global: &GlobalArgs) -> Result<u8> {
        let prompt = match (&self.prompt, &self.prompt_file) {
            (Some(p), _) => p.clone(),
            (None, Some(f)) if f.as_os_str() == "-" => {
                std::io::read_to_string(std::io::stdin()).context("reading the prompt from stdin")?
            }
            (None, Some(f)) => std::fs::read_to_string(f).with_context(|| format!("--prompt-file {}", f.display()))?,
            (None, None) => bail!("give the task as PROMPT or --prompt-file FILE"),
        };
        if prompt.trim().is_empty() {
            bail!("the prompt is empty");
        }
        let system = match &self.system_file {
            Some(f) => Some(std::fs::read_to_string(f).with_context(|| format!("--system-file {}", f.display()))?),
            None => self.system.clone(),
        };
        let provider = self.provider()?;
        let model = match (&self.model, self.provider) {
            (Some(m), _) => m.clone(),
            (None, ProviderKind::Anthropic) => DEFAULT_ANTHROPIC_MODEL.to_string(),
            (None, ProviderKind::Openai) => bail!("--model is required with --provider openai"),
        };

        let mut global = global.clone();
        if let Some(path) = &self.transcript {
            global.protect.push((path.clone(), "the transcript file in use".into()));
        }
        let transcript = match &self.transcript {
            Some(path) => Some(toolhost_agent::Transcript::new(Box::new(
                setup::new_file(path).with_context(|| format!("--transcript {}", path.display()))?,
            ))),
            None => None,
        };
        // Asks go to the terminal when there is one, else they are denials naming the rule.
        let loaded = setup::load_with_events(&global, global.verbose > 0, None).await?;
        let runtime = Arc::new(loaded.runtime);
        for name in self.only_tools.iter().flatten() {
            if !runtime.has_tool(name) {
                bail!("--only-tools: no tool named {name:?} is loaded");
            }
        }

        let options = AgentOptions {
            system,
            max_turns: self.max_turns,
            max_output_tokens: self.max_output_tokens,
            token_budget: self.max_total_tokens,
            cost_budget: self.max_cost,
            pricing: self.price_input.zip(self.price_output).map(|(i, o)| Pricing::new(i, o)),
            defer_threshold_tokens: self.context_window / 10,
            only_tools: self.only_tools.clone(),
            ..AgentOptions::new(model)
        };
        let mut agent =
            Agent::new(runtime, provider, options).observer(Arc::new(Progress { live: setup::live_progress() }));
        if let Some(t) = transcript {
            agent = agent.transcript(t);
        }
        let cancel = setup::cancel_on_signal();
        let outcome = agent.run(&Session::new(), &prompt, &cancel).await?;
        if !outcome.text.is_empty() {
            // The model's words as they are for a pipe; at a terminal, no escape sequences.
            match std::io::stdout().is_terminal() {
                true => outln!("{}", setup::printable_lines(&outcome.text)),
                false => outln!("{}", outcome.text),
            }
        }
        eprintln!("{}", setup::printable_lines(&outcome.summary()));
        Ok(outcome.stop.exit_code())
    }

    fn provider(&self) -> Result<Arc<dyn Provider>> {
        let retry = RetryPolicy { base: Duration::from_millis(self.retry_base_ms), ..RetryPolicy::default() };
        let env = |k: &str| std::env::var(k).ok().filter(|v| !v.is_empty());
        Ok(match self.provider {
            ProviderKind::Anthropic => {
                let key_env = toolhost_agent::anthropic::KEY_ENV;
                let Some(key) = env(key_env) else { bail!("{key_env} is not set (the Messages API needs a key)") };
                let base = self.base_url.clone().or_else(|| env("ANTHROPIC_BASE_URL"));
                let base = base.as_deref().unwrap_or(toolhost_agent::anthropic::DEFAULT_BASE_URL);
                Arc::new(Anthropic::new(base, key)?.with_retry(retry))
            }
            ProviderKind::Openai => {
                let base = self.base_url.clone().or_else(|| env("OPENAI_BASE_URL"));
                let base = base.as_deref().unwrap_or(toolhost_agent::openai::DEFAULT_BASE_URL);
                Arc::new(OpenAi::new(base, env(toolhost_agent::openai::KEY_ENV))?.with_retry(retry))
            }
        })
    }
}

/// One line per tool call on stderr. On a terminal the runtime's live display (indicatif)
/// already draws a line per call; then only what it cannot see is printed here.
struct Progress {
    live: bool,
}

impl Observer for Progress {
    fn tool_finished(&self, call: &ToolUse, result: &ToolResult, elapsed: Duration) {
        if self.live && call.name != toolhost_agent::TOOL_SEARCH {
            return;
        }
        let mut input = call.input.to_string();
        if input.chars().count() > 100 {
            input = input.chars().take(100).collect::<String>() + "…";
        }
        let mark = if result.is_error { "✗" } else { "✓" };
        let ms = elapsed.as_secs_f64() * 1000.0;
        let line = format!("{mark} {} ({}) {input}: {} in {ms:.1} ms", call.name, call.id, result.outcome);
        eprintln!("{}", setup::printable(&line));
    }

    fn retrying(&self, notice: &RetryNotice) {
        let why = notice.status.map_or("a connection error".to_string(), |s| format!("status {s}"));
        eprintln!("retrying the model request after {why} in {:.1} s", notice.delay.as_secs_f64());
    }
}
