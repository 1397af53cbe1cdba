//! `wasi:config/store`: the configuration interface components written for Wassette import
//! (Wassette answers it from the environment variables a component's policy allows, and its
//! examples read their API keys through it). A component that imports it would otherwise fail
//! to instantiate here; it gets exactly the call's granted environment variables, the same
//! names and values `wasi:cli/environment` shows it, and nothing else.
//!
//! Linked under every name the interface has had in released components: the draft
//! `wasi:config/store@0.2.0-draft` (Wassette's WIT), its successor `@0.2.0-rc.1`, and the
//! older `wasi:config/runtime@0.2.0-draft`. The shape is the same in each (`get`, `get-all`,
//! an `upstream | io` error), so one implementation serves all three.

use crate::sandbox::state::HostState;
use wasmtime::StoreContextMut;
use wasmtime::component::{ComponentType, Lift, Linker, Lower};

/// The interface's error variant. toolhost's answers never fail (the values are in memory), but
/// the type must match the import's.
#[derive(ComponentType, Lift, Lower, Debug, Clone)]
#[component(variant)]
enum ConfigError {
    #[component(name = "upstream")]
    #[allow(dead_code, reason = "part of the interface's type; never answered")]
    Upstream(String),
    #[component(name = "io")]
    #[allow(dead_code, reason = "part of the interface's type; never answered")]
    Io(String),
}

/// What `get` and `get-all` return (each in the one-element tuple of a host function's results).
type Get = (Result<Option<String>, ConfigError>,);
type GetAll = (Result<Vec<(String, String)>, ConfigError>,);

/// Every instance name the interface is linked under.
const NAMES: [&str; 3] =
    ["wasi:config/store@0.2.0-draft", "wasi:config/store@0.2.0-rc.1", "wasi:config/runtime@0.2.0-draft"];

/// Link `get` and `get-all` under each of [`NAMES`].
pub(crate) fn add_to_linker(linker: &mut Linker<HostState>) -> wasmtime::Result<()> {
    for name in NAMES {
        let mut instance = linker.instance(name)?;
        instance.func_wrap(
            "get",
            |store: StoreContextMut<'_, HostState>, (key,): (String,)| -> wasmtime::Result<Get> {
                Ok((Ok(store.data().config_value(&key)),))
            },
        )?;
        instance.func_wrap("get-all", |store: StoreContextMut<'_, HostState>, (): ()| -> wasmtime::Result<GetAll> {
            Ok((Ok(store.data().config_values().to_vec()),))
        })?;
    }
    Ok(())
}
