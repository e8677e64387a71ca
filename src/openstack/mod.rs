//! The cloud behind Magnum: the OpenStack services Magnum's API and conductor talk to
//! (identity, compute, image, network, volume), found in the Keystone catalog as Magnum's
//! `clients.OpenStackClients` finds them: the catalog a token carries and the endpoint it
//! gives for a service ([`catalog`]), bounded calls made with a token ([`session`]), sent once more when a kept-alive
//! connection was closed under them ([`stale_connection`]), and
//! the look-ups Magnum makes with them ([`lookups`]).

pub mod application_credentials;
pub mod caller;
pub mod catalog;
pub mod cloud_access;
pub mod config;
pub mod floating_ips;
pub mod lookups;
pub mod server_groups;
pub mod session;
pub mod stale_connection;

pub use caller::Caller;
pub use catalog::{EndpointChoice, Interface, ServiceCatalog};
pub use cloud_access::{CloudAccess, ServiceIdentity};
pub use config::OpenStackConfig;
pub use session::{CallError, Cloud, Service, Session};
