//! # Reaching registries and URLs
//!
//! Two things decide whether a fetch or a push gets through, and both belong to the operator,
//! never to a tool: which certificate authorities an HTTPS connection trusts, and which
//! credentials a registry is given.
//!
//! - **Roots**: Mozilla's (compiled in, the same on every machine) plus the PEM files the
//!   config's `[tls] ca_files` names, the same extra roots the tools' own HTTPS requests trust:
//!   an internal registry behind a company CA works for `add` as for `WebFetch`.
//! - **Credentials**: read where `docker login`, `oras login` and `wkg` keep them,
//!   `$DOCKER_CONFIG/config.json` (else `~/.docker/config.json`): `auths` entries, and the
//!   `credHelpers` / `credsStore` programs they name. Looked up per registry host, given only to
//!   that registry, never written, never logged. A registry with none configured is spoken to
//!   anonymously.
//!
//! ## Example
//!
//! ```
//! use toolhost_registry::Access;
//!
//! let dir = tempfile::tempdir().unwrap();
//! let config = dir.path().join("config.json");
//! // `alice:s3cret`, as `docker login` writes it.
//! std::fs::write(&config, r#"{"auths":{"registry.example":{"auth":"YWxpY2U6czNjcmV0"}}}"#).unwrap();
//! let access = Access::new().with_docker_config(&config);
//! assert_eq!(access.username("registry.example").unwrap().as_deref(), Some("alice"));
//! assert_eq!(access.username("elsewhere.example").unwrap(), None);
//! ```

use crate::{Error, Result};
use docker_credential::{CredentialRetrievalError, DockerCredential};
use oci_client::secrets::RegistryAuth;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// How long a connection may take to open before a fetch fails (a registry that does not answer
/// must not hang `add` or a CI job forever).
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(30);
/// How long a fetch may wait for the next bytes of an answer.
pub const READ_TIMEOUT: Duration = Duration::from_secs(120);

/// Trusted roots and registry credentials for fetching and publishing.
#[derive(Debug, Clone, Default)]
pub struct Access {
    /// Extra root certificates, DER, each with the file it came from.
    roots: Vec<(String, Vec<u8>)>,
    /// The docker-style credentials file, if credentials are to be used.
    docker_config: Option<PathBuf>,
}

/// The docker config file docker, oras and wkg share: `$DOCKER_CONFIG/config.json`, else
/// `$HOME/.docker/config.json`.
pub fn docker_config_path() -> Option<PathBuf> {
    match std::env::var_os("DOCKER_CONFIG") {
        Some(dir) if !dir.is_empty() => Some(PathBuf::from(dir).join("config.json")),
        _ => std::env::var_os("HOME").map(|home| PathBuf::from(home).join(".docker").join("config.json")),
    }
}

impl Access {
    /// Mozilla's roots, no credentials.
    pub fn new() -> Access {
        Access::default()
    }

    /// Also trust every certificate in the PEM file `path` (`[tls] ca_files`).
    ///
    /// # Errors
    ///
    /// [`Error::Io`] when it cannot be read, [`Error::Tls`] when it holds no PEM certificate or
    /// a malformed one.
    pub fn with_ca_file(mut self, path: &Path) -> Result<Access> {
        use rustls::pki_types::CertificateDer;
        use rustls::pki_types::pem::PemObject as _;
        let pem = std::fs::read(path).map_err(|e| Error::io(path, "cannot read the CA file", e))?;
        let origin = path.display().to_string();
        let before = self.roots.len();
        for cert in CertificateDer::pem_slice_iter(&pem) {
            let cert = cert.map_err(|e| Error::Tls(format!("{origin}: not a PEM certificate: {e}")))?;
            self.roots.push((origin.clone(), cert.to_vec()));
        }
        if self.roots.len() == before {
            return Err(Error::Tls(format!("{origin}: no PEM certificate (`-----BEGIN CERTIFICATE-----`) in it")));
        }
        Ok(self)
    }

    /// Use the credentials of the docker config file at `path` (see [`docker_config_path`]).
    /// A missing file means no credentials.
    pub fn with_docker_config(mut self, path: &Path) -> Access {
        self.docker_config = Some(path.to_path_buf());
        self
    }

    /// The user name configured for `registry` (`host[:port]`), for messages and tests; the
    /// secret itself never leaves this module except towards that registry.
    ///
    /// # Errors
    ///
    /// As `Access::auth`.
    pub fn username(&self, registry: &str) -> Result<Option<String>> {
        Ok(match self.auth(registry)? {
            RegistryAuth::Basic(user, _) => Some(user),
            _ => None,
        })
    }

    /// The credentials for `registry`: anonymous unless the docker config has some for it.
    ///
    /// # Errors
    ///
    /// [`Error::Credentials`] when the config cannot be read or parsed, a credential helper
    /// fails, or the entry is malformed: never silently anonymous, since a registry that then
    /// answers "not found" for a private repository would mislead.
    pub(crate) fn auth(&self, registry: &str) -> Result<RegistryAuth> {
        let Some(path) = &self.docker_config else { return Ok(RegistryAuth::Anonymous) };
        let file = match std::fs::File::open(path) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(RegistryAuth::Anonymous),
            Err(e) => return Err(Error::io(path, "cannot read the registry credentials", e)),
        };
        let fail = |message: String| Error::Credentials { registry: registry.to_string(), path: path.clone(), message };
        match docker_credential::get_credential_from_reader(std::io::BufReader::new(file), &docker_key(registry)) {
            Ok(DockerCredential::UsernamePassword(user, password)) => Ok(RegistryAuth::Basic(user, password)),
            Ok(DockerCredential::IdentityToken(_)) => Err(fail(
                "it holds an identity token (an OAuth refresh token), which toolhost cannot use yet; log in \
                 with a user name and password or access token instead"
                    .into(),
            )),
            Err(CredentialRetrievalError::NoCredentialConfigured) => Ok(RegistryAuth::Anonymous),
            Err(CredentialRetrievalError::ConfigReadError) => Err(fail("not a docker config file (JSON)".into())),
            Err(e) => Err(fail(e.to_string())),
        }
    }

    /// An HTTPS-only client for `https://` sources, with these roots.
    pub(crate) fn https_client(&self) -> Result<reqwest::Client> {
        self.http_client(false)
    }

    /// A client with these roots: HTTPS only, unless `plain_http` (a registry on this machine).
    pub(crate) fn http_client(&self, plain_http: bool) -> Result<reqwest::Client> {
        let mut builder = reqwest::Client::builder()
            .https_only(!plain_http)
            .connect_timeout(CONNECT_TIMEOUT)
            .read_timeout(READ_TIMEOUT);
        for (origin, der) in &self.roots {
            let cert = reqwest::Certificate::from_der(der)
                .map_err(|e| Error::Tls(format!("{origin}: not usable as a root certificate: {e}")))?;
            builder = builder.add_root_certificate(cert);
        }
        builder.build().map_err(|e| Error::Tls(format!("cannot build an HTTPS client: {e}")))
    }
}

/// The key docker keeps a registry's credentials under: Docker Hub's historical URL for Docker
/// Hub, `host[:port]` for every other registry.
fn docker_key(registry: &str) -> String {
    match registry {
        "docker.io" | "index.docker.io" | "registry-1.docker.io" => "https://index.docker.io/v1/".to_string(),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn access(json: &str) -> (tempfile::TempDir, Access) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("config.json");
        std::fs::write(&path, json).unwrap();
        (dir, Access::new().with_docker_config(&path))
    }

    #[test]
    fn credentials_per_registry_only() {
        let (_d, a) = access(
            r#"{"auths":{"r.example:5000":{"auth":"YWxpY2U6czNjcmV0"},
                "https://index.docker.io/v1/":{"username":"bob","password":"pw"}}}"#,
        );
        assert!(
            matches!(a.auth("r.example:5000").unwrap(), RegistryAuth::Basic(u, p) if u == "alice" && p == "s3cret")
        );
        assert!(matches!(a.auth("r.example").unwrap(), RegistryAuth::Anonymous), "another port is another registry");
        assert!(matches!(a.auth("docker.io").unwrap(), RegistryAuth::Basic(u, _) if u == "bob"));
        assert!(matches!(a.auth("ghcr.io").unwrap(), RegistryAuth::Anonymous));
    }

    #[test]
    fn no_file_is_anonymous_but_a_broken_one_is_an_error() {
        let a = Access::new().with_docker_config(Path::new("/nonexistent/config.json"));
        assert!(matches!(a.auth("r.example").unwrap(), RegistryAuth::Anonymous));
        assert!(matches!(Access::new().auth("r.example").unwrap(), RegistryAuth::Anonymous));
        let (_d, a) = access("{not json");
        let e = a.auth("r.example").unwrap_err().to_string();
        assert!(e.contains("r.example") && e.contains("config.json") && e.contains("not a docker config"), "{e}");
        let (_d, a) = access(r#"{"auths":{"r.example":{"auth":"!!!"}}}"#);
        let e = a.auth("r.example").unwrap_err().to_string();
        assert!(e.contains("r.example") && e.contains("decode credential"), "{e}");
        let (_d, a) = access(r#"{"auths":{"r.example":{"identitytoken":"t"}}}"#);
        assert!(a.auth("r.example").unwrap_err().to_string().contains("identity token"));
    }

    #[test]
    fn a_failing_credential_helper_is_an_error() {
        let (_d, a) = access(r#"{"credHelpers":{"r.example":"toolhost-test-no-such-helper"}}"#);
        let e = a.auth("r.example").unwrap_err().to_string();
        assert!(e.contains("r.example"), "{e}");
        assert!(matches!(a.auth("other.example").unwrap(), RegistryAuth::Anonymous));
    }

    #[test]
    fn ca_files_must_hold_certificates() {
        let dir = tempfile::tempdir().unwrap();
        let bad = dir.path().join("bad.pem");
        std::fs::write(&bad, "hello").unwrap();
        let e = Access::new().with_ca_file(&bad).unwrap_err().to_string();
        assert!(e.contains("bad.pem") && e.contains("no PEM certificate"), "{e}");
        let e = Access::new().with_ca_file(&dir.path().join("missing.pem")).unwrap_err().to_string();
        assert!(e.contains("missing.pem"), "{e}");
    }
}
