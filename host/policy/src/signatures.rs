//! # `[signatures]`: whose tools are accepted
//!
//! (Read under its first name, `[trust]`, too, with `require_signatures` for `require`: "trust"
//! now means one thing, a workspace's trust in its hooks and servers, `toolhost trust`.)
//!
//! A signer is a name, an ed25519 public key (`ed25519:` and the 32 key bytes in base64, as
//! `toolhost keygen` prints it) and the sources it is trusted for. With
//! `require = true`, a tool with a `source` loads only when `toolhost.lock` holds a
//! signature over its bytes by a signer trusted for that source; without it, a signature is
//! still checked when there is one, and its signer shown.
//!
//! ## Example
//!
//! ```
//! use std::path::Path;
//! use toolhost_policy::{Config, ToolRef};
//!
//! let key = "ed25519:11qYAYKxCrfVS/7TyWQHOg7hcvPapiMlrwIaaPcHURo=";
//! let text = format!(
//!     "[signatures]\nrequire = true\n[signatures.signers.acme]\nkey = \"{key}\"\nsources = [\"oci://r.io/acme/\"]\n"
//! );
//! let config = Config::parse(&text, Path::new("toolhost.toml")).unwrap();
//! let source: ToolRef = "oci://r.io/acme/echo:1".parse().unwrap();
//! let key = key.parse().unwrap();
//! assert_eq!(config.signatures.signer_for(&key, &source), Some("acme"));
//! let elsewhere: ToolRef = "oci://r.io/other/echo:1".parse().unwrap();
//! assert_eq!(config.signatures.signer_for(&key, &elsewhere), None);
//! ```

use crate::ToolRef;
use base64::Engine as _;
use serde::Deserialize;
use std::collections::BTreeMap;
use toml::Spanned;

/// `[signatures]`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SignaturesConfig {
    /// Refuse a tool with a `source` that is unsigned or signed by no signer trusted for it.
    #[serde(default, alias = "require_signatures")]
    pub require: bool,
    /// Accepted signers, by a name shown in `list` and `inspect`.
    #[serde(default)]
    pub signers: BTreeMap<String, SignerConfig>,
}

/// `[signatures.signers.NAME]`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SignerConfig {
    /// The public key.
    pub key: Spanned<PublicKey>,
    /// Sources this signer is trusted for, as prefixes ending at a path segment, tag or digest
    /// (see [`ToolRef::trusted_under`]); absent or empty: every source.
    #[serde(default)]
    pub sources: Vec<Spanned<String>>,
}

/// An ed25519 public key, written `ed25519:BASE64`.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Deserialize)]
#[serde(try_from = "String")]
pub struct PublicKey(pub [u8; 32]);

/// Why a string is not a [`PublicKey`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid public key {0:?}: expected `ed25519:` and 32 bytes in base64 (as `toolhost keygen` prints)")]
pub struct PublicKeyError(String);

impl std::fmt::Display for PublicKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "ed25519:{}", base64::engine::general_purpose::STANDARD.encode(self.0))
    }
}

impl std::fmt::Debug for PublicKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "PublicKey({self})")
    }
}

impl std::str::FromStr for PublicKey {
    type Err = PublicKeyError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let bytes = s
            .strip_prefix("ed25519:")
            .and_then(|b| base64::engine::general_purpose::STANDARD.decode(b.trim()).ok())
            .ok_or_else(|| PublicKeyError(s.to_string()))?;
        Ok(PublicKey(bytes.try_into().map_err(|_| PublicKeyError(s.to_string()))?))
    }
}

impl TryFrom<String> for PublicKey {
    type Error = PublicKeyError;
    fn try_from(s: String) -> Result<Self, Self::Error> {
        s.parse()
    }
}

impl SignaturesConfig {
    /// The name of the signer with this key trusted for `source`, if there is one.
    pub fn signer_for(&self, key: &PublicKey, source: &ToolRef) -> Option<&str> {
        self.signers.iter().find_map(|(name, s)| {
            let covers = s.sources.is_empty() || s.sources.iter().any(|p| source.trusted_under(p.get_ref()));
            (s.key.get_ref() == key && covers).then_some(name.as_str())
        })
    }

    /// The name of a signer with this key, for whatever source (to say "known, but not for
    /// this source").
    pub fn signer_named(&self, key: &PublicKey) -> Option<&str> {
        self.signers.iter().find_map(|(name, s)| (s.key.get_ref() == key).then_some(name.as_str()))
    }
}
