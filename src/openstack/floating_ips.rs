//! Neutron floating IPs CAPO made for a cluster and leaves behind: the API server's address
//! of a cluster without a load balancer. CAPO v0.14.7 deletes it only with the
//! control-plane machine it was attached to ("we leak it if the instance was previously
//! deleted", its own comment in `openstackmachine_controller.go`), so a cluster whose
//! machines never came up, or were deleted first, keeps it.

use serde::Deserialize;

use super::lookups::LookupError;
use super::session::{CallError, Service, Session};

#[derive(Clone, Debug, Default, Deserialize, PartialEq, Eq)]
pub struct FloatingIp {
    pub id: String,
    #[serde(default)]
    pub floating_ip_address: String,
    #[serde(default)]
    pub description: String,
    #[serde(default)]
    pub project_id: Option<String>,
}

/// The description CAPO gives what it makes for the Cluster `name` in `namespace`
/// (`names.GetDescription(ClusterResourceName)`).
pub fn capo_description(namespace: &str, name: &str) -> String {
    format!("Created by cluster-api-provider-openstack cluster {namespace}-{name}")
}

/// The floating IPs of `project` whose description is exactly `description`.
pub async fn described(
    s: &Session<'_>,
    project: Option<&str>,
    description: &str,
) -> Result<Vec<FloatingIp>, LookupError> {
    let mut query = vec![("description", description)];
    if let Some(p) = project {
        query.push(("project_id", p));
    }
    let body = s
        .get(Service::Network, "/v2.0/floatingips", &query, &[])
        .await?;
    let ips: Vec<FloatingIp> =
        serde_json::from_value(body.get("floatingips").cloned().unwrap_or_default())
            .map_err(|e| LookupError::Unavailable(format!("cannot read the floating IPs: {e}")))?;
    // Neutron filters; the same filter again, for one that ignores a filter it does not know.
    Ok(ips
        .into_iter()
        .filter(|ip| ip.description == description)
        .filter(|ip| project.is_none_or(|p| ip.project_id.as_deref() == Some(p)))
        .collect())
}

/// Deletes the floating IP `id` (done when it is gone already).
pub async fn delete_id(s: &Session<'_>, id: &str) -> Result<(), LookupError> {
    match s
        .delete(Service::Network, &format!("/v2.0/floatingips/{id}"), &[])
        .await
    {
        Ok(()) | Err(CallError::NotFound) => Ok(()),
        Err(e) => Err(e.into()),
    }
}

#[cfg(test)]
mod tests {
    use super::capo_description;

    #[test]
    fn capos_description_names_the_namespace_and_the_cluster() {
        assert_eq!(
            capo_description("magnum-system", "kube-tmjb7"),
            "Created by cluster-api-provider-openstack cluster magnum-system-kube-tmjb7"
        );
    }
}
