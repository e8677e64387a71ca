//! The cloud outside a request: what the conductor and the drivers call it with. The
//! requesting user's token is gone by then, so calls act as magnum-rs's service user
//! ([`ServiceIdentity`], Magnum's `[keystone_authtoken]` user) or as a cluster's application
//! credential (magnum-cluster-api's `clouds.yaml`), both on the endpoints of the catalog
//! Keystone issues with their token.

use std::sync::Arc;

use async_trait::async_trait;
use serde_json::json;

use super::caller::Caller;
use super::session::{CallError, Cloud, Service};
use crate::secret::Secret;

/// Who magnum-rs is in Keystone: its own token and catalog, renewed when close to expiry.
#[async_trait]
pub trait ServiceIdentity: Send + Sync {
    async fn service_caller(&self) -> Result<Caller, CallError>;
}

/// The HTTP side and the service identity, shared by the conductor and the drivers.
#[derive(Clone)]
pub struct CloudAccess {
    pub cloud: Cloud,
    service: Arc<dyn ServiceIdentity>,
}

impl std::fmt::Debug for CloudAccess {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CloudAccess").finish_non_exhaustive()
    }
}

impl CloudAccess {
    pub fn new(cloud: Cloud, service: Arc<dyn ServiceIdentity>) -> CloudAccess {
        CloudAccess { cloud, service }
    }

    /// Calls as magnum-rs's service user.
    pub async fn as_service(&self) -> Result<Caller, CallError> {
        self.service.service_caller().await
    }

    /// Keystone's URL in the service user's catalog, for the configured interface and
    /// region (what magnum-cluster-api writes as `auth_url`).
    pub async fn identity_url(&self) -> Result<String, CallError> {
        let service = self.as_service().await?;
        service.session(&self.cloud).endpoint(Service::Identity)
    }

    /// Calls as `user_token` (a user's token kept for a step that outlives the request), on
    /// the service user's catalog: the endpoints are the cloud's, whoever asks.
    pub async fn as_token(&self, user_token: Secret) -> Result<Caller, CallError> {
        let service = self.as_service().await?;
        Ok(Caller {
            token: user_token,
            catalog: service.catalog,
            expires_at: None,
        })
    }

    /// Calls as the application credential `id` (Keystone's `application_credential`
    /// method): the credential's own token and catalog.
    pub async fn as_credential(&self, id: &str, secret: &Secret) -> Result<Caller, CallError> {
        let identity = v3(&self.identity_url().await?);
        let auth = json!({"identity": {
            "methods": ["application_credential"],
            "application_credential": {"id": id, "secret": secret.expose()},
        }});
        let issued = self.cloud.issue_token(&identity, &auth).await?;
        Ok(Caller {
            token: issued.token,
            catalog: Arc::new(issued.catalog),
            expires_at: issued.expires_at,
        })
    }
}

/// Keystone's v3 root from a catalog URL listed with or without `/v3`.
fn v3(url: &str) -> String {
    let url = url.trim_end_matches('/');
    if url.ends_with("/v3") {
        url.to_string()
    } else {
        format!("{url}/v3")
    }
}

#[cfg(test)]
mod tests {
    use super::v3;

    #[test]
    fn keystones_v3_root_from_either_catalog_form() {
        assert_eq!(v3("http://k:5000/v3/"), "http://k:5000/v3");
        assert_eq!(v3("http://k:5000"), "http://k:5000/v3");
        assert_eq!(v3("http://k/identity/v3"), "http://k/identity/v3");
    }
}
