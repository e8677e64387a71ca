//! The statuses an operation leaves behind, as pure functions of its kind (Magnum's
//! conductor handlers and its `ClusterStatus` rules); [`super::outcome`] writes them.

use crate::model::Status;
use crate::store::operations::OpKind;

/// The cluster's and the operation's nodegroup's status after an operation ends; `None`
/// where the operation writes none (a row it removes, a cluster with other work open).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Statuses {
    pub cluster: Option<Status>,
    pub nodegroup: Option<Status>,
}

/// After the backend finished an operation of `kind`. `cluster_done`: no other operation of
/// the cluster is open; until then the cluster stays in progress.
pub fn completed(kind: OpKind, cluster_done: bool) -> Statuses {
    let cluster = cluster_done.then_some(Status::UpdateComplete);
    match kind {
        // Every nodegroup of the new cluster completes with it.
        OpKind::CreateCluster => Statuses {
            cluster: Some(Status::CreateComplete),
            nodegroup: Some(Status::CreateComplete),
        },
        // The rows are removed.
        OpKind::DeleteCluster => Statuses {
            cluster: None,
            nodegroup: None,
        },
        OpKind::DeleteNodeGroup => Statuses {
            cluster,
            nodegroup: None,
        },
        OpKind::CreateNodeGroup => Statuses {
            cluster,
            nodegroup: Some(Status::CreateComplete),
        },
        OpKind::Resize | OpKind::Upgrade | OpKind::UpdateNodeGroup => Statuses {
            cluster,
            nodegroup: Some(Status::UpdateComplete),
        },
        // The failure it undoes stays what the API shows (`UPDATE_FAILED` and its reason);
        // a cluster left in progress by other work settles (`outcome::finish`).
        OpKind::Rollback => Statuses {
            cluster: None,
            nodegroup: None,
        },
    }
}

/// After the driver or the backend failed an operation of `kind`: both always written, with
/// the reason.
pub fn failed(kind: OpKind) -> Statuses {
    let (cluster, nodegroup) = match kind {
        OpKind::CreateCluster => (Status::CreateFailed, Status::CreateFailed),
        OpKind::DeleteCluster => (Status::DeleteFailed, Status::DeleteFailed),
        OpKind::CreateNodeGroup => (Status::UpdateFailed, Status::CreateFailed),
        OpKind::DeleteNodeGroup => (Status::UpdateFailed, Status::DeleteFailed),
        OpKind::Resize | OpKind::Upgrade | OpKind::UpdateNodeGroup | OpKind::Rollback => {
            (Status::UpdateFailed, Status::UpdateFailed)
        }
    };
    Statuses {
        cluster: Some(cluster),
        nodegroup: Some(nodegroup),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ALL: [OpKind; 8] = [
        OpKind::CreateCluster,
        OpKind::DeleteCluster,
        OpKind::Resize,
        OpKind::Upgrade,
        OpKind::CreateNodeGroup,
        OpKind::UpdateNodeGroup,
        OpKind::DeleteNodeGroup,
        OpKind::Rollback,
    ];

    #[test]
    fn a_cluster_with_other_work_open_stays_in_progress() {
        for kind in ALL {
            let open = completed(kind, false);
            if kind == OpKind::CreateCluster {
                assert_eq!(open.cluster, Some(Status::CreateComplete));
            } else {
                assert_eq!(open.cluster, None, "{kind:?}");
            }
        }
        assert_eq!(
            completed(OpKind::Resize, true).cluster,
            Some(Status::UpdateComplete)
        );
    }

    #[test]
    fn nodegroup_statuses_follow_magnums_conductor() {
        assert_eq!(
            completed(OpKind::CreateNodeGroup, true).nodegroup,
            Some(Status::CreateComplete)
        );
        assert_eq!(completed(OpKind::DeleteNodeGroup, true).nodegroup, None);
        assert_eq!(
            failed(OpKind::CreateNodeGroup),
            Statuses {
                cluster: Some(Status::UpdateFailed),
                nodegroup: Some(Status::CreateFailed)
            }
        );
        assert_eq!(
            failed(OpKind::DeleteNodeGroup).nodegroup,
            Some(Status::DeleteFailed)
        );
    }

    /// A completed roll-back leaves the failure it undid in place.
    #[test]
    fn a_roll_back_writes_no_status_when_it_completes() {
        assert_eq!(
            completed(OpKind::Rollback, true),
            Statuses {
                cluster: None,
                nodegroup: None
            }
        );
    }

    #[test]
    fn every_failure_is_a_failed_status() {
        for kind in ALL {
            let f = failed(kind);
            for s in [f.cluster, f.nodegroup] {
                let s = s.expect("a failure writes both");
                assert!(s.is_failed(), "{kind:?}: {s}");
            }
        }
    }
}
