//! `OpenStack-API-Version` negotiation (Magnum's `base.Version` and `v1.Controller._route`).

use axum::extract::Request;
use axum::http::{HeaderMap, HeaderName, HeaderValue};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use crate::error::{ApiError, ErrorMarker};

pub const SERVICE: &str = "container-infrastructure-management";
/// Service tokens accepted in the request header (Magnum ≥ 2026.1).
pub const ACCEPTED_SERVICES: [&str; 3] = [
    "container-infrastructure-management",
    "container-infrastructure",
    "container-infra",
];
pub const MIN: Version = Version { major: 1, minor: 1 };
pub const MAX: Version = Version {
    major: 1,
    minor: 14,
};

pub const HEADER: &str = "openstack-api-version";
pub const MIN_HEADER: &str = "openstack-api-minimum-version";
pub const MAX_HEADER: &str = "openstack-api-maximum-version";

/// A negotiated microversion, available to handlers as a request extension.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Version {
    pub major: u32,
    pub minor: u32,
}

impl Version {
    pub const fn new(major: u32, minor: u32) -> Self {
        Version { major, minor }
    }

    /// `@api_version(min)`: 406 with Magnum's gate text when below `min`.
    pub fn require(self, min: Version, method: &str) -> Result<(), ApiError> {
        if self < min {
            return Err(ApiError::VersionNotAvailable {
                version: self.to_string(),
                method: method.to_string(),
            });
        }
        Ok(())
    }

    pub fn at_least(self, major: u32, minor: u32) -> bool {
        self >= Version::new(major, minor)
    }
}

impl std::fmt::Display for Version {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}.{}", self.major, self.minor)
    }
}

/// A version as the client wrote it (possibly negative or huge), echoed in refusals.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Requested {
    pub major: i64,
    pub minor: i64,
}

impl std::fmt::Display for Requested {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}.{}", self.major, self.minor)
    }
}

/// Why a header was refused.
#[derive(Debug, PartialEq, Eq)]
pub enum Refusal {
    /// Malformed: the plain webob 406 with this detail.
    Malformed(&'static str),
    /// Well-formed but outside the range, or another major version.
    Unsupported { requested: Requested },
}

/// Parses the header value the way Magnum does (§2.2 of the reference).
pub fn negotiate(value: Option<&str>) -> Result<Version, Refusal> {
    let Some(value) = value else {
        return Ok(MIN);
    };
    let tokens: Vec<&str> = value.split_whitespace().collect();
    if tokens.len() != 2 {
        return Err(Refusal::Malformed(
            "Invalid service type for OpenStack-API-Version header",
        ));
    }
    if tokens[1].eq_ignore_ascii_case("latest") {
        // Magnum replaces both tokens, so the service token is never checked here.
        return Ok(MAX);
    }
    if !ACCEPTED_SERVICES.contains(&tokens[0]) {
        return Err(Refusal::Malformed(
            "Invalid service type for OpenStack-API-Version header",
        ));
    }
    let parts: Vec<&str> = tokens[1].split('.').collect();
    let parsed: Option<Vec<i64>> = parts.iter().map(|p| python_int(p)).collect();
    let (major, minor) = match parsed.as_deref() {
        Some([major, minor]) => (*major, *minor),
        _ => {
            return Err(Refusal::Malformed(
                "Invalid value for OpenStack-API-Version header",
            ))
        }
    };
    let in_range = major == 1 && (i64::from(MIN.minor)..=i64::from(MAX.minor)).contains(&minor);
    match (in_range, u32::try_from(minor)) {
        (true, Ok(minor)) => Ok(Version::new(1, minor)),
        _ => Err(Refusal::Unsupported {
            requested: Requested { major, minor },
        }),
    }
}

/// Python's `int()` on a string: surrounding whitespace and a sign are allowed.
fn python_int(s: &str) -> Option<i64> {
    let s = s.trim();
    let digits = s.strip_prefix(['+', '-']).unwrap_or(s);
    if digits.is_empty() || !digits.chars().all(|c| c.is_ascii_digit() || c == '_') {
        return None;
    }
    s.replace('_', "").parse().ok()
}

fn range_text() -> String {
    format!("[{SERVICE} {MIN}, {SERVICE} {MAX}]")
}

/// The description of `HTTPNotAcceptableAPIVersion`.
fn unsupported_description(requested: Requested) -> String {
    if requested.major != 1 {
        format!(
            "Mutually exclusive versions requested. Version {requested} requested but not \
             supported by this service.The supported version range is: {}.",
            range_text()
        )
    } else {
        format!(
            "Version {requested} was requested but the minor version is not supported by this \
             service. The supported version range is: {}.",
            range_text()
        )
    }
}

fn set(headers: &mut HeaderMap, name: &'static str, value: String) {
    if let Ok(v) = HeaderValue::from_str(&value) {
        headers.insert(HeaderName::from_static(name), v);
    }
}

/// The range headers, the version answered (or, on a 406, the one requested) and `Vary`.
pub fn version_headers(headers: &mut HeaderMap, version: &str) {
    set(headers, MIN_HEADER, format!("{SERVICE} {MIN}"));
    set(headers, MAX_HEADER, format!("{SERVICE} {MAX}"));
    set(headers, HEADER, format!("{SERVICE} {version}"));
    headers.insert(
        axum::http::header::VARY,
        HeaderValue::from_static("OpenStack-API-Version"),
    );
}

pub fn accepts_json(headers: &HeaderMap) -> bool {
    headers
        .get_all(axum::http::header::ACCEPT)
        .iter()
        .any(|v| v.to_str().map(|s| s.contains("json")).unwrap_or(false))
}

/// Middleware for `/v1…`: negotiates, stores the [`Version`] in the request, and sets the
/// version headers on the response (except where Magnum leaves them off).
pub async fn negotiate_layer(mut req: Request, next: Next) -> Response {
    let raw = req
        .headers()
        .get(HEADER)
        .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned());
    let version = match negotiate(raw.as_deref()) {
        Ok(v) => v,
        Err(Refusal::Malformed(detail)) => {
            return ApiError::NotAcceptable(detail.to_string()).into_response()
        }
        Err(Refusal::Unsupported { requested }) => {
            let description =
                accepts_json(req.headers()).then(|| unsupported_description(requested));
            let mut resp = ApiError::MicroversionUnsupported {
                requested: requested.to_string(),
                description,
                min_version: MIN.to_string(),
                max_version: MAX.to_string(),
            }
            .into_response();
            // Magnum sets the range headers before the check, and echoes the requested version.
            version_headers(resp.headers_mut(), &requested.to_string());
            return resp;
        }
    };
    req.extensions_mut().insert(version);
    let mut resp = next.run(req).await;
    let skip = resp
        .extensions()
        .get::<ErrorMarker>()
        .is_some_and(|m| m.without_version_headers);
    if !skip {
        version_headers(resp.headers_mut(), &version.to_string());
    }
    resp
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn absent_header_means_1_1() {
        assert_eq!(negotiate(None), Ok(Version::new(1, 1)));
    }

    #[test]
    fn latest_skips_the_service_check() {
        assert_eq!(negotiate(Some("compute latest")), Ok(MAX));
    }

    #[test]
    fn all_three_service_aliases_are_accepted() {
        for s in ACCEPTED_SERVICES {
            assert_eq!(negotiate(Some(&format!("{s} 1.9"))), Ok(Version::new(1, 9)));
        }
    }

    #[test]
    fn malformed_values_are_refused_with_magnum_texts() {
        assert_eq!(
            negotiate(Some("container-infra")),
            Err(Refusal::Malformed(
                "Invalid service type for OpenStack-API-Version header"
            ))
        );
        assert_eq!(
            negotiate(Some("container-infra 1.x")),
            Err(Refusal::Malformed(
                "Invalid value for OpenStack-API-Version header"
            ))
        );
        assert_eq!(
            negotiate(Some("container-infra 1.2.3")),
            Err(Refusal::Malformed(
                "Invalid value for OpenStack-API-Version header"
            ))
        );
        assert_eq!(
            negotiate(Some("Container-Infra 1.2")),
            Err(Refusal::Malformed(
                "Invalid service type for OpenStack-API-Version header"
            ))
        );
    }

    #[test]
    fn out_of_range_and_other_majors_are_unsupported() {
        assert_eq!(
            negotiate(Some("container-infra 1.99")),
            Err(Refusal::Unsupported {
                requested: Requested {
                    major: 1,
                    minor: 99
                }
            })
        );
        assert_eq!(
            negotiate(Some("container-infra 2.0")),
            Err(Refusal::Unsupported {
                requested: Requested { major: 2, minor: 0 }
            })
        );
        assert!(unsupported_description(Requested { major: 2, minor: 0 })
            .contains("service.The supported"));
        assert_eq!(
            negotiate(Some("container-infra 1.-1"))
                .err()
                .map(|r| match r {
                    Refusal::Unsupported { requested } => requested.to_string(),
                    Refusal::Malformed(m) => m.to_string(),
                }),
            Some("1.-1".to_string())
        );
    }
}
