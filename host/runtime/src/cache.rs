//! Compiled components cached on disk, keyed by the component's sha256 and the engine's
//! compatibility hash, so a second start does not recompile (4 s for a Python tool).

use sha2::{Digest, Sha256};
use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};
use wasmtime::Engine;
use wasmtime::component::Component;

/// The hex sha256 of some bytes.
pub(crate) fn sha256_hex(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

fn engine_key(engine: &Engine) -> String {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    engine.precompile_compatibility_hash().hash(&mut h);
    // The toolhost version is part of the key so that a new build never trusts old artefacts.
    env!("CARGO_PKG_VERSION").hash(&mut h);
    format!("{:016x}", h.finish())
}

fn cache_path(dir: &Path, engine: &Engine, sha: &str) -> PathBuf {
    dir.join(format!("{sha}-{}.cwasm", engine_key(engine)))
}

/// Compile `bytes`, through the cache when there is one. Cache trouble (unreadable, stale or
/// corrupt entries, a read-only directory) is never fatal: it falls back to compiling.
pub(crate) fn compile(engine: &Engine, bytes: &[u8], sha: &str, dir: Option<&Path>) -> wasmtime::Result<Component> {
    let Some(dir) = dir else { return Component::new(engine, bytes) };
    let path = cache_path(dir, engine, sha);
    if path.is_file() {
        match deserialize(engine, &path) {
            Ok(c) => return Ok(c),
            Err(e) => tracing::debug!("ignoring cache entry {}: {e}", path.display()),
        }
    }
    let component = Component::new(engine, bytes)?;
    if let Err(e) = store(&component, dir, &path) {
        tracing::debug!("cannot write cache entry {}: {e}", path.display());
    }
    Ok(component)
}

#[allow(unsafe_code, reason = "loading precompiled native code is unsafe by nature")]
fn deserialize(engine: &Engine, path: &Path) -> wasmtime::Result<Component> {
    // SAFETY: the file was written by `store` below from wasmtime's own serialisation, into a
    // directory owned by the user running toolhost, under a name that includes the engine's
    // compatibility hash; wasmtime checks its header and version before use. Whoever can
    // write that directory can already run code as this user.
    unsafe { Component::deserialize_file(engine, path) }
}

fn store(component: &Component, dir: &Path, path: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    let bytes = component.serialize().map_err(|e| std::io::Error::other(e.to_string()))?;
    // Write to a temporary file and rename, so a concurrent reader never sees half a file.
    let mut tmp = tempfile::NamedTempFile::new_in(dir)?;
    std::io::Write::write_all(&mut tmp, &bytes)?;
    tmp.persist(path).map_err(|e| e.error)?;
    Ok(())
}
