//! The conductor's cert manager at a cluster create, before the driver's own create, as
//! Magnum's `cluster_conductor.cluster_create` calls `generate_certificates_to_cluster`
//! whatever the driver: the cluster CA, the etcd and front-proxy CAs and the conductor's
//! client certificate ([`crate::certificates`]), stored with the cluster's refs in one
//! transaction ([`crate::store::x509keypairs`]). A create that runs again (after a crash)
//! keeps what it made first. And the CA's signing of a client's request
//! ([`sign_with_stored`]), the conductor's `sign_certificate`.

use futures::StreamExt as _;

use super::Conductor;
use crate::certificates::{
    cluster_certificates, decrypt_private_key, ClusterCas, OpenedKeyPair, RSA_KEY_BITS,
};
use crate::drivers::signing::CertificateAuthority;
use crate::drivers::Refusal;
use crate::model::{Cluster, Status, Tenancy};
use crate::operation::Operation;
use crate::store::x509keypairs::{CertKind, NewCertificates, StoredKeyPair};
use crate::store::{Batch, Guard, Refused};

/// Where the create's certificates stand.
#[derive(Debug, PartialEq, Eq)]
pub enum Made {
    /// Stored (now or by an earlier run).
    Ready,
    /// The cluster was deleted meanwhile.
    ClusterGone,
    /// The cluster is being deleted: the delete that follows the create would remove what
    /// it made, so nothing is made.
    Deleting,
    /// They could not be made: the create fails with this reason (Magnum's
    /// `CertificatesToClusterFailed`).
    Failed(String),
}

/// Makes the certificates of the claimed batch's creates side by side, as many at once as
/// the machine has cores: four RSA keys cost about 0.35 s of CPU per cluster, and the
/// worker runs its batch one operation at a time. What fails here is left to the create
/// itself, which asks again ([`ensure_for_create`]) and finds them made.
pub async fn prepare(state: &Conductor, creates: &[&Operation]) {
    let at_once = std::thread::available_parallelism().map_or(1, |n| n.get());
    futures::stream::iter(creates)
        .for_each_concurrent(at_once, |op| async move {
            let made = match state.store.cluster_by_uuid(&op.cluster_uuid).await {
                Ok(Some(cluster)) => ensure_for_create(state, &cluster).await,
                Ok(None) => return,
                Err(e) => Err(e),
            };
            if let Err(e) = made {
                tracing::warn!(operation = op.id, error = %e, "certificates not prepared; the create makes them");
            }
        })
        .await;
}

/// Makes and stores the cluster's certificates unless it has them.
pub async fn ensure_for_create(state: &Conductor, cluster: &Cluster) -> Result<Made, sqlx::Error> {
    let uuid = &cluster.uuid;
    if cluster.status.as_deref() == Some(Status::DeleteInProgress.as_str()) {
        return Ok(Made::Deleting);
    }
    if state
        .store
        .cluster_certificate(uuid, CertKind::Ca)
        .await?
        .is_some()
    {
        return Ok(Made::Ready);
    }
    // Magnum's `_get_issuer_name`: the cluster's name, its uuid when it has none.
    let issuer = cluster.name.clone().unwrap_or_else(|| uuid.clone());
    let generated =
        tokio::task::spawn_blocking(move || cluster_certificates(&issuer, RSA_KEY_BITS)).await;
    let certs = match generated {
        Ok(Ok(c)) => c,
        Ok(Err(e)) => {
            tracing::error!(cluster = %uuid, error = %e, "cannot generate the cluster's certificates");
            return Ok(Made::Failed(failed(uuid)));
        }
        Err(e) => {
            tracing::error!(cluster = %uuid, error = %e, "certificate generation did not finish");
            return Ok(Made::Failed(failed(uuid)));
        }
    };
    let new = NewCertificates::new(
        uuid,
        cluster.project_id.clone(),
        cluster.user_id.clone(),
        certs,
    );
    let batch = Batch::default()
        .guard(Guard::cluster(uuid, Tenancy::All))
        .certificates(new);
    Ok(match state.store.commit(batch).await? {
        Ok(_) => Made::Ready,
        Err(Refused::ClusterGone) => Made::ClusterGone,
        Err(other) => {
            tracing::error!(cluster = %uuid, refused = ?other, "cannot store the cluster's certificates");
            Made::Failed(failed(uuid))
        }
    })
}

/// The cluster's stored CAs and service-account key pair opened for its driver (the
/// ClusterAPI driver writes them where kubeadm's control plane reads them): `Ok(None)` when
/// it has none stored, `Err` with the create's failure reason when a key cannot be opened.
pub async fn opened_for_driver(
    state: &Conductor,
    cluster_uuid: &str,
) -> Result<Result<Option<ClusterCas>, String>, sqlx::Error> {
    let open = |kind| opened(state, cluster_uuid, kind);
    let cas = async {
        Ok::<_, Opening>(ClusterCas {
            ca: open(CertKind::Ca).await?,
            etcd_ca: open(CertKind::EtcdCa).await?,
            front_proxy_ca: open(CertKind::FrontProxyCa).await?,
            service_account: open(CertKind::MagnumClient).await?,
        })
    }
    .await;
    match cas {
        Ok(cas) => Ok(Ok(Some(cas))),
        Err(Opening::Missing) => Ok(Ok(None)),
        Err(Opening::Unreadable) => Ok(Err(failed(cluster_uuid))),
        Err(Opening::Database(e)) => Err(e),
    }
}

/// Why one stored key pair could not be opened.
enum Opening {
    Missing,
    Unreadable,
    Database(sqlx::Error),
}

async fn opened(
    state: &Conductor,
    cluster_uuid: &str,
    kind: CertKind,
) -> Result<OpenedKeyPair, Opening> {
    let stored = state
        .store
        .cluster_certificate(cluster_uuid, kind)
        .await
        .map_err(Opening::Database)?
        .ok_or(Opening::Missing)?;
    let private_key = decrypt_private_key(&stored.private_key, stored.passphrase.as_deref())
        .map_err(|e| {
            tracing::error!(cluster = cluster_uuid, certificate = %stored.uuid, error = %e, "cannot open a stored key");
            Opening::Unreadable
        })?;
    Ok(OpenedKeyPair {
        certificate: stored.certificate,
        private_key,
    })
}

/// Magnum's `CertificatesToClusterFailed` text.
fn failed(cluster_uuid: &str) -> String {
    format!("Failed to create certificates for Cluster: {cluster_uuid}")
}

/// `csr` signed by a stored CA, as Magnum's `sign_node_certificate` signs with the CA its
/// cert manager keeps (the key opened with its passphrase).
pub fn sign_with_stored(
    ca: &StoredKeyPair,
    cluster_uuid: &str,
    csr: &str,
) -> Result<String, Refusal> {
    let key = decrypt_private_key(&ca.private_key, ca.passphrase.as_deref()).map_err(|e| {
        tracing::warn!(cluster = cluster_uuid, error = %e, "cannot open the cluster CA's key");
        Refusal::CaCannotSign(cluster_uuid.into())
    })?;
    CertificateAuthority {
        cert_pem: &ca.certificate,
        key_pem: &key,
    }
    .sign_for_cluster(cluster_uuid, csr)
}
