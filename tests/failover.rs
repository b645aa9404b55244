//! Issue 4 acceptance: lab 6, consumer failover and failback with no lost and no re-read record.

mod support;

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use rdkafka::consumer::{BaseConsumer, CommitMode, Consumer};
use rdkafka::{ClientConfig, Message, Offset, TopicPartitionList};
use support::{
    consume_all, create_topic, produce_records, topic_name, Broker, Codec, StraitRun, TestRecord,
};

const TOPIC: &str = "global_iot";
const REMOTE: &str = "cluster_a.global_iot";
const PARTITIONS: i32 = 5;

fn strait(args: &[&str], config: &Path) -> (bool, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_strait"))
        .args(&args[..1])
        .arg("--config")
        .arg(config)
        .args(&args[1..])
        .output()
        .expect("run strait");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// A consumer of `group` that is assigned every partition of `topic` from the group's
/// committed offsets (`reset` where there are none) and never joins the group.
fn consumer(bootstrap: &str, group: &str, topic: &str, reset: &str) -> BaseConsumer {
    let c: BaseConsumer = ClientConfig::new()
        .set("bootstrap.servers", bootstrap)
        .set("broker.address.family", "v4")
        .set("group.id", group)
        .set("enable.auto.commit", "false")
        .set("auto.offset.reset", reset)
        // Small fetches, so a consumer's records come from every partition in turn.
        .set("max.partition.fetch.bytes", "1024")
        .create()
        .expect("consumer");
    let mut tpl = TopicPartitionList::new();
    for p in 0..PARTITIONS {
        tpl.add_partition_offset(topic, p, Offset::Stored)
            .expect("tpl");
    }
    c.assign(&tpl).expect("assign");
    c
}

/// Reads `n` records; returns (partition, offset, value) in arrival order.
fn read(c: &BaseConsumer, n: usize) -> Vec<(i32, i64, Vec<u8>)> {
    let mut out = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(60);
    while out.len() < n && Instant::now() < deadline {
        if let Some(m) = c.poll(Duration::from_millis(200)) {
            let m = m.expect("message");
            out.push((
                m.partition(),
                m.offset(),
                m.payload().unwrap_or_default().to_vec(),
            ));
        }
    }
    assert_eq!(out.len(), n, "read {n} records");
    out
}

/// The first record of every partition in `want` (other partitions may stay silent).
fn first_per_partition(c: &BaseConsumer, want: &[i32]) -> BTreeMap<i32, (i64, Vec<u8>)> {
    let mut got = BTreeMap::new();
    let deadline = Instant::now() + Duration::from_secs(60);
    while want.iter().any(|p| !got.contains_key(p)) && Instant::now() < deadline {
        if let Some(m) = c.poll(Duration::from_millis(200)) {
            let m = m.expect("message");
            got.entry(m.partition())
                .or_insert((m.offset(), m.payload().unwrap_or_default().to_vec()));
        }
    }
    got
}

/// Next record each partition would give after `consumed` (partition -> last offset read).
fn last_offsets(consumed: &[(i32, i64, Vec<u8>)]) -> BTreeMap<i32, i64> {
    let mut last = BTreeMap::new();
    for (p, o, _) in consumed {
        last.insert(*p, *o);
    }
    last
}

fn wait_until(what: &str, timeout: Duration, log: &Path, mut cond: impl FnMut() -> bool) {
    let deadline = Instant::now() + timeout;
    while !cond() {
        assert!(
            Instant::now() < deadline,
            "timed out waiting for {what}\n{}",
            std::fs::read_to_string(log).unwrap_or_default()
        );
        std::thread::sleep(Duration::from_millis(300));
    }
}

fn export(
    config: &Path,
    source: &str,
    target: &str,
    group: &str,
) -> Option<BTreeMap<(String, i32), i64>> {
    let (ok, out, _) = strait(
        &[
            "offsets", "--source", source, "--target", target, "--group", group, "--export",
        ],
        config,
    );
    if !ok {
        return None;
    }
    Some(
        out.lines()
            .filter_map(|l| {
                let mut f = l.split(',');
                Some((
                    (f.next()?.to_string(), f.next()?.parse().ok()?),
                    f.next()?.parse().ok()?,
                ))
            })
            .collect(),
    )
}

/// Applies `strait offsets --export`'s CSV for `group` with Apache Kafka's own
/// `kafka-consumer-groups --reset-offsets --from-file FILE --execute` (the tool's class from
/// `kafka-tools`, in the jars the test brokers run from).
fn apply(bootstrap: &str, group: &str, offsets: &BTreeMap<(String, i32), i64>) {
    let libs = strait::local_kafka::kafka_libs()
        .unwrap_or_else(|e| panic!("Apache Kafka's jars for kafka-consumer-groups: {e}"));
    reset_with_kafka_tool(&libs, bootstrap, group, offsets);
}

fn reset_with_kafka_tool(
    libs: &Path,
    bootstrap: &str,
    group: &str,
    offsets: &BTreeMap<(String, i32), i64>,
) {
    let file = std::env::temp_dir()
        .join(topic_name("reset"))
        .with_extension("csv");
    let csv: String = offsets
        .iter()
        .map(|((t, p), o)| format!("{t},{p},{o}\n"))
        .collect();
    std::fs::write(&file, csv).expect("write reset file");
    let out = Command::new("java")
        .arg("-cp")
        .arg(format!("{}/*", libs.display()))
        .arg("org.apache.kafka.tools.consumer.group.ConsumerGroupCommand")
        .args(["--bootstrap-server", bootstrap, "--group", group])
        .args(["--reset-offsets", "--from-file"])
        .arg(&file)
        .arg("--execute")
        .output()
        .expect("run kafka-consumer-groups");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "kafka-consumer-groups failed: {text}");
    for ((t, p), o) in offsets {
        let row = text
            .lines()
            .find(|l| {
                let f: Vec<&str> = l.split_whitespace().collect();
                f.len() >= 4 && f[1] == t && f[2] == p.to_string()
            })
            .unwrap_or_else(|| panic!("no row for {t}/{p} in: {text}"));
        assert!(
            row.split_whitespace().nth(3) == Some(&o.to_string()),
            "{row}"
        );
    }
}

#[test]
fn lab6_failover_and_failback_resume_exactly() {
    let (mut a, _proxy_a) = Broker::start_behind_proxy("cluster_a");
    let (b, _proxy_b) = Broker::start_behind_proxy("cluster_b");
    let dir = std::env::temp_dir().join(topic_name("lab6"));
    std::fs::create_dir_all(&dir).expect("dir");
    let config = dir.join("lab.toml");
    std::fs::write(
        &config,
        format!(
            "[clusters.cluster_a]\nbootstrap_servers = \"{}\"\n[clusters.cluster_b]\nbootstrap_servers = \"{}\"\n\
             [defaults]\nrefresh_topics_interval_secs = 1\ncheckpoint_interval_secs = 1\n\
             [[flows]]\nsource = \"cluster_a\"\ntarget = \"cluster_b\"\ntopics = [\"global_iot\"]\ngroups = [\".*\"]\n\
             [[flows]]\nsource = \"cluster_b\"\ntarget = \"cluster_a\"\ntopics = [\"cluster_a\\\\.global_iot\"]\ngroups = [\".*\"]\n",
            a.bootstrap(),
            b.bootstrap()
        ),
    )
    .expect("config");
    let n = 110_000;
    create_topic(&a.bootstrap(), TOPIC, PARTITIONS);
    let records: Vec<TestRecord> = (0..n)
        .map(|i| TestRecord {
            value: Some(format!("reading {i}").into_bytes()),
            partition: Some((i % PARTITIONS as usize) as i32),
            ..TestRecord::kv(format!("sensor-{}", i % 13), "")
        })
        .collect();
    produce_records(&a.bootstrap(), TOPIC, &records, Codec::Lz4);
    let on_a: BTreeMap<(i32, i64), Vec<u8>> =
        consume_all(&a.bootstrap(), TOPIC, n, Duration::from_secs(120))
            .into_iter()
            .map(|r| ((r.partition, r.offset), r.value.unwrap_or_default()))
            .collect();

    // Consumers read part of global_iot on A and commit.
    let mut consumed = BTreeMap::new();
    for (group, count) in [
        ("good.failover", 600),
        ("bad.failover", 600),
        ("cmd.failover", 400),
        ("lagging", 2),
    ] {
        let mut last = BTreeMap::new();
        for p in 0..PARTITIONS {
            // One partition at a time, a different amount in each.
            let c: BaseConsumer = ClientConfig::new()
                .set("bootstrap.servers", a.bootstrap())
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
            let got = read(&c, count + 7 * p as usize);
            c.commit_consumer_state(CommitMode::Sync)
                .expect("commit on A");
            last.extend(last_offsets(&got));
        }
        consumed.insert(group, last);
    }
    let log = dir.join("run.log");
    let _run = StraitRun::start_with(&config, &log, "info,strait::replicate::flow=debug");
    let groups = ["good.failover", "bad.failover", "cmd.failover", "lagging"];
    wait_until(
        "checkpoints of every group on cluster_b",
        Duration::from_secs(120),
        &log,
        || {
            groups.iter().all(|g| {
                export(&config, "cluster_a", "cluster_b", g).map(|m| m.len())
                    == Some(PARTITIONS as usize)
            })
        },
    );

    // The group far behind translates exactly (fresh replication: same offsets on both sides).
    let lag = export(&config, "cluster_a", "cluster_b", "lagging").expect("export");
    for (p, last) in &consumed["lagging"] {
        assert_eq!(
            lag[&(REMOTE.to_string(), *p)],
            last + 1,
            "partition {p}, {} records behind",
            n as i64 / 5 - last
        );
    }

    // bad.failover moves to B without translation: it starts over (re-reads).
    let bad = consumer(&b.bootstrap(), "bad.failover", REMOTE, "earliest");
    let parts = |g: &str| -> Vec<i32> { consumed[g].keys().copied().collect() };
    assert!(
        parts("good.failover").len() >= 3,
        "consumed from several partitions: {:?}",
        consumed["good.failover"]
    );
    let first = first_per_partition(&bad, &parts("bad.failover"));
    assert!(
        first
            .iter()
            .any(|(p, (o, _))| *o <= consumed["bad.failover"][p]),
        "re-reads: {first:?}"
    );
    drop(bad);

    // good.failover: `strait offsets --export`, applied with client calls.
    let csv = export(&config, "cluster_a", "cluster_b", "good.failover").expect("export");
    apply(&b.bootstrap(), "good.failover", &csv);
    let expect_next = |group: &str| -> BTreeMap<i32, Vec<u8>> {
        consumed[group]
            .iter()
            .map(|(p, last)| (*p, on_a[&(*p, last + 1)].clone()))
            .collect()
    };
    let good = consumer(&b.bootstrap(), "good.failover", REMOTE, "latest");
    let first = first_per_partition(&good, &parts("good.failover"));
    for (p, v) in expect_next("good.failover") {
        assert_eq!(
            first[&p].1, v,
            "good.failover partition {p}: exactly the next record"
        );
    }
    // It consumes more on B and commits there.
    let more = read(&good, 1_000);
    good.commit_consumer_state(CommitMode::Sync)
        .expect("commit on B");
    let _ = more;
    // What the group committed on B (the consumer polled past the records checked above).
    let mut last_b = BTreeMap::new();
    for e in good
        .committed(Duration::from_secs(10))
        .expect("committed on B")
        .elements()
    {
        if let Offset::Offset(o) = e.offset() {
            last_b.insert(e.partition(), o - 1);
        }
    }
    assert!(!last_b.is_empty());
    drop(good);

    // cmd.failover: `strait failover`.
    let (ok, table, err) = strait(
        &[
            "failover",
            "--source",
            "cluster_a",
            "--target",
            "cluster_b",
            "--group",
            "cmd.failover",
        ],
        &config,
    );
    assert!(ok, "{err}");
    assert!(
        table.contains("NEW-OFFSET") && table.contains(REMOTE),
        "{table}"
    );
    let cmd = consumer(&b.bootstrap(), "cmd.failover", REMOTE, "latest");
    let first = first_per_partition(&cmd, &parts("cmd.failover"));
    for (p, v) in expect_next("cmd.failover") {
        assert_eq!(
            first[&p].1, v,
            "cmd.failover partition {p}: exactly the next record"
        );
    }
    // It consumes more on B too.
    read(&cmd, 500);
    cmd.commit_consumer_state(CommitMode::Sync)
        .expect("commit on B");
    let mut cmd_b = BTreeMap::new();
    for e in cmd
        .committed(Duration::from_secs(10))
        .expect("committed on B")
        .elements()
    {
        if let Offset::Offset(o) = e.offset() {
            cmd_b.insert(e.partition(), o - 1);
        }
    }
    drop(cmd);

    // Failback: good.failover goes home to A, resuming after what it read on B.
    wait_until(
        "failback checkpoints on cluster_a",
        Duration::from_secs(60),
        &log,
        || {
            export(&config, "cluster_b", "cluster_a", "good.failover")
                .map(|m| {
                    last_b
                        .iter()
                        .all(|(p, o)| m.get(&(TOPIC.to_string(), *p)) == Some(&(o + 1)))
                })
                .unwrap_or(false)
        },
    );
    let (ok, table, err) = strait(
        &[
            "failover",
            "--source",
            "cluster_b",
            "--target",
            "cluster_a",
            "--group",
            "good.failover",
        ],
        &config,
    );
    assert!(
        ok,
        "{err}\n{}",
        std::fs::read_to_string(&log).unwrap_or_default()
    );
    assert!(table.contains(TOPIC), "{table}");
    let home = consumer(&a.bootstrap(), "good.failover", TOPIC, "latest");
    // Partitions the group read to the end on B have no next record to compare.
    let per_partition = (n / PARTITIONS as usize) as i64;
    let homeward: Vec<i32> = last_b
        .iter()
        .filter(|(_, l)| **l + 1 < per_partition)
        .map(|(p, _)| *p)
        .collect();
    assert!(homeward.len() >= 3, "{last_b:?}");
    let first = first_per_partition(&home, &homeward);
    for p in &homeward {
        assert_eq!(
            first[p].1,
            on_a[&(*p, last_b[p] + 1)],
            "failback partition {p}: exactly the next record"
        );
    }
    drop(home);

    // cmd.failover goes home too, with exported offsets applied by a client.
    wait_until(
        "failback checkpoints of cmd.failover",
        Duration::from_secs(60),
        &log,
        || {
            export(&config, "cluster_b", "cluster_a", "cmd.failover")
                .map(|m| {
                    cmd_b
                        .iter()
                        .all(|(p, o)| m.get(&(TOPIC.to_string(), *p)) == Some(&(o + 1)))
                })
                .unwrap_or(false)
        },
    );
    let csv = export(&config, "cluster_b", "cluster_a", "cmd.failover").expect("export");
    apply(&a.bootstrap(), "cmd.failover", &csv);
    let home = consumer(&a.bootstrap(), "cmd.failover", TOPIC, "latest");
    let homeward: Vec<i32> = cmd_b
        .iter()
        .filter(|(_, l)| **l + 1 < per_partition)
        .map(|(p, _)| *p)
        .collect();
    assert!(!homeward.is_empty(), "{cmd_b:?}");
    let first = first_per_partition(&home, &homeward);
    for p in &homeward {
        assert_eq!(
            first[p].1,
            on_a[&(*p, cmd_b[p] + 1)],
            "cmd.failover failback partition {p}: exactly the next record"
        );
    }
    drop(home);

    // Export and failover read only the target: they work with cluster A down.
    drop(_run);
    a.stop();
    assert!(
        export(&config, "cluster_a", "cluster_b", "lagging").is_some(),
        "export with cluster_a stopped"
    );
    let (ok, _, err) = strait(
        &[
            "failover",
            "--source",
            "cluster_a",
            "--target",
            "cluster_b",
            "--group",
            "lagging",
            "--dry-run",
        ],
        &config,
    );
    assert!(ok, "failover with cluster_a stopped: {err}");
}

#[test]
fn group_offset_sync_moves_idle_groups_forward_and_leaves_their_own_commits_alone() {
    let a = Broker::start("a");
    let (b, _proxy_b) = Broker::start_behind_proxy("b");
    let dir = std::env::temp_dir().join(topic_name("sync"));
    std::fs::create_dir_all(&dir).expect("dir");
    let config = dir.join("flow.toml");
    std::fs::write(
        &config,
        format!(
            "[clusters.a]\nbootstrap_servers = \"{}\"\n[clusters.b]\nbootstrap_servers = \"{}\"\n\
             [[flows]]\nsource = \"a\"\ntarget = \"b\"\ntopics = [\"t\"]\ngroups = [\"synced\", \"own\"]\n\
             refresh_topics_interval_secs = 1\ncheckpoint_interval_secs = 1\nsync_group_offsets = true\nsync_group_offsets_interval_secs = 1\n",
            a.bootstrap(),
            b.bootstrap()
        ),
    )
    .expect("config");
    create_topic(&a.bootstrap(), "t", 1);
    let records: Vec<TestRecord> = (0..1000)
        .map(|i| TestRecord {
            partition: Some(0),
            ..TestRecord::kv(format!("k{i}"), format!("v{i}"))
        })
        .collect();
    produce_records(&a.bootstrap(), "t", &records, Codec::None);
    let commit = |bootstrap: &str, group: &str, topic: &str, offset: i64| {
        let c: BaseConsumer = ClientConfig::new()
            .set("bootstrap.servers", bootstrap)
            .set("group.id", group)
            .set("enable.auto.commit", "false")
            .create()
            .expect("consumer");
        let mut tpl = TopicPartitionList::new();
        tpl.add_partition_offset(topic, 0, Offset::Offset(offset))
            .expect("tpl");
        c.commit(&tpl, CommitMode::Sync).expect("commit");
    };
    let committed = |bootstrap: &str, group: &str, topic: &str| {
        support::data::committed_offset(bootstrap, group, topic, 0)
    };
    commit(&a.bootstrap(), "synced", "t", 300);
    commit(&a.bootstrap(), "own", "t", 300);
    // "own" already committed on b itself: strait must leave that alone.
    create_topic(&b.bootstrap(), "a.t", 1);
    commit(&b.bootstrap(), "own", "a.t", 5);
    let log = dir.join("run.log");
    let _run = StraitRun::start_with(&config, &log, "info");
    wait_until(
        "synced group committed on b",
        Duration::from_secs(60),
        &log,
        || committed(&b.bootstrap(), "synced", "a.t") == Some(300),
    );
    // The group moves on at the source: the target follows, forwards only.
    commit(&a.bootstrap(), "synced", "t", 700);
    wait_until(
        "synced group moved forward on b",
        Duration::from_secs(60),
        &log,
        || committed(&b.bootstrap(), "synced", "a.t") == Some(700),
    );
    commit(&a.bootstrap(), "synced", "t", 100);
    std::thread::sleep(Duration::from_secs(3));
    assert_eq!(
        committed(&b.bootstrap(), "synced", "a.t"),
        Some(700),
        "never moved backwards"
    );
    assert_eq!(
        committed(&b.bootstrap(), "own", "a.t"),
        Some(5),
        "the group's own commit on b is left alone"
    );
}
