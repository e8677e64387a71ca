#!/usr/bin/env bash
# Private MariaDB server for magnum-rs tests and the reference Magnum.
#
#   scripts/mariadb.sh install the server and client packages (apt) if needed
#   scripts/mariadb.sh start   install (apt) if needed, init datadir, start, create user magnum
#   scripts/mariadb.sh stop    stop the server started by `start` (by pid)
#   scripts/mariadb.sh url     print mysql://magnum:magnum@127.0.0.1:PORT (no database)
#   scripts/mariadb.sh drop-test-databases   drop the mrs_* databases tests leave behind
#   scripts/mariadb.sh test-databases        print their names, one per line
#   scripts/mariadb.sh drop-databases        drop the mrs_* databases named on stdin
#                                            (other names are refused)
#
# Env: MAGNUM_RS_CACHE (default ~/.cache/magnum-rs), MARIADB_DATADIR
#      (default $MAGNUM_RS_CACHE/mariadb), MARIADB_PORT (default 13306).
# The server runs as root with --no-defaults, so no system my.cnf is read.
set -euo pipefail
# shellcheck source=scripts/lib/apt.sh
source "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/lib/apt.sh"

CACHE="${MAGNUM_RS_CACHE:-$HOME/.cache/magnum-rs}"
DATADIR="${MARIADB_DATADIR:-$CACHE/mariadb}"
PORT="${MARIADB_PORT:-13306}"
RUNDIR="$DATADIR.run"            # socket, pid and log live beside the datadir
SOCK="$RUNDIR/mariadb.sock"
PIDFILE="$RUNDIR/mariadb.pid"
LOG="$RUNDIR/mariadb.log"

# Pid of the running server, or nothing.
running_pid() {
  [[ -f "$PIDFILE" ]] || return 0
  local pid; pid="$(cat "$PIDFILE" 2>/dev/null || true)"
  if [[ -n "$pid" ]] && kill -0 "$pid" 2>/dev/null; then echo "$pid"; fi
}

install_server() {
  apt_install mariadb.sh "mariadbd mariadb" --no-install-recommends mariadb-server mariadb-client
}

# Root connects over the private socket (unix_socket auth, installed by install-db).
sql() { mariadb --no-defaults --protocol=socket -S "$SOCK" -uroot "$@"; }

test_databases() {
  sql -N -e "SELECT schema_name FROM information_schema.schemata WHERE schema_name LIKE 'mrs\\_%'"
}

drop_databases() {  # names on stdin, all checked first; one session for all the drops
  local db names=()
  while read -r db; do [[ -z "$db" ]] || names+=("$db"); done
  for db in "${names[@]}"; do
    [[ "$db" =~ ^mrs_[A-Za-z0-9_]+$ ]] || { echo "mariadb.sh: not a test database: $db" >&2; exit 1; }
  done
  ((${#names[@]})) || return 0
  printf 'DROP DATABASE IF EXISTS `%s`;\n' "${names[@]}" | sql
}

start() {
  if [[ -n "$(running_pid)" ]]; then return 0; fi   # already up: no-op
  install_server
  mkdir -p "$RUNDIR"
  if [[ ! -d "$DATADIR/mysql" ]]; then
    echo "mariadb.sh: initialising $DATADIR" >&2
    mkdir -p "$DATADIR"
    mariadb-install-db --no-defaults --user=root --datadir="$DATADIR" \
      --auth-root-authentication-method=socket --skip-test-db >"$RUNDIR/install-db.log" 2>&1 \
      || { cat "$RUNDIR/install-db.log" >&2; exit 1; }
  fi
  # Detached (setsid) so it outlives the calling shell / test harness.
  setsid mariadbd --no-defaults --user=root --datadir="$DATADIR" \
    --bind-address=127.0.0.1 --port="$PORT" --socket="$SOCK" --pid-file="$PIDFILE" \
    --log-error="$LOG" --skip-name-resolve --innodb-buffer-pool-size=128M \
    --character-set-server=utf8mb4 --collation-server=utf8mb4_general_ci \
    </dev/null >/dev/null 2>&1 &
  # Bounded readiness wait (~30 s).
  local _
  for _ in $(seq 1 150); do
    if mariadb-admin --no-defaults -S "$SOCK" -uroot ping >/dev/null 2>&1; then break; fi
    sleep 0.2
  done
  if ! mariadb-admin --no-defaults -S "$SOCK" -uroot ping >/dev/null 2>&1; then
    echo "mariadb.sh: server did not become ready; log tail:" >&2
    tail -n 30 "$LOG" >&2 || true
    exit 1
  fi
  # Test user; tests create/drop their own databases, hence ON *.*.
  sql <<'SQL'
CREATE USER IF NOT EXISTS 'magnum'@'127.0.0.1' IDENTIFIED BY 'magnum';
CREATE USER IF NOT EXISTS 'magnum'@'localhost' IDENTIFIED BY 'magnum';
GRANT ALL PRIVILEGES ON *.* TO 'magnum'@'127.0.0.1';
GRANT ALL PRIVILEGES ON *.* TO 'magnum'@'localhost';
FLUSH PRIVILEGES;
SQL
  echo "mariadb.sh: running on 127.0.0.1:$PORT (pid $(cat "$PIDFILE"))" >&2
}

stop() {
  local pid; pid="$(running_pid)"
  [[ -n "$pid" ]] || return 0
  kill "$pid"
  local _
  for _ in $(seq 1 150); do kill -0 "$pid" 2>/dev/null || break; sleep 0.2; done
  if kill -0 "$pid" 2>/dev/null; then echo "mariadb.sh: pid $pid still alive" >&2; exit 1; fi
  echo "mariadb.sh: stopped" >&2
}

case "${1:-}" in
  install) install_server ;;
  start) start ;;
  stop) stop ;;
  url) echo "mysql://magnum:magnum@127.0.0.1:$PORT" ;;
  drop-test-databases) test_databases | drop_databases ;;
  test-databases) test_databases ;;
  drop-databases) drop_databases ;;
  *) echo "usage: $0 install|start|stop|url|drop-test-databases|test-databases|drop-databases" >&2; exit 2 ;;
esac
