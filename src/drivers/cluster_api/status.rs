//! Turning Cluster API status into Magnum's view, as pure functions.
//!
//! A scale is complete when the object has observed its latest spec
//! (`observedGeneration == generation`) and
//! `replicas == readyReplicas == availableReplicas == upToDateReplicas == target`
//! (v1beta2 counters; `phase == Running` is not trusted). A Cluster whose
//! `TopologyReconciled` condition is False with reason `ReconcileFailed` (e.g. a KCP webhook
//! rejecting a size) has failed; `… is blocked because: …` messages are shown while in progress.

use super::slim::SlimObject;

/// What the Cluster API objects say about one awaited change.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Observed {
    /// The change is done.
    Complete,
    /// Still moving; `reason` is shown as the status reason.
    InProgress { reason: Option<String> },
    /// Cluster API rejected the change.
    Failed { reason: String },
}

/// A "blocked" message from a `ScalingUp`/`ScalingDown` condition, if any.
fn blocked_reason(o: &SlimObject) -> Option<String> {
    o.conditions()
        .filter(|c| matches!(c.kind.as_str(), "ScalingUp" | "ScalingDown"))
        .filter_map(|c| c.message.as_deref())
        .find(|m| m.contains("is blocked because"))
        .map(str::to_string)
}

/// The state of a KubeadmControlPlane or MachineDeployment scaled to `target`.
pub fn scaled(object: &SlimObject, target: i64) -> Observed {
    let generation = object.metadata.generation;
    let spec_ok = object.replicas().is_none_or(|r| r == target);
    if spec_ok
        && generation.is_some()
        && generation == object.status.observed_generation
        && object.counters().iter().all(|c| *c == Some(target))
    {
        return Observed::Complete;
    }
    Observed::InProgress {
        reason: blocked_reason(object),
    }
}

/// A failure the topology controller reports on a Cluster's current spec, if any: the
/// message of a `ReconcileFailed` (a refusal or not: [`is_refusal`]). A condition that speaks
/// of an older generation (`observedGeneration` behind `metadata.generation`) is stale and
/// ignored: the controller has not looked at the latest spec yet.
pub fn topology_failure(cluster: &SlimObject) -> Option<String> {
    let generation = cluster.metadata.generation;
    cluster
        .condition("TopologyReconciled")
        .filter(|c| {
            c.is("False")
                && c.reason.as_deref() == Some("ReconcileFailed")
                && c.observed_generation.is_none_or(|g| Some(g) == generation)
        })
        .map(|c| {
            c.message
                .as_deref()
                .unwrap_or("Cluster API could not reconcile the cluster topology")
                .to_string()
        })
}

/// Whether the topology controller's `ReconcileFailed` message is the API server refusing
/// the change it derived from the Cluster: an admission webhook's denial, or a validation's
/// `is invalid` / `is forbidden`. Such a refusal stays until the Cluster asks for something
/// else. Any other failure (a conflict, a cache that has not caught up after an API server
/// restart, a timeout) the controller retries by itself: it is progress, not an outcome.
/// Seen on Cluster API v1.13 after a 20 s API server outage: "error reconciling the Cluster
/// topology: failed to wait for up-to-date MachineDeployment objects in the cache after
/// MachineDeployment update: timed out: …", gone on the next reconcile.
pub fn is_refusal(message: &str) -> bool {
    message.contains("denied the request")
        || message.contains(" is invalid: ")
        || message.contains(" is forbidden: ")
}

/// The address of the workload cluster's API (`spec.controlPlaneEndpoint`).
pub fn api_address(cluster: &SlimObject) -> Option<String> {
    let endpoint = cluster.spec.control_plane_endpoint.as_ref()?;
    let host = endpoint.host.as_deref().filter(|h| !h.is_empty())?;
    let port = endpoint.port.unwrap_or(6443);
    Some(format!("https://{host}:{port}"))
}

/// A Machine's node addresses (`status.addresses`, internal ones first as Magnum lists
/// fixed IPs).
pub fn machine_addresses(machine: &SlimObject) -> Vec<String> {
    let all = machine.status.addresses.as_deref().unwrap_or_default();
    let of = |t: &str| {
        all.iter()
            .filter(|a| a.kind.as_deref() == Some(t))
            .filter_map(|a| a.address.clone())
            .collect::<Vec<_>>()
    };
    let internal = of("InternalIP");
    if internal.is_empty() {
        of("ExternalIP")
    } else {
        internal
    }
}

/// The counters that show progress (a change of them resets the no-progress deadline):
/// `observedGeneration` and the four replica counters of `status`.
pub fn progress_marker(object: &SlimObject) -> Vec<Option<i64>> {
    let c = &object.status.counters;
    vec![
        object.status.observed_generation,
        c.replicas,
        c.ready_replicas,
        c.available_replicas,
        c.up_to_date_replicas,
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{json, Value};

    fn slim(v: Value) -> SlimObject {
        serde_json::from_value(v).expect("a SlimObject")
    }

    fn kcp(gen: i64, observed: i64, counters: [i64; 4]) -> Value {
        json!({"metadata": {"generation": gen}, "spec": {"replicas": 3},
               "status": {"observedGeneration": observed, "replicas": counters[0], "readyReplicas": counters[1],
                          "availableReplicas": counters[2], "upToDateReplicas": counters[3]}})
    }

    #[test]
    fn scale_is_complete_only_when_every_counter_reached_the_target() {
        assert_eq!(
            scaled(&slim(kcp(2, 2, [3, 3, 3, 3])), 3),
            Observed::Complete
        );
        assert!(matches!(
            scaled(&slim(kcp(2, 2, [3, 2, 3, 3])), 3),
            Observed::InProgress { .. }
        ));
        assert!(matches!(
            scaled(&slim(kcp(2, 1, [3, 3, 3, 3])), 3),
            Observed::InProgress { .. }
        ));
    }

    #[test]
    fn blocked_scaling_message_is_the_reason_while_in_progress() {
        let mut k = kcp(2, 2, [1, 1, 1, 1]);
        k["status"]["conditions"] = json!([{"type": "ScalingUp", "status": "True", "reason": "ScalingUp",
            "message": "Scaling up from 1 to 3 replicas is blocked because: etcd cluster is not healthy"}]);
        assert_eq!(
            scaled(&slim(k), 3),
            Observed::InProgress {
                reason: Some("Scaling up from 1 to 3 replicas is blocked because: etcd cluster is not healthy".into())
            }
        );
    }

    #[test]
    fn reconcile_failed_topology_is_a_refusal_only_when_the_api_server_refused() {
        let refused = "error reconciling the Cluster topology: failed to update KubeadmControlPlane magnum-system/kube-abcde: admission webhook \"validation.kubeadmcontrolplane.controlplane.cluster.x-k8s.io\" denied the request: spec.replicas: Forbidden: cannot be an even number when etcd is stacked";
        let c = json!({"status": {"conditions": [{"type": "TopologyReconciled", "status": "False",
            "reason": "ReconcileFailed", "message": refused}]}});
        assert_eq!(topology_failure(&slim(c)).as_deref(), Some(refused));
        assert!(is_refusal(refused));
        assert!(is_refusal("error reconciling the Cluster topology: failed to create MachineDeployment magnum-system/kube-abcde-md: MachineDeployment.cluster.x-k8s.io \"kube-abcde-md\" is invalid: spec.replicas: Invalid value: -1"));
        // As seen on Cluster API v1.13 right after an API server outage; gone on the next pass.
        assert!(!is_refusal("error reconciling the Cluster topology: failed to wait for up-to-date MachineDeployment objects in the cache after MachineDeployment update: timed out: magnum-system/kube-658tc-default-worker-rwwsn: resourceVersion not yet up-to-date: current: 5873, expected to be >= 5895"));
        assert_eq!(topology_failure(&slim(json!({"status": {}}))), None);
        let stale = json!({"metadata": {"generation": 3}, "status": {"conditions": [{"type": "TopologyReconciled",
            "status": "False", "reason": "ReconcileFailed", "observedGeneration": 2, "message": "old"}]}});
        assert_eq!(topology_failure(&slim(stale)), None);
    }
}
