//! The driver registry, built once from configuration: names (the template's `driver`
//! field) and (server_type, os, coe) triples, as Magnum's `Driver.get_driver` resolves them.

use std::collections::HashMap;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use super::{Driver, Refusal};
use crate::model::SelectsDriver;

/// A (server_type, os, coe) triple a driver provides.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Triple {
    pub server_type: String,
    pub os: String,
    pub coe: String,
}

impl Triple {
    pub fn new(server_type: &str, os: &str, coe: &str) -> Self {
        Triple {
            server_type: server_type.into(),
            os: os.into(),
            coe: coe.into(),
        }
    }

    fn of(t: &impl SelectsDriver) -> Self {
        Triple {
            server_type: t.server_type().unwrap_or("vm").to_string(),
            os: t.cluster_distro().unwrap_or_default().to_string(),
            coe: t.coe().unwrap_or_default().to_string(),
        }
    }
}

#[derive(Default)]
pub struct DriverRegistry {
    by_name: HashMap<String, Arc<dyn Driver>>,
    by_triple: HashMap<Triple, Arc<dyn Driver>>,
    /// Every distinct driver, in registration order (for the workers).
    all: Vec<Arc<dyn Driver>>,
}

impl std::fmt::Debug for DriverRegistry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut names: Vec<&String> = self.by_name.keys().collect();
        names.sort();
        f.debug_struct("DriverRegistry")
            .field("names", &names)
            .finish()
    }
}

impl DriverRegistry {
    /// Registers a driver under extra names (aliases operators have in their templates) and
    /// the triples it provides. A later registration of a triple wins.
    pub fn register(&mut self, driver: Arc<dyn Driver>, aliases: &[String]) {
        self.by_name
            .insert(driver.name().to_string(), Arc::clone(&driver));
        for a in aliases {
            self.by_name.insert(a.clone(), Arc::clone(&driver));
        }
        for t in driver.provides() {
            self.by_triple.insert(t.clone(), Arc::clone(&driver));
        }
        self.all.push(driver);
    }

    pub fn drivers(&self) -> &[Arc<dyn Driver>] {
        &self.all
    }

    pub fn by_name(&self, name: &str) -> Option<Arc<dyn Driver>> {
        self.by_name.get(name).cloned()
    }

    /// `Driver.get_driver(server_type, os, coe)` without a name (cluster create's
    /// master-size check uses this form).
    pub fn for_triple(&self, t: &impl SelectsDriver) -> Result<Arc<dyn Driver>, Refusal> {
        let triple = Triple::of(t);
        self.by_triple
            .get(&triple)
            .cloned()
            .ok_or(Refusal::ClusterTypeNotSupported {
                server_type: triple.server_type,
                os: triple.os,
                coe: triple.coe,
            })
    }

    /// The driver a new template gets (`enforce_driver_supported`): the named one, else the
    /// one providing its triple, else the configured default.
    pub fn for_new_template(
        &self,
        t: &impl SelectsDriver,
        default_driver: Option<&str>,
    ) -> Result<Arc<dyn Driver>, Refusal> {
        if t.driver_name().is_some_and(|d| !d.is_empty()) {
            return self.for_template(t);
        }
        match (self.for_triple(t), default_driver) {
            (Ok(d), _) => Ok(d),
            (Err(_), Some(name)) if t.cluster_distro().is_none() => self
                .by_name(name)
                .ok_or_else(|| Refusal::DriverNotSupported(name.to_string())),
            (Err(e), _) => Err(e),
        }
    }

    /// Which driver runs a cluster of this template (`Driver.get_driver_for_cluster`): the
    /// template's `driver` name if set, else the triple. The one answer: a stored cluster
    /// reaches it through `ConductorParts::driver_of` (its template's selector, from the
    /// store), a cluster being created through the template its request names.
    pub fn for_template(&self, t: &impl SelectsDriver) -> Result<Arc<dyn Driver>, Refusal> {
        match t.driver_name().filter(|d| !d.is_empty()) {
            Some(name) => self
                .by_name(name)
                .ok_or_else(|| Refusal::DriverNotSupported(name.to_string())),
            None => self.for_triple(t),
        }
    }
}
