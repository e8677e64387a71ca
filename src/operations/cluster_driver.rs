//! Which driver runs a cluster: what of its template chooses a driver, read from the store,
//! and the registry's answer ([`DriverRegistry::for_template`](crate::drivers::DriverRegistry::for_template)).
//! Handlers and the worker alike ask here, so a cluster's driver is chosen one way
//! everywhere (Magnum's `Driver.get_driver_for_cluster`).

use std::sync::Arc;

use super::conductor::ConductorParts;
use crate::drivers::{Driver, Refusal};
use crate::model::{Cluster, ClusterTemplate};

/// Why a cluster has no driver. Each caller answers it in its own terms: the API as
/// Magnum's errors, the worker as the reason an operation fails, the reconciler by leaving
/// the cluster alone.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum NoDriver {
    /// The cluster's template is gone, or it names none (then the id is empty).
    #[error("ClusterTemplate {0} could not be found.")]
    TemplateGone(String),
    /// The template chooses a driver this service does not have.
    #[error(transparent)]
    Unsupported(Refusal),
}

impl ConductorParts {
    /// The driver that runs `cluster`. The outer error is the store's; the inner one says
    /// why there is no driver.
    pub async fn driver_of(
        &self,
        cluster: &Cluster,
    ) -> Result<Result<Arc<dyn Driver>, NoDriver>, sqlx::Error> {
        let template_id = cluster.cluster_template_id.as_deref().unwrap_or_default();
        let selector = match &cluster.cluster_template_id {
            Some(id) => self.store.template_for_driver(id).await?,
            None => None,
        };
        let Some(selector) = selector else {
            return Ok(Err(NoDriver::TemplateGone(template_id.to_string())));
        };
        Ok(self
            .drivers
            .for_template(&selector)
            .map_err(NoDriver::Unsupported))
    }

    /// [`ConductorParts::driver_of`] with the whole template read once (a cluster create
    /// hands it to the driver), the driver chosen from it the same way.
    pub async fn driver_and_template_of(
        &self,
        cluster: &Cluster,
    ) -> Result<Result<(Arc<dyn Driver>, ClusterTemplate), NoDriver>, sqlx::Error> {
        let template_id = cluster.cluster_template_id.as_deref().unwrap_or_default();
        let template = match &cluster.cluster_template_id {
            Some(id) => self.store.template_by_uuid(id).await?,
            None => None,
        };
        let Some(template) = template else {
            return Ok(Err(NoDriver::TemplateGone(template_id.to_string())));
        };
        Ok(match self.drivers.for_template(&template) {
            Ok(d) => Ok((d, template)),
            Err(r) => Err(NoDriver::Unsupported(r)),
        })
    }
}
