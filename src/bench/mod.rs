//! `strait bench`: how much strait moves per second and per CPU-second, next to what the target
//! broker can take (the ceiling) and what a plain socket relay costs (the floor), and how far
//! behind it falls at half its top speed.
//!
//! The run, against any two clusters:
//! 1. fill a fresh topic on the source with the bench's own producer ([`writer`]);
//! 2. write the same batches straight into a fresh topic on the target: the ceiling;
//! 3. relay the same number of bytes through `strait bench-relay`, a child process that copies
//!    one socket to another with a 1 MiB buffer ([`relay`]): the floor, measured the same way;
//! 4. replicate the source topic with `strait run` as a child process, normal data path and
//!    default settings, until every record is on the target; stop it with SIGTERM and read its
//!    CPU time and peak RSS from `wait4`; then relay again: the floor is the cheaper of the two
//!    relays, which bracket strait's run in time;
//! 5. optionally ([`run_latency`]), produce to a second topic at half of strait's measured
//!    throughput (or a given rate) while a second `strait run` replicates it, and read the
//!    target with [`latency::probe`]. The CLI gives this phase fresh local brokers.
//!
//! 6. optionally ([`peer::run_mm2`], `--peer mm2`), MirrorMaker 2 replicates the same backlog
//!    on the same clusters, measured the same way, for a side-by-side report; with the latency
//!    phase on, its latency too, at the same rate ([`peer::run_mm2_latency`]).
//!
//! The pure parts (percentiles, the report and its ratios, the data) are unit-tested here; the
//! whole is tested against two Apache Kafka clusters in `tests/bench.rs`.

pub mod data;
pub mod latency;
pub mod link;
pub mod peer;
pub mod process;
pub mod relay;
pub mod report;
pub mod stats;
pub mod writer;

use std::io::BufRead;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::client::{Cluster, ClusterConfig, LATEST};
use crate::error::{Error, Result};
use data::DataShape;
use process::{CpuSample, Measured};
use report::{BrokerCpu, DirectLatency, Idle, LatencyRun, ProcessCost, Report, Settings, Transfer};

/// Distinct batches the bench keeps encoded in memory at most; longer runs cycle through them.
pub const POOL_BYTES: usize = 64 << 20;

/// Cluster aliases in the generated strait configuration.
const SOURCE_ALIAS: &str = "source";
const TARGET_ALIAS: &str = "target";

/// What to run.
#[derive(Debug, Clone)]
pub struct BenchOptions {
    /// Source bootstrap `host:port`.
    pub source: String,
    /// Target bootstrap `host:port`.
    pub target: String,
    /// True when the caller started the clusters (shown in the report).
    pub local_brokers: bool,
    /// The strait binary, run as `strait run` and `strait bench-relay`.
    pub exe: PathBuf,
    /// Source topic to create and fill; the ceiling and latency topics get suffixes.
    pub topic: String,
    /// Partitions of every bench topic.
    pub partitions: i32,
    /// Records to fill (rounded up to whole batches).
    pub records: u64,
    /// The records and batches.
    pub shape: DataShape,
    /// Replication factor of the topics the bench and strait create.
    pub replication_factor: i16,
    /// Seconds of the latency phase; 0 skips it.
    pub latency_seconds: f64,
    /// Seconds the paced producer runs before the latency phase's samples count (fresh
    /// brokers compile their hot code meanwhile).
    pub latency_warmup_seconds: f64,
    /// Produce rate of the latency phase in MB/s; `None`: half of strait's measured throughput.
    pub latency_rate_mb_per_s: Option<f64>,
    /// strait's `buffer_bytes`, if not the default.
    pub buffer_bytes: Option<usize>,
    /// strait's `fetch_max_bytes`, if not the default.
    pub fetch_max_bytes: Option<usize>,
    /// strait's `fetch_max_wait` in ms, if not the default.
    pub fetch_max_wait_ms: Option<u64>,
    /// Where the generated configurations and the strait logs go (kept on failure).
    pub work_dir: PathBuf,
    /// Log filter of the `strait run` children.
    pub strait_log: String,
    /// Process ids of the source and target brokers when the bench started them (their CPU
    /// time is read from `/proc`).
    pub broker_pids: Option<(u32, u32)>,
    /// strait's `max_bytes_per_second`, if capped.
    pub max_bytes_per_second: Option<u64>,
    /// strait's `recompress`, if set.
    pub recompress: Option<crate::config::Recompress>,
    /// Seconds strait is left running idle after the backlog, its CPU measured (0: none).
    pub idle_seconds: f64,
    /// The round trip of the delay link the target is behind (`--link-rtt-ms`), if any.
    pub link_rtt_ms: Option<f64>,
}

/// The floor relays at least this many bytes, so its CPU per GB is not a handful of clock
/// ticks.
pub const FLOOR_MIN_BYTES: u64 = 2_000_000_000;

/// The remote topic strait writes for `topic` under the generated configuration.
pub fn remote_topic(topic: &str) -> String {
    format!("{SOURCE_ALIAS}.{topic}")
}

/// Bytes of the `.log` segment files of `topic`'s partitions under a broker's data directory
/// `dir` (searched two levels deep: `dir/<log dir>/<topic>-<partition>/`); 0 when none.
pub fn topic_log_bytes(dir: &std::path::Path, topic: &str) -> u64 {
    let prefix = format!("{topic}-");
    let is_partition = |name: &str| {
        name.strip_prefix(&prefix)
            .is_some_and(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()))
    };
    let entries = |d: &std::path::Path| -> Vec<std::fs::DirEntry> {
        std::fs::read_dir(d)
            .map(|r| r.flatten().collect())
            .unwrap_or_default()
    };
    let mut total = 0;
    for log_dir in entries(dir).into_iter().filter(|e| e.path().is_dir()) {
        for part in entries(&log_dir.path()) {
            if !is_partition(&part.file_name().to_string_lossy()) {
                continue;
            }
            for f in entries(&part.path()) {
                if f.path().extension().is_some_and(|x| x == "log") {
                    total += f.metadata().map(|m| m.len()).unwrap_or(0);
                }
            }
        }
    }
    total
}

/// The strait configuration the bench runs: one flow of exactly `topic`, defaults otherwise.
pub fn strait_config(opts: &BenchOptions, topic: &str) -> String {
    let mut flow = format!(
        "[[flows]]\nsource = \"{SOURCE_ALIAS}\"\ntarget = \"{TARGET_ALIAS}\"\ntopics = [{}]\n",
        toml_string(&regex::escape(topic))
    );
    if let Some(b) = opts.buffer_bytes {
        flow.push_str(&format!("buffer_bytes = {b}\n"));
    }
    if let Some(b) = opts.fetch_max_bytes {
        flow.push_str(&format!("fetch_max_bytes = {b}\n"));
    }
    if let Some(ms) = opts.fetch_max_wait_ms {
        flow.push_str(&format!("fetch_max_wait_ms = {ms}\n"));
    }
    if let Some(r) = opts.max_bytes_per_second {
        flow.push_str(&format!("max_bytes_per_second = {r}\n"));
    }
    if let Some(r) = opts.recompress {
        flow.push_str(&format!("recompress = \"{}\"\n", r.name()));
    }
    format!(
        "[clusters.{SOURCE_ALIAS}]\nbootstrap_servers = [{}]\nreplication_factor = {rf}\n\n\
         [clusters.{TARGET_ALIAS}]\nbootstrap_servers = [{}]\nreplication_factor = {rf}\n\n{flow}",
        toml_string(&opts.source),
        toml_string(&opts.target),
        rf = opts.replication_factor
    )
}

fn toml_string(s: &str) -> String {
    toml::Value::String(s.to_string()).to_string()
}

/// Runs the bench; `progress` gets one line per step.
pub async fn run(opts: &BenchOptions, progress: &(dyn Fn(&str) + Sync)) -> Result<Report> {
    if opts.partitions <= 0 {
        return Err(Error::invalid("--partitions must be at least 1"));
    }
    std::fs::create_dir_all(&opts.work_dir).map_err(Error::from)?;
    let source = Arc::new(Cluster::connect(ClusterConfig::new(SOURCE_ALIAS, &opts.source)).await?);
    let target = Arc::new(Cluster::connect(ClusterConfig::new(TARGET_ALIAS, &opts.target)).await?);
    let shape = opts.shape;
    let per_batch = shape.records_per_batch() as u64;
    let batches = opts.records.div_ceil(per_batch).max(1);
    let pool_count = (POOL_BYTES / (per_batch as usize * (shape.record_bytes + 30)).max(1))
        .clamp(1, batches as usize);
    progress(&format!(
        "encoding {pool_count} distinct batches of {per_batch} records ({})",
        shape.codec.name()
    ));
    let pool = shape
        .pool(pool_count, crate::replicate::store::now_ms())
        .map_err(|e| Error::invalid(format!("cannot encode the bench batches: {e}")))?;

    let topic = opts.topic.as_str();
    let remote = remote_topic(topic);
    let ceiling_topic = format!("{topic}-ceiling");
    create(&source, topic, opts).await?;
    progress(&format!(
        "filling {topic} on the source ({batches} batches)"
    ));
    let brokers = opts.broker_pids.map(|(s, t)| [s, t]).unwrap_or_default();
    let before_fill = CpuSample::take(&brokers);
    let fill = writer::write_backlog(&source, topic, opts.partitions, &pool, batches).await?;
    let after_fill = CpuSample::take(&brokers);

    create(&target, &ceiling_topic, opts).await?;
    progress(&format!(
        "ceiling: the same batches into {ceiling_topic} on the target"
    ));
    let before_ceiling = CpuSample::take(&brokers);
    let ceiling =
        writer::write_backlog(&target, &ceiling_topic, opts.partitions, &pool, batches).await?;
    let after_ceiling = CpuSample::take(&brokers);
    drop(pool);

    // The floor runs on both sides of strait's run: the machine's speed drifts, and a floor
    // measured only once can be caught in a fast or a slow moment.
    let floor_bytes = fill.bytes.max(FLOOR_MIN_BYTES);
    progress(&format!(
        "floor: relaying {:.1} MB through a socket-to-socket copy",
        floor_bytes as f64 / 1e6
    ));
    let floor_before = relay_floor(&opts.exe, floor_bytes).await?;

    progress("replicating with strait run");
    let replicated = replicate(opts, &target, topic, &remote, fill.records).await?;
    let strait = replicated.transfer;
    let strait = Transfer {
        bytes: fill.bytes,
        ..strait
    };

    progress("floor again, after strait");
    let floor_after = relay_floor(&opts.exe, floor_bytes).await?;
    let relay_runs_cpu_per_gb: Vec<f64> = [&floor_before, &floor_after]
        .iter()
        .map(|(t, c)| c.cpu_seconds_per_gb(t.bytes))
        .collect();
    let (relay, relay_process) = if relay_runs_cpu_per_gb[1] < relay_runs_cpu_per_gb[0] {
        floor_after
    } else {
        floor_before
    };

    let report = Report {
        settings: Settings {
            source: opts.source.clone(),
            target: opts.target.clone(),
            local_brokers: opts.local_brokers,
            topic: topic.to_string(),
            remote_topic: remote,
            ceiling_topic,
            partitions: opts.partitions,
            record_bytes: shape.record_bytes,
            key_spread: shape.key_spread,
            codec: shape.codec.name().to_string(),
            records_per_batch: per_batch as usize,
            link_rtt_ms: opts.link_rtt_ms,
        },
        fill,
        ceiling,
        strait,
        strait_total_seconds: replicated.total_seconds,
        target_records: replicated.target_records,
        strait_process: replicated.process,
        strait_moving_cpu_seconds: replicated.moving.since(&replicated.first, 0),
        brokers: opts.broker_pids.map(|_| BrokerCpu {
            fill_source: after_fill.since(&before_fill, 0),
            ceiling_target: after_ceiling.since(&before_ceiling, 1),
            strait_source: replicated.moving.since(&replicated.first, 1),
            strait_target: replicated.moving.since(&replicated.first, 2),
            cores: std::thread::available_parallelism()
                .map(|n| n.get())
                .unwrap_or(1),
        }),
        relay,
        relay_process,
        relay_runs_cpu_per_gb,
        latency: None,
        idle: replicated.idle,
        peer: None,
    };
    Ok(report)
}

/// The latency phase's rate: `opts.latency_rate_mb_per_s`, or half of strait's throughput.
pub fn latency_rate(opts: &BenchOptions, throughput_mb_per_s: f64) -> f64 {
    opts.latency_rate_mb_per_s
        .unwrap_or(throughput_mb_per_s / 2.0)
}

/// The latency phase (after [`run`], which measures the throughput the rate derives from):
/// records produced to the source at `rate_mb_per_s` while `strait run` replicates them, read
/// on the target. `fresh_brokers` tells the report that the clusters were started anew for it.
pub async fn run_latency(
    opts: &BenchOptions,
    rate_mb_per_s: f64,
    fresh_brokers: bool,
) -> Result<LatencyRun> {
    let source = Arc::new(Cluster::connect(ClusterConfig::new(SOURCE_ALIAS, &opts.source)).await?);
    let target = Arc::new(Cluster::connect(ClusterConfig::new(TARGET_ALIAS, &opts.target)).await?);
    let mut run = latency_phase(opts, &source, &target, rate_mb_per_s).await?;
    run.fresh_brokers = fresh_brokers;
    Ok(run)
}

/// The latency phase's yardstick: the same producer and reader at the same rate on one topic
/// of the target, no strait between them: the latency the setup itself adds.
pub async fn run_direct_latency(opts: &BenchOptions, rate_mb_per_s: f64) -> Result<DirectLatency> {
    let target = Arc::new(Cluster::connect(ClusterConfig::new(TARGET_ALIAS, &opts.target)).await?);
    direct_latency(opts, &target, rate_mb_per_s).await
}

async fn create(cluster: &Cluster, topic: &str, opts: &BenchOptions) -> Result<()> {
    let created = cluster
        .create_topic(topic, opts.partitions, opts.replication_factor, &[])
        .await
        .map_err(|e| e.topic(topic))?;
    if !created {
        return Err(
            Error::invalid("already exists; the bench needs a fresh topic (--topic)")
                .cluster(cluster.name())
                .topic(topic),
        );
    }
    // Apache Kafka answers CreateTopics before every leader knows it leads the new partitions
    // (NotLeaderOrFollower for a moment): wait until each answers ListOffsets (retried).
    // With many partitions that takes longer than one call's retries: ask again for a minute.
    let parts: Vec<i32> = (0..opts.partitions).collect();
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        match cluster.list_offsets(topic, &parts, LATEST).await {
            Ok(_) => return Ok(()),
            Err(e) if Instant::now() < deadline => {
                tracing::debug!(cluster = %cluster.name(), %topic, "not ready yet: {e}");
                cluster.invalidate(topic);
                tokio::time::sleep(Duration::from_millis(500)).await;
            }
            Err(e) => return Err(e.topic(topic)),
        }
    }
}

/// Starts `strait run` on a configuration replicating `topic`, its log in the work dir.
fn start_strait(opts: &BenchOptions, topic: &str, tag: &str) -> Result<(Measured, PathBuf)> {
    let config = opts.work_dir.join(format!("{tag}.toml"));
    std::fs::write(&config, strait_config(opts, topic)).map_err(Error::from)?;
    let log = opts.work_dir.join(format!("{tag}.log"));
    let log_file = std::fs::File::create(&log).map_err(Error::from)?;
    let mut cmd = Command::new(&opts.exe);
    cmd.arg("--log")
        .arg(&opts.strait_log)
        .arg("run")
        .arg("--config")
        .arg(&config)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::from(log_file));
    Ok((Measured::spawn(cmd, "strait run")?, log))
}

fn log_tail(path: &Path) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let start = text.len().saturating_sub(2000);
    let start = (start..text.len())
        .find(|&i| text.is_char_boundary(i))
        .unwrap_or(text.len());
    format!("log {}:\n{}", path.display(), &text[start..])
}

/// Records on `topic`: the sum of its partitions' log-end offsets, in one ListOffsets request
/// per leader, asked once. A topic that does not exist yet holds none: the answer comes at once
/// instead of after ListOffsets retries, so a poll never waits for strait to create the topic
/// (a poll that waited seconds would date the start of the transfer wrong), and polling adds
/// one request per leader to the target's load, not one per partition.
async fn records_on(cluster: &Cluster, topic: &str, partitions: i32) -> Result<u64> {
    if cluster.topic(topic).await?.is_none() {
        return Ok(0);
    }
    let ids: Vec<i32> = (0..partitions).collect();
    Ok(cluster
        .list_offsets_once(topic, &ids, LATEST)
        .await?
        .iter()
        .map(|(_, o)| (*o).max(0) as u64)
        .sum())
}

/// What [`replicate`] measured.
struct Replicated {
    /// First to last record on the target (bytes filled in by the caller).
    transfer: Transfer,
    /// Seconds from process start to the last record.
    total_seconds: f64,
    /// Records on the target at the end.
    target_records: u64,
    /// The whole process, start to stop.
    process: ProcessCost,
    /// CPU of [strait, source broker, target broker] just before the last poll that found no
    /// record on the target was sent ...
    first: CpuSample,
    /// ... and when the last was.
    moving: CpuSample,
    /// Left running with nothing to move, when asked.
    idle: Option<Idle>,
}

/// Replicates the filled topic with a `strait run` child until `records` are on the target.
async fn replicate(
    opts: &BenchOptions,
    target: &Cluster,
    topic: &str,
    remote: &str,
    records: u64,
) -> Result<Replicated> {
    let (child, log) = start_strait(opts, topic, "replicate")?;
    let mut pids = vec![child.id()];
    if let Some((s, t)) = opts.broker_pids {
        pids.extend([s, t]);
    }
    let mut first_cpu = CpuSample::default();
    let started = Instant::now();
    let mut first: Option<Instant> = None;
    // Taken just before the previous poll was sent. A poll can take seconds on a busy broker,
    // and it counts what the broker held when it answered, so the first poll that sees records
    // does not date the first record; the previous poll, which saw none, does: the first record
    // arrived after it was sent. The window starts there, so it holds all of the transfer (and
    // at most one poll more).
    let mut previous = (started, CpuSample::take(&pids));
    let mut last_change = Instant::now();
    let mut last = 0u64;
    let stall = Duration::from_secs(60);
    let on_target = loop {
        if !child.is_running() {
            return Err(Error::invalid(format!(
                "strait run exited before the replication was done; {}",
                log_tail(&log)
            )));
        }
        let sent = (Instant::now(), CpuSample::take(&pids));
        // A failed poll says nothing about when records arrived: it neither moves the start
        // of the window nor counts as progress (polls that keep failing end in the stall
        // error, which gives the last failure).
        let polled = records_on(target, remote, opts.partitions).await;
        match polled {
            Ok(0) => previous = sent,
            Ok(_) if first.is_none() => {
                first = Some(previous.0);
                first_cpu = previous.1.clone();
            }
            _ => {}
        }
        if let Ok(n) = polled {
            if n != last {
                last = n;
                last_change = Instant::now();
            }
            if n >= records {
                break n;
            }
        }
        if last_change.elapsed() > stall {
            let failure = match &polled {
                Ok(_) => String::new(),
                Err(e) => format!(" (the last poll failed: {e})"),
            };
            return Err(Error::invalid(format!(
                "topic {remote}: {last} of {records} records on the target and no progress for {stall:?}{failure}; {}",
                log_tail(&log)
            )));
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    };
    let done = Instant::now();
    let moving_cpu = CpuSample::take(&pids);
    let idle = idle_cost(&child, opts.idle_seconds).await;
    let (code, cost) = tokio::task::spawn_blocking(move || child.terminate())
        .await
        .map_err(|e| Error::invalid(format!("reaping strait run: {e}")))??;
    if code != Some(0) {
        return Err(Error::invalid(format!(
            "strait run did not stop cleanly (exit {code:?}); {}",
            log_tail(&log)
        )));
    }
    let from = first.unwrap_or(started);
    Ok(Replicated {
        transfer: Transfer {
            bytes: 0,
            records: on_target,
            seconds: (done - from).as_secs_f64(),
        },
        total_seconds: (done - started).as_secs_f64(),
        target_records: on_target,
        process: cost,
        first: first_cpu,
        moving: moving_cpu,
        idle,
    })
}

/// Leaves `child` running `seconds` with nothing to move (a few seconds first for the last
/// acknowledgements and progress writes) and measures its CPU. `None` when not asked or
/// `/proc` cannot be read.
async fn idle_cost(child: &Measured, seconds: f64) -> Option<Idle> {
    if seconds <= 0.0 {
        return None;
    }
    tokio::time::sleep(Duration::from_secs(5)).await;
    let pid = [child.id()];
    let (t0, before) = (Instant::now(), CpuSample::take(&pid));
    tokio::time::sleep(Duration::from_secs_f64(seconds)).await;
    let after = CpuSample::take(&pid);
    Some(Idle {
        seconds: t0.elapsed().as_secs_f64(),
        cpu_seconds: after.since(&before, 0)?,
    })
}

/// Relays `bytes` through a `strait bench-relay` child; returns the transfer and its cost.
async fn relay_floor(exe: &Path, bytes: u64) -> Result<(Transfer, ProcessCost)> {
    let sink = std::net::TcpListener::bind("127.0.0.1:0").map_err(Error::from)?;
    let sink_addr = sink.local_addr().map_err(Error::from)?.to_string();
    let mut cmd = Command::new(exe);
    cmd.arg("bench-relay")
        .arg("--sink")
        .arg(&sink_addr)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit());
    let mut child = Measured::spawn(cmd, "strait bench-relay")?;
    let stdin = child.take_stdin();
    let stdout = child
        .take_stdout()
        .ok_or_else(|| Error::invalid("bench-relay has no stdout"))?;
    tokio::task::spawn_blocking(move || {
        let mut line = String::new();
        std::io::BufReader::new(stdout)
            .read_line(&mut line)
            .map_err(Error::from)?;
        let relay_addr = line.trim().to_string();
        if relay_addr.is_empty() {
            return Err(Error::invalid("bench-relay did not say where it listens"));
        }
        let drain = std::thread::spawn(move || relay::drain(&sink));
        let start = Instant::now();
        relay::pump(&relay_addr, bytes).map_err(Error::from)?;
        let drained = drain
            .join()
            .map_err(|_| Error::invalid("the relay drain panicked"))?
            .map_err(Error::from)?;
        let seconds = start.elapsed().as_secs_f64();
        // The relay waits for its stdin to close, so its peak RSS can be read first.
        child.sample_peak_rss();
        drop(stdin);
        let (code, cost) = child.wait()?;
        if code != Some(0) || drained != bytes {
            return Err(Error::invalid(format!(
                "bench-relay exited with {code:?} after relaying {drained} of {bytes} bytes"
            )));
        }
        Ok((
            Transfer {
                bytes,
                records: 0,
                seconds,
            },
            cost,
        ))
    })
    .await
    .map_err(|e| Error::invalid(format!("relay thread: {e}")))?
}

/// Produces to a fresh topic at `rate_mb_per_s` while a second `strait run` replicates it, and
/// probes the target.
async fn latency_phase(
    opts: &BenchOptions,
    source: &Arc<Cluster>,
    target: &Arc<Cluster>,
    rate_mb_per_s: f64,
) -> Result<LatencyRun> {
    let topic = format!("{}-latency", opts.topic);
    let remote = remote_topic(&topic);
    create(source, &topic, opts).await?;
    let (child, log) = start_strait(opts, &topic, "latency")?;
    // strait creates the remote topic once it has the source's; then give it a moment to make
    // every partition's start durable before the clock starts.
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        target.invalidate(&remote);
        if let Ok(Some(t)) = target.topic(&remote).await {
            if t.partitions.len() == opts.partitions as usize {
                break;
            }
        }
        if Instant::now() > deadline || !child.is_running() {
            return Err(Error::invalid(format!(
                "strait run did not create {remote} on the target; {}",
                log_tail(&log)
            )));
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    let paced = paced_and_probed(opts, source, &topic, target, &remote, rate_mb_per_s).await;
    let stopped = tokio::task::spawn_blocking(move || child.terminate())
        .await
        .map_err(|e| Error::invalid(format!("reaping strait run: {e}")))?;
    let paced = paced.map_err(|e| Error::invalid(format!("{e}; {}", log_tail(&log))))?;
    stopped?;
    Ok(LatencyRun {
        rate_mb_per_s,
        produced: paced.produced,
        records_seen: paced.seen,
        latency: paced.latency,
        source_latency: paced.source_latency,
        machine_busy: paced.machine_busy,
        fresh_brokers: false,
        warmup_seconds: opts.latency_warmup_seconds,
        direct: None,
    })
}

/// The same producer and reader with no strait between them: produce to and read from a
/// fresh topic on the target, at the same rate. The latency the setup itself adds.
async fn direct_latency(
    opts: &BenchOptions,
    target: &Arc<Cluster>,
    rate_mb_per_s: f64,
) -> Result<DirectLatency> {
    let topic = format!("{}-latency-direct", opts.topic);
    create(target, &topic, opts).await?;
    let paced = paced_and_probed(opts, target, &topic, target, &topic, rate_mb_per_s).await?;
    Ok(DirectLatency {
        records: paced.seen,
        latency: paced.latency,
        machine_busy: paced.machine_busy,
    })
}

/// What [`paced_and_probed`] measured.
struct Paced {
    produced: Transfer,
    seen: u64,
    latency: stats::Summary,
    /// Read on the cluster written to, when the reader reads another.
    source_latency: Option<stats::Summary>,
    machine_busy: Option<f64>,
}

/// Produces to `topic` on `into` at `rate_mb_per_s` for the phase's seconds while reading
/// `read_topic` on `from`; the samples are the reader's.
async fn paced_and_probed(
    opts: &BenchOptions,
    into: &Arc<Cluster>,
    topic: &str,
    from: &Arc<Cluster>,
    read_topic: &str,
    rate_mb_per_s: f64,
) -> Result<Paced> {
    let state = Arc::new(latency::ProducerState::default());
    let spawn_probe = |from: &Arc<Cluster>, read_topic: &str| {
        let (from, read_topic, state) = (from.clone(), read_topic.to_string(), state.clone());
        let partitions = opts.partitions;
        tokio::spawn(async move {
            latency::probe(
                &from,
                &read_topic,
                partitions,
                &state,
                Duration::from_secs(30),
            )
            .await
        })
    };
    let probe = spawn_probe(from, read_topic);
    // A replicator between them: the same batches read where they were written too, to tell
    // the latency before the replicator fetches from the latency it adds.
    let at_source = (into.name() != from.name()).then(|| spawn_probe(into, topic));
    let warmup = Duration::from_secs_f64(opts.latency_warmup_seconds.max(0.0));
    state.count_from_ms.store(
        crate::replicate::store::now_ms() + warmup.as_millis() as i64,
        Ordering::Release,
    );
    // The machine's load over the sampled window only.
    let machine_before = tokio::spawn(async move {
        tokio::time::sleep(warmup).await;
        process::MachineSample::take()
    });
    let produced = writer::write_paced(
        into,
        topic,
        opts.partitions,
        &opts.shape,
        rate_mb_per_s * 1e6,
        warmup + Duration::from_secs_f64(opts.latency_seconds),
    )
    .await;
    let machine_before = machine_before.await.ok().flatten();
    let machine_busy = process::MachineSample::take()
        .zip(machine_before)
        .and_then(|(after, before)| after.busy_since(&before));
    if let Ok(t) = &produced {
        state.produced.store(t.records, Ordering::Release);
    }
    state.done.store(true, Ordering::Release);
    let probed = probe
        .await
        .map_err(|e| Error::invalid(format!("latency probe: {e}")))?;
    let source_latency = match at_source {
        Some(p) => {
            let (samples, _) = p
                .await
                .map_err(|e| Error::invalid(format!("latency probe on the source: {e}")))??;
            samples.summary()
        }
        None => None,
    };
    let produced = produced?;
    let (samples, seen) = probed?;
    let latency = samples
        .summary()
        .ok_or_else(|| Error::invalid("the latency probe read no batch"))?;
    Ok(Paced {
        produced,
        seen,
        latency,
        source_latency,
        machine_busy,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Recompress;

    fn options(recompress: Option<Recompress>) -> BenchOptions {
        BenchOptions {
            source: "127.0.0.1:1".into(),
            target: "127.0.0.1:2".into(),
            local_brokers: true,
            exe: "strait".into(),
            topic: "bench.t".into(),
            partitions: 4,
            records: 10,
            shape: data::DataShape {
                record_bytes: 10,
                key_spread: 1,
                codec: crate::records::Compression::None,
                batch_bytes: 1024,
            },
            replication_factor: 1,
            latency_seconds: 0.0,
            latency_warmup_seconds: 0.0,
            latency_rate_mb_per_s: None,
            buffer_bytes: None,
            fetch_max_bytes: None,
            fetch_max_wait_ms: None,
            max_bytes_per_second: None,
            recompress,
            idle_seconds: 0.0,
            link_rtt_ms: None,
            work_dir: "/tmp/x".into(),
            strait_log: "warn".into(),
            broker_pids: None,
        }
    }

    #[test]
    fn recompress_reaches_the_generated_configuration() {
        for (set, want) in [
            (None, Recompress::None),
            (Some(Recompress::None), Recompress::None),
            (Some(Recompress::Zstd), Recompress::Zstd),
        ] {
            let text = strait_config(&options(set), "bench.t");
            let config = crate::config::parse_toml(&text, "bench.toml").expect("valid");
            assert_eq!(config.flows[0].recompress, want, "{text}");
        }
    }

    #[test]
    fn topic_log_bytes_sums_the_topics_segments_only() {
        let dir = std::env::temp_dir().join(format!("strait-log-bytes-{}", std::process::id()));
        let write = |rel: &str, n: usize| {
            let p = dir.join(rel);
            std::fs::create_dir_all(p.parent().expect("parent")).expect("dir");
            std::fs::write(p, vec![0u8; n]).expect("file");
        };
        write("data1/source.t-0/00000000000000000000.log", 100);
        write("data1/source.t-0/00000000000000000000.index", 7);
        write("data1/source.t-1/00000000000000000000.log", 20);
        write("data1/source.t-ceiling-0/00000000000000000000.log", 1000);
        write("data1/other-0/00000000000000000000.log", 1000);
        assert_eq!(topic_log_bytes(&dir, "source.t"), 120);
        assert_eq!(topic_log_bytes(&dir, "missing"), 0);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
