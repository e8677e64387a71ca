//! The durable hand-off between the API and the drivers (Magnum's conductor role).
//!
//! Handlers record an operation in the same transaction as the state change it belongs to
//! and kick the worker ([`worker`]). The worker claims pending operations in id order and
//! gives each to the cluster's driver ([`dispatch`]). What the driver finishes at once ends
//! there; what it only starts (Cluster API scaling, an upgrade rolling out, a delete) becomes
//! **waiting**, with what it waits for, its deadline and its last progress in the operation's
//! row. The drivers' controllers hand each backend cluster that changed to [`reconcile`],
//! which ends waiting operations from the driver's view of the backend, level-triggered: on
//! every observed change, after a relist that found a change, on start and on each leader
//! change, and at each stored deadline. Nothing it needs lives only in a process, so
//! a restart or a new leader ends an operation the same way. Outcomes ([`outcome`]) are
//! written in one transaction each: `*_COMPLETE`, or `*_FAILED` with the reason (a failed
//! resize also restores the previous `node_count`, as Magnum does).
//!
//! Operations a dead process had claimed (running) are requeued at start-up; drivers apply
//! desired state and send nothing when it is already applied, so a repeated call has the
//! effect of one. Of several pending resizes of one nodegroup only the newest runs, and a
//! newer resize supersedes a waiting one.
//!
//! Work another conductor began on this database (a cluster `*_IN_PROGRESS` that nothing of
//! ours follows) is adopted as waiting operations each time the conductor role starts
//! ([`adoption`]).

pub mod adoption;
pub mod certificates;
pub mod cluster_driver;
pub mod conductor;
pub mod credentials;
pub mod dispatch;
pub mod handle;
pub mod outcome;
pub mod reconcile;
mod reports;
pub mod role;
pub mod transitions;
pub mod worker;

pub use cluster_driver::NoDriver;
pub use conductor::Conductor;
pub use handle::{OperationsConfig, OperationsHandle};
pub use reconcile::start_controllers;
pub use worker::{run_pending, run_worker};
