//! Keystone application credentials, as magnum-cluster-api gives one to each cluster's
//! Cluster API provider: made by the cluster's user with their own token (name the cluster
//! uuid, description `Magnum cluster (<uuid>)`, the token's roles, restricted), found by
//! name, deleted once the Cluster API cluster is gone.

use serde::Deserialize;
use serde_json::json;

use super::lookups::LookupError;
use super::session::{CallError, Service, Session};
use crate::secret::Secret;

/// A credential as made: its secret is shown by Keystone this once.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MadeCredential {
    pub id: String,
    pub secret: Secret,
}

#[derive(Deserialize)]
struct Listed {
    id: String,
    #[serde(default)]
    name: String,
}

/// Keystone's v3 paths under the catalog's identity endpoint (listed with or without
/// `/v3`).
async fn v3(s: &Session<'_>) -> Result<String, CallError> {
    let base = s.endpoint(Service::Identity)?;
    Ok(if base.ends_with("/v3") {
        String::new()
    } else {
        "/v3".into()
    })
}

/// The description magnum-cluster-api gives a cluster's credential.
pub fn description(cluster_uuid: &str) -> String {
    format!("Magnum cluster ({cluster_uuid})")
}

/// Makes credential `name` for `user_id` (the session must be that user's).
pub async fn create(
    s: &Session<'_>,
    user_id: &str,
    name: &str,
    description: &str,
) -> Result<MadeCredential, LookupError> {
    let prefix = v3(s).await?;
    let body = json!({"application_credential": {"name": name, "description": description}});
    let made = s
        .post(
            Service::Identity,
            &format!("{prefix}/users/{user_id}/application_credentials"),
            &[],
            &body,
        )
        .await?;
    let c = &made["application_credential"];
    match (c["id"].as_str(), c["secret"].as_str()) {
        (Some(id), Some(secret)) => Ok(MadeCredential {
            id: id.to_string(),
            secret: Secret::new(secret),
        }),
        _ => Err(LookupError::Unavailable(
            "keystone answered a credential without id or secret".into(),
        )),
    }
}

/// The id of `user_id`'s credential `name`, if there is one.
pub async fn find(
    s: &Session<'_>,
    user_id: &str,
    name: &str,
) -> Result<Option<String>, LookupError> {
    let prefix = v3(s).await?;
    let body = s
        .get(
            Service::Identity,
            &format!("{prefix}/users/{user_id}/application_credentials"),
            &[("name", name)],
            &[],
        )
        .await?;
    let listed: Vec<Listed> = serde_json::from_value(
        body.get("application_credentials")
            .cloned()
            .unwrap_or_default(),
    )
    .map_err(|e| LookupError::Unavailable(format!("cannot read the credentials: {e}")))?;
    Ok(listed.into_iter().find(|c| c.name == name).map(|c| c.id))
}

/// Deletes `user_id`'s credential `name`, if there is one (done when it is gone already).
pub async fn delete(s: &Session<'_>, user_id: &str, name: &str) -> Result<(), LookupError> {
    let Some(id) = find(s, user_id, name).await? else {
        return Ok(());
    };
    let prefix = v3(s).await?;
    match s
        .delete(
            Service::Identity,
            &format!("{prefix}/users/{user_id}/application_credentials/{id}"),
            &[],
        )
        .await
    {
        Ok(()) | Err(CallError::NotFound) => Ok(()),
        Err(e) => Err(e.into()),
    }
}
