#!/usr/bin/env bash
# Cluster API Provider OpenStack (CAPO, sigs.k8s.io/cluster-api-provider-openstack v0.14.7)
# added to the environment of scripts/capi.sh, so that magnum-cluster-api's ClusterClass
# (scripts/mcapi.sh apply-class) and OpenStackClusters work against the real Keystone and
# OpenStack services of scripts/keystone.sh and scripts/openstack.sh. See docs/capo-env.md.
#
#   scripts/capo.sh build          build capo-manager into the cache (instant when cached)
#                                  through the wrapper module scripts/capo/ (CAPO's own
#                                  dependency set: cluster-api v1.12.10, k8s.io/* v0.34.10,
#                                  controller-runtime v0.22.5, ORC v2.4.0, gophercloud
#                                  v2.10.0; kept apart from scripts/kube/ so that module's
#                                  versions do not move)
#   scripts/capo.sh start DIR [--reach PORTS]
#                                  into a running `scripts/capi.sh start DIR`: CAPO's 7 CRDs
#                                  and ORC's Image CRD (crdprep -contract), capo-manager
#                                  inside DIR's network namespace, its validating webhooks.
#                                  --reach 15000,15200-15203: each listed host loopback port
#                                  is reachable inside the namespace at the same address
#                                  127.0.0.1:PORT (the URLs the Keystone catalog lists); the
#                                  services behind may start later. No-op for what already runs.
#   scripts/capo.sh stop DIR       stop capo-manager and the reach bridges (capi.sh stop DIR
#                                  stops them too)
#   scripts/capo.sh status DIR     one line per process: name pid|down
#
# Ports inside the namespace: webhook 9445, health 9455, diagnostics 8445 (capi.sh's
# managers use 9441-9444, 9451-9454, 8441-8444). Logs: DIR/capo.log, DIR/bridge-reach-*.log.
# Reach bridges: host `socat UNIX-LISTEN:DIR/reach-P.sock -> TCP 127.0.0.1:P` and in the
# namespace `socat TCP-LISTEN 127.0.0.1:P -> DIR/reach-P.sock`; pid files
# DIR/bridge-reach-P-{host,ns}.pid (capi.sh stop kills every DIR/bridge-*.pid).
# Env: MAGNUM_RS_CACHE (~/.cache/magnum-rs): binary in $MAGNUM_RS_CACHE/capo/bin, Go caches
# shared with kube.sh/capi.sh ($MAGNUM_RS_CACHE/go/{gomod,gocache}). Needs `go` on PATH
# (build), root (ip netns), socat, curl.
set -Eeuo pipefail
trap 'echo "${0##*/}: line $LINENO: \"$BASH_COMMAND\" failed (exit $?)" >&2' ERR

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
MOD="$HERE/capo"                                   # wrapper Go module (committed)
TOP="${MAGNUM_RS_CACHE:-$HOME/.cache/magnum-rs}"
CACHE="$TOP/capo"
BIN="$CACHE/bin"
KBIN="$TOP/kube/bin"                               # crdprep (scripts/kube.sh build)

CAPO_VERSION=v0.14.7   # the newest the Go module proxy serves (v0.14.8+, v0.15.x: 403)
ORC_VERSION=v2.4.0     # k-orc/openstack-resource-controller, as CAPO's go.mod requires
WH=9445 HEALTH=9455 DIAG=8445

GO_CACHE="$TOP/go"
export GOMODCACHE="$GO_CACHE/gomod" GOCACHE="$GO_CACHE/gocache" GOTOOLCHAIN=local
export GOFLAGS="-mod=readonly -trimpath -buildvcs=false" CGO_ENABLED=0

log() { echo "capo.sh: $*" >&2; }
die() { log "$*"; exit 1; }
usage() { die "usage: capo.sh build | start DIR [--reach PORTS] | stop DIR | status DIR"; }

stamp_ok() { [[ -f "$1.stamp" && "$(cat "$1.stamp")" == "$2" ]]; }

build() {
  command -v go >/dev/null || die "go not found (need Go >= $(awk '$1=="go"{print $2}' "$MOD/go.mod"))"
  mkdir -p "$BIN"
  exec 8>"$CACHE/build.lock" && flock 8
  local stamp t0 ld kv
  stamp="$CAPO_VERSION $(cat "$MOD/go.mod" "$MOD/go.sum" | sha256sum | cut -c1-16)"
  if [[ -x "$BIN/capo-manager" ]] && stamp_ok "$BIN/capo-manager" "$stamp"; then exec 8>&-; return; fi
  log "building capo-manager $CAPO_VERSION (cold: ~2.5 min and ~1.3 GB of Go cache on 2 idle cores)"
  t0=$SECONDS
  ld="-s -w"
  for kv in gitVersion=$CAPO_VERSION gitMajor=0 gitMinor=14 gitTreeState=clean; do
    ld="$ld -X sigs.k8s.io/cluster-api-provider-openstack/version.$kv"
  done
  (cd "$MOD" && nice -n 19 go build -ldflags "$ld" -o "$BIN/capo-manager.tmp" \
    sigs.k8s.io/cluster-api-provider-openstack)
  mv "$BIN/capo-manager.tmp" "$BIN/capo-manager"
  echo "$stamp" >"$BIN/capo-manager.stamp"
  log "built capo-manager in $((SECONDS - t0)) s"
  exec 8>&-
}

# --- running (in the namespace of `capi.sh start DIR`) ---

CTRL=capo
# shellcheck source=scripts/lib/controller.sh
source "$HERE/lib/controller.sh"

start() {
  begin_start "$@"
  if [[ -n "$(live_pid capo)" ]]; then log "capo-manager already running (pid $(live_pid capo))"; return 0; fi
  [[ -x "$BIN/capo-manager" ]] || build
  [[ -x "$KBIN/crdprep" ]] || die "no $KBIN/crdprep (scripts/kube.sh build)"
  local capo_dir orc_dir
  capo_dir="$(module_dir "sigs.k8s.io/cluster-api-provider-openstack@$CAPO_VERSION")"
  orc_dir="$(module_dir "github.com/k-orc/openstack-resource-controller/v2@$ORC_VERSION")"
  [[ -d "$capo_dir/config/crd/bases" && -d "$orc_dir/config/crd/bases" ]] || die "CAPO/ORC module dirs not found"

  # CRDs: one version each, no conversion; -contract adds cluster.x-k8s.io/v1beta1: v1beta1.
  apply_crds -contract -convert-port "$WH" -ca "$DIR/certs/ca.crt" -- \
    "$capo_dir"/config/crd/bases/*.yaml "$orc_dir/config/crd/bases/openstack.k-orc.cloud_images.yaml"

  # The manager needs no cloud flags: credentials come per cluster through identityRef.
  setsid ip netns exec "$NS" env KUBECONFIG="$DIR/kubeconfig-netns" "$BIN/capo-manager" \
    --leader-elect=false --webhook-port="$WH" --webhook-cert-dir="$DIR/certs" \
    --health-addr="127.0.0.1:$HEALTH" --diagnostics-address="127.0.0.1:$DIAG" --insecure-diagnostics \
    </dev/null >>"$DIR/capo.log" 2>&1 &
  echo $! >"$DIR/capo.pid"
  wait_manager_ready
  register_webhooks "$capo_dir/config/webhook/manifests.yaml"
}

# TERM to every process at once, up to 10 s, then KILL (as capi.sh stop_some).
stop_all() {
  local f n pid i pids=() names=()
  for f in "$DIR/capo.pid" "$DIR"/bridge-reach-*.pid; do
    [[ -e "$f" ]] || continue
    n="$(basename "$f" .pid)"; names+=("$n")
    pid="$(live_pid "$n")"
    if [[ -n "$pid" ]]; then kill "$pid" 2>/dev/null || true; pids+=("$pid"); fi
  done
  for ((i = 0; i < 100; i++)); do
    local alive=0
    for pid in "${pids[@]}"; do kill -0 "$pid" 2>/dev/null && alive=1; done
    ((alive)) || break
    sleep 0.1
  done
  for pid in "${pids[@]}"; do kill -9 "$pid" 2>/dev/null || true; done
  for n in "${names[@]}"; do rm -f "$DIR/$n.pid"; done
  rm -f "$DIR"/reach-*.sock
}

stop() {
  [[ -n "${1:-}" ]] || usage
  [[ -d "$1" ]] || return 0
  load_dir_to_stop "$1"
  stop_all
}

status() {
  load_dir "${1:-}"
  print_status
}

case "${1:-}" in
  build) [[ $# -eq 1 ]] || usage; build ;;
  start) shift; start "$@" ;;
  stop) [[ $# -eq 2 ]] || usage; stop "$2" ;;
  status) [[ $# -eq 2 ]] || usage; status "$2" ;;
  *) usage ;;
esac
