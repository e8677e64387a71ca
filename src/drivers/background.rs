//! A driver's background work: what runs beside the requests and the worker's calls. Its
//! controller keeps a view of the backend and, whenever something of one backend cluster
//! changes (or a stored deadline comes), hands that cluster to the conductor's
//! [`StackReconciler`], which asks the view where each waiting operation stands
//! ([`Background::observe`]) and what the backend shows about the cluster
//! ([`Background::facts`]); replicas elect who drives the backend; `/readyz` asks whether
//! the backend is reached. A driver that completes everything at once has none of it: the
//! defaults say so.

use std::time::Duration;

use std::sync::Arc;

use async_trait::async_trait;
use tokio::sync::watch;
use tokio::task::JoinHandle;

use crate::model::{Cluster, NodeGroup};
use crate::operation::OpKind;

/// Which nodegroup of a backend cluster a fact is about.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum NodeGroupRef {
    /// The control plane (Magnum's master nodegroup).
    ControlPlane,
    /// A worker nodegroup, by name.
    Worker(String),
}

/// An operation in flight, as the reconciler hands it to [`Background::observe`]: what it
/// waits for, from the store.
#[derive(Clone, Copy, Debug)]
pub struct InFlight<'a> {
    pub kind: OpKind,
    pub cluster: &'a Cluster,
    /// All nodegroups of the cluster.
    pub nodegroups: &'a [NodeGroup],
    /// The operation's nodegroup (None for cluster operations, or when its row is gone).
    pub nodegroup: Option<&'a NodeGroup>,
    /// The count a resize or nodegroup create waits for.
    pub target_count: Option<i64>,
    /// The Kubernetes version an upgrade waits for.
    pub target_version: Option<&'a str>,
    /// The generation the driver's change produced (older failure conditions are stale).
    pub generation: Option<i64>,
}

/// What the backend shows now for an operation in flight.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    Complete,
    /// Still moving (or blocked): the controllers' own message, and a marker of the
    /// counters that show progress (a new marker moves the deadline).
    InProgress {
        reason: Option<String>,
        marker: String,
    },
    /// The backend refused or failed the change, with its message.
    Failed {
        reason: String,
    },
    /// Not known yet (the driver's view of the backend is not synced).
    Unknown,
}

/// What the backend shows about a cluster, whatever is in flight: Magnum's `api_address`,
/// `coe_version` and each nodegroup's `node_addresses`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Facts {
    pub api_address: Option<String>,
    pub coe_version: Option<String>,
    pub addresses: Vec<(NodeGroupRef, Vec<String>)>,
}

/// What a driver's controller calls for one backend cluster (its `stack_id`): the
/// conductor brings what waits on it to what the driver's view shows, in the store, and
/// says when to look again.
#[async_trait]
pub trait StackReconciler: Send + Sync + 'static {
    /// Reconciles the backend cluster `stack`, present or gone. `Ok(Some(d))`: look again
    /// in `d` (the earliest stored deadline of what still waits); `Ok(None)`: only when
    /// something changes.
    async fn reconcile(&self, stack: &str) -> Result<Option<Duration>, ReconcileFailed>;

    /// The backend clusters something waits on, from the store: what a controller looks
    /// at when it starts (so on each leader change), before any change arrives.
    async fn waiting_stacks(&self) -> Result<Vec<String>, ReconcileFailed>;
}

/// The store could not be read or written; the controller backs off and tries again.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct ReconcileFailed(pub String);

/// One management cluster as `/readyz` reports it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ManagementStatus {
    pub name: String,
    pub connected: bool,
    pub leader: bool,
}

#[async_trait]
pub trait Background: Send + Sync {
    /// Starts the driver's controllers, which keep its view of the backend and hand each
    /// backend cluster that changed to `reconciler`. Drivers that complete everything
    /// synchronously have none.
    fn run_controllers(&self, _reconciler: Arc<dyn StackReconciler>) -> Vec<JoinHandle<()>> {
        Vec::new()
    }

    /// Asks the driver's controller to look at `cluster` now (an operation on it started
    /// waiting), so that its deadline is scheduled there. `false`: no controller runs for
    /// it; the caller reconciles it itself.
    fn look_again(&self, _cluster: &Cluster) -> bool {
        false
    }

    /// Where an operation in flight stands, from the driver's view of the backend (no
    /// request is sent). Pure reads: the reconciler calls it on every change.
    fn observe(&self, _op: &InFlight<'_>) -> Verdict {
        Verdict::Unknown
    }

    /// What the backend shows about a cluster now; None when not known.
    fn facts(&self, _cluster: &Cluster) -> Option<Facts> {
        None
    }

    /// How long an operation in flight may show no progress before it fails.
    fn progress_deadline(&self) -> Duration {
        Duration::from_secs(1800)
    }

    /// When replicas must elect who drives the backend: whether this replica leads now
    /// (the driver competes for leadership from the first call on). `None`: no election,
    /// this replica drives.
    fn leadership(&self) -> Option<watch::Receiver<bool>> {
        None
    }

    /// On a graceful stop: stops competing for leadership and gives it up if held, so
    /// another replica leads at once. Nothing to do without an election.
    async fn step_down(&self) {}

    /// For readiness: each backend (management cluster) the driver drives, whether this
    /// replica reaches it now and whether it leads. None: the driver has no backend.
    async fn management_status(&self) -> Vec<ManagementStatus> {
        Vec::new()
    }
}
