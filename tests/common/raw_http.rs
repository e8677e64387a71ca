//! The one hand-written HTTP/1.1 client of the tests, for servers running as processes:
//! each request on its own `Connection: close` socket, headers exactly as given, chunked
//! bodies decoded. (The in-process router is driven with `oneshot` in `common`; the
//! conformance harness keeps its own byte-exact wire client.)

use std::io::{Read as _, Write as _};
use std::net::TcpStream;
use std::time::Duration;

use serde_json::Value;

/// One answer: the status, the head (status line and headers, lower-cased) and the body.
#[derive(Debug)]
pub struct RawResponse {
    pub status: u16,
    pub head: String,
    pub body: Vec<u8>,
}

impl RawResponse {
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }

    /// The body as JSON: `Null` when empty, the text as a JSON string when it is no JSON.
    pub fn json(&self) -> Value {
        if self.body.is_empty() {
            return Value::Null;
        }
        serde_json::from_slice(&self.body).unwrap_or_else(|_| Value::String(self.text()))
    }
}

/// The request headers most tests send: JSON, the latest microversion.
pub const JSON_LATEST: [(&str, &str); 2] = [
    ("Accept", "application/json"),
    ("OpenStack-API-Version", "container-infra latest"),
];

/// Sends one request to `addr` (`host:port`) with `Host: host` and reads the whole answer
/// (links in the answer are built from that host). A `body` is sent with its
/// `Content-Length` (and no `Content-Type` unless `headers` has one).
pub fn send(
    addr: &str,
    host: &str,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: Option<&str>,
    timeout: Duration,
) -> std::io::Result<RawResponse> {
    let mut stream = TcpStream::connect(addr)?;
    stream.set_read_timeout(Some(timeout))?;
    stream.set_write_timeout(Some(timeout))?;
    let mut head = format!("{method} {path} HTTP/1.1\r\nHost: {host}\r\n");
    for (name, value) in headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    if let Some(body) = body {
        head.push_str(&format!("Content-Length: {}\r\n", body.len()));
    }
    head.push_str("Connection: close\r\n\r\n");
    stream.write_all(head.as_bytes())?;
    stream.write_all(body.unwrap_or_default().as_bytes())?;
    stream.flush()?;
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw)?;
    parse(&raw).ok_or_else(|| {
        std::io::Error::other(format!(
            "unparsable response: {}",
            String::from_utf8_lossy(&raw)
        ))
    })
}

/// [`send`] to a loopback port (`Host: 127.0.0.1`), with a JSON body if any
/// (`Content-Type: application/json`).
pub fn send_json(
    port: u16,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: Option<&Value>,
    timeout: Duration,
) -> std::io::Result<RawResponse> {
    let mut all: Vec<(&str, &str)> = headers.to_vec();
    let payload = body.map(Value::to_string);
    if payload.is_some() {
        all.push(("Content-Type", "application/json"));
    }
    send(
        &format!("127.0.0.1:{port}"),
        "127.0.0.1",
        method,
        path,
        &all,
        payload.as_deref(),
        timeout,
    )
}

fn parse(raw: &[u8]) -> Option<RawResponse> {
    let split = raw.windows(4).position(|w| w == b"\r\n\r\n")?;
    let head = std::str::from_utf8(&raw[..split])
        .ok()?
        .to_ascii_lowercase();
    let status: u16 = head.split_whitespace().nth(1)?.parse().ok()?;
    let mut body = raw[split + 4..].to_vec();
    let chunked = head
        .split("\r\n")
        .skip(1)
        .any(|l| l.starts_with("transfer-encoding:") && l.contains("chunked"));
    if chunked {
        body = dechunk(&body)?;
    }
    Some(RawResponse { status, head, body })
}

fn dechunk(mut data: &[u8]) -> Option<Vec<u8>> {
    let mut out = Vec::new();
    loop {
        let eol = data.windows(2).position(|w| w == b"\r\n")?;
        let size_line = std::str::from_utf8(&data[..eol]).ok()?;
        let size = usize::from_str_radix(size_line.split(';').next()?.trim(), 16).ok()?;
        data = &data[eol + 2..];
        if size == 0 {
            return Some(out);
        }
        out.extend_from_slice(data.get(..size)?);
        data = data.get(size + 2..)?;
    }
}
