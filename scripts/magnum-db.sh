#!/usr/bin/env bash
# Reference Magnum 23 database on the private MariaDB (see scripts/mariadb.sh).
#
#   scripts/magnum-db.sh create DBNAME   drop + recreate DBNAME (utf8mb4) and run Magnum's
#                                        own alembic migrations (magnum-db-manage upgrade)
#   scripts/magnum-db.sh seed DBNAME     (re)write the fixed seed rows with Magnum's objects
#                                        (scripts/magnum_seed.py)
#   scripts/magnum-db.sh dump DBNAME     print cluster_template, cluster, nodegroup rows as JSON
#   scripts/magnum-db.sh conf DBNAME     print the path of the generated magnum.conf
#   scripts/magnum-db.sh certs DBNAME generate|read UUID [CSR_FILE]
#                                        a cluster's certificates through Magnum's own cert
#                                        manager (scripts/magnum_certs.py)
#
# Starts MariaDB and builds the magnum venv if needed (both no-ops when warm).
# Env: MAGNUM_RS_CACHE (default ~/.cache/magnum-rs), MARIADB_PORT (default 13306).
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
CACHE="${MAGNUM_RS_CACHE:-$HOME/.cache/magnum-rs}"
PORT="${MARIADB_PORT:-13306}"

usage() { echo "usage: $0 create|seed|dump|conf DBNAME | certs DBNAME generate|read UUID [CSR_FILE]" >&2; exit 2; }
[[ $# -eq 2 || ( $# -ge 4 && "$1" == certs ) ]] || usage
CMD="$1"; DB="$2"; shift 2
[[ "$DB" =~ ^[A-Za-z0-9_]{1,64}$ ]] || { echo "magnum-db.sh: bad DBNAME '$DB'" >&2; exit 2; }

"$HERE/mariadb.sh" start
VENV="$("$HERE/venv.sh" magnum)"
PY="$VENV/bin/python"
export MAGNUM_DB_PORT="$PORT" MAGNUM_DB_NAME="$DB"

# One generated config per database (oslo.config does not expand variables,
# so absolute paths are written; no trailing comments on value lines).
WORK="$CACHE/magnum-db"
CONF="$WORK/$DB.conf"
mkdir -p "$WORK/state/lock"
cat >"$CONF.tmp" <<CONF
[DEFAULT]
host = magnum-rs-seed
transport_url = fake://
debug = false
state_path = $WORK/state
[database]
connection = mysql+pymysql://magnum:magnum@127.0.0.1:$PORT/$DB?charset=utf8mb4
[certificates]
cert_manager_type = x509keypair
[oslo_concurrency]
lock_path = $WORK/state/lock
[oslo_messaging_notifications]
driver = noop
[profiler]
enabled = false
CONF
mv "$CONF.tmp" "$CONF"

case "$CMD" in
  create)
    # Drop/create through PyMySQL (the magnum user has ALL ON *.*).
    "$PY" - <<'PY'
import os, pymysql
db = os.environ["MAGNUM_DB_NAME"]
c = pymysql.connect(host="127.0.0.1", port=int(os.environ["MAGNUM_DB_PORT"]),
                    user="magnum", password="magnum", autocommit=True)
with c.cursor() as cur:
    cur.execute(f"DROP DATABASE IF EXISTS `{db}`")
    cur.execute(f"CREATE DATABASE `{db}` CHARACTER SET utf8mb4")
PY
    "$VENV/bin/magnum-db-manage" --config-file "$CONF" upgrade >"$WORK/$DB.upgrade.log" 2>&1 \
      || { tail -n 40 "$WORK/$DB.upgrade.log" >&2; exit 1; }
    "$PY" - <<'PY'
import os, sys, pymysql
c = pymysql.connect(host="127.0.0.1", port=int(os.environ["MAGNUM_DB_PORT"]), user="magnum",
                    password="magnum", database=os.environ["MAGNUM_DB_NAME"])
with c.cursor() as cur:
    cur.execute("SELECT version_num FROM alembic_version")
    print("magnum-db.sh: %s migrated to %s" % (os.environ["MAGNUM_DB_NAME"], cur.fetchone()[0]),
          file=sys.stderr)
PY
    ;;
  seed) "$PY" -W ignore "$HERE/magnum_seed.py" --config-file "$CONF" ;;
  dump) "$PY" "$HERE/magnum_dump.py" ;;
  conf) echo "$CONF" ;;
  certs) "$PY" -W ignore "$HERE/magnum_certs.py" --config-file "$CONF" "$@" ;;
  *) usage ;;
esac
