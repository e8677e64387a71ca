use clap::Parser;

#[tokio::main]
async fn main() -> std::process::ExitCode {
    let cli = magnum_rs::cli::Cli::parse();
    // An unreadable configuration is reported by `run` below; logs start as text then.
    let format = cli.config().map(|c| c.log.format).unwrap_or_default();
    magnum_rs::telemetry::logging::init(format);
    match magnum_rs::cli::run(cli).await {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("magnum-rs: {e:#}");
            std::process::ExitCode::FAILURE
        }
    }
}
