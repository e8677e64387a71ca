//! magnum-cluster-api's objects for a real cluster: what [`super::cloud_facts`] looks up in
//! the cloud, fed to the pure builders of [`super::mcapi`]. The driver writes them (in
//! v1beta2, [`super::mcapi::v1beta2`]); the differential test compares them, as mcapi
//! writes them (v1beta1), with what mcapi's own code builds.

use std::collections::BTreeMap;

use serde_json::Value;

use super::cloud_facts;
use super::mcapi::cluster::{cluster_object, Parts};
use super::mcapi::labels::LabelError;
use super::mcapi::machine_deployment::machine_deployment;
use super::mcapi::variables::{cluster_variables, Settings};
use crate::model::{Cluster, ClusterTemplate, NodeGroup};
use crate::openstack::lookups::{self, LookupError};
use crate::openstack::Session;

/// Why an object could not be built.
#[derive(Debug, thiserror::Error)]
pub enum BuildError {
    /// A look-up failed; `what` names what was looked up.
    #[error("cannot look up {what}: {error}")]
    Lookup { what: String, error: LookupError },
    /// A label's value is not what mcapi accepts.
    #[error(transparent)]
    Label(#[from] LabelError),
    #[error("the cluster has no master nodegroup")]
    NoMaster,
}

fn lookup(what: impl Into<String>) -> impl FnOnce(LookupError) -> BuildError {
    let what = what.into();
    move |error| BuildError::Lookup { what, error }
}

/// Where the Cluster goes and on which ClusterClass.
pub struct Target<'a> {
    pub stack: &'a str,
    pub namespace: &'a str,
    pub class: &'a str,
}

/// The server groups' ids by name (`<stack>`, `<stack>-<nodegroup>`); a missing one is
/// empty, as mcapi leaves it when Nova has none.
pub type GroupIds = BTreeMap<String, String>;

fn group(groups: &GroupIds, name: &str) -> String {
    groups.get(name).cloned().unwrap_or_default()
}

/// The worker nodegroups mcapi gives an entry: not the master, not being deleted.
fn worker_nodegroups(nodegroups: &[NodeGroup]) -> impl Iterator<Item = &NodeGroup> {
    nodegroups.iter().filter(|n| {
        !n.is_master()
            && !n
                .status
                .as_deref()
                .unwrap_or_default()
                .starts_with("DELETE")
    })
}

/// mcapi's Cluster (v1beta1) for a new cluster: the 39 variables and a worker entry per
/// worker nodegroup.
pub async fn cluster(
    s: &Session<'_>,
    target: Target<'_>,
    rows: (&Cluster, &ClusterTemplate, &[NodeGroup]),
    groups: &GroupIds,
    settings: &Settings,
) -> Result<Value, BuildError> {
    let (cluster, template, nodegroups) = rows;
    // The row of a new cluster may not hold its Cluster API name yet; the variables that
    // name its Secrets need it.
    let named = Cluster {
        stack_id: Some(target.stack.to_string()),
        ..cluster.clone()
    };
    let cluster = &named;
    let master = nodegroups
        .iter()
        .find(|n| n.is_master())
        .ok_or(BuildError::NoMaster)?;
    let facts =
        cloud_facts::cluster_facts(s, cluster, template, master, group(groups, target.stack))
            .await
            .map_err(lookup("the cluster's resources"))?;
    let variables = cluster_variables(cluster, template, &facts, settings)?;
    let mut machine_deployments = Vec::new();
    for ng in worker_nodegroups(nodegroups) {
        let sg = group(groups, &format!("{}-{}", target.stack, ng.name));
        let f = cloud_facts::nodegroup_facts(s, ng, sg, settings, &facts.default_volume_type)
            .await
            .map_err(lookup(format!("nodegroup {}'s resources", ng.name)))?;
        machine_deployments.push(machine_deployment(cluster, ng, &f)?);
    }
    Ok(cluster_object(
        target.stack,
        target.namespace,
        cluster,
        template,
        Parts {
            class: target.class.to_string(),
            master_count: master.node_count,
            machine_deployments,
            variables,
        },
    )?)
}

/// mcapi's worker entry (v1beta1) for a nodegroup added to the cluster `stack`.
pub async fn worker_entry(
    s: &Session<'_>,
    stack: &str,
    cluster: &Cluster,
    nodegroup: &NodeGroup,
    groups: &GroupIds,
    settings: &Settings,
) -> Result<Value, BuildError> {
    let default_type = match &settings.default_boot_volume_type {
        Some(t) => t.clone(),
        None => lookups::default_volume_type(s)
            .await
            .map_err(lookup("the default volume type"))?,
    };
    let sg = group(groups, &format!("{stack}-{}", nodegroup.name));
    let f = cloud_facts::nodegroup_facts(s, nodegroup, sg, settings, &default_type)
        .await
        .map_err(lookup(format!("nodegroup {}'s resources", nodegroup.name)))?;
    Ok(machine_deployment(cluster, nodegroup, &f)?)
}
