//! Claude Code's settings files read as they are (`.claude/settings.json`, `.claude/settings.local.json`,
//! the user's and `--settings`): a `.claude/` directory as a real project has it gives the same
//! decisions under `toolhost call`, `run`, `agent` and `mcp`, rule form by rule form; the
//! project's own allow rules wait for `toolhost trust`; the files' precedence; what the files
//! say that toolhost does not do is listed, and a malformed rule is an error at its position.

use rmcp::ServiceExt as _;
use rmcp::model::CallToolRequestParams;
use rmcp::transport::TokioChildProcess;
use serde_json::{Value, json};
use std::fs;
use std::path::PathBuf;
use std::process::{Command, Output, Stdio};
use toolhost_tests::cli::{self, assert_exit, ok, stderr, stdout};
use toolhost_tests::model_server::{Answer, ModelServer};

/// The project's shared settings, as a team commits them: rules of each path form, a
/// `Bash(...)` rule toolhost has no tool for, a PreToolUse hook on `Write|Edit` in
/// `.claude/hooks/`.
const PROJECT: &str = r#"{
  "$schema": "https://json.schemastore.org/claude-code-settings.json",
  "permissions": {
    "allow": ["Read(//OUTSIDE/**)", "Bash(npm run test:*)"],
    "deny": [
      "Read(./.env)",
      "Read(secrets/**)",
      "Read(/config/prod.json)",
      "Read(//OUTSIDE/private/**)",
      "Read(~/.ssh/**)",
      "Edit(*.lock)",
      "Bash(curl:*)"
    ],
    "ask": ["Write(docs/**)"]
  },
  "hooks": {
    "PreToolUse": [
      {"matcher": "Write|Edit", "hooks": [{"type": "command", "command": "\"$CLAUDE_PROJECT_DIR\"/.claude/hooks/guard.sh", "timeout": 10}]}
    ]
  }
}
"#;

/// Refuses writes under `generated/`, with the team's name from `env`.
const GUARD: &str = r#"#!/bin/sh
input=$(cat)
case "$input" in
  *'"file_path":"generated/'*) echo "generated files are made by the build ($TEAM)" >&2; exit 2 ;;
esac
exit 0
"#;

/// A workspace with a project's `.claude/`, a home directory and a state directory of its own.
struct Project {
    ws: tempfile::TempDir,
    home: tempfile::TempDir,
    state: tempfile::TempDir,
    outside: tempfile::TempDir,
}

impl Project {
    fn new() -> Project {
        let ws = toolhost_tests::workspace();
        let home = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        let outside_real = outside.path().canonicalize().unwrap();
        let p = |rel: &str| ws.path().join(rel);
        for (file, text) in [
            ("a.txt", "alpha\n"),
            (".env", "TOKEN=1\n"),
            ("secrets/key", "k\n"),
            ("config/prod.json", "{}\n"),
            ("sub/config/prod.json", "{}\n"),
            ("Cargo.lock", "lock\n"),
        ] {
            fs::create_dir_all(p(file).parent().unwrap()).unwrap();
            fs::write(p(file), text).unwrap();
        }
        fs::create_dir_all(p(".claude/hooks")).unwrap();
        let project = PROJECT.replace("//OUTSIDE", &format!("/{}", outside_real.display()));
        fs::write(p(".claude/settings.json"), project).unwrap();
        fs::write(p(".claude/settings.local.json"), r#"{"env": {"TEAM": "core"}}"#).unwrap();
        fs::write(p(".claude/hooks/guard.sh"), GUARD).unwrap();
        use std::os::unix::fs::PermissionsExt as _;
        fs::set_permissions(p(".claude/hooks/guard.sh"), fs::Permissions::from_mode(0o755)).unwrap();
        fs::create_dir_all(home.path().join(".ssh")).unwrap();
        fs::write(home.path().join(".ssh/id_ed25519"), "private\n").unwrap();
        fs::create_dir_all(outside_real.join("private")).unwrap();
        fs::write(outside_real.join("notes.txt"), "outside\n").unwrap();
        fs::write(outside_real.join("private/x"), "private\n").unwrap();
        Project { ws, home, state: tempfile::tempdir().unwrap(), outside }
    }

    fn path(&self, rel: &str) -> PathBuf {
        self.ws.path().join(rel)
    }

    fn outside(&self, rel: &str) -> String {
        self.outside.path().canonicalize().unwrap().join(rel).display().to_string()
    }

    /// `toolhost` in the workspace with this project's home and state.
    fn command(&self) -> Command {
        let mut c = cli::command(self.ws.path());
        c.env("HOME", self.home.path())
            .env("CLAUDE_CONFIG_DIR", self.home.path().join(".claude"))
            .env("TOOLHOST_STATE_DIR", self.state.path())
            .stdin(Stdio::null());
        c
    }

    fn run(&self, args: &[&str]) -> Output {
        self.command().args(args).output().unwrap()
    }

    /// `toolhost call TOOL INPUT`: `Ok(output)` or `Err(error text)`.
    fn call(&self, tool: &str, input: Value) -> Result<String, String> {
        let o = self.run(&["call", tool, &input.to_string()]);
        if o.status.success() { Ok(stdout(&o)) } else { Err(format!("{}{}", stdout(&o), stderr(&o))) }
    }

    fn trust(&self) {
        ok(&self.run(&["trust"]));
    }
}

fn read(path: &str) -> Value {
    json!({"file_path": path})
}

fn denied(result: Result<String, String>, rule: &str) {
    match result {
        Ok(out) => panic!("allowed, not denied by {rule}: {out}"),
        Err(e) => assert!(e.contains(&format!("by the rule {rule}")), "want the rule {rule}: {e}"),
    }
}

#[test]
fn every_path_form_of_a_project_rule_means_the_files_claude_code_means() {
    let p = Project::new();
    // `./x`: the file at the workspace's root.
    denied(p.call("Read", read(".env")), "Read(./.env)");
    // `x/**`: relative to the workspace.
    denied(p.call("Read", read("secrets/key")), "Read(secrets/**)");
    // `/x`: from the project's root, not at any depth.
    denied(p.call("Read", read("config/prod.json")), "Read(/config/prod.json)");
    assert!(p.call("Read", read("sub/config/prod.json")).is_ok());
    // `//x`: absolute.
    let private = p.outside("private/x");
    denied(p.call("Read", read(&private)), &format!("Read(/{})", p.outside("private/**")));
    // `~/x`: the home directory.
    let key = p.home.path().join(".ssh/id_ed25519").canonicalize().unwrap();
    let o = p.call("Read", read(key.to_str().unwrap())).unwrap_err();
    assert!(o.contains("by the rule Read(//") && o.contains(".ssh/**)"), "{o}");
    assert!(o.starts_with("File is in a directory that is denied by your permission settings."), "{o}");
    // `Read(...)` covers every tool that reads files: Grep finds nothing in what it denies.
    let grep = p.call("Grep", json!({"pattern": "k", "path": "secrets"}));
    denied(grep, "Read(secrets/**)");
    // `Edit(...)` covers every tool that edits files.
    denied(p.call("Write", json!({"file_path": "Cargo.lock", "content": "x"})), "Edit(*.lock)");
    // An ask rule, with no one to ask, is a denial naming the rule.
    let o = p.call("Write", json!({"file_path": "docs/x.md", "content": "x"})).unwrap_err();
    assert!(o.contains("Write(docs/**)"), "{o}");
    // Untouched by any rule: as the mode says.
    assert_eq!(p.call("Read", read("a.txt")).unwrap(), "     1\talpha\n");
}

#[test]
fn the_project_allow_rules_wait_until_the_workspace_is_trusted() {
    let p = Project::new();
    let notes = p.outside("notes.txt");
    let o = p.run(&["call", "Read", &read(&notes).to_string()]);
    assert_exit(&o, 1);
    let err = stderr(&o);
    assert!(err.contains("apply only once this workspace is trusted (`toolhost trust`)"), "{err}");
    assert!(err.contains("ignored: allow rule Bash(npm run test:*)"), "listed as ignored: {err}");
    // The project's deny rules applied at once.
    denied(p.call("Read", read(".env")), "Read(./.env)");
    p.trust();
    // Trusted, the allow rule decides (the Read tool's grant still ends at the workspace).
    let o = p.call("Read", read(&notes)).unwrap_err();
    assert!(o.contains("outside the directories this tool was granted"), "allowed, then refused by the grant: {o}");
    // A rule the project adds later is a change to confirm, not trusted with the rest.
    let settings = fs::read_to_string(p.path(".claude/settings.json")).unwrap();
    fs::write(p.path(".claude/settings.json"), settings.replace("\"Bash(npm run test:*)\"", "\"Write\"")).unwrap();
    let o = p.run(&["call", "Read", &read("a.txt").to_string()]);
    assert_exit(&o, 2);
    assert!(stderr(&o).contains("allow rule added: Write"), "{}", stderr(&o));
}

#[test]
fn the_hook_of_the_settings_runs_with_their_env_and_is_pinned() {
    let p = Project::new();
    let o = p.call("Write", json!({"file_path": "generated/out.rs", "content": "x"})).unwrap_err();
    assert!(o.contains("PreToolUse:Write hook error"), "{o}");
    assert!(o.contains("generated files are made by the build (core)"), "the hook saw env TEAM: {o}");
    assert!(!p.path("generated/out.rs").exists());
    // The hook's script changed: refused until trusted, and the changed script does not run.
    fs::write(p.path(".claude/hooks/guard.sh"), "#!/bin/sh\ntouch ran-changed\n").unwrap();
    let o = p.run(&["call", "Read", &read("a.txt").to_string()]);
    assert_exit(&o, 2);
    assert!(stderr(&o).contains(".claude/hooks/guard.sh changed"), "{}", stderr(&o));
    assert!(!p.path("ran-changed").exists());
}

#[test]
fn no_tool_can_write_the_settings_files() {
    let p = Project::new();
    for (file, pattern) in [
        (".claude/settings.local.json", "`**/.claude/`"),
        (".claude/settings.json", "`**/.claude/`"),
        (".mcp.json", "`**/.mcp.json`"),
    ] {
        let o = p.run(&[
            "--permission-mode",
            "bypass",
            "call",
            "Write",
            &json!({"file_path": file, "content": "{\"permissions\": {\"allow\": [\"Write\"]}}"}).to_string(),
        ]);
        // Refused because writing it waits for a person in every mode (bypass too), and no one
        // is there to answer: not for any other reason.
        assert_eq!(o.status.code(), Some(1), "{file}: {}", stdout(&o));
        let said = stdout(&o) + &stderr(&o);
        assert!(said.contains(&format!("matches {pattern}, a file other programs run")), "{file}: {said}");
        assert!(said.contains("asked every time, in every mode, and there is no one to ask"), "{file}: {said}");
    }
    assert!(!p.path(".mcp.json").exists());
    assert!(!fs::read_to_string(p.path(".claude/settings.local.json")).unwrap().contains("allow"));
}

#[test]
fn the_files_take_precedence_in_claude_codes_order() {
    let p = Project::new();
    let mode = |m: &str| format!(r#"{{"permissions": {{"defaultMode": "{m}"}}}}"#);
    let user = p.home.path().join(".claude");
    fs::create_dir_all(&user).unwrap();
    // User: plan; local: acceptEdits. Local wins: a write in the workspace runs unasked.
    fs::write(user.join("settings.json"), mode("plan")).unwrap();
    fs::write(p.path(".claude/settings.local.json"), mode("acceptEdits")).unwrap();
    p.call("Write", json!({"file_path": "w.txt", "content": "x"})).unwrap();
    // --settings above them all: plan.
    let flag = p.home.path().join("flag.json");
    fs::write(&flag, mode("plan")).unwrap();
    let o = p.run(&["--settings", flag.to_str().unwrap(), "call", "Write", r#"{"file_path":"w2.txt","content":"x"}"#]);
    assert!(stdout(&o).contains("while in plan mode"), "{}{}", stdout(&o), stderr(&o));
    // toolhost.toml above every settings file.
    fs::write(p.path("toolhost.toml"), "[permissions]\nmode = \"accept-edits\"\n").unwrap();
    p.trust();
    let o = p.run(&["--settings", flag.to_str().unwrap(), "call", "Write", r#"{"file_path":"w3.txt","content":"x"}"#]);
    assert_exit(&o, 0);
    // A deny rule of the lowest file beats an allow rule of the highest.
    fs::write(user.join("settings.json"), r#"{"permissions": {"deny": ["Edit(w4.txt)"]}}"#).unwrap();
    fs::write(&flag, r#"{"permissions": {"allow": ["Edit(w4.txt)"]}}"#).unwrap();
    // An allow rule added anywhere widens: it waits for a person, as a config change does.
    let o = p.run(&["--settings", flag.to_str().unwrap(), "call", "Read", r#"{"file_path":"a.txt"}"#]);
    assert_exit(&o, 2);
    assert!(stderr(&o).contains("allow rule added: Edit(w4.txt)"), "{}", stderr(&o));
    ok(&p.run(&["--settings", flag.to_str().unwrap(), "trust"]));
    let o = p.run(&["--settings", flag.to_str().unwrap(), "call", "Write", r#"{"file_path":"w4.txt","content":"x"}"#]);
    assert!(stdout(&o).contains("by the rule Edit(w4.txt)"), "{}{}", stdout(&o), stderr(&o));
    // `claude_settings = false` reads none of them.
    fs::write(p.path("toolhost.toml"), "claude_settings = false\n").unwrap();
    p.trust();
    assert_eq!(p.call("Read", read(".env")).unwrap(), "     1\tTOKEN=1\n");
}

#[test]
fn config_check_and_list_say_where_each_rule_and_hook_came_from_and_errors_have_positions() {
    let p = Project::new();
    let o = p.run(&["config", "check"]);
    let out = ok(&o);
    assert!(out.contains("deny Read(./.env)  from "), "{out}");
    assert!(out.contains(".claude/settings.json:6:7 (project settings)"), "{out}");
    assert!(out.contains("pre_tool_use [Write|Edit] \"$CLAUDE_PROJECT_DIR\"/.claude/hooks/guard.sh  from "), "{out}");
    let o = p.run(&["list", "--json"]);
    let v: Value = serde_json::from_str(&ok(&o)).unwrap();
    let rules = v["rules"].as_array().unwrap();
    assert!(rules.iter().any(|r| r["rule"] == "Edit(*.lock)" && r["kind"] == "deny"), "{rules:?}");
    assert!(rules.iter().all(|r| r["from"].as_str().unwrap().contains("settings")), "{rules:?}");
    assert_eq!(v["hooks"][0]["event"], "pre_tool_use");

    // An unknown key is a warning at its position; a malformed rule an error at its own.
    fs::write(p.path(".claude/settings.local.json"), "{\n  \"env\": {},\n  \"typo\": 1\n}\n").unwrap();
    let o = p.run(&["config", "check"]);
    ok(&o);
    assert!(stderr(&o).contains(".claude/settings.local.json:3:3: unknown key \"typo\""), "{}", stderr(&o));
    fs::write(p.path(".claude/settings.local.json"), "{\n  \"permissions\": {\"deny\": [\"Read(a\"]}\n}\n").unwrap();
    let o = p.run(&["config", "check"]);
    assert_exit(&o, 2);
    let err = stderr(&o);
    assert!(
        err.contains(".claude/settings.local.json:2:28: permissions.deny: invalid permission rule \"Read(a\""),
        "{err}"
    );
    let o = p.run(&["call", "Read", &read("a.txt").to_string()]);
    assert_exit(&o, 2);
    assert!(stderr(&o).contains("settings.local.json:2:28"), "{}", stderr(&o));
}

#[test]
fn run_and_agent_decide_alike_and_a_tool_denied_whole_is_not_offered() {
    let p = Project::new();
    fs::write(p.path(".claude/settings.local.json"), r#"{"permissions": {"deny": ["Write"]}}"#).unwrap();
    let turn = json!({"role": "assistant", "content": [
        {"type": "tool_use", "id": "t1", "name": "Read", "input": read(".env")},
        {"type": "tool_use", "id": "t2", "name": "Read", "input": read("a.txt")},
    ]});
    let mut c = p.command();
    c.args(["run", "-"]).stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped());
    let o = run_piped(c, &turn.to_string());
    assert_exit(&o, 0);
    let v: Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(v["content"][0]["is_error"], true);
    assert!(v["content"][0]["content"].to_string().contains("Read(./.env)"), "{v}");
    assert_ne!(v["content"][1]["is_error"], true);

    let server = ModelServer::start(vec![
        Answer::new("tool_use")
            .tool("a1", "Read", read(".env"))
            .tool("a2", "Write", json!({"file_path": "x", "content": "y"}))
            .anthropic(),
        Answer::text_only("done").anthropic(),
    ]);
    let o = p
        .command()
        .env("ANTHROPIC_API_KEY", "test-key")
        .env_remove("ANTHROPIC_BASE_URL")
        .args(["agent", "--base-url", &server.url, "--retry-base-ms", "1", "do it"])
        .output()
        .unwrap();
    assert_exit(&o, 0);
    let bodies = server.bodies();
    let names: Vec<&str> = bodies[0]["tools"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert!(names.contains(&"Read") && !names.contains(&"Write"), "Write is denied as a whole: {names:?}");
    let results = &bodies[1]["messages"].as_array().unwrap().last().unwrap()["content"];
    assert!(results[0]["content"].to_string().contains("Read(./.env)"), "{results}");
    assert_eq!(results[1]["is_error"], true, "a call of a tool not offered: {results}");
}

fn run_piped(mut c: Command, stdin: &str) -> Output {
    use std::io::Write as _;
    let mut child = c.spawn().unwrap();
    child.stdin.take().unwrap().write_all(stdin.as_bytes()).unwrap();
    child.wait_with_output().unwrap()
}

#[tokio::test]
async fn the_mcp_server_decides_alike_and_does_not_list_a_tool_denied_whole() {
    let p = Project::new();
    fs::write(p.path(".claude/settings.local.json"), r#"{"permissions": {"deny": ["Write"]}}"#).unwrap();
    let mut command = p.command();
    command.arg("mcp");
    let transport =
        TokioChildProcess::builder(tokio::process::Command::from(command)).stderr(Stdio::null()).spawn().unwrap().0;
    let client = ().serve(transport).await.expect("initialize");
    let tools = client.list_all_tools().await.unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
    assert!(names.contains(&"Read") && !names.contains(&"Write"), "{names:?}");
    let call = |path: &str| {
        let Value::Object(args) = read(path) else { unreachable!() };
        CallToolRequestParams::new("Read").with_arguments(args)
    };
    let r = client.call_tool(call(".env")).await.unwrap();
    assert_eq!(r.is_error, Some(true));
    assert!(serde_json::to_string(&r.content).unwrap().contains("Read(./.env)"));
    let r = client.call_tool(call("a.txt")).await.unwrap();
    assert_ne!(r.is_error, Some(true));
    client.cancel().await.unwrap();
}

/// A workspace whose `.claude/settings.json` has only `hooks`, each running a script of
/// `.claude/hooks/` (name, body).
fn hooked(hooks: Value, scripts: &[(&str, &str)]) -> Project {
    let p = Project::new();
    fs::write(p.path(".claude/settings.json"), json!({ "hooks": hooks }).to_string()).unwrap();
    fs::write(p.path(".claude/settings.local.json"), "{}").unwrap();
    for (name, body) in scripts {
        let path = p.path(&format!(".claude/hooks/{name}"));
        fs::write(&path, format!("#!/bin/sh\ncat > /dev/null\n{body}\n")).unwrap();
        use std::os::unix::fs::PermissionsExt as _;
        fs::set_permissions(&path, fs::Permissions::from_mode(0o755)).unwrap();
    }
    p
}

/// A hook group running `.claude/hooks/NAME`.
fn group(matcher: &str, name: &str) -> Value {
    json!([{"matcher": matcher, "hooks": [{"type": "command", "command": format!("\"$CLAUDE_PROJECT_DIR\"/.claude/hooks/{name}")}]}])
}

fn agent(p: &Project, server: &ModelServer) -> Output {
    p.command()
        .env("ANTHROPIC_API_KEY", "test-key")
        .env_remove("ANTHROPIC_BASE_URL")
        .args(["agent", "--base-url", &server.url, "--retry-base-ms", "1", "do it"])
        .output()
        .unwrap()
}

#[test]
fn session_hooks_frame_an_agent_run_as_in_claude_code() {
    // SessionStart and UserPromptSubmit context joins the first message; a Stop hook that
    // blocks once makes the model go on, reading its reason.
    let p = hooked(
        json!({
            "SessionStart": group("startup", "start.sh"),
            "UserPromptSubmit": group("", "prompt.sh"),
            "Stop": group("", "stop.sh"),
        }),
        &[
            ("start.sh", "echo 'the repo uses tabs'"),
            (
                "prompt.sh",
                r#"echo '{"hookSpecificOutput": {"hookEventName": "UserPromptSubmit", "additionalContext": "ticket 42"}}'"#,
            ),
            (
                "stop.sh",
                r#"if [ -e "$CLAUDE_PROJECT_DIR/stopped-once" ]; then exit 0; fi
touch "$CLAUDE_PROJECT_DIR/stopped-once"
echo '{"decision": "block", "reason": "run the tests first", "systemMessage": "made it go on"}'"#,
            ),
        ],
    );
    let server =
        ModelServer::start(vec![Answer::text_only("done").anthropic(), Answer::text_only("tested").anthropic()]);
    let o = agent(&p, &server);
    assert_exit(&o, 0);
    assert_eq!(stdout(&o), "tested\n");
    let bodies = server.bodies();
    assert_eq!(bodies.len(), 2, "the Stop hook made it go on once");
    let first = bodies[0]["messages"][0]["content"].to_string();
    assert!(first.contains("do it"), "{first}");
    assert!(first.contains("SessionStart hook additional context: the repo uses tabs"), "{first}");
    assert!(first.contains("UserPromptSubmit hook additional context: ticket 42"), "{first}");
    let last = bodies[1]["messages"].as_array().unwrap().last().unwrap().to_string();
    assert!(last.contains("Stop hook feedback:\\nrun the tests first"), "{last}");
    assert!(stderr(&o).contains("made it go on"), "the systemMessage is for the person: {}", stderr(&o));
}

#[test]
fn a_prompt_hook_can_block_and_continue_false_ends_the_run_after_the_batch() {
    let p = hooked(
        json!({"UserPromptSubmit": group("", "deny.sh")}),
        &[("deny.sh", "echo 'no secrets in prompts' >&2; exit 2")],
    );
    let server = ModelServer::start(vec![Answer::text_only("never").anthropic()]);
    let o = agent(&p, &server);
    assert_exit(&o, 1);
    assert!(stderr(&o).contains("UserPromptSubmit operation blocked by hook: no secrets in prompts"), "{}", stderr(&o));
    assert!(server.bodies().is_empty(), "nothing was sent");

    // PreToolUse `continue: false`: the tool still runs, then the run ends (no next request).
    let p = hooked(
        json!({"PreToolUse": group("Write", "halt.sh")}),
        &[("halt.sh", r#"echo '{"continue": false, "stopReason": "budget review"}'"#)],
    );
    let server = ModelServer::start(vec![
        Answer::new("tool_use").tool("w1", "Write", json!({"file_path": "out.txt", "content": "x"})).anthropic(),
        Answer::text_only("never").anthropic(),
    ]);
    let o = p
        .command()
        .env("ANTHROPIC_API_KEY", "test-key")
        .env_remove("ANTHROPIC_BASE_URL")
        .args(["--permission-mode", "acceptEdits", "agent", "--base-url", &server.url, "--retry-base-ms", "1", "do it"])
        .output()
        .unwrap();
    assert_exit(&o, 1);
    assert!(p.path("out.txt").exists(), "the call ran");
    assert_eq!(server.bodies().len(), 1, "no request after the stop");
    assert!(stderr(&o).contains("stopped by a hook: budget review"), "{}", stderr(&o));
}

#[test]
fn a_hooks_if_limits_it_to_the_calls_its_rule_covers() {
    let p = hooked(
        json!({"PreToolUse": [{"matcher": "Write", "hooks": [{
            "type": "command",
            "command": "\"$CLAUDE_PROJECT_DIR\"/.claude/hooks/gen.sh",
            "if": "Write(generated/**)"
        }]}]}),
        &[("gen.sh", "echo 'generated files are made by the build' >&2; exit 2")],
    );
    let write = |path: &str| {
        p.run(&[
            "--permission-mode",
            "acceptEdits",
            "call",
            "Write",
            &json!({"file_path": path, "content": "x"}).to_string(),
        ])
    };
    let o = write("generated/a.rs");
    assert_exit(&o, 1);
    assert!(stdout(&o).contains("generated files are made by the build"), "{}", stdout(&o));
    let o = write("src/a.rs");
    assert_exit(&o, 0);
    assert!(p.path("src/a.rs").exists());
}

#[test]
fn a_settings_file_can_take_bypass_mode_away() {
    let p = Project::new();
    let user = p.home.path().join(".claude");
    fs::create_dir_all(&user).unwrap();
    fs::write(user.join("settings.json"), r#"{"permissions": {"disableBypassPermissionsMode": "disable"}}"#).unwrap();
    let o = p.run(&["--permission-mode", "bypass", "call", "Read", &read("a.txt").to_string()]);
    assert_exit(&o, 2);
    assert!(stderr(&o).contains("bypass mode is disabled by"), "{}", stderr(&o));
    assert!(stderr(&o).contains(".claude/settings.json:1:"), "{}", stderr(&o));
    // Any other mode runs.
    assert_eq!(p.call("Read", read("a.txt")).unwrap(), "     1\talpha\n");
}
