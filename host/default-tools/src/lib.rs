//! # toolhost-default-tools
//!
//! The default tools — `Read`, `Write`, `Edit`, `Glob`, `Grep`, `LS`, with Claude Code's names
//! and input fields — compiled from `plugins/` for `wasm32-wasip2` by this crate's build script
//! and embedded, so a fresh install is useful at once.
#![deny(missing_docs)]

include!(concat!(env!("OUT_DIR"), "/tools.rs"));

/// The bytes of one default tool.
pub fn get(name: &str) -> Option<&'static [u8]> {
    TOOLS.iter().find(|(n, _)| *n == name).map(|(_, b)| *b)
}
