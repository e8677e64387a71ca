//! Nova server groups, as magnum-cluster-api keeps one per cluster (named after the Cluster
//! API cluster, for the control plane) and one per worker nodegroup (`<stack>-<nodegroup>`):
//! found by name, made when missing, deleted with the cluster or the nodegroup.

use serde::Deserialize;
use serde_json::json;

use super::lookups::LookupError;
use super::session::{CallError, Service, Session};

/// The policies Nova accepts; a label naming others is ignored, as in magnum-cluster-api.
pub const POLICIES: [&str; 4] = [
    "affinity",
    "anti-affinity",
    "soft-affinity",
    "soft-anti-affinity",
];

/// What a cluster or nodegroup gets when its `server_group_policies` label names none.
pub const DEFAULT_POLICY: &str = "soft-anti-affinity";

/// The soft policies need compute microversion 2.15; up to 2.63 a group has `policies`.
const MICROVERSION: (&str, &str) = ("OpenStack-API-Version", "compute 2.15");

#[derive(Clone, Debug, Default, Deserialize, PartialEq, Eq)]
pub struct ServerGroup {
    pub id: String,
    #[serde(default)]
    pub name: String,
    #[serde(default)]
    pub policies: Vec<String>,
    #[serde(default)]
    pub project_id: Option<String>,
}

/// The policies a `server_group_policies` label asks for (comma separated, unknown ones
/// dropped), else the default.
pub fn policies_of_label(label: Option<&str>) -> Vec<String> {
    named_policies(label).unwrap_or_else(|| vec![DEFAULT_POLICY.to_string()])
}

/// The known policies a `server_group_policies` label names; `None` when it names none.
pub fn named_policies(label: Option<&str>) -> Option<Vec<String>> {
    let named: Vec<String> = label
        .unwrap_or_default()
        .split(',')
        .filter(|p| POLICIES.contains(p))
        .map(str::to_string)
        .collect();
    Some(named).filter(|n| !n.is_empty())
}

/// The groups of `project` the caller sees (every project's are listed when the caller is
/// an admin acting for another project).
pub async fn list(
    s: &Session<'_>,
    project: Option<&str>,
    all_projects: bool,
) -> Result<Vec<ServerGroup>, LookupError> {
    let query: &[(&str, &str)] = if all_projects {
        &[("all_projects", "True")]
    } else {
        &[]
    };
    let body = s
        .get(
            Service::Compute,
            "/os-server-groups",
            query,
            &[MICROVERSION],
        )
        .await?;
    let groups: Vec<ServerGroup> =
        serde_json::from_value(body.get("server_groups").cloned().unwrap_or_default())
            .map_err(|e| LookupError::Unavailable(format!("cannot read the server groups: {e}")))?;
    Ok(groups
        .into_iter()
        .filter(|g| project.is_none_or(|p| g.project_id.as_deref().is_none_or(|q| q == p)))
        .collect())
}

/// The group named `name` in `project` ([`list`]); `Duplicate` when several have the name.
pub async fn find(
    s: &Session<'_>,
    name: &str,
    project: Option<&str>,
    all_projects: bool,
) -> Result<Option<ServerGroup>, LookupError> {
    let groups = list(s, project, all_projects).await?;
    let mut found = groups.into_iter().filter(|g| g.name == name);
    match (found.next(), found.next()) {
        (None, _) => Ok(None),
        (Some(one), None) => Ok(Some(one)),
        (Some(_), Some(_)) => Err(LookupError::Duplicate),
    }
}

/// The group named `name`: the one that exists, else a new one with `policies`.
pub async fn ensure(
    s: &Session<'_>,
    name: &str,
    project: Option<&str>,
    policies: &[String],
) -> Result<ServerGroup, LookupError> {
    if let Some(g) = find(s, name, project, false).await? {
        return Ok(g);
    }
    let body = json!({"server_group": {"name": name, "policies": policies}});
    let made = s
        .post(
            Service::Compute,
            "/os-server-groups",
            &[MICROVERSION],
            &body,
        )
        .await?;
    serde_json::from_value(made.get("server_group").cloned().unwrap_or_default())
        .map_err(|e| LookupError::Unavailable(format!("cannot read the new server group: {e}")))
}

/// Deletes the group named `name`, if there is one (done when it is gone already).
pub async fn delete(
    s: &Session<'_>,
    name: &str,
    project: Option<&str>,
    all_projects: bool,
) -> Result<(), LookupError> {
    match find(s, name, project, all_projects).await? {
        Some(g) => delete_id(s, &g.id).await,
        None => Ok(()),
    }
}

/// Deletes the group `id` (done when it is gone already).
pub async fn delete_id(s: &Session<'_>, id: &str) -> Result<(), LookupError> {
    match s
        .delete(
            Service::Compute,
            &format!("/os-server-groups/{id}"),
            &[MICROVERSION],
        )
        .await
    {
        Ok(()) | Err(CallError::NotFound) => Ok(()),
        Err(e) => Err(e.into()),
    }
}
