//! The rows of `magnum_rs_operation`: the statements that insert one, move one from state to
//! state, and read them back as [`Operation`]s. Shared by the queue ([`super::operations`])
//! and by batches ([`super::batch`]), which record and end operations with other writes.

use chrono::NaiveDateTime;

use super::{now, stmt, Bind, Conn};
use crate::operation::{NewOperation, OpPayload, OpState, Operation};

const OP_INSERT: &str = "INSERT INTO magnum_rs_operation \
    (kind, cluster_uuid, nodegroup_uuid, old_count, new_count, payload, state, attempts, created_at) \
    VALUES (?, ?, ?, ?, ?, ?, ?, 0, ?)";

/// The values of [`OP_INSERT`]'s columns for `op` in `state`, created `at`.
fn insert_binds(op: &NewOperation, state: OpState, at: &str) -> Vec<Bind> {
    vec![
        Bind::text(op.payload.kind().as_str()),
        Bind::text(&op.cluster_uuid),
        Bind::Text(op.nodegroup_uuid.clone()),
        Bind::Int(op.old_count),
        Bind::Int(op.new_count),
        Bind::Text(Some(op.payload.to_stored())),
        Bind::text(state.as_str()),
        Bind::text(at),
    ]
}

pub(crate) async fn insert_operation(
    conn: &mut Conn,
    op: &NewOperation,
) -> Result<(), sqlx::Error> {
    let binds = insert_binds(op, OpState::Pending, &now());
    stmt(OP_INSERT).bind_all(binds).execute(conn).await?;
    Ok(())
}

/// A row of `magnum_rs_operation` as [`OP_COLUMNS`] reads it.
#[derive(sqlx::FromRow)]
struct OperationRow {
    id: i64,
    kind: String,
    cluster_uuid: String,
    nodegroup_uuid: Option<String>,
    old_count: Option<i64>,
    new_count: Option<i64>,
    payload: Option<String>,
    state: String,
    attempts: i64,
    wait_object: Option<String>,
    wait_generation: Option<i64>,
    started_at: Option<NaiveDateTime>,
    deadline_at: Option<NaiveDateTime>,
    progress: Option<String>,
    retry_since: Option<NaiveDateTime>,
}

impl TryFrom<OperationRow> for Operation {
    type Error = sqlx::Error;

    fn try_from(r: OperationRow) -> Result<Self, sqlx::Error> {
        Ok(Operation {
            id: r.id,
            cluster_uuid: r.cluster_uuid,
            nodegroup_uuid: r.nodegroup_uuid,
            old_count: r.old_count,
            new_count: r.new_count,
            payload: OpPayload::from_stored(&r.kind, r.payload.as_deref())
                .map_err(|e| sqlx::Error::Decode(e.into()))?,
            state: OpState::parse(&r.state).ok_or_else(|| {
                sqlx::Error::Decode(format!("unknown operation state {}", r.state).into())
            })?,
            attempts: r.attempts,
            wait_object: r.wait_object,
            wait_generation: r.wait_generation,
            started_at: r.started_at,
            deadline_at: r.deadline_at,
            progress: r.progress,
            retry_since: r.retry_since,
        })
    }
}

/// The operations `sql` selects ([`OP_COLUMNS`]).
pub(crate) async fn operations(
    sql: String,
    binds: Vec<Bind>,
    conn: &mut Conn,
) -> Result<Vec<Operation>, sqlx::Error> {
    let rows: Vec<OperationRow> = stmt(sql).bind_all(binds).fetch_all(conn).await?;
    rows.into_iter().map(Operation::try_from).collect()
}

pub(crate) async fn transition_on(
    conn: &mut Conn,
    id: i64,
    from: OpState,
    to: OpState,
    error: Option<&str>,
) -> Result<bool, sqlx::Error> {
    let r = stmt(
        "UPDATE magnum_rs_operation SET state = ?, last_error = ?, attempts = attempts + ?, \
         updated_at = ? WHERE id = ? AND state = ?",
    )
    .bind(to.as_str())
    .bind(error.map(str::to_string))
    .bind(i64::from(to == OpState::Running))
    .bind(now())
    .bind(id)
    .bind(from.as_str())
    .execute(conn)
    .await?;
    Ok(r.rows_affected() == 1)
}

pub(crate) const OP_COLUMNS: &str =
    "id, kind, cluster_uuid, nodegroup_uuid, old_count, new_count, payload, state, attempts, \
     wait_object, wait_generation, started_at, deadline_at, progress, retry_since";

/// Records an operation already waiting for the backend (work another conductor began,
/// adopted): what it waits for, its start and its deadline, as [`super::Store::start_waiting`]
/// writes them for an operation the driver started.
pub(crate) async fn insert_waiting(
    conn: &mut Conn,
    op: &NewOperation,
    wait: &crate::operation::Wait,
) -> Result<(), sqlx::Error> {
    let at = now();
    let mut binds = insert_binds(op, OpState::Waiting, &at);
    binds.extend([
        Bind::text(wait.object.as_str()),
        Bind::Int(wait.generation),
        Bind::text(at.clone()),
        Bind::text(super::operations::from_now(wait.deadline_seconds)),
        Bind::text(at),
    ]);
    stmt(
        "INSERT INTO magnum_rs_operation (kind, cluster_uuid, nodegroup_uuid, old_count, \
         new_count, payload, state, attempts, created_at, wait_object, wait_generation, \
         started_at, deadline_at, progress_at) VALUES (?, ?, ?, ?, ?, ?, ?, 0, ?, ?, ?, ?, ?, ?)",
    )
    .bind_all(binds)
    .execute(conn)
    .await?;
    Ok(())
}
