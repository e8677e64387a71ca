//! Cluster drivers. A driver is four concerns, one trait each, and handlers never hold a
//! role-specific rule: they ask the cluster's driver.
//! - [`Allows`]: what a driver allows (master sizes and resize, `nodes_to_remove`,
//!   autoscaling), asked synchronously by the API before anything is stored;
//! - [`Lifecycle`]: what it does (create, delete, resize, upgrade, nodegroups), called by
//!   the operations worker with the desired state already persisted;
//! - [`Certificates`]: the cluster's CA and cloud credentials, on the request path;
//! - [`Background`]: its watches, its view of the backend the reconciler reads, leadership
//!   among replicas, readiness.
//!
//! On a request path a driver refuses with its own [`Refusal`], which the API maps to
//! Magnum's error once; a lifecycle call fails with a [`DriverError`], which becomes the
//! operation's `status_reason`. Which driver runs a cluster is the [`DriverRegistry`]'s
//! answer from the cluster's template.

pub mod allows;
pub mod background;
pub mod certificates;
pub mod cluster_api;
mod error;
pub mod lifecycle;
pub mod record_only;
pub mod refusal;
pub mod registry;
pub mod signing;

pub use allows::{Allows, BaseDriverAllows, ClusterApiAllows};
pub use background::{
    Background, Facts, InFlight, ManagementStatus, NodeGroupRef, ReconcileFailed, StackReconciler,
    Verdict,
};
pub use certificates::Certificates;
pub use error::{DriverError, Reason};
pub use lifecycle::{CreateGiven, CreateOutcome, Lifecycle, Progress, ResizeRequest, WaitOn};
pub use refusal::Refusal;
pub use registry::{DriverRegistry, Triple};

/// A cluster driver: a name, the (server_type, os, coe) triples it provides, and its four
/// concerns.
pub trait Driver: Allows + Lifecycle + Certificates + Background {
    fn name(&self) -> &str;
    fn provides(&self) -> &[Triple];
}
