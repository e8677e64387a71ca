//! What the conductor role works with: the store, the drivers, the configuration and the
//! worker's wake-up handle. Not the policy, nor Keystone: those belong to the API.

use std::ops::Deref;
use std::sync::Arc;

use super::handle::OperationsHandle;
use crate::config::Config;
use crate::drivers::DriverRegistry;
use crate::openstack::CloudAccess;
use crate::store::Store;

pub struct ConductorParts {
    pub config: Config,
    pub store: Store,
    pub drivers: DriverRegistry,
    pub operations: OperationsHandle,
    /// The cloud as the service user and as clusters' credentials (keystone auth mode).
    pub cloud: Option<CloudAccess>,
}

/// Cheap to clone; shared by the API (which records operations and kicks the worker) and
/// the worker, watchers and reconciler.
#[derive(Clone)]
pub struct Conductor(Arc<ConductorParts>);

impl Conductor {
    pub fn new(
        config: Config,
        store: Store,
        drivers: DriverRegistry,
        operations: OperationsHandle,
    ) -> Conductor {
        Conductor(Arc::new(ConductorParts {
            config,
            store,
            drivers,
            operations,
            cloud: None,
        }))
    }

    /// The parts, while nothing else holds them (right after [`Conductor::new`]).
    pub fn parts_mut(&mut self) -> Option<&mut ConductorParts> {
        Arc::get_mut(&mut self.0)
    }
}

impl Deref for Conductor {
    type Target = ConductorParts;

    fn deref(&self) -> &ConductorParts {
        &self.0
    }
}
