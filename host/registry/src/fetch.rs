//! # Fetching a source
//!
//! One entry point for every kind of [`ToolRef`]: an OCI artifact ([`crate::oci`]) and its
//! policy layer, an `https://` URL (and `URL.sig` beside it), or a local file (and `FILE.sig`
//! and its policy file `NAME.policy.yaml` beside it). The result carries the bytes, their
//! digest, the policy file and the signature found with them, not yet verified
//! ([`crate::sign::judge`] and [`crate::sign::Signature::covers_policy`] do that).
//!
//! ## Example
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")] async fn main() {
//! use std::path::Path;
//! use toolhost_registry::fetch;
//!
//! let dir = tempfile::tempdir().unwrap();
//! std::fs::write(dir.path().join("t.wasm"), b"\0asm").unwrap();
//! let access = toolhost_registry::Access::new();
//! let fetched = fetch(&"t.wasm".parse().unwrap(), dir.path(), &access).await.unwrap();
//! assert_eq!(fetched.bytes, b"\0asm");
//! assert!(fetched.signature.is_none());
//! # }
//! ```

use crate::oci::{self, MAX_COMPONENT_BYTES};
use crate::sign::Signature;
use crate::{Access, Error, Result, digest_of};
use std::path::Path;
use toolhost_policy::ToolRef;

/// What a source gave.
#[derive(Debug, Clone)]
pub struct Fetched {
    /// What the source resolved to: `oci://…@sha256:MANIFEST`, the URL, or the file's path.
    pub resolved: String,
    /// The component bytes.
    pub bytes: Vec<u8>,
    /// Their digest, `sha256:HEX`.
    pub component_digest: String,
    /// The signature found with them, if any (not yet verified).
    pub signature: Option<Signature>,
    /// The policy file that came with the component, not yet parsed: an OCI artifact's policy
    /// layer, or a file's `NAME.policy.yaml` beside it.
    pub policy: Option<Vec<u8>>,
}

impl Fetched {
    /// The digest of [`Fetched::policy`], as a signature names it.
    pub fn policy_digest(&self) -> Option<String> {
        self.policy.as_deref().map(digest_of)
    }
}

/// Fetch `source`; a relative file path is relative to `base` (the config file's directory).
///
/// # Errors
///
/// Whatever stops the fetch: [`Error::Io`], [`Error::Registry`], [`Error::Layout`],
/// [`Error::DigestMismatch`], [`Error::BadSignature`] for a signature file that is not one.
pub async fn fetch(source: &ToolRef, base: &Path, access: &Access) -> Result<Fetched> {
    match source {
        ToolRef::Oci(r) => {
            let pulled = oci::pull(r, access).await?;
            Ok(Fetched {
                resolved: r.with_digest(&pulled.manifest_digest).to_string(),
                component_digest: pulled.component_digest,
                bytes: pulled.bytes,
                signature: pulled.signature,
                policy: pulled.policy,
            })
        }
        ToolRef::File(p) => {
            let path = base.join(p);
            let bytes = std::fs::read(&path).map_err(|e| Error::io(&path, "cannot read", e))?;
            let sig_path = path.with_extension(format!(
                "{}sig",
                path.extension().map(|e| format!("{}.", e.to_string_lossy())).unwrap_or_default()
            ));
            let signature = match std::fs::read(&sig_path) {
                Ok(b) => Some(
                    Signature::from_json(&b)
                        .map_err(|e| Error::BadSignature(format!("{}: {e}", sig_path.display())))?,
                ),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
                Err(e) => return Err(Error::io(&sig_path, "cannot read", e)),
            };
            let policy = match toolhost_policy::policy_file_path(&path) {
                Some(policy_path) => read_policy_file(&policy_path)?,
                None => None,
            };
            Ok(Fetched {
                resolved: path.display().to_string(),
                component_digest: digest_of(&bytes),
                bytes,
                signature,
                policy,
            })
        }
        ToolRef::Https(url) => {
            let client = access.https_client()?;
            let bytes = get(&client, url, MAX_COMPONENT_BYTES as usize).await?.ok_or_else(|| Error::Registry {
                reference: url.clone(),
                message: "not found (404)".into(),
                source: None,
            })?;
            let signature = match get(&client, &format!("{url}.sig"), 1 << 20).await? {
                Some(b) => Some(Signature::from_json(&b)?),
                None => None,
            };
            Ok(Fetched { resolved: url.clone(), component_digest: digest_of(&bytes), bytes, signature, policy: None })
        }
    }
}

/// The bytes of the policy file at `path`, `None` when there is none: read once, so that the
/// bytes whose digest a signature is checked against are the bytes installed. Only a regular
/// file (checked before opening it, so a FIFO cannot stall this, and again on the handle), at
/// most [`toolhost_policy::MAX_POLICY_FILE_BYTES`]; parsing it is the installer's.
fn read_policy_file(path: &Path) -> Result<Option<Vec<u8>>> {
    use std::io::Read as _;
    let limit = toolhost_policy::MAX_POLICY_FILE_BYTES;
    let refuse = || {
        let what = format!("a policy file must be a regular file of at most {limit} bytes");
        Error::io(path, what, std::io::Error::from(std::io::ErrorKind::InvalidInput))
    };
    let check = |meta: &std::fs::Metadata| if !meta.is_file() || meta.len() > limit { Err(refuse()) } else { Ok(()) };
    match std::fs::metadata(path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(Error::io(path, "cannot read", e)),
        Ok(meta) => check(&meta)?,
    }
    let file = std::fs::File::open(path).map_err(|e| Error::io(path, "cannot read", e))?;
    check(&file.metadata().map_err(|e| Error::io(path, "cannot read", e))?)?;
    let mut bytes = Vec::new();
    file.take(limit + 1).read_to_end(&mut bytes).map_err(|e| Error::io(path, "cannot read", e))?;
    if bytes.len() as u64 > limit {
        return Err(refuse());
    }
    Ok(Some(bytes))
}

/// GET `url` over HTTPS, at most `limit` bytes; `None` for a 404.
async fn get(client: &reqwest::Client, url: &str, limit: usize) -> Result<Option<Vec<u8>>> {
    let fail = |message: String| Error::Registry { reference: url.to_string(), message, source: None };
    let mut response = client.get(url).send().await.map_err(|e| fail(crate::chain(&e)))?;
    if response.status() == reqwest::StatusCode::NOT_FOUND {
        return Ok(None);
    }
    if !response.status().is_success() {
        return Err(fail(format!("HTTP {}", response.status())));
    }
    let mut bytes = Vec::new();
    while let Some(chunk) = response.chunk().await.map_err(|e| fail(crate::chain(&e)))? {
        if bytes.len() + chunk.len() > limit {
            return Err(fail(format!("more than {limit} bytes")));
        }
        bytes.extend_from_slice(&chunk);
    }
    Ok(Some(bytes))
}
