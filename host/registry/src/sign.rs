//! # Publisher signatures
//!
//! An ed25519 signature over the sha256 of the component's bytes (`sha256:HEX`) and of the
//! policy file published with it (or `none`), under the context string [`CONTEXT`]. Why this
//! scheme:
//!
//! - **What is signed is what runs.** The component digest is the one `toolhost.lock` pins and
//!   the loader checks before any byte runs, so a start can re-verify the signature from the
//!   lock alone, offline, in microseconds. The same signature holds for a file, an `https://`
//!   download and an OCI artifact, and survives re-publishing the same bytes under another tag
//!   or manifest.
//! - **What is granted is signed too.** A policy file travels beside the component (an OCI
//!   artifact's policy layer, `NAME.policy.yaml` beside a file) and `toolhost add` makes it the
//!   tool's grant, so its digest is part of the payload: a policy file added, changed or
//!   removed after signing is not covered ([`Signature::covers_policy`]), and the installer
//!   asks a person before applying it. The manifest digest is not signed: it changes with
//!   annotations and the `created` date, and a file has none.
//! - **No infrastructure.** Sigstore/cosign keyless signing needs Fulcio, Rekor and network
//!   access at verification; key-based cosign needs its own envelope formats. An ed25519 key
//!   pair is 32 bytes each, verification is in-process (`ed25519-dalek`), and the public key
//!   fits on one line of `[signatures]`.
//!
//! Signatures made before policy files were signed ([`CONTEXT_V1`], the component digest
//! alone, a [`Signature`] without `policy`) still verify: they cover a component published
//! without a policy file, and leave any policy file beside one uncovered.
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
//! let policy = "sha256:0000000000000000000000000000000000000000000000000000000000000001";
//! let sig = again.sign("sha256:00", Some(policy));
//! assert_eq!(sig.verify("sha256:00").unwrap(), key.public());
//! assert!(sig.verify("sha256:01").is_err());
//! assert!(sig.covers_policy(Some(policy)).is_ok());
//! assert!(sig.covers_policy(None).is_err(), "removed after signing");
//! ```

use crate::{Error, Result};
use base64::Engine as _;
use ed25519_dalek::{Signer as _, SigningKey, Verifier as _, VerifyingKey};
use serde::{Deserialize, Serialize};
use std::path::Path;
use toolhost_policy::{PublicKey, SignaturesConfig, ToolRef};

/// Signed before the digests, so a toolhost signature can never be mistaken for (or replayed
/// as) a signature of anything else made with the same key. The payload is
/// `CONTEXT ‖ "sha256:COMPONENT" ‖ "\0" ‖ ("sha256:POLICY" | "none")`.
pub const CONTEXT: &[u8] = b"toolhost-signature-v2\0";

/// The context of signatures made before policy files were signed: `CONTEXT_V1 ‖
/// "sha256:COMPONENT"`. Still verified (such signatures were published), never made.
pub const CONTEXT_V1: &[u8] = b"toolhost-signature-v1\0";

/// How a v2 payload names "published without a policy file".
const NO_POLICY: &str = "none";

/// The media type of a signature's JSON in a registry.
pub const SIGNATURE_MEDIA_TYPE: &str = "application/vnd.toolhost.signature.v1+json";

/// How a secret key file starts.
const SECRET_PREFIX: &str = "toolhost-ed25519-secret:";

/// A signature over a component's digest and its policy file's.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Signature {
    /// `sha256:HEX` of the component bytes.
    pub digest: String,
    /// The policy file signed with it; `None` for a signature of the first format
    /// ([`CONTEXT_V1`]), which covers the component alone.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub policy: Option<SignedPolicy>,
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

/// What a v2 signature says about the policy file published beside the component. Written
/// `none` or `sha256:HEX` (in the signature's JSON and in `toolhost.lock`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub enum SignedPolicy {
    /// Published without one: a policy file found beside it is not the signer's.
    Absent,
    /// The policy file with this digest (`sha256:HEX`).
    Digest(String),
}

impl SignedPolicy {
    /// `Absent` for `None`, else the digest.
    pub fn of(policy_digest: Option<&str>) -> SignedPolicy {
        policy_digest.map_or(SignedPolicy::Absent, |d| SignedPolicy::Digest(d.to_string()))
    }

    fn as_str(&self) -> &str {
        match self {
            SignedPolicy::Absent => NO_POLICY,
            SignedPolicy::Digest(d) => d,
        }
    }
}

impl std::fmt::Display for SignedPolicy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl TryFrom<String> for SignedPolicy {
    type Error = String;

    fn try_from(s: String) -> std::result::Result<Self, String> {
        if s == NO_POLICY {
            Ok(SignedPolicy::Absent)
        } else if crate::is_digest(&s) {
            Ok(SignedPolicy::Digest(s))
        } else {
            Err(format!("the signed policy {s:?} is neither `{NO_POLICY}` nor a sha256 digest"))
        }
    }
}

impl From<SignedPolicy> for String {
    fn from(p: SignedPolicy) -> String {
        p.as_str().to_string()
    }
}

/// Why the policy file that came with a signed component is not covered by its signature.
/// Not a forgery (the component's signature verifies): the policy file is someone's, not
/// necessarily the signer's, and is applied only when a person says so.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum UncoveredPolicy {
    /// A first-format signature, which covers the component only, beside a policy file.
    #[error(
        "its signature is of the first format (toolhost-signature-v1), which covers the component only, not the \
         policy file published with it ({published})"
    )]
    OldFormat {
        /// The digest of the policy file found.
        published: String,
    },
    /// Signed without a policy file; one is published with it now.
    #[error("it was signed without a policy file, but one is published with it ({published})")]
    Added {
        /// The digest of the policy file found.
        published: String,
    },
    /// Signed with another policy file.
    #[error("its signature covers the policy file {signed}, but the one published with it is {published}")]
    Changed {
        /// The digest signed.
        signed: String,
        /// The digest of the policy file found.
        published: String,
    },
    /// Signed with a policy file that is not published with it any more.
    #[error("its signature covers the policy file {signed}, which is not published with it")]
    Removed {
        /// The digest signed.
        signed: String,
    },
}

/// The bytes signed for a component digest and, in the current format, a policy file.
fn message(digest: &str, policy: Option<&SignedPolicy>) -> Vec<u8> {
    match policy {
        None => [CONTEXT_V1, digest.as_bytes()].concat(),
        Some(p) => [CONTEXT, digest.as_bytes(), b"\0", p.as_str().as_bytes()].concat(),
    }
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

    /// Sign a component digest (`sha256:HEX`) and the digest of the policy file published
    /// with it (`None`: published without one), in the current format ([`CONTEXT`]).
    pub fn sign(&self, digest: &str, policy_digest: Option<&str>) -> Signature {
        let policy = SignedPolicy::of(policy_digest);
        let sig = self.0.sign(&message(digest, Some(&policy)));
        Signature {
            digest: digest.to_string(),
            policy: Some(policy),
            key: self.public().to_string(),
            signature: b64().encode(sig.to_bytes()),
        }
    }
}

impl Signature {
    /// Check that this signs `digest` and verifies under its own key (over the payload it
    /// states: the policy it names, or none for the first format); returns that key. Whether
    /// it covers the policy file found beside the component is [`Signature::covers_policy`].
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
            .verify(&message(digest, self.policy.as_ref()), &ed25519_dalek::Signature::from_bytes(&bytes))
            .map_err(|_| Error::BadSignature(format!("the signature by {key} does not verify for {digest}")))?;
        Ok(key)
    }

    /// Whether this signature covers the policy file published with the component
    /// (`policy_digest`, `None` when there is none): the one it signed, or none when it signed
    /// none. A first-format signature covers only the absence of one.
    ///
    /// # Errors
    ///
    /// [`UncoveredPolicy`], saying how the policy file differs from what was signed.
    pub fn covers_policy(&self, policy_digest: Option<&str>) -> std::result::Result<(), UncoveredPolicy> {
        let published = || policy_digest.unwrap_or_default().to_string();
        match (&self.policy, policy_digest) {
            (None | Some(SignedPolicy::Absent), None) => Ok(()),
            (Some(SignedPolicy::Digest(signed)), Some(found)) if signed == found => Ok(()),
            (None, Some(_)) => Err(UncoveredPolicy::OldFormat { published: published() }),
            (Some(SignedPolicy::Absent), Some(_)) => Err(UncoveredPolicy::Added { published: published() }),
            (Some(SignedPolicy::Digest(signed)), Some(_)) => {
                Err(UncoveredPolicy::Changed { signed: signed.clone(), published: published() })
            }
            (Some(SignedPolicy::Digest(signed)), None) => Err(UncoveredPolicy::Removed { signed: signed.clone() }),
        }
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

/// Who signed a component, as far as `[signatures]` knows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Signer {
    /// No signature.
    Unsigned,
    /// A valid signature by a signer `[signatures]` names for this source.
    Trusted {
        /// The signer's name in `[signatures.signers]`.
        name: String,
        /// Its key.
        key: PublicKey,
    },
    /// A valid signature by a key `[signatures]` does not trust for this source.
    Unknown {
        /// The key.
        key: PublicKey,
        /// The name of that key in `[signatures.signers]`, when it is trusted for other sources.
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
/// `require`, refuse an unsigned component and an unknown signer.
///
/// # Errors
///
/// [`Error::BadSignature`] for a signature that does not verify (whatever `[signatures]` says: a
/// forged signature is never just "unsigned"); [`Error::Untrusted`] under
/// `require`, with the `[signatures]` entry that would accept it.
pub fn judge(
    signature: Option<&Signature>,
    digest: &str,
    source: &ToolRef,
    signatures: &SignaturesConfig,
) -> Result<Signer> {
    let signer = match signature {
        None => Signer::Unsigned,
        Some(s) => {
            let key = s.verify(digest)?;
            match signatures.signer_for(&key, source) {
                Some(name) => Signer::Trusted { name: name.to_string(), key },
                None => Signer::Unknown { key, known_as: signatures.signer_named(&key).map(str::to_string) },
            }
        }
    };
    if signatures.require {
        match &signer {
            Signer::Trusted { .. } => {}
            Signer::Unsigned => {
                return Err(Error::Untrusted(format!(
                    "{source} is not signed, and [signatures] require = true; ask its publisher for a \
                     signed release (`toolhost publish --sign KEY`)"
                )));
            }
            Signer::Unknown { key, .. } => {
                return Err(Error::Untrusted(format!(
                    "{source} is signed by {key}, which [signatures] does not trust for this source, and \
                     require = true; if you trust that key, add [signatures.signers.NAME] key = \"{key}\" \
                     sources = [\"{source}\"]"
                )));
            }
        }
    }
    Ok(signer)
}

#[cfg(test)]
mod tests {
    use super::*;

    const COMPONENT: &str = "sha256:1111111111111111111111111111111111111111111111111111111111111111";
    const POLICY: &str = "sha256:2222222222222222222222222222222222222222222222222222222222222222";
    const OTHER: &str = "sha256:3333333333333333333333333333333333333333333333333333333333333333";

    /// A signature of the first format, as toolhost made them before policy files were signed.
    fn first_format(key: &SecretKey) -> Signature {
        let sig = key.0.sign(&[b"toolhost-signature-v1\0".as_slice(), COMPONENT.as_bytes()].concat());
        Signature {
            digest: COMPONENT.into(),
            policy: None,
            key: key.public().to_string(),
            signature: b64().encode(sig.to_bytes()),
        }
    }

    #[test]
    fn the_policy_file_is_covered_only_as_signed() {
        let key = SecretKey::generate().unwrap();
        let with = key.sign(COMPONENT, Some(POLICY));
        assert_eq!(with.verify(COMPONENT).unwrap(), key.public());
        assert_eq!(with.covers_policy(Some(POLICY)), Ok(()));
        assert!(matches!(with.covers_policy(Some(OTHER)), Err(UncoveredPolicy::Changed { .. })));
        assert!(matches!(with.covers_policy(None), Err(UncoveredPolicy::Removed { .. })));

        let without = key.sign(COMPONENT, None);
        assert_eq!(without.covers_policy(None), Ok(()));
        assert!(matches!(without.covers_policy(Some(POLICY)), Err(UncoveredPolicy::Added { .. })));

        let old = first_format(&key);
        assert_eq!(old.verify(COMPONENT).unwrap(), key.public(), "first-format signatures still verify");
        assert_eq!(old.covers_policy(None), Ok(()));
        assert!(matches!(old.covers_policy(Some(POLICY)), Err(UncoveredPolicy::OldFormat { .. })));
    }

    #[test]
    fn the_stated_policy_is_part_of_what_is_signed() {
        let key = SecretKey::generate().unwrap();
        let signed = key.sign(COMPONENT, Some(POLICY));
        // Rewriting the policy the signature states (to match a swapped policy file), or
        // dropping it (to pass for the first format), breaks the signature.
        for policy in [Some(SignedPolicy::Digest(OTHER.into())), Some(SignedPolicy::Absent), None] {
            let forged = Signature { policy, ..signed.clone() };
            assert!(forged.verify(COMPONENT).unwrap_err().to_string().contains("does not verify"));
        }
        let old = first_format(&key);
        let upgraded = Signature { policy: Some(SignedPolicy::Absent), ..old };
        assert!(upgraded.verify(COMPONENT).is_err(), "a first-format signature is not a v2 one");
    }

    #[test]
    fn json_forms() {
        let key = SecretKey::generate().unwrap();
        let with = key.sign(COMPONENT, Some(POLICY));
        let json: serde_json::Value = serde_json::from_slice(&with.to_json()).unwrap();
        assert_eq!(json["policy"], POLICY);
        assert_eq!(Signature::from_json(&with.to_json()).unwrap(), with);
        let json: serde_json::Value = serde_json::from_slice(&key.sign(COMPONENT, None).to_json()).unwrap();
        assert_eq!(json["policy"], "none");
        let old = first_format(&key);
        let json: serde_json::Value = serde_json::from_slice(&old.to_json()).unwrap();
        assert!(json.get("policy").is_none(), "{json}");
        assert_eq!(Signature::from_json(&old.to_json()).unwrap(), old);
        let bad = br#"{"digest":"sha256:00","policy":"/etc/passwd","key":"k","signature":"s"}"#;
        assert!(Signature::from_json(bad).unwrap_err().to_string().contains("neither `none` nor a sha256 digest"));
    }
}
