#!/usr/bin/env bash
# The real Horizon 27 with magnum-ui 19 (PyPI) on loopback, and Debian's headless Chromium +
# chromedriver to drive it (see ../shared/reference/running-horizon.md).
#
#   scripts/horizon.sh browser
#        installs Debian's chromium + chromium-driver with apt-get when either is missing;
#        prints the chromedriver path.
#   scripts/horizon.sh start BASE PORT KEYSTONE_URL
#        the venv (scripts/venv.sh horizon), BASE/local_settings.py (Keystone at KEYSTONE_URL,
#        signed-cookie sessions, no memcached, magnum-ui's project panels, login lands on
#        /project/clusters/), collectstatic + compress into BASE/static when the settings or
#        the venv changed, then gunicorn on 127.0.0.1:PORT. Writes BASE/env (HORIZON_URL,
#        HORIZON_VENV, HORIZON_BASE, CHROMEDRIVER, CHROMIUM) and prints BASE.
#   scripts/horizon.sh stop BASE
#        stops gunicorn and a chromedriver left by a killed browser test (with its Chromium
#        processes); by PID file only. State (static files, secret key) is kept.
#
# Horizon reads its settings from openstack_dashboard/local/local_settings.py inside the
# venv; that file is the same for every instance and only loads
# $MAGNUM_RS_HORIZON_BASE/local_settings.py, so instances in different BASEs share one venv.
# Env: MAGNUM_RS_CACHE (venv cache, default ~/.cache/magnum-rs), PYTHON.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=scripts/lib/apt.sh
source "$HERE/lib/apt.sh"

usage() { echo "usage: $0 browser | start BASE PORT KEYSTONE_URL | stop BASE" >&2; exit 2; }

port_open() { python3 -c "import socket,sys; s=socket.socket(); sys.exit(s.connect_ex(('127.0.0.1',$1))!=0)"; }

browser() {  # Debian's chromium and chromium-driver; the machine may start bare
  apt_install horizon.sh "chromium chromedriver" chromium chromium-driver
  command -v chromium >/dev/null && command -v chromedriver
}

# Kills a process and every descendant (children first are found before the parent dies).
kill_tree() {
  local pid="$1" child
  for child in $(ps -o pid= --ppid "$pid" 2>/dev/null); do kill_tree "$child"; done
  kill -TERM "$pid" 2>/dev/null || true
}

stop() {  # stop BASE
  local base="$1" pid
  if [[ -f "$base/run/chromedriver.pid" ]]; then
    pid="$(cat "$base/run/chromedriver.pid")"
    if grep -q chromedriver "/proc/$pid/cmdline" 2>/dev/null; then kill_tree "$pid"; fi
    rm -f "$base/run/chromedriver.pid"
  fi
  if [[ -f "$base/run/horizon.pid" ]]; then
    pid="$(cat "$base/run/horizon.pid")"
    if kill -0 "$pid" 2>/dev/null && grep -q gunicorn "/proc/$pid/cmdline" 2>/dev/null; then
      # setsid -f made the master a session and process-group leader: signal the group.
      kill -TERM -- "-$pid" 2>/dev/null || kill -TERM "$pid"
      for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
      kill -KILL -- "-$pid" 2>/dev/null || true
    fi
    rm -f "$base/run/horizon.pid"
  fi
  if [[ -f "$base/port" ]]; then
    local port; port="$(cat "$base/port")"
    for _ in $(seq 100); do port_open "$port" || return 0; sleep 0.1; done
    echo "horizon.sh: 127.0.0.1:$port is still in use after stopping horizon" >&2; return 1
  fi
}

# The venv's own local_settings.py and magnum-ui's project panels (same for every instance).
install_shim() {  # install_shim VENV
  local venv="$1" dash
  dash="$("$venv/bin/python" -c 'import openstack_dashboard, os; print(os.path.dirname(openstack_dashboard.__file__))')"
  local mui; mui="$("$venv/bin/python" -c 'import magnum_ui, os; print(os.path.dirname(magnum_ui.__file__))')"
  local shim="$dash/local/local_settings.py" tmp
  tmp="$(mktemp "$dash/local/.local_settings.XXXXXX")"
  cat >"$tmp" <<'EOF'
# Written by magnum-rs's scripts/horizon.sh: each Horizon instance keeps its settings in its
# own base directory, named by MAGNUM_RS_HORIZON_BASE.
import os as _os

with open(_os.path.join(_os.environ["MAGNUM_RS_HORIZON_BASE"], "local_settings.py")) as _f:
    exec(compile(_f.read(), _f.name, "exec"))
EOF
  mv -f "$tmp" "$shim"
  # The project's Container Infra panels; not the admin quota panels (_2370, _2371).
  local f
  for f in _1370_project_container_infra_panel_group.py \
           _1371_project_container_infra_clusters_panel.py \
           _1372_project_container_infra_cluster_templates_panel.py; do
    cmp -s "$mui/enabled/$f" "$dash/local/enabled/$f" || cp "$mui/enabled/$f" "$dash/local/enabled/$f"
  done
}

write_settings() {  # write_settings BASE KEYSTONE_URL
  local base="$1" keystone="$2"
  [[ -s "$base/secret_key" ]] || python3 -c 'import secrets; print(secrets.token_urlsafe(48))' >"$base/secret_key"
  chmod 600 "$base/secret_key"
  cat >"$base/local_settings.py" <<EOF
# Horizon settings of the instance in $base (scripts/horizon.sh).
import os
from django.utils.translation import gettext_lazy as _

DEBUG = False
ALLOWED_HOSTS = ["127.0.0.1", "localhost"]
with open(os.path.join("$base", "secret_key")) as f:
    SECRET_KEY = f.read().strip()

OPENSTACK_HOST = "127.0.0.1"
OPENSTACK_KEYSTONE_URL = "$keystone"
OPENSTACK_KEYSTONE_DEFAULT_ROLE = "member"
OPENSTACK_ENDPOINT_TYPE = "publicURL"

# No memcached: the session (with the Keystone token) lives in a signed cookie.
SESSION_ENGINE = "django.contrib.sessions.backends.signed_cookies"
CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}

# The Overview panel at /project/ needs a compute service; land on the clusters instead.
LOGIN_REDIRECT_URL = "/project/clusters/"

STATIC_ROOT = os.path.join("$base", "static")
COMPRESS_OFFLINE = True

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"level": "INFO", "class": "logging.StreamHandler"}},
    "loggers": {
        "horizon": {"handlers": ["console"], "level": "INFO"},
        "openstack_dashboard": {"handlers": ["console"], "level": "INFO"},
        "magnum_ui": {"handlers": ["console"], "level": "INFO"},
        "openstack_auth": {"handlers": ["console"], "level": "INFO"},
        "django.request": {"handlers": ["console"], "level": "ERROR"},
    },
}
EOF
  printf '#!/usr/bin/env python\nimport os, sys\nos.environ.setdefault("DJANGO_SETTINGS_MODULE", "openstack_dashboard.settings")\nfrom django.core.management import execute_from_command_line\nexecute_from_command_line(sys.argv)\n' \
    >"$base/manage.py"
  # DEBUG=False: Django serves no static files by itself; wrap the app for gunicorn.
  printf 'import os\nos.environ.setdefault("DJANGO_SETTINGS_MODULE", "openstack_dashboard.settings")\nfrom django.contrib.staticfiles.handlers import StaticFilesHandler\nfrom django.core.wsgi import get_wsgi_application\napplication = StaticFilesHandler(get_wsgi_application())\n' \
    >"$base/horizon_wsgi.py"
}

# collectstatic + compress, only when the settings or the venv changed since the last run.
build_static() {  # build_static BASE VENV
  local base="$1" venv="$2" want
  want="$(cat "$base/local_settings.py" "$venv/.magnum-rs-complete" "$HERE/horizon.sh" | sha256sum | cut -c1-16)"
  if [[ -f "$base/static/.magnum-rs-complete" && "$(cat "$base/static/.magnum-rs-complete")" == "$want" ]]; then
    return 0
  fi
  echo "horizon.sh: collectstatic + compress into $base/static" >&2
  rm -rf "$base/static"
  (
    cd "$base"
    "$venv/bin/python" manage.py collectstatic --noinput -v 0
    "$venv/bin/python" manage.py compress --force -v 0
  ) >"$base/log/static.log" 2>&1 || { tail -30 "$base/log/static.log" >&2; exit 1; }
  echo "$want" >"$base/static/.magnum-rs-complete"
}

run_gunicorn() {  # run_gunicorn BASE PORT VENV
  local base="$1" port="$2" venv="$3"
  if port_open "$port"; then
    echo "horizon.sh: something already listens on 127.0.0.1:$port" >&2; exit 1
  fi
  : >"$base/log/horizon.log"; : >"$base/log/access.log"
  # setsid -f: gunicorn runs in its own session, detached from this script and its pipes.
  # Threads: the clusters page asks for the list, stats and quota at the same time.
  setsid -f "$venv/bin/gunicorn" --chdir "$base" --bind "127.0.0.1:$port" --workers 1 \
    --threads 4 --no-control-socket --timeout 120 --name horizon \
    --pid "$base/run/horizon.pid" --access-logfile "$base/log/access.log" \
    --error-logfile "$base/log/horizon.log" --capture-output --pythonpath "$base" \
    horizon_wsgi:application >"$base/log/gunicorn.out" 2>&1 </dev/null
  local url="http://127.0.0.1:$port/auth/login/"
  for _ in $(seq 240); do
    if curl -fsS --max-time 5 -o /dev/null "$url" 2>/dev/null; then return 0; fi
    if grep -q 'exited with code\|Worker failed to boot' "$base/log/horizon.log" 2>/dev/null; then
      echo "horizon.sh: horizon crashed while loading:" >&2; tail -30 "$base/log/horizon.log" >&2; exit 1
    fi
    sleep 0.5
  done
  echo "horizon.sh: horizon did not answer on $url" >&2; tail -30 "$base/log/horizon.log" >&2; exit 1
}

cmd="${1:-}"; shift || true
case "$cmd" in
  browser)
    [[ $# -eq 0 ]] || usage
    browser ;;
  start)
    [[ $# -eq 3 ]] || usage
    base="$1" port="$2" keystone="$3"
    mkdir -p "$base"; base="$(cd "$base" && pwd)"
    stop "$base"
    chromedriver="$(browser)"
    venv="$("$HERE/venv.sh" horizon)"
    install_shim "$venv"
    mkdir -p "$base/log" "$base/run"
    echo "$port" >"$base/port"
    export MAGNUM_RS_HORIZON_BASE="$base"
    write_settings "$base" "$keystone"
    build_static "$base" "$venv"
    run_gunicorn "$base" "$port" "$venv"
    cat >"$base/env" <<EOF
HORIZON_URL=http://127.0.0.1:$port
HORIZON_BASE=$base
HORIZON_VENV=$venv
CHROMEDRIVER=$chromedriver
CHROMIUM=$(command -v chromium)
EOF
    echo "horizon.sh: running on http://127.0.0.1:$port (pid $(cat "$base/run/horizon.pid"))" >&2
    echo "$base" ;;
  stop)
    [[ $# -eq 1 ]] || usage
    [[ -d "$1" ]] || exit 0
    stop "$(cd "$1" && pwd)" ;;
  *) usage ;;
esac
