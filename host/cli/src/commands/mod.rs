//! One module per subcommand, each with an `execute`.

pub mod call;
pub mod config;
pub mod inspect;
pub mod list;
pub mod mcp;
pub mod new;
pub mod run;
