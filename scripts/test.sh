#!/usr/bin/env bash
# The whole test suite, as CI runs it (.ci/run calls this script):
#   1. cargo fmt --check, cargo clippy -D warnings (unwrap/expect denied in the service), the
#      module graph (scripts/module-graph.py: no cycle, nothing below the API depends on it),
#      and, as background jobs begun at the start (see `background`), the CAAPH add-on
#      proxies (scripts/addons.sh check: deploy/addons/*.yaml render and select offline) and
#      cargo machete (no unused dependency);
#   2. starts the real components the tests use (nothing is mocked in integration tests):
#      MariaDB from Debian packages on 127.0.0.1:${MARIADB_PORT:-13306}; the real
#      `openstack` CLI (python-openstackclient + python-magnumclient from PyPI); the real
#      Magnum 23 API (PyPI) on a database made by Magnum's own migrations (port
#      ${MAGNUM_REF_PORT:-19621}), and the one the conformance harness (tests/conformance.rs)
#      runs on its own such databases, on ports ${MAGNUM_CONF_PORTS:-19611,19612}; a real
#      kube-apiserver (built from Go source) with etcd and the Cluster API CRDs; the real
#      Cluster API controllers with their webhooks (scripts/capi.sh, own netns), and a
#      second set of them for tests/serial's MariaDB pass (own netns, 127.0.0.2); a real
#      Keystone 30 (PyPI, fernet tokens) on 127.0.0.1:${MAGNUM_RS_KEYSTONE_PORT:-15000}, and
#      behind it the API processes of Glance 33, Nova 34, Neutron 29 and Cinder 29 (PyPI,
#      scripts/openstack.sh) from ${MAGNUM_RS_OPENSTACK_PORT:-15200};
#   3. performs the Dockerfile's steps without a container engine (scripts/image-steps.sh:
#      release build, runtime root, non-root start, /healthz, HEALTHCHECK), a background job
#      at the lowest priority from the start;
#   4. runs `cargo test` against SQLite, then the test binaries whose suites touch our
#      database (DB_BINARIES below) against MariaDB (a second,
#      dedicated MariaDB on 13307 is stopped and started by the /readyz test), then
#      tests/serial on SQLite and on MariaDB side by side (serial_passes), with the
#      conformance harness and then step 5 beside them;
#   5. runs magnum-tempest-plugin's API tests (scripts/tempest.sh) against magnum-rs with
#      `--auth keystone` and a freshly re-provisioned Keystone on the same port, the OpenStack
#      services registered in it again (scripts/openstack.sh reregister);
#   6. the Horizon end to end (scripts/horizon-test.sh): Horizon 27 + magnum-ui 19 (PyPI)
#      driven in Debian's headless Chromium (apt-get when missing) against magnum-rs with
#      Keystone auth; its own Keystone and OpenStack services; ports 15100 (Keystone),
#      15300-15303 (Glance, Nova API, Neutron, Cinder API), 19711 (magnum-rs), 18000 (Horizon);
#      the screenshot of the cluster list is kept in output/horizon/clusters.png.
#   7. waits for the background jobs (begun at the start: the setup's venvs, tempest's and
#      Horizon's venvs and Chromium, the test binaries, the checks and the image steps above,
#      and the drop of earlier runs' test databases) and fails when one failed.
# Heavy things (virtualenvs, the kube-apiserver build, MariaDB's datadir, cargo's target
# dir) are cached in ${MAGNUM_RS_CACHE:-~/.cache/magnum-rs}. Exits non-zero when anything fails.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(dirname "$HERE")"
cd "$ROOT"

# Cargo's build output lives with the other heavy builds, outside the checkout: a clean clone
# (CI) reuses it, and a warm run compiles only what changed (a clean clone's own target/ made
# every CI run build the debug, clippy and release artifacts from nothing: about 15 min).
# CARGO_TARGET_DIR, when set, wins. Kept under a bound (cargo_cache_bound).
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-${MAGNUM_RS_CACHE:-$HOME/.cache/magnum-rs}/target}"
CARGO_CACHE_MAX_GB="${MAGNUM_RS_CARGO_CACHE_MAX_GB:-30}"
# Incremental compilation keeps a session per build that changed a crate; over many commits
# debug/incremental grows without end. Past the bound it is dropped (the dependencies stay
# built), under cargo's own lock of that directory so that no build of another run is cut.
cargo_cache_bound() {
  local gb lock="$CARGO_TARGET_DIR/debug/.cargo-lock"
  [[ -d "$CARGO_TARGET_DIR/debug/incremental" ]] || return 0
  gb="$(du -s --block-size=1G "$CARGO_TARGET_DIR" | cut -f1)"
  ((gb > CARGO_CACHE_MAX_GB)) || return 0
  echo "scripts/test.sh: $CARGO_TARGET_DIR is ${gb} GB (bound ${CARGO_CACHE_MAX_GB}): dropping debug/incremental" >&2
  flock -w 600 "$lock" rm -rf "$CARGO_TARGET_DIR/debug/incremental"
}

REF_DB=magnum_rs_reference
KEYSTONE_PORT="${MAGNUM_RS_KEYSTONE_PORT:-15000}"
# The catalog's container-infra endpoint: tests/e2e/keystone_auth.rs serves magnum-rs here.
KEYSTONE_MAGNUM_PORT="${MAGNUM_RS_KEYSTONE_MAGNUM_PORT:-19511}"
KEYSTONE_DIR="${MAGNUM_RS_CACHE:-$HOME/.cache/magnum-rs}/keystone-run"
# glance-api, nova-api, neutron's API and cinder-api behind that Keystone
# (scripts/openstack.sh): ports OPENSTACK_PORT to OPENSTACK_PORT+3.
OPENSTACK_PORT="${MAGNUM_RS_OPENSTACK_PORT:-15200}"
OPENSTACK_DIR="${MAGNUM_RS_CACHE:-$HOME/.cache/magnum-rs}/openstack-run"
REF_PORT="${MAGNUM_REF_PORT:-19621}"
# Two ports for the real Magnum API that the conformance harness starts (HTTP cases, CLI
# session); its databases are conf_{http,cli}_{magnum,ours} on the MariaDB below.
CONF_PORTS="${MAGNUM_CONF_PORTS:-19611,19612}"
KUBE_DIR="${MAGNUM_RS_CACHE:-$HOME/.cache/magnum-rs}/kube-run"
CAPI_DIR="${MAGNUM_RS_CACHE:-$HOME/.cache/magnum-rs}/capi-run"
# The second set of Cluster API managers, for tests/serial's MariaDB pass (serial_passes).
CAPI_DIR_MARIADB="${MAGNUM_RS_CACHE:-$HOME/.cache/magnum-rs}/capi-run-mariadb"
# scripts/horizon-test.sh's state (its Keystone and OpenStack services; it stops them itself).
HORIZON_DIR="${MAGNUM_RS_HORIZON_DIR:-${MAGNUM_RS_CACHE:-$HOME/.cache/magnum-rs}/horizon-run}"

# Each step line says how long the run has taken so far (the suite's time, step by step).
step() { printf '\n==> [%ss] %s\n' "$SECONDS" "$*" >&2; }
cleanup() {
  local p
  # The background jobs whose results were not read (the run ended early).
  kill_background
  for p in ${CONF_PORTS//,/ }; do "$HERE/magnum-api.sh" stop "$p" >/dev/null 2>&1 || true; done
  "$HERE/magnum-api.sh" stop "$REF_PORT" >/dev/null 2>&1 || true
  "$HERE/kube.sh" stop "$KUBE_DIR" >/dev/null 2>&1 || true
  "$HERE/capi.sh" stop "$CAPI_DIR" >/dev/null 2>&1 || true
  "$HERE/capi.sh" stop "$CAPI_DIR_MARIADB" >/dev/null 2>&1 || true
  "$HERE/openstack.sh" stop "$OPENSTACK_DIR" >/dev/null 2>&1 || true
  "$HERE/keystone.sh" stop "$KEYSTONE_DIR" >/dev/null 2>&1 || true
  # horizon-test.sh stops its own at its exit; these are for a horizon-test.sh killed outright.
  "$HERE/openstack.sh" stop "$HORIZON_DIR/openstack" >/dev/null 2>&1 || true
  "$HERE/keystone.sh" stop "$HORIZON_DIR/keystone" >/dev/null 2>&1 || true
}
trap cleanup EXIT

# The test binaries (tests/*.rs, tests/*/main.rs) the MariaDB pass runs: every one whose
# suites use magnum-rs's database (common::fresh_database or spawn_app, or
# MAGNUM_RS_TEST_MYSQL_URL directly). Checked here, before anything starts, so a new suite
# on the database in a binary missing from this list fails the run at once.
DB_BINARIES=(api e2e hardening serial)
# tests/serial runs a thread per test: its two kinds of tests (on the Cluster API
# controllers; load) take a lock each and run side by side (tests/serial/main.rs). The other
# test binaries (tests/*.rs, tests/*/main.rs) run before it, with libtest's default threads,
# except the conformance harness, which runs beside it (see serial_passes).
SERIAL_THREADS=16
# The name of the test binary of TARGET (tests/NAME.rs or tests/NAME/main.rs).
binary_name() {
  if [[ "$1" == */main.rs ]]; then basename "$(dirname "$1")"; else basename "$1" .rs; fi
}
ALL_TESTS=()
for target in tests/*.rs tests/*/main.rs; do
  name="$(binary_name "$target")"
  [[ "$name" == serial || "$name" == conformance ]] || ALL_TESTS+=(--test "$name")
done
DB_TESTS=()
for b in "${DB_BINARIES[@]}"; do [[ "$b" == serial ]] || DB_TESTS+=(--test "$b"); done
check_db_binaries() {
  local target name
  for target in tests/*.rs tests/*/main.rs; do
    name="$(binary_name "$target")"
    if [[ "$target" == */main.rs ]]; then
      # a binary in a folder: every .rs file below it is one of its modules
      grep -rqE --include='*.rs' 'MAGNUM_RS_TEST_MYSQL_URL|fresh_database|spawn_app' \
        "$(dirname "$target")" || continue
    else
      grep -qE 'MAGNUM_RS_TEST_MYSQL_URL|fresh_database|spawn_app' "$target" || continue
    fi
    if [[ " ${DB_BINARIES[*]} " != *" $name "* ]]; then
      echo "scripts/test.sh: tests/$name uses magnum-rs's database; add it to DB_BINARIES" >&2
      return 1
    fi
  done
}
check_db_binaries

# Work that needs no service and whose result is needed only later runs in the background
# from the start, beside the rest; each job's output is kept and shown, and its result
# counted, at the end (background_results). On a cold machine this takes the builds and
# downloads of the tail (venvs, Chromium, the image steps' release build) and the setup's
# downloads off the path to the first test; on a warm one each job finds its cache and ends
# at once. What a job makes is also what a later step asks for (venv.sh, mcapi.sh install,
# horizon.sh browser): those take the same lock and wait for the job, or find it done.
#   - normal priority: what the setup needs soon (its packages and venvs; the test binaries
#     once clippy is done), whose downloads and installs fill the CPU the setup's builds
#     leave idle;
#   - lowest priority: what only the end needs (tempest's and Horizon's venvs, Chromium,
#     cargo-machete, the add-on proxies' check, the image steps' release build), so that it
#     takes only the CPU the rest leaves idle (downloads, tests waiting on the controllers)
#     and barely slows a step with a deadline.
# Each job is a session of its own, so that it and all it starts (cargo, rustc, pip, the
# server the image steps start) are killed as one group when the run ends early. Where the
# kernel groups sessions for scheduling (sched_autogroup), such a session would get an equal
# share of the CPU whatever its processes' nice: a low-priority job's group gets nice 19 too
# (/proc/self/autogroup; seen here: a nice-19 group beside a nice-0 one on one core got 1.4 %
# of it). The image steps' release build uses target/release, whose cargo lock is not the
# one of the debug builds; cargo-machete is built in a temporary target dir for that reason.
BACKGROUND_JOBS=()
declare -A BACKGROUND_PID BACKGROUND_LOG
# background NAME normal|low COMMAND... (a program or a function exported with export -f)
background() {
  local name="$1" prio="$2" log; shift 2
  log="$(mktemp)"
  if [[ "$prio" == low ]]; then
    setsid bash -c 'set -euo pipefail; echo 19 >/proc/self/autogroup 2>/dev/null || true
      renice -n 19 -p $$ >/dev/null; "$@"' bash "$@" >"$log" 2>&1 &
  else
    setsid bash -c 'set -euo pipefail; "$@"' bash "$@" >"$log" 2>&1 &
  fi
  BACKGROUND_PID[$name]=$!
  BACKGROUND_LOG[$name]="$log"
  BACKGROUND_JOBS+=("$name")
}
# Waits for every job; shows each one's output; fails when one failed.
background_results() {
  local name rc=0 one
  for name in "${BACKGROUND_JOBS[@]}"; do
    step "background job: $name"
    one=0
    wait "${BACKGROUND_PID[$name]}" || one=$?
    BACKGROUND_PID[$name]=
    cat "${BACKGROUND_LOG[$name]}" >&2
    rm -f "${BACKGROUND_LOG[$name]}"
    if ((one)); then echo "scripts/test.sh: background job '$name' failed (exit $one)" >&2; rc=1; fi
  done
  return "$rc"
}
kill_background() {
  local name pid
  for name in "${BACKGROUND_JOBS[@]}"; do
    pid="${BACKGROUND_PID[$name]:-}"
    [[ -n "$pid" ]] || continue
    kill -- "-$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  done
}
# The setup's packages (first, so that the tail's apt-get of Chromium cannot hold them up)
# and venvs, in the order the setup asks for them.
setup_installs() {
  "$HERE/mariadb.sh" install
  "$HERE/capi.sh" install-socat
  "$HERE/venv.sh" cli >/dev/null
  "$HERE/venv.sh" magnum >/dev/null
  "$HERE/mcapi.sh" install >/dev/null
  "$HERE/venv.sh" keystone >/dev/null
  "$HERE/venv.sh" openstack >/dev/null
}
# What only the last steps use: tempest's and Horizon's venvs, Chromium (apt-get).
tail_installs() {
  "$HERE/venv.sh" tempest >/dev/null
  "$HERE/venv.sh" horizon >/dev/null
  "$HERE/horizon.sh" browser >/dev/null
}
# cargo machete: no declared dependency is unused (cargo-machete built when missing).
machete() {
  if ! command -v cargo-machete >/dev/null 2>&1; then
    env -u CARGO_TARGET_DIR cargo install cargo-machete --locked --version 0.9.2
  fi
  cargo machete
}
# The CAAPH add-on proxies: deploy/addons/*.yaml render and select offline (a small Go
# program). Its report only when it fails.
addons_check() {
  local report
  report="$("$HERE/addons.sh" check)" || { echo "$report"; return 1; }
}
export -f setup_installs tail_installs machete addons_check
export HERE
background "the setup's packages and venvs (MariaDB, socat; venv.sh cli, magnum, keystone, openstack; mcapi.sh install)" normal setup_installs
background "tempest's and Horizon's venvs, Chromium" low tail_installs
background "cargo machete: no declared dependency is unused" low machete
background "CAAPH add-on proxies: deploy/addons/*.yaml render and select (scripts/addons.sh check)" low addons_check
background "the Dockerfile's build and runtime steps without a container engine (scripts/image-steps.sh)" low "$HERE/image-steps.sh"

step "cargo's build cache: $CARGO_TARGET_DIR"
cargo_cache_bound

step "cargo fmt --check"
cargo fmt --all -- --check

step "cargo clippy --all-targets -- -D warnings"
cargo clippy --all-targets -- -D warnings

step "module graph: no cycle, nothing below the API depends on it (scripts/module-graph.py)"
python3 "$HERE/module-graph.py"

# The test binaries, built beside the setup (the debug artifact dir's lock is free once
# clippy is done); each `cargo test` below finds them built, or waits for this build's lock.
background "the test binaries (cargo test --no-run)" normal cargo test --no-run --lib --bins --tests

step "MariaDB"
"$HERE/mariadb.sh" start
MYSQL_BASE="$("$HERE/mariadb.sh" url)"

step "a second, dedicated MariaDB for the readiness test (it is stopped and started; the shared one never is)"
READYZ_DB_ENV="MARIADB_PORT=${MAGNUM_RS_READYZ_DB_PORT:-13307} MARIADB_DATADIR=${MAGNUM_RS_CACHE:-$HOME/.cache/magnum-rs}/mariadb-readyz"
env $READYZ_DB_ENV "$HERE/mariadb.sh" start
MAGNUM_RS_TEST_READYZ_MYSQL_URL="$(env $READYZ_DB_ENV "$HERE/mariadb.sh" url)"
MAGNUM_RS_TEST_READYZ_DB_STOP="env $READYZ_DB_ENV $HERE/mariadb.sh stop"
MAGNUM_RS_TEST_READYZ_DB_START="env $READYZ_DB_ENV $HERE/mariadb.sh start"
export MAGNUM_RS_TEST_READYZ_MYSQL_URL MAGNUM_RS_TEST_READYZ_DB_STOP MAGNUM_RS_TEST_READYZ_DB_START

step "openstack CLI"
MAGNUM_RS_OPENSTACK="$("$HERE/venv.sh" cli)"
export MAGNUM_RS_OPENSTACK

step "real Magnum 23 (PyPI) for the differential conformance harness"
# tests/conformance.rs creates its databases with Magnum's own migrations, seeds them and
# starts the real Magnum API itself (scripts/magnum-db.sh, scripts/magnum-api.sh).
"$HERE/venv.sh" magnum >/dev/null
export MAGNUM_RS_TEST_CONFORMANCE_MYSQL="$MYSQL_BASE"
export MAGNUM_RS_TEST_CONFORMANCE_PORTS="$CONF_PORTS"

step "real Magnum 23 API on a database made by Magnum's migrations"
# tests/e2e/magnum_database_admin.rs: stats, quotas and services side by side on one database.
"$HERE/magnum-db.sh" create "$REF_DB" >&2
"$HERE/magnum-db.sh" seed "$REF_DB" >&2
"$HERE/magnum-api.sh" stop "$REF_PORT" >/dev/null 2>&1 || true
MAGNUM_RS_TEST_MAGNUM_API="$("$HERE/magnum-api.sh" start "$REF_DB" "$REF_PORT")"
export MAGNUM_RS_TEST_MAGNUM_API
export MAGNUM_RS_TEST_MAGNUM_DB="$MYSQL_BASE/$REF_DB"

step "real kube-apiserver + etcd with the Cluster API CRDs"
"$HERE/kube.sh" build
"$HERE/kube.sh" stop "$KUBE_DIR" >/dev/null 2>&1 || true
rm -rf "$KUBE_DIR"
# Every request of user magnum-rs (the limited kubeconfig) goes to $KUBE_DIR/audit.log:
# tests/serial/watch_at_rest.rs counts the driver's requests there.
MAGNUM_RS_TEST_KUBECONFIG="$(KUBE_AUDIT_POLICY="$ROOT/tests/fixtures/kube/audit-policy.json" \
  "$HERE/kube.sh" start "$KUBE_DIR")"
export MAGNUM_RS_TEST_KUBECONFIG

step "real Cluster API controllers (core+topology, KCP, CABPK, CAPD in-memory, CAPO, CAAPH) with their webhooks"
# tests/serial/capi_e2e.rs: the controllers do the work; magnum-rs and the CLI drive them.
"$HERE/capi.sh" build
"$HERE/capo.sh" build
"$HERE/caaph.sh" build
"$HERE/capi.sh" stop "$CAPI_DIR" >/dev/null 2>&1 || true
MAGNUM_RS_TEST_CAPI_ENV="$("$HERE/capi.sh" start "$CAPI_DIR")"
export MAGNUM_RS_TEST_CAPI_ENV
# CAPO v0.14.7 in the same namespace, reaching the Keystone and OpenStack services started
# below at the URLs of their catalog, and magnum-cluster-api 0.38.2's own ClusterClass
# magnum-v0.38.2 (docs/capo-env.md). capi.sh stop stops CAPO too.
"$HERE/capo.sh" start "$CAPI_DIR" --reach "$KEYSTONE_PORT,$OPENSTACK_PORT-$((OPENSTACK_PORT + 3))"
"$HERE/mcapi.sh" apply-class "$(sed -n 's/^KUBECONFIG=//p' "$MAGNUM_RS_TEST_CAPI_ENV")" >/dev/null
export MAGNUM_RS_TEST_CAPO=1
# CAAPH v0.4.1 in the same namespace (docs/caaph-env.md), and the HelmChartProxies of
# deploy/addons/ applied as an operator applies them (scripts/addons.sh apply): they give
# the Helm-chart add-ons to the Clusters magnum-rs creates (tests/e2e/mcapi_addons.rs). No
# --reach: CAAPH talks to the management and workload API servers only, and no workload
# control plane comes up here, so no chart is fetched. capi.sh stop stops it too.
"$HERE/caaph.sh" start "$CAPI_DIR"
"$HERE/addons.sh" apply "$(sed -n 's/^KUBECONFIG=//p' "$MAGNUM_RS_TEST_CAPI_ENV")" >/dev/null
export MAGNUM_RS_TEST_CAAPH=1
# A second set of the four managers (no CAPO, no CAAPH: tests/serial uses neither) with a
# kube-apiserver and network namespace of its own, whose fake workload API servers listen
# on 127.0.0.2: tests/serial's MariaDB pass runs on it beside the SQLite pass on the first
# (serial_passes). Idle until then (a few seconds of CPU).
"$HERE/capi.sh" stop "$CAPI_DIR_MARIADB" >/dev/null 2>&1 || true
CAPI_ENV_MARIADB="$(CAPI_POD_IP=127.0.0.2 "$HERE/capi.sh" start "$CAPI_DIR_MARIADB")"

step "real Keystone 30 (fernet tokens) with magnum-rs in its catalog"
MAGNUM_RS_TEST_KEYSTONE="$("$HERE/keystone.sh" start "$KEYSTONE_DIR" "$KEYSTONE_PORT" \
  "http://127.0.0.1:$KEYSTONE_MAGNUM_PORT/v1")"
export MAGNUM_RS_TEST_KEYSTONE

step "real Glance 33, Nova API 34, Neutron server 29, Cinder API 29 (PyPI) behind that Keystone"
# tests/e2e/openstack_lookups.rs: Magnum's look-ups against them. The tempest step's
# keystone.sh start wipes their service users and catalog entries; it registers them again
# with `openstack.sh reregister` (the processes and their data keep running).
"$HERE/openstack.sh" stop "$OPENSTACK_DIR" >/dev/null 2>&1 || true
MAGNUM_RS_TEST_OPENSTACK="$("$HERE/openstack.sh" start "$OPENSTACK_DIR" "$KEYSTONE_DIR" "$OPENSTACK_PORT")"
export MAGNUM_RS_TEST_OPENSTACK

step "magnum-cluster-api 0.38.2 (PyPI) for the differential test of the Cluster it builds"
# tests/e2e/mcapi_differential.rs: its own code renders the Cluster for the same rows, its
# look-ups going to the services above (scripts/mcapi.sh render).
"$HERE/mcapi.sh" install >/dev/null
export MAGNUM_RS_TEST_MCAPI=1

step "dropping test databases left by earlier runs (listed now, dropped in the background)"
# A few hundred per run, about 70 s of InnoDB file removals: a background job drops the ones
# listed here, before this run's tests make any (their names are new UUIDs).
STALE_DATABASES="$(mktemp)"
"$HERE/mariadb.sh" test-databases >"$STALE_DATABASES"
echo "scripts/test.sh: $(grep -c . "$STALE_DATABASES" || true) to drop" >&2
drop_stale_databases() { "$HERE/mariadb.sh" drop-databases <"$STALE_DATABASES" && rm -f "$STALE_DATABASES"; }
export -f drop_stale_databases
export STALE_DATABASES
background "dropping the test databases of earlier runs" normal drop_stale_databases

# Tests that need what this script starts are `#[ignore = "needs scripts/test.sh"]`, so a
# plain `cargo test` passes on a bare machine; here they all run (`--include-ignored`), and a
# pass that still reports an ignored test fails: nothing real is skipped in silence.
# cargo_test_all CARGO_ARGS... [-- LIBTEST_ARGS...]
cargo_test_all() {
  local log args=()
  while [[ $# -gt 0 && "$1" != -- ]]; do args+=("$1"); shift; done
  [[ $# -gt 0 ]] && shift
  log="$(mktemp)"
  cargo test "${args[@]}" -- --include-ignored "$@" 2>&1 | tee "$log"
  if grep -qE '^test result: .* [1-9][0-9]* ignored' "$log"; then
    echo "scripts/test.sh: a test was ignored although --include-ignored was given" >&2
    rm -f "$log"
    return 1
  fi
  rm -f "$log"
}

# serial_passes COMMAND...: tests/serial twice in the background, side by side, while
# COMMAND runs: on SQLite with the Cluster API controllers of $CAPI_DIR, and on MariaDB with
# those of $CAPI_DIR_MARIADB (each pass stops providers and restarts the kube-apiserver of
# its own set only; watch_at_rest works in a namespace of its own on the shared
# kube-apiserver). Their output is kept and shown when they end; fails when one fails.
# Beside them only what has no timing bound of its own (the conformance harness and
# tempest's API tests compare answers): their load tests take all the CPU they get for
# 60-120 s, and their controllers' tests mostly wait on the controllers. Seen on 2 cores:
# one pass alone 650-720 s, the CPU 40-70 % idle once the harness beside it had ended (CI
# 21); both passes side by side 1003 and 1025 s with the harness beside them, both cores
# busy (CI 22), 340 s less than one after the other.
# What bounds this phase is each pass's three controllers' tests, one after the other on its
# controllers (their audit logs, CI 25: 4.0, 7.4 and 5.7 min per pass, against 2.3, 3.2 and
# 4.3 with one pass alone in CI 21), not the CPU the harness takes: with the conformance
# harness moved beside e2e on SQLite instead (CI 25), both passes still took 1130-1150 s,
# and e2e went from 410-470 s to 664 s.
serial_passes() {
  local log_sqlite log_mariadb pid_sqlite pid_mariadb rc=0
  log_sqlite="$(mktemp)" log_mariadb="$(mktemp)"
  cargo_test_all --test serial -- --test-threads "$SERIAL_THREADS" --show-output >"$log_sqlite" 2>&1 &
  pid_sqlite=$!
  MAGNUM_RS_TEST_MYSQL_URL="$MYSQL_BASE" MAGNUM_RS_TEST_CAPI_ENV="$CAPI_ENV_MARIADB" \
    cargo_test_all --test serial -- --test-threads "$SERIAL_THREADS" --show-output >"$log_mariadb" 2>&1 &
  pid_mariadb=$!
  "$@" || rc=1
  wait "$pid_sqlite" || rc=1
  wait "$pid_mariadb" || rc=1
  echo "--- tests/serial on SQLite, run beside the above:"
  cat "$log_sqlite"
  echo "--- tests/serial on MariaDB, run beside the above:"
  cat "$log_mariadb"
  rm -f "$log_sqlite" "$log_mariadb"
  return "$rc"
}

step "cargo test (SQLite)"
cargo_test_all --lib --bins "${ALL_TESTS[@]}"

step "cargo test (MariaDB): the test binaries whose suites touch magnum-rs's database"
# Unit tests ran above; conformance (its own databases, made by Magnum's migrations) runs
# once, below. api, e2e, hardening and serial (below, serial_passes) each hold suites on
# magnum-rs's database; the few of their modules that use none (api's policy_sample, e2e's
# deploy_rbac and magnum_database_admin) run here again, unchanged. DB_BINARIES was checked
# against tests/ at the start.
# e2e's mcapi_adoption is left out here only: it always runs on a Magnum database of its own
# in this MariaDB (made by Magnum's migrations), whatever MAGNUM_RS_TEST_MYSQL_URL says, so
# the SQLite pass above ran it on MariaDB already (about 160 s).
MAGNUM_RS_TEST_MYSQL_URL="$MYSQL_BASE" cargo_test_all "${DB_TESTS[@]}" -- --skip mcapi_adoption::

# magnum-tempest-plugin's API tests against magnum-rs (its own SQLite database) with
# `--auth keystone`, on a fresh Keystone state: the keystone_auth tests above revoke tokens
# and change token lifetimes. magnum-rs validates templates and clusters against Glance, Nova
# and Neutron with the user's token and its catalog, so the fresh Keystone gets the OpenStack
# services back: `reregister` (about 3 s) registers their users and endpoints again and makes
# demo's network and keypair again while the processes keep running; a stop + start would
# take about 18 s (4 + 14, warm and idle).
tempest() {
  step "magnum-tempest-plugin API tests (real Keystone, magnum-rs --auth keystone), beside tests/serial"
  "$HERE/keystone.sh" start "$KEYSTONE_DIR" "$KEYSTONE_PORT" \
    "http://127.0.0.1:$KEYSTONE_MAGNUM_PORT/v1" >/dev/null || return 1
  "$HERE/openstack.sh" reregister "$OPENSTACK_DIR" >/dev/null || return 1
  "$HERE/tempest.sh" "$KEYSTONE_DIR"
}
conformance_then_tempest() {
  step "the differential conformance harness against the real Magnum 23, beside tests/serial on SQLite and on MariaDB"
  cargo_test_all --test conformance || return 1
  tempest
}
step "tests/serial on SQLite and on MariaDB side by side, each on Cluster API controllers of its own (output when they end)"
serial_passes conformance_then_tempest

step "Horizon end to end (headless Chromium)"
"$HERE/horizon-test.sh"

background_results

step "all tests passed: SQLite, MariaDB, tempest API tests, Horizon, the image steps and the background checks"
