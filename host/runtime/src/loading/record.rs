//! What loading learned about one component, kept by digest in the engine and in the compile
//! cache. Its own module so that the engine (which keeps records) and the loader (which writes
//! them) do not depend on each other.

use crate::invoke::bindings::{ToolSchema, WitCapability};
use crate::kinds::functions::FunctionRecord;
use serde::{Deserialize, Serialize};
use toolhost_policy::Capability;

/// What loading learned about one component from its `schema` export. Kept by digest in the
/// engine and in the compile cache (authenticated like compiled code, under the toolhost
/// version), so the export runs once per component and toolhost build: a start with cached
/// tools runs no guest code, and a tool that loops or traps at load costs its deadline once.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub(crate) enum LoadRecord {
    /// The schema, as the tool returned it; it passed the checks.
    Schema(RawSchema),
    /// A function component: its functions, described from its types and documentation.
    Functions { functions: Vec<FunctionRecord> },
    /// A command program (`wasi:cli/run`).
    Command,
    /// Why it cannot be loaded.
    Failed {
        message: String,
        /// The deadline it ran under.
        timeout_ms: u64,
        /// Whether it ran out of time (then a longer deadline tries again).
        timed_out: bool,
    },
}

/// The `schema` export's answer, in a form that can be kept.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct RawSchema {
    pub(crate) name: String,
    pub(crate) description: String,
    pub(crate) input_schema: String,
    pub(crate) permission_subject: Option<String>,
    pub(crate) read_only: bool,
    pub(crate) capabilities: Vec<Capability>,
}

impl From<ToolSchema> for RawSchema {
    fn from(s: ToolSchema) -> Self {
        RawSchema {
            name: s.name,
            description: s.description,
            input_schema: s.input_schema,
            permission_subject: s.permission_subject,
            read_only: s.read_only,
            capabilities: s
                .capabilities
                .into_iter()
                .map(|c| match c {
                    WitCapability::FsRead(p) => Capability::FsRead(p),
                    WitCapability::FsWrite(p) => Capability::FsWrite(p),
                    WitCapability::Net(h) => Capability::Net(h),
                    WitCapability::Env(n) => Capability::Env(n),
                })
                .collect(),
        }
    }
}
