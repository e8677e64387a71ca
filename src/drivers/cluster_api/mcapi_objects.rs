//! magnum-cluster-api's objects for a real cluster: what [`super::cloud_facts`] looks up in
//! the cloud, fed to the pure builders of [`super::mcapi`]. The driver writes them (in
//! v1beta2, [`super::mcapi::v1beta2`]); the differential test compares them, as mcapi
//! writes them (v1beta1), with what mcapi's own code builds.

use std::collections::BTreeMap;

use serde_json::Value;

use super::cloud_facts;
use super::cloud_provider;
use super::mcapi::cluster::{cluster_object, Parts};
use super::mcapi::labels::LabelError;
use super::mcapi::machine_deployment::machine_deployment;
use super::mcapi::variables::{cluster_variables, Settings};
use crate::model::{Cluster, ClusterTemplate, NodeGroup};
use crate::openstack::lookups::{self, LookupError};
use crate::openstack::{Service, Session};

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
    #[error(transparent)]
    Provider(#[from] cloud_provider::ProviderError),
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

/// What the add-ons read from the Cluster besides the rows (see
/// [`cloud_provider::add_on_annotations`]).
pub struct AddOnInputs<'a> {
    /// Keystone's URL, from the catalog.
    pub keystone_url: &'a str,
    /// The operator's CA for the cloud, empty when none is configured.
    pub ca: &'a str,
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
    add_ons: &AddOnInputs<'_>,
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
    let mut object = cluster_object(
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
    )?;
    // The labels deploy/addons/'s HelmChartProxies select by (mcapi's Cluster has none).
    let cinder = cloud_provider::cinder_enabled(cluster, s.endpoint(Service::Volume).is_ok())?;
    if let Some(labels) = object["metadata"]["labels"].as_object_mut() {
        labels.extend(cloud_provider::add_on_labels(cluster, template, cinder)?);
    }
    let annotations =
        cloud_provider::add_on_annotations(cluster, add_ons.keystone_url, add_ons.ca)?;
    if !annotations.is_empty() {
        object["metadata"]["annotations"] = Value::Object(annotations);
    }
    Ok(object)
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

/// The data of the `<stack>-cloud-provider` Secret (see [`cloud_provider`]) of a new
/// cluster: its StorageClasses from Cinder's volume types as the session sees them.
pub async fn cloud_provider_data(
    s: &Session<'_>,
    cluster: &Cluster,
    config: &cloud_provider::ProviderConfig<'_>,
) -> Result<BTreeMap<String, String>, BuildError> {
    let volumes = if cloud_provider::cinder_enabled(cluster, s.endpoint(Service::Volume).is_ok())? {
        Some(cloud_provider::VolumeTypes {
            names: lookups::volume_types(s)
                .await
                .map_err(lookup("the volume types"))?,
            default: lookups::default_volume_type(s)
                .await
                .map_err(lookup("the default volume type"))?,
        })
    } else {
        None
    };
    Ok(cloud_provider::secret_data(
        cluster,
        config,
        volumes.as_ref(),
    )?)
}
