//! The `<stack>-cloud-config` Secret: how the Cluster API provider for OpenStack (CAPO)
//! reaches the cloud for one cluster, as magnum-cluster-api writes it (its
//! `CloudConfigSecret`): an Opaque Secret labelled with the cluster's uuid, holding
//! `clouds.yaml` (cloud `default`: Keystone's URL, the cluster's application credential,
//! region, interface, TLS verification) and `cacert` (the CA bundle to verify the cloud
//! with). CAPO's OpenStackCluster names it in `identityRef`. Its content never reaches a
//! log: the credential's secret is in it.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::Secret as KubeSecret;
use kube::api::ObjectMeta;
use serde_json::json;

use crate::openstack::application_credentials::MadeCredential;
use crate::secret::Secret;

/// The label magnum-cluster-api puts on a cluster's objects.
pub const CLUSTER_UUID_LABEL: &str = "cluster-uuid";

/// What `clouds.yaml` says.
#[derive(Debug)]
pub struct CloudConfig<'a> {
    /// Keystone's URL for the configured interface, from the catalog.
    pub auth_url: &'a str,
    /// Magnum's `[cinder_client] region_name`: `null` in clouds.yaml when unset.
    pub region_name: Option<&'a str>,
    /// `public`, `internal` or `admin` (magnum-cluster-api's `[capi_client] endpoint_type`
    /// without `URL`).
    pub interface: &'a str,
    /// Whether CAPO verifies the cloud's TLS certificates (`[capi_client] insecure` off).
    pub verify: bool,
    pub credential_id: &'a str,
    pub credential_secret: &'a Secret,
    /// The CA bundle (PEM) CAPO verifies the cloud with.
    pub cacert: &'a str,
}

/// The Secret's name for the Cluster API cluster `stack`.
pub fn secret_name(stack: &str) -> String {
    format!("{stack}-cloud-config")
}

/// `clouds.yaml` as magnum-cluster-api dumps it (keys in order, block style).
pub fn clouds_yaml(c: &CloudConfig<'_>) -> String {
    // PyYAML's `dump` sorts the keys; they are written here in that order.
    let doc = json!({"clouds": {"default": {
        "auth": {
            "application_credential_id": c.credential_id,
            "application_credential_secret": c.credential_secret.expose(),
            "auth_url": c.auth_url,
        },
        "endpoint_type": c.interface,
        "identity_api_version": 3,
        "region_name": c.region_name,
        "verify": c.verify,
    }}});
    // A JSON value always has a YAML form.
    serde_yaml_ng::to_string(&doc).unwrap_or_default()
}

/// The Secret for cluster `cluster_uuid`, whose Cluster API name is `stack`.
pub fn secret(stack: &str, namespace: &str, cluster_uuid: &str, c: &CloudConfig<'_>) -> KubeSecret {
    KubeSecret {
        metadata: ObjectMeta {
            name: Some(secret_name(stack)),
            namespace: Some(namespace.to_string()),
            labels: Some(BTreeMap::from([(
                CLUSTER_UUID_LABEL.to_string(),
                cluster_uuid.to_string(),
            )])),
            ..ObjectMeta::default()
        },
        type_: Some("Opaque".into()),
        string_data: Some(BTreeMap::from([
            ("cacert".to_string(), c.cacert.to_string()),
            ("clouds.yaml".to_string(), clouds_yaml(c)),
        ])),
        ..KubeSecret::default()
    }
}

/// The application credential a `<stack>-cloud-config` Secret holds (cloud `default` of its
/// `clouds.yaml`); `None` when it holds none.
pub fn credential_of(secret: &KubeSecret) -> Option<MadeCredential> {
    let yaml = secret.data.as_ref()?.get("clouds.yaml")?;
    let doc: serde_yaml_ng::Value = serde_yaml_ng::from_slice(&yaml.0).ok()?;
    let auth = doc.get("clouds")?.get("default")?.get("auth")?;
    Some(MadeCredential {
        id: auth.get("application_credential_id")?.as_str()?.to_string(),
        secret: Secret::new(auth.get("application_credential_secret")?.as_str()?),
    })
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A cluster's cloud configuration (Keystone at keystone.example, credential `c0ffee`).
    pub(crate) fn config(secret: &Secret) -> CloudConfig<'_> {
        CloudConfig {
            auth_url: "https://keystone.example:5000/v3",
            region_name: Some("RegionOne"),
            interface: "public",
            verify: true,
            credential_id: "c0ffee",
            credential_secret: secret,
            cacert: "-----BEGIN CERTIFICATE-----\n…\n-----END CERTIFICATE-----\n",
        }
    }

    #[test]
    /// The text is what PyYAML 6's `yaml.dump` gives for the same dict (checked by hand).
    fn clouds_yaml_is_magnum_cluster_apis_with_the_clusters_credential() {
        let s = Secret::new("-starts-with-a-dash_and:colon");
        let yaml = clouds_yaml(&config(&s));
        assert_eq!(
            yaml,
            "clouds:\n  default:\n    auth:\n      application_credential_id: c0ffee\n      \
             application_credential_secret: -starts-with-a-dash_and:colon\n      \
             auth_url: https://keystone.example:5000/v3\n    endpoint_type: public\n    \
             identity_api_version: 3\n    region_name: RegionOne\n    verify: true\n"
        );
        // Read back as YAML, every value is the one given (quoting where YAML needs it).
        let back: serde_json::Value = serde_yaml_ng::from_str(&yaml).expect("yaml");
        assert_eq!(
            back["clouds"]["default"]["auth"]["application_credential_secret"],
            "-starts-with-a-dash_and:colon"
        );
        let unset = CloudConfig {
            region_name: None,
            ..config(&s)
        };
        // PyYAML writes `None` as `null`, as here.
        assert!(clouds_yaml(&unset).contains("\n    region_name: null\n"));
        let back: serde_json::Value = serde_yaml_ng::from_str(&clouds_yaml(&unset)).expect("yaml");
        assert_eq!(
            back["clouds"]["default"]["region_name"],
            serde_json::Value::Null
        );
    }

    #[test]
    fn the_secret_is_opaque_labelled_with_the_cluster_and_named_after_its_stack() {
        let s = Secret::new("shh");
        let k = secret("kube-ab12c", "magnum-system", "uuid-1", &config(&s));
        assert_eq!(k.metadata.name.as_deref(), Some("kube-ab12c-cloud-config"));
        assert_eq!(k.metadata.namespace.as_deref(), Some("magnum-system"));
        assert_eq!(
            k.metadata
                .labels
                .as_ref()
                .and_then(|l| l.get("cluster-uuid")),
            Some(&"uuid-1".to_string())
        );
        assert_eq!(k.type_.as_deref(), Some("Opaque"));
        let data = k.string_data.expect("data");
        assert_eq!(data.keys().collect::<Vec<_>>(), ["cacert", "clouds.yaml"]);
        assert!(data["clouds.yaml"].contains("application_credential_secret: shh"));
    }

    #[test]
    fn the_credential_is_read_back_from_the_secret_written_and_none_from_others() {
        let s = Secret::new("s3cret");
        let mut written = secret("kube-abcde", "ns", "u", &config(&s));
        // The API server keeps `stringData` as `data`.
        written.data = written.string_data.take().map(|m| {
            m.into_iter()
                .map(|(k, v)| (k, k8s_openapi::ByteString(v.into_bytes())))
                .collect()
        });
        let read = credential_of(&written).expect("a credential");
        assert_eq!(read.id, "c0ffee");
        assert_eq!(read.secret.expose(), "s3cret");
        assert!(credential_of(&KubeSecret::default()).is_none());
        let mut other = written.clone();
        other.data = Some(BTreeMap::from([(
            "clouds.yaml".to_string(),
            k8s_openapi::ByteString(b"clouds: {default: {auth: {username: demo}}}".to_vec()),
        )]));
        assert!(
            credential_of(&other).is_none(),
            "a password cloud is no credential"
        );
    }
}
