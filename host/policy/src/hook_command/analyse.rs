//! How each simple command of a hook runs files: its program, the interpreters and their
//! options, the prefixes looked through, and what cannot be followed.

use super::lex::{Redirect, Token, Word};
use super::{HookRuns, Loader, Reason};
use crate::normalize;
use std::path::{Path, PathBuf};

/// One simple command: its words, and the files its redirections read.
#[derive(Debug, Default)]
pub(super) struct Simple {
    pub(super) words: Vec<Word>,
    pub(super) inputs: Vec<Word>,
}

/// The simple commands of a token list (pipelines and lists are cut at their operators:
/// every command of them runs).
pub(super) fn simple_commands(tokens: Vec<Token>) -> Result<Vec<Simple>, Reason> {
    let mut out = vec![Simple::default()];
    let mut tokens = tokens.into_iter();
    while let Some(t) = tokens.next() {
        let current = out.last_mut().expect("never empty");
        match t {
            Token::Word(w) => current.words.push(w),
            Token::Separator | Token::Pipe => out.push(Simple::default()),
            Token::Redirect(kind) => {
                let Some(Token::Word(target)) = tokens.next() else { return Err(Reason::Redirection) };
                // What a command writes is not what it runs; a descriptor is no file.
                if kind == Redirect::Input {
                    current.inputs.push(target);
                }
            }
        }
    }
    out.retain(|c| !c.words.is_empty() || !c.inputs.is_empty());
    Ok(out)
}

/// Shell builtins: `sh` runs them without looking at `PATH`.
const BUILTINS: &[&str] = &[
    ":", "true", "false", "echo", "printf", "test", "[", "exit", "return", "set", "unset", "shift", "read", "exec",
    "command", "export", "declare", "typeset", "local", "readonly", "cd", "pushd", "popd", "source", ".", "eval",
    "trap", "alias", "type", "wait", "kill", "umask", "ulimit", "times", "getopts", "hash", "let", "break", "continue",
];

/// Reserved words that start compound commands (`!` is handled as a prefix).
const CONTROL: &[&str] =
    &["if", "then", "else", "elif", "fi", "for", "while", "until", "do", "done", "case", "esac", "select", "function"];

/// Programs that run what their working directory holds: build files, package scripts,
/// test suites, configs written in a programming language. A hook runs in the workspace,
/// which tools write.
const RUNNERS: &str = "make gmake bmake just rake ant gradle gradlew mvn mvnw sbt cargo go dotnet \
    npm npx yarn pnpm pnpx bunx corepack jest vitest mocha eslint prettier tsc webpack vite \
    pytest py.test tox nox poetry pipenv uv uvx pipx hatch pdm pre-commit lefthook husky \
    composer bundle bundler task invoke mise direnv nix devbox";

/// Shells: `-c` runs a string, a script is the first operand.
const SHELLS: &[&str] = &["sh", "bash", "dash", "zsh", "ksh", "mksh", "ash", "yash", "posh", "fish"];

/// Programs that run the rest of their words as a command, and their options that take a
/// value in the next word.
const WRAPPERS: &[(&str, &[&str])] = &[
    ("exec", &["-a"]),
    ("command", &[]),
    ("builtin", &[]),
    ("nohup", &[]),
    ("time", &["-f", "-o"]),
    ("nice", &["-n"]),
    ("ionice", &["-c", "-n"]),
    ("setsid", &[]),
    ("stdbuf", &["-i", "-o", "-e"]),
    ("timeout", &["-s", "-k", "--signal", "--kill-after"]),
    ("sudo", &["-u", "-g", "-h", "-p", "-U", "-C"]),
    ("doas", &["-u", "-C"]),
    ("unbuffer", &[]),
    ("chronic", &[]),
];

/// Interpreters other than shells, Python and Node, with the flag letters that run a string.
const INTERPRETERS: &[(&str, &str)] =
    &[("perl", "eE"), ("ruby", "e"), ("php", "r"), ("lua", "e"), ("luajit", "e"), ("Rscript", "e"), ("tclsh", "")];

pub(super) struct Analysis<'a> {
    pub(super) workspace: &'a Path,
    pub(super) runs: HookRuns,
    /// The `PATH` programs named without a `/` are looked up on.
    pub(super) path: Option<&'a std::ffi::OsStr>,
}

impl Analysis<'_> {
    fn resolve(&self, text: &str) -> PathBuf {
        normalize(&self.workspace.join(text))
    }

    /// A word the command may run or read: a path when it holds a `/`, a file when it names
    /// one; an option's value (`--config=hooks/x.toml`) likewise.
    fn word(&mut self, text: &str) {
        let text = if text.starts_with('-') {
            match text.split_once('=') {
                Some((_, value)) => value,
                None => return,
            }
        } else {
            text
        };
        if text.is_empty() {
            return;
        }
        let path = self.resolve(text);
        if text.contains('/') {
            self.path(path, text.ends_with('/'));
        } else if path.is_file() {
            self.runs.files.push(path);
        }
    }

    /// A path the command runs or loads from, existing or not (a tool must not create it).
    /// The workspace itself is where every hook runs, no file of it.
    fn path(&mut self, path: PathBuf, dir: bool) {
        if path == self.workspace {
            return;
        }
        if dir || path.is_dir() { self.runs.dirs.push(path) } else { self.runs.files.push(path) }
    }

    /// A program named without a `/` is looked up on `PATH`, the one hooks and servers inherit
    /// from this process (a command that sets `PATH` is refused): every entry inside the
    /// workspace up to the one that holds it is where a tool could put a program of that name
    /// first, and is loaded from (a workspace virtualenv's `bin`, activated, is protected with
    /// the whole environment); the file found there runs.
    fn on_path(&mut self, name: &str) -> Result<(), Reason> {
        let Some(path) = self.path else { return Ok(()) };
        for entry in std::env::split_paths(path) {
            let dir = normalize(&self.workspace.join(&entry));
            if dir == self.workspace {
                return Err(Reason::PathInWorkspace(entry.display().to_string()));
            }
            let found = dir.join(name);
            let is_file = found.is_file();
            if dir.starts_with(self.workspace) {
                self.runs.dirs.push(dir);
                if is_file {
                    self.runs.files.push(found);
                }
            }
            if is_file {
                return Ok(());
            }
        }
        Ok(())
    }

    /// The variables a hook or server inherits from toolhost's environment that decide what
    /// code its programs load ([`crate::launch::loader_variable`]; `PATH` is followed by
    /// [`Analysis::on_path`]). A list of places: each inside the workspace is loaded from
    /// (protected), one that is the workspace itself (`.`, an empty entry) refuses; a place
    /// above the workspace is the person's own (`HOME`). A value that is code or options: it
    /// refuses when it names a path inside the workspace, or a package looked up from the
    /// working directory (`--require x`), and passes otherwise (`--max-old-space-size=4096`).
    pub(super) fn inherited(&mut self, env: &[(String, String)]) -> Result<(), Reason> {
        for (name, value) in env {
            let Some(known) = crate::launch::loader_variable(name) else { continue };
            // `PATH` is followed program by program; toolhost's own settings are the person's
            // (a toolhost a hook starts is cut at depth 1); npm's are what npm set when it
            // started toolhost, read only by an npm a hook runs (a hook that runs npm is
            // refused: it runs what the workspace holds).
            let upper = name.to_ascii_uppercase();
            if name == "PATH" || upper.starts_with("TOOLHOST_") || upper.starts_with("NPM_CONFIG_") {
                continue;
            }
            let refused = || Reason::InheritedFromWorkspace { name: name.clone(), read_by: known.read_by };
            // A search path among the code-valued ones (`LD_LIBRARY_PATH`) is a list of places,
            // where an empty entry is the working directory.
            let places = known.kind == crate::launch::Kind::Paths || upper.ends_with("PATH");
            if places {
                for part in value.split(':') {
                    let place = self.resolve(if part.is_empty() { "." } else { part });
                    if place == self.workspace {
                        return Err(refused());
                    }
                    if place.starts_with(self.workspace) {
                        if place.is_file() { self.runs.files.push(place) } else { self.runs.dirs.push(place) }
                    }
                }
                continue;
            }
            let mut words = value.split(|c: char| c.is_whitespace() || c == ':' || c == '=' || c == ',');
            while let Some(word) = words.next() {
                let loads_package =
                    matches!(word, "-r" | "--require" | "--import" | "--loader" | "--experimental-loader");
                let named = if loads_package { words.next().unwrap_or_default() } else { word };
                let path_like = named.contains('/') || named.starts_with('.');
                if (loads_package && !named.is_empty() && !path_like)
                    || (path_like && self.resolve(named).starts_with(self.workspace))
                {
                    return Err(refused());
                }
            }
        }
        Ok(())
    }

    /// A script an interpreter runs: a path relative to the working directory even without a
    /// `/` (`sh guard.sh` runs `./guard.sh`), and even when it is not there yet.
    fn script(&mut self, text: &str) {
        let path = self.resolve(text);
        self.path(path, text.ends_with('/'));
    }

    /// `NAME=value` (before a program, or after `export`). A variable that decides what code
    /// a program loads ([`crate::launch::loader_variable`]): one whose value is code or a
    /// command is refused, and every `:`-separated place of one that lists places is loaded
    /// from (an empty one is the working directory, the workspace: refused). Any other
    /// variable: each part that is a path or names a file or directory is loaded from, to be
    /// safe (`DATA=lib/x`).
    fn assignment(&mut self, word: &Word) -> Result<(), Reason> {
        let (name, value) = word.text.split_once('=').unwrap_or((&word.text, ""));
        if name == "PATH" {
            return Err(Reason::SetsPath);
        }
        if let Some(known) = crate::launch::loader_variable(name) {
            if known.kind == crate::launch::Kind::Code {
                return Err(Reason::CodeVariable { name: name.to_string(), read_by: known.read_by });
            }
            for part in value.split(':') {
                let path = self.resolve(if part.is_empty() { "." } else { part });
                if self.workspace.starts_with(&path) {
                    return Err(Reason::LoadsFromWorkspace { name: name.to_string(), read_by: known.read_by });
                }
                if path.is_dir() || !path.exists() && !has_script_extension(part) {
                    self.runs.dirs.push(path);
                } else {
                    self.runs.files.push(path);
                }
            }
            return Ok(());
        }
        for part in value.split(':').filter(|p| !p.is_empty()) {
            if part.contains('/') || self.resolve(part).exists() {
                self.script(part);
            }
        }
        Ok(())
    }

    pub(super) fn simple(&mut self, command: &Simple) -> Result<(), Reason> {
        for input in &command.inputs {
            self.script(&input.text);
        }
        let reads_stdin_file = !command.inputs.is_empty();
        let mut words = &command.words[..];
        while let Some((w, rest)) = words.split_first()
            && w.assignment
        {
            self.assignment(w)?;
            words = rest;
        }
        loop {
            let Some((program, args)) = words.split_first() else { return Ok(()) };
            let text = program.text.as_str();
            if program.bare && CONTROL.contains(&text) {
                return Err(Reason::Control(text.to_string()));
            }
            if program.bare && (text == "{" || text == "}") {
                return Err(Reason::Group);
            }
            if program.bare && text == "!" {
                words = args;
                continue;
            }
            if text.contains('/') {
                self.script(text);
                // What its `#!` line names, if anything, is read later.
                let path = self.resolve(text);
                self.runs.loaders.push((path, Loader::Program));
            } else if !(program.bare && BUILTINS.contains(&text)) {
                self.on_path(text)?;
            }
            let name = text.rsplit('/').next().unwrap_or(text);
            match name {
                "cd" | "pushd" | "popd" => return Err(Reason::ChangesDirectory(name.to_string())),
                "source" | "." => return Err(Reason::Source(name.to_string())),
                "eval" | "trap" | "alias" => return Err(Reason::Eval(name.to_string())),
                "xargs" | "parallel" | "watch" => return Err(Reason::FromInput(name.to_string())),
                "find" if args.iter().any(|a| a.text.starts_with("-exec") || a.text.starts_with("-ok")) => {
                    return Err(Reason::FromInput("find -exec".to_string()));
                }
                "export" | "declare" | "typeset" | "local" | "readonly" => {
                    for a in args {
                        if a.text.contains('=') && !a.text.starts_with('-') {
                            self.assignment(a)?;
                        }
                    }
                    return Ok(());
                }
                "env" => {
                    words = self.env(args)?;
                    continue;
                }
                _ => {}
            }
            if let Some((_, with_value)) = WRAPPERS.iter().find(|(w, _)| *w == name) {
                if name == "command" && args.first().is_some_and(|a| a.text == "-v" || a.text == "-V") {
                    return Ok(());
                }
                let mut rest = skip_options(args, with_value);
                if name == "timeout" {
                    rest = rest.get(1..).unwrap_or_default();
                }
                words = rest;
                continue;
            }
            if SHELLS.contains(&name) {
                return self.shell(name, args, reads_stdin_file);
            }
            if is_python(name) {
                return self.python(name, args, reads_stdin_file);
            }
            if matches!(name, "node" | "nodejs" | "ts-node" | "tsx") {
                return self.node(name, args, reads_stdin_file);
            }
            if name == "deno" || name == "bun" {
                let args = match args.first() {
                    Some(a) if a.text == "run" => &args[1..],
                    _ if name == "deno" => return Err(Reason::Runner(name.to_string())),
                    _ => args,
                };
                // `bun run NAME` runs a package script unless NAME is a file.
                let script = args.iter().find(|a| !a.text.starts_with('-'));
                if name == "bun" && !script.is_some_and(|s| s.text.contains('/') || has_script_extension(&s.text)) {
                    return Err(Reason::Runner(name.to_string()));
                }
                return self.node(name, args, reads_stdin_file);
            }
            if let Some((_, eval)) = INTERPRETERS.iter().find(|(i, _)| *i == name) {
                return self.interpreter(name, eval, args, reads_stdin_file);
            }
            if RUNNERS.split_whitespace().any(|r| r == name) {
                return Err(Reason::Runner(name.to_string()));
            }
            for a in args {
                self.word(&a.text);
            }
            return Ok(());
        }
    }

    /// `env [OPTION…] [NAME=VALUE…]`: the words of the command it runs.
    fn env<'w>(&mut self, args: &'w [Word]) -> Result<&'w [Word], Reason> {
        let mut i = 0;
        while let Some(a) = args.get(i) {
            let t = a.text.as_str();
            match t {
                "-C" | "--chdir" => return Err(Reason::ChangesDirectory("env -C".into())),
                "-S" | "--split-string" => return Err(Reason::Eval("env -S".into())),
                _ if t.starts_with("--chdir=") => return Err(Reason::ChangesDirectory("env -C".into())),
                _ if t.starts_with("--split-string=") || (t.starts_with("-S") && !t.starts_with("--")) => {
                    return Err(Reason::Eval("env -S".into()));
                }
                "-u" | "--unset" => i += 1,
                "--" => {
                    i += 1;
                    break;
                }
                _ if t.starts_with('-') => {}
                _ if a.text.split_once('=').is_some_and(|(n, _)| lex_is_name(n)) => self.assignment(a)?,
                _ => break,
            }
            i += 1;
        }
        Ok(&args[i.min(args.len())..])
    }

    /// `sh [OPTION…] SCRIPT [ARG…]`.
    fn shell(&mut self, name: &str, args: &[Word], reads_stdin_file: bool) -> Result<(), Reason> {
        let mut i = 0;
        let mut stdin = false;
        while let Some(a) = args.get(i) {
            let t = a.text.as_str();
            if t == "--" {
                i += 1;
                break;
            }
            if t == "-" {
                stdin = true;
                i += 1;
                break;
            }
            if let Some(long) = t.strip_prefix("--") {
                if matches!(long, "rcfile" | "init-file") {
                    i += 1;
                    if let Some(f) = args.get(i) {
                        self.script(&f.text);
                    }
                } else if long == "command" {
                    return Err(Reason::Nested { program: name.into(), flag: t.into() });
                }
                i += 1;
                continue;
            }
            if (t.starts_with('-') || t.starts_with('+')) && t.len() > 1 {
                let flags = &t[1..];
                if flags.contains('c') {
                    return Err(Reason::Nested { program: name.into(), flag: "-c".into() });
                }
                stdin |= flags.contains('s');
                if flags.contains('o') || flags.contains('O') {
                    i += 1;
                }
                i += 1;
                continue;
            }
            break;
        }
        self.operands(name, if stdin { None } else { args.get(i) }, args.get(i + 1..), reads_stdin_file)
    }

    /// `python3 [OPTION…] SCRIPT [ARG…]`.
    fn python(&mut self, name: &str, args: &[Word], reads_stdin_file: bool) -> Result<(), Reason> {
        let mut i = 0;
        let mut stdin = false;
        while let Some(a) = args.get(i) {
            let t = a.text.as_str();
            if t == "--" || t == "-" {
                stdin = t == "-";
                i += 1;
                break;
            }
            if t.starts_with("--") {
                i += 1;
                continue;
            }
            let Some(flags) = t.strip_prefix('-') else { break };
            for (k, c) in flags.char_indices() {
                match c {
                    'c' => return Err(Reason::Nested { program: name.into(), flag: "-c".into() }),
                    'm' => return Err(Reason::Module(name.into())),
                    // Takes a value: the rest of the word, or the next word.
                    'W' | 'X' | 'Q' => {
                        if k + 1 == flags.len() {
                            i += 1;
                        }
                        break;
                    }
                    _ => {}
                }
            }
            i += 1;
        }
        self.operands(name, if stdin { None } else { args.get(i) }, args.get(i + 1..), reads_stdin_file)
    }

    /// `node [OPTION…] SCRIPT [ARG…]`; its packages are looked up in every `node_modules` above
    /// the script.
    fn node(&mut self, name: &str, args: &[Word], reads_stdin_file: bool) -> Result<(), Reason> {
        let mut i = 0;
        while let Some(a) = args.get(i) {
            let t = a.text.as_str();
            let (flag, inline) = match t.split_once('=') {
                Some((f, v)) if f.starts_with("--") => (f, Some(v)),
                _ => (t, None),
            };
            match flag {
                "--" => {
                    i += 1;
                    break;
                }
                "-e" | "--eval" | "-p" | "--print" => {
                    return Err(Reason::Nested { program: name.into(), flag: flag.into() });
                }
                "-r" | "--require" | "--import" | "--loader" | "--experimental-loader" => {
                    let value = match inline {
                        Some(v) => v.to_string(),
                        None => {
                            i += 1;
                            args.get(i).map(|w| w.text.clone()).unwrap_or_default()
                        }
                    };
                    if value.starts_with('/') || value.starts_with("./") || value.starts_with("../") {
                        self.script(&value);
                    } else {
                        return Err(Reason::Package { program: name.into(), package: value });
                    }
                }
                _ if t.starts_with('-') => {}
                _ => break,
            }
            i += 1;
        }
        let script = args.get(i);
        if let Some(s) = script {
            let path = self.resolve(&s.text);
            for dir in path.ancestors().skip(1) {
                self.runs.dirs.push(dir.join("node_modules"));
            }
        }
        self.operands(name, script, args.get(i + 1..), reads_stdin_file)
    }

    /// `perl`, `ruby`, …: `eval` are the flag letters that run a string; `-I DIR` adds a
    /// directory modules are loaded from.
    fn interpreter(&mut self, name: &str, eval: &str, args: &[Word], reads_stdin_file: bool) -> Result<(), Reason> {
        let mut i = 0;
        while let Some(a) = args.get(i) {
            let t = a.text.as_str();
            if t == "--" {
                i += 1;
                break;
            }
            let Some(flags) = t.strip_prefix('-').filter(|f| !f.is_empty() && !f.starts_with('-')) else {
                if t.starts_with("--") {
                    i += 1;
                    continue;
                }
                break;
            };
            if let Some(dir) = flags.strip_prefix('I') {
                let dir = if dir.is_empty() {
                    i += 1;
                    args.get(i).map(|w| w.text.as_str()).unwrap_or_default()
                } else {
                    dir
                };
                if !dir.is_empty() {
                    let path = self.resolve(dir);
                    self.path(path, true);
                }
            } else if let Some(c) = flags.chars().find(|c| eval.contains(*c)) {
                return Err(Reason::Nested { program: name.into(), flag: format!("-{c}") });
            }
            i += 1;
        }
        self.operands(name, args.get(i), args.get(i + 1..), reads_stdin_file)
    }

    /// An interpreter's script and the words after it.
    fn operands(
        &mut self,
        name: &str,
        script: Option<&Word>,
        rest: Option<&[Word]>,
        reads_stdin_file: bool,
    ) -> Result<(), Reason> {
        match script {
            Some(s) => {
                self.script(&s.text);
                if let Some(loader) = Loader::of_interpreter(name) {
                    let path = self.resolve(&s.text);
                    self.runs.loads(&path, loader);
                }
            }
            // `sh < hooks/guard.sh`: the file read is a script (noted with the inputs).
            None if reads_stdin_file => {}
            None => return Err(Reason::NoScript(name.to_string())),
        }
        for a in rest.unwrap_or_default() {
            self.word(&a.text);
        }
        Ok(())
    }
}

/// The words after a wrapper's options.
fn skip_options<'w>(args: &'w [Word], with_value: &[&str]) -> &'w [Word] {
    let mut i = 0;
    while let Some(a) = args.get(i) {
        if a.text == "--" {
            return &args[i + 1..];
        }
        if !a.text.starts_with('-') || a.text == "-" {
            break;
        }
        if with_value.contains(&a.text.as_str()) {
            i += 1;
        }
        i += 1;
    }
    &args[i.min(args.len())..]
}

fn lex_is_name(s: &str) -> bool {
    let mut chars = s.chars();
    chars.next().is_some_and(|c| c == '_' || c.is_ascii_alphabetic())
        && chars.all(|c| c == '_' || c.is_ascii_alphanumeric())
}

/// `python`, `python3`, `python3.12`, `pypy3`.
fn is_python(name: &str) -> bool {
    ["python", "pypy"]
        .iter()
        .any(|p| name.strip_prefix(p).is_some_and(|v| v.chars().all(|c| c.is_ascii_digit() || c == '.')))
}

pub(super) fn has_script_extension(name: &str) -> bool {
    const EXTENSIONS: &str = "sh bash zsh py js mjs cjs ts mts cts tsx jsx rb pl php lua R";
    Path::new(name).extension().and_then(|e| e.to_str()).is_some_and(|e| EXTENSIONS.split_whitespace().any(|x| x == e))
}
