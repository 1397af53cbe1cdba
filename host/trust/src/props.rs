//! Generated servers against the gate: whatever a server's command, arguments and environment
//! (variables with defaults, interpreters, places inside and outside the workspace), any
//! change in what would run or where it loads code from is a widening change, and no place
//! inside the workspace that a loader variable names, or that an interpreter imports from
//! beside its script (at the root too), is left writable by tools without a person's yes.

use super::{Pins, changes};
use proptest::prelude::*;
use std::path::{Path, PathBuf};
use toolhost_policy::launch::{Kind, ServerLaunch, loader_variable};
use toolhost_policy::{
    Config, FsAccess, HostPaths, Loader, Rules, analyse_hook_command, hook_protected_paths, normalize, shared_policy,
};

const PROGRAMS: &[&str] =
    &["python3", "node", "/opt/tool/bin/run", "srv/run.sh", "${TOOLHOST_PROP_UNSET:-/opt/d}/py", "./run.py", "lua"];
const ARGS: &[&str] = &[
    "srv/server.py",
    "server.py",
    "main.js",
    "main.lua",
    "${TOOLHOST_PROP_UNSET:-srv}/main.js",
    "--port=8080",
    "-v",
    "/opt/tool/x.py",
    "lib/mod.py",
    "${TOOLHOST_PROP_UNSET:-notes}/x.py",
];
const NAMES: &[&str] =
    &["PYTHONPATH", "NODE_PATH", "GIT_DIR", "PERL5LIB", "MODE", "TOKEN", "NODE_OPTIONS", "LD_PRELOAD", "HOME"];
const VALUES: &[&str] = &[
    "lib",
    "notes",
    "srv",
    ".",
    "",
    "/opt/x",
    "lib:/opt/y",
    "${TOOLHOST_PROP_UNSET:-notes}",
    "./srv/../lib",
    "--require x",
    "deep/er",
];

/// A generated stdio server: program, arguments, environment.
type Server = (&'static str, Vec<&'static str>, std::collections::BTreeMap<&'static str, &'static str>);

fn server_parts() -> impl Strategy<Value = Server> {
    let program = prop::sample::select(PROGRAMS);
    let args = prop::collection::vec(prop::sample::select(ARGS), 0..3);
    let env = prop::collection::btree_map(prop::sample::select(NAMES), prop::sample::select(VALUES), 0..3);
    (program, args, env)
}

/// A server as the text of `toolhost.toml`.
fn render((program, args, env): &Server) -> String {
    let env: Vec<String> = env.iter().map(|(k, v)| format!("{k} = {v:?}")).collect();
    format!("[mcp_servers.s]\ncommand = {program:?}\nargs = {args:?}\nenv = {{ {} }}\n", env.join(", "))
}

fn server() -> impl Strategy<Value = String> {
    server_parts().prop_map(|s| render(&s))
}

/// A server and the same with one thing changed (its program, an argument, one variable
/// added, changed or removed): the small edits a hostile change would make.
fn server_and_edit() -> impl Strategy<Value = (String, String)> {
    let edit = (
        0..5usize,
        prop::sample::select(PROGRAMS),
        prop::sample::select(ARGS),
        prop::sample::select(NAMES),
        prop::sample::select(VALUES),
    );
    (server_parts(), edit).prop_map(|(a, (kind, program, arg, name, value))| {
        let mut b = a.clone();
        match kind {
            0 => b.0 = program,
            1 => b.1.push(arg),
            2 => {
                b.1.pop();
            }
            3 => {
                b.2.insert(name, value);
            }
            _ => {
                let first = b.2.keys().next().copied();
                if let Some(k) = first {
                    b.2.remove(k);
                }
            }
        }
        (render(&a), render(&b))
    })
}

fn workspace() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().canonicalize().unwrap();
    for d in ["lib", "srv", "deep/er"] {
        std::fs::create_dir_all(ws.join(d)).unwrap();
    }
    std::fs::write(ws.join("srv/server.py"), "print('hi')\n").unwrap();
    std::fs::write(ws.join("srv/run.sh"), "exec python3 srv/server.py\n").unwrap();
    std::fs::write(ws.join("server.py"), "import helper\n").unwrap();
    std::fs::write(ws.join("run.py"), "#!/usr/bin/env python3\nimport helper\n").unwrap();
    std::fs::write(ws.join("main.js"), "require('./util')\n").unwrap();
    std::fs::write(ws.join("main.lua"), "require 'util'\n").unwrap();
    (dir, ws)
}

fn config(text: &str, ws: &Path) -> Config {
    Config::parse(text, &ws.join("toolhost.toml")).unwrap()
}

/// A server's program, arguments, and the variables that decide what it runs.
type WhatRuns = (String, Vec<String>, Vec<(String, String)>);

/// What decides what the server runs: its argv and written env, and the expanded value of
/// every variable that loads code (a changed secret of another variable need not widen).
fn what_runs(config: &Config, ws: &Path) -> Option<WhatRuns> {
    let Ok(ServerLaunch::Stdio(spec)) = config.mcp_servers["s"].launch(ws) else { return None };
    let loaders = spec.env.iter().filter(|(k, _)| loader_variable(k).is_some()).map(|(k, v)| (k.clone(), v.clone()));
    let written = spec.env_written.iter().map(|(k, v)| (k.clone(), v.clone()));
    Some((spec.program.clone(), spec.args.clone(), loaders.chain(written).collect()))
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]

    #[test]
    fn any_change_in_what_a_server_runs_widens((a, b) in prop_oneof![
        (server(), server()),
        server_and_edit(),
    ]) {
        let (_dir, ws) = workspace();
        let (ca, cb) = (config(&a, &ws), config(&b, &ws));
        let path = ws.join("toolhost.toml");
        let (pa, pb) = (Pins::current(&ca, Some(&path), &ws), Pins::current(&cb, Some(&path), &ws));
        let (ra, rb) = (what_runs(&ca, &ws), what_runs(&cb, &ws));
        if rb.is_some() && ra != rb {
            let found = changes(&pa, &pb);
            prop_assert!(found.iter().any(|c| c.widens), "{a}\n→\n{b}\n{found:?}");
        }
    }

    #[test]
    fn no_place_a_server_loads_code_from_is_left_to_tools(a in server()) {
        let (_dir, ws) = workspace();
        let c = config(&a, &ws);
        let server = &c.mcp_servers["s"];
        let spec = match server.launch(&ws) {
            Ok(ServerLaunch::Stdio(spec)) => spec,
            Ok(ServerLaunch::Http(_)) => unreachable!(),
            Err(_) => {
                // Not started: then it had a variable whose value is code, or an unset one.
                return Ok(());
            }
        };
        prop_assert!(
            !spec.env.keys().any(|k| loader_variable(k).is_some_and(|v| v.kind == Kind::Code)),
            "a code variable passed: {a}"
        );
        let hook = server.as_hook().expect("a stdio server is a hook");
        // A start with a server whose places cannot be protected is refused (`hook_errors`).
        let Ok(protected) = hook_protected_paths(&hook, &ws, None) else { return Ok(()) };
        for (name, value) in &spec.env {
            if loader_variable(name).is_none_or(|v| v.kind != Kind::Paths) {
                continue;
            }
            for part in value.split(':') {
                let place = normalize(&ws.join(if part.is_empty() { "." } else { part }));
                prop_assert!(!ws.starts_with(&place), "{name}={value:?} names the workspace and passed: {a}");
                if place.starts_with(&ws) {
                    prop_assert!(
                        protected.iter().any(|p| place.starts_with(p)),
                        "{name}={value:?}: {} is not protected ({protected:?}): {a}",
                        place.display()
                    );
                }
            }
        }
    }

    /// End to end through the rules tools get: for every file a generated server runs under
    /// an interpreter that imports its neighbours, a module planted beside it (or a
    /// bytecode file, or a package) is refused or waits for a person, wherever the script
    /// sits; a server whose neighbours no rule can keep (Node at the root) does not start.
    #[test]
    fn no_module_beside_a_servers_script_is_written_unasked(a in server()) {
        let (_dir, ws) = workspace();
        let c = config(&a, &ws);
        // Without a hook form (a variable whose value is code, an unset one) it never starts.
        let Some(hook) = c.mcp_servers["s"].as_hook() else { return Ok(()) };
        let results = ws.join(".toolhost/results");
        let paths = HostPaths { workspace: &ws, results_dir: &results, cache_dir: None, home: None, protected: &[] };
        let Ok(policy) = shared_policy(&c, &Rules::default(), &paths) else {
            // Refused at load: nothing starts.
            return Ok(());
        };
        let Ok(runs) = analyse_hook_command(hook.command.get_ref(), &ws, None) else { return Ok(()) };
        for (file, loader) in &runs.loaders {
            let planted: &[&str] = match loader {
                Loader::Python => &["json.py", "__pycache__/helper.cpython-311.pyc", "pkg/__init__.py", "x.so"],
                Loader::Node => &["util", "util.js", "package.json", "node_modules/x/index.js"],
                Loader::Lua => &["util.lua", "util/init.lua"],
                _ => continue,
            };
            // Lua looks in its working directory (the workspace), the others beside the script.
            let dir = if *loader == Loader::Lua { ws.as_path() } else { file.parent().expect("a file has a directory") };
            for p in planted {
                let target = dir.join(p);
                prop_assert!(
                    policy.check(&target, FsAccess::Write, &[]).is_err(),
                    "{} can be written unasked, beside {} ({loader:?}): {a}",
                    target.display(),
                    file.display()
                );
            }
        }
    }
}
