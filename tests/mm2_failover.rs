//! Issue 19 §2: failover accuracy side by side. The same source data and consumer groups are
//! replicated at once by MirrorMaker 2 (Apache Kafka's, dedicated mode, checkpoints every
//! second, group offset sync on) and by strait into the same target. For each system, once
//! replication and checkpoints have settled, each group's committed offset is translated to the
//! target (MirrorMaker 2: `RemoteClusterUtils.translateOffsets` over its checkpoints, run by
//! Apache Kafka's own code; strait: `strait offsets --export`), an rdkafka consumer reads the
//! target from there to the end, and every record it reads is compared with what the group
//! consumed on the source: per partition, the records read again (already consumed on the
//! source) and the records lost (not consumed on the source and skipped on the target).
//!
//! Three groups on a four-partition topic produced by rdkafka: one far behind, one mid-way (a
//! different place in each partition), one caught up. strait must re-read and lose nothing on
//! any partition; MirrorMaker 2 must lose nothing (what it re-reads is printed, not asserted:
//! it translates through offset syncs taken every `offset.lag.max` records).

mod support;

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use rdkafka::consumer::{BaseConsumer, CommitMode, Consumer};
use rdkafka::{ClientConfig, Message, Offset, TopicPartitionList};
use strait::local_mm2::{Mm2Options, Mm2Process};
use support::data::watermarks;
use support::kafka::start_kafka;
use support::{
    consume_all, create_topic, produce_records, topic_name, Codec, StraitRun, TestRecord,
};

const TOPIC: &str = "orders";
const PARTITIONS: i32 = 4;
/// Records per partition.
const PER_PARTITION: usize = 1500;
/// strait's alias of the source cluster: its remote topic is `a.orders`.
const STRAIT_REMOTE: &str = "a.orders";
/// MirrorMaker 2's alias of the source cluster: its remote topic is `mm2.orders`.
const MM2_ALIAS: &str = "mm2";
const MM2_REMOTE: &str = "mm2.orders";

/// How many records a group consumes of a partition on the source.
type Share = fn(i32) -> usize;

/// The groups and how many records each consumes of partition `p` on the source.
fn groups() -> Vec<(&'static str, Share)> {
    vec![
        ("fo-behind", |p| 37 + 11 * p as usize),
        ("fo-midway", |p| PER_PARTITION / 2 + 53 * p as usize + 7),
        ("fo-caught-up", |_| PER_PARTITION),
    ]
}

/// Partition -> source offset -> value.
type SourceLog = BTreeMap<i32, Vec<Vec<u8>>>;

/// Group -> partition -> (committed offset on the source, values the group consumed).
type Consumed = BTreeMap<String, BTreeMap<i32, (i64, BTreeSet<Vec<u8>>)>>;

/// Partition -> offset on the remote topic, as translated to the target.
type Translated = BTreeMap<i32, i64>;

fn produce(bootstrap: &str) -> SourceLog {
    create_topic(bootstrap, TOPIC, PARTITIONS);
    let records: Vec<TestRecord> = (0..PER_PARTITION * PARTITIONS as usize)
        .map(|i| {
            let p = (i % PARTITIONS as usize) as i32;
            let seq = i / PARTITIONS as usize;
            TestRecord {
                partition: Some(p),
                ..TestRecord::kv(
                    format!("order-{}", i % 89),
                    format!("p{p} seq {seq} {}", "x".repeat(60)),
                )
            }
        })
        .collect();
    produce_records(bootstrap, TOPIC, &records, Codec::Lz4);
    let n = records.len();
    let got = consume_all(bootstrap, TOPIC, n, Duration::from_secs(60));
    assert_eq!(got.len(), n, "every record on the source");
    let mut log = SourceLog::new();
    for r in got {
        let values = log.entry(r.partition).or_default();
        assert_eq!(
            values.len() as i64,
            r.offset,
            "partition {} dense",
            r.partition
        );
        values.push(r.value.unwrap_or_default());
    }
    log
}

/// Each group consumes its share of every partition on the source and commits.
fn consume_on_source(bootstrap: &str) -> Consumed {
    let mut out = Consumed::new();
    for (group, count) in groups() {
        for p in 0..PARTITIONS {
            let c: BaseConsumer = ClientConfig::new()
                .set("bootstrap.servers", bootstrap)
                .set("broker.address.family", "v4")
                .set("group.id", group)
                .set("enable.auto.commit", "false")
                .set("auto.offset.reset", "earliest")
                .create()
                .expect("consumer");
            let mut tpl = TopicPartitionList::new();
            tpl.add_partition_offset(TOPIC, p, Offset::Stored)
                .expect("tpl");
            c.assign(&tpl).expect("assign");
            let want = count(p);
            let mut values = BTreeSet::new();
            let mut next = 0;
            let deadline = Instant::now() + Duration::from_secs(60);
            while values.len() < want {
                assert!(Instant::now() < deadline, "{group} reads {want} of {p}");
                if let Some(m) = c.poll(Duration::from_millis(200)) {
                    let m = m.expect("message");
                    values.insert(m.payload().unwrap_or_default().to_vec());
                    next = m.offset() + 1;
                }
            }
            c.commit_consumer_state(CommitMode::Sync)
                .expect("commit on the source");
            assert_eq!(
                support::data::committed_offset(bootstrap, group, TOPIC, p),
                Some(next),
                "{group} committed partition {p}"
            );
            out.entry(group.to_string())
                .or_default()
                .insert(p, (next, values));
        }
    }
    out
}

fn strait_config(dir: &Path, a: &str, b: &str) -> std::path::PathBuf {
    let config = dir.join("failover.toml");
    std::fs::write(
        &config,
        format!(
            "[clusters.a]\nbootstrap_servers = \"{a}\"\n[clusters.b]\nbootstrap_servers = \"{b}\"\n\
             [defaults]\nrefresh_topics_interval_secs = 1\ncheckpoint_interval_secs = 1\n\
             [[flows]]\nsource = \"a\"\ntarget = \"b\"\ntopics = [\"{TOPIC}\"]\ngroups = [\"fo-.*\"]\n"
        ),
    )
    .expect("config");
    config
}

/// `strait offsets --export` for `group`: partition -> offset on the remote topic.
fn strait_translation(config: &Path, group: &str) -> Option<Translated> {
    let out = Command::new(env!("CARGO_BIN_EXE_strait"))
        .args(["offsets", "--config"])
        .arg(config)
        .args([
            "--source", "a", "--target", "b", "--group", group, "--export",
        ])
        .output()
        .expect("run strait offsets");
    if !out.status.success() {
        return None;
    }
    let text = String::from_utf8_lossy(&out.stdout);
    let mut got = Translated::new();
    for l in text.lines() {
        let f: Vec<&str> = l.split(',').collect();
        if f.len() == 3 && f[0] == STRAIT_REMOTE {
            got.insert(f[1].parse().ok()?, f[2].parse().ok()?);
        }
    }
    Some(got)
}

/// MirrorMaker 2's translation of every group (RemoteClusterUtils.translateOffsets over its
/// checkpoints topic on the target): group -> partition -> offset on its remote topic.
fn mm2_translation(
    check: &support::java::JavaProgram,
    target: &str,
) -> BTreeMap<String, Translated> {
    let names: Vec<&str> = groups().iter().map(|(g, _)| *g).collect();
    let out = check.run(&["report", target, MM2_ALIAS, &names.join(","), ""], "");
    let mut got: BTreeMap<String, Translated> = BTreeMap::new();
    for l in out.lines() {
        let f: Vec<&str> = l.split('\t').collect();
        if f.len() >= 5 && f[0] == "offset" && f[2] == MM2_REMOTE {
            if let (Ok(p), Ok(o)) = (f[3].parse(), f[4].parse()) {
                got.entry(f[1].to_string()).or_default().insert(p, o);
            }
        }
    }
    got
}

fn complete(t: &BTreeMap<String, Translated>) -> bool {
    groups().iter().all(|(g, _)| {
        t.get(*g)
            .is_some_and(|m| (0..PARTITIONS).all(|p| m.contains_key(&p)))
    })
}

/// Asks `translate` until it answers for every group and partition twice in a row, the same,
/// `pause` apart; panics with `log()` after `timeout`.
fn settled(
    what: &str,
    pause: Duration,
    timeout: Duration,
    log: impl Fn() -> String,
    mut translate: impl FnMut() -> BTreeMap<String, Translated>,
) -> BTreeMap<String, Translated> {
    let deadline = Instant::now() + timeout;
    let mut previous = BTreeMap::new();
    loop {
        let now = translate();
        if complete(&now) && now == previous {
            return now;
        }
        assert!(
            Instant::now() < deadline,
            "{what}: translations did not settle within {timeout:?}; last {now:?}\n{}",
            log()
        );
        previous = now;
        std::thread::sleep(pause);
    }
}

fn wait_replicated(b: &str, remote: &str, log: impl Fn() -> String) {
    let deadline = Instant::now() + Duration::from_secs(90);
    loop {
        let w = watermarks(b, remote);
        if w.len() == PARTITIONS as usize && w.iter().all(|(_, h)| *h == PER_PARTITION as i64) {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "{remote} on the target: {w:?}, want {PER_PARTITION} records per partition\n{}",
            log()
        );
        std::thread::sleep(Duration::from_millis(300));
    }
}

/// The records of `remote` from each partition's translated offset to its end.
fn read_from(b: &str, remote: &str, from: &Translated) -> BTreeMap<i32, Vec<Vec<u8>>> {
    let c: BaseConsumer = ClientConfig::new()
        .set("bootstrap.servers", b)
        .set("broker.address.family", "v4")
        .set("group.id", topic_name("failover-reader"))
        .set("enable.auto.commit", "false")
        .create()
        .expect("reader");
    let mut tpl = TopicPartitionList::new();
    let mut out: BTreeMap<i32, Vec<Vec<u8>>> = BTreeMap::new();
    for (&p, &o) in from {
        out.insert(p, Vec::new());
        if o < PER_PARTITION as i64 {
            tpl.add_partition_offset(remote, p, Offset::Offset(o))
                .expect("tpl");
        }
    }
    if tpl.count() == 0 {
        return out;
    }
    c.assign(&tpl).expect("assign");
    let mut next = from.clone();
    let deadline = Instant::now() + Duration::from_secs(60);
    while next.values().any(|o| *o < PER_PARTITION as i64) {
        assert!(
            Instant::now() < deadline,
            "{remote}: read to {next:?}, want {PER_PARTITION} in every partition"
        );
        if let Some(m) = c.poll(Duration::from_millis(200)) {
            let m = m.expect("message");
            out.entry(m.partition())
                .or_default()
                .push(m.payload().unwrap_or_default().to_vec());
            next.insert(m.partition(), m.offset() + 1);
        }
    }
    out
}

/// One row of the table: records read again and records lost on one partition.
#[derive(Debug)]
struct Row {
    system: &'static str,
    group: String,
    partition: i32,
    committed: i64,
    translated: i64,
    reread: usize,
    lost: usize,
}

/// Compares what a consumer reads on the target from `translated` with what `group` consumed
/// on the source, record by record.
fn rows(
    system: &'static str,
    b: &str,
    remote: &str,
    translated: &BTreeMap<String, Translated>,
    consumed: &Consumed,
    source: &SourceLog,
) -> Vec<Row> {
    let mut out = Vec::new();
    for (group, parts) in consumed {
        let from = &translated[group];
        let read = read_from(b, remote, from);
        for (&p, (committed, values)) in parts {
            let all = &source[&p];
            let remaining: BTreeSet<&Vec<u8>> = all[*committed as usize..].iter().collect();
            let mut seen = BTreeSet::new();
            let mut reread = 0;
            for v in &read[&p] {
                assert!(
                    values.contains(v) || remaining.contains(v),
                    "{system} {group}: {remote}/{p} holds a record the source partition has not: {}",
                    String::from_utf8_lossy(v)
                );
                // Consumed on the source, or a second time on the target: read again.
                if values.contains(v) || !seen.insert(v) {
                    reread += 1;
                }
            }
            let lost = remaining.iter().filter(|v| !seen.contains(**v)).count();
            out.push(Row {
                system,
                group: group.clone(),
                partition: p,
                committed: *committed,
                translated: from[&p],
                reread,
                lost,
            });
        }
    }
    out
}

fn print_table(rows: &[Row]) {
    println!(
        "{:<14} {:<13} {:>9} {:>16} {:>17} {:>8} {:>5}",
        "system", "group", "partition", "committed source", "translated target", "re-read", "lost"
    );
    for r in rows {
        println!(
            "{:<14} {:<13} {:>9} {:>16} {:>17} {:>8} {:>5}",
            r.system, r.group, r.partition, r.committed, r.translated, r.reread, r.lost
        );
    }
    for system in ["strait", "MirrorMaker 2"] {
        let mine = rows.iter().filter(|r| r.system == system);
        let (reread, lost) = mine.fold((0, 0), |(a, b), r| (a + r.reread, b + r.lost));
        println!("{system}: {reread} records re-read, {lost} lost in total");
    }
}

#[test]
fn failover_accuracy_strait_and_mm2_side_by_side() {
    let a = start_kafka("fo_source");
    let b = start_kafka("fo_target");
    let (ab, bb) = (a.bootstrap(), b.bootstrap());
    let dir = std::env::temp_dir().join(topic_name("mm2-failover"));
    std::fs::create_dir_all(&dir).expect("dir");
    let source = produce(&ab);
    let consumed = consume_on_source(&ab);
    let check = support::java::compile("RemoteClusterCheck");

    // Both replicate the same source at once, each into a remote topic of its own.
    let config = strait_config(&dir, &ab, &bb);
    let strait_log = dir.join("strait.log");
    let strait_run = StraitRun::start_with(&config, &strait_log, "info");
    let mut opts = Mm2Options::new(MM2_ALIAS, &ab, "b", &bb);
    opts.name = "failover".into();
    opts.topics = TOPIC.into();
    opts.groups = "fo-.*".into();
    opts.sync_group_offsets = true;
    opts.dir = Some(dir.clone());
    let mm2 = Mm2Process::start(opts).unwrap_or_else(|e| panic!("{e}"));
    let mm2_log = mm2.log_path().to_path_buf();
    let show_mm2 = || strait::local_kafka::file_tail(&mm2_log, 6000);
    let show_strait = || std::fs::read_to_string(&strait_log).unwrap_or_default();

    wait_replicated(&bb, STRAIT_REMOTE, show_strait);
    wait_replicated(&bb, MM2_REMOTE, show_mm2);
    let strait_t = settled(
        "strait",
        Duration::from_secs(2),
        Duration::from_secs(60),
        show_strait,
        || {
            groups()
                .iter()
                .filter_map(|(g, _)| Some((g.to_string(), strait_translation(&config, g)?)))
                .collect()
        },
    );
    let mm2_t = settled(
        "MirrorMaker 2",
        Duration::from_secs(3),
        Duration::from_secs(90),
        show_mm2,
        || mm2_translation(&check, &bb),
    );
    drop(mm2);
    strait_run.stop();

    let mut table = rows("strait", &bb, STRAIT_REMOTE, &strait_t, &consumed, &source);
    table.extend(rows(
        "MirrorMaker 2",
        &bb,
        MM2_REMOTE,
        &mm2_t,
        &consumed,
        &source,
    ));
    print_table(&table);
    for r in &table {
        if r.system == "strait" {
            assert_eq!((r.reread, r.lost), (0, 0), "strait: {r:?}");
        } else {
            assert_eq!(r.lost, 0, "MirrorMaker 2 loses records: {r:?}");
        }
    }
    assert_eq!(table.len(), 2 * groups().len() * PARTITIONS as usize);
}
