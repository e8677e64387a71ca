//! Typed configuration: built-in defaults, then `etc/magnum-rs.toml` (or `--config`), then
//! environment variables and command-line flags (see `cli.rs`).

use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use anyhow::Context as _;
use serde::{Deserialize, Serialize};

use crate::auth::keystone::{KeystoneAuthConfig, Secret};
use crate::drivers::cluster_api::ClusterApiConfig;
use crate::drivers::Triple;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum AuthMode {
    /// Identity from `X-Project-Id`, `X-User-Id`, `X-Roles` (behind a trusted proxy, or tests).
    Noauth,
    /// Keystone tokens (`X-Auth-Token`).
    Keystone,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Config {
    /// Address to listen on.
    pub bind: SocketAddr,
    /// `sqlite://path` or `mysql://user:pass@host:port/db`. Never logged.
    pub database_url: String,
    /// `None`: noauth on a loopback address, otherwise refuse to start.
    pub auth: Option<AuthMode>,
    /// An operator `policy.yaml` overriding Magnum's default rules.
    pub policy_file: Option<PathBuf>,
    /// Create or check the schema at start-up (`magnum-rs migrate` does it explicitly).
    pub auto_migrate: bool,
    pub api: ApiConfig,
    pub quotas: QuotaConfig,
    pub cluster_template: ClusterTemplateConfig,
    pub drivers: DriversConfig,
    pub noauth: NoauthConfig,
    pub log: crate::telemetry::logging::LogConfig,
    /// How tokens are validated in keystone auth mode.
    pub keystone_authtoken: KeystoneAuthConfig,
    /// How the services in the Keystone catalog are called.
    pub openstack: crate::openstack::OpenStackConfig,
    pub service: crate::mservice::ServiceConfig,
    pub operations: crate::operations::handle::OperationsConfig,
    pub database: DatabaseConfig,
    pub metrics: MetricsConfig,
}

/// `[database]`: as oslo.db's options of the same names.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct DatabaseConfig {
    /// Connections a MySQL/MariaDB pool keeps at most (oslo.db's default: 5). More than a
    /// few per core only adds contention inside the database server.
    pub max_pool_size: usize,
}

impl Default for DatabaseConfig {
    fn default() -> Self {
        DatabaseConfig {
            max_pool_size: crate::store::DEFAULT_MAX_POOL_SIZE,
        }
    }
}

/// `[noauth]`: the identity a noauth request has when it carries no identity headers (a
/// client such as `openstack --os-auth-type none` sends none), and which `Host` names a
/// noauth service on a loopback address answers.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct NoauthConfig {
    pub project_id: String,
    pub user_id: String,
    pub roles: Vec<String>,
    /// Host names (without port) a noauth service bound to a loopback address accepts
    /// besides `localhost` and loopback addresses; `"*"`: any. A browser page of any other
    /// name reaching the loopback address (DNS rebinding) is refused with 403.
    pub allowed_hosts: Vec<String>,
}

impl Default for NoauthConfig {
    fn default() -> Self {
        NoauthConfig {
            project_id: "noauth-project".into(),
            user_id: "noauth-user".into(),
            roles: vec!["reader".into(), "member".into()],
            allowed_hosts: Vec::new(),
        }
    }
}

/// The most a TEXT column holds on MySQL/MariaDB (65,535 bytes): Magnum's `labels`,
/// `node_labels`, `node_taints`, `health_status_reason` and `properties` columns are TEXT, so
/// a larger value could not be stored on a Magnum database at all (`Data too long`).
pub const MYSQL_TEXT_BYTES: usize = 65_535;

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ApiConfig {
    /// `[api] max_limit`: the largest page.
    pub max_limit: i64,
    /// Seconds a client has to send a request's headers, from the connection's start or the
    /// end of the previous response (so also the keep-alive idle timeout). Apache's
    /// `RequestReadTimeout header=20`.
    pub header_read_timeout: u64,
    /// Connections open at once; one more is closed at once. Keep it below the process's
    /// file-descriptor limit (`ulimit -n`), with room for the database and kube clients.
    pub max_connections: usize,
    /// Connections open at once from one peer (an IPv4 address, an IPv6 /64), so that one
    /// client's idle sockets cannot take every place of `max_connections`. Behind a proxy
    /// every client is the proxy: raise it to `max_connections` there.
    pub max_connections_per_peer: usize,
    /// Seconds a request's whole body has to arrive, from the end of its headers; then the
    /// request is answered 408 and its connection closed. A total, not an idle timeout: a
    /// body sent a byte a second is cut off too.
    pub body_read_timeout: u64,
    /// Seconds from a request's headers to its answer; a request still unanswered then is
    /// answered 503 (its handler is cancelled, an open transaction rolled back).
    pub request_timeout: u64,
    /// Seconds that requests in flight get to finish after SIGTERM (no new connection is
    /// accepted meanwhile, and the operations worker stops); then the process exits anyway.
    pub shutdown_timeout: u64,
    /// The largest request body in bytes; a larger one gets 413 in Magnum's envelope.
    pub max_request_body_size: usize,
    /// The largest `labels` dict a request may store (templates, clusters, nodegroups), in
    /// bytes of its JSON as stored; a larger one gets 400 (`api::bounds`). Magnum has no
    /// such bound: every list of clusters would carry whatever one client stored.
    /// At most [`MYSQL_TEXT_BYTES`] (the default), what Magnum's TEXT column holds on MySQL.
    pub max_labels_size: usize,
    /// The same for every other free-form dict or list a request may store (`node_labels`,
    /// `node_taints`, `health_status_reason`, a federation's `properties` and `member_ids`,
    /// a resize's `nodes_to_remove`).
    pub max_field_size: usize,
    /// oslo.middleware's `enable_proxy_headers_parsing`: take the links' scheme from
    /// `X-Forwarded-Proto`. Only behind a proxy that sets (or strips) it.
    pub enable_proxy_headers_parsing: bool,
}

/// `[metrics]`: where `GET /metrics` is served and what a scrape must show.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct MetricsConfig {
    /// Serve `/metrics` on this address only (the API's listener then answers 404 there), so
    /// that a Service or load balancer in front of the API does not expose it. None: on the
    /// API's listener.
    pub bind: Option<SocketAddr>,
    /// A file whose content (surrounding whitespace trimmed) is the bearer token a scrape
    /// must send (`Authorization: Bearer …`); `MAGNUM_RS_METRICS_TOKEN` takes precedence.
    /// None (and no variable): no credential.
    pub token_file: Option<PathBuf>,
    /// The token in force, from the environment or `token_file` (never from the file itself,
    /// never logged).
    #[serde(skip)]
    pub token: Secret,
}

/// The environment variable holding the metrics bearer token.
pub const METRICS_TOKEN_ENV: &str = "MAGNUM_RS_METRICS_TOKEN";

impl MetricsConfig {
    /// Reads the token from `env_token` (the environment's value, if set and not empty) or
    /// else from `token_file`; an unreadable or empty file is an error, not an open door.
    pub fn load_token(&mut self, env_token: Option<String>) -> anyhow::Result<()> {
        if let Some(t) = env_token.filter(|t| !t.trim().is_empty()) {
            self.token = Secret::new(t.trim());
            return Ok(());
        }
        let Some(path) = &self.token_file else {
            return Ok(());
        };
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("cannot read [metrics] token_file {}", path.display()))?;
        anyhow::ensure!(
            !text.trim().is_empty(),
            "[metrics] token_file {} is empty",
            path.display()
        );
        self.token = Secret::new(text.trim());
        Ok(())
    }
}

/// `[cluster_template]`: Magnum's options of the same names.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ClusterTemplateConfig {
    /// Network drivers a template may name (`all`: every supported one). Magnum's default:
    /// flannel and calico.
    pub kubernetes_allowed_network_drivers: Vec<String>,
}

impl Default for ClusterTemplateConfig {
    fn default() -> Self {
        ClusterTemplateConfig {
            kubernetes_allowed_network_drivers: vec!["flannel".into(), "calico".into()],
        }
    }
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct QuotaConfig {
    /// `[quotas] max_clusters_per_project`.
    pub max_clusters_per_project: i64,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct DriversConfig {
    pub cluster_api: ClusterApiConfig,
    /// A record-only stand-in for Magnum's base (heat) driver: no control-plane resize.
    pub base: BaseDriverConfig,
    /// Driver names not to load (`[drivers] disabled_drivers`).
    pub disabled: Vec<String>,
    /// `[drivers] default_driver`: the driver a template gets when it names none and its
    /// (server_type, cluster_distro, coe) matches no driver (Magnum takes the distro from
    /// Glance; magnum-rs has no Glance, so a template created by the CLI has none).
    pub default_driver: Option<String>,
    /// Record-only drivers also append each call to this file (JSON lines), for tests and
    /// for seeing what a driver was asked to do without a backend.
    pub journal: Option<PathBuf>,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct BaseDriverConfig {
    pub name: String,
    pub provides: Vec<Triple>,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            bind: SocketAddr::from(([127, 0, 0, 1], 9511)),
            database_url: "sqlite://magnum-rs.db".into(),
            auth: None,
            policy_file: None,
            auto_migrate: true,
            api: ApiConfig::default(),
            quotas: QuotaConfig::default(),
            cluster_template: ClusterTemplateConfig::default(),
            drivers: DriversConfig::default(),
            noauth: NoauthConfig::default(),
            log: Default::default(),
            keystone_authtoken: KeystoneAuthConfig::default(),
            openstack: crate::openstack::OpenStackConfig::default(),
            service: crate::mservice::ServiceConfig::default(),
            operations: crate::operations::handle::OperationsConfig::default(),
            database: DatabaseConfig::default(),
            metrics: MetricsConfig::default(),
        }
    }
}

impl Default for ApiConfig {
    fn default() -> Self {
        ApiConfig {
            max_limit: 1000,
            header_read_timeout: 20,
            max_connections: 1024,
            max_connections_per_peer: 128,
            body_read_timeout: 30,
            request_timeout: 60,
            shutdown_timeout: 20,
            max_request_body_size: 2 * 1024 * 1024,
            max_labels_size: MYSQL_TEXT_BYTES,
            max_field_size: MYSQL_TEXT_BYTES,
            enable_proxy_headers_parsing: false,
        }
    }
}

impl Default for QuotaConfig {
    fn default() -> Self {
        QuotaConfig {
            max_clusters_per_project: 20,
        }
    }
}

impl Default for DriversConfig {
    fn default() -> Self {
        DriversConfig {
            cluster_api: ClusterApiConfig::default(),
            base: BaseDriverConfig::default(),
            disabled: Vec::new(),
            default_driver: Some("cluster-api".into()),
            journal: None,
        }
    }
}

impl Default for BaseDriverConfig {
    fn default() -> Self {
        BaseDriverConfig {
            name: "k8s_fedora_coreos_v1".into(),
            provides: vec![Triple::new("vm", "fedora-coreos", "kubernetes")],
        }
    }
}

impl Config {
    /// Reads a TOML file over the defaults.
    pub fn from_file(path: &Path) -> anyhow::Result<Config> {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("cannot read {}", path.display()))?;
        toml::from_str(&text)
            .with_context(|| format!("invalid configuration in {}", path.display()))
    }

    /// The authentication mode in force: an explicit choice, or noauth on loopback only.
    pub fn effective_auth(&self) -> anyhow::Result<AuthMode> {
        match self.auth {
            Some(mode) => Ok(mode),
            None if self.bind.ip().is_loopback() => Ok(AuthMode::Noauth),
            None => anyhow::bail!(
                "refusing to serve {} without authentication: choose --auth keystone (or \
                 --auth noauth behind a trusted proxy)",
                self.bind
            ),
        }
    }
}

/// The database URL with any password replaced, for logs.
pub fn redact_url(url: &str) -> String {
    match (url.find("://"), url.rfind('@')) {
        (Some(s), Some(at)) if at > s => {
            let creds = &url[s + 3..at];
            let user = creds.split(':').next().unwrap_or_default();
            format!("{}://{user}:***@{}", &url[..s], &url[at + 1..])
        }
        _ => url.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passwords_are_redacted_from_database_urls() {
        assert_eq!(
            redact_url("mysql://magnum:s3cret@127.0.0.1:3306/magnum"),
            "mysql://magnum:***@127.0.0.1:3306/magnum"
        );
        assert_eq!(redact_url("sqlite://magnum-rs.db"), "sqlite://magnum-rs.db");
    }

    #[test]
    fn noauth_is_the_default_only_on_loopback() {
        let mut c = Config::default();
        assert_eq!(c.effective_auth().ok(), Some(AuthMode::Noauth));
        c.bind = "0.0.0.0:9511".parse().expect("address");
        assert!(c.effective_auth().is_err());
    }

    #[test]
    fn the_metrics_token_comes_from_the_environment_before_the_file() {
        let dir = tempfile::tempdir().expect("dir");
        let file = dir.path().join("token");
        std::fs::write(&file, "  from-file\n").expect("write");
        let mut m = MetricsConfig {
            token_file: Some(file.clone()),
            ..MetricsConfig::default()
        };
        m.load_token(Some("from-env".into())).expect("env");
        assert_eq!(m.token.expose(), "from-env");
        m.load_token(Some("  ".into())).expect("file");
        assert_eq!(m.token.expose(), "from-file", "blank variable: the file");
        assert_eq!(format!("{:?}", m.token), "\"***\"", "never shown");
    }

    #[test]
    fn an_empty_or_missing_metrics_token_file_is_an_error_not_an_open_door() {
        let dir = tempfile::tempdir().expect("dir");
        let empty = dir.path().join("empty");
        std::fs::write(&empty, "\n").expect("write");
        for path in [empty, dir.path().join("missing")] {
            let mut m = MetricsConfig {
                token_file: Some(path.clone()),
                ..MetricsConfig::default()
            };
            assert!(m.load_token(None).is_err(), "{}", path.display());
            assert!(m.token.is_empty());
        }
        let mut none = MetricsConfig::default();
        none.load_token(None).expect("no credential configured");
        assert!(none.token.is_empty());
    }
}

#[cfg(test)]
mod sample_tests {
    use super::*;

    /// The documented sample must stay true: it parses and equals the built-in defaults.
    #[test]
    fn sample_configuration_equals_the_defaults() {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("etc/magnum-rs.toml");
        let sample = Config::from_file(&path).expect("sample parses");
        let a = toml::to_string(&sample).expect("serialize");
        let b = toml::to_string(&Config::default()).expect("serialize");
        assert_eq!(a, b);
    }
}
