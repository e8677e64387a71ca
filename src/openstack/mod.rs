//! The cloud behind Magnum: the OpenStack services Magnum's API and conductor talk to
//! (identity, compute, image, network, volume), found in the Keystone catalog as Magnum's
//! `clients.OpenStackClients` finds them. No I/O in this part yet: the catalog a token
//! carries and the endpoint it gives for a service.

pub mod catalog;

pub use catalog::{EndpointChoice, Interface, ServiceCatalog};
