//! What an interpreter loads on its own, beyond the file its command names: the files beside
//! its script (Python's imports, Ruby's `require_relative`) and the files of its working
//! directory, which for a hook or a server is the workspace (Lua's `./?.lua`, PHP's
//! `include_path`, R's `.Rprofile`, Bun's `bunfig.toml`). One table, so that every place that
//! decides what a host program loads reads the same answer.

use std::path::Path;

/// The kind of program that runs a file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Loader {
    /// `sh`, `bash`, …: loads nothing beside its script on its own (`source` by a path is
    /// the script's own doing).
    Shell,
    /// CPython, PyPy: imports modules from the script's directory first (`sys.path[0]`).
    Python,
    /// Node, tsx, ts-node: `require('./name')` loads a file named exactly `name`, extension
    /// or not, before `name.js`.
    Node,
    /// Bun: as Node, and reads `bunfig.toml` (preloads) and `.env` files where it runs.
    Bun,
    /// Deno: reads `deno.json` (an import map) where it runs.
    Deno,
    /// Lua: `require` looks in `./?.lua` (the working directory).
    Lua,
    /// PHP: `include_path` starts with `.` (the working directory).
    Php,
    /// Ruby: `require_relative` beside the script.
    Ruby,
    /// Perl: `use lib` with `FindBin` beside the script.
    Perl,
    /// R: `Rscript` sources `.Rprofile` and reads `.Renviron` where it runs.
    R,
    /// Tcl: `source` beside the script.
    Tcl,
    /// A program run by its path: a binary may load libraries beside it (`$ORIGIN`).
    Program,
}

/// What a loader at the workspace root loads from beside it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Beside {
    /// Files matching these patterns (at any depth, and anywhere a link at the root could
    /// lead): asked before writing, in every mode, instead of protecting the whole workspace.
    Patterns(&'static [&'static str]),
    /// No pattern names every file it may load: the script must move into a folder of its own.
    Unbounded(&'static str),
}

impl Loader {
    /// The loader of an interpreter called `name` (its last path component).
    pub fn of_interpreter(name: &str) -> Option<Loader> {
        let python = ["python", "pypy"]
            .iter()
            .any(|p| name.strip_prefix(p).is_some_and(|v| v.chars().all(|c| c.is_ascii_digit() || c == '.')));
        Some(match name {
            _ if python => Loader::Python,
            "sh" | "bash" | "dash" | "zsh" | "ksh" | "mksh" | "ash" | "yash" | "posh" | "fish" => Loader::Shell,
            "node" | "nodejs" | "ts-node" | "tsx" => Loader::Node,
            "bun" => Loader::Bun,
            "deno" => Loader::Deno,
            "lua" | "luajit" => Loader::Lua,
            "php" => Loader::Php,
            "ruby" => Loader::Ruby,
            "perl" => Loader::Perl,
            "Rscript" | "R" => Loader::R,
            "tclsh" | "wish" => Loader::Tcl,
            _ => return None,
        })
    }

    /// What it loads from beside a script at the workspace root (where protecting the
    /// script's directory would protect everything).
    pub fn beside_root(self) -> Beside {
        match self {
            Loader::Shell => Beside::Patterns(&[]),
            // Modules, bytecode (`__pycache__/` and sourceless), extension modules; packages
            // and namespace packages are directories of these.
            Loader::Python => Beside::Patterns(&["*.py", "*.pyc", "*.so"]),
            Loader::Node | Loader::Bun | Loader::Deno => Beside::Unbounded(
                "a JavaScript `require('./name')` loads a file named exactly `name`, with no extension, before \
                 `name.js`, so no pattern names every file it may load from beside it",
            ),
            Loader::Lua => Beside::Patterns(&["*.lua", "*.so"]),
            Loader::Php => Beside::Patterns(&["*.php", "*.inc", "*.phtml"]),
            Loader::Ruby => Beside::Patterns(&["*.rb", "*.so"]),
            Loader::Perl => Beside::Patterns(&["*.pm", "*.pl", "*.so"]),
            Loader::R => Beside::Patterns(&["*.R", "*.so"]),
            Loader::Tcl => Beside::Patterns(&["*.tcl", "*.so"]),
            Loader::Program => Beside::Patterns(&["*.so", "*.so.*"]),
        }
    }

    /// What it loads from its working directory (the workspace) wherever its script is, as
    /// workspace-relative patterns.
    pub fn from_working_directory(self) -> &'static [&'static str] {
        match self {
            // `require "a.b"` tries `./a/b.lua`, `./a/b/init.lua`, `./a/b.so`.
            Loader::Lua => &["*.lua", "*.so"],
            // A relative include is looked up in the working directory first.
            Loader::Php => &["*.php", "*.inc", "*.phtml"],
            Loader::R => &["/.Rprofile", "/.Renviron"],
            Loader::Bun => &["/bunfig.toml", "/.env", "/.env.*"],
            Loader::Deno => &["/deno.json", "/deno.jsonc", "/import_map.json", "/package.json"],
            _ => &[],
        }
    }

    /// The loader a script's `#!` line names (`#!/usr/bin/env python3` is Python).
    pub(super) fn of_shebang(line: &str) -> Option<Loader> {
        let mut words = line.split_whitespace();
        let first = words.next()?;
        let name = first.rsplit('/').next()?;
        if name == "env" {
            let program = words.find(|w| !w.starts_with('-') && !w.contains('='))?;
            return Loader::of_interpreter(program.rsplit('/').next()?);
        }
        Loader::of_interpreter(name)
    }
}

/// A pattern naming exactly `path` (absolute): `//` and its components with glob characters
/// escaped.
pub(super) fn literal_pattern(path: &Path) -> String {
    let mut out = String::from("/");
    for c in path.to_string_lossy().chars() {
        if matches!(c, '*' | '?' | '[' | ']' | '{' | '}' | '\\') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interpreters_and_shebangs_name_their_loaders() {
        assert_eq!(Loader::of_interpreter("python3.12"), Some(Loader::Python));
        assert_eq!(Loader::of_interpreter("pypy3"), Some(Loader::Python));
        assert_eq!(Loader::of_interpreter("pythonista"), None);
        assert_eq!(Loader::of_shebang("/usr/bin/env -S python3 -u"), Some(Loader::Python));
        assert_eq!(Loader::of_shebang("/usr/bin/env NODE_ENV=x node"), Some(Loader::Node));
        assert_eq!(Loader::of_shebang("/bin/bash -e"), Some(Loader::Shell));
        assert_eq!(Loader::of_shebang("/opt/thing"), None);
    }

    #[test]
    fn literal_patterns_escape_glob_characters() {
        assert_eq!(literal_pattern(Path::new("/w/a[1]/package.json")), "//w/a\\[1\\]/package.json");
        let p = crate::PathPattern::new(&literal_pattern(Path::new("/w/a[1]/*.json"))).unwrap();
        assert!(p.matches(Path::new("/w/a[1]/*.json"), Path::new("/w")));
        assert!(!p.matches(Path::new("/w/a1/x.json"), Path::new("/w")));
    }
}
