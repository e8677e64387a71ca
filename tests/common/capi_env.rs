//! The Cluster API controllers' environment `scripts/capi.sh start` describes in the file
//! `MAGNUM_RS_TEST_CAPI_ENV` names (KEY=VALUE lines: KUBECONFIG, KUBE_NAMESPACE, …), and a
//! kube client on its kubeconfig. Shared by tests/serial (the controllers' tests) and
//! tests/e2e (CAPO and magnum-cluster-api's stories).

use std::collections::BTreeMap;

use kube::config::{KubeConfigOptions, Kubeconfig};

/// The environment file's values; panics naming what starts the environment when it is
/// not set (`needs`: what the caller needs besides the controllers).
pub fn values(needs: &str) -> BTreeMap<String, String> {
    let path = std::env::var("MAGNUM_RS_TEST_CAPI_ENV")
        .ok()
        .filter(|v| !v.is_empty())
        .unwrap_or_else(|| {
            panic!("MAGNUM_RS_TEST_CAPI_ENV is not set: run scripts/test.sh, which starts the real Cluster API controllers{needs}")
        });
    std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{path}: {e}"))
        .lines()
        .filter_map(|l| l.split_once('='))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// A client with the credentials of `kubeconfig`.
pub async fn client(kubeconfig: &str) -> kube::Client {
    let kc = Kubeconfig::read_from(kubeconfig).expect("kubeconfig");
    let cfg = kube::Config::from_custom_kubeconfig(kc, &KubeConfigOptions::default())
        .await
        .expect("kube config");
    kube::Client::try_from(cfg).expect("client")
}
