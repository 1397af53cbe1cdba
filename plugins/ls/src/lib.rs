//! `LS`: a directory's contents as an indented tree, like Claude Code's LS.

use std::collections::VecDeque;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use globset::{Glob, GlobSet, GlobSetBuilder};
use schemars::JsonSchema;
use serde::Deserialize;
use tool_common::{io_error, resolve};
use toolhost_sdk::{Capability, Output, Tool, ToolError, export_tool};

/// Most entries listed; a whole `node_modules` must not flood the model.
const MAX_ENTRIES: usize = 1000;

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Input {
    /// The directory to list: absolute, or relative to the workspace.
    path: String,
    /// Glob patterns of entries to leave out, matched against names and against paths
    /// relative to the listed directory, e.g. `["*.log", "target", "node_modules"]`.
    ignore: Option<Vec<String>>,
}

struct Ls;

impl Tool for Ls {
    type Input = Input;
    const NAME: &'static str = "LS";
    const DESCRIPTION: &'static str = "Lists the files and directories under a path, as a tree \
(directories end with `/`), skipping hidden entries (names starting with `.`).\n\
\n\
- path may be absolute or relative to the workspace.\n\
- ignore takes glob patterns of entries to leave out, e.g. [\"*.log\", \"node_modules\"].\n\
- At most 1000 entries are listed, the shallowest first.\n\
- Prefer Glob and Grep when you know what you are looking for.";
    const PERMISSION_SUBJECT: Option<&'static str> = Some("/path");
    const READ_ONLY: bool = true;

    fn capabilities() -> Vec<Capability> {
        vec![Capability::FsRead("/".into())]
    }

    fn validate(input: &Input) -> Result<(), String> {
        if input.path.trim().is_empty() {
            return Err("path must not be empty.".into());
        }
        ignore_set(input.ignore.as_deref().unwrap_or_default()).map(drop)
    }

    fn call(input: Input) -> Result<Output, ToolError> {
        let skip = ignore_set(input.ignore.as_deref().unwrap_or_default()).map_err(ToolError::InvalidInput)?;
        let root = resolve(&input.path)?;
        let listing = |e| io_error("listing", &root, e);
        let meta = fs::metadata(&root).map_err(listing)?;
        if !meta.is_dir() {
            return Err(ToolError::InvalidInput(format!(
                "{} is not a directory; use Read to read a file.",
                root.display()
            )));
        }
        let tree = collect(&root, &skip, MAX_ENTRIES).map_err(listing)?;
        Ok(Output::text(render(&root, &tree)))
    }
}

/// The ignore patterns as one matcher. A trailing `/` (as in `build/`) is dropped: names are
/// matched without one.
fn ignore_set(patterns: &[String]) -> Result<GlobSet, String> {
    let mut builder = GlobSetBuilder::new();
    for pattern in patterns {
        let trimmed = pattern.trim_end_matches('/');
        let glob = Glob::new(trimmed).map_err(|e| format!("Invalid ignore pattern: {e}"))?;
        builder.add(glob);
    }
    builder.build().map_err(|e| format!("Invalid ignore pattern: {e}"))
}

/// A listed directory's entries: index 0 is the root, every other node a file or directory.
#[derive(Debug, Default)]
struct Tree {
    nodes: Vec<Node>,
    /// Whether entries were left out because of [`MAX_ENTRIES`].
    truncated: bool,
}

#[derive(Debug)]
struct Node {
    name: String,
    is_dir: bool,
    children: Vec<usize>,
}

/// Walk `root` breadth first, so that when more than `limit` entries exist, the shallow ones
/// are the ones listed. Entries are sorted by name; hidden ones (`.name`) and those matching
/// `skip` (by name or by path relative to `root`) are left out, and skipped directories are
/// not entered. Symlinks are listed but not followed. A subdirectory that cannot be read is
/// listed empty; only an unreadable `root` is an error.
fn collect(root: &Path, skip: &GlobSet, limit: usize) -> io::Result<Tree> {
    let mut tree = Tree::default();
    tree.nodes.push(Node { name: String::new(), is_dir: true, children: Vec::new() });
    let mut queue = VecDeque::from([(0usize, PathBuf::new())]);
    while let Some((parent, relative)) = queue.pop_front() {
        let entries = match fs::read_dir(root.join(&relative)) {
            Ok(entries) => entries,
            Err(e) if parent == 0 => return Err(e),
            Err(_) => continue,
        };
        let mut children: Vec<(String, bool)> = entries
            .flatten()
            .map(|entry| {
                let name = entry.file_name().to_string_lossy().into_owned();
                let is_dir = entry.file_type().is_ok_and(|t| t.is_dir());
                (name, is_dir)
            })
            .filter(|(name, _)| !name.starts_with('.') && !skip.is_match(name) && !skip.is_match(relative.join(name)))
            .collect();
        children.sort();
        for (name, is_dir) in children {
            if tree.nodes.len() > limit {
                tree.truncated = true;
                return Ok(tree);
            }
            let index = tree.nodes.len();
            tree.nodes[parent].children.push(index);
            if is_dir {
                queue.push_back((index, relative.join(&name)));
            }
            tree.nodes.push(Node { name, is_dir, children: Vec::new() });
        }
    }
    Ok(tree)
}

/// `- ROOT/` then every entry as `- name`, indented two spaces per level, `/` after
/// directories; a note at the end when entries were left out.
fn render(root: &Path, tree: &Tree) -> String {
    let root = root.display().to_string();
    let mut lines = vec![format!("- {}/", root.trim_end_matches('/'))];
    // Depth-first with an explicit stack: children pushed in reverse come out in order.
    let mut stack: Vec<(usize, usize)> = tree.nodes[0].children.iter().rev().map(|&c| (c, 1)).collect();
    while let Some((index, depth)) = stack.pop() {
        let node = &tree.nodes[index];
        let slash = if node.is_dir { "/" } else { "" };
        lines.push(format!("{}- {}{slash}", "  ".repeat(depth), node.name));
        stack.extend(node.children.iter().rev().map(|&c| (c, depth + 1)));
    }
    if tree.truncated {
        lines.push(format!(
            "\n(There are more than {MAX_ENTRIES} entries; only the first {MAX_ENTRIES} are \
             listed. List a subdirectory, use ignore, or use Glob or Grep to narrow it down.)"
        ));
    }
    lines.join("\n")
}

export_tool!(Ls);

#[cfg(test)]
mod tests {
    use super::*;

    /// A fresh directory under the system's temp dir, removed when dropped.
    struct TempDir(PathBuf);

    impl TempDir {
        fn new(name: &str) -> Self {
            let dir = std::env::temp_dir().join(format!("tool-ls-{name}-{}", std::process::id()));
            let _ = fs::remove_dir_all(&dir);
            fs::create_dir_all(&dir).unwrap();
            TempDir(dir)
        }
        fn file(&self, relative: &str) {
            let path = self.0.join(relative);
            fs::create_dir_all(path.parent().unwrap()).unwrap();
            fs::write(path, "x").unwrap();
        }
    }

    impl Drop for TempDir {
        fn drop(&mut self) {
            let _ = fs::remove_dir_all(&self.0);
        }
    }

    fn list(dir: &TempDir, ignore: &[&str], limit: usize) -> String {
        let ignore: Vec<String> = ignore.iter().map(|s| s.to_string()).collect();
        let tree = collect(&dir.0, &ignore_set(&ignore).unwrap(), limit).unwrap();
        let root = dir.0.display().to_string();
        render(&dir.0, &tree).replace(&root, "ROOT")
    }

    #[test]
    fn lists_a_sorted_tree_without_hidden_entries() {
        let dir = TempDir::new("tree");
        for f in ["b.txt", "a/z.rs", "a/c/d.rs", ".hidden/x", ".env", "a/.git/config"] {
            dir.file(f);
        }
        fs::create_dir(dir.0.join("empty")).unwrap();
        assert_eq!(
            list(&dir, &[], MAX_ENTRIES),
            "- ROOT/\n  - a/\n    - c/\n      - d.rs\n    - z.rs\n  - b.txt\n  - empty/"
        );
    }

    #[test]
    fn ignore_patterns_match_names_and_relative_paths() {
        let dir = TempDir::new("ignore");
        for f in ["keep.rs", "x.log", "target/debug/a", "src/gen/b.rs", "src/c.rs"] {
            dir.file(f);
        }
        assert_eq!(
            list(&dir, &["*.log", "target/", "src/gen"], MAX_ENTRIES),
            "- ROOT/\n  - keep.rs\n  - src/\n    - c.rs"
        );
        assert!(ignore_set(&["a[".to_string()]).is_err());
    }

    #[test]
    fn large_listings_keep_the_shallow_entries() {
        let dir = TempDir::new("limit");
        for f in ["a/deep1", "a/deep2", "b", "c"] {
            dir.file(f);
        }
        let out = list(&dir, &[], 3);
        assert!(out.starts_with("- ROOT/\n  - a/\n  - b\n  - c\n\n(There are more than"), "{out}");
    }

    #[test]
    fn root_is_shown_with_one_slash() {
        let tree =
            Tree { nodes: vec![Node { name: String::new(), is_dir: true, children: Vec::new() }], truncated: false };
        assert_eq!(render(Path::new("/"), &tree), "- /");
        assert_eq!(render(Path::new("/a/b"), &tree), "- /a/b/");
    }
}
