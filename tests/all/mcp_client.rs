//! MCP servers as tool sources: a server built with the official Python SDK
//! (tests/mcp/tracker_server.py, `MCPServer` of mcp 2.x) over stdio, its tools in the pool as
//! `mcp__tracker__TOOL`, called by `toolhost call` and by `toolhost agent` through every step
//! of the pipeline: rules, the audit log, error results when the server fails or dies.

use serde_json::{Value, json};
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use toolhost_tests::cli::{self, assert_exit, ok, stderr, stdout};
use toolhost_tests::model_server::{Answer, ModelServer};

/// The Python interpreter with the `mcp` package, as the MCP server tests find it.
fn python() -> Option<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    match std::env::var_os("TOOLHOST_MCP_PYTHON") {
        Some(p) => Some(PathBuf::from(p)),
        None => {
            let venv = root.join("target/mcp-venv/bin/python");
            if venv.is_file() {
                Some(venv)
            } else {
                toolhost_tests::skip("no Python MCP SDK (run .ci/run, or set TOOLHOST_MCP_PYTHON)");
                None
            }
        }
    }
}

fn server_script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("mcp/tracker_server.py").canonicalize().unwrap()
}

/// A workspace whose config (toml) runs the tracker server over stdio, with a state directory
/// of its own; the tracker's database lies outside the workspace.
struct Fixture {
    ws: tempfile::TempDir,
    state: tempfile::TempDir,
    db: PathBuf,
}

impl Fixture {
    fn new(python: &Path, extra: &str) -> Fixture {
        let ws = toolhost_tests::workspace();
        let state = tempfile::tempdir().unwrap();
        let db = state.path().join("db.txt");
        let config = format!(
            "{extra}\n[mcp_servers.tracker]\ncommand = {:?}\nargs = [{:?}]\nenv = {{ TRACKER_DB = {:?} }}\n",
            python.display().to_string(),
            server_script().display().to_string(),
            db.display().to_string()
        );
        fs::write(ws.path().join("toolhost.toml"), config).unwrap();
        Fixture { ws, state, db }
    }

    fn command(&self) -> Command {
        let mut c = cli::command(self.ws.path());
        c.env("TOOLHOST_STATE_DIR", self.state.path()).stdin(Stdio::null());
        c
    }

    /// `toolhost mcp` over stdio, with `handler` as its MCP client (initialized).
    async fn mcp<H: rmcp::ClientHandler>(
        &self,
        handler: H,
    ) -> rmcp::service::RunningService<rmcp::service::RoleClient, H> {
        use rmcp::ServiceExt as _;
        let mut command = self.command();
        command.arg("mcp");
        let transport = rmcp::transport::TokioChildProcess::builder(tokio::process::Command::from(command))
            .stderr(Stdio::null())
            .spawn()
            .unwrap()
            .0;
        handler.serve(transport).await.expect("initialize")
    }

    fn run(&self, args: &[&str]) -> Output {
        self.command().args(args).output().unwrap()
    }

    /// `toolhost agent "triage"` against the scripted model `server`.
    fn agent(&self, server: &ModelServer) -> Output {
        agent(self.command(), server, &[])
    }
}

/// `command` running `toolhost agent ARGS… "triage"` against the scripted model `server`.
fn agent(mut command: Command, server: &ModelServer, args: &[&str]) -> Output {
    command
        .env("ANTHROPIC_API_KEY", "test-key")
        .env_remove("ANTHROPIC_BASE_URL")
        .args(["agent", "--base-url", &server.url, "--retry-base-ms", "1"])
        .args(args)
        .arg("triage")
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

#[test]
fn a_servers_tools_are_called_through_the_whole_pipeline() {
    let Some(python) = python() else { return };
    let fx =
        Fixture::new(&python, "[permissions]\nallow = [\"mcp__tracker__search\"]\ndeny = [\"mcp__tracker__boom\"]\n");
    // Listed, with where they come from.
    let v: Value = serde_json::from_str(&ok(&fx.run(&["list", "--json"]))).unwrap();
    let names: Vec<&str> = v["mcp_tools"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert_eq!(
        names,
        [
            "mcp__tracker__assign",
            "mcp__tracker__boom",
            "mcp__tracker__create",
            "mcp__tracker__die",
            "mcp__tracker__grow",
            "mcp__tracker__huge",
            "mcp__tracker__search"
        ]
    );
    let search = v["mcp_tools"].as_array().unwrap().iter().find(|t| t["name"] == "mcp__tracker__search").unwrap();
    assert_eq!(search["read_only"], true, "readOnlyHint");
    assert_eq!(search["input_schema"]["required"], json!(["query"]));

    // Allowed by a rule: the server answers.
    let o = fx.run(&["call", "mcp__tracker__search", r#"{"query":"login"}"#]);
    assert_eq!(ok(&o), "login fails on Safari\nlogin page slow\n");
    // The schema the server gave is checked before the server sees anything.
    let o = fx.run(&["call", "mcp__tracker__search", r#"{"q":"x"}"#]);
    assert_exit(&o, 1);
    assert!(stdout(&o).contains("\"query\" is a required property"), "{}", stdout(&o));
    // No rule: asked, and with no one to ask, refused in Claude Code's words; nothing written.
    let o = fx.run(&["call", "mcp__tracker__create", r#"{"title":"t"}"#]);
    assert_exit(&o, 1);
    assert!(
        stdout(&o)
            .starts_with("Claude requested permissions to use mcp__tracker__create, but you haven't granted it yet."),
        "{}",
        stdout(&o)
    );
    assert!(!fx.db.exists());
    let o = fx.run(&["--allow", "mcp__tracker", "call", "mcp__tracker__create", r#"{"title":"t"}"#]);
    assert_eq!(ok(&o), "issue #4 filed: t\n");
    assert_eq!(fs::read_to_string(&fx.db).unwrap(), "t\n");
    // A deny rule beats the server-wide allow.
    let o = fx.run(&["--allow", "mcp__tracker", "call", "mcp__tracker__boom", "{}"]);
    assert!(stdout(&o).contains("by the rule mcp__tracker__boom"), "{}", stdout(&o));
}

/// An answer larger than a client reads as one message (16 MiB) is dropped unread: the call
/// ends at its timeout, and the server's next call is answered.
#[test]
fn an_oversized_answer_is_never_read_whole_and_the_server_goes_on() {
    let Some(python) = python() else { return };
    let fx = Fixture::new(
        &python,
        "[permissions]\nallow = [\"mcp__tracker\"]\n\n[tools.mcp__tracker__huge]\ntimeout_ms = 5000\n",
    );
    let turn = json!({"role": "assistant", "content": [
        {"type": "tool_use", "id": "h1", "name": "mcp__tracker__huge", "input": {}},
        {"type": "tool_use", "id": "s1", "name": "mcp__tracker__search", "input": {"query": "crash"}},
    ]});
    let mut child =
        fx.command().arg("run").stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    std::io::Write::write_all(&mut child.stdin.take().unwrap(), turn.to_string().as_bytes()).unwrap();
    let o = child.wait_with_output().unwrap();
    assert_exit(&o, 0);
    let results: Value = serde_json::from_str(&stdout(&o)).unwrap();
    let results = results["content"].as_array().unwrap();
    assert_eq!(results[0]["is_error"], true, "{}", results[0]);
    assert!(results[0]["content"].to_string().contains("timed out after 5000 ms"), "{}", results[0]);
    assert_eq!(results[1]["content"][0]["text"], "crash when saving", "{}", results[1]);
}

/// A server that dies at every call is started again at the next one, five times; then it
/// stays stopped and its calls say so, and every call still gets its result.
#[test]
fn a_server_that_keeps_dying_is_started_again_five_times_then_left_stopped() {
    let Some(python) = python() else { return };
    let fx = Fixture::new(&python, "[permissions]\nallow = [\"mcp__tracker\"]\n");
    let calls: Vec<Value> = (0..8)
        .map(|i| json!({"type": "tool_use", "id": format!("d{i}"), "name": "mcp__tracker__die", "input": {}}))
        .collect();
    let turn = json!({"role": "assistant", "content": calls});
    let mut child =
        fx.command().arg("run").stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    std::io::Write::write_all(&mut child.stdin.take().unwrap(), turn.to_string().as_bytes()).unwrap();
    let o = child.wait_with_output().unwrap();
    assert_exit(&o, 0);
    let results: Value = serde_json::from_str(&stdout(&o)).unwrap();
    let results = results["content"].as_array().unwrap();
    assert_eq!(results.len(), 8, "{results:?}");
    for (i, r) in results.iter().enumerate() {
        assert_eq!(r["tool_use_id"], format!("d{i}"));
        assert_eq!(r["is_error"], true, "{r}");
        let text = r["content"].to_string();
        if i < 6 {
            assert!(text.contains("MCP server tracker stopped"), "call {i}: {text}");
        } else {
            assert!(text.contains("stopped 6 times and is not started again"), "call {i}: {text}");
        }
    }
    for n in 1..=5 {
        assert!(stderr(&o).contains(&format!("MCP server tracker started again ({n} of 5)")), "{}", stderr(&o));
    }
    assert!(!stderr(&o).contains("(6 of 5)"), "{}", stderr(&o));
}

#[test]
fn an_agent_uses_the_servers_tools_under_the_rules_and_the_audit_log_has_every_call() {
    let Some(python) = python() else { return };
    let fx = Fixture::new(
        &python,
        "[permissions]\nallow = [\"mcp__tracker\"]\ndeny = [\"mcp__tracker__create\"]\n\n[audit]\nfile = \"audit.jsonl\"\n",
    );
    let server = ModelServer::start(vec![
        Answer::new("tool_use")
            .tool("s1", "mcp__tracker__search", json!({"query": "crash"}))
            .tool("c1", "mcp__tracker__create", json!({"title": "x"}))
            .tool("b1", "mcp__tracker__boom", json!({}))
            .anthropic(),
        Answer::new("tool_use").tool("d1", "mcp__tracker__die", json!({})).anthropic(),
        Answer::new("tool_use").tool("s2", "mcp__tracker__search", json!({"query": "x"})).anthropic(),
        Answer::text_only("done").anthropic(),
    ]);
    let o = fx.agent(&server);
    assert_exit(&o, 0);
    assert_eq!(stdout(&o), "done\n", "{}", stderr(&o));
    let bodies = server.bodies();
    let offered: Vec<&str> =
        bodies[0]["tools"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert!(offered.contains(&"mcp__tracker__search"), "{offered:?}");
    assert!(!offered.contains(&"mcp__tracker__create"), "denied as a whole, not offered: {offered:?}");
    let results = |i: usize| bodies[i]["messages"].as_array().unwrap().last().unwrap()["content"].clone();
    let first = results(1);
    assert_eq!(first[0]["content"][0]["text"], "crash when saving");
    assert_eq!(first[1]["is_error"], true, "create is denied: {first}");
    assert_eq!(first[2]["is_error"], true, "the server's own failure: {first}");
    // The server died: the call that killed it gets an error result naming it, the run goes
    // on, and the server is started again for the next turn.
    let died = results(2);
    assert_eq!(died[0]["is_error"], true, "{died}");
    assert!(died[0]["content"].to_string().contains("MCP server tracker stopped"), "{died}");
    let after = results(3);
    assert_eq!(after[0]["content"][0]["text"], "no issue matches", "started again: {after}");
    assert!(stderr(&o).contains("MCP server tracker started again (1 of 5)"), "{}", stderr(&o));
    assert!(!fx.db.exists(), "the denied create never reached the server");

    let log: Vec<Value> = fs::read_to_string(fx.ws.path().join("audit.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let call = |id: &str| log.iter().find(|e| e["kind"] == "call" && e["id"] == id).cloned().unwrap();
    assert_eq!(call("s1")["outcome"], "success");
    assert_eq!(call("s1")["tool"], "mcp__tracker__search");
    // Not offered, and refused by its rule when called anyway: in the log as a decision.
    assert_eq!(call("c1")["outcome"], "permission_denied", "{:?}", call("c1"));
    let decision = log.iter().find(|e| e["kind"] == "decision" && e["id"] == "c1").unwrap();
    assert_eq!(decision["decision"], "deny");
    assert_ne!(call("d1")["outcome"], "success");
    assert_eq!(call("s2")["outcome"], "success");
}

#[test]
fn a_projects_mcp_json_server_waits_for_trust_and_one_that_fails_is_reported() {
    let Some(python) = python() else { return };
    let ws = toolhost_tests::workspace();
    let state = tempfile::tempdir().unwrap();
    let mcp = json!({"mcpServers": {
        "tracker": {"command": python, "args": [server_script()], "env": {"TRACKER_DB": "${TOOLHOST_TEST_DB:-/dev/null}"}},
        "broken": {"command": "/nonexistent/mcp-server"},
    }});
    fs::write(ws.path().join(".mcp.json"), mcp.to_string()).unwrap();
    let run = |args: &[&str]| {
        let mut c = cli::command(ws.path());
        c.env("TOOLHOST_STATE_DIR", state.path()).args(args).output().unwrap()
    };
    let o = run(&["list", "--json"]);
    let v: Value = serde_json::from_str(&ok(&o)).unwrap();
    assert_eq!(v["mcp_tools"], json!([]), "nothing starts before trust");
    assert!(stderr(&o).contains("the MCP server tracker starts only once this workspace is trusted"), "{}", stderr(&o));
    ok(&run(&["trust"]));
    let o = run(&["list", "--json"]);
    let v: Value = serde_json::from_str(&ok(&o)).unwrap();
    assert_eq!(v["mcp_tools"].as_array().unwrap().len(), 7, "{v}");
    let errors = v["load_errors"].to_string();
    assert!(errors.contains("MCP server broken: cannot start"), "{errors}");
}

/// The tracker served over streamable HTTP on a free loopback port, killed on drop.
struct HttpServer {
    child: std::process::Child,
    url: String,
}

impl HttpServer {
    fn start(python: &Path, db: &Path) -> HttpServer {
        let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let child = Command::new(python)
            .arg(server_script())
            .args(["--http", &port.to_string()])
            .env("TRACKER_DB", db)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        // Ready when it accepts connections (the SDK's start takes a second or two).
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(std::time::Instant::now() < deadline, "the HTTP MCP server did not start");
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        HttpServer { child, url: format!("http://127.0.0.1:{port}/mcp") }
    }
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn an_agent_uses_one_server_over_stdio_and_another_over_http() {
    let Some(python) = python() else { return };
    let remote_db = tempfile::tempdir().unwrap();
    let http = HttpServer::start(&python, &remote_db.path().join("db.txt"));
    let extra = format!(
        "[permissions]\nallow = [\"mcp__tracker__search\", \"mcp__web\"]\n\n[mcp_servers.web]\nurl = \"{}\"\nheaders = {{ X-Team = \"${{TEAM:-core}}\" }}\n",
        http.url
    );
    let fx = Fixture::new(&python, &extra);
    let server = ModelServer::start(vec![
        Answer::new("tool_use")
            .tool("s1", "mcp__tracker__search", json!({"query": "slow"}))
            .tool("w1", "mcp__web__create", json!({"title": "from the agent"}))
            .anthropic(),
        Answer::text_only("done").anthropic(),
    ]);
    let o = fx.agent(&server);
    assert_exit(&o, 0);
    let bodies = server.bodies();
    let results = bodies[1]["messages"].as_array().unwrap().last().unwrap()["content"].clone();
    assert_eq!(results[0]["content"][0]["text"], "login page slow", "{results}");
    assert_eq!(results[1]["content"][0]["text"], "issue #4 filed: from the agent", "{results}");
    assert_eq!(fs::read_to_string(remote_db.path().join("db.txt")).unwrap(), "from the agent\n");
}

#[tokio::test]
async fn toolhost_mcp_serves_a_servers_tools_beside_its_own() {
    let Some(python) = python() else { return };
    let fx = Fixture::new(&python, "[permissions]\nallow = [\"mcp__tracker__search\"]\n");
    let client = fx.mcp(()).await;
    let tools = client.list_all_tools().await.unwrap();
    let search = tools.iter().find(|t| t.name == "mcp__tracker__search").expect("listed");
    assert_eq!(search.annotations.as_ref().and_then(|a| a.read_only_hint), Some(true));
    assert!(tools.iter().any(|t| t.name == "Read"), "beside the embedded tools");
    let Value::Object(args) = json!({"query": "safari"}) else { unreachable!() };
    let r = client
        .call_tool(rmcp::model::CallToolRequestParams::new("mcp__tracker__search").with_arguments(args))
        .await
        .unwrap();
    assert_ne!(r.is_error, Some(true));
    assert_eq!(r.content[0].as_text().unwrap().text, "login fails on Safari");
    client.cancel().await.unwrap();
}

#[test]
fn an_agent_reads_the_servers_list_fresh_each_turn() {
    let Some(python) = python() else { return };
    let fx = Fixture::new(&python, "[permissions]\nallow = [\"mcp__tracker\"]\n");
    let server = ModelServer::start(vec![
        Answer::new("tool_use").tool("g1", "mcp__tracker__grow", json!({})).anthropic(),
        Answer::new("tool_use").tool("c1", "mcp__tracker__close", json!({"number": 2})).anthropic(),
        Answer::text_only("done").anthropic(),
    ]);
    let o = fx.agent(&server);
    assert_exit(&o, 0);
    let bodies = server.bodies();
    let names = |i: usize| -> Vec<String> {
        bodies[i]["tools"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap().to_string()).collect()
    };
    assert!(!names(0).contains(&"mcp__tracker__close".to_string()));
    assert!(names(1).contains(&"mcp__tracker__close".to_string()), "picked up in the next turn: {:?}", names(1));
    let results = bodies[2]["messages"].as_array().unwrap().last().unwrap()["content"].clone();
    assert_eq!(results[0]["content"][0]["text"], "issue #2 closed", "{results}");
}

/// A server that never answers: only its list is looked at here.
struct Silent;

#[async_trait::async_trait]
impl toolhost::RemoteServer for Silent {
    async fn call(&self, _tool: &str, _input: Value) -> Result<toolhost::RemoteOutput, toolhost::RemoteError> {
        Err(toolhost::RemoteError::NoAnswer("not reached".to_string()))
    }
}

#[test]
fn a_tool_whose_pool_name_a_model_api_refuses_is_left_out_and_said() {
    let ws = toolhost_tests::workspace();
    let rt = toolhost::Runtime::builder().engine(toolhost_tests::engine()).workspace(ws.path()).build().unwrap();
    let schema = json!({"type": "object"});
    let tools = vec![
        toolhost::RemoteTool::new("ok.tool", "fine", schema.clone(), true),
        toolhost::RemoteTool::new("x".repeat(60), "too long once prefixed", schema, false),
    ];
    let errors = rt.set_remote_tools("srv", tools, std::sync::Arc::new(Silent));
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert!(toolhost::error_text(&errors[0]).contains("longer than 64 characters"), "{:?}", errors[0]);
    let names: Vec<String> = rt.remote_tools().iter().map(|t| t.info.name.clone()).collect();
    assert_eq!(names, ["mcp__srv__ok_tool"], "the dot becomes _, as Claude Code names it");
}

#[test]
fn a_post_tool_use_hook_replaces_an_mcp_tools_output_as_in_claude_code() {
    let Some(python) = python() else { return };
    let hook = r#"[[hooks.post_tool_use]]
matcher = "mcp__tracker__search"
command = "cat > /dev/null; echo '{\"hookSpecificOutput\":{\"hookEventName\":\"PostToolUse\",\"updatedMCPToolOutput\":\"(2 issues, titles withheld)\"}}'"
"#;
    let fx = Fixture::new(&python, &format!("[permissions]\nallow = [\"mcp__tracker\"]\n\n{hook}"));
    let o = fx.run(&["call", "mcp__tracker__search", r#"{"query":"login"}"#]);
    assert_eq!(ok(&o), "(2 issues, titles withheld)\n");
}

#[test]
fn servers_claude_code_added_to_claude_json_serve_their_project_only() {
    let Some(python) = python() else { return };
    let (ws, other) = (toolhost_tests::workspace(), toolhost_tests::workspace());
    let (state, claude) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let project = ws.path().canonicalize().unwrap().display().to_string();
    let server = json!({
        "type": "stdio",
        "command": python,
        "args": [server_script()],
        "env": {"TRACKER_DB": state.path().join("db.txt")}
    });
    // Claude Code's state file: much else, and this project's server (local scope).
    let doc = json!({"numStartups": 3, "mcpServers": {}, "projects": {project: {"mcpServers": {"tracker": server}}}});
    fs::write(claude.path().join(".claude.json"), doc.to_string()).unwrap();
    let tools = |dir: &Path| -> Vec<String> {
        let o = cli::command(dir)
            .env("TOOLHOST_STATE_DIR", state.path())
            .env("CLAUDE_CONFIG_DIR", claude.path())
            .stdin(Stdio::null())
            .args(["list", "--json"])
            .output()
            .unwrap();
        let v: Value = serde_json::from_str(&ok(&o)).unwrap();
        v["mcp_tools"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap().to_string()).collect()
    };
    assert!(tools(ws.path()).contains(&"mcp__tracker__search".to_string()));
    assert!(tools(other.path()).is_empty(), "another project's servers stay out");
}

#[test]
fn a_server_that_fails_to_start_says_why_and_joins_at_a_later_turn_once_it_answers() {
    let Some(python) = python() else { return };
    let ws = toolhost_tests::workspace();
    let state = tempfile::tempdir().unwrap();
    // Fails the first time (saying why on stderr), serves from then on.
    let script =
        r#"if [ -e "$MARK" ]; then exec "$PY" "$SCRIPT"; fi; touch "$MARK"; echo 'database is locked' >&2; exit 3"#;
    let config = format!(
        "[permissions]\nallow = [\"mcp__tracker\"]\n\n[mcp_servers.tracker]\ncommand = \"sh\"\nargs = [\"-c\", {}]\n\
         env = {{ MARK = {:?}, PY = {:?}, SCRIPT = {:?}, TRACKER_DB = {:?} }}\nfiles = [{:?}]\n",
        serde_json::to_string(script).unwrap(),
        state.path().join("started-once").display().to_string(),
        python.display().to_string(),
        server_script().display().to_string(),
        state.path().join("db.txt").display().to_string(),
        server_script().parent().unwrap().display().to_string(),
    );
    fs::write(ws.path().join("toolhost.toml"), config).unwrap();
    let server = ModelServer::start(vec![
        Answer::new("tool_use").tool("s1", "mcp__tracker__search", json!({"query": "login"})).anthropic(),
        Answer::new("tool_use").tool("s2", "mcp__tracker__search", json!({"query": "login"})).anthropic(),
        Answer::text_only("done").anthropic(),
    ]);
    let o = cli::command(ws.path())
        .env("TOOLHOST_STATE_DIR", state.path())
        .env("ANTHROPIC_API_KEY", "test-key")
        .env_remove("ANTHROPIC_BASE_URL")
        .stdin(Stdio::null())
        .args(["agent", "--base-url", &server.url, "--retry-base-ms", "1", "triage"])
        .output()
        .unwrap();
    assert_exit(&o, 0);
    assert!(stderr(&o).contains("database is locked"), "the failed start says why: {}", stderr(&o));
    let bodies = server.bodies();
    let names = |i: usize| -> Vec<String> {
        bodies[i]["tools"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap().to_string()).collect()
    };
    assert!(!names(0).contains(&"mcp__tracker__search".to_string()));
    assert!(names(1).contains(&"mcp__tracker__search".to_string()), "joined at the next turn: {:?}", names(1));
    let results = bodies[2]["messages"].as_array().unwrap().last().unwrap()["content"].clone();
    assert_eq!(results[0]["content"][0]["text"], "login fails on Safari\nlogin page slow", "{results}");
}

#[test]
fn a_servers_own_question_reaches_the_person_at_the_terminal_and_is_declined_without_one() {
    let Some(python) = python() else { return };
    let fx = Fixture::new(&python, "[permissions]\nallow = [\"mcp__tracker\"]\n");
    // Output captured, nobody at a terminal: the question is declined.
    let o = fx.run(&["call", "mcp__tracker__assign", "{}"]);
    assert_eq!(ok(&o), "not assigned (decline)\n");
    // A person at a (pseudo-)terminal answers the form field by field: `urgent`, then `who`.
    let template = fx.command();
    let line = format!("{} call mcp__tracker__assign '{{}}'", cli::binary().display());
    let mut script = Command::new("script");
    script.args(["-qec", &line, "/dev/null"]).current_dir(fx.ws.path());
    for (key, value) in template.get_envs() {
        match value {
            Some(v) => script.env(key, v),
            None => script.env_remove(key),
        };
    }
    let mut child = script.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    {
        use std::io::Write as _;
        let mut stdin = child.stdin.take().unwrap();
        stdin.write_all(b"yes\nada\n").unwrap();
    }
    let o = child.wait_with_output().unwrap();
    let shown = String::from_utf8_lossy(&o.stdout);
    assert!(shown.contains("Tool mcp__tracker__assign asks: Whom should issue #1 go to?"), "{shown}");
    assert!(shown.contains("issue #1 assigned to ada (urgent: True)"), "{shown}");
}

/// An MCP client that counts the `tools/list_changed` notifications it gets.
#[derive(Default, Clone)]
struct Listening(std::sync::Arc<tokio::sync::Notify>);

impl rmcp::ClientHandler for Listening {
    async fn on_tool_list_changed(&self, _context: rmcp::service::NotificationContext<rmcp::service::RoleClient>) {
        self.0.notify_one();
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn toolhost_mcp_follows_a_servers_list_change_and_tells_its_clients() {
    let Some(python) = python() else { return };
    let fx = Fixture::new(&python, "[permissions]\nallow = [\"mcp__tracker\"]\n");
    let listening = Listening::default();
    let client = fx.mcp(listening.clone()).await;
    let names = |tools: &[rmcp::model::Tool]| tools.iter().map(|t| t.name.to_string()).collect::<Vec<_>>();
    assert!(!names(&client.list_all_tools().await.unwrap()).contains(&"mcp__tracker__close".to_string()));
    let r = client.call_tool(rmcp::model::CallToolRequestParams::new("mcp__tracker__grow")).await.unwrap();
    assert_ne!(r.is_error, Some(true), "{r:?}");
    // The tracker said its list changed: toolhost read it again and says so in turn.
    tokio::time::timeout(std::time::Duration::from_secs(30), listening.0.notified())
        .await
        .expect("toolhost sent tools/list_changed");
    assert!(names(&client.list_all_tools().await.unwrap()).contains(&"mcp__tracker__close".to_string()));
    client.cancel().await.unwrap();
}

#[test]
fn a_hooks_replacement_output_is_checked_like_the_servers_own() {
    let Some(python) = python() else { return };
    let hook = r#"[[hooks.post_tool_use]]
matcher = "mcp__tracker__search"
command = "cat > /dev/null; echo '{\"hookSpecificOutput\":{\"hookEventName\":\"PostToolUse\",\"updatedMCPToolOutput\":[{\"type\":\"image\",\"data\":\"AAAA\",\"mimeType\":\"image/bmp\"}]}}'"
"#;
    let fx = Fixture::new(&python, &format!("[permissions]\nallow = [\"mcp__tracker\"]\n\n{hook}"));
    let o = fx.run(&["call", "mcp__tracker__search", r#"{"query":"login"}"#]);
    assert_exit(&o, 1);
    assert!(stdout(&o).contains("updatedMCPToolOutput") && stdout(&o).contains("image/bmp"), "{}", stdout(&o));
}

#[test]
fn what_a_server_says_of_its_tools_is_bounded_before_it_joins_the_pool() {
    let ws = toolhost_tests::workspace();
    let rt = toolhost::Runtime::builder().engine(toolhost_tests::engine()).workspace(ws.path()).build().unwrap();
    let schema = json!({"type": "object"});
    let huge_schema = json!({"type": "object", "description": "s".repeat(toolhost::MAX_MCP_SCHEMA_BYTES)});
    let long = format!("{}tail", "é".repeat(toolhost::MAX_MCP_DESCRIPTION_CHARS));
    let mut tools = vec![
        toolhost::RemoteTool::new("wordy", long, schema.clone(), true),
        toolhost::RemoteTool::new("heavy", "d", huge_schema, true),
        toolhost::RemoteTool::new("a.b", "first", schema.clone(), true),
        toolhost::RemoteTool::new("a_b", "second, the same name once cleaned", schema.clone(), true),
    ];
    tools.extend(
        (0..toolhost::MAX_MCP_TOOLS_PER_SERVER)
            .map(|i| toolhost::RemoteTool::new(format!("t{i}"), "d", schema.clone(), true)),
    );
    let errors: Vec<String> = rt
        .set_remote_tools("srv", tools, std::sync::Arc::new(Silent))
        .iter()
        .map(|e| toolhost::error_text(e))
        .collect();
    let said = errors.join("\n");
    assert!(said.contains("more than 1000 tools (1004 read)"), "{said}");
    assert!(said.contains("tool heavy: its input schema is"), "{said}");
    assert!(said.contains("tool a_b: the name mcp__srv__a_b is taken by this server's tool a.b"), "{said}");
    assert_eq!(errors.len(), 3, "{said}");
    let pool = rt.remote_tools();
    // 1,000 offered: the first 1,000 listed but the two refused.
    assert_eq!(pool.len(), toolhost::MAX_MCP_TOOLS_PER_SERVER - 2);
    let wordy = pool.iter().find(|t| t.info.name == "mcp__srv__wordy").unwrap();
    assert_eq!(wordy.info.description, format!("{}… [truncated]", "é".repeat(toolhost::MAX_MCP_DESCRIPTION_CHARS)));
    assert_eq!(pool.iter().find(|t| t.info.name == "mcp__srv__a_b").unwrap().info.description, "first");

    // Another server whose name cleans to the same cannot take a tool's name over.
    let x = || vec![toolhost::RemoteTool::new("x", "d", json!({"type": "object"}), true)];
    assert!(rt.set_remote_tools("my.srv", x(), std::sync::Arc::new(Silent)).is_empty());
    let errors = rt.set_remote_tools("my_srv", x(), std::sync::Arc::new(Silent));
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert!(
        toolhost::error_text(&errors[0]).contains("the name mcp__my_srv__x is taken by a tool of MCP server my.srv"),
        "{errors:?}"
    );
    let x = rt.remote_tools().into_iter().find(|t| t.info.name == "mcp__my_srv__x").unwrap();
    assert!(matches!(&x.origin, toolhost::Origin::Mcp(s) if s == "my.srv"), "{:?}", x.origin);
}

/// A workspace whose config runs tests/mcp/hostile_server.py `mode` (plain JSON-RPC, no SDK)
/// as MCP server `h`, its tools allowed.
fn hostile(mode: &str) -> tempfile::TempDir {
    let ws = toolhost_tests::workspace();
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("mcp/hostile_server.py").canonicalize().unwrap();
    let config = format!(
        "[permissions]\nallow = [\"mcp__h\"]\n\n[mcp_servers.h]\ncommand = \"python3\"\nargs = [{:?}, {mode:?}]\n",
        script.display().to_string()
    );
    fs::write(ws.path().join("toolhost.toml"), config).unwrap();
    ws
}

#[test]
fn a_server_that_lists_for_ever_is_read_up_to_a_bound_and_its_tools_still_work() {
    for (mode, tools, said) in [
        ("endless", 1000, "tools/list not read to its end (more tools than are kept, after 41 pages and 1025 tools)"),
        ("pages", 0, "tools/list not read to its end (the most pages read, after 100 pages and 0 tools)"),
        ("loop", 1, "tools/list not read to its end (a cursor it sent before, after 2 pages and 2 tools)"),
    ] {
        let ws = hostile(mode);
        let o = cli::run(ws.path(), &["list", "--json"]);
        let v: Value = serde_json::from_str(&ok(&o)).unwrap();
        assert_eq!(v["mcp_tools"].as_array().unwrap().len(), tools, "{mode}");
        assert!(stderr(&o).contains(said), "{mode}: {}", stderr(&o));
    }
    let o = cli::run(hostile("endless").path(), &["list", "--json"]);
    assert!(stderr(&o).contains("more than 1000 tools (1025 read)"), "{}", stderr(&o));
    let o = cli::run(hostile("endless").path(), &["call", "mcp__h__t0_0", "{}"]);
    assert_eq!(ok(&o), "ok\n");
    // An answer without `content` is an empty success.
    let o = cli::run(hostile("loop").path(), &["call", "--json", "mcp__h__only", "{}"]);
    let v: Value = serde_json::from_str(&ok(&o)).unwrap();
    assert!(v.get("is_error").is_none(), "{v}");
    assert_eq!(v["content"][0]["text"], "(mcp__h__only completed with no output)", "{v}");
}

#[test]
fn a_server_that_stops_answering_its_list_does_not_stall_an_agent() {
    let ws = hostile("mute");
    let server = ModelServer::start(vec![
        Answer::new("tool_use").tool("o1", "mcp__h__only", json!({})).anthropic(),
        Answer::text_only("done").anthropic(),
    ]);
    let o = agent(cli::command(ws.path()), &server, &[]);
    assert_exit(&o, 0);
    assert!(stderr(&o).contains("cannot read its tools again: tools/list got no answer within 10s"), "{}", stderr(&o));
    let bodies = server.bodies();
    assert_eq!(bodies.len(), 2);
    let names: Vec<&str> = bodies[1]["tools"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert!(names.contains(&"mcp__h__only"), "it keeps the tools it had: {names:?}");
}

/// A client of `toolhost mcp` that answers form questions and keeps what it is sent.
#[derive(Default, Clone)]
struct Answering {
    questions: std::sync::Arc<std::sync::Mutex<Vec<String>>>,
    progress: std::sync::Arc<std::sync::Mutex<Vec<rmcp::model::ProgressNotificationParam>>>,
    logs: std::sync::Arc<std::sync::Mutex<Vec<String>>>,
}

impl rmcp::ClientHandler for Answering {
    fn get_info(&self) -> rmcp::model::ClientConfig {
        let capabilities = serde_json::from_value(json!({"elicitation": {"form": {}}})).unwrap();
        rmcp::model::ClientConfig::new(capabilities, rmcp::model::Implementation::new("answering", "0"))
    }

    async fn create_elicitation(
        &self,
        request: rmcp::model::ElicitRequestParams,
        _context: rmcp::service::RequestContext<rmcp::service::RoleClient>,
    ) -> Result<rmcp::model::ElicitResult, rmcp::ErrorData> {
        use rmcp::model::{ElicitRequestParams, ElicitResult, ElicitationAction};
        let ElicitRequestParams::FormElicitationParams { message, .. } = request else {
            return Ok(ElicitResult::new(ElicitationAction::Decline));
        };
        self.questions.lock().unwrap().push(message);
        Ok(ElicitResult::new(ElicitationAction::Accept).with_content(json!({"who": "ana", "urgent": true})))
    }

    async fn on_progress(
        &self,
        params: rmcp::model::ProgressNotificationParam,
        _context: rmcp::service::NotificationContext<rmcp::service::RoleClient>,
    ) {
        self.progress.lock().unwrap().push(params);
    }

    #[allow(deprecated, reason = "the tracker logs as servers of 2025-11-25 do")]
    async fn on_logging_message(
        &self,
        params: rmcp::model::LoggingMessageNotificationParam,
        _context: rmcp::service::NotificationContext<rmcp::service::RoleClient>,
    ) {
        self.logs.lock().unwrap().push(params.data.to_string());
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn under_toolhost_mcp_a_servers_question_progress_and_logs_reach_the_client_whose_call_it_is() {
    let Some(python) = python() else { return };
    let fx = Fixture::new(&python, "[permissions]\nallow = [\"mcp__tracker\"]\n");
    let answering = Answering::default();
    let client = fx.mcp(answering.clone()).await;
    #[allow(deprecated, reason = "logging/setLevel, as clients of 2025-11-25 send it")]
    client.set_level(rmcp::model::SetLevelRequestParams::new(rmcp::model::LoggingLevel::Info)).await.unwrap();
    use rmcp::model::RequestParamsMeta as _;
    let mut params = rmcp::model::CallToolRequestParams::new("mcp__tracker__assign");
    params.set_meta(rmcp::model::RequestMetaObject::with_progress_token(rmcp::model::ProgressToken(
        rmcp::model::NumberOrString::Number(7),
    )));
    let done = client.call_tool(params).await.unwrap();
    assert_eq!(done.content[0].as_text().unwrap().text, "issue #1 assigned to ana (urgent: True)", "{done:?}");
    let questions = answering.questions.lock().unwrap().clone();
    assert_eq!(questions.len(), 1, "{questions:?}");
    assert!(questions[0].contains("mcp__tracker__assign asks: Whom should issue #1 go to?"), "{questions:?}");
    let progress: Vec<String> =
        answering.progress.lock().unwrap().iter().map(|p| p.message.clone().unwrap_or_default()).collect();
    assert_eq!(progress, ["asking whom"], "the server's progress, as the call's own");
    let logs = answering.logs.lock().unwrap().clone();
    assert!(logs.iter().any(|l| l.contains("assigning issue #1")), "{logs:?}");
    client.cancel().await.unwrap();

    // A client that cannot answer: the server's question is declined, nobody else is asked.
    let client = fx.mcp(()).await;
    let r = client.call_tool(rmcp::model::CallToolRequestParams::new("mcp__tracker__assign")).await.unwrap();
    assert_eq!(r.content[0].as_text().unwrap().text, "not assigned (cancel)", "{r:?}");
    client.cancel().await.unwrap();
}

#[test]
fn a_servers_tools_wait_behind_tool_search_when_the_pool_is_large() {
    let Some(python) = python() else { return };
    let fx = Fixture::new(&python, "[permissions]\nallow = [\"mcp__tracker\"]\n");
    let server = ModelServer::start(vec![
        Answer::new("tool_use").tool("f1", "ToolSearch", json!({"query": "select:mcp__tracker__search"})).anthropic(),
        Answer::new("tool_use").tool("s1", "mcp__tracker__search", json!({"query": "crash"})).anthropic(),
        Answer::text_only("done").anthropic(),
    ]);
    // A 100-token window: every definition is over its 10 %, so every tool is deferred.
    let o = agent(fx.command(), &server, &["--context-window", "100"]);
    assert_exit(&o, 0);
    let bodies = server.bodies();
    let names = |b: &Value| -> Vec<String> {
        b["tools"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap().to_string()).collect()
    };
    assert_eq!(names(&bodies[0]), ["ToolSearch"]);
    let listing = bodies[0]["system"].to_string();
    assert!(listing.contains("mcp__tracker__search") && listing.contains("mcp__tracker__create"), "{listing}");
    assert_eq!(names(&bodies[1]), ["ToolSearch", "mcp__tracker__search"], "found, then offered with its schema");
    assert_eq!(bodies[1]["tools"][1]["input_schema"]["required"], json!(["query"]));
    let results = bodies[2]["messages"].as_array().unwrap().last().unwrap()["content"].clone();
    assert_eq!(results[0]["content"][0]["text"], "crash when saving", "{results}");
}

/// Whatever two servers list, what joins the pool keeps the invariants a model API and the
/// person rely on, and every tool listed is either in the pool or named in an error.
#[test]
fn whatever_servers_list_the_pool_stays_within_its_bounds() {
    use proptest::prelude::*;
    let ws = toolhost_tests::workspace();
    let rt = toolhost::Runtime::builder().engine(toolhost_tests::engine()).workspace(ws.path()).build().unwrap();
    // Names from a small alphabet with characters that clean to `_`, so clashes are common.
    let name = proptest::string::string_regex("[ab._ /\u{e9}-]{1,6}|[a-z]{60,62}").unwrap();
    let description = prop_oneof![Just(0usize), Just(2047), Just(2048), Just(2049), 0usize..5000]
        .prop_map(|n| "d\u{e9}\u{1b}".chars().cycle().take(n).collect::<String>());
    let schema = prop_oneof![
        Just(json!({"type": "object"})),
        Just(json!("not an object")),
        Just(json!({"type": "object", "properties": {"x": {"$ref": "http://example.com/s"}}})),
        (0usize..400_000).prop_map(|n| json!({"type": "object", "description": "s".repeat(n)})),
    ];
    let tool = (name, description, schema, any::<bool>())
        .prop_map(|(n, d, s, r)| toolhost::RemoteTool::new(n, d, s, r))
        .boxed();
    let lists = (proptest::collection::vec(tool.clone(), 0..40), proptest::collection::vec(tool, 0..40), 0usize..1100);
    let mut runner = proptest::test_runner::TestRunner::new(proptest::test_runner::Config::with_cases(64));
    runner
        .run(&lists, |(first, second, padding)| {
            for (server, mut list) in [("one.srv", first), ("one_srv", second)] {
                // Sometimes more tools than a server may bring.
                if server == "one.srv" {
                    list.extend((0..padding).map(|i| toolhost::RemoteTool::new(format!("p{i}"), "", json!({}), true)));
                }
                let listed: Vec<String> = list.iter().map(|t| t.name.clone()).collect();
                let said: Vec<String> = rt
                    .set_remote_tools(server, list, std::sync::Arc::new(Silent))
                    .iter()
                    .map(|e| toolhost::error_text(e))
                    .collect();
                let pool = rt.remote_tools();
                let mine: Vec<_> =
                    pool.iter().filter(|t| matches!(&t.origin, toolhost::Origin::Mcp(s) if s == server)).collect();
                prop_assert!(mine.len() <= toolhost::MAX_MCP_TOOLS_PER_SERVER);
                for (i, original) in listed.iter().enumerate() {
                    let in_pool = mine
                        .iter()
                        .any(|t| matches!(&t.info.kind, toolhost::ToolKind::Mcp { tool, .. } if tool == original));
                    let named = said.iter().any(|e| e.contains(&format!("tool {original}:")))
                        || (i >= toolhost::MAX_MCP_TOOLS_PER_SERVER
                            && said.iter().any(|e| e.contains("more than 1000 tools")));
                    prop_assert!(in_pool || named, "{original:?} neither in the pool nor said: {said:?}");
                }
            }
            let pool = rt.remote_tools();
            let mut names = std::collections::HashSet::new();
            for t in &pool {
                prop_assert!(names.insert(t.info.name.clone()), "{} twice", t.info.name);
                prop_assert!(
                    t.info.name.len() <= 64
                        && t.info.name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-'),
                    "{}",
                    t.info.name
                );
                prop_assert!(t.info.description.chars().count() <= toolhost::MAX_MCP_DESCRIPTION_CHARS + 13);
                prop_assert!(serde_json::to_vec(&t.info.input_schema).unwrap().len() <= toolhost::MAX_MCP_SCHEMA_BYTES);
            }
            Ok(())
        })
        .unwrap();
}
