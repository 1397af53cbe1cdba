//! What a rule's pattern is compared with: the kind of a call's subject (a path, a URL, text),
//! and a URL subject as the fetch will see it.

/// How a subject value is compared with patterns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SubjectKind {
    /// A file path (absolute, or relative to the workspace).
    Path,
    /// A URL: patterns match its host.
    Url,
    /// Anything else: exact or `prefix:*`.
    Text,
}

impl SubjectKind {
    /// Guess the kind of a subject from its JSON pointer and value: `http(s)://…` is a URL, a
    /// pointer naming a path or file is a path, the rest is text.
    pub fn infer(pointer: &str, value: &str) -> Self {
        let name = pointer.rsplit('/').next().unwrap_or("");
        let field = name.to_ascii_lowercase();
        let url_field = matches!(field.as_str(), "url" | "uri" | "href")
            || field.ends_with("_url")
            || field.ends_with("-url")
            || name.ends_with("Url");
        if url_field || looks_like_web_url(value) {
            return SubjectKind::Url;
        }
        if field.contains("path") || field.contains("file") || field.contains("dir") {
            SubjectKind::Path
        } else {
            SubjectKind::Text
        }
    }
}

/// Whether `value` starts, as the WHATWG parser reads it, with the scheme `http:` or `https:`:
/// after the spaces and controls it trims and without the tabs and newlines it drops, any case
/// (`http:host`, `http:\\host` and ` HTTP://host` are all web URLs to it).
pub(crate) fn looks_like_web_url(value: &str) -> bool {
    let trimmed = value.trim_matches(|c: char| c <= ' ');
    let scheme: String = trimmed
        .chars()
        .filter(|c| !matches!(c, '\t' | '\n' | '\r'))
        .take_while(|c| *c != ':')
        .take(6)
        .collect::<String>()
        .to_ascii_lowercase();
    (scheme == "http" || scheme == "https")
        && trimmed.chars().filter(|c| !matches!(c, '\t' | '\n' | '\r')).nth(scheme.len()) == Some(':')
}

/// A URL subject as the fetch sees it: parsed by the WHATWG parser (the `url` crate), which
/// trims leading and trailing spaces and controls, drops tabs and newlines, reads `\` as `/`
/// in http(s) URLs, and normalises the host.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UrlSubject {
    /// The URL serialised: what the tool is given, so that it fetches what was judged.
    pub canonical: String,
    /// Its host: a lowercase (punycode) name without a trailing dot, or an IP address.
    pub host: String,
}

impl UrlSubject {
    /// Parse `value` as a URL subject.
    ///
    /// # Errors
    ///
    /// The parser's reason, when it does not parse as an absolute URL with a host.
    pub fn parse(value: &str) -> Result<UrlSubject, String> {
        let url = url::Url::parse(value).map_err(|e| e.to_string())?;
        let host = match url.host() {
            Some(url::Host::Domain(d)) => d.strip_suffix('.').unwrap_or(d).to_string(),
            Some(url::Host::Ipv4(ip)) => ip.to_string(),
            Some(url::Host::Ipv6(ip)) => ip.to_string(),
            None => return Err("it has no host".to_string()),
        };
        if host.is_empty() {
            return Err("it has no host".to_string());
        }
        Ok(UrlSubject { canonical: url.to_string(), host })
    }
}
