//! `toolhost guest c-bindings|component|command`: the build steps of a C tool that would
//! otherwise need the `wit-bindgen` and `wasm-tools` programs, so a `toolhost new --lang c`
//! project builds with clang, wasi-libc and toolhost alone, wherever it is.

use crate::setup::GlobalArgs;
use anyhow::Result;
use clap::{Args, Subcommand};
use std::path::PathBuf;
use toolhost_guest_build::{Adapter, c_bindings, component};

#[derive(Args, Debug)]
pub struct GuestCommand {
    #[command(subcommand)]
    step: Step,
}

#[derive(Subcommand, Debug)]
enum Step {
    /// C bindings of a WIT world (wit-bindgen-c): WORLD.c, WORLD.h, WORLD_component_type.o in OUT_DIR.
    CBindings {
        /// The WIT package's directory (e.g. wit/tool@0.1.0).
        wit: PathBuf,
        /// The world (e.g. plugin).
        world: String,
        /// Where to write the files.
        out_dir: PathBuf,
    },
    /// A core module built with `-mexec-model=reactor` into a component (the WASI preview1
    /// reactor adapter of this toolhost's wasmtime).
    Component {
        /// The core module (linked with WORLD_component_type.o).
        core: PathBuf,
        /// The component to write.
        out: PathBuf,
    },
    /// A core program with `main` into a component exporting `wasi:cli/run` (the command adapter).
    Command {
        /// The core module.
        core: PathBuf,
        /// The component to write.
        out: PathBuf,
    },
}

impl GuestCommand {
    pub async fn execute(self, _global: &GlobalArgs) -> Result<u8> {
        match self.step {
            Step::CBindings { wit, world, out_dir } => c_bindings(&wit, &world, &out_dir)?,
            Step::Component { core, out } => component(&core, &out, Adapter::Reactor)?,
            Step::Command { core, out } => component(&core, &out, Adapter::Command)?,
        }
        Ok(0)
    }
}
