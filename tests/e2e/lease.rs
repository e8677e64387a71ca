//! Leadership across a rolling restart (issue 29), with two real magnum-rs processes on one
//! database and the real kube-apiserver: the leader, stopped gracefully (SIGTERM), gives its
//! Lease up before it exits, so the other replica leads at its next round instead of after
//! the Lease's whole duration (15 s by default) with no leader.

use crate::common;

use std::path::Path;
use std::time::{Duration, Instant};

use common::server::{free_port, http_get, Server};
use k8s_openapi::api::coordination::v1::Lease;
use kube::api::{Api, PostParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use serde_json::{json, Value};

const LEASE_SECONDS: u64 = 15;

async fn admin() -> (kube::Client, String) {
    let path = std::env::var("MAGNUM_RS_TEST_KUBECONFIG")
        .ok()
        .filter(|v| !v.is_empty())
        .unwrap_or_else(|| panic!("MAGNUM_RS_TEST_KUBECONFIG is not set: run scripts/test.sh, which starts a real kube-apiserver"));
    let kc = Kubeconfig::read_from(&path).expect("kubeconfig");
    let cfg = kube::Config::from_custom_kubeconfig(kc, &KubeConfigOptions::default())
        .await
        .expect("config");
    (kube::Client::try_from(cfg).expect("client"), path)
}

fn write_config(dir: &Path, ns: &str, kubeconfig: &str) -> String {
    let t = format!(
        "[drivers.cluster_api]\nnamespace = \"{ns}\"\nleader_election = true\n\
         lease_name = \"magnum-rs\"\nlease_duration_seconds = {LEASE_SECONDS}\n\
         [[drivers.cluster_api.management_clusters]]\nname = \"mc\"\nkubeconfig = \"{kubeconfig}\"\n"
    );
    let path = dir.join("magnum-rs.toml");
    std::fs::write(&path, t).expect("config");
    path.display().to_string()
}

/// Whether the replica on `port` leads (its /readyz says so).
fn leads(port: u16) -> bool {
    http_get(port, "/readyz").is_some_and(|(_, body)| {
        serde_json::from_str::<Value>(&body)
            .ok()
            .and_then(|v| v["management_clusters"][0]["leader"].as_bool())
            .unwrap_or(false)
    })
}

/// Waits (bounded) until `f` holds; returns how long it took.
fn wait_for(what: &str, limit: Duration, f: impl Fn() -> bool) -> Duration {
    let started = Instant::now();
    while !f() {
        assert!(started.elapsed() < limit, "{what}: not within {limit:?}");
        std::thread::park_timeout(Duration::from_millis(100));
    }
    started.elapsed()
}

#[test]
#[ignore = "needs scripts/test.sh"]
fn a_graceful_stop_gives_the_lease_up_and_the_next_replica_leads_at_once() {
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let (client, kubeconfig) = rt.block_on(admin());
    let ns = format!(
        "magnum-lease-{}",
        &uuid::Uuid::new_v4().simple().to_string()[..8]
    );
    rt.block_on(async {
        let nss: Api<k8s_openapi::api::core::v1::Namespace> = Api::all(client.clone());
        let body = serde_json::from_value(json!({"metadata": {"name": ns}})).expect("ns");
        nss.create(&PostParams::default(), &body)
            .await
            .expect("namespace");
    });
    let dir = tempfile::tempdir().expect("dir");
    let config = write_config(dir.path(), &ns, &kubeconfig);
    let db = rt.block_on(common::fresh_database());
    let args = ["--config", config.as_str()];

    let mut first = Server::start_at(free_port(), &db.url, dir.path(), &args, &[]);
    wait_for("the first replica leads", Duration::from_secs(30), || {
        leads(first.port)
    });
    let second = Server::start_at(free_port(), &db.url, dir.path(), &args, &[]);
    assert!(!leads(second.port), "two leaders");

    let leases: Api<Lease> = Api::namespaced(client.clone(), &ns);
    let holder = |l: &Lease| {
        l.spec
            .as_ref()
            .and_then(|s| s.holder_identity.clone())
            .unwrap_or_default()
    };
    let before = rt.block_on(leases.get("magnum-rs")).expect("lease");
    assert!(
        !holder(&before).is_empty(),
        "the first replica holds the lease"
    );

    let pid = first.child.id().to_string();
    let sent = std::process::Command::new("kill")
        .args(["-TERM", &pid])
        .status()
        .expect("kill");
    assert!(sent.success());
    let deadline = Instant::now() + Duration::from_secs(30);
    while first.child.try_wait().expect("wait").is_none() {
        assert!(Instant::now() < deadline, "no exit after SIGTERM");
        std::thread::park_timeout(Duration::from_millis(50));
    }
    let stopped_at = Instant::now();

    // Given up before the process ended: no holder, whatever the second replica did since.
    let after = rt.block_on(leases.get("magnum-rs")).expect("lease");
    assert_ne!(
        holder(&after),
        holder(&before),
        "the stopped replica still holds the lease: {:?}",
        first.log_text()
    );
    wait_for(
        "the second replica leads",
        Duration::from_secs(LEASE_SECONDS),
        || leads(second.port),
    );
    let took = stopped_at.elapsed();
    // Its next round (every third of the duration), not the duration itself.
    assert!(
        took < Duration::from_secs(LEASE_SECONDS / 3 + 3),
        "the second replica led {took:?} after the first stopped"
    );
    eprintln!("the second replica led {took:?} after the first stopped");
}
