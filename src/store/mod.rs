//! Persistence through sqlx on Magnum's own tables, for SQLite and MySQL/MariaDB from the same
//! code paths: the pool holds connections of one concrete driver, statements are the same
//! SQL text on both (see [`statement`]), and rows are decoded by that driver natively into
//! the row types of [`schema`]. JSON columns are TEXT holding JSON, as in Magnum.

pub mod adoption;
pub mod backend_clusters;
pub mod batch;
mod changes;
pub mod cluster_credentials;
pub mod clusters;
pub mod federations;
pub mod guard;
mod keys;
pub mod migrate;
pub mod nodegroups;
mod operation_rows;
pub mod operations;
mod page;
pub mod pool;
pub mod quotas;
mod schema;
pub mod services;
mod sort_key;
mod statement;
mod stats;
pub mod templates;
mod transaction;
pub mod x509keypairs;

use std::str::FromStr;
use std::time::Duration;

use anyhow::Context as _;
use sqlx::mysql::MySqlConnectOptions;
use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode};
use sqlx::{MySql, Sqlite};

pub use batch::{Batch, Committed};
pub use changes::{ClusterSet, NodeGroupSet};
pub use guard::{Guard, Refused};
pub use keys::{ClusterBy, NodeGroupBy, TemplateBy};
pub use page::{Marker, Page, SortDir};
pub use pool::Pool;
pub use schema::{iso8601, isoformat, stored};
pub use sort_key::{SortKey, Table};
pub(crate) use statement::{stmt, Conn};

/// Which SQL dialect is behind the pool; only DDL and a few statements depend on it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dialect {
    Sqlite,
    Mysql,
}

/// The pool of the store's driver.
#[derive(Clone, Debug)]
enum Pools {
    Sqlite(Pool<Sqlite>),
    Mysql(Pool<MySql>),
}

/// The store: a pool of one driver. Cheap to clone.
#[derive(Clone)]
pub struct Store {
    pools: Pools,
    /// For [`Store::side_connection`]; holds the password, so never in `Debug`.
    url: std::sync::Arc<str>,
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store")
            .field("pools", &self.pools)
            .finish_non_exhaustive()
    }
}

/// How many connections a MySQL/MariaDB pool opens when `[database] max_pool_size` is not
/// set (oslo.db's default, as Magnum has).
pub const DEFAULT_MAX_POOL_SIZE: usize = 5;

/// A SQLite database takes one writer at a time; a few connections let reads run beside it.
const SQLITE_POOL_SIZE: usize = 4;

/// How long an acquisition waits for a free connection.
const ACQUIRE_TIMEOUT: Duration = Duration::from_secs(30);

impl Store {
    /// Connects to `url` (`sqlite://…` or `mysql://…`). A SQLite file is created when missing.
    pub async fn connect(url: &str) -> anyhow::Result<Self> {
        Self::connect_with(url, DEFAULT_MAX_POOL_SIZE).await
    }

    /// As [`Store::connect`], with at most `max_pool_size` MySQL connections.
    pub async fn connect_with(url: &str, max_pool_size: usize) -> anyhow::Result<Self> {
        let (pools, url) = if url.starts_with("sqlite:") {
            let url = sqlite_url_with_create(url);
            let options = SqliteConnectOptions::from_str(&url)
                .context("invalid database URL")?
                // WAL lets readers run beside the writer; the busy timeout makes concurrent
                // writers wait for each other instead of failing.
                .journal_mode(SqliteJournalMode::Wal)
                .busy_timeout(Duration::from_secs(30));
            let pool = Pool::connect(options, SQLITE_POOL_SIZE, ACQUIRE_TIMEOUT)
                .await
                .context("cannot connect to the database")?;
            (Pools::Sqlite(pool), url)
        } else if url.starts_with("mysql:") || url.starts_with("mariadb:") {
            let url = url.replacen("mariadb:", "mysql:", 1);
            let options = MySqlConnectOptions::from_str(&url).context("invalid database URL")?;
            let pool = Pool::connect(options, max_pool_size, ACQUIRE_TIMEOUT)
                .await
                .context("cannot connect to the database")?;
            (Pools::Mysql(pool), url)
        } else {
            anyhow::bail!("unsupported database URL scheme (expected sqlite: or mysql:)");
        };
        Ok(Store {
            pools,
            url: url.into(),
        })
    }

    /// A pooled connection for statements ([`stmt`]).
    pub(crate) async fn conn(&self) -> Result<Conn, sqlx::Error> {
        Ok(match &self.pools {
            Pools::Sqlite(p) => Conn::Sqlite(p.acquire().await?),
            Pools::Mysql(p) => Conn::Mysql(p.acquire().await?),
        })
    }

    /// A connection of its own to the same database, outside the pool and the store's
    /// statements: for tests and tools that look at (or break) the database from the side.
    pub async fn side_connection(&self) -> Result<sqlx::AnyConnection, sqlx::Error> {
        use sqlx::Connection as _;
        sqlx::any::install_default_drivers();
        sqlx::AnyConnection::connect(&self.url).await
    }

    /// Closes the pool's connections.
    pub async fn close(&self) {
        match &self.pools {
            Pools::Sqlite(p) => p.close().await,
            Pools::Mysql(p) => p.close().await,
        }
    }

    pub fn dialect(&self) -> Dialect {
        match &self.pools {
            Pools::Sqlite(_) => Dialect::Sqlite,
            Pools::Mysql(_) => Dialect::Mysql,
        }
    }

    /// Whether the database answers (for readiness).
    pub async fn ping(&self) -> bool {
        match self.conn().await {
            Ok(mut c) => stmt("SELECT 1").execute(&mut c).await.is_ok(),
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
    stored_time(chrono::Utc::now().naive_utc())
}

/// A UTC time as Magnum stores it (`YYYY-MM-DD HH:MM:SS.ffffff`), the one text form every
/// time magnum-rs writes takes.
pub fn stored_time(t: chrono::NaiveDateTime) -> String {
    t.format("%Y-%m-%d %H:%M:%S%.6f").to_string()
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

/// `INSERT INTO <table> (a, b, …) VALUES (?, ?, …)` of named values.
pub(crate) async fn insert_row<C: schema::Column>(
    conn: &mut Conn,
    values: Vec<(C, Bind)>,
) -> Result<u64, sqlx::Error> {
    let (names, binds): (Vec<C>, Vec<Bind>) = values.into_iter().unzip();
    let sql = format!(
        "INSERT INTO {} ({}) VALUES ({})",
        C::TABLE,
        names
            .iter()
            .map(|c| c.name())
            .collect::<Vec<_>>()
            .join(", "),
        vec!["?"; names.len()].join(", ")
    );
    Ok(stmt(sql)
        .bind_all(binds)
        .execute(conn)
        .await?
        .rows_affected())
}

/// `UPDATE <table> SET a = ?, … , updated_at = ? WHERE uuid = ?`: a row is addressed by its
/// uuid, never by an id read earlier (ids of deleted rows were reused on SQLite).
pub(crate) async fn update_columns<C: schema::Column>(
    conn: &mut Conn,
    uuid: &str,
    changes: Vec<(C, Bind)>,
) -> Result<u64, sqlx::Error> {
    update_columns_where(conn, uuid, changes, None).await
}

/// [`update_columns`] with a further SQL condition on the row (`… AND <only>`).
pub(crate) async fn update_columns_where<C: schema::Column>(
    conn: &mut Conn,
    uuid: &str,
    changes: Vec<(C, Bind)>,
    only: Option<&str>,
) -> Result<u64, sqlx::Error> {
    if changes.is_empty() {
        return Ok(0);
    }
    let mut sql = format!("UPDATE {} SET ", C::TABLE);
    let mut binds: Vec<Bind> = Vec::with_capacity(changes.len() + 2);
    let mut stamped = false;
    for (i, (col, b)) in changes.into_iter().enumerate() {
        if i > 0 {
            sql.push_str(", ");
        }
        stamped |= col.name() == "updated_at";
        sql.push_str(col.name());
        sql.push_str(" = ?");
        binds.push(b);
    }
    if !stamped {
        sql.push_str(", updated_at = ?");
        binds.push(Bind::text(now()));
    }
    sql.push_str(" WHERE uuid = ?");
    binds.push(Bind::text(uuid));
    if let Some(only) = only {
        sql.push_str(" AND ");
        sql.push_str(only);
    }
    Ok(stmt(sql)
        .bind_all(binds)
        .execute(conn)
        .await?
        .rows_affected())
}
