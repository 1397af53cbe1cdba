//! Tasks that end with whoever waits for them.

use tokio::task::AbortHandle;

/// Aborts tasks when dropped: a future that spawned them and awaits them was dropped (its
/// caller stopped waiting), so nothing they do is wanted any more.
pub(crate) struct AbortOnDrop(pub(crate) Vec<AbortHandle>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        for handle in &self.0 {
            handle.abort();
        }
    }
}
