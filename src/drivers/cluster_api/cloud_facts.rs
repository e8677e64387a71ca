//! What magnum-cluster-api looks up in the cloud for a cluster's variables and worker
//! entries ([`super::mcapi`]'s facts), made the way it makes them: flavor names from a name
//! or an id, the master nodegroup's image id and `hw_disk_bus`, network and subnet ids (an
//! id passes through unlooked, as `magnum.common.neutron` lets it), Cinder's default type.

use super::mcapi::machine_deployment::{FlavorFacts, NodeGroupFacts};
use super::mcapi::variables::{Facts, Settings};
use crate::model::{Cluster, ClusterTemplate, NodeGroup};
use crate::openstack::lookups::{self, LookupError};
use crate::openstack::Session;

/// oslo.utils' `is_uuid_like`: what `magnum.common.neutron` passes through as an id.
fn is_uuid_like(v: &str) -> bool {
    uuid::Uuid::parse_str(v).is_ok()
}

/// A network named by the template or cluster: its id (none: empty).
async fn network_id(
    s: &Session<'_>,
    ident: Option<&str>,
    external: bool,
) -> Result<String, LookupError> {
    match ident.filter(|i| !i.is_empty()) {
        None => Ok(String::new()),
        Some(id) if is_uuid_like(id) => Ok(id.to_string()),
        Some(name) if external => Ok(lookups::find_external_network(s, name).await?.id),
        Some(name) => Ok(lookups::find_network(s, name).await?.id),
    }
}

async fn subnet_id(s: &Session<'_>, ident: Option<&str>) -> Result<String, LookupError> {
    match ident.filter(|i| !i.is_empty()) {
        None => Ok(String::new()),
        Some(id) if is_uuid_like(id) => Ok(id.to_string()),
        Some(name) => Ok(lookups::find_subnet(s, name).await?.id),
    }
}

async fn flavor(s: &Session<'_>, ident: Option<&str>) -> Result<lookups::Flavor, LookupError> {
    lookups::find_flavor(s, ident.unwrap_or_default()).await
}

/// The cluster's facts: `master` is its master nodegroup (its image is the cluster's), and
/// `server_group_id` the control plane's group.
pub async fn cluster_facts(
    s: &Session<'_>,
    cluster: &Cluster,
    template: &ClusterTemplate,
    master: &NodeGroup,
    server_group_id: String,
) -> Result<Facts, LookupError> {
    let image = lookups::find_image(s, master.image_id.as_deref().unwrap_or_default()).await?;
    Ok(Facts {
        control_plane_flavor: flavor(s, cluster.master_flavor_id.as_deref()).await?.name,
        worker_flavor: flavor(s, cluster.flavor_id.as_deref()).await?.name,
        image_id: image.id,
        hw_disk_bus: image.hw_disk_bus,
        external_network_id: network_id(s, template.external_network_id.as_deref(), true).await?,
        fixed_network_id: network_id(s, cluster.fixed_network.as_deref(), false).await?,
        fixed_subnet_id: subnet_id(s, cluster.fixed_subnet.as_deref()).await?,
        default_volume_type: lookups::default_volume_type(s).await?,
        server_group_id,
        existing: Default::default(),
    })
}

/// A worker nodegroup's facts, with the cluster's `settings` and Cinder's default type.
pub async fn nodegroup_facts(
    s: &Session<'_>,
    nodegroup: &NodeGroup,
    server_group_id: String,
    settings: &Settings,
    default_volume_type: &str,
) -> Result<NodeGroupFacts, LookupError> {
    let f = flavor(s, nodegroup.flavor_id.as_deref()).await?;
    let image = lookups::find_image(s, nodegroup.image_id.as_deref().unwrap_or_default()).await?;
    Ok(NodeGroupFacts {
        flavor: FlavorFacts {
            name: f.name,
            ram: f.ram,
            vcpus: f.vcpus,
            disk: f.disk,
        },
        image_id: image.id,
        hw_disk_bus: image.hw_disk_bus,
        server_group_id,
        default_boot_volume_type: settings
            .default_boot_volume_type
            .clone()
            .unwrap_or_else(|| default_volume_type.to_string()),
        default_boot_volume_size: settings.default_boot_volume_size,
    })
}

#[cfg(test)]
mod tests {
    use super::is_uuid_like;

    #[test]
    fn ids_are_what_oslo_takes_for_uuids() {
        assert!(is_uuid_like("0c8d7f3e-2b1a-4c5d-8e9f-a1b2c3d4e5f6"));
        assert!(is_uuid_like("0c8d7f3e2b1a4c5d8e9fa1b2c3d4e5f6"));
        assert!(!is_uuid_like("public"));
        assert!(!is_uuid_like(""));
    }
}
