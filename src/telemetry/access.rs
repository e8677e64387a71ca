//! Who may scrape `/metrics`: anyone, or, when a token is configured (`[metrics] token_file`
//! or `MAGNUM_RS_METRICS_TOKEN`), a request with `Authorization: Bearer <token>`, which is
//! what Prometheus sends with `authorization: {credentials_file: …}` in a scrape config.
//! The metrics show routes, rates and the operations queue: not secrets, but nothing a
//! stranger needs either, and `--auth keystone` does not cover them (they are outside
//! Magnum's routes).

use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};

use crate::error::ApiError;
use crate::secret::Secret;

/// `Ok` when no token is configured or the request carries it; otherwise the 401 to send.
pub fn check(headers: &HeaderMap, token: &Secret) -> Result<(), Box<Response>> {
    if token.is_empty() {
        return Ok(());
    }
    let sent = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(bearer);
    match sent {
        Some(sent) if same(sent.as_bytes(), token.expose().as_bytes()) => Ok(()),
        _ => Err(Box::new(unauthorized())),
    }
}

/// The credentials of `Bearer <credentials>` (the scheme's case does not matter).
fn bearer(value: &str) -> Option<&str> {
    let (scheme, credentials) = value.trim().split_once(' ')?;
    scheme
        .eq_ignore_ascii_case("bearer")
        .then(|| credentials.trim())
}

/// Equal bytes, compared in a time that does not depend on where they first differ.
fn same(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

fn unauthorized() -> Response {
    let mut r = ApiError::Rejected {
        status: StatusCode::UNAUTHORIZED,
        detail: "The metrics need a bearer token ([metrics] token_file).".into(),
    }
    .into_response();
    r.headers_mut().insert(
        header::WWW_AUTHENTICATE,
        HeaderValue::from_static("Bearer realm=\"magnum-rs metrics\""),
    );
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with(value: &str) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert(header::AUTHORIZATION, value.parse().expect("value"));
        h
    }

    #[test]
    fn without_a_configured_token_anyone_may_scrape() {
        assert!(check(&HeaderMap::new(), &Secret::default()).is_ok());
    }

    #[test]
    fn only_the_configured_bearer_token_is_accepted() {
        let token = Secret::new("s3cret-token");
        assert!(check(&with("Bearer s3cret-token"), &token).is_ok());
        assert!(check(&with("bearer  s3cret-token "), &token).is_ok());
        for wrong in [
            "Bearer s3cret-tokeN",
            "Bearer s3cret-token2",
            "Bearer ",
            "Basic s3cret-token",
            "s3cret-token",
        ] {
            let refused = check(&with(wrong), &token).expect_err(wrong);
            assert_eq!(refused.status(), StatusCode::UNAUTHORIZED, "{wrong}");
            assert!(refused.headers().contains_key(header::WWW_AUTHENTICATE));
        }
        assert!(check(&HeaderMap::new(), &token).is_err());
    }
}
