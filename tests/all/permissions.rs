//! Permissions through the whole pipeline with the real default tools: the safe defaults
//! (read inside the workspace, ask before writing, denied when no one can be asked), rules
//! from the config and the builder, every mode, and a decider answering questions.

use async_trait::async_trait;
use serde_json::json;
use std::path::Path;
use std::sync::{Arc, Mutex};
use toolhost::policy::{Config, Mode};
use toolhost::{AskAnswer, AskRequest, OutcomeKind, PermissionDecider, Runtime, RuntimeBuilder, Session, ToolUse};
use toolhost_tests::{call, config, default_tools, engine, workspace};

/// A runtime over `ws` with the default tools, built by `with` from a plain builder (no mode,
/// no rules: the defaults a new user gets).
async fn runtime_with(ws: &Path, cfg: Config, with: impl FnOnce(RuntimeBuilder) -> RuntimeBuilder) -> Runtime {
    let mut rt = with(Runtime::builder().engine(engine()).workspace(ws).config(cfg)).build().expect("runtime");
    for s in default_tools() {
        rt.load(s).await.expect("load");
    }
    rt
}

fn write(path: &str) -> serde_json::Value {
    json!({"file_path": path, "content": "new\n"})
}

#[tokio::test]
async fn defaults_read_inside_the_workspace_and_deny_writes_when_no_one_can_be_asked() {
    let ws = workspace();
    std::fs::write(ws.path().join("a.txt"), "hello\n").unwrap();
    let rt = runtime_with(ws.path(), Config::default(), |b| b).await;
    let s = Session::new();

    let read = call(&rt, &s, "Read", json!({"file_path": "a.txt"})).await;
    assert!(!read.is_error, "{}", read.text());
    let grep = call(&rt, &s, "Grep", json!({"pattern": "hello"})).await;
    assert!(!grep.is_error, "a search without a path stays in the workspace: {}", grep.text());

    let w = call(&rt, &s, "Write", write("b.txt")).await;
    assert_eq!(w.outcome, OutcomeKind::PermissionDenied, "{}", w.text());
    assert!(w.text().contains("no one to ask") && w.text().contains("Write(b.txt)"), "{}", w.text());
    assert!(!ws.path().join("b.txt").exists(), "a denied call never runs");

    let outside = call(&rt, &s, "Read", json!({"file_path": "/etc/hostname"})).await;
    assert_eq!(outside.outcome, OutcomeKind::PermissionDenied, "{}", outside.text());
    assert!(outside.text().contains("Read(//etc/hostname)"), "{}", outside.text());
}

#[tokio::test]
async fn config_rules_deny_beats_ask_beats_allow() {
    let ws = workspace();
    std::fs::create_dir_all(ws.path().join("notes")).unwrap();
    std::fs::create_dir_all(ws.path().join(".git")).unwrap();
    let cfg = config(
        r#"
[permissions]
allow = ["Write", "Edit"]
ask = ["Write(secret/**)"]
deny = ["Write(.git/**)", "Read(*.key)"]
"#,
    );
    let rt = runtime_with(ws.path(), cfg, |b| b).await;
    let s = Session::new();
    assert!(!call(&rt, &s, "Write", write("notes/a.md")).await.is_error);
    let git = call(&rt, &s, "Write", write(".git/config")).await;
    assert_eq!(git.outcome, OutcomeKind::PermissionDenied);
    assert!(git.text().contains("Write(.git/**)"), "{}", git.text());
    let secret = call(&rt, &s, "Write", write("secret/x")).await;
    assert_eq!(secret.outcome, OutcomeKind::PermissionDenied, "an ask rule beats an allow rule");
    assert!(secret.text().contains("Write(secret/**)"), "{}", secret.text());
    // Read(…) deny rules cover every read-only tool with a path, as in Claude Code.
    std::fs::write(ws.path().join("id.key"), "k").unwrap();
    let grep = call(&rt, &s, "Grep", json!({"pattern": "k", "path": "id.key"})).await;
    assert_eq!(grep.outcome, OutcomeKind::PermissionDenied, "{}", grep.text());
}

#[tokio::test]
async fn every_mode() {
    let ws = workspace();
    let outside = workspace();
    let out = outside.path().join("x.txt");
    let out = out.to_str().unwrap();
    let cfg = |mode: &str| config(&format!("[permissions]\nmode = \"{mode}\"\nask = [\"Read(private/**)\"]\n"));
    let s = Session::new();

    let rt = runtime_with(ws.path(), cfg("accept-edits"), |b| b).await;
    assert!(!call(&rt, &s, "Write", write("in.txt")).await.is_error, "accept-edits: writes inside run");
    assert_eq!(call(&rt, &s, "Write", write(out)).await.outcome, OutcomeKind::PermissionDenied, "outside still asks");

    let rt = runtime_with(ws.path(), cfg("plan"), |b| b).await;
    assert_eq!(call(&rt, &s, "Write", write("in.txt")).await.outcome, OutcomeKind::PermissionDenied);
    assert!(!call(&rt, &s, "Read", json!({"file_path": "in.txt"})).await.is_error, "plan: reads run");

    let rt = runtime_with(ws.path(), cfg("dont-ask"), |b| b).await;
    let r = call(&rt, &s, "Read", json!({"file_path": "private/k"})).await;
    assert_eq!(r.outcome, OutcomeKind::PermissionDenied);
    assert!(r.text().contains("dont-ask"), "{}", r.text());

    // Bypass allows what no rule denies; the sandbox still holds: the write outside the
    // workspace is refused by the grant, not by the permission check.
    let rt = runtime_with(ws.path(), cfg("bypass"), |b| b.deny_rule("Write(locked.txt)".parse().unwrap())).await;
    assert!(!call(&rt, &s, "Write", write("other.txt")).await.is_error);
    assert_eq!(call(&rt, &s, "Write", write("locked.txt")).await.outcome, OutcomeKind::PermissionDenied);
    let escaped = call(&rt, &s, "Write", write(out)).await;
    assert_eq!(escaped.outcome, OutcomeKind::Denied, "{}", escaped.text());
    assert!(!Path::new(out).exists());

    // The builder's mode overrides the config's.
    let rt = runtime_with(ws.path(), cfg("bypass"), |b| b.permission_mode(Mode::Default)).await;
    assert_eq!(rt.permission_mode(), Mode::Default);
    assert_eq!(call(&rt, &s, "Write", write("x.txt")).await.outcome, OutcomeKind::PermissionDenied);
}

/// Answers from a script and records every question.
struct Scripted {
    answers: Mutex<Vec<AskAnswer>>,
    asked: Mutex<Vec<AskRequest>>,
    at_once: Mutex<(usize, usize)>,
}

#[async_trait]
impl PermissionDecider for Scripted {
    async fn ask(&self, request: &AskRequest) -> AskAnswer {
        {
            let mut c = self.at_once.lock().unwrap();
            c.0 += 1;
            c.1 = c.1.max(c.0);
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        self.asked.lock().unwrap().push(request.clone());
        self.at_once.lock().unwrap().0 -= 1;
        self.answers.lock().unwrap().remove(0)
    }
}

fn scripted(answers: Vec<AskAnswer>) -> Arc<Scripted> {
    Arc::new(Scripted { answers: Mutex::new(answers), asked: Mutex::default(), at_once: Mutex::default() })
}

#[tokio::test]
async fn a_decider_answers_once_always_or_no() {
    let ws = workspace();
    let d = scripted(vec![AskAnswer::AllowOnce, AskAnswer::Deny(Some("not today".into())), AskAnswer::AllowAlways]);
    let rt = runtime_with(ws.path(), Config::default(), |b| b.decider(d.clone())).await;
    let s = Session::new();

    assert!(!call(&rt, &s, "Write", write("a.txt")).await.is_error, "allowed once");
    let no = call(&rt, &s, "Write", write("b.txt")).await;
    assert_eq!(no.outcome, OutcomeKind::PermissionDenied);
    assert!(no.text().contains("denied by the user: not today"), "{}", no.text());
    assert!(!ws.path().join("b.txt").exists());
    assert!(!call(&rt, &s, "Write", write("c.txt")).await.is_error, "allowed always");
    assert!(!call(&rt, &s, "Write", write("d.txt")).await.is_error, "no question after always");
    let asked = d.asked.lock().unwrap();
    assert_eq!(asked.len(), 3, "{asked:?}");
    assert_eq!(asked[0].tool, "Write");
    assert_eq!(asked[0].subject.as_deref(), Some("a.txt"));
    assert_eq!(asked[0].suggested_rule, "Write(a.txt)");
    assert_eq!(asked[0].input["content"], "new\n");
}

#[tokio::test]
async fn parallel_calls_are_asked_one_at_a_time_and_always_covers_the_rest() {
    let ws = workspace();
    let outside = workspace();
    for i in 0..4 {
        std::fs::write(outside.path().join(format!("{i}.txt")), "x").unwrap();
    }
    let cfg = config(&format!("[tools.Read]\ngrant = {{ fs_read = [\".\", {:?}] }}\n", outside.path()));
    let d = scripted(vec![AskAnswer::AllowAlways]);
    let rt = Arc::new(runtime_with(ws.path(), cfg, |b| b.decider(d.clone())).await);
    let calls: Vec<ToolUse> = (0..4)
        .map(|i| {
            let p = outside.path().join(format!("{i}.txt"));
            ToolUse::new(format!("toolu_{i}"), "Read", json!({"file_path": p}))
        })
        .collect();
    let results = rt.run_batch(&Session::new(), &calls, toolhost::CallOptions::new()).await;
    for r in &results {
        assert!(!r.is_error, "{}", r.text());
    }
    assert_eq!(d.asked.lock().unwrap().len(), 1, "the first answer (always) covers the other calls");
    assert_eq!(d.at_once.lock().unwrap().1, 1, "never two questions at once");
}
