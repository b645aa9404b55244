//! Issue 19 §4: replacing a running MirrorMaker 2 with strait (`takeover_from = "mm2"`) without
//! copying again what MirrorMaker 2 copied, and without losing or duplicating a record.
//!
//! MirrorMaker 2 (Apache Kafka's, dedicated mode, through `strait::local_mm2`) replicates part
//! of a backlog while a producer keeps writing (its reads of the source go through a proxy with
//! a bandwidth limit, so it is stopped in the middle of the backlog), and is stopped: cleanly
//! (SIGTERM) in one scenario, killed (SIGKILL) in the other, so that the target holds records
//! beyond the offset it committed. strait then takes over. Checked with rdkafka:
//! - strait's take-over found exactly where MirrorMaker 2 got to: the records it had written
//!   beyond its committed offset (counted independently from its offsets topic and the target);
//! - every source record is on the target exactly once, in order (key, value, headers,
//!   timestamp), partition by partition;
//! - two consumer groups failed over after the switch with `strait failover` (one committed in
//!   the stretch MirrorMaker 2 copied, one in strait's) resume on the target exactly at the
//!   record after the last one they consumed on the source.

mod support;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use rdkafka::consumer::{BaseConsumer, CommitMode, Consumer};
use rdkafka::{ClientConfig, Message, Offset, TopicPartitionList};
use strait::local_kafka::KafkaCluster;
use strait::local_mm2::{Mm2Options, Mm2Process};
use support::data::{produce_records_with, ProduceOptions};
use support::kafka::{start_kafka, start_kafka_behind_proxy_with, KafkaOptions};
use support::strait::wait_for_log as wait_until;
use support::{
    consume_all, create_topic, topic_name, OwnedRecord, ProduceCheckProxy, ProxyConfig, StraitRun,
    TestRecord,
};

const PARTITIONS: i32 = 3;
/// Records in the backlog before MirrorMaker 2 starts.
const BACKLOG: usize = 6000;
/// What MirrorMaker 2 may read from the source per second (through the proxy).
const MM2_BANDWIDTH: u64 = 120_000;

/// The `i`-th record of the test data: ~150 bytes, two headers, spread over the partitions.
fn record(i: usize) -> TestRecord {
    TestRecord {
        key: Some(format!("order-{}", i % 97).into_bytes()),
        value: Some(format!("order {i} {}", "x".repeat(110)).into_bytes()),
        headers: vec![
            ("seq".into(), Some(i.to_string().into_bytes())),
            ("origin".into(), None),
        ],
        partition: Some((i % PARTITIONS as usize) as i32),
        timestamp: None,
    }
}

/// Produces in batches of at most 4 KiB: a consumer that asks for little per partition then
/// gets little (a broker answers with at least one whole batch), so MirrorMaker 2 advances in
/// every partition at once.
fn produce_small_batches(bootstrap: &str, topic: &str, records: &[TestRecord]) {
    let opts = ProduceOptions {
        batch_size: 4096,
        ..ProduceOptions::default()
    };
    produce_records_with(bootstrap, topic, records, &opts);
}

/// A producer that keeps writing records from `next` on, about 300 a second, until stopped.
struct Load {
    stop: Arc<AtomicBool>,
    next: Arc<AtomicUsize>,
    handle: Option<JoinHandle<()>>,
}

impl Load {
    fn start(bootstrap: &str, topic: &str, next: usize) -> Load {
        let stop = Arc::new(AtomicBool::new(false));
        let next = Arc::new(AtomicUsize::new(next));
        let (b, t, s, n) = (
            bootstrap.to_string(),
            topic.to_string(),
            stop.clone(),
            next.clone(),
        );
        let handle = std::thread::spawn(move || {
            while !s.load(Ordering::Relaxed) {
                let from = n.load(Ordering::Relaxed);
                let batch: Vec<TestRecord> = (from..from + 30).map(record).collect();
                produce_small_batches(&b, &t, &batch);
                n.store(from + 30, Ordering::Relaxed);
                std::thread::sleep(Duration::from_millis(100));
            }
        });
        Load {
            stop,
            next,
            handle: Some(handle),
        }
    }

    /// Stops it; the number of records written in all.
    fn finish(mut self) -> usize {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(h) = self.handle.take() {
            h.join().expect("load thread");
        }
        self.next.load(Ordering::Relaxed)
    }
}

fn high_watermarks(bootstrap: &str, topic: &str) -> Vec<i64> {
    support::data::watermarks(bootstrap, topic)
        .iter()
        .map(|w| w.1)
        .collect()
}

/// Commits `offsets` (partition, offset) of `topic` for `group`, without joining it.
fn commit(bootstrap: &str, group: &str, topic: &str, offsets: &[(i32, i64)]) {
    let c: BaseConsumer = ClientConfig::new()
        .set("bootstrap.servers", bootstrap)
        .set("broker.address.family", "v4")
        .set("group.id", group)
        .set("enable.auto.commit", "false")
        .create()
        .expect("consumer");
    let mut tpl = TopicPartitionList::new();
    for (p, o) in offsets {
        tpl.add_partition_offset(topic, *p, Offset::Offset(*o))
            .expect("tpl");
    }
    c.commit(&tpl, CommitMode::Sync).expect("commit");
}

/// The first record `group` reads from each partition of `topic`, from its committed offsets.
fn first_records(bootstrap: &str, group: &str, topic: &str) -> BTreeMap<i32, OwnedRecord> {
    let c: BaseConsumer = ClientConfig::new()
        .set("bootstrap.servers", bootstrap)
        .set("broker.address.family", "v4")
        .set("group.id", group)
        .set("enable.auto.commit", "false")
        // A partition without a committed offset reads nothing: the test sees it missing.
        .set("auto.offset.reset", "latest")
        .set("max.partition.fetch.bytes", "1024")
        .create()
        .expect("consumer");
    let mut tpl = TopicPartitionList::new();
    for p in 0..PARTITIONS {
        tpl.add_partition_offset(topic, p, Offset::Stored)
            .expect("tpl");
    }
    c.assign(&tpl).expect("assign");
    let mut got = BTreeMap::new();
    let deadline = Instant::now() + Duration::from_secs(30);
    while got.len() < PARTITIONS as usize && Instant::now() < deadline {
        if let Some(m) = c.poll(Duration::from_millis(200)) {
            let m = m.expect("message");
            got.entry(m.partition()).or_insert_with(|| OwnedRecord {
                partition: m.partition(),
                offset: m.offset(),
                key: m.key().map(<[u8]>::to_vec),
                value: m.payload().map(<[u8]>::to_vec),
                headers: Vec::new(),
                timestamp: m.timestamp().to_millis(),
            });
        }
    }
    got
}

/// MirrorMaker 2's committed offsets of `topic`'s partitions, read with rdkafka from its
/// offsets topic on the target (last value per key).
fn mm2_committed(target: &str, source_alias: &str, topic: &str) -> BTreeMap<i32, i64> {
    let offsets_topic = format!("mm2-offsets.{source_alias}.internal");
    let n: usize = high_watermarks(target, &offsets_topic)
        .iter()
        .map(|h| *h as usize)
        .sum();
    let mut out = BTreeMap::new();
    for r in consume_all(target, &offsets_topic, n, Duration::from_secs(30)) {
        let key = String::from_utf8_lossy(r.key.as_deref().unwrap_or_default()).into_owned();
        if !key.contains("MirrorSourceConnector")
            || !key.contains(&format!("\"topic\":\"{topic}\""))
        {
            continue;
        }
        let partition: i32 = key
            .split("\"partition\":")
            .nth(1)
            .and_then(|s| s.split(|c: char| !c.is_ascii_digit()).next())
            .and_then(|s| s.parse().ok())
            .unwrap_or_else(|| panic!("no partition in {key}"));
        let value = String::from_utf8_lossy(r.value.as_deref().unwrap_or_default()).into_owned();
        let offset: i64 = value
            .trim_start_matches("{\"offset\":")
            .trim_end_matches('}')
            .parse()
            .unwrap_or_else(|_| panic!("no offset in {value}"));
        out.insert(partition, offset);
    }
    out
}

/// `(partition, beyond)` from strait's "taking over from MirrorMaker 2" log lines for `topic`.
fn taken_over(log: &str, topic: &str) -> BTreeMap<i32, i64> {
    let field = |line: &str, name: &str| -> Option<i64> {
        line.split(&format!(" {name}="))
            .nth(1)?
            .split(|c: char| !c.is_ascii_digit() && c != '-')
            .next()?
            .parse()
            .ok()
    };
    log.lines()
        .filter(|l| {
            l.contains("taking over from MirrorMaker 2") && l.contains(&format!("topic={topic} "))
        })
        .filter_map(|l| Some((field(l, "partition")? as i32, field(l, "beyond")?)))
        .collect()
}

fn strait(args: &[&str], config: &Path) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_strait"))
        .args(&args[..1])
        .arg("--config")
        .arg(config)
        .args(&args[1..])
        .output()
        .expect("run strait");
    assert!(
        out.status.success(),
        "strait {args:?} failed: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Per partition, (key, value, headers, timestamp) in offset order.
type Contents = BTreeMap<
    i32,
    Vec<(
        Option<Vec<u8>>,
        Option<Vec<u8>>,
        Vec<(String, Option<Vec<u8>>)>,
        Option<i64>,
    )>,
>;

fn contents(records: Vec<OwnedRecord>) -> Contents {
    let mut out = Contents::new();
    for r in records {
        out.entry(r.partition)
            .or_default()
            .push((r.key, r.value, r.headers, r.timestamp));
    }
    out
}

/// The two clusters of the test: `a` behind a proxy (MirrorMaker 2's reads are slowed there),
/// `b` direct.
struct Clusters {
    a: KafkaCluster,
    proxy: ProduceCheckProxy,
    b: KafkaCluster,
    dir: std::path::PathBuf,
}

/// A strait configuration replicating `topic` from `a` to `b` with `takeover_from = "mm2"`,
/// translating the groups `groups` matches; written into the test folder as `name.toml`.
fn write_config(c: &Clusters, name: &str, topic: &str, groups: &str) -> PathBuf {
    let (a, b) = (c.a.bootstrap(), c.b.bootstrap());
    let config = c.dir.join(format!("{name}.toml"));
    let text = format!(
        r#"
[clusters.a]
bootstrap_servers = "{a}"
[clusters.b]
bootstrap_servers = "{b}"
replication_factor = 1
[[flows]]
source = "a"
target = "b"
topics = ["{topic}"]
groups = ["{groups}"]
takeover_from = "mm2"
refresh_topics_interval_secs = 1
refresh_groups_interval_secs = 1
checkpoint_interval_secs = 1
"#
    );
    std::fs::write(&config, text).expect("config");
    config
}

/// MirrorMaker 2 replicates `topic` (its reads slowed by the proxy) while `load` writes, and is
/// stopped once it copied a third of the backlog (`kill`: SIGKILL after its first offset
/// commits, else SIGTERM). Returns, per partition, the records it copied beyond its committed
/// offset, counted from its offsets topic and the target.
fn mm2_copies_part(c: &Clusters, name: &str, topic: &str, kill: bool) -> BTreeMap<i32, i64> {
    let (a, b) = (c.a.bootstrap(), c.b.bootstrap());
    let remote = format!("a.{topic}");
    c.proxy.update_faults(|f| f.bandwidth = Some(MM2_BANDWIDTH));
    let mut opts = Mm2Options::new("a", &a, "b", &b);
    opts.name = name.to_string();
    opts.topics = topic.to_string();
    opts.groups = format!("{name}-.*");
    opts.dir = Some(c.dir.clone());
    // Killed: offsets are committed every 2 s, so it dies with records copied beyond them.
    opts.offset_flush_interval_ms = 2000;
    // Small fetches, so that the bandwidth limit slows every partition alike.
    opts.extra = vec![
        ("a.consumer.max.partition.fetch.bytes".into(), "8192".into()),
        ("a.consumer.fetch.max.bytes".into(), "24576".into()),
    ];
    let mut mm2 = Mm2Process::start(opts).unwrap_or_else(|e| panic!("{e}"));
    let mm2_log = mm2.log_path().to_path_buf();
    let show = || strait::local_kafka::file_tail(&mm2_log, 6000);
    wait_until(
        "MirrorMaker 2 to copy a third of the backlog",
        Duration::from_secs(90),
        show,
        || high_watermarks(&b, &remote).iter().sum::<i64>() >= (BACKLOG / 3) as i64,
    );
    if kill {
        // A partition it dies on before its first offset commit could not be taken over: it
        // is killed once it has committed for every partition.
        wait_until(
            "MirrorMaker 2's first offset commits",
            Duration::from_secs(60),
            show,
            || mm2_committed(&b, "a", topic).len() == PARTITIONS as usize,
        );
        mm2.kill();
    } else {
        mm2.stop();
    }
    c.proxy.update_faults(|f| f.bandwidth = None);
    let at_stop = high_watermarks(&b, &remote);
    let source_at_stop = high_watermarks(&a, topic);
    assert!(
        at_stop.iter().sum::<i64>() < source_at_stop.iter().sum::<i64>(),
        "MirrorMaker 2 caught up before it was stopped ({at_stop:?} of {source_at_stop:?}): the take-over would not start mid-backlog (lower MM2_BANDWIDTH)"
    );
    let committed = mm2_committed(&b, "a", topic);
    // MirrorMaker 2 started from offset 0 and wrote each record once: the remote partition
    // holds source offsets 0.., and what lies after the committed record was copied beyond it.
    let beyond: BTreeMap<i32, i64> = (0..PARTITIONS)
        .map(|p| {
            (
                p,
                at_stop[p as usize] - committed.get(&p).map_or(0, |o| o + 1),
            )
        })
        .collect();
    eprintln!("{name}: MirrorMaker 2 stopped with {at_stop:?} on the target (source at {source_at_stop:?}), committed {committed:?}; records beyond: {beyond:?}");
    if kill {
        assert!(
            beyond.values().any(|n| *n > 0),
            "killed between offset commits, MirrorMaker 2 must have left records beyond its committed offsets"
        );
    }
    beyond
}

/// Every record of `topic` on `a` is in `remote` on `b` once, in order, partition by
/// partition; returns the source's records.
fn assert_exactly_once(c: &Clusters, topic: &str, remote: &str, total: usize) -> Contents {
    let src = contents(consume_all(
        &c.a.bootstrap(),
        topic,
        total,
        Duration::from_secs(60),
    ));
    let dst = contents(consume_all(
        &c.b.bootstrap(),
        remote,
        total,
        Duration::from_secs(60),
    ));
    assert_eq!(
        src.values().map(Vec::len).sum::<usize>(),
        total,
        "source records"
    );
    for p in 0..PARTITIONS {
        let (s, d) = (&src[&p], &dst[&p]);
        if let Some(i) = (0..s.len().min(d.len())).find(|&i| s[i] != d[i]) {
            panic!(
                "{topic}: partition {p}: target offset {i} holds {:?}, the source {:?}",
                d[i], s[i]
            );
        }
        assert_eq!(
            d.len(),
            s.len(),
            "{topic}: partition {p}: records on the target"
        );
    }
    src
}

/// `strait failover` of `group`, which committed `at` (partition, offset) on the source: on
/// the target it reads first, in every partition, the source record at that offset.
fn assert_fails_over_exactly(
    config: &Path,
    c: &Clusters,
    group: &str,
    remote: &str,
    at: &[(i32, i64)],
    src: &Contents,
) {
    let out = strait(
        &[
            "failover", "--source", "a", "--target", "b", "--group", group,
        ],
        config,
    );
    eprintln!("{out}");
    let first = first_records(&c.b.bootstrap(), group, remote);
    for &(p, offset) in at {
        let want = &src[&p][offset as usize];
        let got = first
            .get(&p)
            .unwrap_or_else(|| panic!("{group}: nothing read from partition {p} after failover"));
        assert_eq!(
            (&got.key, &got.value, got.timestamp),
            (&want.0, &want.1, want.3),
            "{group}: partition {p}: first record after failover (source offset {offset}), read at target offset {}",
            got.offset
        );
    }
}

/// Waits for two more checkpoint passes in `log`.
fn two_checkpoint_passes(log: impl Fn() -> String) {
    let passes = |l: String| l.matches("checkpoint pass done").count();
    let before = passes(log());
    wait_until(
        "two checkpoint passes",
        Duration::from_secs(30),
        &log,
        || passes(log()) >= before + 2,
    );
}

/// One scenario: MirrorMaker 2 copies part of a backlog under load and is stopped (`kill`:
/// SIGKILL, else SIGTERM); strait takes over; everything is checked.
fn scenario(c: &Clusters, name: &str, kill: bool) {
    let (a, b) = (c.a.bootstrap(), c.b.bootstrap());
    let topic = topic_name(name);
    let remote = format!("a.{topic}");
    create_topic(&a, &topic, PARTITIONS);
    let backlog: Vec<TestRecord> = (0..BACKLOG).map(record).collect();
    produce_small_batches(&a, &topic, &backlog);
    // A group far behind: it consumed the first fifth of each partition on the source.
    let early_group = format!("{name}-early");
    let per_partition = (BACKLOG / PARTITIONS as usize) as i64;
    let early: Vec<(i32, i64)> = (0..PARTITIONS)
        .map(|p| (p, per_partition / 5 + i64::from(p)))
        .collect();
    commit(&a, &early_group, &topic, &early);
    let load = Load::start(&a, &topic, BACKLOG);
    let beyond = mm2_copies_part(c, name, &topic, kill);

    let config = write_config(c, name, &topic, &format!("{name}-.*"));
    let log_path = c.dir.join(format!("{name}-strait.log"));
    let run = StraitRun::start(&config, &log_path);
    let log = || std::fs::read_to_string(&log_path).unwrap_or_default();
    wait_until(
        "strait to take every partition over",
        Duration::from_secs(60),
        log,
        || taken_over(&log(), &topic).len() == PARTITIONS as usize,
    );
    assert_eq!(
        taken_over(&log(), &topic),
        beyond,
        "strait found where MirrorMaker 2 got to in each partition"
    );

    let total = load.finish();
    let source_end = high_watermarks(&a, &topic);
    wait_until(
        "the target to catch up",
        Duration::from_secs(60),
        log,
        || high_watermarks(&b, &remote) == source_end,
    );
    // A group near the head: it consumed on the source until 20 records before the end.
    let late_group = format!("{name}-late");
    let late: Vec<(i32, i64)> = (0..PARTITIONS)
        .map(|p| (p, source_end[p as usize] - 20))
        .collect();
    commit(&a, &late_group, &topic, &late);
    two_checkpoint_passes(log);

    let src = assert_exactly_once(c, &topic, &remote, total);
    assert_fails_over_exactly(&config, c, &early_group, &remote, &early, &src);
    assert_fails_over_exactly(&config, c, &late_group, &remote, &late, &src);
    let log = run.stop();
    assert!(!log.contains("cannot take over"), "{log}");
}

/// MirrorMaker 2's footprints written by hand: a source partition of ten identical records (same
/// key, value and timestamp), seven copies on the target, and a committed offset of 4. Where
/// MirrorMaker 2 got to cannot be told from the records: strait refuses the partition (and
/// writes nothing) until an offset sync says which source record a target record is, then
/// takes over there, within a second (the take-up is tried again at every topic refresh). A
/// second partition MirrorMaker 2 never copied (no offset, nothing on the target) starts at the
/// source's log start.
fn repeating_records(c: &Clusters) {
    let (a, b) = (c.a.bootstrap(), c.b.bootstrap());
    let topic = topic_name("repeating");
    let remote = format!("a.{topic}");
    create_topic(&a, &topic, 2);
    create_topic(&b, &remote, 2);
    // One timestamp for all, a recent one (older records would go with the topic's retention).
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("clock")
        .as_millis() as i64;
    let same = TestRecord {
        partition: Some(0),
        timestamp: Some(now),
        ..TestRecord::kv("same", "same")
    };
    produce_small_batches(&a, &topic, &vec![same.clone(); 10]);
    produce_small_batches(&b, &remote, &vec![same.clone(); 7]);
    let fresh: Vec<TestRecord> = (0..5)
        .map(|i| TestRecord {
            partition: Some(1),
            ..TestRecord::kv(format!("k{i}"), format!("v{i}"))
        })
        .collect();
    produce_small_batches(&a, &topic, &fresh);
    let key =
        format!(r#"["MirrorSourceConnector",{{"cluster":"a","partition":0,"topic":"{topic}"}}]"#);
    produce_small_batches(
        &b,
        "mm2-offsets.a.internal",
        &[TestRecord::kv(key, r#"{"offset":4}"#)],
    );
    let group = format!("{topic}-group");
    commit(&a, &group, &topic, &[(0, 2)]);

    let config = write_config(c, "repeating", &topic, &format!("{topic}-.*"));
    let log_path = c.dir.join("repeating-strait.log");
    let run = StraitRun::start(&config, &log_path);
    let log = || std::fs::read_to_string(&log_path).unwrap_or_default();
    wait_until(
        "strait to refuse the take-over",
        Duration::from_secs(60),
        log,
        || {
            log().contains(&format!(
                "cannot take over from MirrorMaker 2 (source {topic}/0)"
            ))
        },
    );
    assert!(log().contains("do not single one out"), "{}", log());
    std::thread::sleep(Duration::from_secs(2));
    assert_eq!(
        high_watermarks(&b, &remote)[0],
        7,
        "nothing written while unproven"
    );

    let sync = strait::mm2::OffsetSync {
        topic: topic.clone(),
        partition: 0,
        upstream_offset: 6,
        downstream_offset: 6,
    };
    let sync_key = sync.encode_key().expect("sync key");
    let sync_record = TestRecord {
        key: Some(sync_key),
        value: Some(sync.encode_value()),
        partition: Some(0),
        ..TestRecord::default()
    };
    produce_small_batches(
        &a,
        &strait::naming::Mm2Topics::default().offset_syncs("b"),
        &[sync_record],
    );
    wait_until(
        "strait to take both partitions over",
        Duration::from_secs(60),
        log,
        || taken_over(&log(), &topic) == BTreeMap::from([(0, 2), (1, 0)]),
    );
    wait_until(
        "the rest of the records",
        Duration::from_secs(60),
        log,
        || high_watermarks(&b, &remote) == vec![10, 5],
    );
    two_checkpoint_passes(log);
    strait(
        &[
            "failover", "--source", "a", "--target", "b", "--group", &group,
        ],
        &config,
    );
    assert_eq!(
        support::data::committed_offset(&b, &group, &remote, 0),
        Some(2),
        "the group committed at source offset 2 fails over to target offset 2"
    );
    let log = run.stop();
    let copies = contents(consume_all(&b, &remote, 15, Duration::from_secs(30)));
    let source = contents(consume_all(&a, &topic, 15, Duration::from_secs(30)));
    assert_eq!(copies[&0].len(), 10, "{log}");
    assert_eq!(copies, source, "{log}");
}

#[test]
fn strait_takes_over_from_mirrormaker2_stopped_and_killed() {
    let proxy_cfg = ProxyConfig {
        require_acks_all: false,
        ..ProxyConfig::default()
    };
    let (a, proxy) = start_kafka_behind_proxy_with(KafkaOptions::new("mm2-a"), proxy_cfg);
    let b = start_kafka("mm2-b");
    let dir = std::env::temp_dir().join(topic_name("mm2-takeover"));
    std::fs::create_dir_all(&dir).expect("dir");
    let clusters = Clusters { a, proxy, b, dir };
    scenario(&clusters, "stopped", false);
    scenario(&clusters, "killed", true);
    repeating_records(&clusters);
}
