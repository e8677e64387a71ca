"""One size of the status-sync bench: bench/kube/run.sh calls it once per N on one running
kube-apiserver (scripts/kube.sh with the audit policy of run.sh) and appends one JSON line
to the results file.

    bench.py --env KUBE_ENV --bin MAGNUM_RS --work DIR --n N --have H --port P --out FILE

  1. clusters H+1..N are written to the kube-apiserver (bench/kube/fleet.py; 1..H are there
     from the previous size), a SQLite database with the matching rows is made
     (`magnum-rs migrate`, bench/seed.py);
  2. magnum-rs serves it as leader of one management cluster, as user magnum-rs
     (deploy/role.yaml's Role). Measured:
     - initial sync: from the process start until its four watch caches report a complete
       list (`magnum_rs_watch_synced` in /metrics, polled every 20 ms);
     - RSS (VmRSS) after sync;
     - idle, 60 s: magnum-rs's kube requests by verb and resource (the API server's audit
       log, user magnum-rs), its CPU time (/proc/PID/stat);
     - 200 control-plane resizes 1 -> 3 spread over the fleet, one at a time: the 202, the
       operation 'waiting' in the database, then the controllers' part played by hand
       (fleet.scale_control_plane); latency = from the answer to the KCP status write that
       completes the scale until the nodegroup row reads UPDATE_COMPLETE (polled every 2 ms);
     - the same with 5 % of the fleet resizing at once;
     - kube-apiserver restarted: the requests and the time until magnum-rs's watches run
       again, and one resize after it; then an etcd compaction to the current revision
       followed by a restart, which makes every watch's resourceVersion too old (410): a
       relist.
"""
import argparse
import base64
import json
import os
import sqlite3
import subprocess
import sys
import threading
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "bench"))
sys.path.insert(0, HERE)

import fleet  # noqa: E402
import seed  # noqa: E402

HEADERS = {"X-Project-Id": seed.PROJECT, "X-User-Id": seed.USER, "X-Roles": "reader,member",
           "OpenStack-API-Version": "container-infra latest", "Accept": "application/json",
           "Content-Type": "application/json"}
KINDS = ("clusters", "kubeadmcontrolplanes", "machinedeployments", "machines")
TICK = os.sysconf("SC_CLK_TCK")


def log(*a):
    print("bench/kube:", *a, file=sys.stderr, flush=True)


def wait_until(what, pred, timeout, every=0.02):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        v = pred()
        if v:
            return v
        time.sleep(every)
    raise RuntimeError("timed out after %ss waiting for %s" % (timeout, what))


# --- magnum-rs -----------------------------------------------------------------------------

class Server:
    def __init__(self, binary, config, db, port, logfile):
        self.base = "http://127.0.0.1:%d" % port
        self.started = time.monotonic()
        self.proc = subprocess.Popen(
            [binary, "--config", config, "--database-url", "sqlite://" + db,
             "--bind", "127.0.0.1:%d" % port, "serve"],
            stdin=subprocess.DEVNULL, stdout=open(logfile, "w"), stderr=subprocess.STDOUT,
            env=dict(os.environ, RUST_LOG=os.environ.get("RUST_LOG", "info")))

    def metrics(self):
        try:
            with urllib.request.urlopen(self.base + "/metrics", timeout=5) as r:
                return r.read().decode()
        except OSError:
            return ""

    def metric(self, name, **labels):
        total, found = 0.0, False
        for line in self.metrics().splitlines():
            if not line.startswith(name + "{") and not line.startswith(name + " "):
                continue
            if all('%s="%s"' % kv in line for kv in labels.items()):
                total += float(line.rsplit(" ", 1)[1])
                found = True
        return total if found else None

    def synced(self):
        return all(self.metric("magnum_rs_watch_synced", kind=k) == 1 for k in KINDS)

    def cpu(self):
        with open("/proc/%d/stat" % self.proc.pid) as f:
            parts = f.read().rsplit(")", 1)[1].split()
        return (int(parts[11]) + int(parts[12])) / TICK

    def rss_mb(self):
        with open("/proc/%d/status" % self.proc.pid) as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024.0
        return None

    def resize(self, uuid, count, nodegroup="default-master"):
        body = json.dumps({"node_count": count, "nodegroup": nodegroup}).encode()
        req = urllib.request.Request(self.base + "/v1/clusters/%s/actions/resize" % uuid,
                                     data=body, headers=HEADERS, method="POST")
        with urllib.request.urlopen(req, timeout=30) as r:
            if r.status != 202:
                raise RuntimeError("resize %s: HTTP %d" % (uuid, r.status))

    def stop(self):
        self.proc.terminate()
        try:
            self.proc.wait(30)
        except subprocess.TimeoutExpired:
            self.proc.kill()


# --- the audit log: magnum-rs's requests -------------------------------------------------

class Audit:
    def __init__(self, path):
        self.path = path
        self.offset = 0

    def mark(self):
        """Forget what was logged until now."""
        self.offset = os.path.getsize(self.path) if os.path.exists(self.path) else 0

    def since_mark(self):
        """Requests of user magnum-rs logged since mark(): (verb, resource) -> count. A watch
        counts when it starts (ResponseStarted), anything else when answered."""
        counts, events = {}, []
        if not os.path.exists(self.path):
            return counts, events
        with open(self.path) as f:
            f.seek(self.offset)
            for line in f:
                try:
                    e = json.loads(line)
                except ValueError:
                    continue
                if e.get("user", {}).get("username") != "magnum-rs":
                    continue
                verb = e.get("verb")
                stage = e.get("stage")
                if (verb == "watch") != (stage == "ResponseStarted"):
                    continue
                code = (e.get("responseStatus") or {}).get("code", 200)
                if verb == "watch" and code != 200:
                    verb = "watch-refused"  # e.g. 429 while the API server initialises
                res = (e.get("objectRef") or {}).get("resource", e.get("requestURI", "?"))
                key = "%s %s" % (verb, res)
                counts[key] = counts.get(key, 0) + 1
                events.append((e.get("stageTimestamp"), key))
        return counts, events


def per_cluster_per_min(counts, n, secs, verbs=("get", "list")):
    reqs = sum(v for k, v in counts.items() if k.split()[0] in verbs
               and k.split()[1] in KINDS)
    return reqs / n / (secs / 60.0)


# --- the database ------------------------------------------------------------------------

class Db:
    def __init__(self, path):
        self.conn = sqlite3.connect("file:%s?mode=ro" % path, uri=True, timeout=30,
                                    check_same_thread=False)
        self.lock = threading.Lock()

    def q(self, sql, args=()):
        with self.lock:
            return self.conn.execute(sql, args).fetchall()

    def waiting(self, uuids):
        marks = ",".join("?" * len(uuids))
        rows = self.q("select distinct cluster_uuid from magnum_rs_operation where state = "
                      "'waiting' and cluster_uuid in (%s)" % marks, uuids)
        return {r[0] for r in rows}

    def complete(self, uuids):
        marks = ",".join("?" * len(uuids))
        rows = self.q("select cluster_id from nodegroup where name = 'default-master' and "
                      "status = 'UPDATE_COMPLETE' and cluster_id in (%s)" % marks, uuids)
        return {r[0] for r in rows}

    def failed(self, uuids):
        marks = ",".join("?" * len(uuids))
        return self.q("select cluster_id, status, status_reason from nodegroup where name = "
                      "'default-master' and status like '%%FAILED' and cluster_id in (%s)"
                      % marks, uuids)


def spread(xs, k):
    """k elements of xs, evenly spread over it."""
    if k >= len(xs):
        return list(xs)
    return [xs[int(j * len(xs) / k)] for j in range(k)]


def percentile(xs, p):
    xs = sorted(xs)
    if not xs:
        return None
    k = min(len(xs) - 1, max(0, int(round(p / 100.0 * len(xs) + 0.5)) - 1))
    return xs[k]


def resize_batch(server, kube, db, indices, threads):
    """Resizes the control planes of `indices` to 3 at once and returns the latencies
    (s) from each completing KCP status write to UPDATE_COMPLETE in the database."""
    uuids = [seed.cluster_uuid(i) for i in indices]
    with ThreadPoolExecutor(threads) as pool:
        list(pool.map(lambda u: server.resize(u, 3), uuids))
    wait_until("operations waiting", lambda: db.waiting(uuids) == set(uuids), 120, 0.01)
    t0 = {}
    t1 = {}
    done = threading.Event()

    def poll():
        left = set(uuids)
        end = time.monotonic() + 120
        while left and time.monotonic() < end:
            now = time.monotonic()
            for u in db.complete(list(left)):
                t1[u] = now
                left.discard(u)
            time.sleep(0.002)
        done.set()

    poller = threading.Thread(target=poll)
    poller.start()

    def play(i):
        t0[seed.cluster_uuid(i)] = fleet.scale_control_plane(kube, i, 3)

    with ThreadPoolExecutor(threads) as pool:
        list(pool.map(play, indices))
    poller.join()
    missing = [u for u in uuids if u not in t1]
    if missing:
        raise RuntimeError("%d resizes not UPDATE_COMPLETE within 120 s, e.g. %s; failed: %s"
                           % (len(missing), missing[0], db.failed(missing)[:3]))
    return [max(0.0, t1[u] - t0[u]) for u in uuids]


def etcd_compact(etcd_url):
    key = base64.b64encode(b"/registry").decode()
    req = urllib.request.Request(etcd_url + "/v3/kv/range", data=json.dumps(
        {"key": key, "limit": 1}).encode(), method="POST")
    with urllib.request.urlopen(req, timeout=10) as r:
        rev = int(json.load(r)["header"]["revision"])
    req = urllib.request.Request(etcd_url + "/v3/kv/compaction", data=json.dumps(
        {"revision": rev, "physical": True}).encode(), method="POST")
    urllib.request.urlopen(req, timeout=60).read()
    return rev


def restart_case(args, server, audit, kube, db, index, compact):
    """kube-apiserver restarted (after an etcd compaction when `compact`): magnum-rs's
    requests until all four watches run again, the time that took, its CPU, the reconciler's
    relist passes, and one resize afterwards."""
    relists0 = server.metric("magnum_rs_reconcile_passes_total", trigger="relist") or 0
    cpu0, load0 = server.cpu(), os.getloadavg()[0]
    audit.mark()
    if compact:
        etcd_compact(args.etcd)
    t = time.monotonic()
    subprocess.run([os.path.join(ROOT, "scripts/kube.sh"), "restart-apiserver", args.kdir],
                   check=True, stdout=subprocess.DEVNULL)
    ready = time.monotonic()

    def resumed():
        counts, _ = audit.since_mark()
        return all(counts.get("watch " + k, 0) >= 1 for k in KINDS) and counts

    counts = wait_until("watches resumed", resumed, 120, 0.05)
    resumed_at = time.monotonic()
    # the relist passes (if any) are counted by the reconciler after the lists
    if any(counts.get("list " + k) for k in KINDS):
        wait_until("relist passes", lambda: (server.metric(
            "magnum_rs_reconcile_passes_total", trigger="relist") or 0) > relists0, 60)
    lat = resize_batch(server, kube, db, [index], 1)[0]
    counts, _ = audit.since_mark()
    return {
        "compacted": compact, "load1_at_start": load0,
        "apiserver_restart_s": round(ready - t, 2),
        "watches_resumed_after_ready_s": round(resumed_at - ready, 2),
        "requests": counts,
        "relist_passes": (server.metric("magnum_rs_reconcile_passes_total", trigger="relist") or 0)
        - relists0,
        "cpu_s": round(server.cpu() - cpu0, 2),
        "resize_after_ms": round(lat * 1000, 1),
    }


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--env", required=True)
    ap.add_argument("--bin", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--n", type=int, required=True)
    ap.add_argument("--have", type=int, default=0)
    ap.add_argument("--port", type=int, default=19790)
    ap.add_argument("--out", required=True)
    ap.add_argument("--idle", type=int, default=60)
    ap.add_argument("--sequential", type=int, default=200)
    ap.add_argument("--threads", type=int, default=12)
    args = ap.parse_args()
    kube, env = fleet.from_env(args.env)
    args.kdir = os.path.dirname(args.env)
    args.etcd = env["ETCD_URL"]
    n = args.n
    res = {"n": n}

    # 1. the fleet and the database
    fleet.apply_rbac(kube, os.path.join(ROOT, "deploy/role.yaml"))
    if n > args.have:
        secs, reqs = fleet.create_fleet(kube, args.have + 1, n, args.threads)
        log("N=%d: wrote clusters %d..%d (%d requests) in %.0f s"
            % (n, args.have + 1, n, reqs, secs))
        res["fleet_write_s"] = round(secs, 1)
    db_path = os.path.join(args.work, "bench-%d.db" % n)
    for suffix in ("", "-wal", "-shm"):
        if os.path.exists(db_path + suffix):
            os.remove(db_path + suffix)
    config = os.path.join(args.work, "magnum-rs-kube.toml")
    subprocess.run([args.bin, "--config", config, "--database-url", "sqlite://" + db_path,
                    "migrate"], check=True, stdout=subprocess.DEVNULL)
    subprocess.run([sys.executable, os.path.join(ROOT, "bench/seed.py"), "sqlite", "--file",
                    db_path, "--n", str(n)], check=True, stdout=subprocess.DEVNULL)

    # 2. magnum-rs as leader
    audit = Audit(os.path.join(args.kdir, "audit.log"))
    audit.mark()
    # A fresh start, not a failover: the Lease of the previous size's server (it does not
    # give the Lease up when stopped) would delay leadership by up to its 15 s.
    kube.req("DELETE", "/apis/coordination.k8s.io/v1/namespaces/%s/leases/magnum-rs" % fleet.NS,
             ok=(200, 404))
    res["load1_at_start"] = os.getloadavg()[0]
    server = Server(args.bin, config, db_path, args.port,
                    os.path.join(args.work, "magnum-rs-%d.log" % n))
    try:
        wait_until("initial sync", server.synced, 600, 0.02)
        res["initial_sync_s"] = round(time.monotonic() - server.started, 2)
        res["cached_objects"] = {k: server.metric("magnum_rs_watch_cached_objects", kind=k)
                                 for k in KINDS}
        counts, _ = audit.since_mark()
        res["sync_requests"] = counts
        res["rss_after_sync_mb"] = round(server.rss_mb(), 1)
        log("N=%d: synced in %.2f s, RSS %.1f MB, %s" % (n, res["initial_sync_s"],
                                                        res["rss_after_sync_mb"], counts))

        # idle
        audit.mark()
        cpu0, t, load0 = server.cpu(), time.monotonic(), os.getloadavg()[0]
        time.sleep(args.idle)  # the measurement window itself, not a synchronisation
        secs = time.monotonic() - t
        counts, _ = audit.since_mark()
        res["idle"] = {"load1_at_start": load0, "seconds": round(secs, 1), "requests": counts,
                       "cpu_s": round(server.cpu() - cpu0, 3),
                       "get_list_per_cluster_per_min": per_cluster_per_min(counts, n, secs),
                       "rss_mb": round(server.rss_mb(), 1)}
        log("N=%d: idle %s" % (n, res["idle"]))

        # sequential resizes spread over the fleet, on clusters no earlier size resized
        # (their objects stay at 3; the fleet is kept from one size to the next)
        db = Db(db_path)
        touched_file = os.path.join(args.work, "touched.json")
        touched = set(json.load(open(touched_file))) if os.path.exists(touched_file) else set()
        fresh = [i for i in range(1, n + 1) if i not in touched]
        seq = spread(fresh, args.sequential)
        audit.mark()
        cpu0, load0 = server.cpu(), os.getloadavg()[0]
        lats = []
        for i in seq:
            lats += resize_batch(server, kube, db, [i], 1)
        counts, _ = audit.since_mark()
        res["sequential"] = {"load1_at_start": load0,
            "resizes": len(lats), "p50_ms": round(percentile(lats, 50) * 1000, 1),
            "p99_ms": round(percentile(lats, 99) * 1000, 1),
            "max_ms": round(max(lats) * 1000, 1), "requests": counts,
            "cpu_s": round(server.cpu() - cpu0, 2)}
        log("N=%d: sequential %s" % (n, res["sequential"]))

        # 5 % at once, on clusters not resized yet
        used = set(seq)
        rest = [i for i in fresh if i not in used]
        m = max(1, n // 20)
        batch = spread(rest, m)
        audit.mark()
        cpu0, load0 = server.cpu(), os.getloadavg()[0]
        lats = resize_batch(server, kube, db, batch, args.threads)
        counts, _ = audit.since_mark()
        res["concurrent"] = {"load1_at_start": load0,
            "resizes": len(lats), "p50_ms": round(percentile(lats, 50) * 1000, 1),
            "p99_ms": round(percentile(lats, 99) * 1000, 1),
            "max_ms": round(max(lats) * 1000, 1), "requests": counts,
            "cpu_s": round(server.cpu() - cpu0, 2)}
        log("N=%d: 5%% at once %s" % (n, res["concurrent"]))
        used.update(batch)
        rest = [i for i in fresh if i not in used]
        used.update(rest[:2])
        with open(touched_file, "w") as f:
            json.dump(sorted(touched | used), f)

        # watch restarts
        res["restart"] = restart_case(args, server, audit, kube, db, rest[0], False)
        log("N=%d: restart %s" % (n, res["restart"]))
        res["compaction"] = restart_case(args, server, audit, kube, db, rest[1], True)
        log("N=%d: compaction + restart %s" % (n, res["compaction"]))
        res["rss_end_mb"] = round(server.rss_mb(), 1)
    finally:
        server.stop()
    with open(args.out, "a") as f:
        f.write(json.dumps(res) + "\n")


if __name__ == "__main__":
    main()
