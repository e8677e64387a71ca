//! `magnum_rs_cluster_credential`: a cluster's application credential, and before it is
//! made, the creating request's token that makes it. The API writes the token in the
//! batch that inserts the cluster ([`super::Batch::keep_token_for_credential`]); the worker
//! stores the credential and clears the token in one statement
//! ([`Store::store_credential`]); the row goes with the cluster's.

use super::{stmt, Store};
use crate::secret::Secret;

/// What is kept for a cluster's credential.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CredentialRow {
    /// Not made yet: the creating user's token, and when it expires (RFC 3339).
    Token {
        token: Secret,
        expires_at: Option<String>,
    },
    /// Made: Keystone's id and the secret it showed once.
    Made { id: String, secret: Secret },
    /// Neither (the token was cleared without a credential stored: never written so).
    Empty,
}

/// The request's token for the cluster's credential (a step of the create's batch).
#[derive(Clone, Debug)]
pub struct KeptToken {
    pub cluster_uuid: String,
    pub token: Secret,
    pub expires_at: Option<String>,
}

pub(crate) async fn insert_token_on(
    tx: &mut super::Conn,
    kept: &KeptToken,
    written: &str,
) -> Result<(), sqlx::Error> {
    stmt(
        "INSERT INTO magnum_rs_cluster_credential \
         (cluster_uuid, user_token, token_expires_at, created_at) VALUES (?, ?, ?, ?)",
    )
    .bind(kept.cluster_uuid.as_str())
    .bind(kept.token.expose())
    .bind(kept.expires_at.clone())
    .bind(written.to_string())
    .execute(&mut *tx)
    .await?;
    Ok(())
}

const CLEAR_TOKEN: &str = "UPDATE magnum_rs_cluster_credential SET user_token = NULL, \
                           token_expires_at = NULL WHERE cluster_uuid = ?";

/// Clears the kept token (inside the batch that fails the create).
pub(crate) async fn clear_token_on(
    tx: &mut super::Conn,
    cluster_uuid: &str,
) -> Result<(), sqlx::Error> {
    stmt(CLEAR_TOKEN)
        .bind(cluster_uuid)
        .execute(&mut *tx)
        .await?;
    Ok(())
}

/// Deletes the cluster's row (inside the batch that deletes the cluster's).
pub(crate) async fn delete_credential_on(
    tx: &mut super::Conn,
    cluster_uuid: &str,
) -> Result<(), sqlx::Error> {
    stmt("DELETE FROM magnum_rs_cluster_credential WHERE cluster_uuid = ?")
        .bind(cluster_uuid)
        .execute(&mut *tx)
        .await?;
    Ok(())
}

type Row = (
    Option<String>,
    Option<String>,
    Option<String>,
    Option<String>,
);

impl Store {
    /// What is kept for the cluster's credential; `None` when nothing is (the cluster was
    /// created without one: noauth, or a driver that needs none).
    pub async fn cluster_credential(
        &self,
        cluster_uuid: &str,
    ) -> Result<Option<CredentialRow>, sqlx::Error> {
        let row: Option<Row> = stmt(
            "SELECT user_token, token_expires_at, credential_id, credential_secret \
             FROM magnum_rs_cluster_credential WHERE cluster_uuid = ?",
        )
        .bind(cluster_uuid)
        .fetch_optional(&mut self.conn().await?)
        .await?;
        Ok(row.map(
            |(token, expires_at, id, secret)| match (id, secret, token) {
                (Some(id), Some(secret), _) => CredentialRow::Made {
                    id,
                    secret: Secret::new(secret),
                },
                (_, _, Some(token)) => CredentialRow::Token {
                    token: Secret::new(token),
                    expires_at,
                },
                _ => CredentialRow::Empty,
            },
        ))
    }

    /// Stores the made credential and clears the token, in one statement: a crash leaves
    /// either the token (the credential is made again) or the credential, never both.
    /// False when the row is gone (the cluster was deleted meanwhile).
    pub async fn store_credential(
        &self,
        cluster_uuid: &str,
        id: &str,
        secret: &Secret,
    ) -> Result<bool, sqlx::Error> {
        let done = stmt(
            "UPDATE magnum_rs_cluster_credential SET credential_id = ?, credential_secret = ?, \
             user_token = NULL, token_expires_at = NULL WHERE cluster_uuid = ?",
        )
        .bind(id)
        .bind(secret.expose())
        .bind(cluster_uuid)
        .execute(&mut self.conn().await?)
        .await?;
        Ok(done.rows_affected() == 1)
    }

    /// Clears the token of a create that failed before it made the credential (nothing
    /// kept outlives its use).
    pub async fn clear_credential_token(&self, cluster_uuid: &str) -> Result<(), sqlx::Error> {
        stmt(CLEAR_TOKEN)
            .bind(cluster_uuid)
            .execute(&mut self.conn().await?)
            .await?;
        Ok(())
    }
}
