"""Seed a benchmark database FAST with N clusters, shaped exactly as Magnum 23 writes them.

    seed.py mysql  --port 13306 --db DBNAME --n N   (a database made by Magnum's migrations:
                                                     scripts/magnum-db.sh create DBNAME)
    seed.py sqlite --file FILE --n N                (a schema made by `magnum-rs migrate`)
    seed.py cleanup mysql --port 13306 --db DBNAME [--n N]
    seed.py cleanup sqlite --file FILE [--n N]      (after the create route: delete what it
                                                     created, see cleanup())

Rows are the ones scripts/magnum_seed.py writes through Magnum's own objects (template POST,
Handler.cluster_create + conductor.utils._get_nodegroup_object, nodegroup POST +
nodegroup_create, then what a finished driver create leaves behind), but written with bulk
INSERTs instead of one object at a time:

- one cluster template (TEMPLATE_UUID, ubuntu: magnum-rs's cluster-api driver, the real
  Magnum's (vm, ubuntu, kubernetes) stub driver) with no image, flavors or keypair: the
  real Magnum's cluster create validates each one the template (or the body) names against
  Glance or Nova (attr_validator.validate_os_resources), and without Keystone (the bench's
  noauth pipeline) that answers 403 "Keystone API connection failed"; with none named it
  asks no service and answers 202, as magnum-rs does.  The seeded clusters keep their own
  flavors and keypair (nothing else reads the template's);
- one `quotas` row: project PROJECT may own CLUSTER_QUOTA clusters (both servers read
  Magnum's `quotas` table before their default of 20 per project), so the benchmark's
  creates are not refused;
- N clusters in project PROJECT (cluster i, 1-based: id i, uuid cluster_uuid(i), name
  bench-iiiii), each CREATE_COMPLETE / HEALTHY;
- per cluster three nodegroups: default-master (1 node), default-worker (2 nodes, min NULL,
  max NULL), extra-ng (worker, not default, 1 node, min 1, max 5); ids 3i-2, 3i-1, 3i.

MariaDB DATETIME columns hold whole seconds (as Magnum's writes end up there); on SQLite the
value is SQLAlchemy's text form with microseconds, as magnum-rs writes it too.  Booleans are
0/1, JSON columns are JSON text ({} / [] for empty, as JSONEncodedDict/List write them).
Prints one JSON line: {"n": N, "clusters": ..., "nodegroups": ..., "seconds": ...}.
"""
import argparse
import datetime
import json
import sys
import time

PROJECT = "aaaaaaaaaaaa4aaaaaaaaaaaaaaaaaaa"
USER = "u-demo"
TEMPLATE_UUID = "0b3c7f2e-6a51-4d7e-9f0a-1c2d3e4f5a6b"
LABELS = json.dumps({"kube_tag": "v1.30.4"})  # json.dumps: Magnum's JSONEncodedDict text
CLUSTER_QUOTA = 1000000000
# The names bench/run.sh's create route gives its clusters (cleanup() deletes them).
CREATE_PREFIX = "bench-create-"


def cluster_uuid(i):
    return "c0000000-0000-4000-8000-%012d" % i


def nodegroup_uuid(i, k):
    return "d000000%d-0000-4000-8000-%012d" % (k, i)


def addr(i, host):
    return "10.%d.%d.%d" % ((i >> 8) & 0xFF, i & 0xFF, host)


TEMPLATE_COLS = [
    "created_at", "updated_at", "id", "uuid", "project_id", "user_id", "name", "image_id",
    "flavor_id", "master_flavor_id", "keypair_id", "external_network_id", "fixed_network",
    "fixed_subnet", "network_driver", "volume_driver", "dns_nameserver", "apiserver_port",
    "docker_volume_size", "docker_storage_driver", "cluster_distro", "coe", "http_proxy",
    "https_proxy", "no_proxy", "registry_enabled", "labels", "tls_disabled", "public",
    "server_type", "insecure_registry", "master_lb_enabled", "floating_ip_enabled", "hidden",
    "tags", "driver",
]

CLUSTER_COLS = [
    "created_at", "updated_at", "id", "uuid", "name", "cluster_template_id", "api_address",
    "stack_id", "project_id", "user_id", "status", "discovery_url", "status_reason",
    "ca_cert_ref", "magnum_cert_ref", "create_timeout", "coe_version", "container_version",
    "keypair", "docker_volume_size", "labels", "master_flavor_id", "flavor_id",
    "health_status", "health_status_reason", "fixed_network", "fixed_subnet",
    "floating_ip_enabled", "master_lb_enabled", "etcd_ca_cert_ref", "front_proxy_ca_cert_ref",
]

NODEGROUP_COLS = [
    "created_at", "updated_at", "id", "uuid", "name", "cluster_id", "project_id",
    "docker_volume_size", "labels", "flavor_id", "image_id", "node_addresses", "node_count",
    "max_node_count", "min_node_count", "role", "is_default", "stack_id", "status",
    "status_reason", "version", "node_labels", "node_taints",
]


def template_row(ts):
    r = dict.fromkeys(TEMPLATE_COLS)
    r.update(created_at=ts, updated_at=None, id=1, uuid=TEMPLATE_UUID, project_id=PROJECT,
             user_id=USER, name="k8s-template", image_id=None, flavor_id=None,
             master_flavor_id=None, keypair_id=None, cluster_distro="ubuntu", coe="kubernetes", registry_enabled=0, labels=LABELS,
             tls_disabled=0, public=0, server_type="vm", master_lb_enabled=1,
             floating_ip_enabled=1, hidden=0)
    return [r[c] for c in TEMPLATE_COLS]


QUOTA_COLS = ["created_at", "updated_at", "id", "project_id", "resource", "hard_limit"]


def quota_row(ts):
    return [ts, None, 1, PROJECT, "Cluster", CLUSTER_QUOTA]


def cluster_row(i, ts):
    r = dict.fromkeys(CLUSTER_COLS)
    r.update(created_at=ts, updated_at=ts, id=i, uuid=cluster_uuid(i), name="bench-%05d" % i,
             cluster_template_id=TEMPLATE_UUID, api_address="https://%s:6443" % addr(i, 5),
             stack_id="kube-%05d" % i, project_id=PROJECT, user_id=USER,
             status="CREATE_COMPLETE", status_reason="Stack CREATE completed successfully",
             create_timeout=60, coe_version="v1.30.4", keypair="default", labels=LABELS,
             master_flavor_id="m1.large", flavor_id="m1.medium", health_status="HEALTHY",
             health_status_reason="{}", floating_ip_enabled=1, master_lb_enabled=1)
    return [r[c] for c in CLUSTER_COLS]


def nodegroup_rows(i, ts):
    base = dict.fromkeys(NODEGROUP_COLS)
    base.update(created_at=ts, updated_at=ts, cluster_id=cluster_uuid(i), project_id=PROJECT,
                labels=LABELS, image_id="ubuntu-2204-kube", stack_id="kube-%05d" % i,
                status="CREATE_COMPLETE", node_labels="{}", node_taints="[]")
    # _get_nodegroup_object: default nodegroups have min_node_count NULL, max NULL.
    master = dict(base, id=3 * i - 2, uuid=nodegroup_uuid(i, 1), name="default-master",
                  flavor_id="m1.large", node_addresses=json.dumps([addr(i, 10)]),
                  node_count=1, role="master", is_default=1)
    worker = dict(base, id=3 * i - 1, uuid=nodegroup_uuid(i, 2), name="default-worker",
                  flavor_id="m1.medium",
                  node_addresses=json.dumps([addr(i, 20), addr(i, 21)]),
                  node_count=2, role="worker", is_default=1)
    # nodegroup POST: the cluster's flavor and labels, the template's image.
    extra = dict(base, id=3 * i, uuid=nodegroup_uuid(i, 3), name="extra-ng",
                 flavor_id="m1.medium", node_addresses="[]", node_count=1,
                 max_node_count=5, min_node_count=1, role="worker", is_default=0)
    return [[r[c] for c in NODEGROUP_COLS] for r in (master, worker, extra)]


def insert_sql(table, cols, quote):
    return "INSERT INTO %s (%s) VALUES (%s)" % (
        table, ", ".join(quote + c + quote for c in cols), ", ".join(["%s"] * len(cols)))


def rows(n, ts):
    clusters, nodegroups = [], []
    for i in range(1, n + 1):
        clusters.append(cluster_row(i, ts))
        nodegroups.extend(nodegroup_rows(i, ts))
    return clusters, nodegroups


def seed_mysql(args):
    import pymysql

    ts = datetime.datetime.utcnow().strftime("%Y-%m-%d %H:%M:%S")
    conn = pymysql.connect(host="127.0.0.1", port=args.port, user="magnum", password="magnum",
                           database=args.db, charset="utf8mb4", autocommit=False)
    clusters, nodegroups = rows(args.n, ts)
    with conn.cursor() as cur:
        for t in ("nodegroup", "cluster", "cluster_template", "quotas"):
            cur.execute("DELETE FROM `%s`" % t)
        cur.execute(insert_sql("cluster_template", TEMPLATE_COLS, "`"), template_row(ts))
        cur.execute(insert_sql("quotas", QUOTA_COLS, "`"), quota_row(ts))
        # pymysql turns executemany(INSERT ... VALUES) into multi-row INSERTs (< 1 MB each).
        step = 2000
        for i in range(0, len(clusters), step):
            cur.executemany(insert_sql("cluster", CLUSTER_COLS, "`"), clusters[i:i + step])
        for i in range(0, len(nodegroups), step):
            cur.executemany(insert_sql("nodegroup", NODEGROUP_COLS, "`"),
                            nodegroups[i:i + step])
    conn.commit()
    with conn.cursor() as cur:
        # InnoDB recalculates statistics by itself after bulk changes; do it now so the
        # first benchmark row does not race the background recalculation.
        cur.execute("ANALYZE TABLE cluster, nodegroup, cluster_template, quotas")
        cur.fetchall()
        cur.execute("SELECT COUNT(*) FROM cluster")
        nc = cur.fetchone()[0]
        cur.execute("SELECT COUNT(*) FROM nodegroup")
        nn = cur.fetchone()[0]
    conn.close()
    return nc, nn


def seed_sqlite(args):
    import sqlite3

    ts = datetime.datetime.utcnow().strftime("%Y-%m-%d %H:%M:%S.%f")
    conn = sqlite3.connect(args.file)
    clusters, nodegroups = rows(args.n, ts)
    with conn:
        for t in ("nodegroup", "cluster", "cluster_template", "quotas"):
            conn.execute("DELETE FROM %s" % t)
        for table, cols, data in (("cluster_template", TEMPLATE_COLS, [template_row(ts)]),
                                  ("quotas", QUOTA_COLS, [quota_row(ts)]),
                                  ("cluster", CLUSTER_COLS, clusters),
                                  ("nodegroup", NODEGROUP_COLS, nodegroups)):
            sql = "INSERT INTO %s (%s) VALUES (%s)" % (
                table, ", ".join(cols), ", ".join(["?"] * len(cols)))
            conn.executemany(sql, data)
    # No ANALYZE: magnum-rs never runs it, so the planner sees what a deployment sees.
    nc = conn.execute("SELECT COUNT(*) FROM cluster").fetchone()[0]
    nn = conn.execute("SELECT COUNT(*) FROM nodegroup").fetchone()[0]
    conn.close()
    return nc, nn


def cleanup(args):
    """Delete what the create route made: the clusters named CREATE_PREFIX…, their
    nodegroups and magnum-rs's operation records of them (magnum_rs_operation, if the
    database has it), in one transaction, so that the next server (and the cost-growth
    phase) sees the seeded N clusters again.  The project's magnum_rs_project_lock row
    stays (one row; the next create would make it again).  Run it only while no server
    is working on those clusters (bench/run.sh: after the server went idle).  Returns
    {what: rows deleted} and the clusters left."""
    like = CREATE_PREFIX + "%"
    if args.backend == "mysql":
        import pymysql

        conn = pymysql.connect(host="127.0.0.1", port=args.port, user="magnum",
                               password="magnum", database=args.db, autocommit=False)
        q = "%s"
        with conn.cursor() as cur:
            cur.execute("SELECT COUNT(*) FROM information_schema.tables WHERE "
                        "table_schema = DATABASE() AND table_name = 'magnum_rs_operation'")
            has_ops = cur.fetchone()[0] > 0
    else:
        import sqlite3

        conn = sqlite3.connect(args.file, timeout=30)
        conn.isolation_level = None  # explicit BEGIN below
        q = "?"
        has_ops = conn.execute("SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' "
                               "AND name = 'magnum_rs_operation'").fetchone()[0] > 0
    cur = conn.cursor()
    if args.backend == "sqlite":
        cur.execute("BEGIN IMMEDIATE")
    # The uuids first, then deletes by uuid through the indexes (operation: cluster_uuid,
    # nodegroup: (cluster_id, name), cluster: uuid): MariaDB runs `IN (SELECT uuid FROM
    # cluster WHERE name LIKE …)` in a DELETE as a scan of cluster per row (40 s for 5,000).
    cur.execute("SELECT uuid FROM cluster WHERE name LIKE " + q, (like,))
    uuids = [r[0] for r in cur.fetchall()]
    out = {"operations": 0} if has_ops else {}
    out.update(nodegroups=0, clusters=0)
    step = 500
    for i in range(0, len(uuids), step):
        chunk = uuids[i:i + step]
        inlist = "(%s)" % ", ".join([q] * len(chunk))
        if has_ops:
            cur.execute("DELETE FROM magnum_rs_operation WHERE cluster_uuid IN " + inlist, chunk)
            out["operations"] += cur.rowcount
        cur.execute("DELETE FROM nodegroup WHERE cluster_id IN " + inlist, chunk)
        out["nodegroups"] += cur.rowcount
        cur.execute("DELETE FROM cluster WHERE uuid IN " + inlist, chunk)
        out["clusters"] += cur.rowcount
    if args.backend == "mysql":
        conn.commit()
    else:
        cur.execute("COMMIT")
    cur.execute("SELECT COUNT(*) FROM cluster")
    out["clusters_left"] = cur.fetchone()[0]
    cur.execute("SELECT COUNT(*) FROM nodegroup")
    out["nodegroups_left"] = cur.fetchone()[0]
    conn.close()
    return out


def main():
    p = argparse.ArgumentParser()
    sub = p.add_subparsers(dest="cmd", required=True)
    m = sub.add_parser("mysql")
    m.add_argument("--port", type=int, default=13306)
    m.add_argument("--db", required=True)
    m.add_argument("--n", type=int, required=True)
    s = sub.add_parser("sqlite")
    s.add_argument("--file", required=True)
    s.add_argument("--n", type=int, required=True)
    c = sub.add_parser("cleanup")
    c.add_argument("backend", choices=("mysql", "sqlite"))
    c.add_argument("--port", type=int, default=13306)
    c.add_argument("--db")
    c.add_argument("--file")
    c.add_argument("--n", type=int, help="fail unless N clusters / 3N nodegroups are left")
    args = p.parse_args()
    t0 = time.monotonic()
    if args.cmd == "cleanup":
        if (args.backend == "mysql") != bool(args.db) or (args.backend == "sqlite") != bool(args.file):
            p.error("cleanup mysql needs --db, cleanup sqlite needs --file")
        out = cleanup(args)
        out.update(backend=args.backend, seconds=round(time.monotonic() - t0, 2))
        print(json.dumps(out))
        if args.n is not None and (out["clusters_left"] != args.n
                                   or out["nodegroups_left"] != 3 * args.n):
            print("seed.py cleanup: expected %d clusters / %d nodegroups left, found %d / %d"
                  % (args.n, 3 * args.n, out["clusters_left"], out["nodegroups_left"]),
                  file=sys.stderr)
            return 1
        return 0
    args.backend = args.cmd
    nc, nn = seed_mysql(args) if args.backend == "mysql" else seed_sqlite(args)
    if nc != args.n or nn != 3 * args.n:
        print("seed.py: expected %d clusters / %d nodegroups, found %d / %d"
              % (args.n, 3 * args.n, nc, nn), file=sys.stderr)
        return 1
    print(json.dumps({"backend": args.backend, "n": args.n, "clusters": nc, "nodegroups": nn,
                      "seconds": round(time.monotonic() - t0, 2)}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
