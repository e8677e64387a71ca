#!/usr/bin/env bash
# The Helm-chart add-ons of the Clusters magnum-rs creates on magnum-cluster-api's class:
# the CAAPH HelmChartProxies of deploy/addons/ (see deploy/addons/README.md and
# docs/caaph-env.md).
#
#   scripts/addons.sh check [--show]
#                                  offline: every deploy/addons/*.yaml parsed strictly as a
#                                  CAAPH v0.4.1 HelmChartProxy, its valuesTemplate rendered as
#                                  CAAPH renders it (text/template + sprig v3.3.0) against
#                                  variants of scripts/addons/sample-cluster.json (as it is,
#                                  labelled for each CNI proxy, with a mirror in
#                                  imageRepository, OCCM per Kubernetes version), the values
#                                  parsed as YAML, clusterSelector matched (each proxy selects
#                                  some variant, exactly one CNI per Cluster, none selects a
#                                  Cluster without addons.magnum-rs/* labels). --show prints
#                                  the rendered values.
#   scripts/addons.sh apply KUBECONFIG [--repo URL]
#                                  check, then server-side apply (fieldManager addons.sh) of
#                                  Namespace magnum-system and every deploy/addons/*.yaml to
#                                  the cluster KUBECONFIG's current context points to (token,
#                                  client certificate, CA data or files); --repo URL replaces
#                                  every spec.repoURL (a test chart repository).
#   scripts/addons.sh build        only build the checker (instant when cached)
#
# The checker is the Go program scripts/addons/ (module magnum-rs/addons-check: sprig, its
# semver and cast, sigs.k8s.io/yaml and k8s.io/apimachinery at CAAPH v0.4.1's versions),
# built into $MAGNUM_RS_CACHE/addons-check/bin (no binary in the repository). Go environment
# as caaph.sh: caches $MAGNUM_RS_CACHE/go/{gomod,gocache} (shared), GOTOOLCHAIN=local,
# CGO_ENABLED=0, -trimpath, nice -n 19; GOFLAGS -mod=mod; GOPROXY proxy.golang.org (only
# reached when the module cache lacks a module). Env: MAGNUM_RS_CACHE (~/.cache/magnum-rs).
# Needs `go` on PATH.
set -Eeuo pipefail
trap 'echo "${0##*/}: line $LINENO: \"$BASH_COMMAND\" failed (exit $?)" >&2' ERR

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/.." && pwd)"
MOD="$HERE/addons"                                 # the checker's Go module (committed)
ADDONS="$ROOT/deploy/addons"
SAMPLE="$MOD/sample-cluster.json"
TOP="${MAGNUM_RS_CACHE:-$HOME/.cache/magnum-rs}"
CACHE="$TOP/addons-check"
BIN="$CACHE/bin"

GO_CACHE="$TOP/go"
export GOMODCACHE="$GO_CACHE/gomod" GOCACHE="$GO_CACHE/gocache" GOTOOLCHAIN=local
export GOFLAGS="-mod=mod -trimpath -buildvcs=false" CGO_ENABLED=0
export GOPROXY="https://proxy.golang.org"

log() { echo "addons.sh: $*" >&2; }
die() { log "$*"; exit 1; }
usage() { die "usage: addons.sh check [--show] | apply KUBECONFIG [--repo URL] | build"; }

stamp_ok() { [[ -f "$1.stamp" && "$(cat "$1.stamp")" == "$2" ]]; }

build() {
  command -v go >/dev/null || die "go not found (need Go >= $(awk '$1=="go"{print $2}' "$MOD/go.mod"))"
  mkdir -p "$BIN"
  exec 8>"$CACHE/build.lock" && flock 8
  local stamp t0
  stamp="$(cat "$MOD/go.mod" "$MOD/go.sum" "$MOD"/*.go | sha256sum | cut -c1-16)"
  if [[ -x "$BIN/addons-check" ]] && stamp_ok "$BIN/addons-check" "$stamp"; then exec 8>&-; return; fi
  log "building addons-check"
  t0=$SECONDS
  (cd "$MOD" && nice -n 19 go build -ldflags "-s -w" -o "$BIN/addons-check.tmp" .)
  mv "$BIN/addons-check.tmp" "$BIN/addons-check"
  echo "$stamp" >"$BIN/addons-check.stamp"
  log "built addons-check in $((SECONDS - t0)) s"
  exec 8>&-
}

proxies() {
  local files=("$ADDONS"/*.yaml)
  [[ -e "${files[0]}" ]] || die "no $ADDONS/*.yaml"
  printf '%s\n' "${files[@]}"
}

check() {
  local show=()
  while [[ $# -gt 0 ]]; do
    case "$1" in
      --show) show=(-show); shift ;;
      *) usage ;;
    esac
  done
  build
  local files; mapfile -t files < <(proxies)
  "$BIN/addons-check" check -sample "$SAMPLE" "${show[@]}" "${files[@]}"
}

apply() {
  [[ -n "${1:-}" ]] || usage
  local kubeconfig="$1" repo=(); shift
  [[ -r "$kubeconfig" ]] || die "cannot read kubeconfig $kubeconfig"
  while [[ $# -gt 0 ]]; do
    case "$1" in
      --repo) repo=(-repo "${2:?--repo URL}"); shift 2 ;;
      --repo=*) repo=(-repo "${1#--repo=}"); shift ;;
      *) usage ;;
    esac
  done
  # A proxy that does not render would only fail later, per Cluster, in CAAPH.
  local out
  out="$(check 2>&1)" || { echo "$out" >&2; die "deploy/addons does not pass the check: nothing applied"; }
  local files; mapfile -t files < <(proxies)
  "$BIN/addons-check" apply -kubeconfig "$kubeconfig" "${repo[@]}" "${files[@]}"
}

case "${1:-}" in
  build) [[ $# -eq 1 ]] || usage; build ;;
  check) shift; check "$@" ;;
  apply) shift; apply "$@" ;;
  *) usage ;;
esac
