//! The differential conformance harness: the same scripted requests (and a scripted
//! `openstack coe …` session) against the real Magnum 23 API and against magnum-rs, on two
//! databases made by Magnum's own migrations and seeded identically, comparing status,
//! the headers that matter, JSON bodies and — after writes — the database rows.
//!
//! Cases are data: `tests/conformance/cases.toml` (HTTP) and `tests/conformance/cli.toml`
//! (CLI). A case expected to differ names the id of a difference listed in
//! `docs/compatibility.md` (`` `diff:<id>` ``); any other difference fails the test, and so
//! does a tagged case that no longer differs. `scripts/test.sh` sets the environment:
//!
//! - `MAGNUM_RS_TEST_CONFORMANCE_MYSQL`: MariaDB base URL (`mysql://user:pass@host:port`);
//!   the databases `conf_{http,cli}_{magnum,ours}` are (re)created there;
//! - `MAGNUM_RS_TEST_CONFORMANCE_PORTS`: two free ports for the real Magnum API (`A,B`);
//! - `MAGNUM_RS_OPENSTACK`: the real `openstack` CLI.
//!
//! Without them the tests fail rather than pass silently.

mod common;

#[path = "conformance/normalize.rs"]
mod normalize;
#[path = "conformance/rows.rs"]
mod rows;
#[path = "conformance/wire.rs"]
mod wire;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde::Deserialize;
use serde_json::Value;
use sqlx::mysql::{MySqlPool, MySqlPoolOptions};

use normalize::Known;

const DEMO: &str = "aaaaaaaaaaaa4aaaaaaaaaaaaaaaaaaa";
const FOREIGN: &str = "99999999999949999999999999999999";
const LATEST: &str = "container-infra latest";

fn env(name: &str) -> String {
    std::env::var(name)
        .ok()
        .filter(|v| !v.is_empty())
        .unwrap_or_else(|| {
            panic!(
                "{name} is not set: run scripts/test.sh, which prepares MariaDB, the real \
                 Magnum API and the openstack CLI for the conformance harness"
            )
        })
}

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn script(args: &[&str], envs: &[(&str, &str)]) -> String {
    let out = Command::new(root().join("scripts").join(args[0]))
        .args(&args[1..])
        .envs(envs.iter().copied())
        .stdin(Stdio::null())
        .output()
        .unwrap_or_else(|e| panic!("run scripts/{}: {e}", args[0]));
    assert!(
        out.status.success(),
        "scripts/{} failed: {}{}",
        args.join(" "),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// The real Magnum API on one database and magnum-rs on an identical copy.
struct Pair {
    rt: tokio::runtime::Runtime,
    pool: MySqlPool,
    theirs_db: String,
    ours_db: String,
    magnum_port: u16,
    magnum: String,
    ours: String,
    child: Child,
    known: Known,
    _dir: tempfile::TempDir,
}

/// One set-up at a time: the scripts may build the shared Magnum virtualenv on first use.
static SETUP: std::sync::Mutex<()> = std::sync::Mutex::new(());

impl Pair {
    fn start(tag: &str, port_index: usize) -> Pair {
        let _one_at_a_time = SETUP.lock().unwrap_or_else(|e| e.into_inner());
        let base = env("MAGNUM_RS_TEST_CONFORMANCE_MYSQL");
        let ports: Vec<u16> = env("MAGNUM_RS_TEST_CONFORMANCE_PORTS")
            .split(',')
            .map(|p| {
                p.trim()
                    .parse()
                    .expect("MAGNUM_RS_TEST_CONFORMANCE_PORTS: A,B")
            })
            .collect();
        let magnum_port = *ports
            .get(port_index)
            .expect("MAGNUM_RS_TEST_CONFORMANCE_PORTS needs two ports");
        let theirs_db = format!("conf_{tag}_magnum");
        let ours_db = format!("conf_{tag}_ours");
        let port_s = magnum_port.to_string();
        script(&["magnum-api.sh", "stop", &port_s], &[]);
        script(&["magnum-db.sh", "create", &theirs_db], &[]);
        script(&["magnum-db.sh", "create", &ours_db], &[]);
        script(&["magnum-db.sh", "seed", &theirs_db], &[]);

        let rt = tokio::runtime::Runtime::new().expect("runtime");
        let pool = rt
            .block_on(
                MySqlPoolOptions::new()
                    .max_connections(2)
                    .connect(&format!("{base}/{theirs_db}")),
            )
            .expect("connect to MariaDB");
        rt.block_on(rows::resync(&pool, &theirs_db, &ours_db))
            .expect("copy the seed");
        let seed = rt
            .block_on(rows::snapshot(&pool, &theirs_db))
            .expect("seed rows");
        let known = Known(rows::uuids(&seed).into_iter().collect::<BTreeSet<_>>());

        // Upgrade is an RPC *call* in Magnum: with no conductor it waits this long, then 500.
        let magnum = script(
            &["magnum-api.sh", "start", &theirs_db, &port_s],
            &[("MAGNUM_API_RPC_TIMEOUT", "2")],
        );

        let dir = tempfile::tempdir().expect("tempdir");
        // noauth: a request without identity headers (the CLI's) is the seed's owner, as
        // the reference's stub filter makes it.
        let config = dir.path().join("magnum-rs.toml");
        std::fs::write(
            &config,
            format!(
                "[noauth]\nproject_id = \"{DEMO}\"\nuser_id = \"u-demo\"\n\
                 roles = [\"member\", \"reader\"]\n"
            ),
        )
        .expect("config");
        let port = common::server::free_port();
        let log = dir.path().join("magnum-rs.log");
        let out = std::fs::File::create(&log).expect("log");
        let child = Command::new(env!("CARGO_BIN_EXE_magnum-rs"))
            .arg("--config")
            .arg(&config)
            .arg("--database-url")
            .arg(format!("{base}/{ours_db}"))
            .arg("--bind")
            .arg(format!("127.0.0.1:{port}"))
            // Operations stay recorded: no worker changes rows behind the comparison.
            .args(["serve", "--no-worker"])
            .stdout(Stdio::from(out.try_clone().expect("log")))
            .stderr(Stdio::from(out))
            .spawn()
            .expect("spawn magnum-rs");
        let mut pair = Pair {
            rt,
            pool,
            theirs_db,
            ours_db,
            magnum_port,
            magnum,
            ours: format!("http://127.0.0.1:{port}"),
            child,
            known,
            _dir: dir,
        };
        pair.wait_ready(port, &log);
        pair
    }

    fn wait_ready(&mut self, port: u16, log: &Path) {
        let deadline = Instant::now() + Duration::from_secs(30);
        while Instant::now() < deadline {
            if let Ok(Some(status)) = self.child.try_wait() {
                panic!(
                    "magnum-rs exited with {status}: {}",
                    std::fs::read_to_string(log).unwrap_or_default()
                );
            }
            if common::server::http_get(port, "/").is_some_and(|(c, _)| c == 200) {
                return;
            }
            std::thread::park_timeout(Duration::from_millis(50));
        }
        panic!("magnum-rs did not become ready");
    }

    /// Differences between the two databases' rows (empty when they agree).
    fn row_differences(&self) -> Vec<String> {
        let theirs = self
            .rt
            .block_on(rows::snapshot(&self.pool, &self.theirs_db))
            .expect("rows of magnum's database");
        let ours = self
            .rt
            .block_on(rows::snapshot(&self.pool, &self.ours_db))
            .expect("rows of magnum-rs's database");
        rows::diff(&theirs, &ours, &self.known)
    }

    fn resync(&self) {
        self.rt
            .block_on(rows::resync(&self.pool, &self.theirs_db, &self.ours_db))
            .expect("resync magnum-rs's database");
    }
}

impl Drop for Pair {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = Command::new(root().join("scripts/magnum-api.sh"))
            .args(["stop", &self.magnum_port.to_string()])
            .output();
    }
}

/// The differences listed in docs/compatibility.md, by their `` `diff:<id>` `` marks.
fn listed_differences() -> BTreeSet<String> {
    let doc = std::fs::read_to_string(root().join("docs/compatibility.md")).expect("docs");
    doc.split("`diff:")
        .skip(1)
        .filter_map(|s| s.split_once('`').map(|(id, _)| id.to_string()))
        .collect()
}

/// What became of the cases: the harness's result, printed and written to a report file.
#[derive(Default)]
struct Tally {
    compared: usize,
    identical: usize,
    listed: BTreeMap<String, usize>,
    /// The expected differences themselves, for the report.
    listed_details: Vec<String>,
    failures: Vec<String>,
}

impl Tally {
    fn record(&mut self, label: &str, expected: Option<&str>, diffs: Vec<String>) {
        self.compared += 1;
        let listed = listed_differences();
        if let Some(id) = expected {
            if !listed.contains(id) {
                self.failures.push(format!(
                    "{label}: tagged `{id}`, which docs/compatibility.md does not list"
                ));
                return;
            }
        }
        match (diffs.is_empty(), expected) {
            (true, None) => self.identical += 1,
            (true, Some(id)) => self.failures.push(format!(
                "{label}: tagged `{id}` but both servers now agree: remove the tag"
            )),
            (false, Some(id)) => {
                *self.listed.entry(id.to_string()).or_default() += 1;
                self.listed_details
                    .push(format!("{label}: `{id}`:\n    {}", diffs.join("\n    ")));
            }
            (false, None) => self.failures.push(format!(
                "{label}: unlisted difference:\n    {}",
                diffs.join("\n    ")
            )),
        }
    }

    fn finish(self, what: &str) {
        let listed: Vec<String> = self
            .listed
            .iter()
            .map(|(id, n)| format!("{id} ×{n}"))
            .collect();
        let summary = format!(
            "{what}: {} compared, {} identical, {} listed differences ({}), {} unlisted",
            self.compared,
            self.identical,
            self.listed.values().sum::<usize>(),
            listed.join(", "),
            self.failures.len()
        );
        let report = format!("{summary}\n{}\n", self.failures.join("\n"));
        let path = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("{what}.txt"));
        let _ = std::fs::write(
            &path,
            format!(
                "{report}\nlisted differences:\n{}\n",
                self.listed_details.join("\n")
            ),
        );
        eprintln!("{report}(report in {})", path.display());
        assert!(self.failures.is_empty(), "{report}");
    }
}

// ---------------------------------------------------------------- HTTP cases

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Cases {
    case: Vec<Case>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Case {
    name: String,
    #[serde(default = "get")]
    method: String,
    path: String,
    /// `OpenStack-API-Version`; `""` sends none.
    #[serde(default = "latest")]
    version: String,
    /// member | reader | admin | foreign | foreign-admin | anonymous
    #[serde(default = "member")]
    who: String,
    /// Raw request body (sent as is).
    body: Option<String>,
    /// `Accept`; `""` sends none.
    #[serde(default = "json")]
    accept: String,
    /// `Content-Type` of the body.
    #[serde(default = "json")]
    content_type: String,
    /// The id of the listed difference this case shows.
    differs: Option<String>,
}

fn get() -> String {
    "GET".into()
}
fn latest() -> String {
    LATEST.into()
}
fn member() -> String {
    "member".into()
}
fn json() -> String {
    "application/json".into()
}

fn identity(who: &str) -> Vec<(String, String)> {
    let (project, user, roles) = match who {
        "member" => (DEMO, "u-demo", "member,reader"),
        "reader" => (DEMO, "u-demo", "reader"),
        "admin" => (DEMO, "u-admin", "admin,member,reader"),
        "foreign" => (FOREIGN, "u-foreign", "member,reader"),
        "foreign-admin" => (FOREIGN, "u-foreign", "admin,member,reader"),
        "anonymous" => return Vec::new(),
        other => panic!("unknown `who` {other:?}"),
    };
    vec![
        ("X-Project-Id".into(), project.into()),
        ("X-User-Id".into(), user.into()),
        ("X-Roles".into(), roles.into()),
    ]
}

/// The headers clients read.
const COMPARED_HEADERS: &[&str] = &[
    "openstack-api-minimum-version",
    "openstack-api-maximum-version",
    "openstack-api-version",
    "content-type",
    "location",
];

fn compare(a: &wire::Response, b: &wire::Response, known: &Known) -> Vec<String> {
    let mut out = Vec::new();
    if a.status != b.status {
        out.push(format!(
            "status: magnum {} / magnum-rs {}",
            a.status, b.status
        ));
    }
    for h in COMPARED_HEADERS {
        let x = a.header(h).map(|v| normalize::text(v, known));
        let y = b.header(h).map(|v| normalize::text(v, known));
        if x != y {
            out.push(format!("header {h}: magnum {x:?} / magnum-rs {y:?}"));
        }
    }
    let parse = |s: &str| -> Option<Value> {
        serde_json::from_str::<Value>(s).ok().map(|mut v| {
            normalize::json(&mut v, known);
            v
        })
    };
    match (parse(&a.body), parse(&b.body)) {
        (Some(x), Some(y)) if x == y => {}
        (Some(x), Some(y)) => out.push(format!("body:\n      magnum    {x}\n      magnum-rs {y}")),
        (x, y) => {
            let (x, y) = (
                x.map(|v| v.to_string())
                    .unwrap_or_else(|| normalize::text(a.body.trim(), known)),
                y.map(|v| v.to_string())
                    .unwrap_or_else(|| normalize::text(b.body.trim(), known)),
            );
            if x != y {
                out.push(format!(
                    "body:\n      magnum    {x:?}\n      magnum-rs {y:?}"
                ));
            }
        }
    }
    out
}

#[test]
#[ignore = "needs scripts/test.sh"]
fn http_requests_answer_as_magnum_does() {
    let text = std::fs::read_to_string(root().join("tests/conformance/cases.toml")).expect("cases");
    let cases: Cases = toml::from_str(&text).expect("tests/conformance/cases.toml");
    let mut names = BTreeSet::new();
    for c in &cases.case {
        assert!(
            names.insert(c.name.clone()),
            "duplicate case name {:?}",
            c.name
        );
    }
    let pair = Pair::start("http", 0);
    let mut tally = Tally::default();
    for c in &cases.case {
        let mut headers = identity(&c.who);
        if !c.accept.is_empty() {
            headers.push(("Accept".into(), c.accept.clone()));
        }
        if !c.version.is_empty() {
            headers.push(("OpenStack-API-Version".into(), c.version.clone()));
        }
        if c.body.is_some() {
            headers.push(("Content-Type".into(), c.content_type.clone()));
        }
        let send = |base: &str| {
            wire::send(base, &c.method, &c.path, &headers, c.body.as_deref())
                .unwrap_or_else(|e| panic!("{}: {e}", c.name))
        };
        let theirs = send(&pair.magnum);
        let ours = send(&pair.ours);
        let mut diffs = compare(&theirs, &ours, &pair.known);
        if c.method != "GET" {
            let rows = pair.row_differences();
            if !rows.is_empty() {
                diffs.extend(rows.into_iter().map(|r| format!("row {r}")));
                pair.resync();
            }
        }
        let label = format!("{} ({} {} as {})", c.name, c.method, c.path, c.who);
        tally.record(&label, c.differs.as_deref(), diffs);
    }
    tally.finish("conformance-http");
}

// ---------------------------------------------------------------- CLI session

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Session {
    command: Vec<CliCommand>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct CliCommand {
    /// Arguments after `openstack --os-auth-type none --os-endpoint URL coe`.
    args: Vec<String>,
    differs: Option<String>,
}

fn openstack(bin: &str, base: &str, args: &[String], known: &Known) -> String {
    let out = Command::new(bin)
        .args(["--os-auth-type", "none", "--os-endpoint"])
        .arg(format!("{base}/v1"))
        .arg("coe")
        .args(args)
        .env("COLUMNS", "200")
        .stdin(Stdio::null())
        .output()
        .expect("run openstack");
    let stderr = String::from_utf8_lossy(&out.stderr);
    // Request ids differ per request; Python warnings are not output of the command.
    let stderr: Vec<String> = stderr
        .lines()
        .filter(|l| !l.contains("Warning") && !l.trim_start().starts_with("warnings.warn"))
        .map(|l| match l.find("(Request-ID: req-") {
            Some(i) => format!("{}(Request-ID: req-…)", &l[..i]),
            None => l.to_string(),
        })
        .collect();
    normalize::text(
        &format!(
            "exit {}\n{}{}",
            out.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&out.stdout),
            stderr.join("\n")
        ),
        known,
    )
}

#[test]
#[ignore = "needs scripts/test.sh"]
fn cli_session_prints_what_magnum_prints() {
    let bin = env("MAGNUM_RS_OPENSTACK");
    let text = std::fs::read_to_string(root().join("tests/conformance/cli.toml")).expect("cli");
    let session: Session = toml::from_str(&text).expect("tests/conformance/cli.toml");
    let pair = Pair::start("cli", 1);
    let mut tally = Tally::default();
    for c in &session.command {
        // The two CLI runs are independent (different servers and databases): run them
        // side by side, since the CLI's start-up dominates the session's time.
        let (theirs, ours) = std::thread::scope(|s| {
            let theirs = s.spawn(|| openstack(&bin, &pair.magnum, &c.args, &pair.known));
            let ours = openstack(&bin, &pair.ours, &c.args, &pair.known);
            (theirs.join().expect("openstack against magnum"), ours)
        });
        let mut diffs = Vec::new();
        if theirs != ours {
            diffs.push(format!(
                "output:\n--- magnum\n{theirs}\n--- magnum-rs\n{ours}"
            ));
        }
        let rows = pair.row_differences();
        if !rows.is_empty() {
            diffs.extend(rows.into_iter().map(|r| format!("row {r}")));
            pair.resync();
        }
        let label = format!("openstack coe {}", c.args.join(" "));
        tally.record(&label, c.differs.as_deref(), diffs);
    }
    tally.finish("conformance-cli");
}
