//! Where the full text of a cut result is saved (`WORKSPACE/.toolhost/results/` by default),
//! written so that nothing a tool planted can redirect it.
//!
//! The directory usually lies inside a tool's writable grant, so a tool may have replaced
//! `.toolhost`, `results` or a future result's name with a link (relative link targets are
//! allowed by WASI). Every directory below the base is therefore opened with `O_NOFOLLOW` and
//! created with `mkdirat` (which never follows), and each result is a new file created with
//! `O_CREAT | O_EXCL` (which never follows either) under a name no one can guess. A link in the
//! way is a warning and an unsaved result (the model still gets the preview), never a write
//! elsewhere.

use rustix::fs::{Mode, OFlags};
use rustix::io::Errno;
use std::ffi::OsString;
use std::os::fd::OwnedFd;
use std::path::{Component, Path, PathBuf};

/// A directory for saved results: an existing base directory, opened normally, and the
/// components below it, never followed if they are links.
#[derive(Debug, Clone)]
pub(crate) struct SpillDir {
    base: PathBuf,
    below: Vec<OsString>,
}

impl SpillDir {
    /// `dir` as a spill directory. Below the workspace every component is checked; elsewhere
    /// only the last one (the operator chose that place).
    pub(crate) fn new(dir: &Path, workspace: &Path) -> Self {
        let (base, rest) = match dir.strip_prefix(workspace) {
            Ok(rest) if !rest.as_os_str().is_empty() => (workspace.to_path_buf(), rest.to_path_buf()),
            _ => match (dir.parent(), dir.file_name()) {
                (Some(parent), Some(name)) => (parent.to_path_buf(), PathBuf::from(name)),
                _ => (dir.to_path_buf(), PathBuf::new()),
            },
        };
        let below = rest
            .components()
            .filter_map(|c| match c {
                Component::Normal(n) => Some(n.to_os_string()),
                _ => None,
            })
            .collect();
        SpillDir { base, below }
    }

    /// Save `text` as a new file for the call `id`, and say where.
    pub(crate) fn save(&self, id: &str, text: &str) -> Result<PathBuf, String> {
        let mut path = self.base.clone();
        let mut dir: OwnedFd =
            rustix::fs::open(&self.base, OFlags::DIRECTORY | OFlags::RDONLY | OFlags::CLOEXEC, Mode::empty())
                .map_err(|e| format!("cannot open {}: {e}", path.display()))?;
        for name in &self.below {
            path.push(name);
            match rustix::fs::mkdirat(&dir, name.as_os_str(), Mode::from_raw_mode(0o700)) {
                Ok(()) | Err(Errno::EXIST) => {}
                Err(e) => return Err(format!("cannot create {}: {e}", path.display())),
            }
            dir = rustix::fs::openat(
                &dir,
                name.as_os_str(),
                OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::RDONLY | OFlags::CLOEXEC,
                Mode::empty(),
            )
            .map_err(|e| planted_or(e, &path))?;
        }
        // The id comes from the model: keep only safe characters; the random part makes the
        // name unguessable, so no link can wait for it.
        let safe: String = id
            .chars()
            .take(64)
            .map(|c| if c.is_ascii_alphanumeric() || c == '_' || c == '-' { c } else { '_' })
            .collect();
        let mut random = [0u8; 6];
        getrandom::fill(&mut random).map_err(|e| format!("no random name: {e}"))?;
        let name = format!("{}-{}.txt", if safe.is_empty() { "result" } else { &safe }, hex::encode(random));
        path.push(&name);
        let fd = rustix::fs::openat(
            &dir,
            name.as_str(),
            OFlags::CREATE | OFlags::EXCL | OFlags::WRONLY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::from_raw_mode(0o600),
        )
        .map_err(|e| planted_or(e, &path))?;
        std::io::Write::write_all(&mut std::fs::File::from(fd), text.as_bytes())
            .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
        Ok(path)
    }
}

/// The message for a failed open: a link where a directory or a new file should be is named
/// as such (and logged), anything else as the system error.
fn planted_or(e: Errno, path: &Path) -> String {
    if matches!(e, Errno::LOOP | Errno::NOTDIR | Errno::EXIST | Errno::MLINK) && path.is_symlink() {
        tracing::warn!("{} is a link (planted by a tool?): the full result was not saved there", path.display());
        format!("{} is a link, which toolhost does not follow", path.display())
    } else {
        format!("cannot open {}: {e}", path.display())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn results_are_new_files_beneath_the_workspace() {
        let ws = tempfile::tempdir().unwrap();
        let ws_path = ws.path().canonicalize().unwrap();
        let spill = SpillDir::new(&ws_path.join(".toolhost/results"), &ws_path);
        let a = spill.save("toolu_1", "one").unwrap();
        let b = spill.save("toolu_1", "two").unwrap();
        assert_ne!(a, b, "each save is a new file");
        assert!(a.starts_with(ws_path.join(".toolhost/results")));
        assert_eq!(std::fs::read_to_string(&a).unwrap(), "one");
        assert_eq!(std::fs::read_to_string(&b).unwrap(), "two");
    }

    #[test]
    fn a_planted_link_is_never_followed() {
        let ws = tempfile::tempdir().unwrap();
        let out = tempfile::tempdir().unwrap();
        let ws_path = ws.path().canonicalize().unwrap();
        // `.toolhost` itself replaced by a link to a directory outside the workspace.
        std::os::unix::fs::symlink(out.path(), ws_path.join(".toolhost")).unwrap();
        let spill = SpillDir::new(&ws_path.join(".toolhost/results"), &ws_path);
        let err = spill.save("toolu_1", "secret output").unwrap_err();
        assert!(err.contains("is a link"), "{err}");
        assert_eq!(std::fs::read_dir(out.path()).unwrap().count(), 0, "nothing was written outside");

        // `results` a link, relative this time.
        std::fs::remove_file(ws_path.join(".toolhost")).unwrap();
        std::fs::create_dir(ws_path.join(".toolhost")).unwrap();
        std::os::unix::fs::symlink("../../elsewhere", ws_path.join(".toolhost/results")).unwrap();
        assert!(spill.save("toolu_1", "x").unwrap_err().contains("is a link"));
    }
}
