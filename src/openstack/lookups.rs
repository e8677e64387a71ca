//! The look-ups Magnum makes in the cloud (`magnum/api/attr_validator.py` through
//! openstacksdk), typed: an image by id or name (Glance), a flavor by name or id and a
//! keypair by name (Nova), an external network, a network and a subnet by name or id
//! (Neutron). Each returns what was found or why not; the API turns that into Magnum's
//! texts.

use serde::Deserialize;
use serde_json::Value;

use super::session::{CallError, Service, Session};

/// Why a look-up found nothing usable.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum LookupError {
    #[error("not found")]
    NotFound,
    /// More than one matches the name (Magnum: use the id instead).
    #[error("more than one match")]
    Duplicate,
    #[error("not authorized")]
    Forbidden,
    /// A change the service refused, with its reason.
    #[error("{0}")]
    Refused(String),
    #[error("{0}")]
    Unavailable(String),
}

impl From<CallError> for LookupError {
    fn from(e: CallError) -> Self {
        match e {
            CallError::NotFound => LookupError::NotFound,
            CallError::Forbidden => LookupError::Forbidden,
            CallError::Conflict => LookupError::Duplicate,
            CallError::Refused(why) => LookupError::Refused(why),
            other => LookupError::Unavailable(other.to_string()),
        }
    }
}

/// A Glance image, with the properties Magnum and magnum-cluster-api read.
#[derive(Clone, Debug, Default, Deserialize, PartialEq, Eq)]
pub struct Image {
    pub id: String,
    #[serde(default)]
    pub name: Option<String>,
    #[serde(default)]
    pub os_distro: Option<String>,
    #[serde(default)]
    pub hw_disk_bus: Option<String>,
    /// The driver Magnum picks for a template on this image when none is named.
    #[serde(default)]
    pub magnum_driver: Option<String>,
}

/// A Nova flavor.
#[derive(Clone, Debug, Default, Deserialize, PartialEq, Eq)]
pub struct Flavor {
    pub id: String,
    pub name: String,
    /// Root disk size in GB (0: the image's size, refused by Magnum without a boot volume).
    #[serde(default)]
    pub disk: i64,
    /// MiB of memory and virtual CPUs (the cluster autoscaler's capacity annotations).
    #[serde(default)]
    pub ram: i64,
    #[serde(default)]
    pub vcpus: i64,
}

/// A Neutron network or subnet (what matching needs).
#[derive(Clone, Debug, Default, Deserialize, PartialEq, Eq)]
pub struct Named {
    pub id: String,
    #[serde(default)]
    pub name: String,
}

/// The one element of `items` whose id or name is `ident`, as openstacksdk's
/// `_get_one_match` and Magnum's loops pick it.
fn one_match<T: Clone>(
    items: &[T],
    ident: &str,
    id: impl Fn(&T) -> &str,
    name: impl Fn(&T) -> Option<&str>,
) -> Result<T, LookupError> {
    let mut found = items
        .iter()
        .filter(|i| id(i) == ident || name(i) == Some(ident));
    match (found.next(), found.next()) {
        (None, _) => Err(LookupError::NotFound),
        (Some(one), None) => Ok(one.clone()),
        (Some(_), Some(_)) => Err(LookupError::Duplicate),
    }
}

fn list<T: for<'de> Deserialize<'de>>(body: Value, key: &str) -> Result<Vec<T>, LookupError> {
    let items = body.get(key).cloned().unwrap_or(Value::Array(Vec::new()));
    serde_json::from_value(items)
        .map_err(|e| LookupError::Unavailable(format!("cannot read the {key}: {e}")))
}

/// openstacksdk's `find_image(ident, ignore_missing=False)`: by id first, then by name.
pub async fn find_image(s: &Session<'_>, ident: &str) -> Result<Image, LookupError> {
    if !ident.contains('/') && !ident.is_empty() {
        match s
            .get(Service::Image, &format!("/v2/images/{ident}"), &[], &[])
            .await
        {
            Ok(body) => {
                return serde_json::from_value(body)
                    .map_err(|e| LookupError::Unavailable(format!("cannot read the image: {e}")))
            }
            Err(CallError::NotFound) => {}
            Err(e) => return Err(e.into()),
        }
    }
    let body = s
        .get(Service::Image, "/v2/images", &[("name", ident)], &[])
        .await?;
    let images: Vec<Image> = list(body, "images")?;
    one_match(&images, ident, |i| &i.id, |i| i.name.as_deref())
}

/// Magnum's `validate_flavor`: every flavor listed (openstacksdk's `flavors()`, with
/// details), the first whose name or id is `ident`.
pub async fn find_flavor(s: &Session<'_>, ident: &str) -> Result<Flavor, LookupError> {
    let body = s.get(Service::Compute, "/flavors/detail", &[], &[]).await?;
    let flavors: Vec<Flavor> = list(body, "flavors")?;
    flavors
        .into_iter()
        .find(|f| f.name == ident || f.id == ident)
        .ok_or(LookupError::NotFound)
}

/// Nova's keypair `name` of the caller (Magnum's `validate_keypair`).
pub async fn keypair_exists(s: &Session<'_>, name: &str) -> Result<(), LookupError> {
    if name.is_empty() || name.contains('/') {
        return Err(LookupError::NotFound);
    }
    s.get(Service::Compute, &format!("/os-keypairs/{name}"), &[], &[])
        .await?;
    Ok(())
}

/// Magnum's `validate_external_network`: among the networks with `router:external`.
pub async fn find_external_network(s: &Session<'_>, ident: &str) -> Result<Named, LookupError> {
    let body = s
        .get(
            Service::Network,
            "/v2.0/networks",
            &[("router:external", "true")],
            &[],
        )
        .await?;
    let nets: Vec<Named> = list(body, "networks")?;
    one_match(&nets, ident, |n| &n.id, |n| Some(&n.name))
}

/// Magnum's `validate_fixed_network`: among every network the caller sees.
pub async fn find_network(s: &Session<'_>, ident: &str) -> Result<Named, LookupError> {
    let body = s.get(Service::Network, "/v2.0/networks", &[], &[]).await?;
    let nets: Vec<Named> = list(body, "networks")?;
    one_match(&nets, ident, |n| &n.id, |n| Some(&n.name))
}

/// Magnum's `validate_fixed_subnet`: among every subnet the caller sees.
pub async fn find_subnet(s: &Session<'_>, ident: &str) -> Result<Named, LookupError> {
    let body = s.get(Service::Network, "/v2.0/subnets", &[], &[]).await?;
    let subnets: Vec<Named> = list(body, "subnets")?;
    one_match(&subnets, ident, |n| &n.id, |n| Some(&n.name))
}

/// Cinder's default volume type's name (magnum-cluster-api's type for boot, docker and
/// etcd volumes when no label names one).
pub async fn default_volume_type(s: &Session<'_>) -> Result<String, LookupError> {
    let body = s.get(Service::Volume, "/types/default", &[], &[]).await?;
    body["volume_type"]["name"]
        .as_str()
        .map(str::to_string)
        .ok_or_else(|| LookupError::Unavailable("cinder answered a type without a name".into()))
}

/// The names of Cinder's volume types the caller sees (magnum-cluster-api's StorageClasses,
/// one per type).
pub async fn volume_types(s: &Session<'_>) -> Result<Vec<String>, LookupError> {
    let body = s.get(Service::Volume, "/types", &[], &[]).await?;
    let types: Vec<Named> = list(body, "volume_types")?;
    Ok(types.into_iter().map(|t| t.name).collect())
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::openstack::{Cloud, Interface, ServiceCatalog};
    use crate::secret::Secret;
    use axum::extract::{Path, RawQuery};
    use axum::routing::get;
    use serde_json::json;
    use std::time::Duration;

    /// A cloud answering from fixed data: images `u1` (ubuntu) and two named `twin`, flavors
    /// m1.small/m1.large, keypair `default`, networks `public` (external) and two `dup`,
    /// subnet `private-subnet`; image `bare` has no `os_distro`, flavor `m1.tiny` a zero disk.
    pub(crate) async fn fixed_cloud() -> String {
        let images = || {
            vec![
                json!({"id": "u1", "name": "ubuntu-2204-kube", "os_distro": "ubuntu", "hw_disk_bus": "scsi"}),
                json!({"id": "t1", "name": "twin"}),
                json!({"id": "t2", "name": "twin"}),
                json!({"id": "b1", "name": "bare"}),
            ]
        };
        let router = axum::Router::new()
            .route(
                "/image/v2/images/{id}",
                get(move |Path(id): Path<String>| async move {
                    match images().into_iter().find(|i| i["id"] == json!(id)) {
                        Some(i) => Ok(axum::Json(i)),
                        None => Err(axum::http::StatusCode::NOT_FOUND),
                    }
                }),
            )
            .route(
                "/image/v2/images",
                get(move |RawQuery(q): RawQuery| async move {
                    let name = q.unwrap_or_default().trim_start_matches("name=").to_string();
                    let found: Vec<Value> =
                        images().into_iter().filter(|i| i["name"] == json!(name)).collect();
                    axum::Json(json!({"images": found}))
                }),
            )
            .route(
                "/compute/flavors/detail",
                get(|| async {
                    axum::Json(json!({"flavors": [{"id": "0", "name": "m1.tiny", "disk": 0}, {"id": "1", "name": "m1.small", "disk": 20}, {"id": "3", "name": "m1.large", "disk": 80}]}))
                }),
            )
            .route(
                "/compute/os-keypairs/{name}",
                get(|Path(name): Path<String>| async move {
                    if name == "default" {
                        Ok(axum::Json(json!({"keypair": {"name": "default"}})))
                    } else {
                        Err(axum::http::StatusCode::NOT_FOUND)
                    }
                }),
            )
            .route(
                "/network/v2.0/networks",
                get(|RawQuery(q): RawQuery| async move {
                    let external = q.is_some_and(|q| q.contains("router%3Aexternal=true") || q.contains("router:external=true"));
                    let mut nets = vec![json!({"id": "n-pub", "name": "public"})];
                    if !external {
                        nets.push(json!({"id": "n-d1", "name": "dup"}));
                        nets.push(json!({"id": "n-d2", "name": "dup"}));
                    }
                    axum::Json(json!({"networks": nets}))
                }),
            )
            .route(
                "/network/v2.0/subnets",
                get(|| async { axum::Json(json!({"subnets": [{"id": "s1", "name": "private-subnet"}]})) }),
            );
        crate::openstack::session::tests::serve(router).await
    }

    pub(crate) fn catalog(base: &str) -> ServiceCatalog {
        let ep = |t: &str, path: &str| json!({"type": t, "endpoints": [{"interface": "public", "url": format!("{base}/{path}")}]});
        let body = json!({"token": {"catalog": [ep("image", "image"), ep("compute", "compute"), ep("network", "network")]}});
        ServiceCatalog::from_token_body(body.to_string().as_bytes()).expect("catalog")
    }

    #[tokio::test]
    async fn look_ups_find_by_id_or_name_and_tell_missing_from_ambiguous() {
        let base = fixed_cloud().await;
        let cloud = Cloud::new(Duration::from_secs(5), Interface::Public, None).expect("cloud");
        let s = cloud.session(Secret::new("t"), std::sync::Arc::new(catalog(&base)));

        let by_id = find_image(&s, "u1").await.expect("by id");
        assert_eq!(by_id.os_distro.as_deref(), Some("ubuntu"));
        assert_eq!(by_id.hw_disk_bus.as_deref(), Some("scsi"));
        assert_eq!(
            find_image(&s, "ubuntu-2204-kube")
                .await
                .expect("by name")
                .id,
            "u1"
        );
        assert_eq!(find_image(&s, "twin").await, Err(LookupError::Duplicate));
        assert_eq!(find_image(&s, "nope").await, Err(LookupError::NotFound));

        assert_eq!(find_flavor(&s, "m1.large").await.expect("by name").id, "3");
        assert_eq!(find_flavor(&s, "1").await.expect("by id").name, "m1.small");
        assert_eq!(find_flavor(&s, "m1.huge").await, Err(LookupError::NotFound));

        assert_eq!(keypair_exists(&s, "default").await, Ok(()));
        assert_eq!(
            keypair_exists(&s, "other").await,
            Err(LookupError::NotFound)
        );

        assert_eq!(
            find_external_network(&s, "public")
                .await
                .expect("external")
                .id,
            "n-pub"
        );
        assert_eq!(
            find_external_network(&s, "dup").await,
            Err(LookupError::NotFound)
        );
        assert_eq!(find_network(&s, "dup").await, Err(LookupError::Duplicate));
        assert_eq!(find_network(&s, "n-d1").await.expect("by id").name, "dup");
        assert_eq!(
            find_subnet(&s, "private-subnet").await.expect("subnet").id,
            "s1"
        );
        assert_eq!(find_subnet(&s, "other").await, Err(LookupError::NotFound));
    }
}
