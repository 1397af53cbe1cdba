//! Tools another program serves: an MCP server's tools join the pool as `mcp__SERVER__TOOL`
//! (Claude Code's names) and go through every step a component's call does — the JSON Schema
//! check, PreToolUse hooks, permission rules and modes, the call under the tool's time limit,
//! the result's size limit, PostToolUse hooks, events and the audit log, one paired
//! `tool_result`. Only the call itself is the server's: the embedder connects to the server
//! and hands over a [`RemoteServer`].
//!
//! A server's tools are replaced whole ([`crate::Runtime::set_remote_tools`]) whenever its list is
//! read again, so a server that connects late or changes its list is picked up by the next
//! turn. Such a tool has no sandbox of its own: what it may do is what its server may do,
//! which is why it is asked in default mode unless a rule allows it (its grant is "outside the
//! workspace").

use crate::call::question::{MAX_QUESTIONS, Question};
use crate::sandbox::state::{MAX_PROGRESS_CHARS, MAX_PROGRESS_MESSAGES, ProgressTo};
use crate::{Answer, LogLevel, PermissionDecider};
use async_trait::async_trait;
use serde_json::Value;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

/// One tool of a server, as its `tools/list` describes it.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct RemoteTool {
    /// The tool's name on the server.
    pub name: String,
    /// Its description.
    pub description: String,
    /// Its input JSON Schema.
    pub input_schema: Value,
    /// `readOnlyHint`: the tool changes nothing, so its calls may overlap.
    pub read_only: bool,
}

impl RemoteTool {
    /// A tool named `name` on its server.
    pub fn new(name: impl Into<String>, description: impl Into<String>, input_schema: Value, read_only: bool) -> Self {
        RemoteTool { name: name.into(), description: description.into(), input_schema, read_only }
    }
}

/// What a server answered to a call.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct RemoteOutput {
    /// Text and images (images as raw bytes with their media type).
    pub content: Vec<RemoteBlock>,
    /// The server said the call failed (`isError`).
    pub is_error: bool,
}

/// One block of a server's answer.
#[derive(Debug, Clone)]
pub enum RemoteBlock {
    /// Text.
    Text(String),
    /// An image: its media type and bytes.
    Image {
        /// `image/png`, …
        media_type: String,
        /// The decoded bytes.
        data: Vec<u8>,
    },
}

impl RemoteOutput {
    /// An answer of these blocks.
    pub fn new(content: Vec<RemoteBlock>, is_error: bool) -> Self {
        RemoteOutput { content, is_error }
    }
}

/// The calling side of one call of a server's tool, for what the server sends while it runs:
/// its progress and log messages go where a component's would (the call's
/// [`crate::CallOptions`] and the events), and its questions to the person go to the call's
/// decider (under `toolhost mcp`, the client whose request it is), with a component's bounds:
/// 1,000 progress and log messages of 4,096 characters, [`MAX_QUESTIONS`] questions, each
/// checked as a [`Question`] and its answer against the form.
pub struct Caller {
    tool_use_id: Arc<str>,
    tool: Arc<str>,
    decider: Arc<dyn PermissionDecider>,
    progress: Option<ProgressTo>,
    sent: AtomicU32,
    asked: AtomicU32,
}

impl std::fmt::Debug for Caller {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Caller").field("tool_use_id", &self.tool_use_id).field("tool", &self.tool).finish()
    }
}

impl Caller {
    /// A caller whose questions go to `decider` and whose progress goes nowhere (the runtime
    /// makes its own with the call's options; this one is for an embedder's tests).
    pub fn new(tool_use_id: &str, tool: &str, decider: Arc<dyn PermissionDecider>) -> Caller {
        Caller {
            tool_use_id: tool_use_id.into(),
            tool: tool.into(),
            decider,
            progress: None,
            sent: AtomicU32::new(0),
            asked: AtomicU32::new(0),
        }
    }

    pub(crate) fn with_progress(mut self, progress: Option<ProgressTo>) -> Caller {
        self.progress = progress;
        self
    }

    /// The call's tool_use id.
    pub fn tool_use_id(&self) -> &str {
        &self.tool_use_id
    }

    /// The tool's name in the pool (`mcp__SERVER__TOOL`).
    pub fn tool(&self) -> &str {
        &self.tool
    }

    /// Whether `other` is a call whose questions go to the same decider (the same person or
    /// client): a server's question that names no call may be put to it only then.
    pub fn same_asker(&self, other: &Caller) -> bool {
        Arc::ptr_eq(&self.decider, &other.decider)
    }

    /// Whether one more may be taken of `counter` (below `max`), counting it; a count that
    /// reached `max` stays there however many more come (no wrapping round).
    fn take(counter: &AtomicU32, max: u32) -> bool {
        counter.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| (n < max).then_some(n + 1)).is_ok()
    }

    /// One more message may be passed on (progress and logs share the budget).
    fn budget(&self) -> bool {
        Self::take(&self.sent, MAX_PROGRESS_MESSAGES)
    }

    /// A progress message of the server for this call.
    pub fn progress(&self, message: &str) {
        if let Some(to) = &self.progress
            && self.budget()
        {
            to.send(message.chars().take(MAX_PROGRESS_CHARS).collect());
        }
    }

    /// A log message of the server while this call runs.
    pub fn log(&self, level: LogLevel, message: &str) {
        if let Some(to) = &self.progress
            && self.budget()
        {
            to.log(level, message.chars().take(MAX_PROGRESS_CHARS).collect());
        }
    }

    /// Put the server's question to the call's decider: refused (`Err`, nobody sees it) when it
    /// is not a form toolhost accepts or the call has asked [`MAX_QUESTIONS`] already; an
    /// accepted answer is checked against the form.
    pub async fn elicit(&self, message: String, form: &str) -> Result<Answer, crate::QuestionError> {
        if !Self::take(&self.asked, MAX_QUESTIONS) {
            return Err(crate::QuestionError::TooMany);
        }
        let question = Question::new(&self.tool_use_id, &self.tool, message, form)?;
        let answer = self.decider.elicit(&question).await;
        if let Answer::Accept(values) = &answer {
            question.check_answer(&Value::Object(values.clone()))?;
        }
        Ok(answer)
    }
}

/// Why a server gave no answer to a call or a list: a call's result says it as a host error,
/// a refresh as a load error. (What the server answered, an error result included, is an
/// answer: [`RemoteOutput`].)
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RemoteError {
    /// It is not running and could not be started (again), or it stopped: why, with what it
    /// said last when it said something.
    #[error("{0}")]
    NotConnected(String),
    /// The request went out and no answer came back (the connection failed under it, or the
    /// server sent an error instead).
    #[error("{0}")]
    NoAnswer(String),
    /// It answered with something that is not an answer to this request.
    #[error("{0}")]
    BadAnswer(String),
    /// The input cannot be the call's arguments: MCP's arguments are a JSON object.
    #[error("the input is not an object")]
    InputNotAnObject,
    /// This server's list cannot be read again.
    #[error("this server's list cannot be read again")]
    CannotList,
}

/// A connected server that makes calls of its tools.
#[async_trait]
pub trait RemoteServer: Send + Sync {
    /// Call `tool` (its name on the server) with `input`. An `Err` is a failure to reach the
    /// server or to get an answer (the call's result says it, as a host error).
    async fn call(&self, tool: &str, input: Value) -> Result<RemoteOutput, RemoteError>;

    /// [`RemoteServer::call`] with the [`Caller`], to which the server's progress, logs and
    /// questions during the call go. The runtime calls this one; the default drops the caller.
    async fn call_for(&self, tool: &str, input: Value, caller: Arc<Caller>) -> Result<RemoteOutput, RemoteError> {
        let _ = caller;
        self.call(tool, input).await
    }

    /// Read the server's tool list again (`tools/list`), for [`crate::Runtime::refresh_remote_tools`].
    /// The default says it cannot.
    async fn list(&self) -> Result<Vec<RemoteTool>, RemoteError> {
        Err(RemoteError::CannotList)
    }
}

/// The name a server's tool has in the pool: `mcp__SERVER__TOOL`, with every character
/// outside `[A-Za-z0-9_-]` replaced by `_` (as Claude Code names them).
pub fn mcp_tool_name(server: &str, tool: &str) -> String {
    let clean = |s: &str| {
        s.chars().map(|c| if c.is_ascii_alphanumeric() || c == '_' || c == '-' { c } else { '_' }).collect::<String>()
    };
    format!("mcp__{}__{}", clean(server), clean(tool))
}

/// How many tools of one server join the pool; the rest are left out and said. A server is
/// another program, possibly hostile: a list of a million tools would be offered to the model
/// (or to ToolSearch) at every turn.
pub const MAX_MCP_TOOLS_PER_SERVER: usize = 1000;

/// How much of a tool's description is kept, in characters: Claude Code's cut
/// (`MAX_MCP_DESCRIPTION_LENGTH`), with its mark.
pub const MAX_MCP_DESCRIPTION_CHARS: usize = 2048;

/// The largest input schema a server's tool may have, serialised: a schema is compiled once
/// per list and checked at every call, and is sent to the model with the tool.
pub const MAX_MCP_SCHEMA_BYTES: usize = 256 * 1024;

/// A server's answer as the blocks a component would have returned.
pub(crate) fn wit_blocks(output: RemoteOutput) -> Vec<crate::invoke::bindings::WitContentBlock> {
    use crate::invoke::bindings::{WitContentBlock, WitImage};
    output
        .content
        .into_iter()
        .map(|b| match b {
            RemoteBlock::Text(text) => WitContentBlock::Text(text),
            RemoteBlock::Image { media_type, data } => WitContentBlock::Image(WitImage { media_type, data }),
        })
        .collect()
}
