//! Query strings: unknown arguments refused like WSME, and Magnum's pagination parameters.

use axum::http::HeaderMap;

use crate::error::{ApiError, ApiResult};
use crate::store::{Marker, Page, SortDir, SortKey, Table};

/// The parsed query of one request.
#[derive(Debug, Default)]
pub struct Query {
    pairs: Vec<(String, String)>,
}

impl Query {
    /// Parses `raw` and refuses any argument not in `allowed` (`Unknown argument: "x"`).
    pub fn parse(raw: Option<&str>, allowed: &[&str]) -> ApiResult<Query> {
        let pairs: Vec<(String, String)> = form_urlencoded::parse(raw.unwrap_or("").as_bytes())
            .map(|(k, v)| (k.into_owned(), v.into_owned()))
            .collect();
        if let Some((k, _)) = pairs.iter().find(|(k, _)| !allowed.contains(&k.as_str())) {
            return Err(ApiError::UnknownArgument(k.clone()));
        }
        Ok(Query { pairs })
    }

    /// The last value given for `key` (WSME keeps the last).
    pub fn get(&self, key: &str) -> Option<&str> {
        self.pairs
            .iter()
            .rev()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }
}

pub const PAGINATION_ARGS: [&str; 4] = ["marker", "limit", "sort_key", "sort_dir"];

/// WSME's `types.uuid` conversion of a `marker` argument.
pub fn check_marker(m: &str) -> ApiResult<()> {
    if is_uuid_like(m) {
        Ok(())
    } else {
        Err(ApiError::invalid_input(
            "marker",
            m,
            format!("unable to convert to uuid. Error: Expected a uuid but received {m}."),
        ))
    }
}

/// Pagination arguments after WSME's type conversion (before the handler's own checks).
#[derive(Debug)]
pub struct PageArgs {
    pub marker: Option<String>,
    pub limit: Option<i64>,
    pub sort_key: String,
    pub sort_dir: String,
}

impl PageArgs {
    pub fn from_query(q: &Query) -> ApiResult<PageArgs> {
        let limit = match q.get("limit") {
            None => None,
            Some(s) => Some(s.trim().parse::<i64>().map_err(|_| {
                ApiError::invalid_input(
                    "limit",
                    s,
                    format!("unable to convert to int. Error: invalid literal for int() with base 10: '{s}'"),
                )
            })?),
        };
        let marker = match q.get("marker") {
            None => None,
            Some(m) => {
                check_marker(m)?;
                Some(m.to_string())
            }
        };
        Ok(PageArgs {
            marker,
            limit,
            sort_key: q.get("sort_key").unwrap_or("id").to_string(),
            sort_dir: q.get("sort_dir").unwrap_or("asc").to_string(),
        })
    }

    /// `api_utils.validate_limit` and `validate_sort_dir`, in Magnum's order.
    pub fn limit_and_dir(&self, max_limit: i64) -> ApiResult<(i64, SortDir)> {
        let limit = match self.limit {
            Some(l) if l <= 0 => {
                return Err(ApiError::InvalidParameterValue(
                    "Limit must be positive".into(),
                ))
            }
            Some(l) => l.min(max_limit),
            None => max_limit,
        };
        let dir = match self.sort_dir.as_str() {
            "asc" => SortDir::Asc,
            "desc" => SortDir::Desc,
            d => {
                return Err(ApiError::InvalidParameterValue(format!(
                    "Invalid sort direction: {d}. Acceptable values are 'asc' or 'desc'"
                )))
            }
        };
        Ok((limit, dir))
    }

    /// The page, once its marker is known and the sort key is checked.
    pub fn page(
        &self,
        limit: i64,
        dir: SortDir,
        marker: Option<Marker>,
        table: Table,
    ) -> ApiResult<Page> {
        let sort_key = SortKey::parse(table, &self.sort_key).ok_or_else(|| {
            ApiError::InvalidParameterValue(format!(
                "The sort_key value \"{}\" is an invalid field for sorting",
                self.sort_key
            ))
        })?;
        Ok(Page {
            limit,
            sort_key,
            sort_dir: dir,
            marker,
        })
    }
}

/// oslo's `uuidutils.is_uuid_like`: anything `uuid.UUID()` accepts (dashless, braces,
/// `urn:uuid:`, any case).
pub fn is_uuid_like(s: &str) -> bool {
    uuid::Uuid::try_parse(s).is_ok()
        || s.strip_prefix("urn:uuid:")
            .is_some_and(|r| uuid::Uuid::try_parse(r).is_ok())
        || s.strip_prefix('{')
            .and_then(|r| r.strip_suffix('}'))
            .is_some_and(|r| uuid::Uuid::try_parse(r).is_ok())
}

/// oslo's `strutils.is_int_like`.
pub fn is_int_like(s: &str) -> bool {
    s.parse::<i64>().is_ok_and(|n| n.to_string() == s)
}

/// Builds the `next` link of a collection page.
pub fn next_link(
    base: &str,
    resource: &str,
    limit: i64,
    sort_key: &str,
    dir: SortDir,
    last_uuid: &str,
) -> String {
    format!(
        "{base}/v1/{resource}?sort_key={sort_key}&sort_dir={}&limit={limit}&marker={last_uuid}",
        dir.as_str()
    )
}

/// The application URL (`pecan.request.application_url`) of this request.
pub fn base_url(headers: &HeaderMap) -> String {
    let host = headers
        .get(axum::http::header::HOST)
        .and_then(|h| h.to_str().ok())
        .unwrap_or("localhost");
    let proto = headers
        .get("x-forwarded-proto")
        .and_then(|h| h.to_str().ok())
        .unwrap_or("http");
    format!("{proto}://{host}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_query_arguments_are_refused() {
        let e = Query::parse(Some("all_tenants=1"), &PAGINATION_ARGS)
            .err()
            .map(|e| e.to_string());
        assert_eq!(e.as_deref(), Some("Unknown argument: \"all_tenants\""));
    }

    #[test]
    fn uuid_like_forms() {
        assert!(is_uuid_like("a1a1a1a1-0000-4000-8000-000000000001"));
        assert!(is_uuid_like(
            "A1A1A1A100004000800000000000000 1"
                .replace(' ', "")
                .as_str()
        ));
        assert!(is_uuid_like("{a1a1a1a1-0000-4000-8000-000000000001}"));
        assert!(is_uuid_like(
            "urn:uuid:a1a1a1a1-0000-4000-8000-000000000001"
        ));
        assert!(!is_uuid_like("k8s-cluster"));
    }

    #[test]
    fn limit_must_be_positive() {
        let q = Query::parse(Some("limit=0"), &PAGINATION_ARGS).expect("parses");
        let a = PageArgs::from_query(&q).expect("converts");
        assert_eq!(
            a.limit_and_dir(1000)
                .err()
                .map(|e| e.to_string())
                .as_deref(),
            Some("Limit must be positive")
        );
    }
}
