//! The `strait` binary.

mod cli;

use clap::Parser;
use cli::{init_logging, Cli, Command};
use strait::replicate::lists::ListKind;

fn main() -> std::process::ExitCode {
    let cli = Cli::parse();
    init_logging(cli.log_format, &cli.log);
    if let Command::BenchRelay(args) = &cli.command {
        // No async runtime: the floor is a plain blocking copy on one thread.
        return match cli::bench::relay(args) {
            Ok(_) => std::process::ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("error: {e}");
                std::process::ExitCode::FAILURE
            }
        };
    }
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: cannot start the async runtime: {e}");
            return std::process::ExitCode::FAILURE;
        }
    };
    let result = runtime.block_on(async {
        match &cli.command {
            Command::Demo(args) => cli::demo::run(args).await.map(|s| print!("{s}")),
            Command::Probe(args) => cli::probe::run(args).await.map(|s| print!("{s}")),
            Command::Run(args) => cli::run::run(args).await.map(|s| eprint!("{s}")),
            Command::Topics(args) => cli::lists::run(args, ListKind::Topics)
                .await
                .map(|s| print!("{s}")),
            Command::Groups(args) => cli::lists::run(args, ListKind::Groups)
                .await
                .map(|s| print!("{s}")),
            Command::Offsets(args) => cli::offsets::offsets(args).await.map(|s| print!("{s}")),
            Command::Failover(args) => cli::offsets::failover(args).await.map(|s| print!("{s}")),
            Command::Bench(args) => cli::bench::run(args).await.map(|s| print!("{s}")),
            Command::BenchRelay(_) => Ok(()),
        }
    });
    match result {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}
