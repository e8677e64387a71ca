//! Who a request's calls to the cloud act as: the requesting user's token and the catalog
//! Keystone returned with it, as keystonemiddleware hands both to Magnum
//! (`X-Auth-Token`, `X-Service-Catalog`). Only requests authenticated by Keystone have one.

use std::sync::Arc;

use super::catalog::ServiceCatalog;
use super::session::{Cloud, Session};
use crate::secret::Secret;

#[derive(Clone, Debug)]
pub struct Caller {
    pub token: Secret,
    pub catalog: Arc<ServiceCatalog>,
    /// When the token expires, where Keystone said.
    pub expires_at: Option<chrono::DateTime<chrono::Utc>>,
}

impl Caller {
    /// Calls to the cloud as this user.
    pub fn session<'a>(&self, cloud: &'a Cloud) -> Session<'a> {
        cloud.session(self.token.clone(), self.catalog.clone())
    }
}
