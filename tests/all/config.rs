//! `toolhost config check`, run as a user would: every error of a config file at once, each as
//! `FILE:LINE:COLUMN: message` on stderr, then a count; exit 2 if there is any, else one `ok`
//! line on stdout and exit 0. Also the operator's grant in `toolhost list`.

use serde_json::Value;
use std::fs;
use toolhost_tests::cli::{assert_exit, run, stderr, stdout};
use toolhost_tests::workspace;

#[test]
fn a_good_config_is_ok_with_a_summary() {
    let ws = workspace();
    let cfg = ws.path().join("toolhost.toml");
    fs::write(
        &cfg,
        r#"[limits]
timeout_ms = 5000

[permissions]
mode = "accept-edits"
allow = ["Read", "Grep(src/**)"]
deny = ["Edit(.git/**)"]

[tools.Read]
grant = { fs_read = ["."] }

[tools.Write]
grant = { fs_write = ["."] }
memory_mib = 64

[[hooks.pre_tool_use]]
matcher = "Edit|Write"
command = "true"
"#,
    )
    .unwrap();

    // FILE given, found through --config, or ./toolhost.toml.
    for args in [
        &["config", "check", "toolhost.toml"][..],
        &["--config", cfg.to_str().unwrap(), "config", "check"],
        &["config", "check"],
    ] {
        let o = run(ws.path(), args);
        assert_exit(&o, 0);
        assert!(
            stdout(&o).ends_with("toolhost.toml: ok (2 tools configured, 3 rules, 1 hook)\n"),
            "{args:?}: {}",
            stdout(&o)
        );
        assert_eq!(stderr(&o), "", "{args:?}");
    }
}

#[test]
fn a_bad_config_lists_every_error_with_its_position_and_exits_2() {
    let ws = workspace();
    let tools = workspace();
    // A real tool, under a name the config does not expect.
    fs::write(tools.path().join("read.wasm"), toolhost_default_tools::get("Read").unwrap()).unwrap();
    let cfg = ws.path().join("bad.toml");
    fs::write(
        &cfg,
        format!(
            r#"[limits]
max_concurrency = 0
timout_ms = 5

[permissions]
allow = ["Read", "Bash("]

[tools.Read]
grant = {{ fs_write = ["."] }}

[tools.Write]
grant = {{ fs_write = ["."] }}

[tools.NoSuchTool]
fuel = 1000

[tools.Mine]
path = "mine.wasm"

[tools.Reader]
path = "{}"

[[hooks.post_tool_use]]
matcher = "Read"
"#,
            tools.path().join("read.wasm").display()
        ),
    )
    .unwrap();

    let o = run(ws.path(), &["config", "check", cfg.to_str().unwrap()]);
    assert_exit(&o, 2);
    assert_eq!(stdout(&o), "", "errors go to stderr");
    let ws_path = ws.path().canonicalize().unwrap();
    let f = cfg.display();
    let want = [
        format!("{f}:2:19: limits.max_concurrency: must be at least 1, got 0"),
        format!("{f}:3:1: limits.timout_ms: unknown field `timout_ms`"),
        format!("{f}:6:18: permissions.allow[1]: invalid permission rule \"Bash(\""),
        format!(
            "{f}:9:9: tools.Read.grant: beyond the tool's ceiling: fs_write \".\" ({}): the ceiling allows only fs_read of /",
            ws_path.display()
        ),
        format!("{f}:14:8: tools.NoSuchTool: no tool named NoSuchTool is loaded; the loaded tools are Edit, Glob,"),
        format!("{f}:18:8: tools.Mine.path: no such file: {}", ws.path().join("mine.wasm").display()),
        format!(
            "{f}:21:8: tools.Reader.path: {} is a tool named Read, not Reader",
            tools.path().join("read.wasm").display()
        ),
        format!("{f}:23:1: hooks.post_tool_use[0]: missing field `command`"),
        format!("8 errors in {f}"),
    ];
    assert_error_lines(&stderr(&o), &want);
}

#[test]
fn a_path_glob_that_does_not_compile_is_an_error_at_its_position() {
    // A deny rule whose glob does not compile would match nothing (fail open): it is an error,
    // and so is an ask-before-writing pattern that does not compile.
    let ws = workspace();
    let cfg = ws.path().join("toolhost.toml");
    fs::write(&cfg, "[permissions]\ndeny = [\"Read(src/[)\"]\nprotected = [\".tool-versions\", \"hooks/{a\"]\n")
        .unwrap();
    let o = run(ws.path(), &["config", "check", cfg.to_str().unwrap()]);
    assert_exit(&o, 2);
    let f = cfg.display();
    let want = [
        format!(
            "{f}:2:9: permissions.deny[0]: invalid permission rule \"Read(src/[)\": \"src/[\" is not a valid path glob: \
             unclosed character class; missing ']'"
        ),
        format!("{f}:3:32: permissions.protected[1]: \"hooks/{{a\" is not a valid path glob: unclosed alternate group"),
        format!("2 errors in {f}"),
    ];
    assert_error_lines(&stderr(&o), &want);
}

/// `err` is one line per error, each starting with its `want`, then the count line.
fn assert_error_lines(err: &str, want: &[String]) {
    let lines: Vec<&str> = err.lines().collect();
    assert_eq!(lines.len(), want.len(), "one line per error, then the count:\n{err}");
    for (line, want) in lines.iter().zip(want) {
        assert!(line.starts_with(want.as_str()), "want {want}…\ngot:\n{err}");
    }
}

#[test]
fn an_unreadable_config_is_one_error() {
    let ws = workspace();
    let o = run(ws.path(), &["config", "check", "missing.toml"]);
    assert_exit(&o, 2);
    let err = stderr(&o);
    assert!(err.starts_with("missing.toml: cannot read config: "), "{err}");
    assert!(err.ends_with("1 error in missing.toml\n"), "{err}");
}

#[test]
fn list_shows_the_default_grant_the_ceiling_cut_and_refuses_a_config_grant_beyond_it() {
    let ws = workspace();
    let cfg = ws.path().join("toolhost.toml");
    fs::write(
        &cfg,
        "[tools.Read]\ngrant = { fs_write = [\".\"], net = [\"*\"] }\n[tools.Write]\ngrant = { fs_write = [\".\"] }\n",
    )
    .unwrap();
    let ws_path = ws.path().canonicalize().unwrap();
    let o = run(ws.path(), &["list", "--json"]);
    assert_exit(&o, 0);
    let v: Value = serde_json::from_str(&stdout(&o)).expect("JSON");
    let tool = |name: &str| v["tools"].as_array().unwrap().iter().find(|t| t["name"] == name).cloned();
    // A config grant beyond the ceiling is a mistake: that tool does not load, the others do.
    assert!(tool("Read").is_none(), "{v}");
    let errors = v["load_errors"].to_string();
    assert!(errors.contains("toolhost.toml:2:") && errors.contains("beyond the tool's ceiling"), "{errors}");
    // The default grant (read-write workspace) is cut to what the ceiling allows, and shown.
    let glob = tool("Glob").unwrap();
    assert_eq!(glob["grant"], serde_json::json!([format!("fs-read({})", ws_path.display())]));
    assert_eq!(glob["operator_grant"], serde_json::json!([format!("fs-write({})", ws_path.display())]));
    assert_eq!(glob["operator_grant_from"], "default");

    let o = run(ws.path(), &["list"]);
    assert_exit(&o, 0);
    let out = stdout(&o);
    let section = |name: &str| {
        let start = out.find(&format!("\n{name} (")).unwrap_or_else(|| panic!("{name} in:\n{out}"));
        let rest = &out[start + 1..];
        rest[..rest.find("\n\n").unwrap_or(rest.len())].to_string()
    };
    let glob = section("Glob");
    assert!(
        glob.contains(&format!(
            "  gets: fs-read({ws}): the default grant, fs-write({ws}), narrowed to reading (a read-only tool) and to its ceiling",
            ws = ws_path.display()
        )),
        "what the tool gets, the grant the ceiling cut and why:\n{glob}"
    );
    let write = section("Write");
    assert!(
        write.contains(&format!("  gets: fs-write({}) (its [tools.Write] grant)", ws_path.display())),
        "a grant that took effect as written is shown once, with where it came from:\n{write}"
    );
}

/// A granted directory that does not exist is left out at load, and `list` says so rather than
/// blaming the ceiling.
#[test]
fn list_names_granted_directories_that_do_not_exist() {
    let ws = workspace();
    fs::create_dir(ws.path().join("docs")).unwrap();
    fs::write(ws.path().join("toolhost.toml"), "[tools.Grep]\ngrant = { fs_read = [\"docs\", \"gone\"] }\n").unwrap();
    let ws_path = ws.path().canonicalize().unwrap();
    let o = run(ws.path(), &["list"]);
    assert_exit(&o, 0);
    let out = stdout(&o);
    let grep = out.split("\n\n").find(|s| s.starts_with("Grep ")).expect("Grep is listed");
    assert!(
        grep.contains(&format!(
            "  gets: fs-read({docs}): its [tools.Grep] grant, fs-read({docs}), fs-read({gone}), left out because \
             they do not exist: {gone}",
            docs = ws_path.join("docs").display(),
            gone = ws_path.join("gone").display()
        )),
        "{grep}"
    );
}

#[test]
fn network_settings_are_checked_each_at_its_line() {
    let ws = workspace();
    fs::write(ws.path().join("notes.pem"), "not a certificate\n").unwrap();
    let cfg = ws.path().join("toolhost.toml");
    fs::write(
        &cfg,
        r#"[limits]
max_response_bytes = 0
connect_timeout_ms = 5000

[tls]
ca_files = ["missing.pem", "notes.pem"]

[tools.WebFetch]
grant = { net = ["docs.rs", "bad host", "x.com:99999"] }
max_connections = 0

[tools.Read]
grant = { fs_read = ["."], net = ["docs.rs"] }
"#,
    )
    .unwrap();
    let o = run(ws.path(), &["config", "check"]);
    assert_exit(&o, 2);
    let f = "toolhost.toml";
    let dir = ws.path().canonicalize().unwrap();
    let want = [
        format!("{f}:2:22: limits.max_response_bytes: must be at least 1, got 0"),
        format!("{f}:6:13: tls.ca_files[0]: {}: ", dir.join("missing.pem").display()),
        format!(
            "{f}:6:28: tls.ca_files[1]: {}: no PEM certificate (`-----BEGIN CERTIFICATE-----`) in it",
            dir.join("notes.pem").display()
        ),
        format!(
            "{f}:9:9: tools.WebFetch.grant.net[1]: invalid network pattern \"bad host\": not a host name, IP address, \
             `*.domain` or `*`"
        ),
        format!(
            "{f}:9:9: tools.WebFetch.grant.net[2]: invalid network pattern \"x.com:99999\": the port is not a number \
             from 0 to 65535"
        ),
        format!("{f}:10:19: tools.WebFetch.max_connections: must be at least 1, got 0"),
        format!(
            "{f}:13:9: tools.Read.grant: beyond the tool's ceiling: net \"docs.rs\": the ceiling allows no network"
        ),
        format!("7 errors in {f}"),
    ];
    assert_error_lines(&stderr(&o), &want);
}

#[test]
fn list_shows_network_ceilings_and_grants() {
    let ws = workspace();
    fs::write(ws.path().join("toolhost.toml"), "[tools.WebFetch]\ngrant = { net = [\"docs.rs\", \"*.python.org\"] }\n")
        .unwrap();
    let o = run(ws.path(), &["list", "--json"]);
    assert_exit(&o, 0);
    let listed: Value = serde_json::from_str(&stdout(&o)).unwrap();
    let tools = listed["tools"].as_array().expect("a tools array");
    let fetch = tools.iter().find(|t| t["name"] == "WebFetch").expect("WebFetch is listed");
    assert_eq!(fetch["ceiling"], serde_json::json!(["net(*)"]), "{fetch}");
    assert_eq!(fetch["grant"], serde_json::json!(["net(docs.rs)", "net(*.python.org)"]), "{fetch}");

    // Without a grant, WebFetch has nothing. (Without the config, the default grant, which
    // reaches further than the one trusted: the operator accepts it.)
    fs::remove_file(ws.path().join("toolhost.toml")).unwrap();
    assert_exit(&run(ws.path(), &["trust"]), 0);
    let o = run(ws.path(), &["list"]);
    assert_exit(&o, 0);
    let text = stdout(&o);
    let section = text.split("\n\n").find(|s| s.starts_with("WebFetch ")).expect("WebFetch is listed");
    assert!(section.contains("ceiling: net(*)"), "{section}");
    assert!(
        section.contains("  gets: nothing: the default grant, fs-write(")
            && section.contains("is outside its ceiling; grant what it needs in [tools.WebFetch] grant"),
        "{section}"
    );
}
