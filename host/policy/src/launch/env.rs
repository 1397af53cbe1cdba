//! The environment variables that decide what code a program loads, in one place.
//!
//! A hook or a stdio MCP server runs on the host, outside every sandbox. Its command is
//! analysed, protected and pinned (DESIGN §5, §5a), but a variable in its environment can make
//! the same command load other code: `PYTHONPATH=notes` imports a tool-written
//! `notes/sitecustomize.py`, `GIT_DIR=notes/.g` makes `git status` run a tool-written
//! `core.fsmonitor`, `LD_PRELOAD` loads a library into every program. Each variable here is
//! one of two kinds:
//!
//! - [`Kind::Paths`]: a list of places code is loaded from (`:`-separated; an empty entry is
//!   the working directory, the workspace). Each place is protected from tools and pinned
//!   like a hook's own directory; one that is the workspace or above it is refused.
//! - [`Kind::Code`]: the value is itself code, options or a command line (`NODE_OPTIONS`,
//!   `GIT_SSH_COMMAND`, `LD_PRELOAD`), which toolhost cannot follow: refused.
//!
//! Sources: the manuals of each program named (python(1) "ENVIRONMENT VARIABLES", node(1),
//! perlrun(1), ruby(1), git(1) "ENVIRONMENT VARIABLES" and git-config(1), ld.so(8), bash(1)
//! "INVOCATION", the JDK's `java` launcher, iconv(3)/gconv, OpenSSL's config(5), less(1)),
//! and Claude Code's own list of variables a settings file may not set for hooks.

/// How a variable decides what runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// `:`-separated places code is loaded from.
    Paths,
    /// Code, options or a command line: cannot be followed.
    Code,
}

/// One recognised variable: its name (a trailing `*` is a prefix), its kind and who reads it.
#[derive(Debug, Clone, Copy)]
pub struct LoaderVariable {
    /// The name, or a prefix ending in `*`.
    pub name: &'static str,
    /// Paths or code.
    pub kind: Kind,
    /// What reads it, for messages.
    pub read_by: &'static str,
}

const fn v(name: &'static str, kind: Kind, read_by: &'static str) -> LoaderVariable {
    LoaderVariable { name, kind, read_by }
}

use Kind::{Code, Paths};

/// Every variable toolhost recognises as deciding what code a program loads.
pub const LOADER_VARIABLES: &[LoaderVariable] = &[
    // The shell and the programs it finds.
    v("PATH", Code, "every shell: which programs names run"),
    v("BASH_ENV", Paths, "bash: a file run before a script"),
    v("ENV", Paths, "sh: a file run at start"),
    v("BASH_FUNC_*", Code, "bash: imported functions"),
    v("SHELLOPTS", Code, "bash: options"),
    v("BASHOPTS", Code, "bash: options"),
    v("PROMPT_COMMAND", Code, "bash: a command"),
    v("PS4", Code, "bash -x: expanded, command substitution included"),
    v("IFS", Code, "sh: how words split"),
    v("CDPATH", Paths, "sh: where cd looks"),
    v("HOME", Paths, "start-up files of shells, git, Python's user site"),
    v("ZDOTDIR", Paths, "zsh: start-up files"),
    v("XDG_CONFIG_HOME", Paths, "git and others: their configuration"),
    // The dynamic loader and C libraries.
    v("LD_*", Code, "ld.so: libraries loaded into every program"),
    v("DYLD_*", Code, "dyld: libraries loaded into every program"),
    v("GCONV_PATH", Paths, "glibc iconv: conversion modules"),
    v("LOCPATH", Paths, "glibc: locale data"),
    v("OPENSSL_CONF", Paths, "OpenSSL: a configuration that loads engines"),
    v("OPENSSL_ENGINES", Paths, "OpenSSL: engine modules"),
    v("OPENSSL_MODULES", Paths, "OpenSSL: provider modules"),
    // Python.
    v("PYTHONPATH", Paths, "python: module search path"),
    v("PYTHONHOME", Paths, "python: the standard library"),
    v("PYTHONUSERBASE", Paths, "python: the user site (with its .pth files)"),
    v("PYTHONSTARTUP", Paths, "python: a file run at start"),
    v("PYTHONPYCACHEPREFIX", Paths, "python: where compiled modules are loaded from"),
    v("PYTHONPLATLIBDIR", Paths, "python: the platform library directory"),
    v("PYTHONEXECUTABLE", Paths, "python: which interpreter"),
    v("PYTHONWARNINGS", Code, "python: warning filters, which import the modules they name"),
    v("PYTHONBREAKPOINT", Code, "python: a callable imported at breakpoint()"),
    v("VIRTUAL_ENV", Paths, "python tools: the virtual environment"),
    v("CONDA_PREFIX", Paths, "conda: the environment"),
    // Node.
    v("NODE_OPTIONS", Code, "node: options, --require and --import included"),
    v("NODE_PATH", Paths, "node: module search path"),
    v("NODE_REPL_EXTERNAL_MODULE", Code, "node: a module run as the REPL"),
    v("npm_config_*", Code, "npm: its configuration, scripts included"),
    v("NPM_CONFIG_*", Code, "npm: its configuration, scripts included"),
    // Perl, Ruby, Lua, Tcl, R.
    v("PERL5LIB", Paths, "perl: module search path"),
    v("PERLLIB", Paths, "perl: module search path"),
    v("PERL5OPT", Code, "perl: options, -M included"),
    v("PERL5DB", Code, "perl -d: the debugger's code"),
    v("RUBYLIB", Paths, "ruby: library search path"),
    v("RUBYOPT", Code, "ruby: options, -r included"),
    v("GEM_PATH", Paths, "ruby: gems"),
    v("GEM_HOME", Paths, "ruby: gems"),
    v("BUNDLE_GEMFILE", Paths, "bundler: the Gemfile"),
    v("LUA_PATH*", Paths, "lua: module search path"),
    v("LUA_CPATH*", Paths, "lua: C module search path"),
    v("LUA_INIT*", Code, "lua: code (or @file) run at start"),
    v("TCLLIBPATH", Paths, "tcl: package search path"),
    v("R_LIBS*", Paths, "R: library search path"),
    v("R_PROFILE*", Paths, "R: a file run at start"),
    // PHP: an ini file can name a file prepended to every script (`auto_prepend_file`).
    v("PHPRC", Paths, "php: where php.ini is"),
    v("PHP_INI_SCAN_DIR", Paths, "php: more ini files"),
    // Java.
    v("JAVA_TOOL_OPTIONS", Code, "the JVM: options, agents included"),
    v("JDK_JAVA_OPTIONS", Code, "the java launcher: options, agents included"),
    v("_JAVA_OPTIONS", Code, "the JVM: options, agents included"),
    v("CLASSPATH", Paths, "java: class search path"),
    // Git.
    v("GIT_DIR", Paths, "git: the repository, its hooks and config (core.fsmonitor)"),
    v("GIT_WORK_TREE", Paths, "git: the work tree"),
    v("GIT_COMMON_DIR", Paths, "git: the repository's common directory"),
    v("GIT_EXEC_PATH", Paths, "git: its sub-commands"),
    v("GIT_TEMPLATE_DIR", Paths, "git: hooks copied into new repositories"),
    v("GIT_CONFIG", Paths, "git: a configuration file"),
    v("GIT_CONFIG_GLOBAL", Paths, "git: the global configuration file"),
    v("GIT_CONFIG_SYSTEM", Paths, "git: the system configuration file"),
    v("GIT_CONFIG_COUNT", Code, "git: configuration given in the environment"),
    v("GIT_CONFIG_KEY_*", Code, "git: configuration given in the environment"),
    v("GIT_CONFIG_VALUE_*", Code, "git: configuration given in the environment"),
    v("GIT_CONFIG_PARAMETERS", Code, "git: configuration given in the environment"),
    v("GIT_SSH", Code, "git: the ssh program"),
    v("GIT_SSH_COMMAND", Code, "git: the ssh command"),
    v("GIT_EXTERNAL_DIFF", Code, "git: a diff program"),
    v("GIT_PAGER", Code, "git: the pager"),
    v("GIT_EDITOR", Code, "git: the editor"),
    v("GIT_SEQUENCE_EDITOR", Code, "git: the rebase editor"),
    v("GIT_ASKPASS", Code, "git: a password program"),
    v("GIT_PROXY_COMMAND", Code, "git: a proxy command"),
    v("SSH_ASKPASS", Code, "ssh: a password program"),
    // Programs other programs start.
    v("PAGER", Code, "many programs: the pager"),
    v("EDITOR", Code, "many programs: the editor"),
    v("VISUAL", Code, "many programs: the editor"),
    v("BROWSER", Code, "many programs: the browser"),
    v("LESSOPEN", Code, "less: an input preprocessor"),
    v("LESSCLOSE", Code, "less: an input postprocessor"),
    v("SHELL", Code, "many programs: the shell they start"),
    // toolhost's own: a chain of toolhost processes and its state are toolhost's business.
    v("TOOLHOST_*", Code, "toolhost itself"),
];

/// The recognised variable `name` is, if any (case-insensitive: a variable's case differs
/// between systems, and a near miss must not slip through).
pub fn loader_variable(name: &str) -> Option<&'static LoaderVariable> {
    let upper = name.to_ascii_uppercase();
    LOADER_VARIABLES.iter().find(|v| match v.name.strip_suffix('*') {
        Some(prefix) => upper.starts_with(&prefix.to_ascii_uppercase()),
        None => upper == v.name.to_ascii_uppercase(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_variables_of_the_known_attacks_are_recognised() {
        for (name, kind) in [
            ("PYTHONPATH", Paths),
            ("pythonpath", Paths),
            ("GIT_DIR", Paths),
            ("GIT_EXTERNAL_DIFF", Code),
            ("GIT_SSH_COMMAND", Code),
            ("PYTHONPYCACHEPREFIX", Paths),
            ("JDK_JAVA_OPTIONS", Code),
            ("GCONV_PATH", Paths),
            ("LD_PRELOAD", Code),
            ("LD_LIBRARY_PATH", Code),
            ("DYLD_INSERT_LIBRARIES", Code),
            ("NODE_OPTIONS", Code),
            ("GIT_CONFIG_KEY_0", Code),
            ("BASH_FUNC_x%%", Code),
            ("TOOLHOST_DEPTH", Code),
            ("PATH", Code),
            ("LUA_INIT_5_4", Code),
            ("PERL5DB", Code),
            ("PHPRC", Paths),
            ("PHP_INI_SCAN_DIR", Paths),
        ] {
            assert_eq!(loader_variable(name).map(|v| v.kind), Some(kind), "{name}");
        }
        for plain in ["TRACKER_TOKEN", "RUST_LOG", "LANG", "PATHS", "GIT_AUTHOR_NAME"] {
            assert!(loader_variable(plain).is_none(), "{plain}");
        }
    }
}
