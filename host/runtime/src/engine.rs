//! The one wasmtime [`Engine`] of a process, configured in one place.
//!
//! Component model on; epoch interruption driven by a ticker thread (every store sets a
//! deadline and yields at each tick, so a spinning guest neither starves its neighbours nor
//! outlives its timeout); the pooling allocator, which makes a fresh instance per call cheap;
//! fuel only when asked for, since metering slows every guest down.

use crate::bindings::{HostImports, TypesHost};
use crate::error::{Error, Result};
use crate::state::HostState;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use wasmtime::component::Component;
use wasmtime::component::{HasSelf, Linker};
use wasmtime::{Config, Engine, InstanceAllocationStrategy, PoolingAllocationConfig};

/// How often the epoch advances. Timeouts are checked at this granularity and a CPU-bound
/// guest yields to the executor this often.
pub(crate) const EPOCH_TICK: Duration = Duration::from_millis(5);

/// Engine settings. Defaults: pooling allocator on, no fuel, up to 4 GiB per memory.
#[derive(Debug, Clone)]
pub struct EngineOptions {
    /// Use the pooling instance allocator (fast fresh instances). If the pool cannot be
    /// reserved (e.g. a small address-space ulimit), the engine falls back to on-demand.
    pub pooling: bool,
    /// Meter instructions so that `fuel` limits can be enforced.
    pub fuel: bool,
    /// The largest memory limit any tool may be given, in MiB (sizes the pool's slots).
    pub max_memory_mib: u64,
    /// Instances that may be alive at once (pool size).
    pub max_instances: u32,
}

impl Default for EngineOptions {
    fn default() -> Self {
        EngineOptions { pooling: true, fuel: false, max_memory_mib: 4096, max_instances: 256 }
    }
}

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
    pub(crate) records: Arc<Mutex<HashMap<String, crate::loader::LoadRecord>>>,
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
                    (Engine::new(&config(options, false)).map_err(|e| Error::Engine(e.to_string()))?, false)
                }
            }
        } else {
            (Engine::new(&config(options, false)).map_err(|e| Error::Engine(e.to_string()))?, false)
        };
        let linker = linker(&engine).map_err(|e| Error::Engine(format!("{e:#}")))?;
        start_ticker(&engine);
        Ok(ToolEngine {
            engine,
            linker: Arc::new(linker),
            fuel: options.fuel,
            pooled,
            compiled: Arc::default(),
            records: Arc::default(),
        })
    }

    /// Whether the pooling allocator is in use.
    pub fn is_pooled(&self) -> bool {
        self.pooled
    }
}

fn config(options: &EngineOptions, pooling: bool) -> Config {
    let mut c = Config::new();
    c.wasm_component_model(true);
    c.epoch_interruption(true);
    c.consume_fuel(options.fuel);
    c.cranelift_opt_level(wasmtime::OptLevel::Speed);
    // Enough frames to see unbounded recursion in a trap's call stack (outcome.rs tells a
    // shadow-stack overflow from other out-of-bounds accesses that way); frame-pointer walks
    // are cheap, and only a trap pays for one.
    c.wasm_backtrace_max_frames(std::num::NonZeroUsize::new(crate::outcome::BACKTRACE_FRAMES));
    if pooling {
        let n = options.max_instances;
        let mut p = PoolingAllocationConfig::new();
        // Sized for interpreters too (componentize-py and StarlingMonkey guests have dozens of
        // core instances and large tables), yet bounded: every slot reserves address space.
        p.total_component_instances(n)
            .total_core_instances(n * 4)
            .total_memories(n * 2)
            .total_tables(n * 2)
            .max_core_instances_per_component(64)
            .max_memories_per_component(16)
            .max_tables_per_component(32)
            .table_elements(100_000)
            .max_component_instance_size(1 << 20)
            .max_core_instance_size(1 << 20)
            // A wasm32 memory cannot exceed 4 GiB, whatever the config says.
            .max_memory_size(usize::try_from(options.max_memory_mib.min(4096) << 20).unwrap_or(usize::MAX))
            // Keeping the first pages resident makes the next instance's first touches cheap.
            .linear_memory_keep_resident(64 << 10)
            .table_keep_resident(64 << 10)
            // Returning a slot to the pool costs `madvise` calls; batching them amortises it.
            .decommit_batch_size(16)
            // Linux >= 6.7: reset only the pages a guest touched (falls back when unsupported).
            .pagemap_scan(wasmtime::Enabled::Auto);
        c.allocation_strategy(InstanceAllocationStrategy::Pooling(p));
    }
    c
}

fn linker(engine: &Engine) -> wasmtime::Result<Linker<HostState>> {
    let mut linker = Linker::new(engine);
    // All of WASI 0.2 is linked for every tool; what a call can reach is decided by the
    // WasiCtx built from its grant (no preopens, env or sockets unless granted).
    wasmtime_wasi::p2::add_to_linker_async(&mut linker)?;
    // wasi:http too; every request is checked against the call's net grant (see http.rs).
    wasmtime_wasi_http::p2::add_only_http_to_linker_async(&mut linker)?;
    // Every path operation is checked against the call's protected paths and deny rules, and
    // preopens come from handles held since load (see fsguard.rs).
    crate::fsguard::add_to_linker(&mut linker, HostState::guarded_fs)?;
    // Name lookups are checked against the call's net grant before any resolution.
    crate::net::add_to_linker(&mut linker, HostState::lookup)?;
    crate::bindings::Plugin::add_to_linker::<HostState, HasSelf<HostState>>(&mut linker, |s| s)?;
    Ok(linker)
}

fn start_ticker(engine: &Engine) {
    let weak = engine.weak();
    let spawned = std::thread::Builder::new().name("toolhost-epoch".into()).spawn(move || {
        loop {
            std::thread::sleep(EPOCH_TICK);
            match weak.upgrade() {
                Some(engine) => engine.increment_epoch(),
                None => break,
            }
        }
    });
    if let Err(e) = spawned {
        // Without a ticker, deadlines still hold through the host's wall-clock timer.
        tracing::warn!("cannot start the epoch ticker: {e}");
    }
}

// The generated traits are implemented on HostState in state.rs; this keeps the bound visible.
#[allow(dead_code, reason = "compile-time check that HostState implements the imports")]
fn _assert_host_impls<T: HostImports + TypesHost>() {}
const _: fn() = _assert_host_impls::<HostState>;
