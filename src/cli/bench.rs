//! `strait bench` (throughput, CPU per GB, peak RSS and latency, next to the target broker's
//! ceiling and a socket relay's floor) and the hidden `strait bench-relay` it runs as the floor.

use std::path::PathBuf;
use std::time::Duration;

use strait::bench::data::DataShape;
use strait::bench::link::DelayLink;
use strait::bench::{relay, BenchOptions};
use strait::local_broker::LocalBroker;
use strait::local_kafka::free_port;
use strait::records::Compression;
use strait::{Error, Result};

/// Arguments of `strait bench`.
#[derive(Debug, clap::Args)]
pub struct BenchArgs {
    /// Source cluster `host:port` (default: start two local Apache Kafka brokers).
    #[arg(long, requires = "target")]
    pub source: Option<String>,
    /// Target cluster `host:port`.
    #[arg(long, requires = "source")]
    pub target: Option<String>,
    /// Partitions of the bench topics.
    #[arg(long, default_value_t = 16)]
    pub partitions: i32,
    /// Records to replicate (rounded up to whole batches).
    #[arg(long, default_value_t = 500_000)]
    pub records: u64,
    /// Value bytes per record.
    #[arg(long, default_value_t = 1000)]
    pub record_bytes: usize,
    /// Distinct record keys.
    #[arg(long, default_value_t = 100_000)]
    pub keys: u64,
    /// Codec of the batches.
    #[arg(long, default_value = "none")]
    pub codec: Compression,
    /// Uncompressed batch size in bytes.
    #[arg(long, default_value_t = 64 * 1024)]
    pub batch_bytes: usize,
    /// Seconds of the latency phase (0 skips it).
    #[arg(long, default_value_t = 5.0)]
    pub latency_secs: f64,
    /// Seconds the latency phase's producer runs before its samples count (fresh brokers
    /// compile their hot code meanwhile; the report says how long).
    #[arg(long, default_value_t = 5.0)]
    pub latency_warmup_secs: f64,
    /// Produce rate of the latency phase in MB/s (default: half of strait's measured throughput).
    #[arg(long)]
    pub latency_mb_per_s: Option<f64>,
    /// Replication factor of the topics created.
    #[arg(long, default_value_t = 1)]
    pub replication_factor: i16,
    /// strait's `buffer_bytes` (default: strait's default).
    #[arg(long)]
    pub buffer_bytes: Option<usize>,
    /// strait's `fetch_max_bytes` (default: strait's default).
    #[arg(long)]
    pub fetch_max_bytes: Option<usize>,
    /// strait's `fetch_max_wait_ms` (default: strait's default).
    #[arg(long)]
    pub fetch_max_wait_ms: Option<u64>,
    /// strait's `max_bytes_per_second` (default: unlimited); the report's strait rate is then
    /// the rate the cap let through.
    #[arg(long)]
    pub max_bytes_per_second: Option<u64>,
    /// strait's `recompress` (`none` or `zstd`; default: strait's default, none): with local
    /// Apache Kafka brokers the remote topic's size on the target's disk is printed after the
    /// report.
    #[arg(long)]
    pub recompress: Option<strait::config::Recompress>,
    /// Seconds to leave strait running idle after the backlog, its CPU share measured (the
    /// 1 000-partition idle goal; 0 skips it).
    #[arg(long, default_value_t = 0.0)]
    pub idle_secs: f64,
    /// Source topic name (default `strait-bench-<time>`); it must not exist.
    #[arg(long)]
    pub topic: Option<String>,
    /// Which broker the local clusters run on (when no `--source`/`--target` is given).
    #[arg(long, value_enum, default_value_t = super::demo::LocalKind::Kafka)]
    pub broker: super::demo::LocalKind,
    /// The nisshi binary with `--broker nisshi` (default: on PATH or in ~/.cargo/bin).
    #[arg(long)]
    pub nisshi: Option<PathBuf>,
    /// Log filter of the measured `strait run` children (their logs go to the work directory).
    #[arg(long, default_value = "warn")]
    pub strait_log: String,
    /// Keep the work directory (generated configurations, `strait run` logs) after a good run.
    #[arg(long)]
    pub keep: bool,
    /// Print the report as JSON.
    #[arg(long)]
    pub json: bool,
    /// Put the local target cluster behind a link with this round-trip time in milliseconds (a
    /// relay holding every byte for half of it each way): strait's writes and the ceiling's
    /// direct writes cross the same long-distance link. Local Apache Kafka brokers only; no
    /// latency phase (`--latency-secs 0`) and no `--peer`.
    #[arg(long)]
    pub link_rtt_ms: Option<f64>,
    /// Also run this replicator on the same backlog and brokers, after strait, and report both
    /// side by side (`mm2`: Apache Kafka's MirrorMaker 2, dedicated mode, from the jars the
    /// local brokers run from; with the latency phase on, its latency is measured too, at the
    /// same rate on fresh local brokers).
    #[arg(long, value_enum)]
    pub peer: Option<Peer>,
}

/// A replicator `strait bench --peer` measures next to strait.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Peer {
    /// Apache Kafka's MirrorMaker 2.
    Mm2,
}

/// Arguments of `strait bench-relay`.
#[derive(Debug, clap::Args)]
pub struct RelayArgs {
    /// Where to relay to.
    #[arg(long)]
    pub sink: String,
}

/// Runs the bench and returns the report.
pub async fn run(args: &BenchArgs) -> Result<String> {
    let exe = std::env::current_exe()
        .map_err(|e| Error::invalid(format!("cannot find the strait binary: {e}")))?;
    let stamp = strait::replicate::store::now_ms();
    let work_dir =
        std::env::temp_dir().join(format!("strait-bench-{}-{stamp}", std::process::id()));
    let mut local = Vec::new();
    check_latency_seconds(args)?;
    let link_rtt = link_rtt(args)?;
    let mut link = None;
    let (source, target) = match (&args.source, &args.target) {
        (Some(s), Some(t)) => (s.clone(), t.clone()),
        _ => {
            let kind = super::demo::broker_kind(args.broker, args.nisshi.as_deref(), true)?;
            local.push(LocalBroker::start_kind(&kind, "bench_source").await?);
            let ports = match link_rtt {
                None => None,
                Some(rtt) => {
                    let (listen, advertised) = (free_port()?, free_port()?);
                    let l = DelayLink::start(
                        &format!("127.0.0.1:{advertised}"),
                        &format!("127.0.0.1:{listen}"),
                        rtt,
                    )
                    .await?;
                    link = Some(l);
                    Some((listen, advertised))
                }
            };
            local.push(LocalBroker::start_kind_at(&kind, "bench_target", ports).await?);
            eprintln!("started two local brokers ({})", local[0].kind_name());
            (local[0].addr().to_string(), local[1].addr().to_string())
        }
    };
    let opts = BenchOptions {
        source,
        target,
        local_brokers: !local.is_empty(),
        exe,
        topic: args
            .topic
            .clone()
            .unwrap_or_else(|| format!("strait-bench-{stamp}")),
        partitions: args.partitions,
        records: args.records,
        shape: DataShape {
            record_bytes: args.record_bytes,
            key_spread: args.keys.max(1),
            codec: args.codec,
            batch_bytes: args.batch_bytes,
        },
        replication_factor: args.replication_factor,
        latency_seconds: args.latency_secs.max(0.0),
        latency_warmup_seconds: args.latency_warmup_secs.max(0.0),
        latency_rate_mb_per_s: args.latency_mb_per_s.filter(|r| *r > 0.0),
        buffer_bytes: args.buffer_bytes,
        fetch_max_bytes: args.fetch_max_bytes,
        fetch_max_wait_ms: args.fetch_max_wait_ms,
        work_dir: work_dir.clone(),
        strait_log: args.strait_log.clone(),
        broker_pids: (local.len() == 2).then(|| (local[0].pid(), local[1].pid())),
        max_bytes_per_second: args.max_bytes_per_second.filter(|r| *r > 0),
        recompress: args.recompress,
        idle_seconds: args.idle_secs.max(0.0),
        link_rtt_ms: link_rtt.map(|d| d.as_secs_f64() * 1000.0),
    };
    let progress = |line: &str| eprintln!("{line} ...");
    let mut report = strait::bench::run(&opts, &progress).await;
    // Before the latency phases: they replace the local brokers with fresh ones.
    if let (Ok(_), Some(dir)) = (&report, local.get(1).and_then(|b| b.data_dir())) {
        let remote = strait::bench::remote_topic(&opts.topic);
        let bytes = strait::bench::topic_log_bytes(&dir, &remote);
        eprintln!("target topic {remote}: {bytes} bytes in its log segments on disk");
    }
    if let (Ok(r), Some(Peer::Mm2)) = (&mut report, args.peer) {
        match strait::bench::peer::run_mm2(&opts, r.fill.records, r.fill.bytes, &progress).await {
            Ok(p) => r.peer = Some(p),
            Err(e) => report = Err(e),
        }
    }
    if let Ok(r) = &mut report {
        if opts.latency_seconds > 0.0 {
            let rate = strait::bench::latency_rate(&opts, r.strait.mb_per_s());
            match latency(args, &opts, rate, &mut local, &progress).await {
                Ok(l) => r.latency = Some(l),
                Err(e) => report = Err(e),
            }
        }
    }
    if let (Ok(r), Some(Peer::Mm2)) = (&mut report, args.peer) {
        if let (Some(rate), Some(peer)) = (r.latency.map(|l| l.rate_mb_per_s), r.peer.as_mut()) {
            match peer_latency(args, &opts, rate, &mut local, &progress).await {
                Ok(l) => peer.latency = Some(l),
                Err(e) => report = Err(e),
            }
        }
    }
    drop(local);
    drop(link);
    match report {
        Ok(r) => {
            if args.keep {
                eprintln!("configurations and logs kept in {}", work_dir.display());
            } else {
                let _ = std::fs::remove_dir_all(&work_dir);
            }
            if args.json {
                Ok(r.to_json() + "\n")
            } else {
                Ok(r.render())
            }
        }
        Err(e) => Err(Error::invalid(format!(
            "{e} (configurations and logs kept in {})",
            work_dir.display()
        ))),
    }
}

/// `--link-rtt-ms` as a duration, after checking what it may go with.
/// `--latency-secs` and `--latency-warmup-secs` are finite (a phase has to end), refused with
/// one line before anything starts.
fn check_latency_seconds(args: &BenchArgs) -> Result<()> {
    for (flag, secs) in [
        ("--latency-secs", args.latency_secs),
        ("--latency-warmup-secs", args.latency_warmup_secs),
    ] {
        if !secs.is_finite() {
            return Err(Error::invalid(format!(
                "{flag} {secs}: a number of seconds, 0 or more"
            )));
        }
    }
    Ok(())
}

fn link_rtt(args: &BenchArgs) -> Result<Option<Duration>> {
    let Some(ms) = args.link_rtt_ms else {
        return Ok(None);
    };
    if !(ms > 0.0 && ms < 60_000.0) {
        return Err(Error::invalid(format!(
            "--link-rtt-ms {ms}: a round trip in milliseconds, above 0 and below 60000"
        )));
    }
    if args.source.is_some() || args.target.is_some() {
        return Err(Error::invalid(
            "--link-rtt-ms puts the bench's own local target behind a link: not with --source/--target",
        ));
    }
    if args.latency_secs > 0.0 || args.peer.is_some() {
        return Err(Error::invalid(
            "--link-rtt-ms measures throughput only: add --latency-secs 0, without --peer",
        ));
    }
    Ok(Some(Duration::from_secs_f64(ms / 1000.0)))
}

/// The latency phase, then its yardstick (producer and reader on the target alone). nisshi keeps
/// topics in memory and takes produce requests markedly slower once it holds a GB or two, as it
/// does after the throughput phases; so with local brokers each of the two runs on two fresh
/// brokers, and both measure the same setup.
async fn latency(
    args: &BenchArgs,
    opts: &BenchOptions,
    rate: f64,
    local: &mut Vec<LocalBroker>,
    progress: &(dyn Fn(&str) + Sync),
) -> Result<strait::bench::report::LatencyRun> {
    let fresh = local.len() == 2;
    let mut opts = opts.clone();
    let secs = opts.latency_seconds;
    if fresh {
        restart_local(args, &mut opts, local).await?;
    }
    progress(&format!(
        "latency: {rate:.1} MB/s for {secs:.1} s while strait replicates{}",
        if fresh { " (fresh local brokers)" } else { "" }
    ));
    let mut run = strait::bench::run_latency(&opts, rate, fresh).await?;
    if fresh {
        restart_local(args, &mut opts, local).await?;
    }
    progress(&format!(
        "latency without strait: {rate:.1} MB/s for {secs:.1} s into the target and read there"
    ));
    run.direct = Some(strait::bench::run_direct_latency(&opts, rate).await?);
    Ok(run)
}

/// MirrorMaker 2's latency phase at strait's rate (on fresh local brokers, as strait's was).
async fn peer_latency(
    args: &BenchArgs,
    opts: &BenchOptions,
    rate: f64,
    local: &mut Vec<LocalBroker>,
    progress: &(dyn Fn(&str) + Sync),
) -> Result<strait::bench::report::LatencyRun> {
    let fresh = local.len() == 2;
    let mut opts = opts.clone();
    if fresh {
        restart_local(args, &mut opts, local).await?;
    }
    progress(&format!(
        "latency: {rate:.1} MB/s for {:.1} s while MirrorMaker 2 replicates{}",
        opts.latency_seconds,
        if fresh { " (fresh local brokers)" } else { "" }
    ));
    strait::bench::peer::run_mm2_latency(&opts, rate, fresh).await
}

/// Replaces the two local brokers by two fresh ones and points `opts` at them.
async fn restart_local(
    args: &BenchArgs,
    opts: &mut BenchOptions,
    local: &mut Vec<LocalBroker>,
) -> Result<()> {
    local.clear();
    let kind = super::demo::broker_kind(args.broker, args.nisshi.as_deref(), true)?;
    local.push(LocalBroker::start_kind(&kind, "bench_latency_source").await?);
    local.push(LocalBroker::start_kind(&kind, "bench_latency_target").await?);
    opts.source = local[0].addr().to_string();
    opts.target = local[1].addr().to_string();
    opts.broker_pids = Some((local[0].pid(), local[1].pid()));
    Ok(())
}

/// Listens on a free loopback port, prints `host:port` on stdout, relays one connection to
/// `--sink` with a 1 MiB buffer, and exits when its stdin closes (so the bench can read its
/// peak RSS first).
pub fn relay(args: &RelayArgs) -> Result<String> {
    use std::io::Write;
    let listener = std::net::TcpListener::bind("127.0.0.1:0").map_err(Error::from)?;
    let addr = listener.local_addr().map_err(Error::from)?;
    let mut out = std::io::stdout();
    writeln!(out, "{addr}").map_err(Error::from)?;
    out.flush().map_err(Error::from)?;
    relay::serve_once(&listener, &args.sink).map_err(Error::from)?;
    let _ = std::io::copy(&mut std::io::stdin(), &mut std::io::sink());
    Ok(String::new())
}
