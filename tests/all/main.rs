//! Integration tests against real components: the default tools, misbehaving guests, the
//! sandbox, loading, and the command line.

mod agent;
mod attacks;
mod audit;
mod author_test;
mod batch;
mod boundary;
mod cache;
mod call_options;
mod claude_settings;
mod cli;
mod config;
mod default_tools;
mod guests_lang;
mod hook_files;
mod hooks;
mod http;
mod install_script;
mod kinds;
mod kinds_props;
mod limits;
mod load;
mod mcp;
mod mcp_client;
mod network;
mod permissions;
mod pins;
mod precompiled;
mod props;
mod registry;
mod registry_access;
mod replicas;
mod sandbox;
mod schema;
mod tiering;
mod trust;
