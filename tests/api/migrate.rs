//! `magnum-rs migrate`: the schema on an empty database, idempotently; a Magnum-owned
//! database is used as it is and never altered; one at another revision is refused.

use crate::common;

use magnum_rs::store::migrate::{MigrateError, MigrateOutcome, MAGNUM_ALEMBIC_HEAD};
use magnum_rs::store::Store;

#[tokio::test]
async fn migrate_creates_magnums_tables_on_an_empty_database_and_is_idempotent() {
    let db = common::fresh_database().await;
    let store = Store::connect(&db.url).await.expect("connect");
    assert_eq!(
        store.migrate().await.expect("first"),
        MigrateOutcome::OwnSchema
    );
    assert_eq!(
        store.migrate().await.expect("second"),
        MigrateOutcome::OwnSchema
    );
    let head: String = sqlx::query_scalar("SELECT version_num FROM alembic_version")
        .fetch_one(&mut store.side_connection().await.expect("connection"))
        .await
        .expect("alembic_version");
    assert_eq!(head, MAGNUM_ALEMBIC_HEAD);
    for table in [
        "cluster",
        "cluster_template",
        "nodegroup",
        "quotas",
        "magnum_service",
        "federation",
        "magnum_rs_operation",
    ] {
        let n: i64 = sqlx::query_scalar(&format!("SELECT COUNT(*) FROM {table}"))
            .fetch_one(&mut store.side_connection().await.expect("connection"))
            .await
            .unwrap_or_else(|e| panic!("{table}: {e}"));
        assert_eq!(n, 0, "{table} starts empty");
    }
}

/// Builds a minimal "Magnum-made" database: Magnum's tables without magnum-rs's bookkeeping.
async fn magnum_made(revision: Option<&str>) -> (common::TestDb, Store) {
    let db = common::fresh_database().await;
    let store = Store::connect(&db.url).await.expect("connect");
    for ddl in [
        "CREATE TABLE cluster (id INTEGER PRIMARY KEY, uuid VARCHAR(36))",
        "CREATE TABLE nodegroup (id INTEGER PRIMARY KEY, uuid VARCHAR(36))",
        "CREATE TABLE cluster_template (id INTEGER PRIMARY KEY, uuid VARCHAR(36))",
    ] {
        sqlx::query(ddl)
            .execute(&mut store.side_connection().await.expect("connection"))
            .await
            .expect("ddl");
    }
    if let Some(rev) = revision {
        sqlx::query("CREATE TABLE alembic_version (version_num VARCHAR(32) NOT NULL PRIMARY KEY)")
            .execute(&mut store.side_connection().await.expect("connection"))
            .await
            .expect("alembic table");
        sqlx::query("INSERT INTO alembic_version (version_num) VALUES (?)")
            .bind(rev.to_string())
            .execute(&mut store.side_connection().await.expect("connection"))
            .await
            .expect("stamp");
    }
    (db, store)
}

async fn columns_of_cluster(store: &Store) -> i64 {
    // Any column magnum-rs would add would show here: the table must stay as Magnum made it.
    let sql = match store.dialect() {
        magnum_rs::store::Dialect::Sqlite => "SELECT COUNT(*) FROM pragma_table_info('cluster')",
        magnum_rs::store::Dialect::Mysql => {
            "SELECT COUNT(*) FROM information_schema.columns WHERE table_schema = DATABASE() AND table_name = 'cluster'"
        }
    };
    sqlx::query_scalar(sql)
        .fetch_one(&mut store.side_connection().await.expect("connection"))
        .await
        .expect("columns")
}

#[tokio::test]
async fn migrate_uses_a_magnum_database_at_head_without_altering_it() {
    let (_db, store) = magnum_made(Some(MAGNUM_ALEMBIC_HEAD)).await;
    let before = columns_of_cluster(&store).await;
    assert_eq!(
        store.migrate().await.expect("migrate"),
        MigrateOutcome::MagnumOwned
    );
    assert_eq!(
        store.migrate().await.expect("again"),
        MigrateOutcome::MagnumOwned
    );
    assert_eq!(
        columns_of_cluster(&store).await,
        before,
        "Magnum's cluster table was altered"
    );
    let ops: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM magnum_rs_operation")
        .fetch_one(&mut store.side_connection().await.expect("connection"))
        .await
        .expect("side table exists");
    assert_eq!(ops, 0);
}

#[tokio::test]
async fn migrate_refuses_a_magnum_database_at_another_revision_with_a_clear_message() {
    let (_db, store) = magnum_made(Some("c0f832afc4fd")).await;
    let err = store.migrate().await.expect_err("must refuse");
    assert!(
        matches!(err, MigrateError::MagnumRevisionMismatch { ref found } if found == "c0f832afc4fd")
    );
    let text = err.to_string();
    assert!(text.contains("alembic revision c0f832afc4fd"), "{text}");
    assert!(text.contains("magnum-db-manage upgrade"), "{text}");
    let side: Result<i64, _> = sqlx::query_scalar("SELECT COUNT(*) FROM magnum_rs_operation")
        .fetch_one(&mut store.side_connection().await.expect("connection"))
        .await;
    assert!(
        side.is_err(),
        "nothing may be created in a refused database"
    );
}

#[tokio::test]
async fn migrate_refuses_magnum_tables_of_unknown_origin() {
    let (_db, store) = magnum_made(None).await;
    assert!(matches!(
        store.migrate().await,
        Err(MigrateError::UnknownOwner)
    ));
}

#[test]
fn migrate_command_reports_a_refusal_and_exits_non_zero() {
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let (db, _store) = rt.block_on(magnum_made(Some("c0f832afc4fd")));
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_magnum-rs"))
        .args(["--database-url", &db.url, "migrate"])
        .output()
        .expect("run");
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("created by Magnum") && stderr.contains("c0f832afc4fd"),
        "{stderr}"
    );
}
