//! Builds the default tools in `plugins/` for wasm32-wasip2 and generates `TOOLS`.

use std::path::PathBuf;

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
    let plugins = manifest.join("../../plugins");
    println!("cargo:rerun-if-changed={}", manifest.join("../../wit").display());
    println!("cargo:rerun-if-changed={}", plugins.join("sdk").display());
    let crates: Vec<&str> = TOOLS.iter().map(|(_, c)| *c).collect();
    let built = toolhost_wasm_build::build_workspace(&plugins, &crates);
    let mut code = String::from(
        "/// The embedded default tools: (name, component bytes).\npub const TOOLS: &[(&str, &[u8])] = &[\n",
    );
    for (name, krate) in TOOLS {
        let stem = krate.replace('-', "_");
        let (_, path) = built.iter().find(|(s, _)| *s == stem).expect("every tool was built");
        code.push_str(&format!("    ({name:?}, include_bytes!({:?})),\n", path.display().to_string()));
    }
    code.push_str("];\n");
    let out = PathBuf::from(std::env::var("OUT_DIR").unwrap()).join("tools.rs");
    std::fs::write(out, code).unwrap();
}
