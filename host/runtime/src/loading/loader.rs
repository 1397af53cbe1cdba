//! Turning bytes into a loaded tool: recognise what the bytes are (with a precise message when
//! they are not a component of our world), compile through the cache, link once into an
//! `InstancePre`, and read the tool's schema with no capabilities.

use crate::error::{Error, LoadError, Result, SchemaError, WasmtimeError};
use crate::invoke::bindings::{PluginPre, TOOL_INTERFACE};
use crate::invoke::{GetSchema, InvokeCtx, invoke};
use crate::kinds::{self, ToolKind};
use crate::loading::cache::{self, Cache};
use crate::loading::engine::ToolEngine;
use crate::loading::record::{LoadRecord, RawSchema};
use crate::sandbox::state::{CallEnv, HostState};
use serde::Serialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use tokio_util::sync::CancellationToken;
use toolhost_policy::{Capability, Limits};
use wasmtime::component::{Component, InstancePre};
use wasmtime_wasi::p2::bindings::CommandPre;

/// Where a tool came from; used in every message about it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", content = "value", rename_all = "snake_case")]
pub enum Origin {
    /// Built into the binary.
    Embedded(String),
    /// A `.wasm` file.
    File(PathBuf),
    /// Bytes handed over by an embedding program, with its label.
    Bytes(String),
}

impl std::fmt::Display for Origin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Origin::Embedded(name) => write!(f, "embedded tool {name}"),
            Origin::File(p) => write!(f, "{}", p.display()),
            Origin::Bytes(label) => f.write_str(label),
        }
    }
}

/// A component to load.
#[derive(Debug, Clone)]
pub struct ToolSource {
    /// Where it came from.
    pub origin: Origin,
    /// The component bytes (an embedded tool's are the binary's own, not copied).
    pub bytes: bytes::Bytes,
    /// If set, the bytes' sha256 (hex) must match or the tool is refused, before anything
    /// else is done with them.
    pub expected_sha256: Option<String>,
    /// If set, the name the tool must declare (the `[tools.NAME]` that points at the file).
    pub expected_name: Option<String>,
    /// If set, the name the tool is registered under whatever it declares: an installed
    /// third-party tool (`toolhost add --name`) goes by the operator's name for it.
    pub rename: Option<String>,
    /// The context namespace it shares with others; `None`: its own (see [`crate::turns::session`]).
    pub(crate) context_namespace: Option<String>,
    /// Native code made ahead of time for the bytes with this sha256 (see
    /// [`ToolSource::with_precompiled`]).
    precompiled: Option<(&'static str, &'static [u8])>,
    /// The bytes as embedded in this binary ([`ToolSource::embedded`]), to tell that
    /// [`bytes`](Self::bytes) still are those very bytes (same address and length).
    embedded: Option<&'static [u8]>,
    /// A check of what the tool declares, made before it is registered
    /// ([`ToolSource::with_declaration_check`]).
    pub(crate) declaration_check: Option<DeclarationCheck>,
    /// The policy file beside a `.wasm` file (`NAME.policy.yaml`, Wassette's format), read
    /// with it: its path, and its grant or why it cannot be used (an error at load, never a
    /// file silently ignored).
    pub(crate) policy_file: Option<PolicyFile>,
    /// The documentation of a function component's functions, from the WIT file beside it
    /// (`NAME.wit`) or given ([`ToolSource::with_wit`]).
    pub(crate) wit_docs: Option<WitDocs>,
}

/// The documentation read from a WIT document given with a component.
#[derive(Debug, Clone)]
pub(crate) struct WitDocs {
    /// Where it came from (for messages).
    pub(crate) path: PathBuf,
    /// The functions' docs, or why the document could not be used.
    pub(crate) docs: std::result::Result<Arc<kinds::functions::Docs>, String>,
}

impl WitDocs {
    fn parse(path: PathBuf, text: &str) -> WitDocs {
        let docs = if text.len() > kinds::functions::MAX_WIT_BYTES {
            Err(format!("larger than {} bytes", kinds::functions::MAX_WIT_BYTES))
        } else {
            kinds::functions::docs_from_wit(text, &path).map(Arc::new)
        };
        WitDocs { path, docs }
    }

    /// The `.wit` file beside `component`, if there is one.
    fn beside(component: &Path) -> Option<WitDocs> {
        let path = component.with_extension("wit");
        let meta = std::fs::metadata(&path).ok()?;
        if !meta.is_file() {
            return Some(WitDocs { path, docs: Err("not a regular file".into()) });
        }
        if meta.len() > kinds::functions::MAX_WIT_BYTES as u64 {
            return Some(WitDocs { docs: Err(format!("larger than {} bytes", kinds::functions::MAX_WIT_BYTES)), path });
        }
        Some(match std::fs::read_to_string(&path) {
            Ok(text) => WitDocs::parse(path, &text),
            Err(e) => WitDocs { path, docs: Err(format!("cannot read: {e}")) },
        })
    }
}

/// A component's policy file, read.
#[derive(Debug, Clone)]
pub(crate) struct PolicyFile {
    pub(crate) path: PathBuf,
    pub(crate) grant: std::result::Result<toolhost_policy::Grant, Arc<toolhost_policy::PolicyFileError>>,
}

/// A check of what a component declares about itself (its [`ToolInfo`]), made at every load
/// before the tool is registered: `Err(why)` refuses it. An installed tool's declaration is
/// compared with its lock this way, since `schema` is guest code and may answer differently on
/// another machine or another day.
#[derive(Clone)]
pub struct DeclarationCheck(std::sync::Arc<CheckFn>);

/// The function a [`DeclarationCheck`] calls.
type CheckFn = dyn Fn(&ToolInfo) -> std::result::Result<(), String> + Send + Sync;

impl std::fmt::Debug for DeclarationCheck {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("DeclarationCheck")
    }
}

impl DeclarationCheck {
    pub(crate) fn check(&self, info: &ToolInfo) -> std::result::Result<(), String> {
        (self.0)(info)
    }
}

impl ToolSource {
    /// Read a `.wasm` file, and the policy file beside it if there is one
    /// (`NAME.policy.yaml` for `NAME.wasm`): its grant is the tool's when the config gives
    /// none.
    ///
    /// # Errors
    ///
    /// [`Error::Load`] naming the file if it cannot be read.
    pub fn file(path: impl AsRef<Path>) -> Result<Self> {
        let path = path.as_ref();
        let bytes = std::fs::read(path)
            .map_err(|e| Error::Load { origin: path.display().to_string(), cause: LoadError::Read(Arc::new(e)) })?;
        let policy_file = toolhost_policy::policy_file_path(path).and_then(|policy| {
            match toolhost_policy::read_policy_file(&policy) {
                Ok(None) => None,
                Ok(Some(grant)) => Some(PolicyFile { path: policy, grant: Ok(grant) }),
                Err(e) => Some(PolicyFile { path: policy, grant: Err(Arc::new(e)) }),
            }
        });
        Ok(ToolSource {
            policy_file,
            wit_docs: WitDocs::beside(path),
            ..ToolSource::new(Origin::File(path.to_path_buf()), bytes.into())
        })
    }

    /// A tool embedded in the binary, trusted by the host: embedded tools share one context
    /// namespace (so `Edit` sees what `Read` recorded), which no other tool can reach.
    pub fn embedded(name: &str, bytes: &'static [u8]) -> Self {
        ToolSource {
            context_namespace: Some(crate::turns::session::EMBEDDED_NAMESPACE.to_string()),
            embedded: Some(bytes),
            ..ToolSource::new(Origin::Embedded(name.to_string()), bytes::Bytes::from_static(bytes))
        }
    }

    /// Bytes from elsewhere, with a label for messages.
    pub fn bytes(label: impl Into<String>, bytes: impl Into<bytes::Bytes>) -> Self {
        ToolSource::new(Origin::Bytes(label.into()), bytes.into())
    }

    fn new(origin: Origin, bytes: bytes::Bytes) -> Self {
        ToolSource {
            origin,
            bytes,
            expected_sha256: None,
            expected_name: None,
            rename: None,
            context_namespace: None,
            precompiled: None,
            embedded: None,
            declaration_check: None,
            policy_file: None,
            wit_docs: None,
        }
    }

    /// Native code for these bytes made ahead of time (wasmtime's serialisation, as
    /// `Engine::precompile_component` writes it under `toolhost-engine-config`'s
    /// configuration), used instead of compiling when the bytes' sha256 is `wasm_sha256` and
    /// the engine's configuration matches; otherwise the tool is compiled as usual. This is how
    /// the default tools start without compiling on a fresh machine.
    ///
    /// For an embedded tool whose bytes are still the ones embedded, `wasm_sha256` is taken as
    /// their digest without hashing them again (both come from the same build; hashing the
    /// default tools' 5.5 MB cost about 4 ms at every start).
    ///
    /// # Safety
    ///
    /// `code` is run as native code with no check beyond wasmtime's compatibility header: it
    /// must come from a trusted build (the binary itself), never from a file or the network;
    /// and `wasm_sha256` must be the sha256 of the bytes it was made from.
    #[allow(unsafe_code, reason = "running code made ahead of time is unsafe by nature")]
    pub unsafe fn with_precompiled(mut self, wasm_sha256: &'static str, code: &'static [u8]) -> Self {
        self.precompiled = Some((wasm_sha256, code));
        self
    }

    /// The WIT document a function component was built from (its text, named `label` in
    /// messages), for the doc comments of its functions: today's toolchains leave them out of
    /// the component. [`ToolSource::file`] reads `NAME.wit` beside `NAME.wasm` itself.
    pub fn with_wit(mut self, label: impl Into<PathBuf>, text: &str) -> Self {
        self.wit_docs = Some(WitDocs::parse(label.into(), text));
        self
    }

    /// Require the tool to declare this name: one that declares another is refused.
    pub fn with_name(mut self, name: impl Into<String>) -> Self {
        self.expected_name = Some(name.into());
        self
    }

    /// Register the tool as `name`, whatever name it declares (no name is then required).
    pub fn renamed(mut self, name: impl Into<String>) -> Self {
        self.rename = Some(name.into());
        self
    }

    /// The name known before anything runs: the one given, the one required, or an embedded
    /// tool's.
    pub fn known_name(&self) -> Option<&str> {
        match (&self.rename, &self.expected_name, &self.origin) {
            (Some(name), _, _) | (None, Some(name), _) | (None, None, Origin::Embedded(name)) => Some(name),
            _ => None,
        }
    }

    /// Check what the tool declares (its name, ceiling, read-only flag …) at load, before it is
    /// registered: `Err(why)` refuses it with `why` (a `DeclarationCheck`).
    pub fn with_declaration_check(
        mut self,
        check: impl Fn(&ToolInfo) -> std::result::Result<(), String> + Send + Sync + 'static,
    ) -> Self {
        self.declaration_check = Some(DeclarationCheck(std::sync::Arc::new(check)));
        self
    }

    /// The documentation given with the component (none when its WIT could not be used).
    fn docs(&self) -> Arc<kinds::functions::Docs> {
        self.wit_docs.as_ref().and_then(|w| w.docs.as_ref().ok()).cloned().unwrap_or_default()
    }

    /// Require the bytes to have this sha256 (hex, any case).
    pub fn with_sha256(mut self, sha256: impl Into<String>) -> Self {
        self.expected_sha256 = Some(sha256.into());
        self
    }

    pub(crate) fn err(&self, cause: LoadError) -> Error {
        Error::Load { origin: self.origin.to_string(), cause }
    }
}

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
    fn new(
        engine: &ToolEngine,
        component: &Component,
        pre: InstancePre<HostState>,
    ) -> std::result::Result<Pre, LoadError> {
        let ty = component.component_type();
        let names: Vec<String> = ty.exports(&engine.engine).map(|(name, _)| name.to_string()).collect();
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
        if kinds::functions::exported(&engine.engine, component).is_empty() {
            return Err(LoadError::NothingToCall { exports: names });
        }
        Ok(Pre::Functions(pre))
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
    ready: tokio::sync::OnceCell<std::result::Result<Arc<Compiled>, LoadError>>,
}

impl Code {
    /// Code to make from `source`, whose bytes passed [`check_bytes`] with this `sha256`.
    pub(crate) fn new(source: &ToolSource, sha256: String, cache: Option<&Cache>) -> Self {
        Code {
            sha256,
            pending: std::sync::Mutex::new(Some((source.clone(), cache.cloned()))),
            ready: tokio::sync::OnceCell::new(),
        }
    }

    /// The hex sha256 of the component's bytes.
    pub(crate) fn sha256(&self) -> &str {
        &self.sha256
    }

    /// The compiled, linked component, made now if this is the first time it is needed.
    ///
    /// # Errors
    ///
    /// Why it cannot be made, the same every time.
    pub(crate) async fn get(&self, engine: &ToolEngine) -> std::result::Result<Arc<Compiled>, LoadError> {
        self.ready
            .get_or_init(|| async {
                // Cloned, not taken: a call cancelled while this runs leaves it for the next.
                let pending = self.pending.lock().unwrap_or_else(|e| e.into_inner()).clone();
                let Some((source, cache)) = pending else {
                    // Not reached: set once made.
                    return Err(LoadError::Compile(WasmtimeError::new(wasmtime::format_err!("its code is gone"))));
                };
                let made =
                    compile(engine, &source, &self.sha256, cache.as_ref()).await.map(Arc::new).map_err(|e| match e {
                        Error::Load { cause, .. } => cause,
                        other => LoadError::Source(Arc::new(other)),
                    });
                *self.pending.lock().unwrap_or_else(|e| e.into_inner()) = None;
                made
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
/// [`check_bytes`] with this `sha256`.
async fn compile(engine: &ToolEngine, source: &ToolSource, sha256: &str, cache: Option<&Cache>) -> Result<Compiled> {
    let bytes = &source.bytes;
    let known = engine.compiled.lock().unwrap_or_else(|e| e.into_inner()).get(sha256).cloned();
    let component = match known.or_else(|| precompiled(engine, source, sha256)) {
        Some(component) => component,
        None => {
            // Compiling takes from milliseconds to seconds (interpreters); keep it off the executor.
            let (eng, b, s, cache) = (engine.engine.clone(), bytes.clone(), sha256.to_string(), cache.cloned());
            let component = tokio::task::spawn_blocking(move || cache::compile(&eng, &b, &s, cache.as_ref()))
                .await
                .map_err(|e| {
                    source.err(LoadError::Compile(WasmtimeError::new(wasmtime::format_err!(
                        "compilation task failed: {e}"
                    ))))
                })?
                .map_err(|e| source.err(LoadError::Compile(WasmtimeError::new(e))))?;
            engine.compiled.lock().unwrap_or_else(|e| e.into_inner()).insert(sha256.to_string(), component.clone());
            component
        }
    };
    let instance_pre =
        engine.linker.instantiate_pre(&component).map_err(|e| source.err(LoadError::Link(WasmtimeError::new(e))))?;
    let pre = Pre::new(engine, &component, instance_pre).map_err(|e| source.err(e))?;
    Ok(Compiled { component, pre })
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
                    let functions = kinds::functions::describe(&engine.engine, &compiled.component, &source.bytes);
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
        },
        grant: None,
        net: &Arc::from([]),
        pool: None,
        cancel: &CancellationToken::new(),
        // No grant, so no request is ever sent; the shared default settings cost nothing.
        tls: &tls,
        fs: Default::default(),
    };
    match invoke(cx, GetSchema).await {
        Ok(s) => Ok(s.into()),
        Err(f) if f.kind == crate::call::outcome::OutcomeKind::Timeout => {
            Err(SchemaError::TimedOut { timeout_ms: limits.timeout_ms })
        }
        Err(f) => Err(SchemaError::Failed { kind: f.kind.to_string(), message: f.message }),
    }
}

fn check_schema(s: RawSchema) -> std::result::Result<(ToolInfo, jsonschema::Validator), SchemaError> {
    let valid_name = !s.name.is_empty()
        && s.name.len() <= 64
        && s.name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
    if !valid_name {
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
    let code = Code {
        sha256,
        pending: Default::default(),
        ready: tokio::sync::OnceCell::new_with(Some(Ok(Arc::new(compiled)))),
    };
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
    let imports = ty.imports(&engine.engine).map(|(name, _)| name.to_string()).collect();
    let exports = ty.exports(&engine.engine).map(|(name, _)| name.to_string()).collect();
    Ok(Inspection { info, tools, refused, imports, exports, size: source.bytes.len(), sha256: code.sha256 })
}
