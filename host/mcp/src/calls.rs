//! A server's calls in flight: whose a progress notification, a log message or a question of
//! the server is.

use rmcp::model::CancelledNotificationParam;
use rmcp::service::RoleClient;
use std::sync::Arc;
use toolhost::Caller;

/// A server's calls in flight, each with its [`Caller`] and the progress token sent with it.
/// A progress notification names its call by the token. A question or a log message names no
/// call (MCP ties them to a request only on an HTTP stream, which rmcp's client does not
/// expose): it goes to the callers only when every call in flight has the same asker (one
/// person, or one client of `toolhost mcp`), so no client sees another's, and a question
/// asked while none of the server's tools is being called (at start, between calls) could pose
/// as anything and is not asked at all.
#[derive(Default)]
pub(crate) struct Calls {
    running: Vec<(i64, Arc<Caller>)>,
}

impl Calls {
    /// The caller a question or log message that names no call is for, or why there is none.
    pub(crate) fn only_asker(&self) -> Result<Arc<Caller>, &'static str> {
        let Some((_, first)) = self.running.first() else { return Err("none of its tools is being called") };
        if self.running.iter().all(|(_, c)| c.same_asker(first)) {
            Ok(first.clone())
        } else {
            Err("calls from more than one client are running, and whose it is cannot be told")
        }
    }

    pub(crate) fn by_token(&self, token: i64) -> Option<Arc<Caller>> {
        self.running.iter().find(|(t, _)| *t == token).map(|(_, c)| c.clone())
    }
}

/// One call in flight, in [`Calls`] until it ends (or is dropped at its timeout).
pub(crate) struct InFlight {
    calls: Arc<std::sync::Mutex<Calls>>,
    token: i64,
}

impl InFlight {
    /// The call whose request carries progress token `token`.
    pub(crate) fn start(calls: &Arc<std::sync::Mutex<Calls>>, token: i64, caller: Arc<Caller>) -> InFlight {
        calls.lock().unwrap_or_else(|e| e.into_inner()).running.push((token, caller));
        InFlight { calls: calls.clone(), token }
    }
}

/// Tells the server a call was given up (its time limit, or the caller went away) when the
/// wait for its answer is dropped before the answer came, as rmcp's `call_tool` does.
pub(crate) struct CancelOnDrop {
    pub(crate) peer: rmcp::Peer<RoleClient>,
    pub(crate) id: Option<rmcp::model::RequestId>,
}

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        let (Some(id), Ok(runtime)) = (self.id.take(), tokio::runtime::Handle::try_current()) else { return };
        let peer = self.peer.clone();
        runtime.spawn(async move {
            let reason = "the call was given up (its time limit, or the caller went away)".to_string();
            let _ = peer.notify_cancelled(CancelledNotificationParam::new(Some(id), Some(reason))).await;
        });
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        self.calls.lock().unwrap_or_else(|e| e.into_inner()).running.retain(|(t, _)| *t != self.token);
    }
}

#[cfg(test)]
mod tests {
    use super::{Calls, InFlight};
    use std::sync::Arc;
    use toolhost::Caller;

    /// A decider that answers every question with an empty form, counting them.
    #[derive(Default)]
    struct Counting(std::sync::atomic::AtomicU32);

    #[async_trait::async_trait]
    impl toolhost::PermissionDecider for Counting {
        async fn ask(&self, _request: &toolhost::AskRequest) -> toolhost::AskAnswer {
            toolhost::AskAnswer::Deny(None)
        }
        async fn elicit(&self, _question: &toolhost::Question) -> toolhost::Answer {
            self.0.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            toolhost::Answer::Accept(serde_json::Map::new())
        }
    }

    #[tokio::test]
    async fn a_servers_question_goes_to_the_one_asker_of_its_calls_and_no_further() {
        let calls = Arc::new(std::sync::Mutex::new(Calls::default()));
        let only = || calls.lock().unwrap().only_asker();
        let (person, client) = (Arc::new(Counting::default()), Arc::new(Counting::default()));
        let caller = |id: &str, decider: &Arc<Counting>| Arc::new(Caller::new(id, "mcp__s__t", decider.clone()));
        assert_eq!(only().unwrap_err(), "none of its tools is being called", "at start");
        let first = InFlight::start(&calls, 1, caller("a", &person));
        let second = InFlight::start(&calls, 2, caller("b", &person));
        let asked = only().unwrap();
        assert_eq!(asked.tool_use_id(), "a", "one asker: the oldest call's");
        for _ in 0..toolhost::MAX_QUESTIONS {
            assert!(asked.elicit("Who?".into(), "{\"type\":\"object\",\"properties\":{}}").await.is_ok());
        }
        let over = asked.elicit("Who?".into(), "{\"type\":\"object\",\"properties\":{}}").await;
        assert!(over.unwrap_err().to_string().contains("at most 8 questions"));
        assert_eq!(person.0.load(std::sync::atomic::Ordering::Relaxed), toolhost::MAX_QUESTIONS);
        assert_eq!(calls.lock().unwrap().by_token(2).unwrap().tool_use_id(), "b", "progress names its call");
        // A call of another client: nobody can tell whose a question is.
        let other = InFlight::start(&calls, 3, caller("c", &client));
        assert!(only().unwrap_err().contains("more than one client"));
        drop((first, second));
        assert_eq!(only().unwrap().tool_use_id(), "c");
        drop(other);
        assert_eq!(only().unwrap_err(), "none of its tools is being called", "between calls");
        assert!(calls.lock().unwrap().by_token(3).is_none());
        assert_eq!(client.0.load(std::sync::atomic::Ordering::Relaxed), 0);
    }
}
