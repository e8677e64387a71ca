//! Calls to an OpenStack service as someone: the requesting user (their token and the
//! catalog it carries, as Magnum's `OpenStackClients` acts for the request's context) or
//! magnum-rs's service user. One HTTP client for all services, every request bounded by
//! `timeout`; tokens go only into the `X-Auth-Token` header and never into a log or an
//! error text (reqwest's errors name the URL, not the headers).

use std::sync::Arc;
use std::time::Duration;

use reqwest::{Method, StatusCode};
use serde_json::Value;

use super::catalog::{EndpointChoice, Interface, ServiceCatalog};
use super::stale_connection;
use crate::secret::Secret;

/// The services Magnum talks to, by the catalog types it looks them up under.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Service {
    Identity,
    Compute,
    Image,
    Network,
    Volume,
}

impl Service {
    fn types(self) -> &'static [&'static str] {
        match self {
            Service::Identity => &["identity"],
            Service::Compute => &["compute"],
            Service::Image => &["image"],
            Service::Network => &["network"],
            Service::Volume => &["block-storage", "volumev3"],
        }
    }

    /// The name Magnum's texts give the service.
    pub fn name(self) -> &'static str {
        match self {
            Service::Identity => "keystone",
            Service::Compute => "nova",
            Service::Image => "glance",
            Service::Network => "neutron",
            Service::Volume => "cinder",
        }
    }
}

/// Why a call did not give an answer to use.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum CallError {
    /// 404: the resource does not exist (or is not visible to the caller).
    #[error("not found")]
    NotFound,
    /// 401/403: the caller may not see it.
    #[error("not authorized")]
    Forbidden,
    /// 409: it exists already, or is in use.
    #[error("conflict")]
    Conflict,
    /// 403 to a change, with the service's reason (a quota, a policy).
    #[error("{0}")]
    Refused(String),
    /// The catalog has no endpoint for the service.
    #[error("no {0} endpoint in the catalog")]
    NoEndpoint(&'static str),
    /// The service could not be reached, timed out, failed (5xx) or answered what cannot be
    /// read.
    #[error("{0}")]
    Unavailable(String),
}

/// The HTTP side shared by every session.
#[derive(Clone, Debug)]
pub struct Cloud {
    http: reqwest::Client,
    interface: Interface,
    region: Option<String>,
}

impl Cloud {
    pub fn new(
        timeout: Duration,
        interface: Interface,
        region: Option<String>,
    ) -> Result<Cloud, reqwest::Error> {
        let http = reqwest::Client::builder()
            .timeout(timeout)
            .connect_timeout(timeout)
            .user_agent(concat!("magnum-rs/", env!("CARGO_PKG_VERSION")))
            .build()?;
        Ok(Cloud {
            http,
            interface,
            region,
        })
    }

    /// The catalog interface calls go to.
    pub fn interface(&self) -> Interface {
        self.interface
    }

    /// The region calls stay in, when one is configured.
    pub fn region(&self) -> Option<&str> {
        self.region.as_deref()
    }

    /// A session acting with `token`, on the endpoints of `catalog`.
    pub fn session(&self, token: Secret, catalog: Arc<ServiceCatalog>) -> Session<'_> {
        Session {
            cloud: self,
            token,
            catalog,
        }
    }
}

/// A token Keystone issued (`POST /v3/auth/tokens`): the token, its expiry and its catalog.
pub struct Issued {
    pub token: Secret,
    pub expires_at: Option<chrono::DateTime<chrono::Utc>>,
    pub catalog: ServiceCatalog,
}

impl std::fmt::Debug for Issued {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Issued")
            .field("expires_at", &self.expires_at)
            .finish_non_exhaustive()
    }
}

impl Cloud {
    /// Asks Keystone at `identity` (its v3 URL) for a token with `auth` (the body's `auth`
    /// object); 401 (a wrong or deleted credential) is `Forbidden`.
    pub async fn issue_token(&self, identity: &str, auth: &Value) -> Result<Issued, CallError> {
        let url = format!("{}/auth/tokens", identity.trim_end_matches('/'));
        let req = self
            .http
            .post(&url)
            .header("Accept", "application/json")
            .json(&serde_json::json!({ "auth": auth }));
        let resp = stale_connection::send(req, true)
            .await
            .map_err(|e| unreachable(Service::Identity, &e))?;
        match resp.status() {
            StatusCode::CREATED | StatusCode::OK => {}
            StatusCode::UNAUTHORIZED | StatusCode::FORBIDDEN => return Err(CallError::Forbidden),
            StatusCode::NOT_FOUND => return Err(CallError::NotFound),
            s => {
                return Err(CallError::Unavailable(format!(
                    "keystone answered {s} when issuing a token"
                )))
            }
        }
        let token = resp
            .headers()
            .get("x-subject-token")
            .and_then(|v| v.to_str().ok())
            .map(Secret::new)
            .ok_or_else(|| CallError::Unavailable("keystone issued no token".into()))?;
        let bytes = read_bounded(resp, Service::Identity).await?;
        let catalog = ServiceCatalog::from_token_body(&bytes).map_err(|e| {
            CallError::Unavailable(format!("keystone answered what is not a token: {e}"))
        })?;
        let expires_at = serde_json::from_slice::<Value>(&bytes)
            .ok()
            .and_then(|v| v["token"]["expires_at"].as_str().map(str::to_string))
            .and_then(|t| chrono::DateTime::parse_from_rfc3339(&t).ok())
            .map(|t| t.with_timezone(&chrono::Utc));
        Ok(Issued {
            token,
            expires_at,
            catalog,
        })
    }
}

/// The message of a refusal's body, as the services write it (`{"forbidden": {"message"}}`
/// from Nova, `{"error": {"message"}}` from Keystone, `{"NeutronError": {"message"}}`),
/// at most 500 characters.
fn refusal_message(body: &[u8]) -> Option<String> {
    let v: Value = serde_json::from_slice(body).ok()?;
    let message = v
        .as_object()?
        .values()
        .find_map(|inner| inner.get("message").and_then(Value::as_str))?;
    let message: String = message.chars().take(500).collect();
    Some(message).filter(|m| !m.trim().is_empty())
}

/// An answer's body, at most [`MAX_BODY`] bytes whatever the length it announces.
async fn read_bounded(mut resp: reqwest::Response, service: Service) -> Result<Vec<u8>, CallError> {
    let mut bytes = Vec::new();
    while let Some(chunk) = resp.chunk().await.map_err(|e| unreachable(service, &e))? {
        if bytes.len() + chunk.len() > MAX_BODY {
            return Err(CallError::Unavailable(format!(
                "{} answered more than {MAX_BODY} bytes",
                service.name()
            )));
        }
        bytes.extend_from_slice(&chunk);
    }
    Ok(bytes)
}

/// Calls made with one token.
pub struct Session<'a> {
    cloud: &'a Cloud,
    token: Secret,
    catalog: Arc<ServiceCatalog>,
}

impl std::fmt::Debug for Session<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Session").finish_non_exhaustive()
    }
}

/// The longest answer body read (a list of flavors or images is a few hundred KB at most).
const MAX_BODY: usize = 8 * 1024 * 1024;

impl Session<'_> {
    /// The service's endpoint for this session.
    pub fn endpoint(&self, service: Service) -> Result<String, CallError> {
        self.catalog
            .endpoint(&EndpointChoice {
                service_types: service.types(),
                interface: self.cloud.interface,
                region: self.cloud.region.as_deref(),
            })
            .ok_or(CallError::NoEndpoint(service.name()))
    }

    /// `GET <endpoint><path>` as JSON; `query` pairs are encoded.
    pub async fn get(
        &self,
        service: Service,
        path: &str,
        query: &[(&str, &str)],
        headers: &[(&str, &str)],
    ) -> Result<Value, CallError> {
        self.send(Method::GET, service, path, query, headers, None)
            .await?
            .ok_or_else(|| CallError::Unavailable(format!("{} answered nothing", service.name())))
    }

    /// `POST <endpoint><path>` with a JSON body; the JSON answer.
    pub async fn post(
        &self,
        service: Service,
        path: &str,
        headers: &[(&str, &str)],
        body: &Value,
    ) -> Result<Value, CallError> {
        self.send(Method::POST, service, path, &[], headers, Some(body))
            .await?
            .ok_or_else(|| CallError::Unavailable(format!("{} answered nothing", service.name())))
    }

    /// `DELETE <endpoint><path>`.
    pub async fn delete(
        &self,
        service: Service,
        path: &str,
        headers: &[(&str, &str)],
    ) -> Result<(), CallError> {
        self.send(Method::DELETE, service, path, &[], headers, None)
            .await
            .map(drop)
    }

    /// One call: the answer's JSON (`None` for an empty body), or why there is none.
    async fn send(
        &self,
        method: Method,
        service: Service,
        path: &str,
        query: &[(&str, &str)],
        headers: &[(&str, &str)],
        body: Option<&Value>,
    ) -> Result<Option<Value>, CallError> {
        let url = format!("{}{path}", self.endpoint(service)?);
        let mut req = self
            .cloud
            .http
            .request(method.clone(), &url)
            .query(query)
            .header("X-Auth-Token", self.token.expose())
            .header("Accept", "application/json");
        for (k, v) in headers {
            req = req.header(*k, *v);
        }
        if let Some(b) = body {
            req = req.json(b);
        }
        let resp = stale_connection::send(req, stale_connection::repeatable(&method, path))
            .await
            .map_err(|e| unreachable(service, &e))?;
        match resp.status() {
            s if s.is_success() => {}
            StatusCode::NOT_FOUND => return Err(CallError::NotFound),
            // A refused change says why (Nova's quota, Keystone's policy): kept.
            StatusCode::FORBIDDEN if method != Method::GET => {
                let bytes = read_bounded(resp, service).await.unwrap_or_default();
                return Err(match refusal_message(&bytes) {
                    Some(why) => CallError::Refused(format!("{} refused: {why}", service.name())),
                    None => CallError::Forbidden,
                });
            }
            StatusCode::UNAUTHORIZED | StatusCode::FORBIDDEN => return Err(CallError::Forbidden),
            StatusCode::CONFLICT => return Err(CallError::Conflict),
            s => {
                tracing::warn!(service = service.name(), %method, status = %s, path, "OpenStack call failed");
                return Err(CallError::Unavailable(format!(
                    "{} answered {s}",
                    service.name()
                )));
            }
        }
        let bytes = read_bounded(resp, service).await?;
        if bytes.iter().all(u8::is_ascii_whitespace) {
            return Ok(None);
        }
        serde_json::from_slice(&bytes).map(Some).map_err(|e| {
            CallError::Unavailable(format!("{} answered what is not JSON: {e}", service.name()))
        })
    }
}

fn unreachable(service: Service, e: &reqwest::Error) -> CallError {
    tracing::warn!(service = service.name(), error = %stale_connection::chain(e), "OpenStack service unreachable");
    let what = if e.is_timeout() {
        "did not answer in time"
    } else {
        "is unreachable"
    };
    CallError::Unavailable(format!("{} {what}", service.name()))
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use axum::http::HeaderMap;
    use axum::routing::get;
    use serde_json::json;

    /// Serves `router` on a free loopback port; its base URL.
    pub(in crate::openstack) async fn serve(router: axum::Router) -> String {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let addr = listener.local_addr().expect("addr");
        tokio::spawn(async move { axum::serve(listener, router).await });
        format!("http://{addr}")
    }

    fn catalog(image_url: &str) -> ServiceCatalog {
        let body = json!({"token": {"catalog": [{"type": "image", "endpoints": [
            {"interface": "public", "region_id": "RegionOne", "url": image_url}]}]}});
        ServiceCatalog::from_token_body(body.to_string().as_bytes()).expect("catalog")
    }

    #[tokio::test]
    async fn a_call_carries_the_token_and_maps_the_answers() {
        let router = axum::Router::new()
            .route(
                "/v2/images/ok",
                get(|h: HeaderMap| async move {
                    axum::Json(
                        json!({"token_seen": h.get("x-auth-token").is_some_and(|v| v == "tok")}),
                    )
                }),
            )
            .route(
                "/v2/images/hidden",
                get(|| async { axum::http::StatusCode::FORBIDDEN }),
            )
            .route(
                "/v2/images/broken",
                get(|| async { axum::http::StatusCode::SERVICE_UNAVAILABLE }),
            )
            .route(
                "/v2/images/quota",
                axum::routing::post(|| async {
                    (
                        axum::http::StatusCode::FORBIDDEN,
                        axum::Json(json!({"forbidden": {"code": 403,
                            "message": "Quota exceeded, too many server groups."}})),
                    )
                }),
            )
            .route(
                "/v2/images/slow",
                get(|| async {
                    tokio::time::sleep(Duration::from_secs(5)).await;
                    "late"
                }),
            );
        let base = serve(router).await;
        let cloud =
            Cloud::new(Duration::from_millis(500), Interface::Public, None).expect("client");
        let s = cloud.session(Secret::new("tok"), Arc::new(catalog(&base)));
        assert_eq!(
            s.get(Service::Image, "/v2/images/ok", &[], &[]).await,
            Ok(json!({"token_seen": true}))
        );
        assert_eq!(
            s.get(Service::Image, "/v2/images/missing", &[], &[]).await,
            Err(CallError::NotFound)
        );
        assert_eq!(
            s.get(Service::Image, "/v2/images/hidden", &[], &[]).await,
            Err(CallError::Forbidden)
        );
        assert_eq!(
            s.post(Service::Image, "/v2/images/quota", &[], &json!({}))
                .await,
            Err(CallError::Refused(
                "glance refused: Quota exceeded, too many server groups.".into()
            )),
            "a refused change says why"
        );
        assert_eq!(
            s.get(Service::Image, "/v2/images/broken", &[], &[]).await,
            Err(CallError::Unavailable(
                "glance answered 503 Service Unavailable".into()
            ))
        );
        assert_eq!(
            s.get(Service::Image, "/v2/images/slow", &[], &[]).await,
            Err(CallError::Unavailable(
                "glance did not answer in time".into()
            ))
        );
        assert_eq!(
            s.get(Service::Compute, "/flavors", &[], &[]).await,
            Err(CallError::NoEndpoint("nova"))
        );
        assert!(!format!("{s:?}").contains("tok"));
    }
}
