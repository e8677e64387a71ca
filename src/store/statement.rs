//! Statements on the store's connection, whichever driver is behind it: [`Conn`] is a pooled
//! connection of the SQLite or the MySQL driver, and a [`Stmt`] (SQL with `?` placeholders,
//! the same text on both) runs on either, its rows decoded by that driver natively into a
//! `FromRow` type (no `Any` layer converting each value once more).

use std::borrow::Cow;

use sqlx::mysql::MySqlRow;
use sqlx::sqlite::SqliteRow;
use sqlx::{Arguments as _, Database, Decode, Encode, FromRow, MySql, Sqlite, Type};

use super::{pool, Bind};

/// A pooled connection of the store's driver.
#[derive(Debug)]
pub(crate) enum Conn {
    Sqlite(pool::Conn<Sqlite>),
    Mysql(pool::Conn<MySql>),
}

impl Conn {
    /// Back to the pool reusable as is (after a transaction ended).
    pub(crate) fn mark_clean(&mut self) {
        match self {
            Conn::Sqlite(c) => c.mark_clean(),
            Conn::Mysql(c) => c.mark_clean(),
        }
    }
}

/// A row type both drivers decode.
pub(crate) trait Decoded:
    for<'r> FromRow<'r, SqliteRow> + for<'r> FromRow<'r, MySqlRow> + Send + Unpin
{
}

impl<T> Decoded for T where
    T: for<'r> FromRow<'r, SqliteRow> + for<'r> FromRow<'r, MySqlRow> + Send + Unpin
{
}

/// A single value both drivers decode (`COUNT(*)`, one column).
pub(crate) trait Scalar:
    for<'r> Decode<'r, Sqlite> + Type<Sqlite> + for<'r> Decode<'r, MySql> + Type<MySql> + Send + Unpin
{
}

impl<T> Scalar for T where
    T: for<'r> Decode<'r, Sqlite>
        + Type<Sqlite>
        + for<'r> Decode<'r, MySql>
        + Type<MySql>
        + Send
        + Unpin
{
}

/// What an `INSERT`, `UPDATE` or `DELETE` did.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Executed {
    rows_affected: u64,
}

impl Executed {
    pub(crate) fn rows_affected(self) -> u64 {
        self.rows_affected
    }
}

/// One statement and its values.
#[derive(Clone, Debug)]
pub(crate) struct Stmt<'s> {
    sql: Cow<'s, str>,
    binds: Vec<Bind>,
}

/// A statement of SQL text with `?` placeholders.
pub(crate) fn stmt<'s>(sql: impl Into<Cow<'s, str>>) -> Stmt<'s> {
    Stmt {
        sql: sql.into(),
        binds: Vec::new(),
    }
}

/// The driver's arguments for `binds`, borrowing their text.
fn arguments<'q, DB: Database>(binds: &'q [Bind]) -> Result<DB::Arguments<'q>, sqlx::Error>
where
    Option<&'q str>: Encode<'q, DB> + Type<DB>,
    Option<i64>: Encode<'q, DB> + Type<DB>,
    Option<bool>: Encode<'q, DB> + Type<DB>,
{
    let mut args = DB::Arguments::<'q>::default();
    args.reserve(binds.len(), 0);
    for b in binds {
        match b {
            Bind::Text(v) => args.add(v.as_deref()),
            Bind::Int(v) => args.add(*v),
            Bind::Bool(v) => args.add(*v),
        }
        .map_err(sqlx::Error::Encode)?;
    }
    Ok(args)
}

/// Runs `$run` (a function of the query, its arguments and the executor) on the
/// connection's driver.
macro_rules! on_driver {
    ($conn:expr, $self:ident, |$sql:ident, $args:ident, $exec:ident| $run:expr) => {
        match $conn {
            Conn::Sqlite($exec) => {
                let $sql: &str = &$self.sql;
                let $args = arguments::<Sqlite>(&$self.binds)?;
                $run
            }
            Conn::Mysql($exec) => {
                let $sql: &str = &$self.sql;
                let $args = arguments::<MySql>(&$self.binds)?;
                $run
            }
        }
    };
}

impl Stmt<'_> {
    pub(crate) fn bind(mut self, v: impl Into<Bind>) -> Self {
        self.binds.push(v.into());
        self
    }

    pub(crate) fn bind_all(mut self, binds: impl IntoIterator<Item = Bind>) -> Self {
        self.binds.extend(binds);
        self
    }

    pub(crate) async fn execute(self, conn: &mut Conn) -> Result<Executed, sqlx::Error> {
        let rows_affected = on_driver!(conn, self, |sql, args, c| sqlx::query_with(sql, args)
            .execute(c)
            .await?
            .rows_affected());
        Ok(Executed { rows_affected })
    }

    pub(crate) async fn fetch_all<T: Decoded>(
        self,
        conn: &mut Conn,
    ) -> Result<Vec<T>, sqlx::Error> {
        on_driver!(conn, self, |sql, args, c| sqlx::query_as_with(sql, args)
            .fetch_all(c)
            .await)
    }

    pub(crate) async fn fetch_optional<T: Decoded>(
        self,
        conn: &mut Conn,
    ) -> Result<Option<T>, sqlx::Error> {
        on_driver!(conn, self, |sql, args, c| sqlx::query_as_with(sql, args)
            .fetch_optional(c)
            .await)
    }

    pub(crate) async fn fetch_one<T: Decoded>(self, conn: &mut Conn) -> Result<T, sqlx::Error> {
        on_driver!(conn, self, |sql, args, c| sqlx::query_as_with(sql, args)
            .fetch_one(c)
            .await)
    }

    /// The first column of the one row.
    pub(crate) async fn scalar<T: Scalar>(self, conn: &mut Conn) -> Result<T, sqlx::Error> {
        on_driver!(conn, self, |sql, args, c| sqlx::query_scalar_with(
            sql, args
        )
        .fetch_one(c)
        .await)
    }

    /// The first column of the first row, if there is one.
    pub(crate) async fn scalar_optional<T: Scalar>(
        self,
        conn: &mut Conn,
    ) -> Result<Option<T>, sqlx::Error> {
        on_driver!(conn, self, |sql, args, c| sqlx::query_scalar_with(
            sql, args
        )
        .fetch_optional(c)
        .await)
    }
}

impl From<&str> for Bind {
    fn from(v: &str) -> Self {
        Bind::Text(Some(v.to_string()))
    }
}

impl From<String> for Bind {
    fn from(v: String) -> Self {
        Bind::Text(Some(v))
    }
}

impl From<&String> for Bind {
    fn from(v: &String) -> Self {
        Bind::Text(Some(v.clone()))
    }
}

impl From<Option<String>> for Bind {
    fn from(v: Option<String>) -> Self {
        Bind::Text(v)
    }
}

impl From<Option<&str>> for Bind {
    fn from(v: Option<&str>) -> Self {
        Bind::Text(v.map(str::to_string))
    }
}

impl From<i64> for Bind {
    fn from(v: i64) -> Self {
        Bind::Int(Some(v))
    }
}

impl From<Option<i64>> for Bind {
    fn from(v: Option<i64>) -> Self {
        Bind::Int(v)
    }
}

impl From<bool> for Bind {
    fn from(v: bool) -> Self {
        Bind::Bool(Some(v))
    }
}
