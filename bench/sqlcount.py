"""Count the SQL statements magnum-rs issues per request, route by route.

    python sqlcount.py --base http://127.0.0.1:PORT --log SERVER_STDERR_FILE \
        [--mysql-port 13306 --mysql-db DB] ROUTE...

The server must run with RUST_LOG=sqlx=debug (sqlx logs every statement it executes at debug
level, target `sqlx::query`) and `serve --no-worker` (so the operations worker's polling
does not mix in).  ROUTE is `name|METHOD|path|body` (body may be empty; bench/run.sh passes
one for each POST: resize `{"node_count": 3, "nodegroup": "default-worker"}`, create a
cluster named `bench-create-sql` on the seeded template, which it deletes afterwards with
`seed.py cleanup`); every request carries the benchmark's identity headers and
`OpenStack-API-Version: container-infra latest`.  The body may contain `|`.

For each route: one warm-up request (opens pool connections, whose set-up statements are not
the route's), then REPEAT measured requests; each counts the `sqlx::query` lines the server
wrote between sending the request and 0.3 s after the answer.  With --mysql-db it also reads
MariaDB's global `Handler_read_*` counters before and after each request (rows the storage
engine handed to the server: `Handler_read_key`/`_next` for index lookups and range reads,
`Handler_read_rnd_next` for table scans; a full scan of a 10,000-cluster table would show
>= 10,000), minus what the SHOW itself adds, and keeps the smallest over the repetitions (the
counters are global; other clients add noise, never less).
Prints one JSON object: {route: {"status": .., "statements": n, "min_statements": ..,
"max_statements": .., "handler_reads": {counter: delta}, "sql": [the statements]}}.
"""
import argparse
import http.client
import json
import re
import sys
import time
import urllib.parse

HEADERS = {
    "X-Project-Id": "aaaaaaaaaaaa4aaaaaaaaaaaaaaaaaaa",
    "X-User-Id": "u-demo",
    "X-Roles": "reader,member",
    "OpenStack-API-Version": "container-infra latest",
    "Accept": "application/json",
}
REPEAT = 3
LINE = re.compile(r"sqlx::query")
SUMMARY = re.compile(r'summary="((?:[^"\\]|\\.)*)"')
STATEMENT = re.compile(r'db\.statement="((?:[^"\\]|\\.)*)"')
ANSI = re.compile(r"\x1b\[[0-9;]*m")


def request(base, method, path, body):
    u = urllib.parse.urlsplit(base)
    c = http.client.HTTPConnection(u.hostname, u.port, timeout=30)
    headers = dict(HEADERS)
    data = None
    if body:
        data = body.encode()
        headers["Content-Type"] = "application/json"
    c.request(method, path, body=data, headers=headers)
    r = c.getresponse()
    r.read()
    c.close()
    return r.status


def log_size(path):
    with open(path, "rb") as f:
        f.seek(0, 2)
        return f.tell()


def new_lines(path, offset):
    with open(path, "rb") as f:
        f.seek(offset)
        data = f.read().decode("utf-8", "replace")
    return [ANSI.sub("", line) for line in data.splitlines() if LINE.search(ANSI.sub("", line))]


def describe(line):
    s = SUMMARY.search(line)
    st = STATEMENT.search(line)
    text = st.group(1) if st and st.group(1).strip() else (s.group(1) if s else line)
    text = text.encode().decode("unicode_escape") if "\\" in text else text
    text = " ".join(text.split())
    # Long column lists say nothing: SELECT t.id, t.uuid, ... FROM -> SELECT <cols> FROM
    text = re.sub(r"SELECT (.{120,}?) FROM", "SELECT <columns> FROM", text)
    text = re.sub(r"\((\?, ){5,}\?\)", "(?, ..., ?)", text)
    text = re.sub(r"INSERT INTO (\w+) \([^)]{80,}\)", r"INSERT INTO \1 (<columns>)", text)
    return text[:220]


def handler_reads(conn):
    """MariaDB's global Handler_read_* counters (rows the storage engine handed over)."""
    if conn is None:
        return None
    with conn.cursor() as cur:
        cur.execute("SHOW GLOBAL STATUS LIKE 'Handler_read%'")
        return {k: int(v) for k, v in cur.fetchall()}


def delta(a, b, base=None):
    d = {k: b[k] - a.get(k, 0) for k in b}
    if base:
        d = {k: v - base.get(k, 0) for k, v in d.items()}
    return d


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--base", required=True)
    p.add_argument("--log", required=True)
    p.add_argument("--mysql-port", type=int, default=13306)
    p.add_argument("--mysql-db")
    p.add_argument("routes", nargs="+")
    a = p.parse_args()
    conn = None
    if a.mysql_db:
        import pymysql
        conn = pymysql.connect(host="127.0.0.1", port=a.mysql_port, user="magnum",
                               password="magnum", database=a.mysql_db, autocommit=True)
    base = None
    if conn is not None:
        # What SHOW GLOBAL STATUS itself adds (it reads its rows through a temporary table).
        samples = []
        for _ in range(3):
            h0 = handler_reads(conn)
            samples.append(delta(h0, handler_reads(conn)))
        base = min(samples, key=lambda d: sum(d.values()))
    out = {}
    for spec in a.routes:
        name, method, path, body = (spec.split("|", 3) + [""])[:4]
        request(a.base, method, path, body)  # warm-up
        time.sleep(0.3)
        counts, reads, sql, status = [], [], [], None
        for _ in range(REPEAT):
            off = log_size(a.log)
            h0 = handler_reads(conn)
            status = request(a.base, method, path, body)
            time.sleep(0.3)
            h1 = handler_reads(conn)
            lines = new_lines(a.log, off)
            counts.append(len(lines))
            if h0 is not None:
                reads.append(delta(h0, h1, base))
            sql = [describe(x) for x in lines]
        out[name] = {"status": status, "statements": counts[-1], "min_statements": min(counts),
                     "max_statements": max(counts),
                     "handler_reads": min(reads, key=lambda d: sum(d.values())) if reads else None,
                     "sql": sql}
    print(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
