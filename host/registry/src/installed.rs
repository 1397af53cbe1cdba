//! Installed tools (`[tools.NAME] source`) as sources a runtime loads: everything the lock
//! says is checked before a byte runs — the entry is there and is for this source and version
//! requirement, its signature verifies and `[signatures]` accepts it, the config's grant is no wider
//! than the one locked — then the bytes come from the store by digest, pinned so that the
//! loader checks their sha256 before compiling, with a check that the component still declares
//! the ceiling and read-only flag it was locked with. The CLI and an embedder load installed
//! tools through this one step.

use crate::diff::SetDiff;
use crate::lock::{Lock, LockedTool, capability_strings, parse_capability};
use crate::sign::{self, Signature, Signer};
use crate::store::Store;
use std::path::{Path, PathBuf};
use toolhost::ToolSource;
use toolhost_policy::{Capability, Config, Grant, ToolRef, effective_grant};

/// Why an installed tool is not loaded.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum InstalledError {
    /// The lock has no entry for the tool.
    #[error("tools.{name}: {source_ref} is not in toolhost.lock; run `toolhost update {name}` to fetch and lock it")]
    NotLocked {
        /// The tool.
        name: String,
        /// Its source in the config.
        source_ref: String,
    },
    /// The config names another source, or another version requirement, than the lock.
    #[error(
        "tools.{name}: the {what} is {config}, but toolhost.lock has {locked}; run `toolhost update {name}` to lock \
         it"
    )]
    Changed {
        /// The tool.
        name: String,
        /// `source` or `version requirement`.
        what: &'static str,
        /// The config's.
        config: String,
        /// The lock's.
        locked: String,
    },
    /// The locked signature does not verify, or `[signatures]` does not accept its signer.
    #[error("tools.{name}: refusing to load {resolved}")]
    Signature {
        /// The tool.
        name: String,
        /// What the lock resolved the source to.
        resolved: String,
        /// Why.
        #[source]
        cause: Box<crate::Error>,
    },
    /// The config grants more than the lock records: refused with `--locked`, a warning
    /// otherwise.
    #[error(
        "tools.{name}: the grant in the config is wider than the one in toolhost.lock ({}); run `toolhost update \
         {name}` to lock it{}",
        wider.join(", "),
        if *locked { " (refused: --locked, or CI=true)" } else { "" }
    )]
    WiderGrant {
        /// The tool.
        name: String,
        /// What the config grants beyond the lock.
        wider: Vec<String>,
        /// Whether `--locked` is in force (then the tool is not loaded).
        locked: bool,
    },
    /// The bytes are not in the store.
    #[error("tools.{name}")]
    Store {
        /// The tool.
        name: String,
        /// Why.
        #[source]
        cause: Box<crate::Error>,
    },
}

/// The installed tools of one config, under its lock and store.
#[derive(Debug)]
pub struct Installed<'a> {
    /// The config in use.
    pub config: &'a Config,
    /// Its lock (`toolhost.lock` beside it).
    pub lock: &'a Lock,
    /// The component store.
    pub store: &'a Store,
    /// The workspace (grants are compared in it).
    pub workspace: &'a Path,
    /// `--locked`: a grant wider than the lock's is refused, not only warned about.
    pub locked: bool,
}

impl Installed<'_> {
    /// Every `[tools.NAME] source` of the config as a source to load, or why it is not loaded
    /// (as the runtime's load error of that source), with the warnings to show (a grant wider
    /// than the lock's without `--locked`).
    pub fn sources(&self) -> (Vec<Result<ToolSource, toolhost::Error>>, Vec<String>) {
        let mut warnings = Vec::new();
        let sources = self
            .config
            .tools
            .iter()
            .filter_map(|(name, tool)| Some((name, tool.source.as_ref()?.get_ref())))
            .map(|(name, source)| {
                self.source(name, source, &mut warnings).map_err(|e| toolhost::Error::Load {
                    origin: source.to_string(),
                    cause: toolhost::LoadError::embedder(e),
                })
            })
            .collect();
        (sources, warnings)
    }

    /// The installed tool `name` (whose config source is `source`) as a source to load.
    ///
    /// # Errors
    ///
    /// See [`InstalledError`]: no lock entry, a changed source or version requirement, a
    /// signature refused, a wider grant under `--locked`, bytes missing from the store.
    pub fn source(
        &self,
        name: &str,
        source: &ToolRef,
        warnings: &mut Vec<String>,
    ) -> Result<ToolSource, InstalledError> {
        let Some(entry) = self.lock.tools.get(name) else {
            return Err(InstalledError::NotLocked { name: name.into(), source_ref: source.to_string() });
        };
        let changed =
            |what, config: String, locked: String| InstalledError::Changed { name: name.into(), what, config, locked };
        if entry.source != source.to_string() {
            return Err(changed("source", source.to_string(), entry.source.clone()));
        }
        let version = self.config.tools.get(name).and_then(|t| t.version.as_ref()).map(|v| v.get_ref().to_string());
        if entry.version != version {
            let shown = |v: &Option<String>| v.clone().unwrap_or_else(|| "none".into());
            return Err(changed("version requirement", shown(&version), shown(&entry.version)));
        }
        signer(self.config, source, entry).map_err(|cause| InstalledError::Signature {
            name: name.into(),
            resolved: entry.resolved.clone(),
            cause: Box::new(cause),
        })?;
        let now = effective(self.config, name, &capabilities(&entry.ceiling), false, self.workspace);
        let wider = SetDiff::new(&capabilities(&entry.grant), &capabilities(&now), self.workspace).widened;
        if !wider.is_empty() {
            let wider = InstalledError::WiderGrant { name: name.into(), wider, locked: self.locked };
            if self.locked {
                return Err(wider);
            }
            warnings.push(wider.to_string());
        }
        let bytes = self
            .store
            .source(&entry.component, &entry.resolved)
            .map_err(|cause| InstalledError::Store { name: name.into(), cause: Box::new(cause) })?;
        Ok(bytes.renamed(name).with_declaration_check(declared_as_locked(name, entry, self.workspace)))
    }
}

/// The effective grant `name` gets with this ceiling under `config` (as the runtime computes
/// it: the config's grant or the default, ceiling-capped, read-only for a read-only tool), as
/// the lock writes it.
pub fn effective(
    config: &Config,
    name: &str,
    ceiling: &[Capability],
    read_only: bool,
    workspace: &Path,
) -> Vec<String> {
    let grant = config.tools.get(name).and_then(|t| t.grant()).cloned().unwrap_or_else(Grant::workspace_read_write);
    let mut g = effective_grant(ceiling, &grant, workspace);
    if read_only {
        g = g.read_only();
    }
    capability_strings(&g.capabilities(), workspace)
}

/// Parse the lock's capability strings back.
pub fn capabilities(list: &[String]) -> Vec<Capability> {
    list.iter().filter_map(|s| parse_capability(s)).collect()
}

/// The signature a lock entry holds, if any.
pub fn locked_signature(entry: &LockedTool) -> Option<Signature> {
    match (&entry.signer, &entry.signature) {
        (Some(key), Some(signature)) => Some(Signature {
            digest: entry.component.clone(),
            policy: entry.signed_policy.clone(),
            key: key.clone(),
            signature: signature.clone(),
        }),
        _ => None,
    }
}

/// Who signed a locked tool, under `config`'s `[signatures]` (verifying the signature again).
///
/// # Errors
///
/// [`crate::Error::BadSignature`] or [`crate::Error::Untrusted`].
pub fn signer(config: &Config, source: &ToolRef, entry: &LockedTool) -> crate::Result<Signer> {
    sign::judge(locked_signature(entry).as_ref(), &entry.component, source, &config.signatures)
}

/// The check that an installed tool declares at load exactly what it declared when it was
/// locked: the same ceiling and the same read-only flag. `schema` is the component's own code,
/// which may answer differently on another machine or day; its powers are tied to the lock,
/// on every machine, whatever a cache holds. A difference refuses the tool (`toolhost update`
/// shows it and locks it again once accepted).
pub fn declared_as_locked(
    name: &str,
    entry: &LockedTool,
    workspace: &Path,
) -> impl Fn(&toolhost::ToolInfo) -> std::result::Result<(), String> + Send + Sync + 'static {
    let (name, entry, workspace): (String, LockedTool, PathBuf) =
        (name.to_string(), entry.clone(), workspace.to_path_buf());
    move |info| {
        let sorted = |mut v: Vec<String>| {
            v.sort();
            v.dedup();
            v
        };
        let now = sorted(capability_strings(&info.capabilities, &workspace));
        let locked = sorted(entry.ceiling.clone());
        let mut drift = Vec::new();
        if now != locked {
            drift.push(format!("ceiling [{}], locked [{}]", now.join(", "), locked.join(", ")));
        }
        if let Some(read_only) = entry.read_only
            && read_only != info.read_only
        {
            drift.push(format!("read-only {}, locked {read_only}", info.read_only));
        }
        if drift.is_empty() {
            return Ok(());
        }
        Err(format!(
            "tools.{name}: {} ({}) now declares {}; not loaded. Its powers are those locked in toolhost.lock: \
             run `toolhost update {name}` to see the difference and lock it",
            entry.resolved,
            entry.component,
            drift.join("; ")
        ))
    }
}
