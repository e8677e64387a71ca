//! The API and store suites: the real router driven in-process with `oneshot` on a fresh
//! database per test (SQLite, or MariaDB when `MAGNUM_RS_TEST_MYSQL_URL` is set), and the
//! short checks of the real binary that need nothing but that database (`migrate`,
//! `policy-sample`, the operator endpoints, the killed-process durability, the service
//! report). One binary, so the crate is linked once for all of them; its tests run
//! concurrently, which none of them minds: each has its own database, temp dir and port.
//! The one ignored test (`ops_endpoints::readyz_turns_unready_while_the_database_is_down`)
//! stops and starts a dedicated MariaDB server that no other test uses.
//!
//! One module per former `tests/*.rs` file (the `api_` prefix dropped); by hand:
//! `cargo test --test api clusters::`. See docs/testing.md.

#[path = "../common/mod.rs"]
mod common;

mod adoption;
mod api_ref;
mod certificates;
mod cluster_actions;
mod cluster_actions_durability;
mod cluster_templates;
mod clusters;
mod delete_clean_up;
mod federations;
mod fuzz_inputs;
mod input_bounds;
mod magnum23_findings;
mod migrate;
mod mservices;
mod nodegroups;
mod ops_endpoints;
mod policy_override;
mod policy_sample;
mod quotas;
mod races;
mod retries;
mod rollback;
mod stats;
mod store_pool;
mod versions;
mod x509keypairs;
