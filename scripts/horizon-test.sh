#!/usr/bin/env bash
# Horizon end to end: the real Horizon 27 + magnum-ui 19 (PyPI) in Debian's headless
# Chromium, against magnum-rs with Keystone auth (the real Keystone 30 names magnum-rs as its
# container-infra endpoint). scripts/test.sh runs this after the cargo tests.
#
#   1. a fresh Keystone (scripts/keystone.sh) with the catalog pointing at magnum-rs, and
#      behind it its own Glance, Nova API, Neutron and Cinder API (scripts/openstack.sh start:
#      in the catalog, seeded), which magnum-rs validates templates and clusters against with
#      the user's token, as Magnum does;
#   2. magnum-rs (target/debug, built if needed) with --auth keystone on a fresh SQLite file;
#   3. Horizon (scripts/horizon.sh: venv, Chromium + chromedriver from Debian when missing);
#   4. seeds with the real `openstack` CLI through the catalog, as demo (template + clusters
#      demo-k8s-a, demo-k8s-b) and as alt (template + cluster alt-k8s); the templates name
#      resources that exist there (image ubuntu-2204, flavor m1.small, external network public);
#   5. tests/horizon/test_clusters.py (Selenium, in Horizon's venv): demo logs in, sees its
#      clusters and not alt's, opens a cluster's detail page and the templates panel, resizes demo-k8s-a's default-worker from 1 to 3 in the dialog,
#      sees 3 after a reload; then the CLI confirms the nodegroup's count in magnum-rs.
# Outputs (screenshots with the cluster list in output/horizon/clusters.png, result.json,
# chromedriver.log) go to output/horizon/ in the work tree (ignored by git); logs of the
# servers to $DIR/logs.
#
# Env: MAGNUM_RS_HORIZON_DIR (state, default $MAGNUM_RS_CACHE/horizon-run), ports
# MAGNUM_RS_HORIZON_KEYSTONE_PORT (15100), MAGNUM_RS_HORIZON_OPENSTACK_PORT (15300: glance,
# then nova, neutron, cinder on the next three), MAGNUM_RS_HORIZON_MAGNUM_PORT (19711),
# MAGNUM_RS_HORIZON_PORT (18000); MAGNUM_RS_BIN (default: cargo build's target/debug binary).
# Exits non-zero when anything fails.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(dirname "$HERE")"
cd "$ROOT"

CACHE="${MAGNUM_RS_CACHE:-$HOME/.cache/magnum-rs}"
DIR="${MAGNUM_RS_HORIZON_DIR:-$CACHE/horizon-run}"
KS_PORT="${MAGNUM_RS_HORIZON_KEYSTONE_PORT:-15100}"
OS_PORT="${MAGNUM_RS_HORIZON_OPENSTACK_PORT:-15300}"
MAGNUM_PORT="${MAGNUM_RS_HORIZON_MAGNUM_PORT:-19711}"
HORIZON_PORT="${MAGNUM_RS_HORIZON_PORT:-18000}"
OUT="$ROOT/output/horizon"
NEW_COUNT=3
# The templates' image. tests/horizon/test_clusters.py looks for exactly this name on the
# cluster's detail page (the template's image_id as given), so this script adds it to its
# Glance beside openstack.sh's ubuntu-2204-kube, with the same os_distro.
IMAGE=ubuntu-2204

step() { printf '\n==> horizon-test: %s\n' "$*" >&2; }
fail() { echo "horizon-test.sh: $*" >&2; exit 1; }

MAGNUM_PID=""
cleanup() {
  "$HERE/horizon.sh" stop "$DIR/horizon" >/dev/null 2>&1 || true
  if [[ -n "$MAGNUM_PID" ]]; then kill "$MAGNUM_PID" 2>/dev/null || true; wait "$MAGNUM_PID" 2>/dev/null || true; fi
  "$HERE/openstack.sh" stop "$DIR/openstack" >/dev/null 2>&1 || true
  "$HERE/keystone.sh" stop "$DIR/keystone" >/dev/null 2>&1 || true
}
trap cleanup EXIT

mkdir -p "$DIR/logs" "$DIR/magnum"
rm -rf "$OUT"; mkdir -p "$OUT"
START=$SECONDS

step "magnum-rs binary"
if [[ -n "${MAGNUM_RS_BIN:-}" ]]; then
  BIN="$MAGNUM_RS_BIN"
else
  cargo build --quiet --bin magnum-rs
  BIN="${CARGO_TARGET_DIR:-$ROOT/target}/debug/magnum-rs"
fi
[[ -x "$BIN" ]] || fail "no magnum-rs binary at $BIN"

step "openstack CLI"
OPENSTACK="$("$HERE/venv.sh" cli)"

step "Keystone on 127.0.0.1:$KS_PORT, container-infra at 127.0.0.1:$MAGNUM_PORT"
"$HERE/keystone.sh" start "$DIR/keystone" "$KS_PORT" "http://127.0.0.1:$MAGNUM_PORT/v1" >/dev/null
KS_URL="http://127.0.0.1:$KS_PORT/v3"

step "Glance, Nova API, Neutron, Cinder API on 127.0.0.1:$OS_PORT-$((OS_PORT + 3)) behind that Keystone"
"$HERE/openstack.sh" start "$DIR/openstack" "$DIR/keystone" "$OS_PORT" >/dev/null
OS_CLIENT_CONFIG_FILE="$DIR/keystone/clouds.yaml" "$OPENSTACK" --os-cloud ks-admin image create \
  "$IMAGE" --public --disk-format raw --container-format bare \
  --file "$DIR/openstack/seed/tiny.img" --property os_distro=ubuntu -f value -c id >/dev/null

step "magnum-rs (--auth keystone) on 127.0.0.1:$MAGNUM_PORT"
rm -f "$DIR"/magnum/magnum-rs.db*
MAGNUM_RS_KEYSTONE_AUTH_URL="$KS_URL" MAGNUM_RS_KEYSTONE_PASSWORD=magnum-secret \
  "$BIN" --database-url "sqlite://$DIR/magnum/magnum-rs.db" --bind "127.0.0.1:$MAGNUM_PORT" \
  --auth keystone serve >"$DIR/logs/magnum-rs.log" 2>&1 </dev/null &
MAGNUM_PID=$!
for _ in $(seq 300); do
  curl -fsS --max-time 2 -o /dev/null "http://127.0.0.1:$MAGNUM_PORT/" 2>/dev/null && break
  kill -0 "$MAGNUM_PID" 2>/dev/null || { tail -20 "$DIR/logs/magnum-rs.log" >&2; fail "magnum-rs exited"; }
  sleep 0.1
done
curl -fsS --max-time 2 -o /dev/null "http://127.0.0.1:$MAGNUM_PORT/" || fail "magnum-rs did not answer"

step "Horizon on 127.0.0.1:$HORIZON_PORT"
"$HERE/horizon.sh" start "$DIR/horizon" "$HORIZON_PORT" "$KS_URL" >/dev/null
# shellcheck disable=SC1091
source "$DIR/horizon/env"

step "seeding with the openstack CLI (password auth, endpoint from the catalog)"
export OS_CLIENT_CONFIG_FILE="$DIR/keystone/clouds.yaml"
coe() {  # coe CLOUD ARGS...
  local cloud="$1"; shift
  "$OPENSTACK" --os-cloud "$cloud" coe "$@"
}
wait_status() {  # wait_status CLOUD CLUSTER STATUS
  local s=""
  for _ in $(seq 600); do
    s="$(coe "$1" cluster show "$2" -f value -c status)"
    [[ "$s" == "$3" ]] && return 0
    sleep 0.2
  done
  fail "cluster $2 is $s, not $3"
}
seed() {  # seed CLOUD TEMPLATE CLUSTER...
  local cloud="$1" template="$2"; shift 2
  coe "$cloud" cluster template create "$template" --coe kubernetes --image "$IMAGE" \
    --flavor m1.small --master-flavor m1.small --external-network public --master-lb-enabled \
    -f value -c uuid >/dev/null
  local c
  for c in "$@"; do
    coe "$cloud" cluster create "$c" --cluster-template "$template" --master-count 1 \
      --node-count 1 >/dev/null
  done
  for c in "$@"; do wait_status "$cloud" "$c" CREATE_COMPLETE; done
}
seed ks-demo k8s-demo demo-k8s-a demo-k8s-b
seed ks-alt k8s-alt alt-k8s
ALT_UUID="$(coe ks-alt cluster show alt-k8s -f value -c uuid)"

# The clusters page also asks for GET /v1/stats (the stats panel): it must answer, and the
# panel must show the project's numbers with no error toast.
TOKEN="$("$OPENSTACK" --os-cloud ks-demo token issue -f value -c id)"
code="$(curl -sS -o /dev/null -w '%{http_code}' -H "X-Auth-Token: $TOKEN" \
  -H 'OpenStack-API-Version: container-infra 1.13' "http://127.0.0.1:$MAGNUM_PORT/v1/stats")"
[ "$code" = 200 ] || fail "GET /v1/stats answered $code"

step "browser: log in as demo, list, screenshot, resize default-worker, reload"
HORIZON_OUT="$OUT" HORIZON_RUN="$DIR/horizon/run" HORIZON_URL="$HORIZON_URL" \
  CHROMEDRIVER="$CHROMEDRIVER" CHROMIUM="$CHROMIUM" \
  HORIZON_USER=demo HORIZON_PASSWORD=demo-secret \
  HORIZON_OWN_CLUSTERS=demo-k8s-a,demo-k8s-b HORIZON_OTHER_CLUSTERS="alt-k8s,$ALT_UUID" \
  HORIZON_RESIZE_CLUSTER=demo-k8s-a HORIZON_NEW_COUNT="$NEW_COUNT" \
  HORIZON_OWN_TEMPLATE=k8s-demo HORIZON_OTHER_TEMPLATE=k8s-alt \
  "$HORIZON_VENV/bin/python" "$ROOT/tests/horizon/test_clusters.py" \
  || { cp "$DIR"/horizon/log/*.log "$DIR/logs/" 2>/dev/null || true
       echo "horizon-test.sh: logs in $DIR/logs (magnum-rs.log, horizon.log)" >&2; exit 1; }

step "magnum-rs has the count the browser asked for"
got="$(coe ks-demo nodegroup show demo-k8s-a default-worker -f value -c node_count)"
[[ "$got" == "$NEW_COUNT" ]] || fail "default-worker of demo-k8s-a has $got nodes, not $NEW_COUNT"
[[ -s "$OUT/clusters.png" ]] || fail "no screenshot at $OUT/clusters.png"

step "passed in $((SECONDS - START)) s; screenshot: output/horizon/clusters.png"
