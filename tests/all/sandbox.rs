//! The sandbox, probed from inside with std and paths exactly as given: only granted
//! directories and variables are reachable, read-only grants refuse writes, `validate` has no
//! capabilities, and no path form (absolute, `..`, symlink) reaches outside a grant.

use serde_json::{Value, json};
use std::fs;
use std::path::Path;
use toolhost::{OutcomeKind, Runtime, Session, ToolResult, ToolSource};
use toolhost_tests::{call, config, engine, guests, workspace};

const SECRET: &str = "TOP-SECRET-a7f3c9";

/// A runtime over `ws` with Probe under `toml` (default grant: the workspace, read-write).
async fn probe_runtime(ws: &Path, toml: &str) -> Runtime {
    let mut rt = Runtime::builder()
        .permission_mode(toolhost::policy::Mode::Bypass)
        .engine(engine())
        .workspace(ws)
        .config(config(toml))
        .env([("TOOLHOST_TEST_VAR".into(), "yes".into()), ("TOOLHOST_OTHER_VAR".into(), "no".into())])
        .build()
        .expect("runtime");
    rt.load(ToolSource::bytes("probe.wasm", guests::PROBE)).await.expect("load Probe");
    rt
}

async fn probe(rt: &Runtime, input: Value) -> ToolResult {
    call(rt, &Session::new(), "Probe", input).await
}

fn ok(result: &ToolResult) -> String {
    assert!(!result.is_error, "expected success, got {result:?}");
    result.text()
}

/// A directory outside the workspace holding a secret file.
fn outside() -> tempfile::TempDir {
    let dir = workspace();
    fs::write(dir.path().join("secret"), SECRET).unwrap();
    dir
}

/// The read failed and leaked nothing.
fn refused(result: &ToolResult) {
    assert!(result.is_error, "expected a refusal, got {result:?}");
    assert!(!result.text().contains(SECRET), "the secret leaked: {result:?}");
    // Refused by the sandbox and reported by the tool (or its validate): not a schema error,
    // a trap or a host error that would prove nothing about the sandbox.
    assert!(
        matches!(result.outcome, OutcomeKind::Denied | OutcomeKind::InvalidInput | OutcomeKind::ValidateError),
        "the probe did not run into the sandbox: {result:?}"
    );
}

/// Every file under `dir`, recursively (relative paths).
fn files_under(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else {
                out.push(p.strip_prefix(dir).unwrap().display().to_string());
            }
        }
    }
    out.sort();
    out
}

#[tokio::test(flavor = "multi_thread")]
async fn relative_and_absolute_paths_inside_the_workspace_work() {
    let ws = workspace();
    fs::write(ws.path().join("data.txt"), "hello from the workspace").unwrap();
    fs::create_dir(ws.path().join("sub")).unwrap();
    fs::write(ws.path().join("sub/inner.txt"), "inner").unwrap();
    let rt = probe_runtime(ws.path(), "").await;
    let abs = rt.workspace().join("data.txt").display().to_string();

    assert_eq!(ok(&probe(&rt, json!({"op": "read", "path": "data.txt"})).await), "hello from the workspace");
    assert_eq!(ok(&probe(&rt, json!({"op": "read", "path": "./sub/inner.txt"})).await), "inner");
    assert_eq!(ok(&probe(&rt, json!({"op": "read", "path": abs})).await), "hello from the workspace");
    // `..` that stays inside the workspace is fine.
    assert_eq!(ok(&probe(&rt, json!({"op": "read", "path": "sub/../data.txt"})).await), "hello from the workspace");
    assert_eq!(ok(&probe(&rt, json!({"op": "list", "path": "."})).await), "data.txt\nsub");

    // The default grant is read-write: relative and absolute writes land in the workspace.
    assert_eq!(ok(&probe(&rt, json!({"op": "write", "path": "out.txt", "content": "12345"})).await), "wrote 5 bytes");
    assert_eq!(fs::read_to_string(ws.path().join("out.txt")).unwrap(), "12345");
    let abs_out = rt.workspace().join("sub/abs.txt").display().to_string();
    ok(&probe(&rt, json!({"op": "write", "path": abs_out, "content": "abs"})).await);
    assert_eq!(fs::read_to_string(ws.path().join("sub/abs.txt")).unwrap(), "abs");
}

#[tokio::test(flavor = "multi_thread")]
async fn reading_outside_the_grant_by_absolute_path_fails() {
    let ws = workspace();
    let other = outside();
    let rt = probe_runtime(ws.path(), "").await;
    let secret = other.path().canonicalize().unwrap().join("secret").display().to_string();
    refused(&probe(&rt, json!({"op": "read", "path": secret})).await);
    let dir = other.path().canonicalize().unwrap().display().to_string();
    refused(&probe(&rt, json!({"op": "list", "path": dir})).await);
    refused(&probe(&rt, json!({"op": "read", "path": "/etc/passwd"})).await);
}

#[tokio::test(flavor = "multi_thread")]
async fn reading_outside_the_grant_through_dot_dot_fails() {
    let ws = workspace();
    let other = outside();
    let rt = probe_runtime(ws.path(), "").await;
    let name = other.path().file_name().unwrap().to_str().unwrap().to_string();
    // Both temporary directories live side by side, so this is the secret's path seen from the
    // workspace.
    assert!(ws.path().join("..").join(&name).join("secret").is_file());
    refused(&probe(&rt, json!({"op": "read", "path": format!("../{name}/secret")})).await);
    refused(&probe(&rt, json!({"op": "read", "path": format!("./../{name}/secret")})).await);
    let abs_dotdot = rt.workspace().join("..").join(&name).join("secret").display().to_string();
    refused(&probe(&rt, json!({"op": "read", "path": abs_dotdot})).await);
    refused(&probe(&rt, json!({"op": "list", "path": ".."})).await);
}

#[cfg(unix)]
#[tokio::test(flavor = "multi_thread")]
async fn symlinks_cannot_escape_the_workspace() {
    let ws = workspace();
    let other = outside();
    std::os::unix::fs::symlink(other.path().join("secret"), ws.path().join("link-to-secret")).unwrap();
    std::os::unix::fs::symlink(other.path(), ws.path().join("link-to-dir")).unwrap();
    let rt = probe_runtime(ws.path(), "").await;
    refused(&probe(&rt, json!({"op": "read", "path": "link-to-secret"})).await);
    refused(&probe(&rt, json!({"op": "read", "path": "link-to-dir/secret"})).await);
    let abs_link = rt.workspace().join("link-to-secret").display().to_string();
    refused(&probe(&rt, json!({"op": "read", "path": abs_link})).await);
    // Nor write through one.
    let wrote = probe(&rt, json!({"op": "write", "path": "link-to-dir/planted.txt", "content": "x"})).await;
    assert!(wrote.is_error, "{wrote:?}");
    assert!(!other.path().join("planted.txt").exists(), "a file was planted outside the workspace");
    assert_eq!(files_under(other.path()), ["secret"]);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_read_only_grant_refuses_writes() {
    let ws = workspace();
    fs::write(ws.path().join("data.txt"), "original").unwrap();
    let rt = probe_runtime(ws.path(), "[tools.Probe]\ngrant = { fs_read = [\".\"] }").await;
    // Reading still works.
    assert_eq!(ok(&probe(&rt, json!({"op": "read", "path": "data.txt"})).await), "original");

    let created = probe(&rt, json!({"op": "write", "path": "new.txt", "content": "x"})).await;
    assert!(created.is_error, "{created:?}");
    assert_eq!(created.outcome, OutcomeKind::Denied, "{created:?}");
    assert!(!ws.path().join("new.txt").exists(), "the file was created");

    let abs = rt.workspace().join("new-abs.txt").display().to_string();
    let created_abs = probe(&rt, json!({"op": "write", "path": abs, "content": "x"})).await;
    assert_eq!(created_abs.outcome, OutcomeKind::Denied, "{created_abs:?}");
    assert!(!ws.path().join("new-abs.txt").exists(), "the file was created");

    let overwritten = probe(&rt, json!({"op": "write", "path": "data.txt", "content": "changed"})).await;
    assert_eq!(overwritten.outcome, OutcomeKind::Denied, "{overwritten:?}");
    assert_eq!(fs::read_to_string(ws.path().join("data.txt")).unwrap(), "original");
    assert_eq!(files_under(ws.path()), ["data.txt"]);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_grant_of_nothing_reaches_no_files() {
    let ws = workspace();
    fs::write(ws.path().join("data.txt"), SECRET).unwrap();
    let rt = probe_runtime(ws.path(), "[tools.Probe]\ngrant = {}").await;
    refused(&probe(&rt, json!({"op": "read", "path": "data.txt"})).await);
    let abs = rt.workspace().join("data.txt").display().to_string();
    refused(&probe(&rt, json!({"op": "read", "path": abs})).await);
    let wrote = probe(&rt, json!({"op": "write", "path": "new.txt", "content": "x"})).await;
    assert!(wrote.is_error, "{wrote:?}");
    assert_eq!(files_under(ws.path()), ["data.txt"]);
}

#[tokio::test(flavor = "multi_thread")]
async fn only_granted_environment_variables_are_visible() {
    let ws = workspace();
    let env = |name: &str| json!({"op": "env", "name": name});

    // The default grant names no variables.
    let rt = probe_runtime(ws.path(), "").await;
    assert_eq!(ok(&probe(&rt, env("TOOLHOST_TEST_VAR")).await), "unset");
    assert_eq!(ok(&probe(&rt, env("TOOLHOST_OTHER_VAR")).await), "unset");
    // The library never passes on the process's own environment.
    assert_eq!(ok(&probe(&rt, env("PATH")).await), "unset");

    let rt = probe_runtime(ws.path(), "[tools.Probe]\ngrant = { env = [\"TOOLHOST_TEST_VAR\"] }").await;
    assert_eq!(ok(&probe(&rt, env("TOOLHOST_TEST_VAR")).await), "yes");
    assert_eq!(ok(&probe(&rt, env("TOOLHOST_OTHER_VAR")).await), "unset");
    assert_eq!(ok(&probe(&rt, env("PATH")).await), "unset");
}

#[tokio::test(flavor = "multi_thread")]
async fn validate_runs_without_file_access() {
    let ws = workspace();
    fs::write(ws.path().join("data.txt"), SECRET).unwrap();
    let rt = probe_runtime(ws.path(), "").await;
    // The call itself may read it...
    assert_eq!(ok(&probe(&rt, json!({"op": "read", "path": "data.txt"})).await), SECRET);
    // ...validate may not, neither by relative nor by absolute path.
    let abs = rt.workspace().join("data.txt").display().to_string();
    for path in ["data.txt".to_string(), abs] {
        let result = probe(&rt, json!({"op": "read_in_validate", "path": path})).await;
        refused(&result);
        assert_eq!(result.outcome, OutcomeKind::ValidateError, "{result:?}");
        assert!(result.text().contains("validate was refused"), "{result:?}");
    }
}

/// Writing by absolute path to a directory outside every grant fails and creates nothing,
/// neither there nor in the workspace. `/` is outside every grant here; wasi-libc maps an
/// absolute path that matches no preopen onto the `.` preopen (the workspace), so this also
/// catches a write to `/NAME` landing in `WORKSPACE/NAME`.
#[tokio::test(flavor = "multi_thread")]
async fn writing_outside_every_grant_creates_nothing_anywhere() {
    let ws = workspace();
    let other = outside();
    let rt = probe_runtime(ws.path(), "").await;

    let in_other = other.path().canonicalize().unwrap().join("planted.txt").display().to_string();
    let result = probe(&rt, json!({"op": "write", "path": in_other, "content": "x"})).await;
    assert!(result.is_error, "{result:?}");
    assert_eq!(files_under(other.path()), ["secret"]);

    let name = format!("toolhost-sandbox-probe-{}.txt", std::process::id());
    let at_root = format!("/{name}");
    let result = probe(&rt, json!({"op": "write", "path": at_root, "content": "x"})).await;
    let root_file = Path::new(&at_root);
    let created_at_root = root_file.exists();
    if created_at_root {
        let _ = fs::remove_file(root_file);
    }
    assert!(!created_at_root, "{at_root} was created on the host");
    assert!(files_under(ws.path()).is_empty(), "the write landed in the workspace: {:?}", files_under(ws.path()));
    assert!(result.is_error, "writing {at_root} (outside every grant) succeeded: {result:?}");
}

/// An absolute path outside every grant must not be read from the workspace instead (the same
/// mapping of unmatched absolute paths onto `.` as above).
#[tokio::test(flavor = "multi_thread")]
async fn absolute_paths_outside_every_grant_do_not_resolve_into_the_workspace() {
    let ws = workspace();
    let name = format!("toolhost-sandbox-probe-{}.txt", std::process::id());
    fs::write(ws.path().join(&name), "workspace content").unwrap();
    assert!(!Path::new("/").join(&name).exists());
    let rt = probe_runtime(ws.path(), "").await;
    let read = probe(&rt, json!({"op": "read", "path": format!("/{name}")})).await;
    assert!(read.is_error, "reading /{name} returned the workspace's {name}: {read:?}");
    let listed = probe(&rt, json!({"op": "list", "path": "/"})).await;
    assert!(listed.is_error || !listed.text().lines().any(|l| l == name), "listing / showed the workspace: {listed:?}");
}
