//! Command-line front end: argument parsing and the commands' output. Library code returns
//! data; only this module prints.

pub mod bench;
pub mod demo;
pub mod lists;
pub mod members;
pub mod mirror;
pub mod mirror_restore;
pub mod offsets;
pub mod pause;
pub mod probe;
pub mod run;
pub mod status;
pub mod table;

use clap::{Parser, Subcommand, ValueEnum};

/// strait: replicate Kafka topics between clusters, batch for batch.
#[derive(Debug, Parser)]
#[command(name = "strait", version, about, long_about = None)]
pub struct Cli {
    /// Log format on stderr.
    #[arg(long, value_enum, global = true, default_value_t = LogFormat::Human)]
    pub log_format: LogFormat,
    /// Log filter (tracing-subscriber EnvFilter syntax), e.g. `info` or `strait=debug`.
    #[arg(long, global = true, default_value = "info", env = "STRAIT_LOG")]
    pub log: String,
    /// The command.
    #[command(subcommand)]
    pub command: Command,
}

/// Log output format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum LogFormat {
    /// Human-readable lines.
    Human,
    /// One JSON object per line.
    Json,
}

/// The commands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Start two local clusters, write data, replicate it, and show both sides.
    Demo(demo::DemoArgs),
    /// Show a cluster: id, brokers, negotiated API versions, topics with leaders and offsets.
    Probe(probe::ProbeArgs),
    /// Run every flow of a configuration (TOML or mm2.properties) until SIGINT/SIGTERM.
    Run(run::RunArgs),
    /// Change or list a flow's topic allow/deny lists while it runs (like `srm-control topics`).
    Topics(lists::ListArgs),
    /// Change or list a flow's consumer group allow/deny lists (like `srm-control groups`).
    Groups(lists::ListArgs),
    /// Pause a whole flow on every instance running it: nothing is copied until it is resumed.
    Pause(pause::PauseArgs),
    /// Resume a paused flow: it continues exactly where it stopped.
    Resume(pause::FlowArgs),
    /// A consumer group's translated offsets on the target (`--export`: CSV for
    /// `kafka-consumer-groups --reset-offsets --from-file`). Reads only the target cluster.
    Offsets(offsets::OffsetsArgs),
    /// Commit a consumer group's translated offsets on the target cluster.
    Failover(offsets::OffsetsArgs),
    /// Mirror topics (Cluster Linking style): list, describe, status, pause, resume, promote,
    /// failover, configure.
    Mirror(mirror::MirrorArgs),
    /// The instances sharing each target cluster's work, and who owns what.
    Members(members::MembersArgs),
    /// What a running instance is doing (from its `http` address): flows, topics with lag and
    /// rate, group checkpoints, and catch-up progress.
    Status(status::StatusArgs),
    /// Measure replication throughput, CPU per GB, peak RSS and latency against the target's
    /// direct-write ceiling and a socket relay's floor (two local Apache Kafka clusters by default).
    Bench(bench::BenchArgs),
    /// The socket-to-socket relay `strait bench` measures as the floor.
    #[command(hide = true)]
    BenchRelay(bench::RelayArgs),
}

/// Sets up `tracing` for the binary.
pub fn init_logging(format: LogFormat, filter: &str) {
    let filter = tracing_subscriber::EnvFilter::try_new(filter)
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn"));
    // Colours only on a terminal: a log file or a collector gets plain text.
    let terminal = std::io::IsTerminal::is_terminal(&std::io::stderr());
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(terminal)
        .with_writer(std::io::stderr);
    match format {
        LogFormat::Human => builder.init(),
        LogFormat::Json => builder.json().init(),
    }
}
