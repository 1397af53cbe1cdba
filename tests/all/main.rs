//! Integration tests against real components: the default tools, misbehaving guests, the
//! sandbox, loading, and the command line.

mod batch;
mod cli;
mod default_tools;
mod limits;
mod load;
mod sandbox;
mod schema;
