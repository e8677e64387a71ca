//! A call on a pooled keep-alive connection the service has just closed.
//!
//! Servers close idle keep-alive connections on their own clock (gunicorn after 2 s, Apache
//! after `KeepAliveTimeout`, a load balancer after its idle timeout). A request written just
//! as the close arrives fails with "connection closed before message completed" although the
//! service never saw it. keystoneauth's sessions (urllib3) drop such connections before reuse
//! and still meet the race now and then; here a call whose repeat changes nothing (a GET, a
//! DELETE, a token issued) is sent once more, at once, on a fresh connection. Anything else
//! is left to fail as before.

use reqwest::{Method, RequestBuilder, Response};

/// Whether sending the request twice has the effect of sending it once, so a repeat after a
/// lost answer is safe: RFC 9110's idempotent methods, and a token issued
/// (`POST /v3/auth/tokens`), which only makes another token.
pub fn repeatable(method: &Method, path: &str) -> bool {
    matches!(
        *method,
        Method::GET | Method::HEAD | Method::OPTIONS | Method::PUT | Method::DELETE
    ) || (*method == Method::POST && path.trim_end_matches('/').ends_with("/auth/tokens"))
}

/// Sends `req`; when it is `repeatable` and failed before any answer came (the connection
/// was closed, reset or refused, not a timeout), sends it once more.
pub async fn send(req: RequestBuilder, repeatable: bool) -> Result<Response, reqwest::Error> {
    let again = if repeatable { req.try_clone() } else { None };
    match req.send().await {
        Err(e) if lost_before_an_answer(&e) => match again {
            Some(again) => {
                tracing::info!(error = %chain(&e), "the connection failed before an answer: sending once more");
                again.send().await
            }
            None => Err(e),
        },
        answered => answered,
    }
}

/// The error and its causes, `a: b: c` (reqwest's own text stops at "error sending
/// request"). The causes name the URL and the socket, never a header.
pub fn chain(e: &(dyn std::error::Error + 'static)) -> String {
    let mut text = e.to_string();
    let mut cause = e.source();
    while let Some(c) = cause {
        text.push_str(": ");
        text.push_str(&c.to_string());
        cause = c.source();
    }
    text
}

fn lost_before_an_answer(e: &reqwest::Error) -> bool {
    !e.is_timeout() && (e.is_request() || e.is_connect()) && e.status().is_none()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::{TcpListener, TcpStream};

    const OK: &[u8] = b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\nconnection: keep-alive\r\n\r\n{}";

    /// Reads one request's head (these requests have no body).
    async fn read_head(sock: &mut TcpStream) -> bool {
        let mut seen = Vec::new();
        let mut buf = [0u8; 1024];
        while !seen.windows(4).any(|w| w == b"\r\n\r\n") {
            match sock.read(&mut buf).await {
                Ok(0) | Err(_) => return false,
                Ok(n) => seen.extend_from_slice(&buf[..n]),
            }
        }
        true
    }

    /// A server that answers the first request on its first connection, then reads the
    /// second request on that same kept-alive connection and closes it unanswered (what a
    /// keep-alive timeout firing as the request arrives looks like to the client). Every
    /// later connection is answered. Counts the requests it read.
    async fn closes_the_kept_connection_under_the_second_request() -> (String, Arc<AtomicUsize>) {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let url = format!("http://{}", listener.local_addr().expect("addr"));
        let seen = Arc::new(AtomicUsize::new(0));
        let count = seen.clone();
        tokio::spawn(async move {
            let (mut first, _) = listener.accept().await.expect("accept");
            assert!(read_head(&mut first).await);
            count.fetch_add(1, Ordering::SeqCst);
            first.write_all(OK).await.expect("answer");
            if read_head(&mut first).await {
                count.fetch_add(1, Ordering::SeqCst);
            }
            drop(first);
            while let Ok((mut sock, _)) = listener.accept().await {
                let count = count.clone();
                tokio::spawn(async move {
                    while read_head(&mut sock).await {
                        count.fetch_add(1, Ordering::SeqCst);
                        if sock.write_all(OK).await.is_err() {
                            return;
                        }
                    }
                });
            }
        });
        (url, seen)
    }

    /// A client whose first call to that server was answered: its connection is kept in
    /// the pool, and the server closes it under the next request.
    async fn a_kept_connection_about_to_close() -> (reqwest::Client, String, Arc<AtomicUsize>) {
        let (url, seen) = closes_the_kept_connection_under_the_second_request().await;
        let http = reqwest::Client::new();
        let first = send(http.get(format!("{url}/v3/auth/tokens")), true).await;
        assert_eq!(first.expect("first").status(), 200);
        (http, url, seen)
    }

    #[tokio::test]
    async fn a_get_on_a_kept_connection_closed_under_it_is_sent_once_more_and_answered() {
        let (http, url, seen) = a_kept_connection_about_to_close().await;
        let second = send(http.get(format!("{url}/v3/auth/tokens")), true).await;
        assert_eq!(second.expect("sent once more").status(), 200);
        assert_eq!(
            seen.load(Ordering::SeqCst),
            3,
            "the lost request and its repeat"
        );
    }

    #[tokio::test]
    async fn a_call_that_is_not_repeatable_is_not_sent_again() {
        let (http, url, seen) = a_kept_connection_about_to_close().await;
        let post = http.post(format!("{url}/v2.1/os-server-groups")).body("{}");
        let e = send(post, false).await.expect_err("lost");
        assert!(e.is_request(), "{}", chain(&e));
        assert_eq!(seen.load(Ordering::SeqCst), 2, "no repeat");
    }

    #[test]
    fn idempotent_methods_and_token_issues_are_repeatable_other_posts_are_not() {
        assert!(repeatable(&Method::GET, "/v2.1/flavors/detail"));
        assert!(repeatable(&Method::DELETE, "/v2.1/os-server-groups/x"));
        assert!(repeatable(&Method::POST, "http://k:5000/v3/auth/tokens"));
        assert!(!repeatable(&Method::POST, "/v2.1/os-server-groups"));
        assert!(!repeatable(&Method::PATCH, "/v2.1/x"));
    }
}
