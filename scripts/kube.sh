#!/usr/bin/env bash
# A real Kubernetes API server (kube-apiserver + etcd) with the Cluster API CRDs,
# for magnum-rs integration tests. Nothing is downloaded but Go modules (Go
# module proxy) and one crate (crates.io); nothing built here is committed.
#
#   scripts/kube.sh build        build/fetch into the cache (instant when cached):
#                                kube-apiserver (Go source, wrapper module scripts/kube/),
#                                etcd (crate etcd-bin-vendored), CAPI CRDs as JSON
#   scripts/kube.sh start DIR    etcd + kube-apiserver on free loopback ports, state in DIR;
#                                installs the CRDs, creates namespace magnum-system, writes
#                                DIR/kubeconfig, DIR/kubeconfig-limited and DIR/env;
#                                prints the kubeconfig path. No-op if DIR is already up.
#   scripts/kube.sh stop DIR     stop the processes started for DIR (by pid)
#   scripts/kube.sh restart-apiserver DIR
#                                restart kube-apiserver on the same etcd, port and certs
#   scripts/kube.sh gomod [V]    regenerate scripts/kube/go.mod for k8s.io/kubernetes vV and
#                                the Cluster API managers scripts/capi.sh builds
#                                (upkeep only; the result is committed)
#
# DIR/env holds KEY=VALUE lines (no quoting: keep DIR free of spaces):
#   KUBECONFIG KUBE_APISERVER_URL KUBE_CA_FILE KUBE_TOKEN (admin, system:masters)
#   KUBE_LIMITED_KUBECONFIG KUBE_LIMITED_TOKEN (user magnum-rs: authenticated, no RBAC grants)
#   KUBE_NAMESPACE ETCD_URL ETCD_PID KUBE_APISERVER_PID KUBE_VERSION CAPI_VERSION
# Logs: DIR/etcd.log, DIR/kube-apiserver.log. `start` wipes DIR's old etcd data.
# KUBE_AUDIT_POLICY=FILE (optional, for start): kube-apiserver writes the JSON audit events
#   that policy selects to DIR/audit.log (blocking mode: written before the answer), e.g.
#   every request of user magnum-rs for bench/kube and tests/serial/watch_at_rest.rs.
# Env: MAGNUM_RS_CACHE (default ~/.cache/magnum-rs); cache lives in $MAGNUM_RS_CACHE/kube.
# No CAPI controllers or webhooks run: tests write status through /status themselves.
set -Eeuo pipefail
# A failing command names itself (set -e alone exits without a word).
trap 'echo "${0##*/}: line $LINENO: \"$BASH_COMMAND\" failed (exit $?)" >&2' ERR

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
MOD="$HERE/kube"                                  # wrapper Go module (committed)
CACHE="${MAGNUM_RS_CACHE:-$HOME/.cache/magnum-rs}/kube"
BIN="$CACHE/bin"

ETCD_VERSION=3.5.34        # etcd-bin-vendored (3.5 line)
CAPI_VERSION=v1.13.6       # sigs.k8s.io/cluster-api module zip that holds the CRD YAML
CAPI_API=v1beta2           # the one version each CRD serves and stores
# CRD files (basenames in the module zip) to install.
CRDS="cluster.x-k8s.io_clusters cluster.x-k8s.io_clusterclasses
  cluster.x-k8s.io_machinedeployments cluster.x-k8s.io_machinesets cluster.x-k8s.io_machines
  controlplane.cluster.x-k8s.io_kubeadmcontrolplanes
  addons.cluster.x-k8s.io_clusterresourcesets"
NAMESPACE=magnum-system
KURL="" KCA="" KTOKEN=""     # set by start for kcurl

# Go: caches shared with scripts/capi.sh (one wrapper module builds kube-apiserver and
# the Cluster API managers, so they share compiled k8s.io packages), no toolchain
# download, go.mod/go.sum as committed.
GO_CACHE="${MAGNUM_RS_CACHE:-$HOME/.cache/magnum-rs}/go"
export GOMODCACHE="$GO_CACHE/gomod" GOCACHE="$GO_CACHE/gocache" GOTOOLCHAIN=local
export GOFLAGS="-mod=readonly -trimpath -buildvcs=false" CGO_ENABLED=0

log() { echo "kube.sh: $*" >&2; }
die() { log "$*"; exit 1; }

# Kubernetes version pinned by the wrapper go.mod, e.g. 1.34.4.
k8s_version() { awk '$1=="k8s.io/kubernetes" {sub(/^v/, "", $2); print $2; exit}' "$MOD/go.mod"; }

# Stamp: the inputs a cached artefact was made from; rebuild when they change.
stamp_ok() { [[ -f "$1.stamp" && "$(cat "$1.stamp")" == "$2" ]]; }

build_apiserver() {
  local v; v="$(k8s_version)"
  local stamp; stamp="$v $(cat "$MOD/go.mod" "$MOD/go.sum" | sha256sum | cut -c1-16)"
  if [[ -x "$BIN/kube-apiserver" ]] && stamp_ok "$BIN/kube-apiserver" "$stamp"; then return; fi
  log "building kube-apiserver v$v (cold: ~15 min on 2 busy cores)"
  local minor; minor="$(echo "$v" | cut -d. -f2)"
  # -X: /version must report the real version (kube-rs apiserver_version()).
  (cd "$MOD" && go build -ldflags "-s -w \
      -X k8s.io/component-base/version.gitVersion=v$v \
      -X k8s.io/component-base/version.gitMajor=1 \
      -X k8s.io/component-base/version.gitMinor=$minor \
      -X k8s.io/component-base/version.gitTreeState=clean" \
    -o "$BIN/kube-apiserver.tmp" k8s.io/kubernetes/cmd/kube-apiserver)
  mv "$BIN/kube-apiserver.tmp" "$BIN/kube-apiserver"
  echo "$stamp" >"$BIN/kube-apiserver.stamp"
}

build_crdprep() {
  local stamp; stamp="$(cat "$MOD/go.mod" "$MOD/go.sum" "$MOD/crdprep/main.go" | sha256sum | cut -c1-16)"
  if [[ -x "$BIN/crdprep" ]] && stamp_ok "$BIN/crdprep" "$stamp"; then return; fi
  (cd "$MOD" && go build -o "$BIN/crdprep" ./crdprep)
  echo "$stamp" >"$BIN/crdprep.stamp"
}

# etcd: a throwaway cargo project outside the repo depends on the crate and
# prints etcd_bin_vendored::etcd_bin_path(); the binary is copied into BIN.
build_etcd() {
  if [[ -x "$BIN/etcd" ]] && stamp_ok "$BIN/etcd" "$ETCD_VERSION"; then return; fi
  log "fetching etcd $ETCD_VERSION (crate etcd-bin-vendored)"
  local proj="$CACHE/etcd-crate"
  mkdir -p "$proj/src"
  cat >"$proj/Cargo.toml" <<EOF
[package]
name = "etcd-fetch"
version = "0.0.0"
edition = "2021"
publish = false

[dependencies]
etcd-bin-vendored = "=$ETCD_VERSION"

[workspace]
EOF
  echo 'fn main() { println!("{}", etcd_bin_vendored::etcd_bin_path().expect("etcd for this platform").display()); }' \
    >"$proj/src/main.rs"
  local path
  path="$(cd "$proj" && CARGO_TARGET_DIR="$proj/target" cargo run -q)"
  cp "$path" "$BIN/etcd.tmp" && chmod +x "$BIN/etcd.tmp" && mv "$BIN/etcd.tmp" "$BIN/etcd"
  echo "$ETCD_VERSION" >"$BIN/etcd.stamp"
}

# CRDs: YAML from the cluster-api module zip -> one-version JSON in CACHE/crd.
build_crds() {
  local out="$CACHE/crd" stamp
  stamp="$CAPI_VERSION $CAPI_API $(echo "$CRDS" | xargs) $(cat "$BIN/crdprep.stamp")"
  if [[ -f "$out/index" ]] && stamp_ok "$out/index" "$stamp"; then return; fi
  log "preparing Cluster API $CAPI_VERSION CRDs ($CAPI_API only)"
  local dir f path files=()
  # Outside any module, so the wrapper's go.mod/go.sum stay as committed.
  dir="$(cd "$CACHE" && GOFLAGS='' go mod download -json "sigs.k8s.io/cluster-api@$CAPI_VERSION" \
    | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')"
  [[ -d "$dir" ]] || die "cluster-api $CAPI_VERSION: no module dir"
  for f in $CRDS; do
    # <= v1.13: config/crd/bases; v1.14+: core/config/crd/bases; KCP under controlplane/.
    path="$(find "$dir" -path '*/config/crd/bases/*' -name "$f.yaml" -not -path '*/test/*' | head -n1)"
    [[ -n "$path" ]] || die "CRD $f.yaml not in cluster-api $CAPI_VERSION"
    files+=("$path")
  done
  rm -rf "$out" && mkdir -p "$out"
  # index: one "name group version plural" line per CRD
  "$BIN/crdprep" -version "$CAPI_API" -out "$out" "${files[@]}" >"$out/index"
  echo "$stamp" >"$out/index.stamp"
}

build() {
  command -v go >/dev/null || die "go not found (need Go >= $(awk '$1=="go"{print $2}' "$MOD/go.mod"))"
  mkdir -p "$BIN"
  exec 9>"$CACHE/build.lock" && flock 9   # concurrent starts: one builder, others wait
  build_etcd
  build_crdprep
  build_crds
  build_apiserver
  exec 9>&-
}

# Regenerate the wrapper module for Kubernetes $1: one replace line per staging
# module (k8s.io/X v0.0.0 in the published go.mod) -> its published v0.Y.Z.
gomod() {
  local v="${1:-$(k8s_version)}" gm m
  export GOFLAGS="-mod=mod -buildvcs=false"
  cd "$MOD"
  rm -f go.mod go.sum
  go mod init magnum-rs/kube-tools
  gm="$(go mod download -json "k8s.io/kubernetes@v$v" | sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",$/\1/p')"
  go mod edit -go="$(awk '$1=="go"{print $2}' "$gm")" -require="k8s.io/kubernetes@v$v"
  awk '$1 ~ /^k8s\.io\// && $2=="v0.0.0" {print $1}' "$gm" | while read -r m; do
    go mod edit -replace="$m=$m@v0.${v#1.}"
  done
  go get -tool "k8s.io/kubernetes/cmd/kube-apiserver@v$v"
  # The managers of scripts/capi.sh. /test is pinned apart: the proxy serves no
  # cluster-api/test at core's own patch version.
  go get -tool "sigs.k8s.io/cluster-api@$CAPI_VERSION" \
    "sigs.k8s.io/cluster-api/bootstrap/kubeadm@$CAPI_VERSION" \
    "sigs.k8s.io/cluster-api/controlplane/kubeadm@$CAPI_VERSION" \
    "sigs.k8s.io/cluster-api/test/infrastructure/docker@${CAPI_TEST_VERSION:-v1.13.7}"
  go mod tidy
}

# A free loopback TCP port (the kernel picks; small race until the server binds).
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# Pid from DIR/NAME.pid if that process is alive and was started for DIR.
live_pid() {
  local pid; pid="$(cat "$1/$2.pid" 2>/dev/null || true)"
  if [[ -n "$pid" ]] && tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -qF -- "$1/"; then
    echo "$pid"
  fi
}

# Bounded wait: wait_for SECONDS PID-TO-WATCH LOG COMMAND...
wait_for() {
  local secs="$1" pid="$2" logf="$3" i; shift 3
  for ((i = 0; i < secs * 5; i++)); do
    if "$@" >/dev/null 2>&1; then return 0; fi
    if ! kill -0 "$pid" 2>/dev/null; then
      log "process $pid exited; tail of $logf:"; tail -n 30 "$logf" >&2; return 1
    fi
    sleep 0.2
  done
  log "timed out after ${secs}s waiting for: $*; tail of $logf:"; tail -n 30 "$logf" >&2
  return 1
}

start() {
  [[ $# -eq 1 ]] || die "usage: kube.sh start DIR"
  mkdir -p "$1"
  local dir; dir="$(cd "$1" && pwd)"
  [[ "$dir" != *[[:space:]]* ]] || die "DIR must not contain spaces"
  if [[ -n "$(live_pid "$dir" kube-apiserver)" ]]; then echo "$dir/kubeconfig"; return; fi
  build
  stop "$dir" 2>/dev/null || true
  rm -rf "${dir:?}/etcd-data" "$dir/pki" && mkdir -p "$dir/pki"
  # On any failure below, stop what was started (cleared once all is up).
  # shellcheck disable=SC2064  # expand $dir now
  trap "log 'start failed; stopping $dir'; stop '$dir'" EXIT

  # --- etcd ---
  local ep pp ap
  ep="$(free_port)"; pp="$(free_port)"; ap="$(free_port)"
  local etcd_url="http://127.0.0.1:$ep"
  setsid "$BIN/etcd" --name magnum-test --data-dir "$dir/etcd-data" \
    --listen-client-urls "$etcd_url" --advertise-client-urls "$etcd_url" \
    --listen-peer-urls "http://127.0.0.1:$pp" --initial-advertise-peer-urls "http://127.0.0.1:$pp" \
    --initial-cluster "magnum-test=http://127.0.0.1:$pp" --unsafe-no-fsync \
    --log-level warn </dev/null >"$dir/etcd.log" 2>&1 &
  local etcd_pid=$!
  echo "$etcd_pid" >"$dir/etcd.pid"
  wait_for 30 "$etcd_pid" "$dir/etcd.log" curl -sf "$etcd_url/health" || die "etcd did not start"

  # --- credentials: bearer tokens (admin in system:masters; magnum-rs with no
  # grants, for least-privilege tests) and the service-account signing key ---
  local token limited
  token="$(openssl rand -hex 24)"; limited="$(openssl rand -hex 24)"
  printf '%s,admin,admin-uid,"system:masters"\n%s,magnum-rs,magnum-rs-uid\n' "$token" "$limited" \
    >"$dir/pki/tokens.csv"
  openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out "$dir/pki/sa.key" 2>/dev/null
  openssl pkey -in "$dir/pki/sa.key" -pubout -out "$dir/pki/sa.pub"

  # --- kube-apiserver (flags after controller-runtime envtest); it writes a
  # self-signed CA + serving cert for 127.0.0.1 into --cert-dir. No endpoint
  # reconciler: Endpoints may not hold the loopback advertise address. ---
  local url="https://127.0.0.1:$ap" audit=()
  if [[ -n "${KUBE_AUDIT_POLICY:-}" ]]; then
    audit=(--audit-policy-file="$KUBE_AUDIT_POLICY" --audit-log-path="$dir/audit.log"
      --audit-log-format=json --audit-log-mode=blocking)
  fi
  local args=(
    --etcd-servers="$etcd_url" --cert-dir="$dir/pki"
    --secure-port="$ap" --bind-address=127.0.0.1 --advertise-address=127.0.0.1
    --endpoint-reconciler-type=none
    --service-cluster-ip-range=10.0.0.0/24 --allow-privileged=true
    --disable-admission-plugins=ServiceAccount
    --authorization-mode=RBAC --token-auth-file="$dir/pki/tokens.csv"
    --service-account-issuer="$url"
    --service-account-key-file="$dir/pki/sa.pub"
    --service-account-signing-key-file="$dir/pki/sa.key"
    "${audit[@]}" --profiling=false)
  printf '%s\0' "${args[@]}" >"$dir/kube-apiserver.args"
  : >"$dir/kube-apiserver.log"
  launch_apiserver "$dir"
  local kas_pid; kas_pid="$(cat "$dir/kube-apiserver.pid")"

  # Ready first (TLS unchecked: the cert may still be being written), then trust
  # only the CA: the generated apiserver.crt holds "serving cert, CA cert".
  KURL="$url" KCA="" KTOKEN="$token"
  wait_for 120 "$kas_pid" "$dir/kube-apiserver.log" kcurl -k -f "$url/readyz" \
    || die "kube-apiserver not ready"
  KCA="$dir/pki/ca.crt"
  awk '/BEGIN CERT/ {n++} n==2' "$dir/pki/apiserver.crt" >"$KCA"
  [[ -s "$KCA" ]] || cp "$dir/pki/apiserver.crt" "$KCA"
  kcurl -f -o /dev/null "$url/readyz" || die "kube-apiserver: TLS check with $KCA failed"

  # --- CRDs: create (409 = already there), then wait until Established and served ---
  local f code name group version plural
  for f in "$CACHE"/crd/*.json; do
    code="$(kcurl -o "$dir/crd-create.out" -w '%{http_code}' -X POST \
      -H 'Content-Type: application/json' --data-binary "@$f" \
      "$url/apis/apiextensions.k8s.io/v1/customresourcedefinitions")"
    [[ "$code" == 201 || "$code" == 409 ]] || { cat "$dir/crd-create.out" >&2; die "CRD $f: HTTP $code"; }
  done
  while read -r name group version plural; do
    wait_for 60 "$kas_pid" "$dir/kube-apiserver.log" established "$name" || die "CRD $name not Established"
    wait_for 60 "$kas_pid" "$dir/kube-apiserver.log" kcurl -f "$KURL/apis/$group/$version/$plural?limit=1" \
      || die "CRD $name not served"
  done <"$CACHE/crd/index"

  # --- namespace ---
  code="$(kcurl -o "$dir/ns-create.out" -w '%{http_code}' -X POST -H 'Content-Type: application/json' \
    --data "{\"apiVersion\":\"v1\",\"kind\":\"Namespace\",\"metadata\":{\"name\":\"$NAMESPACE\"}}" \
    "$url/api/v1/namespaces")"
  [[ "$code" == 201 || "$code" == 409 ]] || { cat "$dir/ns-create.out" >&2; die "namespace: HTTP $code"; }

  write_kubeconfig "$dir/kubeconfig" "$url" "$KCA" admin "$token"
  write_kubeconfig "$dir/kubeconfig-limited" "$url" "$KCA" magnum-rs "$limited"
  cat >"$dir/env" <<EOF
KUBECONFIG=$dir/kubeconfig
KUBE_APISERVER_URL=$url
KUBE_CA_FILE=$KCA
KUBE_NAMESPACE=$NAMESPACE
KUBE_TOKEN=$token
KUBE_LIMITED_KUBECONFIG=$dir/kubeconfig-limited
KUBE_LIMITED_TOKEN=$limited
ETCD_URL=$etcd_url
ETCD_PID=$etcd_pid
KUBE_APISERVER_PID=$kas_pid
KUBE_VERSION=v$(k8s_version)
CAPI_VERSION=$CAPI_VERSION
EOF
  trap - EXIT
  echo "$dir/kubeconfig"
}

# curl as admin against the server being started (KURL, KCA, KTOKEN set by start).
# The server pretty-prints JSON for a curl User-Agent; ours gets compact JSON.
kcurl() {
  local ca=(-k); [[ -n "$KCA" ]] && ca=(--cacert "$KCA")
  curl -sS -A kube.sh "${ca[@]}" -H "Authorization: Bearer $KTOKEN" "$@"
}

# CRD condition Established=True (compact JSON, Go field order: type, status).
established() {
  kcurl -f "$KURL/apis/apiextensions.k8s.io/v1/customresourcedefinitions/$1" \
    | grep -q '"type":"Established","status":"True"'
}

# kubeconfig FILE URL CAFILE USER TOKEN (context "magnum-test", namespace magnum-system)
write_kubeconfig() {
  cat >"$1" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: magnum-test
  cluster:
    server: $2
    certificate-authority-data: $(base64 -w0 <"$3")
users:
- name: $4
  user:
    token: $5
contexts:
- name: magnum-test
  context:
    cluster: magnum-test
    user: $4
    namespace: $NAMESPACE
current-context: magnum-test
EOF
  chmod 600 "$1"
}

# Stop one process started for DIR: TERM, bounded wait, then KILL.
# Starts kube-apiserver with the arguments `start` saved in DIR/kube-apiserver.args.
launch_apiserver() {
  local dir="$1" args=()
  mapfile -d '' args <"$dir/kube-apiserver.args"
  setsid "$BIN/kube-apiserver" "${args[@]}" </dev/null >>"$dir/kube-apiserver.log" 2>&1 &
  echo "$!" >"$dir/kube-apiserver.pid"
}

# Stops kube-apiserver and starts it again on the same etcd, port and certificates (the
# watches of its clients break and resume or relist); returns once it is ready.
restart_apiserver() {
  [[ $# -eq 1 ]] || die "usage: kube.sh restart-apiserver DIR"
  local dir; dir="$(cd "$1" && pwd)"
  [[ -f "$dir/env" ]] || die "$dir is not running"
  stop_one "$dir" kube-apiserver
  launch_apiserver "$dir"
  local pid; pid="$(cat "$dir/kube-apiserver.pid")"
  KURL="$(sed -n 's/^KUBE_APISERVER_URL=//p' "$dir/env")"
  KCA="$(sed -n 's/^KUBE_CA_FILE=//p' "$dir/env")"
  KTOKEN="$(sed -n 's/^KUBE_TOKEN=//p' "$dir/env")"
  wait_for 120 "$pid" "$dir/kube-apiserver.log" kcurl -f "$KURL/readyz" \
    || die "kube-apiserver not ready after restart"
  sed -i "s/^KUBE_APISERVER_PID=.*/KUBE_APISERVER_PID=$pid/" "$dir/env"
}

stop_one() {
  local pid i; pid="$(live_pid "$1" "$2")"
  [[ -n "$pid" ]] || { rm -f "$1/$2.pid"; return 0; }
  kill "$pid" 2>/dev/null || true
  for ((i = 0; i < 100; i++)); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  kill -9 "$pid" 2>/dev/null || true
  rm -f "$1/$2.pid"
}

stop() {
  [[ $# -eq 1 ]] || die "usage: kube.sh stop DIR"
  [[ -d "$1" ]] || return 0
  local dir; dir="$(cd "$1" && pwd)"
  stop_one "$dir" kube-apiserver
  stop_one "$dir" etcd
  rm -f "$dir/env"                               # no stale env for tests to read
}

case "${1:-}" in
  build) build ;;
  start) shift; start "$@" ;;
  stop) shift; stop "$@" ;;
  restart-apiserver) shift; restart_apiserver "$@" ;;
  gomod) shift; gomod "$@" ;;
  *) die "usage: kube.sh build | start DIR | stop DIR | restart-apiserver DIR | gomod [K8S_VERSION]" ;;
esac
