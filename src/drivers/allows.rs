//! What a driver allows: the questions the API asks a driver synchronously, before anything
//! is stored, with Magnum's base-driver answers as defaults
//! (`magnum/drivers/common/driver.py`).

use super::Refusal;
use crate::model::{ClusterTemplate, NodeGroup};

pub trait Allows: Send + Sync {
    /// Cluster create (`enforce_cluster_master_size_supported`): odd sizes ≥ 1.
    fn validate_master_size(&self, node_count: i64) -> Result<(), Refusal> {
        odd_master_size(node_count)
    }

    /// Resize of a master nodegroup. Magnum's base driver refuses it outright.
    fn validate_master_resize(&self, _node_count: i64) -> Result<(), Refusal> {
        Err(Refusal::MasterResizeNotSupported)
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

    /// An upgrade of a cluster on template `from` to template `to`. Magnum lets any
    /// through.
    fn validate_upgrade(
        &self,
        _from: &ClusterTemplate,
        _to: &ClusterTemplate,
    ) -> Result<(), Refusal> {
        Ok(())
    }
}

/// `Driver.validate_master_size` of Magnum's base class: odd sizes ≥ 1.
pub fn odd_master_size(node_count: i64) -> Result<(), Refusal> {
    if node_count % 2 == 0 || node_count < 1 {
        return Err(Refusal::MasterSizeInvalid(node_count));
    }
    Ok(())
}

/// What Magnum's base driver allows: no master resize, odd master sizes at create.
#[derive(Clone, Copy, Debug, Default)]
pub struct BaseDriverAllows;

impl Allows for BaseDriverAllows {}

/// What magnum-cluster-api and magnum-capi-helm allow: master resize to odd sizes ≥ 1
/// (etcd quorum), `nodes_to_remove` for workers and the control plane alike.
#[derive(Clone, Copy, Debug, Default)]
pub struct ClusterApiAllows;

impl Allows for ClusterApiAllows {
    fn validate_master_resize(&self, node_count: i64) -> Result<(), Refusal> {
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

    /// An upgrade changes the Kubernetes version and the image; what the template gives the
    /// cluster's infrastructure otherwise stays. A template that changes the external
    /// network (CAPO's OpenStackCluster holds it immutable: `TopologyReconciled` would fail
    /// after the upgrade was accepted) or the network driver (the CNI a ClusterResourceSet
    /// installed once) is refused before anything is written.
    fn validate_upgrade(
        &self,
        from: &ClusterTemplate,
        to: &ClusterTemplate,
    ) -> Result<(), Refusal> {
        let fields = [
            (
                "external_network_id",
                &from.external_network_id,
                &to.external_network_id,
                "Cluster API's OpenStackCluster holds the external network immutable",
            ),
            (
                "network_driver",
                &from.network_driver,
                &to.network_driver,
                "the cluster's network plugin is installed once, at create",
            ),
        ];
        for (field, old, new, why) in fields {
            if old != new {
                return Err(Refusal::UpgradeChangesImmutable {
                    field,
                    from: old.clone().unwrap_or_default(),
                    to: new.clone().unwrap_or_default(),
                    why,
                });
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base_driver_refuses_master_resize() {
        assert_eq!(
            BaseDriverAllows.validate_master_resize(3),
            Err(Refusal::MasterResizeNotSupported)
        );
    }

    #[test]
    fn cluster_api_allows_odd_master_sizes_only() {
        assert!(ClusterApiAllows.validate_master_resize(3).is_ok());
        assert!(ClusterApiAllows.validate_master_resize(1).is_ok());
        for n in [0, 2, 4, -1] {
            assert_eq!(
                ClusterApiAllows.validate_master_resize(n),
                Err(Refusal::MasterSizeInvalid(n))
            );
        }
    }

    #[test]
    fn an_upgrade_keeps_the_external_network_and_the_network_driver() {
        let from = ClusterTemplate {
            external_network_id: Some("public".into()),
            network_driver: Some("calico".into()),
            image_id: Some("ubuntu-2204-kube-v1.33".into()),
            ..ClusterTemplate::default()
        };
        let newer_image = ClusterTemplate {
            image_id: Some("ubuntu-2204-kube-v1.34".into()),
            ..from.clone()
        };
        assert_eq!(
            ClusterApiAllows.validate_upgrade(&from, &newer_image),
            Ok(())
        );
        let other_network = ClusterTemplate {
            external_network_id: Some("public2".into()),
            ..newer_image.clone()
        };
        let refused = ClusterApiAllows
            .validate_upgrade(&from, &other_network)
            .expect_err("refused");
        assert_eq!(
            refused.to_string(),
            "The cluster template's external_network_id cannot change on an upgrade \
             (\"public\" to \"public2\"): Cluster API's OpenStackCluster holds the external \
             network immutable"
        );
        let cilium = ClusterTemplate {
            network_driver: Some("cilium".into()),
            ..newer_image
        };
        assert!(matches!(
            ClusterApiAllows.validate_upgrade(&from, &cilium),
            Err(Refusal::UpgradeChangesImmutable {
                field: "network_driver",
                ..
            })
        ));
        assert_eq!(BaseDriverAllows.validate_upgrade(&from, &cilium), Ok(()));
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
        assert!(!ClusterApiAllows.supports_autoscaling(&master));
        assert!(ClusterApiAllows.supports_autoscaling(&worker));
    }
}
