//! End to end against the real components `scripts/test.sh` starts (each test is
//! `#[ignore = "needs scripts/test.sh"]`): the `openstack` CLI, Keystone, the real Magnum 23
//! API on a database made by its migrations, and a kube-apiserver with the Cluster API CRDs
//! (no controllers). Every module works in its own database, kube namespace or Keystone
//! turn, and the modules that share something take turns through their own locks
//! (`keystone_auth`: the catalog's fixed port; `magnum_database_admin`: server start-ups on
//! the reference database), so the modules can run side by side.
//!
//! One module per former `tests/*.rs` file (`e2e_cli` is `cli`, `e2e_cli_admin` is
//! `cli_admin`); by hand: `cargo test --test e2e keystone_auth:: -- --include-ignored`.
//! See docs/testing.md.

#[path = "../common/mod.rs"]
mod common;

mod capi_driver;
mod cli;
mod cli_admin;
mod cloud_credential;
mod cloud_validation;
mod deploy_rbac;
mod keystone_auth;
mod lease;
mod magnum_database_admin;
mod mcapi_addons;
mod mcapi_adoption;
mod mcapi_capo;
mod mcapi_differential;
mod openstack_lookups;
