//! The ClusterAPI driver: what magnum-cluster-api allows (control-plane resize to odd
//! sizes, `nodes_to_remove` for every role), under the names and triples magnum-cluster-api
//! registers so templates made for it resolve here unchanged.
//!
//! With management clusters configured it drives Cluster API through kube-rs
//! ([`driver`], its clients in [`client`]); without, it records operations only ([`RecordOnlyDriver`]).

pub mod ca;
pub mod cache;
pub mod client;
pub mod cloud;
pub mod cloud_config;
pub mod cloud_facts;
pub mod cloud_provider;
pub mod controller;
pub mod driver;
pub mod leader;
pub mod mcapi;
pub mod mcapi_objects;
pub mod progress;
pub mod slim;
pub mod status;
pub mod topology;

use std::path::PathBuf;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use super::allows::ClusterApiAllows;
use super::record_only::RecordOnlyDriver;
use super::{Driver, Triple};
use crate::openstack::CloudAccess;

/// Configuration of the ClusterAPI driver.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ClusterApiConfig {
    /// The driver's own name.
    pub name: String,
    /// Further names templates may carry in their `driver` field.
    pub aliases: Vec<String>,
    /// The (server_type, os, coe) triples it provides.
    pub provides: Vec<Triple>,
    /// Cluster API version to read and write (`v1beta2`, CAPI's storage version).
    pub api_version: String,
    /// Namespace of the Cluster objects (magnum-cluster-api's).
    pub namespace: String,
    /// ClusterClass of new clusters in the `plain` shape unless the label
    /// `capi_cluster_class` names one.
    pub cluster_class: String,
    /// ClusterClass of new clusters in magnum-cluster-api's shape unless the label
    /// `capi_cluster_class` names one: the class the operator's magnum-cluster-api applied
    /// (`"magnum-" + its version`).
    pub mcapi_cluster_class: String,
    /// Worker class of new nodegroups unless the label `capi_worker_class` names one.
    pub worker_class: String,
    /// An operation on which Cluster API shows no progress for this long fails.
    pub progress_deadline_seconds: u64,
    /// Let even control-plane sizes through to Cluster API (off: odd sizes only, as
    /// magnum-cluster-api). For ClusterClasses with external etcd; with stacked etcd the
    /// KubeadmControlPlane webhook refuses them and the resize ends `UPDATE_FAILED` with the
    /// webhook's message.
    pub allow_even_control_plane: bool,
    /// Management clusters; none: record operations only.
    pub management_clusters: Vec<ManagementClusterConfig>,
    /// Replicas elect a leader through a Lease in the first management cluster's
    /// namespace; only the leader drives Cluster API and runs the operations worker.
    pub leader_election: bool,
    /// Name of that Lease.
    pub lease_name: String,
    /// Seconds a leader holds the Lease without renewing it.
    pub lease_duration_seconds: u64,
    /// The CA bundle CAPO verifies the cloud with, written into each cluster's
    /// `<stack>-cloud-config` (magnum-cluster-api's `[capi_client] ca_file`); none: the
    /// system's bundle.
    pub cloud_ca_file: Option<PathBuf>,
    /// CAPO does not verify the cloud's certificates (`[capi_client] insecure`).
    pub cloud_insecure: bool,
    /// The Cluster a create writes: `magnum-cluster-api` (magnum-cluster-api 0.38.2's object
    /// on its ClusterClass, every variable looked up in the cloud), `plain` (the class of
    /// `cluster_class` with the `capi_variable_*` labels only), or `auto`: the first with a
    /// cloud to look things up in (keystone auth mode), else the second.
    pub shape: Shape,
}

/// See [`ClusterApiConfig::shape`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Shape {
    #[default]
    Auto,
    Plain,
    MagnumClusterApi,
}

/// One management cluster. A template picks one with the label `capi_management_cluster`;
/// otherwise the first is used.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ManagementClusterConfig {
    pub name: String,
    /// A kubeconfig file; none: in-cluster configuration (or `$KUBECONFIG`).
    pub kubeconfig: Option<PathBuf>,
    /// A context of that kubeconfig; none: its current context.
    pub context: Option<String>,
}

impl Default for ClusterApiConfig {
    fn default() -> Self {
        ClusterApiConfig {
            name: "cluster-api".into(),
            aliases: [
                "k8s_cluster_api_ubuntu",
                "k8s_cluster_api_ubuntu_focal",
                "k8s_cluster_api_debian",
                "k8s_cluster_api_flatcar",
                "k8s_cluster_api_rockylinux",
            ]
            .map(String::from)
            .to_vec(),
            provides: ["ubuntu", "debian", "flatcar", "rockylinux"]
                .map(|os| Triple::new("vm", os, "kubernetes"))
                .to_vec(),
            api_version: "v1beta2".into(),
            namespace: "magnum-system".into(),
            cluster_class: "magnum-v0.38.1".into(),
            mcapi_cluster_class: mcapi::cluster::CLUSTER_CLASS.into(),
            worker_class: "default-worker".into(),
            progress_deadline_seconds: 1800,
            allow_even_control_plane: false,
            management_clusters: Vec::new(),
            leader_election: true,
            lease_name: "magnum-rs".into(),
            lease_duration_seconds: 15,
            cloud_ca_file: None,
            cloud_insecure: false,
            shape: Shape::Auto,
        }
    }
}

/// The driver in record-only mode (no management cluster).
pub fn record_only(config: &ClusterApiConfig) -> RecordOnlyDriver {
    RecordOnlyDriver::new(
        &config.name,
        config.provides.clone(),
        Box::new(ClusterApiAllows),
    )
}

/// The driver a configuration describes.
pub async fn build(
    config: &ClusterApiConfig,
    journal: Option<PathBuf>,
    cloud: Option<(CloudAccess, mcapi::variables::Settings)>,
) -> anyhow::Result<Arc<dyn Driver>> {
    if config.management_clusters.is_empty() {
        return Ok(Arc::new(record_only(config).with_journal(journal)));
    }
    let cloud = cloud
        .map(|(access, settings)| {
            cloud::CloudSide::new(
                access,
                settings,
                config.cloud_ca_file.as_deref(),
                config.cloud_insecure,
            )
        })
        .transpose()?;
    Ok(Arc::new(
        driver::KubeClusterApiDriver::connect(config)
            .await?
            .with_cloud(cloud),
    ))
}

#[cfg(test)]
mod driver_tests;
