//! The durable hand-off between the API and the drivers (Magnum's conductor role).
//!
//! Handlers record an operation in the same transaction as the state change it belongs to
//! and kick the worker ([`worker`]). The worker claims pending operations in id order and
//! gives each to the cluster's driver ([`dispatch`]). What the driver finishes at once ends
//! there; what it only starts (Cluster API scaling, an upgrade rolling out, a delete) becomes
//! **waiting**, with what it waits for, its deadline and its last progress in the operation's
//! row. The [`reconcile`] loop ends waiting operations from the driver's view of the backend,
//! level-triggered: on every observed change, after every (re)list, on start and on each
//! leader change, and at each stored deadline. Nothing it needs lives only in a process, so
//! a restart or a new leader ends an operation the same way. Outcomes ([`outcome`]) are
//! written in one transaction each: `*_COMPLETE`, or `*_FAILED` with the reason (a failed
//! resize also restores the previous `node_count`, as Magnum does).
//!
//! Operations a dead process had claimed (running) are requeued at start-up; drivers apply
//! desired state and send nothing when it is already applied, so a repeated call has the
//! effect of one. Of several pending resizes of one nodegroup only the newest runs, and a
//! newer resize supersedes a waiting one.

pub mod dispatch;
pub mod outcome;
pub mod reconcile;
pub mod worker;

use std::sync::Arc;

use serde::{Deserialize, Serialize};
use tokio::sync::Notify;

pub use reconcile::start_watchers;
pub use worker::{run_pending, run_worker};

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
