//! A whole assistant turn: `tool_use` blocks in (all at once, or one by one as a model streams
//! them), one `tool_result` per block out, in model order, each as soon as order allows.
//!
//! As in Claude Code's `runTools`: each call is asked whether it is concurrency-safe (only once
//! its input passed the schema; an unknown tool, a schema failure, a trap or a timeout mean
//! "no"); consecutive safe calls run in parallel, at most `max_concurrency` at once, each on
//! its own store and with its file grants read-only; any other call waits for the running ones
//! and runs alone, all through the runtime's [`crate::Scheduler`], shared with any other turn or
//! MCP client of that runtime. Context updates of calls that ran side by side are applied when
//! their period is over, in model order; those of a call run alone, at once.

use crate::abort::AbortOnDrop;
use crate::call::CallOptions;
use crate::call::classify::CheckedCall;
use crate::call::ctx::Access;
use crate::call::pipeline::Updates;
use crate::call::refusal::Refusal;
use crate::call::result::ToolResult;
use crate::registry::Runtime;
use crate::turns::schedule::{Hold, Running};
use crate::turns::session::{Session, SessionView};
use crate::{OutcomeKind, ToolUse};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use tokio::sync::mpsc;
use tokio::task::JoinSet;

/// One entry of a turn, in model order.
#[derive(Debug, Clone)]
pub enum Submission {
    /// A call to run.
    Call(ToolUse),
    /// A block already answered without running anything (e.g. a malformed block whose id is
    /// known): it keeps its place in the order of results.
    Answered(ToolResult),
}

/// A call of the turn that ran (or was interrupted while it waited).
struct Done {
    index: usize,
    result: ToolResult,
    updates: Updates,
    /// Its place in the scheduler; `None` when it never started.
    place: Option<Place>,
}

/// What a finished call of the turn still holds in the scheduler.
enum Place {
    /// A safe call: its slot is already free (released by its own task, so the next call starts
    /// without waiting for the turn's loop), its period stays open until its updates apply.
    Held(Hold),
    /// A call that ran alone: nothing starts until its updates are applied.
    Alone(Running),
}

impl Runtime {
    /// Run a turn's calls and return their results in the calls' order. Never fails: a
    /// duplicate id, an unknown tool or a host fault each become an error result. `options`
    /// apply to every call: cancelling them aborts the turn (running calls are interrupted at
    /// the next epoch tick, queued calls never start, and every call still gets a result).
    /// Calls run on the runtime's threads, except a batch of one call, which runs on the
    /// caller's task: from `block_on` it never leaves the caller's thread.
    pub async fn run_batch(
        self: &Arc<Self>,
        session: &Session,
        calls: &[ToolUse],
        options: CallOptions,
    ) -> Vec<ToolResult> {
        if let [call] = calls {
            return vec![self.run_single(session, call.clone(), options).await];
        }
        let (tx, rx) = mpsc::channel(calls.len().max(1));
        for call in calls {
            // The receiver is alive and the channel has room for every call.
            let _ = tx.try_send(Submission::Call(call.clone()));
        }
        drop(tx);
        // The turn's loop runs as a task on the runtime's threads, beside its calls: polled
        // from the caller's thread (often `block_on` on the main thread), every finished call
        // would wake that thread through a futex. Dropping this future still aborts the turn.
        let (rt, session, expected) = (self.clone(), session.shared(), calls.len());
        let driver = tokio::spawn(async move {
            let mut results = Vec::with_capacity(expected);
            rt.run_turn(&session, rx, options, |r| results.push(r)).await;
            results
        });
        let _abort = AbortOnDrop(vec![driver.abort_handle()]);
        match driver.await {
            Ok(results) => results,
            Err(e) => {
                // A host fault in the loop itself: every call still gets a result.
                tracing::error!("a turn's loop failed: {e}");
                let message = "toolhost failed while running this turn (host fault)";
                calls.iter().map(|c| ToolResult::error(&c.id, OutcomeKind::HostError, message)).collect()
            }
        }
    }

    /// A batch of one call, run on the caller's task: the same steps as a call of a turn
    /// (classified, admitted by the scheduler, its updates applied at the end of its period),
    /// without handing the call to a task and its result back (a caller on `block_on` runs the
    /// whole call on its own thread). A panic in the pipeline is a host-error result, as in a
    /// turn.
    pub(crate) async fn run_single(&self, session: &Session, call: ToolUse, options: CallOptions) -> ToolResult {
        let ticket = self.scheduler.ticket();
        let checked = if options.cancel.is_cancelled() { CheckedCall::unchecked(call) } else { self.check(call).await };
        let id = checked.tool_use.id.clone();
        let admission = ticket.admit(checked.is_concurrency_safe());
        let run = self.run_checked(0, checked, admission, || session.view(), None, &options);
        let run = std::panic::AssertUnwindSafe(run);
        let Ok(Done { mut result, updates, place, .. }) = futures::FutureExt::catch_unwind(run).await else {
            tracing::error!("a call panicked");
            return ToolResult::error(
                &id,
                OutcomeKind::HostError,
                "toolhost failed while running this call (host fault)",
            );
        };
        if matches!(place, Some(Place::Held(_))) {
            self.scheduler.period_over().await;
        }
        self.apply_updates(session, updates, Some(&mut result));
        drop(place);
        result
    }

    /// One call of a turn, classified: waits for `admission` (or the turn's cancellation),
    /// runs with its directories read-only when admitted as safe, and keeps its place in the
    /// scheduler until the caller applied its updates. `context` is taken once admitted: the
    /// call sees every update applied before it starts. `holds_taken` (a turn's count of
    /// holds not yet joined) is counted before the hold is taken.
    async fn run_checked(
        &self,
        index: usize,
        checked: CheckedCall,
        admission: impl Future<Output = Running>,
        context: impl FnOnce() -> SessionView,
        holds_taken: Option<&AtomicUsize>,
        options: &CallOptions,
    ) -> Done {
        let admitted = tokio::select! {
            admitted = admission => admitted,
            () = options.cancel.cancelled() => {
                let result = self.interrupted(&checked.tool_use);
                return Done { index, result, updates: Updates::default(), place: None };
            }
        };
        // The context as it is when the call starts.
        let safe = admitted.is_safe();
        let access = if safe { Access::ReadOnly } else { Access::Granted };
        let (result, updates) = self.run_one(&checked.tool_use, Some(checked.schema), context(), access, options).await;
        let place = if safe {
            if let Some(taken) = holds_taken {
                taken.fetch_add(1, Ordering::AcqRel);
            }
            Place::Held(admitted.hold())
        } else {
            Place::Alone(admitted)
        };
        Done { index, result, updates, place: Some(place) }
    }

    /// Run a turn whose blocks arrive over `submissions` (e.g. while a model is still
    /// streaming), through the runtime's [`crate::Scheduler`]: a safe call starts at once beside
    /// other running safe calls, an unsafe one waits for them and runs alone. The context
    /// updates of calls that ran side by side are applied when their period is over, in model
    /// order, before any later call starts; those of a call run alone, at once. `emit` gets
    /// every result in model order, each as soon as all earlier ones are out (a parallel call
    /// that asked for context updates: once they are applied, so a refusal reaches the model).
    /// Returns when `submissions` is closed and every call is answered.
    pub async fn run_turn(
        self: &Arc<Self>,
        session: &Session,
        mut submissions: mpsc::Receiver<Submission>,
        options: CallOptions,
        mut emit: impl FnMut(ToolResult),
    ) {
        let mut running: JoinSet<Done> = JoinSet::new();
        // The calls whose task has not been joined (task id → index and tool_use id).
        let mut running_ids: HashMap<tokio::task::Id, (usize, String)> = HashMap::new();
        // Holds taken by this turn's tasks and not yet dropped: counted before a task takes one,
        // so the loop knows when a finished safe call has not been joined yet.
        let holds_taken = Arc::new(AtomicUsize::new(0));
        // The period is over but a call of it is not joined yet: look again after a join.
        let mut awaiting_join = false;
        // Finished safe calls whose updates wait for the end of their period, with the results
        // of those that asked for updates (withheld until then: a refused update makes the
        // result an error, and the model must learn it).
        let mut held: BTreeMap<usize, (Updates, Hold, Option<ToolResult>)> = BTreeMap::new();
        let mut finished: BTreeMap<usize, ToolResult> = BTreeMap::new();
        let mut next_emit = 0usize;
        let mut next_index = 0usize;
        let mut seen: HashSet<String> = HashSet::new();
        let mut open = true;

        loop {
            while let Some(result) = finished.remove(&next_emit) {
                emit(result);
                next_emit += 1;
            }
            if !open && running_ids.is_empty() && held.is_empty() {
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
                            finished.insert(index, Refusal::duplicate_id(&call.id).into_result(&call.id));
                            continue;
                        }
                        // Its place in the order is taken before it is classified.
                        let ticket = self.scheduler.ticket();
                        let id = call.id.clone();
                        // Once aborted, nothing more is asked of any tool.
                        let checked = if options.cancel.is_cancelled() {
                            CheckedCall::unchecked(call)
                        } else {
                            self.check(call).await
                        };
                        let (rt, handle, options) = (self.clone(), session.handle(), options.clone());
                        let holds_taken = holds_taken.clone();
                        // Classified in the queue now, in model order; the task waits its turn.
                        let safe = checked.is_concurrency_safe();
                        let admission = ticket.admit(safe);
                        let task = running.spawn(async move {
                            rt.run_checked(index, checked, admission, || handle.view(), Some(&holds_taken), &options).await
                        });
                        running_ids.insert(task.id(), (index, id));
                    }
                },
                Some(joined) = running.join_next_with_id(), if !running.is_empty() => {
                    let done = match joined {
                        Ok((task, done)) => {
                            running_ids.remove(&task);
                            done
                        }
                        Err(e) => {
                            // A host fault in one call's task: that call still gets a result.
                            tracing::error!("a call task failed: {e}");
                            let Some((index, id)) = running_ids.remove(&e.id()) else { continue };
                            let message = "toolhost failed while running this call (host fault)";
                            let result = ToolResult::error(&id, OutcomeKind::HostError, message);
                            Done { index, result, updates: Updates::default(), place: None }
                        }
                    };
                    awaiting_join = false;
                    let Done { index, result, updates, place } = done;
                    match place {
                        Some(Place::Held(hold)) => {
                            // Its updates wait for the period's end.
                            let withheld = if updates.list.is_empty() {
                                finished.insert(index, result);
                                None
                            } else {
                                Some(result)
                            };
                            held.insert(index, (updates, hold, withheld));
                        }
                        // Run alone: its updates apply before the next call may start.
                        alone => {
                            finished.insert(index, result);
                            self.apply_updates(session, updates, finished.get_mut(&index));
                            if let Some(Place::Alone(running)) = alone {
                                drop(running);
                            }
                        }
                    }
                },
                () = self.scheduler.period_over(), if !held.is_empty() && !awaiting_join => {
                    if holds_taken.load(Ordering::Acquire) > held.len() {
                        // A call of the period finished but its task is not joined yet: its
                        // updates belong to this period too. Wait for that join.
                        awaiting_join = true;
                        continue;
                    }
                    // The period is over: its updates apply in model order (a refusal turns that
                    // call's withheld result into an error), then the holds go and later calls
                    // start.
                    let held = std::mem::take(&mut held);
                    let mut holds = Vec::with_capacity(held.len());
                    for (i, (updates, hold, withheld)) in held {
                        if let Some(mut result) = withheld {
                            self.apply_updates(session, updates, Some(&mut result));
                            finished.insert(i, result);
                        } else {
                            self.apply_updates(session, updates, None);
                        }
                        holds.push(hold);
                    }
                    holds_taken.fetch_sub(holds.len(), Ordering::AcqRel);
                    drop(holds);
                },
            }
        }
    }
}
