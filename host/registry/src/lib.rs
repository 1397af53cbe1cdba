//! # Installing tools
//!
//! What `toolhost add`, `publish` and `update` need beyond the runtime: fetching components
//! from OCI registries (the CNCF Wasm OCI artifact layout, so `wkg` and `oras` artifacts work)
//! and from files, a content-addressed store in the compile cache directory, the
//! `toolhost.lock` file, ed25519 publisher signatures, and capability diffs between versions.
//!
//! Nothing here runs a component: the CLI loads what was fetched with the runtime (no
//! capabilities, `schema` only) to learn its name and ceiling, and later loads it from the
//! store by the digest the lock names, checked before any byte runs.
//!
//! ## Example
//!
//! ```
//! use toolhost_registry::{Lock, sign::SecretKey};
//!
//! let key = SecretKey::generate().unwrap();
//! let signature = key.sign("sha256:0000000000000000000000000000000000000000000000000000000000000000", None);
//! assert_eq!(signature.verify(&signature.digest).unwrap(), key.public());
//! assert!(Lock::default().tools.is_empty());
//! ```

#![deny(missing_docs)]

pub mod access;
pub mod diff;
mod error;
pub mod fetch;
pub mod installed;
pub mod lock;
pub mod oci;
pub mod sign;
pub mod store;
mod wire;

pub use access::Access;
pub use diff::{CapabilityDiff, SetDiff};
pub use error::{Error, Result};
pub use fetch::{Fetched, fetch};
pub use installed::{Installed, InstalledError};
pub use lock::{Lock, LockedTool};
pub use store::Store;
pub use wire::WireError;

/// `sha256:HEX` of some bytes: the digest form of OCI descriptors and of the lock file.
pub fn digest_of(bytes: &[u8]) -> String {
    use sha2::Digest as _;
    format!("sha256:{}", hex::encode(sha2::Sha256::digest(bytes)))
}

/// Whether `digest` is `sha256:` and 64 hex digits (what may name a file in the store).
pub fn is_digest(digest: &str) -> bool {
    digest.strip_prefix("sha256:").is_some_and(|h| h.len() == 64 && h.bytes().all(|b| b.is_ascii_hexdigit()))
}

/// The hex part of a `sha256:HEX` digest (the whole string if it has no prefix).
pub fn digest_hex(digest: &str) -> &str {
    digest.strip_prefix("sha256:").unwrap_or(digest)
}

/// An error with its causes (`error sending request: …: invalid peer certificate: UnknownIssuer`):
/// reqwest's own message alone does not say why a connection failed.
pub(crate) fn chain(e: &(dyn std::error::Error + 'static)) -> String {
    toolhost::error_text(e)
}
