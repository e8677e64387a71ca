//! Where an operation in flight stands, from what the real Cluster API controllers write:
//! pure functions over one workload cluster's objects (its `Cluster`, KubeadmControlPlane,
//! MachineDeployments and Machines), as the driver's watch caches hold them.
//!
//! Seen on Cluster API v1.13 (core, KCP, CABPK, CAPD in-memory; recordings in
//! `shared/reference/capi-real/observed`):
//! - a scale is done when the object has observed its latest spec and its v1beta2 counters
//!   (`replicas`, `readyReplicas`, `availableReplicas`, `upToDateReplicas`) all equal the
//!   target ([`status::scaled`]);
//! - while it moves, the `ScalingUp`/`ScalingDown`/`RollingOut` conditions carry the
//!   controller's own text ("Scaling up from 2 to 3 replicas is blocked because: …");
//! - a size the KCP webhook refuses is accepted on the Cluster, and the topology controller
//!   reports it as `TopologyReconciled` False, reason `ReconcileFailed`, with the webhook's
//!   message and the Cluster generation it looked at;
//! - an upgrade is done when every Machine of the cluster runs the new version and the
//!   control plane and deployments are rolled out (`upToDateReplicas == replicas`).

use std::sync::Arc;

use super::slim::SlimObject;
use super::status;
use crate::drivers::{NodeGroupRef, Verdict};
use crate::operation::OpKind;

/// One workload cluster's objects, as the watch caches hold them.
#[derive(Clone, Debug, Default)]
pub struct StackView {
    pub cluster: Option<Arc<SlimObject>>,
    pub control_plane: Option<Arc<SlimObject>>,
    pub deployments: Vec<Arc<SlimObject>>,
    pub machines: Vec<Arc<SlimObject>>,
}

/// What an operation waits for, in Cluster API terms.
#[derive(Clone, Debug)]
pub struct Awaited<'a> {
    pub kind: OpKind,
    /// The operation's nodegroup.
    pub nodegroup: Option<NodeGroupRef>,
    /// The control plane's count and each worker nodegroup's (name, count): what a create
    /// waits for.
    pub control_plane_count: i64,
    pub workers: Vec<(&'a str, i64)>,
    pub target_count: Option<i64>,
    pub target_version: Option<&'a str>,
    /// The Cluster generation the driver's change produced.
    pub generation: Option<i64>,
}

impl StackView {
    pub fn deployment(&self, nodegroup: &str) -> Option<&SlimObject> {
        self.deployments
            .iter()
            .map(AsRef::as_ref)
            .find(|d| d.labels.deployment_name.as_deref() == Some(nodegroup))
    }

    /// The Machines of one nodegroup.
    pub fn machines_of<'s>(&'s self, ng: &'s NodeGroupRef) -> impl Iterator<Item = &'s SlimObject> {
        self.machines
            .iter()
            .map(AsRef::as_ref)
            .filter(move |m| match ng {
                NodeGroupRef::ControlPlane => m.labels.control_plane,
                NodeGroupRef::Worker(n) => m.labels.deployment_name.as_deref() == Some(n.as_str()),
            })
    }

    fn object_of(&self, ng: &NodeGroupRef) -> Option<&SlimObject> {
        match ng {
            NodeGroupRef::ControlPlane => self.control_plane.as_deref(),
            NodeGroupRef::Worker(n) => self.deployment(n),
        }
    }
}

fn condition_true(o: &SlimObject, kind: &str) -> bool {
    o.condition(kind).is_some_and(|c| c.is("True"))
}

/// The controller's own words while an object moves: the message of a True
/// `ScalingUp`/`ScalingDown`/`RollingOut` condition, or of a False `Available` one.
pub fn moving_message(obj: &SlimObject) -> Option<String> {
    ["ScalingUp", "ScalingDown", "RollingOut"]
        .into_iter()
        .filter_map(|kind| obj.condition(kind).filter(|c| c.is("True")))
        .find_map(|c| c.text())
        .or_else(|| {
            obj.condition("Available")
                .filter(|c| c.is("False"))
                .and_then(|c| c.text())
        })
        .map(str::to_string)
}

/// What the topology controller reported for our change (or a later one): a
/// `ReconcileFailed` `TopologyReconciled` condition whose generation is not older than
/// `since`, as a refusal (an outcome) or as a failure it retries (progress), by
/// [`status::is_refusal`].
enum TopologyFailure {
    Refused(String),
    Retrying(String),
}

fn topology_failure(cluster: &SlimObject, since: Option<i64>) -> Option<TopologyFailure> {
    let c = cluster.condition("TopologyReconciled")?;
    let failed = c.is("False") && c.reason.as_deref() == Some("ReconcileFailed");
    let current = match (since, c.observed_generation) {
        (Some(since), Some(seen)) => seen >= since,
        _ => status::topology_failure(cluster).is_some(),
    };
    if !(failed && current) {
        return None;
    }
    let message = c
        .text()
        .unwrap_or("Cluster API could not reconcile the cluster topology")
        .to_string();
    Some(if status::is_refusal(&message) {
        TopologyFailure::Refused(message)
    } else {
        TopologyFailure::Retrying(message)
    })
}

/// The topology controller's message while it has not applied the latest spec (e.g. an
/// upgrade waiting for the control plane).
fn topology_pending(cluster: &SlimObject) -> Option<String> {
    cluster
        .condition("TopologyReconciled")
        .filter(|c| c.is("False"))
        .and_then(|c| c.text())
        .map(str::to_string)
}

/// The infrastructure provider's words while it blocks the cluster: the message of the
/// Cluster's v1beta2 `InfrastructureReady` condition when False (CAPO: reason
/// `OpenStackError` with what Neutron or Nova refused; before its first answer, Cluster
/// API's "OpenStackCluster status.initialization.provisioned is false").
fn infrastructure_blocking(cluster: &SlimObject) -> Option<String> {
    cluster
        .condition("InfrastructureReady")
        .filter(|c| c.is("False"))
        .and_then(|c| c.text())
        .map(str::to_string)
}

/// The counters that show progress of one object, as text.
fn marker_of(obj: Option<&SlimObject>) -> String {
    match obj {
        None => "-".into(),
        Some(o) => status::progress_marker(o)
            .iter()
            .map(|c| c.map_or("-".to_string(), |n| n.to_string()))
            .collect::<Vec<_>>()
            .join("/"),
    }
}

/// A marker of everything that shows progress of the nodegroups involved: the objects'
/// counters, and the Machines with their phases (a Machine created or gone is progress).
fn marker(view: &StackView, groups: &[NodeGroupRef]) -> String {
    let mut parts = Vec::new();
    for g in groups {
        parts.push(marker_of(view.object_of(g)));
        let mut ms: Vec<String> = view
            .machines_of(g)
            .map(|m| format!("{}:{}", m.name(), m.status.phase.as_deref().unwrap_or("")))
            .collect();
        ms.sort();
        parts.push(ms.join(","));
    }
    parts.join(";")
}

fn what(ng: &NodeGroupRef) -> String {
    match ng {
        NodeGroupRef::ControlPlane => "the control plane".into(),
        NodeGroupRef::Worker(n) => format!("nodegroup {n}"),
    }
}

/// Whether one nodegroup's object has reached `target` replicas, with the controller's
/// message when it has not.
fn scaled(view: &StackView, ng: &NodeGroupRef, target: i64) -> Result<(), String> {
    let Some(obj) = view.object_of(ng) else {
        return Err(format!("waiting for Cluster API to create {}", what(ng)));
    };
    // The topology controller copies the Cluster's replicas into the object first.
    let spec = obj.replicas();
    if spec.is_some_and(|s| s != target) {
        return Err(format!(
            "waiting for Cluster API to apply {target} replicas to {} (now {})",
            what(ng),
            spec.unwrap_or_default()
        ));
    }
    match status::scaled(obj, target) {
        status::Observed::Complete => Ok(()),
        _ => Err(moving_message(obj).unwrap_or_else(|| {
            format!(
                "{}: {} of {target} replicas ready",
                what(ng),
                obj.status.counters.ready_replicas.unwrap_or(0)
            )
        })),
    }
}

/// Whether every Machine of the cluster runs `version` and every object is rolled out.
fn upgraded(view: &StackView, version: &str) -> Result<(), String> {
    if let Some(kcp) = view.control_plane.as_deref() {
        if kcp.spec.version.as_deref() != Some(version)
            || kcp.status.version.as_deref() != Some(version)
        {
            return Err(moving_message(kcp)
                .or_else(|| view.cluster.as_deref().and_then(topology_pending))
                .unwrap_or_else(|| format!("upgrading the control plane to {version}")));
        }
        let target = kcp.replicas().unwrap_or(1);
        scaled(view, &NodeGroupRef::ControlPlane, target)?;
    }
    for md in &view.deployments {
        let n = md.labels.deployment_name.clone().unwrap_or_default();
        let md_version = md
            .spec
            .template
            .as_ref()
            .and_then(|t| t.spec.as_ref())
            .and_then(|s| s.version.as_deref());
        if md_version != Some(version) {
            return Err(view
                .cluster
                .as_deref()
                .and_then(topology_pending)
                .unwrap_or_else(|| format!("waiting to upgrade nodegroup {n} to {version}")));
        }
        let target = md.replicas().unwrap_or(0);
        scaled(view, &NodeGroupRef::Worker(n), target)?;
    }
    let old: Vec<&str> = view
        .machines
        .iter()
        .filter(|m| m.spec.version.as_deref() != Some(version))
        .map(|m| m.name())
        .collect();
    if !old.is_empty() {
        return Err(format!(
            "{} machine(s) not yet at {version}: {}",
            old.len(),
            old.join(", ")
        ));
    }
    Ok(())
}

/// The verdict for an operation in flight on one workload cluster.
pub fn verdict(view: &StackView, w: &Awaited<'_>) -> Verdict {
    let in_progress = |reason: String, groups: &[NodeGroupRef]| Verdict::InProgress {
        reason: Some(reason),
        marker: marker(view, groups),
    };
    if w.kind == OpKind::DeleteCluster {
        return match &view.cluster {
            None => Verdict::Complete,
            Some(_) => in_progress(
                format!(
                    "Cluster API is deleting the cluster ({} machine(s) left)",
                    view.machines.len()
                ),
                &[NodeGroupRef::ControlPlane],
            ),
        };
    }
    // Absent from the watch cache is not proof of absence: right after our own create (or
    // a relist) the watch may not have delivered the object yet. Nothing moves without it,
    // so a Cluster deleted behind our back fails at the progress deadline.
    let Some(cluster) = view.cluster.as_deref() else {
        return Verdict::InProgress {
            reason: Some("the Cluster object is not on the management cluster".into()),
            marker: "no-cluster".into(),
        };
    };
    match topology_failure(cluster, w.generation) {
        Some(TopologyFailure::Refused(reason)) => Verdict::Failed { reason },
        // The controller's own words while it retries, in place of ours.
        Some(TopologyFailure::Retrying(message)) => match moving(view, cluster, w) {
            Verdict::InProgress { marker, .. } => Verdict::InProgress {
                reason: Some(message),
                marker,
            },
            done => done,
        },
        // While the infrastructure is what blocks, its provider's words.
        None => match (moving(view, cluster, w), infrastructure_blocking(cluster)) {
            (Verdict::InProgress { marker, .. }, Some(blocked)) => Verdict::InProgress {
                reason: Some(blocked),
                marker,
            },
            (verdict, _) => verdict,
        },
    }
}

/// The verdict on a change the topology controller has not refused.
fn moving(view: &StackView, cluster: &SlimObject, w: &Awaited<'_>) -> Verdict {
    let in_progress = |reason: String, groups: &[NodeGroupRef]| Verdict::InProgress {
        reason: Some(reason),
        marker: marker(view, groups),
    };
    let ng = w.nodegroup.clone();
    match (w.kind, ng) {
        (OpKind::CreateCluster, _) => {
            let mut groups = vec![NodeGroupRef::ControlPlane];
            groups.extend(
                w.workers
                    .iter()
                    .map(|(n, _)| NodeGroupRef::Worker(n.to_string())),
            );
            if let Err(r) = scaled(view, &NodeGroupRef::ControlPlane, w.control_plane_count) {
                return in_progress(r, &groups);
            }
            if !condition_true(cluster, "ControlPlaneAvailable") {
                let r = cluster
                    .condition("ControlPlaneAvailable")
                    .and_then(|c| c.text())
                    .unwrap_or("waiting for the control plane to become available")
                    .to_string();
                return in_progress(r, &groups);
            }
            for (n, count) in &w.workers {
                if let Err(r) = scaled(view, &NodeGroupRef::Worker(n.to_string()), *count) {
                    return in_progress(r, &groups);
                }
            }
            Verdict::Complete
        }
        (OpKind::Resize | OpKind::CreateNodeGroup, Some(g)) => {
            let target = w.target_count.unwrap_or(1);
            match scaled(view, &g, target) {
                Ok(()) if view.machines_of(&g).count() as i64 == target => Verdict::Complete,
                Ok(()) => in_progress(
                    format!("waiting for the Machines of {} to reach {target}", what(&g)),
                    std::slice::from_ref(&g),
                ),
                Err(r) => in_progress(r, std::slice::from_ref(&g)),
            }
        }
        (OpKind::DeleteNodeGroup, Some(g)) => {
            let left = view.machines_of(&g).count();
            if view.object_of(&g).is_none() && left == 0 {
                Verdict::Complete
            } else {
                in_progress(
                    format!(
                        "Cluster API is deleting {} ({left} machine(s) left)",
                        what(&g)
                    ),
                    std::slice::from_ref(&g),
                )
            }
        }
        (OpKind::Upgrade, _) => {
            let Some(version) = w.target_version else {
                return Verdict::Complete;
            };
            let mut groups = vec![NodeGroupRef::ControlPlane];
            groups.extend(
                view.deployments
                    .iter()
                    .filter_map(|d| d.labels.deployment_name.clone().map(NodeGroupRef::Worker)),
            );
            match upgraded(view, version) {
                Ok(()) => Verdict::Complete,
                Err(r) => {
                    let versions: Vec<String> = view
                        .machines
                        .iter()
                        .map(|m| {
                            format!("{}={}", m.name(), m.spec.version.as_deref().unwrap_or(""))
                        })
                        .collect();
                    Verdict::InProgress {
                        reason: Some(r),
                        marker: format!("{}|{}", marker(view, &groups), versions.join(",")),
                    }
                }
            }
        }
        // Nothing to wait for (autoscaling updates complete at once).
        _ => Verdict::Complete,
    }
}

#[cfg(test)]
mod tests {
    use super::super::topology::{CLUSTER_NAME_LABEL, CONTROL_PLANE_LABEL, DEPLOYMENT_NAME_LABEL};
    use super::*;
    use serde_json::{json, Value};

    fn slim(v: Value) -> Arc<SlimObject> {
        Arc::new(serde_json::from_value(v).expect("a SlimObject"))
    }

    fn kcp(spec: i64, counters: [i64; 4], scaling_up: Option<&str>) -> Arc<SlimObject> {
        slim(kcp_json(spec, counters, scaling_up))
    }

    fn kcp_json(spec: i64, counters: [i64; 4], scaling_up: Option<&str>) -> Value {
        let mut conditions = vec![
            json!({"type": "Available", "status": "True", "reason": "Available", "message": ""}),
        ];
        if let Some(m) = scaling_up {
            conditions.push(
                json!({"type": "ScalingUp", "status": "True", "reason": "ScalingUp", "message": m}),
            );
        }
        json!({"metadata": {"name": "kube-a-cp", "generation": 2, "labels": {CLUSTER_NAME_LABEL: "kube-a"}},
               "spec": {"replicas": spec, "version": "v1.34.0"},
               "status": {"observedGeneration": 2, "replicas": counters[0], "readyReplicas": counters[1],
                          "availableReplicas": counters[2], "upToDateReplicas": counters[3],
                          "version": "v1.34.0", "conditions": conditions}})
    }

    fn machine(n: &str, cp: bool, version: &str) -> Arc<SlimObject> {
        let mut labels = json!({CLUSTER_NAME_LABEL: "kube-a"});
        if cp {
            labels[CONTROL_PLANE_LABEL] = json!("");
        } else {
            labels[DEPLOYMENT_NAME_LABEL] = json!("default-worker");
        }
        slim(
            json!({"metadata": {"name": n, "labels": labels}, "spec": {"version": version},
               "status": {"phase": "Running"}}),
        )
    }

    fn cluster(generation: i64, topology: Value) -> Arc<SlimObject> {
        slim(
            json!({"metadata": {"name": "kube-a", "generation": generation},
               "status": {"conditions": [topology,
                   {"type": "ControlPlaneAvailable", "status": "True", "reason": "Available", "message": ""}]}}),
        )
    }

    fn ok_topology(generation: i64) -> Value {
        json!({"type": "TopologyReconciled", "status": "True", "reason": "ReconcileSucceeded", "observedGeneration": generation})
    }

    fn resize(target: i64, generation: i64) -> Awaited<'static> {
        Awaited {
            kind: OpKind::Resize,
            nodegroup: Some(NodeGroupRef::ControlPlane),
            control_plane_count: target,
            workers: vec![],
            target_count: Some(target),
            target_version: None,
            generation: Some(generation),
        }
    }

    #[test]
    fn control_plane_resize_reports_the_real_kcp_message_then_completes() {
        // As recorded on KCP v1.13 scaling 1 -> 3 (kcp-samples-startup0s-2-scale-up).
        let blocked = "Scaling up from 2 to 3 replicas is blocked because:\n* waiting for control plane components to become healthy\n* waiting for etcd cluster to become healthy";
        let mut view = StackView {
            cluster: Some(cluster(2, ok_topology(2))),
            control_plane: Some(kcp(3, [2, 1, 1, 2], Some(blocked))),
            deployments: vec![],
            machines: vec![
                machine("m1", true, "v1.34.0"),
                machine("m2", true, "v1.34.0"),
            ],
        };
        match verdict(&view, &resize(3, 2)) {
            Verdict::InProgress { reason, .. } => assert_eq!(reason.as_deref(), Some(blocked)),
            other => panic!("expected in progress, got {other:?}"),
        }
        view.control_plane = Some(kcp(3, [3, 3, 3, 3], None));
        view.machines.push(machine("m3", true, "v1.34.0"));
        assert_eq!(verdict(&view, &resize(3, 2)), Verdict::Complete);
    }

    #[test]
    fn a_create_the_infrastructure_blocks_shows_capos_own_error() {
        // As CAPO v0.14.7 reported it against the real Neutron (docs/capo-env.md).
        let refused = "failed to reconcile external network: failed to get external network: Expected HTTP response code [200] when accessing [GET http://127.0.0.1:15202/v2.0/networks/f7006998-3ad6-4c4b-9ab5-b901f7eafbb0], but got 404 instead";
        let blocked = slim(json!({"metadata": {"name": "kube-a", "generation": 1},
            "status": {"conditions": [ok_topology(1),
                {"type": "InfrastructureReady", "status": "False", "reason": "OpenStackError",
                 "message": refused}]}}));
        let create = Awaited {
            kind: OpKind::CreateCluster,
            nodegroup: None,
            control_plane_count: 1,
            workers: vec![("default-worker", 1)],
            target_count: None,
            target_version: None,
            generation: Some(1),
        };
        let mut view = StackView {
            cluster: Some(blocked),
            control_plane: Some(kcp(1, [0, 0, 0, 0], None)),
            ..StackView::default()
        };
        match verdict(&view, &create) {
            Verdict::InProgress { reason, .. } => assert_eq!(reason.as_deref(), Some(refused)),
            other => panic!("expected in progress, got {other:?}"),
        }
        // Ready infrastructure: the control plane's own words again.
        view.cluster = Some(cluster(1, ok_topology(1)));
        match verdict(&view, &create) {
            Verdict::InProgress { reason, .. } => {
                assert!(!reason.unwrap_or_default().contains("external network"))
            }
            other => panic!("expected in progress, got {other:?}"),
        }
    }

    #[test]
    fn kcp_webhook_refusal_fails_only_for_the_generation_it_speaks_of() {
        let refused = json!({"type": "TopologyReconciled", "status": "False", "reason": "ReconcileFailed",
            "observedGeneration": 3,
            "message": "error reconciling the Cluster topology: failed to update KubeadmControlPlane magnum-system/kube-a-cp: admission webhook \"validation.kubeadmcontrolplane.controlplane.cluster.x-k8s.io\" denied the request: KubeadmControlPlane.controlplane.cluster.x-k8s.io \"kube-a-cp\" is invalid: spec.replicas: Forbidden: cannot be an even number when etcd is stacked"});
        let view = StackView {
            cluster: Some(cluster(3, refused)),
            control_plane: Some(kcp(1, [1, 1, 1, 1], None)),
            deployments: vec![],
            machines: vec![machine("m1", true, "v1.34.0")],
        };
        match verdict(&view, &resize(2, 3)) {
            Verdict::Failed { reason } => {
                assert!(reason.contains("cannot be an even number"), "{reason}")
            }
            other => panic!("expected failure, got {other:?}"),
        }
        // A later change (generation 4) is not failed by the condition about generation 3.
        assert!(matches!(
            verdict(&view, &resize(1, 4)),
            Verdict::Complete | Verdict::InProgress { .. }
        ));
    }

    #[test]
    fn a_failure_the_topology_controller_retries_is_progress_with_its_message() {
        // As seen on Cluster API v1.13 right after a 20 s API server outage.
        let message = "error reconciling the Cluster topology: failed to wait for up-to-date KubeadmControlPlane objects in the cache after KubeadmControlPlane update: timed out: magnum-system/kube-a-cp: resourceVersion not yet up-to-date";
        let retrying = json!({"type": "TopologyReconciled", "status": "False", "reason": "ReconcileFailed",
            "observedGeneration": 3, "message": message});
        let mut view = StackView {
            cluster: Some(cluster(3, retrying)),
            control_plane: Some(kcp(3, [1, 1, 1, 1], None)),
            deployments: vec![],
            machines: vec![machine("m1", true, "v1.34.0")],
        };
        match verdict(&view, &resize(3, 3)) {
            Verdict::InProgress { reason, .. } => assert_eq!(reason.as_deref(), Some(message)),
            other => panic!("expected in progress, got {other:?}"),
        }
        view.control_plane = Some(kcp(3, [3, 3, 3, 3], None));
        view.machines.push(machine("m2", true, "v1.34.0"));
        view.machines.push(machine("m3", true, "v1.34.0"));
        assert_eq!(verdict(&view, &resize(3, 3)), Verdict::Complete);
    }

    #[test]
    fn progress_marker_changes_when_a_machine_appears() {
        let mut view = StackView {
            cluster: Some(cluster(2, ok_topology(2))),
            control_plane: Some(kcp(3, [1, 1, 1, 1], None)),
            deployments: vec![],
            machines: vec![machine("m1", true, "v1.34.0")],
        };
        let first = verdict(&view, &resize(3, 2));
        view.machines.push(machine("m2", true, "v1.34.0"));
        let second = verdict(&view, &resize(3, 2));
        match (first, second) {
            (Verdict::InProgress { marker: a, .. }, Verdict::InProgress { marker: b, .. }) => {
                assert_ne!(a, b)
            }
            other => panic!("expected two in-progress verdicts, got {other:?}"),
        }
    }

    #[test]
    fn upgrade_completes_only_when_every_machine_runs_the_new_version() {
        let mut cp = kcp_json(1, [1, 1, 1, 1], None);
        cp["spec"]["version"] = json!("v1.34.1");
        cp["status"]["version"] = json!("v1.34.1");
        let mut view = StackView {
            cluster: Some(cluster(5, ok_topology(5))),
            control_plane: Some(slim(cp)),
            deployments: vec![],
            machines: vec![
                machine("m1", true, "v1.34.1"),
                machine("w1", false, "v1.34.0"),
            ],
        };
        let w = Awaited {
            kind: OpKind::Upgrade,
            nodegroup: Some(NodeGroupRef::Worker("default-worker".into())),
            control_plane_count: 1,
            workers: vec![],
            target_count: None,
            target_version: Some("v1.34.1"),
            generation: Some(5),
        };
        assert!(matches!(verdict(&view, &w), Verdict::InProgress { .. }));
        view.machines[1] = machine("w2", false, "v1.34.1");
        assert_eq!(verdict(&view, &w), Verdict::Complete);
    }

    #[test]
    fn a_cluster_missing_from_the_cache_waits_and_does_not_fail() {
        // Right after the create, before the watch delivered the object.
        let view = StackView::default();
        let create = Awaited {
            kind: OpKind::CreateCluster,
            nodegroup: None,
            control_plane_count: 1,
            workers: vec![("default-worker", 1)],
            target_count: None,
            target_version: None,
            generation: None,
        };
        assert!(matches!(
            verdict(&view, &create),
            Verdict::InProgress { reason: Some(r), .. } if r.contains("not on the management cluster")
        ));
        assert!(matches!(
            verdict(&view, &resize(3, 2)),
            Verdict::InProgress { .. }
        ));
    }

    #[test]
    fn cluster_delete_completes_when_the_cluster_object_is_gone() {
        let w = Awaited {
            kind: OpKind::DeleteCluster,
            nodegroup: None,
            control_plane_count: 1,
            workers: vec![],
            target_count: None,
            target_version: None,
            generation: None,
        };
        let gone = StackView::default();
        assert_eq!(verdict(&gone, &w), Verdict::Complete);
        let deleting = StackView {
            cluster: Some(cluster(2, ok_topology(2))),
            ..StackView::default()
        };
        assert!(matches!(verdict(&deleting, &w), Verdict::InProgress { .. }));
    }
}
