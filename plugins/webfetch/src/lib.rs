//! `WebFetch`: GET a URL over `wasi:http` and return its text, with HTML turned into readable
//! text. Every hop of a redirect is a new request, so the host checks each one against the
//! operator's network grant; by default nothing is granted and every request is refused.
//!
//! The parts that do not touch `wasi:http` (URL checks, redirect resolution, content-type
//! classification, the size limit, HTML to text, error wording) are plain functions with
//! native unit tests; [`fetch`] and its helpers are the thin `wasi:http` layer on top.

use schemars::JsonSchema;
use serde::Deserialize;
use toolhost_sdk::{Capability, Output, Tool, ToolError, export_tool};
use url::{Position, Url};
use wasip2::http::outgoing_handler;
use wasip2::http::types::{ErrorCode, Fields, IncomingResponse, Method, OutgoingRequest, Scheme, http_error_code};
use wasip2::io::streams::StreamError;

/// Bytes of body read when the model gives no `max_bytes`: a long article, but not so much
/// that one page crowds out the rest of the conversation.
const DEFAULT_MAX_BYTES: u64 = 100_000;
/// The largest `max_bytes` accepted (10 MiB): the body is held in memory, and the component's
/// memory is limited by the host.
const MAX_MAX_BYTES: u64 = 10_485_760;
/// Redirects followed before giving up, as browsers and curl do, so a loop cannot spin.
const MAX_REDIRECTS: usize = 10;
/// Sent with every request, so that servers can tell this client apart.
const USER_AGENT: &str = "toolhost-webfetch/0.1";
/// Sent with every request: text is preferred, anything else is accepted (and then refused
/// here with a clear message if it is binary, rather than by the server with a 406).
const ACCEPT: &str = "text/html, text/plain, application/json, */*;q=0.5";
/// Column width HTML is wrapped to: readable, and wide enough that tables rarely overflow.
const TEXT_WIDTH: usize = 100;
/// Largest single read from the body stream; reads stop early at the size limit anyway.
const CHUNK_BYTES: u64 = 64 * 1024;
/// How much of a body without a content type is inspected to decide if it is HTML or binary.
const SNIFF_BYTES: usize = 1024;

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Input {
    /// The URL to fetch: an absolute http:// or https:// URL, e.g.
    /// `https://docs.rs/url/latest/url/`.
    url: String,
    /// The most bytes of the response body to read (default 100000, at most 10485760). A
    /// longer body is cut there and the result says `[truncated at N bytes]`.
    #[schemars(range(min = 1, max = 10_485_760), extend("default" = 100_000))]
    max_bytes: Option<u64>,
    /// Accepted for compatibility with Claude Code, but not used: WebFetch returns the page's
    /// text itself, and you read it to answer the question.
    prompt: Option<String>,
}

struct WebFetch;

impl Tool for WebFetch {
    type Input = Input;
    const NAME: &'static str = "WebFetch";
    const DESCRIPTION: &'static str = "Fetches a URL with an HTTP GET and returns its content as \
text. HTML pages are converted to readable plain text (links are listed as numbered references); \
plain text, JSON, XML and JavaScript are returned as they are. Binary content (images, PDFs, \
archives) is refused.\n\
\n\
- url must be an absolute http:// or https:// URL.\n\
- Redirects are followed (at most 10); the result names the final URL.\n\
- At most max_bytes bytes of the body are read (default 100000); a longer body is cut and \
marked `[truncated at N bytes]`.\n\
- The result starts with the final URL, the HTTP status and the content type, then a blank \
line, then the text. A 4xx or 5xx status is returned as an error that still contains the body.\n\
- The network is sandboxed: a host the operator did not grant is refused.\n\
- A `prompt` field is accepted but not used: read the returned text yourself.";
    const PERMISSION_SUBJECT: Option<&'static str> = Some("/url");
    const READ_ONLY: bool = true;

    fn capabilities() -> Vec<Capability> {
        vec![Capability::Net("*".into())]
    }

    fn validate(input: &Input) -> Result<(), String> {
        parse_target(&input.url)?;
        max_bytes(input.max_bytes)?;
        Ok(())
    }

    fn call(input: Input) -> Result<Output, ToolError> {
        let url = parse_target(&input.url).map_err(ToolError::InvalidInput)?;
        let limit = max_bytes(input.max_bytes).map_err(ToolError::InvalidInput)?;
        fetch(url, limit, input.prompt.is_some())
    }
}

export_tool!(WebFetch);

// ---------------------------------------------------------------------------------------------
// Input checks and redirects (pure).
// ---------------------------------------------------------------------------------------------

/// Parse the model's URL and insist on what WebFetch can fetch: http or https with a host.
/// Credentials in the URL are refused rather than silently dropped (they are never sent).
fn parse_target(input: &str) -> Result<Url, String> {
    let url = Url::parse(input.trim()).map_err(|e| {
        format!("url {input:?} is not a valid absolute URL ({e}); give a full URL such as https://example.com/")
    })?;
    check_fetchable(&url)?;
    Ok(url)
}

/// The checks shared by the model's URL and every redirect target.
fn check_fetchable(url: &Url) -> Result<(), String> {
    if !matches!(url.scheme(), "http" | "https") {
        return Err(format!("url {url} has scheme {:?}; WebFetch fetches only http and https URLs", url.scheme()));
    }
    if url.host_str().is_none_or(str::is_empty) {
        return Err(format!("url {url} has no host"));
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err(format!(
            "url {} contains credentials (user:password@); WebFetch does not send them",
            url.host_str().unwrap_or_default()
        ));
    }
    Ok(())
}

/// The body size limit: `max_bytes` or its default, within 1..=10 MiB.
fn max_bytes(given: Option<u64>) -> Result<u64, String> {
    match given {
        None => Ok(DEFAULT_MAX_BYTES),
        Some(n) if (1..=MAX_MAX_BYTES).contains(&n) => Ok(n),
        Some(n) => Err(format!(
            "max_bytes is {n}; it must be between 1 and {MAX_MAX_BYTES} (or left out for {DEFAULT_MAX_BYTES})"
        )),
    }
}

/// The statuses whose `Location` WebFetch follows. 303 asks for a GET, which is all WebFetch
/// sends anyway; 300 and 304 are not redirects to follow.
fn is_redirect(status: u16) -> bool {
    matches!(status, 301 | 302 | 303 | 307 | 308)
}

/// Where a redirect from `current` to `location` leads: a relative `Location` is resolved
/// against the current URL, and the target must be fetchable like the model's own URL.
fn redirect_target(current: &Url, location: &str) -> Result<Url, String> {
    let next = current
        .join(location.trim())
        .map_err(|e| format!("{current} redirected to {location:?}, which is not a valid URL ({e})"))?;
    check_fetchable(&next).map_err(|e| format!("{current} redirected to an unfetchable URL: {e}"))?;
    Ok(next)
}

/// `host[:port]` of a URL, the way network grants name it (the port only when it is not the
/// scheme's default). IPv6 hosts keep their brackets.
fn authority(url: &Url) -> String {
    let host = url.host_str().unwrap_or_default();
    match url.port() {
        Some(port) => format!("{host}:{port}"),
        None => host.to_string(),
    }
}

/// The path and query to request; the fragment never goes to the server.
fn path_with_query(url: &Url) -> &str {
    &url[Position::BeforePath..Position::AfterQuery]
}

// ---------------------------------------------------------------------------------------------
// Bodies: size limit, classification, decoding (pure).
// ---------------------------------------------------------------------------------------------

/// How a body is turned into text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// Converted to readable text with html2text.
    Html,
    /// Returned as it is.
    Text,
    /// Refused: WebFetch returns text.
    Binary,
}

/// Classify by the declared content type; `None` when there is none (or it is blank), and
/// the body must be sniffed. Parameters such as `charset` are ignored.
fn classify_content_type(content_type: Option<&str>) -> Option<Kind> {
    let essence = content_type?.split(';').next().unwrap_or_default().trim().to_ascii_lowercase();
    if essence.is_empty() {
        return None;
    }
    let (top, sub) = essence.split_once('/').unwrap_or((essence.as_str(), ""));
    // `json`, `ld+json`, `x-ndjson`, `xml`, `atom+xml`, `x-javascript`, `yaml`, `toml`, ...
    let textual_sub = sub.ends_with("json")
        || sub.ends_with("xml")
        || sub.contains("javascript")
        || sub == "ecmascript"
        || sub.ends_with("yaml")
        || sub.ends_with("toml");
    Some(match (top, sub) {
        ("text", "html") | ("application", "xhtml+xml") => Kind::Html,
        ("text", _) => Kind::Text,
        _ if textual_sub => Kind::Text,
        _ => Kind::Binary,
    })
}

/// Guess what a body without a content type is: HTML if it starts with `<` and shows a
/// telltale tag early on, binary if it has NUL bytes early on (as git and ripgrep judge),
/// text otherwise.
fn sniff(body: &[u8]) -> Kind {
    let head = &body[..body.len().min(SNIFF_BYTES)];
    let head = head.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(head);
    let start = head.iter().position(|b| !b.is_ascii_whitespace()).unwrap_or(head.len());
    let head = &head[start..];
    if head.first() == Some(&b'<') {
        let lower = head.to_ascii_lowercase();
        let has = |tag: &[u8]| lower.windows(tag.len()).any(|w| w == tag);
        if has(b"<!doctype html") || has(b"<html") || has(b"<head") || has(b"<body") {
            return Kind::Html;
        }
    }
    if head.contains(&0) { Kind::Binary } else { Kind::Text }
}

/// Read a body in chunks until it ends or `limit` bytes are in; never asks for more than
/// the bytes still wanted. `next_chunk(n)` returns up to `n` bytes, or `None` at the end.
/// Returns the bytes and whether the body was cut: stopping at the limit counts as cut
/// unless the declared `Content-Length` shows the body was exactly that long.
fn read_limited<E>(
    limit: u64,
    content_length: Option<u64>,
    mut next_chunk: impl FnMut(u64) -> Result<Option<Vec<u8>>, E>,
) -> Result<(Vec<u8>, bool), E> {
    let mut body = Vec::new();
    loop {
        let have = body.len() as u64;
        if have >= limit {
            return Ok((body, content_length.is_none_or(|len| len > limit)));
        }
        match next_chunk((limit - have).min(CHUNK_BYTES))? {
            Some(chunk) => body.extend_from_slice(&chunk),
            None => return Ok((body, false)),
        }
    }
}

/// Decode as UTF-8, replacing invalid bytes with U+FFFD. When the body was cut, a character
/// split by the cut is dropped rather than shown as a replacement character.
fn decode(bytes: &[u8], truncated: bool) -> String {
    let bytes = match std::str::from_utf8(bytes) {
        Err(e) if truncated && e.error_len().is_none() => &bytes[..e.valid_up_to()],
        _ => bytes,
    };
    String::from_utf8_lossy(bytes).into_owned()
}

/// Readable text from HTML: headings, paragraphs, lists and tables laid out, links listed as
/// numbered references, wrapped to [`TEXT_WIDTH`]. If html2text gives up, the raw markup is
/// better than nothing, with a note saying why.
fn html_to_text(html: &str) -> String {
    let config = html2text::config::plain().allow_width_overflow();
    match config.string_from_read(html.as_bytes(), TEXT_WIDTH) {
        Ok(text) => text,
        Err(e) => format!("[could not convert the HTML to text ({e}); showing it as it is]\n{html}"),
    }
}

/// The body as text for the model, by `kind` (never [`Kind::Binary`] here).
fn body_text(kind: Kind, bytes: &[u8], truncated: bool) -> String {
    let text = decode(bytes, truncated);
    let mut text = if kind == Kind::Html { html_to_text(&text) } else { text };
    if truncated {
        if !text.ends_with('\n') {
            text.push('\n');
        }
        text.push_str(&format!("[truncated at {} bytes]", bytes.len()));
    }
    text
}

/// What a binary body is refused with.
fn binary_error(content_type: Option<&str>) -> String {
    match content_type {
        Some(ct) => format!("WebFetch returns text; URL served {ct}"),
        None => "WebFetch returns text; URL served a binary body with no content type".to_string(),
    }
}

// ---------------------------------------------------------------------------------------------
// The result's wording (pure).
// ---------------------------------------------------------------------------------------------

/// The standard reason phrase of common statuses (`wasi:http` does not pass the server's on).
fn reason_phrase(status: u16) -> &'static str {
    match status {
        200 => "OK",
        201 => "Created",
        202 => "Accepted",
        203 => "Non-Authoritative Information",
        204 => "No Content",
        206 => "Partial Content",
        300 => "Multiple Choices",
        301 => "Moved Permanently",
        302 => "Found",
        303 => "See Other",
        304 => "Not Modified",
        307 => "Temporary Redirect",
        308 => "Permanent Redirect",
        400 => "Bad Request",
        401 => "Unauthorized",
        402 => "Payment Required",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        406 => "Not Acceptable",
        408 => "Request Timeout",
        409 => "Conflict",
        410 => "Gone",
        413 => "Content Too Large",
        414 => "URI Too Long",
        415 => "Unsupported Media Type",
        418 => "I'm a teapot",
        421 => "Misdirected Request",
        422 => "Unprocessable Content",
        425 => "Too Early",
        426 => "Upgrade Required",
        429 => "Too Many Requests",
        431 => "Request Header Fields Too Large",
        451 => "Unavailable For Legal Reasons",
        500 => "Internal Server Error",
        501 => "Not Implemented",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        504 => "Gateway Timeout",
        505 => "HTTP Version Not Supported",
        _ => "",
    }
}

/// What the model learns about a response before its text.
struct Head<'a> {
    /// The URL the model asked for.
    requested: &'a Url,
    /// The URL that answered, after redirects.
    url: &'a Url,
    /// How many redirects led there.
    redirects: usize,
    status: u16,
    content_type: Option<&'a str>,
    /// Whether the model sent a `prompt` (which WebFetch does not use).
    prompt_given: bool,
}

impl Head<'_> {
    /// `URL:`, `Redirected:` (only after redirects), `Status:`, `Content-Type:` and, when a
    /// prompt was given, a note that it was not used; one per line.
    fn render(&self) -> String {
        let mut out = format!("URL: {}\n", self.url);
        if self.redirects > 0 {
            let s = if self.redirects == 1 { "" } else { "s" };
            out.push_str(&format!("Redirected: {} redirect{s} from {}\n", self.redirects, self.requested));
        }
        let reason = reason_phrase(self.status);
        let status = if reason.is_empty() { self.status.to_string() } else { format!("{} {reason}", self.status) };
        out.push_str(&format!("Status: {status}\n"));
        out.push_str(&format!("Content-Type: {}\n", self.content_type.unwrap_or("(none)")));
        if self.prompt_given {
            out.push_str("Note: the prompt was not used; WebFetch returns the page's text for you to read.\n");
        }
        out
    }
}

/// A `wasi:http` error as a tool error. A request the sandbox refused is `denied`, naming the
/// host; anything else is `failed`, saying what went wrong in words and then the code with its
/// payload, e.g. `timed out connecting to example.com (ConnectionTimeout)`.
fn http_error(code: &ErrorCode, url: &Url) -> ToolError {
    let host = authority(url);
    let name = format!("{code:?}");
    let name = name.strip_prefix("ErrorCode::").unwrap_or(&name);
    let what = match code {
        ErrorCode::HttpRequestDenied => {
            return ToolError::Denied(format!("the sandbox refused the request to {host}: no network grant covers it"));
        }
        ErrorCode::DestinationIpProhibited => {
            return ToolError::Denied(format!("the sandbox refused to connect to the address of {host} ({name})"));
        }
        ErrorCode::DnsTimeout | ErrorCode::DnsError(_) => format!("could not resolve {host}"),
        ErrorCode::DestinationNotFound => format!("{host} was not found"),
        ErrorCode::DestinationUnavailable | ErrorCode::DestinationIpUnroutable => {
            format!("{host} is unreachable")
        }
        ErrorCode::ConnectionRefused => format!("{host} refused the connection"),
        ErrorCode::ConnectionTerminated => format!("{host} closed the connection"),
        ErrorCode::ConnectionTimeout => format!("timed out connecting to {host}"),
        ErrorCode::ConnectionReadTimeout | ErrorCode::HttpResponseTimeout => {
            format!("timed out waiting for {host} to respond")
        }
        ErrorCode::ConnectionWriteTimeout => format!("timed out sending the request to {host}"),
        ErrorCode::ConnectionLimitReached => "too many connections are open".to_string(),
        ErrorCode::TlsProtocolError | ErrorCode::TlsAlertReceived(_) => format!("TLS with {host} failed"),
        ErrorCode::TlsCertificateError => format!("the TLS certificate of {host} was not accepted"),
        ErrorCode::HttpResponseBodySize(_) => {
            "the response body is larger than the sandbox allows (try a smaller max_bytes)".to_string()
        }
        ErrorCode::HttpResponseIncomplete => format!("{host} sent an incomplete response"),
        _ => format!("the request to {host} failed"),
    };
    ToolError::Failed(format!("fetching {url}: {what} ({name})"))
}

// ---------------------------------------------------------------------------------------------
// wasi:http.
// ---------------------------------------------------------------------------------------------

/// GET `url`, following redirects, and turn the final response into the tool's result.
fn fetch(requested: Url, limit: u64, prompt_given: bool) -> Result<Output, ToolError> {
    let mut url = requested.clone();
    let mut redirects = 0;
    let response = loop {
        let response = send(&url)?;
        let status = response.status();
        let location = header(&response, "location");
        match location {
            Some(location) if is_redirect(status) => {
                if redirects == MAX_REDIRECTS {
                    return Err(ToolError::Failed(format!(
                        "stopped after {MAX_REDIRECTS} redirects from {requested}; the last one, from {url}, \
                         led to {location}"
                    )));
                }
                url = redirect_target(&url, &location).map_err(ToolError::Failed)?;
                redirects += 1;
            }
            _ => break response,
        }
    };
    let status = response.status();
    let content_type = header(&response, "content-type");
    let head = Head {
        requested: &requested,
        url: &url,
        redirects,
        status,
        content_type: content_type.as_deref(),
        prompt_given,
    }
    .render();
    let body = response_text(&response, &url, limit, content_type.as_deref());
    if (200..300).contains(&status) {
        return body.map(|text| Output::text(format!("{head}\n{text}")));
    }
    // A 4xx or 5xx page often explains itself: show it, or why it cannot be shown.
    let body = body.unwrap_or_else(|e| format!("[{e}]"));
    Err(ToolError::Failed(format!("HTTP {status} from {url}\n\n{head}\n{body}")))
}

/// The final response's body as text, or why it cannot be shown: a compressed body (never
/// asked for, so never decoded), a binary type, or an error while reading it. A declared
/// binary type is refused before reading, so an image is not downloaded just to be refused.
fn response_text(
    response: &IncomingResponse,
    url: &Url,
    limit: u64,
    content_type: Option<&str>,
) -> Result<String, ToolError> {
    if let Some(coding) = header(response, "content-encoding").filter(|c| !c.eq_ignore_ascii_case("identity")) {
        return Err(ToolError::Failed(format!(
            "{url} sent its body with content-encoding {coding}, which WebFetch does not decode"
        )));
    }
    let declared = classify_content_type(content_type);
    if declared == Some(Kind::Binary) {
        return Err(ToolError::Failed(binary_error(content_type)));
    }
    let content_length = header(response, "content-length").and_then(|v| v.parse().ok());
    let (bytes, truncated) = read_body(response, url, limit, content_length)?;
    match declared.unwrap_or_else(|| sniff(&bytes)) {
        Kind::Binary => Err(ToolError::Failed(binary_error(None))),
        kind => Ok(body_text(kind, &bytes, truncated)),
    }
}

/// Send one GET for `url` and wait for the response head.
fn send(url: &Url) -> Result<IncomingResponse, ToolError> {
    let failed = |what: &str| ToolError::Failed(format!("fetching {url}: {what}"));
    let headers = Fields::from_list(&[
        ("user-agent".to_string(), USER_AGENT.as_bytes().to_vec()),
        ("accept".to_string(), ACCEPT.as_bytes().to_vec()),
    ])
    .map_err(|e| failed(&format!("the request headers were refused ({e:?})")))?;
    let request = OutgoingRequest::new(headers);
    let scheme = if url.scheme() == "https" { Scheme::Https } else { Scheme::Http };
    request.set_method(&Method::Get).map_err(|()| failed("the method GET was refused"))?;
    request.set_scheme(Some(&scheme)).map_err(|()| failed("the scheme was refused"))?;
    request.set_authority(Some(&authority(url))).map_err(|()| failed("the host was refused as an authority"))?;
    request.set_path_with_query(Some(path_with_query(url))).map_err(|()| failed("the path was refused"))?;
    // No request options: the host bounds connecting and reading with the operator's limits.
    let future = outgoing_handler::handle(request, None).map_err(|c| http_error(&c, url))?;
    loop {
        match future.get() {
            Some(Ok(Ok(response))) => return Ok(response),
            Some(Ok(Err(code))) => return Err(http_error(&code, url)),
            Some(Err(())) => return Err(failed("the response was already taken")),
            None => future.subscribe().block(),
        }
    }
}

/// A response header as text (the first value if repeated), lossily decoded.
fn header(response: &IncomingResponse, name: &str) -> Option<String> {
    let values = response.headers().get(name);
    values.first().map(|v| String::from_utf8_lossy(v).trim().to_string())
}

/// Read at most `limit` bytes of the body (see [`read_limited`]). The stream is dropped before
/// the body and the body before the response, as `wasi:http` requires of child resources.
fn read_body(
    response: &IncomingResponse,
    url: &Url,
    limit: u64,
    content_length: Option<u64>,
) -> Result<(Vec<u8>, bool), ToolError> {
    let failed = |what: &str| ToolError::Failed(format!("reading the body of {url}: {what}"));
    let body = response.consume().map_err(|()| failed("it was already consumed"))?;
    let stream = body.stream().map_err(|()| failed("its stream was already taken"))?;
    let read = read_limited(limit, content_length, |want| {
        loop {
            match stream.blocking_read(want) {
                Ok(chunk) if chunk.is_empty() => stream.subscribe().block(),
                Ok(chunk) => return Ok(Some(chunk)),
                Err(StreamError::Closed) => return Ok(None),
                Err(StreamError::LastOperationFailed(e)) => {
                    return Err(match http_error_code(&e) {
                        Some(code) => http_error(&code, url),
                        None => failed(&e.to_debug_string()),
                    });
                }
            }
        }
    });
    drop(stream);
    drop(body);
    read
}

#[cfg(test)]
mod tests {
    use super::*;

    fn url(s: &str) -> Url {
        Url::parse(s).unwrap()
    }

    #[test]
    fn targets_must_be_http_or_https_with_a_host() {
        assert_eq!(parse_target("https://example.com/a?b=1#c").unwrap().as_str(), "https://example.com/a?b=1#c");
        assert_eq!(parse_target("  http://127.0.0.1:8080 ").unwrap().as_str(), "http://127.0.0.1:8080/");
        assert!(parse_target("http://[::1]/").is_ok());
        for (input, needle) in [
            ("example.com", "not a valid absolute URL"),
            ("/relative/path", "not a valid absolute URL"),
            ("", "not a valid absolute URL"),
            ("ftp://example.com/file", "scheme \"ftp\""),
            ("file:///etc/passwd", "scheme \"file\""),
            ("data:text/plain,hi", "scheme \"data\""),
            ("https://", "not a valid absolute URL"),
            ("https://user:secret@example.com/", "credentials"),
        ] {
            let err = parse_target(input).unwrap_err();
            assert!(err.contains(needle), "{input:?}: {err}");
            assert!(!err.contains("secret"), "{input:?}: {err}");
        }
    }

    #[test]
    fn max_bytes_has_a_default_and_bounds() {
        assert_eq!(max_bytes(None), Ok(100_000));
        assert_eq!(max_bytes(Some(1)), Ok(1));
        assert_eq!(max_bytes(Some(10_485_760)), Ok(10_485_760));
        assert!(max_bytes(Some(0)).unwrap_err().contains("between 1 and 10485760"));
        assert!(max_bytes(Some(10_485_761)).is_err());
    }

    #[test]
    fn the_prompt_is_accepted_and_unknown_fields_are_not() {
        let input: Input =
            toolhost_sdk::serde_json::from_str(r#"{"url":"https://a.b/","prompt":"summarise"}"#).unwrap();
        assert_eq!(input.prompt.as_deref(), Some("summarise"));
        assert!(WebFetch::validate(&input).is_ok());
        assert!(toolhost_sdk::serde_json::from_str::<Input>(r#"{"url":"https://a.b/","nope":1}"#).is_err());
        let schema = toolhost_sdk::serde_json::to_value(schemars::schema_for!(Input)).unwrap();
        assert_eq!(schema["properties"]["max_bytes"]["minimum"], 1);
        assert_eq!(schema["properties"]["max_bytes"]["maximum"], 10_485_760);
        assert_eq!(schema["required"], toolhost_sdk::serde_json::json!(["url"]));
    }

    #[test]
    fn redirects_resolve_against_the_current_url() {
        let here = url("https://example.com/docs/a/page.html?x=1");
        let cases = [
            ("https://other.org/x", "https://other.org/x"),
            ("/root", "https://example.com/root"),
            ("next.html", "https://example.com/docs/a/next.html"),
            ("../up", "https://example.com/docs/up"),
            ("?y=2", "https://example.com/docs/a/page.html?y=2"),
            ("//cdn.example.net/f", "https://cdn.example.net/f"),
            (" http://plain.example/ ", "http://plain.example/"),
        ];
        for (location, want) in cases {
            assert_eq!(redirect_target(&here, location).unwrap().as_str(), want, "{location}");
        }
        assert!(redirect_target(&here, "ftp://example.com/").unwrap_err().contains("unfetchable"));
        assert!(redirect_target(&here, "http://[bad").unwrap_err().contains("not a valid URL"));
        assert!(is_redirect(301) && is_redirect(302) && is_redirect(303) && is_redirect(307) && is_redirect(308));
        assert!(!is_redirect(300) && !is_redirect(304) && !is_redirect(200));
    }

    #[test]
    fn authority_and_path_are_what_goes_on_the_wire() {
        assert_eq!(authority(&url("https://example.com/")), "example.com");
        assert_eq!(authority(&url("https://example.com:443/")), "example.com");
        assert_eq!(authority(&url("http://example.com:8080/")), "example.com:8080");
        assert_eq!(authority(&url("http://[::1]:3000/")), "[::1]:3000");
        assert_eq!(path_with_query(&url("https://e.com/a/b?c=d#frag")), "/a/b?c=d");
        assert_eq!(path_with_query(&url("https://e.com")), "/");
    }

    #[test]
    fn content_types_are_classified() {
        let cases = [
            ("text/html", Kind::Html),
            ("text/html; charset=utf-8", Kind::Html),
            ("TEXT/HTML", Kind::Html),
            ("application/xhtml+xml", Kind::Html),
            ("text/plain", Kind::Text),
            ("text/markdown; charset=UTF-8", Kind::Text),
            ("text/css", Kind::Text),
            ("application/json", Kind::Text),
            ("application/ld+json", Kind::Text),
            ("application/x-ndjson", Kind::Text),
            ("application/xml", Kind::Text),
            ("application/atom+xml", Kind::Text),
            ("image/svg+xml", Kind::Text),
            ("application/javascript", Kind::Text),
            ("application/x-javascript", Kind::Text),
            ("application/yaml", Kind::Text),
            ("application/toml", Kind::Text),
            ("image/png", Kind::Binary),
            ("application/pdf", Kind::Binary),
            ("application/octet-stream", Kind::Binary),
            ("application/zip", Kind::Binary),
            ("video/mp4", Kind::Binary),
        ];
        for (ct, want) in cases {
            assert_eq!(classify_content_type(Some(ct)), Some(want), "{ct}");
        }
        assert_eq!(classify_content_type(None), None);
        assert_eq!(classify_content_type(Some("  ")), None);
        assert_eq!(binary_error(Some("image/png")), "WebFetch returns text; URL served image/png");
    }

    #[test]
    fn bodies_without_a_content_type_are_sniffed() {
        assert_eq!(sniff(b"<!DOCTYPE html><p>hi"), Kind::Html);
        assert_eq!(sniff(b"\xEF\xBB\xBF  \n<html><body>x</body></html>"), Kind::Html);
        assert_eq!(sniff(b"<div>no html tag</div>"), Kind::Text);
        assert_eq!(sniff(b"<?xml version=\"1.0\"?><feed/>"), Kind::Text);
        assert_eq!(sniff(b"plain <html> later"), Kind::Text);
        assert_eq!(sniff(b"{\"a\": 1}"), Kind::Text);
        assert_eq!(sniff(b""), Kind::Text);
        assert_eq!(sniff(b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR"), Kind::Binary);
    }

    /// Feed `body` to [`read_limited`] in chunks of at most `chunk` bytes, recording each
    /// request's size.
    fn read(body: &[u8], chunk: usize, limit: u64, content_length: Option<u64>) -> (Vec<u8>, bool, Vec<u64>) {
        let mut rest = body;
        let mut asked = Vec::new();
        let (bytes, cut) = read_limited::<()>(limit, content_length, |want| {
            asked.push(want);
            if rest.is_empty() {
                return Ok(None);
            }
            let n = rest.len().min(chunk).min(want as usize);
            let (now, later) = rest.split_at(n);
            rest = later;
            Ok(Some(now.to_vec()))
        })
        .unwrap();
        (bytes, cut, asked)
    }

    #[test]
    fn reading_stops_at_the_limit_without_asking_for_more() {
        let (bytes, cut, asked) = read(b"0123456789", 3, 5, None);
        assert_eq!(bytes, b"01234");
        assert!(cut);
        assert_eq!(asked, [5, 2]);

        let (bytes, cut, _) = read(b"0123456789", 4, 100, None);
        assert_eq!(bytes, b"0123456789");
        assert!(!cut);

        // Exactly at the limit: cut unless Content-Length says that was all.
        assert!(read(b"01234", 5, 5, None).1);
        assert!(!read(b"01234", 5, 5, Some(5)).1);
        assert!(read(b"0123456", 5, 5, Some(7)).1);

        let (_, _, asked) = read(&vec![b'x'; 200_000], usize::MAX, 150_000, None);
        assert_eq!(asked, [CHUNK_BYTES, CHUNK_BYTES, 150_000 - 2 * CHUNK_BYTES]);
    }

    #[test]
    fn read_errors_pass_through() {
        let got = read_limited(10, None, |_| Err::<Option<Vec<u8>>, _>("boom"));
        assert_eq!(got, Err("boom"));
    }

    #[test]
    fn truncation_is_marked_and_never_splits_a_character() {
        assert_eq!(body_text(Kind::Text, b"hello", false), "hello");
        assert_eq!(body_text(Kind::Text, b"hello", true), "hello\n[truncated at 5 bytes]");
        assert_eq!(body_text(Kind::Text, b"line\n", true), "line\n[truncated at 5 bytes]");
        // "é" is C3 A9: cut after C3.
        assert_eq!(body_text(Kind::Text, b"caf\xC3", true), "caf\n[truncated at 4 bytes]");
        assert_eq!(decode(b"caf\xC3", false), "caf\u{fffd}");
        assert_eq!(decode(b"a\xFFb", true), "a\u{fffd}b");
    }

    #[test]
    fn html_becomes_readable_text() {
        let html = "<!DOCTYPE html><html><head><title>T</title><style>p{color:red}</style>\
                    <script>var hidden = 1;</script></head><body>\
                    <h1>Heading</h1><p>First <b>bold</b> paragraph with a \
                    <a href=\"https://example.com/x\">link</a>.</p>\
                    <ul><li>one</li><li>two</li></ul></body></html>";
        let text = body_text(Kind::Html, html.as_bytes(), false);
        assert!(text.contains("Heading"), "{text}");
        assert!(text.contains("First **bold** paragraph"), "{text}");
        assert!(text.contains("https://example.com/x"), "{text}");
        assert!(text.contains("* one") && text.contains("* two"), "{text}");
        assert!(!text.contains('<'), "{text}");
        assert!(!text.contains("hidden"), "{text}");
        assert!(!text.contains("color:red"), "{text}");
        assert!(text.lines().all(|l| l.chars().count() <= TEXT_WIDTH), "{text}");
    }

    #[test]
    fn html_oddities_do_not_fail() {
        for html in [
            "",
            "<",
            "<html><body><table><tr><td>unclosed",
            "<p>a \u{fffd} b</p>",
            &"<div>".repeat(2000),
            &format!("<table><tr>{}</tr></table>", "<td>cell</td>".repeat(300)),
        ] {
            let _ = html_to_text(html);
        }
        let cut = body_text(Kind::Html, b"<p>Hello wor", true);
        assert!(cut.starts_with("Hello wor"), "{cut}");
        assert!(cut.ends_with("[truncated at 12 bytes]"), "{cut}");
    }

    #[test]
    fn the_head_names_the_url_status_type_and_redirects() {
        let requested = url("http://example.com/old");
        let fin = url("https://example.com/new");
        let head = Head {
            requested: &requested,
            url: &fin,
            redirects: 2,
            status: 200,
            content_type: Some("text/html; charset=utf-8"),
            prompt_given: false,
        };
        assert_eq!(
            head.render(),
            "URL: https://example.com/new\nRedirected: 2 redirects from http://example.com/old\n\
             Status: 200 OK\nContent-Type: text/html; charset=utf-8\n"
        );
        let head =
            Head { requested: &fin, url: &fin, redirects: 0, status: 299, content_type: None, prompt_given: true };
        assert_eq!(
            head.render(),
            "URL: https://example.com/new\nStatus: 299\nContent-Type: (none)\n\
             Note: the prompt was not used; WebFetch returns the page's text for you to read.\n"
        );
    }

    #[test]
    fn http_errors_are_named() {
        let u = url("https://example.com:8443/p");
        assert_eq!(
            http_error(&ErrorCode::HttpRequestDenied, &u),
            ToolError::Denied("the sandbox refused the request to example.com:8443: no network grant covers it".into())
        );
        assert!(matches!(http_error(&ErrorCode::DestinationIpProhibited, &u), ToolError::Denied(_)));
        let cases = [
            (ErrorCode::ConnectionTimeout, "timed out connecting to example.com:8443 (ConnectionTimeout)"),
            (ErrorCode::ConnectionReadTimeout, "(ConnectionReadTimeout)"),
            (ErrorCode::ConnectionLimitReached, "too many connections are open (ConnectionLimitReached)"),
            (ErrorCode::TlsCertificateError, "certificate of example.com:8443 was not accepted (TlsCertificateError)"),
            (ErrorCode::HttpResponseBodySize(Some(123)), "(HttpResponseBodySize(Some(123)))"),
            (ErrorCode::InternalError(Some("x".into())), "failed (InternalError(Some(\"x\")))"),
        ];
        for (code, needle) in cases {
            match http_error(&code, &u) {
                ToolError::Failed(m) => {
                    assert!(m.starts_with("fetching https://example.com:8443/p: "), "{m}");
                    assert!(m.contains(needle), "{m}");
                }
                other => panic!("{code:?}: {other:?}"),
            }
        }
    }

    #[test]
    fn reason_phrases() {
        assert_eq!(reason_phrase(200), "OK");
        assert_eq!(reason_phrase(404), "Not Found");
        assert_eq!(reason_phrase(599), "");
    }
}
