//! # toolhost-policy
//!
//! What a tool may touch, as plain data: capabilities, operator grants, limits and the
//! `toolhost.toml` document. No wasmtime here, so the rules can be read, tested and reused
//! without a runtime.
//!
//! The central rule: a tool's **effective grant** is its declared ceiling intersected with the
//! operator's grant ([`effective_grant`]). Nothing else reaches the sandbox. A component's own
//! permission file (`NAME.policy.yaml` beside `NAME.wasm`, Wassette's format) reads into the
//! same [`Grant`] as a `toolhost.toml` grant table ([`parse_policy_file`]), and can say no more.
//!
//! Permission rules ([`Rules`]) decide whether a call runs at all; inside the directories a
//! grant opens, a [`PathPolicy`] decides each file operation: paths toolhost depends on,
//! paths a deny rule covers, and files other programs run (written only with a person's yes).
//! Path patterns ([`PathPattern`]) are compiled when they are read, so one that does not
//! compile is a config error, never a rule that silently matches nothing.
//!
//! ## Example
//!
//! ```
//! use std::path::Path;
//! use toolhost_policy::{effective_grant, Capability, Grant};
//!
//! let ceiling = [Capability::FsRead("/".into())];
//! let grant = Grant::workspace_read_write();
//! let eff = effective_grant(&ceiling, &grant, Path::new("/work/ws"));
//! assert_eq!(eff.dirs.len(), 1);
//! assert!(!eff.dirs[0].writable); // the ceiling only asks to read
//! ```
#![deny(missing_docs)]

mod capability;
pub mod claude;
mod config;
mod fs;
mod grant;
mod hook;
mod hook_command;
pub mod launch;
mod limits;
mod net;
mod path;
mod path_pattern;
mod permission;
mod policy_file;
mod shared_policy;
mod signatures;
mod source;
mod warnings;

pub use capability::Capability;
pub use config::{
    AuditConfig, Config, ConfigError, HOOK_EVENT_KEYS, HookConfig, HooksConfig, LimitsConfig, McpServerConfig,
    PermissionsConfig, TlsConfig, ToolConfig,
};
pub use fs::{DEFAULT_ASK_BEFORE_WRITING, FsAccess, FsRefusal, PathPolicy};
pub use grant::{DirGrant, EffectiveGrant, Grant, effective_grant, grant_excess};
pub use hook::{HookMatcher, MatcherError};
pub use hook_command::{
    AskPattern, Beside, HookError, HookProtection, HookRuns, Loader, Unanalysable, analyse_hook_command,
    hook_protected_paths, hook_protection,
};
pub use limits::{LimitKey, Limits};
pub use net::{
    AddressRefusal, HostPattern, IpRange, METADATA_ADDRESSES, NetPattern, NetPatternError, PortPattern, WEB_PORTS,
    check_address, normalize_host,
};
pub use path::{normalize, resolve};
pub use path_pattern::{PathPattern, PathPatternError};
pub use permission::{
    DecidedBy, Decision, FileFamily, Mode, ModeError, Request, Rule, RuleError, RulePattern, RulePatternError, Rules,
    SubjectKind, UrlSubject, Verdict,
};
pub use policy_file::{
    MAX_POLICY_FILE_BYTES, PolicyFileError, PolicyFileProblem, parse_policy_file, policy_file_path, read_policy_file,
};
pub use shared_policy::{HostPaths, SharedPolicyError, hook_paths, real_or_as_is, shared_policy};
pub use signatures::{PublicKey, PublicKeyError, SignaturesConfig, SignerConfig};
pub use source::{OciRef, ToolRef, ToolRefError};
pub use warnings::{grant_warnings, hook_script_warning};
