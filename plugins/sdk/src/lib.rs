//! # toolhost-sdk
//!
//! Write a [toolhost](https://github.com/toolhost/toolhost) tool in Rust. A tool is a typed input
//! struct (its JSON Schema is derived with `schemars`, never written by hand) plus an
//! implementation of [`Tool`]; [`export_tool!`] turns it into a component of the
//! `toolhost:tool/plugin` world.
//!
//! ## Example
//!
//! ```ignore
//! use toolhost_sdk::{export_tool, JsonSchema, Deserialize, Output, Tool, ToolError};
//!
//! #[derive(Deserialize, JsonSchema)]
//! struct Input {
//!     /// Who to greet.
//!     name: String,
//! }
//!
//! struct Hello;
//!
//! impl Tool for Hello {
//!     type Input = Input;
//!     const NAME: &'static str = "Hello";
//!     const DESCRIPTION: &'static str = "Greets someone.";
//!
//!     fn call(input: Input) -> Result<Output, ToolError> {
//!         Ok(Output::text(format!("Hello, {}!", input.name)))
//!     }
//! }
//!
//! export_tool!(Hello);
//! ```
#![deny(missing_docs)]

use serde::de::DeserializeOwned;

pub use schemars::{self, JsonSchema};
pub use serde::{self, Deserialize, Serialize};
pub use serde_json;

/// Generated bindings for the `plugin` world. Private in spirit: use the re-exports below.
#[doc(hidden)]
pub mod wit {
    wit_bindgen::generate!({
        path: "wit/tool@0.1.0",
        world: "plugin",
        pub_export_macro: true,
        default_bindings_module: "toolhost_sdk::wit",
        export_macro_name: "export",
    });
}

use wit::toolhost::tool::types as wt;

/// One capability in a tool's ceiling (see the WIT `capability` variant).
pub use wt::Capability;
/// An image block (media type and raw bytes).
pub use wt::Image;

/// Why a call failed. Every variant reaches the model as an error result carrying its message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ToolError {
    /// The input is well-formed but makes no sense (a missing file, an empty pattern...).
    InvalidInput(String),
    /// The tool was refused something it needed (a file outside its grant...).
    Denied(String),
    /// Anything else.
    Failed(String),
}

impl ToolError {
    /// Classify an I/O error: permission problems (which is how the sandbox refuses a path)
    /// become [`ToolError::Denied`], a missing file [`ToolError::InvalidInput`], the rest
    /// [`ToolError::Failed`]. `what` says what was being done, e.g. `reading /a/b`.
    pub fn from_io(what: impl std::fmt::Display, err: &std::io::Error) -> Self {
        use std::io::ErrorKind::*;
        let msg = format!("{what}: {err}");
        match err.kind() {
            PermissionDenied | ReadOnlyFilesystem => ToolError::Denied(msg),
            NotFound => ToolError::InvalidInput(msg),
            _ => ToolError::Failed(msg),
        }
    }
}

impl std::fmt::Display for ToolError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ToolError::InvalidInput(m) | ToolError::Denied(m) | ToolError::Failed(m) => f.write_str(m),
        }
    }
}

impl From<ToolError> for wt::ToolError {
    fn from(e: ToolError) -> Self {
        match e {
            ToolError::InvalidInput(m) => wt::ToolError::InvalidInput(m),
            ToolError::Denied(m) => wt::ToolError::Denied(m),
            ToolError::Failed(m) => wt::ToolError::Failed(m),
        }
    }
}

/// A successful result: content blocks for the model and context updates for later calls.
#[derive(Debug, Default, Clone)]
pub struct Output {
    content: Vec<wt::ContentBlock>,
    context_updates: Vec<wt::ContextUpdate>,
}

impl Output {
    /// An output with one text block.
    pub fn text(text: impl Into<String>) -> Self {
        Self::default().with_text(text)
    }

    /// Append a text block.
    pub fn with_text(mut self, text: impl Into<String>) -> Self {
        self.content.push(wt::ContentBlock::Text(text.into()));
        self
    }

    /// Append an image block.
    pub fn with_image(mut self, media_type: impl Into<String>, data: Vec<u8>) -> Self {
        self.content.push(wt::ContentBlock::Image(Image { media_type: media_type.into(), data }));
        self
    }

    /// Set `key` in the session's context map to `value` (serialised as JSON) once this call
    /// is done. Later calls read it with [`context_get`].
    pub fn with_context<T: Serialize>(mut self, key: impl Into<String>, value: &T) -> Self {
        let value = serde_json::to_string(value).expect("context values serialise to JSON");
        self.context_updates.push(wt::ContextUpdate { key: key.into(), value: Some(value) });
        self
    }

    /// Delete `key` from the session's context map once this call is done.
    pub fn without_context(mut self, key: impl Into<String>) -> Self {
        self.context_updates.push(wt::ContextUpdate { key: key.into(), value: None });
        self
    }
}

/// A tool. Implement this for a unit struct and export it with [`export_tool!`].
pub trait Tool {
    /// The input, deserialised from the model's JSON. Its `JsonSchema` is the tool's schema;
    /// doc comments on fields become the schema's descriptions.
    type Input: DeserializeOwned + JsonSchema;

    /// The name models call the tool by.
    const NAME: &'static str;
    /// What the tool does, written for the model.
    const DESCRIPTION: &'static str;
    /// JSON pointer to the input value that permission rules match (e.g. `/file_path`).
    const PERMISSION_SUBJECT: Option<&'static str> = None;
    /// True if the tool never mutates anything. Read-only tools are concurrency-safe by default.
    const READ_ONLY: bool = false;

    /// The most this tool may ever be granted. Default: nothing.
    fn capabilities() -> Vec<Capability> {
        Vec::new()
    }

    /// Whether this call may run beside other concurrency-safe calls. Runs with no
    /// capabilities. Default: [`Tool::READ_ONLY`].
    fn is_concurrency_safe(_input: &Self::Input) -> bool {
        Self::READ_ONLY
    }

    /// Check the input's meaning beyond its schema. Runs with no capabilities: decide from the
    /// input alone. Default: accept.
    fn validate(_input: &Self::Input) -> Result<(), String> {
        Ok(())
    }

    /// Do the work, with the capabilities the host granted.
    fn call(input: Self::Input) -> Result<Output, ToolError>;
}

/// Report progress to the people watching. It never reaches the model.
pub fn progress(message: &str) {
    wit::toolhost::tool::host::progress(message);
}

/// Log messages and questions for the people watching a call (the `toolhost:session`
/// interface). A tool that uses none of it does not import it.
///
/// ```ignore
/// use toolhost_sdk::session::{self, Answer, LogLevel};
///
/// session::log(LogLevel::Info, "looking up the ticket");
/// let form = serde_json::json!({"type": "object", "properties": {
///     "priority": {"type": "string", "enum": ["low", "high"], "default": "low"}
/// }, "required": ["priority"]});
/// match session::elicit("Which priority should the ticket get?", &form) {
///     Ok(Answer::Accept(values)) => { /* values["priority"] */ }
///     Ok(Answer::Decline | Answer::Cancel) => { /* go on without it */ }
///     Err(why) => { /* the host refused to ask: why */ }
/// }
/// ```
pub mod session {
    /// Generated bindings for `toolhost:session`. Private in spirit: use the functions below.
    #[doc(hidden)]
    pub mod wit {
        wit_bindgen::generate!({
            path: "wit/session@0.1.0",
            world: "imports",
        });
    }

    use wit::toolhost::session::session as ws;

    /// How severe a log message is.
    pub use ws::LogLevel;

    /// Log a message for the people watching (an MCP client that asked for this level, `-v`,
    /// the call's trace). It never reaches the model and never fails.
    pub fn log(level: LogLevel, message: &str) {
        ws::log(level, message);
    }

    /// What the person did with a question.
    #[derive(Debug, Clone, PartialEq)]
    pub enum Answer {
        /// They filled in the form: the values, checked by the host against the form.
        Accept(serde_json::Map<String, serde_json::Value>),
        /// They refused to answer.
        Decline,
        /// They dismissed it, or nobody could be asked (e.g. on CI).
        Cancel,
    }

    /// Ask the person a question with a form: an object schema of string, number, integer,
    /// boolean and enum fields (MCP's form elicitation). Only during `call`, a few per call;
    /// the wait counts against the call's timeout. `Err`: the host refused to ask, and says
    /// why. Never ask for secrets.
    pub fn elicit(message: &str, form: &serde_json::Value) -> Result<Answer, String> {
        let answer = ws::elicit(message, &form.to_string())?;
        Ok(match answer.action {
            ws::ElicitAction::Accept => {
                let content = answer.content.as_deref().unwrap_or("{}");
                match serde_json::from_str(content) {
                    Ok(serde_json::Value::Object(values)) => Answer::Accept(values),
                    _ => return Err(format!("the host's answer is not a JSON object: {content}")),
                }
            }
            ws::ElicitAction::Decline => Answer::Decline,
            ws::ElicitAction::Cancel => Answer::Cancel,
        })
    }
}

/// Read a raw value (JSON text) from the session's context map.
pub fn context_get(key: &str) -> Option<String> {
    wit::toolhost::tool::host::context_get(key)
}

/// Read a value from the session's context map and deserialise it. None if the key is unset or
/// the value does not have the expected shape.
pub fn context_get_as<T: DeserializeOwned>(key: &str) -> Option<T> {
    context_get(key).and_then(|v| serde_json::from_str(&v).ok())
}

/// The context key the host answers with the workspace's absolute path (JSON text).
pub const WORKSPACE_KEY: &str = "toolhost.workspace";

/// The workspace's absolute path, if the host gave one.
pub fn workspace() -> Option<std::path::PathBuf> {
    context_get_as::<String>(WORKSPACE_KEY).map(std::path::PathBuf::from)
}

/// Make relative paths resolve against the workspace. The host preopens granted directories
/// at their absolute paths only (never as `.`), and wasi-libc starts in `/`; changing into the
/// workspace (when it is granted) makes `std::fs::read("notes.txt")` mean
/// `WORKSPACE/notes.txt`, while an absolute path outside every grant stays unreachable.
fn enter_workspace() {
    if let Some(ws) = workspace() {
        // Not granted (or not a directory): relative paths simply stay unresolvable.
        let _ = std::env::set_current_dir(ws);
    }
}

fn parse<T: Tool>(input: &str) -> Result<T::Input, String> {
    serde_json::from_str(input).map_err(|e| format!("{}: input does not match its schema: {e}", T::NAME))
}

#[doc(hidden)]
pub mod __private {
    //! Glue called by [`export_tool!`]; not a public API.
    use super::*;
    pub use wit::exports::toolhost::tool::tool::Guest;

    pub fn schema<T: Tool>() -> wt::ToolSchema {
        let schema = schemars::SchemaGenerator::default().into_root_schema_for::<T::Input>();
        wt::ToolSchema {
            name: T::NAME.to_string(),
            description: T::DESCRIPTION.to_string(),
            input_schema: serde_json::to_string(&schema).expect("schemas serialise"),
            permission_subject: T::PERMISSION_SUBJECT.map(str::to_string),
            read_only: T::READ_ONLY,
            capabilities: T::capabilities(),
        }
    }

    pub fn is_concurrency_safe<T: Tool>(input: &str) -> bool {
        parse::<T>(input).map(|i| T::is_concurrency_safe(&i)).unwrap_or(false)
    }

    pub fn validate<T: Tool>(input: &str) -> Result<(), String> {
        T::validate(&parse::<T>(input)?)
    }

    pub fn call<T: Tool>(input: &str) -> Result<wt::ToolOutput, wt::ToolError> {
        let input = parse::<T>(input).map_err(wt::ToolError::InvalidInput)?;
        enter_workspace();
        let out = T::call(input).map_err(wt::ToolError::from)?;
        Ok(wt::ToolOutput { content: out.content, context_updates: out.context_updates })
    }
}

/// Export a [`Tool`] implementation as the component's `toolhost:tool/tool` interface.
/// Use it once per crate.
#[macro_export]
macro_rules! export_tool {
    ($tool:ty) => {
        struct __ToolhostExport;

        impl $crate::__private::Guest for __ToolhostExport {
            fn schema() -> $crate::wit::toolhost::tool::types::ToolSchema {
                $crate::__private::schema::<$tool>()
            }
            fn is_concurrency_safe(input: ::std::string::String) -> bool {
                $crate::__private::is_concurrency_safe::<$tool>(&input)
            }
            fn validate(input: ::std::string::String) -> ::std::result::Result<(), ::std::string::String> {
                $crate::__private::validate::<$tool>(&input)
            }
            fn call(
                input: ::std::string::String,
            ) -> ::std::result::Result<
                $crate::wit::toolhost::tool::types::ToolOutput,
                $crate::wit::toolhost::tool::types::ToolError,
            > {
                $crate::__private::call::<$tool>(&input)
            }
        }

        $crate::wit::export!(__ToolhostExport with_types_in $crate::wit);
    };
}
