#!/usr/bin/env bash
# Cluster API Add-on Provider for Helm (CAAPH, sigs.k8s.io/cluster-api-addon-provider-helm
# v0.4.1) added to the environment of scripts/capi.sh, so that HelmChartProxies install
# Helm charts into the workload clusters of that environment. See docs/caaph-env.md.
#
#   scripts/caaph.sh build         build caaph-manager into the cache (instant when cached)
#                                  through the wrapper module scripts/caaph/ (CAAPH's own
#                                  dependency set: cluster-api v1.10.6, k8s.io/* v0.32.3,
#                                  controller-runtime v0.20.4, helm v3.16.4; kept apart from
#                                  scripts/kube/ and scripts/capo/ so their versions do not
#                                  move). The proxy answers 403 for CAAPH's .mod: a cold
#                                  module cache gets it from a file:// proxy made from the
#                                  module's .zip (see ensure_module).
#   scripts/caaph.sh start DIR [--reach PORTS]
#                                  into a running `scripts/capi.sh start DIR`: CAAPH's 2 CRDs
#                                  (HelmChartProxy, HelmReleaseProxy; v1alpha1 only),
#                                  caaph-manager inside DIR's network namespace, its mutating
#                                  and validating webhooks. --reach 18000,18001-18002: each
#                                  listed host loopback port is reachable inside the
#                                  namespace at 127.0.0.1:PORT (e.g. a chart repository on
#                                  the host), through the same bridges as capo.sh --reach
#                                  (shared: a bridge either script made is reused).
#                                  No-op for what already runs.
#   scripts/caaph.sh stop [DIR]    stop caaph-manager (the reach bridges are shared with
#                                  capo.sh: `capo.sh stop DIR` or `capi.sh stop DIR` stop them)
#   scripts/caaph.sh status [DIR]  one line per process: name pid|down
#   DIR defaults to $MAGNUM_RS_CACHE/capi-run (the one scripts/test.sh uses) for stop/status.
#
# Ports inside the namespace: webhook 9446, health 9456, diagnostics 8446 (capi.sh's
# managers use 9441-9444, 9451-9454, 8441-8444; capo.sh 9445, 9455, 8445). Logs:
# DIR/caaph.log, DIR/bridge-reach-*.log. Helm's home (cache, config, data, temp files):
# DIR/caaph-home. Reach bridges: host `socat UNIX-LISTEN:DIR/reach-P.sock -> TCP
# 127.0.0.1:P` and in the namespace `socat TCP-LISTEN 127.0.0.1:P -> DIR/reach-P.sock`; pid
# files DIR/bridge-reach-P-{host,ns}.pid (capi.sh stop kills every DIR/bridge-*.pid).
# capi.sh stop stops it too (DIR/caaph.pid).
# Env: MAGNUM_RS_CACHE (~/.cache/magnum-rs): binary in $MAGNUM_RS_CACHE/caaph/bin, Go caches
# shared with kube.sh/capi.sh/capo.sh ($MAGNUM_RS_CACHE/go/{gomod,gocache}). Needs `go` on
# PATH (build), curl and python3 or unzip (cold module cache), root (ip netns), socat.
set -Eeuo pipefail
trap 'echo "${0##*/}: line $LINENO: \"$BASH_COMMAND\" failed (exit $?)" >&2' ERR

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
MOD="$HERE/caaph"                                  # wrapper Go module (committed)
TOP="${MAGNUM_RS_CACHE:-$HOME/.cache/magnum-rs}"
CACHE="$TOP/caaph"
BIN="$CACHE/bin"
KBIN="$TOP/kube/bin"                               # crdprep (scripts/kube.sh build)

CAAPH_MODULE=sigs.k8s.io/cluster-api-addon-provider-helm
CAAPH_VERSION=v0.4.1   # the proxy serves its .info and .zip, but its .mod: 403
WH=9446 HEALTH=9456 DIAG=8446

GO_CACHE="$TOP/go"
export GOMODCACHE="$GO_CACHE/gomod" GOCACHE="$GO_CACHE/gocache" GOTOOLCHAIN=local
export GOFLAGS="-mod=readonly -trimpath -buildvcs=false" CGO_ENABLED=0
UPSTREAM_PROXY="https://proxy.golang.org"
FILE_PROXY="$CACHE/goproxy"                        # CAAPH's list/.info/.zip/.mod only

log() { echo "caaph.sh: $*" >&2; }
die() { log "$*"; exit 1; }
usage() { die "usage: caaph.sh build | start DIR [--reach PORTS] | stop [DIR] | status [DIR]"; }

stamp_ok() { [[ -f "$1.stamp" && "$(cat "$1.stamp")" == "$2" ]]; }

# The Go module proxy answers 403 for $CAAPH_MODULE/@v/$CAAPH_VERSION.mod (its .info and
# .zip are served). When the module cache lacks it, a file:// proxy in front of the real
# one serves list, .info and .zip fetched from the proxy and the .mod taken from the go.mod
# inside the .zip (what the proxy would serve); the go command checks both against
# scripts/caaph/go.sum (build) or the checksum database (module_dir).
ensure_module() {
  local esc="$CAAPH_MODULE/@v" at="$CAAPH_MODULE@$CAAPH_VERSION" d tmp
  if [[ -s "$GOMODCACHE/cache/download/$esc/$CAAPH_VERSION.mod" \
        && -s "$GOMODCACHE/cache/download/$esc/$CAAPH_VERSION.zip" ]]; then
    return 0
  fi
  d="$FILE_PROXY/$esc"
  if [[ ! -s "$d/$CAAPH_VERSION.mod" || ! -s "$d/$CAAPH_VERSION.zip" || ! -s "$d/$CAAPH_VERSION.info" ]]; then
    command -v curl >/dev/null || die "curl not found (needed to fetch $at)"
    log "module cache lacks $at: file proxy $FILE_PROXY (the proxy answers 403 for its .mod)"
    mkdir -p "$d"
    tmp="$(mktemp -d "$CACHE/goproxy.tmp.XXXXXX")"
    curl -fsSL --retry 3 -o "$tmp/$CAAPH_VERSION.info" "$UPSTREAM_PROXY/$esc/$CAAPH_VERSION.info" \
      || { rm -rf "$tmp"; die "cannot fetch $UPSTREAM_PROXY/$esc/$CAAPH_VERSION.info"; }
    curl -fsSL --retry 3 -o "$tmp/$CAAPH_VERSION.zip" "$UPSTREAM_PROXY/$esc/$CAAPH_VERSION.zip" \
      || { rm -rf "$tmp"; die "cannot fetch $UPSTREAM_PROXY/$esc/$CAAPH_VERSION.zip"; }
    if command -v python3 >/dev/null; then
      python3 -c 'import sys, zipfile; sys.stdout.buffer.write(zipfile.ZipFile(sys.argv[1]).read(sys.argv[2]))' \
        "$tmp/$CAAPH_VERSION.zip" "$at/go.mod" >"$tmp/$CAAPH_VERSION.mod"
    elif command -v unzip >/dev/null; then
      unzip -p "$tmp/$CAAPH_VERSION.zip" "$at/go.mod" >"$tmp/$CAAPH_VERSION.mod"
    else
      rm -rf "$tmp"; die "need python3 or unzip to read go.mod out of $at's zip"
    fi
    grep -qx "module $CAAPH_MODULE" "$tmp/$CAAPH_VERSION.mod" \
      || { rm -rf "$tmp"; die "no go.mod of $CAAPH_MODULE in $at's zip"; }
    echo "$CAAPH_VERSION" >"$tmp/list"
    mv "$tmp/$CAAPH_VERSION.info" "$tmp/$CAAPH_VERSION.zip" "$tmp/$CAAPH_VERSION.mod" "$tmp/list" "$d/"
    rm -rf "$tmp"
  fi
  export GOPROXY="file://$FILE_PROXY,$UPSTREAM_PROXY"
}

build() {
  command -v go >/dev/null || die "go not found (need Go >= $(awk '$1=="go"{print $2}' "$MOD/go.mod"))"
  mkdir -p "$BIN"
  exec 8>"$CACHE/build.lock" && flock 8
  local stamp t0 ld kv
  stamp="$CAAPH_VERSION $(cat "$MOD/go.mod" "$MOD/go.sum" | sha256sum | cut -c1-16)"
  if [[ -x "$BIN/caaph-manager" ]] && stamp_ok "$BIN/caaph-manager" "$stamp"; then exec 8>&-; return; fi
  ensure_module
  log "building caaph-manager $CAAPH_VERSION (cold: ~6 min on 2 idle cores)"
  t0=$SECONDS
  ld="-s -w"
  for kv in gitVersion=$CAAPH_VERSION gitMajor=0 gitMinor=4 gitTreeState=clean; do
    ld="$ld -X $CAAPH_MODULE/version.$kv"
  done
  (cd "$MOD" && nice -n 19 go build -ldflags "$ld" -o "$BIN/caaph-manager.tmp" "$CAAPH_MODULE")
  mv "$BIN/caaph-manager.tmp" "$BIN/caaph-manager"
  echo "$stamp" >"$BIN/caaph-manager.stamp"
  log "built caaph-manager in $((SECONDS - t0)) s"
  exec 8>&-
}

# --- running (in the namespace of `capi.sh start DIR`) ---

CTRL=caaph
# shellcheck source=scripts/lib/controller.sh
source "$HERE/lib/controller.sh"

start() {
  begin_start "$@"
  if [[ -n "$(live_pid caaph)" ]]; then log "caaph-manager already running (pid $(live_pid caaph))"; return 0; fi
  [[ -x "$BIN/caaph-manager" ]] || build
  [[ -x "$KBIN/crdprep" ]] || die "no $KBIN/crdprep (scripts/kube.sh build)"
  local caaph_dir
  mkdir -p "$CACHE"
  caaph_dir="$(ensure_module && module_dir "$CAAPH_MODULE@$CAAPH_VERSION")"
  [[ -d "$caaph_dir/config/crd/bases" ]] || die "CAAPH module dir not found"

  # CRDs: v1alpha1 only, no conversion, no contract labels (nothing refers to them by
  # contract: CAAPH finds Clusters by the HelmChartProxy's clusterSelector).
  apply_crds -version v1alpha1 -- "$caaph_dir"/config/crd/bases/*.yaml

  # Helm (helm.sh/helm/v3's cli settings) keeps its repository cache, config and registry
  # files under HOME/XDG dirs, and CAAPH writes values files to TMPDIR: all in DIR.
  local home="$DIR/caaph-home"
  mkdir -p "$home/cache" "$home/config" "$home/data" "$home/tmp"
  # Clusters are read as cluster.x-k8s.io/v1beta1 (capi.sh's conversion webhook).
  setsid ip netns exec "$NS" env KUBECONFIG="$DIR/kubeconfig-netns" HOME="$home" \
    HELM_CACHE_HOME="$home/cache" HELM_CONFIG_HOME="$home/config" HELM_DATA_HOME="$home/data" \
    TMPDIR="$home/tmp" "$BIN/caaph-manager" \
    --leader-elect=false --webhook-port="$WH" --webhook-cert-dir="$DIR/certs" \
    --health-addr="127.0.0.1:$HEALTH" --diagnostics-address="127.0.0.1:$DIAG" --insecure-diagnostics \
    </dev/null >>"$DIR/caaph.log" 2>&1 &
  echo $! >"$DIR/caaph.pid"
  wait_manager_ready
  register_webhooks "$caaph_dir/config/webhook/manifests.yaml"
}

# TERM, up to 10 s, then KILL (as capi.sh stop_some). Only caaph-manager: the reach
# bridges may be capo.sh's too (capo.sh stop / capi.sh stop end them).
stop_all() {
  local pid i
  pid="$(live_pid caaph)"
  if [[ -n "$pid" ]]; then
    kill "$pid" 2>/dev/null || true
    for ((i = 0; i < 100; i++)); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$pid" 2>/dev/null || true
  fi
  rm -f "$DIR/caaph.pid"
}

stop() {
  [[ -d "$1" ]] || return 0
  load_dir_to_stop "$1"
  stop_all
}

status() {
  load_dir "$1"
  print_status
}

case "${1:-}" in
  build) [[ $# -eq 1 ]] || usage; build ;;
  start) shift; start "$@" ;;
  stop) [[ $# -le 2 ]] || usage; stop "${2:-$TOP/capi-run}" ;;
  status) [[ $# -le 2 ]] || usage; status "${2:-$TOP/capi-run}" ;;
  *) usage ;;
esac
