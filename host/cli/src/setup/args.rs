//! Global options every command takes, and how their values are read.

use anyhow::Result;
use clap::Args;
use std::path::PathBuf;

/// Options every command takes.
#[derive(Args, Debug, Clone)]
pub struct GlobalArgs {
    /// Config file (default: ./toolhost.toml if present).
    #[arg(long, global = true, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// The workspace: the directory tools are granted by default (default: the current directory).
    #[arg(long, global = true, value_name = "DIR")]
    pub workspace: Option<PathBuf>,
    /// Load every *.wasm in DIR as a tool (repeatable).
    #[arg(long = "tools", global = true, value_name = "DIR")]
    pub tools: Vec<PathBuf>,
    /// Do not load the embedded default tools.
    #[arg(long, global = true)]
    pub no_default_tools: bool,
    /// Permission mode: default, accept-edits, bypass, dont-ask or plan (overrides the config).
    #[arg(long, global = true, value_name = "MODE", value_parser = parse_mode)]
    pub permission_mode: Option<toolhost_policy::Mode>,
    /// Allow calls matching RULE, e.g. 'Write(notes/**)' (repeatable; adds to the config).
    #[arg(long, global = true, value_name = "RULE", value_parser = parse_rule)]
    pub allow: Vec<toolhost_policy::Rule>,
    /// Ask before calls matching RULE (repeatable; adds to the config).
    #[arg(long, global = true, value_name = "RULE", value_parser = parse_rule)]
    pub ask: Vec<toolhost_policy::Rule>,
    /// Deny calls matching RULE, e.g. 'Edit(.git/**)' (repeatable; adds to the config).
    #[arg(long, global = true, value_name = "RULE", value_parser = parse_rule)]
    pub deny: Vec<toolhost_policy::Rule>,
    /// Append one JSON line per permission decision and per call to FILE (overrides `[audit]
    /// file`; rotated by size, see `toolhost audit`).
    #[arg(long, global = true, value_name = "FILE")]
    pub audit: Option<PathBuf>,
    /// More logging on stderr (-v, -vv).
    #[arg(short, long, global = true, action = clap::ArgAction::Count)]
    pub verbose: u8,
    /// Refuse any difference between toolhost.toml and toolhost.lock, and never change the lock
    /// (the default when CI=true): see `toolhost update`.
    #[arg(long, global = true)]
    pub locked: bool,
    /// Compile a tool that has no optimised code ready with Cranelift before its first call,
    /// instead of answering at once with baseline (Winch) code while Cranelift compiles in the
    /// background.
    #[arg(long, global = true, env = "TOOLHOST_NO_TIERING", value_parser = clap::builder::BoolishValueParser::new())]
    pub no_tiering: bool,
    /// Also read this Claude Code settings file, above the user, project and local ones
    /// (`.claude/settings.json` and the others; `claude_settings = false` in the config turns
    /// them all off).
    #[arg(long, global = true, value_name = "FILE")]
    pub settings: Option<PathBuf>,
    /// Files of this command the host reads or writes (a session file, an events file): no tool
    /// may write them (see [`toolhost::RuntimeBuilder::protect`]).
    #[arg(skip)]
    pub protect: Vec<(PathBuf, String)>,
    /// How MCP servers are started and heard (set by the command, not on its line).
    #[arg(skip = mcp_client_options())]
    pub mcp: toolhost_mcp::Options,
}

/// What every command's MCP servers get: `toolhost mcp`'s bearer token is withheld from them
/// (it is not another server's business), and a server started again is said on stderr.
fn mcp_client_options() -> toolhost_mcp::Options {
    toolhost_mcp::Options {
        withhold_env: vec![crate::commands::mcp::TOKEN_ENV.to_string()],
        say: Some(std::sync::Arc::new(|message: &str| eprintln!("toolhost: {}", toolhost::printable(message)))),
        ..toolhost_mcp::Options::default()
    }
}

pub(super) fn parse_mode(s: &str) -> Result<toolhost_policy::Mode, toolhost_policy::ModeError> {
    s.parse()
}

pub(super) fn parse_rule(s: &str) -> Result<toolhost_policy::Rule, toolhost_policy::RuleError> {
    s.parse()
}
