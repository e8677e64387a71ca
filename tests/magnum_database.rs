//! magnum-rs on a MariaDB database made by real Magnum 23's own migrations
//! (`magnum-db-manage upgrade`) and seeded with Magnum's own objects, read side by side with
//! the real Magnum API serving the same database. `scripts/test.sh` prepares both and sets
//! `MAGNUM_RS_TEST_MAGNUM_DB` (the database URL) and `MAGNUM_RS_TEST_MAGNUM_API` (the real
//! API's base URL); without them these tests fail rather than pass silently.

mod common;

use std::io::{Read as _, Write as _};
use std::net::TcpStream;
use std::time::Duration;

use common::server::Server;
use serde_json::Value;

fn env(name: &str) -> String {
    std::env::var(name)
        .ok()
        .filter(|v| !v.is_empty())
        .unwrap_or_else(|| panic!("{name} is not set: run scripts/test.sh, which creates the Magnum database and serves real Magnum"))
}

/// GET with identity headers; (status, body as JSON).
fn get(base: &str, path: &str, version: &str, roles: &str, project: &str) -> (u16, Value) {
    let hostport = base
        .trim_start_matches("http://")
        .trim_end_matches('/')
        .to_string();
    let mut s = TcpStream::connect(&hostport).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(60)))
        .expect("timeout");
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: {hostport}\r\nAccept: application/json\r\n\
         OpenStack-API-Version: {version}\r\nX-Project-Id: {project}\r\nX-User-Id: u-demo\r\n\
         X-Roles: {roles}\r\nConnection: close\r\n\r\n"
    )
    .expect("write");
    let mut buf = String::new();
    s.read_to_string(&mut buf).expect("read");
    let code = buf
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    let body = buf
        .split_once("\r\n\r\n")
        .map(|(_, b)| b)
        .unwrap_or_default();
    (code, serde_json::from_str(body).unwrap_or(Value::Null))
}

/// Replaces the scheme and host of every link so that two servers compare equal.
fn normalize(v: &mut Value) {
    match v {
        Value::String(s) if s.starts_with("http://") => {
            if let Some(i) = s[7..].find('/') {
                *s = format!("http://HOST{}", &s[7 + i..]);
            }
        }
        Value::Array(a) => a.iter_mut().for_each(normalize),
        Value::Object(m) => m.values_mut().for_each(normalize),
        _ => {}
    }
}

const DEMO: &str = "aaaaaaaaaaaa4aaaaaaaaaaaaaaaaaaa";

#[test]
fn reads_a_magnum_database_with_the_values_magnum_shows() {
    let db = env("MAGNUM_RS_TEST_MAGNUM_DB");
    let magnum = env("MAGNUM_RS_TEST_MAGNUM_API");
    let dir = tempfile::tempdir().expect("tempdir");
    let server = Server::start(&db, dir.path(), &[]);
    let ours = format!("http://127.0.0.1:{}", server.port);

    let reads: &[(&str, &str, &str, &str)] = &[
        (
            "/v1/clusters",
            "container-infra latest",
            "reader,member",
            DEMO,
        ),
        ("/v1/clusters", "container-infra 1.9", "reader,member", DEMO),
        ("/v1/clusters", "container-infra 1.1", "reader,member", DEMO),
        (
            "/v1/clusters/detail",
            "container-infra latest",
            "reader,member",
            DEMO,
        ),
        (
            "/v1/clusters/detail",
            "container-infra 1.12",
            "reader,member",
            DEMO,
        ),
        (
            "/v1/clusters/k8s-cluster",
            "container-infra latest",
            "reader,member",
            DEMO,
        ),
        (
            "/v1/clusters/a1a1a1a1-0000-4000-8000-000000000001",
            "container-infra 1.12",
            "reader,member",
            DEMO,
        ),
        (
            "/v1/clusters/other-cluster",
            "container-infra latest",
            "reader,member",
            DEMO,
        ),
        (
            "/v1/clusters/a1a1a1a1-0000-4000-8000-000000000003",
            "container-infra latest",
            "reader,member",
            DEMO,
        ),
        (
            "/v1/clusters/a1a1a1a1-0000-4000-8000-000000000003",
            "container-infra latest",
            "admin",
            "someotherproject",
        ),
        (
            "/v1/clusters?limit=1",
            "container-infra latest",
            "reader,member",
            DEMO,
        ),
        (
            "/v1/clusters?limit=1&marker=a1a1a1a1-0000-4000-8000-000000000001",
            "container-infra latest",
            "reader,member",
            DEMO,
        ),
        (
            "/v1/clusters?sort_key=name&sort_dir=desc",
            "container-infra latest",
            "reader,member",
            DEMO,
        ),
        (
            "/v1/clusters",
            "container-infra latest",
            "admin",
            "someotherproject",
        ),
        (
            "/v1/clustertemplates",
            "container-infra latest",
            "reader,member",
            DEMO,
        ),
        (
            "/v1/clustertemplates/detail",
            "container-infra latest",
            "reader,member",
            DEMO,
        ),
        (
            "/v1/clustertemplates/k8s-template",
            "container-infra latest",
            "reader,member",
            DEMO,
        ),
        (
            "/v1/clusters/k8s-cluster/nodegroups",
            "container-infra latest",
            "reader,member",
            DEMO,
        ),
        (
            "/v1/clusters/other-cluster/nodegroups",
            "container-infra latest",
            "reader,member",
            DEMO,
        ),
        (
            "/v1/clusters/other-cluster/nodegroups?role=worker&limit=1",
            "container-infra latest",
            "reader,member",
            DEMO,
        ),
        (
            "/v1/clusters/other-cluster/nodegroups/bounded-ng",
            "container-infra latest",
            "reader,member",
            DEMO,
        ),
        (
            "/v1/clusters/k8s-cluster/nodegroups/1",
            "container-infra latest",
            "reader,member",
            DEMO,
        ),
        (
            "/v1/clusters/k8s-cluster/nodegroups/b1b1b1b1-0000-4000-8000-000000000012",
            "container-infra latest",
            "reader,member",
            DEMO,
        ),
        (
            "/v1/clusters/other-cluster/nodegroups/1",
            "container-infra latest",
            "reader,member",
            DEMO,
        ),
        (
            "/v1/clusters/nothere",
            "container-infra latest",
            "reader,member",
            DEMO,
        ),
    ];
    let mut differences = Vec::new();
    for (path, version, roles, project) in reads {
        let (theirs_code, mut theirs) = get(&magnum, path, version, roles, project);
        let (our_code, mut mine) = get(&ours, path, version, roles, project);
        normalize(&mut theirs);
        normalize(&mut mine);
        if theirs_code != our_code || theirs != mine {
            differences.push(format!(
                "GET {path} ({version}, {roles}):\n  magnum   {theirs_code} {theirs}\n  magnum-rs {our_code} {mine}"
            ));
        }
    }
    assert!(
        differences.is_empty(),
        "{} of {} reads differ:\n{}",
        differences.len(),
        reads.len(),
        differences.join("\n")
    );
}
