//! The ClusterAPI driver: the capabilities of magnum-cluster-api (control-plane resize to odd
//! sizes, `nodes_to_remove` for every role) under the names and triples magnum-cluster-api
//! registers, so templates made for it resolve here unchanged.
//!
//! Without a configured management cluster its lifecycle records operations only
//! ([`RecordOnlyDriver`]); the kube-rs lifecycle is built on the same capabilities.

use serde::{Deserialize, Serialize};

use super::capabilities::ClusterApiCapabilities;
use super::record_only::RecordOnlyDriver;
use super::Triple;

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
        }
    }
}

/// The driver in record-only mode (no management cluster).
pub fn record_only(config: &ClusterApiConfig) -> RecordOnlyDriver {
    RecordOnlyDriver::new(
        &config.name,
        config.provides.clone(),
        Box::new(ClusterApiCapabilities),
    )
}
