//! # toolhost-engine-config
//!
//! The one wasmtime [`Config`] of toolhost, in a crate of its own so that two parties build
//! exactly the same engine: the runtime, and `toolhost-default-tools`' build script, which
//! compiles the default tools ahead of time into native code embedded in the binary (a fresh
//! machine's first call then compiles nothing). wasmtime refuses to load code compiled under
//! another configuration, so any drift between the two only costs a compilation at start.
//!
//! Component model on; epoch interruption (every store sets a deadline and yields at each
//! tick); the pooling allocator, which makes a fresh instance per call cheap; fuel only when
//! asked for, since metering slows every guest down.
#![deny(missing_docs)]

use wasmtime::{Config, InstanceAllocationStrategy, PoolingAllocationConfig, Strategy};

/// Frames kept in a trap's backtrace: enough to see unbounded recursion in a trap's call
/// stack (the runtime tells a shadow-stack overflow from other out-of-bounds accesses that
/// way). Frame-pointer walks are cheap, and only a trap pays for one.
pub const BACKTRACE_FRAMES: usize = 320;

/// Engine settings. Defaults: pooling allocator on, no fuel, up to 4 GiB per memory. Built
/// from the default with its setters (`EngineOptions::default().fuel(true)`), so settings added
/// later break no caller.
#[derive(Debug, Clone)]
#[non_exhaustive]
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
    /// Tiered compilation: a component with no optimised code ready is first compiled by the
    /// baseline compiler (Winch: a few times faster to compile, slower to run) and answers at
    /// once, while Cranelift compiles it in the background (see [`baseline_config`]).
    pub tiering: bool,
}

impl Default for EngineOptions {
    fn default() -> Self {
        EngineOptions { pooling: true, fuel: false, max_memory_mib: 4096, max_instances: 256, tiering: true }
    }
}

impl EngineOptions {
    /// Whether to use the pooling instance allocator.
    pub fn pooling(mut self, pooling: bool) -> Self {
        self.pooling = pooling;
        self
    }

    /// Whether to meter instructions (needed for `fuel` limits).
    pub fn fuel(mut self, fuel: bool) -> Self {
        self.fuel = fuel;
        self
    }

    /// The largest memory limit any tool may be given, in MiB.
    pub fn max_memory_mib(mut self, mib: u64) -> Self {
        self.max_memory_mib = mib;
        self
    }

    /// Instances that may be alive at once.
    pub fn max_instances(mut self, n: u32) -> Self {
        self.max_instances = n;
        self
    }

    /// Whether to compile first with the baseline compiler (see [`EngineOptions::tiering`]).
    pub fn tiering(mut self, tiering: bool) -> Self {
        self.tiering = tiering;
        self
    }
}

/// The configuration for `options`, with the pooling allocator when `pooling` (callers fall
/// back to `false` when the pool cannot be reserved; code compiled under either loads under
/// the other, since allocation is not part of what compiled code depends on).
pub fn config(options: &EngineOptions, pooling: bool) -> Config {
    let mut c = common(options);
    c.strategy(Strategy::Cranelift);
    c.cranelift_opt_level(wasmtime::OptLevel::Speed);
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
            // Each slot decommitted when it is returned, not batched: with `pagemap_scan` little
            // is left to `madvise`, and a batch is a queue that every thread dropping a store
            // locks (a batch of 1,000 no-op calls spent ≈ 9 % more CPU in that contention).
            .decommit_batch_size(1)
            // Linux >= 6.7: reset only the pages a guest touched (falls back when unsupported).
            .pagemap_scan(wasmtime::Enabled::Auto);
        c.allocation_strategy(InstanceAllocationStrategy::Pooling(p));
    }
    c
}

/// The configuration of the baseline tier: the same guest-visible semantics as [`config`]
/// (component model, epoch interruption, fuel when asked, the same backtraces) compiled by
/// Winch, wasmtime's single-pass compiler. Its code only bridges the seconds until Cranelift's
/// is ready, so it is never cached, and its engine allocates on demand instead of reserving a
/// second pool. Winch refuses some proposals (tail calls, exceptions, GC, relaxed SIMD): a
/// component using them is compiled by Cranelift directly.
pub fn baseline_config(options: &EngineOptions) -> Config {
    let mut c = common(options);
    c.strategy(Strategy::Winch);
    c
}

/// What both tiers share.
fn common(options: &EngineOptions) -> Config {
    let mut c = Config::new();
    c.wasm_component_model(true);
    c.epoch_interruption(true);
    c.consume_fuel(options.fuel);
    c.wasm_backtrace_max_frames(std::num::NonZeroUsize::new(BACKTRACE_FRAMES));
    c
}
