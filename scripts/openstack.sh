#!/usr/bin/env bash
# The real OpenStack API processes magnum-rs is checked against, behind the real Keystone of
# scripts/keystone.sh, on loopback: glance-api (glance==33.0.0), nova-api (nova==34.0.0, the
# compute API only), neutron-server's API (neutron==29.0.0, ML2 without agents) and cinder-api
# (cinder==29.0.0), 2026.2 releases from PyPI, one shared venv, SQLite, each served by gunicorn.
# No agents, no scheduler, no conductor, no compute, no volume service, no RabbitMQ
# (transport_url = fake://). See docs/openstack-services.md.
#
#   scripts/openstack.sh start BASE KEYSTONE_BASE [PORT]
#        fresh state in BASE: configuration, database migrations (the migrated empty
#        databases are kept in the cache and copied on later starts), gunicorn for glance on
#        127.0.0.1:PORT, nova on PORT+1, neutron on PORT+2, cinder on PORT+3 (PORT defaults
#        to 19292); registers the service users (`<name>-secret`), services and endpoints in
#        the Keystone that `scripts/keystone.sh start KEYSTONE_BASE ...` runs; seeds flavors,
#        demo's keypair `default`, images, networks and volume types with the openstack CLI.
#        Writes BASE/env (GLANCE_URL, NOVA_URL, NEUTRON_URL, CINDER_URL, KEYSTONE_URL,
#        OS_CLIENT_CONFIG_FILE, OPENSTACK_BASE) and BASE/openstack.json (ids), prints BASE.
#   scripts/openstack.sh stop BASE             stops the four gunicorns (state kept)
#   scripts/openstack.sh resume BASE           starts them again on the same state
#   scripts/openstack.sh reregister BASE
#        after `scripts/keystone.sh start` made its Keystone anew (same KEYSTONE_BASE, same
#        port), while the four keep running: registers the service users, services and
#        endpoints again (their keystonemiddleware gets a new token with the same password
#        at its next validation) and what the seed made for Keystone's users, which the
#        services keep by user and project id: demo's network `private` (the old one is
#        deleted) and keypair `default` (same public key). What belongs to no user (flavors,
#        public images, the network `public`, volume types) stays. Updates BASE/openstack.json.
#
# Env: MAGNUM_RS_CACHE (venv cache, default ~/.cache/magnum-rs), PYTHON.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
CACHE="${MAGNUM_RS_CACHE:-$HOME/.cache/magnum-rs}"
SERVICES=(glance nova neutron cinder)
DBS=(glance/glance.db nova/nova_api.db nova/nova_cell0.db neutron/neutron.db cinder/cinder.db)
export PYTHONWARNINGS="ignore::DeprecationWarning,ignore::UserWarning"

usage() { echo "usage: $0 start BASE KEYSTONE_BASE [PORT] | stop BASE | resume BASE | reregister BASE" >&2; exit 2; }
log() { echo "openstack.sh: $*" >&2; }

port_open() { python3 -c "import socket,sys; s=socket.socket(); sys.exit(s.connect_ex(('127.0.0.1',$1))!=0)"; }

port_of() {  # port_of BASE SERVICE
  local p; p="$(cat "$1/port")"
  case "$2" in glance) echo "$p" ;; nova) echo $((p + 1)) ;; neutron) echo $((p + 2)) ;;
    cinder) echo $((p + 3)) ;; esac
}

authtoken() {  # authtoken KEYSTONE_ROOT USER: the [keystone_authtoken] section
  cat <<EOF
[keystone_authtoken]
www_authenticate_uri = $1
auth_url = $1
auth_type = password
username = $2
password = $2-secret
project_name = service
user_domain_name = Default
project_domain_name = Default
service_token_roles_required = true
EOF
}

write_conf() {  # write_conf BASE KEYSTONE_ROOT
  local base="$1" ks="$2" venv
  venv="$(cat "$base/venv-path")"

  cp "$venv/etc/glance/glance-api-paste.ini" "$base/glance/etc/"
  cat >"$base/glance/etc/glance-api.conf" <<EOF
[DEFAULT]
debug = false
log_file = $base/log/glance-api.log
enabled_backends = local:file
[database]
connection = sqlite:///$base/glance/glance.db
[glance_store]
default_backend = local
[local]
filesystem_store_datadir = $base/glance/images/
[os_glance_staging_store]
filesystem_store_datadir = $base/glance/staging/
[os_glance_tasks_store]
filesystem_store_datadir = $base/glance/tasks/
[oslo_concurrency]
lock_path = $base/glance/lock
[oslo_messaging_notifications]
driver = noop
[paste_deploy]
flavor = keystone
config_file = $base/glance/etc/glance-api-paste.ini
$(authtoken "$ks" glance)
EOF

  cp "$venv/etc/nova/api-paste.ini" "$base/nova/etc/"
  cat >"$base/nova/etc/nova.conf" <<EOF
[DEFAULT]
debug = false
log_file = $base/log/nova-api.log
state_path = $base/nova
transport_url = fake://
my_ip = 127.0.0.1
[api]
auth_strategy = keystone
[api_database]
connection = sqlite:///$base/nova/nova_api.db
[database]
connection = sqlite:///$base/nova/nova_cell0.db
[oslo_concurrency]
lock_path = $base/nova/lock
[oslo_messaging_notifications]
driver = noop
[wsgi]
api_paste_config = $base/nova/etc/api-paste.ini
$(authtoken "$ks" nova)
EOF

  cp "$venv/etc/neutron/api-paste.ini" "$base/neutron/etc/"
  cat >"$base/neutron/etc/neutron.conf" <<EOF
[DEFAULT]
debug = false
log_file = $base/log/neutron-server.log
state_path = $base/neutron
transport_url = fake://
auth_strategy = keystone
core_plugin = ml2
service_plugins = router
api_paste_config = $base/neutron/etc/api-paste.ini
notify_nova_on_port_status_changes = false
notify_nova_on_port_data_changes = false
# no DHCP agent to schedule networks to
dhcp_agent_notification = false
[database]
connection = sqlite:///$base/neutron/neutron.db
[oslo_concurrency]
lock_path = $base/neutron/lock
[oslo_messaging_notifications]
driver = noop
$(authtoken "$ks" neutron)
EOF
  cat >"$base/neutron/etc/ml2_conf.ini" <<EOF
[ml2]
type_drivers = flat,vxlan
tenant_network_types = vxlan
mechanism_drivers =
extension_drivers = port_security
[ml2_type_flat]
flat_networks = public
[ml2_type_vxlan]
vni_ranges = 1:1000
EOF

  cp "$venv/etc/cinder/api-paste.ini" "$base/cinder/etc/"
  cat >"$base/cinder/etc/cinder.conf" <<EOF
[DEFAULT]
debug = false
log_file = $base/log/cinder-api.log
state_path = $base/cinder
transport_url = fake://
auth_strategy = keystone
api_paste_config = $base/cinder/etc/api-paste.ini
[database]
connection = sqlite:///$base/cinder/cinder.db
[oslo_concurrency]
lock_path = $base/cinder/lock
[oslo_messaging_notifications]
driver = noop
$(authtoken "$ks" cinder)
EOF

  # The WSGI modules read sys.argv (oslo.config) or fixed /etc paths: under gunicorn argv is
  # gunicorn's own, so each shim sets it (or the config directory) before the import.
  cat >"$base/glance/etc/wsgi_shim.py" <<EOF
import os, sys
sys.argv = sys.argv[:1]
os.environ["OS_GLANCE_CONFIG_DIR"] = "$base/glance/etc"
from glance.wsgi.api import application  # noqa
EOF
  cat >"$base/nova/etc/wsgi_shim.py" <<EOF
import os, sys
sys.argv = sys.argv[:1]
os.environ["OS_NOVA_CONFIG_DIR"] = "$base/nova/etc"
os.environ["OS_NOVA_CONFIG_FILES"] = "api-paste.ini;nova.conf"
from nova.wsgi.osapi_compute import application  # noqa
EOF
  cat >"$base/neutron/etc/wsgi_shim.py" <<EOF
import os, sys
sys.argv = sys.argv[:1]
os.environ["OS_NEUTRON_CONFIG_DIR"] = "$base/neutron/etc"
os.environ["OS_NEUTRON_CONFIG_FILES"] = "neutron.conf;ml2_conf.ini"
from neutron.wsgi.api import application  # noqa
EOF
  cat >"$base/cinder/etc/wsgi_shim.py" <<EOF
import sys
sys.argv = sys.argv[:1] + ["--config-file", "$base/cinder/etc/cinder.conf"]
from cinder.wsgi.api import application  # noqa
EOF
}

db_sync() {  # db_sync BASE SERVICE: the service's migrations on its SQLite database
  local base="$1" svc="$2" venv etc
  venv="$(cat "$base/venv-path")" etc="$base/$svc/etc"
  case "$svc" in
    glance) "$venv/bin/glance-manage" --config-file "$etc/glance-api.conf" db_sync ;;
    nova)
      local nm=("$venv/bin/nova-manage" --config-file "$etc/nova.conf")
      "${nm[@]}" api_db sync
      "${nm[@]}" cell_v2 map_cell0 --database_connection "sqlite:///$base/nova/nova_cell0.db"
      "${nm[@]}" db sync ;;
    neutron)
      # neutron's migrations do not run on SQLite: the schema comes from its models.
      "$venv/bin/python" "$HERE/openstack/neutron_db.py" "$etc/neutron.conf" "$etc/ml2_conf.ini" ;;
    cinder) "$venv/bin/cinder-manage" --config-file "$etc/cinder.conf" db sync ;;
  esac >"$base/log/$svc-db-sync.log" 2>&1
}

db_template() {  # the cache of migrated, empty databases for these pins and this db_sync
  local key
  key="$({ cat "$HERE/openstack/constraints.txt" "$HERE/openstack/neutron_db.py"; declare -f db_sync; } \
    | sha256sum | cut -c1-16)"
  echo "$CACHE/openstack-db/$key"
}

migrate() {  # migrate BASE: the databases, copied from the template when there is one
  local base="$1" tpl db svc
  tpl="$(db_template)"
  if [[ -f "$tpl/complete" ]]; then
    log "databases from $tpl"
    for db in "${DBS[@]}"; do cp "$tpl/${db//\//-}" "$base/$db"; done
    # nova's cell0 mapping (in the API database) holds the cell0 database's URL.
    python3 - "$base/nova/nova_api.db" "sqlite:///$base/nova/nova_cell0.db" <<'EOF'
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
n = db.execute("UPDATE cell_mappings SET database_connection = ? WHERE uuid = ?",
               (sys.argv[2], "00000000-0000-0000-0000-000000000000")).rowcount
db.commit()
sys.exit(0 if n == 1 else "openstack.sh: no cell0 mapping in the nova_api template")
EOF
    return 0
  fi
  log "database migrations (glance, nova, neutron, cinder side by side)"
  local pids=() i=0
  for svc in "${SERVICES[@]}"; do db_sync "$base" "$svc" & pids+=($!); done
  for svc in "${SERVICES[@]}"; do
    if ! wait "${pids[$i]}"; then log "$svc's migrations failed:"; tail -30 "$base/log/$svc-db-sync.log" >&2; exit 1; fi
    i=$((i + 1))
  done
  # Keep the fresh databases (no row depends on BASE but nova's cell0 URL) for the next start.
  mkdir -p "$CACHE/openstack-db"
  local tmp; tmp="$(mktemp -d "$CACHE/openstack-db/.tmp.XXXXXX")"
  for db in "${DBS[@]}"; do cp "$base/$db" "$tmp/${db//\//-}"; done
  touch "$tmp/complete"
  mv -T "$tmp" "$tpl" 2>/dev/null || rm -rf "$tmp"
}

signal_one() {  # signal_one BASE SERVICE SIGNAL: the gunicorn session (master and worker)
  local pidfile="$1/run/$2.pid"
  [[ -f "$pidfile" ]] || return 0
  local pid; pid="$(cat "$pidfile")"
  if kill -0 "$pid" 2>/dev/null && grep -q gunicorn "/proc/$pid/cmdline" 2>/dev/null; then
    # setsid -f made the master a session and process-group leader: signal the group.
    kill "-$3" -- "-$pid" 2>/dev/null || kill "-$3" "$pid" 2>/dev/null || true
  fi
}

stop() {  # stop BASE: TERM to every service at once (each takes 2-3 s), KILL after 10 s
  local base="$1" svc
  [[ -f "$base/port" ]] || return 0
  for svc in "${SERVICES[@]}"; do signal_one "$base" "$svc" TERM; done
  for svc in "${SERVICES[@]}"; do
    local pidfile="$base/run/$svc.pid"
    [[ -f "$pidfile" ]] || continue
    local pid; pid="$(cat "$pidfile")"
    for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    signal_one "$base" "$svc" KILL
    rm -f "$pidfile"
  done
  for svc in "${SERVICES[@]}"; do
    local port; port="$(port_of "$base" "$svc")"
    for _ in $(seq 100); do port_open "$port" || continue 2; sleep 0.1; done
    log "127.0.0.1:$port is still in use after stopping $svc"; return 1
  done
}

spawn() {  # spawn BASE SERVICE: gunicorn in its own session, detached from this script
  local base="$1" svc="$2" venv port
  venv="$(cat "$base/venv-path")" port="$(port_of "$base" "$svc")"
  : >"$base/log/$svc-gunicorn.log"
  # One worker, one thread: the services write to SQLite, whose deferred transactions fail
  # at once with "database is locked" when two requests of one process write side by side
  # (seen with neutron's quota reservations); requests queue instead.
  setsid -f "$venv/bin/gunicorn" --chdir "$base/$svc" --bind "127.0.0.1:$port" --workers 1 \
    --threads 1 --no-control-socket --timeout 120 --name "$svc-api" \
    --pid "$base/run/$svc.pid" --access-logfile "$base/log/$svc-access.log" \
    --access-logformat '%(h)s "%(r)s" %(s)s %(b)s %(L)ss' \
    --error-logfile "$base/log/$svc-gunicorn.log" --pythonpath "$base/$svc/etc" \
    wsgi_shim:application >"$base/log/$svc-gunicorn.out" 2>&1 </dev/null
}

wait_up() {  # wait_up BASE SERVICE: until the version document answers
  local base="$1" svc="$2" url
  url="http://127.0.0.1:$(port_of "$base" "$svc")/"
  for _ in $(seq 360); do
    # The version documents answer 200 or 300 without a token.
    local code; code="$(curl -s -o /dev/null -w '%{http_code}' --max-time 3 "$url" || true)"
    [[ "$code" == 200 || "$code" == 300 ]] && return 0
    if grep -q 'exited with code\|Worker failed to boot' "$base/log/$svc-gunicorn.log" 2>/dev/null; then
      log "$svc crashed while loading:"; tail -30 "$base/log/$svc-gunicorn.log" >&2; return 1
    fi
    sleep 0.5
  done
  log "$svc did not answer on $url"; tail -30 "$base/log/$svc-gunicorn.log" >&2; return 1
}

run_all() {  # run_all BASE: spawn the four, then wait for each
  local base="$1" svc
  for svc in "${SERVICES[@]}"; do
    local port; port="$(port_of "$base" "$svc")"
    if port_open "$port"; then log "something already listens on 127.0.0.1:$port"; exit 1; fi
  done
  for svc in "${SERVICES[@]}"; do spawn "$base" "$svc"; done
  for svc in "${SERVICES[@]}"; do wait_up "$base" "$svc" || { stop "$base"; exit 1; }; done
}

register() {  # register BASE KEYSTONE_URL: service users, services, endpoints (register.py)
  local base="$1" ks_url="$2"
  log "registering service users, services and endpoints in $ks_url"
  "$(cat "$base/venv-path")/bin/python" "$HERE/openstack/register.py" "$ks_url" \
    "http://127.0.0.1:$(port_of "$base" glance)" "http://127.0.0.1:$(port_of "$base" nova)" \
    "http://127.0.0.1:$(port_of "$base" neutron)" "http://127.0.0.1:$(port_of "$base" cinder)" \
    "$base/keystone-ids.json"
}

reseed_users() {  # reseed_users BASE KEYSTONE_URL: what seed.py made as demo, for today's demo
  # Neutron keeps a network by project id and Nova a keypair by user id: after Keystone was
  # made anew, demo's project and user have new ids and see neither. Through the REST APIs
  # (no CLI start-up): as admin, delete the previous `private` network (it would be a second
  # `private` in admin's listings); as demo, create `private` + `private-subnet` and import
  # `default` with the public key of BASE/seed/. What demo already has is kept, so this may
  # run again on the same Keystone. Updates BASE/openstack.json.
  python3 - "$1" "$2" <<'EOF'
import json, os, sys, urllib.error, urllib.request

base, ks = sys.argv[1:3]

def call(method, url, body=None, token=None, ok404=False):
    req = urllib.request.Request(url, json.dumps(body).encode() if body is not None else None,
                                 method=method, headers={"Content-Type": "application/json"})
    if token:
        req.add_header("X-Auth-Token", token)
    try:
        with urllib.request.urlopen(req, timeout=60) as resp:
            raw = resp.read()
            return resp.headers, (json.loads(raw) if raw else None)
    except urllib.error.HTTPError as e:
        if ok404 and e.code == 404:
            return None, None
        sys.exit(f"openstack.sh reregister: {method} {url}: {e.code} {e.read()[:500]!r}")

def login(user, project):
    body = {"auth": {"identity": {"methods": ["password"], "password": {"user": {
        "name": user, "domain": {"name": "Default"}, "password": f"{user}-secret"}}},
        "scope": {"project": {"name": project, "domain": {"name": "Default"}}}}}
    headers, doc = call("POST", f"{ks}/auth/tokens", body)
    return headers["X-Subject-Token"], doc["token"]

def endpoint(token, stype):
    urls = [e["url"] for s in token["catalog"] if s["type"] == stype for e in s["endpoints"]
            if e["interface"] == "public" and e.get("region_id") == "RegionOne"]
    if len(urls) != 1:
        sys.exit(f"openstack.sh reregister: no single public {stype} endpoint in the catalog")
    return urls[0].rstrip("/")

path = os.path.join(base, "openstack.json")
with open(path) as f:
    ids = json.load(f)
admin, admin_token = login("admin", "admin")
demo, demo_token = login("demo", "demo")
neutron, nova = endpoint(demo_token, "network"), endpoint(demo_token, "compute")
project = demo_token["project"]["id"]

_, doc = call("GET", f"{neutron}/v2.0/networks?name=private&project_id={project}", token=demo)
if doc["networks"]:
    net = doc["networks"][0]["id"]
    _, doc = call("GET", f"{neutron}/v2.0/subnets?name=private-subnet&network_id={net}", token=demo)
    subnet = doc["subnets"][0]["id"]
else:
    old = ids["networks"]["private"]["network"]
    call("DELETE", f"{neutron}/v2.0/networks/{old}", token=admin, ok404=True)
    _, doc = call("POST", f"{neutron}/v2.0/networks", {"network": {"name": "private"}}, token=demo)
    net = doc["network"]["id"]
    _, doc = call("POST", f"{neutron}/v2.0/subnets", {"subnet": {
        "name": "private-subnet", "network_id": net, "ip_version": 4, "cidr": "10.0.0.0/24"}},
        token=demo)
    subnet = doc["subnet"]["id"]
ids["networks"]["private"] = {"network": net, "subnet": subnet}

_, doc = call("GET", f"{nova}/os-keypairs/default", token=demo, ok404=True)
if doc is None:
    with open(ids["keypair"]["private_key_file"] + ".pub") as f:
        public_key = f.read().strip()
    _, doc = call("POST", f"{nova}/os-keypairs",
                  {"keypair": {"name": "default", "public_key": public_key}}, token=demo)
ids["keypair"]["fingerprint"] = doc["keypair"]["fingerprint"]

with open(os.path.join(base, "keystone-ids.json")) as f:
    ids["keystone"] = json.load(f)
with open(path + ".tmp", "w") as f:
    json.dump(ids, f, indent=2)
os.replace(path + ".tmp", path)
EOF
}

cmd="${1:-}"; shift || true
case "$cmd" in
  start)
    [[ $# -eq 2 || $# -eq 3 ]] || usage
    base="$1" ks_base="$2" port="${3:-19292}"
    [[ -f "$ks_base/env" ]] || { log "$ks_base/env missing: run scripts/keystone.sh start first"; exit 1; }
    ks_base="$(cd "$ks_base" && pwd)"
    mkdir -p "$base"; base="$(cd "$base" && pwd)"
    stop "$base"
    t0=$SECONDS
    venv="$("$HERE/venv.sh" openstack)"
    openstack="$("$HERE/venv.sh" cli)"
    # shellcheck disable=SC1091
    ks_url="$(. "$ks_base/env" && echo "$KEYSTONE_URL")"
    clouds="$(. "$ks_base/env" && echo "$OS_CLIENT_CONFIG_FILE")"
    ks_root="${ks_url%/v3}"
    rm -rf "$base/etc" "$base/log" "$base/run" "$base/env" "$base/openstack.json"
    for svc in "${SERVICES[@]}"; do rm -rf "${base:?}/$svc"; mkdir -p "$base/$svc/etc" "$base/$svc/lock"; done
    mkdir -p "$base/log" "$base/run" "$base/glance/images" "$base/glance/staging" "$base/glance/tasks"
    echo "$venv" >"$base/venv-path"
    echo "$port" >"$base/port"
    echo "$ks_base" >"$base/keystone-base"
    write_conf "$base" "$ks_root"
    register "$base" "$ks_url"
    migrate "$base"
    log "migrations done after $((SECONDS - t0)) s; starting the API processes"
    trap 'log "start failed: stopping the services (logs in $base/log)"; stop "$base"' ERR
    run_all "$base"
    cat >"$base/env" <<EOF
OPENSTACK_BASE=$base
GLANCE_URL=http://127.0.0.1:$(port_of "$base" glance)
NOVA_URL=http://127.0.0.1:$(port_of "$base" nova)/v2.1
NEUTRON_URL=http://127.0.0.1:$(port_of "$base" neutron)
CINDER_URL=http://127.0.0.1:$(port_of "$base" cinder)/v3
KEYSTONE_URL=$ks_url
KEYSTONE_BASE=$ks_base
OS_CLIENT_CONFIG_FILE=$clouds
EOF
    log "APIs up after $((SECONDS - t0)) s; seeding"
    OS_CLIENT_CONFIG_FILE="$clouds" python3 "$HERE/openstack/seed.py" "$base" "$openstack"
    trap - ERR
    log "running (glance, nova, neutron, cinder on ports $port-$((port + 3))) after $((SECONDS - t0)) s"
    echo "$base" ;;
  stop)
    [[ $# -eq 1 ]] || usage
    [[ -d "$1" ]] || exit 0
    stop "$(cd "$1" && pwd)" ;;
  resume)
    [[ $# -eq 1 ]] || usage
    base="$(cd "$1" && pwd)"
    stop "$base"
    run_all "$base" ;;
  reregister)
    [[ $# -eq 1 ]] || usage
    base="$(cd "$1" && pwd)"
    [[ -f "$base/env" && -f "$base/openstack.json" ]] \
      || { log "$base has no seeded services: run openstack.sh start"; exit 1; }
    t0=$SECONDS
    ks_base="$(cat "$base/keystone-base")"
    # shellcheck disable=SC1091
    ks_url="$(. "$ks_base/env" && echo "$KEYSTONE_URL")"
    # The services validate tokens at the Keystone their configuration names.
    if [[ "$ks_url" != "$(sed -n 's/^KEYSTONE_URL=//p' "$base/env")" ]]; then
      log "Keystone of $ks_base is now $ks_url, not the one the services use: run openstack.sh start"
      exit 1
    fi
    for svc in "${SERVICES[@]}"; do
      pid="$(cat "$base/run/$svc.pid" 2>/dev/null || true)"
      [[ -n "$pid" ]] && kill -0 "$pid" 2>/dev/null \
        || { log "$svc is not running: run openstack.sh resume or start"; exit 1; }
    done
    register "$base" "$ks_url"
    reseed_users "$base" "$ks_url"
    log "registered again in $ks_url, demo's network and keypair made again, after $((SECONDS - t0)) s"
    echo "$base" ;;
  *) usage ;;
esac
