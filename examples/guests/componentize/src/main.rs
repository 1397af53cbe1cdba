//! # toolhost-guest-build
//!
//! The two steps of a C tool's build that would otherwise need the `wit-bindgen` and
//! `wasm-tools` command-line programs (minutes each to `cargo install`), done with the same
//! libraries in one small binary:
//!
//! ```text
//! toolhost-guest-build c-bindings WIT_DIR WORLD OUT_DIR   # wit-bindgen-c: WORLD.c, WORLD.h, WORLD_component_type.o
//! toolhost-guest-build component CORE.wasm OUT.wasm      # wit-component + the wasi preview1 reactor adapter
//! toolhost-guest-build command CORE.wasm OUT.wasm        # the same with the command adapter: a C `main`
//!                                                        # becomes a component exporting wasi:cli/run
//! ```
//!
//! `examples/guests/build.sh` runs it; `toolhost new --lang c` projects run it too.

use anyhow::{Context, Result, bail};
use std::path::Path;

const USAGE: &str = "usage:\n  toolhost-guest-build c-bindings WIT_DIR WORLD OUT_DIR\n  toolhost-guest-build component CORE.wasm OUT.wasm\n  toolhost-guest-build command CORE.wasm OUT.wasm";

fn main() -> Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.iter().map(String::as_str).collect::<Vec<_>>().as_slice() {
        ["c-bindings", wit, world, out] => c_bindings(Path::new(wit), world, Path::new(out)),
        ["component", core, out] => component(Path::new(core), Path::new(out), Adapter::Reactor),
        ["command", core, out] => component(Path::new(core), Path::new(out), Adapter::Command),
        _ => bail!("{USAGE}"),
    }
}

/// Generate C bindings for `world` of the WIT package at `wit` into `out`.
fn c_bindings(wit: &Path, world: &str, out: &Path) -> Result<()> {
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
enum Adapter {
    /// For a library (`-mexec-model=reactor`) that exports the functions of its WIT world.
    Reactor,
    /// For a program with `main` (`_start`): the component exports `wasi:cli/run`, and
    /// `proc_exit` becomes `wasi:cli/exit` (any non-zero code as `exit(err)`, i.e. 1).
    Command,
}

/// Turn a core module built for wasm32-wasi(p1) into a component, adapting preview1 imports to
/// WASI 0.2 with the adapter of the wasmtime version the host uses. A reactor must carry its
/// component type (the `*_component_type.o` linked in); a command needs none.
fn component(core: &Path, out: &Path, adapter: Adapter) -> Result<()> {
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
