//! # toolhost-policy
//!
//! What a tool may touch, as plain data: capabilities, operator grants, limits and the
//! `toolhost.toml` document. No wasmtime here, so the rules can be read, tested and reused
//! without a runtime.
//!
//! The central rule: a tool's **effective grant** is its declared ceiling intersected with the
//! operator's grant ([`effective_grant`]). Nothing else reaches the sandbox.
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
mod config;
mod grant;
mod hook;
mod limits;
mod net;
mod path;
mod permission;

pub use capability::Capability;
pub use config::{
    Config, ConfigError, HookConfig, HooksConfig, LimitsConfig, PermissionsConfig, TlsConfig, ToolConfig,
};
pub use grant::{DirGrant, EffectiveGrant, Grant, effective_grant, grant_excess};
pub use hook::HookMatcher;
pub use limits::Limits;
pub use net::{HostPattern, NetPattern, NetPatternError, PortPattern, WEB_PORTS, normalize_host};
pub use path::{normalize, resolve};
pub use permission::{Decision, Mode, Request, Rule, RuleError, Rules, SubjectKind};
