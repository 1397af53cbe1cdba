//! MCP's log levels and toolhost's: the same eight, from RFC 5424, mapped in one place for the
//! server (`logging/setLevel`, `notifications/message`) and the client (a server's messages).

#![allow(deprecated, reason = "logging leaves MCP after 2025-11-25 (SEP-2577); its revisions served here still log")]

use rmcp::model::LoggingLevel as Mcp;
use toolhost::LogLevel;

/// toolhost's level as MCP spells it.
pub fn to_mcp(level: LogLevel) -> Mcp {
    match level {
        LogLevel::Debug => Mcp::Debug,
        LogLevel::Info => Mcp::Info,
        LogLevel::Notice => Mcp::Notice,
        LogLevel::Warning => Mcp::Warning,
        LogLevel::Error => Mcp::Error,
        LogLevel::Critical => Mcp::Critical,
        LogLevel::Alert => Mcp::Alert,
        LogLevel::Emergency => Mcp::Emergency,
    }
}

/// MCP's level as toolhost's.
pub fn from_mcp(level: Mcp) -> LogLevel {
    match level {
        Mcp::Debug => LogLevel::Debug,
        Mcp::Info => LogLevel::Info,
        Mcp::Notice => LogLevel::Notice,
        Mcp::Warning => LogLevel::Warning,
        Mcp::Error => LogLevel::Error,
        Mcp::Critical => LogLevel::Critical,
        Mcp::Alert => LogLevel::Alert,
        Mcp::Emergency => LogLevel::Emergency,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_level_maps_there_and_back_under_its_own_name() {
        for level in [
            LogLevel::Debug,
            LogLevel::Info,
            LogLevel::Notice,
            LogLevel::Warning,
            LogLevel::Error,
            LogLevel::Critical,
            LogLevel::Alert,
            LogLevel::Emergency,
        ] {
            let mcp = to_mcp(level);
            assert_eq!(from_mcp(mcp), level);
            assert_eq!(serde_json::to_value(mcp).unwrap(), level.as_str(), "{level:?}");
        }
    }
}
