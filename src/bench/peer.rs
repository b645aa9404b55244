//! `strait bench --peer mm2`: Apache Kafka's MirrorMaker 2 replicating the same backlog on the
//! same clusters, right after strait, measured the same way: first to last record on the target,
//! CPU seconds of the process while the data moved (from `/proc`), its peak RSS (`VmHWM`) and the
//! time from its start to the first record on the target.
//!
//! MirrorMaker 2 runs in dedicated mode ([`crate::local_mm2`]) as Apache Kafka ships it
//! (`bin/connect-mirror-maker.sh`'s JVM options, its own intervals, one task), with its target
//! producer compressing with the bench's codec, as the source batches are: strait forwards them
//! compressed as they are. Its source cluster alias is [`MM2_SOURCE_ALIAS`], so it writes a remote
//! topic of its own (`mm2.<topic>`) next to strait's.
//!
//! With the latency phase on, [`run_mm2_latency`] also measures MirrorMaker 2's replication
//! latency as the bench measures strait's: the same paced producer and probe, the same rate, on
//! a topic of its own.

use std::time::{Duration, Instant};

use serde::Serialize;

use super::process::{cpu_times, peak_rss, CpuSample};
use super::report::{LatencyRun, ProcessCost, Transfer};
use super::stats::Summary;
use super::{records_on, BenchOptions};
use crate::client::{Cluster, ClusterConfig};
use crate::error::{Error, Result};
use crate::local_mm2::{Mm2Options, Mm2Process};

/// MirrorMaker 2's alias of the source cluster, which names its remote topic.
pub const MM2_SOURCE_ALIAS: &str = "mm2";

/// What the peer's run measured.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PeerRun {
    /// What ran, e.g. `MirrorMaker 2 (Apache Kafka 4.1.1)`.
    pub name: String,
    /// How it ran (mode, JVM, producer compression).
    pub settings: String,
    /// The topic it wrote on the target.
    pub remote_topic: String,
    /// First to last record on the target (the bytes of the source backlog).
    pub transfer: Transfer,
    /// Seconds from the process start to the first record on the target.
    pub first_record_seconds: f64,
    /// Seconds from the process start to the last record on the target.
    pub total_seconds: f64,
    /// Records on the target when it was done.
    pub target_records: u64,
    /// The process from its start to the last record (CPU from `/proc/<pid>/stat`, peak RSS
    /// from `VmHWM`).
    pub process: ProcessCost,
    /// CPU seconds of the process from the first record on the target to the last.
    pub moving_cpu_seconds: Option<f64>,
    /// Its replication latency at the latency phase's rate, when that phase ran
    /// ([`run_mm2_latency`]).
    pub latency: Option<LatencyRun>,
}

impl PeerRun {
    /// CPU seconds per GB while the data moved.
    pub fn moving_cpu_per_gb(&self) -> Option<f64> {
        let cpu = self.moving_cpu_seconds?;
        (self.transfer.bytes > 0).then(|| cpu / (self.transfer.bytes as f64 / 1e9))
    }
}

/// strait's figures over the peer's (below 1: strait used less or was quicker; above 1 for
/// throughput: strait moved more per second).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct PeerRatios {
    /// strait MB/s over the peer's.
    pub throughput: f64,
    /// strait CPU-seconds per GB while moving data over the peer's.
    pub moving_cpu_per_gb: Option<f64>,
    /// strait's peak RSS over the peer's.
    pub peak_rss: f64,
    /// strait's time from start to the first record over the peer's.
    pub first_record: f64,
    /// strait's median replication latency over the peer's, when both were measured.
    pub latency_p50: Option<f64>,
    /// strait's 99th percentile replication latency over the peer's, when both were measured.
    pub latency_p99: Option<f64>,
}

/// MirrorMaker 2's settings for the bench: `opts`' clusters and topic, as shipped.
pub fn mm2_options(opts: &BenchOptions) -> Mm2Options {
    let mut o = Mm2Options::new(
        MM2_SOURCE_ALIAS,
        &opts.source,
        super::TARGET_ALIAS,
        &opts.target,
    )
    .as_shipped();
    o.name = "bench".to_string();
    o.topics = regex::escape(&opts.topic);
    o.compression = opts.shape.codec.name().to_string();
    o.dir = Some(opts.work_dir.clone());
    let rf = opts.replication_factor.to_string();
    for key in [
        "replication.factor",
        "checkpoints.topic.replication.factor",
        "heartbeats.topic.replication.factor",
        "offset-syncs.topic.replication.factor",
        "offset.storage.replication.factor",
        "status.storage.replication.factor",
        "config.storage.replication.factor",
    ] {
        o.extra.push((key.to_string(), rf.clone()));
    }
    o
}

/// Runs MirrorMaker 2 on the filled topic (`records` records, `bytes` batch bytes) until every
/// record is on the target, then stops it.
pub async fn run_mm2(
    opts: &BenchOptions,
    records: u64,
    bytes: u64,
    progress: &(dyn Fn(&str) + Sync),
) -> Result<PeerRun> {
    let mm2_opts = mm2_options(opts);
    let remote = format!("{MM2_SOURCE_ALIAS}.{}", opts.topic);
    let settings = format!(
        "dedicated mode, tasks.max 1, -Xmx{} {}, target producer compression {}",
        mm2_opts.heap,
        mm2_opts.jvm_options.join(" "),
        mm2_opts.compression
    );
    let target = Cluster::connect(ClusterConfig::new(super::TARGET_ALIAS, &opts.target)).await?;
    progress(&format!("replicating with MirrorMaker 2 into {remote}"));
    let started = Instant::now();
    let mut mm2 = tokio::task::spawn_blocking(move || Mm2Process::start(mm2_opts))
        .await
        .map_err(|e| Error::invalid(format!("starting MirrorMaker 2: {e}")))??;
    let pid = mm2.pid();
    let polled = poll_until_done(&mut mm2, &target, &remote, opts.partitions, records).await;
    let (user_seconds, system_seconds) = cpu_times(pid).unwrap_or_default();
    let process = ProcessCost {
        user_seconds,
        system_seconds,
        peak_rss_bytes: peak_rss(pid).unwrap_or(0),
    };
    let tail = mm2.log_tail(2000);
    tokio::task::spawn_blocking(move || mm2.stop())
        .await
        .map_err(|e| Error::invalid(format!("stopping MirrorMaker 2: {e}")))?;
    let p = polled.map_err(|e| Error::invalid(format!("{e}; MirrorMaker 2's log:\n{tail}")))?;
    Ok(PeerRun {
        name: format!(
            "MirrorMaker 2 (Apache Kafka {})",
            crate::local_kafka::KAFKA_VERSION
        ),
        settings,
        remote_topic: remote,
        transfer: Transfer {
            bytes,
            records: p.records,
            seconds: (p.last - p.first).as_secs_f64(),
        },
        first_record_seconds: (p.first - started).as_secs_f64(),
        total_seconds: (p.last - started).as_secs_f64(),
        target_records: p.records,
        process,
        moving_cpu_seconds: p.moving.since(&p.first_cpu, 0),
        latency: None,
    })
}

/// MirrorMaker 2's replication latency at `rate_mb_per_s`, measured as strait's is: a fresh
/// topic on the source (`<topic>-latency-mm2`), MirrorMaker 2 started on it as in the
/// throughput run, and once its task replicates, the bench's paced producer on the source and
/// its latency probe on the remote topic. `fresh_brokers` goes into the result.
pub async fn run_mm2_latency(
    opts: &BenchOptions,
    rate_mb_per_s: f64,
    fresh_brokers: bool,
) -> Result<LatencyRun> {
    let source =
        std::sync::Arc::new(Cluster::connect(ClusterConfig::new("source", &opts.source)).await?);
    let target = std::sync::Arc::new(
        Cluster::connect(ClusterConfig::new(super::TARGET_ALIAS, &opts.target)).await?,
    );
    let topic = format!("{}-latency-mm2", opts.topic);
    let remote = format!("{MM2_SOURCE_ALIAS}.{topic}");
    super::create(&source, &topic, opts).await?;
    let mut mm2_opts = mm2_options(opts);
    mm2_opts.name = "bench-latency".to_string();
    mm2_opts.topics = regex::escape(&topic);
    let mut mm2 = tokio::task::spawn_blocking(move || {
        let mut mm2 = Mm2Process::start(mm2_opts)?;
        mm2.wait_replicating(Duration::from_secs(90))?;
        Ok::<_, Error>(mm2)
    })
    .await
    .map_err(|e| Error::invalid(format!("starting MirrorMaker 2: {e}")))??;
    let paced = match wait_for_topic(&target, &remote, opts.partitions).await {
        Ok(()) => {
            // As for strait: a moment for the task's first fetches before the clock starts.
            tokio::time::sleep(Duration::from_millis(500)).await;
            super::paced_and_probed(opts, &source, &topic, &target, &remote, rate_mb_per_s).await
        }
        Err(e) => Err(e),
    };
    let tail = mm2.log_tail(2000);
    tokio::task::spawn_blocking(move || mm2.stop())
        .await
        .map_err(|e| Error::invalid(format!("stopping MirrorMaker 2: {e}")))?;
    let paced = paced.map_err(|e| Error::invalid(format!("{e}; MirrorMaker 2's log:\n{tail}")))?;
    Ok(LatencyRun {
        rate_mb_per_s,
        produced: paced.produced,
        records_seen: paced.seen,
        latency: paced.latency,
        source_latency: paced.source_latency,
        machine_busy: paced.machine_busy,
        fresh_brokers,
        warmup_seconds: opts.latency_warmup_seconds,
        direct: None,
    })
}

/// Waits up to 90 s until `topic` exists on `target` with `partitions` partitions.
async fn wait_for_topic(target: &Cluster, topic: &str, partitions: i32) -> Result<()> {
    let deadline = Instant::now() + Duration::from_secs(90);
    loop {
        target.invalidate(topic);
        if let Ok(Some(t)) = target.topic(topic).await {
            if t.partitions.len() == partitions as usize {
                return Ok(());
            }
        }
        if Instant::now() > deadline {
            return Err(
                Error::invalid("MirrorMaker 2 did not create it within 90 s")
                    .cluster(target.name())
                    .topic(topic),
            );
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// What [`poll_until_done`] saw.
struct Polled {
    records: u64,
    /// When the last poll that found no record was sent (the first record came after it).
    first: Instant,
    first_cpu: CpuSample,
    last: Instant,
    moving: CpuSample,
}

/// Polls the target until `records` are on `remote` (as the bench does for strait: the window
/// opens at the last poll that found none).
async fn poll_until_done(
    mm2: &mut Mm2Process,
    target: &Cluster,
    remote: &str,
    partitions: i32,
    records: u64,
) -> Result<Polled> {
    let pids = [mm2.pid()];
    let mut previous = (Instant::now(), CpuSample::take(&pids));
    let mut first: Option<(Instant, CpuSample)> = None;
    let (mut last, mut last_change) = (0u64, Instant::now());
    let stall = Duration::from_secs(120);
    loop {
        if !mm2.is_running() {
            return Err(Error::invalid(
                "MirrorMaker 2 exited before the replication was done",
            ));
        }
        let sent = (Instant::now(), CpuSample::take(&pids));
        let polled = records_on(target, remote, partitions).await;
        match polled {
            Ok(0) => previous = sent,
            Ok(_) if first.is_none() => first = Some(previous.clone()),
            _ => {}
        }
        if let Ok(n) = polled {
            if n != last {
                (last, last_change) = (n, Instant::now());
            }
            if n >= records {
                let (first, first_cpu) = first.unwrap_or(previous);
                return Ok(Polled {
                    records: n,
                    first,
                    first_cpu,
                    last: Instant::now(),
                    moving: CpuSample::take(&pids),
                });
            }
        }
        if last_change.elapsed() > stall {
            return Err(Error::invalid(format!(
                "topic {remote}: {last} of {records} records on the target and no progress for {stall:?}"
            )));
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// strait's figures over the peer's: `strait` (first to last record), strait's moving CPU per
/// GB, its peak RSS, its time from start to the first record and its latency (when measured).
pub fn ratios(
    strait: &Transfer,
    strait_moving_cpu_per_gb: Option<f64>,
    strait_peak_rss: u64,
    strait_first_record_seconds: f64,
    strait_latency: Option<&Summary>,
    peer: &PeerRun,
) -> PeerRatios {
    let r = |a: f64, b: f64| if b > 0.0 { a / b } else { 0.0 };
    let both = strait_latency.zip(peer.latency.as_ref().map(|l| &l.latency));
    PeerRatios {
        throughput: r(strait.mb_per_s(), peer.transfer.mb_per_s()),
        moving_cpu_per_gb: strait_moving_cpu_per_gb
            .zip(peer.moving_cpu_per_gb())
            .map(|(a, b)| r(a, b)),
        peak_rss: r(strait_peak_rss as f64, peer.process.peak_rss_bytes as f64),
        first_record: r(strait_first_record_seconds, peer.first_record_seconds),
        latency_p50: both.map(|(s, p)| r(s.p50_ms as f64, p.p50_ms as f64)),
        latency_p99: both.map(|(s, p)| r(s.p99_ms as f64, p.p99_ms as f64)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn peer() -> PeerRun {
        PeerRun {
            name: "MirrorMaker 2".into(),
            settings: String::new(),
            remote_topic: "mm2.t".into(),
            transfer: Transfer {
                bytes: 1_000_000_000,
                records: 1_000_000,
                seconds: 20.0,
            },
            first_record_seconds: 8.0,
            total_seconds: 28.0,
            target_records: 1_000_000,
            process: ProcessCost {
                user_seconds: 30.0,
                system_seconds: 5.0,
                peak_rss_bytes: 800_000_000,
            },
            moving_cpu_seconds: Some(24.0),
            latency: None,
        }
    }

    #[test]
    fn ratios_are_strait_over_the_peer() {
        let strait = Transfer {
            bytes: 1_000_000_000,
            records: 1_000_000,
            seconds: 5.0,
        };
        let p = peer();
        assert_eq!(p.moving_cpu_per_gb(), Some(24.0));
        let r = ratios(&strait, Some(1.2), 40_000_000, 0.4, None, &p);
        assert!((r.throughput - 4.0).abs() < 1e-12);
        assert!((r.moving_cpu_per_gb.unwrap() - 0.05).abs() < 1e-12);
        assert!((r.peak_rss - 0.05).abs() < 1e-12);
        assert!((r.first_record - 0.05).abs() < 1e-12);
        assert_eq!(r.latency_p99, None);
        assert_eq!(
            ratios(&strait, None, 1, 1.0, None, &p).moving_cpu_per_gb,
            None
        );
    }

    #[test]
    fn latency_ratios_need_both_latencies() {
        let strait = Transfer {
            bytes: 1,
            records: 1,
            seconds: 1.0,
        };
        let summary = |p50_ms, p99_ms| Summary {
            count: 100,
            p50_ms,
            p99_ms,
            max_ms: 500,
        };
        let mut p = peer();
        let mine = summary(4, 12);
        assert_eq!(
            ratios(&strait, None, 1, 1.0, Some(&mine), &p).latency_p50,
            None
        );
        p.latency = Some(LatencyRun {
            rate_mb_per_s: 20.0,
            produced: strait,
            records_seen: 1,
            latency: summary(16, 240),
            source_latency: None,
            machine_busy: None,
            fresh_brokers: true,
            warmup_seconds: 0.0,
            direct: None,
        });
        let r = ratios(&strait, None, 1, 1.0, Some(&mine), &p);
        assert!((r.latency_p50.unwrap() - 0.25).abs() < 1e-12);
        assert!((r.latency_p99.unwrap() - 0.05).abs() < 1e-12);
        assert_eq!(ratios(&strait, None, 1, 1.0, None, &p).latency_p99, None);
    }

    #[test]
    fn mm2_runs_as_shipped_on_the_bench_topic() {
        let opts = BenchOptions {
            source: "127.0.0.1:1".into(),
            target: "127.0.0.1:2".into(),
            local_brokers: true,
            exe: "strait".into(),
            topic: "bench.t".into(),
            partitions: 4,
            records: 10,
            shape: crate::bench::data::DataShape {
                record_bytes: 10,
                key_spread: 1,
                codec: crate::records::Compression::Zstd,
                batch_bytes: 1024,
            },
            replication_factor: 3,
            latency_seconds: 0.0,
            latency_warmup_seconds: 0.0,
            latency_rate_mb_per_s: None,
            buffer_bytes: None,
            fetch_max_bytes: None,
            fetch_max_wait_ms: None,
            max_bytes_per_second: None,
            recompress: None,
            idle_seconds: 0.0,
            link_rtt_ms: None,
            work_dir: "/tmp/x".into(),
            strait_log: "warn".into(),
            broker_pids: None,
        };
        let o = mm2_options(&opts);
        let text = crate::local_mm2::mm2_properties(&o);
        let props = crate::config::parse_properties_pairs(&text).unwrap();
        let get = |k: &str| {
            props
                .iter()
                .rev()
                .find(|(pk, _)| pk == k)
                .map(|(_, v)| v.as_str())
        };
        assert_eq!(get("mm2->target.topics"), Some("bench\\.t"));
        assert_eq!(get("target.producer.compression.type"), Some("zstd"));
        assert_eq!(get("replication.factor"), Some("3"));
        assert_eq!(get("offset.storage.replication.factor"), Some("3"));
        assert_eq!(get("target.offset.flush.interval.ms"), Some("60000"));
        assert_eq!(o.heap, "2G");
        assert!(o.jvm_options.iter().any(|j| j == "-XX:+UseG1GC"));
    }
}
