//! Errors of the library's own operations (loading tools, building the engine). A tool's
//! failure is never one of these: it is a `ToolResult` with `is_error`.

/// An error loading tools or setting up the runtime.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A tool could not be loaded; `origin` names the file (or the embedded tool).
    #[error("{origin}: {message}")]
    Load {
        /// Where the tool came from.
        origin: String,
        /// What is wrong with it.
        message: String,
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
    /// A setting is out of range.
    #[error("config: {0}")]
    Config(String),
    /// The wasmtime engine could not be configured (wasmtime's error, with its chain).
    #[error("the wasmtime engine could not be configured")]
    Engine(#[source] Box<dyn std::error::Error + Send + Sync>),
    /// The workspace is unusable.
    #[error("workspace {path}: {message}")]
    Workspace {
        /// The path given.
        path: std::path::PathBuf,
        /// What is wrong.
        message: String,
    },
}

/// The library's result type.
pub type Result<T, E = Error> = std::result::Result<T, E>;
