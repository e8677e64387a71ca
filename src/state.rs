//! The application state handed to every handler: cheap to clone.

use std::ops::Deref;
use std::sync::Arc;

use crate::auth::keystone::KeystoneAuth;
use crate::config::Config;
use crate::drivers::DriverRegistry;
use crate::operations::OperationsHandle;
use crate::policy::Policy;
use crate::store::Store;

pub struct App {
    pub config: Config,
    pub store: Store,
    pub policy: Policy,
    pub drivers: DriverRegistry,
    pub operations: OperationsHandle,
    /// Token validation, in keystone auth mode.
    pub keystone: Option<Arc<KeystoneAuth>>,
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
            config,
            store,
            policy,
            drivers,
            operations,
            keystone: None,
        }))
    }

    /// The same state, validating Keystone tokens with `auth`; only on a state not yet
    /// shared (right after [`AppState::new`]).
    pub fn with_keystone(mut self, auth: KeystoneAuth) -> anyhow::Result<Self> {
        let app = Arc::get_mut(&mut self.0)
            .ok_or_else(|| anyhow::anyhow!("the application state is already shared"))?;
        app.keystone = Some(Arc::new(auth));
        Ok(self)
    }
}
