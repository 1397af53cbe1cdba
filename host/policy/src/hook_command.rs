//! # Which files a hook command runs
//!
//! Hooks run on the host, unsandboxed, by `sh -c COMMAND` in the workspace. Whatever file a
//! hook runs must be out of every tool's reach, or a tool that may write it gets code run
//! outside its sandbox. This module reads a command as `sh` does (words and quotes by
//! `shlex`, operators and redirections by us) and says which files it runs, or why that
//! cannot be told from the text ([`Unanalysable`]): a `cd`, a nested command string, a
//! variable, a program that runs what its working directory (the workspace) holds.
//!
//! [`hook_protected_paths`] turns a configured hook into the paths to protect: the whole
//! directory of each file it runs (interpreters load the files beside a script: Python
//! imports, `source lib.sh`, `require`), or exactly the files its `files` key lists. A
//! directory that is the workspace or above it would leave nothing writable: that is a
//! [`HookError`], as is a command that cannot be analysed. Both name the two ways out: a
//! script by an absolute path outside the workspace, or a `files` list.
//!
//! ## Example
//!
//! ```
//! use std::path::Path;
//! use toolhost_policy::analyse_hook_command;
//!
//! let ws = Path::new("/w");
//! let runs = analyse_hook_command(r#""$CLAUDE_PROJECT_DIR"/.hooks/guard.sh"#, ws, None).unwrap();
//! assert_eq!(runs.files, [Path::new("/w/.hooks/guard.sh")]);
//!
//! let err = analyse_hook_command("cd hooks && sh guard.sh", ws, None).unwrap_err();
//! assert_eq!(err.to_string(), "`cd` changes what relative paths name");
//! ```

mod lex;
#[cfg(test)]
mod tests;

use crate::config::HookConfig;
use crate::normalize;
use lex::{Expansions, Redirect, Token, Word};
use std::path::{Path, PathBuf};

/// What a hook command runs, as far as its text tells: absolute, normalised paths.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HookRuns {
    /// Files it names: scripts, the program when given by a path, any argument that names an
    /// existing file or holds a `/`, files it reads on stdin. The directory of each is loaded
    /// from too (imports, `source`), so it is what is protected.
    pub files: Vec<PathBuf>,
    /// Directories it loads from as a whole: a directory named as an argument (`python3
    /// hooks/pkg`, `PYTHONPATH=lib`), the `node_modules` a Node script's packages are looked
    /// up in.
    pub dirs: Vec<PathBuf>,
}

/// Why the files a hook command runs cannot be told from its text. `Display` is the reason,
/// as a clause.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Unanalysable {
    /// `cd`, `pushd`, `popd`, `env -C`.
    #[error("`{0}` changes what relative paths name")]
    ChangesDirectory(String),
    /// `source FILE`, `. FILE`.
    #[error("`{0}` runs a file inside the hook's own shell, where what it defines and changes is not followed")]
    Source(String),
    /// `eval`, `trap`, `alias`, `env -S`: a string that becomes commands.
    #[error("`{0}` turns a string into commands, which are not followed")]
    Eval(String),
    /// `sh -c`, `python3 -c`, `node -e`: a nested command string.
    #[error("`{program} {flag}` runs a nested command string, which is not followed")]
    Nested {
        /// The interpreter.
        program: String,
        /// The flag.
        flag: String,
    },
    /// `python3 -m MODULE`: a module found through the working directory.
    #[error("`{0} -m` runs a module looked up from the working directory (the workspace)")]
    Module(String),
    /// `node -r PACKAGE`: a package found through the working directory.
    #[error("`{program}` preloads the package {package:?}, looked up from the working directory (the workspace)")]
    Package {
        /// The interpreter.
        program: String,
        /// The package.
        package: String,
    },
    /// An interpreter with no script file (it reads its program from stdin).
    #[error("`{0}` runs no script file (it would read its program from stdin)")]
    NoScript(String),
    /// `make`, `npm`, `cargo`, `pytest`, …: programs that run what their working directory
    /// holds (build files, package scripts, configs, tests).
    #[error(
        "`{0}` runs what its working directory (the workspace) holds (build files, package scripts, configs or tests)"
    )]
    Runner(String),
    /// `xargs`, `find -exec`: commands built from input.
    #[error("`{0}` runs commands built from its input or from files it finds")]
    FromInput(String),
    /// `if`, `for`, `while`, `case`, `function`, …
    #[error("`{0}` starts a control structure, whose commands are not followed")]
    Control(String),
    /// `( … )` (and `name() …`).
    #[error("`( … )` runs a subshell")]
    Subshell,
    /// `{ … }`.
    #[error("`{{ … }}` groups commands, which are not followed")]
    Group,
    /// `$(…)`, backticks, `<(…)`.
    #[error("`{0}` runs a command whose output becomes part of the command")]
    CommandSubstitution(&'static str),
    /// Any variable but the workspace's and `$HOME`, and `~user`.
    #[error(
        "`{0}` is not known until the hook runs (only $CLAUDE_PROJECT_DIR, $TOOLHOST_WORKSPACE, $HOME and ~ are \
         expanded)"
    )]
    Variable(String),
    /// `PATH=…`: changes which programs the names stand for.
    #[error("setting PATH changes which programs the command's names run")]
    SetsPath,
    /// `~` or `$HOME` with no home directory known.
    #[error("`~` and $HOME name the home directory, which is not known here (HOME is not set)")]
    NoHome,
    /// The workspace or home path is not UTF-8.
    #[error("the workspace or home path is not UTF-8")]
    NotUtf8,
    /// An unquoted expansion that the shell would split or expand as a pattern.
    #[error(
        "unquoted `{name}` is split at the blanks (or expanded as a pattern) in its value {value:?}; quote it, as \
         in \"$CLAUDE_PROJECT_DIR\"/hooks/guard.sh"
    )]
    Split {
        /// The variable.
        name: String,
        /// Its value.
        value: String,
    },
    /// `*`, `?`, `[…]` outside quotes.
    #[error("`{0}` is a pattern: which files it names is known only when the hook runs")]
    Pattern(String),
    /// `<<`, `<<<`.
    #[error("a here-document feeds the command text that is not followed")]
    HereDocument,
    /// A redirection with no file after it.
    #[error("a redirection has no file after it")]
    Redirection,
    /// A quote or a backslash left open.
    #[error("a quote or a backslash is left open")]
    Unterminated,
}

pub(crate) use Unanalysable as Reason;

/// A hook whose files cannot be protected: its `Display` names the hook, says why, and says
/// how to fix it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum HookError {
    /// The command cannot be analysed (and the hook has no `files`).
    #[error(
        "hook [{command}] cannot be analysed: {reason}; toolhost cannot tell which files it runs, so a tool could \
         rewrite them. Either run a script by an absolute path outside the workspace, or list the files it runs: \
         files = [{}]",
        files_list(.suggested)
    )]
    Unanalysable {
        /// The command.
        command: String,
        /// Why.
        reason: Unanalysable,
        /// The files it seems to run, workspace-relative, for the message.
        suggested: Vec<String>,
    },
    /// A file the command runs sits at the workspace root (or above): protecting its
    /// directory would protect the whole workspace.
    #[error(
        "hook [{command}] runs {file}, whose directory {dir} is the workspace or above it: toolhost protects the whole \
         directory of every file a hook runs (interpreters load the files beside it), and protecting {dir} would \
         leave nothing in the workspace writable. Move it into a directory of its own (as hooks/{name}), run it by an \
         absolute path outside the workspace, or list the files it runs: files = [{}]",
        files_list(std::slice::from_ref(.suggested)),
        file = .file.display(),
        dir = .dir.display()
    )]
    AtWorkspaceRoot {
        /// The command.
        command: String,
        /// The file (or directory) it runs.
        file: PathBuf,
        /// The directory that would be protected.
        dir: PathBuf,
        /// The file's name.
        name: String,
        /// The file, workspace-relative when inside it.
        suggested: String,
    },
    /// A `files` entry is the workspace or above it.
    #[error(
        "hook [{command}]: files[{index}] = {path:?} is the workspace or a directory above it; protecting it would \
         leave nothing in the workspace writable. List the hook's own files (as files = [\"hooks/guard.sh\"]), or \
         run a script by an absolute path outside the workspace"
    )]
    ListedTooWide {
        /// The command.
        command: String,
        /// The entry's index in `files`.
        index: usize,
        /// The entry as written.
        path: String,
    },
}

fn files_list(files: &[String]) -> String {
    if files.is_empty() {
        return "\"path/to/script\", …".to_string();
    }
    files.iter().map(|f| format!("{f:?}")).collect::<Vec<_>>().join(", ")
}

/// The files `command` runs, for a hook run by `sh -c` in `workspace` with
/// `$CLAUDE_PROJECT_DIR` and `$TOOLHOST_WORKSPACE` set to it; `home` is what `~` and `$HOME`
/// stand for. Relative paths are relative to `workspace`, which should be canonical. Reads the
/// file system only to tell whether a word without a `/` names a file there.
///
/// # Errors
///
/// [`Unanalysable`], with the first reason found.
pub fn analyse_hook_command(command: &str, workspace: &Path, home: Option<&Path>) -> Result<HookRuns, Unanalysable> {
    let ex = Expansions { workspace, home };
    let commands = simple_commands(lex::tokens(command, &ex)?)?;
    let mut analysis = Analysis { workspace, runs: HookRuns::default() };
    for c in &commands {
        analysis.simple(c)?;
    }
    let mut runs = analysis.runs;
    dedup(&mut runs.files);
    dedup(&mut runs.dirs);
    Ok(runs)
}

/// The paths to protect so that no tool can change what `hook` runs: with a `files` key,
/// exactly those (workspace-relative unless absolute; also their real paths); without, the
/// directory of each file its command runs ([`analyse_hook_command`]) and each directory it
/// loads from, at their lexical and real paths.
///
/// # Errors
///
/// [`HookError::Unanalysable`] when there is no `files` key and the command cannot be
/// analysed; [`HookError::AtWorkspaceRoot`] when a directory to protect is the workspace or
/// above it; [`HookError::ListedTooWide`] when a `files` entry is.
pub fn hook_protected_paths(hook: &HookConfig, workspace: &Path, home: Option<&Path>) -> Result<Vec<PathBuf>, HookError> {
    let command = hook.command.get_ref();
    let mut out = Vec::new();
    if let Some(files) = &hook.files {
        for (index, f) in files.iter().enumerate() {
            let path = normalize(&workspace.join(f.get_ref()));
            for p in std::iter::once(path.clone()).chain(path.canonicalize().ok()) {
                if workspace.starts_with(&p) {
                    let path = f.get_ref().display().to_string();
                    return Err(HookError::ListedTooWide { command: command.clone(), index, path });
                }
                out.push(p);
            }
        }
        dedup(&mut out);
        return Ok(out);
    }
    let runs = analyse_hook_command(command, workspace, home).map_err(|reason| HookError::Unanalysable {
        command: command.clone(),
        reason,
        suggested: suggest(command, workspace, home),
    })?;
    let too_wide = |file: &Path, dir: &Path| HookError::AtWorkspaceRoot {
        command: command.clone(),
        file: file.to_path_buf(),
        dir: dir.to_path_buf(),
        name: file.file_name().map_or_else(|| "script".into(), |n| n.to_string_lossy().into_owned()),
        suggested: relative(file, workspace),
    };
    for file in &runs.files {
        // The file's directory, lexically and really (a linked file or directory runs what
        // the link names).
        let lexical = file.parent().unwrap_or(Path::new("/")).to_path_buf();
        let real_file_dir = file.canonicalize().ok().and_then(|r| r.parent().map(Path::to_path_buf));
        let real_dir = lexical.canonicalize().ok();
        for dir in std::iter::once(lexical).chain(real_file_dir).chain(real_dir) {
            if workspace.starts_with(&dir) {
                return Err(too_wide(file, &dir));
            }
            out.push(dir);
        }
    }
    for dir in &runs.dirs {
        for d in std::iter::once(dir.clone()).chain(dir.canonicalize().ok()) {
            if workspace.starts_with(&d) {
                return Err(too_wide(dir, &d));
            }
            out.push(d);
        }
    }
    dedup(&mut out);
    Ok(out)
}

fn dedup(paths: &mut Vec<PathBuf>) {
    let mut seen = std::collections::BTreeSet::new();
    paths.retain(|p| seen.insert(p.clone()));
}

/// `path` relative to `workspace` when inside it, else as it is.
fn relative(path: &Path, workspace: &Path) -> String {
    path.strip_prefix(workspace).unwrap_or(path).display().to_string()
}

/// One simple command: its words, and the files its redirections read.
#[derive(Debug, Default)]
struct Simple {
    words: Vec<Word>,
    inputs: Vec<Word>,
}

/// The simple commands of a token list (pipelines and lists are cut at their operators:
/// every command of them runs).
fn simple_commands(tokens: Vec<Token>) -> Result<Vec<Simple>, Reason> {
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

/// Reserved words that start compound commands (`!` is handled as a prefix).
const CONTROL: &[&str] =
    &["if", "then", "else", "elif", "fi", "for", "while", "until", "do", "done", "case", "esac", "select", "function"];

/// Programs that run what their working directory holds: build files, package scripts,
/// test suites, configs written in a programming language. A hook runs in the workspace,
/// which tools write.
const RUNNERS: &[&str] = &[
    "make", "gmake", "bmake", "just", "rake", "ant", "gradle", "gradlew", "mvn", "mvnw", "sbt", "cargo", "go", "dotnet",
    "npm", "npx", "yarn", "pnpm", "pnpx", "bunx", "corepack", "jest", "vitest", "mocha", "eslint", "prettier", "tsc",
    "webpack", "vite", "pytest", "py.test", "tox", "nox", "poetry", "pipenv", "uv", "uvx", "pipx", "hatch", "pdm",
    "pre-commit", "lefthook", "husky", "composer", "bundle", "bundler", "task", "invoke", "mise", "direnv", "nix",
    "devbox",
];

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

struct Analysis<'a> {
    workspace: &'a Path,
    runs: HookRuns,
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

    /// A script an interpreter runs: a path relative to the working directory even without a
    /// `/` (`sh guard.sh` runs `./guard.sh`), and even when it is not there yet.
    fn script(&mut self, text: &str) {
        let path = self.resolve(text);
        self.path(path, text.ends_with('/'));
    }

    /// `NAME=value` (before a program, or after `export`): each `:`-separated part that is a
    /// path or names a file or directory is loaded from (`PYTHONPATH=lib`, `BASH_ENV=x`).
    fn assignment(&mut self, word: &Word) -> Result<(), Reason> {
        let (name, value) = word.text.split_once('=').unwrap_or((&word.text, ""));
        if name == "PATH" {
            return Err(Reason::SetsPath);
        }
        for part in value.split(':').filter(|p| !p.is_empty()) {
            if part.contains('/') || self.resolve(part).exists() {
                self.script(part);
            }
        }
        Ok(())
    }

    fn simple(&mut self, command: &Simple) -> Result<(), Reason> {
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
            if RUNNERS.contains(&name) {
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
            Some(s) => self.script(&s.text),
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
    ["python", "pypy"].iter().any(|p| {
        name.strip_prefix(p).is_some_and(|v| v.chars().all(|c| c.is_ascii_digit() || c == '.'))
    })
}

fn has_script_extension(name: &str) -> bool {
    const EXTENSIONS: &[&str] = &[
        "sh", "bash", "zsh", "py", "js", "mjs", "cjs", "ts", "mts", "cts", "tsx", "jsx", "rb", "pl", "php", "lua", "R",
    ];
    Path::new(name).extension().and_then(|e| e.to_str()).is_some_and(|e| EXTENSIONS.contains(&e))
}

/// Best effort, for an error message: the files a command that cannot be analysed seems to
/// run, workspace-relative (following `cd DIR`; `-m MODULE` as `MODULE.py`).
fn suggest(command: &str, workspace: &Path, home: Option<&Path>) -> Vec<String> {
    let ex = Expansions { workspace, home };
    let Ok(commands) = lex::tokens(command, &ex).and_then(simple_commands) else { return Vec::new() };
    let mut cwd = workspace.to_path_buf();
    let mut out = Vec::new();
    for c in &commands {
        let words: Vec<&str> = c.words.iter().map(|w| w.text.as_str()).collect();
        if let ["cd" | "pushd", dir] = words.as_slice() {
            cwd = normalize(&cwd.join(dir));
            continue;
        }
        let mut module = false;
        for w in words.iter().skip(1) {
            let path = if module {
                module = false;
                format!("{}.py", w.replace('.', "/"))
            } else if *w == "-m" {
                module = true;
                continue;
            } else if !w.starts_with('-') && (w.contains('/') || has_script_extension(w)) {
                w.to_string()
            } else {
                continue;
            };
            let path = normalize(&cwd.join(path));
            if path.starts_with(workspace) && path != workspace {
                out.push(relative(&path, workspace));
            }
        }
    }
    out.dedup();
    out
}
