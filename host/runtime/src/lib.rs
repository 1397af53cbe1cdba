//! # toolhost
//!
//! Runs AI-agent tools as sandboxed WebAssembly components. A model proposes a `tool_use`; the
//! runtime finds the tool, checks the input against the tool's JSON Schema, runs the tool's own
//! `validate` (with no capabilities), calls it on a fresh wasmtime `Store` holding only what the
//! operator granted, bounds its time, memory and output, and always answers with exactly one
//! Messages-API `tool_result` — whatever the tool did.
//!
//! ## Example
//!
//! ```no_run
//! # async fn demo(wasm: Vec<u8>) -> Result<(), toolhost::Error> {
//! use toolhost::{CallOptions, Runtime, Session, ToolSource, ToolUse};
//!
//! let mut runtime = Runtime::builder().workspace("/path/to/repo").build()?;
//! runtime.load(ToolSource::bytes("my_tool.wasm", wasm)).await?;
//! let session = Session::new();
//! let result = runtime
//!     .call(
//!         &session,
//!         &ToolUse::new("toolu_1", "Read", serde_json::json!({"file_path": "README.md"})),
//!         CallOptions::new(),
//!     )
//!     .await;
//! println!("{}", serde_json::to_string(&result).unwrap());
//! # Ok(()) }
//! ```
#![deny(missing_docs)]

mod abort;
mod call;
mod error;
mod event;
mod hooks;
mod invoke;
mod kinds;
mod loading;
mod printable;
mod registry;
mod sandbox;
mod turns;

pub use call::classify::CheckedCall;
pub use call::outcome::OutcomeKind;
pub use call::permission::{AskAnswer, AskRequest, PermissionDecider};
pub use call::probe::Probe;
pub use call::question::{MAX_QUESTIONS, QuestionError};
pub use call::refusal::{Refusal, RefusalKind};
pub use call::remote::{
    Caller, MAX_MCP_DESCRIPTION_CHARS, MAX_MCP_SCHEMA_BYTES, MAX_MCP_TOOLS_PER_SERVER, RemoteBlock, RemoteError,
    RemoteOutput, RemoteServer, RemoteTool, mcp_tool_name,
};
pub use call::result::{ContentBlock, ImageSource, ToolResult, content_text};
pub use call::trace::{CallTrace, Step};
pub use call::{Answer, CallOptions, LogFn, LogLevel, LogMessage, Progress, ProgressFn, Question};
pub use error::{
    Error, GrantError, LoadError, Result, SchemaError, SettingError, WasmtimeError, WorkspaceError, error_text,
};
pub use event::{Event, EventSink, input_sha256};
pub use hooks::{HookEvent, HookInput, HookResponse, Hooks, SessionEvent, SessionHooks};
pub use kinds::{FunctionExport, ToolKind};
pub use loading::cache::{DirRole, private_dir, private_dir_for};
pub use loading::engine::{EngineOptions, ToolEngine};
pub use loading::loader::{Inspection, ToolInfo, inspect};
pub use loading::source::{DeclarationCheck, Origin, ToolSource};
pub use loading::tiering::{CodeState, OptimizeHold, Tier};
#[doc(hidden)]
pub use printable::printable;
pub use registry::{GrantFrom, LoadedTool, Runtime, RuntimeBuilder};
pub use sandbox::fsguard::use_procfs_paths;
pub use tokio_util::sync::CancellationToken;
pub use toolhost_policy as policy;
pub use turns::batch::Submission;
pub use turns::schedule::{Hold, Running, Scheduler, Ticket};
pub use turns::session::{EMBEDDED_NAMESPACE, SavedSession, Session, WORKSPACE_KEY, tool_namespace};

/// One `tool_use` block from the model: `{"type":"tool_use","id","name","input"}`.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ToolUse {
    /// The id its `tool_result` must carry.
    pub id: String,
    /// The tool's name.
    pub name: String,
    /// The input object.
    pub input: serde_json::Value,
}

impl ToolUse {
    /// A tool_use block.
    pub fn new(id: impl Into<String>, name: impl Into<String>, input: serde_json::Value) -> Self {
        ToolUse { id: id.into(), name: name.into(), input }
    }
}
