//! Errors of the library's own operations (loading tools, building the engine). A tool's
//! failure is never one of these: it is a `ToolResult` with `is_error`.
//!
//! Each error's `Display` says its own part only, and what it wraps is its `source()`, as a
//! typed field: a caller can walk the chain, tell a digest mismatch from an unreadable file
//! without reading text, and print the whole with [`crate::error_text`] (or `anyhow`'s `{:#}`),
//! which joins the parts with `: ` (`x.wasm: sha256 mismatch …`).

use std::path::PathBuf;
use std::sync::Arc;

/// An error loading tools or setting up the runtime.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A tool could not be loaded; `origin` names the file (or the embedded tool).
    #[error("{origin}")]
    Load {
        /// Where the tool came from.
        origin: String,
        /// Why it was not loaded.
        #[source]
        cause: LoadError,
    },
    /// Two tools claim the same name.
    #[error("{origin}: tool name `{name}` is already taken by {existing}; it was not loaded")]
    Duplicate {
        /// The tool that was not loaded.
        origin: String,
        /// The contested name.
        name: String,
        /// The tool that holds the name.
        existing: String,
    },
    /// A setting is unusable.
    #[error("config")]
    Config(#[source] SettingError),
    /// The wasmtime engine could not be configured (wasmtime's error, with its chain).
    #[error("the wasmtime engine could not be configured")]
    Engine(#[source] Box<dyn std::error::Error + Send + Sync>),
    /// The workspace is unusable.
    #[error("workspace {path}", path = path.display())]
    Workspace {
        /// The path given.
        path: PathBuf,
        /// What is wrong.
        #[source]
        cause: WorkspaceError,
    },
}

/// Why a tool was not loaded ([`Error::Load`]). Clone, so that a failure to make a tool's code
/// ready is reported the same way to every call that needed it.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum LoadError {
    /// The file cannot be read.
    #[error("cannot read")]
    Read(#[source] Arc<std::io::Error>),
    /// The bytes are not a WebAssembly component (the message says what they are instead).
    #[error("{0}")]
    NotAComponent(&'static str),
    /// The bytes do not have the digest they were pinned to.
    #[error(
        "sha256 mismatch{}: expected {expected}, the file has {actual}; refusing to load it",
        tool.as_ref().map(|t| format!(" for tool {t} (pinned in the config)")).unwrap_or_default()
    )]
    Sha256Mismatch {
        /// The tool, when the pin is its `[tools.NAME] sha256`.
        tool: Option<String>,
        /// The pinned digest (hex), as given.
        expected: String,
        /// The digest of the bytes (hex).
        actual: String,
    },
    /// The config pins a digest and the caller another.
    #[error("two pins disagree: {config} and {given}")]
    PinsDisagree {
        /// The config's pin.
        config: String,
        /// The caller's pin.
        given: String,
    },
    /// wasmtime refused the component, or compiling it failed (wasmtime's error, with its
    /// chain).
    #[error("invalid component")]
    Compile(#[source] WasmtimeError),
    /// The component imports something the host does not provide.
    #[error("cannot link (a tool may import only `toolhost:tool/host` and WASI 0.2)")]
    Link(#[source] WasmtimeError),
    /// The component does not export the tool interface.
    #[error(
        "not a toolhost tool: it does not implement the world `toolhost:tool/plugin@0.1.0` (it must export \
         `{interface}` with schema, is-concurrency-safe, validate and call)"
    )]
    NotATool {
        /// The interface it must export.
        interface: &'static str,
        /// wasmtime's account of the mismatch.
        #[source]
        detail: WasmtimeError,
    },
    /// Its `schema` export failed, trapped or timed out, or described the tool in a way the
    /// host refuses; also when an earlier load of the same bytes failed so.
    #[error(transparent)]
    Schema(SchemaError),
    /// The tool and the config disagree (its name, pin or grant); the error has the config's
    /// position.
    #[error(transparent)]
    Config(Arc<toolhost_policy::ConfigError>),
    /// A tool that declares itself read-only asks to write.
    #[error(
        "tool {name} declares `read-only: true` but its ceiling asks for fs-write({dir}): a read-only tool \
         cannot write; make the ceiling fs-read, or declare the tool not read-only"
    )]
    ReadOnlyWrites {
        /// The tool.
        name: String,
        /// The directory its ceiling would write.
        dir: String,
    },
    /// A granted directory cannot be granted safely (it leaves its base through a link, or
    /// holds the compile cache).
    #[error("tool {name}")]
    Grant {
        /// The tool.
        name: String,
        /// Which directory, and why (boxed: it is the largest cause, and rare).
        #[source]
        cause: Box<GrantError>,
    },
    /// A component with nothing toolhost can call: no `toolhost:tool/tool`, no `wasi:cli/run`,
    /// no exported function.
    #[error(
        "nothing to call: the component exports no function, no `toolhost:tool/tool` interface and no \
         `wasi:cli/run` (its exports: {})",
        if exports.is_empty() { "none".to_string() } else { exports.join(", ") }
    )]
    NothingToCall {
        /// What it does export.
        exports: Vec<String>,
    },
    /// A function component with more functions than are offered as tools of one component.
    #[error("the component exports {count} functions; at most {max} of one component are offered as tools")]
    TooManyFunctions {
        /// How many it exports.
        count: usize,
        /// The most offered.
        max: usize,
    },
    /// One function of a function component cannot be a tool (a resource, stream or future
    /// in its types, an async function); the component's other functions load.
    #[error("{why}")]
    Unsupported {
        /// The function (`INTERFACE#FUNCTION`, or `FUNCTION`).
        export: String,
        /// Why, naming the function.
        why: String,
    },
    /// The policy file beside the component cannot be used (unreadable, malformed, or
    /// asking for what a grant cannot say); the error has its position.
    #[error("its policy file")]
    PolicyFile(#[source] Arc<toolhost_policy::PolicyFileError>),
    /// The embedder could not produce the tool's bytes (an installed tool missing from its
    /// store, say), or a check of the embedder's refused what the tool declares; the error is
    /// the embedder's, with its own chain.
    #[error(transparent)]
    Source(Arc<dyn std::error::Error + Send + Sync>),
}

impl LoadError {
    /// [`LoadError::Source`] from the embedder's error (or its message). Not `source`: that
    /// name is `std::error::Error`'s.
    pub fn embedder(error: impl Into<Box<dyn std::error::Error + Send + Sync>>) -> Self {
        LoadError::Source(Arc::from(error.into()))
    }
}

/// Why a tool's `schema` export gave no description the host can use ([`LoadError::Schema`]).
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum SchemaError {
    /// The export did not return within the load deadline.
    #[error("its `schema` export did not return within {timeout_ms} ms (limits.load_timeout_ms)")]
    TimedOut {
        /// The deadline, `limits.load_timeout_ms`.
        timeout_ms: u64,
    },
    /// The export trapped or returned an error.
    #[error("its `schema` export failed ({kind}): {message}")]
    Failed {
        /// How it failed (`trap`, `out_of_memory`, `tool_error`, …).
        kind: String,
        /// What the tool or wasmtime said.
        message: String,
    },
    /// The name is empty, too long or has characters outside `[A-Za-z0-9_-]`.
    #[error("tool name {name:?} is invalid: use 1-64 characters from [A-Za-z0-9_-]")]
    InvalidName {
        /// The name the tool gave.
        name: String,
    },
    /// The input schema does not parse as JSON.
    #[error("tool {tool}: its input schema is not JSON")]
    NotJson {
        /// The tool.
        tool: String,
        /// The parser's error.
        #[source]
        error: Arc<serde_json::Error>,
    },
    /// The input schema is JSON but not an object.
    #[error("tool {tool}: its input schema must be a JSON object")]
    NotAnObject {
        /// The tool.
        tool: String,
    },
    /// The input schema is not a JSON Schema the validator accepts.
    #[error("tool {tool}: its input schema is not a valid JSON Schema: {message}")]
    NotASchema {
        /// The tool.
        tool: String,
        /// The validator's account.
        message: String,
    },
    /// `permission-subject` is not a JSON pointer.
    #[error("tool {tool}: permission-subject {pointer:?} is not a JSON pointer (it must start with `/`)")]
    BadSubject {
        /// The tool.
        tool: String,
        /// What it gave.
        pointer: String,
    },
    /// An earlier load of the same bytes failed, and its record says so; loading them again
    /// would fail the same way.
    #[error(
        "{message} (remembered from an earlier load of these bytes, sha256 {sha256}; {})",
        if *timed_out {
            "raise limits.load_timeout_ms, change the file or update toolhost to try again"
        } else {
            "change the file or update toolhost to try again"
        }
    )]
    Remembered {
        /// The earlier failure's text.
        message: String,
        /// The bytes' digest (hex).
        sha256: String,
        /// Whether it ran out of time (a longer deadline tries again).
        timed_out: bool,
    },
}

/// Why a tool's grant cannot be given to it safely ([`LoadError::Grant`]).
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum GrantError {
    /// A granted directory's real path cannot be found.
    #[error("cannot resolve granted directory {path}", path = path.display())]
    Unresolvable {
        /// The directory as granted.
        path: PathBuf,
        /// The error.
        #[source]
        error: Arc<std::io::Error>,
    },
    /// A granted directory is, through a link, outside the directory it was named under.
    #[error(
        "granted directory {} really is {}, outside {} that it was named under (a link?); \
         grant the real directory instead, or remove the link",
        path.display(), real.display(), base.display()
    )]
    LeavesBase {
        /// The directory as granted.
        path: PathBuf,
        /// Its real path.
        real: PathBuf,
        /// The (real) directory it was named under.
        base: PathBuf,
    },
    /// A granted path cannot be given to the guest as a string.
    #[error("granted path {path} is not UTF-8", path = path.display())]
    NotUtf8 {
        /// The path.
        path: PathBuf,
    },
    /// A granted directory cannot be opened.
    #[error("cannot open granted directory {path}", path = path.display())]
    Unopenable {
        /// Its real path.
        path: PathBuf,
        /// The error.
        #[source]
        error: Arc<std::io::Error>,
    },
    /// The grant reaches a directory of the host's own (the compile cache, the trust state),
    /// or lies inside one.
    #[error(
        "{}, {holds}; {fix}",
        if *inside {
            format!("the grant of {} lies inside {}", granted.display(), private.display())
        } else {
            format!("the grant includes {}", private.display())
        }
    )]
    ReachesPrivate {
        /// The granted directory (real path).
        granted: PathBuf,
        /// The host's directory.
        private: PathBuf,
        /// Whether the grant lies inside it (otherwise it holds it).
        inside: bool,
        /// What the host's directory holds.
        holds: &'static str,
        /// What to do instead.
        fix: &'static str,
    },
}

/// The whole text of an error: its `Display`, then each `source()` in turn, joined by `: `. A
/// source whose text the text so far already holds is left out, so an error that still
/// repeats its cause (some of other crates do) is not printed twice.
pub fn error_text(error: &(dyn std::error::Error + 'static)) -> String {
    let mut text = error.to_string();
    let mut next = error.source();
    while let Some(e) = next {
        let part = e.to_string();
        if !part.is_empty() && !text.contains(&part) {
            text.push_str(": ");
            text.push_str(&part);
        }
        next = e.source();
    }
    text
}

/// A setting the runtime cannot use ([`Error::Config`]).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SettingError {
    /// `max_concurrency = 0`.
    #[error("max_concurrency must be at least 1 (0 would run nothing)")]
    ZeroConcurrency,
    /// A `[tls] ca_files` entry cannot be read.
    #[error("tls.ca_files: cannot read {path}", path = path.display())]
    CaFileUnreadable {
        /// The file.
        path: PathBuf,
        /// The read's error.
        #[source]
        error: std::io::Error,
    },
    /// A `[tls] ca_files` entry holds no usable certificate.
    #[error("tls.ca_files: {0}")]
    CaFileInvalid(String),
    /// A hook whose files cannot be protected from tools: its command cannot be analysed, or
    /// it runs a file at the workspace root, or its `files` list the workspace (the message
    /// says which, and the ways out).
    #[error(transparent)]
    Hook(toolhost_policy::HookError),
    /// A path pattern of files other programs run does not compile.
    #[error("{setting}")]
    Pattern {
        /// Which setting (`permissions.protected`, or the built-in list).
        setting: &'static str,
        /// The pattern's error.
        #[source]
        error: toolhost_policy::PathPatternError,
    },
}

/// Why the workspace is unusable ([`Error::Workspace`]).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum WorkspaceError {
    /// It cannot be resolved (it does not exist, say).
    #[error("cannot be resolved")]
    Unresolvable(#[source] std::io::Error),
    /// It is not a directory.
    #[error("not a directory")]
    NotADirectory,
}

/// wasmtime's error as a standard error: its `Display` is wasmtime's own message, and its
/// `source()` the rest of wasmtime's chain (wasmtime's `Error` is not a `std::error::Error`
/// itself). Clone, as [`LoadError`] is.
#[derive(Debug, Clone)]
pub struct WasmtimeError(Arc<wasmtime::Error>);

impl WasmtimeError {
    /// Wrap wasmtime's error.
    pub fn new(error: wasmtime::Error) -> Self {
        WasmtimeError(Arc::new(error))
    }

    fn as_std(&self) -> &(dyn std::error::Error + Send + Sync + 'static) {
        (*self.0).as_ref()
    }
}

impl std::fmt::Display for WasmtimeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Display::fmt(self.as_std(), f)
    }
}

impl std::error::Error for WasmtimeError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.as_std().source()
    }
}

/// The library's result type.
pub type Result<T, E = Error> = std::result::Result<T, E>;
