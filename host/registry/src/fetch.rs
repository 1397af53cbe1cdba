//! # Fetching a source
//!
//! One entry point for every kind of [`ToolRef`]: an OCI artifact ([`crate::oci`]), an
//! `https://` URL (and `URL.sig` beside it), or a local file (and `FILE.sig` beside it). The
//! result carries the bytes, their digest and the signature found with them, not yet verified
//! ([`crate::sign::judge`] does that).
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
    /// The policy file published with an OCI artifact, not yet parsed (a file's policy file
    /// is read beside it by whoever installs it).
    pub policy: Option<Vec<u8>>,
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
            Ok(Fetched {
                resolved: path.display().to_string(),
                component_digest: digest_of(&bytes),
                bytes,
                signature,
                policy: None,
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
