//! The three kinds of component toolhost runs as tools, and what differs between them:
//! - a **toolhost tool** implements `toolhost:tool/tool`: it describes itself (`schema`),
//!   declares its ceiling, checks its input (`validate`) and says when calls may overlap;
//! - a **function component** exports plain functions: each is a tool whose input schema is
//!   derived from its WIT types ([`wit_schema`], [`wit_value`]) and whose description comes
//!   from its WIT documentation ([`functions`]);
//! - a **command program** exports `wasi:cli/run`: one tool taking `args` and `stdin` and
//!   answering its exit code, stdout and stderr ([`command`]).
//!
//! The last two say nothing about themselves the host would have to trust: no ceiling (what
//! they reach is the operator's grant or policy file, nothing else), no `validate` (the schema
//! check is all), not concurrency-safe and not read-only unless the config says so.

pub(crate) mod command;
pub(crate) mod functions;
pub(crate) mod sections;
pub(crate) mod wit_schema;
pub(crate) mod wit_value;

pub use functions::FunctionExport;

use serde::Serialize;

/// What kind of component a tool is.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
#[non_exhaustive]
pub enum ToolKind {
    /// It implements toolhost's world, `toolhost:tool/tool`.
    Toolhost,
    /// One exported function of a function component.
    Function {
        /// Which function.
        export: FunctionExport,
    },
    /// A WASI command program (`wasi:cli/run`).
    Command,
    /// A tool of an MCP server (`mcp__SERVER__TOOL`): the server, run or reached by the
    /// embedder, makes the call; toolhost runs every step around it.
    Mcp {
        /// The server's name.
        server: String,
        /// The tool's name on the server.
        tool: String,
    },
}

impl ToolKind {
    /// Whether the tool describes itself (schema, ceiling, `validate`, concurrency): only a
    /// toolhost tool does.
    pub fn describes_itself(&self) -> bool {
        matches!(self, ToolKind::Toolhost)
    }

    /// Where the input schema and the description come from, for `list` and `inspect`.
    pub fn schema_from(&self) -> &'static str {
        match self {
            ToolKind::Toolhost => "the tool's `schema` export",
            ToolKind::Function { .. } => "the function's WIT types and documentation",
            ToolKind::Command => "toolhost's command-program schema (args, stdin)",
            ToolKind::Mcp { .. } => "the MCP server's tools/list",
        }
    }

    /// A short name of the kind (`toolhost`, `function`, `command`).
    pub fn as_str(&self) -> &'static str {
        match self {
            ToolKind::Toolhost => "toolhost",
            ToolKind::Function { .. } => "function",
            ToolKind::Command => "command",
            ToolKind::Mcp { .. } => "mcp",
        }
    }
}

impl std::fmt::Display for ToolKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ToolKind::Function { export } => write!(f, "function {export}"),
            ToolKind::Mcp { server, .. } => write!(f, "MCP server {server}"),
            other => f.write_str(other.as_str()),
        }
    }
}
