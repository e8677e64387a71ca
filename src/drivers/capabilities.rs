//! The capability questions the API asks a driver, with Magnum's base-driver answers as
//! defaults (`magnum/drivers/common/driver.py`).

use crate::error::ApiError;
use crate::model::NodeGroup;

use super::odd_master_size;

pub trait Capabilities: Send + Sync {
    /// Cluster create (`enforce_cluster_master_size_supported`): odd sizes ≥ 1.
    fn validate_master_size(&self, node_count: i64) -> Result<(), ApiError> {
        odd_master_size(node_count)
    }

    /// Resize of a master nodegroup. Magnum's base driver refuses it outright.
    fn validate_master_resize(&self, _node_count: i64) -> Result<(), ApiError> {
        Err(ApiError::MasterNgResizeNotSupported)
    }

    /// Whether `nodes_to_remove` is honoured when resizing a nodegroup of this role.
    /// Magnum accepts the list for any nodegroup; a driver that cannot honour it for a role
    /// says so here and the list is ignored (and logged) for that role.
    fn honours_nodes_to_remove(&self, _nodegroup: &NodeGroup) -> bool {
        false
    }

    /// Whether autoscaling bounds (`min_node_count`/`max_node_count`) may be set on this
    /// nodegroup. Magnum's base driver lets them be stored on any nodegroup (and resize
    /// ignores them on the master).
    fn supports_autoscaling(&self, _nodegroup: &NodeGroup) -> bool {
        true
    }
}

/// Magnum's base driver: no master resize, odd master sizes at create.
#[derive(Clone, Copy, Debug, Default)]
pub struct BaseCapabilities;

impl Capabilities for BaseCapabilities {}

/// What magnum-cluster-api and magnum-capi-helm allow: master resize to odd sizes ≥ 1
/// (etcd quorum), `nodes_to_remove` for workers and the control plane alike.
#[derive(Clone, Copy, Debug, Default)]
pub struct ClusterApiCapabilities;

impl Capabilities for ClusterApiCapabilities {
    fn validate_master_resize(&self, node_count: i64) -> Result<(), ApiError> {
        odd_master_size(node_count)
    }

    fn honours_nodes_to_remove(&self, _nodegroup: &NodeGroup) -> bool {
        true
    }

    /// Never on the control plane: the cluster-autoscaler cannot scale a
    /// KubeadmControlPlane.
    fn supports_autoscaling(&self, nodegroup: &NodeGroup) -> bool {
        !nodegroup.is_master()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base_driver_refuses_master_resize() {
        assert!(matches!(
            BaseCapabilities.validate_master_resize(3),
            Err(ApiError::MasterNgResizeNotSupported)
        ));
    }

    #[test]
    fn cluster_api_allows_odd_master_sizes_only() {
        assert!(ClusterApiCapabilities.validate_master_resize(3).is_ok());
        assert!(ClusterApiCapabilities.validate_master_resize(1).is_ok());
        for n in [0, 2, 4, -1] {
            assert!(matches!(
                ClusterApiCapabilities.validate_master_resize(n),
                Err(ApiError::MasterNgSizeInvalid(m)) if m == n
            ));
        }
    }

    #[test]
    fn control_plane_never_autoscales() {
        let master = NodeGroup {
            role: Some("master".into()),
            ..NodeGroup::default()
        };
        let worker = NodeGroup {
            role: Some("worker".into()),
            ..NodeGroup::default()
        };
        assert!(!ClusterApiCapabilities.supports_autoscaling(&master));
        assert!(ClusterApiCapabilities.supports_autoscaling(&worker));
    }
}
