//! `[openstack]`: how magnum-rs reaches the services in the catalog, as Magnum's
//! `[<service>_client]` sections (`endpoint_type`, `region_name`) say it for each service,
//! here once for all of them, and how long a call may take.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::catalog::Interface;
use super::session::Cloud;

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct OpenStackConfig {
    /// The catalog interface to call: `publicURL` (Magnum's default), `internalURL` or
    /// `adminURL` (the bare names are accepted too).
    pub endpoint_type: String,
    /// Only endpoints of this region; empty: the first in the catalog's order, any region.
    pub region_name: String,
    /// Seconds one call to Glance, Nova, Neutron or Cinder may take (connecting included);
    /// then the request is answered 503.
    pub timeout: u64,
    /// GB of the boot volume when a cluster's `boot_volume_size` label gives none (Magnum's
    /// `[cinder] default_boot_volume_size`); 0: servers boot from the flavor's root disk,
    /// which must then not be zero.
    pub default_boot_volume_size: i64,
    /// The boot volume's type when a `boot_volume_type` label names none (Magnum's
    /// `[cinder] default_boot_volume_type`); empty: Cinder's default type.
    pub default_boot_volume_type: String,
}

impl Default for OpenStackConfig {
    fn default() -> Self {
        OpenStackConfig {
            endpoint_type: "publicURL".into(),
            region_name: String::new(),
            timeout: 10,
            default_boot_volume_size: 0,
            default_boot_volume_type: String::new(),
        }
    }
}

impl OpenStackConfig {
    /// The HTTP side these settings describe; refused when `endpoint_type` is not one.
    pub fn cloud(&self) -> anyhow::Result<Cloud> {
        let interface = Interface::parse(&self.endpoint_type).ok_or_else(|| {
            anyhow::anyhow!(
                "[openstack] endpoint_type {:?} is none of publicURL, internalURL, adminURL",
                self.endpoint_type
            )
        })?;
        let region = Some(self.region_name.trim())
            .filter(|r| !r.is_empty())
            .map(str::to_string);
        Ok(Cloud::new(
            Duration::from_secs(self.timeout.max(1)),
            interface,
            region,
        )?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_defaults_and_magnums_endpoint_types_make_a_cloud() {
        assert!(OpenStackConfig::default().cloud().is_ok());
        for t in ["internalURL", "admin", "public"] {
            let c = OpenStackConfig {
                endpoint_type: t.into(),
                ..Default::default()
            };
            assert!(c.cloud().is_ok(), "{t}");
        }
        let bad = OpenStackConfig {
            endpoint_type: "private".into(),
            ..Default::default()
        };
        assert!(bad.cloud().is_err());
    }
}
