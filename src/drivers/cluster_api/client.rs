//! The management clusters' clients, and how kube errors become driver outcomes and
//! metrics. Used by the driver, its watches ([`super::cache`]), the Lease
//! ([`super::leader`]) and the workload CA ([`super::ca`]); depends on none of them.

use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::runtime::watcher;

use super::ClusterApiConfig;
use crate::drivers::DriverError;

/// The User-Agent of every request to a management cluster.
pub const USER_AGENT: &str = concat!("magnum-rs/", env!("CARGO_PKG_VERSION"));

/// One management cluster: a name, a client, the namespace of the Cluster objects.
#[derive(Clone)]
pub struct ManagementCluster {
    pub name: String,
    pub client: kube::Client,
    pub namespace: String,
}

/// One client per configured management cluster, each sending our User-Agent.
pub async fn connect_all(config: &ClusterApiConfig) -> anyhow::Result<Vec<ManagementCluster>> {
    let mut management = Vec::new();
    for mc in &config.management_clusters {
        let kube_config = match &mc.kubeconfig {
            Some(path) => {
                let kc = Kubeconfig::read_from(path).map_err(|e| {
                    anyhow::anyhow!(
                        "management cluster {}: cannot read its kubeconfig: {e}",
                        mc.name
                    )
                })?;
                let opts = KubeConfigOptions {
                    context: mc.context.clone(),
                    cluster: None,
                    user: None,
                };
                kube::Config::from_custom_kubeconfig(kc, &opts)
                    .await
                    .map_err(|e| anyhow::anyhow!("management cluster {}: {e}", mc.name))?
            }
            None => kube::Config::infer()
                .await
                .map_err(|e| anyhow::anyhow!("management cluster {}: {e}", mc.name))?,
        };
        let mut kube_config = kube_config;
        // Our requests are ours in the API server's audit log.
        kube_config.headers.push((
            axum::http::header::USER_AGENT,
            axum::http::HeaderValue::from_static(USER_AGENT),
        ));
        let client = kube::Client::try_from(kube_config)
            .map_err(|e| anyhow::anyhow!("management cluster {}: {e}", mc.name))?;
        management.push(ManagementCluster {
            name: mc.name.clone(),
            client,
            namespace: config.namespace.clone(),
        });
    }
    Ok(management)
}

/// Maps a kube error to a Magnum outcome: unreachable or conflicting → retried; missing,
/// invalid or forbidden → failed with the server's message.
pub fn kube_error(e: kube::Error, what: &str) -> DriverError {
    count_kube_error("request", &e);
    let error = match &e {
        kube::Error::Api(s) if s.is_not_found() => {
            DriverError::rejected(format!("{what} not found in the management cluster"))
        }
        kube::Error::Api(s) if s.is_conflict() || s.code == 429 || s.code >= 500 => {
            DriverError::transient(format!("{what}: {}", s.message))
        }
        kube::Error::Api(s) => DriverError::rejected(format!("{what}: {}", s.message)),
        other => DriverError::transient(format!("management cluster unreachable: {other}")),
    };
    error.caused_by(e)
}

/// Counts a failed kube call in the metrics (`call`: request, watch, lease).
pub fn count_kube_error(call: &str, e: &kube::Error) {
    let code = match e {
        kube::Error::Api(s) => s.code.to_string(),
        _ => "unreachable".to_string(),
    };
    crate::telemetry::metrics::kube_error(call, &code);
}

pub fn count_watch_error(e: &watcher::Error) {
    match e {
        watcher::Error::InitialListFailed(e)
        | watcher::Error::WatchStartFailed(e)
        | watcher::Error::WatchFailed(e) => count_kube_error("watch", e),
        watcher::Error::WatchError(s) => {
            crate::telemetry::metrics::kube_error("watch", &s.code.to_string());
        }
        watcher::Error::NoResourceVersion => {
            crate::telemetry::metrics::kube_error("watch", "invalid");
        }
    }
}

/// The namespace's ClusterResourceSets (`addons.cluster.x-k8s.io/v1beta2`).
fn resource_sets(mc: &ManagementCluster) -> kube::Api<kube::api::DynamicObject> {
    let ar = kube::api::ApiResource::from_gvk_with_plural(
        &kube::api::GroupVersionKind::gvk(
            "addons.cluster.x-k8s.io",
            "v1beta2",
            "ClusterResourceSet",
        ),
        "clusterresourcesets",
    );
    kube::Api::namespaced_with(mc.client.clone(), &mc.namespace, &ar)
}

/// Creates the ClusterResourceSet `body`; one of that name already there (a run before a
/// crash made it) is done.
pub async fn create_resource_set(
    mc: &ManagementCluster,
    body: serde_json::Value,
) -> Result<(), DriverError> {
    let obj: kube::api::DynamicObject =
        serde_json::from_value(body).map_err(|e| DriverError::rejected(e.to_string()))?;
    let name = obj.metadata.name.clone().unwrap_or_default();
    match resource_sets(mc)
        .create(&kube::api::PostParams::default(), &obj)
        .await
    {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(s)) if s.is_already_exists() => Ok(()),
        Err(e) => Err(kube_error(
            e,
            &format!("ClusterResourceSet {}/{name}", mc.namespace),
        )),
    }
}

/// Creates the Secret `secret` in the namespace; one of that name already there (a run
/// before a crash made it, from the same stored values) is done.
pub async fn create_secret(
    mc: &ManagementCluster,
    secret: &k8s_openapi::api::core::v1::Secret,
) -> Result<(), DriverError> {
    let api: kube::Api<k8s_openapi::api::core::v1::Secret> =
        kube::Api::namespaced(mc.client.clone(), &mc.namespace);
    match api.create(&kube::api::PostParams::default(), secret).await {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(s)) if s.is_already_exists() => Ok(()),
        Err(e) => {
            let name = secret.metadata.name.as_deref().unwrap_or_default();
            Err(kube_error(e, &format!("Secret {}/{name}", mc.namespace)))
        }
    }
}

/// Deletes the ClusterResourceSets `names` of the namespace (gone already, or no such kind
/// on the management cluster: done).
pub async fn delete_resource_sets(
    mc: &ManagementCluster,
    names: &[String],
) -> Result<(), DriverError> {
    let api = resource_sets(mc);
    for name in names {
        match api.delete(name, &kube::api::DeleteParams::default()).await {
            Ok(_) => {}
            // A 404 of the object, or of the whole kind (a plain-text `404 page not found`).
            Err(kube::Error::Api(s)) if s.code == 404 => {}
            Err(e) => {
                return Err(kube_error(
                    e,
                    &format!("ClusterResourceSet {}/{name}", mc.namespace),
                ))
            }
        }
    }
    Ok(())
}

/// Deletes the Secrets `names` in the management cluster's namespace; one already gone is
/// done.
pub async fn delete_secrets(mc: &ManagementCluster, names: &[String]) -> Result<(), DriverError> {
    let api: kube::Api<k8s_openapi::api::core::v1::Secret> =
        kube::Api::namespaced(mc.client.clone(), &mc.namespace);
    for name in names {
        match api.delete(name, &kube::api::DeleteParams::default()).await {
            Ok(_) => {}
            Err(kube::Error::Api(s)) if s.is_not_found() => {}
            Err(e) => return Err(kube_error(e, &format!("Secret {}/{name}", mc.namespace))),
        }
    }
    Ok(())
}
