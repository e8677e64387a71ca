//! End to end with the real `openstack` CLI against the real binary: `coe stats list`,
//! `coe quotas create/list/show/update/delete`, `coe service list`, and Magnum's 403 when a
//! project is over its cluster quota. `scripts/test.sh` installs the CLI and sets
//! `MAGNUM_RS_OPENSTACK`; without it these tests fail rather than pass silently.

use crate::common;

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use common::cli::{Cli, Out};
use common::server::Server;

/// The project `openstack --os-auth-type none` requests get (`[noauth] project_id`).
const NOAUTH_PROJECT: &str = "noauth-project";

/// What only these tests read from the CLI.
impl Cli {
    /// The `Property | Value` table python-magnumclient prints for `coe quotas` and
    /// `coe stats` (they take no `-f`), as a map.
    fn props(&self, args: &[&str]) -> BTreeMap<String, String> {
        let out = self.ok(args);
        let rows = table_rows(&out);
        assert_eq!(
            rows.first().map(|r| r.join("|")).as_deref(),
            Some("Property|Value"),
            "{out}"
        );
        rows.into_iter()
            .skip(1)
            .filter_map(|r| match r.as_slice() {
                [k, v] => Some((k.clone(), v.clone())),
                _ => None,
            })
            .collect()
    }

    /// `-f json` output of a command.
    fn json(&self, args: &[&str]) -> serde_json::Value {
        let mut a = args.to_vec();
        a.extend(["-f", "json"]);
        let out = self.ok(&a);
        serde_json::from_str(&out).unwrap_or_else(|e| panic!("{args:?}: {e}: {out}"))
    }
}

/// The cells of each `| a | b |` row of a prettytable (header first).
fn table_rows(out: &str) -> Vec<Vec<String>> {
    out.lines()
        .filter(|l| l.starts_with('|'))
        .map(|l| {
            l.trim_matches('|')
                .split('|')
                .map(|c| c.trim().to_string())
                .collect()
        })
        .collect()
}

fn map(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// A server whose noauth identity is an admin of `noauth-project` (quota writes are
/// admin-only), reporting itself as `cli-conductor`.
fn start() -> (tempfile::TempDir, Server) {
    let dir = tempfile::tempdir().expect("tempdir");
    let url = match std::env::var("MAGNUM_RS_TEST_MYSQL_URL") {
        Ok(base) if !base.is_empty() => {
            let rt = tokio::runtime::Runtime::new().expect("runtime");
            rt.block_on(common::fresh_database()).url
        }
        _ => format!("sqlite://{}", dir.path().join("e2e.db").display()),
    };
    let config = dir.path().join("admin.toml");
    std::fs::write(
        &config,
        "[noauth]\nroles = [\"admin\", \"member\", \"reader\"]\n\n\
         [service]\nhost = \"cli-conductor\"\n",
    )
    .expect("config");
    let config = config.display().to_string();
    let server = Server::start(&url, dir.path(), &["--config", &config]);
    (dir, server)
}

fn template(cli: &Cli) {
    cli.create_k8s_template();
}

fn create_cluster(cli: &Cli, name: &str) -> Out {
    cli.run(&[
        "coe",
        "cluster",
        "create",
        name,
        "--cluster-template",
        "k8s-template",
        "--master-count",
        "1",
        "--node-count",
        "2",
    ])
}

#[test]
#[ignore = "needs scripts/test.sh"]
fn cli_stats_list_shows_the_projects_clusters_and_nodes() {
    let (_dir, server) = start();
    let cli = Cli::new(&server);
    let empty = cli.props(&["coe", "stats", "list", NOAUTH_PROJECT]);
    assert_eq!(empty, map(&[("clusters", "0"), ("nodes", "0")]));
    template(&cli);
    let o = create_cluster(&cli, "k8s");
    assert_eq!(o.code, 0, "{}{}", o.stdout, o.stderr);
    let stats = cli.props(&["coe", "stats", "list", NOAUTH_PROJECT]);
    assert_eq!(stats, map(&[("clusters", "1"), ("nodes", "3")]));
}

#[test]
#[ignore = "needs scripts/test.sh"]
fn cli_quotas_create_list_show_update_delete() {
    let (_dir, server) = start();
    let cli = Cli::new(&server);
    let quota = |verb: &str, project: &str, limit: Option<&str>| {
        let mut args = vec![
            "coe",
            "quotas",
            verb,
            "--project-id",
            project,
            "--resource",
            "Cluster",
        ];
        if let Some(l) = limit {
            args.extend(["--hard-limit", l]);
        }
        cli.props(&args)
    };
    let created = quota("create", NOAUTH_PROJECT, Some("3"));
    assert_eq!(
        created.keys().map(String::as_str).collect::<Vec<_>>(),
        [
            "created_at",
            "hard_limit",
            "id",
            "project_id",
            "resource",
            "updated_at"
        ]
    );
    assert_eq!(created["hard_limit"], "3");
    assert_eq!(created["resource"], "Cluster");
    assert_eq!(created["project_id"], NOAUTH_PROJECT);
    assert_eq!(created["updated_at"], "-");
    quota("create", "another-project", Some("7"));

    let own = table_rows(&cli.ok(&["coe", "quotas", "list"]));
    assert_eq!(
        own,
        [
            vec!["project_id", "resource", "hard_limit"],
            vec![NOAUTH_PROJECT, "Cluster", "3"]
        ]
    );
    let all = table_rows(&cli.ok(&["coe", "quotas", "list", "--all-tenants"]));
    assert_eq!(all.len(), 3, "{all:?}");
    assert_eq!(all[2], ["another-project", "Cluster", "7"]);

    let shown = quota("show", NOAUTH_PROJECT, None);
    assert_eq!(shown, created);
    let updated = quota("update", NOAUTH_PROJECT, Some("5"));
    assert_eq!(updated["hard_limit"], "5");
    assert_ne!(updated["updated_at"], "-");
    let deleted = cli.ok(&[
        "coe",
        "quotas",
        "delete",
        "--project-id",
        NOAUTH_PROJECT,
        "--resource",
        "Cluster",
    ]);
    assert!(deleted.contains("has been accepted"), "{deleted}");
    // Without a row the default of `[quotas] max_clusters_per_project` shows.
    let default = quota("show", NOAUTH_PROJECT, None);
    assert_eq!(
        default,
        map(&[
            ("hard_limit", "20"),
            ("project_id", NOAUTH_PROJECT),
            ("resource", "Cluster")
        ])
    );
    let again = cli.run(&[
        "coe",
        "quotas",
        "delete",
        "--project-id",
        NOAUTH_PROJECT,
        "--resource",
        "Cluster",
    ]);
    assert!(
        again.stdout.contains(
            "Quota could not be found: project_id noauth-project resource Cluster (HTTP 404)"
        ),
        "{}{}",
        again.stdout,
        again.stderr
    );
}

#[test]
#[ignore = "needs scripts/test.sh"]
fn cli_cluster_create_over_the_quota_gets_magnums_403() {
    let (_dir, server) = start();
    let cli = Cli::new(&server);
    template(&cli);
    cli.ok(&[
        "coe",
        "quotas",
        "create",
        "--project-id",
        NOAUTH_PROJECT,
        "--resource",
        "Cluster",
        "--hard-limit",
        "1",
    ]);
    let first = create_cluster(&cli, "first");
    assert_eq!(first.code, 0, "{}{}", first.stdout, first.stderr);
    let second = create_cluster(&cli, "second");
    assert_ne!(second.code, 0);
    assert!(
        second.stderr.contains(
            // The client prints the error's title: Magnum's text up to its first period.
            "Resource limit exceeded: You have reached the maximum clusters per project, 1 \
             (HTTP 403)"
        ),
        "{}",
        second.stderr
    );
    let names = cli.ok(&["coe", "cluster", "list", "-f", "value", "-c", "name"]);
    assert_eq!(names.trim(), "first");
}

#[test]
#[ignore = "needs scripts/test.sh"]
fn cli_service_list_shows_the_conductor_up() {
    let (_dir, server) = start();
    let cli = Cli::new(&server);
    // The conductor role reports on start; poll until the row is there (bounded).
    let deadline = Instant::now() + Duration::from_secs(30);
    let services = loop {
        let s = cli.json(&["coe", "service", "list"]);
        if s.as_array().is_some_and(|a| !a.is_empty()) {
            break s;
        }
        assert!(Instant::now() < deadline, "no service listed");
    };
    let svc = &services[0];
    assert_eq!(svc["host"], "cli-conductor");
    assert_eq!(svc["binary"], "magnum-conductor");
    assert_eq!(svc["state"], "up");
    assert_eq!(svc["disabled"], false);
    let keys: Vec<&str> = svc
        .as_object()
        .expect("object")
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(
        keys,
        [
            "id",
            "host",
            "binary",
            "state",
            "disabled",
            "disabled_reason",
            "created_at",
            "updated_at"
        ]
    );
}
