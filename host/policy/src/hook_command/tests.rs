use super::*;
use toml::Spanned;

/// A workspace with `hooks/guard.sh`, `hooks/guard.py`, `hook.py` (at the root) and `lib/`.
fn workspace() -> (tempfile::TempDir, PathBuf) {
    workspace_named("ws")
}

fn workspace_named(name: &str) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().canonicalize().unwrap().join(name);
    std::fs::create_dir_all(ws.join("hooks")).unwrap();
    std::fs::create_dir_all(ws.join("lib")).unwrap();
    std::fs::create_dir_all(ws.join("scripts")).unwrap();
    for f in ["hooks/guard.sh", "hooks/guard.py", "hooks/guard.js", "hook.py", "scripts/guard.sh"] {
        std::fs::write(ws.join(f), "").unwrap();
    }
    (dir, ws)
}

const HOME: &str = "/home/u";

fn analyse(command: &str, ws: &Path) -> Result<HookRuns, Unanalysable> {
    analyse_hook_command(command, ws, Some(Path::new(HOME)))
}

#[test]
fn commands_name_the_files_they_run() {
    let (_d, ws) = workspace();
    let w = |p: &str| ws.join(p);
    let h = |p: &str| Path::new(HOME).join(p);
    let cases: Vec<(&str, Vec<PathBuf>)> = vec![
        // As before (pinning.rs's tests).
        ("./scripts/guard.sh --strict", vec![w("scripts/guard.sh")]),
        ("sh \"$CLAUDE_PROJECT_DIR/scripts/guard.sh\"", vec![w("scripts/guard.sh")]),
        ("python3 hook.py && true", vec![w("hook.py")]),
        ("jq -r .tool_name", vec![]),
        ("./hooks/missing.sh", vec![w("hooks/missing.sh")]),
        // Claude Code's documented form: a quoted variable glued to an unquoted path.
        ("\"$CLAUDE_PROJECT_DIR\"/.hooks/guard.sh", vec![w(".hooks/guard.sh")]),
        ("\"${CLAUDE_PROJECT_DIR}\"/hooks/guard.sh", vec![w("hooks/guard.sh")]),
        ("sh \"$TOOLHOST_WORKSPACE\"/hooks/guard.sh", vec![w("hooks/guard.sh")]),
        ("sh \"${TOOLHOST_WORKSPACE}/hooks/guard.sh\"", vec![w("hooks/guard.sh")]),
        ("sh \"my hooks/guard.sh\"", vec![w("my hooks/guard.sh")]),
        ("sh 'my hooks/guard.sh'", vec![w("my hooks/guard.sh")]),
        ("sh my\\ hooks/guard.sh", vec![w("my hooks/guard.sh")]),
        ("sh hooks/guard.sh", vec![w("hooks/guard.sh")]),
        // A script without a `/` is still run from the working directory.
        ("sh guard.sh", vec![w("guard.sh")]),
        ("bash -e -o pipefail hooks/guard.sh", vec![w("hooks/guard.sh")]),
        ("python3 -u hooks/guard.py --strict", vec![w("hooks/guard.py")]),
        ("python3 -W ignore hooks/guard.py", vec![w("hooks/guard.py")]),
        ("~/x.sh", vec![h("x.sh")]),
        ("sh ~/hooks/x.sh", vec![h("hooks/x.sh")]),
        ("sh \"$HOME/hooks/x.sh\"", vec![h("hooks/x.sh")]),
        ("${CLAUDE_PROJECT_DIR}/hooks/x", vec![w("hooks/x")]),
        ("FOO=1 sh hooks/guard.sh", vec![w("hooks/guard.sh")]),
        ("env sh hooks/guard.sh", vec![w("hooks/guard.sh")]),
        ("env -i FOO=1 sh hooks/guard.sh", vec![w("hooks/guard.sh")]),
        ("exec sh hooks/guard.sh", vec![w("hooks/guard.sh")]),
        ("timeout 5 sh hooks/guard.sh", vec![w("hooks/guard.sh")]),
        ("nice -n 5 ./hooks/guard.sh", vec![w("hooks/guard.sh")]),
        ("! sh hooks/guard.sh", vec![w("hooks/guard.sh")]),
        ("sh < hooks/guard.sh", vec![w("hooks/guard.sh")]),
        // Operators glued to words, redirections.
        ("sh hooks/guard.sh;true", vec![w("hooks/guard.sh")]),
        ("true&&sh hooks/guard.sh||exit 2", vec![w("hooks/guard.sh")]),
        ("sh hooks/guard.sh 2>&1 | tee /dev/null", vec![w("hooks/guard.sh"), PathBuf::from("/dev/null")]),
        ("sh hooks/guard.sh >&2", vec![w("hooks/guard.sh")]),
        ("sh hooks/guard.sh > out.log 2>> err.log", vec![w("hooks/guard.sh")]),
        ("sh hooks/guard.sh\nsh scripts/guard.sh &", vec![w("hooks/guard.sh"), w("scripts/guard.sh")]),
        ("sh hooks/guard.sh # runs hooks/other.sh", vec![w("hooks/guard.sh")]),
        // Commands without files.
        ("cat > /dev/null; echo x >&2; exit 2", vec![]),
        ("touch pwned", vec![]),
        ("true", vec![]),
        ("echo \"exit $?\" >&2", vec![]),
        ("jq -e '.tool_input.file_path | test(\"lock$\")'", vec![]),
        ("node hooks/guard.js", vec![w("hooks/guard.js")]),
        ("deno run hooks/guard.js", vec![w("hooks/guard.js")]),
        ("perl hooks/guard.pl", vec![w("hooks/guard.pl")]),
        ("jq -f hooks/filter.jq", vec![w("hooks/filter.jq")]),
        ("tool --config=hooks/conf.toml", vec![w("hooks/conf.toml")]),
    ];
    for (command, want) in cases {
        let runs = analyse(command, &ws).unwrap_or_else(|e| panic!("{command}: {e}"));
        assert_eq!(runs.files, want, "{command}");
    }
}

#[test]
fn directories_loaded_from_are_named() {
    let (_d, ws) = workspace();
    assert_eq!(analyse("PYTHONPATH=lib python3 hooks/guard.py", &ws).unwrap().dirs, [ws.join("lib")]);
    assert_eq!(analyse("perl -Ilib hooks/guard.pl", &ws).unwrap().dirs, [ws.join("lib")]);
    assert_eq!(analyse("python3 hooks/", &ws).unwrap().dirs, [ws.join("hooks")]);
    let node = analyse("node hooks/guard.js", &ws).unwrap().dirs;
    assert!(node.contains(&ws.join("hooks/node_modules")) && node.contains(&ws.join("node_modules")), "{node:?}");
    // The workspace itself is where every hook runs.
    assert_eq!(analyse("git -C \"$CLAUDE_PROJECT_DIR\" diff --quiet", &ws).unwrap(), HookRuns::default());
}

#[test]
fn commands_that_cannot_be_analysed_say_why() {
    let (_d, ws) = workspace();
    use Unanalysable as U;
    let nested = |p: &str, f: &str| U::Nested { program: p.into(), flag: f.into() };
    let cases: Vec<(&str, Unanalysable)> = vec![
        ("cd hooks && sh guard.sh", U::ChangesDirectory("cd".into())),
        ("pushd hooks; sh guard.sh", U::ChangesDirectory("pushd".into())),
        ("env -C hooks sh guard.sh", U::ChangesDirectory("env -C".into())),
        ("python3 -m guard", U::Module("python3".into())),
        ("python3 -um guard", U::Module("python3".into())),
        ("source hooks/lib.sh", U::Source("source".into())),
        (". hooks/lib.sh", U::Source(".".into())),
        ("eval \"sh hooks/guard.sh\"", U::Eval("eval".into())),
        ("env -S 'sh hooks/guard.sh'", U::Eval("env -S".into())),
        ("sh -c 'sh guard.sh'", nested("sh", "-c")),
        ("bash -ec 'x'", nested("bash", "-c")),
        ("exec bash -c x", nested("bash", "-c")),
        ("python3 -c 'import guard'", nested("python3", "-c")),
        ("node -e 'require(\"./x\")'", nested("node", "-e")),
        ("perl -ne 'print'", nested("perl", "-e")),
        (
            "node -r ./hooks/x.js -r dotenv hooks/guard.js",
            U::Package { program: "node".into(), package: "dotenv".into() },
        ),
        ("sh $(cat hooks/which)", U::CommandSubstitution("$(…)")),
        ("sh \"$(cat hooks/which)\"", U::CommandSubstitution("$(…)")),
        ("sh `cat hooks/which`", U::CommandSubstitution("`…`")),
        ("diff <(sort a) b", U::CommandSubstitution("<(…)")),
        ("(sh hooks/guard.sh)", U::Subshell),
        ("{ sh hooks/guard.sh; }", U::Group),
        ("sh $SCRIPT", U::Variable("$SCRIPT".into())),
        ("sh \"${SCRIPT}\"", U::Variable("$SCRIPT".into())),
        ("sh ${CLAUDE_PROJECT_DIR:-.}/x.sh", U::Variable("${CLAUDE_PROJECT_DIR:-.}".into())),
        ("sh \"$1\"", U::Variable("$1".into())),
        ("sh ~other/x.sh", U::Variable("~other/x.sh".into())),
        ("if true; then sh hooks/guard.sh; fi", U::Control("if".into())),
        ("for f in hooks/a.sh; do true; done", U::Control("for".into())),
        ("while true; do :; done", U::Control("while".into())),
        ("until false; do :; done", U::Control("until".into())),
        ("make check", U::Runner("make".into())),
        ("npm test", U::Runner("npm".into())),
        ("npx eslint .", U::Runner("npx".into())),
        ("cargo test", U::Runner("cargo".into())),
        ("pytest -q", U::Runner("pytest".into())),
        ("/usr/bin/make -s", U::Runner("make".into())),
        ("deno task check", U::Runner("deno".into())),
        ("bun run lint", U::Runner("bun".into())),
        ("python3", U::NoScript("python3".into())),
        ("cat hooks/g.sh | sh", U::NoScript("sh".into())),
        ("node", U::NoScript("node".into())),
        ("ls | xargs sh", U::FromInput("xargs".into())),
        ("find hooks -name '*.sh' -exec sh {} \\;", U::FromInput("find -exec".into())),
        ("PATH=hooks:/usr/bin guard", U::SetsPath),
        ("export PATH=bin; guard", U::SetsPath),
        ("sh hooks/*.sh", U::Pattern("hooks/*.sh".into())),
        ("cat <<EOF\nx\nEOF", U::HereDocument),
        ("sh 'hooks/guard.sh", U::Unterminated),
        ("sh hooks/guard.sh >", U::Redirection),
        ("f() { sh x; }; f", U::Subshell),
    ];
    for (command, want) in cases {
        assert_eq!(analyse(command, &ws).map(|r| r.files), Err(want), "{command}");
    }
    // An unquoted expansion of a path with a blank would be split by the shell; quoted, it is not.
    let (_d, spaced) = workspace_named("my ws");
    assert!(matches!(analyse("sh $CLAUDE_PROJECT_DIR/hooks/guard.sh", &spaced), Err(U::Split { .. })));
    let quoted = analyse("\"$CLAUDE_PROJECT_DIR\"/hooks/guard.sh", &spaced).unwrap();
    assert_eq!(quoted.files, [spaced.join("hooks/guard.sh")]);
    assert_eq!(analyse_hook_command("sh ~/x.sh", &ws, None), Err(U::NoHome));
}

fn hook(command: &str, files: Option<&[&str]>) -> HookConfig {
    HookConfig {
        matcher: None,
        command: Spanned::new(0..0, command.to_string()),
        files: files.map(|f| f.iter().map(|p| Spanned::new(0..0, PathBuf::from(p))).collect()),
        timeout_ms: None,
        origin: None,
        condition: None,
        refuses: None,
    }
}

#[test]
fn the_directory_of_each_file_run_is_protected() {
    let (_d, ws) = workspace();
    let home = Some(Path::new(HOME));
    let protect = |c: &str| hook_protected_paths(&hook(c, None), &ws, home);
    assert_eq!(protect("\"$CLAUDE_PROJECT_DIR\"/hooks/guard.sh").unwrap(), [ws.join("hooks")]);
    assert_eq!(protect("sh \"my hooks/guard.sh\"").unwrap(), [ws.join("my hooks")]);
    assert_eq!(protect("sh /opt/hooks/guard.sh").unwrap(), [PathBuf::from("/opt/hooks")]);
    assert_eq!(protect("true").unwrap(), Vec::<PathBuf>::new());

    // A script at the root: the script itself, and what its interpreter loads beside it by
    // pattern, wherever a link could lead.
    let at_root = hook_protection(&hook("python3 hook.py", None), &ws, home).unwrap();
    assert_eq!(at_root.paths, [ws.join("hook.py")]);
    let patterns: Vec<_> = at_root.ask.iter().map(|a| a.pattern.as_str()).collect();
    assert_eq!(patterns, ["//**/*.py", "//**/*.pyc", "//**/*.so"]);
    assert!(at_root.ask[0].why.contains("code hook.py loads from beside it"), "{:?}", at_root.ask);
    // A shell script loads nothing beside it on its own: the file alone.
    let shell = hook_protection(&hook("sh guard.sh", None), &ws, home).unwrap();
    assert_eq!((shell.paths, shell.ask), (vec![ws.join("guard.sh")], vec![]));
    assert_eq!(protect("sh ../guard.sh").unwrap(), [normalize(&ws.join("../guard.sh"))]);
    // A file an argument names at the root is read, not imported from: the file alone.
    assert_eq!(protect("sh hooks/guard.sh hook.py").unwrap(), [ws.join("hooks"), ws.join("hook.py")]);
    // Node loads `./name` with no extension before `name.js`: no pattern bounds it, so a
    // script at the root is refused, with the ways out.
    std::fs::write(ws.join("server.js"), "").unwrap();
    for command in ["node server.js", "./server.js", "bun run ./server.js"] {
        if command == "./server.js" {
            std::fs::write(ws.join("server.js"), "#!/usr/bin/env node\n").unwrap();
        }
        let err = protect(command).unwrap_err();
        assert!(matches!(err, HookError::AtWorkspaceRoot { .. }), "{command}: {err}");
        let shown = err.to_string();
        assert!(shown.starts_with(&format!("hook [{command}] runs ")), "{shown}");
        assert!(shown.contains("with no extension") && shown.contains("hooks/server.js"), "{shown}");
        assert!(shown.contains("files = [\"server.js\"]") && shown.contains("absolute path outside"), "{shown}");
    }
    // Home above the workspace: the file alone for a shell script.
    let inside_home = hook_protected_paths(&hook("sh ~/x.sh", None), &ws, ws.parent()).unwrap();
    assert_eq!(inside_home, [ws.parent().unwrap().join("x.sh")]);
}

/// What an interpreter loads from its working directory (the workspace) wherever its script
/// is, and the `package.json` files above a Node script (`"imports"`, and `"name"` with
/// `"exports"`, are looked up before `node_modules`), are asked before writing.
#[test]
fn what_an_interpreter_loads_from_the_workspace_is_asked_for() {
    let (_d, ws) = workspace();
    let ask = |c: &str| -> Vec<String> {
        hook_protection(&hook(c, None), &ws, None).unwrap().ask.into_iter().map(|a| a.pattern).collect()
    };
    assert_eq!(ask("lua hooks/guard.lua"), ["//**/*.lua", "//**/*.so"]);
    assert_eq!(ask("Rscript hooks/guard.R"), ["/.Rprofile", "/.Renviron"]);
    assert!(ask("bun run hooks/guard.ts").contains(&"/bunfig.toml".to_string()));
    let node = ask("node hooks/guard.js");
    let root_package = super::loaders::literal_pattern(&ws.join("package.json"));
    assert!(node.contains(&root_package), "{node:?}");
    assert!(node.contains(&"//package.json".to_string()), "{node:?}");
    // Node reads no further than the nearest package.json.
    std::fs::write(ws.join("hooks/package.json"), "{}").unwrap();
    let node = ask("node hooks/guard.js");
    assert_eq!(node, [super::loaders::literal_pattern(&ws.join("hooks/package.json"))]);
    assert_eq!(ask("python3 hooks/guard.py"), Vec::<String>::new());
    assert_eq!(ask("sh hooks/guard.sh"), Vec::<String>::new());
}

#[test]
fn a_linked_script_protects_its_real_directory_too() {
    let (_d, ws) = workspace();
    let out = tempfile::tempdir().unwrap();
    let real = out.path().canonicalize().unwrap();
    std::fs::write(real.join("guard.sh"), "").unwrap();
    std::os::unix::fs::symlink(real.join("guard.sh"), ws.join("hooks/linked.sh")).unwrap();
    let got = hook_protected_paths(&hook("sh hooks/linked.sh", None), &ws, None).unwrap();
    assert_eq!(got, [ws.join("hooks"), real.clone()]);
    // A link to a file at the root is a file at the root: both ends protected, and what
    // Python imports beside it asked for by pattern.
    std::fs::write(ws.join("hook.py"), "").unwrap();
    std::os::unix::fs::symlink(ws.join("hook.py"), ws.join("hooks/root.py")).unwrap();
    let got = hook_protection(&hook("python3 hooks/root.py", None), &ws, None).unwrap();
    assert_eq!(got.paths, [ws.join("hooks/root.py"), ws.join("hook.py")]);
    assert!(got.ask.iter().any(|a| a.pattern == "//**/*.py"), "{:?}", got.ask);
    let node = std::fs::write(ws.join("hook.js"), "")
        .and_then(|()| std::os::unix::fs::symlink(ws.join("hook.js"), ws.join("hooks/root.js")));
    node.unwrap();
    let err = hook_protected_paths(&hook("node hooks/root.js", None), &ws, None).unwrap_err();
    assert!(matches!(err, HookError::AtWorkspaceRoot { .. }), "{err}");
}

/// A program in a virtual environment of the workspace loads its `site-packages` (and every
/// `.pth` there), a package's program its `node_modules`: those trees are protected whole,
/// found by the program's path or by a script's `#!` line.
#[test]
fn a_virtual_environment_or_node_modules_a_program_runs_from_is_protected_whole() {
    let (_d, ws) = workspace();
    std::fs::create_dir_all(ws.join(".venv/bin")).unwrap();
    std::fs::create_dir_all(ws.join(".venv/lib/python3.11/site-packages")).unwrap();
    std::fs::write(ws.join(".venv/pyvenv.cfg"), "home = /usr/bin\n").unwrap();
    std::fs::write(ws.join(".venv/bin/python"), "").unwrap();
    std::fs::write(ws.join("hooks/run.py"), format!("#!{}/.venv/bin/python\nimport sys\n", ws.display())).unwrap();
    std::fs::create_dir_all(ws.join("tools/node_modules/.bin")).unwrap();
    std::fs::create_dir_all(ws.join("tools/node_modules/srv/bin")).unwrap();
    std::fs::write(ws.join("tools/node_modules/srv/bin/srv.js"), "").unwrap();
    let protect = |c: &str| hook_protected_paths(&hook(c, None), &ws, None).unwrap();
    for command in
        [".venv/bin/python hooks/guard.py", "\"$CLAUDE_PROJECT_DIR\"/.venv/bin/python /opt/x.py", "./hooks/run.py"]
    {
        let got = protect(command);
        assert!(got.contains(&ws.join(".venv")), "{command}: {got:?}");
    }
    let got = protect("node tools/node_modules/srv/bin/srv.js");
    assert!(got.contains(&ws.join("tools/node_modules")), "{got:?}");
    // A FIFO where a script should be is not read (the start would wait for a writer).
    assert!(std::process::Command::new("mkfifo").arg(ws.join("hooks/fifo.sh")).status().unwrap().success());
    assert_eq!(protect("sh hooks/fifo.sh"), [ws.join("hooks")]);
    // A plain interpreter outside the workspace brings nothing more.
    assert_eq!(protect("python3 hooks/guard.py"), [ws.join("hooks")]);
}

#[test]
fn unanalysable_errors_name_the_ways_out() {
    let (_d, ws) = workspace();
    let err = hook_protected_paths(&hook("cd hooks && sh guard.sh", None), &ws, None).unwrap_err();
    assert_eq!(
        err.to_string(),
        "hook [cd hooks && sh guard.sh] cannot be analysed: `cd` changes what relative paths name; toolhost cannot \
         tell which files it runs, so a tool could rewrite them. Either run a script by an absolute path outside the \
         workspace, or list the files it runs: files = [\"hooks/guard.sh\"]"
    );
    let err = hook_protected_paths(&hook("python3 -m hooks.guard", None), &ws, None).unwrap_err();
    assert!(err.to_string().ends_with("files = [\"hooks/guard.py\"]"), "{err}");
    let err = hook_protected_paths(&hook("make check", None), &ws, None).unwrap_err();
    assert!(err.to_string().ends_with("files = [\"path/to/script\", …]"), "{err}");
}

#[test]
fn files_are_protected_exactly_and_need_no_analysis() {
    let (_d, ws) = workspace();
    let listed = |c: &str, f: &[&str]| hook_protected_paths(&hook(c, Some(f)), &ws, None);
    assert_eq!(listed("cd hooks && sh guard.sh", &["hooks/guard.sh"]).unwrap(), [ws.join("hooks/guard.sh")]);
    assert_eq!(listed("make check", &["Makefile", "/opt/x"]).unwrap(), [ws.join("Makefile"), PathBuf::from("/opt/x")]);
    assert_eq!(listed("python3 hook.py", &["hook.py"]).unwrap(), [ws.join("hook.py")]);
    assert_eq!(listed("true", &[]).unwrap(), Vec::<PathBuf>::new());
    for too_wide in [".", "", "..", "hooks/..", "/"] {
        let err = listed("make", &["a", too_wide]).unwrap_err();
        assert!(matches!(err, HookError::ListedTooWide { index: 1, .. }), "{too_wide}: {err}");
    }
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig { cases: 2000, ..Default::default() })]

    /// Whatever the text (a config may come with a cloned repository), the analysis answers:
    /// files, or a reason; it never panics.
    #[test]
    fn any_command_is_analysed_or_refused(command in "[a-z $\"'`\\\\/.~*?\\[\\]{}()<>&|;#=\n0-9-]{0,40}") {
        let _ = analyse_hook_command(&command, Path::new("/nonexistent-ws"), Some(Path::new("/nonexistent-home")));
    }
}

/// A bare program name runs what `PATH` finds: an activated workspace virtualenv's `python3`
/// is that environment's (protected whole with it), a `PATH` entry inside the workspace before
/// the one that holds the program is where a tool could plant one first (protected), and an
/// entry that is the workspace itself (`.`, empty) is refused.
#[test]
fn a_bare_program_is_what_path_finds() {
    use Unanalysable as U;
    let on = |path: &str| vec![("PATH".to_string(), path.to_string())];
    let (_d, ws) = workspace();
    std::fs::create_dir_all(ws.join(".venv/bin")).unwrap();
    std::fs::write(ws.join(".venv/pyvenv.cfg"), "home = /usr/bin\n").unwrap();
    std::fs::write(ws.join(".venv/bin/python3"), "").unwrap();
    std::fs::create_dir_all(ws.join("tools/bin")).unwrap();
    let venv_path = format!("{}:/usr/bin", ws.join(".venv/bin").display());
    let runs = analyse_in("python3 hooks/guard.py", &ws, None, &on(&venv_path)).unwrap();
    assert!(runs.files.contains(&ws.join(".venv/bin/python3")), "{runs:?}");
    assert!(runs.dirs.contains(&ws.join(".venv")), "{runs:?}");
    // Before /usr/bin: where a tool would put `sh` first.
    let early = format!("{}:/usr/bin:/bin", ws.join("tools/bin").display());
    let runs = analyse_in("sh hooks/guard.sh", &ws, None, &on(&early)).unwrap();
    assert!(runs.dirs.contains(&ws.join("tools/bin")), "{runs:?}");
    // After the entry that holds it: not looked at.
    let late = format!("/usr/bin:/bin:{}", ws.join("tools/bin").display());
    let runs = analyse_in("sh hooks/guard.sh", &ws, None, &on(&late)).unwrap();
    assert!(!runs.dirs.contains(&ws.join("tools/bin")), "{runs:?}");
    for bad in [".:/usr/bin", ":/usr/bin", "/usr/local/nothing::/usr/bin"] {
        let got = analyse_in("sh hooks/guard.sh", &ws, None, &on(bad));
        assert!(matches!(got, Err(U::PathInWorkspace(_))), "{bad}: {got:?}");
    }
    // A builtin is not looked up.
    assert!(analyse_in("echo hi", &ws, None, &on(".:/usr/bin")).is_ok());
}

/// What a hook inherits from toolhost's environment counts as much as what its command sets:
/// a `PYTHONPATH` into the workspace is protected (or refused when it is the workspace
/// itself), a `NODE_OPTIONS` that requires a workspace file or a package found from the
/// working directory is refused, and harmless values pass.
#[test]
fn inherited_variables_that_load_code_from_the_workspace_are_followed() {
    use Unanalysable as U;
    let (_d, ws) = workspace();
    let with = |name: &str, value: &str| {
        let env = vec![("PATH".to_string(), "/usr/bin:/bin".to_string()), (name.to_string(), value.to_string())];
        analyse_in("python3 hooks/guard.py", &ws, None, &env)
    };
    let runs = with("PYTHONPATH", &format!("{}:/opt/lib", ws.join("lib").display())).unwrap();
    assert!(runs.dirs.contains(&ws.join("lib")), "{runs:?}");
    for workspace_itself in [".", "", &ws.display().to_string(), "/opt/lib:"] {
        let got = with("PYTHONPATH", workspace_itself);
        assert!(matches!(got, Err(U::InheritedFromWorkspace { .. })), "{workspace_itself:?}: {got:?}");
    }
    // Above the workspace is the person's own (their home holds it).
    assert!(with("HOME", &ws.parent().unwrap().display().to_string()).is_ok());
    // A library search path with an empty entry searches the working directory.
    assert!(matches!(with("LD_LIBRARY_PATH", "/usr/local/lib:"), Err(U::InheritedFromWorkspace { .. })));
    assert!(with("LD_LIBRARY_PATH", "/usr/local/lib").is_ok());
    // toolhost's own settings and what npm set when it started toolhost are not followed.
    assert!(with("TOOLHOST_STATE_DIR", &ws.display().to_string()).is_ok());
    assert!(with("npm_config_local_prefix", &ws.display().to_string()).is_ok());
    for code in ["--require ./hooks/x.js", "-r dotenv/config", "--import=tsx", &format!("{}/x.so", ws.display())] {
        let name = if code.ends_with(".so") { "LD_PRELOAD" } else { "NODE_OPTIONS" };
        let got = with(name, code);
        assert!(matches!(got, Err(U::InheritedFromWorkspace { .. })), "{name}={code}: {got:?}");
    }
    for harmless in ["--max-old-space-size=4096", "--enable-source-maps", "/usr/lib/x86_64-linux-gnu/libfoo.so"] {
        let name = if harmless.ends_with(".so") { "LD_PRELOAD" } else { "NODE_OPTIONS" };
        assert!(with(name, harmless).is_ok(), "{name}={harmless}");
    }
}
