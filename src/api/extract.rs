//! The extractors of the Magnum handlers. Each refuses through [`ApiError`] (the
//! framework's status and text, in Magnum's envelope), never with axum's plain-text
//! rejection.

use axum::body::Bytes;
use axum::extract::{Extension, FromRequest, FromRequestParts, Path, Request};
use axum::http::request::Parts;
use serde::de::DeserializeOwned;

use super::microversion::Version;
use crate::error::ApiError;

/// The path parameters (`axum::extract::Path`). A segment that is not UTF-8 once
/// percent-decoded is a 400 with axum's text.
#[derive(Debug)]
pub struct MagnumPath<T>(pub T);

impl<T, S> FromRequestParts<S> for MagnumPath<T>
where
    T: DeserializeOwned + Send,
    S: Send + Sync,
{
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, ApiError> {
        let Path(value) = Path::<T>::from_request_parts(parts, state).await?;
        Ok(MagnumPath(value))
    }
}

/// The negotiated microversion, which `microversion::negotiate_layer` leaves in every `/v1`
/// request (so its absence, axum's 500, is a bug of the router).
#[derive(Clone, Copy, Debug)]
pub struct ApiVersion(pub Version);

impl<S> FromRequestParts<S> for ApiVersion
where
    S: Send + Sync,
{
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, ApiError> {
        let Extension(version) = Extension::<Version>::from_request_parts(parts, state).await?;
        Ok(ApiVersion(version))
    }
}

/// The whole request body, which `request_body::check` has already read within
/// `[api] max_request_body_size` and checked for its media type.
#[derive(Debug)]
pub struct MagnumBody(pub Bytes);

impl<S> FromRequest<S> for MagnumBody
where
    S: Send + Sync,
{
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, ApiError> {
        let bytes = Bytes::from_request(req, state).await?;
        Ok(MagnumBody(bytes))
    }
}

#[cfg(test)]
mod tests {
    use axum::body::Body;
    use axum::http::{Request, StatusCode};
    use axum::routing::{get, post};
    use axum::Router;
    use http_body_util::BodyExt as _;
    use serde_json::Value;
    use tower::ServiceExt as _;

    use super::*;

    async fn answer(app: &Router, req: Request<Body>) -> (StatusCode, Vec<u8>) {
        let resp = app.clone().oneshot(req).await.expect("response");
        let status = resp.status();
        let body = resp.into_body().collect().await.expect("body").to_bytes();
        (status, body.to_vec())
    }

    fn detail(body: &[u8]) -> String {
        let v: Value = serde_json::from_slice(body).expect("an envelope");
        v["errors"][0]["detail"]
            .as_str()
            .unwrap_or_default()
            .to_string()
    }

    #[tokio::test]
    async fn a_path_refusal_is_axums_status_and_text_in_the_envelope() {
        let app = Router::new()
            .route("/plain/{p}", get(|Path(p): Path<String>| async move { p }))
            .route(
                "/magnum/{p}",
                get(|MagnumPath(p): MagnumPath<String>| async move { p }),
            );
        let get = |uri: &str| Request::get(uri).body(Body::empty()).expect("request");
        let (plain_status, plain) = answer(&app, get("/plain/%FF%FE")).await;
        let (status, body) = answer(&app, get("/magnum/%FF%FE")).await;
        assert_eq!(plain_status, StatusCode::BAD_REQUEST);
        assert_eq!(status, plain_status);
        assert_eq!(detail(&body), String::from_utf8_lossy(&plain).trim());
    }

    #[tokio::test]
    async fn a_missing_version_is_axums_500_in_the_envelope() {
        let app = Router::new()
            .route(
                "/plain",
                get(|Extension(v): Extension<Version>| async move { v.to_string() }),
            )
            .route(
                "/magnum",
                get(|ApiVersion(v): ApiVersion| async move { v.to_string() }),
            );
        let get = |uri: &str| Request::get(uri).body(Body::empty()).expect("request");
        let (plain_status, plain) = answer(&app, get("/plain")).await;
        let (status, body) = answer(&app, get("/magnum")).await;
        assert_eq!(plain_status, StatusCode::INTERNAL_SERVER_ERROR);
        assert_eq!(status, plain_status);
        assert_eq!(detail(&body), String::from_utf8_lossy(&plain).trim());
    }

    #[tokio::test]
    async fn the_body_and_version_reach_the_handler() {
        let app = Router::new().route(
            "/{p}",
            post(
                |ApiVersion(v): ApiVersion,
                 MagnumPath(p): MagnumPath<String>,
                 MagnumBody(b): MagnumBody| async move {
                    format!("{v} {p} {}", String::from_utf8_lossy(&b))
                },
            ),
        );
        let mut req = Request::post("/x").body(Body::from("{}")).expect("request");
        req.extensions_mut().insert(Version::new(1, 9));
        let (status, body) = answer(&app, req).await;
        assert_eq!(status, StatusCode::OK);
        assert_eq!(body, b"1.9 x {}");
    }
}
