//! # toolhost-default-tools
//!
//! The default tools — `Read`, `Write`, `Edit`, `Glob`, `Grep`, `LS`, with Claude Code's names
//! and input fields, and `WebFetch` — compiled from `plugins/` for `wasm32-wasip2` by this
//! crate's build script and embedded, so a fresh install is useful at once. The build script
//! also compiles them to native code for this machine with the runtime's engine configuration,
//! so that a fresh machine's first call compiles nothing.
#![deny(missing_docs)]

use toolhost::ToolSource;

include!(concat!(env!("OUT_DIR"), "/tools.rs"));

/// The bytes of one default tool.
pub fn get(name: &str) -> Option<&'static [u8]> {
    TOOLS.iter().find(|(n, _)| *n == name).map(|(_, b)| *b)
}

/// One default tool ready to load, with its native code when the build made it.
#[allow(unsafe_code, reason = "the embedded native code is part of this binary")]
pub fn source(name: &str) -> Option<ToolSource> {
    let (name, bytes) = TOOLS.iter().find(|(n, _)| *n == name)?;
    let source = ToolSource::embedded(name, bytes);
    Some(match PRECOMPILED.iter().find(|(n, _, _)| n == name) {
        // SAFETY: the code is wasmtime's serialisation of these very bytes (the runtime checks
        // the digest), made by this crate's build script with the runtime's engine
        // configuration; it is part of this binary, as trusted as the rest of it.
        Some((_, sha256, code)) => unsafe { source.with_precompiled(sha256, code) },
        None => source,
    })
}

/// Whether the embedded tool `name` is idempotent (MCP's `idempotentHint`): calling it twice
/// with the same input leaves things as calling it once. Read-only tools are, and say so
/// themselves; of the others, `Write` is (it replaces a file whole with the content given),
/// `Edit` is not (a second `replace_all` may find new matches). Known here, where the tools are,
/// and asked by their embedded origin, never by the name a component declares.
pub fn idempotent(name: &str) -> bool {
    matches!(name, "Write")
}

/// Every default tool ready to load, in a fixed order.
pub fn sources() -> Vec<ToolSource> {
    TOOLS.iter().filter_map(|(name, _)| source(name)).collect()
}

/// The native code the build made for one default tool: the sha256 of the component it was
/// compiled from, and wasmtime's serialisation.
pub fn precompiled(name: &str) -> Option<(&'static str, &'static [u8])> {
    PRECOMPILED.iter().find(|(n, _, _)| *n == name).map(|(_, sha, code)| (*sha, *code))
}

/// How many default tools carry native code made at build time (none when cross-compiling or
/// built with `TOOLHOST_PRECOMPILE=0`).
pub fn precompiled_count() -> usize {
    PRECOMPILED.len()
}
