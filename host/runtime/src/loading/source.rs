//! What a tool is loaded from: its bytes and where they came from, the pins and names the
//! operator requires of it, and what lies beside a `.wasm` file (its policy file, its WIT).

use crate::error::{Error, LoadError, Result};
use crate::kinds;
use crate::loading::loader::ToolInfo;
use serde::Serialize;
use std::path::{Path, PathBuf};
use std::sync::Arc;

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
    /// An MCP server (its name): the tool is the server's, called through it.
    Mcp(String),
}

impl std::fmt::Display for Origin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Origin::Embedded(name) => write!(f, "embedded tool {name}"),
            Origin::File(p) => write!(f, "{}", p.display()),
            Origin::Bytes(label) => f.write_str(label),
            Origin::Mcp(server) => write!(f, "MCP server {server}"),
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
    pub(crate) precompiled: Option<(&'static str, &'static [u8])>,
    /// The bytes as embedded in this binary ([`ToolSource::embedded`]), to tell that
    /// [`bytes`](Self::bytes) still are those very bytes (same address and length).
    pub(crate) embedded: Option<&'static [u8]>,
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
    pub(crate) fn docs(&self) -> Arc<kinds::functions::Docs> {
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
