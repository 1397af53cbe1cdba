//! Turns: many calls at once. The scheduler (concurrency-safe calls side by side, others alone,
//! in arrival order), a turn's batch, and the session whose context the calls share.

pub(crate) mod batch;
pub(crate) mod schedule;
pub(crate) mod session;
