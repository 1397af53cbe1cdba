//! Tiered compilation: a component with no optimised code anywhere (binary, memory, compile
//! cache) is compiled first by Winch, wasmtime's single-pass baseline compiler, and answers at
//! once; Cranelift compiles the same bytes in the background and its code replaces Winch's for
//! later calls (and, through the cache, for later processes).
//!
//! Winch compiles the Python example tool in about a third of Cranelift's time (1.5 s against
//! 4.6 s here) and its code runs slower, so it only bridges the seconds until Cranelift is done.
//! Only Cranelift's code is ever cached. The background compiles run one at a time on their own
//! threads, at a lower scheduling priority than everything else of the process, so calls being
//! answered meanwhile keep the CPU first.

use crate::loading::cache::{self, Cache};
use crate::loading::engine::linker;
use crate::sandbox::state::HostState;
use std::collections::{BTreeSet, HashMap};
use std::sync::mpsc;
use std::sync::{Arc, Condvar, Mutex, OnceLock};
use toolhost_engine_config::{EngineOptions, baseline_config};
use wasmtime::Engine;
use wasmtime::component::{Component, Linker};

/// Which compiler made the code a tool runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum Tier {
    /// Winch's code: made fast, runs slower; Cranelift's is on its way.
    Baseline,
    /// Cranelift's code (compiled here, read from the compile cache, or built into the binary).
    Optimized,
}

impl std::fmt::Display for Tier {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Tier::Baseline => "baseline",
            Tier::Optimized => "optimized",
        })
    }
}

/// Where a tool's code stands, as `toolhost list --json` shows it (`code`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum CodeState {
    /// Ready, and its calls run the baseline tier's code while Cranelift compiles.
    Baseline,
    /// Ready, and its calls run optimised code.
    Optimized,
    /// Not made ready in this process; optimised code built into the binary is waiting.
    Embedded,
    /// Not made ready in this process; the compile cache holds its optimised code.
    Cached,
    /// Nothing compiled anywhere: its first call compiles it (baseline code first, when tiered).
    NotCompiled,
}

/// The baseline compiler's engine and the linker its components are instantiated with (the
/// same imports as the main engine's: a component cannot be linked across engines).
pub(crate) struct Baseline {
    pub(crate) engine: Engine,
    pub(crate) linker: Arc<Linker<HostState>>,
}

/// One background compilation.
struct Job {
    sha256: String,
    bytes: bytes::Bytes,
    cache: Option<Cache>,
    engine: Engine,
    compiled: Arc<Mutex<HashMap<String, Component>>>,
}

/// The tiering state of one [`ToolEngine`](crate::ToolEngine) and its clones.
pub(crate) struct Tiers {
    options: EngineOptions,
    /// Built when first needed; `None` when tiering is off or Winch cannot be used here.
    baseline: OnceLock<Option<Baseline>>,
    /// Baseline components by sha256, until their optimised code replaces them (a reload
    /// meanwhile does not compile them again).
    pub(crate) baseline_compiled: Mutex<HashMap<String, Component>>,
    /// The queue of the background compiler thread (started with the first job).
    queue: OnceLock<Option<mpsc::Sender<Job>>>,
    /// The sha256 of every component queued or being compiled in the background.
    pending: tokio::sync::watch::Sender<BTreeSet<String>>,
    /// Holds on the background compiler (see [`Tiers::hold`]): while there is one, no job starts.
    holds: Arc<(Mutex<usize>, Condvar)>,
}

/// While alive, no background compilation starts (one already running finishes): calls keep
/// running the baseline tier's code, for a benchmark or a test of that tier.
#[derive(Debug)]
pub struct OptimizeHold {
    holds: Arc<(Mutex<usize>, Condvar)>,
}

impl Drop for OptimizeHold {
    fn drop(&mut self) {
        let (count, released) = &*self.holds;
        *count.lock().unwrap_or_else(|e| e.into_inner()) -= 1;
        released.notify_all();
    }
}

impl Tiers {
    pub(crate) fn new(options: &EngineOptions) -> Self {
        Tiers {
            options: options.clone(),
            baseline: OnceLock::new(),
            baseline_compiled: Mutex::default(),
            queue: OnceLock::new(),
            pending: tokio::sync::watch::Sender::new(BTreeSet::new()),
            holds: Arc::default(),
        }
    }

    /// Hold the background compiler until the returned guard is dropped.
    pub(crate) fn hold(&self) -> OptimizeHold {
        *self.holds.0.lock().unwrap_or_else(|e| e.into_inner()) += 1;
        OptimizeHold { holds: self.holds.clone() }
    }

    /// Whether tiering is on.
    pub(crate) fn enabled(&self) -> bool {
        self.options.tiering
    }

    /// The baseline engine, built (with its epoch ticker) the first time; `None` when tiering
    /// is off or Winch refuses this configuration (said once, at debug level).
    pub(crate) fn baseline(&self) -> Option<&Baseline> {
        if !self.options.tiering {
            return None;
        }
        self.baseline
            .get_or_init(|| {
                let made = Engine::new(&baseline_config(&self.options)).and_then(|engine| {
                    let linker = linker(&engine)?;
                    Ok(Baseline { engine, linker: Arc::new(linker) })
                });
                match made {
                    Ok(baseline) => {
                        crate::loading::engine::start_ticker(&baseline.engine);
                        Some(baseline)
                    }
                    Err(e) => {
                        tracing::debug!(
                            "no baseline tier (Winch cannot be used here: {e:#}); compiling with Cranelift"
                        );
                        None
                    }
                }
            })
            .as_ref()
    }

    /// Queue the optimised compilation of `bytes` (whose sha256 is `sha256`) with `engine`,
    /// into `cache` and `compiled`, unless it is already queued. Returns whether it was queued
    /// (false also when no background thread can be started: the baseline code then stays).
    pub(crate) fn optimize(
        &self,
        sha256: &str,
        bytes: bytes::Bytes,
        cache: Option<Cache>,
        engine: &Engine,
        compiled: &Arc<Mutex<HashMap<String, Component>>>,
    ) -> bool {
        let mut fresh = false;
        self.pending.send_modify(|p| fresh = p.insert(sha256.to_string()));
        if !fresh {
            return false;
        }
        let job = Job { sha256: sha256.to_string(), bytes, cache, engine: engine.clone(), compiled: compiled.clone() };
        let sent = self
            .queue
            .get_or_init(|| start_worker(self.pending.clone(), self.holds.clone()))
            .as_ref()
            .is_some_and(|q| q.send(job).is_ok());
        if !sent {
            self.pending.send_modify(|p| {
                p.remove(sha256);
            });
            return false;
        }
        true
    }

    /// The sha256 of every component whose optimised code is queued or being compiled.
    pub(crate) fn pending(&self) -> BTreeSet<String> {
        self.pending.borrow().clone()
    }

    /// Wait until nothing is queued or being compiled in the background.
    pub(crate) async fn settled(&self) {
        let mut rx = self.pending.subscribe();
        // The sender lives as long as `self`: this cannot fail while it is borrowed.
        let _ = rx.wait_for(BTreeSet::is_empty).await;
    }
}

/// The background compiler: one thread taking jobs in order, each compiled on a small pool of
/// low-priority threads (Cranelift compiles a component's functions in parallel).
fn start_worker(
    pending: tokio::sync::watch::Sender<BTreeSet<String>>,
    holds: Arc<(Mutex<usize>, Condvar)>,
) -> Option<mpsc::Sender<Job>> {
    let (tx, rx) = mpsc::channel::<Job>();
    let threads = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1).min(4);
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .thread_name(|i| format!("toolhost-optimize-{i}"))
        .start_handler(|_| lower_priority())
        .build()
        .inspect_err(|e| tracing::debug!("cannot start the background compiler: {e}"))
        .ok()?;
    let spawned = std::thread::Builder::new().name("toolhost-optimize".into()).spawn(move || {
        lower_priority();
        for job in rx {
            let (count, released) = &*holds;
            let mut held = count.lock().unwrap_or_else(|e| e.into_inner());
            while *held > 0 {
                held = released.wait(held).unwrap_or_else(|e| e.into_inner());
            }
            drop(held);
            let started = std::time::Instant::now();
            let made = pool.install(|| cache::compile_fresh(&job.engine, &job.bytes, &job.sha256, job.cache.as_ref()));
            match made {
                Ok(component) => {
                    job.compiled.lock().unwrap_or_else(|e| e.into_inner()).insert(job.sha256.clone(), component);
                    tracing::debug!(
                        "optimised code of {} ready in {:.0} ms",
                        job.sha256,
                        started.elapsed().as_secs_f64() * 1000.0
                    );
                }
                // Winch compiled what Cranelift refuses: keep running the baseline code.
                Err(e) => {
                    tracing::warn!("cannot compile {} with Cranelift ({e:#}); it keeps its baseline code", job.sha256)
                }
            }
            pending.send_modify(|p| {
                p.remove(&job.sha256);
            });
        }
    });
    match spawned {
        Ok(_) => Some(tx),
        Err(e) => {
            tracing::debug!("cannot start the background compiler: {e}");
            None
        }
    }
}

/// Lower the calling thread's scheduling priority (Linux keeps a nice value per thread), so
/// the background compiler yields the CPU to calls being answered. Best effort.
fn lower_priority() {
    let now = rustix::process::getpriority_process(None).unwrap_or(0);
    if let Err(e) = rustix::process::setpriority_process(None, (now + 10).min(19)) {
        tracing::debug!("cannot lower the background compiler's priority: {e}");
    }
}
