//! Cluster drivers: a **capability** side (what a driver allows: master resize, sizes,
//! `nodes_to_remove`, autoscaling) that the API consults synchronously, and a **lifecycle**
//! side (create, delete, resize, nodegroups, upgrade) that the operations worker calls.
//! Handlers never hold a role-specific rule: they ask the cluster's driver.

pub mod capabilities;
pub mod certificates;
pub mod cluster_api;
mod error;
pub mod record_only;
pub mod registry;

use async_trait::async_trait;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use crate::error::ApiError;
use crate::model::{Cluster, ClusterTemplate, NodeGroup};
use crate::store::operations::OpKind;

pub use capabilities::{BaseCapabilities, Capabilities};
pub use error::{DriverError, Reason};
pub use registry::{DriverRegistry, Triple};

/// A resize handed to the driver.
#[derive(Clone, Debug)]
pub struct ResizeRequest {
    pub node_count: i64,
    pub nodes_to_remove: Vec<String>,
}

/// What an operation handed to the driver waits for: the backend object the driver changed
/// and the generation its change produced. Stored with the operation, so that whichever
/// process leads later ends it the same way.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WaitOn {
    pub object: String,
    pub generation: Option<i64>,
}

/// What the driver reports after starting an operation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Progress {
    /// Done: the resource can be marked `*_COMPLETE` now.
    Complete,
    /// Started; [`Lifecycle::observe`] tells when the backend has finished it.
    Waiting(WaitOn),
}

/// What a driver reports after creating a cluster.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CreateOutcome {
    /// None when the cluster is ready now; otherwise what its creation waits for.
    pub wait: Option<WaitOn>,
    /// The backend's name for the cluster (Magnum's `stack_id`).
    pub stack_id: Option<String>,
    pub api_address: Option<String>,
    pub coe_version: Option<String>,
}

/// Which nodegroup of a backend cluster a fact is about.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum NodeGroupRef {
    /// The control plane (Magnum's master nodegroup).
    ControlPlane,
    /// A worker nodegroup, by name.
    Worker(String),
}

/// An operation in flight, as the reconciler hands it to [`Lifecycle::observe`]: what it
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

/// A backend change a driver's watch saw: reconcile that cluster (by `stack_id`), or
/// everything (after a (re)list, when deletions may have been missed).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Change {
    Stack(String),
    All,
}

/// The lifecycle half: every method is called by the operations worker, never on a request
/// path, with the already-persisted desired state. The exception are the certificate
/// methods, which Magnum answers synchronously too (RPC calls): they run on the request path
/// and return the API's error.
#[async_trait]
pub trait Lifecycle: Send + Sync {
    async fn create_cluster(
        &self,
        cluster: &Cluster,
        template: &ClusterTemplate,
        nodegroups: &[NodeGroup],
    ) -> Result<CreateOutcome, DriverError>;

    async fn delete_cluster(&self, cluster: &Cluster) -> Result<Progress, DriverError>;

    async fn resize(
        &self,
        cluster: &Cluster,
        nodegroup: &NodeGroup,
        request: &ResizeRequest,
    ) -> Result<Progress, DriverError>;

    /// Upgrades `nodegroup` to `template`, the template the cluster moves to (Magnum's
    /// `upgrade_cluster(ctx, cluster, cluster_template, …)`).
    async fn upgrade(
        &self,
        cluster: &Cluster,
        template: &ClusterTemplate,
        nodegroup: &NodeGroup,
        max_batch_size: i64,
    ) -> Result<Progress, DriverError>;

    async fn create_nodegroup(
        &self,
        cluster: &Cluster,
        nodegroup: &NodeGroup,
    ) -> Result<Progress, DriverError>;

    async fn update_nodegroup(
        &self,
        cluster: &Cluster,
        nodegroup: &NodeGroup,
    ) -> Result<Progress, DriverError>;

    async fn delete_nodegroup(
        &self,
        cluster: &Cluster,
        nodegroup: &NodeGroup,
    ) -> Result<Progress, DriverError>;

    /// The cluster's CA certificate (PEM) for Magnum's `ca_cert_type` (`kubernetes` when
    /// absent, `etcd`, `front_proxy`/`front-proxy`): `GET /v1/certificates/{cluster}`.
    async fn ca_certificate(
        &self,
        _cluster: &Cluster,
        _ca_cert_type: Option<&str>,
    ) -> Result<String, ApiError> {
        Err(ApiError::NotSupportedMessage(
            "'get_ca_certificate' is not supported by this driver.".into(),
        ))
    }

    /// A client's certificate request signed by the cluster's CA (PEM):
    /// `POST /v1/certificates`.
    async fn sign_certificate(
        &self,
        _cluster: &Cluster,
        _ca_cert_type: Option<&str>,
        _csr: &str,
    ) -> Result<String, ApiError> {
        Err(ApiError::NotSupportedMessage(
            "'sign_certificate' is not supported by this driver.".into(),
        ))
    }

    /// Replaces the cluster's CA (`PATCH /v1/certificates/{cluster}`); Magnum's base driver
    /// refuses with this text, and so does magnum-cluster-api.
    async fn rotate_ca_certificate(&self, _cluster: &Cluster) -> Result<(), ApiError> {
        Err(ApiError::NotSupportedMessage(
            "'rotate_ca_certificate' is not supported by this driver.".into(),
        ))
    }

    /// Rotates the credentials the cluster uses to reach the cloud
    /// (`PATCH /v1/credentials/{cluster}`, the conductor's `credential_rotate`). Magnum's base
    /// driver raises `NotImplementedError`, which the conductor answers with this text.
    async fn rotate_credential(&self, _cluster: &Cluster) -> Result<(), ApiError> {
        Err(ApiError::NotSupportedMessage(
            "Credential rotation is not supported by driver.".into(),
        ))
    }

    /// Starts the driver's watchers, which keep its view of the backend and send what
    /// changed to `changes`. Drivers that complete everything synchronously have none.
    fn watch(&self, _changes: mpsc::UnboundedSender<Change>) -> Vec<JoinHandle<()>> {
        Vec::new()
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

    /// The count the backend is asked for now for `nodegroup` (its spec, not its status),
    /// when the driver can tell: after a roll-back the backend refused, the API shows this.
    async fn asked_count(
        &self,
        _cluster: &Cluster,
        _nodegroup: &NodeGroup,
    ) -> Result<Option<i64>, DriverError> {
        Ok(None)
    }

    /// How long an operation in flight may show no progress before it fails.
    fn progress_deadline(&self) -> std::time::Duration {
        std::time::Duration::from_secs(1800)
    }

    /// When replicas must elect who drives the backend: whether this replica leads now
    /// (the driver competes for leadership from the first call on). `None`: no election,
    /// this replica drives.
    fn leadership(&self) -> Option<tokio::sync::watch::Receiver<bool>> {
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

/// One management cluster as `/readyz` reports it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ManagementStatus {
    pub name: String,
    pub connected: bool,
    pub leader: bool,
}

/// A cluster driver: a name, the (server_type, os, coe) triples it provides, its
/// capabilities and its lifecycle.
pub trait Driver: Capabilities + Lifecycle {
    fn name(&self) -> &str;
    fn provides(&self) -> &[Triple];
}

/// `Driver.validate_master_size` of Magnum's base class: odd sizes ≥ 1.
pub fn odd_master_size(node_count: i64) -> Result<(), ApiError> {
    if node_count % 2 == 0 || node_count < 1 {
        return Err(ApiError::MasterNgSizeInvalid(node_count));
    }
    Ok(())
}
