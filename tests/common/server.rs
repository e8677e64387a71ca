//! The real `magnum-rs` binary on a free loopback port, for end-to-end tests.

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use super::raw_http::{send_json, JSON_LATEST};

pub struct Server {
    pub port: u16,
    pub child: Child,
    pub log: PathBuf,
}

/// A port nobody listens on right now.
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("free port")
}

impl Server {
    /// Starts `magnum-rs serve` with the given database and extra arguments, and waits until
    /// `GET /` answers (bounded).
    pub fn start(database_url: &str, dir: &Path, extra: &[&str]) -> Server {
        Server::start_with_env(database_url, dir, extra, &[])
    }

    /// As [`Server::start`], with extra environment variables.
    pub fn start_with_env(
        database_url: &str,
        dir: &Path,
        extra: &[&str],
        env: &[(&str, &str)],
    ) -> Server {
        Server::start_at(free_port(), database_url, dir, extra, env)
    }

    /// As [`Server::start_with_env`], on a given port (one a catalog already names).
    pub fn start_at(
        port: u16,
        database_url: &str,
        dir: &Path,
        extra: &[&str],
        env: &[(&str, &str)],
    ) -> Server {
        let log = dir.join(format!("magnum-rs-{port}.log"));
        let out = std::fs::File::create(&log).expect("log file");
        let err = out.try_clone().expect("log file");
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_magnum-rs"));
        cmd.arg("--database-url")
            .arg(database_url)
            .arg("--bind")
            .arg(format!("127.0.0.1:{port}"))
            .args(extra)
            .arg("serve")
            .current_dir(dir)
            .envs(env.iter().copied())
            .stdout(Stdio::from(out))
            .stderr(Stdio::from(err));
        let child = cmd.spawn().expect("spawn magnum-rs");
        let mut server = Server { port, child, log };
        server.wait_ready();
        server
    }

    fn wait_ready(&mut self) {
        let deadline = Instant::now() + Duration::from_secs(30);
        while Instant::now() < deadline {
            if let Ok(Some(status)) = self.child.try_wait() {
                panic!("magnum-rs exited with {status}: {}", self.log_text());
            }
            if http_get(self.port, "/").is_some_and(|(code, _)| code == 200) {
                return;
            }
            std::thread::yield_now();
            std::thread::park_timeout(Duration::from_millis(50));
        }
        panic!("magnum-rs did not become ready: {}", self.log_text());
    }

    /// Waits (at most `within`) for the process to end by itself, as an armed failpoint
    /// ends it; its exit status.
    pub fn wait_exit(&mut self, within: Duration) -> std::process::ExitStatus {
        let deadline = Instant::now() + within;
        loop {
            if let Some(status) = self.child.try_wait().expect("wait") {
                return status;
            }
            assert!(
                Instant::now() < deadline,
                "magnum-rs still runs after {within:?}: {}",
                self.log_text()
            );
            std::thread::park_timeout(Duration::from_millis(50));
        }
    }

    pub fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}/v1", self.port)
    }

    pub fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A bare HTTP/1.1 GET (status code and body), `None` when nothing answers.
pub fn http_get(port: u16, path: &str) -> Option<(u16, String)> {
    let r = send_json(
        port,
        "GET",
        path,
        &JSON_LATEST,
        None,
        Duration::from_secs(10),
    )
    .ok()?;
    Some((r.status, r.text()))
}

/// A bare HTTP/1.1 request without identity headers (so with noauth's default identity,
/// the same one the `openstack --os-auth-type none` CLI gets); the status code and the body as
/// JSON (`Null` when empty), or `None` when no answer came (the server down or dying).
pub fn try_http(
    port: u16,
    method: &str,
    path: &str,
    body: Option<&serde_json::Value>,
) -> Option<(u16, serde_json::Value)> {
    let r = send_json(
        port,
        method,
        path,
        &JSON_LATEST,
        body,
        Duration::from_secs(30),
    )
    .ok()?;
    Some((
        r.status,
        serde_json::from_slice(&r.body).unwrap_or(serde_json::Value::Null),
    ))
}

/// [`try_http`] to a server that must answer.
pub fn http(
    port: u16,
    method: &str,
    path: &str,
    body: Option<&serde_json::Value>,
) -> (u16, serde_json::Value) {
    try_http(port, method, path, body).unwrap_or_else(|| panic!("{method} {path}: no answer"))
}
