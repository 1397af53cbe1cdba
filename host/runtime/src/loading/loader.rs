//! Turning bytes into a loaded tool: recognise what the bytes are (with a precise message when
//! they are not a component), compile through the cache, link once into an `InstancePre` of
//! its kind (a toolhost tool, a function component, a command program), and describe its tools:
//! a toolhost tool's by running `schema` with no capabilities, the others' from their types.

use crate::error::{Error, LoadError, Result, SchemaError, WasmtimeError};
use crate::invoke::bindings::{PluginPre, TOOL_INTERFACE};
use crate::invoke::{GetSchema, InvokeCtx, invoke};
use crate::kinds::{self, ToolKind};
use crate::loading::cache::{self, Cache};
use crate::loading::engine::ToolEngine;
use crate::loading::record::{LoadRecord, RawSchema};
use crate::loading::source::ToolSource;
use crate::loading::tiering::{CodeState, Tier};
use crate::sandbox::state::{CallEnv, HostState};
use serde::Serialize;
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;
use toolhost_policy::{Capability, Limits};
use wasmtime::component::{Component, InstancePre};
use wasmtime_wasi::p2::bindings::CommandPre;

/// What a tool says about itself (its `schema` export), checked.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct ToolInfo {
    /// The name models call it by.
    pub name: String,
    /// Its description for the model.
    pub description: String,
    /// Its input JSON Schema.
    pub input_schema: serde_json::Value,
    /// JSON pointer to the value permission rules match.
    pub permission_subject: Option<String>,
    /// Whether it never mutates anything.
    pub read_only: bool,
    /// Its capability ceiling (empty for a kind that has none: the grant alone decides).
    pub capabilities: Vec<Capability>,
    /// What kind of component it is.
    pub kind: ToolKind,
}

/// A compiled, linked component.
pub(crate) struct Compiled {
    pub component: Component,
    pub pre: Pre,
    /// Which compiler made it.
    pub tier: Tier,
}

/// A linked component, ready to instantiate as what it is.
pub(crate) enum Pre {
    /// A toolhost tool.
    Toolhost(PluginPre<HostState>),
    /// A function component.
    Functions(InstancePre<HostState>),
    /// A command program.
    Command(CommandPre<HostState>),
}

impl Pre {
    /// What `component` is, by its exports: any version of toolhost's interface makes it a
    /// toolhost tool (one of another version is refused, not taken for plain functions),
    /// then `wasi:cli/run` a command program, then any exported function a function
    /// component.
    fn new(component: &Component, pre: InstancePre<HostState>) -> std::result::Result<Pre, LoadError> {
        let ty = component.component_type();
        let names: Vec<String> = ty.exports(component.engine()).map(|(name, _)| name.to_string()).collect();
        let exports = |prefix: &str| names.iter().any(|n| n.starts_with(prefix));
        if exports("toolhost:tool/tool@") {
            return PluginPre::new(pre)
                .map(Pre::Toolhost)
                .map_err(|e| LoadError::NotATool { interface: TOOL_INTERFACE, detail: WasmtimeError::new(e) });
        }
        if exports("wasi:cli/run@0.2.") {
            return CommandPre::new(pre)
                .map(Pre::Command)
                .map_err(|e| LoadError::NotATool { interface: "wasi:cli/run@0.2", detail: WasmtimeError::new(e) });
        }
        if kinds::functions::exported(component.engine(), component).is_empty() {
            return Err(LoadError::NothingToCall { exports: names });
        }
        Ok(Pre::Functions(pre))
    }

    /// The engine its code was compiled by (the baseline tier's or the main one): its stores
    /// must be made by that engine.
    pub(crate) fn engine(&self) -> &wasmtime::Engine {
        match self {
            Pre::Toolhost(pre) => pre.engine(),
            Pre::Functions(pre) => pre.engine(),
            Pre::Command(pre) => pre.engine(),
        }
    }
}

/// A tool's code, compiled (or taken from the cache or the binary) and linked when first
/// needed: a start whose tools are all described by load records (see [`LoadRecord`]) makes
/// no code ready at all, and a command that calls one tool readies that one. What readying
/// costs (a cache read and a check, or a compilation) is paid by the first call, outside its
/// deadline; a failure is kept and reported to every call.
pub(crate) struct Code {
    sha256: String,
    /// What to make it from; dropped once made, so the bytes are not kept twice.
    pending: std::sync::Mutex<Option<(ToolSource, Option<Cache>)>>,
    /// Made once (calls waiting for the code wait for one compilation), or why it cannot be.
    ready: tokio::sync::OnceCell<std::result::Result<(), LoadError>>,
    /// The code calls run: set when made, replaced once when the optimised code supersedes the
    /// baseline tier's (whose memory is then freed when its last call ends).
    current: std::sync::Mutex<Option<Arc<Compiled>>>,
}

impl Code {
    /// Code to make from `source`, whose bytes passed [`check_bytes`] with this `sha256`.
    pub(crate) fn new(source: &ToolSource, sha256: String, cache: Option<&Cache>) -> Self {
        Code {
            sha256,
            pending: std::sync::Mutex::new(Some((source.clone(), cache.cloned()))),
            ready: tokio::sync::OnceCell::new(),
            current: std::sync::Mutex::default(),
        }
    }

    /// No code at all: a tool another program serves (an MCP server's). Asking for it is an
    /// error the pipeline never makes.
    pub(crate) fn none(what: &str) -> Self {
        let ready = tokio::sync::OnceCell::new();
        let _ = ready.set(Err(LoadError::embedder(format!("{what} has no WebAssembly code"))));
        Code {
            sha256: String::new(),
            pending: std::sync::Mutex::new(None),
            ready,
            current: std::sync::Mutex::default(),
        }
    }

    /// Code already made (for `inspect`).
    fn made(sha256: String, compiled: Compiled) -> Self {
        Code {
            sha256,
            pending: std::sync::Mutex::default(),
            ready: tokio::sync::OnceCell::new_with(Some(Ok(()))),
            current: std::sync::Mutex::new(Some(Arc::new(compiled))),
        }
    }

    /// The hex sha256 of the component's bytes.
    pub(crate) fn sha256(&self) -> &str {
        &self.sha256
    }

    fn current(&self) -> Option<Arc<Compiled>> {
        self.current.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// The tier of the code calls run now; `None` before it is made ready (or when it cannot be).
    pub(crate) fn tier(&self) -> Option<Tier> {
        self.current().map(|c| c.tier)
    }

    /// Where its code stands (see [`CodeState`]), without making it ready.
    pub(crate) fn state(&self, engine: &ToolEngine, cache: Option<&Cache>) -> CodeState {
        match self.tier() {
            Some(Tier::Baseline) => return CodeState::Baseline,
            Some(Tier::Optimized) => return CodeState::Optimized,
            None => {}
        }
        if engine.compiled.lock().unwrap_or_else(|e| e.into_inner()).contains_key(&self.sha256) {
            return CodeState::Optimized;
        }
        let pending = self.pending.lock().unwrap_or_else(|e| e.into_inner());
        let embedded = pending.as_ref().and_then(|(source, _)| source.precompiled);
        if embedded.is_some_and(|(sha, _)| sha.eq_ignore_ascii_case(&self.sha256)) {
            return CodeState::Embedded;
        }
        if cache.is_some_and(|c| c.has_entry(&engine.engine, &self.sha256)) {
            return CodeState::Cached;
        }
        CodeState::NotCompiled
    }

    /// The compiled, linked component, made now if this is the first time it is needed: the
    /// optimised code as soon as there is some, else the baseline tier's.
    ///
    /// # Errors
    ///
    /// Why it cannot be made, the same every time.
    pub(crate) async fn get(&self, engine: &ToolEngine) -> std::result::Result<Arc<Compiled>, LoadError> {
        let current = match self.current() {
            Some(current) => current,
            None => {
                self.make(engine).await?;
                // Set by `make` before it returns Ok.
                self.current()
                    .ok_or_else(|| LoadError::Compile(WasmtimeError::new(wasmtime::format_err!("its code is gone"))))?
            }
        };
        if current.tier == Tier::Optimized {
            return Ok(current);
        }
        // The baseline tier's code: has the background compilation finished?
        let done = engine.compiled.lock().unwrap_or_else(|e| e.into_inner()).get(&self.sha256).cloned();
        let Some(component) = done else { return Ok(current) };
        match link(&engine.linker, component, Tier::Optimized) {
            Ok(optimized) => {
                let optimized = Arc::new(optimized);
                *self.current.lock().unwrap_or_else(|e| e.into_inner()) = Some(optimized.clone());
                engine.tiers.baseline_compiled.lock().unwrap_or_else(|e| e.into_inner()).remove(&self.sha256);
                Ok(optimized)
            }
            Err(e) => {
                // Not reached: the same component linked under the baseline engine.
                tracing::warn!("cannot link the optimised code of {}: {e}; keeping the baseline code", self.sha256);
                Ok(current)
            }
        }
    }

    /// Make the code (of either tier) the first time, once.
    async fn make(&self, engine: &ToolEngine) -> std::result::Result<(), LoadError> {
        self.ready
            .get_or_init(|| async {
                // Cloned, not taken: a call cancelled while this runs leaves it for the next.
                let pending = self.pending.lock().unwrap_or_else(|e| e.into_inner()).clone();
                let Some((source, cache)) = pending else {
                    // Not reached: set once made.
                    return Err(LoadError::Compile(WasmtimeError::new(wasmtime::format_err!("its code is gone"))));
                };
                let made = compile(engine, &source, &self.sha256, cache.as_ref()).await.map_err(|e| match e {
                    Error::Load { cause, .. } => cause,
                    other => LoadError::Source(Arc::new(other)),
                });
                *self.pending.lock().unwrap_or_else(|e| e.into_inner()) = None;
                let made = made?;
                *self.current.lock().unwrap_or_else(|e| e.into_inner()) = Some(Arc::new(made));
                Ok(())
            })
            .await
            .clone()
    }
}

const WASM_MAGIC: &[u8; 4] = b"\0asm";
const CORE_MODULE_VERSION: [u8; 4] = [1, 0, 0, 0];

/// Check what the bytes are, and their pin, before anything else is done with them. Returns
/// their hex sha256.
pub(crate) fn check_bytes(source: &ToolSource, pin: Option<&str>) -> Result<String> {
    let bytes = &source.bytes;
    if bytes.len() < 8 || &bytes[..4] != WASM_MAGIC {
        return Err(source.err(LoadError::NotAComponent(
            "not a WebAssembly file (it does not start with the `\\0asm` magic bytes)",
        )));
    }
    if bytes[4..8] == CORE_MODULE_VERSION {
        return Err(source.err(LoadError::NotAComponent(
            "a core WebAssembly module, not a component: build the tool for `wasm32-wasip2` \
             (or wrap the module with `wasm-tools component new`)",
        )));
    }
    let sha256 = match (source.precompiled, source.embedded) {
        // Part of this binary, with the digest its build computed: see `with_precompiled`.
        (Some((digest, _)), Some(embedded)) if std::ptr::eq(bytes.as_ref(), embedded) => digest.to_ascii_lowercase(),
        _ => cache::sha256_hex(bytes),
    };
    if let Some(want) = pin
        && !want.eq_ignore_ascii_case(&sha256)
    {
        return Err(source.err(LoadError::Sha256Mismatch { tool: None, expected: want.to_string(), actual: sha256 }));
    }
    Ok(sha256)
}

/// Compile (through `cache`, when there is one) and link `source`, whose bytes passed
/// [`check_bytes`] with this `sha256`: optimised code when there is some (this engine's memory,
/// the binary, the cache), else the baseline tier's while Cranelift compiles in the background
/// (see `tiering.rs`), else Cranelift's, compiled now.
async fn compile(engine: &ToolEngine, source: &ToolSource, sha256: &str, cache: Option<&Cache>) -> Result<Compiled> {
    let known = engine.compiled.lock().unwrap_or_else(|e| e.into_inner()).get(sha256).cloned();
    if let Some(component) = known.or_else(|| precompiled(engine, source, sha256)) {
        return link(&engine.linker, component, Tier::Optimized).map_err(|e| source.err(e));
    }
    let (eng, s, c) = (engine.engine.clone(), sha256.to_string(), cache.cloned());
    // Reading and checking an entry of megabytes: off the executor too.
    if let Some(component) = blocking(source, move || Ok(cache::cached(&eng, &s, c.as_ref()))).await? {
        engine.compiled.lock().unwrap_or_else(|e| e.into_inner()).insert(sha256.to_string(), component.clone());
        return link(&engine.linker, component, Tier::Optimized).map_err(|e| source.err(e));
    }
    if let Some(compiled) = baseline(engine, source, sha256, cache).await {
        return Ok(compiled);
    }
    // Compiling takes from milliseconds to seconds (interpreters); keep it off the executor.
    let (eng, b, s, c) = (engine.engine.clone(), source.bytes.clone(), sha256.to_string(), cache.cloned());
    let component = blocking(source, move || cache::compile_fresh(&eng, &b, &s, c.as_ref())).await?;
    engine.compiled.lock().unwrap_or_else(|e| e.into_inner()).insert(sha256.to_string(), component.clone());
    link(&engine.linker, component, Tier::Optimized).map_err(|e| source.err(e))
}

/// The baseline tier's code for `source`, with its optimised compilation queued; `None` when
/// tiering is off, or Winch cannot compile it (a proposal it lacks; said at debug level).
async fn baseline(engine: &ToolEngine, source: &ToolSource, sha256: &str, cache: Option<&Cache>) -> Option<Compiled> {
    let tiers = &engine.tiers;
    let base = tiers.baseline()?;
    let known = tiers.baseline_compiled.lock().unwrap_or_else(|e| e.into_inner()).get(sha256).cloned();
    let component = match known {
        Some(component) => component,
        None => {
            let (eng, b) = (base.engine.clone(), source.bytes.clone());
            match blocking(source, move || wasmtime::component::Component::new(&eng, &b)).await {
                Ok(component) => component,
                Err(e) => {
                    tracing::debug!(
                        "{}: the baseline compiler cannot compile it ({}); compiling with Cranelift",
                        source.origin,
                        crate::error_text(&e)
                    );
                    return None;
                }
            }
        }
    };
    let compiled = match link(&base.linker, component.clone(), Tier::Baseline) {
        Ok(compiled) => compiled,
        Err(e) => {
            tracing::debug!("{}: cannot link the baseline code ({e}); compiling with Cranelift", source.origin);
            return None;
        }
    };
    tiers.baseline_compiled.lock().unwrap_or_else(|e| e.into_inner()).insert(sha256.to_string(), component);
    tiers.optimize(sha256, source.bytes.clone(), cache.cloned(), &engine.engine, &engine.compiled);
    Some(compiled)
}

/// Run `f` on a blocking thread; its error is a compile error of `source`.
async fn blocking<T: Send + 'static>(
    source: &ToolSource,
    f: impl FnOnce() -> wasmtime::Result<T> + Send + 'static,
) -> Result<T> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| {
            source.err(LoadError::Compile(WasmtimeError::new(wasmtime::format_err!("compilation task failed: {e}"))))
        })?
        .map_err(|e| source.err(LoadError::Compile(WasmtimeError::new(e))))
}

/// Link `component` with `linker` (of the engine that compiled it) as the kind it is.
fn link(
    linker: &wasmtime::component::Linker<HostState>,
    component: Component,
    tier: Tier,
) -> std::result::Result<Compiled, LoadError> {
    let instance_pre = linker.instantiate_pre(&component).map_err(|e| LoadError::Link(WasmtimeError::new(e)))?;
    let pre = Pre::new(&component, instance_pre)?;
    Ok(Compiled { component, pre, tier })
}

/// The component from `source`'s ahead-of-time code, when it was made from these bytes and
/// this engine can run it (an engine with fuel, say, cannot: then it is compiled as usual).
#[allow(unsafe_code, reason = "loading precompiled native code is unsafe by nature")]
fn precompiled(engine: &ToolEngine, source: &ToolSource, sha256: &str) -> Option<Component> {
    let (wasm_sha256, code) = source.precompiled?;
    if !wasm_sha256.eq_ignore_ascii_case(sha256) {
        return None;
    }
    // SAFETY: `with_precompiled`'s contract: the code comes from a trusted build.
    match unsafe { Component::deserialize(&engine.engine, code) } {
        Ok(component) => {
            engine.compiled.lock().unwrap_or_else(|e| e.into_inner()).insert(sha256.to_string(), component.clone());
            Some(component)
        }
        Err(e) => {
            tracing::debug!("{}: not using its ahead-of-time code: {e:#}", source.origin);
            None
        }
    }
}

/// One tool of a component, described; or why it cannot be offered (one function of a
/// function component, whose other functions load).
pub(crate) type Described = std::result::Result<(ToolInfo, jsonschema::Validator), LoadError>;

/// The component's tools, described: remembered from an earlier load of the same bytes, or
/// learned and remembered. A toolhost tool's schema is read by calling `schema` with no
/// capabilities under `limits` (whose `load_timeout_ms` is the deadline); a function
/// component's and a command program's come from their types, without running their code.
pub(crate) async fn describe(
    engine: &ToolEngine,
    code: &Code,
    source: &ToolSource,
    limits: &Limits,
    cache: Option<&Cache>,
) -> Result<Vec<Described>> {
    let sha = code.sha256();
    let remembered = engine.records.lock().unwrap_or_else(|e| e.into_inner()).get(sha).cloned().or_else(|| {
        cache.and_then(|c| c.read_record(&engine.engine, sha)).and_then(|b| serde_json::from_slice(&b).ok())
    });
    let failed = |e: &SchemaError| LoadRecord::Failed {
        message: e.to_string(),
        timeout_ms: limits.load_timeout_ms,
        timed_out: matches!(e, SchemaError::TimedOut { .. }),
    };
    // What is remembered: the schema, or the failure (one that fails the checks too, so that
    // it is not run again).
    let (result, record) = match remembered {
        Some(LoadRecord::Schema(raw)) => {
            return check_schema(raw).map(|d| vec![Ok(d)]).map_err(|e| source.err(LoadError::Schema(e)));
        }
        Some(LoadRecord::Functions { functions }) => {
            return Ok(kinds::functions::described(functions, &source.docs()));
        }
        Some(LoadRecord::Command) => return Ok(vec![kinds::command::described(source)]),
        Some(LoadRecord::Failed { message, timeout_ms, timed_out })
            if !(timed_out && limits.load_timeout_ms > timeout_ms) =>
        {
            let remembered = SchemaError::Remembered { message, sha256: sha.to_string(), timed_out };
            return Err(source.err(LoadError::Schema(remembered)));
        }
        // Only now is the code needed (a record, found above, makes it wait for a call).
        _ => {
            let compiled = code.get(engine).await.map_err(|c| source.err(c))?;
            match &compiled.pre {
                Pre::Functions(_) => {
                    let functions =
                        kinds::functions::describe(compiled.component.engine(), &compiled.component, &source.bytes);
                    if functions.len() > kinds::functions::MAX_FUNCTIONS {
                        return Err(source.err(LoadError::TooManyFunctions {
                            count: functions.len(),
                            max: kinds::functions::MAX_FUNCTIONS,
                        }));
                    }
                    let described = kinds::functions::described(functions.clone(), &source.docs());
                    (Ok(described), LoadRecord::Functions { functions })
                }
                Pre::Command(_) => (Ok(vec![kinds::command::described(source)]), LoadRecord::Command),
                Pre::Toolhost(_) => match run_schema(engine, &compiled, source, limits).await {
                    Ok(raw) => match check_schema(raw.clone()) {
                        Ok(described) => (Ok(vec![Ok(described)]), LoadRecord::Schema(raw)),
                        Err(e) => (Err(e.clone()), failed(&e)),
                    },
                    Err(e) => {
                        let record = failed(&e);
                        (Err(e), record)
                    }
                },
            }
        }
    };
    if let Some(cache) = cache
        && let Ok(body) = serde_json::to_vec(&record)
    {
        cache.write_record(&engine.engine, sha, &body);
    }
    engine.records.lock().unwrap_or_else(|e| e.into_inner()).insert(sha.to_string(), record);
    result.map_err(|e| source.err(LoadError::Schema(e)))
}

/// Call `schema` with no capabilities, under the load deadline.
async fn run_schema(
    engine: &ToolEngine,
    compiled: &Compiled,
    source: &ToolSource,
    limits: &Limits,
) -> std::result::Result<RawSchema, SchemaError> {
    let limits = Limits { timeout_ms: limits.load_timeout_ms, ..limits.clone() };
    let empty = BTreeMap::new();
    let tls = match crate::sandbox::http::tls_config(&[]) {
        Ok(tls) => tls,
        Err(message) => return Err(SchemaError::Failed { kind: "host".into(), message }),
    };
    let cx = InvokeCtx {
        engine,
        pre: &compiled.pre,
        tool: &source.origin.to_string(),
        limits: &limits,
        workspace: Path::new("/"),
        env_vars: &empty,
        call_env: CallEnv {
            context: Arc::default(),
            namespace: Arc::from(""),
            workspace_json: Arc::from("null"),
            progress: None,
            hosts: None,
            asker: None,
        },
        grant: None,
        net: &Arc::from([]),
        pool: None,
        cancel: &CancellationToken::new(),
        // No grant, so no request is ever sent; the shared default settings cost nothing.
        tls: &tls,
        fs: Default::default(),
        trace: None,
    };
    match invoke(cx, GetSchema).await {
        Ok(s) => Ok(s.into()),
        Err(f) if f.kind == crate::call::outcome::OutcomeKind::Timeout => {
            Err(SchemaError::TimedOut { timeout_ms: limits.timeout_ms })
        }
        Err(f) => Err(SchemaError::Failed { kind: f.kind.to_string(), message: f.message }),
    }
}

/// Whether `name` can be a tool's name: 1-64 characters from `[A-Za-z0-9_-]`, what model APIs
/// accept.
pub(crate) fn valid_tool_name(name: &str) -> bool {
    !name.is_empty() && name.len() <= 64 && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

fn check_schema(s: RawSchema) -> std::result::Result<(ToolInfo, jsonschema::Validator), SchemaError> {
    if !valid_tool_name(&s.name) {
        return Err(SchemaError::InvalidName { name: s.name });
    }
    let input_schema: serde_json::Value = serde_json::from_str(&s.input_schema)
        .map_err(|e| SchemaError::NotJson { tool: s.name.clone(), error: Arc::new(e) })?;
    if !input_schema.is_object() {
        return Err(SchemaError::NotAnObject { tool: s.name });
    }
    let validator = jsonschema::validator_for(&input_schema)
        .map_err(|e| SchemaError::NotASchema { tool: s.name.clone(), message: e.to_string() })?;
    if let Some(p) = &s.permission_subject
        && !(p.is_empty() || p.starts_with('/'))
    {
        return Err(SchemaError::BadSubject { tool: s.name.clone(), pointer: p.clone() });
    }
    let info = ToolInfo {
        name: s.name,
        description: s.description,
        input_schema,
        permission_subject: s.permission_subject,
        read_only: s.read_only,
        capabilities: s.capabilities,
        kind: ToolKind::Toolhost,
    };
    Ok((info, validator))
}

/// What `toolhost inspect` shows about a component.
#[derive(Debug, Clone, Serialize)]
#[non_exhaustive]
pub struct Inspection {
    /// The tool's schema (the first tool's, for a function component of several).
    pub info: ToolInfo,
    /// Every tool the component offers (one, except for a function component).
    pub tools: Vec<ToolInfo>,
    /// The functions of a function component that cannot be tools, and why.
    pub refused: Vec<String>,
    /// The component's imports (WIT interface names).
    pub imports: Vec<String>,
    /// The component's exports.
    pub exports: Vec<String>,
    /// Size in bytes.
    pub size: usize,
    /// Hex sha256 of the bytes.
    pub sha256: String,
}

/// Load a component far enough to describe it, without registering it anywhere. `cache_dir` is
/// opened and checked as [`RuntimeBuilder::cache_dir`](crate::RuntimeBuilder::cache_dir) says
/// (an unusable one is reported with a warning and not used).
///
/// # Errors
///
/// [`Error::Load`] with the same messages as loading the tool.
pub async fn inspect(engine: &ToolEngine, source: &ToolSource, cache_dir: Option<&Path>) -> Result<Inspection> {
    let cache = cache_dir.and_then(Cache::open_or_warn);
    let sha256 = check_bytes(source, source.expected_sha256.as_deref())?;
    let compiled = compile(engine, source, &sha256, cache.as_ref()).await?;
    let code = Code::made(sha256, compiled);
    let mut tools = Vec::new();
    let mut refused = Vec::new();
    for described in describe(engine, &code, source, &Limits::default(), cache.as_ref()).await? {
        match described {
            Ok((info, _)) => tools.push(info),
            Err(e) if tools.is_empty() && refused.is_empty() && !matches!(e, LoadError::Unsupported { .. }) => {
                return Err(source.err(e));
            }
            Err(e) => refused.push(crate::error_text(&e)),
        }
    }
    let Some(info) = tools.first().cloned() else {
        let why = refused.join("; ");
        return Err(source.err(LoadError::Unsupported { export: String::new(), why }));
    };
    let compiled = code.get(engine).await.map_err(|c| source.err(c))?;
    let ty = compiled.component.component_type();
    let imports = ty.imports(compiled.component.engine()).map(|(name, _)| name.to_string()).collect();
    let exports = ty.exports(compiled.component.engine()).map(|(name, _)| name.to_string()).collect();
    Ok(Inspection { info, tools, refused, imports, exports, size: source.bytes.len(), sha256: code.sha256 })
}
