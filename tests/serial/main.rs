//! Suites that need the machine to themselves: the real Cluster API controllers
//! (`capi_e2e`), the load test (`soak`) and the audit-log request count (`watch_at_rest`).
//!
//! One module per former `tests/*.rs` file; by hand: `cargo test --test serial soak::`.
//! See docs/testing.md.

#[path = "../common/mod.rs"]
mod common;

mod capi_e2e;
mod soak;
mod watch_at_rest;
