#!/usr/bin/env bash
# The real Cluster API controllers for magnum-rs end-to-end tests: etcd + kube-apiserver
# (from scripts/kube.sh build) and the core manager (with the topology controller),
# KubeadmControlPlane, kubeadm bootstrap and CAPD with its in-memory backend, all built
# from the Go module proxy, with their admission webhooks on loopback.
#
#   scripts/capi.sh install-socat  socat with apt-get when missing (start does it too)
#   scripts/capi.sh build          build the four managers into the cache (instant when
#                                  cached); kube.sh build for etcd, kube-apiserver, crdprep
#   scripts/capi.sh start DIR      everything inside a private network namespace (only
#                                  loopback: the managers' webhook servers and CAPD's fake
#                                  workload API servers bind all interfaces), socat bridges
#                                  from the host's loopback into it, the managers' CRDs
#                                  (every version, their conversion webhooks), admission
#                                  webhooks, and the ClusterClass of
#                                  tests/fixtures/capi/ in namespace magnum-system. Prints
#                                  the path of DIR/env. No-op if DIR is already up.
#   scripts/capi.sh stop DIR       stop everything started for DIR, drop the namespace
#   scripts/capi.sh provider DIR stop|start capi|kcp|cabpk|capd
#                                  stop or start one manager (fault tests)
#   scripts/capi.sh apiserver-restart DIR
#                                  stop the kube-apiserver and start it again (same data)
#   scripts/capi.sh status DIR     one line per process: name pid|down
#
# DIR/env holds KEY=VALUE lines (keep DIR free of spaces):
#   KUBECONFIG (admin, through the host bridge) KUBE_APISERVER_URL KUBE_CA_FILE KUBE_TOKEN
#   KUBE_NAMESPACE KUBE_VERSION CAPI_VERSION CAPI_CLASS CAPI_NETNS CAPI_AUDIT_LOG
#   CAPI_SCRIPT CAPI_DIR CAPI_POD_IP CAPI_WORKLOAD_PORTS (the fake workload API servers
#   listen on CAPI_POD_IP in the namespace, bridged from the same address and ports on the
#   host; `CAPI_POD_IP=127.0.0.2 capi.sh start DIR2` runs a second set beside the first;
#   CAPI_WORKLOAD_PORTS: first-last host ports bridged to the fake
#   workload API servers)
# DIR/audit.log: JSON audit events (Metadata) of create/update/patch/delete on the
# cluster.x-k8s.io and controlplane.cluster.x-k8s.io groups (tests count the PATCHes
# magnum-rs sends). Logs: DIR/<process>.log. Needs root (ip netns), curl, openssl,
# socat (installed with apt-get when missing). Env: MAGNUM_RS_CACHE (~/.cache/magnum-rs).
set -Eeuo pipefail
# A failing command names itself (set -e alone exits without a word).
trap 'echo "${0##*/}: line $LINENO: \"$BASH_COMMAND\" failed (exit $?)" >&2' ERR

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=scripts/lib/apt.sh
source "$HERE/lib/apt.sh"
ROOT="$(dirname "$HERE")"
MOD="$HERE/kube"                                   # the wrapper Go module kube.sh builds too
TOP="${MAGNUM_RS_CACHE:-$HOME/.cache/magnum-rs}"
CACHE="$TOP/capi"
BIN="$CACHE/bin"
KBIN="$TOP/kube/bin"                               # etcd, kube-apiserver, crdprep

CAPI_VERSION=v1.13.6         # core, KCP, CABPK (one module)
CAPI_TEST_VERSION=v1.13.7    # CAPD (module sigs.k8s.io/cluster-api/test; v1.13.6 is not served)
CAPI_CLASS=magnum-v0.38.1    # the ClusterClass of tests/fixtures/capi/clusterclass-in-memory.yaml
NAMESPACE=magnum-system
FIXTURE="$ROOT/tests/fixtures/capi/clusterclass-in-memory.yaml"
MANAGERS="capi kcp cabpk capd"
WORKLOAD_PORTS=20000-20019   # CAPD's in-memory API servers: POD_IP:20000 and up
# POD_IP: a loopback address of its own per DIR (127.0.0.2, …) lets two DIRs run at once:
# each netns has its own ports, but the host's bridges to the workload API servers bind
# POD_IP:20000 and up on the host's loopback. Kept in DIR/state.
POD_IP_DEFAULT="${CAPI_POD_IP:-127.0.0.1}"

GO_CACHE="$TOP/go"
export GOMODCACHE="$GO_CACHE/gomod" GOCACHE="$GO_CACHE/gocache" GOTOOLCHAIN=local
export GOFLAGS="-mod=readonly -trimpath -buildvcs=false" CGO_ENABLED=0

log() { echo "capi.sh: $*" >&2; }
die() { log "$*"; exit 1; }

stamp_ok() { [[ -f "$1.stamp" && "$(cat "$1.stamp")" == "$2" ]]; }

# Manager NAME -> Go package, webhook port, health port, diagnostics port.
pkg() {
  case "$1" in
    capi) echo sigs.k8s.io/cluster-api ;;
    kcp) echo sigs.k8s.io/cluster-api/controlplane/kubeadm ;;
    cabpk) echo sigs.k8s.io/cluster-api/bootstrap/kubeadm ;;
    capd) echo sigs.k8s.io/cluster-api/test/infrastructure/docker ;;
    *) die "unknown manager $1 (capi kcp cabpk capd)" ;;
  esac
}
ports() {
  case "$1" in
    capi) echo 9441 9451 8441 ;;
    kcp) echo 9442 9452 8442 ;;
    cabpk) echo 9443 9453 8443 ;;
    capd) echo 9444 9454 8444 ;;
  esac
}

# A module's directory in the module cache (downloaded if needed).
module_dir() {
  (cd "$CACHE" && GOFLAGS='' go mod download -json "$1" \
    | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
}

# Where each manager's CRDs and webhook manifests live in its module.
config_dir() {
  local core test
  core="$(module_dir "sigs.k8s.io/cluster-api@$CAPI_VERSION")"
  test="$(module_dir "sigs.k8s.io/cluster-api/test@$CAPI_TEST_VERSION")"
  case "$1" in
    capi) echo "$core/config" ;;
    kcp) echo "$core/controlplane/kubeadm/config" ;;
    cabpk) echo "$core/bootstrap/kubeadm/config" ;;
    capd) echo "$test/infrastructure/docker/config" ;;
  esac
}

# One test timing in the released source, changed the way Cluster API's own controller
# tests change it (SetConnectionCreationRetryInterval(2 * time.Second) in
# internal/controllers/{cluster,machine,machinehealthcheck}/suite_test.go): the ClusterCache
# retries a failed connection to a workload cluster after 2 s instead of 30. Its first try
# comes as soon as the infrastructure is provisioned, before KCP has written the cluster's
# kubeconfig Secret, so with 30 s every new cluster waited half a minute for nothing.
# The managers are built from a copy of the core module with that one line changed, put in
# place of the module by `go build -modfile` (go refuses -overlay into the module cache).
PATCHED="$CACHE/src/cluster-api@$CAPI_VERSION"
RETRY_30='ConnectionCreationRetryInterval: 30 \* time.Second,'
RETRY_2='ConnectionCreationRetryInterval: 2 * time.Second,'
patch_source() {
  local core file=controllers/clustercache/cluster_cache.go
  if ! stamp_ok "$PATCHED" "$CAPI_VERSION $RETRY_2"; then
    core="$(module_dir "sigs.k8s.io/cluster-api@$CAPI_VERSION")"
    rm -rf "$PATCHED" "$PATCHED.tmp"
    mkdir -p "$CACHE/src"
    cp -r "$core" "$PATCHED.tmp"
    chmod -R u+w "$PATCHED.tmp"
    sed -i "s/$RETRY_30/$RETRY_2/" "$PATCHED.tmp/$file"
    grep -qF "$RETRY_2" "$PATCHED.tmp/$file" \
      || die "$core/$file: no '$RETRY_30' to change (a new Cluster API?)"
    mv "$PATCHED.tmp" "$PATCHED"
    echo "$CAPI_VERSION $RETRY_2" >"$PATCHED.stamp"
  fi
  # -modfile: the wrapper module's go.mod and go.sum, with the copy in place of the module.
  mkdir -p "$CACHE/modfile"
  cp "$MOD/go.sum" "$CACHE/modfile/go.sum"
  { cat "$MOD/go.mod"; echo "replace sigs.k8s.io/cluster-api $CAPI_VERSION => $PATCHED"; } \
    >"$CACHE/modfile/go.mod"
}

build_manager() {
  local name="$1" stamp
  stamp="$CAPI_VERSION $CAPI_TEST_VERSION $(cat "$CACHE/modfile/go.mod" "$MOD/go.sum" \
    "$PATCHED/controllers/clustercache/cluster_cache.go" | sha256sum | cut -c1-16)"
  if [[ -x "$BIN/$name-manager" ]] && stamp_ok "$BIN/$name-manager" "$stamp"; then return; fi
  log "building $name-manager ($(pkg "$name"))"
  # -X: the managers report the version they are (/version-style logs, contract checks).
  (cd "$MOD" && go build -modfile "$CACHE/modfile/go.mod" -ldflags "-s -w \
      -X sigs.k8s.io/cluster-api/version.gitVersion=$CAPI_VERSION \
      -X sigs.k8s.io/cluster-api/version.gitMajor=1 \
      -X sigs.k8s.io/cluster-api/version.gitMinor=13 \
      -X sigs.k8s.io/cluster-api/version.gitTreeState=clean" \
    -o "$BIN/$name-manager.tmp" "$(pkg "$name")")
  mv "$BIN/$name-manager.tmp" "$BIN/$name-manager"
  echo "$stamp" >"$BIN/$name-manager.stamp"
}

# Every CRD the four managers serve, all versions, converted by the manager that owns
# it; provider CRDs with contract labels. Per start: the conversion webhook's CA is.
prep_crds() {
  local m wh
  mkdir -p "$DIR/objects/crd"
  : >"$DIR/objects/crd/index"
  for m in $MANAGERS; do
    read -r wh _ _ <<<"$(ports "$m")"
    "$KBIN/crdprep" -contract -convert-port "$wh" -ca "$DIR/certs/ca.crt" -out "$DIR/objects/crd" \
      "$(config_dir "$m")"/crd/bases/*.yaml >>"$DIR/objects/crd/index"
  done
}

build() {
  "$HERE/kube.sh" build
  mkdir -p "$BIN"
  exec 8>"$CACHE/build.lock" && flock 8
  local m
  patch_source
  for m in $MANAGERS; do build_manager "$m"; done
  exec 8>&-
}

# --- running ---

netns_of() { echo "mrs-$(echo -n "$1" | sha256sum | cut -c1-8)"; }
nx() { ip netns exec "$NS" "$@"; }

# Pid from DIR/NAME.pid if that process is alive and was started for DIR.
live_pid() {
  local pid; pid="$(cat "$DIR/$1.pid" 2>/dev/null || true)"
  if [[ -n "$pid" && -r "/proc/$pid/cmdline" ]] && tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -qF -e "$DIR/" -e "$NS"; then
    echo "$pid"
  fi
}

# Bounded wait: wait_for SECONDS NAME COMMAND... (NAME: the process whose death ends it)
wait_for() {
  local secs="$1" name="$2" i; shift 2
  for ((i = 0; i < secs * 5; i++)); do
    if "$@" >/dev/null 2>&1; then return 0; fi
    # The process was started just now: its pid is enough (live_pid's command-line check,
    # against a stale pid file, can miss a process that has forked but not yet exec'd).
    if ! kill -0 "$(cat "$DIR/$name.pid" 2>/dev/null || echo 0)" 2>/dev/null; then
      log "$name exited; tail of $DIR/$name.log:"; tail -n 30 "$DIR/$name.log" >&2; return 1
    fi
    sleep 0.2
  done
  log "timed out after ${secs}s waiting for: $*; tail of $DIR/$name.log:"
  tail -n 30 "$DIR/$name.log" >&2
  return 1
}

# spawn NAME COMMAND...: in the namespace, detached; pid in DIR/NAME.pid.
spawn() {
  local n="$1"; shift
  setsid ip netns exec "$NS" "$@" </dev/null >>"$DIR/$n.log" 2>&1 &
  echo $! >"$DIR/$n.pid"
}

# curl as admin through the host bridge.
kcurl() { curl -sS -A capi.sh --cacert "$DIR/pki/ca.crt" -H "Authorization: Bearer $TOKEN" "$@"; }

# Server-side apply of one JSON object: apply COLLECTION NAME FILE
apply() {
  local code
  code="$(kcurl -o "$DIR/apply.out" -w '%{http_code}' -X PATCH \
    -H 'Content-Type: application/apply-patch+yaml' --data-binary "@$3" \
    "$URL$1/$2?fieldManager=capi.sh&force=true")"
  [[ "$code" == 200 || "$code" == 201 ]] || { log "apply $1/$2: HTTP $code: $(head -c 600 "$DIR/apply.out")"; return 1; }
}

# apply every object of a crdprep -objects index (FILE COLLECTION NAME lines)
apply_index() {
  local f c n
  while read -r f c n; do apply "$c" "$n" "$f" || return 1; done <"$1"
}

load_state() {
  [[ -f "$DIR/state" ]] || die "$DIR was not started (no $DIR/state)"
  # shellcheck disable=SC1091
  source "$DIR/state"
  POD_IP="${POD_IP:-127.0.0.1}"
  URL="https://127.0.0.1:$BRIDGE_PORT"
}

start_etcd() {
  spawn etcd "$KBIN/etcd" --name capi --data-dir "$DIR/etcd-data" \
    --listen-client-urls http://127.0.0.1:2379 --advertise-client-urls http://127.0.0.1:2379 \
    --listen-peer-urls http://127.0.0.1:2380 --initial-advertise-peer-urls http://127.0.0.1:2380 \
    --initial-cluster capi=http://127.0.0.1:2380 --unsafe-no-fsync --log-level warn
  wait_for 30 etcd nx curl -sf http://127.0.0.1:2379/health || die "etcd did not start"
}

start_apiserver() {
  spawn kube-apiserver "$KBIN/kube-apiserver" --etcd-servers=http://127.0.0.1:2379 \
    --cert-dir="$DIR/pki" --secure-port=6443 --bind-address=127.0.0.1 \
    --advertise-address=127.0.0.1 --endpoint-reconciler-type=none \
    --service-cluster-ip-range=10.0.0.0/24 --allow-privileged=true \
    --disable-admission-plugins=ServiceAccount --authorization-mode=RBAC \
    --token-auth-file="$DIR/pki/tokens.csv" --service-account-issuer=https://127.0.0.1:6443 \
    --service-account-key-file="$DIR/pki/sa.pub" \
    --service-account-signing-key-file="$DIR/pki/sa.key" \
    --audit-policy-file="$DIR/audit-policy.json" --audit-log-path="$DIR/audit.log" \
    --audit-log-format=json --audit-log-mode=blocking --profiling=false
  wait_for 120 kube-apiserver nx curl -skf -H "Authorization: Bearer $TOKEN" \
    https://127.0.0.1:6443/readyz || die "kube-apiserver not ready"
}

start_bridge() {  # HOST_PORT NETNS_PORT NAME [ADDRESS: on both sides, 127.0.0.1 by default]
  local port="$1" target="$2" name="$3" addr="${4:-127.0.0.1}"
  setsid socat "TCP-LISTEN:$port,bind=$addr,reuseaddr,fork" \
    "EXEC:ip netns exec $NS socat STDIO TCP\\:$addr\\:$target" \
    </dev/null >>"$DIR/$name.log" 2>&1 &
  echo $! >"$DIR/$name.pid"
}

# Flags of one manager beyond the common ones.
manager_flags() {
  case "$1" in
    # KCP waits this long on an etcd member's answer (default 15 s dial + 15 s call). The
    # in-memory etcd answers in milliseconds; the wait is only ever spent on a member whose
    # Machine is going away (scale down, rollout) or on CAPD stopped by a fault test.
    kcp) echo --etcd-dial-timeout-duration=5s --etcd-call-timeout-duration=5s ;;
  esac
}

start_manager() {
  local m="$1" wh health diag
  read -r wh health diag <<<"$(ports "$m")"
  # CAPD: POD_IP is where the fake workload API servers listen.
  # shellcheck disable=SC2046 # manager_flags: words without spaces
  spawn "$m" env KUBECONFIG="$DIR/kubeconfig-netns" POD_IP="$POD_IP" "$BIN/$m-manager" \
    --leader-elect=false --feature-gates=ClusterTopology=true,MachinePool=false \
    --webhook-port="$wh" --webhook-cert-dir="$DIR/certs" --health-addr="127.0.0.1:$health" \
    --diagnostics-address="127.0.0.1:$diag" --insecure-diagnostics $(manager_flags "$m")
  wait_for 180 "$m" nx curl -sf "http://127.0.0.1:$health/readyz" || die "$m manager not ready"
}

write_kubeconfig() {  # FILE SERVER
  cat >"$1" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: capi
  cluster:
    server: $2
    certificate-authority-data: $(base64 -w0 <"$DIR/pki/ca.crt")
users:
- name: admin
  user:
    token: $TOKEN
contexts:
- name: capi
  context:
    cluster: capi
    user: admin
    namespace: $NAMESPACE
current-context: capi
EOF
  chmod 600 "$1"
}

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# socat (the bridges into the namespace), with apt-get when missing (scripts/lib/apt.sh).
install_socat() {
  apt_install capi.sh socat socat || die "cannot install socat"
}

start() {
  [[ $# -eq 1 ]] || die "usage: capi.sh start DIR"
  mkdir -p "$1"
  DIR="$(cd "$1" && pwd)"
  [[ "$DIR" != *[[:space:]]* ]] || die "DIR must not contain spaces"
  NS="$(netns_of "$DIR")"
  if [[ -n "$(live_pid kube-apiserver)" && -f "$DIR/env" ]]; then echo "$DIR/env"; return; fi
  [[ "$(id -u)" == 0 ]] || die "needs root (ip netns)"
  install_socat
  build
  stop "$DIR" 2>/dev/null || true
  rm -rf "${DIR:?}"/{etcd-data,pki,certs,objects,*.log,*.pid,env,state}
  mkdir -p "$DIR/pki" "$DIR/certs" "$DIR/objects"
  # shellcheck disable=SC2064  # expand now
  trap "log 'start failed; stopping $DIR'; stop '$DIR'" EXIT
  ip netns add "$NS"
  nx ip link set lo up

  # Webhook serving certificate for 127.0.0.1, from a throwaway CA.
  openssl req -x509 -newkey rsa:2048 -nodes -days 7 -subj /CN=magnum-rs-capi-ca \
    -keyout "$DIR/certs/ca.key" -out "$DIR/certs/ca.crt" 2>/dev/null
  openssl req -newkey rsa:2048 -nodes -subj /CN=127.0.0.1 -keyout "$DIR/certs/tls.key" \
    -out "$DIR/certs/tls.csr" 2>/dev/null
  openssl x509 -req -in "$DIR/certs/tls.csr" -CA "$DIR/certs/ca.crt" -CAkey "$DIR/certs/ca.key" \
    -CAcreateserial -days 7 -out "$DIR/certs/tls.crt" \
    -extfile <(printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth') 2>/dev/null

  TOKEN="$(openssl rand -hex 24)"
  printf '%s,admin,admin-uid,"system:masters"\n' "$TOKEN" >"$DIR/pki/tokens.csv"
  openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out "$DIR/pki/sa.key" 2>/dev/null
  openssl pkey -in "$DIR/pki/sa.key" -pubout -out "$DIR/pki/sa.pub"
  cat >"$DIR/audit-policy.json" <<'EOF'
{"apiVersion": "audit.k8s.io/v1", "kind": "Policy", "omitStages": ["RequestReceived"],
 "rules": [
  {"level": "Metadata", "verbs": ["create", "update", "patch", "delete"],
   "resources": [{"group": "cluster.x-k8s.io"}, {"group": "controlplane.cluster.x-k8s.io"}]},
  {"level": "None"}]}
EOF
  BRIDGE_PORT="$(free_port)"
  POD_IP="$POD_IP_DEFAULT"
  printf 'NS=%s\nTOKEN=%s\nBRIDGE_PORT=%s\nPOD_IP=%s\n' "$NS" "$TOKEN" "$BRIDGE_PORT" "$POD_IP" \
    >"$DIR/state"
  chmod 600 "$DIR/state"
  URL="https://127.0.0.1:$BRIDGE_PORT"

  start_etcd
  start_apiserver
  awk '/BEGIN CERT/ {n++} n==2' "$DIR/pki/apiserver.crt" >"$DIR/pki/ca.crt"
  [[ -s "$DIR/pki/ca.crt" ]] || cp "$DIR/pki/apiserver.crt" "$DIR/pki/ca.crt"
  write_kubeconfig "$DIR/kubeconfig-netns" https://127.0.0.1:6443
  write_kubeconfig "$DIR/kubeconfig" "$URL"
  start_bridge "$BRIDGE_PORT" 6443 bridge-apiserver
  wait_for 20 bridge-apiserver kcurl -f "$URL/readyz" || die "bridge to the kube-apiserver failed"
  log "kube-apiserver ready (host bridge $URL)"

  # CRDs (their conversion webhooks answer once the managers run), then wait until each
  # is served in its storage version.
  local name group version plural
  prep_crds
  while read -r name group version plural; do
    apply /apis/apiextensions.k8s.io/v1/customresourcedefinitions "$name" "$DIR/objects/crd/$name.json" \
      || die "CRD $name"
  done <"$DIR/objects/crd/index"
  while read -r name group version plural; do
    wait_for 60 kube-apiserver kcurl -f "$URL/apis/$group/$version/$plural?limit=1" \
      || die "CRD $name not served"
  done <"$DIR/objects/crd/index"
  log "$(wc -l <"$DIR/objects/crd/index") CRDs served (all versions, conversion webhooks)"

  apply /api/v1/namespaces "$NAMESPACE" <(printf '{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"%s"}}' "$NAMESPACE") \
    || die "namespace"
  local m wh
  for m in $MANAGERS; do start_manager "$m"; done
  log "managers ready"
  for m in $MANAGERS; do
    read -r wh _ _ <<<"$(ports "$m")"
    mkdir -p "$DIR/objects/webhooks-$m"
    "$KBIN/crdprep" -objects -webhook-port "$wh" -ca "$DIR/certs/ca.crt" -prefix "$m" \
      -out "$DIR/objects/webhooks-$m" "$(config_dir "$m")/webhook/manifests.yaml" \
      >"$DIR/objects/webhooks-$m/index"
    apply_index "$DIR/objects/webhooks-$m/index" || die "webhooks of $m"
  done
  log "webhooks registered"
  mkdir -p "$DIR/objects/fixture"
  "$KBIN/crdprep" -objects -namespace "$NAMESPACE" -out "$DIR/objects/fixture" "$FIXTURE" \
    >"$DIR/objects/fixture/index"
  # The first admission calls can race a webhook server's certificate load: bounded retry.
  wait_for 30 capi apply_index "$DIR/objects/fixture/index" || die "ClusterClass fixture"
  log "ClusterClass $CAPI_CLASS applied"

  local p first="${WORKLOAD_PORTS%-*}" last="${WORKLOAD_PORTS#*-}"
  for ((p = first; p <= last; p++)); do start_bridge "$p" "$p" "bridge-$p" "$POD_IP"; done

  cat >"$DIR/env" <<EOF
KUBECONFIG=$DIR/kubeconfig
KUBE_APISERVER_URL=$URL
KUBE_CA_FILE=$DIR/pki/ca.crt
KUBE_TOKEN=$TOKEN
KUBE_NAMESPACE=$NAMESPACE
KUBE_VERSION=v$(awk '$1=="k8s.io/kubernetes" {sub(/^v/, "", $2); print $2; exit}' "$MOD/go.mod")
CAPI_VERSION=$CAPI_VERSION
CAPI_CLASS=$CAPI_CLASS
CAPI_NETNS=$NS
CAPI_AUDIT_LOG=$DIR/audit.log
CAPI_SCRIPT=$HERE/capi.sh
CAPI_DIR=$DIR
CAPI_POD_IP=$POD_IP
CAPI_WORKLOAD_PORTS=$WORKLOAD_PORTS
EOF
  trap - EXIT
  echo "$DIR/env"
}

# Stop one process started for DIR: TERM, bounded wait, then KILL.
any_alive() {
  local pid
  for pid in "$@"; do kill -0 "$pid" 2>/dev/null && return 0; done
  return 1
}

# stop_some NAME...: SIGTERM to each at once, up to 10 s for all of them to go, then
# SIGKILL to whatever is left (one by one, the managers' graceful shutdowns after a run of
# tests added up to a minute).
stop_some() {
  local n pid i pids=()
  for n in "$@"; do
    pid="$(live_pid "$n")"
    if [[ -n "$pid" ]]; then kill "$pid" 2>/dev/null || true; pids+=("$pid"); fi
  done
  for ((i = 0; i < 100; i++)); do any_alive "${pids[@]}" || break; sleep 0.1; done
  for pid in "${pids[@]}"; do kill -9 "$pid" 2>/dev/null || true; done
  for n in "$@"; do rm -f "$DIR/$n.pid"; done
}
stop_one() { stop_some "$1"; }

all_processes() {
  local p
  for p in "$DIR"/bridge-*.pid; do [[ -e "$p" ]] && basename "$p" .pid; done
  # scripts/capo.sh's and scripts/caaph.sh's managers (their reach bridges are
  # bridge-reach-*.pid, above)
  if [[ -e "$DIR/capo.pid" ]]; then echo capo; fi
  if [[ -e "$DIR/caaph.pid" ]]; then echo caaph; fi
  echo capd cabpk kcp capi kube-apiserver etcd
}

stop() {
  [[ $# -eq 1 ]] || die "usage: capi.sh stop DIR"
  [[ -d "$1" ]] || return 0
  DIR="$(cd "$1" && pwd)"
  NS="$(netns_of "$DIR")"
  # shellcheck disable=SC2046 # process names: words without spaces
  stop_some $(all_processes)
  ip netns del "$NS" 2>/dev/null || true
  rm -f "$DIR/env"                               # no stale env for tests to read
}

provider() {
  [[ $# -eq 3 ]] || die "usage: capi.sh provider DIR stop|start capi|kcp|cabpk|capd"
  DIR="$(cd "$1" && pwd)"
  NS="$(netns_of "$DIR")"
  load_state
  pkg "$3" >/dev/null
  case "$2" in
    stop) stop_one "$3" ;;
    start) [[ -n "$(live_pid "$3")" ]] || start_manager "$3" ;;
    *) die "provider: stop or start" ;;
  esac
}

apiserver_restart() {
  [[ $# -eq 1 ]] || die "usage: capi.sh apiserver-restart DIR"
  DIR="$(cd "$1" && pwd)"
  NS="$(netns_of "$DIR")"
  load_state
  stop_one kube-apiserver
  start_apiserver
}

# apiserver-stop DIR / apiserver-start DIR: the management cluster's API server away for as
# long as a test needs (tests/serial/capi_e2e.rs: an outage in the middle of a resize).
apiserver_stop() {
  [[ $# -eq 1 ]] || die "usage: capi.sh apiserver-stop DIR"
  DIR="$(cd "$1" && pwd)"
  NS="$(netns_of "$DIR")"
  load_state
  stop_one kube-apiserver
}

apiserver_start() {
  [[ $# -eq 1 ]] || die "usage: capi.sh apiserver-start DIR"
  DIR="$(cd "$1" && pwd)"
  NS="$(netns_of "$DIR")"
  load_state
  start_apiserver
}

status() {
  [[ $# -eq 1 ]] || die "usage: capi.sh status DIR"
  DIR="$(cd "$1" && pwd)"
  NS="$(netns_of "$DIR")"
  local n pid
  for n in $(all_processes); do
    pid="$(live_pid "$n")"
    echo "$n ${pid:-down}"
  done
}

case "${1:-}" in
  install-socat) install_socat ;;
  build) build ;;
  start) shift; start "$@" ;;
  stop) shift; stop "$@" ;;
  provider) shift; provider "$@" ;;
  apiserver-restart) shift; apiserver_restart "$@" ;;
  apiserver-stop) shift; apiserver_stop "$@" ;;
  apiserver-start) shift; apiserver_start "$@" ;;
  status) shift; status "$@" ;;
  *) die "usage: capi.sh install-socat | build | start DIR | stop DIR | provider DIR stop|start NAME | apiserver-restart|apiserver-stop|apiserver-start DIR | status DIR" ;;
esac
