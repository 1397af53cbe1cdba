//! # toolhost-wasm-build
//!
//! Used by build scripts (`host/default-tools`, `tests`) to compile a Cargo workspace of tool
//! components for `wasm32-wasip2` and hand back the `.wasm` files, the way wasmtime's
//! test-programs crate builds its guests.
//!
//! The nested build gets a clean environment (no `CARGO_ENCODED_RUSTFLAGS` or other variables
//! of the outer build, which target the host) and its own target directory inside the outer
//! one, so host and guest artefacts never mix and both stay warm.
#![deny(missing_docs)]

use std::path::{Path, PathBuf};
use std::process::Command;

/// The target every tool is built for.
pub const TARGET: &str = "wasm32-wasip2";

/// Build the `crates` of the workspace at `workspace_dir` in release mode, and return
/// `(crate name with `-` as `_`, path to its .wasm)`, sorted by name. Prints the
/// `cargo:rerun-if-changed` lines for the workspace's sources.
///
/// A crate is either a `cdylib` (a component exporting functions, e.g. a tool) or a binary of
/// the crate's name (a `wasi:cli/command` component, from `fn main`). Cargo names a library's
/// output after the crate with `-` as `_` (`wit_functions.wasm`) and a binary's after the binary
/// as written (`wit-command.wasm`); both are found.
///
/// # Panics
///
/// With a message saying what to do, if the target is not installed and cannot be, or if the
/// build fails. (A build script has no better way to stop.)
pub fn build_workspace(workspace_dir: &Path, crates: &[&str]) -> Vec<(String, PathBuf)> {
    rerun_if_changed(workspace_dir);
    let target_dir = target_dir().join("wasm-tools");
    ensure_target();

    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let mut cmd = Command::new(cargo);
    cmd.current_dir(workspace_dir)
        .args(["build", "--release", "--locked", "--target", TARGET])
        .arg("--target-dir")
        .arg(&target_dir);
    for c in crates {
        cmd.args(["-p", c]);
    }
    for (key, _) in std::env::vars_os() {
        let key = key.to_string_lossy();
        if key.starts_with("CARGO_") && key != "CARGO_HOME"
            || key == "RUSTFLAGS"
            || key == "RUSTC_WRAPPER"
            || key == "RUSTC_WORKSPACE_WRAPPER"
        {
            cmd.env_remove(key.as_ref());
        }
    }
    let status = cmd.status().unwrap_or_else(|e| panic!("cannot run cargo to build the tool components: {e}"));
    assert!(
        status.success(),
        "building the tool components in {} failed (see the output above)",
        workspace_dir.display()
    );

    let out = target_dir.join(TARGET).join("release");
    let mut built: Vec<(String, PathBuf)> = crates
        .iter()
        .map(|c| {
            let stem = c.replace('-', "_");
            let library = out.join(format!("{stem}.wasm"));
            let binary = out.join(format!("{c}.wasm"));
            let path = if library.is_file() { library } else { binary };
            assert!(
                path.is_file(),
                "expected {} (a cdylib) or {c}.wasm (a binary) after the build",
                out.join(format!("{stem}.wasm")).display()
            );
            (stem, path)
        })
        .collect();
    built.sort();
    built
}

/// The outer build's target directory: the ancestor of `OUT_DIR` that Cargo marked with
/// `CACHEDIR.TAG` (this finds it whatever `CARGO_TARGET_DIR` or profile is in use).
fn target_dir() -> PathBuf {
    let out_dir = PathBuf::from(std::env::var("OUT_DIR").expect("OUT_DIR is set for build scripts"));
    out_dir.ancestors().find(|p| p.join("CACHEDIR.TAG").is_file()).map(Path::to_path_buf).unwrap_or(out_dir)
}

fn ensure_target() {
    let installed = Command::new("rustup")
        .args(["target", "list", "--installed"])
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).lines().any(|l| l.trim() == TARGET));
    match installed {
        Ok(true) => {}
        Ok(false) => {
            println!("cargo:warning=installing the {TARGET} target with rustup");
            let ok = Command::new("rustup").args(["target", "add", TARGET]).status().is_ok_and(|s| s.success());
            assert!(ok, "the {TARGET} target is missing and `rustup target add {TARGET}` failed; run it by hand");
        }
        // No rustup: the toolchain may still have the target; the build will say if not.
        Err(_) => println!(
            "cargo:warning=rustup not found; assuming the {TARGET} target is installed (else: rustup target add {TARGET})"
        ),
    }
}

fn rerun_if_changed(dir: &Path) {
    println!("cargo:rerun-if-changed={}", dir.join("Cargo.toml").display());
    println!("cargo:rerun-if-changed={}", dir.join("Cargo.lock").display());
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() && path.join("Cargo.toml").is_file() {
            println!("cargo:rerun-if-changed={}", path.join("Cargo.toml").display());
            println!("cargo:rerun-if-changed={}", path.join("src").display());
            // A crate's own WIT (read by `wit_bindgen::generate!({ path: "wit" })`).
            if path.join("wit").is_dir() {
                println!("cargo:rerun-if-changed={}", path.join("wit").display());
            }
        }
    }
}
