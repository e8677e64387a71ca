//! The durable hand-off between the API and the drivers (Magnum's conductor role).
//!
//! Handlers record an operation in the same transaction as the state change it belongs to
//! and kick the worker. The worker claims pending operations in id order, gives each to the
//! cluster's driver and writes the outcome: `*_COMPLETE`, or `*_FAILED` with the reason (a
//! failed resize also restores the previous `node_count`). Operations claimed by a process
//! that died are requeued at start-up; drivers apply desired state, so a repeated call has
//! the effect of one. Of several pending resizes of one nodegroup only the newest runs.

use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio::sync::{watch, Notify};

use crate::drivers::{
    Driver, DriverError, NodeGroupRef, Observed, Progress, ResizeRequest, StatusReport,
};
use crate::model::{status, Cluster, ClusterTemplate, NodeGroup, Tenancy};
use crate::state::AppState;
use crate::store::operations::{op_state, Batch, OpKind, Operation};
use crate::store::Bind;

/// How often a transient driver failure is retried before the operation fails.
const MAX_ATTEMPTS: i64 = 5;

/// Wakes the worker when an operation was recorded.
#[derive(Clone, Debug, Default)]
pub struct OperationsHandle {
    notify: Arc<Notify>,
}

impl OperationsHandle {
    pub fn kick(&self) {
        self.notify.notify_one();
    }
}

/// `[operations]`: when the worker looks for recorded operations.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
#[serde(default, deny_unknown_fields)]
pub struct OperationsConfig {
    /// Seconds between two passes when nothing kicks the worker (it then finds what other
    /// replicas or a previous process recorded).
    pub poll_interval: u64,
    /// Milliseconds the worker waits after a kick before its pass, so that operations
    /// recorded close together are claimed in one transaction (and resizes of one nodegroup
    /// superseded by the newest) instead of one durable commit each. 0: no wait.
    pub coalesce_ms: u64,
}

impl Default for OperationsConfig {
    fn default() -> Self {
        OperationsConfig {
            poll_interval: 2,
            coalesce_ms: 20,
        }
    }
}

/// Runs the worker until `shutdown` turns true. Pending work recorded by another replica or
/// a previous process is found by the periodic pass as well.
pub async fn run_worker(state: AppState, mut shutdown: watch::Receiver<bool>) {
    match state.store.requeue_running().await {
        Ok(n) if n > 0 => tracing::info!(requeued = n, "operations of a previous process requeued"),
        Ok(_) => {}
        Err(e) => tracing::error!(error = %e, "cannot requeue running operations"),
    }
    let poll = Duration::from_secs(state.config.operations.poll_interval.max(1));
    let coalesce = Duration::from_millis(state.config.operations.coalesce_ms);
    let notify = Arc::clone(&state.operations.notify);
    loop {
        if let Err(e) = run_pending(&state).await {
            tracing::error!(error = %e, "operations pass failed");
        }
        let kicked = tokio::select! {
            _ = notify.notified() => true,
            _ = tokio::time::sleep(poll) => false,
            _ = shutdown.changed() => false,
        };
        if kicked && !coalesce.is_zero() {
            tokio::select! {
                _ = tokio::time::sleep(coalesce) => {}
                _ = shutdown.changed() => {}
            }
        }
        if *shutdown.borrow() {
            break;
        }
    }
}

/// How many pending operations one pass reads.
const BATCH: i64 = 64;

/// Processes pending operations until none is left; returns how many were handled.
pub async fn run_pending(state: &AppState) -> Result<usize, sqlx::Error> {
    let mut handled = 0;
    loop {
        let batch = state.store.pending_operations(BATCH).await?;
        let full = batch.len() as i64 == BATCH;
        // Of several resizes of one nodegroup in the batch only the newest runs (ids follow
        // the order the counts were written; the newest carries the final count). One that
        // is recorded after the batch was read runs after the older one, with the same end
        // state.
        let mut newest_resize: std::collections::HashMap<i64, i64> =
            std::collections::HashMap::new();
        for op in batch.iter().filter(|o| o.kind == OpKind::Resize) {
            if let Some(ng) = op.nodegroup_id {
                let newest = newest_resize.entry(ng).or_insert(op.id);
                *newest = (*newest).max(op.id);
            }
        }
        let (superseded, to_run): (Vec<Operation>, Vec<Operation>) =
            batch.into_iter().partition(|op| {
                op.kind == OpKind::Resize
                    && op
                        .nodegroup_id
                        .and_then(|ng| newest_resize.get(&ng))
                        .is_some_and(|newest| *newest > op.id)
            });
        // One transaction claims the whole batch; another worker may have taken some first.
        let superseded: Vec<i64> = superseded.iter().map(|op| op.id).collect();
        let run: Vec<i64> = to_run.iter().map(|op| op.id).collect();
        let claim = state.store.claim_operations(&superseded, &run).await?;
        let progressed = claim.superseded > 0 || !claim.running.is_empty();
        handled += claim.superseded as usize + claim.running.len();
        for op in to_run {
            if claim.running.contains(&op.id) {
                process(state, op).await?;
            }
        }
        // A short batch was all there was; what was recorded since then kicked the worker
        // (or the periodic pass finds it).
        if !progressed || !full {
            return Ok(handled);
        }
    }
}

/// What the driver needs, loaded fresh.
struct Subject {
    cluster: Cluster,
    template: ClusterTemplate,
    driver: Arc<dyn Driver>,
    nodegroup: Option<NodeGroup>,
    /// For an upgrade, the template to move to (Magnum's driver `upgrade_cluster` gets the
    /// new template; the driver itself is the one of the current template).
    upgrade_to: Option<ClusterTemplate>,
    /// For a cluster create, all its nodegroups (the driver builds the topology from them).
    nodegroups: Vec<NodeGroup>,
}

async fn load(state: &AppState, op: &Operation) -> Result<Result<Subject, String>, sqlx::Error> {
    let Some(cluster) = state.store.cluster_by_uuid(&op.cluster_uuid).await? else {
        return Ok(Err(format!(
            "Cluster {} could not be found.",
            op.cluster_uuid
        )));
    };
    // Only a cluster create hands the template itself to the driver.
    let template = match &cluster.cluster_template_id {
        Some(t) if op.kind == OpKind::CreateCluster => state.store.template_by_uuid(t).await?,
        Some(t) => state.store.template_for_driver(t).await?,
        None => None,
    };
    let Some(template) = template else {
        return Ok(Err(format!(
            "ClusterTemplate {} could not be found.",
            cluster.cluster_template_id.clone().unwrap_or_default()
        )));
    };
    let driver = match state.drivers.for_template(&template) {
        Ok(d) => d,
        Err(e) => return Ok(Err(e.to_string())),
    };
    let nodegroup = match op.nodegroup_id {
        Some(id) => match state.store.nodegroup_by_id(id).await? {
            Some(ng) => Some(ng),
            None => return Ok(Err(format!("Nodegroup {id} could not be found."))),
        },
        None => None,
    };
    let upgrade_to = match op.kind {
        OpKind::Upgrade => match op.payload.get("cluster_template").and_then(Value::as_str) {
            Some(t) => state.store.template_by_uuid(t).await?,
            None => None,
        },
        _ => None,
    };
    let nodegroups = if op.kind == OpKind::CreateCluster {
        state
            .store
            .nodegroups_of_clusters(std::slice::from_ref(&cluster.uuid))
            .await?
    } else {
        Vec::new()
    };
    Ok(Ok(Subject {
        cluster,
        template,
        driver,
        nodegroup,
        upgrade_to,
        nodegroups,
    }))
}

async fn process(state: &AppState, op: Operation) -> Result<(), sqlx::Error> {
    if op.kind == OpKind::DeleteNodeGroup {
        if let Some(ng) = op.nodegroup_id {
            if state.store.nodegroup_by_id(ng).await?.is_none() {
                // Already deleted (a repeated DELETE): nothing is left to do.
                if !others_open(state, &op).await? {
                    if let Some(c) = state.store.cluster_by_uuid(&op.cluster_uuid).await? {
                        state
                            .store
                            .update_cluster(
                                c.id,
                                &[("status", Bind::text(status::UPDATE_COMPLETE))],
                            )
                            .await?;
                    }
                }
                state
                    .store
                    .transition_operation(op.id, op_state::RUNNING, op_state::DONE, None)
                    .await?;
                return Ok(());
            }
        }
    }
    let subject = match load(state, &op).await? {
        Ok(s) => s,
        Err(reason) => return fail(state, &op, None, &reason).await,
    };
    tracing::info!(operation = op.id, kind = op.kind.as_str(), cluster = %op.cluster_uuid, "handing operation to driver");
    let outcome = call_driver(&subject, &op).await;
    match outcome {
        Ok(progress) => complete(state, &op, &subject, progress).await,
        Err(DriverError::Transient(reason)) if op.attempts < MAX_ATTEMPTS => {
            tracing::warn!(operation = op.id, %reason, "transient driver failure; will retry");
            state
                .store
                .transition_operation(op.id, op_state::RUNNING, op_state::PENDING, Some(&reason))
                .await?;
            Ok(())
        }
        Err(e) => fail(state, &op, Some(&subject), &e.to_string()).await,
    }
}

/// The driver call for an operation; `Complete` for a cluster create carries its facts.
enum Done {
    Progress(Progress),
    Created(crate::drivers::CreateOutcome),
}

async fn call_driver(s: &Subject, op: &Operation) -> Result<Done, DriverError> {
    let d = &s.driver;
    let ng = || {
        s.nodegroup
            .as_ref()
            .ok_or_else(|| DriverError::Rejected("the operation names no nodegroup".into()))
    };
    Ok(match op.kind {
        OpKind::CreateCluster => Done::Created(
            d.create_cluster(&s.cluster, &s.template, &s.nodegroups)
                .await?,
        ),
        OpKind::DeleteCluster => Done::Progress(d.delete_cluster(&s.cluster).await?),
        OpKind::Resize => {
            let nodes_to_remove = op
                .payload
                .get("nodes_to_remove")
                .and_then(Value::as_array)
                .map(|a| {
                    a.iter()
                        .filter_map(Value::as_str)
                        .map(str::to_string)
                        .collect()
                })
                .unwrap_or_default();
            let req = ResizeRequest {
                node_count: op.new_count.unwrap_or(1),
                nodes_to_remove,
            };
            Done::Progress(d.resize(&s.cluster, ng()?, &req).await?)
        }
        OpKind::Upgrade => {
            let max_batch = op
                .payload
                .get("max_batch_size")
                .and_then(Value::as_i64)
                .unwrap_or(1);
            // The target template may have been deleted since the upgrade was accepted.
            let target = s.upgrade_to.as_ref().ok_or_else(|| {
                DriverError::Rejected(format!(
                    "ClusterTemplate {} could not be found.",
                    op.payload
                        .get("cluster_template")
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                ))
            })?;
            Done::Progress(d.upgrade(&s.cluster, target, ng()?, max_batch).await?)
        }
        OpKind::CreateNodeGroup => Done::Progress(d.create_nodegroup(&s.cluster, ng()?).await?),
        OpKind::UpdateNodeGroup => Done::Progress(d.update_nodegroup(&s.cluster, ng()?).await?),
        OpKind::DeleteNodeGroup => Done::Progress(d.delete_nodegroup(&s.cluster, ng()?).await?),
    })
}

/// Whether other operations of the cluster are still open (then the cluster's own status
/// stays in progress).
async fn others_open(state: &AppState, op: &Operation) -> Result<bool, sqlx::Error> {
    state
        .store
        .has_open_operations(&op.cluster_uuid, op.id)
        .await
}

async fn complete(
    state: &AppState,
    op: &Operation,
    s: &Subject,
    done: Done,
) -> Result<(), sqlx::Error> {
    let store = &state.store;
    let finished = match &done {
        Done::Progress(p) => *p == Progress::Complete,
        Done::Created(c) => c.completed,
    };
    let cluster_done = !others_open(state, op).await?;
    match (op.kind, done) {
        (OpKind::CreateCluster, Done::Created(c)) => {
            let mut changes = vec![
                ("stack_id", Bind::Text(c.stack_id.clone())),
                ("api_address", Bind::Text(c.api_address.clone())),
            ];
            if let Some(v) = c.coe_version.clone() {
                changes.push(("coe_version", Bind::text(v)));
            }
            if finished {
                changes.push(("status", Bind::text(status::CREATE_COMPLETE)));
            }
            store.update_cluster(s.cluster.id, &changes).await?;
            for ng in store
                .nodegroups_of_clusters(std::slice::from_ref(&s.cluster.uuid))
                .await?
            {
                let mut ch = vec![("stack_id", Bind::Text(c.stack_id.clone()))];
                if finished {
                    ch.push(("status", Bind::text(status::CREATE_COMPLETE)));
                }
                store.update_nodegroup(ng.id, &ch).await?;
            }
        }
        (OpKind::DeleteCluster, _) if finished => store.delete_cluster(&s.cluster.uuid).await?,
        (OpKind::DeleteNodeGroup, _) if finished => {
            if let Some(ng) = &s.nodegroup {
                store.delete_nodegroup(ng.id).await?;
            }
            if cluster_done {
                store
                    .update_cluster(
                        s.cluster.id,
                        &[("status", Bind::text(status::UPDATE_COMPLETE))],
                    )
                    .await?;
            }
        }
        (kind, _) if finished => {
            let ng_status = if kind == OpKind::CreateNodeGroup {
                status::CREATE_COMPLETE
            } else {
                status::UPDATE_COMPLETE
            };
            // The nodegroup, the cluster and the operation's end in one transaction.
            let mut batch = Batch::default();
            if let Some(ng) = &s.nodegroup {
                let mut ch = vec![
                    ("status", Bind::text(ng_status)),
                    ("status_reason", Bind::Text(None)),
                ];
                if kind == OpKind::Upgrade {
                    ch.push(("version", Bind::Text(kube_tag(state, op).await?)));
                }
                batch = batch.update("nodegroup", ng.id, ch);
            }
            let mut ch = Vec::new();
            if cluster_done {
                ch.push(("status", Bind::text(status::UPDATE_COMPLETE)));
                ch.push(("status_reason", Bind::Text(None)));
            }
            if kind == OpKind::Upgrade && s.nodegroup.as_ref().is_some_and(NodeGroup::is_default) {
                if let Some(t) = op.payload.get("cluster_template").and_then(Value::as_str) {
                    ch.push(("cluster_template_id", Bind::text(t)));
                }
                if let Some(tag) = kube_tag(state, op).await? {
                    ch.push(("coe_version", Bind::text(tag)));
                }
            }
            batch = batch.update("cluster", s.cluster.id, ch).transition(
                op.id,
                op_state::RUNNING,
                op_state::DONE,
            );
            store.commit(batch).await?;
            return Ok(());
        }
        _ => {} // started; the driver's status reconciler reports the end
    }
    store
        .transition_operation(op.id, op_state::RUNNING, op_state::DONE, None)
        .await?;
    Ok(())
}

/// The `kube_tag` label of the template an upgrade moves to.
async fn kube_tag(state: &AppState, op: &Operation) -> Result<Option<String>, sqlx::Error> {
    let Some(t) = op.payload.get("cluster_template").and_then(Value::as_str) else {
        return Ok(None);
    };
    Ok(state
        .store
        .template_by_uuid(t)
        .await?
        .and_then(|t| t.labels)
        .and_then(|l| {
            l.get("kube_tag")
                .and_then(Value::as_str)
                .map(str::to_string)
        }))
}

/// Magnum's conductor on a driver failure: `*_FAILED` with the reason on the cluster and
/// the nodegroup, and for a resize the previous count back.
async fn fail(
    state: &AppState,
    op: &Operation,
    s: Option<&Subject>,
    reason: &str,
) -> Result<(), sqlx::Error> {
    tracing::warn!(operation = op.id, kind = op.kind.as_str(), %reason, "operation failed");
    let store = &state.store;
    let (cluster_status, ng_status) = match op.kind {
        OpKind::CreateCluster => (status::CREATE_FAILED, status::CREATE_FAILED),
        OpKind::DeleteCluster => (status::DELETE_FAILED, status::DELETE_FAILED),
        OpKind::CreateNodeGroup => (status::UPDATE_FAILED, status::CREATE_FAILED),
        OpKind::DeleteNodeGroup => (status::UPDATE_FAILED, status::DELETE_FAILED),
        _ => (status::UPDATE_FAILED, status::UPDATE_FAILED),
    };
    if op.kind == OpKind::Resize {
        if let (Some(ng), Some(new), Some(old)) = (op.nodegroup_id, op.new_count, op.old_count) {
            store.restore_count(ng, new, old).await?;
        }
    }
    // Without a subject (the driver, template or nodegroup could not be loaded) the cluster
    // and nodegroup that still exist are marked failed too, rather than left in progress.
    let (cluster, nodegroup) = match s {
        Some(s) => (Some(s.cluster.clone()), s.nodegroup.clone()),
        None => (
            store.cluster_by_uuid(&op.cluster_uuid).await?,
            match op.nodegroup_id {
                Some(id) => store.nodegroup_by_id(id).await?,
                None => None,
            },
        ),
    };
    if let Some(cluster) = cluster {
        let reason_bind = Bind::text(reason);
        store
            .update_cluster(
                cluster.id,
                &[
                    ("status", Bind::text(cluster_status)),
                    ("status_reason", reason_bind.clone()),
                ],
            )
            .await?;
        if let Some(ng) = &nodegroup {
            store
                .update_nodegroup(
                    ng.id,
                    &[
                        ("status", Bind::text(ng_status)),
                        ("status_reason", reason_bind),
                    ],
                )
                .await?;
        } else if op.kind == OpKind::CreateCluster {
            for ng in store
                .nodegroups_of_clusters(std::slice::from_ref(&cluster.uuid))
                .await?
            {
                store
                    .update_nodegroup(
                        ng.id,
                        &[
                            ("status", Bind::text(ng_status)),
                            ("status_reason", Bind::text(reason)),
                        ],
                    )
                    .await?;
            }
        }
    }
    store
        .transition_operation(op.id, op_state::RUNNING, op_state::FAILED, Some(reason))
        .await?;
    Ok(())
}

/// Starts every driver's watchers and the task that writes what they report into the
/// store. Returns the tasks (abort them to stop).
pub fn start_watchers(state: &AppState) -> Vec<tokio::task::JoinHandle<()>> {
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<StatusReport>();
    let mut handles = Vec::new();
    for d in state.drivers.drivers() {
        handles.extend(d.watch(tx.clone()));
    }
    drop(tx);
    if handles.is_empty() {
        return handles;
    }
    let state = state.clone();
    handles.push(tokio::spawn(async move {
        while let Some(report) = rx.recv().await {
            if let Err(e) = apply_report(&state, &report).await {
                tracing::error!(error = %e, ?report, "cannot record a driver report");
            }
        }
    }));
    handles
}

/// Whether a driver's nodegroup reference names this nodegroup.
fn refers_to(ng: &NodeGroup, r: &NodeGroupRef) -> bool {
    match r {
        NodeGroupRef::ControlPlane => ng.is_master() && ng.is_default(),
        NodeGroupRef::Worker(name) => !ng.is_master() && ng.name == *name,
    }
}

fn in_progress(s: Option<&str>) -> bool {
    s.is_some_and(|s| s.ends_with("_IN_PROGRESS"))
}

/// Writes what a driver observed: `*_COMPLETE` when the backend reached the target (and the
/// cluster's own status once no nodegroup is in progress), the blocked reason while in
/// progress, `*_FAILED` with the reason (and the previous count back) on failure.
pub async fn apply_report(state: &AppState, report: &StatusReport) -> Result<(), sqlx::Error> {
    let store = &state.store;
    let stack_id = match report {
        StatusReport::NodeGroup { stack_id, .. }
        | StatusReport::ClusterFacts { stack_id, .. }
        | StatusReport::Addresses { stack_id, .. } => stack_id,
    };
    let Some(cluster) = store
        .find_clusters(&Tenancy::All, "stack_id", stack_id)
        .await?
        .into_iter()
        .next()
    else {
        return Ok(());
    };
    let (nodegroup, observed) = match report {
        StatusReport::ClusterFacts {
            api_address,
            coe_version,
            ..
        } => {
            let mut ch = Vec::new();
            if api_address.is_some() && *api_address != cluster.api_address {
                ch.push(("api_address", Bind::Text(api_address.clone())));
            }
            if coe_version.is_some() && *coe_version != cluster.coe_version {
                ch.push(("coe_version", Bind::Text(coe_version.clone())));
            }
            if !ch.is_empty() {
                store.update_cluster(cluster.id, &ch).await?;
            }
            return Ok(());
        }
        StatusReport::Addresses {
            nodegroup,
            addresses,
            ..
        } => {
            let ngs = store
                .nodegroups_of_clusters(std::slice::from_ref(&cluster.uuid))
                .await?;
            let found = ngs.iter().find(|n| refers_to(n, nodegroup));
            if let Some(ng) = found {
                let new: Vec<Value> = addresses.iter().cloned().map(Value::String).collect();
                if ng.node_addresses.as_ref() != Some(&new) {
                    store
                        .update_nodegroup(ng.id, &[("node_addresses", Bind::json_list(&Some(new)))])
                        .await?;
                }
            }
            return Ok(());
        }
        StatusReport::NodeGroup {
            nodegroup,
            observed,
            ..
        } => (nodegroup, observed),
    };
    let ngs = store
        .nodegroups_of_clusters(std::slice::from_ref(&cluster.uuid))
        .await?;
    let Some(ng) = ngs.iter().find(|n| refers_to(n, nodegroup)) else {
        return Ok(());
    };
    let creating = ng.status.as_deref() == Some(status::CREATE_IN_PROGRESS);
    match observed {
        Observed::InProgress { reason } => {
            if reason.is_some() && *reason != ng.status_reason {
                store
                    .update_nodegroup(ng.id, &[("status_reason", Bind::Text(reason.clone()))])
                    .await?;
            }
        }
        Observed::Complete => {
            if !in_progress(ng.status.as_deref()) {
                return Ok(());
            }
            let done = if creating {
                status::CREATE_COMPLETE
            } else {
                status::UPDATE_COMPLETE
            };
            store
                .update_nodegroup(
                    ng.id,
                    &[
                        ("status", Bind::text(done)),
                        ("status_reason", Bind::Text(None)),
                    ],
                )
                .await?;
            let others_busy = ngs
                .iter()
                .any(|n| n.id != ng.id && in_progress(n.status.as_deref()));
            if !others_busy && in_progress(cluster.status.as_deref()) {
                let cluster_done = if cluster.status.as_deref() == Some(status::CREATE_IN_PROGRESS)
                {
                    status::CREATE_COMPLETE
                } else {
                    status::UPDATE_COMPLETE
                };
                store
                    .update_cluster(
                        cluster.id,
                        &[
                            ("status", Bind::text(cluster_done)),
                            ("status_reason", Bind::Text(None)),
                        ],
                    )
                    .await?;
            }
        }
        Observed::Failed { reason } => {
            if !in_progress(ng.status.as_deref()) {
                return Ok(());
            }
            let ops = store.operations_of_cluster(&cluster.uuid).await?;
            if let Some(op) = ops.iter().rev().find(|o| {
                // RUNNING too: the report can overtake the worker marking the op done.
                o.kind == OpKind::Resize
                    && o.nodegroup_id == Some(ng.id)
                    && (o.state == op_state::DONE || o.state == op_state::RUNNING)
            }) {
                if let (Some(new), Some(old)) = (op.new_count, op.old_count) {
                    store.restore_count(ng.id, new, old).await?;
                }
            }
            let (ng_status, cluster_status) = if creating {
                (status::CREATE_FAILED, status::CREATE_FAILED)
            } else {
                (status::UPDATE_FAILED, status::UPDATE_FAILED)
            };
            store
                .update_nodegroup(
                    ng.id,
                    &[
                        ("status", Bind::text(ng_status)),
                        ("status_reason", Bind::text(reason)),
                    ],
                )
                .await?;
            store
                .update_cluster(
                    cluster.id,
                    &[
                        ("status", Bind::text(cluster_status)),
                        ("status_reason", Bind::text(reason)),
                    ],
                )
                .await?;
        }
    }
    Ok(())
}
