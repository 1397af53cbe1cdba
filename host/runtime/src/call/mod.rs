//! One call: a `tool_use` in, exactly one `tool_result` out. The call's options and context,
//! classifying it for the scheduler, the steps in order ([`pipeline`]), the permission step,
//! how a schema error reads ([`issues`]), how a guest's answer maps to a result ([`outcome`],
//! [`result`], [`spill`]) and the one way a refusal becomes a result ([`refusal`]).

pub(crate) mod classify;
pub(crate) mod ctx;
pub(crate) mod issues;
pub(crate) mod options;
pub(crate) mod outcome;
pub(crate) mod permission;
pub(crate) mod pipeline;
pub(crate) mod probe;
pub(crate) mod question;
pub(crate) mod refusal;
pub(crate) mod remote;
pub(crate) mod result;
pub(crate) mod route;
pub(crate) mod spill;
pub(crate) mod trace;

pub use options::{CallOptions, LogFn, LogMessage, Progress, ProgressFn};
pub use question::{Answer, LogLevel, Question};
