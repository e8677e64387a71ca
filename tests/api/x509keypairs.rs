//! `x509keypair` rows (src/store/x509keypairs.rs) on the run's database: a cluster create
//! stores the cluster's four certificates once, named by the cluster's refs, and they are
//! read back by kind.

use crate::common;

use common::As;
use magnum_rs::certificates::{cluster_certificates, decrypt_private_key, RSA_KEY_BITS};
use magnum_rs::model::Tenancy;
use magnum_rs::store::x509keypairs::{CertKind, NewCertificates};
use magnum_rs::store::{Batch, Guard};

const KINDS: [CertKind; 4] = [
    CertKind::Ca,
    CertKind::EtcdCa,
    CertKind::FrontProxyCa,
    CertKind::MagnumClient,
];

#[tokio::test]
async fn a_clusters_certificates_are_stored_once_and_read_back_by_kind() {
    let app = common::spawn_app().await;
    app.template("heat", "fedora-coreos", &As::member()).await;
    let uuid = app.cluster("legacy", "heat", 1, 1, &As::member()).await;
    let store = &app.state.store;
    let mut made = Vec::new();
    for kind in KINDS {
        let got = store
            .cluster_certificate(&uuid, kind)
            .await
            .expect("db")
            .unwrap_or_else(|| panic!("{kind:?} stored by the create"));
        assert_eq!(got.project_id, As::member().project);
        assert_eq!(got.user_id.as_deref(), Some(As::member().user.as_str()));
        decrypt_private_key(&got.private_key, got.passphrase.as_deref()).expect("opens");
        made.push(got);
    }
    let distinct: std::collections::BTreeSet<_> = made.iter().map(|k| &k.uuid).collect();
    assert_eq!(distinct.len(), 4);
    // The create's step run again (after a crash) keeps what the first run made.
    let again = cluster_certificates("legacy", RSA_KEY_BITS).expect("generate");
    store
        .commit(
            Batch::default()
                .guard(Guard::cluster(&uuid, Tenancy::All))
                .certificates(NewCertificates::new(&uuid, None, None, again)),
        )
        .await
        .expect("db")
        .expect("committed");
    for (kind, first) in KINDS.into_iter().zip(&made) {
        let now = store
            .cluster_certificate(&uuid, kind)
            .await
            .expect("db")
            .expect("stored");
        assert_eq!(&now, first, "{kind:?}");
    }
    assert!(store
        .cluster_certificate("no-such-cluster", CertKind::Ca)
        .await
        .expect("db")
        .is_none());
}
