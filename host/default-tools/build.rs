//! Builds the default tools in `plugins/` for wasm32-wasip2, compiles each to native code with
//! the runtime's engine configuration (`toolhost-engine-config`), and generates `TOOLS` and
//! `PRECOMPILED`.
//!
//! Ahead-of-time code is what makes a fresh machine fast: compiling the seven tools at start
//! takes seconds on two cores, loading their embedded code takes milliseconds. It is skipped
//! (the runtime then compiles at first use, as for any tool) when cross-compiling, when
//! `TOOLHOST_PRECOMPILE=0`, or when no engine can be built here.

use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};

const TOOLS: &[(&str, &str)] = &[
    ("Read", "tool-read"),
    ("Write", "tool-write"),
    ("Edit", "tool-edit"),
    ("Glob", "tool-glob"),
    ("Grep", "tool-grep"),
    ("LS", "tool-ls"),
    ("WebFetch", "tool-webfetch"),
];

fn main() {
    let manifest = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").unwrap());
    let out_dir = PathBuf::from(std::env::var("OUT_DIR").unwrap());
    let plugins = manifest.join("../../plugins");
    println!("cargo:rerun-if-changed={}", manifest.join("../../wit").display());
    println!("cargo:rerun-if-changed={}", plugins.join("sdk").display());
    println!("cargo:rerun-if-changed={}", manifest.join("../engine-config/src").display());
    println!("cargo:rerun-if-env-changed=TOOLHOST_PRECOMPILE");
    let crates: Vec<&str> = TOOLS.iter().map(|(_, c)| *c).collect();
    let built = toolhost_wasm_build::build_workspace(&plugins, &crates);
    let paths: Vec<(&str, &Path)> = TOOLS
        .iter()
        .map(|(name, krate)| {
            let stem = krate.replace('-', "_");
            let (_, path) = built.iter().find(|(s, _)| *s == stem).expect("every tool was built");
            (*name, path.as_path())
        })
        .collect();

    let mut code = String::from(
        "/// The embedded default tools: (name, component bytes).\npub const TOOLS: &[(&str, &[u8])] = &[\n",
    );
    for (name, path) in &paths {
        code.push_str(&format!("    ({name:?}, include_bytes!({:?})),\n", path.display().to_string()));
    }
    code.push_str("];\n\n");
    code.push_str(
        "/// Native code of the default tools compiled at build time: (name, sha256 of the \
         component it was compiled from, wasmtime serialisation).\n\
         pub(crate) const PRECOMPILED: &[(&str, &str, &[u8])] = &[\n",
    );
    match precompiler() {
        Ok(engine) => {
            for (name, path) in &paths {
                let wasm = std::fs::read(path).unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
                let cwasm = engine
                    .precompile_component(&wasm)
                    .unwrap_or_else(|e| panic!("cannot compile the default tool {name}: {e:#}"));
                let file = out_dir.join(format!("{name}.cwasm"));
                std::fs::write(&file, cwasm).unwrap_or_else(|e| panic!("cannot write {}: {e}", file.display()));
                let sha = hex::encode(Sha256::digest(&wasm));
                code.push_str(&format!("    ({name:?}, {sha:?}, include_bytes!({:?})),\n", file.display().to_string()));
            }
        }
        Err(why) => println!("cargo:warning=the default tools are not precompiled ({why}); they compile at first use"),
    }
    code.push_str("];\n");
    std::fs::write(out_dir.join("tools.rs"), code).unwrap();
}

/// The engine that compiles ahead of time, or why there is none.
fn precompiler() -> Result<wasmtime::Engine, String> {
    if std::env::var("TOOLHOST_PRECOMPILE").is_ok_and(|v| v == "0") {
        return Err("TOOLHOST_PRECOMPILE=0".into());
    }
    let (host, target) = (std::env::var("HOST").unwrap_or_default(), std::env::var("TARGET").unwrap_or_default());
    // No pooling here: the pool reserves address space, and the allocator is no part of what
    // compiled code depends on (the runtime's pooled engine loads this code).
    let options = toolhost_engine_config::EngineOptions::default();
    let mut config = toolhost_engine_config::config(&options, false);
    if host != target {
        // Another target (a static musl build on a glibc machine, say): code for its triple,
        // with the baseline CPU features of its architecture, which any machine of it runs.
        // Where Cranelift cannot make code for it, the tools compile at first use instead.
        config.target(&target).map_err(|e| format!("no code generator for {target} here: {e:#}"))?;
    }
    wasmtime::Engine::new(&config).map_err(|e| format!("{e:#}"))
}
