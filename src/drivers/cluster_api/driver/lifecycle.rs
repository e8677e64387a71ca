//! What the ClusterAPI driver does, on the one Cluster object of each Magnum cluster: creates
//! and deletes it, and patches single fields of its topology for resizes, upgrades and
//! nodegroups (nothing when the spec already says what is asked); each call returns what the
//! change waits on.

use async_trait::async_trait;
use kube::api::{DeleteParams, DynamicObject, Patch, PatchParams, PostParams};
use serde_json::Value;

use super::{generation_of, ng_ref, KubeClusterApiDriver};
use crate::drivers::cluster_api::ca;
use crate::drivers::cluster_api::client::{
    delete_resource_sets, delete_secrets, kube_error, ManagementCluster,
};
use crate::drivers::cluster_api::cloud_config;
use crate::drivers::cluster_api::mcapi;
use crate::drivers::cluster_api::mcapi_objects;
use crate::drivers::cluster_api::topology;
use crate::drivers::cluster_api::Shape;
use crate::drivers::{
    CreateGiven, CreateOutcome, DriverError, Lifecycle, NodeGroupRef, Progress, ResizeRequest,
};
use crate::model::{Cluster, ClusterTemplate, NodeGroup};

#[async_trait]
impl Lifecycle for KubeClusterApiDriver {
    async fn create_cluster(
        &self,
        cluster: &Cluster,
        template: &ClusterTemplate,
        nodegroups: &[NodeGroup],
        given: &CreateGiven<'_>,
    ) -> Result<CreateOutcome, DriverError> {
        let mc = self.management_for(cluster)?;
        let stack = match cluster.stack_id.clone().filter(|s| !s.is_empty()) {
            Some(stack) => stack,
            None => self.backend_name(mc, &cluster.uuid).await?,
        };
        // What the Cluster needs, before it: Magnum's CAs (the control plane makes its own
        // when it finds none), then the cloud configuration with the cluster's credential
        // and the server groups (magnum-cluster-api writes the cloud configuration before
        // the CAs; nothing reads either before the Cluster exists).
        let cloud = self.cloud.as_ref().zip(given.credential);
        if let Some(cas) = given.cas {
            ca::write_cas(mc, &stack, cas).await?;
        }
        let mut prepared = None;
        if let Some((cloud, credential)) = cloud {
            prepared = Some(
                cloud
                    .prepare(mc, &stack, cluster, nodegroups, credential)
                    .await?,
            );
            crate::failpoint::hit("cloud-prepared");
        }
        // magnum-cluster-api's Cluster on its class, else the plain topology of the
        // configured class.
        let body = match (self.mcapi_cloud(), &prepared, given.credential) {
            (Some(cloud), Some(prepared), Some(credential)) => {
                // What the workload needs from the cloud, applied once the Cluster is up;
                // the Helm add-ons come from deploy/addons/ by the Cluster's labels.
                cloud
                    .write_cloud_provider(mc, prepared, &stack, cluster, credential)
                    .await?;
                let class =
                    topology::class_of(cluster, template, &self.defaults.mcapi_cluster_class);
                let target = mcapi_objects::Target {
                    stack: &stack,
                    namespace: &mc.namespace,
                    class: &class,
                };
                cloud
                    .mcapi_cluster(prepared, target, (cluster, template, nodegroups))
                    .await?
            }
            _ if self.shape == Shape::MagnumClusterApi => {
                return Err(DriverError::rejected(
                    "magnum-cluster-api's Cluster needs the cloud: keystone auth mode and the \
                     cluster's application credential",
                ))
            }
            _ => topology::cluster_object(
                &stack,
                &mc.namespace,
                &self.api_version,
                cluster,
                template,
                nodegroups,
                &self.defaults,
            ),
        };
        let obj: DynamicObject =
            serde_json::from_value(body).map_err(|e| DriverError::rejected(e.to_string()))?;
        let generation = match self
            .api(mc, &self.resources.cluster)
            .create(&PostParams::default(), &obj)
            .await
        {
            Ok(o) => o.metadata.generation,
            // A repeated call (after a crash): the object the first call made. Another
            // cluster's object took the name meanwhile: the next try picks another.
            Err(kube::Error::Api(s)) if s.is_already_exists() => {
                let existing = self.get_cluster(mc, &stack).await?;
                if owner_of(&existing) != Some(cluster.uuid.as_str()) {
                    return Err(DriverError::transient(format!(
                        "Cluster {}/{stack} was created for another cluster meanwhile",
                        mc.namespace
                    )));
                }
                generation_of(&existing)
            }
            Err(e) => return Err(kube_error(e, &format!("Cluster {}/{stack}", mc.namespace))),
        };
        Ok(CreateOutcome {
            wait: Some(self.wait_on(mc, &stack, generation)),
            stack_id: Some(stack),
            api_address: None,
            coe_version: None,
        })
    }

    async fn delete_cluster(&self, cluster: &Cluster) -> Result<Progress, DriverError> {
        let mc = self.management_for(cluster)?;
        let Some(stack) = cluster.stack_id.clone().filter(|s| !s.is_empty()) else {
            // A create that failed before its Cluster was made may have left its Secrets,
            // server groups and credential under the name it had chosen: the same name
            // again (derived from the uuid, skipping names other clusters hold).
            let stack = self.backend_name(mc, &cluster.uuid).await?;
            let named = Cluster {
                stack_id: Some(stack),
                ..cluster.clone()
            };
            self.clean_up_deleted(&named).await?;
            return Ok(Progress::Complete);
        };
        match self
            .api(mc, &self.resources.cluster)
            .delete(&stack, &DeleteParams::default())
            .await
        {
            // Cluster API deletes the machines first; the row goes when the Cluster is gone.
            Ok(_) => Ok(Progress::Waiting(self.wait_on(mc, &stack, None))),
            Err(kube::Error::Api(s)) if s.is_not_found() => {
                self.clean_up_deleted(cluster).await?;
                Ok(Progress::Complete)
            }
            Err(e) => Err(kube_error(e, &format!("Cluster {}/{stack}", mc.namespace))),
        }
    }

    /// The Secrets the create wrote beside the Cluster (the four CAs and the cloud
    /// configuration), deleted once the Cluster is gone, as magnum-cluster-api deletes
    /// them: the control plane's machines need them until then.
    async fn clean_up_deleted(&self, cluster: &Cluster) -> Result<(), DriverError> {
        let mc = self.management_for(cluster)?;
        let Some(stack) = cluster.stack_id.as_deref().filter(|s| !s.is_empty()) else {
            return Ok(());
        };
        let mut names: Vec<String> = ca::SECRET_SUFFIXES
            .iter()
            .map(|suffix| format!("{stack}-{suffix}"))
            .collect();
        names.push(cloud_config::secret_name(stack));
        // The cloud's side first: the cloud-config Secret holds the credential until the
        // credential itself is gone.
        if let Some(cloud) = &self.cloud {
            cloud.clean_up((&mc.namespace, stack), cluster).await?;
            crate::failpoint::hit("cloud-cleaned-up");
        }
        // The add-ons' ClusterResourceSets and Secrets of a cluster magnum-cluster-api
        // created, named as its delete names them.
        let add_ons = [cluster.uuid.clone(), format!("{stack}-cloud-provider")];
        delete_resource_sets(mc, &add_ons).await?;
        names.extend(add_ons);
        delete_secrets(mc, &names).await
    }

    /// The nodegroup's server group, once its MachineDeployment is gone.
    async fn clean_up_deleted_nodegroup(
        &self,
        cluster: &Cluster,
        nodegroup: &NodeGroup,
    ) -> Result<(), DriverError> {
        let (Some(cloud), Some(stack)) = (
            &self.cloud,
            cluster.stack_id.as_deref().filter(|s| !s.is_empty()),
        ) else {
            return Ok(());
        };
        cloud.clean_up_nodegroup(stack, cluster, nodegroup).await
    }

    fn uses_cloud_credential(&self) -> bool {
        self.cloud.is_some()
    }

    async fn resize(
        &self,
        cluster: &Cluster,
        nodegroup: &NodeGroup,
        request: &ResizeRequest,
    ) -> Result<Progress, DriverError> {
        let mc = self.management_for(cluster)?;
        let stack = Self::stack_id(cluster)?;
        let which = ng_ref(nodegroup);
        let n = request.node_count;
        let current = self.get_cluster(mc, &stack).await?;
        match &which {
            NodeGroupRef::ControlPlane => {
                let spec = current
                    .pointer("/spec/topology/controlPlane/replicas")
                    .and_then(Value::as_i64);
                if spec == Some(n) {
                    // Already asked (a repeated call): no second patch, no second marking.
                    return Ok(Progress::Waiting(self.wait_on(
                        mc,
                        &stack,
                        generation_of(&current),
                    )));
                }
                let marked = self
                    .mark_for_deletion(mc, &stack, &which, &request.nodes_to_remove)
                    .await?;
                let patched = match self
                    .api(mc, &self.resources.cluster)
                    .patch(
                        &stack,
                        &PatchParams::default(),
                        &Patch::Merge(&topology::control_plane_replicas(n)),
                    )
                    .await
                {
                    Ok(patched) => patched,
                    Err(e) => {
                        self.unmark(mc, &marked).await;
                        return Err(kube_error(e, &format!("Cluster {}/{stack}", mc.namespace)));
                    }
                };
                Ok(Progress::Waiting(self.wait_on(
                    mc,
                    &stack,
                    patched.metadata.generation,
                )))
            }
            NodeGroupRef::Worker(name) => {
                // An autoscaled nodegroup keeps the autoscaler's bounds and gets no replicas.
                let autoscaled = cluster
                    .labels
                    .as_ref()
                    .and_then(|l| l.get("auto_scaling_enabled"))
                    .and_then(Value::as_str)
                    .is_some_and(|v| v.eq_ignore_ascii_case("true"))
                    && nodegroup.max_node_count.is_some_and(|m| m > 0);
                let (min, max) = (
                    nodegroup.min_node_count,
                    nodegroup.max_node_count.unwrap_or_default(),
                );
                let at_target = |c: &Value| {
                    topology::machine_deployment_index(c, name)
                        .and_then(|i| {
                            c.pointer(&format!(
                                "/spec/topology/workers/machineDeployments/{i}/replicas"
                            ))
                        })
                        .and_then(Value::as_i64)
                        == Some(n)
                };
                let marked = if !autoscaled && !at_target(&current) {
                    self.mark_for_deletion(mc, &stack, &which, &request.nodes_to_remove)
                        .await?
                } else {
                    Vec::new()
                };
                let patched = self
                    .patch_workers(mc, &stack, Some(current), |c| {
                        let i = topology::machine_deployment_index(c, name).ok_or_else(|| {
                            DriverError::rejected(format!(
                                "Cluster {stack} has no worker entry named {name}"
                            ))
                        })?;
                        Ok(if autoscaled {
                            Some(topology::worker_autoscaling(c, i, name, min, max))
                        } else if at_target(c) {
                            None
                        } else {
                            Some(topology::worker_replicas(c, i, name, n))
                        })
                    })
                    .await;
                let wait = match patched {
                    Ok(wait) => wait,
                    Err(e) => {
                        self.unmark(mc, &marked).await;
                        return Err(e);
                    }
                };
                if autoscaled {
                    return Ok(Progress::Complete);
                }
                Ok(Progress::Waiting(wait))
            }
        }
    }

    async fn asked_count(
        &self,
        cluster: &Cluster,
        nodegroup: &NodeGroup,
    ) -> Result<Option<i64>, DriverError> {
        let mc = self.management_for(cluster)?;
        let stack = Self::stack_id(cluster)?;
        let current = self.get_cluster(mc, &stack).await?;
        let pointer = match ng_ref(nodegroup) {
            NodeGroupRef::ControlPlane => "/spec/topology/controlPlane/replicas".to_string(),
            NodeGroupRef::Worker(name) => {
                let Some(i) = topology::machine_deployment_index(&current, &name) else {
                    return Ok(None);
                };
                format!("/spec/topology/workers/machineDeployments/{i}/replicas")
            }
        };
        Ok(current.pointer(&pointer).and_then(Value::as_i64))
    }

    async fn upgrade(
        &self,
        cluster: &Cluster,
        template: &ClusterTemplate,
        _nodegroup: &NodeGroup,
        _max_batch_size: i64,
    ) -> Result<Progress, DriverError> {
        let mc = self.management_for(cluster)?;
        let stack = Self::stack_id(cluster)?;
        // The new template's kube_tag, not the cluster's own copy of the old one (as
        // magnum-cluster-api's upgrade_cluster reads it).
        let version = template
            .kube_tag()
            .map(str::to_string)
            .or_else(|| topology::kube_version(cluster, template))
            .ok_or_else(|| DriverError::rejected("the cluster template has no kube_tag label"))?;
        let class = template
            .labels
            .as_ref()
            .and_then(|l| l.get("capi_cluster_class"))
            .and_then(Value::as_str);
        let current = self.get_cluster(mc, &stack).await?;
        let topo = |p: &str| {
            current
                .pointer(&format!("/spec/topology/{p}"))
                .and_then(Value::as_str)
                .map(str::to_string)
        };
        let class_now = topo("classRef/name").or_else(|| topo("class"));
        if topo("version").as_deref() == Some(version.as_str())
            && class.is_none_or(|c| class_now.as_deref() == Some(c))
        {
            return Ok(Progress::Waiting(self.wait_on(
                mc,
                &stack,
                generation_of(&current),
            )));
        }
        // On magnum-cluster-api's class the images move with the version, as its upgrade
        // moves them (the new template's image, looked up as the cluster's credential). Its
        // JSON patch tests each worker entry's name, so it is built again from a fresh read
        // when the worker list moved in between (as a worker resize is).
        if mcapi::cluster::is_mcapi(&current) {
            let cloud = self.cloud.as_ref().ok_or_else(|| {
                DriverError::rejected(
                    "upgrading a cluster on magnum-cluster-api's class needs the new \
                     template's image from Glance: keystone auth mode",
                )
            })?;
            let ident = template
                .image_id
                .as_deref()
                .ok_or_else(|| DriverError::rejected("the cluster template has no image"))?;
            let image = cloud.upgrade_image(mc, &stack, ident).await?;
            let wait = self
                .patch_workers(mc, &stack, Some(current), |c| {
                    Ok(Some(mcapi::upgrade::upgrade_patch(
                        c,
                        &self.api_version,
                        &version,
                        class,
                        &image,
                    )))
                })
                .await?;
            return Ok(Progress::Waiting(wait));
        }
        let patch = Patch::Merge(topology::upgrade(&version, class, &self.api_version));
        let patched = self
            .api(mc, &self.resources.cluster)
            .patch(&stack, &PatchParams::default(), &patch)
            .await
            .map_err(|e| kube_error(e, &format!("Cluster {}/{stack}", mc.namespace)))?;
        Ok(Progress::Waiting(self.wait_on(
            mc,
            &stack,
            patched.metadata.generation,
        )))
    }

    async fn create_nodegroup(
        &self,
        cluster: &Cluster,
        nodegroup: &NodeGroup,
    ) -> Result<Progress, DriverError> {
        let mc = self.management_for(cluster)?;
        let stack = Self::stack_id(cluster)?;
        let mut prepared = None;
        if let Some(cloud) = &self.cloud {
            prepared = cloud
                .prepare_nodegroup(mc, &stack, cluster, nodegroup)
                .await?;
        }
        // The entry of the Cluster's own shape: magnum-cluster-api's on its class (its
        // overrides looked up as the cluster's credential; also for a cluster mcapi
        // created), else the plain one.
        let mcapi_entry = match (&self.cloud, &prepared) {
            (Some(cloud), Some(prepared)) => Some(
                cloud
                    .mcapi_worker_entry(prepared, &stack, cluster, nodegroup)
                    .await?,
            ),
            _ => None,
        };
        let plain_entry = topology::worker_entry(nodegroup, &self.defaults.worker_class, false);
        let wait = self
            .patch_workers(mc, &stack, None, |c| {
                if topology::machine_deployment_index(c, &nodegroup.name).is_some() {
                    return Ok(None);
                }
                let entry = if mcapi::cluster::is_mcapi(c) {
                    mcapi_entry.clone().ok_or_else(|| {
                        DriverError::rejected(
                            "a nodegroup of a cluster on magnum-cluster-api's class needs its \
                             flavor, image and server group from the cloud: keystone auth mode \
                             and the cluster's cloud-config Secret",
                        )
                    })?
                } else {
                    plain_entry.clone()
                };
                Ok(Some(topology::add_worker(entry)))
            })
            .await?;
        Ok(Progress::Waiting(wait))
    }

    async fn update_nodegroup(
        &self,
        cluster: &Cluster,
        nodegroup: &NodeGroup,
    ) -> Result<Progress, DriverError> {
        let mc = self.management_for(cluster)?;
        let stack = Self::stack_id(cluster)?;
        let Some(max) = nodegroup.max_node_count.filter(|m| *m > 0) else {
            return Ok(Progress::Complete);
        };
        if nodegroup.is_master() {
            return Err(DriverError::rejected(
                "the control plane cannot be autoscaled",
            ));
        }
        let name = nodegroup.name.clone();
        self.patch_workers(mc, &stack, None, |c| {
            let i = topology::machine_deployment_index(c, &name).ok_or_else(|| {
                DriverError::rejected(format!("Cluster {stack} has no worker entry named {name}"))
            })?;
            Ok(Some(topology::worker_autoscaling(
                c,
                i,
                &name,
                nodegroup.min_node_count,
                max,
            )))
        })
        .await?;
        Ok(Progress::Complete)
    }

    async fn delete_nodegroup(
        &self,
        cluster: &Cluster,
        nodegroup: &NodeGroup,
    ) -> Result<Progress, DriverError> {
        let mc = self.management_for(cluster)?;
        let stack = Self::stack_id(cluster)?;
        let name = nodegroup.name.clone();
        let wait = self
            .patch_workers(mc, &stack, None, |c| {
                Ok(topology::machine_deployment_index(c, &name)
                    .map(|i| topology::remove_worker(i, &name)))
            })
            .await?;
        // The row goes when Cluster API has deleted the MachineDeployment and its Machines.
        Ok(Progress::Waiting(wait))
    }
}

/// The Magnum cluster uuid a Cluster object carries (its `cluster-uuid` label).
fn owner_of(cluster: &Value) -> Option<&str> {
    cluster
        .pointer("/metadata/labels")
        .and_then(|l| l.get(topology::CLUSTER_UUID_LABEL))
        .and_then(Value::as_str)
}

/// How many names a create tries before it gives up (each taken by another cluster).
const NAME_CANDIDATES: u32 = 8;

impl KubeClusterApiDriver {
    /// The Cluster API name of a new cluster, in magnum-cluster-api's style (`kube-` and
    /// five characters). It is derived from the cluster's uuid, not drawn at random, so a
    /// create that runs again after a crash finds the objects the first run made under it
    /// (its Secrets, its Cluster): the first candidate that is free or already this
    /// cluster's.
    async fn backend_name(
        &self,
        mc: &ManagementCluster,
        cluster_uuid: &str,
    ) -> Result<String, DriverError> {
        let api = self.api(mc, &self.resources.cluster);
        for attempt in 0..NAME_CANDIDATES {
            let name = candidate_name(cluster_uuid, attempt);
            let existing = api
                .get_opt(&name)
                .await
                .map_err(|e| kube_error(e, &format!("Cluster {}/{name}", mc.namespace)))?;
            let existing = existing.map(|o| serde_json::to_value(o).unwrap_or_default());
            match existing.as_ref().map(owner_of) {
                None => return Ok(name),
                Some(Some(owner)) if owner == cluster_uuid => return Ok(name),
                Some(_) => continue,
            }
        }
        Err(DriverError::rejected(format!(
            "no free Cluster API name for cluster {cluster_uuid} in {}",
            mc.namespace
        )))
    }
}

/// The `attempt`-th name for a cluster: `kube-` and five characters drawn from its uuid.
fn candidate_name(cluster_uuid: &str, attempt: u32) -> String {
    const ALPHABET: &[u8] = b"abcdefghijklmnopqrstuvwxyz0123456789";
    let seed = uuid::Uuid::parse_str(cluster_uuid)
        .map(|u| u.as_u128())
        .unwrap_or_else(|_| {
            cluster_uuid
                .bytes()
                .fold(0u128, |h, b| h.wrapping_mul(31).wrapping_add(u128::from(b)))
        });
    let mut r = seed ^ u128::from(attempt).wrapping_mul(0x9E37_79B9_7F4A_7C15_F39C_C060_5CED_C835);
    let tail: String = (0..5)
        .map(|_| {
            let c = ALPHABET[(r % ALPHABET.len() as u128) as usize] as char;
            r /= ALPHABET.len() as u128;
            c
        })
        .collect();
    format!("kube-{tail}")
}

#[cfg(test)]
mod tests {
    use super::candidate_name;

    #[test]
    fn a_clusters_backend_names_are_its_own_and_in_magnum_cluster_apis_style() {
        let uuid = "0f6c3e9a-3b1d-4c55-9a3e-7d2b8f1e6a42";
        let first = candidate_name(uuid, 0);
        assert_eq!(first, candidate_name(uuid, 0), "the same on every run");
        assert_eq!(first.len(), 10);
        assert!(first.starts_with("kube-"));
        assert!(first[5..]
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit()));
        let names: std::collections::BTreeSet<String> =
            (0..8).map(|i| candidate_name(uuid, i)).collect();
        assert_eq!(names.len(), 8, "each attempt another name: {names:?}");
        assert_ne!(
            first,
            candidate_name("0f6c3e9a-3b1d-4c55-9a3e-7d2b8f1e6a43", 0)
        );
    }
}
