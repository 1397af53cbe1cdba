//! Attacks generated, not listed: a hostile guest runs random sequences of every
//! `wasi:filesystem` mutation and query (create, write, append, truncate, mkdir, symlinks with
//! relative and absolute targets, hard links of files and of links, renames of files, links
//! and directories, unlink, listings, stats, opens beneath an opened directory) within one
//! call, where the guard's per-call memory lives, over a workspace holding protected files
//! (the config in use, a hook directory), a file other programs run (`.git/config`, asked:
//! with no one to ask, refused), a read-denied subtree and a directory outside the grant.
//! Besides single steps, the generator builds chains of the shape that poisons what a guard
//! learned ([`Model::chain`]); against ff7fe72's guard they find issue 29's class on every seed
//! tried (BENCHMARKS.md).
//!
//! After every sequence: the protected files, the denied subtree and the outside directory
//! are byte-identical with the same inodes, nothing appeared beside the workspace, no result
//! carries the denied content or its size, and no call crashed the host or the guest.
//!
//! The CI budget is fixed (`ATTACK_CASES`, default 2,000 sequences, seeded by `ATTACK_SEED`,
//! default 0, so a failure reproduces); a long campaign raises both (see BENCHMARKS.md), and
//! `ATTACK_SHOW=1` prints every call with its steps and output.

use proptest::prelude::*;
use proptest::test_runner::{Config, RngAlgorithm, TestCaseError, TestRng, TestRunner};
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::fs;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use toolhost::policy::Mode;
use toolhost::{OutcomeKind, Runtime, Session, ToolSource};
use toolhost_tests::{call, config, engine, guests};

/// In the denied file only.
const SECRET: &str = "DENIED-93b1e4";
/// Its size, which no other file has (every content the attacks write is short).
const SECRET_SIZE: usize = 3217;
const CONFIG: &str = "[permissions]\ndeny = [\"Read(secrets/**)\"]\n";

/// New names the attacks give what they make: few, so that later steps meet earlier ones,
/// and some of them names the host cares about.
const FRESH: &[&str] = &["a", "b", "D", "sub", "p", "id.key", "guard.sh", "config", "toolhost.toml", "hooks"];

/// Link targets worth trying: up and out, into what is protected, denied or asked (absolute
/// ones are added per tree); a link may also get the text of any path the model knows.
const LINK_TARGETS: &[&str] = &[
    "..",
    "../..",
    "../../..",
    ".",
    "../secrets",
    "../secrets/id.key",
    "../toolhost.toml",
    "../hooks",
    "../hooks/guard.sh",
    "../.git/config",
    "../.git",
    "secrets",
    "hooks",
    "toolhost.toml",
    "../outside",
    "../../outside",
];

/// The operations, weighted towards what changes the tree. A `chain` is several steps of the
/// shape that poisons what a guard learned: learn a directory (list, stat, open it), put a link
/// in it (a symlink, a hard link or a rename of a link, or a directory), then go through that
/// name to a protected or denied one ([`Model::chain`]).
const OPS: &[&str] = &[
    "write", "write", "append", "read", "read", "stat", "stat", "list", "list", "list", "mkdir", "mkdir", "symlink",
    "symlink", "symlink", "hardlink", "hardlink", "hardlink", "rename", "rename", "rename", "rename", "remove", "open",
    "open", "read_in", "chain", "chain", "chain", "chain",
];

/// What a chain's last step goes for beyond the name it planted: what the host runs or obeys
/// and what a rule denies, from the workspace (a link up) or from inside their directories.
const PROTECTED_NAMES: &[&str] = &[
    "toolhost.toml",
    "hooks/guard.sh",
    "hooks/lib.sh",
    ".git/config",
    "secrets/id.key",
    "guard.sh",
    "lib.sh",
    "config",
    "id.key",
    "inner/deep.key",
];

/// Where a chain's link points: up (to the workspace or beyond), or into what is guarded.
const CHAIN_TARGETS: &[&str] = &["..", "../..", "../../..", "../hooks", "../secrets", "../.git", "../../hooks"];
const OPEN_FLAGS: &[&str] = &["read", "write", "create,write", "create,truncate,write", "directory,read"];

/// One step as generated: choices that [`Model::step`] turns into a concrete input, given
/// what earlier steps of the sequence made (so shrinking keeps sequences meaningful).
#[derive(Debug, Clone)]
struct RawStep {
    op: usize,
    path: PathChoice,
    other: PathChoice,
    link: usize,
    flags: usize,
    follow: Option<bool>,
}

/// How a path is chosen: something the model knows, a new name in a directory it knows, or
/// either spelled oddly.
#[derive(Debug, Clone)]
struct PathChoice {
    known: bool,
    index: usize,
    fresh: usize,
    spelling: u8,
}

fn path_choice() -> impl Strategy<Value = PathChoice> {
    (prop::bool::weighted(0.6), any::<u16>(), 0..FRESH.len(), prop_oneof![12 => Just(0u8), 1 => 1u8..6])
        .prop_map(|(known, index, fresh, spelling)| PathChoice { known, index: index as usize, fresh, spelling })
}

fn raw_step() -> impl Strategy<Value = RawStep> {
    (0..OPS.len(), path_choice(), path_choice(), any::<u16>(), 0..OPEN_FLAGS.len(), prop::option::of(any::<bool>()))
        .prop_map(|(op, path, other, link, flags, follow)| RawStep {
            op,
            path,
            other,
            link: link as usize,
            flags,
            follow,
        })
}

/// What a sequence has made so far, as far as its steps said (refused steps included: the
/// model only steers later choices towards names that may exist).
struct Model {
    ws: PathBuf,
    /// Every path known (relative to the workspace), and which of them are (or lead to)
    /// directories.
    paths: Vec<String>,
    dirs: Vec<String>,
    /// The symlinks made (or met), for hard links and renames of links.
    links: Vec<String>,
    absolute_targets: Vec<String>,
}

impl Model {
    fn new(ws: &Path) -> Model {
        let dirs = ["pub", "pub/sub", "secrets", "secrets/inner", "hooks", ".git", "a", "D", "D/E"];
        let files =
            ["pub/a.txt", "pub/planted", "secrets/id.key", "hooks/guard.sh", ".git/config", "toolhost.toml", "a/f.txt"];
        let outside = ws.parent().unwrap().join("outside");
        Model {
            ws: ws.to_path_buf(),
            paths: dirs.iter().chain(&files).map(|p| p.to_string()).collect(),
            dirs: dirs.iter().map(|d| d.to_string()).collect(),
            links: vec!["pub/planted".to_string()],
            absolute_targets: [
                ws.join("toolhost.toml"),
                ws.join("secrets"),
                ws.join("hooks/guard.sh"),
                ws.join(".git/config"),
                outside,
            ]
            .iter()
            .map(|p| p.display().to_string())
            .collect(),
        }
    }

    fn pick(&self, c: &PathChoice) -> String {
        // Half the time among the latest: chains build on what the previous steps made.
        let among = |list: &[String], index: usize| {
            let from = if index.is_multiple_of(2) { list.len().saturating_sub(4) } else { 0 };
            list[from + (index / 2) % (list.len() - from)].clone()
        };
        let rel = if c.known {
            among(&self.paths, c.index)
        } else if c.index.is_multiple_of(5) {
            // A new name in the workspace, or in a directory it knows.
            FRESH[c.fresh].to_string()
        } else {
            format!("{}/{}", among(&self.dirs, c.index / 5), FRESH[c.fresh])
        };
        match c.spelling {
            0 => rel,
            1 => format!("{rel}/"),
            2 => format!("{rel}/."),
            3 => format!("{rel}/../{}", FRESH[c.fresh]),
            4 => format!("./{rel}"),
            _ => format!("{}/{rel}", self.ws.display()),
        }
    }

    fn learn(&mut self, path: &str, dir: bool) {
        let path = path.trim_end_matches('/').trim_end_matches("/.").to_string();
        if path.is_empty() || path.starts_with('/') || path.split('/').any(|c| c == "..") {
            return;
        }
        if !self.paths.contains(&path) {
            self.paths.push(path.clone());
        }
        if dir && !self.dirs.contains(&path) {
            self.dirs.push(path);
        }
    }

    /// The concrete inputs for `raw` (one step, or a chain's several), learning what they may
    /// make.
    fn steps(&mut self, raw: &RawStep) -> Vec<Value> {
        match OPS[raw.op] {
            "chain" => self.chain(raw),
            _ => vec![self.step(raw)],
        }
    }

    /// A chain: (1) learn the directory X (list it to the end, stat or open it, or stat the
    /// name about to be planted), (2) plant a name N in X that leads elsewhere (a symlink; a
    /// hard link of a symlink, made first when none is known; a link renamed there; a
    /// directory), (3) go through `X/N/` to a protected or denied name (write, append, rename a
    /// payload over it, link it, stat it, read it). Each part is chosen from the step's bits.
    fn chain(&mut self, raw: &RawStep) -> Vec<Value> {
        let bits = raw.link;
        let among_recent = |list: &[String], index: usize| {
            let from = if index.is_multiple_of(2) { list.len().saturating_sub(4) } else { 0 };
            list[from + (index / 2) % (list.len() - from)].clone()
        };
        let x = among_recent(&self.dirs, raw.path.index);
        let n = format!("{x}/{}", ["s", "sub", "l", "up"][raw.path.fresh % 4]);
        let through = format!("{n}/{}", PROTECTED_NAMES[raw.other.index % PROTECTED_NAMES.len()]);
        let up = CHAIN_TARGETS[raw.other.fresh % CHAIN_TARGETS.len()];
        let step = |op: &str, path: &str, target: &str, follow: Option<bool>| {
            let mut v = json!({"op": op, "path": path, "target": target, "content": "PWNED"});
            if let Some(f) = follow {
                v["follow"] = json!(f);
            }
            v
        };
        let mut out = Vec::new();
        match bits % 5 {
            0 | 1 => out.push(step("list", &x, "", None)),
            2 => out.push(step("stat", &x, "", Some(true))),
            3 => out.push(step("open", &x, "", None)),
            _ => out.push(step("stat", &n, "", Some(false))),
        }
        match (bits / 5) % 4 {
            0 => out.push(step("symlink", &n, up, None)),
            kind @ (1 | 2) => {
                let source = match self.links.last() {
                    Some(link) if raw.flags.is_multiple_of(2) => link.clone(),
                    _ => {
                        let dir = among_recent(&self.dirs, raw.other.index);
                        let link = format!("{dir}/lk");
                        out.insert(0, step("symlink", &link, up, None));
                        self.links.push(link.clone());
                        link
                    }
                };
                match kind {
                    1 => out.push(step("hardlink", &n, &source, Some(false))),
                    _ => out.push(step("rename", &source, &n, None)),
                }
            }
            _ => out.push(step("mkdir", &n, "", None)),
        }
        self.links.push(n.clone());
        self.learn(&n, true);
        let payload = "pub/payload";
        match (bits / 20) % 7 {
            0 => out.push(step("write", &through, "", raw.follow)),
            1 => out.push(step("append", &through, "", raw.follow)),
            2 => {
                out.push(step("write", payload, "", None));
                out.push(step("rename", payload, &through, None));
            }
            3 => out.push(step("hardlink", &through, "pub/a.txt", Some(false))),
            4 => out.push(step("stat", &through, "", raw.follow)),
            5 => out.push(step("read", &through, "", raw.follow)),
            _ => out.push(step("symlink", &through, "PWNED", None)),
        }
        out
    }

    /// The concrete input for `raw` (not a chain), learning what it may make.
    fn step(&mut self, raw: &RawStep) -> Value {
        let op = OPS[raw.op];
        let path = self.pick(&raw.path);
        let other = self.pick(&raw.other);
        let target = match op {
            "symlink" => {
                let all = LINK_TARGETS.len() + self.absolute_targets.len();
                match raw.link % (all + 1 + 6) {
                    // Up one or two levels, most often: the start of most chains.
                    i if i > all => ["..", "../.."][i % 2].to_string(),
                    i if i < LINK_TARGETS.len() => LINK_TARGETS[i].to_string(),
                    i if i < all => self.absolute_targets[i - LINK_TARGETS.len()].clone(),
                    // The text of another path: relative to the link's own directory.
                    _ => other.clone(),
                }
            }
            "read_in" => other.trim_start_matches('/').to_string(),
            _ => other.clone(),
        };
        match op {
            "mkdir" => self.learn(&path, true),
            "write" | "append" | "open" => self.learn(&path, false),
            // A link may lead to a directory: later steps try paths through it.
            "symlink" => {
                self.learn(&path, true);
                self.links.push(path.clone());
            }
            "hardlink" => self.learn(&path, self.dirs.contains(&other)),
            "rename" => {
                let dir = self.dirs.contains(&path);
                self.learn(&target, dir);
            }
            _ => {}
        }
        let content = if op == "open" { OPEN_FLAGS[raw.flags].to_string() } else { "PWNED".to_string() };
        let mut input = json!({"op": op, "path": path, "target": target, "content": content});
        if let Some(f) = raw.follow {
            input["follow"] = json!(f);
        }
        input
    }
}

/// The tree: `root/ws` (the workspace, granted read-write) and `root/outside`.
struct Tree {
    _dir: tempfile::TempDir,
    root: PathBuf,
    ws: PathBuf,
}

impl Tree {
    fn new() -> Tree {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let ws = root.join("ws");
        fs::create_dir_all(&ws).unwrap();
        fs::create_dir_all(root.join("outside/o")).unwrap();
        fs::write(root.join("outside/o.txt"), "outside\n").unwrap();
        let tree = Tree { _dir: dir, root, ws };
        tree.reset();
        tree
    }

    /// The workspace as at the start (the directory itself stays: the grant holds a handle).
    fn reset(&self) {
        toolhost_tests::empty_dir(&self.ws);
        let ws = &self.ws;
        for dir in ["hooks", ".git", "secrets/inner", "pub/sub", "a", "D/E"] {
            fs::create_dir_all(ws.join(dir)).unwrap();
        }
        fs::write(ws.join("toolhost.toml"), CONFIG).unwrap();
        fs::write(ws.join("hooks/guard.sh"), "#!/bin/sh\nexit 0\n").unwrap();
        fs::write(ws.join("hooks/lib.sh"), "true\n").unwrap();
        fs::write(ws.join(".git/config"), "[core]\n").unwrap();
        let secret = format!("{SECRET}{}", "s".repeat(SECRET_SIZE - SECRET.len()));
        fs::write(ws.join("secrets/id.key"), &secret).unwrap();
        fs::write(ws.join("secrets/inner/deep.key"), &secret).unwrap();
        fs::write(ws.join("pub/a.txt"), "public\n").unwrap();
        fs::write(ws.join("a/f.txt"), "free\n").unwrap();
        // A link made outside toolhost (a tool cannot make one to a denied file).
        std::os::unix::fs::symlink("../secrets/id.key", ws.join("pub/planted")).unwrap();
    }

    /// What no sequence may change: every entry outside the workspace, the protected files,
    /// the denied subtree and `.git/config`, with kind, content (or link text) and inode.
    fn guarded(&self) -> BTreeMap<PathBuf, String> {
        let mut out = BTreeMap::new();
        walk(&self.root, &mut out, &|p: &Path| {
            let rel = match p.strip_prefix(&self.ws) {
                Ok(rel) => rel,
                // Outside the workspace: all of it.
                Err(_) => return true,
            };
            ["toolhost.toml", "hooks", "secrets", ".git/config"].iter().any(|g| rel.starts_with(g))
        });
        out
    }
}

fn walk(dir: &Path, out: &mut BTreeMap<PathBuf, String>, guarded: &dyn Fn(&Path) -> bool) {
    for entry in fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        let meta = fs::symlink_metadata(&path).unwrap();
        let what = if meta.is_symlink() {
            format!("link -> {} (ino {})", fs::read_link(&path).unwrap().display(), meta.ino())
        } else if meta.is_dir() {
            format!("dir (ino {})", meta.ino())
        } else {
            let content = String::from_utf8_lossy(&fs::read(&path).unwrap()).into_owned();
            format!("file {content:?} (ino {}, links {})", meta.ino(), meta.nlink())
        };
        if meta.is_dir() {
            walk(&path, out, guarded);
        }
        if guarded(&path) {
            out.insert(path, what);
        }
    }
}

/// Hostile over the workspace (its default grant: the workspace, read-write), with the config
/// and the hook directory protected, the denied subtree and the default asks.
async fn hostile_runtime(ws: &Path) -> Runtime {
    let mut rt = Runtime::builder()
        .permission_mode(Mode::Bypass)
        .engine(engine())
        .workspace(ws)
        .config(config(CONFIG))
        .protect(ws.join("toolhost.toml"), "the config file in use")
        .protect(ws.join("hooks"), "the hook scripts' directory")
        .build()
        .expect("runtime");
    rt.load(ToolSource::bytes("hostile.wasm", guests::HOSTILE)).await.expect("load Hostile");
    rt
}

/// Counts of one campaign.
#[derive(Debug, Default)]
struct Tally {
    sequences: usize,
    steps: usize,
    ok_steps: usize,
}

fn env_u64(name: &str, default: u64) -> u64 {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

/// Run `cases` generated sequences (1 or 2 calls of 1–14 steps each) and check the
/// invariants after each.
fn campaign(cases: u32, seed: u64) -> Tally {
    let tree = Tree::new();
    let before = tree.guarded();
    assert!(before.len() >= 8, "the guarded set is what the tree holds: {before:#?}");
    let tokio = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let rt = tokio.block_on(hostile_runtime(&tree.ws));
    let session = Session::new();
    let sequence = prop::collection::vec(prop::collection::vec(raw_step(), 1..15), 1..3);
    let mut seed_bytes = [0u8; 32];
    seed_bytes[..8].copy_from_slice(&seed.to_le_bytes());
    let rng = TestRng::from_seed(RngAlgorithm::ChaCha, &seed_bytes);
    let config = Config { cases, failure_persistence: None, ..Config::default() };
    let mut runner = TestRunner::new_with_rng(config, rng);
    let tally = std::cell::RefCell::new(Tally::default());
    let outcome = runner.run(&sequence, |calls| {
        tree.reset();
        let before = tree.guarded();
        tally.borrow_mut().sequences += 1;
        // One model per sequence: what the first call made, the second may meet.
        let mut model = Model::new(&tree.ws);
        let mut shown = Vec::new();
        for raw in &calls {
            let steps: Vec<Value> = raw.iter().flat_map(|r| model.steps(r)).collect();
            let input = json!({"op": "steps", "steps": steps});
            shown.push(input.clone());
            let result = tokio.block_on(call(&rt, &session, "Hostile", input));
            let text = result.text();
            if std::env::var("ATTACK_SHOW").is_ok() {
                eprintln!("{steps:?}\n=> {text}\n");
            }
            prop_assert!(
                !matches!(result.outcome, OutcomeKind::Trap | OutcomeKind::HostError | OutcomeKind::Panic),
                "{:?}: {text}\n{shown:#}",
                result.outcome,
                shown = Value::from(shown.clone())
            );
            prop_assert!(!text.contains(SECRET), "denied content came back: {text}\n{:#}", Value::from(shown.clone()));
            prop_assert!(
                !text.contains(&format!("size: {SECRET_SIZE} ")),
                "a denied file's size came back: {text}\n{:#}",
                Value::from(shown.clone())
            );
            let mut t = tally.borrow_mut();
            t.steps += steps.len();
            t.ok_steps += text.lines().filter(|l| l.starts_with("ok:")).count();
        }
        let after = tree.guarded();
        if after != before {
            let changed: Vec<String> = after
                .iter()
                .filter(|(p, w)| before.get(*p) != Some(*w))
                .map(|(p, w)| format!("{}: {w}", p.display()))
                .chain(before.keys().filter(|p| !after.contains_key(*p)).map(|p| format!("{}: gone", p.display())))
                .collect();
            return Err(TestCaseError::fail(format!("{:#}\nchanged {changed:#?}", Value::from(shown))));
        }
        Ok(())
    });
    if let Err(e) = outcome {
        panic!("seed {seed}: {e}");
    }
    tally.into_inner()
}

/// The guard's property, over generated sequences: no sequence of file operations in one call
/// changes a protected file, the denied subtree or anything outside the grant, or returns what
/// a deny rule hides.
#[test]
fn generated_sequences_keep_every_guarded_file() {
    let cases = env_u64("ATTACK_CASES", 2000) as u32;
    let seed = env_u64("ATTACK_SEED", 0);
    let start = std::time::Instant::now();
    let t = campaign(cases, seed);
    eprintln!(
        "attacks: seed {seed}, {} sequences, {} steps ({} succeeded) in {:.1} s",
        t.sequences,
        t.steps,
        t.ok_steps,
        start.elapsed().as_secs_f64()
    );
    // Without steps that did what they asked, the property would hold of a sandbox that
    // refuses everything.
    assert!(t.ok_steps * 5 > t.steps, "too few steps succeeded: {t:?}");
}
