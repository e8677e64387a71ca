//! The service catalog of a Keystone v3 token (`token.catalog`), and the endpoint Magnum
//! picks from it for a service: by service type, the interface of the service's
//! `[<service>_client] endpoint_type` (`publicURL` by default, keystoneauth reads
//! `publicURL`/`public` alike) and `region_name` (any region when unset), the first match in
//! the catalog's order, as keystoneauth's `get_endpoint` returns it.

use serde::Deserialize;

/// An endpoint interface (keystoneauth accepts `public` and `publicURL` alike).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Interface {
    Public,
    Internal,
    Admin,
}

impl Interface {
    /// Magnum's `endpoint_type` option text (`publicURL`, `internalURL`, `adminURL`, or
    /// the bare interface name); `None` for anything else.
    pub fn parse(text: &str) -> Option<Interface> {
        match text.trim().trim_end_matches("URL") {
            "public" => Some(Interface::Public),
            "internal" => Some(Interface::Internal),
            "admin" => Some(Interface::Admin),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Interface::Public => "public",
            Interface::Internal => "internal",
            Interface::Admin => "admin",
        }
    }
}

/// What picks an endpoint: the service types to look for (in order: Cinder is
/// `block-storage` or `volumev3`), the interface and the region.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EndpointChoice<'a> {
    pub service_types: &'a [&'a str],
    pub interface: Interface,
    pub region: Option<&'a str>,
}

#[derive(Clone, Debug, Default, Deserialize, PartialEq, Eq)]
struct Service {
    #[serde(rename = "type", default)]
    service_type: String,
    #[serde(default)]
    endpoints: Vec<Endpoint>,
}

#[derive(Clone, Debug, Default, Deserialize, PartialEq, Eq)]
struct Endpoint {
    #[serde(default)]
    interface: String,
    #[serde(default)]
    url: String,
    #[serde(default)]
    region_id: Option<String>,
    #[serde(default)]
    region: Option<String>,
}

/// A token's catalog, in Keystone's order.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ServiceCatalog {
    services: Vec<Service>,
}

/// A catalog larger than this many services or endpoints per service is refused: it comes
/// from Keystone, but nothing read from the network is unbounded here.
const MAX_ENTRIES: usize = 1024;

impl ServiceCatalog {
    /// The catalog of a token validation or issue body (`{"token": {"catalog": […]}}`);
    /// an empty one when the token carries none.
    pub fn from_token_body(body: &[u8]) -> Result<ServiceCatalog, serde_json::Error> {
        #[derive(Deserialize)]
        struct Body {
            token: TokenPart,
        }
        #[derive(Deserialize)]
        struct TokenPart {
            #[serde(default)]
            catalog: Vec<Service>,
        }
        let mut services = serde_json::from_slice::<Body>(body)?.token.catalog;
        services.truncate(MAX_ENTRIES);
        for s in &mut services {
            s.endpoints.truncate(MAX_ENTRIES);
        }
        Ok(ServiceCatalog { services })
    }

    /// The URL of the first endpoint that matches, without a trailing slash; `None` when
    /// the catalog has no such endpoint (Magnum: `EndpointNotFound`).
    pub fn endpoint(&self, choice: &EndpointChoice<'_>) -> Option<String> {
        choice.service_types.iter().find_map(|wanted| {
            self.services
                .iter()
                .filter(|s| s.service_type == *wanted)
                .flat_map(|s| &s.endpoints)
                .find(|e| {
                    e.interface == choice.interface.as_str()
                        && choice.region.is_none_or(|r| {
                            e.region_id.as_deref() == Some(r) || e.region.as_deref() == Some(r)
                        })
                        && !e.url.is_empty()
                })
                .map(|e| e.url.trim_end_matches('/').to_string())
        })
    }

    pub fn is_empty(&self) -> bool {
        self.services.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn catalog() -> ServiceCatalog {
        let body = json!({"token": {"catalog": [
            {"type": "identity", "name": "keystone", "endpoints": [
                {"interface": "public", "region_id": "RegionOne", "region": "RegionOne", "url": "http://ks/v3/"}]},
            {"type": "image", "name": "glance", "endpoints": [
                {"interface": "internal", "region_id": "RegionOne", "url": "http://glance-int"},
                {"interface": "public", "region_id": "RegionTwo", "url": "http://glance-two"},
                {"interface": "public", "region_id": "RegionOne", "url": "http://glance-one"}]},
            {"type": "volumev3", "name": "cinderv3", "endpoints": [
                {"interface": "public", "region_id": "RegionOne", "url": "http://cinder/v3/p1"}]},
        ]}});
        ServiceCatalog::from_token_body(body.to_string().as_bytes()).expect("catalog")
    }

    #[test]
    fn magnums_endpoint_types_name_the_interfaces() {
        assert_eq!(Interface::parse("publicURL"), Some(Interface::Public));
        assert_eq!(Interface::parse("internalURL"), Some(Interface::Internal));
        assert_eq!(Interface::parse("adminURL"), Some(Interface::Admin));
        assert_eq!(Interface::parse("public"), Some(Interface::Public));
        assert_eq!(Interface::parse("privateURL"), None);
    }

    #[test]
    fn the_first_endpoint_of_the_type_interface_and_region_is_chosen() {
        let c = catalog();
        let pick = |types: &'static [&'static str], interface, region| {
            c.endpoint(&EndpointChoice {
                service_types: types,
                interface,
                region,
            })
        };
        assert_eq!(
            pick(&["image"], Interface::Public, None).as_deref(),
            Some("http://glance-two"),
            "any region: the catalog's order"
        );
        assert_eq!(
            pick(&["image"], Interface::Public, Some("RegionOne")).as_deref(),
            Some("http://glance-one")
        );
        assert_eq!(
            pick(&["image"], Interface::Internal, Some("RegionOne")).as_deref(),
            Some("http://glance-int")
        );
        assert_eq!(pick(&["image"], Interface::Admin, None), None);
        assert_eq!(
            pick(&["block-storage", "volumev3"], Interface::Public, None).as_deref(),
            Some("http://cinder/v3/p1"),
            "Cinder under either of its types"
        );
        assert_eq!(
            pick(&["identity"], Interface::Public, None).as_deref(),
            Some("http://ks/v3"),
            "no trailing slash"
        );
        assert_eq!(pick(&["compute"], Interface::Public, None), None);
    }

    #[test]
    fn a_token_without_a_catalog_has_an_empty_one() {
        let c =
            ServiceCatalog::from_token_body(br#"{"token": {"expires_at": "x"}}"#).expect("body");
        assert!(c.is_empty());
        assert!(ServiceCatalog::from_token_body(b"[]").is_err());
    }
}
