//! The application state handed to every handler: cheap to clone.

use std::ops::Deref;
use std::sync::Arc;

use crate::auth::keystone::KeystoneAuth;
use crate::config::Config;
use crate::drivers::DriverRegistry;
use crate::openstack::{Cloud, CloudAccess};
use crate::operations::conductor::ConductorParts;
use crate::operations::{Conductor, OperationsHandle};
use crate::policy::Policy;
use crate::store::Store;

/// The API's state: the conductor's parts (config, store, drivers, the worker's handle, all
/// reached through `Deref`) and what only the API uses.
pub struct App {
    pub conductor: Conductor,
    pub policy: Policy,
    /// Token validation, in keystone auth mode.
    pub keystone: Option<Arc<KeystoneAuth>>,
    /// Calls to the services in a user's catalog (`[openstack]`), in keystone auth mode.
    pub cloud: Option<Cloud>,
}

impl Deref for App {
    type Target = ConductorParts;

    fn deref(&self) -> &ConductorParts {
        &self.conductor
    }
}

#[derive(Clone)]
pub struct AppState(pub Arc<App>);

impl Deref for AppState {
    type Target = App;

    fn deref(&self) -> &App {
        &self.0
    }
}

impl AppState {
    pub fn new(
        config: Config,
        store: Store,
        policy: Policy,
        drivers: DriverRegistry,
        operations: OperationsHandle,
    ) -> Self {
        AppState(Arc::new(App {
            conductor: Conductor::new(config, store, drivers, operations),
            policy,
            keystone: None,
            cloud: None,
        }))
    }

    /// The same state, validating Keystone tokens with `auth` and calling the cloud with
    /// `access` (the users' catalogs on requests, the service user's and the clusters'
    /// credentials in the conductor); only on a state not yet shared (right after
    /// [`AppState::new`]).
    pub fn with_keystone(
        mut self,
        auth: Arc<KeystoneAuth>,
        access: CloudAccess,
    ) -> anyhow::Result<Self> {
        let shared = || anyhow::anyhow!("the application state is already shared");
        let app = Arc::get_mut(&mut self.0).ok_or_else(shared)?;
        app.keystone = Some(auth);
        app.cloud = Some(access.cloud.clone());
        app.conductor.parts_mut().ok_or_else(shared)?.cloud = Some(access);
        Ok(self)
    }
}
