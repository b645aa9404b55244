//! The `strait` binary.

mod cli;

use clap::Parser;
use cli::{init_logging, Cli, Command};
use strait::replicate::lists::ListKind;

/// Keeps freed response buffers in the allocator for the next ones instead of handing them back
/// to the kernel: every fetched byte then lands in memory that is already mapped, instead of
/// costing a page fault and a page clear per 4 KiB (a fifth of strait's CPU time otherwise).
/// Peak RSS is unchanged: it is the high-water mark of live buffers either way.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn tune_allocator() {
    // SAFETY: mallopt only sets glibc malloc parameters; called once before any thread starts.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, 64 << 20);
        libc::mallopt(libc::M_TRIM_THRESHOLD, 128 << 20);
        // One arena: a buffer freed on another worker thread is reused there too, so the heap
        // holds one high-water mark of live buffers rather than one per thread.
        libc::mallopt(libc::M_ARENA_MAX, 1);
    }
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn tune_allocator() {}

fn main() -> std::process::ExitCode {
    tune_allocator();
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
            Command::Pause(args) => cli::pause::run(&args.flow, true, args.reason.clone())
                .await
                .map(|s| print!("{s}")),
            Command::Resume(args) => cli::pause::run(args, false, None)
                .await
                .map(|s| print!("{s}")),
            Command::Offsets(args) => cli::offsets::offsets(args).await.map(|s| print!("{s}")),
            Command::Failover(args) => cli::offsets::failover(args).await.map(|s| print!("{s}")),
            Command::Mirror(args) => cli::mirror::run(args).await.map(|s| print!("{s}")),
            Command::Members(args) => cli::members::run(args).await.map(|s| print!("{s}")),
            Command::Status(args) => cli::status::run(args).await.map(|s| print!("{s}")),
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
