//! # OCI registries
//!
//! Components as OCI artifacts in the CNCF Wasm OCI artifact layout (what `wkg` and `oras`
//! push): an image manifest whose config has media type [`WASM_CONFIG_MEDIA_TYPE`] and whose
//! one layer, media type [`WASM_LAYER_MEDIA_TYPE`], is the component; a second layer of media
//! type [`POLICY_LAYER_MEDIA_TYPE`], when there is one, is its policy file (as Wassette
//! publishes them). Fetching checks every
//! digest itself: the manifest's against the one asked for (when pinned) and the one the
//! registry reports, the layer's against the manifest, before the bytes leave this module.
//!
//! Registries are spoken to over HTTPS (rustls, Mozilla's roots), except a registry on this
//! machine (`localhost`, `127.0.0.0/8`, `[::1]`), spoken to over plain HTTP: nothing crosses
//! the network, and a local test or mirror registry usually has no certificate. Roots and
//! credentials come from an [`Access`] (`[tls] ca_files`, the docker config's logins).
//!
//! ## Example
//!
//! ```no_run
//! # async fn f() -> toolhost_registry::Result<()> {
//! use toolhost_registry::oci;
//!
//! let r = match "oci://127.0.0.1:5000/tools/echo:1".parse().unwrap() {
//!     toolhost_policy::ToolRef::Oci(r) => r,
//!     _ => unreachable!(),
//! };
//! let pulled = oci::pull(&r, &toolhost_registry::Access::new()).await?;
//! println!("{} bytes, manifest {}", pulled.bytes.len(), pulled.manifest_digest);
//! # Ok(()) }
//! ```

use crate::sign::{SIGNATURE_MEDIA_TYPE, Signature};
use crate::wire::{Operation, Wire, WireError, wire_error};
use crate::{Access, Error, Result, digest_hex, digest_of};
use oci_client::Reference;
use oci_client::manifest::{OCI_IMAGE_MEDIA_TYPE, OciDescriptor, OciImageManifest};
use std::collections::BTreeMap;
use toolhost_policy::OciRef;

/// The config media type of a Wasm component artifact (CNCF Wasm OCI artifact layout).
pub const WASM_CONFIG_MEDIA_TYPE: &str = "application/vnd.wasm.config.v0+json";
/// The layer media type of a Wasm component.
pub const WASM_LAYER_MEDIA_TYPE: &str = "application/wasm";
/// Other media types a component layer has (Wassette reads them too).
const OTHER_WASM_LAYER_MEDIA_TYPES: [&str; 2] =
    ["application/vnd.wasm.component.v1", "application/vnd.bytecodealliance.wasm.component.layer.v0+wasm"];
/// The layer media type of a component's policy file (Wassette's format), pushed beside it.
pub const POLICY_LAYER_MEDIA_TYPE: &str = "application/vnd.wasm.policy.v1+yaml";
/// Every media type a policy layer is read under: the standard one and those Wassette reads.
const POLICY_LAYER_MEDIA_TYPES: [&str; 4] =
    [POLICY_LAYER_MEDIA_TYPE, "application/vnd.wassette.policy+yaml", "application/x-yaml", "text/yaml"];
/// The OCI empty descriptor's media type and content (the config of a signature artifact).
const EMPTY_MEDIA_TYPE: &str = "application/vnd.oci.empty.v1+json";
const EMPTY_CONTENT: &[u8] = b"{}";

/// The largest component fetched (a Python interpreter component is about 40 MiB).
pub const MAX_COMPONENT_BYTES: i64 = 256 << 20;
/// The largest manifest or signature read.
const MAX_SMALL_BYTES: i64 = 1 << 20;
/// A repository's tag list, at most.
const MAX_TAGS_BYTES: usize = 4 << 20;

/// A component pulled from a registry, its digests checked.
#[derive(Debug, Clone)]
pub struct Pulled {
    /// The manifest's digest (`sha256:HEX`).
    pub manifest_digest: String,
    /// The component bytes.
    pub bytes: Vec<u8>,
    /// Their digest.
    pub component_digest: String,
    /// The signature stored beside the manifest, if any (not yet verified).
    pub signature: Option<Signature>,
    /// The policy file published in the same manifest (a layer of media type
    /// [`POLICY_LAYER_MEDIA_TYPE`]), not yet parsed. A signature covers it only if it names
    /// its digest ([`Signature::covers_policy`]): anyone who can push to the repository can
    /// push another manifest with the same component, another policy layer and the same
    /// signature beside it.
    pub policy: Option<Vec<u8>>,
}

/// What the config blob of a published component says (the CNCF layout's fields).
#[derive(Debug, Clone, Default)]
pub struct ComponentMeta {
    /// The component's exports (`toolhost:tool/tool@0.1.0`).
    pub exports: Vec<String>,
    /// Its imports.
    pub imports: Vec<String>,
    /// Manifest annotations (`org.opencontainers.image.*`).
    pub annotations: BTreeMap<String, String>,
    /// A policy file to publish beside the component, as a layer of its own.
    pub policy: Option<Vec<u8>>,
}

/// `r` as the OCI client library parses references (Docker Hub's host and `library/` resolved).
pub(crate) fn reference(r: &OciRef) -> Result<Reference> {
    let text = match (&r.tag, &r.digest) {
        (_, Some(d)) => format!("{}@{d}", r.repository_ref()),
        (Some(t), None) => format!("{}:{t}", r.repository_ref()),
        (None, None) => format!("{}:latest", r.repository_ref()),
    };
    text.parse().map_err(|e: oci_client::ParseError| Error::Layout { reference: r.to_string(), message: e.to_string() })
}

/// The digest the tag (or digest) of `r` resolves to now, without fetching the component.
///
/// # Errors
///
/// [`Error::Registry`] when the registry cannot answer.
pub async fn resolve(r: &OciRef, access: &Access) -> Result<String> {
    let wire = Wire::connect(r, access, Operation::Pull).await?;
    let (_, digest) = pull_manifest(&wire, r).await?;
    Ok(digest)
}

/// The tags of `r`'s repository (its own tag and digest ignored).
///
/// # Errors
///
/// [`Error::Registry`] or [`Error::Unauthorized`] when the registry cannot answer.
pub async fn tags(r: &OciRef, access: &Access) -> Result<Vec<String>> {
    let wire = Wire::connect(r, access, Operation::Pull).await?;
    let what = "cannot list the tags";
    let (body, _) = wire
        .get("tags/list", "application/json", MAX_TAGS_BYTES, true)
        .await
        .map_err(|e| wire_error(r, &wire.login, what, e))?;
    #[derive(serde::Deserialize)]
    struct TagList {
        #[serde(default)]
        tags: Option<Vec<String>>,
    }
    let listed: TagList = serde_json::from_slice(&body)
        .map_err(|e| Error::Layout { reference: r.to_string(), message: format!("{what}: not a tag list: {e}") })?;
    Ok(listed.tags.unwrap_or_default())
}

/// The newest tag that is a semantic version (a leading `v` allowed) matching `req`, and that
/// version. Pre-releases match only as `semver` matches them (when the requirement names a
/// pre-release of the same version), as in Cargo.
pub fn newest<'a>(tags: &'a [String], req: &semver::VersionReq) -> Option<(&'a str, semver::Version)> {
    tags.iter()
        .filter_map(|t| Some((t.as_str(), semver::Version::parse(t.strip_prefix('v').unwrap_or(t)).ok()?)))
        .filter(|(_, v)| req.matches(v))
        .max_by(|a, b| a.1.cmp(&b.1))
}

/// `r` at the newest tag matching `req`.
///
/// # Errors
///
/// As [`tags`], and [`Error::NoMatchingVersion`] when no tag matches.
pub async fn choose(r: &OciRef, req: &semver::VersionReq, access: &Access) -> Result<OciRef> {
    let tags = tags(r, access).await?;
    let Some((tag, _)) = newest(&tags, req) else {
        let mut versions: Vec<&String> = tags.iter().filter(|t| !t.ends_with(".toolhost-sig")).collect();
        versions.truncate(20);
        return Err(Error::NoMatchingVersion {
            repository: format!("oci://{}/{}", r.registry, r.repository),
            requirement: req.to_string(),
            tags: versions.into_iter().cloned().collect(),
        });
    };
    Ok(OciRef { tag: Some(tag.to_string()), digest: None, ..r.clone() })
}

/// The manifest of `r`, its digest checked against its bytes and against `r`'s digest.
async fn pull_manifest(wire: &Wire, r: &OciRef) -> Result<(OciImageManifest, String)> {
    let reference = reference(r)?;
    let at = reference.digest().or(reference.tag()).unwrap_or("latest");
    let answer = wire.get(&format!("manifests/{at}"), OCI_IMAGE_MEDIA_TYPE, MAX_SMALL_BYTES as usize, true).await;
    let (bytes, reported) = match answer {
        Err(WireError::TooLarge { .. }) => {
            return Err(Error::Layout { reference: r.to_string(), message: "the manifest is over 1 MiB".into() });
        }
        other => other.map_err(|e| wire_error(r, &wire.login, "cannot fetch the manifest", e))?,
    };
    let digest = digest_of(&bytes);
    for expected in [reported.as_ref(), r.digest.as_ref()].into_iter().flatten() {
        if *expected != digest {
            return Err(Error::DigestMismatch {
                what: format!("the manifest of {r}"),
                expected: expected.clone(),
                actual: digest,
            });
        }
    }
    let manifest: OciImageManifest = serde_json::from_slice(&bytes)
        .map_err(|e| Error::Layout { reference: r.to_string(), message: format!("not an OCI image manifest: {e}") })?;
    Ok((manifest, digest))
}

/// A blob of `r` named by `descriptor`, at most `limit` bytes, its digest checked. The body is
/// read up to the size the manifest declares: a registry that streams more is cut off there.
async fn pull_blob(wire: &Wire, r: &OciRef, descriptor: &OciDescriptor, limit: i64, what: &str) -> Result<Vec<u8>> {
    if descriptor.size < 0 || descriptor.size > limit || !crate::is_digest(&descriptor.digest) {
        return Err(Error::Layout {
            reference: r.to_string(),
            message: format!(
                "a layer of {} bytes named {} (at most {limit}, sha256)",
                descriptor.size, descriptor.digest
            ),
        });
    }
    let tail = format!("blobs/{}", descriptor.digest);
    let bytes = match wire.get(&tail, "application/octet-stream", descriptor.size as usize, false).await {
        Err(WireError::TooLarge { .. }) => {
            return Err(Error::Layout {
                reference: r.to_string(),
                message: format!(
                    "the registry sent more than the {} bytes the manifest declares for a layer",
                    descriptor.size
                ),
            });
        }
        other => other.map_err(|e| wire_error(r, &wire.login, "cannot fetch a layer", e))?.0,
    };
    let actual = digest_of(&bytes);
    if actual != descriptor.digest || bytes.len() as i64 != descriptor.size {
        return Err(Error::DigestMismatch {
            what: format!("the {what} of {r} (tampered with in the registry or on the way)"),
            expected: descriptor.digest.clone(),
            actual,
        });
    }
    Ok(bytes)
}

/// Pull the component `r` names, and its signature if the registry has one.
///
/// # Errors
///
/// [`Error::Registry`], [`Error::Layout`] for an artifact that is not one Wasm component,
/// [`Error::DigestMismatch`] for bytes that are not what the manifest names.
pub async fn pull(r: &OciRef, access: &Access) -> Result<Pulled> {
    let wire = Wire::connect(r, access, Operation::Pull).await?;
    let (manifest, manifest_digest) = pull_manifest(&wire, r).await?;
    if manifest.config.media_type != WASM_CONFIG_MEDIA_TYPE {
        return Err(Error::Layout {
            reference: r.to_string(),
            message: format!("its config has media type {}, not {WASM_CONFIG_MEDIA_TYPE}", manifest.config.media_type),
        });
    }
    let of = |types: &[&str]| -> Vec<&OciDescriptor> {
        manifest.layers.iter().filter(|l| types.contains(&l.media_type.as_str())).collect()
    };
    let wasm_types: Vec<&str> = [WASM_LAYER_MEDIA_TYPE].into_iter().chain(OTHER_WASM_LAYER_MEDIA_TYPES).collect();
    let wasm = of(&wasm_types);
    let [layer] = wasm.as_slice() else {
        return Err(Error::Layout {
            reference: r.to_string(),
            message: format!("{} layers of media type {WASM_LAYER_MEDIA_TYPE} (expected one)", wasm.len()),
        });
    };
    let policy = match of(&POLICY_LAYER_MEDIA_TYPES).as_slice() {
        [] => None,
        [policy] => {
            Some(pull_blob(&wire, r, policy, toolhost_policy::MAX_POLICY_FILE_BYTES as i64, "policy layer").await?)
        }
        more => {
            return Err(Error::Layout {
                reference: r.to_string(),
                message: format!("{} policy layers (expected at most one)", more.len()),
            });
        }
    };
    let bytes = pull_blob(&wire, r, layer, MAX_COMPONENT_BYTES, "component layer").await?;
    let signature = pull_signature(&wire, r, &manifest_digest).await?;
    Ok(Pulled { manifest_digest, component_digest: layer.digest.clone(), bytes, signature, policy })
}

/// The tag a signature of the manifest with this digest is kept under.
pub fn signature_tag(manifest_digest: &str) -> String {
    format!("sha256-{}.toolhost-sig", digest_hex(manifest_digest))
}

async fn pull_signature(wire: &Wire, r: &OciRef, manifest_digest: &str) -> Result<Option<Signature>> {
    let at = OciRef { tag: Some(signature_tag(manifest_digest)), digest: None, ..r.clone() };
    let manifest = match pull_manifest(wire, &at).await {
        Ok((m, _)) => m,
        Err(Error::Registry { source: Some(e), .. }) if e.is_not_found() => return Ok(None),
        Err(e) => return Err(e),
    };
    let Some(layer) = manifest.layers.iter().find(|l| l.media_type == SIGNATURE_MEDIA_TYPE) else {
        return Ok(None);
    };
    let bytes = pull_blob(wire, &at, layer, MAX_SMALL_BYTES, "signature").await?;
    Signature::from_json(&bytes).map(Some)
}

fn descriptor(media_type: &str, bytes: &[u8]) -> OciDescriptor {
    OciDescriptor {
        media_type: media_type.to_string(),
        digest: digest_of(bytes),
        size: bytes.len() as i64,
        ..OciDescriptor::default()
    }
}

/// Push `bytes` (a component) to `r`'s tag; with `signature`, push it beside (it should sign
/// `meta.policy` too, [`crate::sign::SecretKey::sign`], or installers will not apply that
/// policy without asking). Returns the manifest's digest.
///
/// # Errors
///
/// [`Error::Registry`] when the registry refuses.
pub async fn push(
    r: &OciRef,
    access: &Access,
    bytes: &[u8],
    meta: &ComponentMeta,
    signature: Option<&Signature>,
) -> Result<String> {
    let wire = Wire::connect(r, access, Operation::Push).await?;
    let layer = descriptor(WASM_LAYER_MEDIA_TYPE, bytes);
    let config = serde_json::json!({
        "created": rfc3339_now(),
        "architecture": "wasm",
        "os": "wasip2",
        "layerDigests": [layer.digest],
        "component": { "exports": meta.exports, "imports": meta.imports },
    });
    let config = serde_json::to_vec(&config).unwrap_or_default();
    let policy = meta.policy.as_deref().map(|p| (p, descriptor(POLICY_LAYER_MEDIA_TYPE, p)));
    let manifest = OciImageManifest {
        schema_version: 2,
        media_type: Some(OCI_IMAGE_MEDIA_TYPE.to_string()),
        config: descriptor(WASM_CONFIG_MEDIA_TYPE, &config),
        layers: [layer.clone()].into_iter().chain(policy.as_ref().map(|(_, d)| d.clone())).collect(),
        subject: None,
        artifact_type: None,
        annotations: (!meta.annotations.is_empty()).then(|| meta.annotations.clone()),
    };
    let mut blobs = vec![(config.as_slice(), &manifest.config), (bytes, &layer)];
    blobs.extend(policy.as_ref().map(|(p, d)| (*p, d)));
    let digest = push_artifact(&wire, r, &manifest, &blobs).await?;
    if let Some(signature) = signature {
        let json = signature.to_json();
        let at = OciRef { tag: Some(signature_tag(&digest)), digest: None, ..r.clone() };
        let empty = descriptor(EMPTY_MEDIA_TYPE, EMPTY_CONTENT);
        let sig_layer = descriptor(SIGNATURE_MEDIA_TYPE, &json);
        let sig_manifest = OciImageManifest {
            schema_version: 2,
            media_type: Some(OCI_IMAGE_MEDIA_TYPE.to_string()),
            config: empty.clone(),
            layers: vec![sig_layer.clone()],
            subject: Some(OciDescriptor { media_type: OCI_IMAGE_MEDIA_TYPE.to_string(), ..descriptor_of(&digest) }),
            artifact_type: Some(SIGNATURE_MEDIA_TYPE.to_string()),
            annotations: None,
        };
        push_artifact(&wire, &at, &sig_manifest, &[(EMPTY_CONTENT, &empty), (&json, &sig_layer)]).await?;
    }
    Ok(digest)
}

fn descriptor_of(digest: &str) -> OciDescriptor {
    OciDescriptor { digest: digest.to_string(), ..OciDescriptor::default() }
}

async fn push_artifact(
    wire: &Wire,
    r: &OciRef,
    manifest: &OciImageManifest,
    blobs: &[(&[u8], &OciDescriptor)],
) -> Result<String> {
    for (bytes, d) in blobs {
        wire.push_blob(bytes, &d.digest).await.map_err(|e| wire_error(r, &wire.login, "cannot push a blob", e))?;
    }
    let body = serde_json::to_vec(manifest).unwrap_or_default();
    let digest = digest_of(&body);
    let tag = r.tag.as_deref().unwrap_or("latest");
    wire.push_manifest(tag, body, OCI_IMAGE_MEDIA_TYPE)
        .await
        .map_err(|e| wire_error(r, &wire.login, "cannot push the manifest", e))?;
    Ok(digest)
}

/// Now as RFC 3339 UTC (`2026-12-03T16:43:01Z`), for the config blob's `created`.
fn rfc3339_now() -> String {
    chrono::DateTime::<chrono::Utc>::from(std::time::SystemTime::now())
        .to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_newest_matching_version_is_chosen() {
        let tags: Vec<String> =
            ["latest", "1.0.0", "v1.3.0", "1.2.9", "2.0.0", "1.4.0-rc.1", "1.2", "sha256-ab.toolhost-sig"]
                .iter()
                .map(|s| s.to_string())
                .collect();
        let pick = |req: &str| super::newest(&tags, &req.parse().unwrap()).map(|(t, _)| t);
        assert_eq!(pick("^1"), Some("v1.3.0"));
        assert_eq!(pick("~1.2"), Some("1.2.9"), "`1.2` is not a semantic version: ignored");
        assert_eq!(pick(">=1, <3"), Some("2.0.0"));
        assert_eq!(pick("^3"), None);
        assert_eq!(pick(">=1.4.0-rc.1, <2"), Some("1.4.0-rc.1"));
        assert_eq!(pick("*"), Some("2.0.0"), "pre-releases only when asked for");
    }

    #[test]
    fn dates() {
        let now = super::rfc3339_now();
        assert_eq!(now.len(), 20, "{now}");
        assert!(now.starts_with("20") && now.ends_with('Z'), "{now}");
    }
}
