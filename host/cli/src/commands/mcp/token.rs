//! The bearer token of `toolhost mcp --http`: every request must carry
//! `Authorization: Bearer TOKEN`. Loopback alone does not keep other local users, or a
//! sandboxed program allowed to open local sockets, away from the tools.
//!
//! Where the token comes from, in this order:
//! - `--token-file FILE`: read from FILE if it exists (it must be a regular file of this user's
//!   that no one else may read or write, never a link); else 32 random bytes, hex-encoded, are
//!   written to a new FILE with mode 0600. The token then stays the same across restarts, so a
//!   client's configuration can keep it.
//! - `TOOLHOST_MCP_TOKEN`: the token itself (nothing is written).
//! - Otherwise a new random token at every start, written with mode 0600 to
//!   `$XDG_RUNTIME_DIR/toolhost/mcp-HOST-PORT.token`, or without `XDG_RUNTIME_DIR` to
//!   `CACHE/mcp-tokens/mcp-HOST-PORT.token` (CACHE: the compile cache directory). The
//!   directory is created with mode 0700 and refused if another user owns it or others may
//!   enter it; a file left there by an earlier server is replaced, never written through.
//!
//! The file is named on stderr at startup (`toolhost mcp: token in FILE`).

use crate::setup;
use anyhow::{Context, Result, bail};
use sha2::{Digest, Sha256};
use std::fs::File;
use std::io::{Read as _, Write as _};
use std::net::SocketAddr;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// Random bytes in a generated token (hex-encoded: 64 characters).
const TOKEN_BYTES: usize = 32;

/// The shortest token accepted from a file or the environment: 128 bits as hex, or more as
/// base64. Anything a person could guess or type from memory is refused.
const MIN_TOKEN_CHARS: usize = 32;

/// The longest token accepted (it travels in every request's headers).
const MAX_TOKEN_CHARS: usize = 1024;

/// The environment variable that gives the token directly.
pub const TOKEN_ENV: &str = "TOOLHOST_MCP_TOKEN";

/// The token in force and where it came from.
pub struct Token {
    /// SHA-256 of the token: requests are compared against this, in constant time.
    digest: [u8; 32],
    /// Where it came from, for the startup line.
    pub source: Source,
}

pub enum Source {
    /// Read from, or generated into, this file.
    File(PathBuf),
    /// `TOOLHOST_MCP_TOKEN`.
    Env,
}

impl std::fmt::Display for Source {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Source::File(path) => write!(f, "token in {}", path.display()),
            Source::Env => write!(f, "token from {TOKEN_ENV}"),
        }
    }
}

impl Token {
    /// The token for a server bound to `bound`: see the module's doc for the order.
    pub fn resolve(token_file: Option<&Path>, bound: SocketAddr) -> Result<Token> {
        if let Some(path) = token_file {
            let secret = match read_token_file(path)? {
                Some(secret) => secret,
                None => create_token_file(path)?,
            };
            return Ok(Token::new(&secret, Source::File(path.to_path_buf())));
        }
        if let Some(value) = std::env::var_os(TOKEN_ENV) {
            let value = value.into_string().map_err(|_| anyhow::anyhow!("{TOKEN_ENV} is not valid UTF-8"))?;
            let secret = check_token(&value).context(TOKEN_ENV)?;
            return Ok(Token::new(&secret, Source::Env));
        }
        let dir = default_dir()?;
        let host = bound.ip().to_string().replace(':', "_");
        let path = dir.join(format!("mcp-{host}-{}.token", bound.port()));
        let secret = generate()?;
        write_private(&path, &secret, Persist::Replace)?;
        Ok(Token::new(&secret, Source::File(path)))
    }

    fn new(secret: &str, source: Source) -> Token {
        Token { digest: Sha256::digest(secret.as_bytes()).into(), source }
    }

    /// Whether an `Authorization` header value is `Bearer TOKEN` with this token. The scheme is
    /// case-insensitive (RFC 9110 §11.1); the token is compared in constant time (as digests,
    /// so neither its content nor its length shows in the timing).
    pub fn accepts(&self, authorization: Option<&[u8]>) -> bool {
        let Some(value) = authorization else { return false };
        let Some((scheme, presented)) = value.split_at_checked(7) else { return false };
        if !scheme.eq_ignore_ascii_case(b"bearer ") {
            return false;
        }
        let presented = presented.trim_ascii();
        let digest: [u8; 32] = Sha256::digest(presented).into();
        let diff = self.digest.iter().zip(digest.iter()).fold(0u8, |acc, (a, b)| acc | (a ^ b));
        std::hint::black_box(diff) == 0
    }
}

/// A new random token: [`TOKEN_BYTES`] bytes from the OS, hex-encoded.
fn generate() -> Result<String> {
    let mut bytes = [0u8; TOKEN_BYTES];
    getrandom::fill(&mut bytes).map_err(|e| anyhow::anyhow!("cannot get random bytes for the token: {e}"))?;
    Ok(hex::encode(bytes))
}

/// A token as given (surrounding whitespace, e.g. a file's final newline, removed), if it is
/// long enough and fits in a header.
fn check_token(value: &str) -> Result<String> {
    let token = value.trim();
    if token.len() < MIN_TOKEN_CHARS || token.len() > MAX_TOKEN_CHARS {
        bail!(
            "the token must be {MIN_TOKEN_CHARS} to {MAX_TOKEN_CHARS} characters long, got {} \
             (e.g. `openssl rand -hex 32`)",
            token.len()
        );
    }
    if !token.bytes().all(|b| b.is_ascii_graphic()) {
        bail!("the token must be printable ASCII without spaces (e.g. `openssl rand -hex 32`)");
    }
    Ok(token.to_string())
}

/// The token in `path`; `None` if there is no such file. A link, a file of another user's or
/// one that others may read or write is refused, not used.
fn read_token_file(path: &Path) -> Result<Option<String>> {
    let shown = path.display();
    let file = match open_no_follow(path) {
        Ok(f) => f,
        Err(rustix::io::Errno::NOENT) => return Ok(None),
        Err(rustix::io::Errno::LOOP) => {
            bail!("--token-file {shown} is a symbolic link; name the file itself")
        }
        Err(e) => bail!("--token-file {shown}: cannot open it: {e}"),
    };
    let meta = file.metadata().with_context(|| format!("--token-file {shown}"))?;
    let euid = rustix::process::geteuid().as_raw();
    if !meta.is_file() {
        bail!("--token-file {shown} is not a regular file");
    }
    if meta.uid() != euid {
        bail!("--token-file {shown} belongs to uid {}, not to this user (uid {euid}); refusing it", meta.uid());
    }
    if meta.mode() & 0o077 != 0 {
        bail!(
            "--token-file {shown} may be read or written by others (mode {:o}); run `chmod 600 {shown}` \
             (or delete it to have a new token generated)",
            meta.mode() & 0o7777
        );
    }
    let mut text = String::new();
    file.take(MAX_TOKEN_CHARS as u64 + 2)
        .read_to_string(&mut text)
        .with_context(|| format!("--token-file {shown}: cannot read it"))?;
    let secret = check_token(&text).with_context(|| format!("--token-file {shown}"))?;
    Ok(Some(secret))
}

/// A new token written to a new file at `path` (its missing directories made, mode 0700); if
/// another process created the file first, the token in it.
fn create_token_file(path: &Path) -> Result<String> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty() && d.symlink_metadata().is_err()) {
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)
            .with_context(|| format!("--token-file {}: cannot create {}", path.display(), dir.display()))?;
    }
    let secret = generate()?;
    match write_private(path, &secret, Persist::New)? {
        true => Ok(secret),
        false => read_token_file(path)?
            .with_context(|| format!("--token-file {}: it vanished while being created", path.display())),
    }
}

enum Persist {
    /// Only if nothing is at the path (create-new semantics); a link there is not followed.
    New,
    /// Over whatever is at the path (a link there is replaced, not followed).
    Replace,
}

/// Write `secret` and a newline to a private (0600) file at `path`: written whole to a new file
/// beside it, then linked or renamed into place. `Ok(false)`: [`Persist::New`] found something
/// at `path`.
fn write_private(path: &Path, secret: &str, persist: Persist) -> Result<bool> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let cannot = || format!("cannot write the token file {}", path.display());
    let mut tmp = tempfile::Builder::new()
        .prefix(".token-")
        .permissions(std::fs::Permissions::from_mode(0o600))
        .tempfile_in(dir)
        .with_context(cannot)?;
    tmp.write_all(format!("{secret}\n").as_bytes()).and_then(|()| tmp.as_file().sync_all()).with_context(cannot)?;
    match persist {
        Persist::New => match tmp.persist_noclobber(path) {
            Ok(_) => Ok(true),
            Err(e) if e.error.kind() == std::io::ErrorKind::AlreadyExists => Ok(false),
            Err(e) => Err(e.error).with_context(cannot),
        },
        Persist::Replace => {
            tmp.persist(path).map_err(|e| e.error).with_context(cannot)?;
            Ok(true)
        }
    }
}

/// `$XDG_RUNTIME_DIR/toolhost`, else `CACHE/mcp-tokens`: created with mode 0700, and refused if
/// it is not a directory of this user's that only this user may enter.
fn default_dir() -> Result<PathBuf> {
    let dir = match std::env::var_os("XDG_RUNTIME_DIR").filter(|d| !d.is_empty()) {
        Some(runtime) => PathBuf::from(runtime).join("toolhost"),
        None => setup::cache_dir()
            .context(
                "no place for the token file: set XDG_RUNTIME_DIR, TOOLHOST_CACHE_DIR or HOME, \
                 or pass --token-file FILE or TOOLHOST_MCP_TOKEN",
            )?
            .join("mcp-tokens"),
    };
    let shown = dir.display();
    if dir.symlink_metadata().is_err() {
        if let Some(parent) = dir.parent().filter(|p| !p.as_os_str().is_empty()) {
            std::fs::create_dir_all(parent).with_context(|| format!("cannot create {}", parent.display()))?;
        }
        match std::fs::DirBuilder::new().mode(0o700).create(&dir) {
            // Another server may have created it meanwhile: judged below either way.
            Err(e) if e.kind() != std::io::ErrorKind::AlreadyExists => {
                return Err(e).with_context(|| format!("cannot create {shown}"));
            }
            _ => {}
        }
    }
    let meta = dir.symlink_metadata().with_context(|| format!("cannot stat {shown}"))?;
    let euid = rustix::process::geteuid().as_raw();
    let fix = "pass --token-file FILE or TOOLHOST_MCP_TOKEN instead";
    if !meta.is_dir() {
        bail!("{shown} is not a directory (a link is not followed); {fix}");
    }
    if meta.uid() != euid {
        bail!("{shown} belongs to uid {}, not to this user (uid {euid}); {fix}", meta.uid());
    }
    if meta.mode() & 0o077 != 0 {
        bail!(
            "{shown} may be entered by others (mode {:o}), who could replace the token file; \
             run `chmod 700 {shown}`, or {fix}",
            meta.mode() & 0o7777
        );
    }
    Ok(dir)
}

/// Open `path` for reading without following a link at its last component (`ELOOP`) and
/// without blocking on a FIFO planted in its place.
fn open_no_follow(path: &Path) -> Result<File, rustix::io::Errno> {
    use rustix::fs::{Mode, OFlags};
    let flags = OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC;
    rustix::fs::open(path, flags, Mode::empty()).map(File::from)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn token(secret: &str) -> Token {
        Token::new(secret, Source::Env)
    }

    #[test]
    fn only_the_exact_bearer_token_is_accepted() {
        let secret = "0123456789abcdef0123456789abcdef";
        let t = token(secret);
        assert!(t.accepts(Some(format!("Bearer {secret}").as_bytes())));
        assert!(t.accepts(Some(format!("bearer {secret}").as_bytes())), "the scheme is case-insensitive");
        assert!(!t.accepts(None));
        assert!(!t.accepts(Some(secret.as_bytes())), "no scheme");
        assert!(!t.accepts(Some(format!("Basic {secret}").as_bytes())));
        assert!(!t.accepts(Some(format!("Bearer {secret}x").as_bytes())));
        assert!(!t.accepts(Some(format!("Bearer {}", &secret[1..]).as_bytes())));
        assert!(!t.accepts(Some(b"Bearer ")));
        assert!(!t.accepts(Some(b"Bear")));
    }

    #[test]
    fn short_or_unprintable_tokens_are_refused() {
        assert!(check_token("short").is_err());
        assert!(check_token(&"a".repeat(31)).is_err());
        assert_eq!(check_token(&format!("{}\n", "a".repeat(32))).unwrap(), "a".repeat(32));
        assert!(check_token(&format!("{} {}", "a".repeat(20), "b".repeat(20))).is_err());
        assert!(check_token(&"a".repeat(MAX_TOKEN_CHARS + 1)).is_err());
    }

    #[test]
    fn a_token_file_is_created_private_then_reused_and_refused_when_others_may_read_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("new/token");
        let first = create_token_file(&path).unwrap();
        assert_eq!(std::fs::symlink_metadata(dir.path().join("new")).unwrap().mode() & 0o777, 0o700);
        assert_eq!(first.len(), 2 * TOKEN_BYTES);
        assert_eq!(std::fs::symlink_metadata(&path).unwrap().mode() & 0o777, 0o600);
        assert_eq!(read_token_file(&path).unwrap().as_deref(), Some(first.as_str()));

        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
        let e = read_token_file(&path).unwrap_err().to_string();
        assert!(e.contains("chmod 600"), "{e}");

        let link = dir.path().join("link");
        std::os::unix::fs::symlink(&path, &link).unwrap();
        let e = read_token_file(&link).unwrap_err().to_string();
        assert!(e.contains("symbolic link"), "{e}");
        // A dangling link is not written through either.
        let dangling = dir.path().join("dangling");
        std::os::unix::fs::symlink(dir.path().join("elsewhere"), &dangling).unwrap();
        assert!(create_token_file(&dangling).is_err());
        assert!(!dir.path().join("elsewhere").exists());
    }
}
