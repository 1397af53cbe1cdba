//! # `toolhost.lock`
//!
//! Beside the config file, written by `toolhost add` and `toolhost update`, read at every
//! start. One entry per installed tool (`[tools.NAME] source`), keyed by the config's tool
//! name:
//!
//! ```toml
//! version = 1
//!
//! [tools.Echo]
//! source = "oci://registry.example.com/acme/echo:1.2"     # as in toolhost.toml
//! version = "^1.2"              # the config's version requirement, with a tagless source
//! resolved = "oci://registry.example.com/acme/echo:1.2@sha256:…"   # the tag chosen, the manifest fetched
//! component = "sha256:…"        # the component bytes: what loads, checked before they run
//! declared_name = "Echo"        # the name the component declares
//! wit = "toolhost:tool@0.1.0"   # the WIT package it exports
//! ceiling = ["net(api.example.com)"]
//! grant = ["fs-read(.)", "net(api.example.com)"]   # the effective grant when locked
//! signer = "ed25519:…"          # absent when unsigned
//! signature = "…"               # base64; re-verified at every start, offline
//! signed_policy = "sha256:…"    # the policy file it signs (or "none"); absent for a v1 signature
//! ```
//!
//! Directories in `grant` inside the workspace are written relative to it (`.`, `./docs`), so
//! the same lock means the same thing on another machine.
//!
//! ## Example
//!
//! ```
//! use toolhost_registry::{Lock, LockedTool};
//!
//! let dir = tempfile::tempdir().unwrap();
//! let path = dir.path().join("toolhost.lock");
//! let mut lock = Lock::read(&path).unwrap();
//! let component = toolhost_registry::digest_of(b"\0asm bytes");
//! lock.tools.insert("Echo".into(), LockedTool { source: "echo.wasm".into(), component, ..LockedTool::default() });
//! lock.write(&path).unwrap();
//! assert_eq!(Lock::read(&path).unwrap().tools["Echo"].source, "echo.wasm");
//! ```

use crate::{Error, Result};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use toolhost_policy::Capability;

/// The lock format this toolhost writes and reads.
pub const LOCK_VERSION: u32 = 1;

const HEADER: &str =
    "# toolhost.lock: what `toolhost add` and `toolhost update` installed. Commit it; do not edit it.\n\n";

/// The whole lock file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Lock {
    /// The format version ([`LOCK_VERSION`]).
    pub version: u32,
    /// Entries by tool name.
    #[serde(default)]
    pub tools: BTreeMap<String, LockedTool>,
}

impl Default for Lock {
    fn default() -> Self {
        Lock { version: LOCK_VERSION, tools: BTreeMap::new() }
    }
}

/// One installed tool.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LockedTool {
    /// The source as the config gives it.
    pub source: String,
    /// The config's version requirement (`^1.2`), when the tag is chosen by version.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// What it resolved to (`oci://…@sha256:MANIFEST`, the file, the URL).
    pub resolved: String,
    /// `sha256:HEX` of the component bytes.
    pub component: String,
    /// The tool name the component declares (the config's name may differ).
    pub declared_name: String,
    /// The WIT package the component exports (`toolhost:tool@0.1.0`), when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wit: Option<String>,
    /// The component's capability ceiling, as it declared it when locked: every load compares
    /// what it declares then with this (a component's `schema` is its own code).
    #[serde(default)]
    pub ceiling: Vec<String>,
    /// Whether it declared itself read-only when locked (`None` in locks written before this
    /// was recorded: not compared).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read_only: Option<bool>,
    /// The effective grant when it was locked.
    #[serde(default)]
    pub grant: Vec<String>,
    /// The signer's public key, when signed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signer: Option<String>,
    /// The signature (base64), when signed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signature: Option<String>,
    /// The policy file the signature signs with the component (`none`, or its digest), part
    /// of what is verified at every start; absent for a first-format signature, which signs
    /// the component alone.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signed_policy: Option<crate::sign::SignedPolicy>,
}

impl Lock {
    /// The lock file that goes with a config file: `toolhost.lock` in its directory.
    pub fn path_for(config: &Path) -> PathBuf {
        config.parent().unwrap_or(Path::new(".")).join("toolhost.lock")
    }

    /// Read a lock file; a missing file is an empty lock.
    ///
    /// # Errors
    ///
    /// [`Error::Io`] for an unreadable file, [`Error::Lock`] for one that does not parse or has
    /// another version.
    pub fn read(path: &Path) -> Result<Lock> {
        let text = match read_unfollowed(path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Lock::default()),
            Err(e) => return Err(Error::io(path, "cannot read", e)),
        };
        let lock: Lock = toml::from_str(&text)
            .map_err(|e| Error::Lock { path: path.to_path_buf(), message: e.to_string().trim().to_string() })?;
        if lock.version != LOCK_VERSION {
            return Err(Error::Lock {
                path: path.to_path_buf(),
                message: format!("lock format version {} (this toolhost reads {LOCK_VERSION})", lock.version),
            });
        }
        // The digest names a file in the store: nothing but `sha256:` and 64 hex digits.
        if let Some((name, entry)) = lock.tools.iter().find(|(_, t)| !crate::is_digest(&t.component)) {
            return Err(Error::Lock {
                path: path.to_path_buf(),
                message: format!(
                    "tools.{name}.component: {:?} is not a sha256 digest (sha256:<64 hex>)",
                    entry.component
                ),
            });
        }
        Ok(lock)
    }

    /// Write the lock file whole: a new file beside it, renamed over it.
    ///
    /// # Errors
    ///
    /// [`Error::Io`] when it cannot be written.
    pub fn write(&self, path: &Path) -> Result<()> {
        let body =
            toml::to_string(self).map_err(|e| Error::Lock { path: path.to_path_buf(), message: e.to_string() })?;
        let dir = match path.parent() {
            Some(d) if !d.as_os_str().is_empty() => d,
            _ => Path::new("."),
        };
        let mut tmp = tempfile::NamedTempFile::new_in(dir).map_err(|e| Error::io(dir, "cannot create a file", e))?;
        std::io::Write::write_all(&mut tmp, format!("{HEADER}{body}").as_bytes())
            .map_err(|e| Error::io(path, "cannot write", e))?;
        tmp.persist(path).map_err(|e| Error::io(path, "cannot write", e.error))?;
        Ok(())
    }
}

/// Capabilities as the lock writes them (`fs-read(.)`), directories inside `workspace`
/// relative to it.
pub fn capability_strings(caps: &[Capability], workspace: &Path) -> Vec<String> {
    let relative = |p: &str| match Path::new(p).strip_prefix(workspace) {
        Ok(rest) if rest.as_os_str().is_empty() => ".".to_string(),
        Ok(rest) => format!("./{}", rest.display()),
        Err(_) => p.to_string(),
    };
    caps.iter()
        .map(|c| match c {
            Capability::FsRead(p) => Capability::FsRead(relative(p)).to_string(),
            Capability::FsWrite(p) => Capability::FsWrite(relative(p)).to_string(),
            other => other.to_string(),
        })
        .collect()
}

/// Parse a capability as [`Capability`]'s `Display` writes it (`net(example.com)`).
pub fn parse_capability(s: &str) -> Option<Capability> {
    let (kind, rest) = s.split_once('(')?;
    let value = rest.strip_suffix(')')?.to_string();
    Some(match kind {
        "fs-read" => Capability::FsRead(value),
        "fs-write" => Capability::FsWrite(value),
        "net" => Capability::Net(value),
        "env" => Capability::Env(value),
        _ => return None,
    })
}

/// The file's text, refusing a symbolic link in its last component: the lock decides which
/// stored component runs under which name, so it is read only as the file it is.
fn read_unfollowed(path: &Path) -> std::io::Result<String> {
    use std::io::Read as _;
    use std::os::unix::fs::OpenOptionsExt as _;
    let mut file =
        std::fs::OpenOptions::new().read(true).custom_flags(rustix::fs::OFlags::NOFOLLOW.bits() as i32).open(path)?;
    let mut text = String::new();
    file.read_to_string(&mut text)?;
    Ok(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn capabilities_round_trip_relative_to_the_workspace() {
        let ws = Path::new("/w");
        let caps = [
            Capability::FsRead("/w".into()),
            Capability::FsWrite("/w/out".into()),
            Capability::FsRead("/etc".into()),
            Capability::Net("api.example.com:443".into()),
            Capability::Env("HOME".into()),
        ];
        let shown = capability_strings(&caps, ws);
        assert_eq!(shown, ["fs-read(.)", "fs-write(./out)", "fs-read(/etc)", "net(api.example.com:443)", "env(HOME)"]);
        let back: Vec<Capability> = shown.iter().map(|s| parse_capability(s).unwrap()).collect();
        assert_eq!(back[3], caps[3]);
        assert_eq!(back[1], Capability::FsWrite("./out".into()));
        assert_eq!(parse_capability("bogus(x)"), None);
        assert_eq!(parse_capability("net(x"), None);
    }

    #[test]
    fn a_lock_that_is_a_link_is_not_read() {
        let dir = tempfile::tempdir().unwrap();
        let real = dir.path().join("elsewhere.lock");
        std::fs::write(&real, "version = 1\n").unwrap();
        let path = dir.path().join("toolhost.lock");
        std::os::unix::fs::symlink(&real, &path).unwrap();
        let e = Lock::read(&path).unwrap_err();
        assert!(e.to_string().contains("cannot read"), "{e}");
    }

    #[test]
    fn a_lock_of_another_version_or_shape_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("toolhost.lock");
        std::fs::write(&path, "version = 2\n").unwrap();
        assert!(Lock::read(&path).unwrap_err().to_string().contains("version 2"));
        std::fs::write(&path, "version = 1\n[tools.A]\nsource = \"x\"\nbogus = 1\n").unwrap();
        assert!(Lock::read(&path).unwrap_err().to_string().contains("bogus"));
    }

    #[test]
    fn a_component_digest_must_be_a_sha256_digest() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("toolhost.lock");
        let entry = |component: &str| {
            format!(
                "version = 1\n[tools.A]\nsource = \"x\"\nresolved = \"x\"\ncomponent = \"{component}\"\ndeclared_name = \"A\"\n"
            )
        };
        let good = format!("sha256:{}", "ab".repeat(32));
        std::fs::write(&path, entry(&good)).unwrap();
        assert_eq!(Lock::read(&path).unwrap().tools["A"].component, good);
        for bad in ["sha256:../../../etc/passwd", "sha256:abc", "md5:00", &format!("sha256:{}/x", "a".repeat(62))] {
            std::fs::write(&path, entry(bad)).unwrap();
            let err = Lock::read(&path).unwrap_err().to_string();
            assert!(err.contains("tools.A.component") && err.contains("not a sha256 digest"), "{bad}: {err}");
        }
    }
}
