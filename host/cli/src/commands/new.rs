//! `toolhost new --lang rust|python|js|c NAME`: a tool project that builds with one command
//! (`./build.sh`, writing `dist/NAME.wasm`) and answers `toolhost --tools DIR/dist call NAME
//! '{"path":"…"}'` out of the box.
//!
//! The templates are embedded in the binary (`templates/` beside this crate, plus the WIT of
//! the repository and the shared files of `examples/guests`), so a project can be created
//! anywhere, and it carries its own copy of the WIT world: nothing in it refers back to a
//! toolhost checkout: the Rust template carries a copy of the SDK, the C template builds with
//! `toolhost guest`, and each ships a `toolhost-test.toml` its build script runs.

use crate::setup::GlobalArgs;
use anyhow::{Context, Result, bail};
use clap::{Args, ValueEnum};
use std::path::{Path, PathBuf};

#[derive(Args, Debug)]
pub struct NewCommand {
    /// The language of the project.
    #[arg(long, value_enum)]
    lang: Lang,
    /// The tool's name, as models call it (letters, digits, `_`, `-`; starting with a letter).
    name: String,
    /// Where to create the project (default: ./NAME). Must not exist, or be empty.
    #[arg(long)]
    dir: Option<PathBuf>,
}

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
enum Lang {
    Rust,
    Python,
    Js,
    C,
}

/// The WIT world every project carries (`wit/tool@0.1.0`, or `wit/deps/tool` for JS).
const WIT_PACKAGE: &str = include_str!("../../../../wit/tool@0.1.0/package.wit");
const WIT_TYPES: &str = include_str!("../../../../wit/tool@0.1.0/types.wit");
/// WASI 0.2.12 interfaces the JavaScript template imports to read files.
const WASI_IO: &str = include_str!("../../../../examples/guests/js/wit/deps/io/io.wit");
const WASI_CLOCKS: &str = include_str!("../../../../examples/guests/js/wit/deps/clocks/clocks.wit");
const WASI_FILESYSTEM: &str = include_str!("../../../../examples/guests/js/wit/deps/filesystem/filesystem.wit");
/// Shared with the examples: the componentize-js driver, its lock file, the C JSON reader.
const JS_BUILD: &str = include_str!("../../../../examples/guests/js/build.mjs");
const JS_LOCK: &str = include_str!("../../../../examples/guests/js/package-lock.json");
const C_JSON: &str = include_str!("../../../../examples/guests/c/json.h");

/// The JavaScript template's world: the toolhost `plugin` world plus the WASI filesystem.
const JS_WORLD: &str = r#"// The toolhost `plugin` world, plus the WASI filesystem the tool reads files with.
package local:tool;

world tool {
  include toolhost:tool/plugin@0.1.0;
  import wasi:filesystem/types@0.2.12;
  import wasi:filesystem/preopens@0.2.12;
}
"#;

/// The step every template's build script ends with: the contract and the cases.
const TEST_STEP: &str = r#"# The contract and the cases of toolhost-test.toml (TOOLHOST_NO_TEST=1 skips this).
if [ -z "${TOOLHOST_NO_TEST:-}" ]; then
    if command -v "${TOOLHOST:-toolhost}" >/dev/null; then
        "${TOOLHOST:-toolhost}" test .
    else
        echo "toolhost is not on PATH (or in \$TOOLHOST): skipping \`toolhost test\`" >&2
    fi
fi"#;

/// The Rust SDK, copied into Rust projects (its manifest stands alone; its WIT is inside).
const SDK_MANIFEST: &str = include_str!("../../../../plugins/sdk/Cargo.toml");
const SDK_LIB: &str = include_str!("../../../../plugins/sdk/src/lib.rs");
const SDK_WIT_PACKAGE: &str = include_str!("../../../../plugins/sdk/wit/tool@0.1.0/package.wit");
const SDK_WIT_TYPES: &str = include_str!("../../../../plugins/sdk/wit/tool@0.1.0/types.wit");
const SDK_WIT_SESSION: &str = include_str!("../../../../plugins/sdk/wit/session@0.1.0/package.wit");
#[cfg(test)]
const WIT_SESSION: &str = include_str!("../../../../wit/session@0.1.0/package.wit");

/// `(path in the project, contents, executable)`.
type File = (String, String, bool);

impl NewCommand {
    pub async fn execute(self, _global: &GlobalArgs) -> Result<u8> {
        let name = &self.name;
        check_name(name)?;
        let dir = self.dir.clone().unwrap_or_else(|| PathBuf::from(name));
        if dir.exists() && dir.read_dir().with_context(|| format!("reading {}", dir.display()))?.next().is_some() {
            bail!("{} already exists and is not empty; choose another NAME or --dir", dir.display());
        }
        let files = files(self.lang, name);
        for (path, contents, executable) in &files {
            write(&dir.join(path), contents, *executable)?;
        }
        let shown = dir.display();
        crate::output::outln!("created {} tool {name} in {shown}", self.lang_name());
        crate::output::outln!("  build:  {shown}/build.sh");
        crate::output::outln!(
            "  try:    toolhost --tools {shown}/dist --allow {name} call {name} '{{\"path\":\"README.md\"}}'"
        );
        if self.lang == Lang::C {
            crate::output::outln!("  (needs clang + wasi-libc, and toolhost on PATH or in $TOOLHOST: see build.sh)");
        }
        Ok(0)
    }

    fn lang_name(&self) -> &'static str {
        match self.lang {
            Lang::Rust => "a Rust",
            Lang::Python => "a Python",
            Lang::Js => "a JavaScript",
            Lang::C => "a C",
        }
    }
}

fn check_name(name: &str) -> Result<()> {
    let mut chars = name.chars();
    let ok = chars.next().is_some_and(|c| c.is_ascii_alphabetic())
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
        && name.len() <= 64;
    if !ok {
        bail!(
            "invalid tool name {name:?}: use 1-64 letters, digits, `_` or `-`, starting with a letter (e.g. LineCount)"
        );
    }
    Ok(())
}

/// Replace the placeholders of a template.
fn fill(template: &str, name: &str) -> String {
    let krate = name.to_lowercase().replace('_', "-");
    template
        .replace("{{name}}", name)
        .replace("{{crate}}", &krate)
        .replace("{{crate_file}}", &krate.replace('-', "_"))
        .replace("{{world}}", "tool")
        .replace("{{test}}", TEST_STEP)
}

fn files(lang: Lang, name: &str) -> Vec<File> {
    let f = |t: &str| fill(t, name);
    let file = |path: &str, text: String, executable: bool| -> File { (path.to_string(), text, executable) };
    let wit = |dir: &str, name: &str, text: &str| -> File { (format!("{dir}/{name}"), text.to_string(), false) };
    let mut files = vec![
        file(".gitignore", "/dist\n/build\n/target\n/.venv\n/node_modules\n".into(), false),
        file("toolhost-test.toml", f(include_str!("../../templates/toolhost-test.toml")), false),
    ];
    match lang {
        Lang::Rust => files.extend([
            file("Cargo.toml", f(include_str!("../../templates/rust/Cargo.toml")), false),
            file("src/lib.rs", f(include_str!("../../templates/rust/src/lib.rs")), false),
            file("build.sh", f(include_str!("../../templates/rust/build.sh")), true),
            file("toolhost-sdk/Cargo.toml", SDK_MANIFEST.to_string(), false),
            file("toolhost-sdk/src/lib.rs", SDK_LIB.to_string(), false),
            wit("toolhost-sdk/wit/tool@0.1.0", "package.wit", SDK_WIT_PACKAGE),
            wit("toolhost-sdk/wit/tool@0.1.0", "types.wit", SDK_WIT_TYPES),
            wit("toolhost-sdk/wit/session@0.1.0", "package.wit", SDK_WIT_SESSION),
        ]),
        Lang::Python => files.extend([
            file("app.py", f(include_str!("../../templates/python/app.py")), false),
            file("requirements.txt", f(include_str!("../../templates/python/requirements.txt")), false),
            file("build.sh", f(include_str!("../../templates/python/build.sh")), true),
        ]),
        Lang::Js => {
            let package = serde_json::json!({
                "name": fill("{{crate}}", name),
                "private": true,
                "type": "module",
                "dependencies": lock_dependencies(),
            });
            files.extend([
                file("tool.js", f(include_str!("../../templates/js/tool.js")), false),
                file("build.mjs", JS_BUILD.to_string(), false),
                file("build.sh", f(include_str!("../../templates/js/build.sh")), true),
                file("package.json", format!("{:#}\n", package), false),
                file("package-lock.json", JS_LOCK.replace("toolhost-example-outline", &fill("{{crate}}", name)), false),
                file("wit/world.wit", JS_WORLD.to_string(), false),
                wit("wit/deps/io", "io.wit", WASI_IO),
                wit("wit/deps/clocks", "clocks.wit", WASI_CLOCKS),
                wit("wit/deps/filesystem", "filesystem.wit", WASI_FILESYSTEM),
                wit("wit/deps/tool", "package.wit", WIT_PACKAGE),
                wit("wit/deps/tool", "types.wit", WIT_TYPES),
            ]);
            return files;
        }
        Lang::C => files.extend([
            file("tool.c", f(include_str!("../../templates/c/tool.c")), false),
            file("json.h", C_JSON.to_string(), false),
            file("build.sh", f(include_str!("../../templates/c/build.sh")), true),
        ]),
    }
    if lang != Lang::Rust {
        files.push(wit("wit/tool@0.1.0", "package.wit", WIT_PACKAGE));
        files.push(wit("wit/tool@0.1.0", "types.wit", WIT_TYPES));
    }
    files
}

/// The pinned dependencies of the lock file (its root package), for package.json.
fn lock_dependencies() -> serde_json::Value {
    let lock: serde_json::Value = serde_json::from_str(JS_LOCK).expect("the embedded package-lock.json is JSON");
    lock["packages"][""]["dependencies"].clone()
}

fn write(path: &Path, contents: &str, executable: bool) -> Result<()> {
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).with_context(|| format!("creating {}", parent.display()))?;
    }
    std::fs::write(path, contents).with_context(|| format!("writing {}", path.display()))?;
    #[cfg(unix)]
    if executable {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755))
            .with_context(|| format!("making {} executable", path.display()))?;
    }
    #[cfg(not(unix))]
    let _ = executable;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_checked() {
        assert!(check_name("LineCount").is_ok());
        assert!(check_name("my-tool_2").is_ok());
        for bad in ["", "2fast", "has space", "dots.no", "x/y"] {
            assert!(check_name(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn every_template_is_filled() {
        for lang in [Lang::Rust, Lang::Python, Lang::Js, Lang::C] {
            let files = files(lang, "My_Tool");
            assert!(files.iter().any(|(p, _, x)| p == "build.sh" && *x), "{lang:?} has an executable build.sh");
            for (path, text, _) in &files {
                assert!(!text.contains("{{"), "{lang:?} {path} has an unfilled placeholder");
            }
        }
        let rust = files(Lang::Rust, "My_Tool");
        assert!(rust.iter().any(|(p, _, _)| p == "toolhost-sdk/wit/tool@0.1.0/types.wit"), "the SDK travels with it");
        let cargo = &rust.iter().find(|(p, _, _)| p == "Cargo.toml").unwrap().1;
        assert!(cargo.contains("name = \"my-tool\""), "{cargo}");
    }

    /// The SDK carries a copy of the WIT world (so it builds and packages on its own): the
    /// copy must be the world the host implements.
    #[test]
    fn the_sdk_binds_the_repository_wit() {
        assert_eq!(SDK_WIT_PACKAGE, WIT_PACKAGE, "plugins/sdk/wit/tool@0.1.0/package.wit differs from wit/");
        assert_eq!(SDK_WIT_TYPES, WIT_TYPES, "plugins/sdk/wit/tool@0.1.0/types.wit differs from wit/");
        assert_eq!(SDK_WIT_SESSION, WIT_SESSION, "plugins/sdk/wit/session@0.1.0/package.wit differs from wit/");
    }
}
