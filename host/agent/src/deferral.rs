//! # Deferred tools
//!
//! Tool definitions cost context on every request. When they would take more than a share of
//! the context window (10 % by default), the model gets, as in Claude Code, only their names
//! (in a system block) and a `ToolSearch` tool; a tool's schema is sent from the request after
//! the search that found it. A call to a deferred tool whose schema was never sent is not run:
//! its result tells the model to search for it first.

use crate::message::ToolDef;
use serde_json::{Value, json};
use std::collections::HashSet;
use toolhost::{ContentBlock, Refusal, RefusalKind, ToolResult, ToolUse};

/// The name of the search tool the loop answers itself.
pub const TOOL_SEARCH: &str = "ToolSearch";

/// Results a search returns unless the model asks for another number.
const DEFAULT_RESULTS: usize = 5;

/// A rough token count of tool definitions: their JSON's length / 4, as good as any
/// tokenizer-free estimate for deciding a threshold.
pub fn estimate_tokens(tools: &[ToolDef]) -> u64 {
    tools.iter().map(|t| serde_json::to_string(t).map(|s| s.len() as u64).unwrap_or(0)).sum::<u64>() / 4
}

/// Which tools are deferred and which have been found.
#[derive(Debug, Clone)]
pub struct Deferral {
    deferred: Vec<ToolDef>,
    /// Found by a search, in the order found: sent from the next request on.
    found: Vec<String>,
    /// The deferred tools whose schemas the last request carried.
    sent: HashSet<String>,
}

impl Deferral {
    /// Defer every tool when their definitions exceed `threshold_tokens`; `None` when they fit.
    pub fn plan(tools: &[ToolDef], threshold_tokens: u64) -> Option<Self> {
        (estimate_tokens(tools) > threshold_tokens).then(|| Deferral {
            deferred: tools.to_vec(),
            found: Vec::new(),
            sent: HashSet::new(),
        })
    }

    /// [`Deferral::plan`] for a pool that changed mid-run (an MCP server's list): the tools
    /// found before and still in the pool stay found (as in Claude Code, where what a search
    /// found stays loaded), the others are forgotten.
    pub fn replan(previous: Option<Deferral>, tools: &[ToolDef], threshold_tokens: u64) -> Option<Self> {
        let mut next = Self::plan(tools, threshold_tokens)?;
        if let Some(previous) = previous {
            let present = |name: &String| tools.iter().any(|t| &t.name == name);
            next.found = previous.found.into_iter().filter(present).collect();
            next.sent = previous.sent.into_iter().filter(present).collect();
        }
        Some(next)
    }

    /// The `ToolSearch` definition.
    pub fn search_tool() -> ToolDef {
        ToolDef {
            name: TOOL_SEARCH.into(),
            description:
                "Load deferred tools. Their names are listed in the system prompt, without schemas; a deferred \
                          tool can only be called after this tool found it. Query with keywords (matched against names \
                          and descriptions), or `select:Name1,Name2` for exact names. The tools found can be called \
                          from your next turn on."
                    .into(),
            input_schema: json!({
                "type": "object",
                "properties": {
                    "query": {"type": "string", "description": "Keywords, or select:Name1,Name2"},
                    "max_results": {"type": "integer", "minimum": 1, "description": "At most this many tools (default 5)"}
                },
                "required": ["query"],
                "additionalProperties": false
            }),
        }
    }

    /// The tools of the next request: `ToolSearch`, then every tool found so far. Records
    /// them as sent.
    pub fn tools_for_request(&mut self) -> Vec<ToolDef> {
        let mut tools = vec![Self::search_tool()];
        for name in &self.found {
            if let Some(def) = self.deferred.iter().find(|d| &d.name == name) {
                tools.push(def.clone());
                self.sent.insert(name.clone());
            }
        }
        tools
    }

    /// The system block listing the deferred tools.
    pub fn system_note(&self) -> String {
        let names: Vec<&str> = self.deferred.iter().map(|d| d.name.as_str()).collect();
        format!("Deferred tools (call {TOOL_SEARCH} to load a tool's schema before calling it):\n{}", names.join("\n"))
    }

    /// The answer to a call the loop must answer itself: a `ToolSearch`, or a deferred tool
    /// whose schema was never sent. `None` for calls the runtime runs.
    pub fn answer(&mut self, call: &ToolUse) -> Option<ToolResult> {
        if call.name == TOOL_SEARCH {
            return Some(self.search(call));
        }
        let deferred = self.deferred.iter().any(|d| d.name == call.name);
        (deferred && !self.sent.contains(&call.name)).then(|| {
            Refusal::new(
                RefusalKind::NotLoaded,
                format!(
                    "{} is a deferred tool whose schema has not been loaded, so it was not run. Call {TOOL_SEARCH} \
                     with query \"select:{}\" first, then call it again.",
                    call.name, call.name
                ),
            )
            .into_result(&call.id)
        })
    }

    fn search(&mut self, call: &ToolUse) -> ToolResult {
        let Some(query) = call.input.get("query").and_then(Value::as_str) else {
            return Refusal::new(RefusalKind::Schema, "`query` (a string) is required").into_result(&call.id);
        };
        let max = call.input.get("max_results").and_then(Value::as_u64).map_or(DEFAULT_RESULTS, |n| n.max(1) as usize);
        let matches: Vec<&ToolDef> = match query.strip_prefix("select:") {
            Some(list) => {
                let wanted: Vec<&str> = list.split(',').map(str::trim).filter(|s| !s.is_empty()).collect();
                self.deferred.iter().filter(|d| wanted.contains(&d.name.as_str())).collect()
            }
            None => {
                let terms: Vec<String> = query.split_whitespace().map(str::to_lowercase).collect();
                let mut scored: Vec<(usize, &ToolDef)> = self
                    .deferred
                    .iter()
                    .map(|d| {
                        let (name, desc) = (d.name.to_lowercase(), d.description.to_lowercase());
                        let score = terms
                            .iter()
                            .map(|t| 3 * usize::from(name.contains(t)) + usize::from(desc.contains(t)))
                            .sum();
                        (score, d)
                    })
                    .filter(|(s, _)| *s > 0)
                    .collect();
                // Best first; the definitions' order breaks ties (a stable sort).
                scored.sort_by_key(|(score, _)| std::cmp::Reverse(*score));
                scored.into_iter().map(|(_, d)| d).collect()
            }
        };
        let matches: Vec<&ToolDef> = matches.into_iter().take(max).collect();
        if matches.is_empty() {
            return ToolResult::success(
                &call.id,
                vec![ContentBlock::Text { text: format!("No deferred tool matches {query:?}.") }],
            );
        }
        let mut text = String::from("Loaded; these tools can be called from your next turn on:\n");
        for d in &matches {
            text.push_str(&format!("- {}: {}\n", d.name, d.description));
        }
        for d in matches {
            if !self.found.contains(&d.name) {
                self.found.push(d.name.clone());
            }
        }
        ToolResult::success(&call.id, vec![ContentBlock::Text { text: text.trim_end().to_string() }])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn def(name: &str, description: &str) -> ToolDef {
        ToolDef { name: name.into(), description: description.into(), input_schema: json!({"type": "object"}) }
    }

    #[test]
    fn only_past_the_threshold() {
        let tools = vec![def("Read", "reads a file"), def("Grep", "searches file contents")];
        let tokens = estimate_tokens(&tools);
        assert!(Deferral::plan(&tools, tokens).is_none());
        assert!(Deferral::plan(&tools, tokens - 1).is_some());
    }

    #[test]
    fn a_tool_is_sent_after_a_search_found_it_and_refused_before() {
        let tools = vec![def("Read", "reads a file"), def("Grep", "searches file contents")];
        let mut d = Deferral::plan(&tools, 0).unwrap();
        assert_eq!(d.tools_for_request().iter().map(|t| t.name.as_str()).collect::<Vec<_>>(), ["ToolSearch"]);
        let early = d.answer(&ToolUse::new("1", "Grep", json!({}))).unwrap();
        assert!(early.is_error && early.text().contains("select:Grep"), "{}", early.text());
        let found = d.answer(&ToolUse::new("2", TOOL_SEARCH, json!({"query": "search contents"}))).unwrap();
        assert!(!found.is_error && found.text().contains("- Grep"), "{}", found.text());
        assert!(!found.text().contains("Read"), "{}", found.text());
        // Found, but its schema is sent only with the next request.
        assert!(d.answer(&ToolUse::new("3", "Grep", json!({}))).is_some());
        assert_eq!(d.tools_for_request().iter().map(|t| t.name.as_str()).collect::<Vec<_>>(), ["ToolSearch", "Grep"]);
        assert!(d.answer(&ToolUse::new("4", "Grep", json!({}))).is_none(), "now the runtime runs it");
        assert!(
            d.answer(&ToolUse::new("5", TOOL_SEARCH, json!({"query": "select:Read"})))
                .is_some_and(|r| r.text().contains("- Read"))
        );
    }

    #[test]
    fn what_was_found_stays_found_when_the_pool_changes() {
        let tools = vec![def("Read", "reads a file"), def("mcp__t__search", "searches issues")];
        let mut d = Deferral::plan(&tools, 0).unwrap();
        d.answer(&ToolUse::new("1", TOOL_SEARCH, json!({"query": "select:Read,mcp__t__search"})));
        d.tools_for_request();
        // The server's list changed: `search` is gone, `close` came.
        let now = vec![def("Read", "reads a file"), def("mcp__t__close", "closes an issue")];
        let mut d = Deferral::replan(Some(d), &now, 0).unwrap();
        assert!(d.answer(&ToolUse::new("2", "Read", json!({}))).is_none(), "still loaded");
        let names: Vec<String> = d.tools_for_request().into_iter().map(|t| t.name).collect();
        assert_eq!(names, ["ToolSearch", "Read"]);
        assert!(d.system_note().contains("mcp__t__close") && !d.system_note().contains("mcp__t__search"));
        // Small enough again: nothing deferred.
        assert!(Deferral::replan(Some(d), &now, u64::MAX).is_none());
    }
}
