//! Persistence through sqlx on Magnum's own tables, for SQLite and MySQL/MariaDB from the same
//! code paths (the `Any` driver; SQL written to run unchanged on both).
//!
//! Reads cast columns whose native types the `Any` driver cannot carry (BOOLEAN, DATETIME)
//! into integers and strings; JSON columns are TEXT holding JSON, as in Magnum.

mod changes;
pub mod clusters;
mod columns;
pub mod federations;
mod keys;
pub mod migrate;
pub mod nodegroups;
pub mod op_payload;
pub mod operations;
mod page;
pub mod pool;
pub mod quotas;
pub mod services;
mod sort_key;
mod stats;
pub mod templates;
mod transaction;

use std::str::FromStr;
use std::time::Duration;

use anyhow::Context as _;
use sqlx::any::AnyConnectOptions;

pub use changes::{ClusterSet, NodeGroupSet};
pub use columns::iso8601;
pub use keys::{ClusterBy, NodeGroupBy, TemplateBy};
pub use page::{Page, SortDir};
pub use pool::{Conn, Pool};
pub use sort_key::{SortKey, Table};

/// Which SQL dialect is behind the pool; only DDL and a few statements depend on it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dialect {
    Sqlite,
    Mysql,
}

/// The store: a pool and its dialect. Cheap to clone.
#[derive(Clone, Debug)]
pub struct Store {
    pool: Pool,
    dialect: Dialect,
}

/// How many connections a MySQL/MariaDB pool opens when `[database] max_pool_size` is not
/// set (oslo.db's default, as Magnum has).
pub const DEFAULT_MAX_POOL_SIZE: usize = 5;

/// A SQLite database takes one writer at a time; a few connections let reads run beside it.
const SQLITE_POOL_SIZE: usize = 4;

impl Store {
    /// Connects to `url` (`sqlite://…` or `mysql://…`). A SQLite file is created when missing.
    pub async fn connect(url: &str) -> anyhow::Result<Self> {
        Self::connect_with(url, DEFAULT_MAX_POOL_SIZE).await
    }

    /// As [`Store::connect`], with at most `max_pool_size` MySQL connections.
    pub async fn connect_with(url: &str, max_pool_size: usize) -> anyhow::Result<Self> {
        sqlx::any::install_default_drivers();
        let dialect = if url.starts_with("sqlite:") {
            Dialect::Sqlite
        } else if url.starts_with("mysql:") || url.starts_with("mariadb:") {
            Dialect::Mysql
        } else {
            anyhow::bail!("unsupported database URL scheme (expected sqlite: or mysql:)");
        };
        let url = if dialect == Dialect::Sqlite {
            sqlite_url_with_create(url)
        } else {
            url.replacen("mariadb:", "mysql:", 1)
        };
        let options = AnyConnectOptions::from_str(&url).context("invalid database URL")?;
        let max = if dialect == Dialect::Sqlite {
            SQLITE_POOL_SIZE
        } else {
            max_pool_size
        };
        let after_connect: Option<pool::AfterConnect> = (dialect == Dialect::Sqlite).then(|| {
            let f: pool::AfterConnect = std::sync::Arc::new(|conn| {
                Box::pin(async move {
                    // WAL lets readers run beside the writer; the busy timeout makes
                    // concurrent writers wait for each other instead of failing.
                    sqlx::Executor::execute(&mut *conn, "PRAGMA journal_mode = WAL").await?;
                    sqlx::Executor::execute(&mut *conn, "PRAGMA busy_timeout = 30000").await?;
                    Ok(())
                })
            });
            f
        });
        let pool = Pool::connect(options, max, Duration::from_secs(30), after_connect)
            .await
            .context("cannot connect to the database")?;
        Ok(Store { pool, dialect })
    }

    /// A connection for statements (`&mut conn` is an executor).
    pub async fn conn(&self) -> Result<Conn, sqlx::Error> {
        self.pool.acquire().await
    }

    /// Closes the pool's connections.
    pub async fn close(&self) {
        self.pool.close().await;
    }

    pub fn dialect(&self) -> Dialect {
        self.dialect
    }

    /// Whether the database answers (for readiness).
    pub async fn ping(&self) -> bool {
        match self.conn().await {
            Ok(mut c) => sqlx::query("SELECT 1").execute(&mut c).await.is_ok(),
            Err(_) => false,
        }
    }
}

/// Adds `mode=rwc` so a missing SQLite file is created on first start.
fn sqlite_url_with_create(url: &str) -> String {
    if url.contains("mode=") || url.contains(":memory:") {
        url.to_string()
    } else if url.contains('?') {
        format!("{url}&mode=rwc")
    } else {
        format!("{url}?mode=rwc")
    }
}

/// Current time as Magnum stores it (UTC, `YYYY-MM-DD HH:MM:SS.ffffff`).
pub fn now() -> String {
    chrono::Utc::now()
        .format("%Y-%m-%d %H:%M:%S%.6f")
        .to_string()
}

/// A value bound into an `UPDATE … SET col = ?`.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Bind {
    Text(Option<String>),
    Int(Option<i64>),
    Bool(Option<bool>),
}

impl Bind {
    pub fn text(v: impl Into<String>) -> Self {
        Bind::Text(Some(v.into()))
    }

    pub fn json<T: serde::Serialize>(v: &Option<T>) -> Self {
        Bind::Text(v.as_ref().and_then(|v| serde_json::to_string(v).ok()))
    }

    /// A JSON dict column as Magnum's JSONEncodedDict writes it: `{}` for None.
    pub fn json_map(v: &Option<serde_json::Map<String, serde_json::Value>>) -> Self {
        Bind::Text(Some(
            v.as_ref()
                .and_then(|v| serde_json::to_string(v).ok())
                .unwrap_or_else(|| "{}".into()),
        ))
    }

    /// A JSON list column as Magnum's JSONEncodedList writes it: `[]` for None.
    pub fn json_list(v: &Option<Vec<serde_json::Value>>) -> Self {
        Bind::Text(Some(
            v.as_ref()
                .and_then(|v| serde_json::to_string(v).ok())
                .unwrap_or_else(|| "[]".into()),
        ))
    }
}

pub(crate) fn bind_all<'q>(
    mut q: sqlx::query::Query<'q, sqlx::Any, sqlx::any::AnyArguments<'q>>,
    binds: &'q [Bind],
) -> sqlx::query::Query<'q, sqlx::Any, sqlx::any::AnyArguments<'q>> {
    for b in binds {
        q = match b {
            Bind::Text(v) => q.bind(v.clone()),
            Bind::Int(v) => q.bind(*v),
            Bind::Bool(v) => q.bind(*v),
        };
    }
    q
}

/// `INSERT INTO <table> (a, b, …) VALUES (?, ?, …)` of named values on any executor.
pub(crate) async fn insert_row<'e, E>(
    exec: E,
    table: &str,
    values: Vec<(&'static str, Bind)>,
) -> Result<u64, sqlx::Error>
where
    E: sqlx::Executor<'e, Database = sqlx::Any>,
{
    let (names, binds): (Vec<&str>, Vec<Bind>) = values.into_iter().unzip();
    let sql = format!(
        "INSERT INTO {table} ({}) VALUES ({})",
        names.join(", "),
        vec!["?"; names.len()].join(", ")
    );
    Ok(bind_all(sqlx::query(&sql), &binds)
        .execute(exec)
        .await?
        .rows_affected())
}

/// `UPDATE <table> SET a = ?, … , updated_at = ? WHERE id = ?` on any executor.
pub(crate) async fn update_columns<'e, E>(
    exec: E,
    table: &str,
    id: i64,
    changes: &[(&str, Bind)],
) -> Result<u64, sqlx::Error>
where
    E: sqlx::Executor<'e, Database = sqlx::Any>,
{
    if changes.is_empty() {
        return Ok(0);
    }
    let mut sql = format!("UPDATE {table} SET ");
    let mut binds: Vec<Bind> = Vec::with_capacity(changes.len() + 2);
    for (i, (col, b)) in changes.iter().enumerate() {
        if i > 0 {
            sql.push_str(", ");
        }
        sql.push_str(col);
        sql.push_str(" = ?");
        binds.push(b.clone());
    }
    if !changes.iter().any(|(c, _)| *c == "updated_at") {
        sql.push_str(", updated_at = ?");
        binds.push(Bind::text(now()));
    }
    sql.push_str(" WHERE id = ?");
    binds.push(Bind::Int(Some(id)));
    let q = bind_all(sqlx::query(&sql), &binds);
    Ok(q.execute(exec).await?.rows_affected())
}
