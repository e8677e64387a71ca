//! Magnum's cloud look-ups (`magnum_rs::openstack`) against the real services:
//! glance-api 33, nova-api 34, neutron's API 29 and cinder-api 29 from PyPI behind the real
//! Keystone 30 (`scripts/openstack.sh`, seeded with flavors, demo's keypair, images with
//! `os_distro`/`hw_disk_bus`, networks and subnets). The user's own token and the catalog it
//! carries find the endpoints, as Magnum's `OpenStackClients` does for a request.
//!
//! `scripts/test.sh` starts the services and sets `MAGNUM_RS_TEST_OPENSTACK` (their state
//! directory, whose `env` names Keystone); without it this test fails rather than passes.
//! Keystone restarts in `keystone_auth` are waited out (its turn lock).

use std::time::Duration;

use magnum_rs::openstack::lookups::{
    default_volume_type, find_external_network, find_flavor, find_image, find_network, find_subnet,
    keypair_exists, LookupError,
};
use magnum_rs::openstack::{
    application_credentials, server_groups, Cloud, Interface, ServiceCatalog,
};
use magnum_rs::secret::Secret;
use serde_json::{json, Value};

pub(crate) struct Services {
    pub(crate) keystone_url: String,
    seeded: Value,
}

pub(crate) fn services() -> Services {
    let base = std::env::var("MAGNUM_RS_TEST_OPENSTACK").unwrap_or_else(|_| {
        panic!("MAGNUM_RS_TEST_OPENSTACK is not set: run scripts/test.sh, which starts the real OpenStack services")
    });
    let base = std::path::PathBuf::from(base);
    let env = std::fs::read_to_string(base.join("env")).expect("openstack env file");
    let keystone_url = env
        .lines()
        .find_map(|l| l.strip_prefix("KEYSTONE_URL="))
        .expect("KEYSTONE_URL")
        .to_string();
    let seeded = serde_json::from_str(
        &std::fs::read_to_string(base.join("openstack.json")).expect("openstack.json"),
    )
    .expect("json");
    Services {
        keystone_url,
        seeded,
    }
}

/// demo's project-scoped token in project demo, with its catalog, demo's user id and the
/// project's id.
pub(crate) async fn demo_token(keystone_url: &str) -> (Secret, ServiceCatalog, String, String) {
    let auth = json!({"auth": {
        "identity": {"methods": ["password"], "password": {"user": {
            "name": "demo", "domain": {"name": "Default"}, "password": "demo-secret"}}},
        "scope": {"project": {"name": "demo", "domain": {"name": "Default"}}}}});
    let resp = reqwest::Client::new()
        .post(format!("{keystone_url}/auth/tokens"))
        .json(&auth)
        .send()
        .await
        .expect("keystone answers");
    assert_eq!(resp.status().as_u16(), 201);
    let token = Secret::new(resp.headers()["x-subject-token"].to_str().expect("token"));
    let body = resp.bytes().await.expect("body");
    let parsed: Value = serde_json::from_slice(&body).expect("token json");
    (
        token,
        ServiceCatalog::from_token_body(&body).expect("catalog"),
        parsed["token"]["user"]["id"]
            .as_str()
            .expect("user id")
            .to_string(),
        parsed["token"]["project"]["id"]
            .as_str()
            .expect("project id")
            .to_string(),
    )
}

#[tokio::test]
#[ignore = "needs scripts/test.sh"]
async fn look_ups_as_the_user_against_the_real_glance_nova_and_neutron() {
    let _turn = crate::keystone_auth::TURN.lock().await;
    let os = services();
    let (token, catalog, _, _) = demo_token(&os.keystone_url).await;
    let cloud = Cloud::new(Duration::from_secs(30), Interface::Public, None).expect("cloud");
    let s = cloud.session(token, std::sync::Arc::new(catalog));
    let id = |path: &[&str]| {
        let mut v = &os.seeded;
        for k in path {
            v = &v[*k];
        }
        v.as_str().unwrap_or_else(|| panic!("{path:?}")).to_string()
    };

    let image = find_image(&s, "ubuntu-2204-kube")
        .await
        .expect("image by name");
    assert_eq!(image.id, id(&["images", "ubuntu-2204-kube"]));
    assert_eq!(image.os_distro.as_deref(), Some("ubuntu"));
    assert_eq!(image.hw_disk_bus.as_deref(), Some("scsi"));
    let by_id = find_image(&s, &image.id).await.expect("image by id");
    assert_eq!(by_id.name.as_deref(), Some("ubuntu-2204-kube"));
    assert_eq!(
        find_image(&s, "no-such-image").await,
        Err(LookupError::NotFound)
    );

    let large = find_flavor(&s, "m1.large").await.expect("flavor by name");
    assert_eq!(large.id, id(&["flavors", "m1.large"]));
    assert_eq!(
        find_flavor(&s, &large.id).await.expect("flavor by id").name,
        "m1.large"
    );
    assert_eq!(find_flavor(&s, "m1.huge").await, Err(LookupError::NotFound));

    assert_eq!(keypair_exists(&s, "default").await, Ok(()));
    assert_eq!(
        keypair_exists(&s, "nobodys").await,
        Err(LookupError::NotFound)
    );

    let public = find_external_network(&s, "public")
        .await
        .expect("external network");
    assert_eq!(public.id, id(&["networks", "public", "network"]));
    assert_eq!(
        find_external_network(&s, "private").await,
        Err(LookupError::NotFound),
        "a tenant network is not external"
    );
    let private = find_network(&s, "private").await.expect("network");
    assert_eq!(private.id, id(&["networks", "private", "network"]));
    let subnet = find_subnet(&s, "private-subnet").await.expect("subnet");
    assert_eq!(subnet.id, id(&["networks", "private", "subnet"]));
    assert_eq!(
        find_subnet(&s, "no-such-subnet").await,
        Err(LookupError::NotFound)
    );
}

/// What a Cluster API cluster needs made in the cloud, made and found as its user and
/// deleted later as magnum-rs's service user (admin in project service, as Magnum's devstack
/// plugin makes it): a server group (soft-anti-affinity by default), an application
/// credential that authenticates on its own, and Cinder's default volume type.
#[tokio::test]
#[ignore = "needs scripts/test.sh"]
async fn server_groups_and_application_credentials_against_the_real_nova_and_keystone() {
    let _turn = crate::keystone_auth::TURN.lock().await;
    let os = services();
    let (token, catalog, user_id, project_id) = demo_token(&os.keystone_url).await;
    let cloud = Cloud::new(Duration::from_secs(30), Interface::Public, None).expect("cloud");
    let s = cloud.session(token, std::sync::Arc::new(catalog));
    let auth = magnum_rs::auth::keystone::KeystoneAuth::new(
        &magnum_rs::auth::keystone::KeystoneAuthConfig {
            auth_url: os.keystone_url.clone(),
            password: Secret::new("magnum-secret"),
            ..Default::default()
        },
    )
    .expect("auth");
    let me = auth.service_caller().await.expect("service token");
    let svc = me.session(&cloud);
    let name = format!("kube-{}", uuid::Uuid::new_v4().simple());

    // Server groups: made once as the user, found by name.
    assert_eq!(server_groups::find(&s, &name, None, false).await, Ok(None));
    let policies = server_groups::policies_of_label(None);
    let made = server_groups::ensure(&s, &name, None, &policies)
        .await
        .expect("server group made");
    assert_eq!(made.policies, ["soft-anti-affinity"]);
    let again = server_groups::ensure(&s, &name, None, &policies)
        .await
        .expect("server group found");
    assert_eq!(again.id, made.id, "ensure finds the group it made");
    let worker = format!("{name}-default-worker");
    let w = server_groups::ensure(
        &s,
        &worker,
        None,
        &server_groups::policies_of_label(Some("anti-affinity")),
    )
    .await
    .expect("worker group");
    assert_eq!(w.policies, ["anti-affinity"]);
    // Deleted by the user, and by the service user across projects (twice is fine).
    server_groups::delete(&s, &name, None, false)
        .await
        .expect("deleted by the user");
    let found = server_groups::find(&svc, &worker, Some(&project_id), true)
        .await
        .expect("the service user lists every project's groups");
    assert_eq!(found.map(|g| g.id), Some(w.id));
    for _ in 0..2 {
        server_groups::delete(&svc, &worker, Some(&project_id), true)
            .await
            .expect("deleted by the service user");
    }
    for n in [&name, &worker] {
        assert_eq!(server_groups::find(&s, n, None, false).await, Ok(None));
    }

    // An application credential named after the cluster, usable on its own.
    let cluster_uuid = uuid::Uuid::new_v4().to_string();
    let cred = application_credentials::create(
        &s,
        &user_id,
        &cluster_uuid,
        &application_credentials::description(&cluster_uuid),
    )
    .await
    .expect("credential made");
    assert!(!format!("{cred:?}").contains(cred.secret.expose()));
    assert_eq!(
        application_credentials::find(&s, &user_id, &cluster_uuid).await,
        Ok(Some(cred.id.clone()))
    );
    assert_eq!(
        application_credentials::create(&s, &user_id, &cluster_uuid, "again").await,
        Err(LookupError::Duplicate),
        "a second credential of the same name is refused"
    );
    let login = json!({"auth": {"identity": {"methods": ["application_credential"],
        "application_credential": {"id": cred.id, "secret": cred.secret.expose()}}}});
    let resp = reqwest::Client::new()
        .post(format!("{}/auth/tokens", os.keystone_url))
        .json(&login)
        .send()
        .await
        .expect("keystone answers");
    assert_eq!(resp.status().as_u16(), 201, "the credential authenticates");
    // The service user finds and deletes the user's credential (admin_or_owner).
    assert_eq!(
        application_credentials::find(&svc, &user_id, &cluster_uuid).await,
        Ok(Some(cred.id.clone()))
    );
    for _ in 0..2 {
        application_credentials::delete(&svc, &user_id, &cluster_uuid)
            .await
            .expect("deleted by the service user");
    }
    assert_eq!(
        application_credentials::find(&s, &user_id, &cluster_uuid).await,
        Ok(None)
    );

    assert_eq!(
        default_volume_type(&s).await.expect("default type"),
        "__DEFAULT__"
    );
    assert_eq!(
        find_flavor(&svc, "m1.small").await.expect("as magnum").name,
        "m1.small"
    );
}
