//! Adoption of work another conductor began. A Magnum database that magnum-rs takes over
//! (from Magnum with magnum-cluster-api) may hold clusters whose status says a change is
//! under way (`*_IN_PROGRESS`) and that no operation of ours follows: nothing would ever end
//! them. Each time this replica starts the conductor role, before the controllers list, each
//! such cluster gets waiting operations for what its statuses say is under way ([`plan`]);
//! the reconciler then ends them from the backend's own status as it ends its own, with
//! `*_COMPLETE`, or `*_FAILED` and the reason at the deadline. Nothing is sent to the
//! backend: the other conductor already asked it for the change.

use crate::model::{Cluster, NodeGroup, Status};
use crate::operation::{NewOperation, OpPayload, Wait};
use crate::store::adoption::NotAdopted;

use super::Conductor;

/// The operations that follow what `cluster`'s statuses say is under way, as Magnum's
/// conductor and magnum-cluster-api leave them:
/// - `CREATE_IN_PROGRESS`: the create; `DELETE_IN_PROGRESS`: the delete;
/// - `UPDATE_IN_PROGRESS` with every nodegroup `UPDATE_IN_PROGRESS` (more than one): an
///   upgrade to the cluster's template (magnum-cluster-api's `upgrade_cluster` marks them
///   all and has already set the template);
/// - else per nodegroup: `CREATE_IN_PROGRESS` a nodegroup create, `DELETE_IN_PROGRESS` its
///   delete, `UPDATE_IN_PROGRESS` a resize to its stored `node_count` (the count it had
///   before is not stored: a failure leaves the count as it is);
/// - `UPDATE_IN_PROGRESS` with no nodegroup in progress: the cluster's template again (an
///   upgrade whose target is what the cluster already runs ends at once).
pub fn plan(cluster: &Cluster, nodegroups: &[NodeGroup]) -> Vec<NewOperation> {
    let op = |payload: OpPayload, ng: Option<&NodeGroup>, count: Option<i64>| NewOperation {
        cluster_uuid: cluster.uuid.clone(),
        nodegroup_uuid: ng.map(|n| n.uuid.clone()),
        old_count: None,
        new_count: count,
        payload,
    };
    let status_of = |s: &Option<String>| s.as_deref().and_then(Status::parse);
    let upgrade = |ng: Option<&NodeGroup>| {
        cluster.cluster_template_id.as_ref().map(|t| {
            op(
                OpPayload::Upgrade {
                    cluster_template: t.clone(),
                    max_batch_size: 1,
                },
                ng,
                None,
            )
        })
    };
    let default_master = nodegroups.iter().find(|n| n.is_master() && n.is_default());
    match status_of(&cluster.status) {
        Some(Status::CreateInProgress) => vec![op(
            OpPayload::CreateCluster {
                create_timeout: cluster.create_timeout,
            },
            None,
            None,
        )],
        Some(Status::DeleteInProgress) => vec![op(OpPayload::DeleteCluster, None, None)],
        Some(Status::UpdateInProgress) => {
            let updating = |n: &&NodeGroup| status_of(&n.status) == Some(Status::UpdateInProgress);
            if nodegroups.len() > 1 && nodegroups.iter().all(|n| updating(&n)) {
                return upgrade(default_master).into_iter().collect();
            }
            let ops: Vec<NewOperation> = nodegroups
                .iter()
                .filter_map(|n| match status_of(&n.status) {
                    Some(Status::CreateInProgress) => {
                        Some(op(OpPayload::CreateNodeGroup, Some(n), None))
                    }
                    Some(Status::DeleteInProgress) => {
                        Some(op(OpPayload::DeleteNodeGroup, Some(n), None))
                    }
                    Some(Status::UpdateInProgress) => {
                        Some(op(OpPayload::resize(), Some(n), Some(n.node_count)))
                    }
                    _ => None,
                })
                .collect();
            if ops.is_empty() {
                return upgrade(default_master).into_iter().collect();
            }
            ops
        }
        _ => Vec::new(),
    }
}

/// Adopts every cluster under way that nothing of ours follows. A failure on one cluster is
/// logged and the others go on (the next start of the role tries it again).
pub async fn adopt_in_flight(state: &Conductor) {
    let uuids = match state.store.unfollowed_in_progress().await {
        Ok(u) => u,
        Err(e) => {
            tracing::error!(error = %e, "cannot list clusters to adopt");
            return;
        }
    };
    for uuid in uuids {
        if let Err(e) = adopt_one(state, &uuid).await {
            tracing::error!(cluster = %uuid, error = %e, "cannot adopt the cluster's work");
        }
    }
}

async fn adopt_one(state: &Conductor, uuid: &str) -> Result<(), sqlx::Error> {
    let Some(cluster) = state.store.cluster_by_uuid(uuid).await? else {
        return Ok(());
    };
    let (Some(status), Some(stack)) = (cluster.status.clone(), cluster.stack_id.clone()) else {
        return Ok(());
    };
    let nodegroups = state
        .store
        .nodegroups_of_clusters(std::slice::from_ref(&cluster.uuid))
        .await?;
    let ops = plan(&cluster, &nodegroups);
    if ops.is_empty() {
        return Ok(());
    }
    let driver = match state.driver_of(&cluster).await? {
        Ok(d) => d,
        Err(no) => {
            tracing::warn!(cluster = %uuid, reason = %no, "not adopted: no driver for its template");
            return Ok(());
        }
    };
    let wait = Wait {
        object: stack,
        generation: None,
        deadline_seconds: driver.progress_deadline().as_secs(),
    };
    match state.store.adopt(uuid, &status, &ops, &wait).await? {
        Ok(()) => {
            let kinds: Vec<&str> = ops.iter().map(|o| o.payload.kind().as_str()).collect();
            tracing::info!(cluster = %uuid, %status, ?kinds,
                "adopted work another conductor began: its operations wait for the backend");
            crate::failpoint::hit("adopted");
        }
        Err(NotAdopted::ClusterGone | NotAdopted::StatusChanged | NotAdopted::Followed) => {}
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::operation::OpKind;

    fn cluster(status: &str) -> Cluster {
        Cluster {
            uuid: "c".into(),
            cluster_template_id: Some("t2".into()),
            stack_id: Some("kube-abc".into()),
            status: Some(status.into()),
            create_timeout: Some(60),
            ..Default::default()
        }
    }

    fn ng(name: &str, role: &str, status: &str, count: i64) -> NodeGroup {
        NodeGroup {
            uuid: format!("ng-{name}"),
            name: name.into(),
            role: Some(role.into()),
            is_default: Some(true),
            status: Some(status.into()),
            node_count: count,
            ..Default::default()
        }
    }

    fn shape(ops: &[NewOperation]) -> Vec<(OpKind, Option<&str>, Option<i64>)> {
        ops.iter()
            .map(|o| (o.payload.kind(), o.nodegroup_uuid.as_deref(), o.new_count))
            .collect()
    }

    #[test]
    fn a_create_or_a_delete_under_way_is_followed_by_one_operation_of_the_cluster() {
        let ngs = [
            ng("default-master", "master", "CREATE_IN_PROGRESS", 1),
            ng("default-worker", "worker", "CREATE_IN_PROGRESS", 2),
        ];
        let ops = plan(&cluster("CREATE_IN_PROGRESS"), &ngs);
        assert_eq!(shape(&ops), [(OpKind::CreateCluster, None, None)]);
        assert_eq!(
            ops[0].payload,
            OpPayload::CreateCluster {
                create_timeout: Some(60)
            }
        );
        let ops = plan(&cluster("DELETE_IN_PROGRESS"), &ngs);
        assert_eq!(shape(&ops), [(OpKind::DeleteCluster, None, None)]);
    }

    #[test]
    fn an_update_is_followed_per_nodegroup_by_what_its_status_says() {
        let ngs = [
            ng("default-master", "master", "UPDATE_IN_PROGRESS", 3),
            ng("default-worker", "worker", "CREATE_COMPLETE", 2),
            ng("big", "worker", "CREATE_IN_PROGRESS", 1),
            ng("old", "worker", "DELETE_IN_PROGRESS", 1),
        ];
        let ops = plan(&cluster("UPDATE_IN_PROGRESS"), &ngs);
        assert_eq!(
            shape(&ops),
            [
                (OpKind::Resize, Some("ng-default-master"), Some(3)),
                (OpKind::CreateNodeGroup, Some("ng-big"), None),
                (OpKind::DeleteNodeGroup, Some("ng-old"), None),
            ]
        );
        assert!(ops.iter().all(|o| o.old_count.is_none()));
    }

    #[test]
    fn every_nodegroup_updating_is_magnum_cluster_apis_upgrade_to_the_clusters_template() {
        let ngs = [
            ng("default-master", "master", "UPDATE_IN_PROGRESS", 1),
            ng("default-worker", "worker", "UPDATE_IN_PROGRESS", 2),
        ];
        let ops = plan(&cluster("UPDATE_IN_PROGRESS"), &ngs);
        assert_eq!(
            shape(&ops),
            [(OpKind::Upgrade, Some("ng-default-master"), None)]
        );
        assert_eq!(ops[0].payload.upgrade_template(), Some("t2"));
        // Nothing of the cluster's nodegroups under way: its own template again.
        let settled = [ng("default-master", "master", "UPDATE_COMPLETE", 1)];
        let ops = plan(&cluster("UPDATE_IN_PROGRESS"), &settled);
        assert_eq!(
            shape(&ops),
            [(OpKind::Upgrade, Some("ng-default-master"), None)]
        );
    }

    #[test]
    fn a_cluster_at_rest_or_failed_is_left_alone() {
        let ngs = [ng("default-master", "master", "UPDATE_IN_PROGRESS", 1)];
        for status in [
            "CREATE_COMPLETE",
            "UPDATE_FAILED",
            "DELETE_FAILED",
            "nonsense",
        ] {
            assert!(plan(&cluster(status), &ngs).is_empty(), "{status}");
        }
    }
}
