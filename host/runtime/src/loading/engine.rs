//! The one wasmtime [`Engine`] of a process, configured in one place.
//!
//! The configuration itself is in `toolhost-engine-config` (shared with the build script that
//! precompiles the default tools); here the engine gets its epoch ticker (a spinning guest
//! neither starves its neighbours nor outlives its timeout) and its linker.

use crate::error::{Error, Result};
use crate::invoke::bindings::{HostImports, TypesHost};
use crate::loading::tiering::Tiers;
use crate::sandbox::state::HostState;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use wasmtime::Engine;
use wasmtime::component::Component;
use wasmtime::component::{HasSelf, Linker};

/// How often the epoch advances. Timeouts are checked at this granularity and a CPU-bound
/// guest yields to the executor this often.
pub(crate) const EPOCH_TICK: Duration = Duration::from_millis(5);

pub use toolhost_engine_config::EngineOptions;
use toolhost_engine_config::config;

/// A configured engine and the linker every tool is instantiated with. Cheap to clone; share
/// one per process.
#[derive(Clone)]
pub struct ToolEngine {
    pub(crate) engine: Engine,
    pub(crate) linker: Arc<Linker<HostState>>,
    pub(crate) fuel: bool,
    pooled: bool,
    /// Components compiled by this engine, by sha256: loading the same bytes again (another
    /// runtime, a reload) costs nothing. Components are reference-counted handles.
    pub(crate) compiled: Arc<Mutex<HashMap<String, Component>>>,
    /// What loading learned about each component, by sha256 (its schema, or why it failed):
    /// a reload never runs a load-time export again.
    pub(crate) records: Arc<Mutex<HashMap<String, crate::loading::record::LoadRecord>>>,
    /// The baseline tier and the background compiler (see `tiering.rs`).
    pub(crate) tiers: Arc<Tiers>,
}

impl std::fmt::Debug for ToolEngine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolEngine").field("fuel", &self.fuel).field("pooled", &self.pooled).finish()
    }
}

impl ToolEngine {
    /// Build an engine and start its epoch ticker (a thread that stops when the last clone of
    /// the engine is dropped).
    ///
    /// # Errors
    ///
    /// [`Error::Engine`] if wasmtime rejects the configuration.
    pub fn new(options: &EngineOptions) -> Result<Self> {
        let (engine, pooled) = if options.pooling {
            match Engine::new(&config(options, true)) {
                Ok(e) => (e, true),
                Err(err) => {
                    tracing::warn!("pooling allocator unavailable ({err}); using on-demand allocation");
                    (Engine::new(&config(options, false)).map_err(|e| Error::Engine(e.into()))?, false)
                }
            }
        } else {
            (Engine::new(&config(options, false)).map_err(|e| Error::Engine(e.into()))?, false)
        };
        let linker = linker(&engine).map_err(|e| Error::Engine(e.into()))?;
        start_ticker(&engine);
        Ok(ToolEngine {
            engine,
            linker: Arc::new(linker),
            fuel: options.fuel,
            pooled,
            compiled: Arc::default(),
            records: Arc::default(),
            tiers: Arc::new(Tiers::new(options)),
        })
    }

    /// Whether the pooling allocator is in use.
    pub fn is_pooled(&self) -> bool {
        self.pooled
    }

    /// Whether tiered compilation is on (see [`EngineOptions::tiering`]).
    pub fn is_tiered(&self) -> bool {
        self.tiers.enabled()
    }

    /// The sha256 of every component whose optimised code is being compiled in the background
    /// (its calls meanwhile run the baseline compiler's code).
    pub fn optimizing(&self) -> Vec<String> {
        self.tiers.pending().into_iter().collect()
    }

    /// Keep calls on the baseline tier's code: no background compilation starts until the
    /// guard is dropped. For benchmarks and tests of that tier.
    pub fn hold_optimizations(&self) -> crate::loading::tiering::OptimizeHold {
        self.tiers.hold()
    }

    /// Wait until no optimised compilation is queued or running.
    pub async fn optimized(&self) {
        self.tiers.settled().await;
    }
}

pub(crate) fn linker(engine: &Engine) -> wasmtime::Result<Linker<HostState>> {
    let mut linker = Linker::new(engine);
    // All of WASI 0.2 is linked for every tool; what a call can reach is decided by the
    // WasiCtx built from its grant (no preopens, env or sockets unless granted).
    wasmtime_wasi::p2::add_to_linker_async(&mut linker)?;
    // wasi:http too; every request is checked against the call's net grant (see http.rs).
    wasmtime_wasi_http::p2::add_only_http_to_linker_async(&mut linker)?;
    // Every path operation is checked against the call's protected paths and deny rules, and
    // preopens come from handles held since load (see `fsguard/`).
    crate::sandbox::fsguard::add_to_linker(&mut linker, HostState::guarded_fs)?;
    // Name lookups are checked against the call's net grant before any resolution.
    crate::sandbox::net::add_to_linker(&mut linker, HostState::lookup)?;
    // wasi:config/store, which components written for Wassette import: the granted variables.
    crate::sandbox::config_store::add_to_linker(&mut linker)?;
    crate::invoke::bindings::Plugin::add_to_linker::<HostState, HasSelf<HostState>>(&mut linker, |s| s)?;
    // toolhost:session, for the tools that import it (log messages, questions to the person).
    crate::invoke::bindings::SessionWorld::add_to_linker::<HostState, HasSelf<HostState>>(&mut linker, |s| s)?;
    Ok(linker)
}

pub(crate) fn start_ticker(engine: &Engine) {
    /// The engines whose epoch the one ticker thread advances (a baseline and an optimising
    /// engine per runtime, and as many runtimes as a process builds): one thread for all of
    /// them, instead of one each waking every tick.
    static TICKED: std::sync::Mutex<Vec<wasmtime::EngineWeak>> = std::sync::Mutex::new(Vec::new());
    static TICKER: std::sync::OnceLock<()> = std::sync::OnceLock::new();
    TICKED.lock().unwrap_or_else(|e| e.into_inner()).push(engine.weak());
    TICKER.get_or_init(|| {
        let spawned = std::thread::Builder::new().name("toolhost-epoch".into()).spawn(|| {
            loop {
                std::thread::sleep(EPOCH_TICK);
                let mut engines = TICKED.lock().unwrap_or_else(|e| e.into_inner());
                engines.retain(|weak| match weak.upgrade() {
                    Some(engine) => {
                        engine.increment_epoch();
                        true
                    }
                    None => false,
                });
            }
        });
        if let Err(e) = spawned {
            // Without a ticker, deadlines still hold through the host's wall-clock timer.
            tracing::warn!("cannot start the epoch ticker: {e}");
        }
    });
}

// The generated traits are implemented on HostState in state.rs; this keeps the bound visible.
#[allow(dead_code, reason = "compile-time check that HostState implements the imports")]
fn _assert_host_impls<T: HostImports + TypesHost>() {}
const _: fn() = _assert_host_impls::<HostState>;
