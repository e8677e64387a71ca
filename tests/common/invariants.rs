//! What must hold in the database whatever requests raced (issue 28), read from the side
//! with plain SQL (the same text on SQLite and MariaDB), so a test does not trust the code it
//! checks:
//! - every cluster has exactly one default master and one default worker nodegroup;
//! - no nodegroup without its cluster, no cluster on a missing template;
//! - once things settle, no `*_IN_PROGRESS` cluster or nodegroup without an open operation.

use sqlx::Row as _;

/// Each violated invariant, as a readable line (empty: all hold).
pub async fn violations(conn: &mut sqlx::AnyConnection, settled: bool) -> Vec<String> {
    let mut found = Vec::new();
    let checks: &[(&str, &str)] = &[
        (
            "cluster without exactly one default master",
            "SELECT c.uuid FROM cluster c WHERE (SELECT COUNT(*) FROM nodegroup n \
             WHERE n.cluster_id = c.uuid AND n.is_default = 1 AND n.role = 'master') <> 1",
        ),
        (
            "cluster without exactly one default worker",
            "SELECT c.uuid FROM cluster c WHERE (SELECT COUNT(*) FROM nodegroup n \
             WHERE n.cluster_id = c.uuid AND n.is_default = 1 AND n.role <> 'master') <> 1",
        ),
        (
            "nodegroup without its cluster",
            "SELECT n.uuid FROM nodegroup n \
             WHERE NOT EXISTS (SELECT 1 FROM cluster c WHERE c.uuid = n.cluster_id)",
        ),
        (
            "cluster on a missing template",
            "SELECT c.uuid FROM cluster c WHERE NOT EXISTS \
             (SELECT 1 FROM cluster_template t WHERE t.uuid = c.cluster_template_id)",
        ),
    ];
    let settled_checks: &[(&str, &str)] = &[
        (
            "cluster in progress without an open operation",
            "SELECT c.uuid FROM cluster c WHERE c.status LIKE '%IN_PROGRESS' AND NOT EXISTS \
             (SELECT 1 FROM magnum_rs_operation o WHERE o.cluster_uuid = c.uuid \
              AND o.state IN ('pending', 'running', 'waiting'))",
        ),
        (
            "nodegroup in progress without an open operation",
            "SELECT n.uuid FROM nodegroup n WHERE n.status LIKE '%IN_PROGRESS' AND NOT EXISTS \
             (SELECT 1 FROM magnum_rs_operation o WHERE o.cluster_uuid = n.cluster_id \
              AND o.state IN ('pending', 'running', 'waiting'))",
        ),
    ];
    let all = checks
        .iter()
        .chain(if settled { settled_checks } else { &[] });
    for (what, sql) in all {
        let rows = sqlx::query(sql)
            .fetch_all(&mut *conn)
            .await
            .expect("invariant query");
        for row in rows {
            let uuid: String = row.try_get(0).unwrap_or_default();
            found.push(format!("{what}: {uuid}"));
        }
    }
    found
}

/// Asserts every invariant (and, when `settled`, that nothing is left in progress).
pub async fn assert_hold(conn: &mut sqlx::AnyConnection, settled: bool, context: &str) {
    let v = violations(conn, settled).await;
    assert!(v.is_empty(), "{context}: {v:#?}");
}
