//! Asking a person at the terminal whether a call may run: allow once, allow the tool for the
//! rest of this run, or deny. The question goes to `/dev/tty`, so it works while stdin carries
//! tool_use blocks and stdout carries results.

use crate::setup::printable;
use async_trait::async_trait;
use std::fs::{File, OpenOptions};
use std::io::{BufRead, BufReader, IsTerminal, Write};
use std::sync::Arc;
use toolhost::{Answer, AskAnswer, AskRequest, PermissionDecider, Question};

/// Called around a question: hides (`true`) and restores (`false`) the live display.
pub type Pause = Arc<dyn Fn(bool) + Send + Sync>;

/// Asks on the controlling terminal.
pub struct TtyDecider {
    pause: Option<Pause>,
    /// One question on the terminal at a time: the runtime serialises its own, but an MCP
    /// server's questions come from elsewhere.
    terminal: tokio::sync::Mutex<()>,
}

impl TtyDecider {
    /// A decider when a person can answer: stderr is a terminal (someone is watching) and the
    /// process has a controlling terminal. With output captured by a program or on CI there
    /// is none, and every ask is a denial naming the rule to add.
    pub fn if_interactive(pause: Option<Pause>) -> Option<Self> {
        if !std::io::stderr().is_terminal() || open_tty().is_err() {
            return None;
        }
        Some(TtyDecider { pause, terminal: tokio::sync::Mutex::new(()) })
    }
}

fn open_tty() -> std::io::Result<File> {
    OpenOptions::new().read(true).write(true).open("/dev/tty")
}

#[async_trait]
impl PermissionDecider for TtyDecider {
    async fn ask(&self, request: &AskRequest) -> AskAnswer {
        let _one_at_a_time = self.terminal.lock().await;
        let question = question(request);
        let session_rule = request.session_rule.clone();
        if let Some(pause) = &self.pause {
            pause(true);
        }
        // A plain thread, not a blocking task: a person who never answers must not keep the
        // process alive after Ctrl-C.
        let (tx, rx) = tokio::sync::oneshot::channel();
        std::thread::spawn(move || {
            let _ = tx.send(prompt(&question, &session_rule));
        });
        let answer = rx.await.unwrap_or_else(|_| AskAnswer::Deny(Some("the question could not be asked".into())));
        if let Some(pause) = &self.pause {
            pause(false);
        }
        answer
    }

    /// A tool's own question: its form, field by field, on the terminal (see `form.rs`).
    async fn elicit(&self, question: &Question) -> Answer {
        let _one_at_a_time = self.terminal.lock().await;
        if let Some(pause) = &self.pause {
            pause(true);
        }
        let (tx, rx) = tokio::sync::oneshot::channel();
        let question = question.clone();
        std::thread::spawn(move || {
            let answer = match open_tty().and_then(|tty| Ok((tty.try_clone()?, tty))) {
                Ok((reader, mut tty)) => crate::form::fill(&question, &mut BufReader::new(reader), &mut tty),
                Err(_) => Answer::Cancel,
            };
            let _ = tx.send(answer);
        });
        let answer = rx.await.unwrap_or(Answer::Cancel);
        if let Some(pause) = &self.pause {
            pause(false);
        }
        answer
    }
}

fn question(request: &AskRequest) -> String {
    // Every part but the frame is the call's (its input, a path from it, its id): each made
    // printable on its own, so that none can add a line to this question or redraw it.
    let what = match &request.subject {
        Some(subject) => format!("  {}: {}\n", "subject", printable(subject)),
        None => {
            let mut input = request.input.to_string();
            if input.chars().count() > 300 {
                input = input.chars().take(300).collect::<String>() + "…";
            }
            format!("  input:   {}\n", printable(&input))
        }
    };
    format!(
        "\ntoolhost: permission needed for {} ({})\n{what}  why:     {}\n",
        printable(&request.tool),
        printable(&request.tool_use_id),
        printable(&request.reason)
    )
}

/// Ask until the answer is understood; end of input or an error is a denial.
fn prompt(question: &str, session_rule: &str) -> AskAnswer {
    let Ok(mut tty) = open_tty() else { return AskAnswer::Deny(Some("no terminal to ask on".into())) };
    let Ok(reader) = tty.try_clone() else { return AskAnswer::Deny(Some("no terminal to ask on".into())) };
    let mut reader = BufReader::new(reader);
    let _ = write!(tty, "{question}");
    for _ in 0..5 {
        let _ = write!(
            tty,
            "  [1] allow once   [2] allow {session_rule} for the rest of this run   [3] deny\n  choose 1, 2 or 3: "
        );
        let _ = tty.flush();
        let mut line = String::new();
        match reader.read_line(&mut line) {
            Ok(0) | Err(_) => return AskAnswer::Deny(Some("no answer".into())),
            Ok(_) => {}
        }
        match line.trim().to_ascii_lowercase().as_str() {
            "1" | "y" | "yes" => return AskAnswer::AllowOnce,
            "2" | "a" | "always" => return AskAnswer::AllowAlways,
            "3" | "n" | "no" | "d" | "deny" => return AskAnswer::Deny(None),
            _ => {
                let _ = writeln!(tty, "  please answer 1, 2 or 3");
            }
        }
    }
    AskAnswer::Deny(Some("no understandable answer".into()))
}
