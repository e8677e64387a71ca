//! One transaction on one pooled connection: [`Store::begin`], statements through
//! `&mut *tx`, then [`Tx::commit`] or [`Tx::rollback`], which also hand the connection back
//! to the pool clean. A transaction dropped before either (an error returned with `?`, a
//! client that hung up) takes its connection with it: the pool closes it and the server
//! rolls back what was open (see [`super::pool`]).

use std::ops::{Deref, DerefMut};

use sqlx::{Any, AnyConnection, Database, TransactionManager as _};

use super::{Conn, Store};

type Manager = <Any as Database>::TransactionManager;

/// An open transaction; the connection it runs on stays out of the pool's reuse until it
/// ends.
#[derive(Debug)]
pub(crate) struct Tx {
    conn: Conn,
}

impl Store {
    /// Begins a transaction on a connection of its own.
    pub(crate) async fn begin(&self) -> Result<Tx, sqlx::Error> {
        let mut conn = self.conn().await?;
        Manager::begin(&mut conn, None).await?;
        Ok(Tx { conn })
    }
}

impl Tx {
    /// Keeps what was written.
    pub(crate) async fn commit(mut self) -> Result<(), sqlx::Error> {
        Manager::commit(&mut self.conn).await?;
        self.conn.mark_clean();
        Ok(())
    }

    /// Writes nothing (a condition read under the transaction's locks did not hold).
    pub(crate) async fn rollback(mut self) -> Result<(), sqlx::Error> {
        Manager::rollback(&mut self.conn).await?;
        self.conn.mark_clean();
        Ok(())
    }
}

impl Deref for Tx {
    type Target = AnyConnection;
    fn deref(&self) -> &AnyConnection {
        &self.conn
    }
}

impl DerefMut for Tx {
    /// Raw access keeps the connection marked in flight until the transaction ends.
    fn deref_mut(&mut self) -> &mut AnyConnection {
        &mut self.conn
    }
}
