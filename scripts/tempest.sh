#!/usr/bin/env bash
# The API tests of magnum-tempest-plugin (PyPI) against magnum-rs with a real Keystone.
#
#   scripts/tempest.sh KEYSTONE_BASE [WORKDIR]
#
# KEYSTONE_BASE is a directory made by `scripts/keystone.sh start` (admin/admin-secret, the
# `magnum` service user, a `container-infra` endpoint), with the OpenStack services of
# `scripts/openstack.sh start` (or `reregister` after a new `keystone.sh start`) in its catalog:
# magnum-rs validates templates and clusters against them with the user's token, as Magnum
# does, and tempest.conf names what openstack.sh seeds (image fedora-coreos, flavor m1.small,
# external network public). The script
#   1. looks up the public `container-infra` endpoint in Keystone's catalog (and checks that the
#      catalog has compute, image and network) and starts magnum-rs there (`--auth keystone`,
#      a fresh SQLite database in WORKDIR; the binary is $MAGNUM_RS_BIN, default
#      target/debug/magnum-rs built with `cargo build`);
#   2. `tempest init`s a workspace in WORKDIR (default $MAGNUM_RS_CACHE/tempest-run, outside
#      the repo) with the venv of `scripts/venv.sh tempest`;
#   3. runs the plugin's API tests in two passes, each with its own tempest.conf:
#        rbac   tests/api/v1/rbac/*  [enforce_scope] magnum = true
#        legacy tests/api/v1/test_* [enforce_scope] magnum = false
#      both with [magnum] keypair_name magnum-test. The legacy tests create that keypair in
#      Nova (os-keypairs, through the catalog) for each dynamic user they get credentials for;
#      the rbac tests never create it, and none of their included tests needs it (no cluster
#      create of theirs gets past the flavor or the node counts);
#      leaving out the tests listed in tests/tempest/exclude.txt (one regex per line, the
#      reason after `#`).
# It fails when a pass lists other than 30 tests before exclusion, when an exclude-list line
# matches other than one test, when any included test fails or is skipped, or when fewer
# tests ran than were included. The last line is
# `tempest: N passed, N failed, N excluded`.
#
# Env: MAGNUM_RS_CACHE (default ~/.cache/magnum-rs), MAGNUM_RS_BIN, PYTHON.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(dirname "$HERE")"
CACHE="${MAGNUM_RS_CACHE:-$HOME/.cache/magnum-rs}"
EXCLUDE="$ROOT/tests/tempest/exclude.txt"
# Test IDs the plugin (magnum-tempest-plugin==2.12.0) has in each pass before exclusion.
PER_PASS=30

usage() { echo "usage: $0 KEYSTONE_BASE [WORKDIR]" >&2; exit 2; }
[[ $# -ge 1 && $# -le 2 ]] || usage
KS_BASE="$(cd "$1" && pwd)"
WORK="${2:-$CACHE/tempest-run}"
[[ -f "$KS_BASE/env" ]] || { echo "tempest.sh: $KS_BASE/env missing (scripts/keystone.sh start)" >&2; exit 1; }
KEYSTONE_URL="$(sed -n 's/^KEYSTONE_URL=//p' "$KS_BASE/env")"

VENV="$("$HERE/venv.sh" tempest)"
mkdir -p "$WORK"
WORK="$(cd "$WORK" && pwd)"

# 1. magnum-rs where the catalog says container-infra is.
MAGNUM_URL="$("$VENV/bin/python" - "$KEYSTONE_URL" <<'EOF'
import json, sys, urllib.request
ks = sys.argv[1]
body = {"auth": {"identity": {"methods": ["password"], "password": {"user": {
    "name": "admin", "domain": {"name": "Default"}, "password": "admin-secret"}}},
    "scope": {"project": {"name": "admin", "domain": {"name": "Default"}}}}}
req = urllib.request.Request(f"{ks}/auth/tokens", json.dumps(body).encode(), method="POST",
                             headers={"Content-Type": "application/json"})
with urllib.request.urlopen(req, timeout=30) as resp:
    catalog = json.load(resp)["token"]["catalog"]
def public(stype):
    return [e["url"] for s in catalog if s["type"] == stype for e in s["endpoints"]
            if e["interface"] == "public" and e.get("region_id") == "RegionOne"]
urls = public("container-infra")
if len(urls) != 1:
    sys.exit(f"tempest.sh: expected one public container-infra endpoint, found {urls}")
# magnum-rs looks up images, flavors, keypairs and networks there (scripts/openstack.sh).
missing = [t for t in ("compute", "image", "network") if len(public(t)) != 1]
if missing:
    sys.exit(f"tempest.sh: the catalog has no public {', '.join(missing)} endpoint: run "
             "scripts/openstack.sh start BASE KEYSTONE_BASE (or reregister BASE after a new "
             "keystone.sh start)")
print(urls[0])
EOF
)"
HOSTPORT="$(echo "$MAGNUM_URL" | sed -E 's#^https?://([^/]+)/.*$#\1#')"
echo "tempest.sh: Keystone $KEYSTONE_URL, container-infra at $MAGNUM_URL" >&2

if [[ -z "${MAGNUM_RS_BIN:-}" ]]; then
  (cd "$ROOT" && cargo build --quiet)
  MAGNUM_RS_BIN="${CARGO_TARGET_DIR:-$ROOT/target}/debug/magnum-rs"
fi
rm -rf "$WORK/magnum-rs" && mkdir -p "$WORK/magnum-rs"
cat >"$WORK/magnum-rs/magnum-rs.toml" <<EOF
[keystone_authtoken]
auth_url = "$KEYSTONE_URL"
EOF
MAGNUM_PID=""
cleanup() {
  if [[ -n "$MAGNUM_PID" ]] && kill -0 "$MAGNUM_PID" 2>/dev/null; then
    kill "$MAGNUM_PID" 2>/dev/null || true
    wait "$MAGNUM_PID" 2>/dev/null || true
  fi
}
trap cleanup EXIT
MAGNUM_RS_KEYSTONE_PASSWORD=magnum-secret "$MAGNUM_RS_BIN" \
  --database-url "sqlite://$WORK/magnum-rs/magnum-rs.db?mode=rwc" --bind "$HOSTPORT" \
  --auth keystone --config "$WORK/magnum-rs/magnum-rs.toml" serve \
  >"$WORK/magnum-rs/magnum-rs.log" 2>&1 &
MAGNUM_PID=$!
for _ in $(seq 300); do
  curl -fsS --max-time 2 "${MAGNUM_URL%/v1}/" >/dev/null 2>&1 && break
  kill -0 "$MAGNUM_PID" 2>/dev/null || { echo "tempest.sh: magnum-rs exited:" >&2; tail -20 "$WORK/magnum-rs/magnum-rs.log" >&2; exit 1; }
  sleep 0.1
done
curl -fsS --max-time 2 "${MAGNUM_URL%/v1}/" >/dev/null || { echo "tempest.sh: magnum-rs did not answer on $MAGNUM_URL" >&2; exit 1; }

# 2. The tempest workspace.
WS="$WORK/workspace"
rm -rf "$WS" "$WORK/workspace.yaml"
"$VENV/bin/tempest" init --workspace-path "$WORK/workspace.yaml" --name magnum-rs "$WS" \
  >"$WORK/init.log" 2>&1 || { echo "tempest.sh: tempest init failed:" >&2; tail -5 "$WORK/init.log" >&2; exit 1; }
cp "$WS/etc/tempest.conf" "$WS/etc/tempest.conf.init"

# [magnum]: what scripts/openstack.sh seeds. The image's os_distro becomes the templates'
# cluster_distro (fedora-coreos: the plugin's own default image family, and the triple of
# magnum-rs's record-only base driver k8s_fedora_coreos_v1); the external network `public` is
# the one with router:external. [service_available] nova: the legacy tests create keypairs in
# Nova (tempest's keypairs client, through the catalog). Glance, Neutron and Cinder are in the
# catalog for magnum-rs, but tempest itself calls none of them (neutron = true would make the
# dynamic credentials clean up each project's default security group).
write_conf() {  # write_conf ENFORCE_SCOPE KEYPAIR_NAME
  cp "$WS/etc/tempest.conf.init" "$WS/etc/tempest.conf"
  cat >>"$WS/etc/tempest.conf" <<EOF

[auth]
use_dynamic_credentials = true
admin_username = admin
admin_password = admin-secret
admin_project_name = admin
admin_domain_name = Default
create_isolated_networks = false

[identity]
auth_version = v3
uri_v3 = $KEYSTONE_URL
region = RegionOne

[identity-feature-enabled]
api_v2 = false

[service_available]
magnum = true
neutron = false
nova = true
glance = false
cinder = false
swift = false

[enforce_scope]
magnum = $1

[magnum]
image_id = fedora-coreos
flavor_id = m1.small
master_flavor_id = m1.small
nic_id = public
dns_nameserver = 8.8.8.8
keypair_name = $2
EOF
}

# 3. The two passes.
total_passed=0 total_failed=0 total_excluded=0 status=0
run_pass() {  # run_pass NAME REGEX ENFORCE_SCOPE KEYPAIR_NAME
  local name="$1" regex="$2" all listed out ran passed skipped failed
  write_conf "$3" "$4"
  all="$(cd "$WS" && "$VENV/bin/tempest" run --list-tests --regex "$regex" | grep -c '^magnum_tempest_plugin' || true)"
  listed="$(cd "$WS" && "$VENV/bin/tempest" run --list-tests --regex "$regex" --exclude-list "$EXCLUDE" | grep -c '^magnum_tempest_plugin' || true)"
  echo "tempest.sh: pass $name: $all tests, $listed after tests/tempest/exclude.txt" >&2
  if [[ "$all" -ne "$PER_PASS" ]]; then
    echo "tempest.sh: pass $name lists $all tests, expected $PER_PASS" >&2; status=1
  fi
  out="$WORK/$name.out"
  # --serial: Keystone on SQLite answers 500 "database is locked" to concurrent writes, and
  # tempest's dynamic credentials create and delete projects and users around every test.
  (cd "$WS" && "$VENV/bin/tempest" run --serial --regex "$regex" --exclude-list "$EXCLUDE") >"$out" 2>&1 || true
  grep -E '^\{[0-9]+\} .*(FAILED|SKIPPED)|^ - |^Totals|Ran: ' "$out" >&2 || true
  ran="$(sed -n 's/^ *Ran: \([0-9]*\) tests.*/\1/p' "$out" | tail -1)"
  passed="$(sed -n 's/^ *- Passed: \([0-9]*\)/\1/p' "$out" | tail -1)"
  skipped="$(sed -n 's/^ *- Skipped: \([0-9]*\)/\1/p' "$out" | tail -1)"
  failed="$(sed -n 's/^ *- Failed: \([0-9]*\)/\1/p' "$out" | tail -1)"
  ran="${ran:-0}" passed="${passed:-0}" skipped="${skipped:-0}" failed="${failed:-0}"
  if [[ "$ran" -ne "$listed" || "$passed" -ne "$listed" || "$skipped" -ne 0 || "$failed" -ne 0 ]]; then
    echo "tempest.sh: pass $name: ran $ran, passed $passed, skipped $skipped, failed $failed; expected $listed to run and pass (output: $out)" >&2
    # What failed and why, in CI's log: each failed test's traceback and request log (the
    # output's own lines, up to the next test), and magnum-rs's warnings and errors.
    awk '/^\{[0-9]+\} / { show = / FAILED$/ } show' "$out" | head -120 >&2 || true
    echo "tempest.sh: magnum-rs's warnings and errors (last 20):" >&2
    sed 's/\x1b\[[0-9;]*m//g' "$WORK/magnum-rs/magnum-rs.log" | grep -E ' (WARN|ERROR) ' | tail -20 >&2 || true
    status=1
  fi
  total_passed=$((total_passed + passed))
  total_failed=$((total_failed + listed - passed))
  total_excluded=$((total_excluded + all - listed))
}
run_pass rbac '^magnum_tempest_plugin\.tests\.api\.v1\.rbac\.' true magnum-test
run_pass legacy '^magnum_tempest_plugin\.tests\.api\.v1\.test_' false magnum-test

# Each line of the exclude list names exactly one test: a broader regex would shrink the run
# without anyone noticing.
lines="$(grep -cE '^[^#[:space:]]' "$EXCLUDE" || true)"
if [[ "$total_excluded" -ne "$lines" ]]; then
  echo "tempest.sh: tests/tempest/exclude.txt has $lines entries but excluded $total_excluded tests" >&2
  status=1
fi
echo "tempest: $total_passed passed, $total_failed failed, $total_excluded excluded"
exit "$status"
