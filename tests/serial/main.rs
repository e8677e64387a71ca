//! Suites that must not overlap others of their kind. Each test takes one of two locks
//! first, so the tests of a kind run one at a time, and the two kinds side by side
//! (`scripts/test.sh` gives this binary a thread per test, so neither kind waits for a
//! thread while a test of the other holds one):
//!
//! - [`controllers`]: `capi_e2e`, on the real Cluster API controllers (`scripts/capi.sh`);
//!   the tests share them, and some stop a provider or restart the kube-apiserver. They
//!   spend most of their time waiting on the controllers (bounded waits, minutes of
//!   margin), with one core mostly idle;
//! - [`load`]: `soak` (16 clients, two SIGKILLs of the server, 60–120 s, all the CPU it
//!   gets) and `watch_at_rest` (counts magnum-rs's requests in the audit log of its own
//!   kube-apiserver, `scripts/kube.sh`, and the reconciler's passes while 200 clusters sit
//!   idle). Neither touches the controllers' kube-apiserver.
//!
//! One module per former `tests/*.rs` file; by hand:
//! `cargo test --test serial soak::`. See docs/testing.md.

#[path = "../common/mod.rs"]
mod common;

mod capi_e2e;
mod soak;
mod watch_at_rest;

use tokio::sync::{Mutex, MutexGuard};

// Tokio mutexes, so that async tests may hold them across `.await`; they are not poisoned
// when a test fails while holding one.
static CONTROLLERS: Mutex<()> = Mutex::const_new(());
static LOAD: Mutex<()> = Mutex::const_new(());

/// Waits for the turn of a test on the Cluster API controllers (never call it inside a
/// runtime).
pub fn controllers() -> MutexGuard<'static, ()> {
    CONTROLLERS.blocking_lock()
}

/// Waits for the turn of a synchronous load test (never call it inside a runtime).
pub fn load() -> MutexGuard<'static, ()> {
    LOAD.blocking_lock()
}

/// Waits for the turn of an async load test.
pub async fn load_async() -> MutexGuard<'static, ()> {
    LOAD.lock().await
}
