//! # The component store
//!
//! Installed components, content-addressed: `<cache>/components/<sha256 hex>.wasm`. It lives
//! in the compile cache directory, so it is checked like it (owned by this user, writable by no
//! one else: [`toolhost::private_dir`]) and no tool can be granted it (the runtime refuses a
//! grant that overlaps the cache directory). Nothing here is trusted on its own: a component
//! is read whole, without following a link, and its sha256 is checked against the digest the
//! caller asks for (the lock's); the loader checks it again before compiling.
//!
//! ## Example
//!
//! ```
//! use toolhost_registry::Store;
//!
//! let dir = tempfile::tempdir().unwrap();
//! let store = Store::open(&dir.path().join("cache")).unwrap();
//! let digest = store.put(b"\0asm bytes").unwrap();
//! assert_eq!(store.get(&digest).unwrap(), b"\0asm bytes");
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
        if self.get(&digest).is_ok() {
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

    /// The bytes of the component with this digest, checked.
    ///
    /// # Errors
    ///
    /// [`Error::Store`] when it is missing (naming the command that fetches it),
    /// [`Error::DigestMismatch`] when the file holds other bytes (changed since it was written).
    pub fn get(&self, digest: &str) -> Result<Vec<u8>> {
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
        let actual = digest_of(&bytes);
        if actual != digest {
            return Err(Error::DigestMismatch {
                what: path.display().to_string(),
                expected: digest.to_string(),
                actual,
            });
        }
        Ok(bytes)
    }
}
