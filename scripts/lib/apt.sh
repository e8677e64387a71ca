# shellcheck shell=bash
# Sourced by the scripts that install Debian packages (mariadb.sh, capi.sh, horizon.sh).
#
# apt_install WHO "COMMAND..." [APT-GET OPTION|PACKAGE]...
#   installs the packages unless every COMMAND is already on PATH. One apt-get at a time
#   among the project's scripts (scripts/test.sh runs some side by side), and the check
#   under the same lock, so that a package another script is installing is waited for, not
#   installed twice. Not root: through sudo.
apt_install() {
  local who="$1" commands="$2"
  shift 2
  (
    flock 7
    missing=0
    for c in $commands; do command -v "$c" >/dev/null 2>&1 || missing=1; done
    [[ "$missing" == 1 ]] || exit 0
    sudo=(); [[ "$(id -u)" -eq 0 ]] || sudo=(sudo)
    echo "$who: installing $* (apt-get)" >&2
    "${sudo[@]}" apt-get update -qq >&2
    DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq "$@" >&2
  ) 7>/tmp/magnum-rs-apt.lock
}
