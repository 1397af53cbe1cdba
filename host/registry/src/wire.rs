//! # The OCI distribution protocol, every answer bounded
//!
//! toolhost speaks to registries itself rather than through a client library, because a
//! registry is a source it does not control: whatever it sends is read as it streams and cut
//! off at a limit chosen here, never at one the registry declares. That holds for every
//! request of a session, including the two a library makes on its own: the `/v2/` probe and
//! the answer of the token service, whose address (the `realm`) the registry chooses.
//!
//! A session ([`Wire`]) is one repository and one operation (pull, or pull and push). It
//! starts with the handshake: `GET /v2/`, and when the registry answers `401` with a
//! `Bearer` challenge, a token from the realm for `repository:NAME:pull[,push]`, sent the
//! configured login if there is one. A `Basic` challenge, or none, means the login (if any)
//! goes with each request. The realm must be HTTPS (plain HTTP only when the registry itself
//! is on this machine and so is the realm): a login is never sent in clear text.
//!
//! Credentials go only where they are meant for: the registry's own origin and its token
//! service. An upload `Location` on another origin gets the bytes without them, and reqwest
//! drops them on a redirect to another host (a blob served from object storage).

use crate::{Error, Result};
use oci_client::secrets::RegistryAuth;
use reqwest::{StatusCode, Url, header};
use std::time::Duration;
use toolhost_policy::OciRef;

/// The most of a token service's answer read (a token is a few KiB).
const MAX_TOKEN_BYTES: usize = 64 << 10;
/// The most of an error answer read, for its message and error codes.
const MAX_ERROR_BYTES: usize = 64 << 10;
/// How long a request for something small (the probe, a token, a manifest, a tag list, a push
/// step) may take in all: a registry that drips bytes is cut off. Blobs have only the read
/// timeout between bytes ([`crate::access::READ_TIMEOUT`]), since they may be large.
const SMALL_REQUEST_TIMEOUT: Duration = Duration::from_secs(300);

/// What a session may do in its repository (the token's scope).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Operation {
    Pull,
    Push,
}

/// A registry's answer that is not what was asked for.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum WireError {
    /// The connection could not be made, or broke.
    #[error("the request failed")]
    Transport(#[source] reqwest::Error),
    /// The registry (or its token service) answered with an error status.
    #[error("HTTP {status}{}{}", if codes.is_empty() { String::new() } else { format!(" {}", codes.join(", ")) },
        if message.is_empty() { String::new() } else { format!(": {message}") })]
    Status {
        /// The HTTP status.
        status: u16,
        /// The error codes of the OCI error envelope (`MANIFEST_UNKNOWN`, `DENIED`, …).
        codes: Vec<String>,
        /// Its messages, or the start of the body.
        message: String,
    },
    /// The registry sent more than the limit for what was asked.
    #[error("the registry sent more than {limit} bytes")]
    TooLarge {
        /// The limit.
        limit: usize,
    },
    /// The registry broke the protocol (a challenge without a realm, a token answer that is
    /// not JSON, an upload without a location, …).
    #[error("{0}")]
    Protocol(String),
}

impl WireError {
    /// Whether the registry says the thing asked for does not exist.
    pub fn is_not_found(&self) -> bool {
        match self {
            WireError::Status { status, codes, .. } => {
                *status == 404
                    || codes.iter().any(|c| matches!(c.as_str(), "MANIFEST_UNKNOWN" | "NAME_UNKNOWN" | "NOT_FOUND"))
            }
            _ => false,
        }
    }

    /// Whether the registry refused for want of (valid) credentials.
    pub fn is_refused(&self) -> bool {
        match self {
            WireError::Status { status, codes, .. } => {
                matches!(status, 401 | 403) || codes.iter().any(|c| matches!(c.as_str(), "UNAUTHORIZED" | "DENIED"))
            }
            _ => false,
        }
    }
}

/// One repository of one registry, after the handshake.
pub(crate) struct Wire {
    http: reqwest::Client,
    /// `https://HOST[:PORT]/` (`http://` for a registry on this machine).
    origin: Url,
    /// The repository (`library/` added for Docker Hub's official images).
    repository: String,
    /// What each request to the registry carries: a bearer token, the basic login, or nothing.
    authorization: Option<header::HeaderValue>,
    /// The configured login, for the hint when access is refused.
    pub(crate) login: RegistryAuth,
}

impl Wire {
    /// Open a session for `r`'s repository: the handshake, bounded.
    ///
    /// # Errors
    ///
    /// [`Error::Registry`] or [`Error::Unauthorized`] when the registry or its token service
    /// cannot be reached or refuses.
    pub(crate) async fn connect(r: &OciRef, access: &crate::Access, operation: Operation) -> Result<Wire> {
        let reference = crate::oci::reference(r)?;
        let plain_http = r.is_loopback();
        let scheme = if plain_http { "http" } else { "https" };
        let origin = Url::parse(&format!("{scheme}://{}/", reference.resolve_registry()))
            .map_err(|e| Error::Layout { reference: r.to_string(), message: format!("not a registry address: {e}") })?;
        let mut wire = Wire {
            http: access.http_client(plain_http)?,
            origin,
            repository: reference.repository().to_string(),
            authorization: None,
            login: access.auth(&r.registry)?,
        };
        let login = wire.login.clone();
        let failed = |e| wire_error(r, &login, "cannot reach the registry", e);
        let probe = wire.origin.join("v2/").map_err(|e| failed(WireError::Protocol(e.to_string())))?;
        let answer =
            wire.http.get(probe).timeout(SMALL_REQUEST_TIMEOUT).send().await.map_err(|e| failed(transport(e)))?;
        // Only the headers matter; the body is dropped unread.
        let challenge =
            (answer.status() == StatusCode::UNAUTHORIZED).then(|| bearer_challenge(answer.headers())).flatten();
        drop(answer);
        wire.authorization = match (challenge, &wire.login) {
            (Some((realm, service)), _) => {
                let token = wire.token(r, &realm, service.as_deref(), operation, plain_http).await?;
                let mut value = header::HeaderValue::from_str(&format!("Bearer {token}")).map_err(|_| {
                    failed(WireError::Protocol("the token service sent a token that is not header text".into()))
                })?;
                value.set_sensitive(true);
                Some(value)
            }
            (None, RegistryAuth::Basic(user, password)) => Some(basic(user, password)),
            (None, _) => None,
        };
        Ok(wire)
    }

    /// A token from the realm the registry named.
    async fn token(
        &self,
        r: &OciRef,
        realm: &str,
        service: Option<&str>,
        operation: Operation,
        plain_http: bool,
    ) -> Result<String> {
        let what = "cannot get a token from the registry's token service";
        let failed = |e| wire_error(r, &self.login, what, e);
        let mut url = Url::parse(realm)
            .map_err(|e| failed(WireError::Protocol(format!("its realm `{realm}` is not a URL: {e}"))))?;
        let loopback = |u: &Url| match u.host() {
            Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
            Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
            Some(url::Host::Domain(d)) => d.eq_ignore_ascii_case("localhost"),
            None => false,
        };
        let allowed = url.scheme() == "https" || (url.scheme() == "http" && plain_http && loopback(&url));
        if !allowed {
            return Err(failed(WireError::Protocol(format!(
                "its realm `{realm}` is not HTTPS; no login or token is exchanged in clear text"
            ))));
        }
        let actions = match operation {
            Operation::Pull => "pull",
            Operation::Push => "pull,push",
        };
        {
            let mut query = url.query_pairs_mut();
            query.append_pair("scope", &format!("repository:{}:{actions}", self.repository));
            if let Some(service) = service {
                query.append_pair("service", service);
            }
        }
        let mut request = self.http.get(url).timeout(SMALL_REQUEST_TIMEOUT);
        if let RegistryAuth::Basic(user, password) = &self.login {
            request = request.header(header::AUTHORIZATION, basic(user, password));
        }
        let answer = request.send().await.map_err(|e| failed(transport(e)))?;
        let body = read_success(answer, MAX_TOKEN_BYTES).await.map_err(failed)?;
        #[derive(serde::Deserialize)]
        struct Token {
            token: Option<String>,
            access_token: Option<String>,
        }
        let token: Token = serde_json::from_slice(&body)
            .map_err(|e| failed(WireError::Protocol(format!("its answer is not a token (JSON): {e}"))))?;
        token
            .token
            .or(token.access_token)
            .filter(|t| !t.is_empty())
            .ok_or_else(|| failed(WireError::Protocol("its answer holds no `token`".into())))
    }

    /// `v2/REPOSITORY/{tail}` on the registry.
    fn url(&self, tail: &str) -> Result<Url, WireError> {
        self.origin.join(&format!("v2/{}/{tail}", self.repository)).map_err(|e| WireError::Protocol(e.to_string()))
    }

    fn request(&self, method: reqwest::Method, url: Url) -> reqwest::RequestBuilder {
        let same_origin = url.origin() == self.origin.origin();
        let request = self.http.request(method, url);
        match (&self.authorization, same_origin) {
            (Some(value), true) => request.header(header::AUTHORIZATION, value.clone()),
            _ => request,
        }
    }

    /// GET `v2/REPOSITORY/{tail}`, reading at most `limit` bytes of the body; `small` bounds the
    /// whole request's time too. Returns the body and the `Docker-Content-Digest` header.
    pub(crate) async fn get(
        &self,
        tail: &str,
        accept: &str,
        limit: usize,
        small: bool,
    ) -> Result<(Vec<u8>, Option<String>), WireError> {
        let mut request = self.request(reqwest::Method::GET, self.url(tail)?).header(header::ACCEPT, accept);
        if small {
            request = request.timeout(SMALL_REQUEST_TIMEOUT);
        }
        let answer = request.send().await.map_err(transport)?;
        let digest = answer.headers().get("docker-content-digest").and_then(|v| v.to_str().ok()).map(str::to_string);
        Ok((read_success(answer, limit).await?, digest))
    }

    /// Upload a blob unless the registry has it already (a monolithic upload: `POST` for a
    /// location, `PUT` the bytes there).
    pub(crate) async fn push_blob(&self, bytes: &[u8], digest: &str) -> Result<(), WireError> {
        let blob = self.url(&format!("blobs/{digest}"))?;
        let head = self.request(reqwest::Method::HEAD, blob).timeout(SMALL_REQUEST_TIMEOUT).send().await;
        if head.is_ok_and(|a| a.status().is_success()) {
            return Ok(());
        }
        let started = self
            .request(reqwest::Method::POST, self.url("blobs/uploads/")?)
            .header(header::CONTENT_LENGTH, 0)
            .timeout(SMALL_REQUEST_TIMEOUT)
            .send()
            .await
            .map_err(transport)?;
        let location = started.headers().get(header::LOCATION).and_then(|v| v.to_str().ok()).map(str::to_string);
        read_success(started, MAX_ERROR_BYTES).await?;
        let location = location.ok_or_else(|| WireError::Protocol("an upload started without a Location".into()))?;
        let mut at = self
            .origin
            .join(&location)
            .map_err(|e| WireError::Protocol(format!("the upload location `{location}` is not a URL: {e}")))?;
        at.query_pairs_mut().append_pair("digest", digest);
        let put = self
            .request(reqwest::Method::PUT, at)
            .header(header::CONTENT_TYPE, "application/octet-stream")
            .body(bytes.to_vec())
            .send()
            .await
            .map_err(transport)?;
        read_success(put, MAX_ERROR_BYTES).await.map(drop)
    }

    /// PUT a manifest at `tag`.
    pub(crate) async fn push_manifest(&self, tag: &str, body: Vec<u8>, media_type: &str) -> Result<(), WireError> {
        let answer = self
            .request(reqwest::Method::PUT, self.url(&format!("manifests/{tag}"))?)
            .header(header::CONTENT_TYPE, media_type)
            .body(body)
            .timeout(SMALL_REQUEST_TIMEOUT)
            .send()
            .await
            .map_err(transport)?;
        read_success(answer, MAX_ERROR_BYTES).await.map(drop)
    }
}

fn transport(e: reqwest::Error) -> WireError {
    WireError::Transport(e)
}

fn basic(user: &str, password: &str) -> header::HeaderValue {
    use base64::Engine as _;
    let encoded = base64::engine::general_purpose::STANDARD.encode(format!("{user}:{password}"));
    let mut value = header::HeaderValue::from_str(&format!("Basic {encoded}"))
        .unwrap_or_else(|_| header::HeaderValue::from_static(""));
    value.set_sensitive(true);
    value
}

/// The realm and service of the first `Bearer` challenge in `WWW-Authenticate`.
fn bearer_challenge(headers: &header::HeaderMap) -> Option<(String, Option<String>)> {
    headers.get_all(header::WWW_AUTHENTICATE).iter().find_map(|value| {
        let text = value.to_str().ok()?;
        http_auth::ChallengeParser::new(text).filter_map(|c| c.ok()).find_map(|c| {
            if !c.scheme.eq_ignore_ascii_case("Bearer") {
                return None;
            }
            let param =
                |name: &str| c.params.iter().find(|(k, _)| k.eq_ignore_ascii_case(name)).map(|(_, v)| v.to_unescaped());
            Some((param("realm")?, param("service")))
        })
    })
}

/// The body of a success, at most `limit` bytes as it streams; otherwise the error status with
/// what the OCI error envelope says (its first [`MAX_ERROR_BYTES`]).
async fn read_success(mut answer: reqwest::Response, limit: usize) -> Result<Vec<u8>, WireError> {
    let status = answer.status();
    let limit = if status.is_success() { limit } else { MAX_ERROR_BYTES };
    let mut body = Vec::new();
    while let Some(chunk) = answer.chunk().await.map_err(transport)? {
        if body.len() + chunk.len() > limit {
            if !status.is_success() {
                body.extend_from_slice(&chunk[..limit - body.len()]);
                break;
            }
            return Err(WireError::TooLarge { limit });
        }
        body.extend_from_slice(&chunk);
    }
    if status.is_success() {
        return Ok(body);
    }
    Err(status_error(status, &body))
}

fn status_error(status: StatusCode, body: &[u8]) -> WireError {
    #[derive(serde::Deserialize)]
    struct Envelope {
        errors: Vec<Entry>,
    }
    #[derive(serde::Deserialize)]
    struct Entry {
        code: String,
        #[serde(default)]
        message: String,
    }
    let (codes, message) = match serde_json::from_slice::<Envelope>(body) {
        Ok(envelope) => (
            envelope.errors.iter().map(|e| e.code.clone()).collect(),
            envelope.errors.iter().map(|e| e.message.as_str()).filter(|m| !m.is_empty()).collect::<Vec<_>>().join("; "),
        ),
        Err(_) => (Vec::new(), String::from_utf8_lossy(&body[..body.len().min(300)]).trim().to_string()),
    };
    let message: String = message.chars().filter(|c| !c.is_control()).take(300).collect();
    WireError::Status { status: status.as_u16(), codes, message }
}

/// The crate's error for a failed request: [`Error::Unauthorized`] with what to do when the
/// registry wants (other) credentials, [`Error::Registry`] otherwise.
pub(crate) fn wire_error(r: &OciRef, login: &RegistryAuth, what: &str, e: WireError) -> Error {
    if e.is_refused() {
        let hint = match login {
            RegistryAuth::Basic(..) => format!(
                "the credentials configured for {} were refused (wrong, expired, or without access to {}): log in again",
                r.registry, r.repository
            ),
            _ => format!(
                "no credentials are configured for {}: log in with `docker login {0}` or `oras login {0}` \
                 (toolhost reads $DOCKER_CONFIG/config.json, else ~/.docker/config.json)",
                r.registry
            ),
        };
        return Error::Unauthorized {
            reference: r.to_string(),
            message: format!("{what}: {}", crate::chain(&e)),
            hint,
        };
    }
    // The cause is the error's source, not part of its message: a chain printed whole says it once.
    Error::Registry { reference: r.to_string(), message: what.to_string(), source: Some(e) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn challenges_are_read_as_registries_write_them() {
        let mut headers = header::HeaderMap::new();
        headers.append(header::WWW_AUTHENTICATE, header::HeaderValue::from_static(r#"Basic realm="x""#));
        headers.append(
            header::WWW_AUTHENTICATE,
            header::HeaderValue::from_static(
                r#"Bearer realm="https://auth.example/token",service="registry.example",scope="repository:a:pull""#,
            ),
        );
        assert_eq!(
            bearer_challenge(&headers),
            Some(("https://auth.example/token".to_string(), Some("registry.example".to_string())))
        );
        let mut basic_only = header::HeaderMap::new();
        basic_only.append(header::WWW_AUTHENTICATE, header::HeaderValue::from_static(r#"Basic realm="Registry""#));
        assert_eq!(bearer_challenge(&basic_only), None);
        let mut no_realm = header::HeaderMap::new();
        no_realm.append(header::WWW_AUTHENTICATE, header::HeaderValue::from_static(r#"Bearer service="x""#));
        assert_eq!(bearer_challenge(&no_realm), None);
    }

    #[test]
    fn error_envelopes_say_what_was_refused_or_missing() {
        let e = status_error(
            StatusCode::NOT_FOUND,
            br#"{"errors":[{"code":"MANIFEST_UNKNOWN","message":"manifest unknown"}]}"#,
        );
        assert!(e.is_not_found() && !e.is_refused());
        assert_eq!(e.to_string(), "HTTP 404 MANIFEST_UNKNOWN: manifest unknown");
        let e = status_error(StatusCode::BAD_REQUEST, br#"{"errors":[{"code":"DENIED"}]}"#);
        assert!(e.is_refused());
        let e = status_error(StatusCode::INTERNAL_SERVER_ERROR, b"\x1b[31mboom\n");
        assert_eq!(e.to_string(), "HTTP 500: [31mboom");
    }
}
