//! toolhost's side of one connection (rmcp's `ClientHandler`): who it says it is, and where
//! the server's questions, progress, log messages and list changes go.

use crate::calls::Calls;
use rmcp::ClientHandler;
#[allow(deprecated, reason = "logging leaves MCP after 2025-11-25 (SEP-2577); servers of that version still log")]
use rmcp::model::LoggingMessageNotificationParam;
use rmcp::model::{ClientCapabilities, ClientConfig, Implementation, ProtocolVersion};
use rmcp::model::{ElicitRequestParams, ElicitResult, ElicitationAction, NumberOrString, ProgressNotificationParam};
use rmcp::service::{NotificationContext, RequestContext, RoleClient};
use serde_json::Value;
use std::sync::Arc;
use toolhost::Answer;

/// toolhost's side of one connection: who it says it is, where the server's log messages go,
/// and who answers its form questions (`elicitation/create`): the person at the terminal when
/// there is one (then the capability is declared), else nobody and they are declined.
pub(crate) struct Client {
    pub(crate) server: String,
    /// Someone may answer form questions: declared to the server.
    pub(crate) may_ask: bool,
    pub(crate) calls: Arc<std::sync::Mutex<Calls>>,
    /// Told when the server says its tool list changed.
    pub(crate) lists_changed: Option<Arc<tokio::sync::Notify>>,
}

/// The longest log message of a server that is shown (the rest is cut).
const MAX_LOG_CHARS: usize = 2000;

impl ClientHandler for Client {
    fn get_info(&self) -> ClientConfig {
        // Form elicitation only when someone can answer.
        let capabilities = match self.may_ask {
            true => serde_json::from_value(serde_json::json!({"elicitation": {"form": {}}})).unwrap_or_default(),
            false => ClientCapabilities::default(),
        };
        // The newest version that still has the `initialize` handshake rmcp's client performs.
        ClientConfig::new(
            capabilities,
            Implementation::new("toolhost", env!("CARGO_PKG_VERSION")).with_title("toolhost"),
        )
        .with_protocol_version(ProtocolVersion::LATEST_WITH_INITIALIZE)
    }

    /// A form question of the server, put to whoever answers the call it belongs to
    /// ([`Calls::only_asker`]: the person at the terminal, or the client of `toolhost mcp`
    /// whose call it is) as that tool's question (`Tool mcp__SERVER__TOOL asks: …`), checked
    /// and counted like a component's (`toolhost::Caller::elicit`). A URL question, a form
    /// toolhost refuses, or nobody to ask: declined.
    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, rmcp::ErrorData> {
        let decline = Ok(ElicitResult::new(ElicitationAction::Decline));
        // Asked although the capability was not declared: nobody to ask.
        let (true, ElicitRequestParams::FormElicitationParams { message, requested_schema, .. }) =
            (self.may_ask, request)
        else {
            return decline;
        };
        let caller = self.calls.lock().unwrap_or_else(|e| e.into_inner()).only_asker();
        let caller = match caller {
            Ok(caller) => caller,
            Err(why) => {
                tracing::warn!("MCP server {}: its question is not asked: {why}", self.server);
                return decline;
            }
        };
        let form = serde_json::to_string(&requested_schema).unwrap_or_default();
        Ok(match caller.elicit(message, &form).await {
            Ok(Answer::Accept(values)) => {
                ElicitResult::new(ElicitationAction::Accept).with_content(Value::Object(values))
            }
            Ok(Answer::Decline) => ElicitResult::new(ElicitationAction::Decline),
            Ok(Answer::Cancel) => ElicitResult::new(ElicitationAction::Cancel),
            Err(why) => {
                tracing::warn!("MCP server {}: its question is not asked: {why}", self.server);
                return decline;
            }
        })
    }

    /// A progress notification: to the call whose token it names (`Caller::progress`: the
    /// events, `-v`, and under `toolhost mcp` the call's own client), bounded like a tool's.
    async fn on_progress(&self, params: ProgressNotificationParam, _: NotificationContext<RoleClient>) {
        let caller = {
            let calls = self.calls.lock().unwrap_or_else(|e| e.into_inner());
            match params.progress_token.0 {
                NumberOrString::Number(token) => calls.by_token(token),
                NumberOrString::String(_) => None,
            }
        };
        let Some(caller) = caller else { return };
        let text = match (params.message, params.total) {
            (Some(message), _) => message,
            (None, Some(total)) => format!("{} of {total}", params.progress),
            (None, None) => params.progress.to_string(),
        };
        caller.progress(&text);
    }

    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        tracing::debug!(target: "toolhost::mcp_server", "MCP server {}: its tool list changed", self.server);
        if let Some(changed) = &self.lists_changed {
            changed.notify_one();
        }
    }

    #[allow(deprecated, reason = "logging leaves MCP after 2025-11-25 (SEP-2577); servers of that version still log")]
    async fn on_logging_message(&self, params: LoggingMessageNotificationParam, _: NotificationContext<RoleClient>) {
        let text = match &params.data {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        let text: String = text.chars().take(MAX_LOG_CHARS).collect();
        let logger = params.logger.as_deref().unwrap_or("-");
        tracing::info!(target: "toolhost::mcp_server", "MCP server {} [{:?} {logger}]: {text}", self.server, params.level);
        // To the running call too, when it cannot be another client's.
        if let Ok(caller) = self.calls.lock().unwrap_or_else(|e| e.into_inner()).only_asker() {
            caller.log(crate::level::from_mcp(params.level), &text);
        }
    }
}
