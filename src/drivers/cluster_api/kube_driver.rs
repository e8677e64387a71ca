//! The ClusterAPI driver on real management clusters, through kube-rs.
//!
//! Writes are patches of single fields (see [`super::topology`]); worker-entry patches carry
//! a `test` of the entry's name and are retried from a fresh read when the list changed under
//! them. Completion is watch-driven: one watcher per kind and management cluster (not
//! per-cluster polling) compares the KubeadmControlPlane / MachineDeployment counters with
//! the target of every operation in flight, and reports `Complete`, a blocked-scaling reason,
//! or `Failed` (a `ReconcileFailed` topology, or no progress within the deadline).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use futures::StreamExt as _;
use kube::api::{Api, DeleteParams, DynamicObject, ListParams, Patch, PatchParams, PostParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::runtime::{watcher, WatchStreamExt as _};
use serde_json::Value;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use super::status::{self, Observed};
use super::topology::{self, Resources, TopologyDefaults};
use super::ClusterApiConfig;
use crate::drivers::capabilities::ClusterApiCapabilities;
use crate::drivers::{
    Capabilities, CreateOutcome, Driver, DriverError, Lifecycle, ManagementStatus, NodeGroupRef,
    Progress, ResizeRequest, StatusReport, Triple,
};
use crate::error::ApiError;
use crate::model::{Cluster, ClusterTemplate, NodeGroup};

/// How often a worker-entry patch is retried after the list changed under it.
const PATCH_ATTEMPTS: usize = 5;

/// One management cluster: a name, a client, the namespace of the Cluster objects.
#[derive(Clone)]
pub struct ManagementCluster {
    pub name: String,
    pub client: kube::Client,
    pub namespace: String,
}

/// An operation waiting for Cluster API to reach its target.
#[derive(Clone, Debug)]
struct Pending {
    target: i64,
    /// When the driver made the change (for the reconcile-lag metric).
    changed: Instant,
    /// When Cluster API last showed progress (for the deadline).
    since: Instant,
    marker: Vec<Option<i64>>,
}

type PendingKey = (String, String, NodeGroupRef);

pub struct KubeClusterApiDriver {
    name: String,
    provides: Vec<Triple>,
    management: Vec<ManagementCluster>,
    resources: Resources,
    api_version: String,
    defaults: TopologyDefaults,
    deadline: Duration,
    pending: Arc<Mutex<HashMap<PendingKey, Pending>>>,
    election: Option<super::leader::LeaseConfig>,
    leadership: Mutex<Option<tokio::sync::watch::Receiver<bool>>>,
}

impl KubeClusterApiDriver {
    /// Builds one client per configured management cluster.
    pub async fn connect(config: &ClusterApiConfig) -> anyhow::Result<Self> {
        let mut management = Vec::new();
        for mc in &config.management_clusters {
            let kube_config = match &mc.kubeconfig {
                Some(path) => {
                    let kc = Kubeconfig::read_from(path).map_err(|e| {
                        anyhow::anyhow!(
                            "management cluster {}: cannot read its kubeconfig: {e}",
                            mc.name
                        )
                    })?;
                    let opts = KubeConfigOptions {
                        context: mc.context.clone(),
                        cluster: None,
                        user: None,
                    };
                    kube::Config::from_custom_kubeconfig(kc, &opts)
                        .await
                        .map_err(|e| anyhow::anyhow!("management cluster {}: {e}", mc.name))?
                }
                None => kube::Config::infer()
                    .await
                    .map_err(|e| anyhow::anyhow!("management cluster {}: {e}", mc.name))?,
            };
            let client = kube::Client::try_from(kube_config)
                .map_err(|e| anyhow::anyhow!("management cluster {}: {e}", mc.name))?;
            management.push(ManagementCluster {
                name: mc.name.clone(),
                client,
                namespace: config.namespace.clone(),
            });
        }
        Ok(Self::new(config, management))
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
            pending: Arc::default(),
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
                    DriverError::Rejected(format!("management cluster {name} is not configured"))
                }),
            None => self
                .management
                .first()
                .ok_or_else(|| DriverError::Rejected("no management cluster is configured".into())),
        }
    }

    /// Where a cluster's CA Secrets live; a cluster without a Cluster API name has none yet.
    fn ca_location(&self, cluster: &Cluster) -> Result<(&ManagementCluster, String), ApiError> {
        let mc = self
            .management_for(cluster)
            .map_err(|e| ApiError::Conflict(e.to_string()))?;
        let stack = Self::stack_id(cluster)
            .map_err(|_| ApiError::ClusterCaUnavailable(cluster.uuid.clone()))?;
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
                DriverError::Rejected(format!(
                    "cluster {} has no Cluster API name (stack_id)",
                    cluster.uuid
                ))
            })
    }

    fn track(&self, mc: &str, stack: &str, ng: NodeGroupRef, target: i64) {
        if let Ok(mut p) = self.pending.lock() {
            p.insert(
                (mc.to_string(), stack.to_string(), ng),
                Pending {
                    target,
                    changed: Instant::now(),
                    since: Instant::now(),
                    marker: Vec::new(),
                },
            );
        }
    }

    async fn get_cluster(&self, mc: &ManagementCluster, stack: &str) -> Result<Value, DriverError> {
        let obj = self
            .api(mc, &self.resources.cluster)
            .get(stack)
            .await
            .map_err(|e| kube_error(e, &format!("Cluster {}/{stack}", mc.namespace)))?;
        serde_json::to_value(&obj).map_err(|e| DriverError::Transient(e.to_string()))
    }

    /// Applies a JSON patch built from a fresh read of the Cluster, retrying when the worker
    /// list changed between the read and the patch.
    async fn patch_workers<F>(
        &self,
        mc: &ManagementCluster,
        stack: &str,
        build: F,
    ) -> Result<(), DriverError>
    where
        F: Fn(&Value) -> Result<Option<json_patch::Patch>, DriverError>,
    {
        let api = self.api(mc, &self.resources.cluster);
        let mut last = String::new();
        for _ in 0..PATCH_ATTEMPTS {
            let current = self.get_cluster(mc, stack).await?;
            let Some(patch) = build(&current)? else {
                return Ok(());
            };
            match api
                .patch(stack, &PatchParams::default(), &Patch::Json::<()>(patch))
                .await
            {
                Ok(_) => return Ok(()),
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
        Err(DriverError::Transient(format!(
            "the worker list of Cluster {stack} kept changing: {last}"
        )))
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
                return Err(DriverError::Rejected(format!(
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

/// Maps a kube error to a Magnum outcome: unreachable or conflicting → retried; missing,
/// invalid or forbidden → failed with the server's message.
pub fn kube_error(e: kube::Error, what: &str) -> DriverError {
    count_kube_error("request", &e);
    match e {
        kube::Error::Api(s) if s.is_not_found() => {
            DriverError::Rejected(format!("{what} not found in the management cluster"))
        }
        kube::Error::Api(s) if s.is_conflict() || s.code == 429 || s.code >= 500 => {
            DriverError::Transient(format!("{what}: {}", s.message))
        }
        kube::Error::Api(s) => DriverError::Rejected(format!("{what}: {}", s.message)),
        other => DriverError::Transient(format!("management cluster unreachable: {other}")),
    }
}

/// Counts a failed kube call in the metrics (`call`: request, watch, lease).
pub fn count_kube_error(call: &str, e: &kube::Error) {
    let code = match e {
        kube::Error::Api(s) => s.code.to_string(),
        _ => "unreachable".to_string(),
    };
    crate::telemetry::metrics::kube_error(call, &code);
}

fn count_watch_error(e: &watcher::Error) {
    match e {
        watcher::Error::InitialListFailed(e)
        | watcher::Error::WatchStartFailed(e)
        | watcher::Error::WatchFailed(e) => count_kube_error("watch", e),
        watcher::Error::WatchError(s) => {
            crate::telemetry::metrics::kube_error("watch", &s.code.to_string());
        }
        watcher::Error::NoResourceVersion => {
            crate::telemetry::metrics::kube_error("watch", "invalid");
        }
    }
}

impl Capabilities for KubeClusterApiDriver {
    fn validate_master_resize(&self, node_count: i64) -> Result<(), ApiError> {
        ClusterApiCapabilities.validate_master_resize(node_count)
    }

    fn honours_nodes_to_remove(&self, nodegroup: &NodeGroup) -> bool {
        ClusterApiCapabilities.honours_nodes_to_remove(nodegroup)
    }

    fn supports_autoscaling(&self, nodegroup: &NodeGroup) -> bool {
        ClusterApiCapabilities.supports_autoscaling(nodegroup)
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
            serde_json::from_value(body).map_err(|e| DriverError::Rejected(e.to_string()))?;
        match self
            .api(mc, &self.resources.cluster)
            .create(&PostParams::default(), &obj)
            .await
        {
            Ok(_) => {}
            Err(kube::Error::Api(s)) if s.is_already_exists() => {}
            Err(e) => return Err(kube_error(e, &format!("Cluster {}/{stack}", mc.namespace))),
        }
        for ng in nodegroups {
            self.track(&mc.name, &stack, ng_ref(ng), ng.node_count);
        }
        Ok(CreateOutcome {
            completed: false,
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
            Ok(_) => Ok(Progress::Complete),
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
        self.mark_for_deletion(mc, &stack, &which, &request.nodes_to_remove)
            .await?;
        let n = request.node_count;
        match &which {
            NodeGroupRef::ControlPlane => {
                self.api(mc, &self.resources.cluster)
                    .patch(
                        &stack,
                        &PatchParams::default(),
                        &Patch::Merge(&topology::control_plane_replicas(n)),
                    )
                    .await
                    .map_err(|e| kube_error(e, &format!("Cluster {}/{stack}", mc.namespace)))?;
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
                self.patch_workers(mc, &stack, |c| {
                    let i = topology::machine_deployment_index(c, name).ok_or_else(|| {
                        DriverError::Rejected(format!(
                            "Cluster {stack} has no worker entry named {name}"
                        ))
                    })?;
                    Ok(Some(if autoscaled {
                        topology::worker_autoscaling(c, i, name, min, max)
                    } else {
                        topology::worker_replicas(c, i, name, n)
                    }))
                })
                .await?;
                if autoscaled {
                    return Ok(Progress::Complete);
                }
            }
        }
        self.track(&mc.name, &stack, which, n);
        Ok(Progress::InProgress)
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
        let version = topology::kube_version(cluster, template).ok_or_else(|| {
            DriverError::Rejected("the cluster template has no kube_tag label".into())
        })?;
        self.api(mc, &self.resources.cluster)
            .patch(
                &stack,
                &PatchParams::default(),
                &Patch::Merge(&topology::upgrade(
                    &version,
                    template
                        .labels
                        .as_ref()
                        .and_then(|l| l.get("capi_cluster_class"))
                        .and_then(Value::as_str),
                    &self.api_version,
                )),
            )
            .await
            .map_err(|e| kube_error(e, &format!("Cluster {}/{stack}", mc.namespace)))?;
        Ok(Progress::Complete)
    }

    async fn create_nodegroup(
        &self,
        cluster: &Cluster,
        nodegroup: &NodeGroup,
    ) -> Result<Progress, DriverError> {
        let mc = self.management_for(cluster)?;
        let stack = Self::stack_id(cluster)?;
        let entry = topology::worker_entry(nodegroup, &self.defaults.worker_class, false);
        self.patch_workers(mc, &stack, |c| {
            Ok(topology::machine_deployment_index(c, &nodegroup.name)
                .is_none()
                .then(|| topology::add_worker(entry.clone())))
        })
        .await?;
        self.track(&mc.name, &stack, ng_ref(nodegroup), nodegroup.node_count);
        Ok(Progress::InProgress)
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
            return Err(DriverError::Rejected(
                "the control plane cannot be autoscaled".into(),
            ));
        }
        let name = nodegroup.name.clone();
        self.patch_workers(mc, &stack, |c| {
            let i = topology::machine_deployment_index(c, &name).ok_or_else(|| {
                DriverError::Rejected(format!("Cluster {stack} has no worker entry named {name}"))
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
        self.patch_workers(mc, &stack, |c| {
            Ok(topology::machine_deployment_index(c, &name)
                .map(|i| topology::remove_worker(i, &name)))
        })
        .await?;
        Ok(Progress::Complete)
    }

    async fn ca_certificate(
        &self,
        cluster: &Cluster,
        ca_cert_type: Option<&str>,
    ) -> Result<String, ApiError> {
        let (mc, stack) = self.ca_location(cluster)?;
        super::ca::ca_certificate(mc, &cluster.uuid, &stack, ca_cert_type).await
    }

    async fn sign_certificate(
        &self,
        cluster: &Cluster,
        ca_cert_type: Option<&str>,
        csr: &str,
    ) -> Result<String, ApiError> {
        let (mc, stack) = self.ca_location(cluster)?;
        super::ca::sign(mc, &cluster.uuid, &stack, ca_cert_type, csr).await
    }

    fn leadership(&self) -> Option<tokio::sync::watch::Receiver<bool>> {
        let cfg = self.election.clone()?;
        let mc = self.management.first()?;
        let mut slot = self.leadership.lock().ok()?;
        if slot.is_none() {
            let (rx, _task) = super::leader::run(mc.client.clone(), cfg);
            *slot = Some(rx);
        }
        slot.clone()
    }

    async fn management_status(&self) -> Vec<ManagementStatus> {
        let leader = match &self.election {
            None => true,
            Some(_) => self
                .leadership
                .lock()
                .ok()
                .and_then(|slot| slot.as_ref().map(|rx| *rx.borrow()))
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

    fn watch(&self, reports: mpsc::UnboundedSender<StatusReport>) -> Vec<JoinHandle<()>> {
        let mut handles = Vec::new();
        for mc in &self.management {
            let watched = [
                (Kind::Cluster, self.resources.cluster.clone()),
                (Kind::ControlPlane, self.resources.control_plane.clone()),
                (
                    Kind::MachineDeployment,
                    self.resources.machine_deployment.clone(),
                ),
            ];
            for (kind, ar) in watched {
                let api = self.api(mc, &ar);
                let ctx = WatchContext {
                    mc: mc.name.clone(),
                    pending: Arc::clone(&self.pending),
                    reports: reports.clone(),
                    machines: self.api(mc, &self.resources.machine),
                };
                handles.push(tokio::spawn(async move {
                    let mut stream = watcher(api, watcher::Config::default())
                        .default_backoff()
                        .applied_objects()
                        .boxed();
                    while let Some(item) = stream.next().await {
                        match item {
                            Ok(obj) => match serde_json::to_value(&obj) {
                                Ok(v) => ctx.observe(kind, &v).await,
                                Err(e) => tracing::warn!(error = %e, "unreadable object from the watch"),
                            },
                            Err(e) => {
                                count_watch_error(&e);
                                tracing::warn!(management_cluster = %ctx.mc, error = %e, "watch error; retrying");
                            }
                        }
                    }
                }));
            }
            let ctx = WatchContext {
                mc: mc.name.clone(),
                pending: Arc::clone(&self.pending),
                reports: reports.clone(),
                machines: self.api(mc, &self.resources.machine),
            };
            let deadline = self.deadline;
            handles.push(tokio::spawn(async move {
                let mut tick = tokio::time::interval(
                    Duration::from_secs(1).min(deadline.max(Duration::from_millis(100))),
                );
                loop {
                    tick.tick().await;
                    if ctx.reports.is_closed() {
                        break;
                    }
                    ctx.expire(deadline);
                }
            }));
        }
        handles
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

#[derive(Clone, Copy, Debug)]
enum Kind {
    Cluster,
    ControlPlane,
    MachineDeployment,
}

/// What a watcher task needs: where to look up targets and where to report.
struct WatchContext {
    mc: String,
    pending: Arc<Mutex<HashMap<PendingKey, Pending>>>,
    reports: mpsc::UnboundedSender<StatusReport>,
    machines: Api<DynamicObject>,
}

fn label<'a>(obj: &'a Value, key: &str) -> Option<&'a str> {
    obj.pointer("/metadata/labels")
        .and_then(|l| l.get(key))
        .and_then(Value::as_str)
}

impl WatchContext {
    fn send(&self, report: StatusReport) {
        let _ = self.reports.send(report);
    }

    /// The addresses of the Machines of one nodegroup, reported when a KCP or MD changes.
    async fn report_addresses(&self, stack: &str, ng: NodeGroupRef) {
        let selector = topology::machine_selector(stack, &ng);
        let Ok(list) = self
            .machines
            .list(&ListParams::default().labels(&selector))
            .await
        else {
            return;
        };
        let mut addresses: Vec<String> = list
            .items
            .iter()
            .filter_map(|m| serde_json::to_value(m).ok())
            .flat_map(|m| status::machine_addresses(&m))
            .collect();
        addresses.sort();
        self.send(StatusReport::Addresses {
            stack_id: stack.to_string(),
            nodegroup: ng,
            addresses,
        });
    }

    async fn observe(&self, kind: Kind, obj: &Value) {
        match kind {
            Kind::Cluster => self.observe_cluster(obj),
            Kind::ControlPlane => {
                if let Some(stack) = label(obj, topology::CLUSTER_NAME_LABEL) {
                    if let Some(v) = obj.pointer("/status/version").and_then(Value::as_str) {
                        self.send(StatusReport::ClusterFacts {
                            stack_id: stack.to_string(),
                            api_address: None,
                            coe_version: Some(v.to_string()),
                        });
                    }
                    self.observe_scaled(stack, NodeGroupRef::ControlPlane, obj);
                    self.report_addresses(stack, NodeGroupRef::ControlPlane)
                        .await;
                }
            }
            Kind::MachineDeployment => {
                if let (Some(stack), Some(ng)) = (
                    label(obj, topology::CLUSTER_NAME_LABEL),
                    label(obj, topology::DEPLOYMENT_NAME_LABEL),
                ) {
                    self.observe_scaled(stack, NodeGroupRef::Worker(ng.to_string()), obj);
                    self.report_addresses(stack, NodeGroupRef::Worker(ng.to_string()))
                        .await;
                }
            }
        }
    }

    fn observe_cluster(&self, obj: &Value) {
        let Some(stack) = obj.pointer("/metadata/name").and_then(Value::as_str) else {
            return;
        };
        if let Some(address) = status::api_address(obj) {
            self.send(StatusReport::ClusterFacts {
                stack_id: stack.to_string(),
                api_address: Some(address),
                coe_version: None,
            });
        }
        let Some(reason) = status::topology_failure(obj) else {
            return;
        };
        let failed: Vec<PendingKey> = match self.pending.lock() {
            Ok(mut p) => {
                let keys: Vec<PendingKey> = p
                    .keys()
                    .filter(|(m, s, _)| *m == self.mc && s == stack)
                    .cloned()
                    .collect();
                for k in &keys {
                    if let Some(e) = p.remove(k) {
                        crate::telemetry::metrics::reconcile_lag("failed", e.changed.elapsed());
                    }
                }
                keys
            }
            Err(_) => Vec::new(),
        };
        for (_, stack, ng) in failed {
            self.send(StatusReport::NodeGroup {
                stack_id: stack,
                nodegroup: ng,
                observed: Observed::Failed {
                    reason: reason.clone(),
                },
            });
        }
    }

    fn observe_scaled(&self, stack: &str, ng: NodeGroupRef, obj: &Value) {
        let key = (self.mc.clone(), stack.to_string(), ng.clone());
        let observed = {
            let Ok(mut p) = self.pending.lock() else {
                return;
            };
            let Some(entry) = p.get_mut(&key) else { return };
            let observed = status::scaled(obj, entry.target);
            let marker = status::progress_marker(obj);
            if marker != entry.marker {
                entry.marker = marker;
                entry.since = Instant::now();
            }
            if observed == Observed::Complete {
                crate::telemetry::metrics::reconcile_lag("complete", entry.changed.elapsed());
                p.remove(&key);
            }
            observed
        };
        self.send(StatusReport::NodeGroup {
            stack_id: stack.to_string(),
            nodegroup: ng,
            observed,
        });
    }

    fn expire(&self, deadline: Duration) {
        let expired: Vec<PendingKey> = match self.pending.lock() {
            Ok(mut p) => {
                let keys: Vec<PendingKey> = p
                    .iter()
                    .filter(|((m, _, _), e)| *m == self.mc && e.since.elapsed() > deadline)
                    .map(|(k, _)| k.clone())
                    .collect();
                for k in &keys {
                    if let Some(e) = p.remove(k) {
                        crate::telemetry::metrics::reconcile_lag("failed", e.changed.elapsed());
                    }
                }
                keys
            }
            Err(_) => Vec::new(),
        };
        for (_, stack, ng) in expired {
            let what = match &ng {
                NodeGroupRef::ControlPlane => "the control plane".to_string(),
                NodeGroupRef::Worker(n) => format!("nodegroup {n}"),
            };
            self.send(StatusReport::NodeGroup {
                stack_id: stack,
                nodegroup: ng,
                observed: Observed::Failed {
                    reason: format!(
                        "Cluster API made no progress on {what} within {} seconds",
                        deadline.as_secs()
                    ),
                },
            });
        }
    }
}
