#!/usr/bin/env bash
# A real Keystone (keystone==30.0.0 from PyPI, SQLite, fernet tokens, gunicorn) on loopback,
# for magnum-rs's authentication tests (see ../shared/reference/running-keystone.md).
#
#   scripts/keystone.sh start BASE PORT MAGNUM_URL
#        fresh state in BASE: keystone.conf, db_sync, fernet + credential keys, bootstrap
#        (admin/admin-secret), gunicorn on 127.0.0.1:PORT, then provision.py: projects
#        service/demo/alt, users magnum/demo/alt/reader (`<name>-secret`), the
#        `container-infra` service with endpoints at MAGNUM_URL. Writes BASE/env
#        (KEYSTONE_URL, KEYSTONE_BASE, OS_CLIENT_CONFIG_FILE), BASE/ids.json, BASE/clouds.yaml,
#        and prints BASE.
#   scripts/keystone.sh stop BASE              stops gunicorn (state kept)
#   scripts/keystone.sh resume BASE [SECONDS]  starts gunicorn again on the same state; with
#        SECONDS, new tokens live that long ([token] expiration; default 3600)
#
# Env: MAGNUM_RS_CACHE (venv cache, default ~/.cache/magnum-rs), PYTHON.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
export PYTHONWARNINGS="ignore::Warning:oslo_service.backend._eventlet.loopingcall"

usage() { echo "usage: $0 start BASE PORT MAGNUM_URL | stop BASE | resume BASE [SECONDS]" >&2; exit 2; }

write_conf() {  # write_conf BASE EXPIRATION
  local base="$1" expiration="$2"
  cat >"$base/etc/keystone.conf" <<EOF
[DEFAULT]
debug = false
log_file = $base/log/keystone.log
[database]
connection = sqlite:///$base/data/keystone.db
[token]
provider = fernet
expiration = $expiration
allow_expired_window = 172800
[fernet_tokens]
key_repository = $base/fernet-keys/
max_active_keys = 3
[fernet_receipts]
key_repository = $base/fernet-keys/
[credential]
key_repository = $base/credential-keys/
[identity]
# bcrypt's minimum cost: fast password authentication in tests
password_hash_rounds = 4
[cache]
# validation in ~5 ms instead of ~300 ms; a memory cache is per process, so 1 worker
enabled = true
backend = dogpile.cache.memory
expiration_time = 600
EOF
}

port_open() { python3 -c "import socket,sys; s=socket.socket(); sys.exit(s.connect_ex(('127.0.0.1',$1))!=0)"; }

stop() {  # stop BASE: the gunicorn session (master and worker), then wait for the port
  local base="$1" pidfile="$1/run/keystone.pid"
  if [[ -f "$pidfile" ]]; then
    local pid; pid="$(cat "$pidfile")"
    if kill -0 "$pid" 2>/dev/null && grep -q gunicorn "/proc/$pid/cmdline" 2>/dev/null; then
      # setsid -f made the master a session and process-group leader: signal the group.
      kill -TERM -- "-$pid" 2>/dev/null || kill -TERM "$pid"
      for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
      kill -KILL -- "-$pid" 2>/dev/null || true
    fi
    rm -f "$pidfile"
  fi
  if [[ -f "$base/port" ]]; then
    local port; port="$(cat "$base/port")"
    for _ in $(seq 100); do port_open "$port" || return 0; sleep 0.1; done
    echo "keystone.sh: 127.0.0.1:$port is still in use after stopping keystone" >&2; return 1
  fi
}

run_gunicorn() {  # run_gunicorn BASE PORT
  local base="$1" port="$2" venv
  venv="$(cat "$base/venv-path")"
  if port_open "$port"; then
    echo "keystone.sh: something already listens on 127.0.0.1:$port" >&2; exit 1
  fi
  : >"$base/log/gunicorn.log"
  # setsid -f: gunicorn runs in its own session, detached from this script and its pipes.
  OS_KEYSTONE_CONFIG_DIR="$base/etc" OS_KEYSTONE_CONFIG_FILES=keystone.conf \
    setsid -f "$venv/bin/gunicorn" --chdir "$base" --bind "127.0.0.1:$port" --workers 1 \
      --threads 4 --no-control-socket --timeout 120 --name keystone \
      --pid "$base/run/keystone.pid" --access-logfile "$base/log/access.log" \
      --error-logfile "$base/log/gunicorn.log" --pythonpath "$base/etc" \
      keystone_wsgi_shim:application >"$base/log/gunicorn.out" 2>&1 </dev/null
  local url="http://127.0.0.1:$port/v3"
  for _ in $(seq 180); do
    if curl -fsS --max-time 3 "$url" >/dev/null 2>&1; then return 0; fi
    if grep -q 'exited with code' "$base/log/gunicorn.log" 2>/dev/null; then
      echo "keystone.sh: keystone crashed while loading:" >&2; tail -20 "$base/log/gunicorn.log" >&2; exit 1
    fi
    sleep 0.5
  done
  echo "keystone.sh: keystone did not answer on $url" >&2; tail -20 "$base/log/gunicorn.log" >&2; exit 1
}

cmd="${1:-}"; shift || true
case "$cmd" in
  start)
    [[ $# -eq 3 ]] || usage
    base="$1" port="$2" magnum_url="$3"
    mkdir -p "$base"; base="$(cd "$base" && pwd)"
    stop "$base"
    venv="$("$HERE/venv.sh" keystone)"
    rm -rf "$base/etc" "$base/data" "$base/fernet-keys" "$base/credential-keys" "$base/log" "$base/run"
    mkdir -p "$base/etc" "$base/data" "$base/log" "$base/run"
    mkdir -m 700 "$base/fernet-keys" "$base/credential-keys"
    echo "$venv" >"$base/venv-path"
    echo "$port" >"$base/port"
    write_conf "$base" 3600
    # keystone.wsgi.api hands sys.argv to oslo.config: under gunicorn that is gunicorn's own
    # command line, so the shim empties it first.
    printf 'import sys\nsys.argv = sys.argv[:1]\nfrom keystone.wsgi.api import application  # noqa\n' \
      >"$base/etc/keystone_wsgi_shim.py"
    km=("$venv/bin/keystone-manage" --config-file "$base/etc/keystone.conf")
    echo "keystone.sh: db_sync, keys, bootstrap" >&2
    "${km[@]}" db_sync
    "${km[@]}" fernet_setup --keystone-user "$(id -un)" --keystone-group "$(id -gn)"
    "${km[@]}" credential_setup --keystone-user "$(id -un)" --keystone-group "$(id -gn)"
    ks="http://127.0.0.1:$port/v3"
    "${km[@]}" bootstrap --bootstrap-password admin-secret --bootstrap-username admin \
      --bootstrap-project-name admin --bootstrap-role-name admin \
      --bootstrap-service-name keystone --bootstrap-region-id RegionOne \
      --bootstrap-admin-url "$ks" --bootstrap-internal-url "$ks" --bootstrap-public-url "$ks"
    run_gunicorn "$base" "$port"
    echo "keystone.sh: provisioning projects, users and the container-infra service" >&2
    "$venv/bin/python" "$HERE/keystone/provision.py" "$base" "$ks" "$magnum_url"
    cat >"$base/env" <<EOF
KEYSTONE_URL=$ks
KEYSTONE_BASE=$base
OS_CLIENT_CONFIG_FILE=$base/clouds.yaml
MAGNUM_URL=$magnum_url
EOF
    echo "keystone.sh: running on $ks (pid $(cat "$base/run/keystone.pid"))" >&2
    echo "$base" ;;
  stop)
    [[ $# -eq 1 ]] || usage
    stop "$1" ;;
  resume)
    [[ $# -ge 1 ]] || usage
    base="$(cd "$1" && pwd)"
    stop "$base"
    write_conf "$base" "${2:-3600}"
    run_gunicorn "$base" "$(cat "$base/port")" ;;
  *) usage ;;
esac
