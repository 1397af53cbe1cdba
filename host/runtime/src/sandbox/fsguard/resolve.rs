//! Pure path resolution: where an operation on a path beneath a directory lands, links
//! followed as the kernel follows them. No state and no wasmtime: each function asks the file
//! system only (`realpath`, `readlink`, `lstat`), so it is tested on its own.

use std::os::fd::AsRawFd;
use std::path::{Component, Path, PathBuf};

/// The real path of an open descriptor, from procfs (when `procfs`).
pub(super) fn fd_path(file: &std::fs::File, procfs: bool) -> Option<PathBuf> {
    if !procfs {
        return None;
    }
    std::fs::read_link(format!("/proc/self/fd/{}", file.as_raw_fd())).ok()
}

/// `.` and `..` removed lexically (for paths that do not exist yet, where nothing can be
/// canonicalised).
pub(super) fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

/// The real path an operation on `rel` beneath the directory at `dir` reaches: intermediate
/// links always followed, the last one when `follow`. A path that does not exist (yet) keeps
/// its last components as written, under its deepest existing parent's real path.
pub(crate) fn resolve_at(dir: &Path, rel: &str, follow: bool) -> PathBuf {
    let joined = dir.join(rel);
    if follows_last(rel, follow) {
        return follow_final(&joined);
    }
    resolve_unfollowed(&joined)
}

/// Whether the kernel follows a link in the last name of `rel`: when asked to, and also when
/// `rel` ends in `/` or `/.` (or is `.`), whatever was asked, since then the named last
/// component is not the last one the kernel walks. `Path` drops that trailing `.`, so every
/// resolution asks this first.
pub(super) fn follows_last(rel: &str, follow: bool) -> bool {
    follow || matches!(rel.rsplit('/').next(), Some("" | "."))
}

/// Whether `rel` names the directory it is relative to (`.`, `./.`): its real path is the
/// descriptor's, with nothing to resolve.
pub(super) fn names_itself(rel: &str) -> bool {
    Path::new(rel).components().all(|c| c == Component::CurDir)
}

/// Where a link at the real path `link` whose text is `target` leads (followed to the end).
pub(super) fn link_leads_to(link: &Path, target: &Path) -> PathBuf {
    let parent = link.parent().unwrap_or(Path::new("/"));
    resolve_at(parent, &target.to_string_lossy(), true)
}

/// Links followed at most when resolving one path, as the kernel's own limit (`ELOOP`).
pub(super) const MAX_LINKS: usize = 40;

/// Where `path` leads with its last component followed through links, also when the final
/// target does not exist (yet): a create through a dangling link lands at the link's target,
/// so that is the path rules must judge, not the link.
pub(super) fn follow_final(path: &Path) -> PathBuf {
    let mut current = resolve_unfollowed(path);
    for _ in 0..MAX_LINKS {
        if let Ok(real) = std::fs::canonicalize(&current) {
            return real;
        }
        let Ok(target) = std::fs::read_link(&current) else { return current };
        let base = current.parent().map(Path::to_path_buf).unwrap_or_default();
        current = resolve_unfollowed(&base.join(target));
    }
    current
}

/// [`resolve_at`] without following the last component.
pub(super) fn resolve_unfollowed(joined: &Path) -> PathBuf {
    let mut parts: Vec<Component> = joined.components().collect();
    // The last component as written (not followed); before it, the deepest part that exists,
    // physically (`..` after a link goes where the kernel goes), then the rest as written.
    let last = match parts.pop() {
        Some(Component::Normal(name)) => Some(name),
        Some(other) => {
            parts.push(other);
            None
        }
        None => None,
    };
    let mut rest: Vec<Component> = Vec::new();
    while !parts.is_empty() {
        if let Ok(real) = std::fs::canonicalize(parts.iter().collect::<PathBuf>()) {
            let mut out = normalize(&rest.iter().rev().fold(real, |p, c| p.join(c)));
            if let Some(name) = last {
                out.push(name);
            }
            return out;
        }
        rest.extend(parts.pop());
    }
    normalize(joined)
}

/// `rel` split into its parent part and last name, as written, when it names an entry beneath
/// the directory by plain names only (`.` allowed, no `..`, not absolute, the last name a real
/// name): then the entry's real path is its parent's real path joined with the name, unless
/// the name is a link. Anything else (`a/..`, `x/`, `/abs`) is `None`: resolved the long way.
pub(super) fn split_plain(rel: &str) -> Option<(&str, &str)> {
    if rel.starts_with('/') || rel.split('/').any(|c| c == "..") {
        return None;
    }
    let (parent, name) = rel.rsplit_once('/').unwrap_or(("", rel));
    (!name.is_empty() && name != ".").then_some((parent, name))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resolution_follows_links_only_where_the_operation_would() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        std::fs::create_dir(root.join("real")).unwrap();
        std::fs::write(root.join("real/file"), "x").unwrap();
        std::os::unix::fs::symlink("real", root.join("link")).unwrap();
        std::os::unix::fs::symlink("real/file", root.join("flink")).unwrap();
        // Intermediate links are always followed.
        assert_eq!(resolve_at(&root, "link/file", false), root.join("real/file"));
        // The last one only when asked.
        assert_eq!(resolve_at(&root, "flink", true), root.join("real/file"));
        assert_eq!(resolve_at(&root, "flink", false), root.join("flink"));
        // Not there yet: the parent's real path and the name as written.
        assert_eq!(resolve_at(&root, "link/new", true), root.join("real/new"));
        assert_eq!(resolve_at(&root, "link/../real/./x", false), root.join("real/x"));
        // Deeper than what exists: the deepest existing part's real path, then the rest.
        assert_eq!(resolve_at(&root, "link/a/b/c", false), root.join("real/a/b/c"));
        assert_eq!(resolve_at(&root, "link/a/b/c", true), root.join("real/a/b/c"));
    }

    #[test]
    fn a_trailing_slash_or_dot_follows_the_last_link_whatever_was_asked() {
        for rel in ["x/", "x/.", ".", "a/b/"] {
            assert!(follows_last(rel, false), "{rel}");
        }
        for rel in ["x", "a/.b", "a/..x"] {
            assert!(!follows_last(rel, false), "{rel}");
            assert!(follows_last(rel, true), "{rel}");
        }
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        std::fs::create_dir(root.join("real")).unwrap();
        std::os::unix::fs::symlink("real", root.join("link")).unwrap();
        assert_eq!(resolve_at(&root, "link/", false), root.join("real"));
        assert_eq!(resolve_at(&root, "link/.", false), root.join("real"));
    }

    #[test]
    fn a_dangling_link_resolves_where_a_create_through_it_lands() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        std::fs::create_dir(root.join("d")).unwrap();
        std::os::unix::fs::symlink("d/new", root.join("a")).unwrap();
        std::os::unix::fs::symlink("a", root.join("b")).unwrap();
        assert_eq!(resolve_at(&root, "b", true), root.join("d/new"));
        assert_eq!(resolve_at(&root, "b", false), root.join("b"));
        // A loop ends (as the kernel's ELOOP) instead of spinning.
        std::os::unix::fs::symlink("loop2", root.join("loop1")).unwrap();
        std::os::unix::fs::symlink("loop1", root.join("loop2")).unwrap();
        let looped = resolve_at(&root, "loop1", true);
        assert!(looped.starts_with(&root), "{}", looped.display());
    }

    #[test]
    fn a_relative_link_leads_from_where_it_is() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        std::fs::create_dir_all(root.join("a/b")).unwrap();
        let up = Path::new("../x");
        assert_eq!(link_leads_to(&root.join("a/b/l"), up), root.join("a/x"));
        assert_eq!(link_leads_to(&root.join("a/l"), up), root.join("x"));
        assert_eq!(link_leads_to(&root.join("a/l"), Path::new("/etc/passwd")), PathBuf::from("/etc/passwd"));
    }

    #[test]
    fn only_plain_names_split_into_parent_and_name() {
        assert_eq!(split_plain("a/b/c"), Some(("a/b", "c")));
        assert_eq!(split_plain("c"), Some(("", "c")));
        assert_eq!(split_plain("./c"), Some((".", "c")));
        for rel in ["a/../c", "/abs", "x/", "x/.", ".", "..", "a/.."] {
            assert_eq!(split_plain(rel), None, "{rel}");
        }
        assert!(names_itself(".") && names_itself("./.") && !names_itself("./a"));
    }
}
