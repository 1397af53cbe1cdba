//! Helpers shared by the embedded default tools (Read, Write, Edit, Glob, Grep, LS), so that
//! they all resolve paths, report I/O errors, number lines and walk directories the same way.

use std::fs::Metadata;
use std::io;
use std::path::{Component, Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};
use toolhost_sdk::ToolError;

/// Context key under which the host publishes the workspace's absolute path (a JSON string).
pub const WORKSPACE_KEY: &str = "toolhost.workspace";

/// Lines longer than this many characters are cut when shown to the model: one minified file
/// must not eat the whole result.
pub const MAX_LINE_CHARS: usize = 2000;

/// The workspace's absolute path, which the host gives every call.
pub fn workspace() -> Result<PathBuf, ToolError> {
    toolhost_sdk::context_get_as::<String>(WORKSPACE_KEY).map(PathBuf::from).ok_or_else(|| {
        ToolError::Failed(format!("the host did not say where the workspace is (context key {WORKSPACE_KEY})"))
    })
}

/// Resolve a path the model gave against the workspace (see [`resolve_in`]) and refuse it
/// if it lies outside every directory this tool was granted, with a message naming them
/// (the sandbox would refuse it anyway, but only with a bare "No such file or directory").
pub fn resolve(input: &str) -> Result<PathBuf, ToolError> {
    let path = resolve_in(&workspace()?, input);
    let granted = granted_dirs();
    if !granted.iter().any(|dir| path.starts_with(dir)) {
        let list = if granted.is_empty() {
            "none".to_string()
        } else {
            granted.iter().map(|d| d.display().to_string()).collect::<Vec<_>>().join(", ")
        };
        return Err(ToolError::Denied(format!(
            "{} is outside the directories this tool was granted ({list})",
            path.display()
        )));
    }
    Ok(path)
}

/// The absolute directories the host preopened for this call (its granted directories).
pub fn granted_dirs() -> Vec<PathBuf> {
    wasip2::filesystem::preopens::get_directories()
        .into_iter()
        .map(|(_descriptor, name)| PathBuf::from(name))
        .filter(|p| p.is_absolute())
        .collect()
}

/// An absolute path stays as it is, a relative one is joined to `workspace`; then `.` and `..`
/// are removed lexically. No symlinks are followed: the sandbox decides what is reachable, and
/// the model sees the same spelling it would expect from the path it gave.
pub fn resolve_in(workspace: &Path, input: &str) -> PathBuf {
    normalize(&workspace.join(input))
}

/// Remove `.` and `..` components without touching the filesystem. `..` never climbs above the
/// root; on a relative path with nothing left to climb, it is kept.
pub fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::CurDir => {}
            Component::ParentDir => match out.components().next_back() {
                Some(Component::Normal(_)) => {
                    out.pop();
                }
                Some(Component::RootDir | Component::Prefix(_)) => {}
                _ => out.push(".."),
            },
            other => out.push(other.as_os_str()),
        }
    }
    if out.as_os_str().is_empty() {
        out.push(".");
    }
    out
}

/// Turn an I/O error on `path` into a [`ToolError`] saying what was being done, e.g.
/// `reading /a/b: Permission denied` (classified by [`ToolError::from_io`]: a sandbox refusal is
/// a denial). Outside the workspace, "not found" is also what the sandbox answers for a path
/// outside every directory this tool was granted, so the message says it may be either.
pub fn io_error(action: &str, path: &Path, err: io::Error) -> ToolError {
    io_error_in(workspace().ok().as_deref(), action, path, err)
}

fn io_error_in(workspace: Option<&Path>, action: &str, path: &Path, err: io::Error) -> ToolError {
    let what = format!("{action} {}", path.display());
    let in_workspace = workspace.is_some_and(|ws| path.starts_with(ws));
    if err.kind() == io::ErrorKind::NotFound && !in_workspace {
        return ToolError::InvalidInput(format!(
            "{what}: {err} (it does not exist, or it is outside the directories this tool was \
             granted)"
        ));
    }
    ToolError::from_io(what, &err)
}

/// What Read, Write and Edit remember about a file in the session's context, under
/// [`FileState::context_key`], so that Edit can refuse a file that was never read or that
/// changed since. Stored as `{"mtime_ns":"1714000000123456789","size":1234}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileState {
    /// Modification time in nanoseconds since the Unix epoch (negative before it), as a
    /// decimal string: the number does not fit every JSON reader's integers.
    pub mtime_ns: String,
    /// Size in bytes.
    pub size: u64,
}

impl FileState {
    /// The state of a file, from its metadata.
    pub fn of(meta: &Metadata) -> Self {
        let mtime_ns = match meta.modified() {
            Ok(time) => match time.duration_since(UNIX_EPOCH) {
                Ok(after) => after.as_nanos().to_string(),
                Err(before) => format!("-{}", before.duration().as_nanos()),
            },
            // Without a modification time, the size alone has to do.
            Err(_) => "unknown".to_string(),
        };
        FileState { mtime_ns, size: meta.len() }
    }

    /// The context key for a file's state: `read:` and its absolute, normalised path.
    pub fn context_key(path: &Path) -> String {
        format!("read:{}", path.display())
    }
}

/// A file's modification time, or the epoch when it is not known (so it sorts last).
pub fn mtime(meta: &Metadata) -> SystemTime {
    meta.modified().unwrap_or(UNIX_EPOCH)
}

/// Sort files newest first; equal times keep path order, so results are deterministic.
pub fn sort_newest_first(files: &mut [(PathBuf, SystemTime)]) {
    files.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
}

/// `line`, cut to [`MAX_LINE_CHARS`] characters with a marker saying how long it really was.
pub fn truncate_line(line: &str) -> std::borrow::Cow<'_, str> {
    match line.char_indices().nth(MAX_LINE_CHARS) {
        None => line.into(),
        Some((cut, _)) => {
            format!("{}... [line truncated: {} characters in all]", &line[..cut], line.chars().count()).into()
        }
    }
}

/// One line in `cat -n` format: the number right-aligned in six columns, a tab, the text.
pub fn numbered_line(number: u64, line: &str) -> String {
    format!("{number:>6}\t{}", truncate_line(line))
}

/// Lines in `cat -n` format, numbered from `first`, joined by newlines.
pub fn cat_n<'a>(first: u64, lines: impl IntoIterator<Item = &'a str>) -> String {
    lines.into_iter().zip(first..).map(|(line, number)| numbered_line(number, line)).collect::<Vec<_>>().join("\n")
}

/// A directory walker that skips what ripgrep skips: hidden files, and whatever `.gitignore`,
/// `.ignore` and `.git/info/exclude` exclude, even outside a git repository. The user's global
/// gitignore is not read (it lives outside the sandbox). Entries come in file-name order, so
/// results are deterministic.
pub fn walker(dir: &Path) -> ignore::WalkBuilder {
    let mut builder = ignore::WalkBuilder::new(dir);
    builder.require_git(false).git_global(false).sort_by_file_name(|a, b| a.cmp(b));
    // The walker finds the ignore files of parent directories through `canonicalize`, which
    // WASI does not offer, so a search under `src/` would miss the workspace's `.gitignore`.
    // Add the ignore files between the workspace root and `dir` by hand.
    if let Ok(ws) = workspace()
        && dir != ws
        && dir.starts_with(&ws)
    {
        for ancestor in dir.ancestors().skip(1) {
            for name in [".gitignore", ".ignore"] {
                let file = ancestor.join(name);
                if file.is_file() {
                    builder.add_ignore(file);
                }
            }
            if ancestor == ws {
                break;
            }
        }
    }
    builder
}

/// The metadata of a walked entry if it is a regular file, or a symlink to one (the walker
/// does not follow symlinks, but a linked file is still a file to list or search).
pub fn walked_file(entry: &ignore::DirEntry) -> Option<Metadata> {
    let file_type = entry.file_type()?;
    if file_type.is_file() {
        entry.metadata().ok()
    } else if file_type.is_symlink() {
        std::fs::metadata(entry.path()).ok().filter(Metadata::is_file)
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relative_paths_join_the_workspace() {
        let ws = Path::new("/home/u/proj");
        assert_eq!(resolve_in(ws, "src/main.rs"), Path::new("/home/u/proj/src/main.rs"));
        assert_eq!(resolve_in(ws, "./src/../Cargo.toml"), Path::new("/home/u/proj/Cargo.toml"));
        assert_eq!(resolve_in(ws, "."), Path::new("/home/u/proj"));
        assert_eq!(resolve_in(ws, "../other/x"), Path::new("/home/u/other/x"));
    }

    #[test]
    fn absolute_paths_stay_but_are_normalised() {
        let ws = Path::new("/home/u/proj");
        assert_eq!(resolve_in(ws, "/etc/hosts"), Path::new("/etc/hosts"));
        assert_eq!(resolve_in(ws, "/a/./b//c/../d"), Path::new("/a/b/d"));
        assert_eq!(resolve_in(ws, "/../../x"), Path::new("/x"));
        assert_eq!(resolve_in(ws, "/"), Path::new("/"));
    }

    #[test]
    fn normalize_keeps_leading_parent_dirs_of_relative_paths() {
        assert_eq!(normalize(Path::new("../a/../../b")), Path::new("../../b"));
        assert_eq!(normalize(Path::new("a/..")), Path::new("."));
    }

    #[test]
    fn io_errors_name_the_path_and_classify() {
        let ws = Some(Path::new("/ws"));
        let err = |kind| io::Error::from(kind);
        let denied = io_error_in(ws, "reading", Path::new("/ws/a"), err(io::ErrorKind::PermissionDenied));
        assert!(matches!(denied, ToolError::Denied(m) if m.starts_with("reading /ws/a: ")));
        let missing = io_error_in(ws, "reading", Path::new("/ws/a"), err(io::ErrorKind::NotFound));
        assert!(matches!(missing, ToolError::InvalidInput(m) if !m.contains("granted")));
        let outside = io_error_in(ws, "reading", Path::new("/etc/a"), err(io::ErrorKind::NotFound));
        assert!(matches!(outside, ToolError::InvalidInput(m) if m.contains("outside the directories")));
    }

    #[test]
    fn cat_n_numbers_and_aligns() {
        assert_eq!(cat_n(1, ["a", "", "c"]), "     1\ta\n     2\t\n     3\tc");
        assert_eq!(cat_n(1234567, ["x"]), "1234567\tx");
    }

    #[test]
    fn long_lines_are_truncated_on_a_char_boundary() {
        let line = "é".repeat(MAX_LINE_CHARS + 5);
        let shown = truncate_line(&line);
        assert!(shown.starts_with(&"é".repeat(MAX_LINE_CHARS)));
        assert!(shown.ends_with("... [line truncated: 2005 characters in all]"));
        assert_eq!(truncate_line("short"), "short");
    }

    #[test]
    fn newest_first_then_by_path() {
        let t = |s| UNIX_EPOCH + std::time::Duration::from_secs(s);
        let mut files = vec![(PathBuf::from("/b"), t(1)), (PathBuf::from("/c"), t(2)), (PathBuf::from("/a"), t(1))];
        sort_newest_first(&mut files);
        let order: Vec<_> = files.iter().map(|f| f.0.to_str().unwrap()).collect();
        assert_eq!(order, ["/c", "/a", "/b"]);
    }

    #[test]
    fn file_state_round_trips_as_json_with_a_string_mtime() {
        let state = FileState { mtime_ns: "1714000000123456789".into(), size: 12 };
        let json = toolhost_sdk::serde_json::to_string(&state).unwrap();
        assert_eq!(json, r#"{"mtime_ns":"1714000000123456789","size":12}"#);
        assert_eq!(context_key_of("/a/b"), "read:/a/b");
    }

    fn context_key_of(p: &str) -> String {
        FileState::context_key(Path::new(p))
    }
}
