//! The DNS-rebinding defence of noauth on a loopback address. noauth trusts identity
//! headers, which is safe on loopback only while nothing but local programs can send
//! requests there. A web page can: once its name is re-resolved to 127.0.0.1, the browser
//! takes magnum-rs for the page's own origin, so the page may send any request (identity
//! headers included) and read every answer. What gives it away is the `Host` header, which
//! still names the page's site. So a request that acts as someone is answered only when its
//! `Host` names `localhost` or a loopback address (any port: port forwards and proxies on
//! the same machine change it), or a name the operator allowed.
//!
//! A request without `Host` is let through: browsers always send one, and a local program
//! that omits it could send any `Host` it liked anyway.

use std::net::IpAddr;

use axum::http::HeaderMap;

use crate::config::Config;
use crate::error::ApiError;

/// Whether the check applies: noauth serves a loopback address. On any other address
/// noauth needs an explicit `--auth noauth` and an authenticating proxy in front, which
/// sets `Host` to the public name; there the proxy is the defence.
pub fn applies(config: &Config) -> bool {
    config.bind.ip().is_loopback()
}

/// The refusal of a request whose `Host` names neither loopback nor an allowed name.
pub fn check(headers: &HeaderMap, allowed: &[String]) -> Result<(), ApiError> {
    let Some(value) = headers.get(axum::http::header::HOST) else {
        return Ok(());
    };
    let accepted = value
        .to_str()
        .ok()
        .and_then(host_of)
        .is_some_and(|host| is_allowed(&host, allowed));
    if accepted {
        return Ok(());
    }
    // No period before the end: Magnum's title is the text up to the first one.
    Err(ApiError::Rejected {
        status: axum::http::StatusCode::FORBIDDEN,
        detail: "The Host header names neither localhost nor a loopback address, which \
                 noauth on a loopback address requires ([noauth] allowed_hosts adds names)."
            .into(),
    })
}

/// The host of a `Host` value: without port or IPv6 brackets, lower-cased, without a final
/// dot. `None` when it is empty or malformed.
pub fn host_of(value: &str) -> Option<String> {
    let value = value.trim();
    let host = if value.parse::<std::net::Ipv6Addr>().is_ok() {
        value // a bare IPv6 address (not valid in `Host`, but unambiguous)
    } else if let Some(rest) = value.strip_prefix('[') {
        let (inside, after) = rest.split_once(']')?;
        if !(after.is_empty() || is_port(after.strip_prefix(':')?)) {
            return None;
        }
        inside
    } else {
        match value.rsplit_once(':') {
            Some((host, port)) if !host.contains(':') && is_port(port) => host,
            Some(_) => return None,
            None => value,
        }
    };
    let host = host.strip_suffix('.').unwrap_or(host).to_ascii_lowercase();
    (!host.is_empty()).then_some(host)
}

fn is_port(s: &str) -> bool {
    !s.is_empty() && s.len() <= 5 && s.bytes().all(|b| b.is_ascii_digit())
}

/// `localhost`, a loopback address (127.0.0.0/8, ::1, ::ffff:127.x.x.x) or a listed name;
/// `"*"` in the list accepts every host.
pub fn is_allowed(host: &str, allowed: &[String]) -> bool {
    let listed = allowed
        .iter()
        .any(|a| a == "*" || host_of(a).is_some_and(|a| a == host) || a.eq_ignore_ascii_case(host));
    listed
        || host == "localhost"
        || host
            .parse::<IpAddr>()
            .is_ok_and(|ip| ip.to_canonical().is_loopback())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_host_is_taken_without_port_brackets_case_or_final_dot() {
        assert_eq!(host_of("127.0.0.1:9511").as_deref(), Some("127.0.0.1"));
        assert_eq!(host_of("LocalHost.").as_deref(), Some("localhost"));
        assert_eq!(host_of("[::1]:9511").as_deref(), Some("::1"));
        assert_eq!(host_of("[::1]").as_deref(), Some("::1"));
        assert_eq!(host_of("::1").as_deref(), Some("::1"));
        assert_eq!(
            host_of("evil.example:9511").as_deref(),
            Some("evil.example")
        );
        for malformed in [
            "",
            ":9511",
            "[::1",
            "[::1]x",
            "a:b:c",
            "host:port",
            "[::1]:99999x",
        ] {
            assert_eq!(host_of(malformed), None, "{malformed}");
        }
    }

    #[test]
    fn loopback_names_and_addresses_are_allowed_and_others_are_not() {
        for host in [
            "localhost",
            "127.0.0.1",
            "127.0.0.2",
            "::1",
            "::ffff:127.0.0.1",
        ] {
            assert!(is_allowed(host, &[]), "{host}");
        }
        for host in [
            "evil.example",
            "localhost.evil.example",
            "10.0.0.1",
            "0.0.0.0",
            "::",
        ] {
            assert!(!is_allowed(host, &[]), "{host}");
        }
    }

    #[test]
    fn listed_names_and_the_wildcard_are_allowed() {
        let listed = vec!["Dev.Example".to_string()];
        assert!(is_allowed("dev.example", &listed));
        assert!(!is_allowed("evil.example", &listed));
        assert!(is_allowed("evil.example", &["*".to_string()]));
    }

    #[test]
    fn a_request_without_host_passes_and_an_unparsable_one_is_refused() {
        let mut h = HeaderMap::new();
        assert!(check(&h, &[]).is_ok());
        h.insert("host", "localhost:9511".parse().expect("value"));
        assert!(check(&h, &[]).is_ok());
        h.insert("host", "a:b:c".parse().expect("value"));
        let refused = check(&h, &[]).expect_err("refused");
        assert_eq!(refused.status(), axum::http::StatusCode::FORBIDDEN);
    }
}
