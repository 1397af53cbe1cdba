//! The guard's judgements: each operation's paths checked against the call's rules. A
//! mutation is judged on the path the kernel will use at that moment (the descriptor's path
//! asked again, the rest resolved without the call's memory); a read may use the memory.

use super::memory::Parent;
use super::resolve::{fd_path, link_leads_to, names_itself, resolve_at};
use super::{GuardedFs, MAX_REFUSALS};
use std::path::{Component, Path, PathBuf};
use toolhost_policy::{FsAccess, FsRefusal};
use wasmtime::component::Resource;
use wasmtime_wasi::filesystem::Descriptor;
use wasmtime_wasi::p2::bindings::filesystem::types::ErrorCode;
use wasmtime_wasi::p2::{FsError, FsResult};

/// Entries of a renamed directory checked for the links it moves, at most: a rename of a
/// bigger tree is refused rather than left unchecked.
pub(super) const MAX_MOVED_ENTRIES: usize = 100_000;

impl GuardedFs<'_> {
    /// [`GuardedFs::check`] of a read of the real path `path`, skipped where no rule reaches.
    pub(super) fn check_read_of(&mut self, op: &str, path: &Path) -> FsResult<()> {
        match path.parent() {
            Some(parent) if !self.refusable_beneath(parent) => Ok(()),
            _ => self.check(op, path, FsAccess::Read),
        }
    }

    /// [`GuardedFs::check`] of a read of `name` in `parent`, skipped where no rule reaches.
    pub(super) fn check_read_in(&mut self, op: &str, parent: &Parent, name: &str) -> FsResult<()> {
        if !parent.refusable {
            return Ok(());
        }
        self.check(op, &parent.real.join(name), FsAccess::Read)
    }

    pub(super) fn refuse(&mut self, op: &str, refusal: FsRefusal) -> FsError {
        self.guard.refused_total += 1;
        let line = format!("{op}: {refusal}");
        if self.guard.refusals.len() < MAX_REFUSALS && !self.guard.refusals.contains(&line) {
            self.guard.refusals.push(line);
        }
        ErrorCode::Access.into()
    }

    pub(super) fn check(&mut self, op: &str, path: &Path, access: FsAccess) -> FsResult<()> {
        match self.guard.rules.check(path, access, &self.guard.approved) {
            Ok(()) => Ok(()),
            Err(r) => Err(self.refuse(op, r)),
        }
    }

    /// Check a mutation of `rel` beneath `fd` (skipped on read-only directories, where
    /// wasmtime-wasi refuses every mutation itself).
    pub(super) fn check_mutation(
        &mut self,
        op: &str,
        fd: &Resource<Descriptor>,
        rel: &str,
        follow: bool,
        access: FsAccess,
    ) -> FsResult<()> {
        if self.guard.rules.policies.is_empty() {
            return Ok(());
        }
        let Some(dir) = self.writable_dir_now(fd)? else { return Ok(()) };
        let target = resolve_at(&dir, rel, follow);
        self.check(op, &target, access)
    }

    /// The real path of a directory descriptor asked of the kernel now (without procfs, the
    /// path resolved when it was opened), or `None` when it is read-only (wasmtime-wasi refuses
    /// every mutation there itself). For mutations: nothing the call remembers vouches for one.
    pub(super) fn writable_dir_now(&mut self, fd: &Resource<Descriptor>) -> FsResult<Option<PathBuf>> {
        let d = match self.inner.table.get(fd)? {
            Descriptor::Dir(d) => d,
            Descriptor::File(_) => return Err(ErrorCode::NotDirectory.into()),
        };
        if d.perms.write_not_permitted() {
            return Ok(None);
        }
        let path = if self.guard.procfs {
            fd_path(&d.dir, true)
        } else {
            self.guard.dirs.get(&fd.rep()).map(|p| p.to_path_buf())
        };
        // Fail closed: a directory whose path is unknown is refused, not unchecked.
        path.map(Some).ok_or_else(|| ErrorCode::Access.into())
    }

    /// Check a link whose real path is `link` and whose text is `target`, as a link made there
    /// now: where it leads is judged as written to, since whoever follows it later (a person,
    /// another program) would write there.
    pub(super) fn check_link_target(&mut self, op: &str, link: &Path, target: &Path) -> FsResult<()> {
        let leads_to = link_leads_to(link, target);
        self.check(op, &leads_to, FsAccess::Write)
    }

    /// [`GuardedFs::check_link_target`] of a link moved from `from` to `to`, unless it leads
    /// to the same place from both (nothing new is reachable through it: a link made outside
    /// toolhost keeps being judged on each use).
    pub(super) fn check_moved_link(&mut self, op: &str, from: &Path, to: &Path, target: &Path) -> FsResult<()> {
        let leads_to = link_leads_to(to, target);
        if leads_to == link_leads_to(from, target) {
            return Ok(());
        }
        self.check(op, &leads_to, FsAccess::Write)
    }

    /// Check the links a rename of `from` to `to` (real paths, neither followed) moves: a
    /// relative link keeps its text and starts from its new directory. A link itself is
    /// judged at `to`; inside a directory, the links whose text climbs out of it with `..`
    /// (the others move with what they lead to), at most [`MAX_MOVED_ENTRIES`] entries.
    pub(super) fn check_moved_links(&mut self, from: &Path, to: &Path) -> FsResult<()> {
        let Ok(meta) = std::fs::symlink_metadata(from) else { return Ok(()) };
        if meta.file_type().is_symlink() {
            return match std::fs::read_link(from) {
                Ok(target) if target.is_relative() => self.check_moved_link("rename of a link to", from, to, &target),
                _ => Ok(()),
            };
        }
        if !meta.is_dir() {
            return Ok(());
        }
        let mut pending = vec![from.to_path_buf()];
        let mut seen = 0usize;
        while let Some(dir) = pending.pop() {
            let Ok(entries) = std::fs::read_dir(&dir) else { continue };
            for entry in entries.flatten() {
                seen += 1;
                if seen > MAX_MOVED_ENTRIES {
                    let refusal = FsRefusal::Unchecked {
                        path: from.to_path_buf(),
                        why: format!(
                            "it holds more than {MAX_MOVED_ENTRIES} entries, too many to check the links it moves"
                        ),
                    };
                    return Err(self.refuse("rename from", refusal));
                }
                let Ok(kind) = entry.file_type() else { continue };
                let path = entry.path();
                if kind.is_dir() {
                    pending.push(path);
                } else if kind.is_symlink()
                    && let Ok(target) = std::fs::read_link(&path)
                    && target.components().any(|c| c == Component::ParentDir)
                    && let Ok(inside) = path.strip_prefix(from)
                {
                    self.check_moved_link("move of a link to", &path, &to.join(inside), &target)?;
                }
            }
        }
        Ok(())
    }

    /// Check a read of `rel` beneath `fd`, when reads can be refused at all.
    pub(super) fn check_read(&mut self, op: &str, fd: &Resource<Descriptor>, rel: &str, follow: bool) -> FsResult<()> {
        if !self.guard.rules.check_reads || self.guard.last_read.is(fd.rep(), rel, follow) {
            return Ok(());
        }
        if let Some((parent, name)) = self.known_target(fd, rel, follow)? {
            self.check_read_in(op, &parent, name)?;
        } else {
            let (dir, _) = self.dir_of(fd)?;
            let target = if names_itself(rel) { dir.to_path_buf() } else { self.resolve(&dir, rel, follow) };
            self.check_read_of(op, &target)?;
        }
        self.guard.last_read.set(fd.rep(), rel, follow);
        Ok(())
    }
}
