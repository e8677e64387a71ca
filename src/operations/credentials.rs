//! A cluster's application credential, made before its create reaches a driver that asks
//! for one (magnum-cluster-api makes it first thing in `create_cluster`): with the
//! creating user's token the API kept, named after the cluster, for `cluster.user_id`.
//!
//! Crash-safe by the store: the credential and the token are swapped in one statement
//! ([`Store::store_credential`](crate::store::Store::store_credential)). A run that finds
//! the token still kept may have made a credential before a crash; it deletes any of the
//! cluster's name first, so what is stored is the one credential Keystone has.

use super::Conductor;
use crate::drivers::Driver;
use crate::model::Cluster;
use crate::openstack::application_credentials::{self, MadeCredential};
use crate::openstack::lookups::LookupError;
use crate::openstack::CloudAccess;
use crate::secret::Secret;
use crate::store::cluster_credentials::CredentialRow;

/// Where the cluster's credential stands.
#[derive(Debug)]
pub enum Credential {
    /// The driver needs none, or the cluster was created without a token to make one
    /// (noauth mode then).
    NotNeeded,
    Ready(MadeCredential),
    /// It cannot be made: the create fails with this reason.
    Failed(String),
    /// Keystone could not be asked now: the create is tried again later.
    Unavailable(String),
    /// The cluster was deleted meanwhile.
    ClusterGone,
}

/// The cluster's credential: the stored one, else one made now with the kept token.
pub async fn ensure_for_create(
    state: &Conductor,
    cluster: &Cluster,
    driver: &dyn Driver,
) -> Result<Credential, sqlx::Error> {
    let Some(access) = state
        .cloud
        .as_ref()
        .filter(|_| driver.uses_cloud_credential())
    else {
        return Ok(Credential::NotNeeded);
    };
    let (token, expires_at) = match state.store.cluster_credential(&cluster.uuid).await? {
        None => return Ok(Credential::NotNeeded),
        Some(CredentialRow::Made { id, secret }) => {
            return Ok(Credential::Ready(MadeCredential { id, secret }))
        }
        Some(CredentialRow::Empty) => {
            return Ok(Credential::Failed(
                "the cluster's application credential was not kept".into(),
            ))
        }
        Some(CredentialRow::Token { token, expires_at }) => (token, expires_at),
    };
    if expired(expires_at.as_deref()) {
        state.store.clear_credential_token(&cluster.uuid).await?;
        return Ok(Credential::Failed(EXPIRED.into()));
    }
    let made = match make(access, cluster, token).await {
        Ok(made) => made,
        Err(LookupError::Unavailable(why)) => {
            return Ok(Credential::Unavailable(format!(
                "cannot make the cluster's application credential: {why}"
            )))
        }
        Err(e) => {
            state.store.clear_credential_token(&cluster.uuid).await?;
            return Ok(Credential::Failed(refused(&e)));
        }
    };
    crate::failpoint::hit("credential-made");
    if !state
        .store
        .store_credential(&cluster.uuid, &made.id, &made.secret)
        .await?
    {
        return Ok(Credential::ClusterGone);
    }
    tracing::info!(cluster = %cluster.uuid, credential = %made.id, "application credential made");
    Ok(Credential::Ready(made))
}

const EXPIRED: &str = "the requesting user's token expired before the cluster's \
                       application credential could be made; create the cluster again";

/// Whether a token that expires at `at` (RFC 3339) is of no use any more (a minute's
/// margin for the calls it still has to make).
fn expired(at: Option<&str>) -> bool {
    at.and_then(|t| chrono::DateTime::parse_from_rfc3339(t).ok())
        .is_some_and(|t| {
            t.with_timezone(&chrono::Utc) <= chrono::Utc::now() + chrono::Duration::minutes(1)
        })
}

fn refused(e: &LookupError) -> String {
    match e {
        LookupError::Forbidden => format!(
            "Keystone refused to make the cluster's application credential with the \
             requesting user's token ({e}): {EXPIRED_OR_REVOKED}"
        ),
        other => format!("cannot make the cluster's application credential: {other}"),
    }
}

const EXPIRED_OR_REVOKED: &str = "it may have expired or been revoked";

/// Deletes a credential of the cluster's name a run before a crash may have made, then
/// makes it, as the cluster's user.
async fn make(
    access: &CloudAccess,
    cluster: &Cluster,
    token: Secret,
) -> Result<MadeCredential, LookupError> {
    let user = cluster.user_id.as_deref().unwrap_or_default();
    let caller = access.as_token(token).await?;
    let session = caller.session(&access.cloud);
    application_credentials::delete(&session, user, &cluster.uuid).await?;
    application_credentials::create(
        &session,
        user,
        &cluster.uuid,
        &application_credentials::description(&cluster.uuid),
    )
    .await
}

#[cfg(test)]
mod tests {
    use super::expired;

    #[test]
    fn a_token_is_expired_within_a_minute_of_its_end_and_never_without_one() {
        let at = |mins: i64| (chrono::Utc::now() + chrono::Duration::minutes(mins)).to_rfc3339();
        assert!(expired(Some(&at(-5))));
        assert!(expired(Some(&at(0))));
        assert!(!expired(Some(&at(30))));
        assert!(!expired(None));
        assert!(!expired(Some("not a time")));
    }
}
