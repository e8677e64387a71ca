"""Print the rows of cluster_template, cluster and nodegroup as JSON (ordered by id).

Run by scripts/magnum-db.sh dump DBNAME inside the magnum venv (PyMySQL).
Values are as stored: JSON-encoded text columns stay strings, datetimes are
ISO 8601 without timezone, booleans (TINYINT) stay integers.
"""
import datetime
import json
import os

import pymysql

conn = pymysql.connect(host="127.0.0.1", port=int(os.environ["MAGNUM_DB_PORT"]),
                       user="magnum", password="magnum",
                       database=os.environ["MAGNUM_DB_NAME"], charset="utf8mb4",
                       cursorclass=pymysql.cursors.DictCursor)


def conv(v):
    if isinstance(v, (datetime.datetime, datetime.date)):
        return v.isoformat()
    if isinstance(v, bytes):
        return v.decode()
    return v


out = {}
with conn.cursor() as cur:
    for table in ("cluster_template", "cluster", "nodegroup"):
        cur.execute(f"SELECT * FROM `{table}` ORDER BY id")
        out[table] = [{k: conv(v) for k, v in row.items()} for row in cur.fetchall()]
print(json.dumps(out, indent=2))
