use super::*;
use crate::{Decision, Request, SubjectKind};

const WS: &str = "/w";
const HOME: &str = "/home/u";

fn opts(trusted: bool) -> LoadOptions<'static> {
    LoadOptions { workspace: Path::new(WS), home: Some(Path::new(HOME)), trusted }
}

fn file(source: SettingsSource) -> PathBuf {
    match source {
        SettingsSource::User => PathBuf::from("/home/u/.claude/settings.json"),
        SettingsSource::Project => PathBuf::from("/w/.claude/settings.json"),
        SettingsSource::Local => PathBuf::from("/w/.claude/settings.local.json"),
        SettingsSource::Flag => PathBuf::from("/etc/team/claude.json"),
        SettingsSource::McpJson => PathBuf::from("/w/.mcp.json"),
        SettingsSource::ClaudeJson => PathBuf::from("/home/u/.claude.json"),
    }
}

fn read(files: &[(SettingsSource, &str)], trusted: bool) -> Result<ClaudeSettings, Vec<ConfigError>> {
    let mut s = ClaudeSettings::default();
    let mut errors = Vec::new();
    for (source, text) in files {
        if let Err(mut e) = s.read(*source, &file(*source), text, &opts(trusted)) {
            errors.append(&mut e);
        }
    }
    if errors.is_empty() { Ok(s) } else { Err(errors) }
}

/// The decision of a merged config for a call of `tool` on `path` (read-only or not).
fn decide(settings: ClaudeSettings, tool: &str, path: &str, read_only: bool) -> Decision {
    let mut config = crate::Config::default();
    config.merge_claude(settings);
    let req = Request { tool, subject: Some((path, SubjectKind::Path)), read_only, grant_inside_workspace: true };
    config.permissions.rules().decide(config.permissions.mode(), &req, Path::new(WS)).0
}

fn deny(rule: &str) -> String {
    format!(r#"{{"permissions": {{"deny": [{}]}}}}"#, serde_json::to_string(rule).unwrap())
}

#[test]
fn each_path_form_means_the_files_claude_code_means() {
    let p = SettingsSource::Project;
    let denied = |rule: &str, path: &str| {
        let s = read(&[(p, &deny(rule))], false).unwrap();
        decide(s, "Read", path, true) == Decision::Deny
    };
    // `./x` and `x`: relative to the workspace, `x` at any depth.
    assert!(denied("Read(./secret.txt)", "/w/secret.txt"));
    assert!(denied("Read(secret.txt)", "/w/sub/secret.txt"));
    assert!(!denied("Read(secret.txt)", "/elsewhere/secret.txt"));
    // `/x`: from the project's root.
    assert!(denied("Read(/sub/secret.txt)", "/w/sub/secret.txt"));
    assert!(!denied("Read(/secret.txt)", "/w/sub/secret.txt"));
    // `//x`: absolute.
    assert!(denied("Read(//etc/passwd)", "/etc/passwd"));
    assert!(!denied("Read(//etc/passwd)", "/w/etc/passwd"));
    // `~/x`: the home directory.
    assert!(denied("Read(~/.ssh/**)", "/home/u/.ssh/id_ed25519"));
    assert!(!denied("Read(~/.ssh/**)", "/w/.ssh/id_ed25519"));
    // Globs.
    assert!(denied("Read(*.env)", "/w/a/b/prod.env"));
    assert!(denied("Read(sub/**)", "/w/sub/a/b.txt"));
    assert!(denied("Read(sub/*)", "/w/sub/a.txt"));
    // As in .gitignore (and the `ignore` package Claude Code matches with): what a pattern
    // matches covers what is inside it.
    assert!(denied("Read(sub/*)", "/w/sub/a/b.txt"));
    // `Read(...)` covers every tool that reads files; `Edit(...)` every tool that edits them.
    let s = read(&[(p, &deny("Read(secrets/**)"))], false).unwrap();
    assert_eq!(decide(s, "Grep", "/w/secrets/k", true), Decision::Deny);
    let s = read(&[(p, &deny("Edit(secrets/**)"))], false).unwrap();
    assert_eq!(decide(s, "Write", "/w/secrets/k", false), Decision::Deny);
}

#[test]
fn a_slash_path_in_user_settings_starts_in_the_claude_directory() {
    let s = read(&[(SettingsSource::User, &deny("Read(/x.txt)"))], false).unwrap();
    assert_eq!(s.rules[0].rule.to_string(), "Read(//home/u/.claude/x.txt)");
    let s2 = read(&[(SettingsSource::User, &deny("Read(/x.txt)"))], false).unwrap();
    assert_eq!(decide(s2, "Read", "/home/u/.claude/x.txt", true), Decision::Deny);
    let s = read(&[(SettingsSource::Flag, &deny("Read(/x.txt)"))], false).unwrap();
    assert_eq!(s.rules[0].rule.to_string(), "Read(//etc/team/x.txt)");
}

#[test]
fn project_allow_rules_wait_for_trust_and_its_deny_rules_do_not() {
    let text = r#"{"permissions": {"allow": ["Read(//tmp/outside/**)"], "deny": ["Read(//tmp/outside/secret)"]}}"#;
    let untrusted = read(&[(SettingsSource::Project, text)], false).unwrap();
    assert_eq!((untrusted.rules.len(), untrusted.held.len()), (1, 1));
    assert_eq!(decide(untrusted.clone(), "Read", "/tmp/outside/a", true), Decision::Ask);
    assert_eq!(decide(untrusted, "Read", "/tmp/outside/secret", true), Decision::Deny);
    let trusted = read(&[(SettingsSource::Project, text)], true).unwrap();
    assert_eq!(decide(trusted, "Read", "/tmp/outside/a", true), Decision::Allow);
    // Local settings lie in the workspace too: held alike. User settings and --settings apply
    // at once.
    let local = read(&[(SettingsSource::Local, text)], false).unwrap();
    assert_eq!(decide(local, "Read", "/tmp/outside/a", true), Decision::Ask);
    for source in [SettingsSource::User, SettingsSource::Flag] {
        let s = read(&[(source, text)], false).unwrap();
        assert_eq!(decide(s, "Read", "/tmp/outside/a", true), Decision::Allow, "{source:?}");
    }
    // additionalDirectories alike.
    let dirs = r#"{"permissions": {"additionalDirectories": ["/tmp/outside"]}}"#;
    let held = read(&[(SettingsSource::Local, dirs)], false).unwrap();
    assert_eq!((held.additional_directories.len(), held.held_directories.len()), (0, 1));
    let user = read(&[(SettingsSource::User, dirs)], false).unwrap();
    assert_eq!(user.additional_directories.len(), 1);
}

#[test]
fn rules_of_every_file_are_unioned_and_deny_wins_wherever_it_is() {
    let allow = r#"{"permissions": {"allow": ["Edit(notes/**)"]}}"#;
    let s = read(&[(SettingsSource::User, &deny("Edit(notes/**)")), (SettingsSource::Local, allow)], false).unwrap();
    assert_eq!(decide(s, "Write", "/w/notes/a", false), Decision::Deny);
    let s = read(&[(SettingsSource::User, allow), (SettingsSource::Flag, &deny("Edit(notes/**)"))], false).unwrap();
    assert_eq!(decide(s, "Write", "/w/notes/a", false), Decision::Deny);
}

#[test]
fn the_highest_file_that_sets_a_mode_wins_and_the_config_above_them_all() {
    let mode = |m: &str| format!(r#"{{"permissions": {{"defaultMode": "{m}"}}}}"#);
    let s = read(
        &[
            (SettingsSource::User, &mode("plan")),
            (SettingsSource::Project, &mode("acceptEdits")),
            (SettingsSource::Local, &mode("dontAsk")),
        ],
        true,
    )
    .unwrap();
    assert_eq!(s.mode.as_ref().unwrap().0, Mode::DontAsk);
    let mut config = crate::Config::parse("[permissions]\nmode = \"plan\"\n", Path::new("/w/toolhost.toml")).unwrap();
    config.merge_claude(s.clone());
    assert_eq!(config.permissions.mode(), Mode::Plan);
    let mut config = crate::Config::default();
    config.merge_claude(s);
    assert_eq!(config.permissions.mode(), Mode::DontAsk);
    assert_eq!(read(&[(SettingsSource::Local, &mode("manual"))], false).unwrap().mode.unwrap().0, Mode::Default);
}

#[test]
fn malformed_values_are_errors_at_their_line_and_column() {
    let text =
        "{\n  \"permissions\": {\n    \"allow\": [\"Read(unclosed\", 3],\n    \"defaultMode\": \"yolo\"\n  }\n}\n";
    let errors = read(&[(SettingsSource::Project, text)], true).unwrap_err();
    let shown: Vec<String> = errors.iter().map(ToString::to_string).collect();
    assert_eq!(shown.len(), 3, "{shown:#?}");
    assert!(
        shown[0].starts_with("/w/.claude/settings.json:3:15: permissions.allow: invalid permission rule"),
        "{shown:#?}"
    );
    assert!(
        shown[1].starts_with("/w/.claude/settings.json:3:32: permissions.allow[1]: must be a string"),
        "{shown:#?}"
    );
    assert!(
        shown[2].starts_with("/w/.claude/settings.json:4:20: permissions.defaultMode: unknown permission mode"),
        "{shown:#?}"
    );

    let errors = read(&[(SettingsSource::Project, "{\"permissions\": {\"allow\": [\"Read\",]}}")], true).unwrap_err();
    assert!(errors[0].message.starts_with("not JSON: Trailing commas"), "{errors:?}");
    assert_eq!((errors[0].line, errors[0].column), (1, 34));
    let errors = read(&[(SettingsSource::Project, "{\n// no\n}")], true).unwrap_err();
    assert_eq!(errors[0].line, 2, "{errors:?}");
    let errors = read(&[(SettingsSource::Project, "[1]")], true).unwrap_err();
    assert!(errors[0].message.contains("must be a JSON object"), "{errors:?}");
}

#[test]
fn unknown_keys_warn_and_rules_for_claude_code_only_tools_are_listed_as_ignored() {
    let text = r#"{"model": "x", "permisions": {}, "permissions": {"allow": ["Bash(npm run test:*)", "Bash(echo [)"], "denyy": []}}"#;
    let s = read(&[(SettingsSource::Local, text)], true).unwrap();
    let warnings: Vec<String> = s.warnings.iter().map(|w| w.message.clone()).collect();
    assert_eq!(warnings.len(), 2, "{warnings:?}");
    assert!(warnings[0].contains("\"permisions\""));
    assert!(warnings[1].contains("permissions.denyy"));
    assert_eq!(s.ignored.len(), 2);
    assert!(s.ignored[0].what.contains("Bash(npm run test:*)"));
    // Kept: a loaded tool named Bash is still bound by them.
    assert_eq!(s.rules.len(), 2);
}

#[test]
fn hooks_read_as_claude_code_writes_them() {
    let text = r#"{
  "env": {"TEAM": "core", "N": 3, "PATH": "/w/bin", "LD_PRELOAD": "/w/x.so"},
  "hooks": {
    "PreToolUse": [{"matcher": "Write|Edit", "hooks": [{"type": "command", "command": "/opt/hooks/guard.sh", "timeout": 5}]}],
    "PostToolUse": [{"hooks": [{"type": "command", "command": "/opt/hooks/log.sh"}, {"type": "prompt", "prompt": "x"}]}],
    "Stop": [{"hooks": [{"type": "command", "command": "/opt/hooks/stop.sh"}]}],
    "Notification": [{"hooks": [{"type": "command", "command": "/opt/hooks/n.sh"}]}]
  }
}"#;
    let s = read(&[(SettingsSource::Project, text)], false).unwrap();
    assert_eq!(s.hooks.len(), 3);
    let (key, pre) = &s.hooks[0];
    assert_eq!(*key, "pre_tool_use");
    assert!(pre.matcher().matches("Edit") && !pre.matcher().matches("Read"));
    assert_eq!(pre.timeout_ms(), 5000);
    assert_eq!(pre.origin.as_ref().unwrap().line, 4);
    assert_eq!(s.hooks[1].1.timeout_ms(), DEFAULT_HOOK_TIMEOUT_MS);
    assert_eq!(s.env.get("N").map(String::as_str), Some("3"));
    let ignored: Vec<&str> = s.ignored.iter().map(|i| i.what.as_str()).collect();
    assert_eq!(ignored, ["env PATH", "env LD_PRELOAD", "a \"prompt\" hook", "Notification hooks"]);
    assert_eq!(s.hooks[2].0, "stop");
    assert!(!s.env.contains_key("PATH") && !s.env.contains_key("LD_PRELOAD"));

    let mut config = crate::Config::default();
    config.merge_claude(s);
    assert_eq!((config.hooks.pre_tool_use.len(), config.hooks.post_tool_use.len()), (1, 1));
    assert_eq!(config.hooks.env.get("TEAM").map(String::as_str), Some("core"));

    let off =
        r#"{"disableAllHooks": true, "hooks": {"PreToolUse": [{"hooks": [{"type": "command", "command": "x"}]}]}}"#;
    assert!(read(&[(SettingsSource::Local, off)], false).unwrap().hooks.is_empty());
    let bad = r#"{"hooks": {"PreToolUse": [{"matcher": "(", "hooks": [{"type": "command", "timeout": -1, "command": "x"}]}]}}"#;
    let errors = read(&[(SettingsSource::Local, bad)], false).unwrap_err();
    assert_eq!(errors.len(), 2, "{errors:?}");
}

#[test]
fn mcp_server_rules_name_every_tool_of_the_server() {
    let s = read(&[(SettingsSource::Local, &deny("mcp__tracker__*"))], false).unwrap();
    assert_eq!(decide(s.clone(), "mcp__tracker__create", "x", false), Decision::Deny);
    assert_eq!(decide(s, "mcp__trackers__create", "x", false), Decision::Ask);
    let s = read(&[(SettingsSource::Local, &deny("mcp__tracker"))], false).unwrap();
    assert_eq!(decide(s, "mcp__tracker__create", "x", false), Decision::Deny);
}

#[test]
fn additional_directories_resolve_against_the_workspace_and_home() {
    let text = r#"{"permissions": {"additionalDirectories": ["../other", "~/notes", "/abs"]}}"#;
    let s = read(&[(SettingsSource::Local, text)], true).unwrap();
    let dirs: Vec<&Path> = s.additional_directories.iter().map(|(d, _)| d.as_path()).collect();
    assert_eq!(dirs, [Path::new("/other"), Path::new("/home/u/notes"), Path::new("/abs")]);
}

#[test]
fn a_missing_file_is_nothing_and_a_missing_settings_flag_file_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path();
    let paths = SettingsPaths::new(ws, None, None, None);
    let opts = LoadOptions { workspace: ws, home: None, trusted: false };
    assert!(ClaudeSettings::load(&paths, &opts).unwrap().files.is_empty());
    let paths = SettingsPaths::new(ws, None, None, Some(&ws.join("nope.json")));
    let errors = ClaudeSettings::load(&paths, &opts).unwrap_err();
    assert!(errors[0].message.contains("cannot read --settings"), "{errors:?}");
    std::fs::create_dir(ws.join(".claude")).unwrap();
    std::fs::write(ws.join(".claude/settings.local.json"), b"{\"env\": {\"A\": \"\xff\"}}").unwrap();
    let paths = SettingsPaths::new(ws, None, None, None);
    let errors = ClaudeSettings::load(&paths, &opts).unwrap_err();
    assert!(errors[0].message.contains("not UTF-8"), "{errors:?}");
}

#[test]
fn case_is_ignored_as_claude_code_ignores_it() {
    let s = read(&[(SettingsSource::Project, &deny("Read(./SECRET.txt)"))], false).unwrap();
    assert_eq!(decide(s, "Read", "/w/secret.txt", true), Decision::Deny);
    let s = read(&[(SettingsSource::Project, &deny("Edit(Docs/**)"))], false).unwrap();
    assert_eq!(decide(s, "Write", "/w/docs/a/b.md", false), Decision::Deny);
}

#[test]
fn a_write_path_allow_rule_does_nothing_as_in_claude_code_and_a_deny_one_still_binds() {
    let text = r#"{"permissions": {"allow": ["Write(notes/**)", "Write"], "deny": ["Write(.git/**)"]}}"#;
    let s = read(&[(SettingsSource::User, text)], false).unwrap();
    let rules: Vec<String> = s.rules.iter().map(|r| r.rule.to_string()).collect();
    assert_eq!(rules, ["Write", "Write(.git/**)"]);
    assert_eq!(s.ignored.len(), 2, "{:?}", s.ignored);
}

#[test]
fn a_settings_file_that_is_not_a_regular_file_or_too_large_is_an_error_not_a_hang() {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path();
    std::fs::create_dir(ws.join(".claude")).unwrap();
    std::os::unix::fs::symlink("/dev/zero", ws.join(".claude/settings.json")).unwrap();
    let opts = LoadOptions { workspace: ws, home: None, trusted: false };
    let errors = ClaudeSettings::load(&SettingsPaths::new(ws, None, None, None), &opts).unwrap_err();
    assert!(errors[0].message.contains("not a regular file"), "{errors:?}");
    std::fs::remove_file(ws.join(".claude/settings.json")).unwrap();
    let big = format!("{{\"env\": {{\"A\": \"{}\"}}}}", "x".repeat(MAX_SETTINGS_BYTES as usize));
    std::fs::write(ws.join(".claude/settings.json"), big).unwrap();
    let errors = ClaudeSettings::load(&SettingsPaths::new(ws, None, None, None), &opts).unwrap_err();
    assert!(errors[0].message.contains("larger than"), "{errors:?}");
}

#[test]
fn a_hooks_if_is_a_rule_read_as_the_files_rules_are() {
    let text = r#"{"hooks": {"PreToolUse": [{"matcher": "Write", "hooks": [
        {"type": "command", "command": "/opt/h/gen.sh", "if": "Write(/generated/**)"},
        {"type": "command", "command": "/opt/h/any.sh"}
    ]}]}}"#;
    let s = read(&[(SettingsSource::Project, text)], false).unwrap();
    let rule = s.hooks[0].1.condition.as_ref().unwrap();
    assert!(rule.matches("Write", Some(("/w/generated/a.rs", SubjectKind::Path)), Path::new(WS)));
    assert!(!rule.matches("Write", Some(("/w/src/a.rs", SubjectKind::Path)), Path::new(WS)));
    assert!(s.hooks[1].1.condition.is_none());
    let bad = r#"{"hooks": {"PreToolUse": [{"hooks": [{"type": "command", "command": "x", "if": "Write(("}]}]}}"#;
    assert!(
        read(&[(SettingsSource::Project, bad)], false).unwrap_err()[0].message.contains(".if: invalid permission rule")
    );
}

#[test]
fn disable_bypass_is_read_with_where_it_was_written() {
    let text = r#"{"permissions": {"disableBypassPermissionsMode": "disable"}}"#;
    let s = read(&[(SettingsSource::User, text)], false).unwrap();
    assert_eq!(s.bypass_disabled.as_ref().map(|o| o.line), Some(1));
    let bad = r#"{"permissions": {"disableBypassPermissionsMode": "yes"}}"#;
    assert!(read(&[(SettingsSource::User, bad)], false).is_err());
}

#[test]
fn claude_json_brings_the_users_and_this_projects_servers_in_claude_codes_order() {
    let claude_json = r#"{
        "numStartups": 12, "oauthAccount": {"x": 1},
        "mcpServers": {
            "docs": {"type": "stdio", "command": "docs-user", "args": []},
            "tracker": {"type": "http", "url": "https://user.example/mcp"}
        },
        "projects": {
            "/w": {"allowedTools": [], "mcpServers": {"tracker": {"type": "stdio", "command": "tracker-local"}}},
            "/other": {"mcpServers": {"other": {"command": "not-this-project"}}}
        }
    }"#;
    let mcp_json =
        r#"{"mcpServers": {"tracker": {"command": "tracker-project"}, "docs": {"command": "docs-project"}}}"#;
    let s = read(&[(SettingsSource::McpJson, mcp_json), (SettingsSource::ClaudeJson, claude_json)], true).unwrap();
    let mut config = crate::Config::default();
    config.merge_claude(s);
    let command =
        |name: &str| config.mcp_servers.get(name).and_then(|s| s.command.as_ref()).map(|c| c.get_ref().clone());
    // Local (this project in ~/.claude.json) > project (.mcp.json) > user.
    assert_eq!(command("tracker").as_deref(), Some("tracker-local"));
    assert_eq!(command("docs").as_deref(), Some("docs-project"));
    assert!(!config.mcp_servers.contains_key("other"), "another project's servers stay out");
    // Without the project's file the user's server is used; no trust is needed for it.
    let s = read(&[(SettingsSource::ClaudeJson, claude_json)], false).unwrap();
    let mut config = crate::Config::default();
    config.merge_claude(s);
    assert_eq!(command_of(&config, "docs").as_deref(), Some("docs-user"));
    assert!(config.mcp_servers["tracker"].origin.as_ref().unwrap().file.ends_with(".claude.json"));
    // A malformed server there is an error with its position, like any settings file.
    let bad = r#"{"mcpServers": {"x": {"command": 3}}}"#;
    let errors = read(&[(SettingsSource::ClaudeJson, bad)], true).unwrap_err();
    assert!(errors[0].message.contains("mcpServers.x.command"), "{errors:?}");
    assert_eq!(errors[0].line, 1);
}

fn command_of(config: &crate::Config, name: &str) -> Option<String> {
    config.mcp_servers.get(name).and_then(|s| s.command.as_ref()).map(|c| c.get_ref().clone())
}

#[test]
fn disabled_mcp_json_servers_never_start_even_in_a_trusted_workspace() {
    let settings = r#"{"disabledMcpjsonServers": ["risky"]}"#;
    let mcp_json = r#"{"mcpServers": {"risky": {"command": "r"}, "fine": {"command": "f"}}}"#;
    let s = read(&[(SettingsSource::Local, settings), (SettingsSource::McpJson, mcp_json)], true).unwrap();
    assert!(s.ignored.iter().any(|i| i.what == "mcpServers.risky" && i.why.contains("disabledMcpjsonServers")));
    let mut config = crate::Config::default();
    config.merge_claude(s);
    assert_eq!(config.mcp_servers.keys().collect::<Vec<_>>(), ["fine"]);
}
