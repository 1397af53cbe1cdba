//! # Capability diffs
//!
//! What a new version of an installed tool could touch that the locked one could not: its
//! ceiling and its effective grant, old → new. An entry of the new side is a **widening** when
//! no entry of the old side covers it, by the same rules the host uses to compare a grant with
//! a ceiling ([`toolhost_policy::grant_excess`]): a directory inside an old one (and writable
//! only if that one was), a host pattern an old pattern covers, the same variable or an old
//! `*`; a `*` (any host, any variable) is covered only by a `*`. A widening needs the
//! operator's yes; a narrowing does not.
//!
//! ## Example
//!
//! ```
//! use std::path::Path;
//! use toolhost_registry::CapabilityDiff;
//! use toolhost_policy::Capability;
//!
//! let old = [Capability::FsRead(".".into())];
//! let new = [Capability::FsRead("./docs".into()), Capability::Net("api.example.com".into())];
//! let diff = CapabilityDiff::new(&old, &new, &[], &[], Path::new("/w"));
//! assert_eq!(diff.ceiling.widened, ["net(api.example.com)"]);
//! assert!(diff.widens());
//! ```

use std::path::Path;
use toolhost_policy::{Capability, Grant, grant_excess};

/// Old → new for one list of capabilities.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SetDiff {
    /// In the new list and not in the old one (as written).
    pub added: Vec<String>,
    /// In the old list and not in the new one.
    pub removed: Vec<String>,
    /// Added entries no old entry covers: what the new version may do that the old could not.
    pub widened: Vec<String>,
}

/// Old → new for a tool's ceiling and effective grant.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CapabilityDiff {
    /// The ceiling the component declares.
    pub ceiling: SetDiff,
    /// The effective grant (ceiling ∩ the operator's grant).
    pub grant: SetDiff,
}

/// Whether some entry of `old` covers `new`.
fn covered(old: &[Capability], new: &Capability, workspace: &Path) -> bool {
    let star = |c: &Capability| matches!(c, Capability::Net(h) | Capability::Env(h) if h == "*");
    if star(new) {
        return old.iter().any(|o| std::mem::discriminant(o) == std::mem::discriminant(new) && star(o));
    }
    let one = match new {
        Capability::FsRead(p) => Grant { fs_read: vec![p.clone()], ..Grant::none() },
        Capability::FsWrite(p) => Grant { fs_write: vec![p.clone()], ..Grant::none() },
        Capability::Net(h) => Grant { net: vec![h.clone()], ..Grant::none() },
        Capability::Env(n) => Grant { env: vec![n.clone()], ..Grant::none() },
    };
    grant_excess(old, &one, workspace).is_empty()
}

impl SetDiff {
    /// Compare two lists (relative directories against `workspace`).
    pub fn new(old: &[Capability], new: &[Capability], workspace: &Path) -> SetDiff {
        let shown = |c: &Capability| c.to_string();
        SetDiff {
            added: new.iter().filter(|c| !old.contains(c)).map(shown).collect(),
            removed: old.iter().filter(|c| !new.contains(c)).map(shown).collect(),
            widened: new.iter().filter(|c| !old.contains(c) && !covered(old, c, workspace)).map(shown).collect(),
        }
    }

    /// Whether nothing changed.
    pub fn is_empty(&self) -> bool {
        self.added.is_empty() && self.removed.is_empty()
    }
}

impl CapabilityDiff {
    /// Compare old and new ceilings and effective grants.
    pub fn new(
        old_ceiling: &[Capability],
        new_ceiling: &[Capability],
        old_grant: &[Capability],
        new_grant: &[Capability],
        workspace: &Path,
    ) -> CapabilityDiff {
        CapabilityDiff {
            ceiling: SetDiff::new(old_ceiling, new_ceiling, workspace),
            grant: SetDiff::new(old_grant, new_grant, workspace),
        }
    }

    /// Whether the new version may do something the old one could not.
    pub fn widens(&self) -> bool {
        !self.ceiling.widened.is_empty() || !self.grant.widened.is_empty()
    }

    /// Lines for people: `  ceiling: + net(*)  (new)`, one per change, or `  no capability
    /// change`.
    pub fn render(&self) -> String {
        let mut out = String::new();
        for (what, d) in [("ceiling", &self.ceiling), ("grant", &self.grant)] {
            for a in &d.added {
                let mark = if d.widened.contains(a) { "  (wider: needs your yes)" } else { "" };
                out.push_str(&format!("  {what}: + {a}{mark}\n"));
            }
            for r in &d.removed {
                out.push_str(&format!("  {what}: - {r}\n"));
            }
        }
        if out.is_empty() {
            out.push_str("  no capability change\n");
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn caps(list: &[&str]) -> Vec<Capability> {
        list.iter().map(|s| crate::lock::parse_capability(s).unwrap()).collect()
    }

    #[test]
    fn widening_follows_the_grant_rules() {
        let ws = Path::new("/w");
        // (old, new, widened)
        let table: &[(&[&str], &[&str], &[&str])] = &[
            (&[], &[], &[]),
            (&["fs-read(.)"], &["fs-read(./docs)"], &[]),
            (&["fs-read(.)"], &["fs-write(./docs)"], &["fs-write(./docs)"]),
            (&["fs-write(/)"], &["fs-read(/etc)", "fs-write(.)"], &[]),
            (&["net(*.example.com)"], &["net(api.example.com)"], &[]),
            (&["net(api.example.com)"], &["net(*)"], &["net(*)"]),
            (&["net(*)"], &["net(*)"], &[]),
            (&["env(HOME)"], &["env(*)"], &["env(*)"]),
            (&["env(*)"], &["env(HOME)"], &[]),
            (&["env(HOME)", "net(a.com)"], &["env(HOME)"], &[]),
            (&[], &["env(HOME)"], &["env(HOME)"]),
        ];
        for (old, new, widened) in table {
            let d = SetDiff::new(&caps(old), &caps(new), ws);
            assert_eq!(d.widened, *widened, "{old:?} -> {new:?}");
        }
    }

    #[test]
    fn narrowing_is_a_change_but_no_widening() {
        let d =
            CapabilityDiff::new(&caps(&["fs-write(/)", "env(*)"]), &caps(&["fs-read(.)"]), &[], &[], Path::new("/w"));
        assert!(!d.widens());
        assert_eq!(d.ceiling.removed, ["fs-write(/)", "env(*)"]);
        assert!(d.render().contains("ceiling: - env(*)"), "{}", d.render());
    }
}
