//! Named moments where a test kills the process, to show that whatever the service waits for
//! lives in the database (issue 29): with `MAGNUM_RS_TEST_FAILPOINTS=<name>[,<name>…]` in its
//! environment, the process aborts (as a SIGKILL would end it: no cleanup, no graceful stop)
//! when it reaches one of those points. Unset, a point costs one look at a cached empty list.
//!
//! The points:
//! - `rollback-recorded`: a failed resize's count was restored and its roll-back recorded,
//!   before the roll-back is sent to the backend;
//! - `rollback-sent`: the backend accepted the roll-back's change, before the operation
//!   stores what it waits for;
//! - `credential-made`: Keystone made a cluster's application credential, before the store
//!   keeps it (and clears the token that made it);
//! - `cloud-prepared`: a ClusterAPI create wrote the CA and cloud-config Secrets and made
//!   the server groups, before it creates the Cluster;
//! - `adopted`: a cluster's work another conductor began is recorded as waiting
//!   operations, before the controllers look at it;
//! - `cloud-cleaned-up`: a deleted ClusterAPI cluster's server groups and credential are
//!   gone, before its Secrets are deleted and its rows go.
//!
//! And one where it pauses ([`pause`], [`PAUSE`]), to let the backend's events overtake the
//! store and show that the order does not matter:
//! - `before-waiting`: the driver's change was accepted (a create's backend cluster named
//!   and stored), before the operation stores what it waits for.

use std::sync::OnceLock;

/// The environment variable that arms failpoints (never set outside tests).
pub const ENV: &str = "MAGNUM_RS_TEST_FAILPOINTS";

fn armed() -> &'static [String] {
    static ARMED: OnceLock<Vec<String>> = OnceLock::new();
    ARMED.get_or_init(|| {
        std::env::var(ENV)
            .unwrap_or_default()
            .split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(str::to_string)
            .collect()
    })
}

/// How long an armed [`pause`] point holds its task.
pub const PAUSE: std::time::Duration = std::time::Duration::from_secs(1);

/// Holds the calling task for [`PAUSE`] when the point `name` is armed.
pub async fn pause(name: &str) {
    if armed().iter().any(|a| a == name) {
        tracing::warn!(failpoint = name, "failpoint reached: pausing");
        tokio::time::sleep(PAUSE).await;
    }
}

/// Aborts the process when the point `name` is armed.
pub fn hit(name: &str) {
    if armed().iter().any(|a| a == name) {
        tracing::error!(failpoint = name, "failpoint reached: aborting the process");
        std::process::abort();
    }
}
