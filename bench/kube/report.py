"""Renders bench/kube's JSON lines as Markdown: report.py META RESULTS.JSONL

The anchors' polling is modelled from their code paths (bench/kube/anchors.md): requests
per cluster per minute, per conductor host, with a fraction p of the fleet in progress.
"""
import json
import sys

# bench/kube/anchors.md: requests per cluster per minute (one conductor host).
ANCHORS = {
    # health poll every 60 s over every cluster: Lease lock (4) + LIST Machines + LIST KCPs;
    # status poll every 10 s over *_IN_PROGRESS clusters: 13 requests per call.
    "magnum-cluster-api v0.38.1": (6.0, 78.0),
    # health poll: 4 GETs per cluster per 60 s; status poll: 3 GETs per 10 s.
    "magnum-capi-helm 1.4.0": (4.0, 18.0),
}


def fmt_counts(c):
    if not c:
        return "none"
    return ", ".join("%s %d" % (k, v) for k, v in sorted(c.items()))


def get_list(c):
    return sum(v for k, v in c.items() if k.split()[0] in ("get", "list"))


def main():
    meta = dict(line.rstrip("\n").split("=", 1) for line in open(sys.argv[1]) if "=" in line)
    rows = [json.loads(line) for line in open(sys.argv[2]) if line.strip()]
    out = []
    w = out.append
    w("# Status sync at scale: magnum-rs's watches on a real kube-apiserver")
    w("")
    w("`bench/kube/run.sh`; how it measures: `bench/kube/README.md`. Machine: %s cores, %s. "
      "magnum-rs %s, kube-apiserver %s, Cluster API CRDs %s." % (
          meta.get("nproc"), meta.get("cpu"), meta.get("magnum_rs"),
          meta.get("KUBE_VERSION"), meta.get("CAPI_VERSION")))
    w("")
    w("- start: `%s`" % meta.get("uptime_start", "").strip())
    w("- end: `%s`" % meta.get("uptime_end", "").strip())
    w("")
    w("Objects per cluster: 1 Cluster, 1 KubeadmControlPlane, 2 MachineDeployments, "
      "4 Machines, each with its status (written directly: no controllers run at this "
      "size). magnum-rs is the leader of one management cluster, as user `magnum-rs` with "
      "`deploy/role.yaml`'s Role; its requests are counted from the API server's audit log.")
    w("")
    w("## Targets")
    w("")
    w("| N | initial sync | RSS after sync | idle get+list / cluster / min | idle CPU | "
      "status → DB p50 / p99 (200 one at a time) | p50 / p99 (5 % at once) | load1 |")
    w("|---|---|---|---|---|---|---|---|")
    for r in rows:
        i, s, c = r["idle"], r["sequential"], r["concurrent"]
        w("| %d | %.2f s | %.1f MB | %.4f | %.2f s in %.0f s | %.1f / %.1f ms | %.1f / %.1f ms "
          "(%d resizes) | %.2f / %.2f / %.2f |" % (
              r["n"], r["initial_sync_s"], r["rss_after_sync_mb"],
              i["get_list_per_cluster_per_min"], i["cpu_s"], i["seconds"],
              s["p50_ms"], s["p99_ms"], c["p50_ms"], c["p99_ms"], c["resizes"],
              r["load1_at_start"], s["load1_at_start"], c["load1_at_start"]))
    if len(rows) >= 2:
        a, b = rows[0], rows[-1]
        per = (b["rss_after_sync_mb"] - a["rss_after_sync_mb"]) / (b["n"] - a["n"]) * 1000
        w("")
        w("RSS per 1,000 clusters (from N = %d to %d): %.1f MB." % (a["n"], b["n"], per))
    w("")
    w("Targets (issue 14): 0 kube requests per idle cluster per minute; RSS < 150 MB at "
      "5,000 clusters; a status change in the database within 1 s at p99 with 5 % of the "
      "fleet resizing; initial sync of 5,000 clusters < 30 s.")
    w("")
    w("## Requests magnum-rs made (audit log)")
    w("")
    w("| N | phase | requests by verb and resource | magnum-rs CPU |")
    w("|---|---|---|---|")
    for r in rows:
        w("| %d | initial sync | %s | |" % (r["n"], fmt_counts(r["sync_requests"])))
        w("| %d | idle %.0f s | %s | %.2f s |" % (r["n"], r["idle"]["seconds"],
                                                fmt_counts(r["idle"]["requests"]), r["idle"]["cpu_s"]))
        w("| %d | %d resizes, one at a time | %s | %.2f s |" % (
            r["n"], r["sequential"]["resizes"], fmt_counts(r["sequential"]["requests"]),
            r["sequential"]["cpu_s"]))
        w("| %d | %d resizes at once | %s | %.2f s |" % (
            r["n"], r["concurrent"]["resizes"], fmt_counts(r["concurrent"]["requests"]),
            r["concurrent"]["cpu_s"]))
    w("")
    w("## Watch restarts")
    w("")
    w("| N | case | API server back after | watches resumed after that | requests | relist "
      "passes | CPU | a resize after it |")
    w("|---|---|---|---|---|---|---|---|")
    for r in rows:
        for key, label in (("restart", "kube-apiserver restart"),
                           ("compaction", "etcd compaction + restart")):
            x = r[key]
            w("| %d | %s | %.2f s | %.2f s | %s | %d | %.2f s | %.1f ms |" % (
                r["n"], label, x["apiserver_restart_s"], x["watches_resumed_after_ready_s"],
                fmt_counts(x["requests"]), x["relist_passes"], x["cpu_s"],
                x["resize_after_ms"]))
    w("")
    w("## Against the anchors' polling (modelled, bench/kube/anchors.md)")
    w("")
    w("Requests per minute against the management cluster's API server. The anchors' "
      "figures are per conductor host (every host polls every cluster); magnum-rs's are "
      "measured (idle: the audit log; 5 %: the resize phase's requests over its duration "
      "are not a per-minute rate, so the idle rate plus the requests per resize are shown).")
    w("")
    w("| N | p in progress | %s | magnum-rs (measured) |" % " | ".join(ANCHORS))
    w("|---|---|%s---|" % ("---|" * len(ANCHORS)))
    for r in rows:
        n = r["n"]
        idle_rate = sum(r["idle"]["requests"].values()) / (r["idle"]["seconds"] / 60.0)
        per_resize = sum(r["concurrent"]["requests"].values()) / max(1, r["concurrent"]["resizes"])
        for p in (0.0, 0.05):
            model = " | ".join("%.0f" % (n * (base + p * prog)) for base, prog in ANCHORS.values())
            if p == 0:
                ours = "%.1f (all of them per replica, none per cluster: %s)" % (
                    idle_rate, fmt_counts(r["idle"]["requests"]))
            else:
                ours = "%.1f while idle + %.1f per resize (once, not per minute)" % (
                    idle_rate, per_resize)
            w("| %d | %.0f %% | %s | %s |" % (n, p * 100, model, ours))
    print("\n".join(out))


if __name__ == "__main__":
    main()
