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

mod analyse;
mod lex;
mod loaders;
#[cfg(test)]
mod tests;

use crate::config::HookConfig;
use crate::normalize;
use analyse::{Analysis, has_script_extension, simple_commands};
use lex::Expansions;
pub use loaders::{Beside, Loader};
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
    /// The program that runs each script of `files` it knows ([`Loader`]): what it loads
    /// beside a script at the workspace root is asked for by pattern rather than protected
    /// as a directory.
    pub loaders: Vec<(PathBuf, Loader)>,
    /// Files the programs load from their working directory (the workspace) or from above
    /// their script (Node's `package.json` files), as patterns ([`crate::PathPattern`]) with
    /// why: asked before writing, in every mode.
    pub ask: Vec<AskPattern>,
}

/// A pattern of files a host program loads, asked before writing in every mode.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AskPattern {
    /// The pattern ([`crate::PathPattern`] syntax).
    pub pattern: String,
    /// What loads them, for the refusal (`code python3 loads from the workspace`).
    pub why: String,
}

impl HookRuns {
    /// The loader recorded for `file`, if any.
    pub fn loader_of(&self, file: &Path) -> Option<Loader> {
        self.loaders.iter().rev().find(|(f, _)| f == file).map(|(_, l)| *l)
    }

    /// Note that `loader` runs `file`, with what it loads from its working directory and,
    /// for Node, the `package.json` of every directory above the script up to the nearest
    /// that exists (its `"imports"`, and its `"name"` with `"exports"`, are looked up before
    /// `node_modules`).
    pub(crate) fn loads(&mut self, file: &Path, loader: Loader) {
        self.loaders.push((file.to_path_buf(), loader));
        for p in loader.from_working_directory() {
            let why = format!("code that running {} loads from the working directory (the workspace)", file.display());
            self.ask.push(AskPattern { pattern: anywhere(p), why });
        }
        if matches!(loader, Loader::Node | Loader::Bun) {
            // Up to the nearest one that exists: Node reads no further.
            for dir in file.ancestors().skip(1) {
                let package = dir.join("package.json");
                let pattern = loaders::literal_pattern(&package);
                let why = format!("a package.json that decides what {} imports", file.display());
                self.ask.push(AskPattern { pattern, why });
                if package.is_file() {
                    break;
                }
            }
        }
    }
}

/// A pattern as it applies to what a program loads: a name pattern (`*.py`) wherever a link
/// in the workspace could lead (`//**/*.py`); an anchored one (`/.Rprofile`) as it is.
fn anywhere(pattern: &str) -> String {
    if pattern.contains('/') { pattern.to_string() } else { format!("//**/{pattern}") }
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
    /// An entry of this process's `PATH` (which hooks and servers inherit) is the workspace
    /// (`.`, an empty entry): a tool could put a program of any name there.
    #[error(
        "the PATH entry {0:?} is the workspace (an empty entry or `.` is the working directory), so a tool could \
         put a program of this name there; remove it from PATH"
    )]
    PathInWorkspace(String),
    /// A variable whose value is code, options or a command line (`NODE_OPTIONS`,
    /// `GIT_SSH_COMMAND`, `LD_PRELOAD`: [`crate::launch::LOADER_VARIABLES`]).
    #[error("`{name}` ({read_by}) makes the program run code its command line does not name")]
    CodeVariable {
        /// The variable.
        name: String,
        /// What reads it.
        read_by: &'static str,
    },
    /// A variable toolhost's own environment holds (and so every hook and server inherits)
    /// makes programs load code from the workspace itself, or its value names a place inside
    /// it (`PYTHONPATH=.`, `NODE_OPTIONS=--require ./x.js`).
    #[error(
        "`{name}` ({read_by}) in toolhost's environment, which hooks and MCP servers inherit, names the workspace \
         or a file in it, which tools write; unset it (or point it outside the workspace) before starting toolhost"
    )]
    InheritedFromWorkspace {
        /// The variable.
        name: String,
        /// What reads it.
        read_by: &'static str,
    },
    /// A variable listing places code is loaded from names the workspace (or above it, or
    /// an empty entry: the working directory), which tools write.
    #[error("`{name}` ({read_by}) names the workspace itself or a directory above it, which tools write")]
    LoadsFromWorkspace {
        /// The variable.
        name: String,
        /// What reads it.
        read_by: &'static str,
    },
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
    /// A script the command runs sits at the workspace root (or above) and its interpreter
    /// loads files beside it that no pattern names (Node's extensionless `require`):
    /// protecting its directory would protect the whole workspace.
    #[error(
        "hook [{command}] runs {file} from {dir}, the workspace or a directory above it: {why}, and protecting \
         {dir} whole would leave nothing in the workspace writable. Move it into a directory of its own (as \
         hooks/{name}), run it by an absolute path outside the workspace, or list the files it runs: files = [{}]",
        files_list(std::slice::from_ref(.suggested)),
        file = .file.display(),
        dir = .dir.display(),
        name = file_name(.file)
    )]
    AtWorkspaceRoot {
        /// The command.
        command: String,
        /// The file (or directory) it runs.
        file: PathBuf,
        /// The directory that would be protected.
        dir: PathBuf,
        /// Why protecting what it loads by pattern is not enough.
        why: &'static str,
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

fn file_name(file: &Path) -> String {
    file.file_name().map_or_else(|| "script".into(), |n| n.to_string_lossy().into_owned())
}

fn files_list(files: &[String]) -> String {
    if files.is_empty() {
        return "\"path/to/script\", …".to_string();
    }
    files.iter().map(|f| format!("{f:?}")).collect::<Vec<_>>().join(", ")
}

/// The files `command` runs, for a hook run by `sh -c` in `workspace` with
/// `$CLAUDE_PROJECT_DIR` and `$TOOLHOST_WORKSPACE` set to it; `home` is what `~` and `$HOME`
/// stand for; a program named without a `/` is looked up on this process's `PATH` (which
/// hooks and servers inherit), and an entry of it inside the workspace is loaded from. Relative paths are relative to `workspace`, which should be canonical. Reads the
/// file system only to tell whether a word without a `/` names a file there.
///
/// # Errors
///
/// [`Unanalysable`], with the first reason found.
pub fn analyse_hook_command(command: &str, workspace: &Path, home: Option<&Path>) -> Result<HookRuns, Unanalysable> {
    let inherited: Vec<(String, String)> = std::env::vars_os()
        .filter_map(|(k, v)| Some((k.into_string().ok()?, v.to_string_lossy().into_owned())))
        .collect();
    analyse_in(command, workspace, home, &inherited)
}

/// [`analyse_hook_command`] for a program that inherits `inherited` (its `PATH`, and the
/// variables that decide what code programs load: see [`Analysis::inherited`]).
fn analyse_in(
    command: &str,
    workspace: &Path,
    home: Option<&Path>,
    inherited: &[(String, String)],
) -> Result<HookRuns, Unanalysable> {
    let ex = Expansions { workspace, home };
    let commands = simple_commands(lex::tokens(command, &ex)?)?;
    let path = inherited.iter().find(|(k, _)| k == "PATH").map(|(_, v)| std::ffi::OsStr::new(v.as_str()));
    let mut analysis = Analysis { workspace, runs: HookRuns::default(), path };
    for c in &commands {
        analysis.simple(c)?;
    }
    analysis.inherited(inherited)?;
    let mut runs = analysis.runs;
    interpreters_of_scripts(&mut runs, workspace);
    code_trees(&mut runs, workspace);
    dedup(&mut runs.files);
    dedup(&mut runs.dirs);
    let mut seen = std::collections::BTreeSet::new();
    runs.ask.retain(|a| seen.insert(a.pattern.clone()));
    Ok(runs)
}

/// A script run by its path starts the interpreter its `#!` line names: an interpreter given
/// by an absolute path (`#!/w/.venv/bin/python`) is a file the command runs too.
fn interpreters_of_scripts(runs: &mut HookRuns, workspace: &Path) {
    use std::io::Read as _;
    let mut found = Vec::new();
    let mut loaders = Vec::new();
    for file in &runs.files {
        // Non-blocking, and a regular file only: a FIFO planted where a hook's script should
        // be must not stall the start.
        use rustix::fs::{Mode, OFlags};
        let Ok(fd) = rustix::fs::open(file, OFlags::RDONLY | OFlags::NONBLOCK | OFlags::CLOEXEC, Mode::empty()) else {
            continue;
        };
        let f = std::fs::File::from(fd);
        if !f.metadata().is_ok_and(|m| m.is_file()) {
            continue;
        }
        let mut head = [0u8; 256];
        let Ok(n) = f.take(256).read(&mut head) else { continue };
        let Some(line) = head[..n].strip_prefix(b"#!") else { continue };
        let line = String::from_utf8_lossy(line);
        let Some(line) = line.lines().next() else { continue };
        let Some(interpreter) = line.split_whitespace().next() else { continue };
        if interpreter.starts_with('/') {
            found.push(normalize(&workspace.join(interpreter)));
        }
        if matches!(runs.loader_of(file), None | Some(Loader::Program))
            && let Some(loader) = Loader::of_shebang(line)
        {
            loaders.push((file.clone(), loader));
        }
    }
    runs.files.extend(found);
    for (file, loader) in loaders {
        runs.loads(&file, loader);
    }
}

/// The trees an interpreter loads code from beside the file it runs, inside the workspace: a
/// Python virtual environment (the directory above a file that holds `pyvenv.cfg`, with its
/// `site-packages` and `.pth` files) and a `node_modules` directory a file lies in (its
/// packages load each other). Each is protected whole, as a directory the command loads from.
fn code_trees(runs: &mut HookRuns, workspace: &Path) {
    let mut trees = Vec::new();
    for file in runs.files.iter().chain(runs.dirs.iter()) {
        let mut outermost_modules = None;
        for dir in file.ancestors().skip(1) {
            if dir == workspace || !dir.starts_with(workspace) {
                break;
            }
            if dir.join("pyvenv.cfg").is_file() {
                trees.push(dir.to_path_buf());
            }
            if dir.file_name().is_some_and(|n| n == "node_modules") {
                outermost_modules = Some(dir.to_path_buf());
            }
        }
        trees.extend(outermost_modules);
    }
    runs.dirs.extend(trees);
}

/// What to keep from tools so that none can change what a hook (or a stdio MCP server) runs.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HookProtection {
    /// Paths no tool may write, replace or move (directories whole).
    pub paths: Vec<PathBuf>,
    /// Patterns of files it loads, asked before writing in every mode: what an interpreter
    /// loads from its working directory, and from beside a script at the workspace root
    /// (where protecting the script's directory would protect everything).
    pub ask: Vec<AskPattern>,
}

/// [`hook_protection`]'s paths alone.
///
/// # Errors
///
/// As [`hook_protection`].
pub fn hook_protected_paths(
    hook: &HookConfig,
    workspace: &Path,
    home: Option<&Path>,
) -> Result<Vec<PathBuf>, HookError> {
    hook_protection(hook, workspace, home).map(|p| p.paths)
}

/// What to protect so that no tool can change what `hook` runs: with a `files` key, exactly
/// those (workspace-relative unless absolute; also their real paths); without, the directory
/// of each file its command runs ([`analyse_hook_command`]) and each directory it loads from,
/// at their lexical and real paths, plus the patterns of files its interpreters load from the
/// workspace ([`Loader::from_working_directory`]).
///
/// A script whose directory is the workspace (or above it) is protected as a file, and what
/// its interpreter loads from beside it is asked for by pattern ([`Loader::beside_root`]):
/// `python3 server.py` at the root asks before any `*.py`, `*.pyc` or `*.so` is written,
/// anywhere a link could lead.
///
/// # Errors
///
/// [`HookError::Unanalysable`] when there is no `files` key and the command cannot be
/// analysed; [`HookError::AtWorkspaceRoot`] when a script at the workspace root (or above)
/// runs under an interpreter whose loads no pattern bounds, or a directory it loads from
/// whole is the workspace or above it; [`HookError::ListedTooWide`] when a `files` entry is.
pub fn hook_protection(hook: &HookConfig, workspace: &Path, home: Option<&Path>) -> Result<HookProtection, HookError> {
    let command = hook.command.get_ref();
    let mut out = HookProtection::default();
    // A hook toolhost cannot run runs no file.
    if hook.refuses.is_some() {
        return Ok(out);
    }
    if let Some(files) = &hook.files {
        for (index, f) in files.iter().enumerate() {
            let path = normalize(&workspace.join(f.get_ref()));
            for p in std::iter::once(path.clone()).chain(path.canonicalize().ok()) {
                if workspace.starts_with(&p) {
                    let path = f.get_ref().display().to_string();
                    return Err(HookError::ListedTooWide { command: command.clone(), index, path });
                }
                out.paths.push(p);
            }
        }
        dedup(&mut out.paths);
        return Ok(out);
    }
    let runs = analyse_hook_command(command, workspace, home).map_err(|reason| HookError::Unanalysable {
        command: command.clone(),
        reason,
        suggested: suggest(command, workspace, home),
    })?;
    let too_wide = |file: &Path, dir: &Path, why: &'static str| HookError::AtWorkspaceRoot {
        command: command.clone(),
        file: file.to_path_buf(),
        dir: dir.to_path_buf(),
        why,
        suggested: relative(file, workspace),
    };
    for file in &runs.files {
        // The file's directory, lexically and really (a linked file or directory runs what
        // the link names).
        let lexical = file.parent().unwrap_or(Path::new("/")).to_path_buf();
        let real_file_dir = file.canonicalize().ok().and_then(|r| r.parent().map(Path::to_path_buf));
        let real_dir = lexical.canonicalize().ok();
        let dirs = [Some(lexical), real_file_dir, real_dir];
        let Some(root) = dirs.iter().flatten().find(|d| workspace.starts_with(d)) else {
            out.paths.extend(dirs.into_iter().flatten());
            continue;
        };
        // A file a program reads, or a shell script: what loads from beside it is the
        // script's own doing. A script of an interpreter that imports its neighbours: those
        // neighbours by pattern, or nothing if no pattern bounds them.
        let beside = runs.loader_of(file).map_or(Beside::Patterns(&[]), Loader::beside_root);
        let patterns = match beside {
            Beside::Patterns(p) => p,
            Beside::Unbounded(why) => return Err(too_wide(file, root, why)),
        };
        out.paths.extend(std::iter::once(file.clone()).chain(file.canonicalize().ok()));
        let name = relative(file, workspace);
        for p in patterns {
            let why = format!("code {name} loads from beside it, running unsandboxed from the workspace root");
            out.ask.push(AskPattern { pattern: anywhere(p), why });
        }
    }
    for dir in &runs.dirs {
        for d in std::iter::once(dir.clone()).chain(dir.canonicalize().ok()) {
            if workspace.starts_with(&d) {
                return Err(too_wide(dir, &d, "it loads code from that whole directory"));
            }
            out.paths.push(d);
        }
    }
    out.ask.extend(runs.ask);
    dedup(&mut out.paths);
    let mut seen = std::collections::BTreeSet::new();
    out.ask.retain(|a| seen.insert(a.pattern.clone()));
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
