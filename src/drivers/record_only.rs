//! A driver that records each lifecycle call and reports it complete at once, without any
//! backend. It stands in for a driver when no management cluster is configured (embedded
//! runs, benchmarks) and lets tests see exactly what a driver was asked to do.

use std::sync::{Arc, Mutex};

use async_trait::async_trait;

use super::{
    Allows, Background, Certificates, CreateGiven, CreateOutcome, Driver, DriverError, Lifecycle,
    Progress, Refusal, ResizeRequest, Triple,
};
use crate::model::{Cluster, ClusterTemplate, NodeGroup};

/// One call the driver received.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(tag = "call", rename_all = "snake_case")]
pub enum Call {
    CreateCluster {
        cluster: String,
    },
    DeleteCluster {
        cluster: String,
    },
    Resize {
        cluster: String,
        nodegroup: String,
        node_count: i64,
        nodes_to_remove: Vec<String>,
    },
    Upgrade {
        cluster: String,
        nodegroup: String,
        template: String,
    },
    CreateNodeGroup {
        cluster: String,
        nodegroup: String,
    },
    UpdateNodeGroup {
        cluster: String,
        nodegroup: String,
    },
    DeleteNodeGroup {
        cluster: String,
        nodegroup: String,
    },
}

pub struct RecordOnlyDriver {
    name: String,
    provides: Vec<Triple>,
    /// What it allows: the driver it stands in for decides.
    allows: Box<dyn Allows>,
    calls: Arc<Mutex<Vec<Call>>>,
    /// Appends each call as a JSON line here too (so a test can count calls across
    /// process restarts).
    journal: Option<std::path::PathBuf>,
}

impl RecordOnlyDriver {
    pub fn new(name: &str, provides: Vec<Triple>, allows: Box<dyn Allows>) -> Self {
        RecordOnlyDriver {
            name: name.into(),
            provides,
            allows,
            calls: Arc::default(),
            journal: None,
        }
    }

    /// Also appends every call to `path` as a JSON line.
    pub fn with_journal(mut self, path: Option<std::path::PathBuf>) -> Self {
        self.journal = path;
        self
    }

    /// Every call so far, in order.
    pub fn calls(&self) -> Vec<Call> {
        self.calls.lock().map(|c| c.clone()).unwrap_or_default()
    }

    fn record(&self, call: Call) -> Result<Progress, DriverError> {
        tracing::info!(driver = %self.name, ?call, "record-only driver: operation recorded");
        if let Some(path) = &self.journal {
            use std::io::Write as _;
            let line = serde_json::to_string(&call).unwrap_or_default();
            let written = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(path)
                .and_then(|mut f| writeln!(f, "{line}"));
            if let Err(e) = written {
                return Err(DriverError::transient(format!(
                    "cannot write the driver journal: {e}"
                )));
            }
        }
        if let Ok(mut calls) = self.calls.lock() {
            calls.push(call);
        }
        Ok(Progress::Complete)
    }
}

impl Allows for RecordOnlyDriver {
    fn validate_master_size(&self, node_count: i64) -> Result<(), Refusal> {
        self.allows.validate_master_size(node_count)
    }

    fn validate_master_resize(&self, node_count: i64) -> Result<(), Refusal> {
        self.allows.validate_master_resize(node_count)
    }

    fn honours_nodes_to_remove(&self, nodegroup: &NodeGroup) -> bool {
        self.allows.honours_nodes_to_remove(nodegroup)
    }

    fn supports_autoscaling(&self, nodegroup: &NodeGroup) -> bool {
        self.allows.supports_autoscaling(nodegroup)
    }

    fn validate_upgrade(
        &self,
        from: &ClusterTemplate,
        to: &ClusterTemplate,
    ) -> Result<(), Refusal> {
        self.allows.validate_upgrade(from, to)
    }
}

#[async_trait]
impl Lifecycle for RecordOnlyDriver {
    async fn create_cluster(
        &self,
        cluster: &Cluster,
        _template: &ClusterTemplate,
        _nodegroups: &[NodeGroup],
        _given: &CreateGiven<'_>,
    ) -> Result<CreateOutcome, DriverError> {
        self.record(Call::CreateCluster {
            cluster: cluster.uuid.clone(),
        })?;
        // No backend: a name in magnum-cluster-api's style and an address that says so.
        let stack_id = cluster
            .stack_id
            .clone()
            .unwrap_or_else(|| format!("kube-{}", &cluster.uuid.replace('-', "")[..5]));
        Ok(CreateOutcome {
            wait: None,
            api_address: Some(format!("https://{stack_id}.record-only.invalid:6443")),
            stack_id: Some(stack_id),
            coe_version: None,
        })
    }

    async fn delete_cluster(&self, cluster: &Cluster) -> Result<Progress, DriverError> {
        self.record(Call::DeleteCluster {
            cluster: cluster.uuid.clone(),
        })
    }

    async fn resize(
        &self,
        cluster: &Cluster,
        nodegroup: &NodeGroup,
        request: &ResizeRequest,
    ) -> Result<Progress, DriverError> {
        self.record(Call::Resize {
            cluster: cluster.uuid.clone(),
            nodegroup: nodegroup.name.clone(),
            node_count: request.node_count,
            nodes_to_remove: request.nodes_to_remove.clone(),
        })
    }

    async fn upgrade(
        &self,
        cluster: &Cluster,
        template: &ClusterTemplate,
        nodegroup: &NodeGroup,
        _max_batch_size: i64,
    ) -> Result<Progress, DriverError> {
        self.record(Call::Upgrade {
            cluster: cluster.uuid.clone(),
            nodegroup: nodegroup.name.clone(),
            template: template.uuid.clone(),
        })
    }

    async fn create_nodegroup(
        &self,
        cluster: &Cluster,
        nodegroup: &NodeGroup,
    ) -> Result<Progress, DriverError> {
        self.record(Call::CreateNodeGroup {
            cluster: cluster.uuid.clone(),
            nodegroup: nodegroup.name.clone(),
        })
    }

    async fn update_nodegroup(
        &self,
        cluster: &Cluster,
        nodegroup: &NodeGroup,
    ) -> Result<Progress, DriverError> {
        self.record(Call::UpdateNodeGroup {
            cluster: cluster.uuid.clone(),
            nodegroup: nodegroup.name.clone(),
        })
    }

    async fn delete_nodegroup(
        &self,
        cluster: &Cluster,
        nodegroup: &NodeGroup,
    ) -> Result<Progress, DriverError> {
        self.record(Call::DeleteNodeGroup {
            cluster: cluster.uuid.clone(),
            nodegroup: nodegroup.name.clone(),
        })
    }
}

/// No CA, no credentials: Magnum's base driver's refusals.
impl Certificates for RecordOnlyDriver {}

/// No backend to watch: every call completes at once.
impl Background for RecordOnlyDriver {}

impl Driver for RecordOnlyDriver {
    fn name(&self) -> &str {
        &self.name
    }

    fn provides(&self) -> &[Triple] {
        &self.provides
    }
}
