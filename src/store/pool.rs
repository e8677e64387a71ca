//! A small connection pool over one sqlx driver's connections (`Pool<Sqlite>`,
//! `Pool<MySql>`; the tests also run it on `Pool<Any>`).
//!
//! sqlx's own pool sends a `COM_PING` (a full round trip) every time a connection goes back
//! to it, that is after every statement run on the pool: on the benchmark's reads a third of
//! the server's round trips to MariaDB. This pool returns a connection without a round trip
//! when its last use ended cleanly, and checks it (a ping) before its next use otherwise:
//! after a statement that failed, or a long idle time. A connection whose statement failed
//! with an I/O or protocol error is closed, and then every idle connection is checked before
//! reuse (a restarted database server cut them all).
//!
//! A connection whose statement was cancelled part-way (its future or stream dropped before
//! the end: a client that hung up, a timeout, rows left unread) or whose raw access through
//! `DerefMut` (a transaction) ended without [`Conn::mark_clean`] is closed, never reused: the
//! server rolls back what was open. sqlx's MySQL connection cannot always recover from a
//! cancellation: dropped between sending a prepare and executing it, or between a packet's
//! header and its body, it waits for a reply that never comes, and the next statement on it
//! (the check included) hangs for good. The check itself is bounded by [`CHECK_TIMEOUT`].
//!
//! Written against sqlx 0.8 (sqlx-core 0.8.6): its `Pool` pings on every release, and its
//! MySQL connection does not recover from a cancelled statement. Transactions go through
//! [`super::Store::begin`], whose commit or rollback hands the connection back clean.

use std::ops::{Deref, DerefMut};
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use futures::future::BoxFuture;
use futures::stream::BoxStream;
use futures::{FutureExt as _, Stream, StreamExt as _};
use sqlx::{ConnectOptions as _, Connection as _, Database, Either, Execute};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// An idle connection is checked before reuse after this long (MariaDB's `wait_timeout`
/// or a firewall may have dropped it meanwhile).
const CHECK_AFTER_IDLE: Duration = Duration::from_secs(30);

/// A check (ping) that takes longer than this closes the connection instead.
const CHECK_TIMEOUT: Duration = Duration::from_secs(5);

/// Closing a connection (`COM_QUIT`) at pool close waits at most this long.
const CLOSE_TIMEOUT: Duration = Duration::from_secs(1);

/// The options a driver's connections are opened with.
type Options<DB> = <<DB as Database>::Connection as sqlx::Connection>::Options;

pub struct Pool<DB: Database> {
    shared: Arc<Shared<DB>>,
}

impl<DB: Database> Clone for Pool<DB> {
    fn clone(&self) -> Self {
        Pool {
            shared: Arc::clone(&self.shared),
        }
    }
}

impl<DB: Database> std::fmt::Debug for Pool<DB> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pool")
            .field("max_connections", &self.shared.max)
            .finish_non_exhaustive()
    }
}

struct Shared<DB: Database> {
    options: Options<DB>,
    idle: Mutex<Vec<Idle<DB>>>,
    permits: Arc<Semaphore>,
    max: usize,
    acquire_timeout: Duration,
}

struct Idle<DB: Database> {
    conn: DB::Connection,
    /// The last use ended cleanly: reusable without a round trip.
    clean: bool,
    since: Instant,
}

impl<DB: Database> Pool<DB> {
    /// Opens one connection at once, so that a wrong URL or password fails here.
    pub async fn connect(
        options: Options<DB>,
        max: usize,
        acquire_timeout: Duration,
    ) -> Result<Pool<DB>, sqlx::Error> {
        let max = max.max(1);
        let pool = Pool {
            shared: Arc::new(Shared {
                options,
                idle: Mutex::new(Vec::with_capacity(max)),
                permits: Arc::new(Semaphore::new(max)),
                max,
                acquire_timeout,
            }),
        };
        let first = pool.open().await?;
        pool.shared.idle_list().push(Idle {
            conn: first,
            clean: true,
            since: Instant::now(),
        });
        Ok(pool)
    }

    async fn open(&self) -> Result<DB::Connection, sqlx::Error> {
        self.shared.options.connect().await
    }

    /// A connection for one or more statements; back to the pool when dropped.
    pub async fn acquire(&self) -> Result<Conn<DB>, sqlx::Error> {
        let permits = Arc::clone(&self.shared.permits);
        let permit = tokio::time::timeout(self.shared.acquire_timeout, permits.acquire_owned())
            .await
            .map_err(|_| sqlx::Error::PoolTimedOut)?
            .map_err(|_| sqlx::Error::PoolClosed)?;
        loop {
            let idle = self.shared.idle_list().pop();
            let conn = match idle {
                None => self.open().await?,
                Some(idle) if idle.clean && idle.since.elapsed() < CHECK_AFTER_IDLE => idle.conn,
                Some(mut idle) => {
                    match tokio::time::timeout(CHECK_TIMEOUT, idle.conn.ping()).await {
                        Ok(Ok(())) => idle.conn,
                        Ok(Err(e)) => {
                            tracing::debug!(error = %e, "dropping a pooled connection that failed its check");
                            continue;
                        }
                        Err(_) => {
                            tracing::warn!(
                                "dropping a pooled connection that did not answer its check within {}s",
                                CHECK_TIMEOUT.as_secs()
                            );
                            continue;
                        }
                    }
                }
            };
            return Ok(Conn {
                conn: Some(conn),
                last_use: LastUse::Clean,
                in_transaction: false,
                shared: Arc::clone(&self.shared),
                _permit: permit,
            });
        }
    }

    /// Closes the idle connections and refuses new acquisitions.
    pub async fn close(&self) {
        self.shared.permits.close();
        let idle: Vec<Idle<DB>> = std::mem::take(&mut *self.shared.idle_list());
        for i in idle {
            let _ = tokio::time::timeout(CLOSE_TIMEOUT, i.conn.close()).await;
        }
    }
}

impl<DB: Database> Shared<DB> {
    fn idle_list(&self) -> std::sync::MutexGuard<'_, Vec<Idle<DB>>> {
        // A panic while the lock was held cannot leave the list inconsistent (push/pop).
        self.idle.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// A connection out of the [`Pool`]. Statements run through `&mut Conn` keep track of how
/// the connection's last use ended; raw access through `DerefMut`, and every statement
/// between [`Conn::hold_open`] and [`Conn::mark_clean`] (a transaction), count as a
/// statement in flight until `mark_clean` follows.
pub struct Conn<DB: Database> {
    conn: Option<DB::Connection>,
    last_use: LastUse,
    /// A transaction is open: a statement that ends does not make the connection clean.
    in_transaction: bool,
    shared: Arc<Shared<DB>>,
    _permit: OwnedSemaphorePermit,
}

/// How a connection's last use ended, which decides what happens when it goes back.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum LastUse {
    /// Read to its end: reusable without a round trip.
    Clean,
    /// The server answered with an error: checked before reuse.
    Failed,
    /// Begun and not ended. Dropped so, the statement was cancelled part-way: closed.
    InFlight,
    /// An I/O or protocol error: closed, and the idle connections checked before reuse.
    Broken,
}

impl LastUse {
    fn after_error(e: &sqlx::Error) -> LastUse {
        match e {
            sqlx::Error::Io(_)
            | sqlx::Error::Tls(_)
            | sqlx::Error::Protocol(_)
            | sqlx::Error::WorkerCrashed => LastUse::Broken,
            _ => LastUse::Failed,
        }
    }
}

impl<DB: Database> std::fmt::Debug for Conn<DB> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Conn")
            .field("last_use", &self.last_use)
            .finish()
    }
}

impl<DB: Database> Conn<DB> {
    /// The connection; `conn` is `Some` from acquisition until `Drop` takes it, so a `None`
    /// here is a bug of this module (the only `expect`s the service allows are here).
    #[allow(clippy::expect_used)]
    fn live(&self) -> &DB::Connection {
        self.conn.as_ref().expect("connection present until drop")
    }

    #[allow(clippy::expect_used)]
    fn live_mut(&mut self) -> &mut DB::Connection {
        self.conn.as_mut().expect("connection present until drop")
    }

    /// A transaction begins: until [`Conn::mark_clean`], statements that end leave the
    /// connection in flight, so one dropped part-way is closed, not reused.
    pub fn hold_open(&mut self) {
        self.in_transaction = true;
        self.begin_use();
    }

    /// After a transaction committed (or rolled back): the connection is reusable as is.
    pub fn mark_clean(&mut self) {
        self.in_transaction = false;
        if self.last_use != LastUse::Broken {
            self.last_use = LastUse::Clean;
        }
    }

    /// Starts a use; a broken connection stays broken.
    fn begin_use(&mut self) -> &mut DB::Connection {
        if self.last_use != LastUse::Broken {
            self.last_use = LastUse::InFlight;
        }
        self.live_mut()
    }

    /// The connection and its outcome slot, borrowed apart (see [`Conn::live`]).
    #[allow(clippy::expect_used)]
    fn parts(&mut self) -> (&mut DB::Connection, Outcome<'_>) {
        self.begin_use();
        let conn = self.conn.as_mut().expect("connection present until drop");
        (
            conn,
            Outcome {
                last_use: &mut self.last_use,
                in_transaction: self.in_transaction,
            },
        )
    }
}

impl<DB: Database> Deref for Conn<DB> {
    type Target = DB::Connection;
    fn deref(&self) -> &DB::Connection {
        self.live()
    }
}

impl<DB: Database> DerefMut for Conn<DB> {
    fn deref_mut(&mut self) -> &mut DB::Connection {
        // Until `mark_clean`: a transaction dropped part-way closes the connection.
        self.begin_use()
    }
}

impl<DB: Database> Drop for Conn<DB> {
    fn drop(&mut self) {
        let Some(conn) = self.conn.take() else { return };
        if self.shared.permits.is_closed() {
            return; // the pool is closed: the connection goes with this guard
        }
        let clean = match self.last_use {
            LastUse::Clean => true,
            LastUse::Failed => false,
            LastUse::InFlight => {
                tracing::debug!("closing a connection whose statement was cancelled part-way");
                return; // dropped: the socket closes, the server rolls back what was open
            }
            LastUse::Broken => {
                // The server or the network cut this one; the idle ones may be cut as well.
                for i in self.shared.idle_list().iter_mut() {
                    i.clean = false;
                }
                return;
            }
        };
        self.shared.idle_list().push(Idle {
            conn,
            clean,
            since: Instant::now(),
        });
    }
}

/// Where a statement reports how it ended.
struct Outcome<'a> {
    last_use: &'a mut LastUse,
    /// Inside a transaction a statement's end is not the end of the use.
    in_transaction: bool,
}

impl Outcome<'_> {
    /// The statement ended (with its result read to the end, or with an error).
    fn record<T>(&mut self, r: &Result<T, sqlx::Error>) {
        match r {
            Ok(_) => self.succeeded(),
            Err(e) => self.failed(e),
        }
    }

    fn succeeded(&mut self) {
        if *self.last_use != LastUse::Broken && !self.in_transaction {
            *self.last_use = LastUse::Clean;
        }
    }

    fn failed(&mut self, e: &sqlx::Error) {
        match LastUse::after_error(e) {
            LastUse::Broken => *self.last_use = LastUse::Broken,
            // The transaction is still open on the server: not reusable until it ends.
            _ if self.in_transaction => {}
            after => {
                if *self.last_use != LastUse::Broken {
                    *self.last_use = after;
                }
            }
        }
    }
}

/// A statement's result stream that records whether it was read to its end without error.
struct Tracked<'e, S> {
    inner: S,
    outcome: Outcome<'e>,
    failed: bool,
}

impl<S, T> Stream for Tracked<'_, S>
where
    S: Stream<Item = Result<T, sqlx::Error>> + Unpin,
{
    type Item = Result<T, sqlx::Error>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = &mut *self;
        let item = this.inner.poll_next_unpin(cx);
        match &item {
            Poll::Ready(Some(Err(e))) => {
                this.failed = true;
                this.outcome.failed(e);
            }
            Poll::Ready(None) if !this.failed => this.outcome.succeeded(),
            _ => {}
        }
        item
    }
}

impl<'c, DB: Database> sqlx::Executor<'c> for &'c mut Conn<DB>
where
    for<'a> &'a mut DB::Connection: sqlx::Executor<'a, Database = DB>,
{
    type Database = DB;

    fn fetch_many<'e, 'q: 'e, E>(
        self,
        query: E,
    ) -> BoxStream<'e, Result<Either<DB::QueryResult, DB::Row>, sqlx::Error>>
    where
        'c: 'e,
        E: 'q + Execute<'q, DB>,
    {
        let (conn, outcome) = self.parts();
        Tracked {
            inner: conn.fetch_many(query),
            outcome,
            failed: false,
        }
        .boxed()
    }

    fn fetch_optional<'e, 'q: 'e, E>(
        self,
        query: E,
    ) -> BoxFuture<'e, Result<Option<DB::Row>, sqlx::Error>>
    where
        'c: 'e,
        E: 'q + Execute<'q, DB>,
    {
        let (conn, mut outcome) = self.parts();
        async move {
            let r = conn.fetch_optional(query).await;
            outcome.record(&r);
            r
        }
        .boxed()
    }

    fn prepare_with<'e, 'q: 'e>(
        self,
        sql: &'q str,
        parameters: &'e [DB::TypeInfo],
    ) -> BoxFuture<'e, Result<DB::Statement<'q>, sqlx::Error>>
    where
        'c: 'e,
    {
        let (conn, mut outcome) = self.parts();
        async move {
            let r = conn.prepare_with(sql, parameters).await;
            outcome.record(&r);
            r
        }
        .boxed()
    }

    fn describe<'e, 'q: 'e>(
        self,
        sql: &'q str,
    ) -> BoxFuture<'e, Result<sqlx::Describe<DB>, sqlx::Error>>
    where
        'c: 'e,
    {
        let (conn, mut outcome) = self.parts();
        async move {
            let r = conn.describe(sql).await;
            outcome.record(&r);
            r
        }
        .boxed()
    }
}
