//! The HTTP fast path: a plain `tools/call` answered on the request's own task, as one JSON
//! body, without rmcp's session worker, its channels, and an event stream per answer (which
//! made a call over HTTP cost about twice one over stdio).
//!
//! "Plain" is checked conservatively, so that the fast path only ever answers requests that
//! rmcp would accept and serve the same way; anything else (any doubt about the `Host` or
//! `Origin`, an `Accept` or `Content-Type` rmcp might read differently, a protocol version
//! header other than the four with the `initialize` handshake, a `progressToken`, request
//! metadata of a newer revision, a parameter it does not know, a session whose client can be
//! asked questions, an unknown session) goes to rmcp, which answers it as before, refusals
//! included. The token and the body limit were checked before either path.

use super::http::{Response, text};
use super::server::{SessionCore, Shared, call_key};
use http_body_util::{BodyExt as _, Full};
use hyper::body::Bytes;
use hyper::http::request::Parts;
use rmcp::model::{ErrorData, NumberOrString, ServerJsonRpcMessage, ServerResult};
use serde::Deserialize;
use serde_json::{Map, Value};
use std::sync::Arc;
use toolhost::CallOptions;

/// The protocol versions whose requests the fast path serves: those with the `initialize`
/// handshake, for which rmcp checks nothing more on a `tools/call` than that it knows them
/// (later revisions add required request metadata and standard headers: rmcp's path).
const VERSIONS: &[&str] = &["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"];

/// What the fast path needs to know of the server's HTTP settings.
pub struct FastPath {
    /// `Host` values accepted (`host:port`, or `host` for any port), as given to rmcp.
    pub allowed_hosts: Vec<String>,
    /// `Origin` values accepted, normalised (`scheme://host:port`), as given to rmcp.
    pub allowed_origins: Vec<String>,
    /// Serving without sessions.
    pub stateless: bool,
}

/// A JSON-RPC message as the fast path reads it: anything else is not plain.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Message {
    jsonrpc: String,
    #[serde(default)]
    id: Option<Value>,
    method: String,
    #[serde(default)]
    params: Option<Value>,
}

/// `tools/call` parameters the fast path serves.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct CallParams {
    name: String,
    #[serde(default)]
    arguments: Option<Map<String, Value>>,
    #[serde(rename = "_meta", default)]
    meta: Option<Map<String, Value>>,
}

/// `notifications/cancelled` parameters.
#[derive(Deserialize)]
struct CancelParams {
    #[serde(rename = "requestId")]
    request_id: Value,
}

/// What the fast path made of a request: an answer, or the request back for rmcp.
pub enum Outcome {
    Answered(Response),
    NotPlain,
}

impl FastPath {
    /// Answer the POST `parts` + `body` if it is a plain `tools/call` (or the cancellation of
    /// one this path is running).
    pub async fn serve(&self, shared: &Arc<Shared>, parts: &Parts, body: &Bytes) -> Outcome {
        if !self.plain_headers(parts) {
            return Outcome::NotPlain;
        }
        let Ok(message) = serde_json::from_slice::<Message>(body) else { return Outcome::NotPlain };
        if message.jsonrpc != "2.0" {
            return Outcome::NotPlain;
        }
        let core = if self.stateless {
            None
        } else {
            let id = parts.headers.get("mcp-session-id").and_then(|v| v.to_str().ok());
            match id.and_then(|id| shared.http_session(id)) {
                Some(core) => Some(core),
                None => return Outcome::NotPlain,
            }
        };
        match (message.method.as_str(), message.id, message.params) {
            ("tools/call", Some(id), Some(params)) => {
                let Some(id) = request_id(&id) else { return Outcome::NotPlain };
                let Ok(params) = serde_json::from_value::<CallParams>(params) else { return Outcome::NotPlain };
                if params.meta.as_ref().is_some_and(|m| !plain_meta(m)) {
                    return Outcome::NotPlain;
                }
                // Stateless: a session of its own, as rmcp gives each request.
                let core = core.unwrap_or_default();
                Outcome::Answered(call(shared, core, id, params).await)
            }
            ("notifications/cancelled", None, Some(params)) => {
                let Some(core) = core else { return Outcome::NotPlain };
                let Ok(params) = serde_json::from_value::<CancelParams>(params) else { return Outcome::NotPlain };
                if core.cancel(&params.request_id.to_string()) {
                    Outcome::Answered(accepted())
                } else {
                    // Maybe one of rmcp's.
                    Outcome::NotPlain
                }
            }
            _ => Outcome::NotPlain,
        }
    }

    /// Whether the headers are ones rmcp would accept for this request as they are (a subset:
    /// the same rules, applied only where they cannot be read two ways).
    fn plain_headers(&self, parts: &Parts) -> bool {
        let headers = &parts.headers;
        let one = |name: &str| {
            let mut all = headers.get_all(name).iter();
            match (all.next(), all.next()) {
                (Some(v), None) => v.to_str().ok(),
                _ => None,
            }
        };
        let Some(host) = one("host") else { return false };
        if !host_allowed(host, &self.allowed_hosts) {
            return false;
        }
        if headers.contains_key(hyper::header::ORIGIN)
            && !one("origin").is_some_and(|o| self.allowed_origins.iter().any(|a| a == o))
        {
            return false;
        }
        if !one("content-type").is_some_and(|t| essence(t).eq_ignore_ascii_case("application/json")) {
            return false;
        }
        let version = headers.get_all("mcp-protocol-version").iter().collect::<Vec<_>>();
        match version.as_slice() {
            [] => {}
            [v] if v.to_str().is_ok_and(|v| VERSIONS.contains(&v)) => {}
            _ => return false,
        }
        accepts(headers, "application/json") && accepts(headers, "text/event-stream")
    }
}

/// Run the call on a task of its own (a client that goes away cancels it, as a
/// `notifications/cancelled` would, rather than dropping it half-way), and answer.
async fn call(shared: &Arc<Shared>, core: Arc<SessionCore>, id: NumberOrString, params: CallParams) -> Response {
    let key = call_key(&id);
    let (serial, cancel) = core.start(&key);
    // Nobody can be asked on this path (sessions whose client could be take rmcp's): an ask is
    // a denial naming the rule to add, as for any client without elicitation.
    let options = CallOptions::new().cancel(cancel.clone());
    let task = {
        let (shared, core, cancel) = (shared.clone(), core.clone(), cancel.clone());
        tokio::spawn(async move { shared.call_tool(&core, params.name, params.arguments, None, cancel, options).await })
    };
    let on_drop = cancel.clone().drop_guard();
    let joined = task.await;
    on_drop.disarm();
    core.end(&key, serial);
    let message = match joined {
        Ok(Ok(result)) => ServerJsonRpcMessage::response(ServerResult::CallToolResult(result), id),
        Ok(Err(error)) => ServerJsonRpcMessage::error(error, Some(id)),
        Err(e) => {
            ServerJsonRpcMessage::error(ErrorData::internal_error(format!("the call failed: {e}"), None), Some(id))
        }
    };
    json(&message)
}

/// The JSON-RPC id as rmcp reads it (an integer or a string), else `None` (rmcp's to judge).
fn request_id(id: &Value) -> Option<NumberOrString> {
    match id {
        Value::String(s) => Some(NumberOrString::String(s.as_str().into())),
        Value::Number(n) => n.as_i64().map(NumberOrString::Number),
        _ => None,
    }
}

/// Request metadata that changes nothing on rmcp's path: no progress token (progress needs an
/// event stream) and nothing of a newer revision.
fn plain_meta(meta: &Map<String, Value>) -> bool {
    !meta.contains_key("progressToken") && !of_a_newer_revision(meta.keys().map(String::as_str))
}

/// Whether request metadata with these keys belongs to a revision after those with the
/// `initialize` handshake (a per-request protocol version, the revision's own keys): rmcp's to
/// judge.
pub fn of_a_newer_revision<'a>(mut keys: impl Iterator<Item = &'a str>) -> bool {
    keys.any(|k| k == "protocolVersion" || k.starts_with("io.modelcontextprotocol/"))
}

/// A media type's essence (before its parameters).
fn essence(value: &str) -> &str {
    value.split_once(';').map_or(value, |(e, _)| e).trim()
}

/// Whether `Accept` lists `media` with a weight above zero, read simply (a quoted parameter
/// anywhere, and the answer is no: rmcp's to judge).
fn accepts(headers: &hyper::HeaderMap, media: &str) -> bool {
    let mut found = false;
    for value in headers.get_all(hyper::header::ACCEPT) {
        let Ok(value) = value.to_str() else { return false };
        if value.contains('"') {
            return false;
        }
        for entry in value.split(',') {
            let mut parts = entry.split(';');
            if !parts.next().is_some_and(|e| e.trim().eq_ignore_ascii_case(media)) {
                continue;
            }
            let zero = parts.any(|p| {
                p.split_once('=').is_some_and(|(k, v)| {
                    k.trim().eq_ignore_ascii_case("q")
                        && v.trim().parse::<f64>().map_or(true, |q| q.is_nan() || q <= 0.0)
                })
            });
            if zero {
                return false;
            }
            found = true;
        }
    }
    found
}

/// rmcp's rule for `Host`, for well-formed values only: an allowed `host:port` matches that
/// host and port, an allowed `host` that host on any port (names compared without brackets,
/// in lower case).
fn host_allowed(host: &str, allowed: &[String]) -> bool {
    let Ok(host) = hyper::http::uri::Authority::try_from(host) else { return false };
    let name = |h: &str| h.trim_matches('[').trim_matches(']').to_ascii_lowercase();
    let (want, port) = (name(host.host()), host.port_u16());
    allowed.iter().any(|a| match hyper::http::uri::Authority::try_from(a.trim()) {
        Ok(a) => name(a.host()) == want && a.port_u16().is_none_or(|p| Some(p) == port),
        Err(_) => false,
    })
}

/// 202 Accepted with no body: a notification taken.
fn accepted() -> Response {
    let mut response = hyper::Response::new(Full::new(Bytes::new()).boxed());
    *response.status_mut() = hyper::StatusCode::ACCEPTED;
    response
}

/// One JSON-RPC message as the whole answer.
fn json(message: &ServerJsonRpcMessage) -> Response {
    let body = serde_json::to_string(message).unwrap_or_else(|e| {
        format!(r#"{{"jsonrpc":"2.0","id":null,"error":{{"code":-32603,"message":"cannot write the answer: {e}"}}}}"#)
    });
    text(hyper::StatusCode::OK, "application/json", body)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&str, &str)]) -> hyper::HeaderMap {
        let mut map = hyper::HeaderMap::new();
        for (k, v) in pairs {
            map.append(hyper::header::HeaderName::from_bytes(k.as_bytes()).unwrap(), v.parse().unwrap());
        }
        map
    }

    #[test]
    fn accept_is_read_as_rmcp_reads_it_or_not_at_all() {
        let both = "application/json, text/event-stream";
        assert!(accepts(&headers(&[("accept", both)]), "application/json"));
        assert!(accepts(&headers(&[("accept", "text/event-stream;q=0.5, Application/JSON")]), "application/json"));
        assert!(!accepts(&headers(&[("accept", "application/json;q=0")]), "application/json"));
        assert!(!accepts(&headers(&[("accept", "application/json;q=0.000")]), "application/json"));
        assert!(!accepts(&headers(&[("accept", r#"application/json;p="a,b""#)]), "application/json"));
        assert!(!accepts(&headers(&[("accept", "*/*")]), "application/json"));
        assert!(!accepts(&headers(&[]), "application/json"));
    }

    #[test]
    fn hosts_match_by_name_and_port() {
        let allowed = vec!["127.0.0.1:8765".to_string(), "localhost:8765".to_string(), "svc".to_string()];
        assert!(host_allowed("127.0.0.1:8765", &allowed));
        assert!(host_allowed("LOCALHOST:8765", &allowed));
        assert!(host_allowed("svc:9000", &allowed));
        assert!(host_allowed("svc", &allowed));
        assert!(!host_allowed("127.0.0.1:8766", &allowed));
        assert!(!host_allowed("127.0.0.1", &allowed));
        assert!(!host_allowed("evil.example:8765", &allowed));
        assert!(!host_allowed("localhost:8765@evil", &allowed));
        assert!(!host_allowed("", &allowed));
    }

    #[test]
    fn meta_of_a_newer_revision_or_with_progress_is_not_plain() {
        let meta = |v: Value| v.as_object().unwrap().clone();
        assert!(plain_meta(&meta(serde_json::json!({"claudecode/toolUseId": "x"}))));
        assert!(!plain_meta(&meta(serde_json::json!({"progressToken": 1}))));
        assert!(!plain_meta(&meta(serde_json::json!({"protocolVersion": "2026-07-28"}))));
        assert!(!plain_meta(&meta(serde_json::json!({"io.modelcontextprotocol/clientInfo": {}}))));
    }

    #[test]
    fn ids_keep_their_type() {
        assert_eq!(call_key(&request_id(&serde_json::json!(1)).unwrap()), "1");
        assert_eq!(call_key(&request_id(&serde_json::json!("1")).unwrap()), "\"1\"");
        assert!(request_id(&serde_json::json!(1.5)).is_none());
        assert!(request_id(&Value::Null).is_none());
    }
}
