//! What Claude Code's settings files say that toolhost does not do, or not yet: said once per
//! process on stderr, so that nobody believes a rule is in force when it is not.

use std::sync::atomic::{AtomicBool, Ordering};
use toolhost_policy::claude::ClaudeSettings;

static REPORTED: AtomicBool = AtomicBool::new(false);

/// One line on stderr, made printable: settings files come with a cloned repository, and a
/// JSON string's `\u001b` is a real escape character once parsed.
macro_rules! say {
    ($($arg:tt)*) => { eprintln!("{}", crate::setup::printable(&format!($($arg)*))) };
}

/// Print the settings' warnings (unknown keys), what they say that toolhost ignores, and the
/// project allow rules held until the workspace is trusted; only the first time in a process.
pub fn report_once(settings: &ClaudeSettings) {
    if REPORTED.swap(true, Ordering::Relaxed) {
        return;
    }
    for w in &settings.warnings {
        say!("warning: {w}");
    }
    for i in &settings.ignored {
        say!("note: {}: ignored: {} ({})", i.origin, i.what, i.why);
    }
    if !settings.held.is_empty() {
        let rules: Vec<&str> = settings.held.iter().map(|r| r.written.as_str()).collect();
        say!(
            "note: {}: {} allow rule{} of the workspace's settings apply only once this workspace is trusted (`toolhost trust`): {}",
            settings.held[0].origin.file.display(),
            rules.len(),
            if rules.len() == 1 { "" } else { "s" },
            rules.join(", ")
        );
    }
    if let Some(origin) = &settings.held_mode {
        say!(
            "note: {origin}: the default mode bypassPermissions applies only once this workspace is trusted (`toolhost trust`)"
        );
    }
    for (name, origin) in &settings.held_servers {
        say!("note: {origin}: the MCP server {name} starts only once this workspace is trusted (`toolhost trust`)");
    }
    for (dir, origin) in &settings.held_directories {
        say!(
            "note: {origin}: the additional directory {} applies only once this workspace is trusted (`toolhost trust`)",
            dir.display()
        );
    }
}

/// The rules in force and where each was written, as lines for people; a rule naming no
/// loaded tool (and no family of tools, nor an MCP server) is marked as doing nothing.
pub fn rule_lines(config: &toolhost_policy::Config, loaded: Option<&[&str]>) -> Vec<String> {
    config
        .rule_origins()
        .into_iter()
        .map(|(kind, rule, from)| {
            let idle = loaded.is_some_and(|names| {
                rule.parse::<toolhost_policy::Rule>().ok().is_some_and(|r| {
                    r.family().is_none() && !r.tool.starts_with("mcp__") && !names.iter().any(|n| r.names(n))
                })
            });
            let note = if idle { "  (no such tool is loaded: ignored)" } else { "" };
            format!("{kind} {rule}  from {from}{note}")
        })
        .collect()
}

/// The hooks in force and where each was written, as lines for people.
pub fn hook_lines(config: &toolhost_policy::Config) -> Vec<String> {
    config
        .hook_origins()
        .into_iter()
        .map(|(event, hook, from)| {
            let matcher = hook.matcher.as_ref().map_or("*".to_string(), |m| matcher_text(m.get_ref()));
            format!("{event} [{matcher}] {}  from {from}", hook.command.get_ref())
        })
        .collect()
}

fn matcher_text(m: &toolhost_policy::HookMatcher) -> String {
    match m {
        toolhost_policy::HookMatcher::All => "*".to_string(),
        toolhost_policy::HookMatcher::Names(n) => n.join("|"),
        toolhost_policy::HookMatcher::Regex(r) => r.as_str().to_string(),
    }
}
