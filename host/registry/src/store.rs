//! # The component store
//!
//! Installed components, content-addressed: `<cache>/components/<sha256 hex>.wasm`. It lives
//! in the compile cache directory, so it is checked like it (owned by this user, writable by no
//! one else: [`toolhost::private_dir`]) and no tool can be granted it (the runtime refuses a
//! grant that overlaps the cache directory). Nothing here is trusted on its own: a component
//! is read whole, without following a link, and comes out as a [`ToolSource`](toolhost::ToolSource) pinned to the
//! digest asked for (the lock's), which the loader checks before compiling: one sha256 of the
//! bytes per start (13 ms for an 18 MB Python component), not two.
//!
//! ## Example
//!
//! ```
//! use toolhost_registry::Store;
//!
//! let dir = tempfile::tempdir().unwrap();
//! let store = Store::open(&dir.path().join("cache")).unwrap();
//! let digest = store.put(b"\0asm bytes").unwrap();
//! let source = store.source(&digest, "Echo").unwrap();
//! assert_eq!(source.bytes.as_ref(), b"\0asm bytes");
//! assert_eq!(source.expected_sha256.as_deref(), Some(toolhost_registry::digest_hex(&digest)));
//! ```

use crate::{Error, Result, digest_hex, digest_of};
use std::io::{Read as _, Write as _};
use std::os::unix::fs::OpenOptionsExt as _;
use std::path::{Path, PathBuf};

/// The store inside a cache directory.
#[derive(Debug, Clone)]
pub struct Store {
    dir: PathBuf,
}

impl Store {
    /// Open (creating) the store in `cache_dir`, both checked as private directories.
    ///
    /// # Errors
    ///
    /// [`Error::Store`] saying why a directory cannot be used.
    pub fn open(cache_dir: &Path) -> Result<Store> {
        let cache = toolhost::private_dir(cache_dir).map_err(Error::Store)?;
        let dir = toolhost::private_dir(&cache.join("components")).map_err(Error::Store)?;
        Ok(Store { dir })
    }

    /// Where the component with this digest is (or would be) kept.
    pub fn path(&self, digest: &str) -> PathBuf {
        self.dir.join(format!("{}.wasm", digest_hex(digest)))
    }

    /// Keep `bytes`; returns their digest (`sha256:HEX`). Written to a new private file and
    /// renamed into place, so a reader sees all of it or nothing, and a link planted at the
    /// name is replaced, not followed.
    ///
    /// # Errors
    ///
    /// [`Error::Io`] when it cannot be written.
    pub fn put(&self, bytes: &[u8]) -> Result<String> {
        let digest = digest_of(bytes);
        let path = self.path(&digest);
        // Already there, whole and unchanged: nothing to write.
        if self.source(&digest, "").is_ok_and(|s| digest_of(&s.bytes) == digest) {
            return Ok(digest);
        }
        let mut tmp = tempfile::Builder::new()
            .prefix(".component-")
            .tempfile_in(&self.dir)
            .map_err(|e| Error::io(&self.dir, "cannot create a file", e))?;
        tmp.write_all(bytes).map_err(|e| Error::io(tmp.path(), "cannot write", e))?;
        tmp.persist(&path).map_err(|e| Error::io(&path, "cannot write", e.error))?;
        Ok(digest)
    }

    /// The component with this digest, ready to load as `origin`: pinned to the digest, so the
    /// loader refuses it before compiling if the file now holds other bytes.
    ///
    /// # Errors
    ///
    /// [`Error::Store`] when it is missing (naming the command that fetches it) or the digest
    /// is not a sha256 digest, [`Error::Io`] when it cannot be read (a link is not followed).
    pub fn source(&self, digest: &str, origin: &str) -> Result<toolhost::ToolSource> {
        if !crate::is_digest(digest) {
            return Err(Error::Store(format!("{digest:?} is not a sha256 digest (sha256:<64 hex>)")));
        }
        let path = self.path(digest);
        let mut file = match std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(rustix::fs::OFlags::NOFOLLOW.bits() as i32)
            .open(&path)
        {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Err(Error::Store(format!(
                    "{digest} is not in {} (a new machine, or a cleared cache); run `toolhost update` to fetch \
                     what toolhost.lock names",
                    self.dir.display()
                )));
            }
            Err(e) => return Err(Error::io(&path, "cannot open (a link is not followed)", e)),
        };
        let mut bytes = Vec::new();
        file.read_to_end(&mut bytes).map_err(|e| Error::io(&path, "cannot read", e))?;
        Ok(toolhost::ToolSource::bytes(origin.to_string(), bytes).with_sha256(digest_hex(digest)))
    }
}
