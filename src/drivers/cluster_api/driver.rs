//! The ClusterAPI driver on real management clusters, through kube-rs.
//!
//! Writes are patches of single fields (see [`super::topology`]); worker-entry patches carry
//! a `test` of the entry's name and are retried from a fresh read when the list changed under
//! them. Every call is idempotent: it reads the Cluster first and sends no patch when the
//! spec already says what is asked (a call repeated after a crash sends nothing twice).
//!
//! The driver keeps no state about operations. Its watches ([`super::cache`]) keep a view of
//! the management cluster; the operations reconciler asks [`Background::observe`] where each
//! stored in-flight operation stands ([`super::progress`]), so the outcome does not depend on
//! which process sent the patch.

use std::sync::Mutex;
use std::time::Duration;

use async_trait::async_trait;
use kube::api::{Api, DeleteParams, DynamicObject, ListParams, Patch, PatchParams, PostParams};
use serde_json::Value;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use super::cache::StackCache;
use super::client::{self, count_kube_error, kube_error, ManagementCluster};
use super::progress::{self, Awaited};
use super::status;
use super::topology::{self, Resources, TopologyDefaults};
use super::ClusterApiConfig;
use crate::drivers::{
    Allows, Background, Certificates, Change, ClusterApiAllows, CreateOutcome, Driver, DriverError,
    Facts, InFlight, Lifecycle, ManagementStatus, NodeGroupRef, Progress, Refusal, ResizeRequest,
    Triple, Verdict, WaitOn,
};
use crate::model::{Cluster, ClusterTemplate, NodeGroup};

/// How often a worker-entry patch is retried after the list changed under it.
const PATCH_ATTEMPTS: usize = 5;

pub struct KubeClusterApiDriver {
    name: String,
    provides: Vec<Triple>,
    management: Vec<ManagementCluster>,
    resources: Resources,
    api_version: String,
    defaults: TopologyDefaults,
    deadline: Duration,
    allow_even_control_plane: bool,
    /// The watch caches of the management clusters (by name), from the last `watch`.
    caches: Mutex<Vec<(String, StackCache)>>,
    election: Option<super::leader::LeaseConfig>,
    leadership: Mutex<Option<std::sync::Arc<super::leader::Election>>>,
}

impl KubeClusterApiDriver {
    /// Builds one client per configured management cluster.
    pub async fn connect(config: &ClusterApiConfig) -> anyhow::Result<Self> {
        Ok(Self::new(config, client::connect_all(config).await?))
    }

    /// A driver on given clients (tests use clients of their own).
    pub fn new(config: &ClusterApiConfig, management: Vec<ManagementCluster>) -> Self {
        KubeClusterApiDriver {
            name: config.name.clone(),
            provides: config.provides.clone(),
            management,
            resources: Resources::at(&config.api_version),
            api_version: config.api_version.clone(),
            defaults: TopologyDefaults {
                cluster_class: config.cluster_class.clone(),
                worker_class: config.worker_class.clone(),
            },
            deadline: Duration::from_secs(config.progress_deadline_seconds),
            allow_even_control_plane: config.allow_even_control_plane,
            caches: Mutex::default(),
            election: config.leader_election.then(|| {
                let duration = Duration::from_secs(config.lease_duration_seconds.max(2));
                super::leader::LeaseConfig {
                    name: config.lease_name.clone(),
                    namespace: config.namespace.clone(),
                    holder: format!(
                        "{}-{}",
                        std::env::var("HOSTNAME").unwrap_or_else(|_| "magnum-rs".into()),
                        &uuid::Uuid::new_v4().simple().to_string()[..8]
                    ),
                    duration,
                    renew_every: duration / 3,
                }
            }),
            leadership: Mutex::new(None),
        }
    }

    /// The management cluster of a Magnum cluster (label `capi_management_cluster`).
    fn management_for(&self, cluster: &Cluster) -> Result<&ManagementCluster, DriverError> {
        let wanted = cluster
            .labels
            .as_ref()
            .and_then(|l| l.get("capi_management_cluster"))
            .and_then(Value::as_str);
        match wanted {
            Some(name) => self
                .management
                .iter()
                .find(|m| m.name == name)
                .ok_or_else(|| {
                    DriverError::rejected(format!("management cluster {name} is not configured"))
                }),
            None => self
                .management
                .first()
                .ok_or_else(|| DriverError::rejected("no management cluster is configured")),
        }
    }

    /// Where a cluster's CA Secrets live; a cluster without a Cluster API name has none yet.
    fn ca_location(&self, cluster: &Cluster) -> Result<(&ManagementCluster, String), Refusal> {
        let mc = self
            .management_for(cluster)
            .map_err(|e| Refusal::BackendNotConfigured(e.to_string()))?;
        let stack =
            Self::stack_id(cluster).map_err(|_| Refusal::CaUnavailable(cluster.uuid.clone()))?;
        Ok((mc, stack))
    }

    fn api(&self, mc: &ManagementCluster, ar: &kube::api::ApiResource) -> Api<DynamicObject> {
        Api::namespaced_with(mc.client.clone(), &mc.namespace, ar)
    }

    fn stack_id(cluster: &Cluster) -> Result<String, DriverError> {
        cluster
            .stack_id
            .clone()
            .filter(|s| !s.is_empty())
            .ok_or_else(|| {
                DriverError::rejected(format!(
                    "cluster {} has no Cluster API name (stack_id)",
                    cluster.uuid
                ))
            })
    }

    async fn get_cluster(&self, mc: &ManagementCluster, stack: &str) -> Result<Value, DriverError> {
        let obj = self
            .api(mc, &self.resources.cluster)
            .get(stack)
            .await
            .map_err(|e| kube_error(e, &format!("Cluster {}/{stack}", mc.namespace)))?;
        serde_json::to_value(&obj).map_err(|e| DriverError::transient(e.to_string()))
    }

    /// Applies a JSON patch built from a read of the Cluster (`first_read` when the caller
    /// has one, then fresh reads), retrying when the worker list changed between the read
    /// and the patch. `build` returns None when the Cluster
    /// already says what is asked: nothing is sent. Returns what the change waits on.
    async fn patch_workers<F>(
        &self,
        mc: &ManagementCluster,
        stack: &str,
        mut first_read: Option<Value>,
        build: F,
    ) -> Result<WaitOn, DriverError>
    where
        F: Fn(&Value) -> Result<Option<json_patch::Patch>, DriverError>,
    {
        let api = self.api(mc, &self.resources.cluster);
        let mut last = String::new();
        for _ in 0..PATCH_ATTEMPTS {
            let current = match first_read.take() {
                Some(c) => c,
                None => self.get_cluster(mc, stack).await?,
            };
            let Some(patch) = build(&current)? else {
                return Ok(self.wait_on(mc, stack, generation_of(&current)));
            };
            match api
                .patch(stack, &PatchParams::default(), &Patch::Json::<()>(patch))
                .await
            {
                Ok(o) => return Ok(self.wait_on(mc, stack, o.metadata.generation)),
                Err(kube::Error::Api(s))
                    if s.is_conflict() || (s.code == 422 && s.message.contains("test")) =>
                {
                    last = s.message.clone();
                    tracing::info!(
                        cluster = stack,
                        "worker list changed during the patch; retrying from a fresh read"
                    );
                }
                Err(e) => return Err(kube_error(e, &format!("Cluster {}/{stack}", mc.namespace))),
            }
        }
        Err(DriverError::transient(format!(
            "the worker list of Cluster {stack} kept changing: {last}"
        )))
    }

    fn wait_on(&self, mc: &ManagementCluster, stack: &str, generation: Option<i64>) -> WaitOn {
        WaitOn {
            object: format!("{}/Cluster {}/{stack}", mc.name, mc.namespace),
            generation,
        }
    }

    /// The watch cache of a cluster's management cluster, once it holds complete lists.
    fn synced_cache(&self, cluster: &Cluster) -> Option<StackCache> {
        let mc = self.management_for(cluster).ok()?;
        let caches = self.caches.lock().ok()?;
        caches
            .iter()
            .find(|(name, _)| *name == mc.name)
            .map(|(_, c)| c.clone())
            .filter(StackCache::synced)
    }

    /// Marks the Machines named in `nodes_to_remove` for deletion.
    async fn mark_for_deletion(
        &self,
        mc: &ManagementCluster,
        stack: &str,
        ng: &NodeGroupRef,
        nodes: &[String],
    ) -> Result<(), DriverError> {
        if nodes.is_empty() {
            return Ok(());
        }
        let selector = topology::machine_selector(stack, ng);
        let api = self.api(mc, &self.resources.machine);
        let machines = api
            .list(&ListParams::default().labels(&selector))
            .await
            .map_err(|e| kube_error(e, "Machines"))?;
        for node in nodes {
            let found = machines.items.iter().find(|m| {
                serde_json::to_value(m)
                    .map(|v| topology::machine_matches(&v, node))
                    .unwrap_or(false)
            });
            let Some(machine) = found else {
                return Err(DriverError::rejected(format!(
                    "node {node} is not a Machine of this nodegroup"
                )));
            };
            let name = machine.metadata.name.clone().unwrap_or_default();
            api.patch(
                &name,
                &PatchParams::default(),
                &Patch::Merge(&topology::delete_machine_annotation()),
            )
            .await
            .map_err(|e| kube_error(e, &format!("Machine {name}")))?;
        }
        Ok(())
    }
}

fn generation_of(obj: &Value) -> Option<i64> {
    obj.pointer("/metadata/generation").and_then(Value::as_i64)
}

impl Allows for KubeClusterApiDriver {
    fn validate_master_resize(&self, node_count: i64) -> Result<(), Refusal> {
        if self.allow_even_control_plane && node_count >= 1 {
            return Ok(());
        }
        ClusterApiAllows.validate_master_resize(node_count)
    }

    fn honours_nodes_to_remove(&self, nodegroup: &NodeGroup) -> bool {
        ClusterApiAllows.honours_nodes_to_remove(nodegroup)
    }

    fn supports_autoscaling(&self, nodegroup: &NodeGroup) -> bool {
        ClusterApiAllows.supports_autoscaling(nodegroup)
    }
}

fn ng_ref(ng: &NodeGroup) -> NodeGroupRef {
    if ng.is_master() {
        NodeGroupRef::ControlPlane
    } else {
        NodeGroupRef::Worker(ng.name.clone())
    }
}

fn random_stack_id() -> String {
    const ALPHABET: &[u8] = b"abcdefghijklmnopqrstuvwxyz0123456789";
    let r = uuid::Uuid::new_v4().as_u128();
    let tail: String = (0..5)
        .map(|i| ALPHABET[((r >> (i * 8)) % ALPHABET.len() as u128) as usize] as char)
        .collect();
    format!("kube-{tail}")
}

#[async_trait]
impl Lifecycle for KubeClusterApiDriver {
    async fn create_cluster(
        &self,
        cluster: &Cluster,
        template: &ClusterTemplate,
        nodegroups: &[NodeGroup],
    ) -> Result<CreateOutcome, DriverError> {
        let mc = self.management_for(cluster)?;
        let stack = cluster.stack_id.clone().unwrap_or_else(random_stack_id);
        let body = topology::cluster_object(
            &stack,
            &mc.namespace,
            &self.api_version,
            cluster,
            template,
            nodegroups,
            &self.defaults,
        );
        let obj: DynamicObject =
            serde_json::from_value(body).map_err(|e| DriverError::rejected(e.to_string()))?;
        let generation = match self
            .api(mc, &self.resources.cluster)
            .create(&PostParams::default(), &obj)
            .await
        {
            Ok(o) => o.metadata.generation,
            // A repeated call (after a crash): the object the first call made.
            Err(kube::Error::Api(s)) if s.is_already_exists() => {
                generation_of(&self.get_cluster(mc, &stack).await?)
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
            return Ok(Progress::Complete);
        };
        match self
            .api(mc, &self.resources.cluster)
            .delete(&stack, &DeleteParams::default())
            .await
        {
            // Cluster API deletes the machines first; the row goes when the Cluster is gone.
            Ok(_) => Ok(Progress::Waiting(self.wait_on(mc, &stack, None))),
            Err(kube::Error::Api(s)) if s.is_not_found() => Ok(Progress::Complete),
            Err(e) => Err(kube_error(e, &format!("Cluster {}/{stack}", mc.namespace))),
        }
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
                self.mark_for_deletion(mc, &stack, &which, &request.nodes_to_remove)
                    .await?;
                let patched = self
                    .api(mc, &self.resources.cluster)
                    .patch(
                        &stack,
                        &PatchParams::default(),
                        &Patch::Merge(&topology::control_plane_replicas(n)),
                    )
                    .await
                    .map_err(|e| kube_error(e, &format!("Cluster {}/{stack}", mc.namespace)))?;
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
                if !autoscaled && !at_target(&current) {
                    self.mark_for_deletion(mc, &stack, &which, &request.nodes_to_remove)
                        .await?;
                }
                let wait = self
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
                    .await?;
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
            .labels
            .as_ref()
            .and_then(|l| l.get("kube_tag"))
            .and_then(Value::as_str)
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
        let patched = self
            .api(mc, &self.resources.cluster)
            .patch(
                &stack,
                &PatchParams::default(),
                &Patch::Merge(&topology::upgrade(&version, class, &self.api_version)),
            )
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
        let entry = topology::worker_entry(nodegroup, &self.defaults.worker_class, false);
        let wait = self
            .patch_workers(mc, &stack, None, |c| {
                Ok(topology::machine_deployment_index(c, &nodegroup.name)
                    .is_none()
                    .then(|| topology::add_worker(entry.clone())))
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

/// The workload CA Secrets ([`super::ca`]); CA rotation and credential rotation are
/// refused, as magnum-cluster-api refuses them.
#[async_trait]
impl Certificates for KubeClusterApiDriver {
    async fn ca_certificate(
        &self,
        cluster: &Cluster,
        ca_cert_type: Option<&str>,
    ) -> Result<String, Refusal> {
        let (mc, stack) = self.ca_location(cluster)?;
        super::ca::ca_certificate(mc, &cluster.uuid, &stack, ca_cert_type).await
    }

    async fn sign_certificate(
        &self,
        cluster: &Cluster,
        ca_cert_type: Option<&str>,
        csr: &str,
    ) -> Result<String, Refusal> {
        let (mc, stack) = self.ca_location(cluster)?;
        super::ca::sign(mc, &cluster.uuid, &stack, ca_cert_type, csr).await
    }
}

/// The watch caches of the management clusters, the verdicts and facts read from them, the
/// Lease among replicas, and the reachability `/readyz` reports.
#[async_trait]
impl Background for KubeClusterApiDriver {
    fn leadership(&self) -> Option<tokio::sync::watch::Receiver<bool>> {
        let cfg = self.election.clone()?;
        let mc = self.management.first()?;
        let mut slot = self.leadership.lock().ok()?;
        let election = slot
            .get_or_insert_with(|| std::sync::Arc::new(super::leader::run(mc.client.clone(), cfg)));
        Some(election.leading.clone())
    }

    async fn step_down(&self) {
        let election = self.leadership.lock().ok().and_then(|slot| slot.clone());
        if let Some(e) = election {
            e.step_down().await;
        }
    }

    async fn management_status(&self) -> Vec<ManagementStatus> {
        let leader = match &self.election {
            None => true,
            Some(_) => self
                .leadership
                .lock()
                .ok()
                .and_then(|slot| slot.as_ref().map(|e| *e.leading.borrow()))
                .unwrap_or(false),
        };
        let mut out = Vec::new();
        for mc in &self.management {
            // A call the driver itself makes (and its Role allows): the answer shows both
            // that the API server is reachable and that the credentials still work.
            let probe = self
                .api(mc, &self.resources.cluster)
                .list(&ListParams::default().limit(1))
                .await;
            if let Err(e) = &probe {
                count_kube_error("request", e);
            }
            out.push(ManagementStatus {
                name: mc.name.clone(),
                connected: probe.is_ok(),
                leader,
            });
        }
        out
    }

    fn watch(&self, changes: mpsc::UnboundedSender<Change>) -> Vec<JoinHandle<()>> {
        let mut handles = Vec::new();
        let mut caches = Vec::new();
        for mc in &self.management {
            let (cache, tasks) = super::cache::start(
                &mc.client,
                &mc.namespace,
                &self.resources,
                &mc.name,
                changes.clone(),
            );
            caches.push((mc.name.clone(), cache));
            handles.extend(tasks);
        }
        if let Ok(mut slot) = self.caches.lock() {
            *slot = caches;
        }
        handles
    }

    fn observe(&self, op: &InFlight<'_>) -> Verdict {
        let Some(cache) = self.synced_cache(op.cluster) else {
            return Verdict::Unknown;
        };
        let Some(stack) = op.cluster.stack_id.as_deref().filter(|s| !s.is_empty()) else {
            return Verdict::Unknown;
        };
        let view = cache.view(stack);
        let control_plane_count = op
            .nodegroups
            .iter()
            .find(|n| n.is_master() && n.is_default())
            .map_or(1, |n| n.node_count);
        let workers = op
            .nodegroups
            .iter()
            .filter(|n| !n.is_master())
            .map(|n| (n.name.as_str(), n.node_count))
            .collect();
        progress::verdict(
            &view,
            &Awaited {
                kind: op.kind,
                nodegroup: op.nodegroup.map(ng_ref),
                control_plane_count,
                workers,
                target_count: op.target_count,
                target_version: op.target_version,
                generation: op.generation,
            },
        )
    }

    fn facts(&self, cluster: &Cluster) -> Option<Facts> {
        let cache = self.synced_cache(cluster)?;
        let stack = cluster.stack_id.as_deref().filter(|s| !s.is_empty())?;
        let view = cache.view(stack);
        let api_address = view.cluster.as_ref().and_then(status::api_address);
        let coe_version = view
            .control_plane
            .as_ref()
            .and_then(|k| k.pointer("/status/version"))
            .and_then(Value::as_str)
            .map(str::to_string);
        let mut groups = vec![NodeGroupRef::ControlPlane];
        groups.extend(view.deployments.iter().filter_map(|d| {
            d.pointer("/metadata/labels")
                .and_then(|l| l.get(topology::DEPLOYMENT_NAME_LABEL))
                .and_then(Value::as_str)
                .map(|n| NodeGroupRef::Worker(n.to_string()))
        }));
        let addresses = groups
            .into_iter()
            .map(|g| {
                let mut a: Vec<String> = view
                    .machines_of(&g)
                    .flat_map(status::machine_addresses)
                    .collect();
                a.sort();
                (g, a)
            })
            .collect();
        Some(Facts {
            api_address,
            coe_version,
            addresses,
        })
    }

    fn progress_deadline(&self) -> Duration {
        self.deadline
    }
}

impl Driver for KubeClusterApiDriver {
    fn name(&self) -> &str {
        &self.name
    }

    fn provides(&self) -> &[Triple] {
        &self.provides
    }
}
