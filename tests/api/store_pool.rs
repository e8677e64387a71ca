//! The store's connection pool (`src/store/pool.rs`) on the real database of the run
//! (SQLite, or MariaDB when `MAGNUM_RS_TEST_MYSQL_URL` is set): a connection goes back
//! for reuse, and what a dropped transaction or statement left behind never reaches the
//! next user.

use crate::common;

use std::str::FromStr as _;
use std::time::Duration;

use futures::StreamExt as _;
use magnum_rs::store::{Pool, Store};
use sqlx::Any;
use sqlx::Connection as _;

fn is_mysql(url: &str) -> bool {
    url.starts_with("mysql:")
}

/// The store's pool (generic over the driver) on sqlx's `Any` driver, so that a test can run
/// its own statements on the pooled connections.
async fn any_pool(url: &str, max: usize, acquire_timeout: Duration) -> Pool<Any> {
    sqlx::any::install_default_drivers();
    let mut url = url.to_string();
    if !is_mysql(&url) {
        url.push_str("?mode=rwc");
    }
    let options = sqlx::any::AnyConnectOptions::from_str(&url).expect("url");
    Pool::connect(options, max, acquire_timeout)
        .await
        .expect("pool")
}

/// A temporary table lives on one connection only: it tells which connection a statement ran on.
async fn mark_connection(pool: &Pool<Any>, url: &str) {
    let ddl = if is_mysql(url) {
        "CREATE TEMPORARY TABLE pool_marker (x INTEGER)"
    } else {
        "CREATE TEMP TABLE pool_marker (x INTEGER)"
    };
    let mut c = pool.acquire().await.expect("connection");
    sqlx::query(ddl).execute(&mut c).await.expect("marker");
}

async fn on_marked_connection(pool: &Pool<Any>) -> bool {
    let mut c = pool.acquire().await.expect("connection");
    sqlx::query("SELECT COUNT(*) FROM pool_marker")
        .fetch_one(&mut c)
        .await
        .is_ok()
}

#[tokio::test]
async fn a_connection_goes_back_to_the_pool_after_a_statement_and_is_reused() {
    let db = common::fresh_database().await;
    let pool = any_pool(&db.url, 3, Duration::from_secs(30)).await;
    mark_connection(&pool, &db.url).await;
    // The most recently returned connection is handed out next.
    assert!(on_marked_connection(&pool).await);
    assert!(on_marked_connection(&pool).await);
}

#[tokio::test]
async fn a_transaction_dropped_without_commit_is_rolled_back_before_the_next_use() {
    let db = common::fresh_database().await;
    let store = Store::connect_with(&db.url, 3).await.expect("connect");
    store.migrate().await.expect("migrate");
    let pool = any_pool(&db.url, 3, Duration::from_secs(30)).await;
    {
        let mut c = pool.acquire().await.expect("connection");
        let mut tx = c.begin().await.expect("begin");
        sqlx::query(
            "INSERT INTO quotas (created_at, project_id, resource, hard_limit) \
             VALUES ('2026-12-03 00:00:00', 'p', 'Cluster', 7)",
        )
        .execute(&mut *tx)
        .await
        .expect("insert");
        // Dropped here: neither committed nor rolled back by the caller.
    }
    let mut c = pool.acquire().await.expect("connection");
    let n: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM quotas")
        .fetch_one(&mut c)
        .await
        .expect("count");
    assert_eq!(n, 0, "the dropped transaction's insert is gone");
    // And the connection is out of the transaction: this write stays.
    sqlx::query(
        "INSERT INTO quotas (created_at, project_id, resource, hard_limit) \
         VALUES ('2026-12-03 00:00:00', 'p', 'Cluster', 3)",
    )
    .execute(&mut c)
    .await
    .expect("insert");
    drop(c);
    let other = Store::connect(&db.url).await.expect("second store");
    let n: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM quotas")
        .fetch_one(&mut other.side_connection().await.expect("connection"))
        .await
        .expect("count");
    assert_eq!(n, 1, "a write after the rollback is committed");
    other.close().await;
    pool.close().await;
    store.close().await;
}

#[tokio::test]
async fn rows_a_dropped_query_left_unread_do_not_reach_the_next_statement() {
    let db = common::fresh_database().await;
    let store = Store::connect_with(&db.url, 1).await.expect("connect");
    store.migrate().await.expect("migrate");
    let pool = any_pool(&db.url, 1, Duration::from_secs(30)).await;
    for i in 0..50 {
        sqlx::query(
            "INSERT INTO quotas (created_at, project_id, resource, hard_limit) \
             VALUES ('2026-12-03 00:00:00', ?, 'Cluster', ?)",
        )
        .bind(format!("p{i}"))
        .bind(i)
        .execute(&mut pool.acquire().await.expect("connection"))
        .await
        .expect("insert");
    }
    {
        let mut c = pool.acquire().await.expect("connection");
        let mut rows = sqlx::query("SELECT project_id FROM quotas ORDER BY id").fetch(&mut c);
        let first = rows.next().await.expect("a row").expect("row ok");
        drop(first);
        // The stream (and 49 unread rows) dropped here.
    }
    // A pool of one: the next statement gets its own result (the connection that left rows
    // unread is closed, and a fresh one answers).
    let limit: i64 = sqlx::query_scalar("SELECT hard_limit FROM quotas WHERE project_id = 'p42'")
        .fetch_one(&mut pool.acquire().await.expect("connection"))
        .await
        .expect("the next statement's own row");
    assert_eq!(limit, 42);
    pool.close().await;
    store.close().await;
}

#[tokio::test]
async fn acquiring_beyond_the_pool_size_waits_and_times_out() {
    let db = common::fresh_database().await;
    let pool = any_pool(&db.url, 1, Duration::from_millis(200)).await;
    let held = pool.acquire().await.expect("first");
    match pool.acquire().await {
        Err(sqlx::Error::PoolTimedOut) => {}
        other => panic!("expected PoolTimedOut, got {other:?}"),
    }
    drop(held);
    pool.acquire()
        .await
        .expect("free again after the first is back");
    pool.close().await;
    assert!(matches!(pool.acquire().await, Err(sqlx::Error::PoolClosed)));
}

/// A statement cancelled part-way (its future dropped after it was sent, as when a client
/// hangs up mid-request) leaves the connection in a state sqlx cannot always recover from:
/// the pool closes that connection, and the next statement runs on a fresh one at once.
#[tokio::test]
async fn a_connection_whose_statement_was_cancelled_is_closed_not_reused() {
    let db = common::fresh_database().await;
    let pool = any_pool(&db.url, 1, Duration::from_secs(30)).await;
    mark_connection(&pool, &db.url).await;
    let mut cancelled = false;
    // Tries until one statement is still running after its first poll (on an idle machine
    // MariaDB can answer within that poll now and then).
    for i in 0..200 {
        let mut c = pool.acquire().await.expect("connection");
        // A new statement text each time: not in the connection's statement cache, so it
        // is prepared first, the step sqlx's MySQL connection cannot resume.
        let sql = format!("SELECT COUNT(*) + {i} FROM pool_marker");
        let statement = sqlx::query_scalar::<_, i64>(&sql).fetch_one(&mut c);
        // One poll sends it; dropping it then cancels it part-way.
        if futures::FutureExt::now_or_never(statement).is_none() {
            cancelled = true;
            break;
        }
    }
    assert!(
        cancelled,
        "no statement was still running after its first poll"
    );
    let next = tokio::time::timeout(Duration::from_secs(10), on_marked_connection(&pool))
        .await
        .expect("the next statement does not hang");
    assert!(
        !next,
        "the cancelled statement's connection was handed out again"
    );
    let one: i64 = tokio::time::timeout(
        Duration::from_secs(10),
        sqlx::query_scalar("SELECT 1").fetch_one(&mut pool.acquire().await.expect("connection")),
    )
    .await
    .expect("no hang")
    .expect("a fresh connection answers");
    assert_eq!(one, 1);
    pool.close().await;
}

/// A connection the server killed while idle fails the one statement that finds it so; it
/// is then closed, and the next statement gets a working connection.
#[tokio::test]
async fn a_connection_the_server_killed_is_replaced() {
    let db = common::fresh_database().await;
    if !is_mysql(&db.url) {
        eprintln!("SQLite connections cannot be killed from outside; the MariaDB run covers this");
        return;
    }
    let pool = any_pool(&db.url, 2, Duration::from_secs(30)).await;
    let victim: i64 = sqlx::query_scalar("SELECT CONNECTION_ID()")
        .fetch_one(&mut pool.acquire().await.expect("connection"))
        .await
        .expect("id");
    let killer = Store::connect(&db.url).await.expect("second store");
    sqlx::query(&format!("KILL CONNECTION {victim}"))
        .execute(&mut killer.side_connection().await.expect("connection"))
        .await
        .expect("kill");
    killer.close().await;
    // The idle connection handed out next is the killed one.
    let first = sqlx::query_scalar::<_, i64>("SELECT CONNECTION_ID()")
        .fetch_one(&mut pool.acquire().await.expect("connection"))
        .await;
    assert!(first.is_err(), "the killed connection fails: {first:?}");
    let next: i64 = sqlx::query_scalar("SELECT CONNECTION_ID()")
        .fetch_one(&mut pool.acquire().await.expect("connection"))
        .await
        .expect("a new connection answers");
    assert_ne!(next, victim);
    pool.close().await;
}
