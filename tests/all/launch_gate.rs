//! The one gate for programs toolhost starts outside the sandbox (DESIGN §5b): a stdio MCP
//! server is described once, after `${VAR}` expansion, with the environment it really gets;
//! that description is pinned whole and started only from what the pin check cleared. So no
//! command without a pin check starts a server, a server's `env` and `headers` are pinned and
//! shown, a variable that loads code from the workspace is refused, and toolhost never starts
//! itself. Each test has its own workspace, state directory and Claude Code directory.

use serde_json::{Value, json};
use std::fs;
use std::io::{BufRead as _, BufReader, Write as _};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::Duration;
use toolhost_tests::cli::{self, assert_exit, fails, ok, stderr, stdout};

/// The plain MCP server (tests/mcp/plain_server.py): tools `Noop` and `env`.
fn plain_server() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("mcp/plain_server.py").canonicalize().unwrap()
}

/// Writes without asking, and the test servers' tools allowed (an MCP tool is asked by
/// default, and nobody answers on CI).
const PERMISSIONS: &str = "[permissions]\nmode = \"accept-edits\"\nallow = [\"mcp__plain\", \"mcp__cloned\"]\n\n";

struct Fixture {
    ws: tempfile::TempDir,
    state: tempfile::TempDir,
    /// `CLAUDE_CONFIG_DIR`: Claude Code's user settings and `.claude.json`.
    claude: tempfile::TempDir,
    /// Outside the workspace: where a server notes each start.
    outside: tempfile::TempDir,
}

impl Fixture {
    fn new(config: &str) -> Fixture {
        let fx = Fixture {
            ws: toolhost_tests::workspace(),
            state: tempfile::tempdir().unwrap(),
            claude: tempfile::tempdir().unwrap(),
            outside: tempfile::tempdir().unwrap(),
        };
        fx.config(config);
        fx
    }

    fn config(&self, text: &str) {
        fs::write(self.ws.path().join("toolhost.toml"), text).unwrap();
    }

    fn path(&self, p: &str) -> PathBuf {
        self.ws.path().join(p)
    }

    /// The file the plain server appends a line to at each start.
    fn started(&self) -> PathBuf {
        self.outside.path().join("started.txt")
    }

    /// How many times a server started.
    fn starts(&self) -> usize {
        fs::read_to_string(self.started()).map_or(0, |t| t.lines().count())
    }

    /// [`PERMISSIONS`], then `[mcp_servers.plain]` running the plain server, noting its
    /// starts, with `env` entries (`NAME = "value", …`) besides the one that says where.
    fn server(&self, env: &str) -> String {
        let started = format!("PLAIN_STARTED = {:?}", self.started().display().to_string());
        let env = if env.is_empty() { started } else { format!("{started}, {env}") };
        format!(
            "{PERMISSIONS}[mcp_servers.plain]\ncommand = \"python3\"\nargs = [{:?}]\nenv = {{ {env} }}\n",
            plain_server().display().to_string(),
        )
    }

    /// `toolhost ARGS…` as on CI (`CI=true`, no terminal).
    fn command(&self, args: &[&str]) -> Command {
        let mut c = cli::command(self.ws.path());
        c.env("TOOLHOST_STATE_DIR", self.state.path())
            .env("CLAUDE_CONFIG_DIR", self.claude.path())
            .env("CI", "true")
            .env_remove(toolhost_policy::launch::DEPTH_ENV)
            .args(args)
            .stdin(Stdio::null());
        c
    }

    fn run(&self, args: &[&str]) -> Output {
        self.command(args).output().expect("run toolhost")
    }
}

#[test]
fn commands_that_need_no_server_start_none() {
    let fx = Fixture::new("");
    fx.config(&fx.server(""));
    ok(&fx.run(&["compile"]));
    assert_eq!(fx.starts(), 0, "toolhost compile started the server");
    // The same config starts it where tools are called.
    let o = fx.run(&["call", "mcp__plain__Noop", "{}"]);
    assert_eq!(ok(&o).trim(), "ok");
    assert_eq!(fx.starts(), 1);
    // A changed server is held from every command that starts it, and compile starts none.
    fx.config(&fx.server("EXTRA = \"1\""));
    fails(&fx.run(&["list"]), "MCP server plain changed");
    ok(&fx.run(&["compile"]));
    assert_eq!(fx.starts(), 1, "the changed server started");
}

#[test]
fn a_servers_env_is_pinned_and_a_change_waits_for_a_person() {
    let fx = Fixture::new("");
    fx.config(&fx.server("MODE = \"a\""));
    assert_eq!(ok(&fx.run(&["call", "mcp__plain__env", r#"{"name":"MODE"}"#])).trim(), "a");
    for (extra, change) in [
        ("MODE = \"b\"", "MODE changed"),
        ("MODE = \"a\", PYTHONPATH = \"notes\"", "PYTHONPATH added"),
        ("MODE = \"a\", PYTHONNOUSERSITE = \"\"", "PYTHONNOUSERSITE added"),
        ("", "MODE removed"),
    ] {
        fx.config(&fx.server(extra));
        let all = fails(&fx.run(&["call", "mcp__plain__env", r#"{"name":"MODE"}"#]), "changed since it was trusted");
        assert!(all.contains("MCP server plain changed: [") && all.contains(change), "{extra}: {all}");
    }
    assert_eq!(fx.starts(), 1, "a changed server started before a person trusted it");
}

#[test]
fn a_loader_variables_places_are_protected_and_the_workspace_is_refused() {
    let fx = Fixture::new("");
    fx.config(&fx.server("PYTHONPATH = \"notes\""));
    assert_eq!(ok(&fx.run(&["call", "mcp__plain__env", r#"{"name":"PYTHONPATH"}"#])).trim(), "notes");
    // A tool cannot plant code where the server's interpreter imports from.
    let o = fx.run(&["call", "Write", r#"{"file_path":"notes/sitecustomize.py","content":"import os\n"}"#]);
    assert_exit(&o, 1);
    assert!(!fx.path("notes/sitecustomize.py").exists(), "a tool wrote into PYTHONPATH");
    // Elsewhere it still writes.
    ok(&fx.run(&["call", "Write", r#"{"file_path":"other.py","content":"x = 1\n"}"#]));

    // The workspace itself (`.`, an empty entry) cannot be protected: the server does not start.
    for value in [".", ":/nonexistent"] {
        let fx = Fixture::new("");
        fx.config(&fx.server(&format!("PYTHONPATH = {value:?}")));
        let o = fx.run(&["list"]);
        let all = format!("{}{}", stdout(&o), stderr(&o));
        assert!(all.contains("PYTHONPATH") && all.contains("workspace"), "{value:?}: {all}");
        assert_eq!(fx.starts(), 0, "{value:?}: started");
    }
}

#[test]
fn a_variable_whose_value_is_code_stops_the_server() {
    for var in ["NODE_OPTIONS", "LD_PRELOAD", "GIT_SSH_COMMAND", "GIT_CONFIG_KEY_0", "JDK_JAVA_OPTIONS"] {
        let fx = Fixture::new("");
        fx.config(&fx.server(&format!("{var} = \"--require ./x.js\"")));
        let o = fx.run(&["list", "--json"]);
        let all = format!("{}{}", stdout(&o), stderr(&o));
        assert!(all.contains(var) && all.contains("run code its command line does not name"), "{var}: {all}");
        assert_eq!(fx.starts(), 0, "{var}: started");
    }
}

#[test]
fn variables_are_expanded_before_what_runs_is_analysed() {
    let fx = Fixture::new("");
    fs::create_dir(fx.path("srv")).unwrap();
    fs::copy(plain_server(), fx.path("srv/server.py")).unwrap();
    fx.config(&format!(
        "{PERMISSIONS}[mcp_servers.plain]\ncommand = \"python3\"\nargs = [\"${{TOOLHOST_TEST_WS}}/srv/server.py\"]\n"
    ));
    let ws = fx.ws.path().canonicalize().unwrap();
    let run = |args: &[&str]| fx.command(args).env("TOOLHOST_TEST_WS", &ws).output().unwrap();
    assert_eq!(ok(&run(&["call", "mcp__plain__Noop", "{}"])).trim(), "ok");
    let shown = ok(&run(&["trust", "--show"]));
    assert!(shown.contains("file:       srv/server.py sha256:"), "the file that runs is pinned:\n{shown}");
    assert!(shown.contains(&format!("server:     plain [python3 {}/srv/server.py]", ws.display())), "{shown}");
    // Its directory is out of every tool's reach.
    assert_exit(&run(&["call", "Write", r#"{"file_path":"srv/json.py","content":"x = 1\n"}"#]), 1);
    assert!(!fx.path("srv/json.py").exists());
    // Another value of the variable is another program.
    fs::create_dir(fx.path("elsewhere")).unwrap();
    let o = fx.command(&["list"]).env("TOOLHOST_TEST_WS", fx.path("elsewhere")).output().unwrap();
    fails(&o, "MCP server plain changed");
}

#[test]
fn claude_settings_env_for_hooks_is_pinned_and_loader_variables_are_ignored() {
    let fx = Fixture::new("[[hooks.pre_tool_use]]\ncommand = \"sh hooks/guard.sh\"\n");
    fs::create_dir(fx.path("hooks")).unwrap();
    fs::write(fx.path("hooks/guard.sh"), "cat > /dev/null; echo \"$FOO ${GIT_DIR:-none}\" >> seen.txt\n").unwrap();
    fs::create_dir(fx.path(".claude")).unwrap();
    let settings = |env: Value| fs::write(fx.path(".claude/settings.json"), json!({"env": env}).to_string()).unwrap();
    settings(json!({"FOO": "1", "GIT_DIR": "notes/.g"}));
    let o = fx.run(&["call", "Glob", r#"{"pattern":"*.md"}"#]);
    assert_exit(&o, 0);
    assert!(stderr(&o).contains("GIT_DIR"), "the ignored variable is named: {}", stderr(&o));
    assert_eq!(fs::read_to_string(fx.path("seen.txt")).unwrap(), "1 none\n");
    settings(json!({"FOO": "2", "GIT_DIR": "notes/.g"}));
    let all = fails(&fx.run(&["call", "Glob", r#"{"pattern":"*.md"}"#]), "hook environment: FOO changed");
    assert!(!all.contains("\"2\""), "the value is not shown: {all}");
    assert_eq!(fs::read_to_string(fx.path("seen.txt")).unwrap(), "1 none\n", "the hook ran with the new env");
}

#[test]
fn a_pre_tool_use_hook_toolhost_cannot_run_refuses_what_it_matches() {
    let fx = Fixture::new("");
    fs::write(fx.path("a.txt"), "hello\n").unwrap();
    fs::create_dir(fx.path(".claude")).unwrap();
    let hooks = json!({"hooks": {"PreToolUse": [{"matcher": "Read", "hooks": [
        {"type": "http", "url": "http://127.0.0.1:9/deny"}
    ]}]}});
    fs::write(fx.path(".claude/settings.json"), hooks.to_string()).unwrap();
    let o = fx.run(&["call", "Read", r#"{"file_path":"a.txt"}"#, "--json"]);
    assert_exit(&o, 1);
    let text = stdout(&o);
    assert!(text.contains("PreToolUse hook") && text.contains("cannot run here"), "{text}");
    assert!(!text.contains("hello"), "the call ran: {text}");
    // A call it does not match runs.
    assert!(ok(&fx.run(&["call", "Glob", r#"{"pattern":"a.txt"}"#])).contains("a.txt"));
}

#[test]
fn trust_show_shows_every_server_with_its_env_masked_held_ones_too() {
    let fx = Fixture::new(PERMISSIONS);
    let mcp = json!({"mcpServers": {"cloned": {
        "command": "python3",
        "args": [plain_server()],
        "env": {"API_TOKEN": "abc123secret", "MODE": "fast", "REF": "${HOME}"}
    }}});
    fs::write(fx.path(".mcp.json"), mcp.to_string()).unwrap();
    let shown = ok(&fx.run(&["trust", "--show"]));
    assert!(shown.contains("server:     cloned [python3 ") && shown.contains("(held: starts once"), "{shown}");
    assert!(shown.contains("env       MODE=fast"), "{shown}");
    assert!(shown.contains("env       REF=${HOME}"), "a reference is no secret: {shown}");
    assert!(shown.contains("env       API_TOKEN=••• (12 characters, masked)"), "{shown}");
    assert!(!shown.contains("abc123secret"), "{shown}");
    // Trusting shows it too, then it runs.
    let trusted = ok(&fx.run(&["trust"]));
    assert!(trusted.contains("server:     cloned") && !trusted.contains("abc123secret"), "{trusted}");
    assert_eq!(ok(&fx.run(&["call", "mcp__cloned__env", r#"{"name":"MODE"}"#])).trim(), "fast");
}

#[test]
fn a_chain_of_toolhost_processes_is_cut() {
    let fx = Fixture::new("");
    fx.config(&fx.server(""));
    let o = fx.command(&["list"]).env(toolhost_policy::launch::DEPTH_ENV, "1").output().unwrap();
    assert_exit(&o, 0);
    assert!(stderr(&o).contains("MCP server plain not started") && stderr(&o).contains("stops here"), "{}", stderr(&o));
    assert_eq!(fx.starts(), 0);
    let o = fx
        .command(&["call", "Glob", r#"{"pattern":"*"}"#])
        .env(toolhost_policy::launch::DEPTH_ENV, "2")
        .output()
        .unwrap();
    fails(&o, "levels deep under toolhost");
    // A hook learns how deep it runs.
    fx.config("[[hooks.pre_tool_use]]\ncommand = \"sh hooks/depth.sh\"\n");
    fs::create_dir(fx.path("hooks")).unwrap();
    fs::write(fx.path("hooks/depth.sh"), "cat > /dev/null; echo \"$TOOLHOST_DEPTH\" > depth.txt\n").unwrap();
    ok(&fx.run(&["trust"]));
    ok(&fx.run(&["call", "Glob", r#"{"pattern":"*.none"}"#]));
    assert_eq!(fs::read_to_string(fx.path("depth.txt")).unwrap(), "1\n");
}

/// The children of process `pid`.
fn children(pid: u32) -> Vec<u32> {
    let Ok(tasks) = fs::read_dir(format!("/proc/{pid}/task")) else { return Vec::new() };
    tasks
        .flatten()
        .filter_map(|t| fs::read_to_string(t.path().join("children")).ok())
        .flat_map(|c| c.split_whitespace().filter_map(|p| p.parse().ok()).collect::<Vec<u32>>())
        .collect()
}

/// After `claude mcp add toolhost -- toolhost --workspace . mcp`, Claude Code's `.claude.json`
/// lists toolhost itself as a server (local scope, and here user scope too, and under another
/// name through a link): `toolhost mcp` serves at once and starts no toolhost.
#[test]
fn toolhost_never_starts_itself_as_a_tool_source() {
    let fx = Fixture::new("");
    let ws = fx.ws.path().canonicalize().unwrap();
    let link = fx.outside.path().join("helper");
    std::os::unix::fs::symlink(cli::binary(), &link).unwrap();
    let me =
        |command: &Path| json!({"type": "stdio", "command": command, "args": ["--workspace", ".", "mcp"], "env": {}});
    let claude_json = json!({
        "numStartups": 3,
        "mcpServers": {"toolhost-user": me(cli::binary())},
        "projects": {ws.display().to_string(): {
            "allowedTools": [],
            "mcpServers": {"toolhost": me(cli::binary()), "helper": me(&link)}
        }}
    });
    fs::write(fx.claude.path().join(".claude.json"), claude_json.to_string()).unwrap();
    let mut child =
        fx.command(&["mcp"]).stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    let pid = child.id();
    let mut stdin = child.stdin.take().unwrap();
    let requests = [
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}}),
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}),
    ];
    for r in requests {
        writeln!(stdin, "{r}").unwrap();
    }
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            let Ok(v) = serde_json::from_str::<Value>(&line) else { continue };
            if v["id"] == 2 {
                let _ = tx.send(v);
                return;
            }
        }
    });
    // Generous: the point is that it answers, not how fast.
    let listed = rx.recv_timeout(Duration::from_secs(120));
    let spawned = children(pid);
    let _ = child.kill();
    let out = child.wait_with_output().unwrap();
    let listed =
        listed.unwrap_or_else(|_| panic!("no tools/list answer; stderr:\n{}", String::from_utf8_lossy(&out.stderr)));
    assert!(spawned.is_empty(), "toolhost mcp started {spawned:?}");
    let names: Vec<&str> =
        listed["result"]["tools"].as_array().unwrap().iter().filter_map(|t| t["name"].as_str()).collect();
    assert!(names.contains(&"Read") && !names.iter().any(|n| n.starts_with("mcp__")), "{names:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    for name in ["toolhost-user", "toolhost", "helper"] {
        assert!(err.contains(&format!("MCP server {name} not started")), "{name}: {err}");
    }
    assert!(err.contains("toolhost itself"), "{err}");
}

/// `claude mcp add toolhost …` after the workspace was trusted changes nothing that runs:
/// toolhost itself is never started, so it is neither pinned nor a change that waits for a
/// person, and the next start serves at once.
#[test]
fn adding_toolhost_to_claude_code_after_trust_is_no_change() {
    let fx = Fixture::new(PERMISSIONS);
    fs::copy(plain_server(), fx.path("server.py")).unwrap();
    let mcp = json!({"mcpServers": {"plain": {"command": "python3", "args": ["server.py"]}}});
    fs::write(fx.path(".mcp.json"), mcp.to_string()).unwrap();
    ok(&fx.run(&["trust"]));
    let ws = fx.ws.path().canonicalize().unwrap();
    let me = json!({"type": "stdio", "command": cli::binary(), "args": ["--workspace", ws, "mcp"], "env": {}});
    let claude_json = json!({"projects": {ws.display().to_string(): {"mcpServers": {"toolhost": me}}}});
    fs::write(fx.claude.path().join(".claude.json"), claude_json.to_string()).unwrap();
    let o = fx.run(&["call", "mcp__plain__Noop", "{}"]);
    assert_eq!(ok(&o).trim(), "ok");
    assert!(stderr(&o).contains("MCP server toolhost not started"), "{}", stderr(&o));
    let shown = ok(&fx.run(&["trust", "--show"]));
    assert!(!shown.contains(&format!("file:       {}", cli::binary().display())), "{shown}");
}

/// A cloned workspace's `.claude/settings.json` cannot switch every question off by itself.
#[test]
fn bypass_mode_from_the_workspaces_own_settings_waits_for_trust() {
    let fx = Fixture::new("");
    fs::create_dir(fx.path(".claude")).unwrap();
    let settings = json!({"permissions": {"defaultMode": "bypassPermissions"}});
    fs::write(fx.path(".claude/settings.json"), settings.to_string()).unwrap();
    let write = r#"{"file_path":"w.txt","content":"x"}"#;
    let o = fx.run(&["call", "Write", write]);
    assert_exit(&o, 1);
    assert!(stderr(&o).contains("bypassPermissions applies only once this workspace is trusted"), "{}", stderr(&o));
    assert!(!fx.path("w.txt").exists());
    let trusted = ok(&fx.run(&["trust"]));
    assert!(trusted.contains("permission mode default → bypass"), "{trusted}");
    ok(&fx.run(&["call", "Write", write]));
    assert!(fx.path("w.txt").exists());
}

/// A server run by a workspace virtualenv's Python loads that virtualenv's `site-packages`
/// (every `.pth` there runs at start): the whole virtualenv is out of every tool's reach.
#[test]
fn a_virtualenv_a_server_runs_from_is_out_of_every_tools_reach() {
    let fx = Fixture::new("");
    let python = Command::new("python3").args(["-c", "import sys; print(sys.executable)"]).output().unwrap();
    let python = PathBuf::from(String::from_utf8(python.stdout).unwrap().trim());
    let site = fx.path(".venv/lib/python3.11/site-packages");
    fs::create_dir_all(&site).unwrap();
    fs::create_dir_all(fx.path(".venv/bin")).unwrap();
    fs::write(fx.path(".venv/pyvenv.cfg"), format!("home = {}\n", python.parent().unwrap().display())).unwrap();
    std::os::unix::fs::symlink(&python, fx.path(".venv/bin/python")).unwrap();
    let config = fx.server("").replace("command = \"python3\"", "command = \".venv/bin/python\"");
    fx.config(&config);
    assert_eq!(ok(&fx.run(&["call", "mcp__plain__Noop", "{}"])).trim(), "ok");
    for planted in [".venv/lib/python3.11/site-packages/zz.pth", ".venv/pyvenv.cfg", ".venv/bin/activate"] {
        let o = fx.run(&["call", "Write", &json!({"file_path": planted, "content": "import os\n"}).to_string()]);
        assert_exit(&o, 1);
    }
    assert!(!site.join("zz.pth").exists(), "a tool planted a .pth in the server's virtualenv");
}

/// Claude Code's trust dialog: the first start in a workspace that brings programs to run on
/// this machine shows them on a terminal and asks; off a terminal it is recorded as it is
/// (trust on first use, as Claude Code's `-p` runs an untrusted project's hooks).
#[test]
fn a_first_start_that_brings_host_programs_is_asked_on_a_terminal() {
    let fx = Fixture::new("[[hooks.pre_tool_use]]\ncommand = \"sh hooks/guard.sh\"\n");
    fs::create_dir(fx.path("hooks")).unwrap();
    fs::write(fx.path("hooks/guard.sh"), "cat > /dev/null; echo ran >> ran.txt\n").unwrap();
    let on_terminal = |c: &mut Command| {
        c.env("TOOLHOST_STATE_DIR", fx.state.path()).env("CLAUDE_CONFIG_DIR", fx.claude.path()).env_remove("CI");
    };
    let glob = &["call", "Glob", r#"{"pattern":"*.none"}"#];
    let (code, screen) = cli::run_on_a_terminal(fx.ws.path(), on_terminal, glob, "n\n");
    assert_eq!(code, 2, "{screen}");
    assert!(
        screen.contains("first start in") && screen.contains("hook added: pre_tool_use [sh hooks/guard.sh]"),
        "{screen}"
    );
    assert!(screen.contains("Trust them and start? [y/N]") && screen.contains("was not trusted"), "{screen}");
    assert!(!fx.path("ran.txt").exists(), "the hook ran");
    let (code, screen) = cli::run_on_a_terminal(fx.ws.path(), on_terminal, glob, "y\n");
    assert_eq!(code, 0, "{screen}");
    assert!(fx.path("ran.txt").exists());
    // Recorded: no question the next time.
    let (code, screen) = cli::run_on_a_terminal(fx.ws.path(), on_terminal, glob, "");
    assert_eq!(code, 0, "{screen}");
    assert!(!screen.contains("[y/N]"), "{screen}");
    // Nothing to show (no hooks, no servers, the default mode): no question.
    let plain = Fixture::new("");
    let on_terminal = |c: &mut Command| {
        c.env("TOOLHOST_STATE_DIR", plain.state.path()).env("CLAUDE_CONFIG_DIR", plain.claude.path()).env_remove("CI");
    };
    let (code, screen) = cli::run_on_a_terminal(plain.ws.path(), on_terminal, glob, "");
    assert_eq!(code, 0, "{screen}");
    assert!(!screen.contains("[y/N]"), "{screen}");
}

/// The usual layout: a `.mcp.json` server whose script sits at the workspace root starts.
/// Protecting the root whole would leave nothing writable, so the script itself is protected
/// and what Python imports beside it (`*.py`, `*.pyc`, `*.so`, anywhere a link could lead)
/// waits for a person in every mode; other files stay writable. Node, whose `require('./x')`
/// loads an extensionless `x` first, cannot be bounded by pattern: refused, with a message
/// about the server and the way out in the file's own syntax.
#[test]
fn a_root_server_script_starts_and_what_it_imports_waits_for_a_person() {
    let fx = Fixture::new(PERMISSIONS);
    fs::copy(plain_server(), fx.path("server.py")).unwrap();
    let mcp = json!({"mcpServers": {"plain": {"command": "python3", "args": ["server.py"]}}});
    fs::write(fx.path(".mcp.json"), mcp.to_string()).unwrap();
    let trusted = ok(&fx.run(&["trust"]));
    assert!(trusted.contains("asks      //**/*.py (code server.py loads from beside it"), "{trusted}");
    assert_eq!(ok(&fx.run(&["call", "mcp__plain__Noop", "{}"])).trim(), "ok");
    let write =
        |path: &str| fx.run(&["call", "Write", &json!({"file_path": path, "content": "import os\n"}).to_string()]);
    for planted in ["json.py", "__pycache__/server.cpython-311.pyc", "pkg/__init__.py", "deep/er/x.so"] {
        let o = write(planted);
        assert_exit(&o, 1);
        let said = stdout(&o) + &stderr(&o);
        assert!(said.contains("code server.py loads from beside it"), "{planted}: {said}");
        assert!(!fx.path(planted).exists(), "{planted} was written");
    }
    let before = fs::read(fx.path("server.py")).unwrap();
    assert_exit(&write("server.py"), 1);
    assert_eq!(fs::read(fx.path("server.py")).unwrap(), before, "the server's own script was rewritten");
    ok(&write("notes.txt"));
    assert!(fx.path("notes.txt").exists());

    let node = Fixture::new("");
    fs::write(node.path("server.js"), "").unwrap();
    let mcp = json!({"mcpServers": {"local": {"command": "node", "args": ["server.js"]}}});
    fs::write(node.path(".mcp.json"), mcp.to_string()).unwrap();
    ok(&node.run(&["trust"]));
    let all = fails(&node.run(&["list"]), "MCP server local [node server.js] runs");
    assert!(all.contains("\"files\": [\"server.js\"]") && all.contains("as mcp/server.js"), "{all}");
    assert!(all.contains("with no extension"), "{all}");
    assert!(!all.contains("hook ["), "{all}");
}

/// What an HTTP server is sent is pinned too: a header added (say one carrying a secret of
/// this machine's environment to the server) waits for a person.
#[test]
fn an_http_servers_headers_are_pinned() {
    let fx = Fixture::new("");
    let server =
        |headers: &str| format!("[mcp_servers.remote]\nurl = \"http://127.0.0.1:9/mcp\"\nheaders = {{ {headers} }}\n");
    fx.config(&server("X-Team = \"tools\""));
    assert_exit(&fx.run(&["list"]), 0);
    fx.config(&server("X-Team = \"tools\", X-Key = \"${ANTHROPIC_API_KEY}\""));
    let all = fails(&fx.run(&["list"]), "MCP server remote changed");
    assert!(all.contains("header X-Key added"), "{all}");
    fx.config(&server("X-Team = \"other\""));
    fails(&fx.run(&["list"]), "header X-Team changed");
}

/// What a hook inherits from toolhost's own environment decides what it loads as much as what
/// its command sets: a `PYTHONPATH` into the workspace (an IDE's `src`) is out of every tool's
/// reach while hooks run, and one that is the workspace itself stops the start, named.
#[test]
fn what_hooks_inherit_from_toolhosts_environment_is_judged_too() {
    let fx = Fixture::new(
        "[permissions]\nmode = \"accept-edits\"\n\n[[hooks.pre_tool_use]]\ncommand = \"sh hooks/guard.sh\"\n",
    );
    fs::create_dir(fx.path("hooks")).unwrap();
    fs::write(fx.path("hooks/guard.sh"), "cat > /dev/null\n").unwrap();
    fs::create_dir(fx.path("lib")).unwrap();
    let write = |env: &[(&str, PathBuf)], path: &str| {
        let mut c = fx.command(&["call", "Write", &json!({"file_path": path, "content": "import os\n"}).to_string()]);
        for (k, v) in env {
            c.env(k, v);
        }
        c.output().unwrap()
    };
    ok(&fx.run(&["trust"]));
    // Without it, lib/ is the tools' to write.
    ok(&write(&[], "lib/a.py"));
    // With it, lib/ is where the hook's Python would import from: what it holds is now part of
    // what the hook runs, which waits for a person's trust like any other widening.
    let lib = [("PYTHONPATH", fx.path("lib"))];
    fails(&write(&lib, "lib/b.py"), "lib/a.py is new");
    let mut trust = fx.command(&["trust"]);
    ok(&trust.env("PYTHONPATH", fx.path("lib")).output().unwrap());
    // Then no tool writes there.
    let o = write(&lib, "lib/b.py");
    assert_exit(&o, 1);
    assert!(stdout(&o).contains("is protected"), "{}", stdout(&o));
    assert!(!fx.path("lib/b.py").exists());
    // The workspace itself: nothing could be kept from tools, so nothing starts.
    let o = write(&[("PYTHONPATH", fx.ws.path().canonicalize().unwrap())], "lib/c.py");
    let all = fails(&o, "`PYTHONPATH`");
    assert!(all.contains("in toolhost's environment, which hooks and MCP servers inherit"), "{all}");
    assert!(!fx.path("lib/c.py").exists());
}
