//! The command line: `serve`, `migrate`, `policy-sample`, `policy-check`.

use std::net::SocketAddr;
use std::path::PathBuf;

use anyhow::Context as _;
use clap::{Parser, Subcommand};

use crate::config::{redact_url, AuthMode, Config};

#[derive(Parser, Debug)]
#[command(
    name = "magnum-rs",
    version,
    about = "OpenStack Magnum v1 API with control-plane resize"
)]
pub struct Cli {
    /// Configuration file (TOML). Default: etc/magnum-rs.toml when it exists.
    #[arg(long, env = "MAGNUM_RS_CONFIG", global = true)]
    pub config: Option<PathBuf>,
    /// Address to listen on (default 127.0.0.1:9511).
    #[arg(long, env = "MAGNUM_RS_BIND", global = true)]
    pub bind: Option<SocketAddr>,
    /// Database URL: sqlite://FILE or mysql://USER:PASS@HOST:PORT/DB.
    #[arg(
        long,
        env = "MAGNUM_RS_DATABASE_URL",
        global = true,
        hide_env_values = true
    )]
    pub database_url: Option<String>,
    /// Authentication: noauth (identity headers; the default on loopback only) or keystone.
    #[arg(long, env = "MAGNUM_RS_AUTH", global = true, value_enum)]
    pub auth: Option<AuthMode>,
    /// An operator policy.yaml overriding Magnum's default rules.
    #[arg(long, env = "MAGNUM_RS_POLICY_FILE", global = true)]
    pub policy_file: Option<PathBuf>,
    /// Log format: text (the default) or json (one object per line).
    #[arg(long, env = "MAGNUM_RS_LOG_FORMAT", global = true, value_enum)]
    pub log_format: Option<crate::telemetry::logging::LogFormat>,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Serve the API (and the operations worker).
    Serve {
        /// Do not start the operations worker (operations stay recorded until a worker runs).
        #[arg(long)]
        no_worker: bool,
    },
    /// Create the schema on an empty database, or check a Magnum-owned one.
    Migrate,
    /// Print Magnum's default policy rules as a commented sample policy.yaml.
    PolicySample,
    /// Print the rules in force (defaults with the operator's overrides).
    PolicyCheck,
    /// Exit 0 when the server configured here answers `GET /healthz` (a container health
    /// check that needs no curl in the image).
    Healthcheck,
}

impl Cli {
    /// Defaults, then the file, then environment and flags.
    pub fn config(&self) -> anyhow::Result<Config> {
        let default_file = PathBuf::from("etc/magnum-rs.toml");
        let mut config = match &self.config {
            Some(path) => Config::from_file(path)?,
            None if default_file.exists() => Config::from_file(&default_file)?,
            None => Config::default(),
        };
        if let Some(b) = self.bind {
            config.bind = b;
        }
        if let Some(u) = &self.database_url {
            config.database_url = u.clone();
        }
        if let Some(a) = self.auth {
            config.auth = Some(a);
        }
        if let Some(p) = &self.policy_file {
            config.policy_file = Some(p.clone());
        }
        if let Some(f) = self.log_format {
            config.log.format = f;
        }
        // Secrets come from the environment (a Kubernetes Secret), not the command line,
        // where every user of the machine could read them.
        if let Ok(p) = std::env::var("MAGNUM_RS_KEYSTONE_PASSWORD") {
            config.keystone_authtoken.password = crate::auth::keystone::Secret::new(p);
        }
        if let Ok(u) = std::env::var("MAGNUM_RS_KEYSTONE_AUTH_URL") {
            config.keystone_authtoken.auth_url = u;
        }
        config
            .metrics
            .load_token(std::env::var(crate::config::METRICS_TOKEN_ENV).ok())?;
        Ok(config)
    }
}

pub async fn run(cli: Cli) -> anyhow::Result<()> {
    let config = cli.config()?;
    match cli.command {
        Command::Serve { no_worker } => {
            // Registered before anything is served, so that a SIGTERM arriving at any point
            // after this starts the graceful shutdown instead of killing the process.
            let shutdown = shutdown_signal()?;
            let auth = config.effective_auth()?;
            if auth == AuthMode::Keystone && config.keystone_authtoken.password.is_empty() {
                anyhow::bail!(
                    "--auth keystone needs the service user's password: set \
                     MAGNUM_RS_KEYSTONE_PASSWORD or [keystone_authtoken] password"
                );
            }
            let bind = config.bind;
            if auth == AuthMode::Noauth && !bind.ip().is_loopback() {
                tracing::warn!(
                    %bind,
                    "noauth on a non-loopback address: anyone who can reach it acts as any \
                     project, admin included (identity comes from request headers); only \
                     behind a proxy that authenticates and sets those headers"
                );
            }
            tracing::info!(%bind, database = %redact_url(&config.database_url), ?auth, "starting magnum-rs");
            let state = crate::build_state(config).await?;
            let listener = tokio::net::TcpListener::bind(bind)
                .await
                .with_context(|| format!("cannot listen on {bind}"))?;
            crate::serve(listener, state, !no_worker, shutdown).await
        }
        Command::Migrate => {
            let store = crate::store::Store::connect_with(
                &config.database_url,
                config.database.max_pool_size,
            )
            .await?;
            let outcome = store.migrate().await?;
            println!("{outcome:?}");
            Ok(())
        }
        Command::PolicySample => {
            print!("{}", crate::policy::Policy::magnum_defaults().sample_yaml());
            Ok(())
        }
        Command::PolicyCheck => {
            let policy = match &config.policy_file {
                Some(p) => crate::policy::Policy::with_overrides_file(p)?,
                None => crate::policy::Policy::magnum_defaults(),
            };
            print!("{}", policy.effective_yaml());
            Ok(())
        }
        Command::Healthcheck => crate::health::probe(config.bind),
    }
}

/// Resolves on the first SIGTERM or SIGINT (Ctrl-C). The handlers are installed now, not
/// when the future is first polled.
fn shutdown_signal() -> anyhow::Result<impl std::future::Future<Output = ()> + Send + 'static> {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        let mut term = signal(SignalKind::terminate()).context("cannot handle SIGTERM")?;
        let mut int = signal(SignalKind::interrupt()).context("cannot handle SIGINT")?;
        Ok(async move {
            let which = tokio::select! {
                _ = term.recv() => "SIGTERM",
                _ = int.recv() => "SIGINT",
            };
            tracing::info!(signal = which, "shutting down");
        })
    }
    #[cfg(not(unix))]
    Ok(async {
        let _ = tokio::signal::ctrl_c().await;
        tracing::info!(signal = "ctrl-c", "shutting down");
    })
}
