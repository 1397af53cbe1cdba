//! # Where an installed tool comes from
//!
//! A `[tools.NAME] source` (and the argument of `toolhost add`) names a component to fetch:
//! an OCI artifact (`oci://registry/repository:tag` or `…@sha256:…`, the CNCF Wasm OCI
//! artifact layout), an `https://` URL, or a local file. It is parsed once, here, into a
//! [`ToolRef`]; a string that does not parse is a config error at its position, never a
//! default. What was fetched for it is in `toolhost.lock`; loading never fetches.
//!
//! ## Example
//!
//! ```
//! use toolhost_policy::ToolRef;
//!
//! let r: ToolRef = "oci://ghcr.io/acme/tools/echo:1.2".parse().unwrap();
//! assert_eq!(r.to_string(), "oci://ghcr.io/acme/tools/echo:1.2");
//! assert!(r.trusted_under("oci://ghcr.io/acme/"));
//! assert!(!r.trusted_under("oci://ghcr.io/acme/tools/ec"));
//! assert!("http://example.com/x.wasm".parse::<ToolRef>().is_err());
//! ```

use serde::Deserialize;
use std::path::PathBuf;

/// A parsed tool source.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Deserialize)]
#[serde(try_from = "String")]
pub enum ToolRef {
    /// An OCI artifact.
    Oci(OciRef),
    /// A component at an `https://` URL.
    Https(String),
    /// A local `.wasm` file (relative paths are relative to the config file).
    File(PathBuf),
}

/// `oci://REGISTRY/REPOSITORY[:TAG][@sha256:HEX]`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct OciRef {
    /// `host[:port]`.
    pub registry: String,
    /// `a/b/c`, lowercase.
    pub repository: String,
    /// The tag; `latest` when neither a tag nor a digest is given.
    pub tag: Option<String>,
    /// `sha256:HEX` of the manifest, when pinned.
    pub digest: Option<String>,
}

/// Why a source string is not a [`ToolRef`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid tool source {source_text:?}: {reason}")]
pub struct ToolRefError {
    source_text: String,
    reason: String,
}

impl OciRef {
    /// `REGISTRY/REPOSITORY` (no tag, no digest): what a signer is trusted for.
    pub fn repository_ref(&self) -> String {
        format!("{}/{}", self.registry, self.repository)
    }

    /// This reference pinned to `digest` (tag kept, for messages).
    pub fn with_digest(&self, digest: &str) -> OciRef {
        OciRef { digest: Some(digest.to_string()), ..self.clone() }
    }

    /// Whether the registry is on this machine (`localhost`, `127.0.0.0/8`, `[::1]`): the only
    /// registries spoken to over plain HTTP without being named in the config.
    pub fn is_loopback(&self) -> bool {
        let host = match self.registry.rsplit_once(':') {
            Some((h, port)) if port.bytes().all(|b| b.is_ascii_digit()) => h,
            _ => self.registry.as_str(),
        };
        let host = host.trim_start_matches('[').trim_end_matches(']');
        host.eq_ignore_ascii_case("localhost") || host.parse::<std::net::IpAddr>().is_ok_and(|ip| ip.is_loopback())
    }
}

impl std::fmt::Display for OciRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "oci://{}/{}", self.registry, self.repository)?;
        if let Some(tag) = &self.tag {
            write!(f, ":{tag}")?;
        }
        if let Some(digest) = &self.digest {
            write!(f, "@{digest}")?;
        }
        Ok(())
    }
}

impl std::fmt::Display for ToolRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ToolRef::Oci(r) => r.fmt(f),
            ToolRef::Https(url) => f.write_str(url),
            ToolRef::File(p) => write!(f, "{}", p.display()),
        }
    }
}

impl ToolRef {
    /// Whether a `[signatures.signers.*] sources` entry covers this source: the entry is the whole
    /// source, or a prefix of it ending where a path segment, tag or digest ends (so
    /// `oci://r/acme` covers `oci://r/acme/echo:1` but not `oci://r/acme-evil/echo:1`).
    pub fn trusted_under(&self, prefix: &str) -> bool {
        let whole = self.to_string();
        match whole.strip_prefix(prefix) {
            Some(rest) => rest.is_empty() || prefix.ends_with('/') || rest.starts_with(['/', ':', '@']),
            None => false,
        }
    }
}

impl std::str::FromStr for ToolRef {
    type Err = ToolRefError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let err = |reason: &str| ToolRefError { source_text: s.to_string(), reason: reason.to_string() };
        if let Some(rest) = s.strip_prefix("oci://") {
            return parse_oci(rest).map(ToolRef::Oci).map_err(|r| err(&r));
        }
        if s.starts_with("https://") {
            return if s.len() > "https://".len() { Ok(ToolRef::Https(s.to_string())) } else { Err(err("no host")) };
        }
        if let Some((scheme, _)) = s.split_once("://") {
            return Err(err(&format!(
                "unsupported scheme {scheme:?}: use oci://REGISTRY/REPOSITORY:TAG, https://… or a file path"
            )));
        }
        if s.trim().is_empty() {
            return Err(err("empty"));
        }
        Ok(ToolRef::File(PathBuf::from(s.strip_prefix("file:").unwrap_or(s))))
    }
}

impl TryFrom<String> for ToolRef {
    type Error = ToolRefError;
    fn try_from(s: String) -> Result<Self, Self::Error> {
        s.parse()
    }
}

fn parse_oci(rest: &str) -> Result<OciRef, String> {
    let (name, digest) = match rest.split_once('@') {
        Some((n, d)) => (n, Some(d)),
        None => (rest, None),
    };
    if let Some(d) = digest {
        let hex = d.strip_prefix("sha256:").ok_or("the digest must be sha256:HEX")?;
        if hex.len() != 64 || !hex.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)) {
            return Err("the digest must be sha256: and 64 lowercase hex digits".into());
        }
    }
    let (registry, path) = name.split_once('/').ok_or("expected oci://REGISTRY/REPOSITORY[:TAG][@DIGEST]")?;
    if registry.is_empty() || !registry.bytes().all(|b| b.is_ascii_alphanumeric() || b".-:[]_".contains(&b)) {
        return Err(format!("invalid registry {registry:?}"));
    }
    // A tag follows the last `:` after the last `/`.
    let last_slash = path.rfind('/').map_or(0, |i| i + 1);
    let (repository, tag) = match path[last_slash..].rfind(':') {
        Some(i) => (&path[..last_slash + i], Some(&path[last_slash + i + 1..])),
        None => (path, None),
    };
    let component_ok = |c: &str| {
        !c.is_empty() && c.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b"._-".contains(&b))
    };
    if !repository.split('/').all(component_ok) {
        return Err(format!("invalid repository {repository:?} (lowercase letters, digits, `.`, `_`, `-`, `/`)"));
    }
    if let Some(t) = tag
        && (t.is_empty() || t.len() > 128 || !t.bytes().all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b)))
    {
        return Err(format!("invalid tag {t:?}"));
    }
    let tag = match (tag, digest) {
        (Some(t), _) => Some(t.to_string()),
        (None, None) => Some("latest".to_string()),
        (None, Some(_)) => None,
    };
    Ok(OciRef {
        registry: registry.to_string(),
        repository: repository.to_string(),
        tag,
        digest: digest.map(str::to_string),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn references() {
        let table: &[(&str, Result<&str, &str>)] = &[
            ("oci://127.0.0.1:5000/tools/echo:1.0", Ok("oci://127.0.0.1:5000/tools/echo:1.0")),
            ("oci://r.io/a/b", Ok("oci://r.io/a/b:latest")),
            (
                "oci://r.io/a@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
                Ok("oci://r.io/a@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"),
            ),
            ("oci://r.io/a@sha256:00", Err("64 lowercase hex")),
            ("oci://r.io/A:1", Err("invalid repository")),
            ("oci://r.io", Err("expected oci://")),
            ("oci://r.io/a:", Err("invalid tag")),
            ("https://example.com/t.wasm", Ok("https://example.com/t.wasm")),
            ("http://example.com/t.wasm", Err("unsupported scheme \"http\"")),
            ("tools/echo.wasm", Ok("tools/echo.wasm")),
            ("file:tools/echo.wasm", Ok("tools/echo.wasm")),
            ("", Err("empty")),
        ];
        for (input, want) in table {
            match (input.parse::<ToolRef>(), want) {
                (Ok(r), Ok(shown)) => assert_eq!(&r.to_string(), shown, "{input}"),
                (Err(e), Err(part)) => assert!(e.to_string().contains(part), "{input}: {e}"),
                (got, want) => panic!("{input}: got {got:?}, want {want:?}"),
            }
        }
    }

    #[test]
    fn loopback_registries() {
        for (registry, loopback) in [
            ("127.0.0.1:5000", true),
            ("localhost:80", true),
            ("[::1]:5000", true),
            ("ghcr.io", false),
            ("10.0.0.1", false),
        ] {
            let r = OciRef { registry: registry.into(), repository: "a".into(), tag: None, digest: None };
            assert_eq!(r.is_loopback(), loopback, "{registry}");
        }
    }

    #[test]
    fn trust_prefixes_end_at_a_boundary() {
        let r: ToolRef = "oci://r.io/acme/echo:1".parse().unwrap();
        for (prefix, covered) in [
            ("oci://r.io/acme/", true),
            ("oci://r.io/acme", true),
            ("oci://r.io/acme/echo", true),
            ("oci://r.io/acme/echo:1", true),
            ("oci://r.io/ac", false),
            ("oci://r.io/acme/ech", false),
            ("oci://other/", false),
        ] {
            assert_eq!(r.trusted_under(prefix), covered, "{prefix}");
        }
    }
}
