//! # Publisher signatures
//!
//! An ed25519 signature over the sha256 of the component's bytes (`sha256:HEX`), under the
//! context string [`CONTEXT`]. Why this scheme:
//!
//! - **What is signed is what runs.** The digest is the one `toolhost.lock` pins and the loader
//!   checks before any byte runs, so a start can re-verify the signature from the lock alone,
//!   offline, in microseconds. The same signature holds for a file, an `https://` download and
//!   an OCI artifact, and survives re-publishing the same bytes under another tag or manifest.
//! - **No infrastructure.** Sigstore/cosign keyless signing needs Fulcio, Rekor and network
//!   access at verification; key-based cosign needs its own envelope formats. An ed25519 key
//!   pair is 32 bytes each, verification is in-process (`ed25519-dalek`), and the public key
//!   fits on one line of `[trust]`.
//!
//! A [`Signature`] travels as JSON: beside a file as `FILE.sig`, and in a registry as an
//! artifact tagged `sha256-<manifest hex>.toolhost-sig` (the tag-schema fallback of the OCI
//! referrers convention, which every registry supports), whose manifest names the tool's
//! manifest as its `subject`.
//!
//! ## Example
//!
//! ```
//! use toolhost_registry::sign::SecretKey;
//!
//! let key = SecretKey::generate().unwrap();
//! let text = key.to_text();
//! let again = SecretKey::from_text(&text).unwrap();
//! let sig = again.sign("sha256:00");
//! assert_eq!(sig.verify("sha256:00").unwrap(), key.public());
//! assert!(sig.verify("sha256:01").is_err());
//! ```

use crate::{Error, Result};
use base64::Engine as _;
use ed25519_dalek::{Signer as _, SigningKey, Verifier as _, VerifyingKey};
use serde::{Deserialize, Serialize};
use std::path::Path;
use toolhost_policy::{PublicKey, ToolRef, TrustConfig};

/// Signed before the digest, so a toolhost signature can never be mistaken for (or replayed
/// as) a signature of anything else made with the same key.
pub const CONTEXT: &[u8] = b"toolhost-signature-v1\0";

/// The media type of a signature's JSON in a registry.
pub const SIGNATURE_MEDIA_TYPE: &str = "application/vnd.toolhost.signature.v1+json";

/// How a secret key file starts.
const SECRET_PREFIX: &str = "toolhost-ed25519-secret:";

/// A signature over a component's digest.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Signature {
    /// `sha256:HEX` of the component bytes.
    pub digest: String,
    /// The signer's public key, `ed25519:BASE64`.
    pub key: String,
    /// The 64-byte signature, base64.
    pub signature: String,
}

/// A secret signing key.
pub struct SecretKey(SigningKey);

impl std::fmt::Debug for SecretKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "SecretKey({})", self.public())
    }
}

fn b64() -> base64::engine::GeneralPurpose {
    base64::engine::general_purpose::STANDARD
}

fn message(digest: &str) -> Vec<u8> {
    [CONTEXT, digest.as_bytes()].concat()
}

impl SecretKey {
    /// A new random key.
    ///
    /// # Errors
    ///
    /// [`Error::Unsupported`] if the system has no randomness to give.
    pub fn generate() -> Result<SecretKey> {
        let mut seed = [0u8; 32];
        getrandom::fill(&mut seed).map_err(|e| Error::Unsupported(format!("no system randomness: {e}")))?;
        Ok(SecretKey(SigningKey::from_bytes(&seed)))
    }

    /// The key file's text: `toolhost-ed25519-secret:BASE64` and a newline.
    pub fn to_text(&self) -> String {
        format!("{SECRET_PREFIX}{}\n", b64().encode(self.0.to_bytes()))
    }

    /// Parse a key file's text.
    ///
    /// # Errors
    ///
    /// [`Error::BadSignature`] when it is not a toolhost secret key.
    pub fn from_text(text: &str) -> Result<SecretKey> {
        let seed = text
            .trim()
            .strip_prefix(SECRET_PREFIX)
            .and_then(|b| b64().decode(b).ok())
            .and_then(|b| <[u8; 32]>::try_from(b).ok())
            .ok_or_else(|| {
                Error::BadSignature(format!("not a toolhost secret key (expected `{SECRET_PREFIX}BASE64`)"))
            })?;
        Ok(SecretKey(SigningKey::from_bytes(&seed)))
    }

    /// Read a key file (made by `toolhost keygen`).
    ///
    /// # Errors
    ///
    /// [`Error::Io`] if it cannot be read, [`Error::BadSignature`] if it is not a key.
    pub fn read(path: &Path) -> Result<SecretKey> {
        let text = std::fs::read_to_string(path).map_err(|e| Error::io(path, "cannot read the signing key", e))?;
        SecretKey::from_text(&text).map_err(|e| Error::BadSignature(format!("{}: {e}", path.display())))
    }

    /// The public key.
    pub fn public(&self) -> PublicKey {
        PublicKey(self.0.verifying_key().to_bytes())
    }

    /// Sign a component digest (`sha256:HEX`).
    pub fn sign(&self, digest: &str) -> Signature {
        let sig = self.0.sign(&message(digest));
        Signature {
            digest: digest.to_string(),
            key: self.public().to_string(),
            signature: b64().encode(sig.to_bytes()),
        }
    }
}

impl Signature {
    /// Check that this signs `digest` and verifies under its own key; returns that key.
    ///
    /// # Errors
    ///
    /// [`Error::BadSignature`] saying what does not hold.
    pub fn verify(&self, digest: &str) -> Result<PublicKey> {
        if self.digest != digest {
            return Err(Error::BadSignature(format!(
                "the signature is for {}, not for these bytes ({digest})",
                self.digest
            )));
        }
        let key: PublicKey = self.key.parse().map_err(|e| Error::BadSignature(format!("the signature's key: {e}")))?;
        let verifying = VerifyingKey::from_bytes(&key.0)
            .map_err(|e| Error::BadSignature(format!("the signature's key {key} is not a valid ed25519 key: {e}")))?;
        let bytes = b64()
            .decode(&self.signature)
            .ok()
            .and_then(|b| <[u8; 64]>::try_from(b).ok())
            .ok_or_else(|| Error::BadSignature("the signature is not 64 bytes of base64".into()))?;
        verifying
            .verify(&message(digest), &ed25519_dalek::Signature::from_bytes(&bytes))
            .map_err(|_| Error::BadSignature(format!("the signature by {key} does not verify for {digest}")))?;
        Ok(key)
    }

    /// Parse the JSON form.
    ///
    /// # Errors
    ///
    /// [`Error::BadSignature`] if it is not a signature.
    pub fn from_json(bytes: &[u8]) -> Result<Signature> {
        serde_json::from_slice(bytes).map_err(|e| Error::BadSignature(format!("not a toolhost signature: {e}")))
    }

    /// The JSON form.
    pub fn to_json(&self) -> Vec<u8> {
        serde_json::to_vec_pretty(self).unwrap_or_default()
    }
}

/// Who signed a component, as far as `[trust]` knows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Signer {
    /// No signature.
    Unsigned,
    /// A valid signature by a signer `[trust]` names for this source.
    Trusted {
        /// The signer's name in `[trust.signers]`.
        name: String,
        /// Its key.
        key: PublicKey,
    },
    /// A valid signature by a key `[trust]` does not trust for this source.
    Unknown {
        /// The key.
        key: PublicKey,
        /// The name of that key in `[trust.signers]`, when it is trusted for other sources.
        known_as: Option<String>,
    },
}

impl std::fmt::Display for Signer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Signer::Unsigned => f.write_str("unsigned"),
            Signer::Trusted { name, key } => write!(f, "{name} ({key})"),
            Signer::Unknown { key, known_as: None } => write!(f, "unknown signer {key}"),
            Signer::Unknown { key, known_as: Some(n) } => write!(f, "{n} ({key}), not trusted for this source"),
        }
    }
}

/// Verify `signature` (if any) over `digest` and say who signed it; with
/// `require_signatures`, refuse an unsigned component and an unknown signer.
///
/// # Errors
///
/// [`Error::BadSignature`] for a signature that does not verify (whatever `[trust]` says: a
/// forged signature is never just "unsigned"); [`Error::Untrusted`] under
/// `require_signatures`, with the `[trust]` entry that would accept it.
pub fn judge(signature: Option<&Signature>, digest: &str, source: &ToolRef, trust: &TrustConfig) -> Result<Signer> {
    let signer = match signature {
        None => Signer::Unsigned,
        Some(s) => {
            let key = s.verify(digest)?;
            match trust.signer_for(&key, source) {
                Some(name) => Signer::Trusted { name: name.to_string(), key },
                None => Signer::Unknown { key, known_as: trust.signer_named(&key).map(str::to_string) },
            }
        }
    };
    if trust.require_signatures {
        match &signer {
            Signer::Trusted { .. } => {}
            Signer::Unsigned => {
                return Err(Error::Untrusted(format!(
                    "{source} is not signed, and [trust] require_signatures = true; ask its publisher for a \
                     signed release (`toolhost publish --sign KEY`)"
                )));
            }
            Signer::Unknown { key, .. } => {
                return Err(Error::Untrusted(format!(
                    "{source} is signed by {key}, which [trust] does not trust for this source, and \
                     require_signatures = true; if you trust that key, add [trust.signers.NAME] key = \"{key}\" \
                     sources = [\"{source}\"]"
                )));
            }
        }
    }
    Ok(signer)
}
