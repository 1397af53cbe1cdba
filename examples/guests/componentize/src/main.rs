//! `toolhost-guest-build`: the C build steps of [`toolhost_guest_build`] as a command line.
//!
//! ```text
//! toolhost-guest-build c-bindings WIT_DIR WORLD OUT_DIR   # wit-bindgen-c: WORLD.c, WORLD.h, WORLD_component_type.o
//! toolhost-guest-build component CORE.wasm OUT.wasm      # wit-component + the wasi preview1 reactor adapter
//! toolhost-guest-build command CORE.wasm OUT.wasm        # the same with the command adapter: a C `main`
//!                                                        # becomes a component exporting wasi:cli/run
//! ```
//!
//! `examples/guests/build.sh` runs it (before the host exists); `toolhost guest` is the same.

use anyhow::{Result, bail};
use std::path::Path;
use toolhost_guest_build::{Adapter, c_bindings, component};

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
