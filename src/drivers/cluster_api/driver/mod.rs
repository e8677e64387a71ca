//! The ClusterAPI driver on real management clusters, through kube-rs: the driver, its
//! helpers, what it allows and its CA here; what it does in `lifecycle`, its background
//! work in `background`.
//!
//! Writes are patches of single fields (see [`super::topology`]); worker-entry patches carry
//! a `test` of the entry's name and are retried from a fresh read when the list changed under
//! them. Every call is idempotent: it reads the Cluster first and sends no patch when the
//! spec already says what is asked (a call repeated after a crash sends nothing twice).
//!
//! The driver keeps no state about operations. Its watches ([`super::cache`]) keep a view of
//! the management cluster; the operations reconciler asks
//! [`Background::observe`](crate::drivers::Background::observe) where each stored in-flight
//! operation stands ([`super::progress`]), so the outcome does not depend on which process
//! sent the patch.

mod background;
mod lifecycle;

use std::sync::Mutex;
use std::time::Duration;

use async_trait::async_trait;
use kube::api::{Api, DynamicObject, ListParams, Patch, PatchParams};
use serde_json::Value;

use super::cache::StackCache;
use super::client::{self, kube_error, ManagementCluster};
use super::cloud::CloudSide;
use super::controller::Running;
use super::topology::{self, Resources, TopologyDefaults};
use super::ClusterApiConfig;
use crate::drivers::{
    Allows, Certificates, ClusterApiAllows, Driver, DriverError, NodeGroupRef, Refusal, Triple,
    WaitOn,
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
    /// The controllers of the management clusters, from the last `run_controllers`.
    running: Mutex<Vec<Running>>,
    election: Option<super::leader::LeaseConfig>,
    leadership: Mutex<Option<std::sync::Arc<super::leader::Election>>>,
    /// The cloud the clusters run on (keystone auth mode): credential, server groups.
    cloud: Option<CloudSide>,
    shape: super::Shape,
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
                mcapi_cluster_class: config.mcapi_cluster_class.clone(),
            },
            deadline: Duration::from_secs(config.progress_deadline_seconds),
            allow_even_control_plane: config.allow_even_control_plane,
            running: Mutex::default(),
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
            cloud: None,
            shape: config.shape,
        }
    }

    /// The cloud, when creates write magnum-cluster-api's Cluster (see
    /// [`super::ClusterApiConfig::shape`]).
    fn mcapi_cloud(&self) -> Option<&CloudSide> {
        match self.shape {
            super::Shape::Plain => None,
            super::Shape::Auto | super::Shape::MagnumClusterApi => self.cloud.as_ref(),
        }
    }

    /// The same driver, keeping clusters' cloud resources with `cloud`.
    pub fn with_cloud(mut self, cloud: Option<CloudSide>) -> Self {
        self.cloud = cloud;
        self
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

    /// The controller of a cluster's management cluster, while it runs.
    fn running_for(&self, cluster: &Cluster) -> Option<Running> {
        let mc = self.management_for(cluster).ok()?;
        let running = self.running.lock().ok()?;
        running.iter().find(|r| r.name == mc.name).cloned()
    }

    /// The watch cache of a cluster's management cluster, once it holds complete lists.
    fn synced_cache(&self, cluster: &Cluster) -> Option<StackCache> {
        self.running_for(cluster)
            .map(|r| r.cache)
            .filter(StackCache::synced)
    }

    /// Marks the Machines named in `nodes_to_remove` for deletion: every name is found
    /// among the nodegroup's Machines before any is marked (one that is not refuses the
    /// resize with nothing marked). Answers the Machines this call marked (not those marked
    /// already), for [`Self::unmark`] when the resize's own patch fails.
    async fn mark_for_deletion(
        &self,
        mc: &ManagementCluster,
        stack: &str,
        ng: &NodeGroupRef,
        nodes: &[String],
    ) -> Result<Vec<String>, DriverError> {
        if nodes.is_empty() {
            return Ok(Vec::new());
        }
        let selector = topology::machine_selector(stack, ng);
        let api = self.api(mc, &self.resources.machine);
        let machines: Vec<Value> = api
            .list(&ListParams::default().labels(&selector))
            .await
            .map_err(|e| kube_error(e, "Machines"))?
            .items
            .iter()
            .filter_map(|m| serde_json::to_value(m).ok())
            .collect();
        let mut chosen = Vec::new();
        for node in nodes {
            let Some(machine) = machines.iter().find(|m| topology::machine_matches(m, node)) else {
                return Err(DriverError::rejected(format!(
                    "node {node} is not a Machine of this nodegroup"
                )));
            };
            chosen.push(machine);
        }
        let mut marked = Vec::new();
        for machine in chosen {
            let name = machine["metadata"]["name"]
                .as_str()
                .unwrap_or_default()
                .to_string();
            if machine
                .pointer("/metadata/annotations")
                .and_then(|a| a.get(topology::DELETE_MACHINE))
                .is_some()
                || marked.contains(&name)
            {
                continue;
            }
            if let Err(e) = api
                .patch(
                    &name,
                    &PatchParams::default(),
                    &Patch::Merge(&topology::delete_machine_annotation()),
                )
                .await
            {
                self.unmark(mc, &marked).await;
                return Err(kube_error(e, &format!("Machine {name}")));
            }
            marked.push(name);
        }
        Ok(marked)
    }

    /// Takes the delete-machine annotation off the Machines `names` again (a resize whose
    /// patch failed: a later scale-down must not pick them). Best effort: the resize's own
    /// error is what is reported; a Machine gone meanwhile needs nothing.
    async fn unmark(&self, mc: &ManagementCluster, names: &[String]) {
        let api = self.api(mc, &self.resources.machine);
        for name in names {
            match api
                .patch(
                    name,
                    &PatchParams::default(),
                    &Patch::Merge(&topology::delete_machine_annotation_removed()),
                )
                .await
            {
                Ok(_) => {}
                Err(kube::Error::Api(s)) if s.is_not_found() => {}
                Err(e) => tracing::warn!(
                    machine = %name,
                    error = %e,
                    "cannot take the delete-machine annotation off again"
                ),
            }
        }
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

    fn validate_upgrade(
        &self,
        from: &ClusterTemplate,
        to: &ClusterTemplate,
    ) -> Result<(), Refusal> {
        ClusterApiAllows.validate_upgrade(from, to)
    }
}

fn ng_ref(ng: &NodeGroup) -> NodeGroupRef {
    if ng.is_master() {
        NodeGroupRef::ControlPlane
    } else {
        NodeGroupRef::Worker(ng.name.clone())
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

impl Driver for KubeClusterApiDriver {
    fn name(&self) -> &str {
        &self.name
    }

    fn provides(&self) -> &[Triple] {
        &self.provides
    }
}
