//! Path forms used in ceilings and grants.

use std::path::{Component, Path, PathBuf};

/// Normalise `.` and `..` lexically (no file system access, so it works for paths that do not
/// exist yet). `..` never climbs above the root.
pub fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => {
                if !out.pop() {
                    // `..` at the root stays at the root.
                }
                if out.as_os_str().is_empty() && path.is_absolute() {
                    out.push("/");
                }
            }
            other => out.push(other.as_os_str()),
        }
    }
    if out.as_os_str().is_empty() {
        out.push(if path.is_absolute() { "/" } else { "." });
    }
    out
}

/// Resolve a ceiling or grant path: `.` is the workspace, relative paths are relative to the
/// workspace, absolute paths stay; the result is normalised.
pub fn resolve(path: &str, workspace: &Path) -> PathBuf {
    let p = Path::new(path);
    if p.is_absolute() { normalize(p) } else { normalize(&workspace.join(p)) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normalize_table() {
        for (input, want) in
            [("/a/b/../c", "/a/c"), ("/a/./b/", "/a/b"), ("/..", "/"), ("/a/../..", "/"), ("/", "/"), ("a/../..", ".")]
        {
            assert_eq!(normalize(Path::new(input)), PathBuf::from(want), "{input}");
        }
    }

    #[test]
    fn resolve_table() {
        let ws = Path::new("/w/s");
        assert_eq!(resolve(".", ws), PathBuf::from("/w/s"));
        assert_eq!(resolve("src", ws), PathBuf::from("/w/s/src"));
        assert_eq!(resolve("../x", ws), PathBuf::from("/w/x"));
        assert_eq!(resolve("/etc", ws), PathBuf::from("/etc"));
    }
}
