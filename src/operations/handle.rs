//! What the API holds of the operations worker (a handle to wake it) and its settings
//! (`[operations]`): a leaf, so that the configuration and the state need nothing else of
//! the worker.

use std::sync::Arc;

use serde::{Deserialize, Serialize};
use tokio::sync::Notify;

/// Wakes the worker when an operation was recorded.
#[derive(Clone, Debug, Default)]
pub struct OperationsHandle {
    pub(crate) notify: Arc<Notify>,
}

impl OperationsHandle {
    pub fn kick(&self) {
        self.notify.notify_one();
    }
}

/// `[operations]`: when the worker looks for recorded operations.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
#[serde(default, deny_unknown_fields)]
pub struct OperationsConfig {
    /// Seconds between two passes when nothing kicks the worker (it then finds what other
    /// replicas or a previous process recorded).
    pub poll_interval: u64,
    /// Milliseconds the worker waits after a kick before its pass, so that operations
    /// recorded close together are claimed in one transaction (and resizes of one nodegroup
    /// superseded by the newest) instead of one durable commit each. 0: no wait.
    pub coalesce_ms: u64,
    /// Finished operations (done, failed, superseded) kept in `magnum_rs_operation` for
    /// inspection; older ones are deleted by the worker's periodic pass. 0: keep none.
    pub keep_finished: u64,
}

impl Default for OperationsConfig {
    fn default() -> Self {
        OperationsConfig {
            poll_interval: 2,
            coalesce_ms: 20,
            keep_finished: 10_000,
        }
    }
}
