//! # toolhost-guest-build
//!
//! The two steps of a C tool's build that would otherwise need the `wit-bindgen` and
//! `wasm-tools` command-line programs (minutes each to `cargo install`), done with the same
//! libraries: C bindings from a WIT world, and a core module turned into a component with the
//! WASI preview1 adapter of the wasmtime version the host uses. The `toolhost-guest-build`
//! binary (for `examples/guests/build.sh`, which runs before the host is built) and `toolhost
//! guest` (for `toolhost new --lang c` projects, wherever they are) both call these.

use anyhow::{Context, Result};
use std::path::Path;

/// Generate C bindings for `world` of the WIT package at `wit` into `out`.
pub fn c_bindings(wit: &Path, world: &str, out: &Path) -> Result<()> {
    let mut resolve = wit_parser::Resolve::default();
    let (pkg, _) = resolve.push_path(wit).with_context(|| format!("reading the WIT at {}", wit.display()))?;
    let world =
        resolve.select_world(&[pkg], Some(world)).with_context(|| format!("world {world} in {}", wit.display()))?;
    let mut files = wit_bindgen_core::Files::default();
    wit_bindgen_c::Opts::default().build().generate(&mut resolve, world, &mut files)?;
    std::fs::create_dir_all(out).with_context(|| format!("creating {}", out.display()))?;
    for (name, bytes) in files.iter() {
        let path = out.join(name);
        std::fs::write(&path, bytes).with_context(|| format!("writing {}", path.display()))?;
    }
    Ok(())
}

/// Which preview1 adapter turns the core module into a component.
#[derive(Clone, Copy)]
pub enum Adapter {
    /// For a library (`-mexec-model=reactor`) that exports the functions of its WIT world.
    Reactor,
    /// For a program with `main` (`_start`): the component exports `wasi:cli/run`, and
    /// `proc_exit` becomes `wasi:cli/exit` (any non-zero code as `exit(err)`, i.e. 1).
    Command,
}

/// Turn a core module built for wasm32-wasi(p1) into a component, adapting preview1 imports to
/// WASI 0.2 with the adapter of the wasmtime version the host uses. A reactor must carry its
/// component type (the `*_component_type.o` linked in); a command needs none.
pub fn component(core: &Path, out: &Path, adapter: Adapter) -> Result<()> {
    let module = std::fs::read(core).with_context(|| format!("reading {}", core.display()))?;
    let adapter_wasm = match adapter {
        Adapter::Reactor => wasi_preview1_component_adapter_provider::WASI_SNAPSHOT_PREVIEW1_REACTOR_ADAPTER,
        Adapter::Command => wasi_preview1_component_adapter_provider::WASI_SNAPSHOT_PREVIEW1_COMMAND_ADAPTER,
    };
    let component = wit_component::ComponentEncoder::default()
        .module(&module)
        .context("the core module carries no usable component type (was WORLD_component_type.o linked in?)")?
        .adapter("wasi_snapshot_preview1", adapter_wasm)
        .context("the preview1 adapter")?
        .validate(true)
        .encode()
        .context("encoding the component")?;
    std::fs::write(out, component).with_context(|| format!("writing {}", out.display()))?;
    Ok(())
}
