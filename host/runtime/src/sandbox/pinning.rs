//! Granted directories resolved once, at load: each is canonicalised, must stay inside the
//! real path of every directory it was derived from (the grant entry, the ceiling entry, and the
//! workspace when it was named inside it), and is opened then. Calls get duplicates of that
//! handle (`fsguard/`), so a granted subdirectory replaced by a link later reaches nothing new.

use crate::GrantError;
use crate::sandbox::fsguard::Preopen;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use toolhost_policy::{Capability, DirGrant, Grant, resolve};

/// The preopens of `dirs` (an effective grant's directories, at their lexical paths).
///
/// # Errors
///
/// [`GrantError::LeavesBase`] (naming both paths) when a directory's real path leaves a
/// directory it was named under; the other kinds when it cannot be resolved or opened.
pub(crate) fn pin_dirs(
    dirs: &[DirGrant],
    grant: &Grant,
    ceiling: &[Capability],
    workspace: &Path,
) -> Result<Vec<Preopen>, GrantError> {
    // Every directory a granted one may have been derived from, lexically and really.
    let mut bases: Vec<PathBuf> = grant.fs_read.iter().chain(&grant.fs_write).map(|p| resolve(p, workspace)).collect();
    bases.extend(ceiling.iter().filter_map(|c| match c {
        Capability::FsRead(p) | Capability::FsWrite(p) => Some(resolve(p, workspace)),
        _ => None,
    }));
    bases.push(workspace.to_path_buf());
    let mut preopens = Vec::with_capacity(dirs.len());
    for dir in dirs {
        let real = dir
            .path
            .canonicalize()
            .map_err(|e| GrantError::Unresolvable { path: dir.path.clone(), error: Arc::new(e) })?;
        for base in bases.iter().filter(|b| dir.path.starts_with(b)) {
            let base_real = base.canonicalize().unwrap_or_else(|_| base.clone());
            if !real.starts_with(&base_real) {
                return Err(GrantError::LeavesBase { path: dir.path.clone(), real, base: base_real });
            }
        }
        let guest = dir.path.to_str().ok_or_else(|| GrantError::NotUtf8 { path: dir.path.clone() })?;
        let handle = open_dir(&real).map_err(|e| GrantError::Unopenable { path: real.clone(), error: Arc::new(e) })?;
        preopens.push(Preopen {
            guest: guest.to_string(),
            host: real,
            handle: Arc::new(handle),
            writable: dir.writable,
        });
    }
    Ok(preopens)
}

/// Open a directory without following a link at its last component (the path is canonical:
/// a link there now was planted since it was resolved), as wasmtime-wasi opens preopens.
fn open_dir(path: &Path) -> std::io::Result<std::fs::File> {
    use rustix::fs::OFlags;
    use std::os::unix::fs::OpenOptionsExt;
    let flags = OFlags::DIRECTORY | OFlags::NOFOLLOW;
    std::fs::OpenOptions::new().read(true).custom_flags(flags.bits() as i32).open(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_granted_subdirectory_that_is_a_link_outside_is_refused() {
        let ws = tempfile::tempdir().unwrap();
        let out = tempfile::tempdir().unwrap();
        let ws_path = ws.path().canonicalize().unwrap();
        std::fs::create_dir(ws_path.join("real")).unwrap();
        std::os::unix::fs::symlink(out.path(), ws_path.join("docs")).unwrap();
        std::os::unix::fs::symlink("real", ws_path.join("alias")).unwrap();
        let ceiling = [Capability::FsRead("/".into())];
        let grant = |p: &str| Grant { fs_read: vec![p.into()], ..Grant::none() };
        let dir = |p: &str| DirGrant { path: ws_path.join(p), writable: false };

        let err = pin_dirs(&[dir("docs")], &grant("docs"), &ceiling, &ws_path).unwrap_err();
        let GrantError::LeavesBase { path, real, base } = &err else { panic!("{err:?}") };
        assert_eq!((path, real, base), (&ws_path.join("docs"), &out.path().canonicalize().unwrap(), &ws_path));
        let text = err.to_string();
        assert!(text.contains(&ws_path.join("docs").display().to_string()), "{text}");

        // A link that stays inside is fine: the guest sees the named path, the handle is real.
        let ok = pin_dirs(&[dir("alias")], &grant("alias"), &ceiling, &ws_path).unwrap();
        assert_eq!(ok[0].guest, ws_path.join("alias").display().to_string());
        assert_eq!(ok[0].host, ws_path.join("real"));
    }
}
