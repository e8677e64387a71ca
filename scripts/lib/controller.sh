# What scripts/capo.sh and scripts/caaph.sh share to run a provider's manager inside the
# network namespace of `scripts/capi.sh start DIR`: reading DIR's state, pid files, the
# API server through capi.sh's bridge, server-side apply, the --reach bridges, CRD
# registration, the manager's readiness and its webhooks. Sourced, not run.
#
# The sourcing script sets CTRL (capo | caaph: its pid, log and apply files in DIR, and the
# field manager and user agent `$CTRL.sh`), WH and HEALTH (the manager's webhook and health
# ports inside the namespace) and KBIN (where crdprep is), and defines log, die and usage.

nx() { ip netns exec "$NS" "$@"; }

# DIR's state as capi.sh start wrote it: NS TOKEN BRIDGE_PORT, and URL of the API server.
load_dir() {
  [[ -n "${1:-}" ]] || usage
  [[ -d "$1" ]] || die "no directory $1"
  DIR="$(cd "$1" && pwd)"
  [[ -f "$DIR/state" ]] || die "$DIR was not started by capi.sh (no $DIR/state)"
  # shellcheck disable=SC1091
  source "$DIR/state"                              # NS TOKEN BRIDGE_PORT
  URL="https://127.0.0.1:$BRIDGE_PORT"
}

# For stop: DIR and NS even when DIR's state is gone (NS as capi.sh names it).
load_dir_to_stop() {
  DIR="$(cd "$1" && pwd)"
  NS=""
  # shellcheck disable=SC1091
  [[ -f "$DIR/state" ]] && source "$DIR/state"
  [[ -n "$NS" ]] || NS="mrs-$(echo -n "$DIR" | sha256sum | cut -c1-8)"
}

# Pid from DIR/NAME.pid if that process is alive and was started for DIR (as capi.sh).
live_pid() {
  local pid; pid="$(cat "$DIR/$1.pid" 2>/dev/null || true)"
  if [[ -n "$pid" && -r "/proc/$pid/cmdline" ]] && tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -qF -e "$DIR/" -e "$NS"; then
    echo "$pid"
  fi
}

kcurl() { curl -sS -A "$CTRL.sh" --cacert "$DIR/pki/ca.crt" -H "Authorization: Bearer $TOKEN" "$@"; }

# Server-side apply of one JSON object: apply COLLECTION NAME FILE
apply() {
  local code
  code="$(kcurl -o "$DIR/$CTRL-apply.out" -w '%{http_code}' -X PATCH \
    -H 'Content-Type: application/apply-patch+yaml' --data-binary "@$3" \
    "$URL$1/$2?fieldManager=$CTRL.sh&force=true")"
  [[ "$code" == 200 || "$code" == 201 ]] || { log "apply $1/$2: HTTP $code: $(head -c 600 "$DIR/$CTRL-apply.out")"; return 1; }
}

# PORTS ("15000,15200-15203") -> one port a line
expand_ports() {
  local part a b p
  for part in ${1//,/ }; do
    if [[ "$part" =~ ^([0-9]+)-([0-9]+)$ ]]; then
      a="${BASH_REMATCH[1]}" b="${BASH_REMATCH[2]}"
    elif [[ "$part" =~ ^[0-9]+$ ]]; then
      a="$part" b="$part"
    else
      die "--reach: bad port list '$1' (e.g. 15000,15200-15203)"
    fi
    for ((p = a; p <= b; p++)); do echo "$p"; done
  done
}

# Host port P reachable inside the namespace at 127.0.0.1:P, through DIR/reach-P.sock. The
# files are the same whichever script made the bridge, so a bridge made by one is reused by
# the other.
start_reach() {
  local p="$1" i
  if [[ -z "$(live_pid "bridge-reach-$p-host")" ]]; then
    rm -f "$DIR/reach-$p.sock"
    setsid socat "UNIX-LISTEN:$DIR/reach-$p.sock,fork,unlink-early,backlog=128" "TCP:127.0.0.1:$p" \
      </dev/null >>"$DIR/bridge-reach-$p.log" 2>&1 &
    echo $! >"$DIR/bridge-reach-$p-host.pid"
  fi
  if [[ -z "$(live_pid "bridge-reach-$p-ns")" ]]; then
    setsid ip netns exec "$NS" socat "TCP-LISTEN:$p,bind=127.0.0.1,reuseaddr,fork,backlog=128" \
      "UNIX-CONNECT:$DIR/reach-$p.sock" </dev/null >>"$DIR/bridge-reach-$p.log" 2>&1 &
    echo $! >"$DIR/bridge-reach-$p-ns.pid"
  fi
  for ((i = 0; i < 50; i++)); do
    if [[ -S "$DIR/reach-$p.sock" ]] && nx ss -ltnH "sport = :$p" | grep -q .; then return 0; fi
    sleep 0.1
  done
  log "reach bridge for port $p did not come up; $DIR/bridge-reach-$p.log:"
  tail -n 20 "$DIR/bridge-reach-$p.log" >&2
  return 1
}

# start's common beginning: start DIR [--reach PORTS]. Loads DIR, checks root and the
# namespace, starts the reach bridges; START_T0 is when it began.
begin_start() {
  load_dir "${1:-}"; shift
  local reach="" p
  while [[ $# -gt 0 ]]; do
    case "$1" in
      --reach) reach="${2:?--reach PORTS}"; shift 2 ;;
      --reach=*) reach="${1#--reach=}"; shift ;;
      *) usage ;;
    esac
  done
  [[ "$(id -u)" == 0 ]] || die "needs root (ip netns)"
  ip netns list | grep -qw "$NS" || die "network namespace $NS of $DIR is gone (capi.sh start $DIR)"
  START_T0=$(date +%s.%N)
  if [[ -n "$reach" ]]; then
    for p in $(expand_ports "$reach"); do start_reach "$p" || die "reach $p"; done
    log "host ports $reach reachable inside $NS"
  fi
}

# A module's directory in the module cache (downloaded if needed; outside any module, as
# capi.sh does, so no go.mod/go.sum is touched).
module_dir() {
  mkdir -p "$CACHE"
  (cd "$CACHE" && GOFLAGS='' go mod download -json "$1" \
    | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
}

# apply_crds CRDPREP_ARGS... -- CRD_FILES...: crdprep writes the CRDs into
# DIR/objects/crd-$CTRL; each is applied, then waited for until the API server serves it.
apply_crds() {
  local out="$DIR/objects/crd-$CTRL" args=() name group version plural i
  while [[ "$1" != -- ]]; do args+=("$1"); shift; done
  shift
  rm -rf "$out"
  mkdir -p "$out"
  "$KBIN/crdprep" "${args[@]}" -out "$out" "$@" >"$out/index"
  while read -r name group version plural; do
    apply /apis/apiextensions.k8s.io/v1/customresourcedefinitions "$name" "$out/$name.json" \
      || die "CRD $name"
  done <"$out/index"
  while read -r name group version plural; do
    for ((i = 0; i < 300; i++)); do
      kcurl -f -o /dev/null "$URL/apis/$group/$version/$plural?limit=1" 2>/dev/null && continue 2
      sleep 0.2
    done
    die "CRD $name not served"
  done <"$out/index"
  log "$(wc -l <"$out/index") CRDs served"
}

# Until the manager of DIR/$CTRL.pid answers readyz and listens on its webhook port (readyz
# can be a plain ping); its log's tail and a failure when it exits or takes 180 s.
wait_manager_ready() {
  local i
  for ((i = 0; ; i++)); do
    if nx curl -sf -o /dev/null "http://127.0.0.1:$HEALTH/readyz" \
       && nx ss -ltnH "sport = :$WH" | grep -q .; then break; fi
    kill -0 "$(cat "$DIR/$CTRL.pid")" 2>/dev/null || { tail -n 30 "$DIR/$CTRL.log" >&2; die "$CTRL-manager exited"; }
    ((i < 900)) || { tail -n 30 "$DIR/$CTRL.log" >&2; stop_all; die "$CTRL-manager not ready after 180 s"; }
    sleep 0.2
  done
  log "$CTRL-manager ready (pid $(cat "$DIR/$CTRL.pid"))"
}

# The webhook configurations of MANIFEST (the module's config/webhook/manifests.yaml),
# pointed at the manager's port with DIR's CA.
register_webhooks() {
  local out="$DIR/objects/webhooks-$CTRL" f c n
  rm -rf "$out"
  mkdir -p "$out"
  "$KBIN/crdprep" -objects -webhook-port "$WH" -ca "$DIR/certs/ca.crt" -prefix "$CTRL" \
    -out "$out" "$1" >"$out/index"
  while read -r f c n; do apply "$c" "$n" "$f" || die "webhook $n"; done <"$out/index"
  log "webhooks registered; $(echo "$(date +%s.%N) - $START_T0" | bc) s in all"
}

# One line per pid file (the manager's and the reach bridges'): name pid|down.
print_status() {
  local f n pid
  for f in "$DIR/$CTRL.pid" "$DIR"/bridge-reach-*.pid; do
    [[ -e "$f" ]] || { [[ "$f" == "$DIR/$CTRL.pid" ]] && echo "$CTRL down"; continue; }
    n="$(basename "$f" .pid)"; pid="$(live_pid "$n")"
    echo "$n ${pid:-down}"
  done
}
