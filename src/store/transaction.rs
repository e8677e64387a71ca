//! One transaction on one pooled connection: [`Store::begin`], statements on `&mut tx`, then
//! [`Tx::commit`] or [`Tx::rollback`], which also hand the connection back to the pool
//! clean. A transaction dropped before either (an error returned with `?`, a client that
//! hung up) takes its connection with it: the pool closes it and the server rolls back what
//! was open (see [`super::pool`]).

use std::ops::{Deref, DerefMut};

use sqlx::{Database, MySql, Sqlite, TransactionManager as _};

use super::statement::Conn;
use super::Store;

/// An open transaction; the connection it runs on stays out of the pool's reuse until it
/// ends.
#[derive(Debug)]
pub(crate) struct Tx {
    conn: Conn,
}

/// What to do with the transaction when it ends.
#[derive(Clone, Copy)]
enum End {
    Commit,
    Rollback,
}

impl Store {
    /// Begins a transaction on a connection of its own. On SQLite it begins `IMMEDIATE`:
    /// it holds the database's write lock from its first statement, so what it reads stays
    /// true until it commits (the guards of [`super::guard`] rely on it), and it never fails
    /// half-way when another writer committed since its first read (a deferred transaction
    /// that read, then writes, gets SQLITE_BUSY at once instead of waiting).
    pub(crate) async fn begin(&self) -> Result<Tx, sqlx::Error> {
        let mut conn = self.conn().await?;
        match &mut conn {
            Conn::Sqlite(c) => {
                c.hold_open();
                <Sqlite as Database>::TransactionManager::begin(c, Some("BEGIN IMMEDIATE".into()))
                    .await?;
            }
            Conn::Mysql(c) => {
                c.hold_open();
                <MySql as Database>::TransactionManager::begin(c, None).await?;
            }
        }
        Ok(Tx { conn })
    }
}

impl Tx {
    /// Keeps what was written.
    pub(crate) async fn commit(self) -> Result<(), sqlx::Error> {
        self.end(End::Commit).await
    }

    /// Writes nothing (a condition read under the transaction's locks did not hold).
    pub(crate) async fn rollback(self) -> Result<(), sqlx::Error> {
        self.end(End::Rollback).await
    }

    async fn end(mut self, end: End) -> Result<(), sqlx::Error> {
        match (&mut self.conn, end) {
            (Conn::Sqlite(c), End::Commit) => {
                <Sqlite as Database>::TransactionManager::commit(c).await?
            }
            (Conn::Sqlite(c), End::Rollback) => {
                <Sqlite as Database>::TransactionManager::rollback(c).await?
            }
            (Conn::Mysql(c), End::Commit) => {
                <MySql as Database>::TransactionManager::commit(c).await?
            }
            (Conn::Mysql(c), End::Rollback) => {
                <MySql as Database>::TransactionManager::rollback(c).await?
            }
        }
        self.conn.mark_clean();
        Ok(())
    }
}

impl Deref for Tx {
    type Target = Conn;
    fn deref(&self) -> &Conn {
        &self.conn
    }
}

impl DerefMut for Tx {
    /// Statements on the transaction's connection leave it in flight until the end.
    fn deref_mut(&mut self) -> &mut Conn {
        &mut self.conn
    }
}

#[cfg(test)]
mod tests {
    use super::super::stmt;
    use super::*;

    async fn quota_count(store: &Store) -> i64 {
        stmt("SELECT COUNT(*) FROM quotas")
            .scalar(&mut store.conn().await.expect("connection"))
            .await
            .expect("count")
    }

    const INSERT: &str = "INSERT INTO quotas (created_at, project_id, resource, hard_limit) \
                          VALUES ('2026-12-05 00:00:00', ?, 'Cluster', 1)";

    /// A transaction dropped after a statement that succeeded (the statement does not make
    /// the connection reusable while the transaction is open): its write is gone, and the
    /// next user of the pool is outside any transaction.
    #[tokio::test]
    async fn a_transaction_dropped_after_a_statement_writes_nothing() {
        let dir = tempfile::tempdir().expect("dir");
        let url = format!("sqlite://{}", dir.path().join("tx.db").display());
        let store = Store::connect_with(&url, 1).await.expect("connect");
        store.migrate().await.expect("migrate");
        {
            let mut tx = store.begin().await.expect("begin");
            stmt(INSERT)
                .bind("dropped")
                .execute(&mut tx)
                .await
                .expect("insert");
        }
        assert_eq!(quota_count(&store).await, 0, "the dropped write is gone");
        stmt(INSERT)
            .bind("kept")
            .execute(&mut store.conn().await.expect("connection"))
            .await
            .expect("insert");
        let other = Store::connect(&url).await.expect("second store");
        assert_eq!(quota_count(&other).await, 1, "a later write is committed");
        let mut tx = store.begin().await.expect("begin");
        stmt(INSERT)
            .bind("committed")
            .execute(&mut tx)
            .await
            .expect("insert");
        tx.commit().await.expect("commit");
        assert_eq!(quota_count(&other).await, 2, "a committed write stays");
    }
}
