//! Loading: how the bytes of a component become a tool's code and description — the engine
//! and its settings, the checks on the bytes, compiling (through the authenticated cache), and
//! running `schema` once per digest; what a tool is loaded from (`source.rs`).

pub(crate) mod cache;
pub(crate) mod engine;
pub(crate) mod loader;
pub(crate) mod record;
pub(crate) mod source;
pub(crate) mod tiering;
