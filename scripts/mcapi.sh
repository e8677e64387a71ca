#!/usr/bin/env bash
# magnum-cluster-api 0.38.2 ("mcapi", PyPI) in a cached venv, and its own rendering of the
# Cluster API `Cluster` object for given Magnum rows (the Python side of the differential
# test; see docs/mcapi-differential.md).
#
#   scripts/mcapi.sh install        venv-mcapi: prints the venv path. A Python venv (same
#                                   interpreter as venv-magnum) whose `zz-magnum.pth` reuses
#                                   venv-magnum's site-packages (magnum==23.0.0) read-only,
#                                   plus mcapi's other dependencies, plus the mcapi wheel
#                                   installed with --no-deps (its sha256 is checked); the
#                                   compiled magnum_cluster_api.abi3.so is loaded before the
#                                   stamp is written. Cached: a second call only compares
#                                   the stamp.
#   scripts/mcapi.sh render ROWS    runs scripts/mcapi_render.py ROWS in that venv and prints
#                                   its JSON (needs the Keystone + OpenStack services named
#                                   in ROWS; see mcapi_render.py's docstring)
#   scripts/mcapi.sh create ROWS    runs scripts/mcapi_drive.py create ROWS: mcapi's own driver
#                                   creates the cluster through Magnum's conductor code, with
#                                   the rows in a real Magnum database (ROWS "database", from
#                                   magnum-db.sh create) and the Cluster in a real management
#                                   cluster (ROWS "kubeconfig"); prints {"uuid", "stack_id", ...}.
#                                   helm is a shim (empty manifests); see mcapi_drive.py.
#   scripts/mcapi.sh delete ROWS    mcapi's delete_cluster, then Magnum's periodic status sync
#                                   until the rows are gone (app credential, Secrets, server
#                                   groups go on the way)
#   scripts/mcapi.sh apply-class KUBECONFIG [NAMESPACE]
#                                   applies mcapi's own ClusterClass magnum-v0.38.2 and its 4
#                                   templates (OpenStackClusterTemplate,
#                                   OpenStackMachineTemplate, KubeadmControlPlaneTemplate,
#                                   KubeadmConfigTemplate) in NAMESPACE (default
#                                   magnum-system; created if missing) of the cluster that
#                                   KUBECONFIG (usable from this host) points to:
#                                   `Driver(NAMESPACE).apply_cluster_class()` of the compiled
#                                   module magnum_cluster_api.abi3.so, loaded on its own (no
#                                   import of the Python package); it GETs each object, then
#                                   PUTs or POSTs it. The cluster needs the CAPI and CAPO
#                                   CRDs (capi.sh start + capo.sh start; see
#                                   docs/capo-env.md). Prints the ClusterClass name.
#
# Env: MAGNUM_RS_CACHE (default ~/.cache/magnum-rs), PYTHON (as for scripts/venv.sh).
# Pins: scripts/constraints.txt (less its setuptools line: mcapi's resources.py imports
# pkg_resources, which setuptools 81 removed, so this venv gets setuptools<81), and the
# packages below. The stamp holds the package spec, the constraints hash and venv-magnum's own
# stamp, so a rebuilt venv-magnum rebuilds this one. Progress goes to stderr.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
CACHE="${MAGNUM_RS_CACHE:-$HOME/.cache/magnum-rs}"
VENV="$CACHE/venv-mcapi"
MCAPI_VERSION=0.38.2
MCAPI_WHEEL=magnum_cluster_api-0.38.2-cp38-abi3-manylinux_2_28_x86_64.whl
MCAPI_SHA256=7e32ff3a607e58edacb22edad2e3f61805b892fc73038bdea43eccb498b85875
# mcapi's requirements that venv-magnum lacks (magnum, openstacksdk, oslo.*, keystoneauth1,
# certifi, requests come from venv-magnum); pykube-ng pinned as in the reference probe.
DEPS=(pykube-ng==23.6.0 shortuuid python-novaclient python-heatclient python-manilaclient
      kubernetes semver sherlock diskcache eventlet 'setuptools<81')

usage() { echo "usage: $0 install | render|create|delete ROWS_JSON | apply-class KUBECONFIG [NAMESPACE]" >&2; exit 2; }
log() { echo "mcapi.sh: $*" >&2; }

install() {
  local magnum_venv hash want
  # One builder at a time (scripts/test.sh builds it in the background while a later step
  # asks for it): a second caller waits here, then finds it made. Held until exit.
  mkdir -p "$CACHE"
  exec 9>"$VENV.lock"
  flock 9
  magnum_venv="$("$HERE/venv.sh" magnum)"
  hash="$(sha256sum "$HERE/constraints.txt" | cut -c1-16)"
  want="mcapi==$MCAPI_VERSION sha256:${MCAPI_SHA256:0:16} ${DEPS[*]} constraints:$hash"
  want+=" magnum-venv:$magnum_venv [$(cat "$magnum_venv/.magnum-rs-complete")]"
  if [[ -f "$VENV/.magnum-rs-complete" && "$(cat "$VENV/.magnum-rs-complete")" == "$want" ]]; then
    echo "$VENV"; return 0
  fi
  log "building $VENV"
  rm -rf "$VENV"
  # venv-magnum's interpreter makes the new venv: the .pth needs the same Python version.
  "$magnum_venv/bin/python" -m venv "$VENV"
  local pyver site
  pyver="$("$VENV/bin/python" -c 'import sys; print("python%d.%d" % sys.version_info[:2])')"
  site="$VENV/lib/$pyver/site-packages"
  [[ -d "$magnum_venv/lib/$pyver/site-packages/magnum" ]] \
    || { log "venv-magnum has no $pyver magnum"; exit 1; }
  # Appended to sys.path after this venv's own site-packages: what is installed here wins.
  echo "$magnum_venv/lib/$pyver/site-packages" >"$site/zz-magnum.pth"
  grep -v '^setuptools==' "$HERE/constraints.txt" >"$VENV/constraints.txt"
  mkdir -p "$VENV/wheel"
  {
    # PYTHONDONTWRITEBYTECODE: pip's own imports through the .pth must not write
    # __pycache__ into venv-magnum.
    export PYTHONDONTWRITEBYTECODE=1
    "$VENV/bin/pip" install -q --disable-pip-version-check -c "$VENV/constraints.txt" \
      "${DEPS[@]}"
    "$VENV/bin/pip" download -q --disable-pip-version-check --no-deps \
      -d "$VENV/wheel" "magnum-cluster-api==$MCAPI_VERSION"
    echo "$MCAPI_SHA256  $VENV/wheel/$MCAPI_WHEEL" | sha256sum -c --quiet
    "$VENV/bin/pip" install -q --disable-pip-version-check --no-deps "$VENV/wheel/$MCAPI_WHEEL"
  } >&2
  # The compiled module must load, and the render script's imports must all resolve.
  PYTHONDONTWRITEBYTECODE=1 "$VENV/bin/python" "$HERE/mcapi_render.py" --self-check >&2
  echo "$want" >"$VENV/.magnum-rs-complete"
  echo "$VENV"
}

case "${1:-}" in
  install)
    [[ $# -eq 1 ]] || usage
    install ;;
  render)
    [[ $# -eq 2 ]] || usage
    venv="$(install)"
    PYTHONDONTWRITEBYTECODE=1 exec "$venv/bin/python" "$HERE/mcapi_render.py" "$2" ;;
  create|delete)
    [[ $# -eq 2 ]] || usage
    venv="$(install)"
    PYTHONDONTWRITEBYTECODE=1 exec "$venv/bin/python" "$HERE/mcapi_drive.py" "$1" "$2" ;;
  apply-class)
    [[ $# -eq 2 || $# -eq 3 ]] || usage
    [[ -r "$2" ]] || { log "cannot read kubeconfig $2"; exit 1; }
    venv="$(install)"
    # kube-rs's Client::try_default() in the compiled module reads KUBECONFIG.
    KUBECONFIG="$(cd "$(dirname "$2")" && pwd)/$(basename "$2")" PYTHONDONTWRITEBYTECODE=1 \
      exec "$venv/bin/python" - "${3:-magnum-system}" <<'PY'
import glob, importlib.util, os, sys
so = glob.glob(os.path.join(sys.prefix, "lib", "python3*", "site-packages",
                            "magnum_cluster_api", "magnum_cluster_api*.so"))
if len(so) != 1:
    sys.exit(f"mcapi.sh: expected one compiled magnum_cluster_api module, found {so}")
spec = importlib.util.spec_from_file_location("magnum_cluster_api", so[0])
rs = importlib.util.module_from_spec(spec)
spec.loader.exec_module(rs)
rs.Driver(sys.argv[1]).apply_cluster_class()
print(rs.CLUSTER_CLASS_NAME)
PY
    ;;
  *) usage ;;
esac
