//! Suites that need the machine to themselves, one test at a time: every test takes
//! [`serial`] first.
//!
//! - `capi_e2e`: the real Cluster API controllers (`scripts/capi.sh`); some tests stop a
//!   provider or restart the kube-apiserver, SIGKILL magnum-rs, and wait with bounded
//!   timeouts on a loaded machine;
//! - `soak`: a load test (16 clients, two SIGKILLs of the server, 60–120 s);
//! - `watch_at_rest`: counts magnum-rs's requests in the kube-apiserver's audit log and the
//!   reconciler's passes, judging "nothing happens" while 200 clusters sit idle.
//!
//! One module per former `tests/*.rs` file; by hand:
//! `cargo test --test serial soak::`. See docs/testing.md.

#[path = "../common/mod.rs"]
mod common;

mod capi_e2e;
mod soak;
mod watch_at_rest;

/// One test of this binary at a time (libtest runs a binary's tests on several threads).
/// A tokio mutex, so that async tests may hold it across `.await`; it is not poisoned
/// when a test fails while holding it.
static SERIAL: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// Waits for the turn of a synchronous test (never call it inside a runtime).
pub fn serial() -> tokio::sync::MutexGuard<'static, ()> {
    SERIAL.blocking_lock()
}

/// Waits for the turn of an async test.
pub async fn serial_async() -> tokio::sync::MutexGuard<'static, ()> {
    SERIAL.lock().await
}
