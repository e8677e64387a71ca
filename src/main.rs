use clap::Parser;
use tracing_subscriber::EnvFilter;

#[tokio::main]
async fn main() -> std::process::ExitCode {
    tracing_subscriber::fmt()
        .with_env_filter(
            EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| EnvFilter::new("magnum_rs=info,tower_http=info")),
        )
        .init();
    let cli = magnum_rs::cli::Cli::parse();
    match magnum_rs::cli::run(cli).await {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("magnum-rs: {e:#}");
            std::process::ExitCode::FAILURE
        }
    }
}
