//! `strait demo`: two local clusters (Apache Kafka, or nisshi with `--broker nisshi`, started by this command), a topic with
//! data, a replication of it, and a side-by-side view of the result.

use std::fmt::Write as _;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use bytes::Bytes;
use strait::client::{Cluster, ClusterConfig, LATEST};
use strait::local_broker::{nisshi_path, BrokerKind, LocalBroker};
use strait::protocol::fetch::{FetchLimits, FetchPartitionSpec};
use strait::records::record::{
    decode_records, encode_batch, BatchHeaderFields, Record, RecordHeader,
};
use strait::records::{split, Compression, Entry, HeaderRewrite, RecordBatch};
use strait::{Error, Result};

/// Arguments of `strait demo`.
#[derive(Debug, clap::Args)]
pub struct DemoArgs {
    /// Records to write to `global_iot` on cluster_a.
    #[arg(long, default_value_t = 50_000)]
    pub records: usize,
    /// Codec of the batches written on cluster_a.
    #[arg(long, default_value = "zstd")]
    pub codec: Compression,
    /// Which broker runs the two clusters.
    #[arg(long, value_enum, default_value_t = LocalKind::Kafka)]
    pub broker: LocalKind,
    /// The nisshi binary with `--broker nisshi` (default: `nisshi` on PATH or in ~/.cargo/bin).
    #[arg(long)]
    pub nisshi: Option<PathBuf>,
    /// Keep both clusters running until Ctrl-C, to look at them with `strait probe`.
    #[arg(long)]
    pub keep: bool,
}

/// A small IoT-style record: device key, JSON reading, a header.
fn reading(i: usize, now_ms: i64) -> (Record, i64) {
    let device = i % 40;
    let value = format!(
        "{{\"device\":\"sensor-{device:02}\",\"seq\":{i},\"temperature\":{:.1},\"humidity\":{}}}",
        18.0 + (i % 97) as f64 / 10.0,
        30 + i % 50
    );
    let rec = Record {
        attributes: 0,
        timestamp_delta: 0,
        offset_delta: 0,
        key: Some(Bytes::from(format!("sensor-{device:02}"))),
        value: Some(Bytes::from(value)),
        headers: vec![RecordHeader {
            key: Bytes::from_static(b"source"),
            value: Some(Bytes::from_static(b"demo")),
        }],
    };
    (rec, now_ms + (i / 100) as i64)
}

async fn fill(
    cluster: &Cluster,
    topic: &str,
    partitions: i32,
    from: usize,
    records: usize,
    codec: Compression,
) -> Result<()> {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0);
    let per_batch = 500;
    let mut pending: Vec<Vec<(Record, i64)>> = vec![Vec::new(); partitions as usize];
    for i in from..from + records {
        let p = (i % 40) % partitions as usize;
        pending[p].push(reading(i, now));
        let last = i + 1 == from + records;
        if pending[p].len() == per_batch || last {
            for (part, batch) in pending.iter_mut().enumerate() {
                if batch.is_empty() || (!last && part != p) {
                    continue;
                }
                let base_ts = batch[0].1;
                let recs: Vec<Record> = batch
                    .drain(..)
                    .enumerate()
                    .map(|(n, (mut r, ts))| {
                        r.offset_delta = n as i32;
                        r.timestamp_delta = ts - base_ts;
                        r
                    })
                    .collect();
                let fields = BatchHeaderFields {
                    base_timestamp: base_ts,
                    ..BatchHeaderFields::default()
                };
                let bytes = encode_batch(&fields, codec, &recs)?;
                let batch = RecordBatch::new(bytes)?.rewrite(&HeaderRewrite::default());
                cluster.produce_batch(topic, part as i32, &batch).await?;
            }
        }
    }
    Ok(())
}

async fn first_records(
    cluster: &Cluster,
    topic: &str,
    partition: i32,
    n: usize,
) -> Result<Vec<(i64, String, String)>> {
    let (leader, epoch) = cluster.leader(topic, partition).await?;
    let spec = FetchPartitionSpec {
        topic: topic.into(),
        topic_id: None,
        partition,
        offset: 0,
        current_leader_epoch: epoch,
        last_fetched_epoch: -1,
        max_bytes: 1 << 20,
    };
    let resp = cluster
        .fetch(leader, &[spec], &FetchLimits::default())
        .await?;
    let mut out = Vec::new();
    for p in resp.partitions {
        for e in split(p.records) {
            if let Entry::V2(b) = e? {
                for r in decode_records(&b, 64 << 20)? {
                    if out.len() == n {
                        return Ok(out);
                    }
                    let text = |v: &Option<Bytes>| {
                        v.as_deref()
                            .map(|x| String::from_utf8_lossy(x).into_owned())
                            .unwrap_or_else(|| "null".into())
                    };
                    out.push((r.offset(b.base_offset()), text(&r.key), text(&r.value)));
                }
            }
        }
    }
    Ok(out)
}

/// The lab configuration for two local clusters (the same shape as `examples/lab.toml`).
fn lab_config(a: &str, b: &str) -> String {
    format!(
        r#"# strait demo: the Streams Replication Manager lab on two local clusters.
[clusters.cluster_a]
bootstrap_servers = ["{a}"]
replication_factor = 1

[clusters.cluster_b]
bootstrap_servers = ["{b}"]
replication_factor = 1

[defaults]
refresh_topics_interval_secs = 2
heartbeat_interval_secs = 1

# cluster_a -> cluster_b: global_iot becomes cluster_a.global_iot on cluster_b.
[[flows]]
source = "cluster_a"
target = "cluster_b"
topics = ["global_iot"]
groups = [".*"]

# cluster_b -> cluster_a (active-active): cluster_a.global_iot came from cluster_a, so it is
# never sent back (no cluster_b.cluster_a.global_iot).
[[flows]]
source = "cluster_b"
target = "cluster_a"
topics = ["cluster_a\\.global_iot"]
groups = [".*"]
"#
    )
}

async fn ends(cluster: &Cluster, topic: &str, partitions: i32) -> Result<Vec<i64>> {
    let ids: Vec<i32> = (0..partitions).collect();
    Ok(cluster
        .list_offsets(topic, &ids, LATEST)
        .await?
        .into_iter()
        .map(|x| x.1)
        .collect())
}

async fn heartbeats(cluster: &Cluster) -> Result<Vec<String>> {
    let mut seen = std::collections::BTreeMap::new();
    for (_, _, k, v) in
        strait::replicate::store::read_all(cluster, strait::mm2::HEARTBEATS_TOPIC, 0).await?
    {
        if let (Some(k), Some(v)) = (k, v) {
            if let Ok(hb) = strait::mm2::Heartbeat::decode(&k, &v) {
                seen.insert(
                    format!("{} -> {}", hb.source_cluster_alias, hb.target_cluster_alias),
                    hb.timestamp_ms,
                );
            }
        }
    }
    Ok(seen.keys().cloned().collect())
}

/// The broker local clusters run on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum LocalKind {
    /// Apache Kafka (KRaft), installed by `scripts/setup.sh` or found through `KAFKA_HOME`.
    Kafka,
    /// nisshi, a small Kafka-compatible broker.
    Nisshi,
}

/// What to start for `--broker` (and `--nisshi` with nisshi).
pub fn broker_kind(
    kind: LocalKind,
    nisshi: Option<&std::path::Path>,
    throughput: bool,
) -> Result<BrokerKind> {
    match kind {
        LocalKind::Kafka => Ok(BrokerKind::Kafka { throughput }),
        LocalKind::Nisshi => Ok(BrokerKind::Nisshi(nisshi_path(nisshi)?)),
    }
}

/// The topic written on cluster_a, its copy on cluster_b, and its partitions.
const TOPIC: &str = "global_iot";
const REMOTE: &str = "cluster_a.global_iot";
const PARTITIONS: i32 = 5;

/// The two local clusters and a client of each (the clients are dropped first).
struct Clusters {
    source: Cluster,
    target: Cluster,
    a: LocalBroker,
    b: LocalBroker,
}

/// Runs the demo and returns the report.
pub async fn run(args: &DemoArgs) -> Result<String> {
    let kind = broker_kind(args.broker, args.nisshi.as_deref(), false)?;
    let c = start_clusters(&kind).await?;
    let first = args.records / 2;
    seed(&c.source, first, args.codec).await?;
    let config_path = write_config(&c)?;
    let config = strait::config::load(&config_path).map_err(|e| Error::invalid(e.to_string()))?;
    eprintln!("strait run --config {} (in this process): flows cluster_a->cluster_b, cluster_b->cluster_a", config_path.display());
    let (stop, stop_rx) = tokio::sync::watch::channel(false);
    let engine =
        strait::replicate::spawn(config, stop_rx).map_err(|e| Error::invalid(e.to_string()))?;
    // Live data while the flows run.
    let producer = spawn_producer(&c, first, args.records - first, args.codec);
    watch_until_caught_up(&c, &engine, &producer).await?;
    match producer.await {
        Ok(r) => r?,
        Err(e) => return Err(Error::invalid(format!("producer task failed: {e}"))),
    }
    // Let a couple of heartbeats make the round trip.
    tokio::time::sleep(Duration::from_secs(3)).await;
    let _ = stop.send(true);
    match engine.done.await {
        Ok(r) => r?,
        Err(e) => return Err(Error::invalid(format!("engine failed: {e}"))),
    }
    let (mut out, ok) = report(&c).await?;
    let _ = writeln!(out, "config used: {}", config_path.display());
    if args.keep {
        keep_running(&c, &config_path, &mut out).await;
    }
    drop(c);
    if !ok {
        return Err(Error::invalid(format!(
            "{out}\nreplica differs from source"
        )));
    }
    Ok(out)
}

/// Starts cluster_a and cluster_b and connects to each.
async fn start_clusters(kind: &BrokerKind) -> Result<Clusters> {
    eprintln!(
        "starting two local clusters ({}) ...",
        match kind {
            BrokerKind::Kafka { .. } => "Apache Kafka, KRaft",
            BrokerKind::Nisshi(_) => "nisshi",
        }
    );
    let a = LocalBroker::start_kind(kind, "cluster_a").await?;
    let b = LocalBroker::start_kind(kind, "cluster_b").await?;
    let source = Cluster::connect(ClusterConfig::new(a.name(), a.addr())).await?;
    let target = Cluster::connect(ClusterConfig::new(b.name(), b.addr())).await?;
    Ok(Clusters {
        source,
        target,
        a,
        b,
    })
}

/// Creates the topic on cluster_a and writes its first `first` readings.
async fn seed(source: &Cluster, first: usize, codec: Compression) -> Result<()> {
    source.create_topic(TOPIC, PARTITIONS, 1, &[]).await?;
    // Apache Kafka answers CreateTopics before the new partitions' leader knows it leads them:
    // wait until each answers ListOffsets (retried) before writing.
    let all: Vec<i32> = (0..PARTITIONS).collect();
    source.list_offsets(TOPIC, &all, LATEST).await?;
    eprintln!(
        "writing {first} readings ({}) to {TOPIC} on cluster_a ...",
        codec.name()
    );
    fill(source, TOPIC, PARTITIONS, 0, first, codec).await
}

/// Writes the lab configuration for the two clusters to a temporary directory.
fn write_config(c: &Clusters) -> Result<PathBuf> {
    let dir = std::env::temp_dir().join(format!("strait-demo-{}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(Error::from)?;
    let config_path = dir.join("lab.toml");
    std::fs::write(&config_path, lab_config(c.a.addr(), c.b.addr())).map_err(Error::from)?;
    Ok(config_path)
}

/// Writes the remaining `rest` readings (from `first` on) in ten steps, 300 ms apart.
fn spawn_producer(
    c: &Clusters,
    first: usize,
    rest: usize,
    codec: Compression,
) -> tokio::task::JoinHandle<Result<()>> {
    let cfg = ClusterConfig::new(c.a.name(), c.a.addr());
    tokio::spawn(async move {
        let c = Cluster::connect(cfg).await?;
        let step = (rest / 10).max(1);
        let mut i = 0;
        while i < rest {
            fill(&c, TOPIC, PARTITIONS, first + i, step.min(rest - i), codec).await?;
            i += step;
            tokio::time::sleep(Duration::from_millis(300)).await;
        }
        Ok::<(), Error>(())
    })
}

/// Prints the flows' progress every half second until the producer is done and cluster_b's
/// copy ends where cluster_a's topic does (or a minute passed).
async fn watch_until_caught_up(
    c: &Clusters,
    engine: &strait::replicate::Engine,
    producer: &tokio::task::JoinHandle<Result<()>>,
) -> Result<()> {
    let started = Instant::now();
    let deadline = started + Duration::from_secs(60);
    let mut producing = true;
    loop {
        tokio::time::sleep(Duration::from_millis(500)).await;
        if producing && producer.is_finished() {
            producing = false;
        }
        let mut line = format!("{:>5.1}s", started.elapsed().as_secs_f64());
        for (name, rx) in &engine.status {
            let st = rx.borrow().clone();
            let records: u64 = st.partitions.iter().map(|p| p.records).sum();
            let lag: i64 = st.partitions.iter().map(|p| p.lag()).sum();
            let _ = write!(line, "   {name}: {records} records replicated, lag {lag}");
        }
        eprintln!("{line}");
        if !producing {
            let (sa, sb) = (
                ends(&c.source, TOPIC, PARTITIONS).await?,
                ends(&c.target, REMOTE, PARTITIONS)
                    .await
                    .unwrap_or_default(),
            );
            if sa == sb {
                return Ok(());
            }
        }
        if Instant::now() > deadline {
            return Ok(());
        }
    }
}

/// The side-by-side report, and whether every partition matches with no loop.
async fn report(c: &Clusters) -> Result<(String, bool)> {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "strait demo: {TOPIC} on cluster_a ({}) -> {REMOTE} on cluster_b ({})\n",
        c.a.addr(),
        c.b.addr()
    );
    let all_same = report_log_ends(c, &mut out).await?;
    let _ = writeln!(out, "\nfirst records of {REMOTE} partition 0 on cluster_b:");
    for (off, k, v) in first_records(&c.target, REMOTE, 0, 3).await? {
        let _ = writeln!(out, "  offset {off:>3}  key {k}  value {v}");
    }
    let looped = report_topics(c, &mut out).await?;
    let ok = all_same && !looped;
    let _ = writeln!(
        out,
        "\nresult: {}",
        if ok {
            "every partition matches"
        } else {
            "MISMATCH"
        }
    );
    Ok((out, ok))
}

/// Both log ends of each partition; whether they are all the same.
async fn report_log_ends(c: &Clusters, out: &mut String) -> Result<bool> {
    let (sa, sb) = (
        ends(&c.source, TOPIC, PARTITIONS).await?,
        ends(&c.target, REMOTE, PARTITIONS).await?,
    );
    let _ = writeln!(
        out,
        "{:>9}  {:>20}  {:>28}  same",
        "partition", "cluster_a log end", "cluster_b log end"
    );
    let mut all_same = true;
    for (p, (x, y)) in sa.iter().zip(&sb).enumerate() {
        all_same &= x == y;
        let _ = writeln!(
            out,
            "{p:>9}  {x:>20}  {y:>28}  {}",
            if x == y { "yes" } else { "NO" }
        );
    }
    Ok(all_same)
}

/// The topics and heartbeats on each cluster; whether a flow looped (cluster_a holds a copy
/// of its own copy).
async fn report_topics(c: &Clusters, out: &mut String) -> Result<bool> {
    let topics_a = topic_names(&c.source).await?;
    let topics_b = topic_names(&c.target).await?;
    let _ = writeln!(out, "\ntopics on cluster_a: {}", topics_a.join(", "));
    let _ = writeln!(out, "topics on cluster_b: {}", topics_b.join(", "));
    let _ = writeln!(
        out,
        "heartbeats on cluster_a: {}",
        heartbeats(&c.source).await?.join(", ")
    );
    let _ = writeln!(
        out,
        "heartbeats on cluster_b: {}",
        heartbeats(&c.target).await?.join(", ")
    );
    let looped = topics_a
        .iter()
        .any(|t| t.starts_with("cluster_b.cluster_a."));
    let _ = writeln!(
        out,
        "loop check: {}",
        if looped {
            "cluster_b.cluster_a.* exists: LOOP"
        } else {
            "no cluster_b.cluster_a.* topic on cluster_a (no loop)"
        }
    );
    Ok(looped)
}

/// The cluster's topic names, sorted.
async fn topic_names(cluster: &Cluster) -> Result<Vec<String>> {
    let mut names: Vec<String> = cluster
        .metadata(None)
        .await?
        .topics
        .into_iter()
        .map(|t| t.name)
        .collect();
    names.sort();
    Ok(names)
}

/// `--keep`: prints the report and what to try, then waits for Ctrl-C.
async fn keep_running(c: &Clusters, config_path: &std::path::Path, out: &mut String) {
    let _ = writeln!(
        out,
        "\nclusters stay up until Ctrl-C. Try:\n  strait probe --bootstrap {}\n  strait probe --bootstrap {} --internal\n  strait run --config {}\n  strait topics --config {} --source cluster_a --target cluster_b --list",
        c.a.addr(),
        c.b.addr(),
        config_path.display(),
        config_path.display()
    );
    print!("{out}");
    out.clear();
    let _ = tokio::signal::ctrl_c().await;
}
