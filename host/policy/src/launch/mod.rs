//! # What a host program is, described once
//!
//! toolhost starts programs outside every sandbox: hook commands and stdio MCP servers. What
//! decides what such a program runs is its argv *after* `${VAR}` expansion, the environment it
//! really gets, its working directory and the places its interpreter loads code from. A
//! [`LaunchSpec`] holds all of it, built once from the config: the same value is analysed,
//! protected, pinned, shown to a person and, once the pin check clears it, started. Nothing
//! is expanded again between the check and the start.
//!
//! Refused outright, whatever a person says: a variable whose value is code
//! ([`env::Kind::Code`]), a variable listing the workspace as a place to load code from, and
//! toolhost itself as a tool source (it would start itself again, without end; [`is_toolhost`]
//! and [`DEPTH_ENV`]).

mod env;
mod expand;

pub use env::{Kind, LOADER_VARIABLES, LoaderVariable, loader_variable};
pub use expand::expand_with;

use crate::McpServerConfig;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The variable every program toolhost starts gets: how many toolhost processes it runs under.
/// A toolhost that finds it set starts no MCP server (a chain of toolhost processes stops at
/// depth 1), and one that finds 2 or more refuses to run.
pub const DEPTH_ENV: &str = "TOOLHOST_DEPTH";

/// How deep this process runs under toolhost processes: 0 when [`DEPTH_ENV`] is unset; a
/// value that does not read as a number counts as deep (fail closed).
pub fn depth() -> u32 {
    match std::env::var(DEPTH_ENV) {
        Err(_) => 0,
        Ok(v) => v.trim().parse().unwrap_or(u32::MAX),
    }
}

/// Why a server cannot be described, so it does not start.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum LaunchError {
    /// `${VAR}` with `VAR` unset and no default.
    #[error("{0}")]
    Unset(String),
    /// An `env` entry whose value is code, options or a command.
    #[error(
        "its env sets {name} ({read_by}), which makes it run code its command line does not name; toolhost does not \
         start a program with it"
    )]
    CodeVariable {
        /// The variable.
        name: String,
        /// What reads it.
        read_by: &'static str,
    },
    /// The program is toolhost itself.
    #[error(
        "its program {} is toolhost itself: toolhost never starts itself as a tool source (it would start itself \
         again, without end); its tools are already here",
        .0.display()
    )]
    Toolhost(PathBuf),
    /// This process runs under toolhost already.
    #[error(
        "this toolhost was itself started by toolhost ({DEPTH_ENV}={0}): a chain of toolhost processes stops here, so \
         it starts no MCP server"
    )]
    Nested(u32),
    /// Neither `command` nor `url`.
    #[error("it has neither `command` (stdio) nor `url` (streamable HTTP)")]
    Nothing,
}

/// A stdio program as it will run.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct LaunchSpec {
    /// The program, expanded (a name without `/` is looked up on `PATH`).
    pub program: String,
    /// Its arguments, expanded.
    pub args: Vec<String>,
    /// Variables set on top of the inherited environment, expanded.
    pub env: BTreeMap<String, String>,
    /// The same, as written (`${TOKEN}` rather than its value): what people are shown.
    pub env_written: BTreeMap<String, String>,
    /// Its working directory.
    pub cwd: PathBuf,
}

/// An HTTP server as it will be reached.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct HttpSpec {
    /// The endpoint, expanded.
    pub url: String,
    /// Headers of every request, expanded.
    pub headers: BTreeMap<String, String>,
    /// The same, as written.
    pub headers_written: BTreeMap<String, String>,
    /// The variable holding its bearer token.
    pub bearer_token_env: Option<String>,
}

/// A server, as it will be started or reached.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ServerLaunch {
    /// A program on this machine.
    Stdio(LaunchSpec),
    /// A streamable HTTP endpoint.
    Http(HttpSpec),
}

impl LaunchSpec {
    /// The command line whose files are analysed, protected and pinned (DESIGN §5): the
    /// variables that list places code is loaded from as assignments, then the program and
    /// its arguments, shell-quoted.
    pub fn analysed_line(&self) -> String {
        let assignments =
            self.env.iter().filter(|(k, _)| loader_variable(k).is_some()).map(|(k, v)| format!("{k}={}", quote(v)));
        let words = std::iter::once(quote(&self.program)).chain(self.args.iter().map(|a| quote(a)));
        assignments.chain(words).collect::<Vec<_>>().join(" ")
    }

    /// The command line for people: program and arguments, shell-quoted.
    pub fn shown(&self) -> String {
        std::iter::once(quote(&self.program)).chain(self.args.iter().map(|a| quote(a))).collect::<Vec<_>>().join(" ")
    }
}

/// `word` quoted for `sh` when it needs it (a NUL, which no argv holds, is dropped).
fn quote(word: &str) -> String {
    let clean: String = word.chars().filter(|c| *c != '\0').collect();
    shlex::try_quote(&clean).map(|q| q.into_owned()).unwrap_or(clean)
}

impl McpServerConfig {
    /// What this server is, with `${VAR}` expanded from `lookup`: the argv, environment and
    /// working directory of a stdio server, or the endpoint and headers of an HTTP one.
    ///
    /// # Errors
    ///
    /// An unset variable without a default, an `env` entry whose value is code
    /// ([`LaunchError::CodeVariable`]), or neither `command` nor `url`.
    pub fn launch_with(
        &self,
        workspace: &Path,
        lookup: &dyn Fn(&str) -> Option<String>,
    ) -> Result<ServerLaunch, LaunchError> {
        let ex = |text: &str| expand_with(text, lookup).map_err(LaunchError::Unset);
        if let Some(command) = &self.command {
            let mut env = BTreeMap::new();
            for (name, value) in &self.env {
                if let Some(known) = loader_variable(name)
                    && known.kind == Kind::Code
                {
                    return Err(LaunchError::CodeVariable { name: name.clone(), read_by: known.read_by });
                }
                env.insert(name.clone(), ex(value)?);
            }
            return Ok(ServerLaunch::Stdio(LaunchSpec {
                program: ex(command.get_ref())?,
                args: self.args.iter().map(|a| ex(a)).collect::<Result<_, _>>()?,
                env,
                env_written: self.env.clone(),
                cwd: workspace.to_path_buf(),
            }));
        }
        let Some(url) = &self.url else { return Err(LaunchError::Nothing) };
        Ok(ServerLaunch::Http(HttpSpec {
            url: ex(url.get_ref())?,
            headers: self.headers.iter().map(|(k, v)| Ok((k.clone(), ex(v)?))).collect::<Result<_, LaunchError>>()?,
            headers_written: self.headers.clone(),
            bearer_token_env: self.bearer_token_env.clone(),
        }))
    }

    /// [`McpServerConfig::launch_with`] from this process's environment, and refused when the
    /// program is toolhost itself ([`is_toolhost`]) or this process runs under toolhost
    /// ([`depth`]).
    ///
    /// # Errors
    ///
    /// As [`McpServerConfig::launch_with`], and [`LaunchError::Toolhost`],
    /// [`LaunchError::Nested`].
    pub fn launch(&self, workspace: &Path) -> Result<ServerLaunch, LaunchError> {
        let launch = self.launch_with(workspace, &|var| std::env::var(var).ok())?;
        if let ServerLaunch::Stdio(spec) = &launch {
            let depth = depth();
            if depth > 0 {
                return Err(LaunchError::Nested(depth));
            }
            if let Some(program) = resolve_program(&spec.program, &spec.cwd)
                && is_toolhost(&program)
            {
                return Err(LaunchError::Toolhost(program));
            }
        }
        Ok(launch)
    }
}

/// The file `program` names when started in `cwd`: a path with a `/` against `cwd`, a bare
/// name looked up on this process's `PATH` (the server's own `PATH` may not be set).
pub fn resolve_program(program: &str, cwd: &Path) -> Option<PathBuf> {
    if program.contains('/') {
        return Some(crate::normalize(&cwd.join(program)));
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path).map(|d| cwd.join(d).join(program)).find(|p| p.is_file())
}

/// Whether `program` is this very toolhost binary, whatever name or path it goes by: the same
/// file (a link, a hard link, another path to it), or a copy of it (same size and content).
pub fn is_toolhost(program: &Path) -> bool {
    let Ok(me) = std::env::current_exe() else { return false };
    is_same_program(program, &me)
}

/// Whether `a` and `b` are the same program: one file, or two files with the same content.
pub fn is_same_program(a: &Path, b: &Path) -> bool {
    use std::os::unix::fs::MetadataExt as _;
    let (Ok(ma), Ok(mb)) = (std::fs::metadata(a), std::fs::metadata(b)) else { return false };
    if (ma.dev(), ma.ino()) == (mb.dev(), mb.ino()) {
        return true;
    }
    if !ma.is_file() || ma.len() != mb.len() {
        return false;
    }
    match (digest(a), digest(b)) {
        (Some(x), Some(y)) => x == y,
        _ => false,
    }
}

fn digest(path: &Path) -> Option<[u8; 32]> {
    use sha2::Digest as _;
    let mut file = std::fs::File::open(path).ok()?;
    let mut hasher = sha2::Sha256::new();
    std::io::copy(&mut file, &mut hasher).ok()?;
    Some(hasher.finalize().into())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn server(text: &str) -> McpServerConfig {
        let config = crate::Config::parse(text, Path::new("/w/toolhost.toml")).unwrap();
        config.mcp_servers.into_values().next().unwrap()
    }

    #[test]
    fn a_server_is_described_after_expansion() {
        let s = server(
            "[mcp_servers.s]\ncommand = \"${D}/py\"\nargs = [\"${PWD}/srv/server.py\", \"--x\"]\nenv = { PYTHONPATH = \"${D}/lib\", TOKEN = \"${T}\" }\n",
        );
        let env = |v: &str| match v {
            "D" => Some("/opt".to_string()),
            "PWD" => Some("/w".to_string()),
            "T" => Some("secret".to_string()),
            _ => None,
        };
        let ServerLaunch::Stdio(spec) = s.launch_with(Path::new("/w"), &env).unwrap() else { panic!() };
        assert_eq!(spec.program, "/opt/py");
        assert_eq!(spec.args, ["/w/srv/server.py", "--x"]);
        assert_eq!(spec.env["TOKEN"], "secret");
        assert_eq!(spec.env_written["TOKEN"], "${T}");
        assert_eq!(spec.analysed_line(), "PYTHONPATH=/opt/lib /opt/py /w/srv/server.py --x");
        let runs = crate::analyse_hook_command(&spec.analysed_line(), Path::new("/w"), None).unwrap();
        assert!(runs.files.contains(&PathBuf::from("/w/srv/server.py")), "{runs:?}");
        assert!(runs.dirs.contains(&PathBuf::from("/opt/lib")), "{runs:?}");
    }

    #[test]
    fn a_variable_whose_value_is_code_is_refused() {
        for var in ["NODE_OPTIONS", "LD_PRELOAD", "GIT_SSH_COMMAND", "JDK_JAVA_OPTIONS", "node_options"] {
            let s = server(&format!("[mcp_servers.s]\ncommand = \"node\"\nenv = {{ {var} = \"x\" }}\n"));
            let err = s.launch_with(Path::new("/w"), &|_| None).unwrap_err();
            assert!(matches!(err, LaunchError::CodeVariable { .. }), "{var}: {err}");
        }
    }

    #[test]
    fn a_variable_listing_the_workspace_is_refused_in_the_analysis() {
        for value in [".", "", ":/opt/lib", "/w", "/"] {
            let line = format!("PYTHONPATH={} python3 /opt/s.py", quote(value));
            let err = crate::analyse_hook_command(&line, Path::new("/w"), None).unwrap_err();
            assert!(matches!(err, crate::Unanalysable::LoadsFromWorkspace { .. }), "{value:?}: {err}");
        }
        let runs = crate::analyse_hook_command("PYTHONPATH=notes python3 /opt/s.py", Path::new("/w"), None).unwrap();
        assert_eq!(runs.dirs, [PathBuf::from("/w/notes")], "a place that is not there yet is protected too");
    }

    #[test]
    fn the_same_program_is_found_under_any_name() {
        let dir = tempfile::tempdir().unwrap();
        let a = dir.path().join("a");
        std::fs::write(&a, b"program").unwrap();
        let copy = dir.path().join("copy");
        std::fs::write(&copy, b"program").unwrap();
        let link = dir.path().join("link");
        std::os::unix::fs::symlink(&a, &link).unwrap();
        let hard = dir.path().join("hard");
        std::fs::hard_link(&a, &hard).unwrap();
        let other = dir.path().join("other");
        std::fs::write(&other, b"progran").unwrap();
        for same in [&copy, &link, &hard] {
            assert!(is_same_program(same, &a), "{}", same.display());
        }
        assert!(!is_same_program(&other, &a));
        assert!(!is_same_program(&dir.path().join("missing"), &a));
    }
}
