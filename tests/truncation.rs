//! A source log truncated by an unclean leader election, on Apache Kafka: strait copied
//! records that the new leader never had, and the new leader writes other records at those
//! offsets. Strait must notice by leader epoch (the leader's diverging epoch in the Fetch
//! answer, KIP-320), stop the partition with one line naming the offsets, show it stopped, and
//! copy nothing of the new leader's records into the remote partition; also when the log was
//! truncated while strait was stopped (the leader epoch is stored with the position).

mod support;

use std::time::{Duration, Instant};

use rdkafka::admin::{AdminClient, AdminOptions, NewTopic, TopicReplication};
use rdkafka::client::DefaultClientContext;
use rdkafka::config::ClientConfig;
use rdkafka::consumer::{BaseConsumer, Consumer};

use strait::records::Compression;
use support::data::watermarks;
use support::data::{batch_codecs, produce_records_with, ProduceOptions};
use support::kafka::{start_kafka, start_kafka_with, KafkaOptions};
use support::strait::status_get;
use support::{topic_name, StraitRun, TestRecord};

const TOPIC: &str = "orders";
const REMOTE: &str = "a.orders";

/// Produces `n` records into each of the first `partitions` partitions, with `acks`.
fn produce(bootstrap: &str, prefix: &str, n: usize, acks: &'static str, partitions: i32) {
    let records: Vec<TestRecord> = (0..partitions)
        .flat_map(|p| {
            (0..n).map(move |i| TestRecord {
                partition: Some(p),
                ..TestRecord::kv(format!("k{i}"), format!("{prefix}-{p}-{i}"))
            })
        })
        .collect();
    let n = records.len();
    let opts = ProduceOptions {
        acks,
        ..ProduceOptions::default()
    };
    let delivered = produce_records_with(bootstrap, TOPIC, &records, &opts);
    assert_eq!(delivered.len(), n);
}

/// Creates the topic with `partitions` partitions on brokers 2 and 3 (2 leading), unclean
/// leader election allowed.
fn create_on_brokers_2_and_3(bootstrap: &str, partitions: usize) {
    let admin: AdminClient<DefaultClientContext> = ClientConfig::new()
        .set("bootstrap.servers", bootstrap)
        .set("broker.address.family", "v4")
        .create()
        .expect("admin client");
    let assignment: Vec<&[i32]> = vec![&[2, 3]; partitions];
    let topic = NewTopic::new(
        TOPIC,
        partitions as i32,
        TopicReplication::Variable(&assignment),
    )
    .set("unclean.leader.election.enable", "true")
    .set("min.insync.replicas", "1");
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let results = rt
        .block_on(admin.create_topics([&topic], &AdminOptions::new()))
        .expect("create topic");
    assert!(results.iter().all(|r| r.is_ok()), "{results:?}");
}

/// Leader and in-sync replicas of partition 0, as the metadata says (all partitions of the
/// topic live on the same two brokers).
fn leader_and_isr(bootstrap: &str) -> (i32, Vec<i32>) {
    let consumer: BaseConsumer = ClientConfig::new()
        .set("bootstrap.servers", bootstrap)
        .set("broker.address.family", "v4")
        .create()
        .expect("consumer");
    let md = consumer
        .fetch_metadata(Some(TOPIC), Duration::from_secs(10))
        .expect("metadata");
    let p = &md.topics()[0].partitions()[0];
    (p.leader(), p.isr().to_vec())
}

fn wait_for(
    what: &str,
    log: &dyn Fn() -> String,
    timeout: Duration,
    mut done: impl FnMut() -> bool,
) {
    let deadline = Instant::now() + timeout;
    while !done() {
        assert!(Instant::now() < deadline, "{what}:\n{}", log());
        std::thread::sleep(Duration::from_millis(250));
    }
}

/// A 3-broker source whose topic lives on brokers 2 and 3 (unclean election allowed), a
/// 1-broker target, and strait's configuration replicating the topic.
struct Lab {
    a: strait::local_kafka::KafkaCluster,
    b: strait::local_kafka::KafkaCluster,
    dir: std::path::PathBuf,
    config: std::path::PathBuf,
    http: u16,
}

impl Lab {
    fn start(name: &str, partitions: usize) -> Lab {
        Lab::start_with(name, partitions, "")
    }

    /// As [`Lab::start`], with `flow` added to the flow's settings.
    fn start_with(name: &str, partitions: usize, flow: &str) -> Lab {
        let mut opts = KafkaOptions::new(&format!("{name}-a"));
        opts.nodes = 3;
        opts.controllers = 1; // brokers 2 and 3 can stop without losing the quorum
        opts.heap = "256m".into();
        opts.properties = vec![
            ("replica.lag.time.max.ms".into(), "2000".into()),
            ("auto.leader.rebalance.enable".into(), "false".into()),
            ("unclean.leader.election.enable".into(), "true".into()),
        ];
        let a = start_kafka_with(opts);
        let b = start_kafka(&format!("{name}-b"));
        create_on_brokers_2_and_3(&a.bootstrap(), partitions);
        let dir = std::env::temp_dir().join(topic_name(name));
        std::fs::create_dir_all(&dir).expect("dir");
        let config = dir.join("strait.toml");
        std::fs::write(
            &config,
            format!(
                "[clusters.a]\nbootstrap_servers = \"{}\"\n[clusters.b]\nbootstrap_servers = \"{}\"\n\
                 [[flows]]\nsource = \"a\"\ntarget = \"b\"\ntopics = [\"{TOPIC}\"]\n{flow}",
                a.bootstrap(),
                b.bootstrap()
            ),
        )
        .expect("config");
        let http = strait::local_kafka::free_port().expect("port");
        Lab {
            a,
            b,
            dir,
            config,
            http,
        }
    }

    fn strait(&self, log: &str) -> StraitRun {
        let addr = format!("127.0.0.1:{}", self.http);
        StraitRun::start_with_args(
            &self.config,
            &self.dir.join(log),
            "info",
            &["--http", &addr],
        )
    }

    /// Log end offsets of the remote topic's partitions.
    fn target_ends(&self) -> Vec<i64> {
        watermarks(&self.b.bootstrap(), REMOTE)
            .iter()
            .map(|w| w.1)
            .collect()
    }

    /// Broker 3 (the follower) stops; once it left the ISR, `n` records per partition go to
    /// broker 2 alone.
    fn write_to_the_leader_alone(&mut self, n: usize, partitions: i32, log: &dyn Fn() -> String) {
        let bootstrap = self.a.bootstrap();
        self.a.kill_node(2);
        wait_for(
            "broker 3 out of the ISR",
            log,
            Duration::from_secs(60),
            || leader_and_isr(&bootstrap).1 == vec![2],
        );
        produce(&bootstrap, "lost", n, "1", partitions);
    }

    /// Broker 2 dies; broker 3 comes back and is elected although it was not in sync: its log
    /// ends where it stopped, and `n` other records per partition are written from there.
    fn elect_the_stale_replica(&mut self, n: usize, partitions: i32, log: &dyn Fn() -> String) {
        let bootstrap = self.a.bootstrap();
        self.a.kill_node(1);
        self.a.start_node(2).expect("broker 3 starts");
        wait_for(
            "broker 3 elected (unclean)",
            log,
            Duration::from_secs(90),
            || leader_and_isr(&bootstrap).0 == 3,
        );
        produce(&bootstrap, "other", n, "1", partitions);
    }
}

/// The stored progress records of the topic's partitions, by partition.
fn stored_progress(
    b: &str,
) -> std::collections::BTreeMap<i32, strait::replicate::progress::Stored> {
    use strait::replicate::{progress, store};
    tokio::runtime::Runtime::new()
        .expect("runtime")
        .block_on(async {
            let c = strait::client::Cluster::connect(strait::client::ClusterConfig::new("b", b))
                .await
                .expect("connect b");
            store::read_latest(&c, progress::PROGRESS_TOPIC)
                .await
                .expect("read progress")
        })
        .iter()
        .filter_map(|(k, v)| {
            let key = std::str::from_utf8(k).ok()?;
            let (topic, p) = progress::parse_key(key, "a")?;
            (topic == TOPIC).then(|| (p, progress::decode(v).expect("a progress record")))
        })
        .collect()
}

/// Writes a progress record for partition `p` (as strait would have).
fn store_progress(b: &str, p: i32, stored: &strait::replicate::progress::Stored) {
    use strait::replicate::{progress, store};
    let key = bytes::Bytes::from(progress::key("a", TOPIC, p));
    let value = bytes::Bytes::from(progress::encode(stored));
    tokio::runtime::Runtime::new()
        .expect("runtime")
        .block_on(async {
            let c = strait::client::Cluster::connect(strait::client::ClusterConfig::new("b", b))
                .await
                .expect("connect b");
            store::append(&c, progress::PROGRESS_TOPIC, 0, &[(key, Some(value))])
                .await
                .expect("write progress")
        });
}

#[test]
fn a_log_truncated_by_an_unclean_election_stops_the_partition() {
    let mut lab = Lab::start("trunc", 1);
    let bootstrap = lab.a.bootstrap();
    produce(&bootstrap, "first", 100, "all", 1);
    let run = lab.strait("strait.log");
    let log = || run.log();
    wait_for(
        "the first 100 records copied",
        &log,
        Duration::from_secs(90),
        || lab.target_ends() == [100],
    );
    lab.write_to_the_leader_alone(50, 1, &log);
    wait_for(
        "the 50 records only broker 2 has copied",
        &log,
        Duration::from_secs(60),
        || lab.target_ends() == [150],
    );
    lab.elect_the_stale_replica(30, 1, &log);

    // The partition stops, saying where the source diverged; nothing of the other records is
    // copied; the status shows it stopped.
    wait_for(
        "the partition stopped",
        &log,
        Duration::from_secs(60),
        || run.log().contains("diverged at offset 100"),
    );
    let line = run
        .log()
        .lines()
        .find(|l| l.contains("diverged at offset 100"))
        .unwrap_or_default()
        .to_string();
    assert!(
        line.contains("cluster a, topic orders, partition 0, offset 150")
            && line.contains("partition stopped"),
        "{line}"
    );
    std::thread::sleep(Duration::from_secs(3));
    assert_eq!(
        lab.target_ends(),
        [150],
        "no record of the new leader copied"
    );
    let (code, _) = status_get(lab.http, "/ready").expect("ready answers");
    assert_eq!(code, 503, "a stopped partition is not ready");
    let (_, status) = status_get(lab.http, "/api/status").expect("status");
    assert!(status.contains("diverged at offset 100"), "{status}");
}

#[test]
fn a_log_truncated_while_strait_was_stopped_stops_the_partition_at_restart() {
    truncated_while_stopped(Lab::start("trunc-stopped", 2), false);
}

/// The same with `recompress = "zstd"`: strait's batches on the target are zstd, the source's
/// are not, and their CRCs differ on the wire; the take-up compares the records decompressed.
#[test]
fn a_log_truncated_while_strait_was_stopped_stops_the_partition_with_recompress() {
    let lab = Lab::start_with("trunc-zstd", 2, "recompress = \"zstd\"\n");
    truncated_while_stopped(lab, true);
}

/// Stops strait, truncates the source log by an unclean election with as many other records
/// written since, puts one partition's progress record back behind strait's batches, and
/// checks that both partitions stop at restart with nothing copied. `recompressed`: strait's
/// batches on the target must be zstd.
fn truncated_while_stopped(mut lab: Lab, recompressed: bool) {
    let bootstrap = lab.a.bootstrap();
    produce(&bootstrap, "first", 100, "all", 2);
    let mut run = lab.strait("strait-1.log");
    let log = || run.log();
    wait_for(
        "the first 100 records copied",
        &log,
        Duration::from_secs(90),
        || lab.target_ends() == [100, 100],
    );
    lab.write_to_the_leader_alone(50, 2, &log);
    wait_for(
        "the 50 records only broker 2 has copied",
        &log,
        Duration::from_secs(60),
        || lab.target_ends() == [150, 150],
    );
    assert!(run.terminate(Duration::from_secs(30)), "{}", run.log());
    if recompressed {
        let codecs = batch_codecs(&lab.b.bootstrap(), REMOTE, 1);
        assert!(
            codecs.iter().all(|c| *c == Some(Compression::Zstd)),
            "{codecs:?}"
        );
    }

    // The positions are stored with the leader epoch they were read under. Partition 1's
    // record is put back to offset 100, as if strait had been killed before storing the last
    // 50: at restart it must read its own batches back and pair them with the source.
    let b = lab.b.bootstrap();
    let stored = stored_progress(&b);
    for p in [0, 1] {
        let s = &stored[&p];
        assert_eq!(s.map.source_next(), 150, "partition {p}");
        assert!(s.leader_epoch.is_some(), "partition {p}: {s:?}");
    }
    let mut behind = stored[&1].clone();
    let mut map = strait::offsets::OffsetMap::new(0, 0);
    map.record_batch(
        &strait::forward::SourceOffsets::Contiguous {
            first: 0,
            count: 100,
        },
        0,
    )
    .expect("map");
    behind.map = map;
    let writer = behind.writer.as_mut().expect("writer");
    writer.next_sequence -= 50;
    store_progress(&b, 1, &behind);

    // While strait is stopped, the stale replica is elected and as many other records are
    // written as strait had copied: the source's log end looks just as strait left it.
    let quiet = || String::new();
    lab.elect_the_stale_replica(50, 2, &quiet);

    let run = lab.strait("strait-2.log");
    let log = || run.log();
    let stopped = |p: i32| {
        run.log()
            .lines()
            .find(|l| l.contains(&format!("partition {p}")) && l.contains("partition stopped"))
            .map(str::to_string)
    };
    wait_for(
        "both partitions stopped",
        &log,
        Duration::from_secs(90),
        || stopped(0).is_some() && stopped(1).is_some(),
    );
    let line0 = stopped(0).unwrap_or_default();
    assert!(
        line0.contains("cluster a, topic orders, partition 0, offset 150")
            && line0.contains("diverged at offset 100"),
        "{line0}"
    );
    // Partition 1: the source log at 100 is consistent with epoch it was read under; the
    // records after it are others than the ones strait copied (told by the batch CRC, or by
    // the record count if the producer batched them otherwise).
    let line1 = stopped(1).unwrap_or_default();
    eprintln!("partition 1: {line1}");
    assert!(
        line1.contains("topic a.orders, partition 1")
            && (line1.contains("is not a copy of the source records now at offsets 100..")
                || line1.contains("does not match the source batch from offset 100")),
        "{line1}"
    );
    std::thread::sleep(Duration::from_secs(3));
    assert_eq!(
        lab.target_ends(),
        [150, 150],
        "no record of the new leader copied"
    );
    let (code, _) = status_get(lab.http, "/ready").expect("ready answers");
    assert_eq!(code, 503, "stopped partitions are not ready");
}
