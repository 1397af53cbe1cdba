//! # The compile cache
//!
//! Compiled components (wasmtime's `.cwasm` serialisation: native code) cached on disk, keyed by
//! the component's sha256 and the engine's compatibility hash, so a second start does not
//! recompile (4 s for a Python tool).
//!
//! Loading an entry runs its bytes as native code, so the cache must not be something a tool
//! (or another user) can write. Three defences:
//!
//! - The directory is created with mode 0700, and an existing one is refused unless it is a
//!   directory owned by the effective user and writable by no one else ([`Cache::open`]).
//! - Every entry ends with a keyed BLAKE3 tag (a MAC) under a 32-byte random key kept in `<cache>/key`
//!   (mode 0600, checked like the directory). The tag covers the entry's file name and its bytes,
//!   so an entry can be neither edited nor moved under another component's name. An entry is
//!   opened without following symbolic links, mapped (read-only, private: one view of the file
//!   the descriptor names, whatever is renamed over the path meanwhile), verified in constant
//!   time, and deserialised from that same view (which wasmtime copies into memory of its own).
//!   Mapping instead of reading saves copying tens of megabytes at every start; the file could
//!   change between the check and the copy only by a write to it in place, which needs this
//!   user's rights, and with them the key's file can be read and any entry forged anyway: no
//!   tool can (the third defence). A bad entry is reported once, compiled again and rewritten.
//! - A tool whose grant includes the cache directory (or a directory inside it) is refused at
//!   load ([`Cache::grant_overlap`]): a tool that could read the key could forge entries.
//!
//! Entry format: `<wasmtime serialisation> ‖ BLAKE3-keyed(key, len(name) as u64 LE ‖ name ‖
//! serialisation)`, where `name` is the entry's file name, `<sha256>-<engine key>.cwasm`.
//! BLAKE3 rather than HMAC-SHA256: an entry of an interpreter is tens of megabytes, checked at
//! every start that loads it; keyed BLAKE3 is a MAC too, several times faster and parallel
//! (35 MB: 18 ms with HMAC-SHA256 on one core here, a few ms with BLAKE3).
//!
//! The cache relies on Unix owners and permission bits.

use crate::GrantError;
use rustix::fs::{Mode, OFlags};
use sha2::{Digest, Sha256};
use std::fs::File;
use std::hash::{Hash, Hasher};
use std::io::{Read, Write};
use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use toolhost_policy::DirGrant;
use wasmtime::Engine;
use wasmtime::component::Component;

/// Length of the key and of an entry's tag (BLAKE3 output).
const KEY_LEN: usize = 32;
const TAG_LEN: usize = 32;

/// The key file's name inside the cache directory.
const KEY_FILE: &str = "key";

/// What to tell the operator when the cache directory cannot be used.
const USE_ANOTHER_DIR: &str = "set TOOLHOST_CACHE_DIR to a directory of your own that no one else can write";

/// The hex sha256 of some bytes.
pub(crate) fn sha256_hex(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

fn engine_key(engine: &Engine) -> String {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    engine.precompile_compatibility_hash().hash(&mut h);
    // The toolhost version is part of the key so that a new build never trusts old artefacts.
    env!("CARGO_PKG_VERSION").hash(&mut h);
    format!("{:016x}", h.finish())
}

/// The file name of the entry for the component with this sha256, compiled by `engine`.
fn entry_name(engine: &Engine, sha: &str) -> String {
    format!("{sha}-{}.cwasm", engine_key(engine))
}

/// The file name of what loading learned about that component (its checked schema, or why
/// it failed to load), under the same key: a new toolhost learns it again.
fn record_name(engine: &Engine, sha: &str) -> String {
    format!("{sha}-{}.load.json", engine_key(engine))
}

/// An open compile cache: a checked directory and the key that authenticates its entries.
#[derive(Clone)]
pub(crate) struct Cache {
    /// Canonical path of the directory.
    dir: PathBuf,
    /// The MAC key read from (or written to) `dir/key`.
    key: [u8; KEY_LEN],
}

impl std::fmt::Debug for Cache {
    // Never print the key: it is all that stands between a planted file and native code.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Cache").field("dir", &self.dir).finish_non_exhaustive()
    }
}

impl Cache {
    /// Open (creating if missing) the cache at `dir`: missing parents are created as usual, `dir`
    /// itself with mode 0700, and the key file with mode 0600 holding 32 random bytes.
    ///
    /// # Errors
    ///
    /// A message saying why the cache cannot be used and what to do, when `dir` cannot be
    /// created, is not a directory, is not owned by the effective user or is writable by its
    /// group or by everyone; or when the key file cannot be created, or is not a 32-byte regular
    /// file owned by the effective user with no group or other permission bits.
    pub(crate) fn open(dir: &Path) -> Result<Cache, String> {
        let canonical = private_dir_for(dir, CACHE_ROLE)?;
        let key = read_or_create_key(&canonical)?;
        Ok(Cache { dir: canonical, key })
    }

    /// [`Cache::open`], reporting a failure with one warning and going on without a cache: a
    /// cache is an optimisation, and every tool still loads without one.
    pub(crate) fn open_or_warn(dir: &Path) -> Option<Cache> {
        Cache::open(dir)
            .inspect_err(|why| {
                tracing::warn!("not using the compile cache: {why} (every tool is compiled at each start)")
            })
            .ok()
    }

    /// The canonical path of the cache directory.
    pub(crate) fn dir(&self) -> &Path {
        &self.dir
    }

    /// A message when a granted directory contains the cache directory or lies inside it: such
    /// a tool could read the key, or replace an entry, and have its own native code run by the
    /// next toolhost that loads it.
    pub(crate) fn grant_overlap(&self, dirs: &[DirGrant]) -> Option<GrantError> {
        grant_overlap(
            &self.dir,
            "toolhost's compile cache (native code toolhost runs, and the key that authenticates it: \
             read or written, a tool could forge an entry)",
            "set TOOLHOST_CACHE_DIR to a directory outside every grant, or narrow the grant (a grant \
             of / cannot leave it out: name the directories the tool needs)",
            dirs,
        )
    }

    /// The tag of the entry called `name` holding `body`. Binding the name stops a valid
    /// entry from being copied over another component's entry.
    fn mac(&self, name: &str, body: &[u8]) -> blake3::Hash {
        let mut mac = blake3::Hasher::new_keyed(&self.key);
        mac.update(&(name.len() as u64).to_le_bytes());
        mac.update(name.as_bytes());
        // On every core: an interpreter's entry is tens of megabytes.
        mac.update_rayon(body);
        mac.finalize()
    }

    /// The component in entry `name`: `Ok(None)` when there is no entry, `Err` (saying why)
    /// when there is one that must not be run or cannot be used.
    fn load(&self, engine: &Engine, name: &str) -> Result<Option<Component>, String> {
        match self.read_entry(name)? {
            Some(body) => deserialize(engine, body.body())
                .map(Some)
                .map_err(|e| format!("cannot use {}: {e:#}", self.dir.join(name).display())),
            None => Ok(None),
        }
    }

    /// The load record of the component with this sha256, if there is a valid one (one that
    /// fails its check is logged and ignored: it is learned again).
    pub(crate) fn read_record(&self, engine: &Engine, sha: &str) -> Option<Vec<u8>> {
        self.read_entry(&record_name(engine, sha))
            .inspect_err(|why| tracing::warn!("compile cache: {why}; loading the tool afresh"))
            .ok()
            .flatten()
            .map(|entry| entry.body().to_vec())
    }

    /// Save the load record of the component with this sha256 (failure only logged).
    pub(crate) fn write_record(&self, engine: &Engine, sha: &str, body: &[u8]) {
        let name = record_name(engine, sha);
        if let Err(e) = self.write_entry(&name, body.to_vec()) {
            tracing::debug!("cannot write cache entry {}: {e}", self.dir.join(&name).display());
        }
    }

    /// The verified entry `name`: `Ok(None)` when there is none, `Err` (saying why) when there
    /// is one that fails its check.
    fn read_entry(&self, name: &str) -> Result<Option<Entry>, String> {
        let path = self.dir.join(name);
        let file = match open_no_follow(&path) {
            Ok(f) => f,
            Err(rustix::io::Errno::NOENT) => return Ok(None),
            Err(rustix::io::Errno::LOOP) => {
                return Err(format!(
                    "{} is a symbolic link, not an entry toolhost wrote; not followed",
                    path.display()
                ));
            }
            Err(e) => return Err(format!("cannot open {}: {e}", path.display())),
        };
        let meta = file.metadata().map_err(|e| format!("cannot stat {}: {e}", path.display()))?;
        if !meta.is_file() {
            return Err(format!("{} is not a regular file", path.display()));
        }
        let entry = Entry::map(&file, meta.len()).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        let bytes = entry.bytes();
        let Some(body_len) = bytes.len().checked_sub(TAG_LEN) else {
            return Err(format!("{} is too short to carry an authentication tag; not run", path.display()));
        };
        let (body, tag) = bytes.split_at(body_len);
        let tag = <[u8; TAG_LEN]>::try_from(tag).map_err(|_| format!("{}: a malformed tag", path.display()))?;
        // `blake3::Hash` compares in constant time.
        if self.mac(name, body) != blake3::Hash::from_bytes(tag) {
            return Err(format!(
                "{} fails its authentication check (modified since toolhost wrote it, or written by \
                 another toolhost or an older version); not run",
                path.display()
            ));
        }
        Ok(Some(entry))
    }

    /// Write `component` as entry `name`: serialised, tagged, written to a new private file in
    /// the cache directory and renamed over the entry, so a concurrent reader sees the old entry
    /// or the new one, never half of one (and a symbolic link in its place is replaced, not
    /// followed).
    fn store(&self, component: &Component, name: &str) -> std::io::Result<()> {
        self.write_entry(name, component.serialize().map_err(|e| std::io::Error::other(e.to_string()))?)
    }

    /// Whether there is an entry for the component with this sha256 made by an engine like
    /// `engine` (not checked: reading it checks it).
    pub(crate) fn has_entry(&self, engine: &Engine, sha: &str) -> bool {
        self.dir.join(entry_name(engine, sha)).symlink_metadata().is_ok_and(|m| m.is_file())
    }

    /// An exclusive lock on entry `name` (a `.lock` file beside it, held until the file is
    /// dropped), so that processes wanting the same entry compile it once: the second waits,
    /// then finds the entry. `None` when the lock cannot be taken (then everyone compiles).
    fn lock_entry(&self, name: &str) -> Option<File> {
        let path = self.dir.join(format!("{name}.lock"));
        let flags = OFlags::RDWR | OFlags::CREATE | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC;
        let file = rustix::fs::open(&path, flags, Mode::from_raw_mode(0o600))
            .inspect_err(|e| tracing::debug!("cannot open {}: {e}", path.display()))
            .ok()?;
        rustix::fs::flock(&file, rustix::fs::FlockOperation::LockExclusive)
            .inspect_err(|e| tracing::debug!("cannot lock {}: {e}", path.display()))
            .ok()?;
        Some(File::from(file))
    }

    /// Write `bytes` as entry `name`, tagged (see [`Cache::store`]).
    fn write_entry(&self, name: &str, mut bytes: Vec<u8>) -> std::io::Result<()> {
        let tag = *self.mac(name, &bytes).as_bytes();
        bytes.extend_from_slice(&tag);
        let mut tmp = private_temp_file(&self.dir, ".entry-")?;
        tmp.write_all(&bytes)?;
        tmp.persist(self.dir.join(name)).map_err(|e| e.error)?;
        Ok(())
    }
}

/// Compile `bytes` and write the entry to the cache when there is one (failure only logged:
/// a cache is an optimisation; an entry that failed its check is replaced this way).
/// One process at a time per entry: under the entry's lock, a process that waited for another
/// reads what that one wrote instead of compiling again.
pub(crate) fn compile_fresh(
    engine: &Engine,
    bytes: &[u8],
    sha: &str,
    cache: Option<&Cache>,
) -> wasmtime::Result<Component> {
    let Some(cache) = cache else { return Component::new(engine, bytes) };
    let name = entry_name(engine, sha);
    let lock = cache.lock_entry(&name);
    if lock.is_some()
        && let Ok(Some(component)) = cache.load(engine, &name)
    {
        return Ok(component);
    }
    let component = Component::new(engine, bytes)?;
    if let Err(e) = cache.store(&component, &name) {
        tracing::debug!("cannot write cache entry {}: {e}", cache.dir.join(&name).display());
    }
    drop(lock);
    Ok(component)
}

/// The component with this sha256 from the cache, when it holds a valid entry made by an
/// engine like `engine` (one that fails its check is reported with one warning and not used).
pub(crate) fn cached(engine: &Engine, sha: &str, cache: Option<&Cache>) -> Option<Component> {
    match cache?.load(engine, &entry_name(engine, sha)) {
        Ok(found) => found,
        Err(why) => {
            tracing::warn!("compile cache: {why}; compiling the component again and rewriting the entry");
            None
        }
    }
}

/// An entry's bytes, mapped read-only and private (see the module's documentation); nothing
/// is mapped for an empty file.
struct Entry {
    ptr: *mut std::ffi::c_void,
    len: usize,
}

// SAFETY: the mapping is read-only and owned by this value alone; it is only read.
#[allow(unsafe_code, reason = "a read-only mapping may be read from any thread")]
unsafe impl Send for Entry {}

impl Entry {
    /// Map `len` bytes of `file` (a regular file, `len` its size).
    #[allow(unsafe_code, reason = "mapping a file is unsafe by nature")]
    fn map(file: &File, len: u64) -> std::io::Result<Entry> {
        let len = usize::try_from(len).map_err(|_| std::io::Error::other("too large to map"))?;
        if len == 0 {
            return Ok(Entry { ptr: std::ptr::null_mut(), len: 0 });
        }
        use rustix::mm::{MapFlags, ProtFlags, mmap};
        // SAFETY: a new mapping at an address the kernel chooses (no existing memory is
        // touched), read-only and private; it lives until `drop` unmaps it, and `bytes` only
        // lends it for the entry's lifetime. The file is this user's, in a directory only
        // this user can write (see the module's documentation for a change in place).
        let ptr = unsafe { mmap(std::ptr::null_mut(), len, ProtFlags::READ, MapFlags::PRIVATE, file, 0) }?;
        Ok(Entry { ptr, len })
    }

    /// The whole entry: body and tag.
    #[allow(unsafe_code, reason = "reading a mapping made by `map`")]
    fn bytes(&self) -> &[u8] {
        if self.len == 0 {
            return &[];
        }
        // SAFETY: `ptr` is a live read-only mapping of `len` bytes (see `map`).
        unsafe { std::slice::from_raw_parts(self.ptr.cast::<u8>(), self.len) }
    }

    /// The body: the entry without its tag (only called on an entry whose tag was checked,
    /// hence at least a tag long).
    fn body(&self) -> &[u8] {
        let bytes = self.bytes();
        &bytes[..bytes.len().saturating_sub(TAG_LEN)]
    }
}

impl Drop for Entry {
    #[allow(unsafe_code, reason = "unmapping the mapping made by `map`")]
    fn drop(&mut self) {
        if self.len > 0 {
            // SAFETY: the mapping made by `map`, unmapped once; no borrow of it outlives `self`.
            let _ = unsafe { rustix::mm::munmap(self.ptr, self.len) };
        }
    }
}

#[allow(unsafe_code, reason = "loading precompiled native code is unsafe by nature")]
fn deserialize(engine: &Engine, bytes: &[u8]) -> wasmtime::Result<Component> {
    // SAFETY: `bytes` are an entry's mapping, read once, and carry a valid keyed BLAKE3 tag under a key that
    // only this user can read (a 0600 file in a directory only this user can write, and no tool
    // may be granted that directory), over this entry's name and these exact bytes: they are what
    // this user's toolhost serialised with `Component::serialize` for this component and an
    // engine with the same compatibility hash. wasmtime checks the header and version again.
    unsafe { Component::deserialize(engine, bytes) }
}

/// A message when a granted directory contains `dir` (a private directory of the host's, canonical)
/// or lies inside it. `what` names the directory and says what a tool could do there, `fix` what
/// to do about it.
pub(crate) fn grant_overlap(
    dir: &Path,
    holds: &'static str,
    fix: &'static str,
    dirs: &[DirGrant],
) -> Option<GrantError> {
    dirs.iter().find_map(|d| {
        // Grants are normalised but may run through a symbolic link; compare real paths.
        let granted = d.path.canonicalize().unwrap_or_else(|_| d.path.clone());
        let inside = if dir.starts_with(&granted) {
            false
        } else if granted.starts_with(dir) {
            true
        } else {
            return None;
        };
        Some(GrantError::ReachesPrivate { granted, private: dir.to_path_buf(), inside, holds, fix })
    })
}

/// What a private directory of the host's holds and how to choose another one, for the
/// messages of [`private_dir_for`].
#[derive(Debug, Clone, Copy)]
pub struct DirRole {
    /// What someone who could write it could plant there ("native code").
    pub holds: &'static str,
    /// What to do instead ("set TOOLHOST_CACHE_DIR to …").
    pub fix: &'static str,
}

/// The compile cache's role (and that of the data kept beside it).
const CACHE_ROLE: DirRole = DirRole { holds: "native code", fix: USE_ANOTHER_DIR };

/// Create `dir` (mode 0700) if it is missing and check it as the compile cache directory is
/// checked: a directory owned by the effective user that no one else can write. Returns its
/// canonical path. For other host data kept beside the cache (the installed components of
/// `toolhost add`), which must be as safe from other users and from tools.
///
/// # Errors
///
/// A message saying why the directory cannot be used and what to do.
pub fn private_dir(dir: &Path) -> Result<PathBuf, String> {
    private_dir_for(dir, CACHE_ROLE)
}

/// [`private_dir`] for a directory with another role (toolhost's state directory): the same
/// checks, with messages that say what it holds and how to choose another.
pub fn private_dir_for(dir: &Path, role: DirRole) -> Result<PathBuf, String> {
    create_private_dir(dir, role)?;
    let fix = role.fix;
    let canonical = dir.canonicalize().map_err(|e| format!("cannot resolve {}: {e}; {fix}", dir.display()))?;
    check_dir(&canonical, role)?;
    Ok(canonical)
}

/// Create `dir` with mode 0700 if it does not exist (its missing parents as usual).
fn create_private_dir(dir: &Path, role: DirRole) -> Result<(), String> {
    if dir.symlink_metadata().is_ok() {
        return Ok(());
    }
    let cannot = |e: std::io::Error| format!("cannot create {}: {e}; {}", dir.display(), role.fix);
    if let Some(parent) = dir.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent).map_err(cannot)?;
    }
    match std::fs::DirBuilder::new().mode(0o700).create(dir) {
        // Another toolhost may have created it meanwhile; `check_dir` judges it either way.
        Err(e) if e.kind() != std::io::ErrorKind::AlreadyExists => Err(cannot(e)),
        _ => Ok(()),
    }
}

/// Refuse a private directory (the cache, the state directory) that someone other than this
/// user could write into.
fn check_dir(dir: &Path, role: DirRole) -> Result<(), String> {
    let DirRole { holds, fix } = role;
    let meta = dir.symlink_metadata().map_err(|e| format!("cannot stat {}: {e}; {fix}", dir.display()))?;
    if !meta.is_dir() {
        return Err(format!("{} is not a directory; {fix}", dir.display()));
    }
    let euid = rustix::process::geteuid().as_raw();
    if meta.uid() != euid {
        return Err(format!(
            "{} belongs to uid {}, not to this user (uid {euid}), who could plant {holds} in it; {fix}",
            dir.display(),
            meta.uid()
        ));
    }
    if meta.mode() & 0o022 != 0 {
        return Err(format!(
            "{} is writable by its group or by everyone (mode {:o}), who could plant {holds} in it; \
             run `chmod go-w {}` or {fix}",
            dir.display(),
            meta.mode() & 0o7777,
            dir.display()
        ));
    }
    Ok(())
}

/// The key in `dir/key`, made (32 random bytes, mode 0600) if there is none.
fn read_or_create_key(dir: &Path) -> Result<[u8; KEY_LEN], String> {
    let path = dir.join(KEY_FILE);
    if let Some(key) = read_key(&path)? {
        return Ok(key);
    }
    let cannot = |e: &dyn std::fmt::Display| format!("cannot create {}: {e}; {USE_ANOTHER_DIR}", path.display());
    let mut key = [0u8; KEY_LEN];
    getrandom::fill(&mut key).map_err(|e| cannot(&e))?;
    // Written whole to a new private file, then linked into place only if no key exists yet
    // (`persist_noclobber`: create-new semantics for the final name), so a toolhost starting
    // at the same moment never reads half a key and never has its key replaced.
    let mut tmp = private_temp_file(dir, ".key-").map_err(|e| cannot(&e))?;
    tmp.write_all(&key).and_then(|()| tmp.as_file().sync_all()).map_err(|e| cannot(&e))?;
    match tmp.persist_noclobber(&path) {
        Ok(_) => Ok(key),
        Err(e) if e.error.kind() == std::io::ErrorKind::AlreadyExists => {
            read_key(&path)?.ok_or_else(|| cannot(&"it vanished while being created"))
        }
        Err(e) => Err(cannot(&e.error)),
    }
}

/// The key in `path`, `None` if there is no such file; an error if it is not a 32-byte regular
/// file of this user's that no one else may read or write.
fn read_key(path: &Path) -> Result<Option<[u8; KEY_LEN]>, String> {
    let fix = format!("delete it so that toolhost makes a new one, or {USE_ANOTHER_DIR}");
    let mut file = match open_no_follow(path) {
        Ok(f) => f,
        Err(rustix::io::Errno::NOENT) => return Ok(None),
        Err(rustix::io::Errno::LOOP) => return Err(format!("{} is a symbolic link; {fix}", path.display())),
        Err(e) => return Err(format!("cannot open {}: {e}; {fix}", path.display())),
    };
    let meta = file.metadata().map_err(|e| format!("cannot stat {}: {e}; {fix}", path.display()))?;
    let euid = rustix::process::geteuid().as_raw();
    if !meta.is_file() || meta.uid() != euid || meta.mode() & 0o077 != 0 || meta.len() != KEY_LEN as u64 {
        return Err(format!(
            "{} is not a private key of this user (wanted a regular file owned by uid {euid}, mode 0600, \
             {KEY_LEN} bytes); {fix}",
            path.display()
        ));
    }
    let mut key = [0u8; KEY_LEN];
    file.read_exact(&mut key).map_err(|e| format!("cannot read {}: {e}; {fix}", path.display()))?;
    Ok(Some(key))
}

/// Open `path` for reading without following a symbolic link in its last component (a link
/// fails with `ELOOP`), and without blocking on a FIFO planted in its place.
fn open_no_follow(path: &Path) -> Result<File, rustix::io::Errno> {
    let flags = OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC;
    rustix::fs::open(path, flags, Mode::empty()).map(File::from)
}

/// A new file in `dir` (created exclusively, mode 0600) that is deleted unless persisted.
fn private_temp_file(dir: &Path, prefix: &str) -> std::io::Result<tempfile::NamedTempFile> {
    tempfile::Builder::new().prefix(prefix).permissions(std::fs::Permissions::from_mode(0o600)).tempfile_in(dir)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What loading does without tiering: the entry if it is valid, else compile and write it.
    fn compile(engine: &Engine, bytes: &[u8], sha: &str, cache: Option<&Cache>) -> wasmtime::Result<Component> {
        match cached(engine, sha, cache) {
            Some(component) => Ok(component),
            None => compile_fresh(engine, bytes, sha, cache),
        }
    }

    /// The smallest component: the binary header alone (no wat parser in this build).
    const EMPTY_COMPONENT: &[u8] = b"\0asm\x0d\x00\x01\x00";

    fn engine() -> Engine {
        Engine::default()
    }

    fn mode(path: &Path) -> u32 {
        std::fs::symlink_metadata(path).unwrap().mode() & 0o7777
    }

    /// A cache in a fresh directory, the engine, and the entry path of `EMPTY_COMPONENT`.
    fn setup() -> (tempfile::TempDir, Cache, Engine, String, PathBuf) {
        let tmp = tempfile::tempdir().unwrap();
        let cache = Cache::open(&tmp.path().join("cache")).unwrap();
        let engine = engine();
        let sha = sha256_hex(EMPTY_COMPONENT);
        let name = entry_name(&engine, &sha);
        let path = cache.dir().join(&name);
        (tmp, cache, engine, sha, path)
    }

    #[test]
    fn a_fresh_dir_is_private_with_a_private_key() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("a").join("cache");
        let cache = Cache::open(&dir).unwrap();
        assert_eq!(cache.dir(), dir.canonicalize().unwrap());
        assert_eq!(mode(&dir), 0o700);
        let key = dir.join(KEY_FILE);
        assert_eq!(mode(&key), 0o600);
        assert_eq!(std::fs::read(&key).unwrap(), cache.key);
        // Opening again reads the same key instead of making a new one.
        assert_eq!(Cache::open(&dir).unwrap().key, cache.key);
    }

    #[test]
    fn a_group_writable_dir_is_refused() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("cache");
        std::fs::create_dir(&dir).unwrap();
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o770)).unwrap();
        let why = Cache::open(&dir).unwrap_err();
        assert!(why.contains("writable by its group") && why.contains("TOOLHOST_CACHE_DIR"), "{why}");
        assert!(!dir.join(KEY_FILE).exists(), "no key is written into a refused directory");
    }

    #[test]
    fn a_foreign_owned_dir_is_refused() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = if rustix::process::geteuid().is_root() {
            // Running as root: give a directory to `nobody`.
            let dir = tmp.path().join("cache");
            std::fs::create_dir(&dir).unwrap();
            std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700)).unwrap();
            std::os::unix::fs::chown(&dir, Some(65534), Some(65534)).unwrap();
            dir
        } else {
            // Not root: `/` belongs to root.
            PathBuf::from("/")
        };
        let why = Cache::open(&dir).unwrap_err();
        assert!(why.contains("not to this user") && why.contains("TOOLHOST_CACHE_DIR"), "{why}");
    }

    #[test]
    fn a_file_is_not_a_cache_dir() {
        let tmp = tempfile::tempdir().unwrap();
        let file = tmp.path().join("cache");
        std::fs::write(&file, "x").unwrap();
        let why = Cache::open(&file).unwrap_err();
        assert!(why.contains("not a directory"), "{why}");
    }

    #[test]
    fn a_readable_key_is_refused() {
        let (tmp, cache, ..) = setup();
        let key = cache.dir().join(KEY_FILE);
        std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o644)).unwrap();
        let why = Cache::open(&tmp.path().join("cache")).unwrap_err();
        assert!(why.contains("not a private key"), "{why}");
        std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o600)).unwrap();
        std::fs::write(&key, [0u8; 31]).unwrap();
        let why = Cache::open(&tmp.path().join("cache")).unwrap_err();
        assert!(why.contains("not a private key"), "a short key: {why}");
    }

    #[test]
    fn a_valid_entry_is_used() {
        let (_tmp, cache, engine, sha, path) = setup();
        compile(&engine, EMPTY_COMPONENT, &sha, Some(&cache)).unwrap();
        assert_eq!(mode(&path), 0o600);
        let name = path.file_name().unwrap().to_str().unwrap();
        assert!(cache.load(&engine, name).unwrap().is_some(), "the entry verifies");
        let before = std::fs::metadata(&path).unwrap();
        compile(&engine, EMPTY_COMPONENT, &sha, Some(&cache)).unwrap();
        // A rewrite is a rename of a new file: a new inode.
        assert_eq!(std::fs::metadata(&path).unwrap().ino(), before.ino(), "the entry was rewritten instead of used");
    }

    #[test]
    fn a_tampered_entry_is_detected_recompiled_and_rewritten() {
        let (_tmp, cache, engine, sha, path) = setup();
        compile(&engine, EMPTY_COMPONENT, &sha, Some(&cache)).unwrap();
        let good = std::fs::read(&path).unwrap();
        let mut bad = good.clone();
        let mid = bad.len() / 2;
        for b in &mut bad[mid - 4..mid + 4] {
            *b ^= 0xff;
        }
        std::fs::write(&path, &bad).unwrap();
        let name = path.file_name().unwrap().to_str().unwrap();
        let why = cache.load(&engine, name).expect_err("a tampered entry is refused");
        assert!(why.contains("authentication"), "{why}");

        compile(&engine, EMPTY_COMPONENT, &sha, Some(&cache)).unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), good, "the entry was rewritten");
        assert!(cache.load(&engine, name).unwrap().is_some());
    }

    #[test]
    fn an_entry_under_another_name_is_refused() {
        let (_tmp, cache, engine, sha, path) = setup();
        compile(&engine, EMPTY_COMPONENT, &sha, Some(&cache)).unwrap();
        let other = entry_name(&engine, &"0".repeat(64));
        std::fs::copy(&path, cache.dir().join(&other)).unwrap();
        let why = cache.load(&engine, &other).expect_err("a valid entry copied under another name");
        // Refused by its authentication (the name is part of what the key signs), not by
        // some other failure on the way.
        assert!(why.contains("authentication"), "{why}");
    }

    #[test]
    fn an_entry_of_another_key_is_refused() {
        let (_tmp, cache, engine, sha, path) = setup();
        compile(&engine, EMPTY_COMPONENT, &sha, Some(&cache)).unwrap();
        let name = path.file_name().unwrap().to_str().unwrap();
        let other = Cache { key: [7; KEY_LEN], ..cache.clone() };
        let why = other.load(&engine, name).expect_err("an entry another key signed");
        assert!(why.contains("authentication"), "{why}");
    }

    #[test]
    fn a_symlinked_entry_is_not_followed() {
        let (tmp, cache, engine, sha, path) = setup();
        // A valid entry elsewhere, reached through a link: still not followed.
        compile(&engine, EMPTY_COMPONENT, &sha, Some(&cache)).unwrap();
        let elsewhere = tmp.path().join("elsewhere.cwasm");
        std::fs::rename(&path, &elsewhere).unwrap();
        std::os::unix::fs::symlink(&elsewhere, &path).unwrap();
        let name = path.file_name().unwrap().to_str().unwrap();
        let why = cache.load(&engine, name).expect_err("a link is refused");
        assert!(why.contains("symbolic link"), "{why}");

        // Compiling replaces the link itself, not its target.
        let target = std::fs::read(&elsewhere).unwrap();
        compile(&engine, EMPTY_COMPONENT, &sha, Some(&cache)).unwrap();
        assert!(std::fs::symlink_metadata(&path).unwrap().is_file());
        assert_eq!(std::fs::read(&elsewhere).unwrap(), target);
        assert!(cache.load(&engine, name).unwrap().is_some());
    }

    #[test]
    fn a_grant_over_the_cache_is_named() {
        let (tmp, cache, ..) = setup();
        let grant = |p: &Path| DirGrant { path: p.to_path_buf(), writable: false };
        let m = cache.grant_overlap(&[grant(tmp.path())]).expect("a grant containing the cache").to_string();
        assert!(m.contains(&cache.dir().display().to_string()) && m.contains("TOOLHOST_CACHE_DIR"), "{m}");
        assert!(cache.grant_overlap(&[grant(cache.dir())]).is_some(), "the cache itself");
        std::fs::create_dir(cache.dir().join("sub")).unwrap();
        assert!(
            matches!(
                cache.grant_overlap(&[grant(&cache.dir().join("sub"))]),
                Some(GrantError::ReachesPrivate { inside: true, .. })
            ),
            "a directory inside it"
        );
        let beside = tmp.path().join("cache-beside");
        std::fs::create_dir(&beside).unwrap();
        assert!(cache.grant_overlap(&[grant(&beside)]).is_none(), "a sibling whose name starts alike");
    }
}
