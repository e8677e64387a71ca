"""Peak RSS of a server process (and its forked children) while a load runs.

    python3 rss.py PID [--children] [--interval 0.01] [--ready FILE]
    python3 rss.py PID --quiesce [--max 90]

Resets the peak of PID first (`echo 5 > /proc/PID/clear_refs`, Linux >= 4.0), so VmHWM then
is the peak since this sampler started, i.e. during one benchmark row.  Without --children
it then only waits for SIGTERM/SIGINT and reads VmHWM once (the kernel keeps the peak);
with --children it samples every interval.  Then it prints one JSON line:

    {"root_hwm_kb": .., "root_rss_kb": .., "child_hwm_kb": .., "children_seen": ..,
     "reset": true|false, "samples": ..}

With --children it also reads /proc/PID/task/*/children every interval (the per-connection
children werkzeug's ForkingMixIn forks for Magnum's shipped processes=2 mode) and keeps the
highest VmHWM any child reached when sampled (children live ~0.1 s; sampling every 10 ms
sees nearly all of them).  --ready FILE is created once the peak is reset and the signal
handlers are in place (the caller starts the load only then).

--quiesce waits (at most --max seconds) until PID and its descendants have used less than 5 %
of a core over two consecutive 0.2 s windows and no forked child is left, then prints the
seconds waited: a server that still works through requests the previous row left queued
(werkzeug keeps serving connections wrk has closed) must not slow the next row.
"""
import argparse
import json
import os
import signal
import sys
import time

stop = False


def on_signal(signum, frame):
    global stop
    stop = True


def status_kb(pid, field):
    try:
        with open("/proc/%d/status" % pid) as f:
            for line in f:
                if line.startswith(field):
                    return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        return None
    return None


def children_of(pid):
    out = set()
    try:
        tasks = os.listdir("/proc/%d/task" % pid)
    except OSError:
        return out
    for t in tasks:
        try:
            with open("/proc/%d/task/%s/children" % (pid, t)) as f:
                out.update(int(x) for x in f.read().split())
        except (OSError, ValueError):
            pass
    return out


def tree(pid):
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        todo.extend(children_of(p))
    return out


def cpu_ticks(pids):
    total = 0
    for p in pids:
        try:
            with open("/proc/%d/stat" % p) as f:
                rest = f.read().rsplit(")", 1)[1].split()
            total += int(rest[11]) + int(rest[12])  # utime, stime
        except (OSError, IndexError, ValueError):
            pass
    return total


def quiesce(pid, max_s):
    hz = os.sysconf("SC_CLK_TCK")
    t0 = time.monotonic()
    calm = 0
    while time.monotonic() - t0 < max_s:
        pids = tree(pid)
        a = cpu_ticks(pids)
        time.sleep(0.2)
        b = cpu_ticks(pids)
        busy = (b - a) / hz / 0.2
        calm = calm + 1 if busy < 0.05 and len(tree(pid)) == 1 else 0
        if calm >= 2:
            break
    print("%.1f" % (time.monotonic() - t0))
    return 0


def main():
    p = argparse.ArgumentParser()
    p.add_argument("pid", type=int)
    p.add_argument("--children", action="store_true")
    p.add_argument("--interval", type=float, default=0.01)
    p.add_argument("--ready")
    p.add_argument("--quiesce", action="store_true")
    p.add_argument("--max", type=float, default=90)
    a = p.parse_args()
    if a.quiesce:
        return quiesce(a.pid, a.max)
    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    reset = True
    try:
        with open("/proc/%d/clear_refs" % a.pid, "w") as f:
            f.write("5")
    except OSError:
        reset = False
    if not a.children:
        # One process: the kernel keeps its peak (VmHWM) itself, so it is read once when the
        # row ends; polling every 10 ms would only take CPU from the server being measured.
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM, signal.SIGINT})
        if a.ready:
            open(a.ready, "w").close()
        signal.sigwait({signal.SIGTERM, signal.SIGINT})
        h, r = status_kb(a.pid, "VmHWM:"), status_kb(a.pid, "VmRSS:")
        print(json.dumps({"root_hwm_kb": h or 0, "root_rss_kb": r or 0, "child_hwm_kb": 0,
                          "children_seen": 0, "reset": reset, "samples": 1}))
        return 0
    if a.ready:
        open(a.ready, "w").close()
    root_hwm = root_rss = child_hwm = 0
    seen = set()
    samples = 0
    while True:
        samples += 1
        h = status_kb(a.pid, "VmHWM:")
        r = status_kb(a.pid, "VmRSS:")
        if h:
            root_hwm = max(root_hwm, h)
        if r:
            root_rss = max(root_rss, r)
        if a.children:
            for c in children_of(a.pid):
                seen.add(c)
                ch = status_kb(c, "VmHWM:")
                if ch:
                    child_hwm = max(child_hwm, ch)
        if stop:
            break
        time.sleep(a.interval)
    print(json.dumps({"root_hwm_kb": root_hwm, "root_rss_kb": root_rss,
                      "child_hwm_kb": child_hwm, "children_seen": len(seen),
                      "reset": reset, "samples": samples}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
