//! A driver's certificates and credentials: the cluster's CA (read, sign with it, replace
//! it) and the credentials the cluster uses to reach the cloud. Magnum answers these
//! synchronously (RPC calls to the conductor), so they run on the request path and refuse
//! with a [`Refusal`]. The defaults are Magnum's base driver's refusals.

use async_trait::async_trait;

use super::Refusal;
use crate::model::Cluster;

#[async_trait]
pub trait Certificates: Send + Sync {
    /// The cluster's CA certificate (PEM) for Magnum's `ca_cert_type` (`kubernetes` when
    /// absent, `etcd`, `front_proxy`/`front-proxy`): `GET /v1/certificates/{cluster}`.
    async fn ca_certificate(
        &self,
        _cluster: &Cluster,
        _ca_cert_type: Option<&str>,
    ) -> Result<String, Refusal> {
        Err(Refusal::NotImplemented("get_ca_certificate"))
    }

    /// A client's certificate request signed by the cluster's CA (PEM):
    /// `POST /v1/certificates`.
    async fn sign_certificate(
        &self,
        _cluster: &Cluster,
        _ca_cert_type: Option<&str>,
        _csr: &str,
    ) -> Result<String, Refusal> {
        Err(Refusal::NotImplemented("sign_certificate"))
    }

    /// Replaces the cluster's CA (`PATCH /v1/certificates/{cluster}`); Magnum's base driver
    /// refuses, and so does magnum-cluster-api.
    async fn rotate_ca_certificate(&self, _cluster: &Cluster) -> Result<(), Refusal> {
        Err(Refusal::NotImplemented("rotate_ca_certificate"))
    }

    /// Rotates the credentials the cluster uses to reach the cloud
    /// (`PATCH /v1/credentials/{cluster}`, the conductor's `credential_rotate`).
    async fn rotate_credential(&self, _cluster: &Cluster) -> Result<(), Refusal> {
        Err(Refusal::CredentialRotationNotSupported)
    }
}
