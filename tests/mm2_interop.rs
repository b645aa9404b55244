//! Issue 19 §3: interoperability with MirrorMaker 2 proven by MirrorMaker 2's own code.
//!
//! `tests/java/RemoteClusterCheck.java`, compiled against Apache Kafka 4.1.1's jars, asks
//! `RemoteClusterUtils` (`translateOffsets`, `upstreamClusters`, `replicationHops`,
//! `checkpointTopics`, `heartbeatTopics`) about clusters strait replicated into, and decodes every
//! heartbeat, checkpoint and offset sync strait wrote with MM2's own `deserializeRecord`. Its
//! answers must equal strait's: `strait offsets`, the offset maps strait stored, and strait's
//! naming rules over the same topic list. In the other direction it writes checkpoints with MM2's
//! own serialisation (`Checkpoint.recordKey()` / `recordValue()`, as MM2's checkpoint task does),
//! and `strait offsets` must read them as MM2 does.

mod support;

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use rdkafka::consumer::{BaseConsumer, CommitMode, Consumer};
use rdkafka::producer::{BaseRecord, DefaultProducerContext, Producer, ThreadedProducer};
use rdkafka::{ClientConfig, Offset, TopicPartitionList};
use strait::client::{Cluster, ClusterConfig};
use strait::mm2::Checkpoint;
use strait::naming::ReplicationPolicy;
use strait::offsets::{OffsetMap, Translation};
use strait::replicate::{groups, store};
use support::data::{consume_all, create_topic, partition_count, topic_name, watermarks};
use support::java::{self, JavaProgram};
use support::kafka::{start_each, start_kafka, KafkaCluster};
use support::strait::wait_until;
use support::StraitRun;

const TOPIC: &str = "orders";
const REMOTE: &str = "a.orders";
const PARTITIONS: i32 = 3;
const GROUPS: [&str; 3] = ["caught-up", "far-behind", "mid-way"];
/// Aliases whose replication hops are asked (`nowhere` is no cluster at all).
const ALIASES: &str = "a,b,c,nowhere";

/// What `RemoteClusterCheck report` printed.
#[derive(Debug, Default)]
struct Report {
    upstream: BTreeSet<String>,
    hops: BTreeMap<String, i64>,
    checkpoint_topics: BTreeSet<String>,
    heartbeat_topics: BTreeSet<String>,
    /// (group, topic, partition) → (offset, metadata), from `translateOffsets`.
    offsets: BTreeMap<(String, String, i32), (i64, String)>,
    /// (heartbeats topic, source alias, target alias).
    heartbeats: BTreeSet<(String, String, String)>,
    /// (offset-syncs topic, topic, partition, upstream, downstream), every record.
    offset_syncs: Vec<(String, String, i32, i64, i64)>,
    /// (checkpoints topic, group, topic, partition, upstream, downstream), every record.
    checkpoints: Vec<(String, String, String, i32, i64, i64)>,
    undecodable: BTreeMap<String, u64>,
}

fn num<T: std::str::FromStr>(s: &str, line: &str) -> T {
    s.parse()
        .unwrap_or_else(|_| panic!("not a number {s:?} in {line:?}"))
}

fn parse_report(text: &str) -> Report {
    let mut r = Report::default();
    for line in text.lines() {
        let f: Vec<&str> = line.split('\t').collect();
        let s = |i: usize| f[i].to_string();
        match (f[0], f.len()) {
            ("upstream", 2) => {
                r.upstream.insert(s(1));
            }
            ("hops", 3) => {
                r.hops.insert(s(1), num(f[2], line));
            }
            ("checkpoints", 2) => {
                r.checkpoint_topics.insert(s(1));
            }
            ("heartbeats", 2) => {
                r.heartbeat_topics.insert(s(1));
            }
            ("offset", 6) => {
                r.offsets
                    .insert((s(1), s(2), num(f[3], line)), (num(f[4], line), s(5)));
            }
            ("heartbeat", 4) => {
                r.heartbeats.insert((s(1), s(2), s(3)));
            }
            ("offset-sync", 6) => r.offset_syncs.push((
                s(1),
                s(2),
                num(f[3], line),
                num(f[4], line),
                num(f[5], line),
            )),
            ("checkpoint", 7) => r.checkpoints.push((
                s(1),
                s(2),
                s(3),
                num(f[4], line),
                num(f[5], line),
                num(f[6], line),
            )),
            ("undecodable", 3) => {
                r.undecodable.insert(s(1), num(f[2], line));
            }
            _ => eprintln!("RemoteClusterCheck: {line}"), // the Java clients' own log lines
        }
    }
    r
}

fn report(java: &JavaProgram, bootstrap: &str, remote_alias: &str, groups: &[&str]) -> Report {
    report_with(java, bootstrap, remote_alias, groups, "")
}

/// strait's own answers to RemoteClusterUtils' topology questions: its naming rules
/// (`strait::naming`) over the topics the cluster lists.
struct Topology {
    upstream: BTreeSet<String>,
    hops: BTreeMap<String, i64>,
    checkpoint_topics: BTreeSet<String>,
    heartbeat_topics: BTreeSet<String>,
}

fn strait_topology(topics: &[String]) -> Topology {
    let policy = ReplicationPolicy::default();
    let names = strait::naming::Mm2Topics::default();
    let heartbeat_topics: BTreeSet<String> = topics
        .iter()
        .filter(|t| names.is_heartbeats_topic(&policy, t))
        .cloned()
        .collect();
    let upstream = heartbeat_topics
        .iter()
        .flat_map(|t| policy.source_chain(t))
        .collect();
    let hops = ALIASES
        .split(',')
        .map(|alias| {
            let min = heartbeat_topics
                .iter()
                .filter_map(|t| policy.hops_from(t, alias))
                .min();
            (alias.to_string(), min.map_or(-1, |h| h as i64))
        })
        .collect();
    let checkpoint_topics = topics
        .iter()
        .filter(|t| names.is_checkpoints_topic(t))
        .cloned()
        .collect();
    Topology {
        upstream,
        hops,
        checkpoint_topics,
        heartbeat_topics,
    }
}

/// What strait's library reads from a target cluster: its topics, the offset maps stored by
/// flows from `source` (by source topic and partition), and the checkpoints of groups from
/// `source`.
struct Stored {
    topics: Vec<String>,
    maps: HashMap<(String, i32), OffsetMap>,
    checkpoints: BTreeMap<(String, String, i32), Checkpoint>,
}

fn stored(alias: &str, bootstrap: &str, source: &str) -> Stored {
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    rt.block_on(async {
        let c = Cluster::connect(ClusterConfig::new(alias, bootstrap))
            .await
            .expect("connect");
        let meta = c.metadata(None).await.expect("metadata");
        Stored {
            topics: meta
                .topics
                .iter()
                .filter(|t| !t.is_internal)
                .map(|t| t.name.clone())
                .collect(),
            maps: store::read_progress(&c, source)
                .await
                .expect("progress records"),
            checkpoints: groups::read_checkpoints(
                &c,
                &strait::naming::Mm2Topics::default().checkpoints(source),
            )
            .await
            .expect("checkpoints"),
        }
    })
}

/// `strait offsets --export` for `group`: (topic, partition) → offset, `None` if it fails.
fn strait_offsets(
    config: &Path,
    source: &str,
    target: &str,
    group: &str,
) -> Option<BTreeMap<(String, i32), i64>> {
    let out = Command::new(env!("CARGO_BIN_EXE_strait"))
        .args(["offsets", "--config"])
        .arg(config)
        .args(["--source", source, "--target", target, "--group", group])
        .arg("--export")
        .output()
        .expect("run strait offsets");
    if !out.status.success() {
        return None;
    }
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let mut m = BTreeMap::new();
    for l in text.lines() {
        let f: Vec<&str> = l.rsplitn(3, ',').collect();
        assert_eq!(f.len(), 3, "strait offsets --export line {l:?}");
        m.insert((f[2].to_string(), num(f[1], l)), num(f[0], l));
    }
    Some(m)
}

/// Commits `offsets` (partition → offset) of [`TOPIC`] for `group` on the cluster, with
/// `metadata`, as a consumer outside the group does.
fn commit(bootstrap: &str, group: &str, offsets: &BTreeMap<i32, i64>, metadata: &str) {
    let c: BaseConsumer = ClientConfig::new()
        .set("bootstrap.servers", bootstrap)
        .set("broker.address.family", "v4")
        .set("group.id", group)
        .set("enable.auto.commit", "false")
        .create()
        .expect("consumer");
    let mut tpl = TopicPartitionList::new();
    for (p, o) in offsets {
        tpl.add_partition_offset(TOPIC, *p, Offset::Offset(*o))
            .expect("tpl");
        if let Some(mut e) = tpl.find_partition(TOPIC, *p) {
            e.set_metadata(metadata);
        }
    }
    c.commit(&tpl, CommitMode::Sync).expect("commit");
}

/// Writes [`TOPIC`] with a transactional producer: 30 transactions over every partition, of
/// uneven sizes, two of them aborted. The control records and the aborted records have
/// offsets on the source but none on the target, so the offset maps are not the identity.
/// Returns how many records were committed.
fn produce_transactions(bootstrap: &str) -> usize {
    let producer: ThreadedProducer<DefaultProducerContext> = ClientConfig::new()
        .set("bootstrap.servers", bootstrap)
        .set("broker.address.family", "v4")
        .set("transactional.id", topic_name("interop-txn"))
        .set("linger.ms", "5")
        .create()
        .expect("transactional producer");
    producer
        .init_transactions(Duration::from_secs(30))
        .expect("init transactions");
    let mut committed = 0;
    for txn in 0..30 {
        let aborted = txn == 10 || txn == 20;
        producer.begin_transaction().expect("begin");
        for p in 0..PARTITIONS {
            for i in 0..1 + (txn * 3 + p) % 9 {
                let value = format!("txn {txn} partition {p} record {i}");
                producer
                    .send(
                        BaseRecord::to(TOPIC)
                            .partition(p)
                            .key(&format!("k{i}"))
                            .payload(&value),
                    )
                    .map_err(|(e, _)| e)
                    .expect("send");
                committed += usize::from(!aborted);
            }
        }
        // In the log before the transaction ends (librdkafka drops what is still queued when
        // a transaction aborts).
        producer.flush(Duration::from_secs(30)).expect("flush");
        if aborted {
            producer
                .abort_transaction(Duration::from_secs(30))
                .expect("abort");
        } else {
            producer
                .commit_transaction(Duration::from_secs(30))
                .expect("commit");
        }
    }
    committed
}

/// Starts the clusters `a`, `b`, `c` side by side.
fn start_clusters() -> (KafkaCluster, KafkaCluster, KafkaCluster) {
    let [a, b, c] = start_each(["a", "b", "c"], start_kafka);
    (a, b, c)
}

/// The offsets each group commits on `a`: caught up (the log end), far behind (the first
/// records), and mid-way at a control record, inside an aborted transaction and at a record.
fn group_offsets(
    ends: &[(i64, i64)],
    data: &BTreeMap<i32, Vec<i64>>,
) -> BTreeMap<&'static str, BTreeMap<i32, i64>> {
    let mut out = BTreeMap::new();
    out.insert(
        "caught-up",
        (0..PARTITIONS).map(|p| (p, ends[p as usize].1)).collect(),
    );
    out.insert("far-behind", BTreeMap::from([(0, 0), (1, 1), (2, 5)]));
    let mut mid = BTreeMap::new();
    for p in 0..PARTITIONS {
        let end = ends[p as usize].1;
        let records: BTreeSet<i64> = data[&p].iter().copied().collect();
        let missing: Vec<i64> = (0..end).filter(|o| !records.contains(o)).collect();
        let o = match p {
            // A control record (no record on the target) in the middle.
            0 => *missing
                .iter()
                .find(|o| **o >= end / 2)
                .expect("a control record"),
            // Inside an aborted transaction: two offsets in a row with no committed record.
            1 => *missing
                .iter()
                .find(|o| **o > 0 && missing.contains(&(**o - 1)))
                .expect("an aborted transaction"),
            // A record.
            _ => *records.iter().find(|o| **o >= end / 2).expect("a record"),
        };
        mid.insert(p, o);
    }
    out.insert("mid-way", mid);
    out
}

/// The target offset a committed source offset must translate to, from the records alone: the
/// offset on the target of the first committed record at or after it (the target's log end if
/// there is none).
fn expected_translation(
    committed: i64,
    source: &[(i64, Vec<u8>)],
    target: &[(i64, Vec<u8>)],
    target_end: i64,
) -> i64 {
    match source.iter().position(|(o, _)| *o >= committed) {
        None => target_end,
        Some(i) => {
            let (t, v) = &target[i];
            assert_eq!(
                v, &source[i].1,
                "record {i} differs between source and target"
            );
            *t
        }
    }
}

#[test]
fn mirrormaker2_code_reads_what_strait_writes_and_strait_reads_what_it_writes() {
    let java = java::compile("RemoteClusterCheck");
    let (a, b, c) = start_clusters();
    create_topic(&a.bootstrap(), TOPIC, PARTITIONS);
    let committed_records = produce_transactions(&a.bootstrap());
    let ends = watermarks(&a.bootstrap(), TOPIC);
    let on_a = consume_all(
        &a.bootstrap(),
        TOPIC,
        committed_records,
        Duration::from_secs(30),
    );
    assert_eq!(on_a.len(), committed_records, "committed records on a");
    let mut data: BTreeMap<i32, Vec<i64>> = BTreeMap::new();
    let mut source: BTreeMap<i32, Vec<(i64, Vec<u8>)>> = BTreeMap::new();
    for r in &on_a {
        data.entry(r.partition).or_default().push(r.offset);
        source
            .entry(r.partition)
            .or_default()
            .push((r.offset, r.value.clone().unwrap_or_default()));
    }
    let commits = group_offsets(&ends, &data);
    for (group, offsets) in &commits {
        commit(&a.bootstrap(), group, offsets, &format!("{group} on a"));
    }

    let dir = std::env::temp_dir().join(topic_name("mm2-interop"));
    std::fs::create_dir_all(&dir).expect("dir");
    let config = dir.join("chain.toml");
    std::fs::write(
        &config,
        format!(
            "[clusters.a]\nbootstrap_servers = \"{}\"\n[clusters.b]\nbootstrap_servers = \"{}\"\n\
             [clusters.c]\nbootstrap_servers = \"{}\"\n\
             [defaults]\nrefresh_topics_interval_secs = 1\ncheckpoint_interval_secs = 1\n\
             [[flows]]\nsource = \"a\"\ntarget = \"b\"\ntopics = [\"orders\"]\ngroups = [\".*\"]\n\
             [[flows]]\nsource = \"b\"\ntarget = \"c\"\ntopics = [\"a\\\\.orders\"]\ngroups = [\".*\"]\n",
            a.bootstrap(),
            b.bootstrap(),
            c.bootstrap()
        ),
    )
    .expect("config");
    let run = StraitRun::start_with(&config, &dir.join("run.log"), "info");

    // Replication done and every group checkpointed, the caught-up one at the target's end.
    wait_until(
        "a.orders replicated and every group checkpointed on b",
        Duration::from_secs(90),
        &run,
        || {
            let copied: i64 = watermarks(&b.bootstrap(), REMOTE)
                .iter()
                .map(|(_, h)| h)
                .sum();
            copied == committed_records as i64
                && GROUPS.iter().all(|g| {
                    strait_offsets(&config, "a", "b", g).is_some_and(|m| {
                        m.len() == PARTITIONS as usize
                            && (*g != "caught-up"
                                || m.iter().all(|((_, p), o)| {
                                    watermarks(&b.bootstrap(), REMOTE)[*p as usize].1 == *o
                                }))
                    })
                })
        },
    );
    wait_until(
        "the heartbeats of a and b replicated to c",
        Duration::from_secs(60),
        &run,
        || {
            partition_count(&c.bootstrap(), "b.a.heartbeats") > 0
                && partition_count(&c.bootstrap(), "b.heartbeats") > 0
        },
    );

    // --- b, one hop from a: MirrorMaker 2's answers against strait's ---
    let on_b = report(&java, &b.bootstrap(), "a", &GROUPS);
    let lib = stored("b", &b.bootstrap(), "a");
    check_topology(&on_b, &lib.topics, "b");
    assert_eq!(on_b.upstream, BTreeSet::from(["a".to_string()]));
    assert_eq!(on_b.hops["a"], 1);
    assert_eq!(on_b.hops["c"], -1);
    assert_eq!(on_b.hops["nowhere"], -1);
    assert_eq!(
        on_b.checkpoint_topics,
        BTreeSet::from(["a.checkpoints.internal".to_string()])
    );
    let target_records = consume_all(
        &b.bootstrap(),
        REMOTE,
        committed_records,
        Duration::from_secs(30),
    );
    let mut target: BTreeMap<i32, Vec<(i64, Vec<u8>)>> = BTreeMap::new();
    for r in &target_records {
        target
            .entry(r.partition)
            .or_default()
            .push((r.offset, r.value.clone().unwrap_or_default()));
    }
    let b_ends = watermarks(&b.bootstrap(), REMOTE);
    for (group, offsets) in &commits {
        let strait_view = strait_offsets(&config, "a", "b", group).expect("strait offsets");
        for (p, committed) in offsets {
            let key = (group.to_string(), REMOTE.to_string(), *p);
            let (mm2, metadata) = on_b
                .offsets
                .get(&key)
                .unwrap_or_else(|| panic!("translateOffsets gave nothing for {key:?}: {on_b:?}"));
            let strait = strait_view[&(REMOTE.to_string(), *p)];
            let map = &lib.maps[&(TOPIC.to_string(), *p)];
            let expected =
                expected_translation(*committed, &source[p], &target[p], b_ends[*p as usize].1);
            assert_eq!(
                (*mm2, strait, map.to_target(*committed)),
                (expected, expected, Translation::Exact(expected)),
                "group {group}, partition {p}, committed {committed} on a: translateOffsets (MM2), strait offsets, the offset map, the records"
            );
            assert_eq!(metadata, &format!("{group} on a"));
            assert_eq!(lib.checkpoints[&key].metadata, *metadata);
        }
    }
    assert!(
        commits["mid-way"].iter().any(
            |(p, o)| lib.maps[&(TOPIC.to_string(), *p)].to_target(*o) != Translation::Exact(*o)
        ),
        "the maps are not the identity where the groups committed"
    );
    check_records(&on_b, &lib.maps);
    assert_eq!(
        on_b.heartbeats,
        BTreeSet::from([
            ("a.heartbeats".into(), "b".into(), "a".into()),
            ("heartbeats".into(), "a".into(), "b".into()),
            ("heartbeats".into(), "c".into(), "b".into()),
        ]),
        "heartbeats on b, decoded by MirrorMaker 2"
    );

    // A group that moves on: MirrorMaker 2 and strait both take the newest checkpoint.
    let moved = BTreeMap::from([(2, ends[2].1 - 3)]);
    commit(&a.bootstrap(), "mid-way", &moved, "moved");
    let want = expected_translation(ends[2].1 - 3, &source[&2], &target[&2], b_ends[2].1);
    wait_until(
        "the new checkpoint of mid-way",
        Duration::from_secs(30),
        &run,
        || {
            strait_offsets(&config, "a", "b", "mid-way")
                .is_some_and(|m| m[&(REMOTE.to_string(), 2)] == want)
        },
    );
    let again = report(&java, &b.bootstrap(), "a", &["mid-way"]);
    assert_eq!(
        again.offsets[&("mid-way".to_string(), REMOTE.to_string(), 2)],
        (want, "moved".to_string())
    );

    // --- c, two hops from a through b ---
    let on_c = report(&java, &c.bootstrap(), "b", &[]);
    let lib_c = stored("c", &c.bootstrap(), "b");
    check_topology(&on_c, &lib_c.topics, "c");
    assert_eq!(
        on_c.upstream,
        BTreeSet::from(["a".to_string(), "b".to_string()])
    );
    assert_eq!((on_c.hops["a"], on_c.hops["b"], on_c.hops["c"]), (2, 1, -1));
    check_records(&on_c, &lib_c.maps);
    assert_eq!(
        on_c.heartbeats,
        BTreeSet::from([
            ("b.a.heartbeats".into(), "b".into(), "a".into()),
            ("b.heartbeats".into(), "a".into(), "b".into()),
            ("b.heartbeats".into(), "c".into(), "b".into()),
            ("heartbeats".into(), "b".into(), "c".into()),
        ]),
        "heartbeats on c, decoded by MirrorMaker 2"
    );

    // --- the other direction: checkpoints written by MirrorMaker 2's code, read by strait ---
    mm2_checkpoints_read_by_strait(&java, &config, &c);
    drop(run);
}

/// MirrorMaker 2's topology answers equal strait's over the same topic list.
fn check_topology(r: &Report, topics: &[String], cluster: &str) {
    let ours = strait_topology(topics);
    assert_eq!(r.upstream, ours.upstream, "upstreamClusters on {cluster}");
    assert_eq!(r.hops, ours.hops, "replicationHops on {cluster}");
    assert_eq!(
        r.checkpoint_topics, ours.checkpoint_topics,
        "checkpointTopics on {cluster}"
    );
    assert_eq!(
        r.heartbeat_topics, ours.heartbeat_topics,
        "heartbeatTopics on {cluster}"
    );
}

/// Every heartbeat, offset sync and checkpoint strait wrote decodes with MirrorMaker 2's code,
/// and every offset sync and checkpoint agrees with the offset map strait stored.
fn check_records(r: &Report, maps: &HashMap<(String, i32), OffsetMap>) {
    assert!(
        r.undecodable.values().all(|n| *n == 0),
        "records MirrorMaker 2 cannot decode: {:?}",
        r.undecodable
    );
    assert!(!r.offset_syncs.is_empty(), "offset syncs: {r:?}");
    for (_, topic, p, up, down) in &r.offset_syncs {
        let map = &maps[&(topic.clone(), *p)];
        assert_eq!(
            map.to_target(*up),
            Translation::Exact(*down),
            "offset sync {topic}/{p} {up} -> {down}"
        );
    }
    eprintln!(
        "MirrorMaker 2 decoded {} offset syncs, {} checkpoints and heartbeats {:?}",
        r.offset_syncs.len(),
        r.checkpoints.len(),
        r.heartbeats
    );
    let policy = ReplicationPolicy::default();
    for (_, group, topic, p, up, down) in &r.checkpoints {
        let upstream = policy.upstream_topic(topic).expect("a remote topic");
        let map = &maps[&(upstream, *p)];
        assert_eq!(
            map.to_target(*up),
            Translation::Exact(*down),
            "checkpoint of {group} on {topic}/{p} {up} -> {down}"
        );
    }
}

/// Checkpoints as MirrorMaker 2 writes them for a flow `a -> c` (its own serialisation, into
/// `a.checkpoints.internal` on `c`), some overwritten: `strait offsets`, strait's checkpoint
/// reader and MirrorMaker 2's `translateOffsets` all read the newest of each.
fn mm2_checkpoints_read_by_strait(java: &JavaProgram, config: &Path, c: &KafkaCluster) {
    let written: Vec<(&str, &str, i32, i64, i64, &str)> = vec![
        ("mm2.caught-up", "a.orders", 0, 10, 8, ""),
        ("mm2.caught-up", "a.orders", 1, 4, 4, ""),
        (
            "mm2 far behind",
            "a.orders",
            0,
            1 << 40,
            (1 << 40) - 7,
            "meta data",
        ),
        ("grüppe-ü", "a.payments-2024", 2, 0, 0, "ünïcödé"),
        // Overwrites the first: the newest counts.
        ("mm2.caught-up", "a.orders", 0, 20, 17, "second"),
    ];
    let input: String = written
        .iter()
        .map(|(g, t, p, u, d, m)| format!("{g}\t{t}\t{p}\t{u}\t{d}\t{m}\n"))
        .collect();
    let out = java.run(&["write-checkpoints", &c.bootstrap(), "a"], &input);
    assert!(out.contains(&format!("wrote\t{}", written.len())), "{out}");
    let mut newest: BTreeMap<(String, String, i32), (i64, i64, String)> = BTreeMap::new();
    for (g, t, p, u, d, m) in &written {
        newest.insert((g.to_string(), t.to_string(), *p), (*u, *d, m.to_string()));
    }
    let group_names: BTreeSet<&str> = written.iter().map(|w| w.0).collect();
    let groups: Vec<&str> = group_names.iter().copied().collect();
    let mm2 = report(java, &c.bootstrap(), "a", &groups);
    assert!(mm2.checkpoint_topics.contains("a.checkpoints.internal"));
    let lib = stored("c", &c.bootstrap(), "a");
    let read: BTreeMap<(String, String, i32), (i64, i64, String)> = lib
        .checkpoints
        .into_iter()
        .map(|(k, cp)| (k, (cp.upstream_offset, cp.downstream_offset, cp.metadata)))
        .collect();
    assert_eq!(read, newest, "strait's checkpoint reader");
    for group in &groups {
        let want: BTreeMap<(String, i32), i64> = newest
            .iter()
            .filter(|((g, _, _), _)| g == group)
            .map(|((_, t, p), (_, d, _))| ((t.clone(), *p), *d))
            .collect();
        let strait = strait_offsets(config, "a", "c", group).expect("strait offsets");
        assert_eq!(strait, want, "strait offsets --group {group:?}");
        let theirs: BTreeMap<(String, i32), i64> = mm2
            .offsets
            .iter()
            .filter(|((g, _, _), _)| g == group)
            .map(|((_, t, p), (o, _))| ((t.clone(), *p), *o))
            .collect();
        assert_eq!(theirs, want, "translateOffsets --group {group:?}");
    }
}

/// Runs `RemoteClusterCheck report` with MirrorMaker 2 client settings `props`
/// (`key=value,...`).
fn report_with(
    java: &JavaProgram,
    bootstrap: &str,
    remote_alias: &str,
    groups: &[&str],
    props: &str,
) -> Report {
    let out = java.run(
        &[
            "report",
            bootstrap,
            remote_alias,
            &groups.join(","),
            ALIASES,
            props,
        ],
        "",
    );
    parse_report(&out)
}

/// KIP-690: under a custom separator MirrorMaker 2 (3.0 and later) names its checkpoints and
/// offset-syncs topics with it (`a_checkpoints_internal`, `mm2-offset-syncs_b_internal`).
/// strait writes them there, and MirrorMaker 2's own client, given the same separator, finds
/// the upstream cluster, decodes every record and translates a group's offsets as strait does.
#[test]
fn mirrormaker2_code_reads_strait_under_a_custom_separator() {
    let java = java::compile("RemoteClusterCheck");
    let [a, b] = start_each(["a", "b"], start_kafka);
    create_topic(&a.bootstrap(), TOPIC, PARTITIONS);
    let records: Vec<support::TestRecord> = (0..300)
        .map(|i| support::TestRecord {
            value: Some(format!("order {i}").into_bytes()),
            partition: Some(i % PARTITIONS),
            ..support::TestRecord::kv(format!("k{i}"), "")
        })
        .collect();
    support::produce_records(&a.bootstrap(), TOPIC, &records, support::Codec::None);
    let committed: BTreeMap<i32, i64> = (0..PARTITIONS).map(|p| (p, 10 + 7 * p as i64)).collect();
    commit(&a.bootstrap(), "sep.group", &committed, "on a");

    let dir = std::env::temp_dir().join(topic_name("mm2-separator"));
    std::fs::create_dir_all(&dir).expect("dir");
    let config = dir.join("sep.toml");
    std::fs::write(
        &config,
        format!(
            "[clusters.a]\nbootstrap_servers = \"{}\"\n[clusters.b]\nbootstrap_servers = \"{}\"\n\
             [[flows]]\nsource = \"a\"\ntarget = \"b\"\ntopics = [\"orders\"]\nseparator = \"_\"\n\
             refresh_topics_interval_secs = 1\nrefresh_groups_interval_secs = 1\ncheckpoint_interval_secs = 1\n",
            a.bootstrap(),
            b.bootstrap()
        ),
    )
    .expect("config");
    let run = StraitRun::start_with(&config, &dir.join("run.log"), "info");
    let want: BTreeMap<(String, i32), i64> = committed
        .iter()
        .map(|(p, o)| (("a_orders".to_string(), *p), *o))
        .collect();
    wait_until(
        "sep.group translated and a's heartbeats on b",
        Duration::from_secs(90),
        &run,
        || {
            strait_offsets(&config, "a", "b", "sep.group").as_ref() == Some(&want)
                && partition_count(&b.bootstrap(), "a_heartbeats") > 0
        },
    );
    let r = report_with(
        &java,
        &b.bootstrap(),
        "a",
        &["sep.group"],
        "replication.policy.separator=_",
    );
    assert_eq!(r.upstream, BTreeSet::from(["a".to_string()]));
    assert_eq!(r.hops["a"], 1);
    assert_eq!(
        r.checkpoint_topics,
        BTreeSet::from(["a_checkpoints_internal".to_string()])
    );
    assert!(r.heartbeat_topics.contains("a_heartbeats"), "{r:?}");
    let translated: BTreeMap<(String, i32), i64> = r
        .offsets
        .iter()
        .filter(|((g, _, _), _)| g == "sep.group")
        .map(|((_, t, p), (o, _))| ((t.clone(), *p), *o))
        .collect();
    assert_eq!(translated, want, "MirrorMaker 2's translateOffsets");
    assert!(r.offset_syncs.iter().any(|s| s.1 == TOPIC), "{r:?}");
    assert!(
        r.offset_syncs
            .iter()
            .all(|s| s.0 == "mm2-offset-syncs_b_internal" && (s.1 == TOPIC || s.1 == "heartbeats")),
        "{:?}",
        r.offset_syncs
    );
    assert!(
        r.checkpoints.iter().any(|c| c.1 == "sep.group"),
        "{:?}",
        r.checkpoints
    );
    assert!(
        r.undecodable.values().all(|n| *n == 0),
        "{:?}",
        r.undecodable
    );
    let consumer: BaseConsumer = ClientConfig::new()
        .set("bootstrap.servers", b.bootstrap())
        .set("broker.address.family", "v4")
        .create()
        .expect("consumer");
    let topics_b: Vec<String> = consumer
        .fetch_metadata(None, Duration::from_secs(10))
        .expect("metadata")
        .topics()
        .iter()
        .map(|t| t.name().to_string())
        .collect();
    assert!(
        !topics_b
            .iter()
            .any(|t| t.ends_with(".checkpoints.internal") || t.starts_with("mm2-offset-syncs.")),
        "a name with `.` where MirrorMaker 2 uses `_`: {topics_b:?}"
    );
}
