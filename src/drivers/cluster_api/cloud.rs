//! What the ClusterAPI driver keeps in the cloud for a cluster, as magnum-cluster-api keeps
//! it: before the Cluster, the `<stack>-cloud-config` Secret with the cluster's application
//! credential (how CAPO reaches OpenStack) and the Nova server groups `<stack>` (control
//! plane) and `<stack>-<nodegroup>` (each worker nodegroup), made as the credential; once
//! the Cluster is gone, the groups and the credential deleted as magnum-rs's service user
//! (the user's token is long gone by then). Every step finds what a run before a crash made.

use std::collections::BTreeMap;
use std::path::Path;

use k8s_openapi::api::core::v1::Secret as KubeSecret;
use kube::Api;

use super::client::{create_resource_set, create_secret, kube_error, ManagementCluster};
use super::cloud_config::{self, CloudConfig};
use super::cloud_provider;
use super::mcapi;
use super::mcapi::variables::Settings;
use super::mcapi_objects::{self, BuildError};
use crate::drivers::DriverError;
use crate::model::{Cluster, ClusterTemplate, NodeGroup};
use crate::openstack::application_credentials::{self, MadeCredential};
use crate::openstack::lookups::{self, LookupError};
use crate::openstack::Caller;
use crate::openstack::{floating_ips, server_groups, CallError, CloudAccess};
use serde_json::Value;

/// Where the system keeps its CA bundle (Debian's, which certifi's mirrors), for a cloud
/// configured with no `cloud_ca_file`.
const SYSTEM_CA_BUNDLE: &str = "/etc/ssl/certs/ca-certificates.crt";

/// What a create or nodegroup create made in the cloud: the credential's caller and the
/// server groups' ids by name.
pub struct Prepared {
    pub caller: Caller,
    pub groups: BTreeMap<String, String>,
}

/// The driver's way to the cloud (keystone auth mode only).
#[derive(Clone, Debug)]
pub struct CloudSide {
    access: CloudAccess,
    /// Magnum's `[cinder]` defaults magnum-cluster-api reads.
    settings: Settings,
    /// What `cacert` holds: the configured bundle, else the system's.
    ca_bundle: String,
    /// The configured bundle only (empty when none is): the workload's `ca.crt`.
    configured_ca: String,
    /// Whether CAPO verifies the cloud's certificates.
    verify: bool,
}

/// The server group of the control plane and of each worker nodegroup, with the policies
/// of its `server_group_policies` label: a nodegroup's own, else the cluster's, else the
/// default (magnum-cluster-api's `_get_node_group_server_group_policies`).
pub fn server_group_names(
    stack: &str,
    cluster: &Cluster,
    nodegroups: &[NodeGroup],
) -> Vec<(String, Vec<String>)> {
    let named = |labels: Option<&serde_json::Map<String, serde_json::Value>>| {
        server_groups::named_policies(
            labels
                .and_then(|l| l.get("server_group_policies"))
                .and_then(serde_json::Value::as_str),
        )
    };
    let control_plane = named(cluster.labels.as_ref())
        .unwrap_or_else(|| vec![server_groups::DEFAULT_POLICY.to_string()]);
    let mut groups = vec![(stack.to_string(), control_plane.clone())];
    for ng in nodegroups.iter().filter(|ng| !ng.is_master()) {
        let policies = named(ng.labels.as_ref()).unwrap_or_else(|| control_plane.clone());
        groups.push((format!("{stack}-{}", ng.name), policies));
    }
    groups
}

impl CloudSide {
    /// `ca_file`: the bundle CAPO verifies the cloud with (magnum-cluster-api's
    /// `[capi_client] ca_file`); `insecure`: CAPO does not verify.
    pub fn new(
        access: CloudAccess,
        settings: Settings,
        ca_file: Option<&Path>,
        insecure: bool,
    ) -> anyhow::Result<Self> {
        let configured_ca = match ca_file {
            Some(path) => std::fs::read_to_string(path).map_err(|e| {
                anyhow::anyhow!(
                    "cannot read [drivers.cluster_api] cloud_ca_file {}: {e}",
                    path.display()
                )
            })?,
            None => String::new(),
        };
        let ca_bundle = match ca_file {
            Some(_) => configured_ca.clone(),
            None => std::fs::read_to_string(SYSTEM_CA_BUNDLE).unwrap_or_default(),
        };
        Ok(CloudSide {
            access,
            settings,
            ca_bundle,
            configured_ca,
            verify: !insecure,
        })
    }

    /// The cloud-config Secret and the server groups, before the Cluster; the credential's
    /// caller and the groups' ids, for the look-ups of the Cluster's variables.
    pub async fn prepare(
        &self,
        mc: &ManagementCluster,
        stack: &str,
        cluster: &Cluster,
        nodegroups: &[NodeGroup],
        credential: &MadeCredential,
    ) -> Result<Prepared, DriverError> {
        let auth_url = self.access.identity_url().await.map_err(unavailable)?;
        let config = self.cloud_config(&auth_url, credential);
        // One the run before a crash wrote holds the same stored credential.
        create_secret(
            mc,
            &cloud_config::secret(stack, &mc.namespace, &cluster.uuid, &config),
        )
        .await?;
        self.ensure_groups(credential, server_group_names(stack, cluster, nodegroups))
            .await
    }

    /// What the cluster's `clouds.yaml` says: Keystone at `auth_url`, as `credential`.
    fn cloud_config<'a>(
        &'a self,
        auth_url: &'a str,
        credential: &'a MadeCredential,
    ) -> CloudConfig<'a> {
        CloudConfig {
            auth_url,
            region_name: self.access.cloud.region(),
            interface: self.access.cloud.interface().as_str(),
            verify: self.verify,
            credential_id: &credential.id,
            credential_secret: &credential.secret,
            cacert: &self.ca_bundle,
        }
    }

    /// The `<stack>-cloud-provider` Secret and ClusterResourceSet of a new cluster on
    /// magnum-cluster-api's class: the workload's `kube-system/cloud-config` with the
    /// cluster's credential and, with Cinder's CSI, a StorageClass per volume type (looked
    /// up as the credential), written before the Cluster. One a run before a crash wrote is
    /// kept.
    pub async fn write_cloud_provider(
        &self,
        mc: &ManagementCluster,
        prepared: &Prepared,
        stack: &str,
        cluster: &Cluster,
        credential: &MadeCredential,
    ) -> Result<(), DriverError> {
        let auth_url = self.access.identity_url().await.map_err(unavailable)?;
        let config = cloud_provider::ProviderConfig {
            cloud: &self.cloud_config(&auth_url, credential),
            ca: &self.configured_ca,
        };
        let s = prepared.caller.session(&self.access.cloud);
        let data = mcapi_objects::cloud_provider_data(&s, cluster, &config)
            .await
            .map_err(not_built)?;
        create_secret(mc, &cloud_provider::secret(stack, &mc.namespace, data)).await?;
        create_resource_set(
            mc,
            cloud_provider::resource_set(stack, &mc.namespace, &cluster.uuid),
        )
        .await
    }

    /// The server groups `wanted` (name, policies), made as `credential` when missing; the
    /// credential's caller and the groups' ids.
    async fn ensure_groups(
        &self,
        credential: &MadeCredential,
        wanted: Vec<(String, Vec<String>)>,
    ) -> Result<Prepared, DriverError> {
        let caller = self.caller_of(credential).await?;
        let session = caller.session(&self.access.cloud);
        let mut groups = BTreeMap::new();
        for (name, policies) in wanted {
            let group = server_groups::ensure(&session, &name, None, &policies)
                .await
                .map_err(|e| looked_up("make the server group", &name, e))?;
            groups.insert(name, group.id);
        }
        Ok(Prepared { caller, groups })
    }

    /// magnum-cluster-api's Cluster (v1beta2) for a new cluster on `target`'s class, its
    /// look-ups made as the cluster's credential.
    pub async fn mcapi_cluster(
        &self,
        prepared: &Prepared,
        target: mcapi_objects::Target<'_>,
        rows: (&Cluster, &ClusterTemplate, &[NodeGroup]),
    ) -> Result<Value, DriverError> {
        let s = prepared.caller.session(&self.access.cloud);
        let keystone_url = self.access.identity_url().await.map_err(unavailable)?;
        let add_ons = mcapi_objects::AddOnInputs {
            keystone_url: &keystone_url,
            ca: &self.configured_ca,
        };
        mcapi_objects::cluster(&s, target, rows, &prepared.groups, &self.settings, &add_ons)
            .await
            .map(mcapi::v1beta2::cluster)
            .map_err(not_built)
    }

    /// The server group of a nodegroup added to the cluster `stack` (magnum-cluster-api's
    /// `ensure_worker_server_group`), made as the credential of the cluster's
    /// `<stack>-cloud-config` Secret (whoever created the cluster: magnum-rs or
    /// magnum-cluster-api); nothing for a cluster without one (created without a cloud).
    pub async fn prepare_nodegroup(
        &self,
        mc: &ManagementCluster,
        stack: &str,
        cluster: &Cluster,
        nodegroup: &NodeGroup,
    ) -> Result<Option<Prepared>, DriverError> {
        let Some(credential) = self.stored_credential(mc, stack).await? else {
            return Ok(None);
        };
        let mut wanted = server_group_names(stack, cluster, std::slice::from_ref(nodegroup));
        wanted.remove(0); // the control plane's, made with the cluster
        self.ensure_groups(&credential, wanted).await.map(Some)
    }

    /// Calls as the cluster's application credential.
    async fn caller_of(&self, credential: &MadeCredential) -> Result<Caller, DriverError> {
        self.access
            .as_credential(&credential.id, &credential.secret)
            .await
            .map_err(refused_credential)
    }

    /// The credential in the cluster's `<stack>-cloud-config` Secret, if it has one.
    async fn stored_credential(
        &self,
        mc: &ManagementCluster,
        stack: &str,
    ) -> Result<Option<MadeCredential>, DriverError> {
        let name = cloud_config::secret_name(stack);
        let api: Api<KubeSecret> = Api::namespaced(mc.client.clone(), &mc.namespace);
        let secret = api
            .get_opt(&name)
            .await
            .map_err(|e| kube_error(e, &format!("Secret {}/{name}", mc.namespace)))?;
        Ok(secret.as_ref().and_then(cloud_config::credential_of))
    }

    /// The image an upgrade moves the cluster `stack` to, looked up in Glance as the
    /// cluster's credential (magnum-cluster-api's `upgrade_cluster`: id and `hw_disk_bus`).
    pub async fn upgrade_image(
        &self,
        mc: &ManagementCluster,
        stack: &str,
        ident: &str,
    ) -> Result<mcapi::upgrade::NewImage, DriverError> {
        let credential = self.stored_credential(mc, stack).await?.ok_or_else(|| {
            DriverError::rejected(format!(
                "the cluster has no {} Secret to look its new image up with",
                cloud_config::secret_name(stack)
            ))
        })?;
        let caller = self.caller_of(&credential).await?;
        let image = lookups::find_image(&caller.session(&self.access.cloud), ident)
            .await
            .map_err(|e| looked_up("look up", &format!("the image {ident}"), e))?;
        Ok(mcapi::upgrade::NewImage {
            id: image.id,
            hw_disk_bus: image.hw_disk_bus,
        })
    }

    /// magnum-cluster-api's worker entry (v1beta2) for a nodegroup added to the cluster
    /// `stack`.
    pub async fn mcapi_worker_entry(
        &self,
        prepared: &Prepared,
        stack: &str,
        cluster: &Cluster,
        nodegroup: &NodeGroup,
    ) -> Result<Value, DriverError> {
        let s = prepared.caller.session(&self.access.cloud);
        mcapi_objects::worker_entry(
            &s,
            stack,
            cluster,
            nodegroup,
            &prepared.groups,
            &self.settings,
        )
        .await
        .map(mcapi::v1beta2::machine_deployment)
        .map_err(not_built)
    }

    /// A deleted nodegroup's server group `<stack>-<nodegroup>`, as the service user.
    pub async fn clean_up_nodegroup(
        &self,
        stack: &str,
        cluster: &Cluster,
        nodegroup: &NodeGroup,
    ) -> Result<(), DriverError> {
        let caller = self.access.as_service().await.map_err(unavailable)?;
        let session = caller.session(&self.access.cloud);
        let name = format!("{stack}-{}", nodegroup.name);
        server_groups::delete(&session, &name, cluster.project_id.as_deref(), true)
            .await
            .map_err(|e| looked_up("delete the server group", &name, e))
    }

    /// The server groups, the floating IPs CAPO left and the credential, once the Cluster
    /// `(namespace, stack)` is gone, as the service user (across projects, only the
    /// cluster's project's).
    pub async fn clean_up(
        &self,
        (namespace, stack): (&str, &str),
        cluster: &Cluster,
    ) -> Result<(), DriverError> {
        let caller = self.access.as_service().await.map_err(unavailable)?;
        let session = caller.session(&self.access.cloud);
        let project = cluster.project_id.as_deref();
        // CAPO's API server address of a cluster without a load balancer, which CAPO
        // deletes only with the machine it was attached to (magnum-cluster-api leaves it).
        let description = floating_ips::capo_description(namespace, stack);
        let left = floating_ips::described(&session, project, &description)
            .await
            .map_err(|e| looked_up("list the floating IPs of", stack, e))?;
        for ip in left {
            floating_ips::delete_id(&session, &ip.id)
                .await
                .map_err(|e| looked_up("delete the floating IP", &ip.floating_ip_address, e))?;
        }
        let prefix = format!("{stack}-");
        let groups = server_groups::list(&session, project, true)
            .await
            .map_err(|e| looked_up("list the server groups", stack, e))?;
        for g in groups
            .iter()
            .filter(|g| g.name == stack || g.name.starts_with(&prefix))
        {
            server_groups::delete_id(&session, &g.id)
                .await
                .map_err(|e| looked_up("delete the server group", &g.name, e))?;
        }
        let user = cluster.user_id.as_deref().unwrap_or_default();
        application_credentials::delete(&session, user, &cluster.uuid)
            .await
            .map_err(|e| looked_up("delete the application credential", &cluster.uuid, e))
    }
}

fn refused_credential(e: CallError) -> DriverError {
    match e {
        CallError::Forbidden => {
            DriverError::rejected("Keystone refused the cluster's application credential")
        }
        other => unavailable(other),
    }
}

fn unavailable(e: CallError) -> DriverError {
    DriverError::transient(format!("the cloud cannot be reached: {e}"))
}

/// Why magnum-cluster-api's object could not be built: a look-up's failure as
/// [`looked_up`], a label mcapi refuses as a refusal.
fn not_built(e: BuildError) -> DriverError {
    match e {
        BuildError::Lookup { what, error } => looked_up("look up", &what, error),
        other => DriverError::rejected(other.to_string()),
    }
}

/// A look-up's failure: passing when the service could not answer, else refused.
fn looked_up(what: &str, name: &str, e: LookupError) -> DriverError {
    match e {
        LookupError::Unavailable(why) => {
            DriverError::transient(format!("cannot {what} {name}: {why}"))
        }
        LookupError::Duplicate => {
            DriverError::rejected(format!("cannot {what} {name}: several have that name"))
        }
        other => DriverError::rejected(format!("cannot {what} {name}: {other}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn labels(v: serde_json::Value) -> Option<serde_json::Map<String, serde_json::Value>> {
        v.as_object().cloned()
    }

    #[test]
    fn one_group_for_the_control_plane_and_one_per_worker_nodegroup() {
        let cluster = Cluster {
            labels: labels(json!({"server_group_policies": "anti-affinity"})),
            ..Cluster::default()
        };
        let ng = |name: &str, role: &str, l: Option<serde_json::Value>| NodeGroup {
            name: name.into(),
            role: Some(role.into()),
            labels: l.and_then(labels),
            ..NodeGroup::default()
        };
        let groups = server_group_names(
            "kube-abcde",
            &cluster,
            &[
                ng("default-master", "master", None),
                ng("default-worker", "worker", None),
                ng(
                    "gpu",
                    "worker",
                    Some(json!({"server_group_policies": "soft-affinity"})),
                ),
                ng("big", "worker", Some(json!({"kube_tag": "v1.31.0"}))),
            ],
        );
        assert_eq!(
            groups,
            vec![
                ("kube-abcde".to_string(), vec!["anti-affinity".to_string()]),
                (
                    "kube-abcde-default-worker".to_string(),
                    vec!["anti-affinity".to_string()]
                ),
                (
                    "kube-abcde-gpu".to_string(),
                    vec!["soft-affinity".to_string()]
                ),
                // Labels that name no policy: the cluster's, as magnum-cluster-api.
                (
                    "kube-abcde-big".to_string(),
                    vec!["anti-affinity".to_string()]
                ),
            ]
        );
    }
}
