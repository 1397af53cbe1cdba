//! Where pins live: toolhost's state directory, checked like the compile cache (a directory of
//! the effective user that no one else can write), one file per workspace and config file,
//! replaced atomically.

use super::Pins;
use sha2::{Digest, Sha256};
use std::io::Write as _;
use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};
use toolhost::{DirRole, private_dir_for};

/// The state directory's role, for the messages of the private-directory check.
const STATE_ROLE: DirRole = DirRole {
    holds: "pins that decide which config and hook files run unasked",
    fix: "set TOOLHOST_STATE_DIR to a directory of your own that no one else can write",
};

/// Why pins could not be read or written.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PinError {
    /// The state directory cannot be used (not private, cannot be created).
    #[error("toolhost's state directory cannot be used: {0}")]
    StateDir(String),
    /// A pin file could not be read or written.
    #[error("{path}")]
    Io {
        /// The pin file.
        path: PathBuf,
        /// What failed.
        #[source]
        source: std::io::Error,
    },
    /// A pin file is not pins (damaged, or of another format).
    #[error("{path} is not a pin file")]
    Malformed {
        /// The pin file.
        path: PathBuf,
        /// Why it does not parse.
        #[source]
        source: serde_json::Error,
    },
}

/// A private subdirectory `NAME` of toolhost's state directory, created 0700 if missing: for
/// other records the host keeps out of every tool's reach (the audit log's mark).
///
/// # Errors
///
/// [`PinError::StateDir`] as for [`PinStore::open`].
pub fn state_subdir(state_dir: &Path, name: &str) -> Result<PathBuf, PinError> {
    let state = private_dir_for(state_dir, STATE_ROLE).map_err(PinError::StateDir)?;
    private_dir_for(&state.join(name), STATE_ROLE).map_err(PinError::StateDir)
}

/// The name of the pin file of a workspace and config file in `STATE_DIR/pins/`: a digest of
/// both paths.
pub fn file_name(workspace: &Path, config: Option<&Path>) -> String {
    let mut key = Sha256::new();
    key.update(workspace.as_os_str().as_encoded_bytes());
    key.update([0]);
    if let Some(c) = config {
        key.update(c.as_os_str().as_encoded_bytes());
    }
    format!("{}.json", &hex::encode(key.finalize())[..32])
}

/// Pins on disk, in `STATE_DIR/pins/`, one file per workspace and config file.
#[derive(Debug, Clone)]
pub struct PinStore {
    dir: PathBuf,
}

impl PinStore {
    /// The store in state directory `state_dir`, which is created (mode 0700) if missing.
    ///
    /// # Errors
    ///
    /// [`PinError::StateDir`] when the directory (or its `pins/`) is not a directory of the
    /// effective user that no one else can write, or cannot be created.
    pub fn open(state_dir: &Path) -> Result<PinStore, PinError> {
        let state = private_dir_for(state_dir, STATE_ROLE).map_err(PinError::StateDir)?;
        let dir = private_dir_for(&state.join("pins"), STATE_ROLE).map_err(PinError::StateDir)?;
        Ok(PinStore { dir })
    }

    /// The pin file of a workspace and config file (both as [`Pins`] records them).
    pub fn path_for(&self, workspace: &Path, config: Option<&Path>) -> PathBuf {
        self.dir.join(file_name(workspace, config))
    }

    /// The recorded pins, `None` when there are none yet.
    ///
    /// # Errors
    ///
    /// The pin file cannot be read (a link there is not followed) or does not parse.
    pub fn read(&self, workspace: &Path, config: Option<&Path>) -> Result<Option<Pins>, PinError> {
        use std::os::unix::fs::OpenOptionsExt as _;
        let path = self.path_for(workspace, config);
        let flags = rustix::fs::OFlags::NOFOLLOW | rustix::fs::OFlags::NONBLOCK;
        let file = match std::fs::OpenOptions::new().read(true).custom_flags(flags.bits() as i32).open(&path) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(source) => return Err(PinError::Io { path, source }),
        };
        serde_json::from_reader(std::io::BufReader::new(file))
            .map(Some)
            .map_err(|source| PinError::Malformed { path, source })
    }

    /// Record `pins`: written whole to a new private file, then renamed over the old one.
    ///
    /// # Errors
    ///
    /// The file cannot be written.
    pub fn write(&self, pins: &Pins) -> Result<(), PinError> {
        let path = self.path_for(&pins.workspace, pins.config.as_deref());
        let io = |source| PinError::Io { path: path.clone(), source };
        let mut tmp = tempfile::Builder::new()
            .prefix(".pins-")
            .permissions(std::fs::Permissions::from_mode(0o600))
            .tempfile_in(&self.dir)
            .map_err(io)?;
        let body = serde_json::to_vec_pretty(pins).map_err(|e| io(std::io::Error::other(e)))?;
        tmp.write_all(&body).and_then(|()| tmp.as_file().sync_all()).map_err(io)?;
        tmp.persist(&path).map_err(|e| io(e.error))?;
        Ok(())
    }
}
