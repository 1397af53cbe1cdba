//! A whole assistant turn: several `tool_use` blocks in, one `tool_result` per block out, in
//! model order.
//!
//! As in Claude Code's `runTools`: each call is asked whether it is concurrency-safe (only once
//! its input passed the schema; an unknown tool, a schema failure, a trap or a timeout mean
//! "no"); maximal runs of consecutive safe calls form a batch that runs in parallel, at most
//! `max_concurrency` at once, each on its own store and with its file grants read-only;
//! every other call runs alone, in order. Context updates of a parallel batch are applied
//! after the batch, in model order; those of a call run alone, at once.

use crate::pipeline::{Access, Updates};
use crate::result::ToolResult;
use crate::runtime::Runtime;
use crate::session::Session;
use crate::{OutcomeKind, ToolUse};
use std::collections::HashSet;
use std::sync::Arc;
use tokio::sync::Semaphore;
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

/// One unit of execution: a run of safe calls, or one call alone.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Batch {
    Parallel(Vec<usize>),
    Alone(usize),
}

/// Group call indices by their safety flags (DESIGN §2).
pub(crate) fn partition(safe: &[bool]) -> Vec<Batch> {
    let mut batches: Vec<Batch> = Vec::new();
    for (i, &is_safe) in safe.iter().enumerate() {
        match (is_safe, batches.last_mut()) {
            (true, Some(Batch::Parallel(run))) => run.push(i),
            (true, _) => batches.push(Batch::Parallel(vec![i])),
            (false, _) => batches.push(Batch::Alone(i)),
        }
    }
    batches
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
        let mut results: Vec<Option<ToolResult>> = vec![None; calls.len()];

        // A repeated id cannot be paired unambiguously: the repeat is refused, not run.
        let mut seen = HashSet::new();
        let mut safe = Vec::with_capacity(calls.len());
        for (i, call) in calls.iter().enumerate() {
            if !seen.insert(call.id.as_str()) {
                results[i] = Some(ToolResult::error(
                    &call.id,
                    OutcomeKind::SchemaError,
                    format!(
                        "<tool_use_error>Error: duplicate tool_use id {:?}; this call was not run</tool_use_error>",
                        call.id
                    ),
                ));
                safe.push(false);
                continue;
            }
            // Once aborted, nothing more is asked of any tool.
            safe.push(!cancel.is_cancelled() && self.is_concurrency_safe(call).await);
        }

        for batch in partition(&safe) {
            match batch {
                Batch::Alone(i) => {
                    if results[i].is_some() {
                        continue;
                    }
                    let (result, updates) = self.run_one(&calls[i], session.snapshot(), Access::Granted, cancel).await;
                    session.apply(updates);
                    results[i] = Some(result);
                }
                Batch::Parallel(indices) => {
                    for (i, result, updates) in self.run_parallel(session, calls, &indices, cancel).await {
                        session.apply(updates);
                        results[i] = Some(result);
                    }
                }
            }
        }
        results
            .into_iter()
            .zip(calls)
            .map(|(r, call)| {
                r.unwrap_or_else(|| {
                    ToolResult::error(&call.id, OutcomeKind::HostError, "toolhost lost this call's result (a bug)")
                })
            })
            .collect()
    }

    /// Run safe calls in parallel (bounded), returning (index, result, updates) in model order.
    async fn run_parallel(
        self: &Arc<Self>,
        session: &Session,
        calls: &[ToolUse],
        indices: &[usize],
        cancel: &CancellationToken,
    ) -> Vec<(usize, ToolResult, Updates)> {
        // Every call of the batch sees the context as it was when the batch started.
        let context = session.snapshot();
        let permits = Arc::new(Semaphore::new(self.max_concurrency));
        let mut tasks = JoinSet::new();
        for &i in indices {
            let (rt, call, context, permits) = (self.clone(), calls[i].clone(), context.clone(), permits.clone());
            let cancel = cancel.clone();
            tasks.spawn(async move {
                // Queued calls start in model order as permits free up.
                let _permit = permits.acquire_owned().await.expect("the semaphore is never closed");
                let (result, updates) = rt.run_one(&call, context, Access::ReadOnly, &cancel).await;
                (i, result, updates)
            });
        }
        let mut done: Vec<(usize, ToolResult, Updates)> = Vec::with_capacity(indices.len());
        while let Some(joined) = tasks.join_next().await {
            match joined {
                Ok(entry) => done.push(entry),
                // A panic in the host while running one call: that call's result says so below.
                Err(e) => tracing::error!("a call task failed: {e}"),
            }
        }
        for &i in indices {
            if !done.iter().any(|(j, ..)| *j == i) {
                let message = format!("toolhost failed while running this call (host fault); id {}", calls[i].id);
                done.push((i, ToolResult::error(&calls[i].id, OutcomeKind::HostError, message), Vec::new()));
            }
        }
        done.sort_by_key(|(i, ..)| *i);
        done
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn partition_table() {
        use Batch::*;
        let cases: &[(&[bool], Vec<Batch>)] = &[
            (&[], vec![]),
            (&[true, true, true], vec![Parallel(vec![0, 1, 2])]),
            (&[false, false], vec![Alone(0), Alone(1)]),
            (&[true, true, false, true], vec![Parallel(vec![0, 1]), Alone(2), Parallel(vec![3])]),
            (
                &[false, true, true, false, false, true],
                vec![Alone(0), Parallel(vec![1, 2]), Alone(3), Alone(4), Parallel(vec![5])],
            ),
        ];
        for (safe, want) in cases {
            assert_eq!(&partition(safe), want, "{safe:?}");
        }
    }
}
