//! # Policy files beside a component
//!
//! A component may come with a permission file beside it, the way Wassette keeps them:
//! `NAME.policy.yaml` next to `NAME.wasm` ([`policy_file_path`]). This module reads one into a
//! [`Grant`], the same value a `[tools.NAME] grant = {…}` table of `toolhost.toml` becomes,
//! and accepts nothing such a table could not say. Whoever distributed the component wrote the
//! file, so it is read strictly and bounded: every key it does not know, every value of the
//! wrong type and every permission toolhost cannot enforce exactly is an error naming the key
//! path, the line and the column, never a default and never silently dropped.
//!
//! The format, what each entry becomes and what is refused are documented on
//! [`parse_policy_file`].
//!
//! ## Example
//!
//! ```
//! use std::path::{Path, PathBuf};
//! use toolhost_policy::{Grant, parse_policy_file, policy_file_path};
//!
//! let component = Path::new("tools/weather.wasm");
//! let file = policy_file_path(component).unwrap();
//! assert_eq!(file, PathBuf::from("tools/weather.policy.yaml"));
//!
//! let text = r#"
//! version: "1.0"
//! permissions:
//!   storage:
//!     allow:
//!       - uri: "fs://data/**"
//!         access: [read]
//!   network:
//!     allow:
//!       - host: "api.weather.example"
//! "#;
//! let grant = parse_policy_file(text, &file).unwrap();
//! let toml = Grant { fs_read: vec!["data".into()], net: vec!["api.weather.example".into()], ..Grant::none() };
//! assert_eq!(grant, toml);
//!
//! let e = parse_policy_file("version: \"1.0\"\npermissions:\n  storage:\n    alow: []\n", &file).unwrap_err();
//! assert_eq!(e.to_string(), r#"tools/weather.policy.yaml:4:5: permissions.storage: unknown key "alow" (expected allow or deny)"#);
//! ```

mod error;
mod yaml;

pub use error::{PolicyFileError, PolicyFileProblem};

use crate::config::line_col;
use crate::{Grant, NetPattern};
use serde_saphyr::Spanned;
use std::io::Read;
use std::path::{Path, PathBuf};
use yaml::{Node, to_usize};

/// The largest policy file read, in bytes (64 KiB). A real one is a few hundred bytes; the
/// bound keeps a file from a stranger from costing more than a glance, and is checked before
/// any of it is parsed.
pub const MAX_POLICY_FILE_BYTES: u64 = 64 * 1024;

/// The policy file of a component: `dir/NAME.policy.yaml` for `dir/NAME.wasm`. `None` when the
/// path does not name a `.wasm` file.
///
/// # Examples
///
/// ```
/// use std::path::{Path, PathBuf};
/// use toolhost_policy::policy_file_path;
///
/// assert_eq!(policy_file_path(Path::new("/opt/tools/fetch.wasm")), Some(PathBuf::from("/opt/tools/fetch.policy.yaml")));
/// assert_eq!(policy_file_path(Path::new("fetch.tar.wasm")), Some(PathBuf::from("fetch.tar.policy.yaml")));
/// assert_eq!(policy_file_path(Path::new("fetch")), None);
/// ```
pub fn policy_file_path(component: &Path) -> Option<PathBuf> {
    if component.extension()? != "wasm" {
        return None;
    }
    let mut name = component.file_stem()?.to_os_string();
    name.push(".policy.yaml");
    Some(component.with_file_name(name))
}

/// Read the policy file at `path` (see [`policy_file_path`]) into a [`Grant`]; `Ok(None)` when
/// there is no such file.
///
/// The file must be a regular file (a symlink to one is followed: the file sits beside a
/// component the operator chose, in a directory no tool is granted). Its type is checked
/// before it is opened, so that a FIFO cannot stall the reader, and again on the opened handle;
/// its size is checked before it is read, and no more than [`MAX_POLICY_FILE_BYTES`] (plus one,
/// to notice a file that grew) is ever read.
///
/// # Errors
///
/// A file that cannot be read, is not a regular file, is larger than
/// [`MAX_POLICY_FILE_BYTES`] or is not UTF-8, and every error of [`parse_policy_file`].
pub fn read_policy_file(path: &Path) -> Result<Option<Grant>, PolicyFileError> {
    let unreadable = |e: std::io::Error| PolicyFileError {
        path: path.to_path_buf(),
        line: 0,
        column: 0,
        what: PolicyFileProblem::Unreadable,
        source: Some(e),
    };
    let whole = |what| PolicyFileError { path: path.to_path_buf(), line: 0, column: 0, what, source: None };
    let check = |meta: &std::fs::Metadata| {
        if !meta.is_file() {
            return Err(whole(PolicyFileProblem::NotRegularFile { kind: file_kind(&meta.file_type()) }));
        }
        if meta.len() > MAX_POLICY_FILE_BYTES {
            return Err(whole(PolicyFileProblem::TooLarge { size: meta.len() }));
        }
        Ok(())
    };

    match std::fs::metadata(path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(unreadable(e)),
        Ok(meta) => check(&meta)?,
    }
    let file = match std::fs::File::open(path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        other => other.map_err(unreadable)?,
    };
    check(&file.metadata().map_err(unreadable)?)?;
    let mut bytes = Vec::new();
    file.take(MAX_POLICY_FILE_BYTES + 1).read_to_end(&mut bytes).map_err(unreadable)?;
    if bytes.len() as u64 > MAX_POLICY_FILE_BYTES {
        return Err(whole(PolicyFileProblem::TooLarge { size: bytes.len() as u64 }));
    }
    let text = String::from_utf8(bytes).map_err(|e| {
        let valid = e.utf8_error().valid_up_to();
        let before = std::str::from_utf8(&e.as_bytes()[..valid]).unwrap_or_default();
        let (line, column) = line_col(before, valid);
        let what = PolicyFileProblem::NotUtf8 { byte: e.as_bytes()[valid] };
        PolicyFileError { line, column, ..whole(what) }
    })?;
    parse_policy_file(&text, path).map(Some)
}

/// Parse a policy file's text into a [`Grant`]. `origin` is the file, for error messages. An
/// empty document (nothing, only comments, `---` or `null`) and a document without
/// `permissions` grant nothing.
///
/// The grant is what the equivalent `[tools.NAME] grant = {…}` table would be: paths as
/// written after `fs://` (relative ones relative to the workspace), host patterns and variable
/// names as written, in the file's order.
///
/// # The format
///
/// Version 1.x of Wassette's policy format (`policy-mcp`, `schema/v1.json`), as far as a grant
/// can express it:
///
/// ```yaml
/// $schema: https://…/policy-v1.0.schema.json   # optional, not used
/// version: "1.0"                 # required in a file with any content; "1." and a number
/// description: "Weather tool"    # optional, not used
/// permissions:                   # optional; without it (or in an empty file) nothing is granted
///   storage:
///     allow:
///       - uri: "fs://data/**"    # → fs_read "data" (workspace-relative)
///         access: [read]
///       - uri: "fs:///var/cache/weather"
///         access: [read, write]  # → fs_write "/var/cache/weather"
///   network:
///     allow:
///       - host: "api.weather.example"   # → net "api.weather.example" (ports 80 and 443)
///       - host: "localhost:8080"        # → net "localhost:8080"
///   environment:
///     allow:
///       - key: "WEATHER_API_KEY"        # → env "WEATHER_API_KEY"
/// ```
///
/// - **`storage.allow`**: `uri` is `fs://` followed by a directory, taken literally (no
///   percent-decoding); a trailing `/**` ("everything under it") is dropped, since a grant of a
///   directory already covers everything under it, and `fs://**` is the workspace. `access` is
///   `[read]` (an `fs_read` entry) or `[read, write]` (an `fs_write` entry). Any other `*`, an
///   empty path, a URI of another scheme, an access word other than `read`/`write`, a word
///   listed twice, an empty list, and `[write]` alone (a writable directory is readable too, so
///   it would grant more than it says) are errors.
/// - **`network.allow`**: `host` is a toolhost network pattern ([`crate::NetPattern`]: `host`,
///   `host:port`, `host:*`, `*.domain`, an IP address, `*`), checked by the same parser as the
///   `net` entries of a TOML grant. A pattern without a port allows only ports 80 and 443. A
///   URL, as Wassette's own examples write one (`https://api.example.com/v1`), names its host
///   and its port or its scheme's (`api.example.com:443`); the path is dropped.
/// - **`environment.allow`**: `key` is a variable name. Like Wassette, no wildcards: a file
///   from a distributor cannot ask for every variable (an operator still can, in
///   `toolhost.toml`).
///
/// Refused with "not supported", because ignoring them would change what the author meant:
/// a non-empty `deny` list under `storage` or `network` (toolhost grants only what is allowed,
/// so dropping a deny would grant more than the file says; `deny: null` and `deny: []` deny
/// nothing and are accepted, as Wassette writes them), `cidr` and `defaults` entries under
/// `network` (a range, or Wassette's built-in host list), and the `runtime`, `resources` and
/// `ipc` sections (set limits in `toolhost.toml`). Anchors, aliases, merge keys, custom tags,
/// more than one document and nesting deeper than 16 levels are refused too.
///
/// # Paths
///
/// A relative path (`fs://data`) is **relative to the workspace**, exactly like a relative
/// path in a TOML grant: the [`Grant`] keeps the path as written and [`crate::effective_grant`]
/// resolves it. `fs:///abs/path` is absolute. This differs from Wassette, which joins a relative
/// path to the component's directory. Either way a tool gets only what its ceiling also allows.
///
/// # Errors
///
/// The first problem found, with its line and column: text over [`MAX_POLICY_FILE_BYTES`],
/// YAML that does not parse, an unknown key at any level, a value of the wrong type, a missing
/// `version`, `uri`, `access`, `host` or `key`, a bad value (see [`PolicyFileProblem`]), and
/// every part of the format that is not supported.
pub fn parse_policy_file(text: &str, origin: &Path) -> Result<Grant, PolicyFileError> {
    let reader = Reader { origin };
    if text.len() as u64 > MAX_POLICY_FILE_BYTES {
        return Err(reader.at(0, 0, PolicyFileProblem::TooLarge { size: text.len() as u64 }));
    }
    let root =
        yaml::parse(text).map_err(|e| reader.at(e.line, e.column, PolicyFileProblem::Syntax { message: e.message }))?;
    match root {
        None => Ok(Grant::none()),
        Some(root) => reader.document(&root),
    }
}

/// A `host` written as a URL (Wassette reads one as its scheme and host: its own examples
/// write `https://rss.nytimes.com/`) as a network pattern: the host with the port the URL
/// names, or its scheme's (`https` 443, `http` 80). The path is no part of a grant.
fn url_pattern(scheme: &str, rest: &str) -> Result<String, String> {
    let default_port = match scheme.to_ascii_lowercase().as_str() {
        "https" => 443,
        "http" => 80,
        other => return Err(format!("a URL of scheme {other:?}: only http and https URLs name a host to reach")),
    };
    let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
    if authority.contains('@') {
        return Err("a URL with a user name: write the host alone".into());
    }
    if authority.is_empty() {
        return Err("a URL without a host".into());
    }
    let has_port = match authority.strip_prefix('[') {
        Some(v6) => v6.contains("]:"),
        None => authority.contains(':'),
    };
    Ok(if has_port { authority.to_string() } else { format!("{authority}:{default_port}") })
}

/// The sections of `permissions` that are refused when they say anything, and why.
const UNSUPPORTED_SECTIONS: [(&str, &str); 3] = [
    ("runtime", "toolhost runs every tool in its own WebAssembly sandbox; there is no runtime to choose or configure"),
    (
        "resources",
        "set a tool's limits in toolhost.toml ([tools.NAME] memory_mib, timeout_ms, fuel), where the operator \
         chooses them",
    ),
    ("ipc", "toolhost grants no inter-process communication"),
];

/// Why a non-empty `deny` list is refused.
const DENY: &str = "a deny list narrows the allow list, but a toolhost grant only allows: ignoring it would grant \
                    more than this file means; remove it and narrow the allow entries instead";

/// Reads a parsed document into a grant, stopping at the first problem.
struct Reader<'a> {
    origin: &'a Path,
}

/// A mapping whose keys were all checked against the ones it may have.
struct Table<'n> {
    node: &'n Spanned<Node>,
    field: String,
    entries: Vec<(&'static str, &'n Spanned<Node>)>,
}

impl<'n> Table<'n> {
    /// The value of `key`, if the mapping has it (a `null` value counts as present).
    fn get(&self, key: &str) -> Option<&'n Spanned<Node>> {
        self.entries.iter().find(|(k, _)| *k == key).map(|(_, v)| *v)
    }

    /// The value of `key` unless it is absent or `null` (which the format allows for every
    /// optional section and list).
    fn present(&self, key: &str) -> Option<&'n Spanned<Node>> {
        self.get(key).filter(|v| !matches!(v.value, Node::Null))
    }
}

impl Reader<'_> {
    fn at(&self, line: usize, column: usize, what: PolicyFileProblem) -> PolicyFileError {
        PolicyFileError { path: self.origin.to_path_buf(), line, column, what, source: None }
    }

    fn error(&self, node: &Spanned<Node>, what: PolicyFileProblem) -> PolicyFileError {
        self.at(to_usize(node.referenced.line()), to_usize(node.referenced.column()), what)
    }

    fn wrong_type(&self, node: &Spanned<Node>, field: &str, expected: &'static str) -> PolicyFileError {
        self.error(
            node,
            PolicyFileProblem::WrongType { field: field.to_string(), expected, got: node.value.describe() },
        )
    }

    /// `node` as a mapping whose keys are all among `known`.
    fn table<'n>(
        &self,
        node: &'n Spanned<Node>,
        field: &str,
        known: &'static [&'static str],
    ) -> Result<Table<'n>, PolicyFileError> {
        let Node::Map(map) = &node.value else { return Err(self.wrong_type(node, field, "a mapping")) };
        let mut entries = Vec::with_capacity(map.len());
        for (key, value) in map {
            let name = match &key.value {
                Node::Str(s) => s.clone(),
                Node::Other(_, text) => text.clone(),
                Node::Null => "null".to_string(),
                Node::Map(_) | Node::Seq(_) => return Err(self.wrong_type(key, field, "a key name")),
            };
            let Some(known) = known.iter().find(|k| **k == name) else {
                let what = PolicyFileProblem::UnknownKey { field: field.to_string(), key: name, expected: known };
                return Err(self.error(key, what));
            };
            entries.push((*known, value));
        }
        Ok(Table { node, field: field.to_string(), entries })
    }

    /// The value of a required `key` of `table`.
    fn required<'n>(&self, table: &Table<'n>, key: &'static str) -> Result<&'n Spanned<Node>, PolicyFileError> {
        table
            .get(key)
            .ok_or_else(|| self.error(table.node, PolicyFileProblem::MissingKey { field: table.field.clone(), key }))
    }

    fn string<'n>(&self, node: &'n Spanned<Node>, field: &str) -> Result<&'n str, PolicyFileError> {
        match &node.value {
            Node::Str(s) => Ok(s),
            _ => Err(self.wrong_type(node, field, "a string")),
        }
    }

    fn list<'n>(&self, node: &'n Spanned<Node>, field: &str) -> Result<&'n [Spanned<Node>], PolicyFileError> {
        match &node.value {
            Node::Seq(items) => Ok(items),
            _ => Err(self.wrong_type(node, field, "a list")),
        }
    }

    fn invalid(&self, node: &Spanned<Node>, field: &str, why: impl Into<String>) -> PolicyFileError {
        self.error(node, PolicyFileProblem::Invalid { field: field.to_string(), why: why.into() })
    }

    fn unsupported(&self, node: &Spanned<Node>, field: &str, why: &'static str) -> PolicyFileError {
        self.error(node, PolicyFileProblem::Unsupported { field: field.to_string(), why })
    }

    fn document(&self, root: &Spanned<Node>) -> Result<Grant, PolicyFileError> {
        // `$schema` names the format's JSON Schema: Wassette's own files and documentation
        // start with it, though the schema itself does not list it.
        let table = self.table(root, "", &["$schema", "version", "description", "permissions"])?;
        let version = self.required(&table, "version")?;
        let given = self.string(version, "version")?;
        let minor = given.strip_prefix("1.").unwrap_or_default();
        if minor.is_empty() || !minor.bytes().all(|b| b.is_ascii_digit()) {
            return Err(self.error(version, PolicyFileProblem::Version { given: given.to_string() }));
        }
        for key in ["$schema", "description"] {
            if let Some(node) = table.present(key) {
                self.string(node, key)?;
            }
        }
        let mut grant = Grant::none();
        if let Some(permissions) = table.present("permissions") {
            self.permissions(permissions, &mut grant)?;
        }
        Ok(grant)
    }

    fn permissions(&self, node: &Spanned<Node>, grant: &mut Grant) -> Result<(), PolicyFileError> {
        let keys = &["storage", "network", "environment", "runtime", "resources", "ipc"];
        let table = self.table(node, "permissions", keys)?;
        for (key, why) in UNSUPPORTED_SECTIONS {
            let Some(section) = table.present(key) else { continue };
            let field = format!("permissions.{key}");
            match &section.value {
                Node::Map(entries) if entries.is_empty() => {}
                Node::Map(_) => return Err(self.unsupported(section, &field, why)),
                _ => return Err(self.wrong_type(section, &field, "a mapping")),
            }
        }
        if let Some(storage) = table.present("storage") {
            for (field, entry) in self.allow_list(storage, "permissions.storage", true)? {
                self.storage_entry(entry, &field, grant)?;
            }
        }
        if let Some(network) = table.present("network") {
            for (field, entry) in self.allow_list(network, "permissions.network", true)? {
                grant.net.push(self.network_entry(entry, &field)?);
            }
        }
        if let Some(environment) = table.present("environment") {
            for (field, entry) in self.allow_list(environment, "permissions.environment", false)? {
                grant.env.push(self.environment_entry(entry, &field)?);
            }
        }
        Ok(())
    }

    /// The `allow` entries of a section, each with its key path. With `deny`, the section may
    /// have a `deny` list too, which must deny nothing.
    fn allow_list<'n>(
        &self,
        node: &'n Spanned<Node>,
        field: &str,
        deny: bool,
    ) -> Result<Vec<(String, &'n Spanned<Node>)>, PolicyFileError> {
        let table = self.table(node, field, if deny { &["allow", "deny"] } else { &["allow"] })?;
        if let Some(list) = table.present("deny") {
            let field = format!("{field}.deny");
            if !self.list(list, &field)?.is_empty() {
                return Err(self.unsupported(list, &field, DENY));
            }
        }
        let Some(allow) = table.present("allow") else { return Ok(Vec::new()) };
        let field = format!("{field}.allow");
        let entries = self.list(allow, &field)?;
        Ok(entries.iter().enumerate().map(|(i, entry)| (format!("{field}[{i}]"), entry)).collect())
    }

    fn storage_entry(&self, node: &Spanned<Node>, field: &str, grant: &mut Grant) -> Result<(), PolicyFileError> {
        let table = self.table(node, field, &["uri", "access"])?;
        let uri = self.required(&table, "uri")?;
        let uri_field = format!("{field}.uri");
        let dir = self.fs_dir(uri, &uri_field)?;

        let access = self.required(&table, "access")?;
        let access_field = format!("{field}.access");
        let words = self.list(access, &access_field)?;
        if words.is_empty() {
            return Err(self.invalid(access, &access_field, "lists no access: write [read] or [read, write]"));
        }
        let (mut read, mut write) = (false, false);
        for (j, word) in words.iter().enumerate() {
            let word_field = format!("{access_field}[{j}]");
            let seen = match self.string(word, &word_field)? {
                "read" => &mut read,
                "write" => &mut write,
                other => {
                    let what = PolicyFileProblem::Access { field: word_field, given: other.to_string() };
                    return Err(self.error(word, what));
                }
            };
            if std::mem::replace(seen, true) {
                return Err(self.invalid(word, &word_field, "listed twice"));
            }
        }
        if !read {
            return Err(self.unsupported(
                access,
                &access_field,
                "write without read: a writable directory is readable too, so this would grant more than it \
                 says; write [read, write]",
            ));
        }
        if write {
            grant.fs_write.push(dir)
        } else {
            grant.fs_read.push(dir)
        }
        Ok(())
    }

    /// The directory an `fs://` URI names, as a grant path.
    fn fs_dir(&self, node: &Spanned<Node>, field: &str) -> Result<String, PolicyFileError> {
        let uri = self.string(node, field)?;
        let Some(rest) = uri.strip_prefix("fs://") else {
            return Err(self.error(node, PolicyFileProblem::NotFsUri { field: field.to_string(), given: uri.into() }));
        };
        // `/**` is "everything under the directory", which is what granting the directory
        // means already.
        let dir = match rest.strip_suffix("**") {
            Some("") => ".",
            Some("/") => "/",
            Some(d) if d.ends_with('/') => &d[..d.len() - 1],
            _ => rest,
        };
        if dir.is_empty() {
            let why = format!("{uri:?} names no directory: fs://. is the workspace, fs:///PATH an absolute path");
            return Err(self.invalid(node, field, why));
        }
        if dir.contains('*') {
            let why = format!(
                "{uri:?}: a grant is a whole directory, so the only wildcard is a trailing /** (fs://DIR/**, \
                 everything under DIR)"
            );
            return Err(self.invalid(node, field, why));
        }
        if dir.contains('\0') {
            return Err(self.invalid(node, field, format!("{uri:?}: a path has no NUL characters")));
        }
        Ok(dir.to_string())
    }

    fn network_entry(&self, node: &Spanned<Node>, field: &str) -> Result<String, PolicyFileError> {
        let table = self.table(node, field, &["host", "cidr", "defaults"])?;
        if table.entries.len() > 1 {
            let (key, value) = table.entries[1];
            let first = table.entries[0].0;
            let why = format!("an entry has one of host, cidr or defaults, not both {first} and {key}");
            return Err(self.invalid(value, field, why));
        }
        if let Some(cidr) = table.get("cidr") {
            let why = "a CIDR range: name each host or address instead (host: \"10.0.0.5:443\")";
            return Err(self.unsupported(cidr, &format!("{field}.cidr"), why));
        }
        if let Some(defaults) = table.get("defaults") {
            let why = "Wassette's built-in list of common hosts: name the hosts the tool needs";
            return Err(self.unsupported(defaults, &format!("{field}.defaults"), why));
        }
        let host = self.required(&table, "host")?;
        let host_field = format!("{field}.host");
        let written = self.string(host, &host_field)?;
        let pattern = match written.split_once("://") {
            Some((scheme, rest)) => url_pattern(scheme, rest).map_err(|why| self.invalid(host, &host_field, why))?,
            None => written.to_string(),
        };
        // The same parser as a TOML grant's `net` entries (`Grant::pattern_errors`).
        if let Err(e) = pattern.parse::<NetPattern>() {
            return Err(self.invalid(host, &host_field, e.to_string()));
        }
        Ok(pattern)
    }

    fn environment_entry(&self, node: &Spanned<Node>, field: &str) -> Result<String, PolicyFileError> {
        let table = self.table(node, field, &["key"])?;
        let key = self.required(&table, "key")?;
        let key_field = format!("{field}.key");
        let name = self.string(key, &key_field)?;
        let why = if name.is_empty() {
            Some("an empty variable name".to_string())
        } else if name.contains('*') {
            Some(format!("{name:?}: no wildcards in a policy file; name each variable"))
        } else if name.contains(['=', '\0']) {
            Some(format!("{name:?} is not a variable name (it has `=` or NUL)"))
        } else {
            None
        };
        match why {
            Some(why) => Err(self.invalid(key, &key_field, why)),
            None => Ok(name.to_string()),
        }
    }
}

/// `:LINE:COLUMN` after a file name, or nothing for an error about the whole file.
fn position(line: usize, column: usize) -> String {
    if line == 0 { String::new() } else { format!(":{line}:{column}") }
}

fn prefix(field: &str) -> String {
    if field.is_empty() { String::new() } else { format!("{field}: ") }
}

/// `a, b or c`.
fn one_of(keys: &[&str]) -> String {
    match keys {
        [] => "none".to_string(),
        [one] => one.to_string(),
        [rest @ .., last] => format!("{} or {last}", rest.join(", ")),
    }
}

/// What a file that is not a regular file is, for [`PolicyFileProblem::NotRegularFile`].
fn file_kind(kind: &std::fs::FileType) -> &'static str {
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if kind.is_fifo() {
            return "a FIFO";
        }
        if kind.is_socket() {
            return "a socket";
        }
        if kind.is_block_device() || kind.is_char_device() {
            return "a device";
        }
    }
    if kind.is_dir() { "a directory" } else { "something else" }
}

#[cfg(test)]
mod tests;
