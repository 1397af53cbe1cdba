//! One module per subcommand, each with an `execute`.

pub mod add;
pub mod agent;
pub mod audit;
pub mod call;
pub mod compile;
pub mod config;
pub mod guest;
pub mod inspect;
pub mod keygen;
pub mod list;
pub mod mcp;
pub mod new;
pub mod publish;
pub mod run;
pub mod test;
pub mod trust;
pub mod update;
