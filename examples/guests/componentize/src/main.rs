//! # toolhost-guest-build
//!
//! The two steps of a C tool's build that would otherwise need the `wit-bindgen` and
//! `wasm-tools` command-line programs (minutes each to `cargo install`), done with the same
//! libraries in one small binary:
//!
//! ```text
//! toolhost-guest-build c-bindings WIT_DIR WORLD OUT_DIR   # wit-bindgen-c: WORLD.c, WORLD.h, WORLD_component_type.o
//! toolhost-guest-build component CORE.wasm OUT.wasm      # wit-component + the wasi preview1 reactor adapter
//! ```
//!
//! `examples/guests/build.sh` runs it; `toolhost new --lang c` projects run it too.

use anyhow::{Context, Result, bail};
use std::path::Path;

const USAGE: &str = "usage:\n  toolhost-guest-build c-bindings WIT_DIR WORLD OUT_DIR\n  toolhost-guest-build component CORE.wasm OUT.wasm";

fn main() -> Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.iter().map(String::as_str).collect::<Vec<_>>().as_slice() {
        ["c-bindings", wit, world, out] => c_bindings(Path::new(wit), world, Path::new(out)),
        ["component", core, out] => component(Path::new(core), Path::new(out)),
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

/// Turn a core module built for wasm32-wasi(p1) that carries its component type (the
/// `*_component_type.o` linked in) into a component, adapting preview1 imports to WASI 0.2
/// with the adapter of the wasmtime version the host uses.
fn component(core: &Path, out: &Path) -> Result<()> {
    let module = std::fs::read(core).with_context(|| format!("reading {}", core.display()))?;
    let component = wit_component::ComponentEncoder::default()
        .module(&module)
        .context("the core module carries no usable component type (was WORLD_component_type.o linked in?)")?
        .adapter(
            "wasi_snapshot_preview1",
            wasi_preview1_component_adapter_provider::WASI_SNAPSHOT_PREVIEW1_REACTOR_ADAPTER,
        )
        .context("the preview1 adapter")?
        .validate(true)
        .encode()
        .context("encoding the component")?;
    std::fs::write(out, component).with_context(|| format!("writing {}", out.display()))?;
    Ok(())
}
