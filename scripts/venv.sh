#!/usr/bin/env bash
# Python virtualenvs for the reference tools, cached outside the repo.
#
#   scripts/venv.sh cli      venv-cli: python-openstackclient + python-magnumclient;
#                            prints the path of its `openstack` binary
#   scripts/venv.sh magnum   venv-magnum: magnum==23.0.0 + PyMySQL; prints the venv path
#   scripts/venv.sh keystone venv-keystone: keystone==30.0.0 + gunicorn; prints the venv path
#   scripts/venv.sh tempest  venv-tempest: tempest==47.0.0 + magnum-tempest-plugin==2.12.0;
#                            prints the venv path
#   scripts/venv.sh horizon  venv-horizon: horizon==27.0.0 + magnum-ui==19.0.0 + gunicorn +
#                            selenium; prints the venv path
#   scripts/venv.sh openstack venv-openstack: glance==33.0.0 + nova==34.0.0 + neutron==29.0.0 +
#                            cinder==29.0.0 + gunicorn + pyroute2 (neutron 29.0.0 imports it but
#                            does not require it) for scripts/openstack.sh; prints the venv path
#
# Env: MAGNUM_RS_CACHE (default ~/.cache/magnum-rs), PYTHON (default python3).
# Versions are pinned by scripts/constraints.txt (a `pip freeze` of working venvs); the
# Keystone venv by scripts/keystone/constraints.txt, the tempest venv by
# scripts/tempest/constraints.txt, the Horizon venv by scripts/horizon/constraints.txt, the
# OpenStack services' venv by scripts/openstack/constraints.txt.
# A venv is reused when its marker matches the package spec + constraints hash;
# the marker is written only after a successful install. Progress goes to stderr.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
CACHE="${MAGNUM_RS_CACHE:-$HOME/.cache/magnum-rs}"
PY="${PYTHON:-python3}"
CONSTRAINTS="$HERE/constraints.txt"

ensure_venv() {  # ensure_venv DIR PKG...   (constraints: $CONSTRAINTS)
  local dir="$1"; shift
  local hash="none"
  [[ -f "$CONSTRAINTS" ]] && hash="$(sha256sum "$CONSTRAINTS" | cut -c1-16)"
  local want="$* constraints:$hash"
  # One builder per venv (scripts/test.sh builds some in the background while later steps ask
  # for them): a second caller waits here, then finds the venv made. Held until exit.
  mkdir -p "$CACHE"
  exec 9>"$dir.lock"
  flock 9
  if [[ -f "$dir/.magnum-rs-complete" && "$(cat "$dir/.magnum-rs-complete")" == "$want" ]]; then
    return 0
  fi
  echo "venv.sh: building $dir" >&2
  rm -rf "$dir"
  mkdir -p "$CACHE"
  "$PY" -m venv "$dir"
  local c=(); [[ -f "$CONSTRAINTS" ]] && c=(-c "$CONSTRAINTS")
  {
    "$dir/bin/pip" install -q --disable-pip-version-check "${c[@]}" -U pip setuptools wheel
    "$dir/bin/pip" install -q --disable-pip-version-check "${c[@]}" "$@"
  } >&2
  echo "$want" >"$dir/.magnum-rs-complete"
}

case "${1:-}" in
  cli)
    ensure_venv "$CACHE/venv-cli" python-openstackclient python-magnumclient
    echo "$CACHE/venv-cli/bin/openstack" ;;
  magnum)
    ensure_venv "$CACHE/venv-magnum" magnum==23.0.0 PyMySQL
    echo "$CACHE/venv-magnum" ;;
  keystone)
    CONSTRAINTS="$HERE/keystone/constraints.txt"
    ensure_venv "$CACHE/venv-keystone" keystone==30.0.0 gunicorn==26.0.0
    echo "$CACHE/venv-keystone" ;;
  tempest)
    CONSTRAINTS="$HERE/tempest/constraints.txt"
    ensure_venv "$CACHE/venv-tempest" tempest==47.0.0 magnum-tempest-plugin==2.12.0
    echo "$CACHE/venv-tempest" ;;
  horizon)
    CONSTRAINTS="$HERE/horizon/constraints.txt"
    ensure_venv "$CACHE/venv-horizon" horizon==27.0.0 magnum-ui==19.0.0 gunicorn==26.0.0 \
      selenium==4.47.0
    echo "$CACHE/venv-horizon" ;;
  openstack)
    CONSTRAINTS="$HERE/openstack/constraints.txt"
    ensure_venv "$CACHE/venv-openstack" glance==33.0.0 nova==34.0.0 neutron==29.0.0 \
      cinder==29.0.0 gunicorn==26.0.0 pyroute2
    echo "$CACHE/venv-openstack" ;;
  *) echo "usage: $0 cli|magnum|keystone|tempest|horizon|openstack" >&2; exit 2 ;;
esac
