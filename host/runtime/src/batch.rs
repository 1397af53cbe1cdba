//! A whole assistant turn: `tool_use` blocks in (all at once, or one by one as a model streams
//! them), one `tool_result` per block out, in model order, each as soon as order allows.
//!
//! As in Claude Code's `runTools`: each call is asked whether it is concurrency-safe (only once
//! its input passed the schema; an unknown tool, a schema failure, a trap or a timeout mean
//! "no"); consecutive safe calls run in parallel, at most `max_concurrency` at once, each on
//! its own store and with its file grants read-only; any other call waits for the running ones
//! and runs alone. Context updates of a parallel group are applied when the whole group is
//! done, in model order; those of a call run alone, at once.

use crate::pipeline::{Access, Updates};
use crate::result::ToolResult;
use crate::runtime::Runtime;
use crate::session::Session;
use crate::{OutcomeKind, ToolUse};
use std::collections::{BTreeMap, HashSet, VecDeque};
use std::sync::Arc;
use tokio::sync::{Semaphore, mpsc};
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

/// One entry of a turn, in model order.
#[derive(Debug, Clone)]
pub enum Submission {
    /// A call to run.
    Call(ToolUse),
    /// A block already answered without running anything (e.g. a malformed block whose id is
    /// known): it keeps its place in the order of results.
    Answered(ToolResult),
}

/// A call waiting to start.
struct Pending {
    index: usize,
    call: ToolUse,
    safe: bool,
}

impl Runtime {
    /// Run a turn's calls and return their results in the calls' order. Never fails: a
    /// duplicate id, an unknown tool or a host fault each become an error result.
    pub async fn run_batch(self: &Arc<Self>, session: &Session, calls: &[ToolUse]) -> Vec<ToolResult> {
        self.run_batch_cancellable(session, calls, &CancellationToken::new()).await
    }

    /// [`Runtime::run_batch`] that `cancel` can abort: running calls are interrupted at the
    /// next epoch tick, queued calls never start, and every call still gets a result
    /// ("Interrupted by user").
    pub async fn run_batch_cancellable(
        self: &Arc<Self>,
        session: &Session,
        calls: &[ToolUse],
        cancel: &CancellationToken,
    ) -> Vec<ToolResult> {
        let (tx, rx) = mpsc::channel(calls.len().max(1));
        for call in calls {
            // The receiver is alive and the channel has room for every call.
            let _ = tx.try_send(Submission::Call(call.clone()));
        }
        drop(tx);
        let mut results = Vec::with_capacity(calls.len());
        self.run_turn(session, rx, cancel, |r| results.push(r)).await;
        results
    }

    /// Run a turn whose blocks arrive over `submissions` (e.g. while a model is still
    /// streaming): a safe call starts at once beside other running safe calls, an unsafe one
    /// waits for them and runs alone. `emit` gets every result in model order, each as soon
    /// as all earlier ones are out. Returns when `submissions` is closed and every call is
    /// answered.
    pub async fn run_turn(
        self: &Arc<Self>,
        session: &Session,
        mut submissions: mpsc::Receiver<Submission>,
        cancel: &CancellationToken,
        mut emit: impl FnMut(ToolResult),
    ) {
        let permits = Arc::new(Semaphore::new(self.max_concurrency));
        let mut running: JoinSet<(usize, ToolResult, Updates)> = JoinSet::new();
        // The running calls (task id → index and tool_use id), and whether they form a
        // parallel group.
        let mut running_ids: Vec<(tokio::task::Id, usize, String)> = Vec::new();
        let mut running_parallel = false;
        // Results of the current parallel group, applied when it is over.
        let mut group: BTreeMap<usize, Updates> = BTreeMap::new();
        let mut pending: VecDeque<Pending> = VecDeque::new();
        let mut finished: BTreeMap<usize, ToolResult> = BTreeMap::new();
        let mut next_emit = 0usize;
        let mut next_index = 0usize;
        let mut seen: HashSet<String> = HashSet::new();
        let mut open = true;

        loop {
            // Start what may start: safe calls beside running safe calls, an unsafe call alone.
            while let Some(front) = pending.front() {
                let can_start = running_ids.is_empty() || (front.safe && running_parallel);
                if !can_start {
                    break;
                }
                let Pending { index, call, safe } = pending.pop_front().expect("front exists");
                running_parallel = safe;
                let id = call.id.clone();
                let (rt, context, permits, cancel) = (self.clone(), session.view(), permits.clone(), cancel.clone());
                let access = if safe { Access::ReadOnly } else { Access::Granted };
                let task = running.spawn(async move {
                    // Queued calls start in model order as permits free up.
                    let _permit = permits.acquire_owned().await.expect("the semaphore is never closed");
                    let (result, updates) = rt.run_one(&call, context, access, &cancel).await;
                    (index, result, updates)
                });
                running_ids.push((task.id(), index, id));
            }

            while let Some(result) = finished.remove(&next_emit) {
                emit(result);
                next_emit += 1;
            }
            if !open && pending.is_empty() && running_ids.is_empty() {
                break;
            }

            // Take every block that has already arrived before looking at finished calls, so a
            // turn known in full forms maximal parallel groups; a streamed turn forms them as
            // its blocks arrive.
            tokio::select! {
                biased;
                incoming = submissions.recv(), if open => match incoming {
                    None => open = false,
                    Some(Submission::Answered(result)) => {
                        finished.insert(next_index, result);
                        next_index += 1;
                    }
                    Some(Submission::Call(call)) => {
                        let index = next_index;
                        next_index += 1;
                        if !seen.insert(call.id.clone()) {
                            // A repeated id cannot be paired unambiguously: refused, not run.
                            let message = format!(
                                "<tool_use_error>Error: duplicate tool_use id {:?}; this call was not run</tool_use_error>",
                                call.id
                            );
                            finished.insert(index, ToolResult::error(&call.id, OutcomeKind::SchemaError, message));
                            continue;
                        }
                        // Once aborted, nothing more is asked of any tool.
                        let safe = !cancel.is_cancelled() && self.is_concurrency_safe(&call).await;
                        pending.push_back(Pending { index, call, safe });
                    }
                },
                Some(joined) = running.join_next(), if !running.is_empty() => {
                    let (index, result, updates) = match joined {
                        Ok(done) => done,
                        Err(e) => {
                            // A host fault in one call's task: that call still gets a result.
                            tracing::error!("a call task failed: {e}");
                            let Some((_, index, id)) = running_ids.iter().find(|(t, ..)| *t == e.id()).cloned() else { continue };
                            let message = "toolhost failed while running this call (host fault)";
                            (index, ToolResult::error(&id, OutcomeKind::HostError, message), Updates::default())
                        }
                    };
                    running_ids.retain(|(_, i, _)| *i != index);
                    finished.insert(index, result);
                    if running_parallel {
                        group.insert(index, updates);
                        if running_ids.is_empty() {
                            // The group is over: its updates apply in model order.
                            // A result already handed out cannot take back its updates' refusal.
                            for (i, updates) in std::mem::take(&mut group) {
                                self.apply_updates(session, updates, finished.get_mut(&i));
                            }
                        }
                    } else {
                        self.apply_updates(session, updates, finished.get_mut(&index));
                    }
                },
            }
        }
    }
}
