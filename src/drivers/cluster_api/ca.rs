//! The workload cluster's CAs as Cluster API keeps them in the management cluster: Secret
//! `<cluster>-ca` (and `-etcd`, `-proxy`, and `-sa` for the service-account key pair)
//! with `tls.crt` and `tls.key`, the names magnum-cluster-api writes and kubeadm's control
//! plane reads. A create writes Magnum's CAs there before the Cluster exists
//! ([`write_cas`]), so the control plane signs with them instead of making its own. For a
//! cluster without stored CAs (made before magnum-rs kept them), `GET /v1/certificates`
//! answers `tls.crt` and `POST /v1/certificates` signs with `tls.key`. Keys never leave
//! this module (nor reach any log).

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::Secret;
use kube::api::ObjectMeta;
use kube::Api;

use super::client::{create_secret, ManagementCluster};
use crate::certificates::{CaType, ClusterCas, OpenedKeyPair};
use crate::drivers::signing::CertificateAuthority;
use crate::drivers::DriverError;
use crate::drivers::Refusal;

/// The Secret suffix of a Magnum `ca_cert_type` ([`CaType`]).
pub fn secret_suffix(ca_cert_type: Option<&str>) -> &'static str {
    match CaType::of(ca_cert_type) {
        CaType::Etcd => "etcd",
        CaType::FrontProxy => "proxy",
        CaType::Kubernetes => "ca",
    }
}

/// The Secrets a cluster's create writes beside its Cluster, by suffix of the stack name.
pub const SECRET_SUFFIXES: [&str; 4] = ["ca", "etcd", "proxy", "sa"];

/// The Secret type Cluster API gives the certificates it reads.
const CLUSTER_SECRET_TYPE: &str = "cluster.x-k8s.io/secret";
/// The label that ties a Secret to its Cluster.
const CLUSTER_NAME_LABEL: &str = "cluster.x-k8s.io/cluster-name";

/// Writes the cluster's CAs and service-account key pair into the Secrets kubeadm's
/// control plane reads (`<stack>-ca`, `-etcd`, `-proxy`, `-sa`), as magnum-cluster-api
/// writes them: no owner references, `tls.crt` and the opened `tls.key`. A Secret that
/// exists already is kept (a create run again after a crash wrote it).
pub async fn write_cas(
    mc: &ManagementCluster,
    stack: &str,
    cas: &ClusterCas,
) -> Result<(), DriverError> {
    let pairs = [
        &cas.ca,
        &cas.etcd_ca,
        &cas.front_proxy_ca,
        &cas.service_account,
    ];
    for (suffix, pair) in SECRET_SUFFIXES.into_iter().zip(pairs) {
        let name = format!("{stack}-{suffix}");
        create_secret(mc, &ca_secret(&name, stack, pair)).await?;
    }
    Ok(())
}

fn ca_secret(name: &str, stack: &str, pair: &OpenedKeyPair) -> Secret {
    Secret {
        metadata: ObjectMeta {
            name: Some(name.to_string()),
            labels: Some(BTreeMap::from([(
                CLUSTER_NAME_LABEL.to_string(),
                stack.to_string(),
            )])),
            ..ObjectMeta::default()
        },
        type_: Some(CLUSTER_SECRET_TYPE.to_string()),
        string_data: Some(BTreeMap::from([
            ("tls.crt".to_string(), pair.certificate.clone()),
            ("tls.key".to_string(), pair.private_key.clone()),
        ])),
        ..Secret::default()
    }
}

/// The CA certificate and key (PEM) of `stack` for `ca_cert_type`.
async fn read_ca(
    mc: &ManagementCluster,
    cluster_uuid: &str,
    stack: &str,
    ca_cert_type: Option<&str>,
) -> Result<(String, Option<String>), Refusal> {
    let name = format!("{stack}-{}", secret_suffix(ca_cert_type));
    let api: Api<Secret> = Api::namespaced(mc.client.clone(), &mc.namespace);
    let secret = api.get_opt(&name).await.map_err(|e| {
        // The namespace, the Secret's name and RBAC texts are the operator's business: they
        // go to the log, the client gets a generic text.
        tracing::warn!(
            management_cluster = %mc.name,
            namespace = %mc.namespace,
            secret = %name,
            error = %short(&e),
            "cannot read a cluster CA Secret"
        );
        Refusal::CaUnreadable(cluster_uuid.into())
    })?;
    let data = secret.and_then(|s| s.data).unwrap_or_default();
    let text = |key: &str| {
        data.get(key)
            .and_then(|b| String::from_utf8(b.0.clone()).ok())
            .filter(|t| !t.trim().is_empty())
    };
    let cert = text("tls.crt").ok_or_else(|| Refusal::CaUnavailable(cluster_uuid.into()))?;
    Ok((cert, text("tls.key")))
}

/// Kube errors without the request details.
fn short(e: &kube::Error) -> String {
    match e {
        kube::Error::Api(s) => s.message.clone(),
        other => other.to_string(),
    }
}

/// `GET /v1/certificates/{cluster}`: the CA certificate (PEM).
pub async fn ca_certificate(
    mc: &ManagementCluster,
    cluster_uuid: &str,
    stack: &str,
    ca_cert_type: Option<&str>,
) -> Result<String, Refusal> {
    Ok(read_ca(mc, cluster_uuid, stack, ca_cert_type).await?.0)
}

/// `POST /v1/certificates`: `csr` signed by the CA (PEM).
pub async fn sign(
    mc: &ManagementCluster,
    cluster_uuid: &str,
    stack: &str,
    ca_cert_type: Option<&str>,
    csr: &str,
) -> Result<String, Refusal> {
    let (cert, key) = read_ca(mc, cluster_uuid, stack, ca_cert_type).await?;
    let key = key.ok_or_else(|| Refusal::CaUnavailable(cluster_uuid.into()))?;
    CertificateAuthority {
        cert_pem: &cert,
        key_pem: &key,
    }
    .sign_for_cluster(cluster_uuid, csr)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An RBAC denial names the namespace and the service account: the log gets it, the
    /// client a generic text (a 503: `api::driver_refusals`).
    #[tokio::test]
    async fn an_rbac_denial_reaches_the_client_as_a_generic_text() {
        use axum::http::{Request, Response};
        use kube::client::Body;
        let (svc, mut handle) = tower_test::mock::pair::<Request<Body>, Response<Body>>();
        let mc = ManagementCluster {
            name: "default".into(),
            client: kube::Client::new(svc, "default"),
            namespace: "magnum-system".into(),
        };
        let server = tokio::spawn(async move {
            let (_req, send) = handle.next_request().await.expect("request");
            let status = serde_json::json!({
                "kind": "Status", "apiVersion": "v1", "status": "Failure", "code": 403,
                "reason": "Forbidden",
                "message": "secrets \"kube-abcde-ca\" is forbidden: User \"system:serviceaccount:magnum-system:magnum-rs\" cannot get resource \"secrets\" in the namespace \"magnum-system\"",
            });
            send.send_response(
                Response::builder()
                    .status(403)
                    .body(Body::from(serde_json::to_vec(&status).expect("json")))
                    .expect("response"),
            );
        });
        let err = read_ca(&mc, "a1a1", "kube-abcde", None)
            .await
            .expect_err("a denial is an error");
        server.await.expect("mock");
        let text = err.to_string();
        assert_eq!(err, Refusal::CaUnreadable("a1a1".into()));
        assert!(!text.contains("magnum-system"), "{text}");
        assert!(!text.contains("forbidden"), "{text}");
        assert!(text.contains("a1a1"), "{text}");
    }

    #[test]
    fn ca_cert_types_map_to_cluster_api_secret_names() {
        assert_eq!(secret_suffix(None), "ca");
        assert_eq!(secret_suffix(Some("kubernetes")), "ca");
        assert_eq!(secret_suffix(Some("etcd")), "etcd");
        assert_eq!(secret_suffix(Some("front_proxy")), "proxy");
        assert_eq!(secret_suffix(Some("front-proxy")), "proxy");
    }
}
