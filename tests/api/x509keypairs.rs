//! `x509keypair` rows (src/store/x509keypairs.rs) on the run's database: a cluster's four
//! certificates are stored once, named by the cluster's refs, and read back by kind.

use crate::common;

use common::As;
use magnum_rs::certificates::{cluster_certificates, decrypt_private_key, RSA_KEY_BITS};
use magnum_rs::model::Tenancy;
use magnum_rs::store::x509keypairs::{CertKind, NewCertificates};
use magnum_rs::store::{Batch, Guard};

#[tokio::test]
async fn a_clusters_certificates_are_stored_once_and_read_back_by_kind() {
    let app = common::spawn_app().await;
    app.template("heat", "fedora-coreos", &As::member()).await;
    let uuid = app.cluster("legacy", "heat", 1, 1, &As::member()).await;
    let store = &app.state.store;
    let first = cluster_certificates("legacy", RSA_KEY_BITS).expect("generate");
    let new = |c| NewCertificates::new(&uuid, Some("p".into()), Some("u".into()), c);
    let batch = |n| {
        Batch::default()
            .guard(Guard::cluster(&uuid, Tenancy::All))
            .certificates(n)
    };
    store
        .commit(batch(new(first.clone())))
        .await
        .expect("db")
        .expect("committed");
    // A second create's certificates (a create run again) change nothing.
    let second = cluster_certificates("legacy", RSA_KEY_BITS).expect("generate");
    store
        .commit(batch(new(second)))
        .await
        .expect("db")
        .expect("committed");
    for (kind, want) in [
        (CertKind::Ca, &first.ca),
        (CertKind::EtcdCa, &first.etcd_ca),
        (CertKind::FrontProxyCa, &first.front_proxy_ca),
        (CertKind::MagnumClient, &first.magnum_client),
    ] {
        let got = store
            .cluster_certificate(&uuid, kind)
            .await
            .expect("db")
            .unwrap_or_else(|| panic!("{kind:?} stored"));
        assert_eq!(got.certificate, want.certificate, "{kind:?}");
        assert_eq!(got.passphrase.as_deref(), Some(want.passphrase.as_str()));
        assert_eq!(got.project_id.as_deref(), Some("p"));
        decrypt_private_key(&got.private_key, got.passphrase.as_deref()).expect("opens");
    }
    // An unknown cluster has none.
    assert!(store
        .cluster_certificate("no-such-cluster", CertKind::Ca)
        .await
        .expect("db")
        .is_none());
}
