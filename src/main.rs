#![cfg_attr(not(test), deny(clippy::unwrap_used, clippy::expect_used))]

use clap::Parser;

/// mimalloc: glibc's malloc was a sixth of the server's CPU on the benchmark's reads (many
/// small allocations freed on other runtime threads); see bench/README.md.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

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
