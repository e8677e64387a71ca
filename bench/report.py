"""Turn the raw output of bench/run.sh into the Markdown results file.

    python3 report.py --work DIR --out bench/results/DATE.md

Reads DIR/meta.tsv, rows.jsonl (bench/wrk.lua), rss.jsonl (bench/rss.py), seed.jsonl,
cleanup.jsonl (bench/seed.py cleanup after each create row) and sql.N.BACKEND.json
(bench/sqlcount.py; BACKEND mariadb_before / sqlite_before: the baseline binary).  Errors =
non-2xx responses + socket errors (connect/read/write/timeout): nothing is dropped.  Only
the routes the run selected (meta `routes`, BENCH_ROUTES) are tabulated; the baseline
servers (BENCH_BASELINE_BIN) appear where they have rows, and in "create: before ÷ after".
"""
import argparse
import glob
import json
import os
import re

SERVERS = [
    ("magnum-shipped", "Magnum 23, shipped (werkzeug processes=2)"),
    ("magnum-threaded", "Magnum 23, threaded (1 process)"),
    ("magnum-rs-mariadb", "magnum-rs, MariaDB"),
    ("magnum-rs-sqlite", "magnum-rs, SQLite"),
    ("magnum-rs-before-mariadb", "magnum-rs before the change (BENCH_BASELINE_BIN), MariaDB"),
    ("magnum-rs-before-sqlite", "magnum-rs before the change (BENCH_BASELINE_BIN), SQLite"),
]
MAIN_SERVERS = {"magnum-shipped", "magnum-threaded", "magnum-rs-mariadb", "magnum-rs-sqlite"}
ROUTES = [
    ("nodegroups", "GET /v1/clusters/{id}/nodegroups"),
    ("list", "GET /v1/clusters?limit=50"),
    ("list_marker", "GET /v1/clusters?limit=50&marker={uuid of cluster N-60}"),
    ("get", "GET /v1/clusters/{id}"),
    ("resize", "POST /v1/clusters/{id}/actions/resize"),
    ("create", "POST /v1/clusters (1 master, 1 worker, on the seeded template)"),
]
READS = {"nodegroups", "list", "list_marker", "get"}
TARGET_SHIPPED, TARGET_THREADED, TARGET_P99_MS, TARGET_RSS_MB = 50, 10, 10.0, 50


def load_jsonl(path):
    out = []
    if os.path.exists(path):
        with open(path) as f:
            for line in f:
                line = line.strip()
                if line:
                    out.append(json.loads(line))
    return out


def load_meta(path):
    meta = {}
    with open(path) as f:
        for line in f:
            k, _, v = line.rstrip("\n").partition("\t")
            meta[k] = v
    return meta


def fmt_rps(x):
    if x is None:
        return "–"
    return "%.1f" % x if x < 100 else "{:,.0f}".format(x)


def fmt_ms(x):
    if x is None:
        return "–"
    return "%.2f" % x if x < 10 else ("%.1f" % x if x < 100 else "{:,.0f}".format(x))


def fmt_ratio(x):
    if x is None:
        return "–"
    return "%.1f×" % x if x < 100 else "{:,.0f}×".format(x)


def mb(kb):
    return kb / 1024.0 if kb else None


def errors(r):
    return r["non2xx"] + r["socket_errors"]


def rss_cell(server, s):
    if not s:
        return "–"
    root = mb(s.get("root_hwm_kb"))
    if server == "magnum-shipped":
        child = mb(s.get("child_hwm_kb"))
        return "%.0f / %s (%d forks)" % (root or 0, "%.0f" % child if child else "–",
                                         s.get("children_seen", 0))
    return "%.1f" % root if root is not None else "–"


def peak_mb(server, s):
    """The figure the RSS target is checked against: the largest single process."""
    if not s:
        return None
    vals = [mb(s.get("root_hwm_kb"))]
    if server == "magnum-shipped":
        vals.append(mb(s.get("child_hwm_kb")))
    vals = [v for v in vals if v]
    return max(vals) if vals else None


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--work", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--notes", help="Markdown appended verbatim (hand-written analysis)")
    a = p.parse_args()
    meta = load_meta(os.path.join(a.work, "meta.tsv"))
    rows = {}
    for r in load_jsonl(os.path.join(a.work, "rows.jsonl")):
        rows[r["tag"]] = r
    rss = {r["tag"]: r for r in load_jsonl(os.path.join(a.work, "rss.jsonl"))}
    seeds = load_jsonl(os.path.join(a.work, "seed.jsonl"))
    sizes = [int(x) for x in meta.get("sizes", "100 10000").split()]
    conns = [int(x) for x in meta.get("conns", "1 32").split()]
    # The routes of this run (BENCH_ROUTES; runs before the knob: the routes with rows).
    chosen = set(meta["routes"].split()) if "routes" in meta else {
        t.split("|")[2] for t in rows if t.count("|") == 3}
    routes = [(r, t) for r, t in ROUTES if r in chosen]
    cleanups = {r["tag"]: r for r in load_jsonl(os.path.join(a.work, "cleanup.jsonl"))}
    sql = {}
    for path in glob.glob(os.path.join(a.work, "sql.*.json")):
        m = re.match(r"sql\.(\d+)\.(\w+)\.json$", os.path.basename(path))
        if m:
            with open(path) as f:
                sql[(int(m.group(1)), m.group(2))] = json.load(f)

    def get(n, server, route, c):
        return rows.get("%d|%s|%s|%d" % (n, server, route, c))

    def rss_of(n, server, route, c):
        return rss.get("%d|%s|%s|%d" % (n, server, route, c))

    def ratio(n, server, base, route, c):
        r, b = get(n, server, route, c), get(n, base, route, c)
        if not r or not b or not b["rps"]:
            return None
        return r["rps"] / b["rps"]

    L = []
    w = L.append
    total = int(meta.get("total_seconds", "0") or 0)
    w("# magnum-rs vs the real Magnum 23 API — benchmark of %s" % meta.get("started_utc", "?"))
    w("")
    w("Produced by `bench/run.sh` (see `bench/README.md`) in %d min %d s. Everything ran on "
      "one machine over loopback, one server at a time, against the same databases."
      % (total // 60, total % 60))
    w("")
    w("## Machine and load")
    w("")
    w("| | |")
    w("|---|---|")
    w("| cores (`nproc`) | **%s** |" % meta.get("nproc", "?"))
    w("| CPU | %s |" % meta.get("cpu_model", "?"))
    w("| memory | %s |" % meta.get("mem_total", "?"))
    w("| kernel | %s |" % meta.get("kernel", "?"))
    w("| load at start (`uptime`) | `%s` |" % meta.get("uptime_start", "?").strip())
    w("| load at end (`uptime`) | `%s` |" % meta.get("uptime_end", "?").strip())
    w("| magnum-rs | %s, `cargo build --release`, %s |"
      % (meta.get("rs_version", "?"), meta.get("rustc", "?")))
    w("| real Magnum | magnum %s (PyPI), werkzeug %s, `scripts/magnum-api.sh` |"
      % (meta.get("magnum_version", "?"), meta.get("werkzeug_version", "?")))
    w("| database | MariaDB %s (`scripts/mariadb.sh`); SQLite (sqlx's bundled) |"
      % meta.get("mariadb_version", "?"))
    w("| load generator | %s (Debian), `-t1`, Lua script `bench/wrk.lua` |"
      % meta.get("wrk_version", "wrk"))
    w("")
    w("Other developers share this machine (compiles, test runs): the 1-minute load average "
      "at the start of every row is in the full tables (`load1`; it includes this "
      "benchmark's own wrk, server and MariaDB, up to about 3). On 2 cores the load "
      "generator, the server and MariaDB all compete for the same CPUs.")
    w("")
    w("## What was measured")
    w("")
    w("- Data: for each N, one MariaDB database made by Magnum 23's own alembic migrations "
      "(`scripts/magnum-db.sh create`) and one SQLite database made by `magnum-rs migrate`, "
      "both seeded by `bench/seed.py` with the same rows: one template and N clusters of "
      "one project, each with `default-master` (1 node), `default-worker` (2 nodes) and one "
      "extra worker nodegroup (%s)." % ", ".join(
          "%s N=%d: %d clusters / %d nodegroups in %.1f s" % (
              s["backend"], s["n"], s["clusters"], s["nodegroups"], s["seconds"])
          for s in seeds))
    w("- `{id}` is the uuid of cluster N/2; the marker is the uuid of cluster N-60 (the "
      "page is clusters N-59 … N-10). Every request carries `X-Project-Id` (the seeded "
      "project), `X-User-Id`, `X-Roles: reader,member` and `OpenStack-API-Version: "
      "container-infra latest`. Resize bodies alternate `{\"node_count\": 2|3, "
      "\"nodegroup\": \"default-worker\"}` (all answered 202).")
    if "create" in chosen:
        w("- **create** (`POST /v1/clusters`) sends `{\"name\": \"bench-create-wrk\", "
          "\"cluster_template_id\": <the seeded template>, \"master_count\": 1, "
          "\"node_count\": 1}` (names need not be unique). The seeded template names no "
          "image, flavor or keypair: the real Magnum validates each one a template names "
          "against Glance or Nova, which without Keystone answers 403 (`Keystone API "
          "connection failed`); so its figures are those of a create that asks no "
          "OpenStack service, its best case. A `quotas` row lets the project own 10⁹ "
          "clusters (both servers read it before their default of 20). It runs last for "
          "each server; after each of its rows, once the server is idle, `bench/seed.py "
          "cleanup` deletes the clusters it created (`bench-create-%`), their nodegroups "
          "and magnum-rs's operation records of them, so that every row starts from, and "
          "every later server sees, the seeded N clusters.")
    w("- Per row: wrk (`-t1`) for a fixed duration — %s s for the real Magnum, %s s for "
      "magnum-rs — after a %s s warm-up of the same route at 1 connection (not reported); "
      "`--timeout 30s`, so the real Magnum's queueing shows as latency, not as dropped "
      "requests. The threaded Magnum's rows at 32 connections last at least 3 × 32 × its "
      "mean latency at 1 connection, capped at %s s (its 32 requests share one GIL and "
      "finish together late); the duration of every row is in the full tables. req/s = "
      "completed requests ÷ time from the start of the row to the last completed response "
      "(for magnum-rs that is wrk's own figure). Between rows the script waits until the "
      "server is idle again." % (meta.get("mag_secs"), meta.get("rs_secs"),
                                  meta.get("warm_secs"), meta.get("mag_max_secs", "?")))
    w("- **Errors** = non-2xx responses (counted in wrk's `response()` hook) + socket "
      "errors (connect/read/write/timeout). None is dropped from the counts.")
    w("- **Peak RSS** = VmHWM of the server process during the row (`bench/rss.py` resets "
      "it through `/proc/PID/clear_refs` before the row and reads it when the row ends; "
      "since 2026-12-03 it no longer polls single-process servers every 10 ms, which took "
      "CPU from them). For the shipped Magnum, sampled every 10 ms: parent / highest "
      "child, and how many per-connection children were seen (werkzeug forks one per TCP connection; Magnum answers `Connection: "
      "close`, so one per request).")
    w("- **Drivers**: magnum-rs has no management cluster configured, so its ClusterAPI "
      "driver **records the resize operations only** (the 202 commits the new count and a "
      "durable operation record; its operations worker then completes them without "
      "talking to any Kubernetes). The real Magnum casts the resize to a conductor over "
      "oslo.messaging's `fake://` transport, where it vanishes (its 202 writes nothing). "
      "So magnum-rs does more database work per resize than the real Magnum API here: "
      "the API's own reads and transaction (one fsynced commit per 202; statements "
      "below), then the operations worker's work in the same process while the load runs: "
      "woken by a 202, it waits `[operations] coalesce_ms` (20 ms), claims what was "
      "recorded meanwhile in one transaction (of several resizes of one nodegroup only the "
      "newest runs, the older ones end superseded), reads what the driver needs and "
      "completes each running operation in one transaction with the nodegroup and the "
      "cluster: about two commits per pass instead of two per resize.")
    if "create" in chosen:
        w("- **Create**: the real Magnum's 202 counts the project's clusters against the "
          "quota, reads the template and casts `cluster_create` to the absent conductor "
          "(which would insert the cluster): it writes nothing. magnum-rs's 202 commits "
          "the cluster, its `default-master` and `default-worker` nodegroups and an "
          "operation record in one transaction; since issue 28 that transaction also "
          "counts the project's clusters again under a per-project lock (MariaDB: "
          "`SELECT … FOR UPDATE` on the project's row of `magnum_rs_project_lock`, made by "
          "`INSERT IGNORE` just before; SQLite: `BEGIN IMMEDIATE`) and re-checks the "
          "template under a shared lock, so creates of one project are serialised. The "
          "operations worker then completes the create record (no Kubernetes here).")
    w("")

    # ---- summary tables ---------------------------------------------------------------
    missed = {"shipped": [], "threaded": [], "p99": [], "rss": []}
    for n in sizes:
        w("## Summary at N = {:,}".format(n))
        w("")
        w("Requests/s per server, and magnum-rs's ratios to the real Magnum **on the same "
          "MariaDB database** (the targets of issue 7), plus magnum-rs on SQLite for "
          "reference.")
        w("")
        w("| route | conns | Magnum shipped | Magnum threaded | magnum-rs MariaDB | "
          "÷ shipped | ÷ threaded | p99 ms | peak RSS MB | magnum-rs SQLite | ÷ shipped | "
          "÷ threaded |")
        w("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
        for route, _ in routes:
            for c in conns:
                ms, mt = get(n, "magnum-shipped", route, c), get(n, "magnum-threaded", route, c)
                rm, rq = get(n, "magnum-rs-mariadb", route, c), get(n, "magnum-rs-sqlite", route, c)
                r1 = ratio(n, "magnum-rs-mariadb", "magnum-shipped", route, c)
                r2 = ratio(n, "magnum-rs-mariadb", "magnum-threaded", route, c)
                r3 = ratio(n, "magnum-rs-sqlite", "magnum-shipped", route, c)
                r4 = ratio(n, "magnum-rs-sqlite", "magnum-threaded", route, c)
                pk = peak_mb("magnum-rs-mariadb", rss_of(n, "magnum-rs-mariadb", route, c))
                pk2 = peak_mb("magnum-rs-sqlite", rss_of(n, "magnum-rs-sqlite", route, c))
                label = "N=%d %s c=%d" % (n, route, c)
                flag = lambda ok: "" if ok else " ✗"  # noqa: E731
                ok1 = r1 is not None and r1 >= TARGET_SHIPPED
                ok2 = r2 is not None and r2 >= TARGET_THREADED
                if not ok1:
                    missed["shipped"].append("%s (%s)" % (label, fmt_ratio(r1)))
                if not ok2:
                    missed["threaded"].append("%s (%s)" % (label, fmt_ratio(r2)))
                p99 = rm["p99_ms"] if rm else None
                ok3 = True
                if route in READS and c == max(conns):
                    ok3 = p99 is not None and p99 < TARGET_P99_MS
                    if not ok3:
                        missed["p99"].append("%s (%s ms)" % (label, fmt_ms(p99)))
                for who, v in (("MariaDB", pk), ("SQLite", pk2)):
                    if v is not None and v >= TARGET_RSS_MB:
                        missed["rss"].append("%s %s (%.1f MB)" % (label, who, v))
                w("| %s | %d | %s | %s | %s | %s%s | %s%s | %s%s | %s | %s | %s | %s |" % (
                    route, c, fmt_rps(ms and ms["rps"]), fmt_rps(mt and mt["rps"]),
                    fmt_rps(rm and rm["rps"]), fmt_ratio(r1), flag(ok1), fmt_ratio(r2),
                    flag(ok2), fmt_ms(p99), flag(ok3),
                    "%.1f" % pk if pk else "–", fmt_rps(rq and rq["rps"]), fmt_ratio(r3),
                    fmt_ratio(r4)))
        w("")

    w("## Targets of issue 7 (magnum-rs on MariaDB, the same database as the real Magnum)")
    w("")

    def verdict(name, lst):
        if not lst:
            w("- %s: **met on every row**." % name)
        else:
            w("- %s: **missed on %d row(s)**: %s." % (name, len(lst), "; ".join(lst)))
    verdict("≥ %d× the shipped Magnum (processes=2)" % TARGET_SHIPPED, missed["shipped"])
    verdict("≥ %d× the threaded Magnum" % TARGET_THREADED, missed["threaded"])
    verdict("p99 < %g ms at %d connections on reads" % (TARGET_P99_MS, max(conns)), missed["p99"])
    verdict("peak RSS < %d MB (magnum-rs, MariaDB and SQLite, every row)" % TARGET_RSS_MB,
            missed["rss"])
    all_err = sum(errors(r) for r in rows.values())
    w("- Errors over all %d rows: **%d**." % (len(rows), all_err))
    w("")

    # ---- before / after (BENCH_BASELINE_BIN) -------------------------------------------
    def cpu_per(n, server, route, c):
        r, s_ = get(n, server, route, c), rss_of(n, server, route, c)
        if not r or not s_ or not r["requests"] or "cpu_server_s" not in s_:
            return None, None
        return (s_["cpu_server_s"] * 1e6 / r["requests"], s_["cpu_db_s"] * 1e6 / r["requests"])

    def div(x, y):
        return x / y if x is not None and y else None

    f0 = lambda v: "–" if v is None else "{:,.0f}".format(v)  # noqa: E731
    f2 = lambda v: "–" if v is None else "%.2f" % v  # noqa: E731
    before_routes = [r for r in ("create", "resize") if r in chosen and any(
        t.split("|")[1].startswith("magnum-rs-before-") and t.split("|")[2] == r
        for t in rows if t.count("|") == 3)]
    for route in before_routes:
        w("## %s: before ÷ after" % route)
        w("")
        w("The magnum-rs binary from before the change (%s) against the current one (%s), "
          "on the same databases: each backend's before rows ran right after the current "
          "binary's rows on it (same warm-up, durations and cleanup). Each metric: before, "
          "after, and **before ÷ after** — for req/s below 1 means the current binary "
          "serves fewer; for latency and CPU below 1 means it takes more. CPU per request "
          "as in \"Where the CPU goes\" below (MariaDB's figure on SQLite is other "
          "clients of the shared MariaDB)."
          % (meta.get("baseline_version", "?"), meta.get("rs_version", "?")))
        w("")
        w("| N | backend | conns | req/s before | after | ÷ | p50 ms before | after | ÷ | "
          "p99 ms before | after | ÷ | server µs before | after | ÷ | MariaDB µs before | "
          "after | ÷ | load1 before / after | errors before / after |")
        w("|---:|---|---:|" + "---:|" * 15 + "---|---|")
        for n in sizes:
            for backend in ("mariadb", "sqlite"):
                for c in conns:
                    b = get(n, "magnum-rs-before-" + backend, route, c)
                    a_ = get(n, "magnum-rs-" + backend, route, c)
                    if not b and not a_:
                        continue
                    bs, bd = cpu_per(n, "magnum-rs-before-" + backend, route, c)
                    as_, ad = cpu_per(n, "magnum-rs-" + backend, route, c)
                    bl = rss_of(n, "magnum-rs-before-" + backend, route, c) or {}
                    al = rss_of(n, "magnum-rs-" + backend, route, c) or {}
                    g = lambda r, k: r[k] if r else None  # noqa: E731
                    w("| %d | %s | %d | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | "
                      "%s | %s | %s | %s | %s / %s | %s / %s |" % (
                          n, backend, c,
                          fmt_rps(g(b, "rps")), fmt_rps(g(a_, "rps")),
                          f2(div(g(b, "rps"), g(a_, "rps"))),
                          fmt_ms(g(b, "p50_ms")), fmt_ms(g(a_, "p50_ms")),
                          f2(div(g(b, "p50_ms"), g(a_, "p50_ms"))),
                          fmt_ms(g(b, "p99_ms")), fmt_ms(g(a_, "p99_ms")),
                          f2(div(g(b, "p99_ms"), g(a_, "p99_ms"))),
                          f0(bs), f0(as_), f2(div(bs, as_)), f0(bd), f0(ad), f2(div(bd, ad)),
                          f2(bl.get("load1")), f2(al.get("load1")),
                          errors(b) if b else "–", errors(a_) if a_ else "–"))
        w("")
        if route == "create":
            cells = []
            for backend in ("mariadb", "sqlite"):
                for n in sizes:
                    sb = sql.get((n, backend + "_before"), {}).get("create")
                    sa = sql.get((n, backend), {}).get("create")
                    if sb or sa:
                        cells.append("%s N=%d: %s before, %s after" % (
                            backend, n, sb["statements"] if sb else "–",
                            sa["statements"] if sa else "–"))
            if cells:
                w("SQL statements per create (one at a time, `--no-worker`, BEGIN/COMMIT "
                  "included): %s." % "; ".join(cells))
                w("")
                for backend in ("mariadb", "sqlite"):
                    n = max(sizes)
                    for label, key in (("before", backend + "_before"), ("after", backend)):
                        st = sql.get((n, key), {}).get("create")
                        if not st:
                            continue
                        w("- %s, %s (N=%d):" % (label, backend, n))
                        for x in st["sql"]:
                            w("  - `%s`" % x.replace("`", "'"))
                w("")

    if "create" in chosen and cleanups:
        w("## What the create rows created")
        w("")
        w("After each create row (and its warm-up), once the server was idle, `bench/seed.py "
          "cleanup` deleted the clusters named `bench-create-%` with their nodegroups and "
          "operation records, and checked the seeded N clusters and 3N nodegroups were left. "
          "magnum-rs may finish up to `conns` creates whose connection wrk closed at the end "
          "of the row, so it can have created a few more than it answered; the real Magnum "
          "writes nothing (its conductor would).")
        w("")
        w("| N | server | conns | 2xx answers | clusters deleted | nodegroups | operation records |")
        w("|---:|---|---:|---:|---:|---:|---:|")
        for n in sizes:
            for server, _ in SERVERS:
                for c in ["warmup"] + conns:
                    cl_ = cleanups.get("%d|%s|create|%s" % (n, server, c))
                    if not cl_:
                        continue
                    r = get(n, server, "create", c) if c != "warmup" else None
                    ok = sum(v for k, v in r["statuses"].items() if k.startswith("2")) if r else None
                    w("| %d | %s | %s | %s | %d | %d | %s |" % (
                        n, server, c, "–" if ok is None else ok, cl_["clusters"],
                        cl_["nodegroups"], cl_.get("operations", "–")))
        w("")

    # ---- CPU per request -----------------------------------------------------------------
    nproc = int(meta.get("nproc", "2") or 2)
    w("## Where the CPU goes (the profile behind the latency at %d connections)" % max(conns))
    w("")
    w("CPU time per completed request during each row: the server process (for the shipped "
      "Magnum with its reaped per-connection children), MariaDB (`mariadbd`; for magnum-rs "
      "on SQLite the database work is inside the server) and the load generator, from "
      "`/proc/PID/stat` and bash's `time` around wrk. With all three on %d cores, "
      "**ceiling** = %d cores ÷ total CPU per request is the most requests/s the machine "
      "can serve, and by Little's law the **mean** latency at c connections cannot be "
      "below c ÷ ceiling; p99 is above the mean." % (nproc, nproc))
    w("")
    w("| N | route | conns | server | req/s | server µs | MariaDB µs | wrk µs | total µs | "
      "ceiling req/s | mean ≥ ms | p50 ms | p99 ms |")
    w("|---:|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for n in sizes:
        for route, _ in routes:
            for c in conns:
                for server, _ in SERVERS:
                    r, s_ = get(n, server, route, c), rss_of(n, server, route, c)
                    if not r or not s_ or "cpu_server_s" not in s_ or not r["requests"]:
                        continue
                    per = lambda v: None if v is None else v * 1e6 / r["requests"]  # noqa: E731
                    srv, db, wk = per(s_["cpu_server_s"]), per(s_["cpu_db_s"]), per(s_.get("cpu_wrk_s"))
                    total = sum(v for v in (srv, db, wk) if v is not None)
                    ceil = nproc * 1e6 / total if total else None
                    f0 = lambda v: "–" if v is None else "{:,.0f}".format(v)  # noqa: E731
                    w("| %d | %s | %d | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
                        n, route, c, server, fmt_rps(r["rps"]), f0(srv), f0(db), f0(wk),
                        f0(total), fmt_rps(ceil), fmt_ms(c * 1000.0 / ceil) if ceil else "–",
                        fmt_ms(r["p50_ms"]), fmt_ms(r["p99_ms"])))
    w("")

    # ---- cost growth ------------------------------------------------------------------
    growth = {}
    for r in load_jsonl(os.path.join(a.work, "growth.jsonl")):
        growth.setdefault(r["tag"], []).append(r)

    def handler(n, route):
        s = sql.get((n, "mariadb"), {}).get(route)
        h = s and s.get("handler_reads")
        if not h:
            return None, "–"
        parts = ["%s %d" % (k.replace("Handler_read_", ""), v) for k, v in h.items() if v > 0]
        return sum(max(v, 0) for v in h.values()), ", ".join(parts) or "0"

    if len(sizes) >= 2:
        lo, hi = min(sizes), max(sizes)
        w("## Cost growth: magnum-rs at N = {:,} vs N = {:,}".format(lo, hi))
        w("")
        w("A page of 50 should cost the same at both sizes (keyset pagination on the primary "
          "key, lookups through the uuid unique index and the nodegroup `(cluster_id, name)` "
          "unique index; no full scans). Measured in a separate phase at the end of the run: "
          "magnum-rs served both databases side by side and each route was driven for %s s "
          "per size in the order N=%d, N=%d, N=%d, N=%d, so that load from other users of the "
          "machine falls on both sizes alike (the main rows above were taken minutes apart). "
          "req/s = all requests ÷ all measured time of the two runs; p50 = their mean; p99 = "
          "the higher one." % (meta.get("growth_secs", "?"), lo, hi, hi, lo))
        w("")
        w("| backend | route | conns | req/s N=%d | req/s N=%d | N=%d ÷ N=%d | p50 ms N=%d | "
          "p50 ms N=%d | p99 ms N=%d | p99 ms N=%d | errors |" % (lo, hi, hi, lo, lo, hi, lo, hi))
        w("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
        for backend in ("mariadb", "sqlite"):
            for route in ("list", "list_marker", "resize"):
                for c in conns:
                    agg = {}
                    errs = 0
                    for n in (lo, hi):
                        rs_ = growth.get("%d|magnum-rs-%s|%s|%d" % (n, backend, route, c), [])
                        if not rs_:
                            agg[n] = None
                            continue
                        req = sum(x["requests"] for x in rs_)
                        t = sum(x["to_last_s"] for x in rs_)
                        errs += sum(errors(x) for x in rs_)
                        agg[n] = (req / t if t else 0,
                                  sum(x["p50_ms"] for x in rs_) / len(rs_),
                                  max(x["p99_ms"] for x in rs_))
                    if not agg.get(lo) or not agg.get(hi):
                        continue
                    w("| %s | %s | %d | %s | %s | %.2f | %s | %s | %s | %s | %d |" % (
                        backend, route, c, fmt_rps(agg[lo][0]), fmt_rps(agg[hi][0]),
                        agg[hi][0] / agg[lo][0] if agg[lo][0] else 0,
                        fmt_ms(agg[lo][1]), fmt_ms(agg[hi][1]), fmt_ms(agg[lo][2]),
                        fmt_ms(agg[hi][2]), errs))
        w("")
        w("Rows MariaDB's storage engine handed to the server for one request of each route "
          "(global `Handler_read_*` counters around the request, minus what the `SHOW` itself "
          "adds; smallest of 3). `key` = index lookups, `first`/`next` = reads in index order, "
          "`rnd` = re-reads after a sort, `rnd_next` = rows of a table scan. A page costs about "
          "400 rows at either size; on a table as small as N=100's 300 nodegroups the "
          "optimizer may prefer reading all of it in id order to 50 lookups and a sort:")
        w("")
        w("| route | N=%d: rows read | by counter | N=%d: rows read | by counter |" % (lo, hi))
        w("|---|---:|---|---:|---|")
        for route, _ in routes:
            a1, b1 = handler(lo, route)
            a2, b2 = handler(hi, route)
            f = lambda v: "–" if v is None else "{:,}".format(v)  # noqa: E731
            w("| %s | %s | %s | %s | %s |" % (route, f(a1), b1, f(a2), b2))
        w("")

    # ---- SQL per request --------------------------------------------------------------
    if sql:
        w("## SQL statements per request (magnum-rs)")
        w("")
        w("Counted from sqlx's statement log (`RUST_LOG=sqlx=debug`, target `sqlx::query`), "
          "one warmed-up request per route at a time, `serve --no-worker` (the operations "
          "worker that later completes a recorded resize adds its own statements in the "
          "background). BEGIN/COMMIT count as statements.")
        w("")
        keys = sorted(sql)
        w("| route | " + " | ".join("N=%d %s" % k for k in keys) + " |")
        w("|---|" + "---:|" * len(keys))
        for route, _ in routes:
            cells = []
            for k in keys:
                s = sql[k].get(route)
                if not s:
                    cells.append("–")
                    continue
                v = str(s["statements"])
                if s["min_statements"] != s["max_statements"]:
                    v += " (%d–%d)" % (s["min_statements"], s["max_statements"])
                if s["status"] >= 300:
                    v += " [HTTP %d]" % s["status"]
                cells.append(v)
            w("| %s | %s |" % (route, " | ".join(cells)))
        w("")
        k = max((k for k in keys if k[1] == "mariadb"), default=keys[-1])
        w("The statements (N=%d, %s):" % k)
        w("")
        for route, title in routes:
            s = sql[k].get(route)
            if not s:
                continue
            w("- `%s` (%s):" % (route, title))
            for st in s["sql"]:
                w("  - `%s`" % st.replace("`", "'"))
        w("")

    # ---- full tables ------------------------------------------------------------------
    for n in sizes:
        w("## All rows at N = {:,}".format(n))
        w("")
        w("| route | conns | server | req/s | p50 ms | p99 ms | requests | s | errors | "
          "peak RSS MB | load1 | ÷ shipped | ÷ threaded |")
        w("|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
        for route, _ in routes:
            for c in conns:
                for server, _ in SERVERS:
                    r = get(n, server, route, c)
                    s = rss_of(n, server, route, c)
                    if not r:
                        if server in MAIN_SERVERS:
                            w("| %s | %d | %s | (missing) | | | | | | | | | |" % (route, c, server))
                        continue
                    e = errors(r)
                    ecell = str(e)
                    if e:
                        ecell += " (%s; %s)" % (
                            ", ".join("%s: %d" % kv for kv in sorted(r["statuses"].items())),
                            r["first_bad"][:80].replace("|", "/"))
                    rs = server.startswith("magnum-rs")
                    w("| %s | %d | %s | %s | %s | %s | %d | %s | %s | %s | %s | %s | %s |" % (
                        route, c, server, fmt_rps(r["rps"]), fmt_ms(r["p50_ms"]),
                        fmt_ms(r["p99_ms"]), r["requests"],
                        "%g" % s["duration_s"] if s and "duration_s" in s else "–",
                        ecell, rss_cell(server, s),
                        "%.2f" % s["load1"] if s and "load1" in s else "–",
                        fmt_ratio(ratio(n, server, "magnum-shipped", route, c)) if rs else "",
                        fmt_ratio(ratio(n, server, "magnum-threaded", route, c)) if rs else ""))
        w("")
    w("Raw data (wrk and sampler JSON lines, server logs): `%s`." % a.work)
    w("")
    if a.notes:
        with open(a.notes) as f:
            w(f.read().rstrip("\n"))
            w("")
    with open(a.out, "w") as f:
        f.write("\n".join(L))
    print(a.out)


if __name__ == "__main__":
    main()
