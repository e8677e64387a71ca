#!/usr/bin/env bash
# The real Magnum 23 API (the reference / oracle), served without Keystone and
# without a conductor, against a database on the private MariaDB.
#
#   scripts/magnum-api.sh start [--threaded] DBNAME PORT
#       serve http://127.0.0.1:PORT against MariaDB database DBNAME (create and seed it
#       first with scripts/magnum-db.sh). Default: werkzeug run_simple with
#       processes=2, as magnum-api serves (one fork per connection, about 10 req/s);
#       --threaded: one process, one thread per connection (benchmark comparison only).
#       Refuses if PORT is in use. Ready when GET / answers 200 "OpenStack Magnum API"
#       and the started pid is alive. Prints the base URL on stdout.
#   scripts/magnum-api.sh stop PORT
#       kill the server started on PORT and its forked per-connection children.
#   scripts/magnum-api.sh status PORT
#       exit 0 and print the pid if it is running.
#
# Identity: no Keystone. Send X-Project-Id / X-User-Id / X-Roles (and optionally
# X-Project-Name, X-User-Name, ...) per request; missing ones default to project
# aaaaaaaaaaaa4aaaaaaaaaaaaaaaaaaa (owner of the seed), user u-demo, roles
# member,reader (see scripts/magnum_api_stubs.py). X-Roles: admin sees all projects.
# Drivers: stub drivers for (vm, ubuntu, kubernetes) -- master resize allowed to odd
# sizes like magnum-capi-helm -- and (vm, fedora-coreos, kubernetes) -- master resize
# not supported (base rule). RPC casts go to oslo.messaging's fake:// transport: a 202
# changes nothing in the database.
#
# Files (generated at each start, never in the repo), under
# ${MAGNUM_RS_CACHE:-~/.cache/magnum-rs}/magnum-api/:
#   PORT.pid                         pid of the server (also its process-group id)
#   PORT/etc/magnum.conf, api-paste.ini
#   PORT/lib/*.dist-info             entry points of the stub drivers
#   PORT/logs/server.out             stdout/stderr of the server (werkzeug access log)
#   PORT/logs/magnum-api.log         oslo.log file
# Env: MAGNUM_RS_CACHE, MARIADB_PORT (default 13306), MAGNUM_API_START_TIMEOUT
# (seconds, default 60), MAGNUM_API_RPC_TIMEOUT ([DEFAULT] rpc_response_timeout,
# default 60 as in magnum: requests that make an RPC *call* -- cluster upgrade at
# >= 1.8 with valid input, certificates -- wait this long, then answer 500
# "No reply on topic magnum-conductor").
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
CACHE="${MAGNUM_RS_CACHE:-$HOME/.cache/magnum-rs}"
RUN="$CACHE/magnum-api"
DBPORT="${MARIADB_PORT:-13306}"
TIMEOUT="${MAGNUM_API_START_TIMEOUT:-60}"
RPC_TIMEOUT="${MAGNUM_API_RPC_TIMEOUT:-60}"
SERVE="magnum_api_serve.py"

usage() {
  echo "usage: $0 start [--threaded] DBNAME PORT | stop PORT | status PORT" >&2
  exit 2
}
say() { echo "magnum-api.sh: $*" >&2; }
check_port() {
  if ! [[ "$1" =~ ^[0-9]{1,5}$ ]] || (( 10#$1 < 1 || 10#$1 > 65535 )); then
    say "bad PORT '$1'"; exit 2
  fi
}

# True when PID is a magnum_api_serve.py process.
is_serve() {
  [[ -r "/proc/$1/cmdline" ]] && tr '\0' ' ' <"/proc/$1/cmdline" 2>/dev/null | grep -q "$SERVE"
}

# The server PID plus every magnum_api_serve.py process in its process group or
# forked by it (the per-connection children), alive now.
members() {
  local root="$1" d p stat rest ppid pgrp
  for d in /proc/[0-9]*; do
    p="${d#/proc/}"
    stat="$(cat "$d/stat" 2>/dev/null)" || continue
    rest="${stat##*) }"                     # after "pid (comm) "
    read -r _ ppid pgrp _ <<<"$rest"
    if [[ "$p" == "$root" || "$ppid" == "$root" || "$pgrp" == "$root" ]] && is_serve "$p"; then
      echo "$p"
    fi
  done
}

# Pid recorded for PORT if that process is alive and is our server.
running_pid() {
  local pidfile="$RUN/$1.pid" pid
  [[ -f "$pidfile" ]] || return 0
  pid="$(cat "$pidfile" 2>/dev/null || true)"
  if [[ "$pid" =~ ^[0-9]+$ ]] && kill -0 "$pid" 2>/dev/null && is_serve "$pid"; then
    echo "$pid"
  fi
}

kill_tree() {  # kill_tree PID: TERM the server and its children, KILL what is left
  local root="$1" pids _
  pids="$(members "$root")"
  [[ -n "$pids" ]] || return 0
  # shellcheck disable=SC2086
  kill -TERM $pids 2>/dev/null || true
  for _ in $(seq 1 50); do
    pids="$(members "$root")"
    [[ -n "$pids" ]] || return 0
    sleep 0.1
  done
  # shellcheck disable=SC2086
  kill -KILL $pids 2>/dev/null || true
  for _ in $(seq 1 20); do
    [[ -n "$(members "$root")" ]] || return 0
    sleep 0.1
  done
  say "processes still alive: $(members "$root" | tr '\n' ' ')"
  return 1
}

port_in_use() {  # the server binds with SO_REUSEADDR, so only a listener conflicts
  "$1" - "$2" <<'PY'
import socket, sys
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
try:
    s.bind(("127.0.0.1", int(sys.argv[1])))
except OSError:
    sys.exit(0)
sys.exit(1)
PY
}

write_config() {  # write_config DIR DBNAME PORT
  local dir="$1" db="$2" port="$3"
  rm -rf "${dir:?}/etc" "${dir:?}/lib"
  mkdir -p "$dir/etc" "$dir/lib" "$dir/logs" "$dir/state/lock"
  # oslo.config does not expand variables and does not strip trailing comments:
  # absolute paths, comments on their own lines.
  cat >"$dir/etc/magnum.conf" <<CONF
[DEFAULT]
host = magnum-oracle
# oslo.messaging in-process fake driver: RPC casts to the conductor go nowhere
transport_url = fake://
rpc_response_timeout = $RPC_TIMEOUT
debug = false
log_file = $dir/logs/magnum-api.log
state_path = $dir/state
[api]
host = 127.0.0.1
port = $port
workers = 2
api_paste_config = $dir/etc/api-paste.ini
[database]
connection = mysql+pymysql://magnum:magnum@127.0.0.1:$DBPORT/$db?charset=utf8mb4
[oslo_concurrency]
lock_path = $dir/state/lock
[oslo_messaging_notifications]
driver = noop
# > 0: validate_flavor_root_volume_size() returns early instead of asking nova
[cinder]
default_boot_volume_size = 10
[drivers]
# only the stub drivers (magnum_api_stubs.py), even if magnum-capi-helm is installed
disabled_drivers = k8s_capi_helm_v1
[profiler]
enabled = false
CONF
  # magnum's etc/magnum/api-paste.ini with authtoken -> noauth, osprofiler removed.
  cat >"$dir/etc/api-paste.ini" <<PASTE
[composite:main]
paste.composite_factory = magnum.api:root_app_factory
/: api
/healthcheck: healthcheck

[pipeline:api]
pipeline = cors http_proxy_to_wsgi request_id noauth api_v1

[app:api_v1]
paste.app_factory = magnum.api.app:app_factory

[filter:noauth]
paste.filter_factory = magnum_api_stubs:noauth_filter_factory

[filter:request_id]
paste.filter_factory = oslo_middleware:RequestId.factory

[filter:cors]
paste.filter_factory = oslo_middleware.cors:filter_factory
oslo_config_project = magnum

[app:healthcheck]
paste.app_factory = oslo_middleware:Healthcheck.app_factory
backends = disable_by_file
disable_by_file_path = $dir/state/healthcheck_disable

[filter:http_proxy_to_wsgi]
paste.filter_factory = oslo_middleware.http_proxy_to_wsgi:HTTPProxyToWSGI.factory
oslo_config_project = magnum
PASTE
  local di="$dir/lib/magnum_rs_stub_drivers-0.0.0.dist-info"
  mkdir -p "$di"
  printf 'Metadata-Version: 2.1\nName: magnum-rs-stub-drivers\nVersion: 0.0.0\n' >"$di/METADATA"
  cat >"$di/entry_points.txt" <<EP
[magnum.drivers]
magnum_rs_stub_ubuntu = magnum_api_stubs:UbuntuStubDriver
magnum_rs_stub_fcos = magnum_api_stubs:FedoraCoreOSStubDriver
EP
}

start() {
  local threaded=() args=()
  while [[ $# -gt 0 ]]; do
    case "$1" in
      --threaded) threaded=(--threaded) ;;
      -*) usage ;;
      *) args+=("$1") ;;
    esac
    shift
  done
  [[ ${#args[@]} -eq 2 ]] || usage
  local db="${args[0]}" port="${args[1]}"
  [[ "$db" =~ ^[A-Za-z0-9_]{1,64}$ ]] || { say "bad DBNAME '$db'"; exit 2; }
  [[ "$RPC_TIMEOUT" =~ ^[0-9]+$ ]] || { say "bad MAGNUM_API_RPC_TIMEOUT '$RPC_TIMEOUT'"; exit 2; }
  check_port "$port"
  port=$((10#$port))

  local t0=$SECONDS pid
  pid="$(running_pid "$port")"
  if [[ -n "$pid" ]]; then
    say "already running on port $port (pid $pid); run: $0 stop $port"; exit 1
  fi
  "$HERE/mariadb.sh" start
  local venv; venv="$("$HERE/venv.sh" magnum)"
  if port_in_use "$venv/bin/python" "$port"; then
    say "port $port is in use; refusing to start"; exit 1
  fi

  local dir="$RUN/$port"
  mkdir -p "$RUN"
  write_config "$dir" "$db" "$port"
  : >"$dir/logs/server.out"
  "$venv/bin/python" "$HERE/$SERVE" --config-file "$dir/etc/magnum.conf" \
    --lib "$dir/lib" "${threaded[@]}" </dev/null >>"$dir/logs/server.out" 2>&1 &
  pid=$!
  echo "$pid" >"$RUN/$port.pid"

  local deadline=$((SECONDS + TIMEOUT)) body="$dir/logs/ready-probe.out" code
  while :; do
    if ! kill -0 "$pid" 2>/dev/null; then
      say "server (pid $pid) exited during start-up; $dir/logs/server.out:"
      tail -n 30 "$dir/logs/server.out" >&2 || true
      rm -f "$RUN/$port.pid"
      exit 1
    fi
    code="$(curl -s -m 5 -o "$body" -w '%{http_code}' "http://127.0.0.1:$port/" 2>/dev/null || true)"
    if [[ "$code" == 200 ]] && grep -q "OpenStack Magnum API" "$body" 2>/dev/null \
        && kill -0 "$pid" 2>/dev/null; then
      break
    fi
    if (( SECONDS >= deadline )); then
      say "not ready after ${TIMEOUT}s (last GET / status: ${code:-none}); stopping it"
      tail -n 30 "$dir/logs/server.out" >&2 || true
      kill_tree "$pid" || true
      rm -f "$RUN/$port.pid"
      exit 1
    fi
    sleep 0.2
  done
  rm -f "$body"
  local mode="processes=2"; [[ ${#threaded[@]} -gt 0 ]] && mode="threaded"
  say "magnum-api 23.0.0 on http://127.0.0.1:$port ($mode, database $db, pid $pid) ready in $((SECONDS - t0))s"
  echo "http://127.0.0.1:$port"
}

stop() {
  [[ $# -eq 1 ]] || usage
  check_port "$1"
  local port=$((10#$1)) pidfile="$RUN/$((10#$1)).pid" pid
  if [[ ! -f "$pidfile" ]]; then say "nothing started on port $port"; return 0; fi
  pid="$(cat "$pidfile" 2>/dev/null || true)"
  if [[ "$pid" =~ ^[0-9]+$ ]]; then
    # Also reaps forked children left behind if the parent is already gone.
    kill_tree "$pid"
    say "stopped port $port (pid $pid)"
  fi
  rm -f "$pidfile"
}

status() {
  [[ $# -eq 1 ]] || usage
  check_port "$1"
  local pid; pid="$(running_pid "$((10#$1))")"
  if [[ -n "$pid" ]]; then echo "$pid"; else say "not running on port $1"; return 1; fi
}

cmd="${1:-}"; [[ $# -gt 0 ]] && shift
case "$cmd" in
  start) start "$@" ;;
  stop) stop "$@" ;;
  status) status "$@" ;;
  *) usage ;;
esac
