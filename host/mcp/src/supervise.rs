//! Every configured server, supervised: started when the runtime loads, started again at a
//! later refresh while it fails to, and after it stops (a bounded number of times).

use crate::calls::Calls;
use crate::connection::{Server, listed};
use crate::handler::Client;
use crate::process::{reach, start};
use crate::{ConnectError, Connected, Options};
use serde_json::Value;
use std::sync::Arc;
use std::time::Duration;
use toolhost::{Caller, PermissionDecider, RemoteError, RemoteOutput, RemoteServer, RemoteTool, Runtime};
use toolhost_policy::launch::{LaunchError, ServerLaunch};
use toolhost_trust::{Clearance, Cleared};

/// How long a server may take to start and list its tools.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(30);

/// Start every server of the config and put its tools in the pool: what did not start, and
/// why. Every server is supervised: one that failed to start is registered with no tools
/// and tried again at every refresh of the lists (before each agent turn), and one that stops
/// is started again at its next call or refresh.
///
/// Only servers the pin check cleared start ([`Clearance`]). One that is toolhost itself, or
/// any stdio server when this toolhost runs under another, is not started and is in
/// [`Connected::skipped`] (not a load error: its tools are this process's own).
pub async fn connect_all(runtime: &Runtime, cleared: Clearance, options: &Options) -> Connected {
    let mut connected = Connected::default();
    let person = runtime.decider();
    for (name, launch) in cleared.servers() {
        let launch = match launch {
            Ok(launch) => launch.clone(),
            Err(e @ (LaunchError::Toolhost(_) | LaunchError::Nested(_))) => {
                connected.skipped.push((name.to_string(), e.clone()));
                continue;
            }
            Err(e) => {
                connected.errors.push(ConnectError::Launch { server: name.to_string(), source: e.clone() });
                continue;
            }
        };
        let name = name.to_string();
        let supervised = Supervised {
            name: name.clone(),
            launch,
            person: person.clone(),
            options: options.clone(),
            state: tokio::sync::Mutex::new(State { server: None, why: String::new(), stops: 0 }),
        };
        let tools = match supervised.running(CONNECT_TIMEOUT).await {
            Ok((_, fresh)) => fresh.unwrap_or_default(),
            Err(why) => {
                connected.errors.push(ConnectError::Start { server: name.clone(), why });
                Vec::new()
            }
        };
        connected
            .errors
            .extend(runtime.set_remote_tools(&name, tools, Arc::new(supervised)).into_iter().map(ConnectError::Pool));
    }
    connected
}

/// How long a server that failed to start, or stopped, gets at each later try.
const RETRY_TIMEOUT: Duration = Duration::from_secs(10);

/// How many times a server that stopped is started again; then it stays stopped (a server
/// that crashes at every call would otherwise be restarted for ever).
pub(crate) const MAX_RESTARTS: u32 = 5;

/// One configured server and its connection, started when needed: at first, again at each
/// refresh while it fails to start, and again after it stops (at most [`MAX_RESTARTS`] times).
/// A call that was running when it stopped gets an error result and is not repeated: it may
/// have had effects.
struct Supervised {
    name: String,
    /// The server as the pin check cleared it: every start runs exactly this.
    launch: Cleared<ServerLaunch>,
    person: Option<Arc<dyn PermissionDecider>>,
    options: Options,
    state: tokio::sync::Mutex<State>,
}

struct State {
    /// The connection, while there is one.
    server: Option<Arc<Server>>,
    /// Why there is none: the last start's failure, or how the server stopped.
    why: String,
    /// How many times it stopped after it had started.
    stops: u32,
}

impl Supervised {
    /// The running connection, for a call.
    async fn connected(&self) -> Result<Arc<Server>, RemoteError> {
        let (server, _) = self
            .running(RETRY_TIMEOUT)
            .await
            .map_err(|why| RemoteError::NotConnected(format!("MCP server {} is not connected: {why}", self.name)))?;
        Ok(server)
    }

    /// The running connection, and the tools it listed if it was started by this call. Started
    /// (again) if there is none or the server stopped, within `timeout`.
    async fn running(&self, timeout: Duration) -> Result<(Arc<Server>, Option<Vec<RemoteTool>>), String> {
        let mut state = self.state.lock().await;
        if let Some(server) = &state.server {
            if !server.service.is_transport_closed() {
                return Ok((server.clone(), None));
            }
            state.why = server.stopped();
            state.server = None;
            state.stops += 1;
            tracing::warn!("{}", state.why);
        }
        if state.stops > MAX_RESTARTS {
            return Err(format!("{}; it stopped {} times and is not started again", state.why, state.stops));
        }
        let tried =
            tokio::time::timeout(timeout, connect(&self.name, &self.launch, self.person.clone(), &self.options)).await;
        let why = match tried {
            Ok(Ok((tools, server))) => {
                if state.stops > 0 {
                    self.options
                        .say(&format!("MCP server {} started again ({} of {MAX_RESTARTS})", self.name, state.stops));
                }
                state.server = Some(server.clone());
                return Ok((server, Some(tools)));
            }
            Ok(Err(why)) => why,
            Err(_) => format!("did not start and list its tools within {timeout:?}"),
        };
        state.why = why.clone();
        Err(why)
    }
}

#[async_trait::async_trait]
impl RemoteServer for Supervised {
    async fn call(&self, tool: &str, input: Value) -> Result<RemoteOutput, RemoteError> {
        self.connected().await?.call(tool, input).await
    }

    async fn call_for(&self, tool: &str, input: Value, caller: Arc<Caller>) -> Result<RemoteOutput, RemoteError> {
        self.connected().await?.call_for(tool, input, caller).await
    }

    async fn list(&self) -> Result<Vec<RemoteTool>, RemoteError> {
        let (server, fresh) = self
            .running(RETRY_TIMEOUT)
            .await
            .map_err(|why| RemoteError::NotConnected(format!("not connected: {why}")))?;
        match fresh {
            Some(tools) => Ok(tools),
            // Bounded: the lists are read again before every agent turn, and a server that
            // stops answering must not stall the run.
            None => tokio::time::timeout(RETRY_TIMEOUT, server.list()).await.unwrap_or_else(|_| {
                Err(RemoteError::NoAnswer(format!("tools/list got no answer within {RETRY_TIMEOUT:?}")))
            }),
        }
    }
}

async fn connect(
    name: &str,
    launch: &Cleared<ServerLaunch>,
    person: Option<Arc<dyn PermissionDecider>>,
    options: &Options,
) -> Result<(Vec<RemoteTool>, Arc<Server>), String> {
    let calls = Arc::new(std::sync::Mutex::new(Calls::default()));
    let may_ask = person.is_some() || options.callers_may_answer;
    let lists_changed = options.lists_changed.clone();
    let client = Client { server: name.to_string(), may_ask, calls: calls.clone(), lists_changed };
    let (service, stderr) = match &**launch {
        ServerLaunch::Stdio(spec) => {
            let (service, tail) = start(client, spec, &options.withhold_env).await?;
            (service, Some(tail))
        }
        ServerLaunch::Http(spec) => (reach(client, spec).await?, None),
    };
    let tools = listed(name, &service).await?;
    Ok((tools, Arc::new(Server { name: name.to_string(), service, stderr, calls })))
}
