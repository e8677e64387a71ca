//! The rows both servers persist (Magnum's `cluster_template`, `cluster`, `nodegroup`,
//! `federation`), read
//! as JSON straight from MariaDB, and the re-synchronisation of magnum-rs's database from
//! the real Magnum's after a write that is expected to differ.

use std::collections::BTreeMap;

use serde_json::Value;
use sqlx::mysql::MySqlPool;
use sqlx::Row as _;

use super::normalize::{self, Known};

pub const TABLES: &[&str] = &["cluster_template", "cluster", "nodegroup", "federation"];

/// Every row of the tables, ordered by id, as JSON objects (column → value).
pub async fn snapshot(pool: &MySqlPool, db: &str) -> Result<Vec<(String, Vec<Value>)>, String> {
    let mut out = Vec::new();
    for table in TABLES {
        let cols: Vec<String> = sqlx::query(
            "SELECT CAST(column_name AS CHAR) FROM information_schema.columns \
             WHERE table_schema = ? AND table_name = ? ORDER BY ordinal_position",
        )
        .bind(db)
        .bind(*table)
        .fetch_all(pool)
        .await
        .map_err(|e| format!("columns of {db}.{table}: {e}"))?
        .iter()
        .map(|r| r.get::<String, _>(0))
        .collect();
        let pairs: Vec<String> = cols.iter().map(|c| format!("'{c}', `{c}`")).collect();
        let sql = format!(
            "SELECT CAST(JSON_OBJECT({}) AS CHAR) FROM `{db}`.`{table}` ORDER BY id",
            pairs.join(", ")
        );
        let rows = sqlx::query(&sql)
            .fetch_all(pool)
            .await
            .map_err(|e| format!("{sql}: {e}"))?;
        let mut values = Vec::new();
        for r in rows {
            let s: String = r.get(0);
            values.push(serde_json::from_str(&s).map_err(|e| format!("{s}: {e}"))?);
        }
        out.push((table.to_string(), values));
    }
    Ok(out)
}

/// The uuids of every row (the ids both servers share).
pub fn uuids(snap: &[(String, Vec<Value>)]) -> Vec<String> {
    snap.iter()
        .flat_map(|(_, rows)| rows.iter())
        .filter_map(|r| r.get("uuid").and_then(Value::as_str).map(str::to_string))
        .collect()
}

/// Row by row differences (rows matched by id) after normalising timestamps and generated
/// uuids.
pub fn diff(
    theirs: &[(String, Vec<Value>)],
    ours: &[(String, Vec<Value>)],
    known: &Known,
) -> Vec<String> {
    let mut out = Vec::new();
    for ((table, a), (_, b)) in theirs.iter().zip(ours) {
        let by_id = |rows: &Vec<Value>| -> BTreeMap<i64, Value> {
            rows.iter()
                .map(|r| {
                    let mut r = r.clone();
                    normalize::json(&mut r, known);
                    (r.get("id").and_then(Value::as_i64).unwrap_or(-1), r)
                })
                .collect()
        };
        let (a, b) = (by_id(a), by_id(b));
        for (id, x) in &a {
            let Some(y) = b.get(id) else {
                out.push(format!("{table} id {id}: only in magnum"));
                continue;
            };
            if x != y {
                let cols: Vec<String> = x
                    .as_object()
                    .into_iter()
                    .flatten()
                    .filter(|(k, v)| y.get(k.as_str()) != Some(v))
                    .map(|(k, v)| {
                        format!(
                            "{k}: magnum {v} / magnum-rs {}",
                            y.get(k.as_str()).cloned().unwrap_or(Value::Null)
                        )
                    })
                    .collect();
                out.push(format!("{table} id {id}: {}", cols.join("; ")));
            }
        }
        for (id, y) in &b {
            if !a.contains_key(id) {
                out.push(format!("{table} id {id}: only in magnum-rs: {y}"));
            }
        }
    }
    out
}

/// Makes `ours` hold exactly the rows of `theirs` (and no magnum-rs operation records).
pub async fn resync(pool: &MySqlPool, theirs: &str, ours: &str) -> Result<(), String> {
    let mut conn = pool.acquire().await.map_err(|e| e.to_string())?;
    let mut stmts = vec!["SET FOREIGN_KEY_CHECKS = 0".to_string()];
    for t in TABLES {
        stmts.push(format!("DELETE FROM `{ours}`.`{t}`"));
        stmts.push(format!(
            "INSERT INTO `{ours}`.`{t}` SELECT * FROM `{theirs}`.`{t}`"
        ));
        stmts.push(format!("ALTER TABLE `{ours}`.`{t}` AUTO_INCREMENT = 1"));
    }
    let has_ops: i64 = sqlx::query_scalar(
        "SELECT COUNT(*) FROM information_schema.tables \
         WHERE table_schema = ? AND table_name = 'magnum_rs_operation'",
    )
    .bind(ours)
    .fetch_one(&mut *conn)
    .await
    .map_err(|e| e.to_string())?;
    if has_ops > 0 {
        stmts.push(format!("DELETE FROM `{ours}`.`magnum_rs_operation`"));
    }
    stmts.push("SET FOREIGN_KEY_CHECKS = 1".to_string());
    for s in stmts {
        sqlx::query(&s)
            .execute(&mut *conn)
            .await
            .map_err(|e| format!("{s}: {e}"))?;
    }
    Ok(())
}
