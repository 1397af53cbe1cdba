//! Files the command line writes and reads for itself: atomically replaced, created new, read
//! only when its own, and the components of a directory.

use anyhow::{Context, Result};
use std::path::{Path, PathBuf};

/// `path` made absolute against the current directory (not the workspace: command-line paths
/// are the user's).
pub(super) fn absolute(path: &Path) -> Result<PathBuf> {
    std::path::absolute(path).with_context(|| format!("cannot resolve {}", path.display()))
}

/// Replace the file at `path` with `bytes`: written to a new file beside it, then renamed over
/// it, so a link a tool planted at `path` is replaced, never followed.
pub fn replace_file(path: &Path, bytes: &[u8]) -> Result<()> {
    let mut file = new_file(path)?;
    std::io::Write::write_all(&mut file, bytes).with_context(|| format!("writing {}", path.display()))?;
    Ok(())
}

/// A new, empty file at `path` (whatever was there, a planted link included, is replaced, not
/// followed), open for writing.
pub fn new_file(path: &Path) -> Result<std::fs::File> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let tmp = tempfile::NamedTempFile::new_in(dir).with_context(|| format!("creating a file in {}", dir.display()))?;
    tmp.persist(path).map_err(|e| anyhow::Error::from(e.error)).with_context(|| format!("writing {}", path.display()))
}

/// Read a file of the host's without following a link at its last component.
pub fn read_own_file(path: &Path) -> Result<String> {
    use std::os::unix::fs::OpenOptionsExt;
    let mut file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(rustix::fs::OFlags::NOFOLLOW.bits() as i32)
        .open(path)
        .with_context(|| format!("reading {} (a link is not followed)", path.display()))?;
    let mut text = String::new();
    std::io::Read::read_to_string(&mut file, &mut text).with_context(|| format!("reading {}", path.display()))?;
    Ok(text)
}

/// Every `*.wasm` file in `dir`, sorted: the tools of a `--tools DIR`.
pub fn wasm_files(dir: &Path) -> Result<Vec<PathBuf>> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .with_context(|| format!("--tools {}", dir.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "wasm") && p.is_file())
        .collect();
    files.sort();
    Ok(files)
}
