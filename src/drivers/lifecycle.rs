//! What a driver does: create and delete clusters, resize, upgrade, nodegroups. Every
//! method is called by the operations worker, never on a request path, with the desired
//! state already persisted; what the backend has not finished yet is reported as
//! [`Progress::Waiting`] and ended by the reconciler (see [`super::Background`]).

use async_trait::async_trait;

use super::DriverError;
use crate::certificates::ClusterCas;
use crate::model::{Cluster, ClusterTemplate, NodeGroup};
use crate::openstack::application_credentials::MadeCredential;

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
    /// Started; [`super::Background::observe`] tells when the backend has finished it.
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

/// What the conductor made for a cluster before its create reaches the driver.
#[derive(Clone, Copy, Default)]
pub struct CreateGiven<'a> {
    /// The CAs Magnum's conductor made for it, opened, for a backend that signs with them
    /// itself (`None` when it has none stored).
    pub cas: Option<&'a ClusterCas>,
    /// The cluster's application credential, made with its user's token, for a driver that
    /// asks for one ([`Lifecycle::uses_cloud_credential`]) in keystone auth mode.
    pub credential: Option<&'a MadeCredential>,
}

#[async_trait]
pub trait Lifecycle: Send + Sync {
    /// Creates the cluster with what the conductor made for it.
    async fn create_cluster(
        &self,
        cluster: &Cluster,
        template: &ClusterTemplate,
        nodegroups: &[NodeGroup],
        given: &CreateGiven<'_>,
    ) -> Result<CreateOutcome, DriverError>;

    /// Whether the backend reaches the cloud with an application credential of the
    /// cluster's user (magnum-cluster-api's), which only the creating request's token can
    /// make: the API then keeps that token until the worker has made it.
    fn uses_cloud_credential(&self) -> bool {
        false
    }

    async fn delete_cluster(&self, cluster: &Cluster) -> Result<Progress, DriverError>;

    /// What is left once the backend's cluster is gone (magnum-cluster-api's clean-up when
    /// its status sync finds the Cluster gone): called before a delete's rows go, again
    /// after a crash, so it must be done when there is nothing left. An error keeps the
    /// delete waiting, and it is called again.
    async fn clean_up_deleted(&self, _cluster: &Cluster) -> Result<(), DriverError> {
        Ok(())
    }

    /// What is left once a deleted nodegroup's machines are gone (magnum-cluster-api deletes
    /// its server group then); the same contract as [`Lifecycle::clean_up_deleted`].
    async fn clean_up_deleted_nodegroup(
        &self,
        _cluster: &Cluster,
        _nodegroup: &NodeGroup,
    ) -> Result<(), DriverError> {
        Ok(())
    }

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

    /// The count the backend is asked for now for `nodegroup` (its spec, not its status),
    /// when the driver can tell: after a roll-back the backend refused, the API shows this.
    async fn asked_count(
        &self,
        _cluster: &Cluster,
        _nodegroup: &NodeGroup,
    ) -> Result<Option<i64>, DriverError> {
        Ok(None)
    }
}
