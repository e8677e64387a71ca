//! Magnum's `attr_validator` (with the image look-up of
//! `validation.enforce_driver_supported`): a template's or a cluster's image, flavors,
//! keypair and networks looked up in the cloud as the requesting user, in Magnum's order,
//! with its texts and codes. Only a request that came through Keystone carries a catalog to
//! look in; a noauth request is not checked (docs/compatibility.md,
//! `diff:no-openstack-services`).

use serde_json::{Map, Value};

use crate::api::body::{py_int, py_str};
use crate::error::{ApiError, ApiResult};
use crate::model::{ClusterTemplate, RequestContext};
use crate::openstack::lookups::{self, Image, LookupError};
use crate::openstack::Session;
use crate::state::AppState;

/// The label a boot volume's size is read from.
const BOOT_VOLUME_SIZE: &str = "boot_volume_size";

/// The attributes `validate_os_resources` checks (`attr_validator.validators`, in its order).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct OsResources<'a> {
    pub image_id: Option<&'a str>,
    pub flavor_id: Option<&'a str>,
    pub master_flavor_id: Option<&'a str>,
    pub external_network_id: Option<&'a str>,
    pub fixed_network: Option<&'a str>,
    pub fixed_subnet: Option<&'a str>,
}

impl<'a> OsResources<'a> {
    pub fn of_template(t: &'a ClusterTemplate) -> OsResources<'a> {
        OsResources {
            image_id: t.image_id.as_deref(),
            flavor_id: t.flavor_id.as_deref(),
            master_flavor_id: t.master_flavor_id.as_deref(),
            external_network_id: t.external_network_id.as_deref(),
            fixed_network: t.fixed_network.as_deref(),
            fixed_subnet: t.fixed_subnet.as_deref(),
        }
    }

    /// What `validate_os_resources` checks for a cluster: each of the cluster's values that
    /// is set and not empty, else the template's.
    pub fn over(self, template: OsResources<'a>) -> OsResources<'a> {
        let pick = |c: Option<&'a str>, t: Option<&'a str>| c.filter(|v| !v.is_empty()).or(t);
        OsResources {
            image_id: pick(self.image_id, template.image_id),
            flavor_id: pick(self.flavor_id, template.flavor_id),
            master_flavor_id: pick(self.master_flavor_id, template.master_flavor_id),
            external_network_id: pick(self.external_network_id, template.external_network_id),
            fixed_network: pick(self.fixed_network, template.fixed_network),
            fixed_subnet: pick(self.fixed_subnet, template.fixed_subnet),
        }
    }
}

/// The cloud checks of one request, made with the requesting user's token.
pub struct CloudChecks<'a> {
    session: Session<'a>,
    /// `[openstack] default_boot_volume_size` (Magnum's `[cinder]` option).
    default_boot_volume_size: i64,
}

impl<'a> CloudChecks<'a> {
    /// The checks of a request Keystone authenticated; `None` for a noauth one.
    pub fn of(state: &'a AppState, ctx: &RequestContext) -> Option<CloudChecks<'a>> {
        let cloud = state.cloud.as_ref()?;
        let caller = ctx.caller.as_ref()?;
        Some(CloudChecks {
            session: caller.session(cloud),
            default_boot_volume_size: state.config.openstack.default_boot_volume_size,
        })
    }

    /// `validate_os_resources(context, template, cluster)`: the template's resources, or a
    /// cluster's over its template's, then a cluster's keypair. The image found, when one
    /// was named.
    pub async fn os_resources(
        &self,
        template: OsResources<'_>,
        cluster: Option<(OsResources<'_>, Option<&str>)>,
    ) -> ApiResult<Option<Image>> {
        let r = match cluster {
            Some((c, _)) => c.over(template),
            None => template,
        };
        let image = match r.image_id {
            Some(ident) => Some(self.image(ident).await?),
            None => None,
        };
        for flavor in [r.flavor_id, r.master_flavor_id].into_iter().flatten() {
            self.flavor(flavor).await?;
        }
        if let Some(net) = r.external_network_id {
            self.external_network(net).await?;
        }
        if let Some(net) = r.fixed_network {
            self.fixed_network(net).await?;
        }
        if let Some(subnet) = r.fixed_subnet {
            self.fixed_subnet(subnet).await?;
        }
        if let Some((_, Some(keypair))) = cluster {
            self.keypair(keypair).await?;
        }
        Ok(image)
    }

    /// `validate_image`: the image, which must say its `os_distro`.
    pub async fn image(&self, ident: &str) -> ApiResult<Image> {
        let image = lookups::find_image(&self.session, ident)
            .await
            .map_err(|e| match e {
                LookupError::NotFound => ApiError::ImageNotFound(ident.into()),
                LookupError::Duplicate => ApiError::Conflict(format!(
                    "Multiple images exist with same name '{ident}'. Please use the image ID instead."
                )),
                LookupError::Forbidden => ApiError::ImageNotAuthorized(ident.into()),
                other => failed("glance", other),
            })?;
        if image.os_distro.as_deref().is_none_or(str::is_empty) {
            return Err(ApiError::OsDistroFieldNotFound(ident.into()));
        }
        Ok(image)
    }

    /// `enforce_driver_supported`'s look-up of a template's image for its distro and
    /// `magnum_driver`: a missing or forbidden image is refused; any other failure leaves
    /// the template as the body describes it (`validate_image` then refuses it).
    pub async fn image_for_driver(&self, ident: &str) -> ApiResult<Option<Image>> {
        match lookups::find_image(&self.session, ident).await {
            Ok(image) => Ok(Some(image)),
            Err(LookupError::NotFound) => Err(ApiError::ImageNotFound(ident.into())),
            Err(LookupError::Forbidden) => Err(ApiError::ImageNotAuthorized(ident.into())),
            Err(_) => Ok(None),
        }
    }

    /// `validate_flavor`.
    pub async fn flavor(&self, ident: &str) -> ApiResult<lookups::Flavor> {
        lookups::find_flavor(&self.session, ident)
            .await
            .map_err(|e| match e {
                LookupError::NotFound => ApiError::FlavorNotFound(ident.into()),
                other => failed("nova", other),
            })
    }

    /// `validate_keypair`: the requesting user's keypair.
    pub async fn keypair(&self, name: &str) -> ApiResult<()> {
        lookups::keypair_exists(&self.session, name)
            .await
            .map_err(|e| match e {
                LookupError::NotFound => ApiError::KeyPairNotFound(name.into()),
                other => failed("nova", other),
            })
    }

    /// `validate_external_network`.
    pub async fn external_network(&self, ident: &str) -> ApiResult<()> {
        let found = lookups::find_external_network(&self.session, ident).await;
        neutron_answer(
            found,
            ident,
            ApiError::ExternalNetworkNotFound,
            "external network",
        )
    }

    /// `validate_fixed_network`.
    pub async fn fixed_network(&self, ident: &str) -> ApiResult<()> {
        let found = lookups::find_network(&self.session, ident).await;
        neutron_answer(found, ident, ApiError::FixedNetworkNotFound, "network")
    }

    /// `validate_fixed_subnet`.
    pub async fn fixed_subnet(&self, ident: &str) -> ApiResult<()> {
        let found = lookups::find_subnet(&self.session, ident).await;
        neutron_answer(found, ident, ApiError::FixedSubnetNotFound, "subnet")
    }

    /// `validate_flavor_root_volume_size` with the `boot_volume_size` label of `labels`
    /// (else `[openstack] default_boot_volume_size`): without a boot volume, the flavor
    /// must exist and have a root disk. As in Magnum, no flavor at all is "Unable to find
    /// flavor None.".
    pub async fn flavor_root_volume_size(
        &self,
        flavor: Option<&str>,
        labels: Option<&Map<String, Value>>,
    ) -> ApiResult<()> {
        if boot_volume_size(labels, self.default_boot_volume_size)? > 0 {
            return Ok(());
        }
        let Some(ident) = flavor else {
            return Err(ApiError::FlavorNotFound("None".into()));
        };
        if self.flavor(ident).await?.disk == 0 {
            return Err(ApiError::FlavorZeroRootVolumeNotSupported);
        }
        Ok(())
    }
}

/// `strutils.validate_integer(labels.get('boot_volume_size', default))`. A text that is no
/// integer raises `ValueError` in Magnum (a 500); here it is a 400 with its text.
fn boot_volume_size(labels: Option<&Map<String, Value>>, default: i64) -> ApiResult<i64> {
    let Some(v) = labels.and_then(|l| l.get(BOOT_VOLUME_SIZE)) else {
        return Ok(default);
    };
    let text = match v {
        Value::String(s) => s.clone(),
        other => py_str(other),
    };
    py_int(&text).ok_or_else(|| {
        ApiError::InvalidParameterValue(format!("{BOOT_VOLUME_SIZE} must be an integer"))
    })
}

/// Magnum's answer to a Neutron look-up of `ident` (a `what`): its not-found error, or
/// 409 `Multiple <what>s exist with same name '<ident>'. Please use the <what> ID instead.`
fn neutron_answer(
    found: Result<lookups::Named, LookupError>,
    ident: &str,
    not_found: fn(String) -> ApiError,
    what: &str,
) -> ApiResult<()> {
    found.map(drop).map_err(|e| match e {
        LookupError::NotFound => not_found(ident.into()),
        LookupError::Duplicate => ApiError::Conflict(format!(
            "Multiple {what}s exist with same name '{ident}'. Please use the {what} ID instead."
        )),
        other => failed("neutron", other),
    })
}

/// A look-up that failed for another reason than what Magnum names: the service could not
/// be asked (503), or it refused the user (Magnum: 500; here 400 saying so).
fn failed(service: &str, e: LookupError) -> ApiError {
    match e {
        LookupError::Forbidden | LookupError::Refused(_) => ApiError::InvalidParameterValue(
            format!("{service} refused the look-up as the requesting user (not authorized)"),
        ),
        LookupError::Unavailable(why) => ApiError::ServiceUnavailable(why),
        LookupError::NotFound | LookupError::Duplicate => {
            ApiError::ServiceUnavailable(format!("{service} answered what cannot be used: {e}"))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::openstack::lookups::tests::{catalog, fixed_cloud};
    use crate::openstack::{Cloud, Interface};
    use crate::secret::Secret;
    use std::sync::Arc;
    use std::time::Duration;

    fn checks<'a>(cloud: &'a Cloud, base: &str) -> CloudChecks<'a> {
        CloudChecks {
            session: cloud.session(Secret::new("t"), Arc::new(catalog(base))),
            default_boot_volume_size: 0,
        }
    }

    fn cloud() -> Cloud {
        Cloud::new(Duration::from_secs(5), Interface::Public, None).expect("cloud")
    }

    fn text(r: ApiResult<impl std::fmt::Debug>) -> (u16, String) {
        let e = r.expect_err("refused");
        (e.status().as_u16(), e.to_string())
    }

    #[tokio::test]
    async fn a_template_is_checked_in_magnums_order_with_its_texts() {
        let base = fixed_cloud().await;
        let cloud = cloud();
        let c = checks(&cloud, &base);
        let ok = OsResources {
            image_id: Some("ubuntu-2204-kube"),
            flavor_id: Some("m1.small"),
            master_flavor_id: Some("3"),
            external_network_id: Some("public"),
            fixed_network: Some("n-d1"),
            fixed_subnet: Some("private-subnet"),
        };
        let image = c
            .os_resources(ok, None)
            .await
            .expect("valid")
            .expect("image");
        assert_eq!(image.os_distro.as_deref(), Some("ubuntu"));

        let with = |f: fn(&mut OsResources<'static>)| {
            let mut r = ok;
            f(&mut r);
            r
        };
        let cases: Vec<(OsResources, u16, &str)> = vec![
            (
                with(|r| r.image_id = Some("nope")),
                400,
                "Image nope could not be found.",
            ),
            (
                with(|r| r.image_id = Some("twin")),
                409,
                "Multiple images exist with same name 'twin'. Please use the image ID instead.",
            ),
            (
                with(|r| r.image_id = Some("bare")),
                400,
                "Image bare doesn't contain os_distro field.",
            ),
            (
                with(|r| r.flavor_id = Some("m1.huge")),
                400,
                "Unable to find flavor m1.huge.",
            ),
            (
                with(|r| r.master_flavor_id = Some("x")),
                400,
                "Unable to find flavor x.",
            ),
            (
                with(|r| r.external_network_id = Some("dup")),
                400,
                "Unable to find external network dup.",
            ),
            (
                with(|r| r.fixed_network = Some("dup")),
                409,
                "Multiple networks exist with same name 'dup'. Please use the network ID instead.",
            ),
            (
                with(|r| r.fixed_network = Some("none")),
                400,
                "Unable to find fixed network none.",
            ),
            (
                with(|r| r.fixed_subnet = Some("none")),
                400,
                "Unable to find fixed subnet none.",
            ),
            // The image is checked before the flavor.
            (
                with(|r| {
                    r.image_id = Some("nope");
                    r.flavor_id = Some("m1.huge");
                }),
                400,
                "Image nope could not be found.",
            ),
        ];
        for (r, status, want) in cases {
            assert_eq!(
                text(c.os_resources(r, None).await),
                (status, want.to_string()),
                "{r:?}"
            );
        }
    }

    #[tokio::test]
    async fn a_cluster_overrides_the_templates_resources_and_needs_its_keypair() {
        let base = fixed_cloud().await;
        let cloud = cloud();
        let c = checks(&cloud, &base);
        let template = OsResources {
            image_id: Some("u1"),
            flavor_id: Some("m1.huge"),
            ..Default::default()
        };
        let cluster = OsResources {
            flavor_id: Some("m1.small"),
            master_flavor_id: Some(""),
            ..Default::default()
        };
        assert!(c
            .os_resources(template, Some((cluster, Some("default"))))
            .await
            .is_ok());
        assert_eq!(
            text(
                c.os_resources(template, Some((OsResources::default(), None)))
                    .await
            ),
            (400, "Unable to find flavor m1.huge.".into())
        );
        assert_eq!(
            text(
                c.os_resources(template, Some((cluster, Some("mine"))))
                    .await
            ),
            (404, "Unable to find keypair mine.".into())
        );
    }

    #[tokio::test]
    async fn a_flavor_without_a_root_disk_needs_a_boot_volume() {
        let base = fixed_cloud().await;
        let cloud = cloud();
        let c = checks(&cloud, &base);
        let labels = |v: &str| {
            let mut m = Map::new();
            m.insert(BOOT_VOLUME_SIZE.into(), Value::String(v.into()));
            m
        };
        assert!(c
            .flavor_root_volume_size(Some("m1.small"), None)
            .await
            .is_ok());
        assert_eq!(
            text(c.flavor_root_volume_size(Some("m1.tiny"), None).await),
            (
                400,
                "Flavor with zero root volume size is not supported when boot_volume_size is zero."
                    .into()
            )
        );
        assert!(c
            .flavor_root_volume_size(Some("m1.tiny"), Some(&labels("10")))
            .await
            .is_ok());
        assert_eq!(
            text(c.flavor_root_volume_size(None, None).await),
            (400, "Unable to find flavor None.".into())
        );
        assert_eq!(
            text(
                c.flavor_root_volume_size(Some("m1.small"), Some(&labels("ten")))
                    .await
            ),
            (400, "boot_volume_size must be an integer".into())
        );
    }

    #[tokio::test]
    async fn a_service_missing_from_the_catalog_is_a_503_not_a_pass() {
        let cloud = cloud();
        let c = CloudChecks {
            session: cloud.session(Secret::new("t"), Arc::default()),
            default_boot_volume_size: 0,
        };
        assert_eq!(
            text(c.flavor("m1.small").await),
            (
                503,
                "The service is temporarily unavailable: no nova endpoint in the catalog".into()
            )
        );
    }
}
