//! The sandbox: what a call's store may reach and how every reach is checked — the guarded file
//! system, granted directories opened once and pinned, the network guard and outgoing HTTP, the
//! capture of stdout and stderr, and the store's state that holds them together.

pub(crate) mod capabilities;
pub(crate) mod capture;
pub(crate) mod config_store;
pub(crate) mod fsguard;
pub(crate) mod http;
pub(crate) mod net;
pub(crate) mod pinning;
pub(crate) mod state;
