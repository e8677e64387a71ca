#!/usr/bin/env bash
# Status sync at scale: magnum-rs as leader of one management cluster holding N topology
# Clusters (each with its KubeadmControlPlane, two MachineDeployments and four Machines),
# on the project's real kube-apiserver (scripts/kube.sh). Writes
# bench/results/<UTC date>-kube.md (and the raw JSON lines beside the work files).
#
#   bench/kube/run.sh                          N = 1,000 then 5,000 (about 20 minutes)
#   BENCH_KUBE_SIZES="200" bench/kube/run.sh   one small size
#
# What is measured, and how, is in bench/kube/README.md. The objects are written directly
# (bench/kube/fleet.py): the Cluster API controllers would not fit on 2 cores at this size;
# the controllers' part of a resize is played by the bench. Knobs: BENCH_KUBE_SIZES,
# BENCH_KUBE_IDLE_SECONDS (60), BENCH_KUBE_SEQUENTIAL (200), BENCH_KUBE_PORT (19790),
# BENCH_WORK (default $MAGNUM_RS_CACHE/bench-kube/<timestamp>), BENCH_RESULTS (the .md).
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
CACHE="${MAGNUM_RS_CACHE:-$HOME/.cache/magnum-rs}"
SIZES="${BENCH_KUBE_SIZES:-1000 5000}"
STAMP="$(date -u +%Y%m%dT%H%M%SZ)"
WORK="${BENCH_WORK:-$CACHE/bench-kube/$STAMP}"
RESULTS="${BENCH_RESULTS:-$ROOT/bench/results/$(date -u +%Y-%m-%d)-kube.md}"
KDIR="$WORK/kube"

say() { echo "bench/kube: $*" >&2; }
mkdir -p "$WORK"
trap '"$ROOT/scripts/kube.sh" stop "$KDIR" >/dev/null 2>&1 || true' EXIT

say "building magnum-rs (release) and the kube-apiserver"
(cd "$ROOT" && cargo build --release --quiet)
BIN="$ROOT/target/release/magnum-rs"
"$ROOT/scripts/kube.sh" build

# Every request of user magnum-rs (the driver's identity here) is logged; nothing else.
KUBE_AUDIT_POLICY="$ROOT/tests/fixtures/kube/audit-policy.json" "$ROOT/scripts/kube.sh" start "$KDIR" >/dev/null

# The shipped configuration with one management cluster: kube.sh's limited user, to which
# bench/kube/fleet.py binds deploy/role.yaml's Role.
sed "s|^management_clusters = \[\]|management_clusters = [{ name = \"bench\", kubeconfig = \"$KDIR/kubeconfig-limited\" }]|" \
  "$ROOT/etc/magnum-rs.toml" >"$WORK/magnum-rs-kube.toml"
grep -q 'name = "bench"' "$WORK/magnum-rs-kube.toml" || { say "cannot set management_clusters"; exit 1; }

# Python with PyYAML (for deploy/role.yaml): the openstack CLI's virtualenv.
PY="$(dirname "$("$ROOT/scripts/venv.sh" cli)")/python"

{
  echo "nproc=$(nproc)"
  echo "cpu=$(awk -F': ' '/model name/ {print $2; exit}' /proc/cpuinfo)"
  echo "uptime_start=$(uptime)"
  echo "magnum_rs=$(git -C "$ROOT" rev-parse --short HEAD)$(git -C "$ROOT" diff --quiet || echo +dirty)"
  grep -E '^(KUBE_VERSION|CAPI_VERSION)=' "$KDIR/env"
} >"$WORK/meta"

have=0
: >"$WORK/results.jsonl"
for n in $SIZES; do
  say "N=$n"
  "$PY" "$HERE/bench.py" --env "$KDIR/env" --bin "$BIN" --work "$WORK" --n "$n" \
    --have "$have" --port "${BENCH_KUBE_PORT:-19790}" --out "$WORK/results.jsonl" \
    --idle "${BENCH_KUBE_IDLE_SECONDS:-60}" --sequential "${BENCH_KUBE_SEQUENTIAL:-200}"
  have="$n"
done
echo "uptime_end=$(uptime)" >>"$WORK/meta"

python3 "$HERE/report.py" "$WORK/meta" "$WORK/results.jsonl" >"$RESULTS"
cp "$WORK/results.jsonl" "${RESULTS%.md}.jsonl"
say "report: $RESULTS"
