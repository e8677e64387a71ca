//! Creating the schema: Magnum's tables on an empty database, magnum-rs's own side tables
//! everywhere, and a refusal to touch a Magnum-owned database that is not at the head
//! revision magnum-rs understands.

use sqlx::migrate::Migrator;

use super::{stmt, Conn, Dialect, Store};

/// The alembic revision whose schema magnum-rs reads and writes.
pub const MAGNUM_ALEMBIC_HEAD: &str = "b3e1cf4a2d5e";

static SQLITE_SCHEMA: Migrator = sqlx::migrate!("migrations/sqlite/schema");
static SQLITE_SIDECAR: Migrator = sqlx::migrate!("migrations/sqlite/sidecar");
static MYSQL_SCHEMA: Migrator = sqlx::migrate!("migrations/mysql/schema");
static MYSQL_SIDECAR: Migrator = sqlx::migrate!("migrations/mysql/sidecar");

/// What `migrate` found and did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum MigrateOutcome {
    /// The database was empty (or ours): Magnum's tables and ours are in place.
    OwnSchema,
    /// Magnum's own migrations made these tables; only magnum-rs's side tables were added.
    MagnumOwned,
}

#[derive(Debug, thiserror::Error)]
pub enum MigrateError {
    #[error(
        "this database was created by Magnum and is at alembic revision {found}; magnum-rs \
         works on revision {MAGNUM_ALEMBIC_HEAD} and never alters Magnum's tables itself. \
         Run `magnum-db-manage upgrade` from Magnum 23 first."
    )]
    MagnumRevisionMismatch { found: String },
    #[error(
        "this database has Magnum's tables but no alembic_version table; refusing to alter \
         a schema magnum-rs did not create"
    )]
    UnknownOwner,
    #[error(transparent)]
    Migrate(#[from] sqlx::migrate::MigrateError),
    #[error(transparent)]
    Sql(#[from] sqlx::Error),
}

/// Copies a static migrator with `ignore_missing`: the schema and side-table sets share
/// sqlx's bookkeeping table, so each must tolerate the other's applied versions.
fn tolerant(m: &'static Migrator) -> Migrator {
    Migrator {
        migrations: m.migrations.clone(),
        ignore_missing: true,
        locking: m.locking,
        no_tx: m.no_tx,
    }
}

impl Store {
    async fn table_exists(&self, table: &str) -> Result<bool, sqlx::Error> {
        let sql = match self.dialect() {
            Dialect::Sqlite => {
                "SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name = ?"
            }
            Dialect::Mysql => {
                "SELECT COUNT(*) FROM information_schema.tables \
                 WHERE table_schema = DATABASE() AND table_name = ?"
            }
        };
        let n: i64 = stmt(sql)
            .bind(table)
            .scalar(&mut self.conn().await?)
            .await?;
        Ok(n > 0)
    }

    /// Whether our schema migration (version 1) is recorded.
    async fn schema_is_ours(&self) -> Result<bool, sqlx::Error> {
        if !self.table_exists("_sqlx_migrations").await? {
            return Ok(false);
        }
        let n: i64 =
            stmt("SELECT COUNT(*) FROM _sqlx_migrations WHERE version = 1 AND success = 1")
                .scalar(&mut self.conn().await?)
                .await?;
        Ok(n > 0)
    }

    /// Brings the database to the schema magnum-rs needs (idempotent).
    pub async fn migrate(&self) -> Result<MigrateOutcome, MigrateError> {
        let (schema, sidecar) = match self.dialect() {
            Dialect::Sqlite => (&SQLITE_SCHEMA, &SQLITE_SIDECAR),
            Dialect::Mysql => (&MYSQL_SCHEMA, &MYSQL_SIDECAR),
        };
        let magnum_tables = self.table_exists("cluster").await?;
        let outcome = if magnum_tables && !self.schema_is_ours().await? {
            if !self.table_exists("alembic_version").await? {
                return Err(MigrateError::UnknownOwner);
            }
            let found: Option<String> = stmt("SELECT version_num FROM alembic_version")
                .scalar_optional(&mut self.conn().await?)
                .await?;
            let found = found.unwrap_or_default();
            if found != MAGNUM_ALEMBIC_HEAD {
                return Err(MigrateError::MagnumRevisionMismatch { found });
            }
            MigrateOutcome::MagnumOwned
        } else {
            self.run_migrations(schema).await?;
            MigrateOutcome::OwnSchema
        };
        self.run_migrations(sidecar).await?;
        Ok(outcome)
    }

    /// Applies a migration set on a connection of the store's driver.
    async fn run_migrations(&self, set: &'static Migrator) -> Result<(), MigrateError> {
        let mut conn = self.conn().await?;
        match &mut conn {
            Conn::Sqlite(c) => tolerant(set).run(&mut **c).await?,
            Conn::Mysql(c) => tolerant(set).run(&mut **c).await?,
        }
        conn.mark_clean();
        Ok(())
    }
}
