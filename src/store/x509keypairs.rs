//! `x509keypair` rows: a cluster's CAs and its client certificate, as Magnum's x509keypair
//! cert manager stores them (`common/cert_manager/x509keypair_cert_manager.py`): the
//! certificate, the encrypted private key and its passphrase, the project and user. The
//! cluster's `ca_cert_ref`, `etcd_ca_cert_ref`, `front_proxy_ca_cert_ref` and
//! `magnum_cert_ref` name them by uuid. Written with the refs in one batch
//! ([`super::Batch::certificates`]); read by the cluster and the CA's kind; deleted with
//! the cluster.

use super::schema::{select_from, X509KeyPairCol, X509KeyPairRow};
use super::{stmt, Store};
use crate::certificates::{CaType, ClusterCertificates, KeyPairPem};

/// Which of a cluster's certificates (Magnum's `ca_cert_type`, and the client's).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CertKind {
    /// `kubernetes` (the default): `ca_cert_ref`.
    Ca,
    /// `etcd`: `etcd_ca_cert_ref`.
    EtcdCa,
    /// `front_proxy` / `front-proxy`: `front_proxy_ca_cert_ref`.
    FrontProxyCa,
    /// The conductor's client certificate: `magnum_cert_ref`.
    MagnumClient,
}

impl CertKind {
    /// The CA a request's `ca_cert_type` names ([`CaType`]).
    pub fn for_ca_cert_type(ca_cert_type: Option<&str>) -> CertKind {
        match CaType::of(ca_cert_type) {
            CaType::Etcd => CertKind::EtcdCa,
            CaType::FrontProxy => CertKind::FrontProxyCa,
            CaType::Kubernetes => CertKind::Ca,
        }
    }

    fn column(self) -> &'static str {
        match self {
            CertKind::Ca => "ca_cert_ref",
            CertKind::EtcdCa => "etcd_ca_cert_ref",
            CertKind::FrontProxyCa => "front_proxy_ca_cert_ref",
            CertKind::MagnumClient => "magnum_cert_ref",
        }
    }
}

/// One stored certificate with its key (the key as stored: encrypted when it has a
/// passphrase).
#[derive(Clone, PartialEq, Eq)]
pub struct StoredKeyPair {
    pub uuid: String,
    pub certificate: String,
    pub private_key: String,
    pub passphrase: Option<String>,
    pub intermediates: Option<String>,
    pub project_id: Option<String>,
    pub user_id: Option<String>,
}

impl std::fmt::Debug for StoredKeyPair {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StoredKeyPair")
            .field("uuid", &self.uuid)
            .finish_non_exhaustive()
    }
}

/// The rows a cluster create writes, with their new uuids.
#[derive(Clone, Debug)]
pub struct NewCertificates {
    pub cluster_uuid: String,
    pub project_id: Option<String>,
    pub user_id: Option<String>,
    /// In [`CertKind`] order: CA, etcd CA, front-proxy CA, client.
    pub rows: [(CertKind, String, KeyPairPem); 4],
}

impl NewCertificates {
    pub fn new(
        cluster_uuid: &str,
        project_id: Option<String>,
        user_id: Option<String>,
        c: ClusterCertificates,
    ) -> Self {
        let id = || uuid::Uuid::new_v4().to_string();
        NewCertificates {
            cluster_uuid: cluster_uuid.to_string(),
            project_id,
            user_id,
            rows: [
                (CertKind::Ca, id(), c.ca),
                (CertKind::EtcdCa, id(), c.etcd_ca),
                (CertKind::FrontProxyCa, id(), c.front_proxy_ca),
                (CertKind::MagnumClient, id(), c.magnum_client),
            ],
        }
    }
}

/// Inserts the rows and sets the cluster's refs, unless it has a CA already (a create
/// that ran again after a crash keeps what it made first). Runs inside a batch.
pub(crate) async fn insert_certificates_on(
    tx: &mut super::Conn,
    new: &NewCertificates,
    written: &str,
) -> Result<(), sqlx::Error> {
    let existing: Option<Option<String>> = stmt("SELECT ca_cert_ref FROM cluster WHERE uuid = ?")
        .bind(new.cluster_uuid.as_str())
        .scalar_optional(&mut *tx)
        .await?;
    match existing {
        // Gone, or made already.
        None | Some(Some(_)) => return Ok(()),
        Some(None) => {}
    }
    for (_, uuid, kp) in &new.rows {
        stmt(
            "INSERT INTO x509keypair (created_at, uuid, certificate, private_key, project_id, \
             user_id, intermediates, private_key_passphrase) VALUES (?, ?, ?, ?, ?, ?, NULL, ?)",
        )
        .bind(written.to_string())
        .bind(uuid.clone())
        .bind(kp.certificate.clone())
        .bind(kp.private_key.clone())
        .bind(new.project_id.clone())
        .bind(new.user_id.clone())
        .bind(kp.passphrase.clone())
        .execute(&mut *tx)
        .await?;
    }
    let sets = new
        .rows
        .iter()
        .map(|(kind, _, _)| format!("{} = ?", kind.column()))
        .collect::<Vec<_>>()
        .join(", ");
    let mut update = stmt(format!(
        "UPDATE cluster SET {sets}, updated_at = ? WHERE uuid = ? AND ca_cert_ref IS NULL"
    ));
    for (_, uuid, _) in &new.rows {
        update = update.bind(uuid.clone());
    }
    update
        .bind(written.to_string())
        .bind(new.cluster_uuid.as_str())
        .execute(&mut *tx)
        .await?;
    Ok(())
}

/// Deletes the certificates the cluster's refs name (all four; Magnum's conductor deletes
/// the CA and the client certificate only). Runs inside a batch, before the cluster row.
pub(crate) async fn delete_certificates_on(
    tx: &mut super::Conn,
    cluster_uuid: &str,
) -> Result<(), sqlx::Error> {
    let kinds = [
        CertKind::Ca,
        CertKind::EtcdCa,
        CertKind::FrontProxyCa,
        CertKind::MagnumClient,
    ];
    let refs = kinds
        .iter()
        .map(|k| format!("SELECT c.{} FROM cluster c WHERE c.uuid = ?", k.column()))
        .collect::<Vec<_>>()
        .join(" UNION ALL ");
    let mut delete = stmt(format!("DELETE FROM x509keypair WHERE uuid IN ({refs})"));
    for _ in kinds {
        delete = delete.bind(cluster_uuid.to_string());
    }
    delete.execute(&mut *tx).await?;
    Ok(())
}

impl Store {
    /// The cluster's certificate of `kind`, `None` when the cluster has none (made before
    /// magnum-rs kept them, or by a driver that keeps its own) or the row is gone.
    pub async fn cluster_certificate(
        &self,
        cluster_uuid: &str,
        kind: CertKind,
    ) -> Result<Option<StoredKeyPair>, sqlx::Error> {
        let sql = format!(
            "{} JOIN cluster c ON c.{} = t.uuid WHERE c.uuid = ?",
            select_from::<X509KeyPairCol>(),
            kind.column()
        );
        let row: Option<X509KeyPairRow> = stmt(sql)
            .bind(cluster_uuid)
            .fetch_optional(&mut self.conn().await?)
            .await?;
        Ok(row.and_then(|r| {
            Some(StoredKeyPair {
                uuid: r.uuid?,
                certificate: r.certificate?,
                private_key: r.private_key.unwrap_or_default(),
                passphrase: r.private_key_passphrase,
                intermediates: r.intermediates,
                project_id: r.project_id,
                user_id: r.user_id,
            })
        }))
    }
}
