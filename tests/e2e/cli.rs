//! End to end with the real `openstack` CLI (python-openstackclient + python-magnumclient)
//! against the real binary. `scripts/test.sh` installs the CLI and sets
//! `MAGNUM_RS_OPENSTACK`; without it these tests fail rather than pass silently.

use crate::common;

use common::cli::Cli;
use common::server::Server;

fn start() -> (tempfile::TempDir, Server) {
    let dir = tempfile::tempdir().expect("tempdir");
    let url = match std::env::var("MAGNUM_RS_TEST_MYSQL_URL") {
        Ok(base) if !base.is_empty() => {
            let rt = tokio::runtime::Runtime::new().expect("runtime");
            rt.block_on(common::fresh_database()).url
        }
        _ => format!("sqlite://{}", dir.path().join("e2e.db").display()),
    };
    let server = Server::start(&url, dir.path(), &[]);
    (dir, server)
}

fn template_and_cluster(cli: &Cli) {
    cli.create_k8s_template();
    let out = cli.ok(&[
        "coe",
        "cluster",
        "create",
        "k8s",
        "--cluster-template",
        "k8s-template",
        "--master-count",
        "1",
        "--node-count",
        "2",
    ]);
    assert!(out.contains("Request to create cluster"), "{out}");
    cli.wait_field(
        &["coe", "cluster", "show", "k8s"],
        "status",
        "CREATE_COMPLETE",
    );
}

#[test]
#[ignore = "needs scripts/test.sh"]
fn cli_reads_templates_clusters_and_manages_nodegroups() {
    let (_dir, server) = start();
    let cli = Cli::new(&server);
    template_and_cluster(&cli);

    let list = cli.ok(&["coe", "cluster", "template", "list"]);
    assert!(list.contains("k8s-template"), "{list}");
    assert_eq!(
        cli.field(
            &["coe", "cluster", "template", "show", "k8s-template"],
            "coe"
        ),
        "kubernetes"
    );

    let clusters = cli.ok(&["coe", "cluster", "list"]);
    assert!(
        clusters.contains("k8s") && clusters.contains("CREATE_COMPLETE"),
        "{clusters}"
    );
    assert_eq!(
        cli.field(&["coe", "cluster", "show", "k8s"], "master_count"),
        "1"
    );
    assert_eq!(
        cli.field(&["coe", "cluster", "show", "k8s"], "node_count"),
        "2"
    );

    let ngs = cli.ok(&["coe", "nodegroup", "list", "k8s"]);
    assert!(
        ngs.contains("default-master") && ngs.contains("default-worker"),
        "{ngs}"
    );
    assert_eq!(
        cli.field(
            &["coe", "nodegroup", "show", "k8s", "default-worker"],
            "role"
        ),
        "worker"
    );

    let created = cli.ok(&[
        "coe",
        "nodegroup",
        "create",
        "k8s",
        "ng-a",
        "--node-count",
        "2",
        "--min-nodes",
        "1",
        "--max-nodes",
        "4",
    ]);
    assert!(created.contains("Request to create nodegroup"), "{created}");
    cli.wait_field(
        &["coe", "nodegroup", "show", "k8s", "ng-a"],
        "status",
        "CREATE_COMPLETE",
    );

    cli.ok(&[
        "coe",
        "nodegroup",
        "update",
        "k8s",
        "ng-a",
        "--max-nodes",
        "5",
    ]);
    assert_eq!(
        cli.field(
            &["coe", "nodegroup", "show", "k8s", "ng-a"],
            "max_node_count"
        ),
        "5"
    );

    let deleted = cli.ok(&["coe", "nodegroup", "delete", "k8s", "ng-a"]);
    assert!(
        deleted.contains("Request to delete nodegroup ng-a has been accepted."),
        "{deleted}"
    );
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        let o = cli.run(&["coe", "nodegroup", "show", "k8s", "ng-a"]);
        if o.code != 0 {
            assert!(
                o.stderr.contains("Nodegroup ng-a could not be found"),
                "{}",
                o.stderr
            );
            break;
        }
        assert!(std::time::Instant::now() < deadline, "ng-a was not deleted");
    }

    let refused = cli.run(&["coe", "nodegroup", "delete", "k8s", "default-worker"]);
    assert!(
        refused
            .stdout
            .contains("Deleting a default nodegroup is not supported")
            || refused
                .stderr
                .contains("Deleting a default nodegroup is not supported"),
        "{}{}",
        refused.stdout,
        refused.stderr
    );
}

#[test]
#[ignore = "needs scripts/test.sh"]
fn cli_resizes_the_control_plane_to_three() {
    let (_dir, server) = start();
    let cli = Cli::new(&server);
    template_and_cluster(&cli);

    let out = cli.ok(&[
        "coe",
        "cluster",
        "resize",
        "k8s",
        "3",
        "--nodegroup",
        "default-master",
    ]);
    assert_eq!(
        out.trim(),
        "Request to resize cluster k8s has been accepted."
    );
    cli.wait_field(
        &["coe", "nodegroup", "show", "k8s", "default-master"],
        "status",
        "UPDATE_COMPLETE",
    );
    assert_eq!(
        cli.field(
            &["coe", "nodegroup", "show", "k8s", "default-master"],
            "node_count"
        ),
        "3"
    );
    assert_eq!(
        cli.field(&["coe", "cluster", "show", "k8s"], "master_count"),
        "3"
    );
}

#[test]
#[ignore = "needs scripts/test.sh"]
fn cli_even_control_plane_size_prints_magnums_error_and_exits_1() {
    let (_dir, server) = start();
    let cli = Cli::new(&server);
    template_and_cluster(&cli);

    let o = cli.run(&[
        "coe",
        "cluster",
        "resize",
        "k8s",
        "2",
        "--nodegroup",
        "default-master",
    ]);
    assert_eq!(o.code, 1, "{}{}", o.stdout, o.stderr);
    assert!(
        o.stderr.contains(
            "master nodegroup size of 2 is invalid, size cannot be an even number (HTTP 400)"
        ),
        "{}",
        o.stderr
    );
    assert_eq!(
        cli.field(
            &["coe", "nodegroup", "show", "k8s", "default-master"],
            "node_count"
        ),
        "1"
    );
}
