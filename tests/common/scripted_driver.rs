//! A driver whose backend a test plays in-process: its resizes, what the backend shows for an
//! operation in flight, the count the backend is asked for and its progress deadline are
//! closures of the test's; everything else completes at once (a create gets a stack id of
//! its own). Unit-level play of a backend, for the operations' own logic; the real Cluster
//! API controllers are in tests/serial/capi_e2e.rs.

use std::time::Duration;

use async_trait::async_trait;

use magnum_rs::drivers::{
    Allows, Background, Certificates, CreateOutcome, Driver, DriverError, InFlight, Lifecycle,
    Progress, ResizeRequest, Triple, Verdict,
};
use magnum_rs::model::{Cluster, ClusterTemplate, NodeGroup};

type ResizeFn = dyn Fn(&ResizeRequest) -> Result<Progress, DriverError> + Send + Sync;
type ObserveFn = dyn Fn(&InFlight<'_>) -> Verdict + Send + Sync;
type OnCreateFn = dyn Fn(&[NodeGroup]) + Send + Sync;
type DeleteFn = dyn Fn() -> Result<Progress, DriverError> + Send + Sync;
type CleanUpFn = dyn Fn() -> Result<(), DriverError> + Send + Sync;

pub struct ScriptedDriver {
    name: &'static str,
    provides: Vec<Triple>,
    resize: Box<ResizeFn>,
    observe: Box<ObserveFn>,
    asked_count: Box<dyn Fn() -> Option<i64> + Send + Sync>,
    on_create: Box<OnCreateFn>,
    delete: Box<DeleteFn>,
    clean_up: Box<CleanUpFn>,
    progress_deadline: Duration,
}

impl ScriptedDriver {
    /// A driver named `name` for templates of `cluster_distro` `os` whose resizes complete
    /// at once and whose backend shows nothing (until the test scripts more).
    pub fn new(name: &'static str, os: &str) -> Self {
        ScriptedDriver {
            name,
            provides: vec![Triple::new("vm", os, "kubernetes")],
            resize: Box::new(|_| Ok(Progress::Complete)),
            observe: Box::new(|_| Verdict::Unknown),
            asked_count: Box::new(|| None),
            on_create: Box::new(|_| {}),
            delete: Box::new(|| Ok(Progress::Complete)),
            clean_up: Box::new(|| Ok(())),
            progress_deadline: Duration::from_secs(1800),
        }
    }

    pub fn resize(
        mut self,
        f: impl Fn(&ResizeRequest) -> Result<Progress, DriverError> + Send + Sync + 'static,
    ) -> Self {
        self.resize = Box::new(f);
        self
    }

    pub fn observe(mut self, f: impl Fn(&InFlight<'_>) -> Verdict + Send + Sync + 'static) -> Self {
        self.observe = Box::new(f);
        self
    }

    pub fn asked_count(mut self, f: impl Fn() -> Option<i64> + Send + Sync + 'static) -> Self {
        self.asked_count = Box::new(f);
        self
    }

    /// Called with the nodegroups of each cluster the driver creates.
    pub fn on_create(mut self, f: impl Fn(&[NodeGroup]) + Send + Sync + 'static) -> Self {
        self.on_create = Box::new(f);
        self
    }

    /// What a cluster delete answers (at once by default).
    pub fn delete(
        mut self,
        f: impl Fn() -> Result<Progress, DriverError> + Send + Sync + 'static,
    ) -> Self {
        self.delete = Box::new(f);
        self
    }

    /// What the clean-up after a deleted cluster answers (done by default).
    pub fn clean_up(
        mut self,
        f: impl Fn() -> Result<(), DriverError> + Send + Sync + 'static,
    ) -> Self {
        self.clean_up = Box::new(f);
        self
    }

    pub fn progress_deadline(mut self, d: Duration) -> Self {
        self.progress_deadline = d;
        self
    }
}

impl Allows for ScriptedDriver {}
impl Certificates for ScriptedDriver {}

#[async_trait]
impl Lifecycle for ScriptedDriver {
    async fn create_cluster(
        &self,
        cluster: &Cluster,
        _template: &ClusterTemplate,
        nodegroups: &[NodeGroup],
        _given: &magnum_rs::drivers::CreateGiven<'_>,
    ) -> Result<CreateOutcome, DriverError> {
        (self.on_create)(nodegroups);
        Ok(CreateOutcome {
            wait: None,
            stack_id: Some(format!("{}-{}", self.name, &cluster.uuid[..8])),
            api_address: Some(format!("https://{}.invalid:6443", self.name)),
            coe_version: None,
        })
    }

    async fn delete_cluster(&self, _cluster: &Cluster) -> Result<Progress, DriverError> {
        (self.delete)()
    }

    async fn clean_up_deleted(&self, _cluster: &Cluster) -> Result<(), DriverError> {
        (self.clean_up)()
    }

    async fn resize(
        &self,
        _cluster: &Cluster,
        _nodegroup: &NodeGroup,
        request: &ResizeRequest,
    ) -> Result<Progress, DriverError> {
        (self.resize)(request)
    }

    async fn upgrade(
        &self,
        _cluster: &Cluster,
        _template: &ClusterTemplate,
        _nodegroup: &NodeGroup,
        _max_batch_size: i64,
    ) -> Result<Progress, DriverError> {
        Ok(Progress::Complete)
    }

    async fn create_nodegroup(
        &self,
        _cluster: &Cluster,
        _nodegroup: &NodeGroup,
    ) -> Result<Progress, DriverError> {
        Ok(Progress::Complete)
    }

    async fn update_nodegroup(
        &self,
        _cluster: &Cluster,
        _nodegroup: &NodeGroup,
    ) -> Result<Progress, DriverError> {
        Ok(Progress::Complete)
    }

    async fn delete_nodegroup(
        &self,
        _cluster: &Cluster,
        _nodegroup: &NodeGroup,
    ) -> Result<Progress, DriverError> {
        Ok(Progress::Complete)
    }

    async fn asked_count(
        &self,
        _cluster: &Cluster,
        _nodegroup: &NodeGroup,
    ) -> Result<Option<i64>, DriverError> {
        Ok((self.asked_count)())
    }
}

#[async_trait]
impl Background for ScriptedDriver {
    fn observe(&self, op: &InFlight<'_>) -> Verdict {
        (self.observe)(op)
    }

    fn progress_deadline(&self) -> Duration {
        self.progress_deadline
    }
}

impl Driver for ScriptedDriver {
    fn name(&self) -> &str {
        self.name
    }

    fn provides(&self) -> &[Triple] {
        &self.provides
    }
}
