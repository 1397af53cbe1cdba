//! One guest export on a store: build the WASI context from the grant, set the memory
//! limiter, fuel and the epoch deadline, instantiate from the cached `InstancePre`, call, and
//! classify whatever went wrong.
//!
//! `call` always gets a fresh store, dropped afterwards. `is-concurrency-safe` and `validate`
//! run with no capabilities, so nothing they do reaches outside; an instance that served them
//! well is kept in a small per-tool pool and reused (DESIGN §2), which halves the cost of a
//! call. An instance that trapped or timed out is never reused.

pub(crate) mod adapter;
pub(crate) mod bindings;
pub(crate) mod foreign;

pub(crate) use foreign::{CallFunction, RunCommand};

use crate::call::outcome::{Failure, OutcomeKind, classify};
use crate::invoke::bindings::{Plugin, ToolExports, ToolOutput, ToolSchema, WitToolError};
use crate::kinds::command::CommandInput;
use crate::loading::engine::ToolEngine;
use crate::loading::loader::Pre;
use crate::sandbox::capabilities::{granted_env, wasi_ctx};
use crate::sandbox::capture::CapturePipe;
use crate::sandbox::fsguard::{FsGuard, FsRules, Preopen};
use crate::sandbox::net::{NetAccess, NetLimits};
use crate::sandbox::state::{CallEnv, HostState, Interrupt};
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;
use toolhost_policy::{EffectiveGrant, Limits, NetPattern};
use wasmtime::{Store, UpdateDeadline};

/// One export of the tool interface, typed by what it returns: each call site gets exactly
/// its export's answer, nothing to match away.
pub(crate) trait Export {
    /// What the export returns, as the host sees it.
    type Output;
    /// Whether an instance that served it (with no capabilities) may be kept for the next such
    /// call.
    const POOLED: bool;
    /// The export's WIT name, for the per-invocation timing log.
    const NAME: &'static str;
    /// Call the export on an instantiated tool.
    async fn call(&self, tool: &Instantiated, store: &mut Store<HostState>) -> wasmtime::Result<Self::Output>;
    /// A command program's arguments and standard input, for its store.
    fn command(&self) -> Option<&CommandInput> {
        None
    }
    /// The answer, seen with the store's state after the call (`call` adds the sandbox's notes).
    fn finish(output: Self::Output, _state: &HostState, _tool: &str) -> Self::Output {
        output
    }
}

/// `schema()`: the tool's description, at load.
pub(crate) struct GetSchema;

/// `is-concurrency-safe(input)`.
pub(crate) struct IsConcurrencySafe<'a>(pub &'a str);

/// `validate(input)`: `Err` carries the tool's message.
pub(crate) struct Validate<'a>(pub &'a str);

/// `call(input)`.
pub(crate) struct Call<'a>(pub &'a str);

/// What `call` returned.
pub(crate) enum CallReturn {
    Output(ToolOutput),
    Failed(WitToolError),
    /// `call` failed after the call ran into a network limit (the message says which).
    Limited(WitToolError),
}

impl Export for GetSchema {
    type Output = ToolSchema;
    const POOLED: bool = false;
    const NAME: &'static str = "schema";
    async fn call(&self, tool: &Instantiated, store: &mut Store<HostState>) -> wasmtime::Result<ToolSchema> {
        tool.toolhost()?.call_schema(store).await
    }
}

impl Export for IsConcurrencySafe<'_> {
    type Output = bool;
    const POOLED: bool = true;
    const NAME: &'static str = "is-concurrency-safe";
    async fn call(&self, tool: &Instantiated, store: &mut Store<HostState>) -> wasmtime::Result<bool> {
        tool.toolhost()?.call_is_concurrency_safe(store, self.0).await
    }
}

impl Export for Validate<'_> {
    type Output = Result<(), String>;
    const POOLED: bool = true;
    const NAME: &'static str = "validate";
    async fn call(&self, tool: &Instantiated, store: &mut Store<HostState>) -> wasmtime::Result<Result<(), String>> {
        tool.toolhost()?.call_validate(store, self.0).await
    }
}

impl Export for Call<'_> {
    type Output = CallReturn;
    const POOLED: bool = false;
    const NAME: &'static str = "call";
    async fn call(&self, tool: &Instantiated, store: &mut Store<HostState>) -> wasmtime::Result<CallReturn> {
        Ok(match tool.toolhost()?.call_call(store, self.0).await? {
            Ok(output) => CallReturn::Output(output),
            Err(err) => CallReturn::Failed(err),
        })
    }

    fn finish(output: CallReturn, state: &HostState, tool: &str) -> CallReturn {
        with_sandbox_notes(output, state, tool)
    }
}

/// A call's answer with what the sandbox refused or limited added, so the model learns of it
/// whatever the tool reported.
pub(crate) fn with_sandbox_notes(output: CallReturn, state: &HostState, tool: &str) -> CallReturn {
    match output {
        CallReturn::Failed(mut err) | CallReturn::Limited(mut err) => {
            // A tool that failed after the sandbox refused it network access, or after a
            // network limit stopped it: say which host, which grant would allow it, which
            // limit, whatever the tool itself reported.
            let net = &state.net;
            for note in [net.failure_note(tool), state.fs.note()].into_iter().flatten() {
                let (WitToolError::InvalidInput(m) | WitToolError::Denied(m) | WitToolError::Failed(m)) = &mut err;
                if !m.is_empty() {
                    m.push('\n');
                }
                m.push_str(&note);
            }
            if net.breached() { CallReturn::Limited(err) } else { CallReturn::Failed(err) }
        }
        CallReturn::Output(mut output) => {
            // A refused write stays visible to the model even when the tool ignored it.
            if let Some(note) = state.fs.note() {
                output.content.push(crate::invoke::bindings::WitContentBlock::Text(note));
            }
            CallReturn::Output(output)
        }
    }
}

/// Everything one invocation needs besides the export.
pub(crate) struct InvokeCtx<'a> {
    pub engine: &'a ToolEngine,
    pub pre: &'a Pre,
    pub tool: &'a str,
    pub limits: &'a Limits,
    pub workspace: &'a Path,
    pub env_vars: &'a BTreeMap<String, String>,
    pub call_env: CallEnv,
    /// `None`: no capabilities at all (schema, is-concurrency-safe, validate).
    pub grant: Option<&'a EffectiveGrant>,
    /// The grant's network patterns, compiled at load (empty without a grant).
    pub net: &'a Arc<[NetPattern]>,
    /// Where capability-free instances are kept for reuse, if anywhere.
    pub pool: Option<&'a PurePool>,
    /// Cancelling it interrupts the guest at the next epoch tick (or at once if it is waiting
    /// in a host call).
    pub cancel: &'a CancellationToken,
    /// The TLS settings of the call's HTTPS requests.
    pub tls: &'a Arc<rustls::ClientConfig>,
    /// The call's directories and filesystem rules (unused without a grant).
    pub fs: FsCall,
    /// Where the invocation's times (and the call's stderr and trap backtrace) are recorded.
    pub trace: Option<&'a Mutex<crate::CallTrace>>,
}

/// What the filesystem guard of a call with a grant gets.
#[derive(Default)]
pub(crate) struct FsCall {
    pub preopens: Arc<[Preopen]>,
    /// Every directory read-only (a call inside a parallel batch).
    pub read_only: bool,
    pub rules: FsRules,
    /// Paths a person approved for this call.
    pub approved: Vec<std::path::PathBuf>,
}

/// An instance and its store.
pub(crate) struct Instance {
    store: Store<HostState>,
    instance: Option<Instantiated>,
}

/// A component instantiated as what it is.
pub(crate) enum Instantiated {
    Toolhost(Plugin),
    Functions(wasmtime::component::Instance),
    Command(wasmtime_wasi::p2::bindings::Command),
}

impl Instantiated {
    /// The toolhost interface's exports (only a toolhost tool has them).
    fn toolhost(&self) -> wasmtime::Result<&ToolExports> {
        match self {
            Instantiated::Toolhost(plugin) => Ok(plugin.toolhost_tool_tool()),
            _ => Err(wasmtime::format_err!("not a toolhost tool: it has no `toolhost:tool/tool` exports")),
        }
    }
}

impl Pre {
    async fn instantiate(&self, store: &mut Store<HostState>) -> wasmtime::Result<Instantiated> {
        Ok(match self {
            Pre::Toolhost(pre) => Instantiated::Toolhost(pre.instantiate_async(store).await?),
            Pre::Functions(pre) => Instantiated::Functions(pre.instantiate_async(store).await?),
            Pre::Command(pre) => Instantiated::Command(pre.instantiate_async(store).await?),
        })
    }
}

/// Idle capability-free instances of one tool.
#[derive(Default)]
pub(crate) struct PurePool {
    idle: Mutex<Vec<Instance>>,
}

/// Idle instances kept per tool: enough for a parallel batch, bounded so a tool that is used
/// once does not pin memory.
const MAX_IDLE: usize = 16;

impl PurePool {
    fn take(&self) -> Option<Instance> {
        self.idle.lock().unwrap_or_else(|e| e.into_inner()).pop()
    }

    fn put(&self, instance: Instance) {
        let mut idle = self.idle.lock().unwrap_or_else(|e| e.into_inner());
        if idle.len() < MAX_IDLE {
            idle.push(instance);
        }
    }
}

pub(crate) async fn invoke<E: Export>(mut cx: InvokeCtx<'_>, export: E) -> Result<E::Output, Failure> {
    let pool = if E::POOLED && cx.grant.is_none() { cx.pool } else { None };
    // An idle instance of the baseline tier's code is dropped once the optimised code is in use.
    let idle = pool.and_then(PurePool::take).filter(|i| wasmtime::Engine::same(i.store.engine(), cx.pre.engine()));
    let mut instance = match idle {
        Some(instance) => instance,
        None => new_instance(&mut cx, export.command())?,
    };
    let result = run(&mut instance, &cx, &export).await;
    if let (Some(pool), Ok(_)) = (pool, &result) {
        instance.store.data_mut().end();
        pool.put(instance);
    }
    result
}

fn new_instance(cx: &mut InvokeCtx<'_>, command: Option<&CommandInput>) -> Result<Instance, Failure> {
    // Captured, capped, and never shown to the model except for stderr's tail in errors.
    let stdout = CapturePipe::new(cx.limits.max_stdio_bytes);
    let stderr = CapturePipe::new(cx.limits.max_stdio_bytes);
    let net = Arc::new(
        NetAccess::for_grant(cx.grant, cx.net, NetLimits::new(cx.limits)).log_hosts(cx.call_env.hosts.clone()),
    );
    let wasi = wasi_ctx(cx.grant, &net, cx.workspace, cx.env_vars, &stdout, &stderr, command)
        .map_err(|m| Failure::new(OutcomeKind::HostError, m))?;
    let max_memory = usize::try_from(cx.limits.memory_mib.saturating_mul(1 << 20)).unwrap_or(usize::MAX);
    let fs = match cx.grant {
        Some(_) => {
            let call = std::mem::take(&mut cx.fs);
            FsGuard::new(call.preopens, call.read_only, call.rules, call.approved)
        }
        None => FsGuard::default(),
    };
    let state = HostState::new(wasi, net, cx.tls.clone(), cx.call_env.clone(), max_memory, (stdout, stderr), fs)
        .with_config(granted_env(cx.grant, cx.env_vars));
    let mut store = Store::new(cx.pre.engine(), state);
    store.limiter(|s| &mut s.limiter);
    Ok(Instance { store, instance: None })
}

async fn run<E: Export>(instance: &mut Instance, cx: &InvokeCtx<'_>, export: &E) -> Result<E::Output, Failure> {
    let store = &mut instance.store;
    store.data_mut().begin(cx.call_env.clone());
    if cx.engine.fuel {
        store
            .set_fuel(cx.limits.fuel.unwrap_or(u64::MAX))
            .map_err(|e| Failure::new(OutcomeKind::HostError, format!("fuel: {e}")))?;
    }
    let timeout = Duration::from_millis(cx.limits.timeout_ms);
    // Where an invocation's time goes (the call's trace, and `TOOLHOST_LOG=toolhost=debug`):
    // instantiation apart from the export itself. Also when its deadline falls (one clock
    // read for both: a read costs tens of nanoseconds in a virtual machine).
    let started = Instant::now();
    // A huge configured timeout must not overflow the clock: cap it at a century.
    let deadline = started.checked_add(timeout).unwrap_or_else(|| started + Duration::from_secs(100 * 365 * 24 * 3600));
    // Every tick: past the deadline, stop the guest; otherwise yield so other calls run.
    store.set_epoch_deadline(1);
    let cancel = cx.cancel.clone();
    store.epoch_deadline_callback(move |mut ctx| {
        if cancel.is_cancelled() {
            ctx.data_mut().interrupt = Some(Interrupt::Cancelled);
            return Ok(UpdateDeadline::Interrupt);
        }
        if Instant::now() >= deadline {
            ctx.data_mut().interrupt = Some(Interrupt::Timeout);
            return Ok(UpdateDeadline::Interrupt);
        }
        Ok(UpdateDeadline::Yield(1))
    });

    let instantiated = &mut instance.instance;
    // Set inside the (Send) future, read after it: an atomic, not a Cell.
    let instantiating_ns = std::sync::atomic::AtomicU64::new(0);
    let instantiating = || Duration::from_nanos(instantiating_ns.load(std::sync::atomic::Ordering::Relaxed));
    let call = async {
        let fresh = instantiated.is_none();
        if fresh {
            *instantiated = Some(cx.pre.instantiate(&mut *store).await?);
        }
        let took = u64::try_from(started.elapsed().as_nanos()).unwrap_or(u64::MAX);
        instantiating_ns.store(took, std::sync::atomic::Ordering::Relaxed);
        let tool = instantiated.as_ref().expect("instantiated above");
        let output = export.call(tool, &mut *store).await;
        tracing::debug!(
            "invoked {} {} on a {} instance: instantiate {} µs, export {} µs",
            cx.tool,
            E::NAME,
            if fresh { "fresh" } else { "reused" },
            instantiating().as_micros(),
            started.elapsed().saturating_sub(instantiating()).as_micros(),
        );
        output
    };
    // The epoch deadline stops running guest code; this timer also covers a guest parked in
    // a host call (a WASI sleep, a blocked read), where no epoch check happens.
    let outcome = tokio::select! {
        biased;
        () = cx.cancel.cancelled() => return Err(Failure::interrupted()),
        outcome = tokio::time::timeout(timeout, call) => outcome,
    };
    if let Some(trace) = cx.trace {
        let mut trace = trace.lock().unwrap_or_else(|e| e.into_inner());
        match E::NAME {
            "validate" => trace.add("validate", started.elapsed()),
            "schema" | "is-concurrency-safe" => {}
            // The call itself, whatever the kind: its times, its stderr, where it trapped.
            _ => {
                trace.add("instantiate", instantiating());
                trace.add("call", started.elapsed().saturating_sub(instantiating()));
                trace.stderr = instance.store.data().stderr.contents().0;
                if let Ok(Err(err)) = &outcome {
                    trace.backtrace = crate::call::trace::backtrace(err);
                }
            }
        }
    }
    match outcome {
        Err(_) => Err(Failure::timeout(cx.tool, cx.limits)),
        Ok(Ok(output)) => Ok(E::finish(output, instance.store.data(), cx.tool)),
        Ok(Err(err)) => {
            let mut failure = classify(&err, instance.store.data(), cx.tool, cx.limits);
            // A tool that crashed after a refused write: the model still learns of the refusal.
            if let Some(note) = instance.store.data().fs.note() {
                failure.message.push('\n');
                failure.message.push_str(&note);
            }
            Err(failure)
        }
    }
}
