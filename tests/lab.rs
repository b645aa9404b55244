//! Issue 3 acceptance: the Streams Replication Manager lab played with `strait run`.

mod support;

use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::ClientConfig;
use support::data::commit_group;
use support::{
    consume_all, create_topic, produce_records, topic_name, Broker, Codec, StraitRun, TestRecord,
};

/// A `strait run` child process.
fn topics(bootstrap: &str) -> Vec<(String, usize)> {
    let consumer: BaseConsumer = ClientConfig::new()
        .set("bootstrap.servers", bootstrap)
        .set("broker.address.family", "v4")
        .create()
        .expect("consumer");
    let md = consumer
        .fetch_metadata(None, Duration::from_secs(10))
        .expect("metadata");
    md.topics()
        .iter()
        .map(|t| (t.name().to_string(), t.partitions().len()))
        .collect()
}

fn wait_until(
    what: &str,
    timeout: Duration,
    strait: Option<&StraitRun>,
    mut cond: impl FnMut() -> bool,
) {
    let deadline = Instant::now() + timeout;
    while !cond() {
        if Instant::now() > deadline {
            panic!(
                "timed out waiting for {what}\n{}",
                strait.map(StraitRun::log).unwrap_or_default()
            );
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}

fn high_watermarks(bootstrap: &str, topic: &str) -> Vec<i64> {
    support::data::watermarks(bootstrap, topic)
        .iter()
        .map(|w| w.1)
        .collect()
}

fn readings(prefix: &str, from: usize, n: usize, partitions: i32) -> Vec<TestRecord> {
    (from..from + n)
        .map(|i| TestRecord {
            key: Some(format!("sensor-{}", i % 17).into_bytes()),
            value: Some(format!("{prefix} reading {i} temperature {}", 20 + i % 9).into_bytes()),
            headers: vec![("seq".to_string(), Some(i.to_string().into_bytes()))],
            partition: Some((i % partitions as usize) as i32),
            timestamp: Some(1_700_000_000_000 + i as i64),
        })
        .collect()
}

/// Same records, same order, in every partition.
fn assert_same_records(a: &str, ta: &str, b: &str, tb: &str, n: usize) {
    let x = consume_all(a, ta, n, Duration::from_secs(60));
    let y = consume_all(b, tb, n, Duration::from_secs(60));
    assert_eq!(x.len(), n, "{ta} on source");
    assert_eq!(y.len(), n, "{tb} on target: every record exactly once");
    for (r, s) in x.iter().zip(&y) {
        assert_eq!((r.partition, r.offset), (s.partition, s.offset));
        assert_eq!(
            (&r.key, &r.value, &r.headers, r.timestamp),
            (&s.key, &s.value, &s.headers, s.timestamp)
        );
    }
}

fn lab_toml(a: &str, b: &str) -> String {
    format!(
        r#"
[clusters.cluster_a]
bootstrap_servers = ["{a}"]
[clusters.cluster_b]
bootstrap_servers = ["{b}"]

[defaults]
refresh_topics_interval_secs = 1
refresh_groups_interval_secs = 1
heartbeat_interval_secs = 1
checkpoint_interval_secs = 1

[[flows]]
source = "cluster_a"
target = "cluster_b"
topics = ["global_iot"]
groups = [".*"]

[[flows]]
source = "cluster_b"
target = "cluster_a"
topics = ["cluster_a\\.global_iot"]
groups = [".*"]
"#
    )
}

fn lab_mm2(a: &str, b: &str) -> String {
    format!(
        "clusters = cluster_a, cluster_b\n\
         cluster_a.bootstrap.servers = {a}\n\
         cluster_b.bootstrap.servers = {b}\n\
         cluster_a->cluster_b.enabled = true\n\
         cluster_a->cluster_b.topics = global_iot\n\
         cluster_a->cluster_b.groups = .*\n\
         cluster_b->cluster_a.enabled = true\n\
         cluster_b->cluster_a.topics = cluster_a\\\\.global_iot\n\
         cluster_b->cluster_a.groups = .*\n\
         refresh.topics.interval.seconds = 1\n\
         refresh.groups.interval.seconds = 1\n\
         emit.heartbeats.interval.seconds = 1\n\
         emit.checkpoints.interval.seconds = 1\n\
         replication.policy.class = org.apache.kafka.connect.mirror.DefaultReplicationPolicy\n"
    )
}

/// The translated offsets `strait offsets --export` gives for `group` from cluster_a on
/// cluster_b: (topic, partition) -> offset.
fn exported(config: &std::path::Path, group: &str) -> Vec<(String, i32, i64)> {
    let out = Command::new(env!("CARGO_BIN_EXE_strait"))
        .args(["offsets", "--config"])
        .arg(config)
        .args(["--source", "cluster_a", "--target", "cluster_b"])
        .args(["--group", group, "--export"])
        .output()
        .expect("strait offsets");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| {
            let mut f = l.split(',');
            Some((
                f.next()?.to_string(),
                f.next()?.parse().ok()?,
                f.next()?.parse().ok()?,
            ))
        })
        .collect()
}

/// Plays the lab with `heartbeats` as the heartbeats topic's name; returns the topic names on
/// cluster_a and cluster_b at its end.
fn play_lab(
    config_text: impl Fn(&str, &str) -> String,
    file_name: &str,
    heartbeats: &str,
) -> [Vec<String>; 2] {
    let (a, proxy_a) = Broker::start_behind_proxy("cluster_a");
    let (b, proxy_b) = Broker::start_behind_proxy("cluster_b");
    let dir = std::env::temp_dir().join(topic_name("lab"));
    std::fs::create_dir_all(&dir).expect("dir");
    let config = dir.join(file_name);
    std::fs::write(&config, config_text(&a.bootstrap(), &b.bootstrap())).expect("config");

    create_topic(&a.bootstrap(), "global_iot", 5);
    produce_records(
        &a.bootstrap(),
        "global_iot",
        &readings("a", 0, 5_000, 5),
        Codec::Lz4,
    );

    let strait = StraitRun::start(&config, &dir.join("strait.log"));
    // Producers keep writing while strait replicates.
    let producer = {
        let boot = a.bootstrap();
        std::thread::spawn(move || {
            for round in 0..10 {
                produce_records(
                    &boot,
                    "global_iot",
                    &readings("a", 5_000 + round * 1_000, 1_000, 5),
                    Codec::Zstd,
                );
                std::thread::sleep(Duration::from_millis(200));
            }
        })
    };
    wait_until(
        "cluster_a.global_iot on cluster_b",
        Duration::from_secs(60),
        Some(&strait),
        || topics(&b.bootstrap()).contains(&("cluster_a.global_iot".to_string(), 5)),
    );

    // A second topic, added to the allow list while strait runs.
    create_topic(&a.bootstrap(), "second_topic", 2);
    produce_records(
        &a.bootstrap(),
        "second_topic",
        &readings("s", 0, 500, 2),
        Codec::Snappy,
    );
    let out = Command::new(env!("CARGO_BIN_EXE_strait"))
        .args(["topics", "--config"])
        .arg(&config)
        .args([
            "--source",
            "cluster_a",
            "--target",
            "cluster_b",
            "--add",
            "second_topic",
            "--list",
        ])
        .output()
        .expect("strait topics");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "strait topics failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        text.contains("second_topic") && text.contains("global_iot"),
        "{text}"
    );
    producer.join().expect("producer");

    let a_ends = high_watermarks(&a.bootstrap(), "global_iot");
    wait_until(
        "every global_iot record on cluster_b",
        Duration::from_secs(60),
        Some(&strait),
        || {
            topics(&b.bootstrap())
                .iter()
                .any(|t| t.0 == "cluster_a.global_iot")
                && high_watermarks(&b.bootstrap(), "cluster_a.global_iot") == a_ends
        },
    );
    wait_until(
        "second_topic replicated without restart",
        Duration::from_secs(60),
        Some(&strait),
        || {
            topics(&b.bootstrap())
                .iter()
                .any(|t| t.0 == "cluster_a.second_topic")
                && high_watermarks(&b.bootstrap(), "cluster_a.second_topic")
                    == high_watermarks(&a.bootstrap(), "second_topic")
        },
    );
    let (remote_a, remote_b) = (
        format!("cluster_a.{heartbeats}"),
        format!("cluster_b.{heartbeats}"),
    );
    wait_until(
        "heartbeats on both clusters",
        Duration::from_secs(30),
        Some(&strait),
        || {
            let (ta, tb) = (topics(&a.bootstrap()), topics(&b.bootstrap()));
            let has = |ts: &[(String, usize)], n: &str| ts.iter().any(|t| t.0 == n);
            has(&ta, heartbeats)
                && has(&tb, heartbeats)
                && has(&tb, &remote_a)
                && has(&ta, &remote_b)
                && high_watermarks(&b.bootstrap(), &remote_a)
                    .iter()
                    .sum::<i64>()
                    > 0
        },
    );
    // Lab 6's first step: a group's offsets on cluster_a, translated for cluster_b from the
    // checkpoints strait writes there (fresh replication: the same offsets).
    commit_group(&a.bootstrap(), "lab.group", "global_iot", 5, 1_000);
    let want: Vec<(String, i32, i64)> = (0..5)
        .map(|p| ("cluster_a.global_iot".to_string(), p, 1_000))
        .collect();
    wait_until(
        "lab.group's translated offsets",
        Duration::from_secs(60),
        Some(&strait),
        || exported(&config, "lab.group") == want,
    );
    let log = strait.stop();

    let total: i64 = a_ends.iter().sum();
    assert_same_records(
        &a.bootstrap(),
        "global_iot",
        &b.bootstrap(),
        "cluster_a.global_iot",
        total as usize,
    );
    assert_same_records(
        &a.bootstrap(),
        "second_topic",
        &b.bootstrap(),
        "cluster_a.second_topic",
        500,
    );
    // Active-active without loops.
    let names: Vec<String> = topics(&a.bootstrap()).into_iter().map(|t| t.0).collect();
    assert!(
        !names.iter().any(|n| n.starts_with("cluster_b.cluster_a.")),
        "a loop: {names:?}\n{log}"
    );
    assert!(proxy_a.produce_batches() > 0 && proxy_b.produce_batches() > 0);
    proxy_a.assert_clean();
    proxy_b.assert_clean();
    let names_b = topics(&b.bootstrap()).into_iter().map(|t| t.0).collect();
    [names, names_b]
}

#[test]
fn srm_lab_with_strait_toml() {
    play_lab(lab_toml, "lab.toml", "heartbeats");
}

#[test]
fn srm_lab_with_mm2_properties() {
    play_lab(lab_mm2, "mm2.properties", "heartbeats");
}

/// Issue 32: the lab on clusters whose naming policy refuses the replicators' default topic
/// names: strait's own topics renamed with `control_topic` and `progress_topic`, MirrorMaker
/// 2's with `heartbeats_topic`, `checkpoints_topic` and `offset_syncs_topic`; the lab plays the
/// same (heartbeats both ways, a group's offsets translated from the renamed checkpoints), and
/// no topic of a default name is created on either cluster.
#[test]
fn srm_lab_with_renamed_internal_topics() {
    let renamed = |a: &str, b: &str| {
        lab_toml(a, b)
            .replace(
                "bootstrap_servers = [",
                "control_topic = \"ops.strait-control.internal\"\n\
                 progress_topic = \"ops.strait-progress.internal\"\n\
                 bootstrap_servers = [",
            )
            .replace(
                "[defaults]\n",
                "[defaults]\nheartbeats_topic = \"ops-heartbeats\"\n\
                 checkpoints_topic = \"ops.mm2-checkpoints.{source}\"\n\
                 offset_syncs_topic = \"ops.mm2-offset-syncs.{target}\"\n",
            )
    };
    let [on_a, on_b] = play_lab(renamed, "lab.toml", "ops-heartbeats");
    let has = |names: &[String], n: &str| names.iter().any(|t| t == n);
    // cluster_b holds the progress records of the flow into it, the runtime lists the lab
    // changed, the checkpoints of cluster_a's groups and the offset syncs towards it.
    for name in [
        "ops.strait-progress.internal",
        "ops.strait-control.internal",
        "ops.mm2-checkpoints.cluster_a",
        "ops.mm2-offset-syncs.cluster_b",
        "ops-heartbeats",
        "cluster_a.ops-heartbeats",
    ] {
        assert!(has(&on_b, name), "{name} missing on cluster_b: {on_b:?}");
    }
    for names in [&on_a, &on_b] {
        assert!(
            !names.iter().any(|n| n.starts_with("strait-")
                || n == "heartbeats"
                || n.ends_with(".heartbeats")
                || n.ends_with("checkpoints.internal")
                || n.starts_with("mm2-offset-syncs")),
            "a default-named topic: {names:?}"
        );
        assert!(
            !names.iter().any(|n| n.contains(".ops.mm2-")),
            "a renamed internal topic replicated: {names:?}"
        );
    }
}

/// Clusters `a` (direct) and `b` (behind the Produce-checking proxy) and a config file with
/// one flow `a -> b` for `topics`, plus `extra` flow keys.
struct OneFlow {
    a: Broker,
    b: Broker,
    proxy_b: support::ProduceCheckProxy,
    dir: PathBuf,
    config: PathBuf,
}

fn one_flow(name: &str, topics: &[&str], extra: &str) -> OneFlow {
    let a = Broker::start("a");
    let (b, proxy_b) = Broker::start_behind_proxy("b");
    let dir = std::env::temp_dir().join(topic_name(name));
    std::fs::create_dir_all(&dir).expect("dir");
    let config = dir.join("flow.toml");
    let list: Vec<String> = topics.iter().map(|t| format!("{t:?}")).collect();
    std::fs::write(
        &config,
        format!(
            "[clusters.a]\nbootstrap_servers = \"{}\"\n[clusters.b]\nbootstrap_servers = \"{}\"\n\
             [[flows]]\nsource = \"a\"\ntarget = \"b\"\ntopics = [{}]\nrefresh_topics_interval_secs = 1\n{extra}\n",
            a.bootstrap(),
            b.bootstrap(),
            list.join(", ")
        ),
    )
    .expect("config");
    OneFlow {
        a,
        b,
        proxy_b,
        dir,
        config,
    }
}

#[test]
fn kill_9_in_a_backlog_then_restart_gives_every_record_exactly_once() {
    let topic = "backlog";
    let OneFlow {
        a,
        b,
        proxy_b,
        dir,
        config,
    } = one_flow("kill9", &[topic], "");
    create_topic(&a.bootstrap(), topic, 4);
    let n = 200_000;
    let mut opts = support::data::ProduceOptions {
        codec: Codec::Lz4,
        ..Default::default()
    };
    opts.batch_size = 16 * 1024; // many batches, so the kill lands in the middle
    support::data::produce_records_with(&a.bootstrap(), topic, &readings("k", 0, n, 4), &opts);
    // Slow the target down so the kill falls inside the backlog, with produce responses in flight.
    proxy_b.update_faults(|f| f.response_delay = Some(Duration::from_millis(30)));

    let strait = StraitRun::start(&config, &dir.join("run1.log"));
    wait_until(
        "part of the backlog on b",
        Duration::from_secs(60),
        Some(&strait),
        || {
            topics(&b.bootstrap()).iter().any(|t| t.0 == "a.backlog")
                && high_watermarks(&b.bootstrap(), "a.backlog")
                    .iter()
                    .sum::<i64>()
                    > (n as i64) / 5
        },
    );
    let mut strait = strait;
    strait.kill9();
    let first = strait.log();
    let landed: i64 = high_watermarks(&b.bootstrap(), "a.backlog").iter().sum();
    assert!(
        landed < n as i64,
        "the kill came too late to test anything ({landed} landed)\n{first}"
    );

    proxy_b.update_faults(|f| f.response_delay = None);
    let strait = StraitRun::start(&config, &dir.join("run2.log"));
    let a_ends = high_watermarks(&a.bootstrap(), topic);
    wait_until(
        "the whole backlog on b",
        Duration::from_secs(120),
        Some(&strait),
        || {
            high_watermarks(&b.bootstrap(), "a.backlog")
                .iter()
                .sum::<i64>()
                >= n as i64
        },
    );
    std::thread::sleep(Duration::from_secs(1));
    let log = strait.stop();
    assert_eq!(
        high_watermarks(&b.bootstrap(), "a.backlog"),
        a_ends,
        "no duplicates\n{log}"
    );
    assert_same_records(&a.bootstrap(), topic, &b.bootstrap(), "a.backlog", n);
    // The exact offset map stored in the target, across the crash: one run per partition,
    // source offset = target offset, covering everything.
    let stored = tokio::runtime::Runtime::new()
        .expect("runtime")
        .block_on(async {
            let c = strait::client::Cluster::connect(strait::client::ClusterConfig::new(
                "b",
                &b.bootstrap(),
            ))
            .await
            .expect("connect b");
            strait::replicate::store::read_latest(&c, strait::replicate::progress::PROGRESS_TOPIC)
                .await
                .expect("read progress")
        });
    for (p, end) in a_ends.iter().enumerate() {
        let value = stored
            .get(format!("a|{topic}|{p}").as_bytes())
            .expect("progress record");
        let map = strait::replicate::progress::decode(value)
            .expect("progress record")
            .map;
        assert_eq!(
            (map.source_next(), map.target_next()),
            (*end, *end),
            "partition {p}"
        );
        assert_eq!(map.len_runs(), 1, "partition {p}: {:?}", map.runs());
        for x in [0, end / 3, end - 1] {
            assert_eq!(map.to_target(x).exact(), Some(x));
            assert_eq!(map.to_source(x).exact(), Some(x));
        }
    }
    proxy_b.assert_clean();
}

#[test]
fn remote_topics_strait_did_not_write_are_reported_not_written_into() {
    let OneFlow {
        a,
        b,
        proxy_b,
        dir,
        config,
    } = one_flow(
        "refuse",
        &["taken", "compacted", "fine", "narrow"],
        "emit_heartbeats = false",
    );
    for t in ["taken", "compacted", "fine"] {
        create_topic(&a.bootstrap(), t, 1);
        produce_records(&a.bootstrap(), t, &readings(t, 0, 100, 1), Codec::None);
    }
    // Someone else's data already in the remote topic.
    create_topic(&b.bootstrap(), "a.taken", 1);
    produce_records(
        &b.bootstrap(),
        "a.taken",
        &readings("other", 0, 7, 1),
        Codec::None,
    );
    // A remote topic with fewer partitions than its source (Apache Kafka lets strait add the
    // missing ones).
    create_topic(&a.bootstrap(), "narrow", 2);
    create_topic(&b.bootstrap(), "a.narrow", 1);
    // A remote topic that keeps records differently.
    support::data::create_topic_with_config(
        &b.bootstrap(),
        "a.compacted",
        1,
        &[("cleanup.policy", "compact")],
    );

    let strait = StraitRun::start(&config, &dir.join("run.log"));
    wait_until(
        "fine replicated",
        Duration::from_secs(60),
        Some(&strait),
        || {
            topics(&b.bootstrap()).iter().any(|t| t.0 == "a.fine")
                && high_watermarks(&b.bootstrap(), "a.fine") == vec![100]
        },
    );
    std::thread::sleep(Duration::from_secs(2));
    let log = strait.stop();
    assert_eq!(
        high_watermarks(&b.bootstrap(), "a.taken"),
        vec![7],
        "not written into\n{log}"
    );
    assert_eq!(
        high_watermarks(&b.bootstrap(), "a.compacted"),
        vec![0],
        "not written into\n{log}"
    );
    // Apache Kafka adds partitions (CreatePartitions): the remote topic is widened.
    assert!(
        log.contains("added partitions to the remote topic")
            && log.contains("remote=a.narrow from=1 to=2"),
        "{log}"
    );
    assert!(
        log.contains("cluster b, topic a.taken, partition 0: refusing to replicate into it: the remote partition already holds 7 records"),
        "{log}"
    );
    assert!(log.contains("cluster b, topic a.compacted: cleanup.policy is compact but source topic compacted on cluster a has delete"), "{log}");
    proxy_b.assert_clean();
}

#[test]
fn lost_produce_answers_with_requests_in_flight_give_no_duplicates() {
    let OneFlow {
        a,
        b,
        proxy_b,
        dir,
        config,
    } = one_flow("lost", &["orders"], "emit_heartbeats = false");
    let n = 40_000;
    create_topic(&a.bootstrap(), "orders", 3);
    let opts = support::data::ProduceOptions {
        codec: Codec::Zstd,
        batch_size: 8 * 1024,
        ..Default::default()
    };
    support::data::produce_records_with(&a.bootstrap(), "orders", &readings("o", 0, n, 3), &opts);
    proxy_b.update_faults(|f| f.response_delay = Some(Duration::from_millis(30)));
    let strait = StraitRun::start(&config, &dir.join("run.log"));
    // Data requests are flowing (the proxy counts batches as they pass: no round trip).
    let deadline = Instant::now() + Duration::from_secs(60);
    while proxy_b.produce_batches() < 12 {
        assert!(
            Instant::now() < deadline,
            "no data flowing\n{}",
            strait.log()
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    // The broker gets the next Produce requests, but their answers never come back: the
    // connection closes right after each is forwarded, with more requests in flight behind it.
    proxy_b.update_faults(|f| {
        f.response_delay = None;
        f.close_after_request(0, 6);
    });
    let a_ends = high_watermarks(&a.bootstrap(), "orders");
    wait_until(
        "every record on b",
        Duration::from_secs(90),
        Some(&strait),
        || {
            topics(&b.bootstrap()).iter().any(|t| t.0 == "a.orders")
                && high_watermarks(&b.bootstrap(), "a.orders")
                    .iter()
                    .sum::<i64>()
                    >= n as i64
        },
    );
    std::thread::sleep(Duration::from_secs(1));
    let log = strait.stop();
    assert!(
        log.contains("reading its partitions back"),
        "the fault was exercised\n{log}"
    );
    assert_eq!(
        high_watermarks(&b.bootstrap(), "a.orders"),
        a_ends,
        "no duplicates\n{log}"
    );
    assert_same_records(&a.bootstrap(), "orders", &b.bootstrap(), "a.orders", n);
    proxy_b.assert_clean();
}
