//! The request body before a handler sees it: read whole up to `[api]
//! max_request_body_size` (413 beyond it), and accepted only in a type WSME reads
//! (`wsme.rest.args.args_from_body`), so that a browser's "simple request" (a form, a
//! `text/plain` body) cannot drive the API from another site.

use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use http_body_util::{BodyExt as _, LengthLimitError, Limited};

use crate::error::ApiError;
use crate::state::AppState;

/// The media types WSME parses as JSON (`wsme.rest.json.accept_content_types`).
const JSON_TYPES: [&str; 3] = [
    "application/json",
    "text/javascript",
    "application/javascript",
];

/// How WSME reads a non-empty body of this `Content-Type` (the media type before any
/// parameter, compared as written: webob does not fold its case).
#[derive(Debug, PartialEq, Eq)]
pub enum BodyKind {
    Json,
    /// No `Content-Type` header, or a form: webob reads the body as form fields.
    Form,
    Unknown(String),
}

/// A missing header makes the body form fields; a header that is present but empty names
/// the empty type (Magnum: 415 `Unknown mimetype: `).
pub fn body_kind(content_type: Option<&str>) -> BodyKind {
    let Some(value) = content_type else {
        return BodyKind::Form;
    };
    let media = value.split(';').next().unwrap_or_default().trim();
    if JSON_TYPES.contains(&media) {
        BodyKind::Json
    } else if media == "application/x-www-form-urlencoded" {
        BodyKind::Form
    } else {
        BodyKind::Unknown(media.to_string())
    }
}

/// WSME's answer to a non-empty body of `kind`, if it refuses it: a form's fields are
/// arguments no Magnum method takes (the first one named, as Magnum does), any other type
/// but JSON is 415. Magnum parses `text/xml` as XML and answers 500 for JSON in it; here it
/// is 415 (docs/compatibility.md, `diff:xml-body`).
pub fn refusal(kind: &BodyKind, body: &[u8]) -> Option<ApiError> {
    match kind {
        BodyKind::Json => None,
        BodyKind::Form => {
            let first = form_urlencoded::parse(body)
                .map(|(k, _)| k.into_owned())
                .next()
                .unwrap_or_default();
            Some(ApiError::UnknownArgument(first))
        }
        BodyKind::Unknown(media) => Some(ApiError::UnknownMimetype(media.clone())),
    }
}

/// Route layer of the `/v1` routes (inside version negotiation, as WSME runs after pecan's
/// routing and Magnum's version check).
pub async fn check(State(state): State<AppState>, req: Request, next: Next) -> Response {
    let limit = state.config.api.max_request_body_size;
    let (parts, body) = req.into_parts();
    let bytes: Bytes = match Limited::new(body, limit).collect().await {
        Ok(collected) => collected.to_bytes(),
        Err(e) if e.downcast_ref::<LengthLimitError>().is_some() => {
            return ApiError::RequestTooLarge(limit).into_response();
        }
        // The client hung up or sent a broken chunked body: nothing to answer to, but the
        // answer stays in the envelope.
        Err(e) => {
            return ApiError::Rejected {
                status: axum::http::StatusCode::BAD_REQUEST,
                detail: format!("Failed to read the request body: {e}"),
            }
            .into_response()
        }
    };
    if !bytes.is_empty() {
        let content_type = parts
            .headers
            .get(axum::http::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok());
        if let Some(refused) = refusal(&body_kind(content_type), &bytes) {
            return refused.into_response();
        }
    }
    next.run(Request::from_parts(parts, Body::from(bytes)))
        .await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_media_types_are_read_with_or_without_parameters() {
        assert_eq!(body_kind(Some("application/json")), BodyKind::Json);
        assert_eq!(
            body_kind(Some("application/json; charset=utf-8")),
            BodyKind::Json
        );
        assert_eq!(body_kind(Some("text/javascript")), BodyKind::Json);
    }

    #[test]
    fn a_browser_simple_request_is_refused() {
        let plain = body_kind(Some("text/plain"));
        assert_eq!(
            refusal(&plain, b"{}").map(|e| e.to_string()),
            Some("Unknown mimetype: text/plain".into())
        );
        let multipart = body_kind(Some("multipart/form-data; boundary=x"));
        assert_eq!(
            refusal(&multipart, b"--x").map(|e| e.status().as_u16()),
            Some(415)
        );
        let form = body_kind(Some("application/x-www-form-urlencoded"));
        assert_eq!(
            refusal(&form, br#"{"name":"x"}"#).map(|e| e.to_string()),
            Some(r#"Unknown argument: "{"name":"x"}""#.into())
        );
    }

    #[test]
    fn media_type_case_is_kept_as_webob_does() {
        assert_eq!(
            body_kind(Some("APPLICATION/JSON")),
            BodyKind::Unknown("APPLICATION/JSON".into())
        );
        assert_eq!(body_kind(None), BodyKind::Form);
        assert_eq!(body_kind(Some("")), BodyKind::Unknown(String::new()));
    }
}
