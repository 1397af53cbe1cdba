//! `toolhost`: run AI-agent tools as sandboxed WebAssembly components.

mod ask;
mod audit;
mod claude;
mod commands;
mod form;
mod install;
mod output;
mod pins;
mod setup;

use clap::{Parser, Subcommand};
use std::process::ExitCode;

use output::EXIT_USAGE;

#[derive(Parser, Debug)]
#[command(name = "toolhost", version, about = "Run AI-agent tools as sandboxed WebAssembly components")]
struct Cli {
    #[command(flatten)]
    global: setup::GlobalArgs,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// List the loaded tools with their schemas, ceilings and grants.
    List(commands::list::ListCommand),
    /// Call one tool once and print its tool_result.
    Call(commands::call::CallCommand),
    /// Run a whole assistant turn: tool_use blocks in, the user message of tool_results out.
    Run(commands::run::RunCommand),
    /// Describe a component: schema, ceiling, WIT imports and exports, size, sha256.
    Inspect(commands::inspect::InspectCommand),
    /// Check a config file: every error at once, with file, line and column.
    Config(commands::config::ConfigCommand),
    /// Create a tool project (Rust, Python, JavaScript or C) that builds and runs out of the box.
    New(commands::new::NewCommand),
    /// Check a component against the tool contract: schema, examples, validate, generated inputs, cases.
    Test(commands::test::TestCommand),
    /// The build steps of a C tool: C bindings of a WIT world, a core module into a component.
    Guest(commands::guest::GuestCommand),
    /// Serve the tools over the Model Context Protocol (stdio, or streamable HTTP with --http).
    Mcp(commands::mcp::McpCommand),
    /// Run an agent: a model answers the prompt, every tool call runs in the sandbox.
    Agent(commands::agent::AgentCommand),
    /// Install a tool from an OCI registry, an https URL or a file, into toolhost.toml and toolhost.lock.
    Add(commands::add::AddCommand),
    /// Fetch newer versions of installed tools, showing what they could touch before accepting them.
    Update(commands::update::UpdateCommand),
    /// Push a tool component to an OCI registry (CNCF Wasm layout), optionally signed.
    Publish(commands::publish::PublishCommand),
    /// Make an ed25519 key pair for signing published tools.
    Keygen(commands::keygen::KeygenCommand),
    /// Summarise an audit log: calls per tool, decisions, errors, denials, hosts, bytes, time span.
    Audit(commands::audit::AuditCommand),
    /// Trust the config in use and the files its hooks run, as they are now, for this workspace.
    Trust(commands::trust::TrustCommand),
    /// Compile every configured tool's optimised code into the compile cache now, not at first call.
    Compile(commands::compile::CompileCommand),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    setup::init_tracing(cli.global.verbose);
    // TLS by rustls with ring for every client in this process that does not bring its own
    // settings (an HTTP MCP server's): no C build system, and the same provider as the tools'.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let rt = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: cannot start the async runtime: {e}");
            return ExitCode::from(EXIT_USAGE);
        }
    };
    // The command runs as a task on the runtime's threads, not on this one: a turn's loop then
    // shares a worker with the calls it starts, instead of every call's task waking this thread
    // (parked in `block_on`) when it finishes.
    let command = rt.spawn(async move {
        match cli.command {
            Command::List(c) => c.execute(&cli.global).await,
            Command::Call(c) => c.execute(&cli.global).await,
            Command::Inspect(c) => c.execute(&cli.global).await,
            Command::Test(c) => c.execute(&cli.global).await,
            Command::Guest(c) => c.execute(&cli.global).await,
            Command::Config(c) => c.execute(&cli.global).await,
            Command::New(c) => c.execute(&cli.global).await,
            Command::Run(c) => c.execute(&cli.global).await,
            Command::Mcp(c) => c.execute(&cli.global).await,
            Command::Agent(c) => c.execute(&cli.global).await,
            Command::Add(c) => c.execute(&cli.global).await,
            Command::Update(c) => c.execute(&cli.global).await,
            Command::Publish(c) => c.execute(&cli.global).await,
            Command::Keygen(c) => c.execute(&cli.global).await,
            Command::Audit(c) => c.execute(&cli.global).await,
            Command::Trust(c) => c.execute(&cli.global).await,
            Command::Compile(c) => c.execute(&cli.global).await,
        }
    });
    let result = rt.block_on(command).unwrap_or_else(|e| Err(anyhow::anyhow!("toolhost failed: {e}")));
    match result {
        Ok(code) => ExitCode::from(code),
        Err(e) => {
            // Errors quote what others wrote (a tool's stderr, a settings file, an API's answer).
            eprintln!("error: {}", setup::printable_lines(&format!("{e:#}")));
            ExitCode::from(EXIT_USAGE)
        }
    }
}
