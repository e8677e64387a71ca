#!/usr/bin/env bash
# magnum-rs against the real Magnum 23 API, side by side, in one run (issue 7).
#
#   bench/run.sh
#
# 1. builds magnum-rs (cargo build --release) and installs wrk (Debian) when missing;
# 2. for each N in $BENCH_SIZES (default "100 10000"):
#    - a MariaDB database made by Magnum 23's own migrations (scripts/magnum-db.sh create)
#      and a SQLite one made by `magnum-rs migrate`, both seeded by bench/seed.py with N
#      clusters (master + worker + one extra nodegroup each) and one template;
#    - serves, one after another, on loopback: the real Magnum as magnum-api ships
#      (werkzeug, processes=2), the real Magnum threaded (one process), magnum-rs on the
#      same MariaDB database, magnum-rs on the SQLite database;
#    - drives each with wrk at 1 and 32 connections for a fixed duration per route,
#      sampling the server's peak RSS (bench/rss.py), and counts magnum-rs's SQL statements
#      per request (bench/sqlcount.py, RUST_LOG=sqlx=debug); the create route runs last
#      for each server, and what each of its rows created is deleted after it
#      (bench/seed.py cleanup), so every row and every later server sees N clusters;
#    - with BENCH_BASELINE_BIN, right after magnum-rs's rows on each backend, that older
#      magnum-rs binary on the same database for the routes in $BENCH_BASELINE_ROUTES
#      (servers magnum-rs-before-mariadb / magnum-rs-before-sqlite);
# 3. cost growth: magnum-rs on the smallest and the largest N served side by side, list,
#    list+marker and resize measured interleaved (small, large, large, small), so that load
#    from other users of the machine hits both sizes alike;
# 4. writes bench/results/<UTC date>.md (bench/report.py); raw data stays in $BENCH_WORK.
#
# Env: BENCH_SIZES ("100 10000"), BENCH_CONNS ("1 32"), BENCH_MAGNUM_SECONDS (10: per row
#      for the real Magnum), BENCH_MAGNUM_MAX_SECONDS (20: cap of the longer rows of the
#      threaded Magnum at 32 connections, see bench_server), BENCH_RS_SECONDS (5: per row for
#      magnum-rs), BENCH_GROWTH_SECONDS (2: per run of the cost-growth phase),
#      BENCH_WARMUP_SECONDS (1: per route and server, at 1 connection, not reported),
#      BENCH_PORT_BASE (19720: ports BASE+1..BASE+5), BENCH_WORK (raw output; default
#      ${MAGNUM_RS_CACHE:-~/.cache/magnum-rs}/bench/<timestamp>), BENCH_RESULTS (the .md),
#      BENCH_ROUTES (all: "nodegroups list list_marker get resize create"; a subset runs
#      only those, in that order, also in the SQL counts and the cost-growth phase),
#      BENCH_BASELINE_BIN (unset: none; a magnum-rs binary built before a change, e.g.
#      ~/.cache/magnum-rs/bench-bin/magnum-rs-08ee997), BENCH_BASELINE_ROUTES ("resize
#      create", within BENCH_ROUTES), BENCH_BASELINE_CONFIG (its configuration file;
#      default: etc/magnum-rs.toml of the commit named by the binary's suffix after the
#      last "-", via git show, since a newer file may have settings it refuses),
#      MAGNUM_RS_CACHE, MARIADB_PORT (13306).
# Only processes this script started are stopped (by pid). Takes about 22 minutes on 2 cores
# with a warm build.
set -euo pipefail
unset RUST_LOG   # magnum-rs's shipped log filter (magnum_rs=info), except for the SQL count

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(dirname "$HERE")"
cd "$ROOT"

CACHE="${MAGNUM_RS_CACHE:-$HOME/.cache/magnum-rs}"
DBPORT="${MARIADB_PORT:-13306}"
SIZES="${BENCH_SIZES:-100 10000}"
MAG_SECS="${BENCH_MAGNUM_SECONDS:-10}"
MAG_MAX_SECS="${BENCH_MAGNUM_MAX_SECONDS:-20}"
GROWTH_SECS="${BENCH_GROWTH_SECONDS:-2}"
RS_SECS="${BENCH_RS_SECONDS:-5}"
WARM_SECS="${BENCH_WARMUP_SECONDS:-1}"
CONNS="${BENCH_CONNS:-1 32}"
PORT_BASE="${BENCH_PORT_BASE:-19720}"
STAMP="$(date -u +%Y%m%dT%H%M%SZ)"
WORK="${BENCH_WORK:-$CACHE/bench/$STAMP}"
RESULTS="${BENCH_RESULTS:-$HERE/results/$(date -u +%Y-%m-%d).md}"
BIN="$ROOT/target/release/magnum-rs"
PROJECT=aaaaaaaaaaaa4aaaaaaaaaaaaaaaaaaa
ALL_ROUTES="nodegroups list list_marker get resize create"
ROUTES_SEL="${BENCH_ROUTES:-$ALL_ROUTES}"
BASE_BIN="${BENCH_BASELINE_BIN:-}"
BASE_ROUTES="${BENCH_BASELINE_ROUTES:-resize create}"
BASE_CONF="${BENCH_BASELINE_CONFIG:-}"
ROWS="$WORK/rows.jsonl"     # one line per wrk run (bench/wrk.lua)
RSS="$WORK/rss.jsonl"       # one line per wrk run (bench/rss.py), same tag
META="$WORK/meta.tsv"       # key<TAB>value

for r in $ROUTES_SEL $BASE_ROUTES; do
  [[ " $ALL_ROUTES " == *" $r "* ]] || { echo "bench/run.sh: unknown route '$r' (routes: $ALL_ROUTES)" >&2; exit 2; }
done
if [[ -n "$BASE_BIN" ]]; then
  BASE_BIN="${BASE_BIN/#\~/$HOME}"
  [[ -x "$BASE_BIN" ]] || { echo "bench/run.sh: BENCH_BASELINE_BIN $BASE_BIN is not an executable" >&2; exit 2; }
fi
mkdir -p "$WORK" "$(dirname "$RESULTS")"
: >"$ROWS"; : >"$RSS"; : >"$META"
SHUTDOWN_HUNG=0
say() { printf '[bench %s] %s\n' "$(date -u +%H:%M:%S)" "$*" >&2; }
meta() { printf '%s\t%s\n' "$1" "$(printf '%s' "$2" | tr '\t\n' '  ')" >>"$META"; }
T0=$SECONDS

# --- servers this script started: stopped on exit, by pid / port -------------------------
RS_PID=""
RS_PIDS=()
MAGNUM_PORT=""
cleanup() {
  local p
  for p in "${RS_PIDS[@]}"; do
    if kill -0 "$p" 2>/dev/null; then kill "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; fi
  done
  if [[ -n "$MAGNUM_PORT" ]]; then scripts/magnum-api.sh stop "$MAGNUM_PORT" >/dev/null 2>&1 || true; fi
}
trap cleanup EXIT

meta started_utc "$(date -u '+%Y-%m-%d %H:%M:%S UTC')"
meta uptime_start "$(uptime)"
meta nproc "$(nproc)"
meta cpu_model "$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n1)"
meta mem_total "$(sed -n 's/^MemTotal:[[:space:]]*//p' /proc/meminfo)"
meta kernel "$(uname -r)"
meta mag_secs "$MAG_SECS"; meta mag_max_secs "$MAG_MAX_SECS"; meta growth_secs "$GROWTH_SECS"; meta rs_secs "$RS_SECS"; meta warm_secs "$WARM_SECS"
meta sizes "$SIZES"; meta conns "$CONNS"; meta routes "$ROUTES_SEL"
say "work directory $WORK; load: $(uptime)"

# --- tools ------------------------------------------------------------------------------
if ! command -v wrk >/dev/null 2>&1; then
  say "installing wrk (apt)"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >&2
  apt-get install -y -qq wrk >&2
fi
meta wrk_version "$(wrk --version 2>&1 | head -n1 | cut -d' ' -f1-2)"
say "cargo build --release"
tb=$SECONDS
cargo build --release 2>&1 | tail -n 3 >&2
meta build_seconds "$((SECONDS - tb))"
meta rs_version "$("$BIN" --version) ($(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo '?'))"
meta rustc "$(rustc --version)"
if [[ -n "$BASE_BIN" ]]; then
  BASE_COMMIT="${BASE_BIN##*-}"
  if [[ -z "$BASE_CONF" ]]; then
    BASE_CONF="$WORK/magnum-rs-baseline.toml"
    if ! [[ "$BASE_COMMIT" =~ ^[0-9a-f]{7,40}$ ]] \
        || ! git -C "$ROOT" show "$BASE_COMMIT:etc/magnum-rs.toml" >"$BASE_CONF" 2>/dev/null; then
      say "BENCH_BASELINE_BIN's name ends in no commit git knows ('$BASE_COMMIT'): set BENCH_BASELINE_CONFIG"
      exit 2
    fi
  fi
  meta baseline_bin "$BASE_BIN"
  meta baseline_version "$("$BASE_BIN" --version) ($BASE_COMMIT; configuration $(
    [[ "$BASE_CONF" == "$WORK/magnum-rs-baseline.toml" ]] && echo "etc/magnum-rs.toml of $BASE_COMMIT" || echo "$BASE_CONF"))"
fi
scripts/mariadb.sh start
VENV="$(scripts/venv.sh magnum)"
PY="$VENV/bin/python"
meta mariadb_version "$(mariadb --no-defaults --version | sed 's/^mariadb *//')"
meta magnum_version "$("$PY" -c 'import importlib.metadata as m; print(m.version("magnum"))')"
meta werkzeug_version "$("$PY" -c 'import importlib.metadata as m; print(m.version("werkzeug"))')"

port_free() { ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# --- magnum-rs ----------------------------------------------------------------------------
# RS_BIN / RS_CONF (environment of the call) pick another binary and configuration file.
start_rs() {  # start_rs DATABASE_URL PORT LOGFILE [serve flags...]; sets RS_PID
  local url="$1" port="$2" log="$3"; shift 3
  port_free "$port" || { say "port $port is in use"; exit 1; }
  "${RS_BIN:-$BIN}" --config "${RS_CONF:-$ROOT/etc/magnum-rs.toml}" --database-url "$url" \
    --bind "127.0.0.1:$port" serve "$@" </dev/null >"$log" 2>&1 &
  RS_PID=$!
  RS_PIDS+=("$RS_PID")
  local _
  for _ in $(seq 1 300); do
    kill -0 "$RS_PID" 2>/dev/null || { say "magnum-rs exited:"; tail -n 20 "$log" >&2; exit 1; }
    [[ "$(curl -s -m 2 -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port/")" == 200 ]] && return 0
    sleep 0.1
  done
  say "magnum-rs not ready on $port"; tail -n 20 "$log" >&2; exit 1
}
stop_rs() {  # stop_rs [PID] (default: the last started)
  local pid="${1:-$RS_PID}" _
  [[ -n "$pid" ]] || return 0
  kill "$pid" 2>/dev/null || true
  # A graceful shutdown takes well under a second; one that hangs is a bug the run reports.
  for _ in $(seq 1 300); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  if kill -0 "$pid" 2>/dev/null; then
    say "magnum-rs (pid $pid) did not exit within 30 s of SIGTERM: killing it; the run fails"
    kill -9 "$pid" 2>/dev/null || true
    SHUTDOWN_HUNG=1
  fi
  wait "$pid" 2>/dev/null || true
  [[ "$pid" == "$RS_PID" ]] && RS_PID=""
  return 0
}

# --- one benchmark row --------------------------------------------------------------------
HDR=(-H "X-Project-Id: $PROJECT" -H "X-User-Id: u-demo" -H "X-Roles: reader,member"
     -H "OpenStack-API-Version: container-infra latest" -H "Accept: application/json")

CLK_TCK="$(getconf CLK_TCK)"
# cpu_ticks PID: user + system time of PID and its reaped children, in clock ticks (0: none).
cpu_ticks() {
  local f
  [[ "$1" != 0 && -r "/proc/$1/stat" ]] || { echo 0; return; }
  # Fields after the parenthesised command name: utime is the 12th, then stime, cutime, cstime.
  f="$(sed 's/^.*) //' "/proc/$1/stat")"
  awk '{print $12 + $13 + $14 + $15}' <<<"$f"
}

# run_row TAG PID CHILDREN(0|1) ROUTE METHOD URL SECONDS CONNS [OUT]
run_row() {
  local tag="$1" pid="$2" children="$3" route="$4" method="$5" url="$6" secs="$7" conns="$8"
  local out="${9:-$ROWS}" rss_out="$WORK/rss.cur.json" ready="$WORK/rss.ready" sampler load1 _
  local body=""; [[ "$route" == create ]] && body="$CREATE_BODY"   # wrk.lua: BENCH_BODY
  read -r load1 _ </proc/loadavg
  local cflag=(); [[ "$children" == 1 ]] && cflag=(--children)
  rm -f "$ready"
  python3 "$HERE/rss.py" "$pid" "${cflag[@]}" --ready "$ready" </dev/null >"$rss_out" &
  sampler=$!
  for _ in $(seq 1 100); do [[ -e "$ready" ]] && break; sleep 0.02; done
  # CPU time (clock ticks) of the server (with its reaped children: werkzeug's forks) and
  # of MariaDB during the row, and wrk's own (bash's `time`): where each request's CPU goes.
  local db_pid cpu0_srv cpu0_db cpu1_srv cpu1_db wrk_cpu
  db_pid="$(cat "$CACHE/mariadb.run/mariadb.pid" 2>/dev/null || echo 0)"
  cpu0_srv="$(cpu_ticks "$pid")"; cpu0_db="$(cpu_ticks "$db_pid")"
  wrk_cpu="$( { TIMEFORMAT='%U %S'; time BENCH_OUT="$out" BENCH_TAG="$tag" BENCH_METHOD="$method" BENCH_COUNTS="2,3" BENCH_BODY="$body" \
    wrk -t1 -c"$conns" -d"${secs}s" --timeout 30s -s "$HERE/wrk.lua" "${HDR[@]}" "$url" \
    </dev/null >"$WORK/wrk.last.out" 2>&1 || { say "wrk failed for $tag:"; cat "$WORK/wrk.last.out" >&2; }; } 2>&1 | tail -n1)"
  cpu1_srv="$(cpu_ticks "$pid")"; cpu1_db="$(cpu_ticks "$db_pid")"
  kill -TERM "$sampler" 2>/dev/null || true
  wait "$sampler" 2>/dev/null || true
  if [[ "$out" == "$ROWS" ]]; then
    python3 - "$tag" "$load1" "$rss_out" "$secs" "$((cpu1_srv - cpu0_srv))" "$((cpu1_db - cpu0_db))" \
      "$wrk_cpu" "$CLK_TCK" >>"$RSS" <<'PY'
import json, sys
tag, load1, path, secs, srv, db, wrk, tck = sys.argv[1:9]
try:
    d = json.load(open(path))
except Exception:
    d = {}
try:
    wrk_s = sum(float(x) for x in wrk.split())
except ValueError:
    wrk_s = None
d.update(tag=tag, load1=float(load1), duration_s=float(secs),
         cpu_server_s=int(srv) / float(tck), cpu_db_s=int(db) / float(tck), cpu_wrk_s=wrk_s)
print(json.dumps(d))
PY
  fi
  rm -f "$rss_out" "$ready"
}

# Let a server finish what the last row left queued before the next row: werkzeug keeps
# serving connections wrk has already closed (fork mode: up to 32 queued requests; threaded
# mode: 32 requests sharing the GIL); magnum-rs's operations worker completes recorded
# resizes. Waits until the server's process tree is idle (bench/rss.py --quiesce).
quiesce() {  # quiesce PID
  local waited
  waited="$(python3 "$HERE/rss.py" "$1" --quiesce --max 120)"
  QUIESCE_LAST="$waited"
  QUIESCE_TOTAL="$(python3 -c "print(round($QUIESCE_TOTAL + $waited, 1))")"
}
QUIESCE_TOTAL=0

# Mean latency (s) of the last row in $ROWS.
last_mean_s() { tail -n1 "$ROWS" | python3 -c 'import json,sys; print(json.load(sys.stdin)["mean_ms"] / 1000)'; }

# The routes: name|METHOD|path (cluster and marker filled in per N), in this order (create
# last: it adds clusters, deleted again after each of its rows), restricted to NAMES
# (default: $BENCH_ROUTES). The create body is $CREATE_BODY (run_row, sqlcount).
routes() {  # routes CLUSTER_UUID MARKER_UUID [NAMES]
  local names=" ${3:-$ROUTES_SEL} " spec
  for spec in "nodegroups|GET|/v1/clusters/$1/nodegroups" \
      "list|GET|/v1/clusters?limit=50" \
      "list_marker|GET|/v1/clusters?limit=50&marker=$2" \
      "get|GET|/v1/clusters/$1" \
      "resize|POST|/v1/clusters/$1/actions/resize" \
      "create|POST|/v1/clusters"; do
    [[ "$names" == *" ${spec%%|*} "* ]] && echo "$spec"
  done
  return 0
}

# The create route's clusters are named ${CREATE_PREFIX}… (bench/seed.py cleanup deletes them).
read -r TEMPLATE_UUID CREATE_PREFIX < <(python3 -c \
  'import sys; sys.path.insert(0, sys.argv[1]); import seed; print(seed.TEMPLATE_UUID, seed.CREATE_PREFIX)' "$HERE")
create_body() {  # create_body NAME_SUFFIX
  printf '{"name": "%s%s", "cluster_template_id": "%s", "master_count": 1, "node_count": 1}' \
    "$CREATE_PREFIX" "$1" "$TEMPLATE_UUID"
}
CREATE_BODY="$(create_body wrk)"   # names need not be unique (Magnum's neither)

# After a create row (the server idle again): delete the clusters it created, their
# nodegroups and operation records, and check the seeded N are left (bench/seed.py cleanup).
# One JSON line per call in $WORK/cleanup.jsonl.
cleanup_created() {  # cleanup_created TAG N mysql|sqlite
  local tag="$1" n="$2" kind="$3" args
  if [[ "$kind" == mysql ]]; then args=(mysql --port "$DBPORT" --db "bench_n$n")
  else args=(sqlite --file "$WORK/n$n.sqlite"); fi
  "$PY" "$HERE/seed.py" cleanup "${args[@]}" --n "$n" \
    | python3 -c 'import json,sys; d=json.loads(sys.stdin.read()); d["tag"]=sys.argv[1]; print(json.dumps(d))' "$tag" \
    >>"$WORK/cleanup.jsonl"
  # InnoDB purges the deleted rows in the background: let mariadbd settle (at most 10 s; it
  # is shared with other users of the machine) so that the next row does not pay for it.
  if [[ "$kind" == mysql ]]; then
    python3 "$HERE/rss.py" "$(cat "$CACHE/mariadb.run/mariadb.pid")" --quiesce --max 10 >/dev/null || true
  fi
}

# bench_server N SERVER PID CHILDREN BASE SECONDS CLUSTER MARKER DBKIND(mysql|sqlite) [NAMES]
# For the threaded Magnum (one process, one GIL) a row at C > 1 connections lasts at least
# 3 x C x (mean latency at 1 connection), capped at $MAG_MAX_SECS: its C requests share the
# GIL and all finish late, so a shorter row would see few or no completions.
bench_server() {
  local n="$1" server="$2" pid="$3" children="$4" base="$5" secs="$6" cl="$7" mk="$8"
  local dbkind="$9" names="${10:-$ROUTES_SEL}"
  local spec name method path c d s1=0
  while IFS= read -r spec; do
    IFS='|' read -r name method path <<<"$spec"
    # warm-up, not reported
    run_row "warmup" "$pid" "$children" "$name" "$method" "$base$path" "$WARM_SECS" 1 "$WORK/warmup.jsonl"
    quiesce "$pid"
    [[ "$name" == create ]] && cleanup_created "$n|$server|create|warmup" "$n" "$dbkind"
    for c in $CONNS; do
      d="$secs"
      if [[ "$server" == magnum-threaded && "$c" -gt 1 ]]; then
        d="$(python3 -c "print(int(min(max($secs, 3 * $c * $s1 + 0.999), $MAG_MAX_SECS)))")"
      fi
      run_row "$n|$server|$name|$c" "$pid" "$children" "$name" "$method" "$base$path" "$d" "$c"
      [[ "$c" == 1 ]] && s1="$(last_mean_s)"
      quiesce "$pid"
      say "  $server $name c=$c: $(tail -n1 "$ROWS" | python3 -c 'import json,sys; d=json.load(sys.stdin); print("%.1f req/s p50 %.2f ms p99 %.2f ms non2xx %d socket %d" % (d["rps"], d["p50_ms"], d["p99_ms"], d["non2xx"], d["socket_errors"]))') (${d}s; then idle after ${QUIESCE_LAST}s)"
      if [[ "$name" == create ]]; then
        cleanup_created "$n|$server|create|$c" "$n" "$dbkind"
        say "    deleted what it created: $(tail -n1 "$WORK/cleanup.jsonl")"
      fi
    done
  done < <(routes "$cl" "$mk" "$names")
}

# sqlcount N BACKEND URL DBKIND(mysql|sqlite) [NAMES]: BACKEND names the output
# (sql.N.BACKEND.json); RS_BIN / RS_CONF pick the binary. Deletes what the create route
# made afterwards.
sqlcount() {
  local n="$1" backend="$2" url="$3" dbkind="$4" names="${5:-$ROUTES_SEL}" port=$((PORT_BASE + 5))
  local log="$WORK/sql.$1.$2.log" db="" cl mk specs=() spec
  [[ "$dbkind" == mysql ]] && db="bench_n$n"
  cl="$(cluster_uuid $((n / 2)))"; mk="$(cluster_uuid $((n - 60)))"
  while IFS= read -r spec; do
    [[ "$spec" == resize* ]] && spec="$spec|{\"node_count\": 3, \"nodegroup\": \"default-worker\"}"
    [[ "$spec" == create* ]] && spec="$spec|$(create_body sql)"
    specs+=("$spec")
  done < <(routes "$cl" "$mk" "$names")
  [[ ${#specs[@]} -gt 0 ]] || return 0
  RUST_LOG=sqlx=debug start_rs "$url" "$port" "$log" --no-worker
  local extra=(); [[ -n "$db" ]] && extra=(--mysql-port "$DBPORT" --mysql-db "$db")
  "$PY" "$HERE/sqlcount.py" --base "http://127.0.0.1:$port" --log "$log" "${extra[@]}" \
    "${specs[@]}" >"$WORK/sql.$n.$backend.json"
  stop_rs
  if [[ " $names " == *" create "* ]]; then cleanup_created "$n|sql-$backend|create|-" "$n" "$dbkind"; fi
}

# The routes of NAMES that are also in $BENCH_ROUTES (for the baseline's and the cost-growth
# phase's fixed lists).
selected() {  # selected NAMES
  local r out=""
  for r in $1; do [[ " $ROUTES_SEL " == *" $r "* ]] && out+="$r "; done
  echo "${out% }"
}
BASE_SEL=""
if [[ -n "$BASE_BIN" ]]; then BASE_SEL="$(selected "$BASE_ROUTES")"; meta baseline_routes "$BASE_SEL"; fi

cluster_uuid() { printf 'c0000000-0000-4000-8000-%012d' "$1"; }

for N in $SIZES; do
  DB="bench_n$N"
  SQLITE="$WORK/n$N.sqlite"
  CL="$(cluster_uuid $((N / 2)))"
  MK="$(cluster_uuid $((N - 60)))"
  say "N=$N: MariaDB database $DB (Magnum 23 migrations) + seed"
  ts=$SECONDS
  scripts/magnum-db.sh create "$DB" 2>&1 | tail -n1 >&2
  meta "migrate_seconds_$N" "$((SECONDS - ts))"
  "$PY" "$HERE/seed.py" mysql --port "$DBPORT" --db "$DB" --n "$N" | tee -a "$WORK/seed.jsonl" >&2
  say "N=$N: SQLite $SQLITE (magnum-rs migrate) + seed"
  rm -f "$SQLITE" "$SQLITE-wal" "$SQLITE-shm"
  "$BIN" --config "$ROOT/etc/magnum-rs.toml" --database-url "sqlite://$SQLITE" migrate >&2
  "$PY" "$HERE/seed.py" sqlite --file "$SQLITE" --n "$N" | tee -a "$WORK/seed.jsonl" >&2
  MYSQL_URL="mysql://magnum:magnum@127.0.0.1:$DBPORT/$DB"

  # SQL per request, before any benchmark writes (on both backends).
  say "N=$N: SQL statements per request (RUST_LOG=sqlx=debug)"
  sqlcount "$N" mariadb "$MYSQL_URL" mysql
  sqlcount "$N" sqlite "sqlite://$SQLITE" sqlite
  if [[ " $BASE_SEL " == *" create "* ]]; then
    # The baseline's create too (only create: its resize would leave operation records
    # in the old format pending for the next server's worker; created ones are deleted).
    say "N=$N: SQL statements per create of the baseline binary"
    RS_BIN="$BASE_BIN" RS_CONF="$BASE_CONF" sqlcount "$N" mariadb_before "$MYSQL_URL" mysql create
    RS_BIN="$BASE_BIN" RS_CONF="$BASE_CONF" sqlcount "$N" sqlite_before "sqlite://$SQLITE" sqlite create
  fi

  for mode in shipped threaded; do
    port=$((PORT_BASE + 1)); [[ $mode == threaded ]] && port=$((PORT_BASE + 2))
    flag=(); children=1
    [[ $mode == threaded ]] && { flag=(--threaded); children=0; }
    say "N=$N: real Magnum 23 ($mode) on $DB, port $port"
    MAGNUM_PORT="$port"
    base="$(scripts/magnum-api.sh start "${flag[@]}" "$DB" "$port")"
    pid="$(cat "$CACHE/magnum-api/$port.pid")"
    bench_server "$N" "magnum-$mode" "$pid" "$children" "$base" "$MAG_SECS" "$CL" "$MK" mysql
    scripts/magnum-api.sh stop "$port" >&2
    MAGNUM_PORT=""
  done

  for backend in mariadb sqlite; do
    port=$((PORT_BASE + 3)); url="$MYSQL_URL"; kind=mysql
    [[ $backend == sqlite ]] && { port=$((PORT_BASE + 4)); url="sqlite://$SQLITE"; kind=sqlite; }
    say "N=$N: magnum-rs (release) on $backend, port $port"
    start_rs "$url" "$port" "$WORK/rs.$N.$backend.log"
    bench_server "$N" "magnum-rs-$backend" "$RS_PID" 0 "http://127.0.0.1:$port" "$RS_SECS" "$CL" "$MK" "$kind"
    stop_rs
    if [[ -n "$BASE_SEL" ]]; then
      # The same database, right after: the binary from before the change (it ignores the
      # migrations it does not know, applied by the current binary).
      say "N=$N: magnum-rs before ($(basename "$BASE_BIN")) on $backend, port $port: $BASE_SEL"
      RS_BIN="$BASE_BIN" RS_CONF="$BASE_CONF" start_rs "$url" "$port" "$WORK/rs-before.$N.$backend.log"
      bench_server "$N" "magnum-rs-before-$backend" "$RS_PID" 0 "http://127.0.0.1:$port" "$RS_SECS" \
        "$CL" "$MK" "$kind" "$BASE_SEL"
      stop_rs
    fi
  done
done

# --- cost growth, interleaved -------------------------------------------------------------
read -r -a SZ <<<"$SIZES"
LO="${SZ[0]}"; HI="${SZ[${#SZ[@]}-1]}"
if [[ "$LO" != "$HI" && -n "$(selected "list list_marker resize")" ]]; then
  for backend in mariadb sqlite; do
    say "cost growth: magnum-rs on $backend, N=$LO and N=$HI side by side, interleaved"
    declare -A GPID=() GBASE=()
    for n in "$LO" "$HI"; do
      port=$((PORT_BASE + 3)); [[ $n == "$HI" ]] && port=$((PORT_BASE + 4))
      url="mysql://magnum:magnum@127.0.0.1:$DBPORT/bench_n$n"
      [[ $backend == sqlite ]] && url="sqlite://$WORK/n$n.sqlite"
      start_rs "$url" "$port" "$WORK/rs.growth.$n.$backend.log"
      GPID[$n]="$RS_PID"; GBASE[$n]="http://127.0.0.1:$port"
    done
    for route in $(selected "list list_marker resize"); do
      for c in $CONNS; do
        for n in "$LO" "$HI" "$HI" "$LO"; do
          spec="$(routes "$(cluster_uuid $((n / 2)))" "$(cluster_uuid $((n - 60)))" | grep "^$route|")"
          IFS='|' read -r _ method path <<<"$spec"
          run_row "$n|magnum-rs-$backend|$route|$c" "${GPID[$n]}" 0 "$route" "$method" "${GBASE[$n]}$path" \
            "$GROWTH_SECS" "$c" "$WORK/growth.jsonl"
          quiesce "${GPID[$n]}"
        done
      done
    done
    stop_rs "${GPID[$LO]}"; stop_rs "${GPID[$HI]}"
    unset GPID GBASE
  done
fi

meta quiesce_seconds "$QUIESCE_TOTAL"
meta uptime_end "$(uptime)"
meta finished_utc "$(date -u '+%Y-%m-%d %H:%M:%S UTC')"
meta total_seconds "$((SECONDS - T0))"
python3 "$HERE/report.py" --work "$WORK" --out "$RESULTS"
say "done in $(( (SECONDS - T0) / 60 )) min $(( (SECONDS - T0) % 60 )) s: $RESULTS (raw data: $WORK)"
if (( SHUTDOWN_HUNG )); then
  say "FAILED: a magnum-rs server hung on shutdown (see above)"
  exit 1
fi
