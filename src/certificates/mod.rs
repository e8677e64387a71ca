//! The certificates Magnum's conductor makes for every cluster when it is created
//! (`conductor/handlers/common/cert_manager.py`, `common/x509/operations.py`), whatever the
//! driver: a cluster CA, an etcd CA and a front-proxy CA (each self-signed, the cluster's
//! name as subject and issuer), and the conductor's client certificate (`admin`,
//! `system:masters`) signed by the cluster CA. Each key is RSA (`[x509] rsa_key_size`,
//! 2048), kept as PKCS#8 encrypted with its own random passphrase, stored beside it as
//! Magnum's `x509keypair` cert manager stores it. No I/O here: the store keeps them
//! ([`crate::store::x509keypairs`]).

mod generate;
mod protected_key;

pub use generate::{cluster_certificates, ClusterCertificates, GenerateError, KeyPairPem};
pub use protected_key::{decrypt_private_key, short_id, KeyError};

/// Magnum's `[x509] term_of_validity` default (days).
pub const TERM_OF_VALIDITY_DAYS: i64 = 365 * 5;
/// Magnum's `[x509] rsa_key_size` default (bits).
pub const RSA_KEY_BITS: usize = 2048;
/// Magnum's conductor's client certificate: subject and organisation
/// (`CONDUCTOR_CLIENT_NAME` is its cert manager name).
pub const CLIENT_SUBJECT: &str = "admin";
pub const CLIENT_ORGANIZATION: &str = "system:masters";

/// Which of a cluster's CAs a request's `ca_cert_type` names, by Magnum's rule
/// (`cert_manager.get_cluster_ca_certificate`): `etcd`, `front_proxy` or `front-proxy`,
/// anything else (or nothing) the cluster CA.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CaType {
    Kubernetes,
    Etcd,
    FrontProxy,
}

impl CaType {
    pub fn of(ca_cert_type: Option<&str>) -> CaType {
        match ca_cert_type {
            Some("etcd") => CaType::Etcd,
            Some("front_proxy" | "front-proxy") => CaType::FrontProxy,
            _ => CaType::Kubernetes,
        }
    }
}

/// A certificate with its private key opened (PKCS#8 PEM): what a backend that signs with
/// the cluster's CAs itself needs (Cluster API's kubeadm control plane). The key never
/// shows in `Debug`.
#[derive(Clone, PartialEq, Eq)]
pub struct OpenedKeyPair {
    pub certificate: String,
    pub private_key: String,
}

impl std::fmt::Debug for OpenedKeyPair {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OpenedKeyPair")
            .field("certificate", &self.certificate)
            .finish_non_exhaustive()
    }
}

/// A cluster's three CAs and its service-account key pair (the conductor's client
/// certificate, `magnum_cert_ref`, as magnum-cluster-api hands it to Cluster API), opened
/// for the driver that writes them where its backend reads them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClusterCas {
    pub ca: OpenedKeyPair,
    pub etcd_ca: OpenedKeyPair,
    pub front_proxy_ca: OpenedKeyPair,
    pub service_account: OpenedKeyPair,
}
