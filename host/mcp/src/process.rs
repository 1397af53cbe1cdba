//! Reaching a server: a stdio server's process (and its stderr, kept bounded), or a streamable
//! HTTP server's URL.

use crate::connection::Tail;
use crate::handler::Client;
use rmcp::service::{RoleClient, RunningService, ServiceExt as _};
use rmcp::transport::TokioChildProcess;
use std::sync::Arc;
use std::time::Duration;
use toolhost_policy::launch::{self, HttpSpec, LaunchSpec};

/// A stdio server: its process, in the workspace, as Claude Code starts it, from the
/// description the pin check cleared (argv and environment already expanded).
pub(crate) async fn start(
    client: Client,
    spec: &LaunchSpec,
    withhold: &[String],
) -> Result<(RunningService<RoleClient, Client>, Tail), String> {
    let mut cmd = tokio::process::Command::new(&spec.program);
    cmd.args(&spec.args)
        // Its directories are pinned whole: no `__pycache__` files in them (each would be a new
        // file to confirm), unless its own env says otherwise.
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .envs(&spec.env)
        .current_dir(&spec.cwd)
        // A toolhost it starts, however it is named, knows it runs under one.
        .env(launch::DEPTH_ENV, launch::depth().saturating_add(1).to_string());
    // What toolhost's own process holds that is not a server's business (`toolhost mcp`'s
    // bearer token).
    for name in withhold {
        cmd.env_remove(name);
    }
    let (transport, stderr) = TokioChildProcess::builder(cmd)
        .stderr(std::process::Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot start {}: {e}", spec.shown()))?;
    let tail = Arc::new(std::sync::Mutex::new(String::new()));
    let reader = stderr.map(|stderr| tokio::spawn(read_stderr(client.server.clone(), stderr, tail.clone())));
    match client.serve(transport).await {
        Ok(service) => Ok((service, tail)),
        Err(e) => {
            // What the program said before it failed usually says why: wait a moment for it.
            if let Some(reader) = reader {
                let _ = tokio::time::timeout(Duration::from_millis(500), reader).await;
            }
            let said = tail.lock().unwrap_or_else(|e| e.into_inner()).trim().to_string();
            let said = if said.is_empty() { String::new() } else { format!("; it said on stderr: {said}") };
            Err(format!("the MCP handshake failed: {e}{said}"))
        }
    }
}

/// The most of a stdio server's stderr kept to explain a failed start.
const STDERR_TAIL_CHARS: usize = 2000;

/// A stdio server's stderr, line by line, to the log (`TOOLHOST_LOG=toolhost::mcp_server=debug`),
/// its last [`STDERR_TAIL_CHARS`] characters kept in `tail`; until the program closes it. A
/// line is kept to its first [`STDERR_TAIL_CHARS`] characters as it is read: a server that
/// writes without newlines costs no more memory than that.
async fn read_stderr(server: String, stderr: tokio::process::ChildStderr, tail: Tail) {
    use tokio::io::AsyncBufReadExt as _;
    let mut reader = tokio::io::BufReader::new(stderr);
    let mut line: Vec<u8> = Vec::new();
    let keep = |line: &[u8]| {
        // Made printable as it is kept: the tail reaches the terminal in warnings and errors.
        let line: String = String::from_utf8_lossy(line).chars().take(STDERR_TAIL_CHARS).collect();
        let line = toolhost::printable(&line);
        tracing::debug!(target: "toolhost::mcp_server", "MCP server {server} (stderr): {line}");
        let mut tail = tail.lock().unwrap_or_else(|e| e.into_inner());
        tail.push_str(&line);
        tail.push('\n');
        let excess = tail.chars().count().saturating_sub(STDERR_TAIL_CHARS);
        if excess > 0 {
            let cut = tail.char_indices().nth(excess).map_or(tail.len(), |(i, _)| i);
            tail.drain(..cut);
        }
    };
    loop {
        let buf = match reader.fill_buf().await {
            Ok(buf) if !buf.is_empty() => buf,
            _ => break,
        };
        let end = buf.iter().position(|&b| b == b'\n');
        let chunk = &buf[..end.unwrap_or(buf.len())];
        // Four bytes per character at most: enough bytes for the characters kept.
        let room = (STDERR_TAIL_CHARS * 4).saturating_sub(line.len());
        line.extend_from_slice(&chunk[..chunk.len().min(room)]);
        let used = end.map_or(buf.len(), |i| i + 1);
        reader.consume(used);
        if end.is_some() {
            keep(&line);
            line.clear();
        }
    }
    if !line.is_empty() {
        keep(&line);
    }
}

/// A streamable HTTP server: `headers` (expanded) on every request, and `Authorization:
/// Bearer …` from `bearer_token_env`.
pub(crate) async fn reach(client: Client, spec: &HttpSpec) -> Result<RunningService<RoleClient, Client>, String> {
    use rmcp::transport::StreamableHttpClientTransport;
    use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
    let url = &spec.url;
    let mut headers = std::collections::HashMap::new();
    for (key, value) in &spec.headers {
        let name = http::HeaderName::from_bytes(key.as_bytes()).map_err(|e| format!("header {key:?}: {e}"))?;
        let value = http::HeaderValue::from_str(value).map_err(|e| format!("header {key}: {e}"))?;
        headers.insert(name, value);
    }
    let mut config = StreamableHttpClientTransportConfig::with_uri(url.as_str()).custom_headers(headers);
    if let Some(var) = &spec.bearer_token_env {
        let token = std::env::var(var).map_err(|_| format!("bearer_token_env names {var}, which is not set"))?;
        config = config.auth_header(token);
    }
    let transport = StreamableHttpClientTransport::from_config(config);
    client.serve(transport).await.map_err(|e| format!("the MCP handshake with {url} failed: {e}"))
}

#[cfg(test)]
mod tests {
    use super::{STDERR_TAIL_CHARS, read_stderr};
    use std::sync::Arc;

    /// A server that writes 64 MiB to stderr without a newline, then a last line: the tail that
    /// explains a failed start is bounded, and holds the last line.
    #[tokio::test]
    async fn a_servers_stderr_is_kept_bounded() {
        let mut child = tokio::process::Command::new("sh")
            .args(["-c", "head -c 67108864 /dev/zero | tr '\\0' x >&2; echo >&2; echo 'last words' >&2"])
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let stderr = child.stderr.take().unwrap();
        let tail = Arc::new(std::sync::Mutex::new(String::new()));
        read_stderr("s".into(), stderr, tail.clone()).await;
        child.wait().await.unwrap();
        let tail = tail.lock().unwrap().clone();
        assert!(tail.chars().count() <= STDERR_TAIL_CHARS, "{} characters", tail.chars().count());
        assert!(tail.ends_with("last words\n"), "{:?}", &tail[tail.len().saturating_sub(40)..]);
        assert!(tail.starts_with('x'), "the long line's start is kept, cut");
    }
}
