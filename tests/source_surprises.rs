//! The source (or the target) changes under strait's position, on Apache Kafka: a topic
//! deleted and created again under the same name (while strait runs, and while it is down),
//! records deleted before strait could copy them, and the remote topic deleted under a running
//! flow. Strait must never continue by offsets that now name other
//! records, and must never hide a loss: each case is one clear line, a metric, and the status
//! (`/ready`, `/api/status`). The target is checked record by record with rdkafka.

mod support;

use support::strait::status_get;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use rdkafka::admin::{AdminClient, AdminOptions};
use rdkafka::client::DefaultClientContext;
use rdkafka::config::ClientConfig;
use rdkafka::{Offset, TopicPartitionList};

use support::data::watermarks;
use support::kafka::{start_kafka, start_kafka_behind_proxy, KafkaCluster};
use support::{
    consume_all, create_topic, produce_records, topic_name, Codec, StraitRun, TestRecord,
};

const TOPIC: &str = "events";
const REMOTE: &str = "a.events";
const PARTITIONS: i32 = 2;

fn write_config(dir: &Path, a: &KafkaCluster, b: &str) -> PathBuf {
    let config = dir.join("strait.toml");
    std::fs::write(
        &config,
        format!(
            "instance_group = \"{}\"\n\
             [clusters.a]\nbootstrap_servers = \"{}\"\n[clusters.b]\nbootstrap_servers = \"{b}\"\n\
             [[flows]]\nsource = \"a\"\ntarget = \"b\"\ntopics = [\"{TOPIC}\"]\n\
             refresh_topics_interval_secs = 2\n",
            topic_name("g"),
            a.bootstrap()
        ),
    )
    .expect("write config");
    config
}

/// A run serving its status on a port of its own.
fn run(config: &Path, log: PathBuf) -> (StraitRun, u16) {
    let http = strait::local_kafka::free_port().expect("port");
    let addr = format!("127.0.0.1:{http}");
    let run = StraitRun::start_with_args(config, &log, "info", &["--http", &addr]);
    (run, http)
}

/// Writes `n` records `{prefix}-{i}`, spread over the partitions.
fn produce(bootstrap: &str, prefix: &str, n: usize) {
    let records: Vec<TestRecord> = (0..n)
        .map(|i| TestRecord {
            partition: Some((i % PARTITIONS as usize) as i32),
            ..TestRecord::kv(format!("k{i}"), format!("{prefix}-{i}"))
        })
        .collect();
    produce_records(bootstrap, TOPIC, &records, Codec::Lz4);
}

fn wait_for(what: &str, run: &StraitRun, timeout: Duration, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + timeout;
    while !done() {
        assert!(Instant::now() < deadline, "{what}:\n{}", run.log());
        std::thread::sleep(Duration::from_millis(250));
    }
}

fn target_total(b: &str) -> i64 {
    watermarks(b, REMOTE).iter().map(|w| w.1).sum()
}

/// The values on the target, sorted.
fn target_values(b: &str, n: usize) -> Vec<String> {
    let mut v: Vec<String> = consume_all(b, REMOTE, n, Duration::from_secs(30))
        .into_iter()
        .map(|r| String::from_utf8_lossy(&r.value.unwrap_or_default()).into_owned())
        .collect();
    v.sort();
    v
}

fn expected(prefix: &str, range: std::ops::Range<usize>) -> Vec<String> {
    let mut v: Vec<String> = range.map(|i| format!("{prefix}-{i}")).collect();
    v.sort();
    v
}

fn admin(bootstrap: &str) -> AdminClient<DefaultClientContext> {
    ClientConfig::new()
        .set("bootstrap.servers", bootstrap)
        .set("broker.address.family", "v4")
        .create()
        .expect("admin client")
}

/// Deletes the source topic, waits until the broker no longer lists it, and creates it again.
fn recreate_topic(bootstrap: &str) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let results = rt
        .block_on(admin(bootstrap).delete_topics(&[TOPIC], &AdminOptions::new()))
        .expect("delete topic");
    assert!(results.iter().all(|r| r.is_ok()), "{results:?}");
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let result = std::panic::catch_unwind(|| {
            create_topic(bootstrap, TOPIC, PARTITIONS);
        });
        if result.is_ok() {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "the topic could not be created again"
        );
        std::thread::sleep(Duration::from_millis(500));
    }
}

/// The partitions `/ready` lists as stopped.
fn stopped_partitions(body: &str) -> Vec<i64> {
    let doc: serde_json::Value = serde_json::from_str(body).expect("json");
    let mut v: Vec<i64> = doc["flows"][0]["stopped_partitions"]
        .as_array()
        .map(|a| a.iter().filter_map(|p| p["partition"].as_i64()).collect())
        .unwrap_or_default();
    v.sort_unstable();
    v
}

/// `/ready` answers 503 naming a stopped partition whose reason contains `needle`.
fn wait_not_ready(http: u16, run: &StraitRun, needle: &str) -> String {
    let mut body = String::new();
    wait_for(
        "/ready never named the stopped partitions",
        run,
        Duration::from_secs(60),
        || match status_get(http, "/ready") {
            Some((503, b)) if b.contains(needle) => {
                body = b;
                true
            }
            _ => false,
        },
    );
    body
}

/// A topic deleted and created again while strait runs: its partitions stop before a record of
/// the new topic is copied, even though the new topic grows past strait's position.
#[test]
fn a_source_topic_created_again_while_running_stops_its_partitions() {
    let a = start_kafka("a");
    let (b, proxy) = start_kafka_behind_proxy("b");
    let b_direct = b.direct_bootstrap();
    let dir = std::env::temp_dir().join(topic_name("recreated-running"));
    std::fs::create_dir_all(&dir).expect("dir");
    let config = write_config(&dir, &a, &b.bootstrap());
    create_topic(&a.bootstrap(), TOPIC, PARTITIONS);
    produce(&a.bootstrap(), "old", 100);
    let (s, http) = run(&config, dir.join("run.log"));
    wait_for("not replicated", &s, Duration::from_secs(60), || {
        target_total(&b_direct) == 100
    });

    recreate_topic(&a.bootstrap());
    produce(&a.bootstrap(), "new", 400);
    let body = wait_not_ready(http, &s, "deleted and created again");
    std::thread::sleep(Duration::from_secs(3));
    let log = s.stop();
    assert_eq!(stopped_partitions(&body), vec![0, 1], "{body}");
    assert_eq!(
        log.matches("deleted and created again").count(),
        PARTITIONS as usize,
        "one line per partition:\n{log}"
    );
    assert_eq!(
        target_total(&b_direct),
        100,
        "nothing of the new topic copied:\n{log}"
    );
    assert_eq!(target_values(&b_direct, 100), expected("old", 0..100));
    proxy.assert_clean();
}

/// The same while strait is down: the stored position belongs to the old topic; on restart the
/// partitions stop at take-up, and stay stopped across another restart.
#[test]
fn a_source_topic_created_again_while_strait_was_down_stops_at_take_up() {
    let a = start_kafka("a");
    let (b, proxy) = start_kafka_behind_proxy("b");
    let b_direct = b.direct_bootstrap();
    let dir = std::env::temp_dir().join(topic_name("recreated-down"));
    std::fs::create_dir_all(&dir).expect("dir");
    let config = write_config(&dir, &a, &b.bootstrap());
    create_topic(&a.bootstrap(), TOPIC, PARTITIONS);
    produce(&a.bootstrap(), "old", 100);
    let (s1, _) = run(&config, dir.join("s1.log"));
    wait_for("not replicated", &s1, Duration::from_secs(60), || {
        target_total(&b_direct) == 100
    });
    s1.stop();

    recreate_topic(&a.bootstrap());
    produce(&a.bootstrap(), "new", 400);
    for round in ["s2", "s3"] {
        let (s, http) = run(&config, dir.join(format!("{round}.log")));
        let body = wait_not_ready(http, &s, "deleted and created again");
        assert_eq!(stopped_partitions(&body), vec![0, 1], "{body}");
        let (code, status) = status_get(http, "/api/status").expect("/api/status");
        assert_eq!(code, 200);
        let doc: serde_json::Value = serde_json::from_str(&status).expect("json");
        assert_eq!(doc["ready"], false, "{status}");
        std::thread::sleep(Duration::from_secs(2));
        s.stop();
    }
    assert_eq!(
        target_total(&b_direct),
        100,
        "nothing of the new topic copied"
    );
    assert_eq!(target_values(&b_direct, 100), expected("old", 0..100));
    proxy.assert_clean();
}

/// Records deleted from the source (DeleteRecords, as retention does) while strait was down,
/// before it copied them: the lost range is logged with its offsets, counted in
/// `strait_source_records_lost_total` and in the status, and replication continues from the
/// log start with every remaining record exactly once.
#[test]
fn records_deleted_before_they_were_copied_are_reported_and_counted() {
    let a = start_kafka("a");
    let (b, proxy) = start_kafka_behind_proxy("b");
    let b_direct = b.direct_bootstrap();
    let dir = std::env::temp_dir().join(topic_name("retention"));
    std::fs::create_dir_all(&dir).expect("dir");
    let config = write_config(&dir, &a, &b.bootstrap());
    create_topic(&a.bootstrap(), TOPIC, PARTITIONS);
    produce(&a.bootstrap(), "r", 100); // offsets 0..50 of each partition
    let (s1, _) = run(&config, dir.join("s1.log"));
    wait_for("not replicated", &s1, Duration::from_secs(60), || {
        target_total(&b_direct) == 100
    });
    s1.stop();

    // 100 more (offsets 50..100 of each partition); partition 0 loses offsets 50..80 before
    // strait is back.
    let more: Vec<TestRecord> = (100..200)
        .map(|i| TestRecord {
            partition: Some((i % PARTITIONS as usize) as i32),
            ..TestRecord::kv(format!("k{i}"), format!("r-{i}"))
        })
        .collect();
    produce_records(&a.bootstrap(), TOPIC, &more, Codec::Lz4);
    let mut tpl = TopicPartitionList::new();
    tpl.add_partition_offset(TOPIC, 0, Offset::Offset(80))
        .expect("tpl");
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    rt.block_on(admin(&a.bootstrap()).delete_records(&tpl, &AdminOptions::new()))
        .expect("delete records");

    let (s2, http) = run(&config, dir.join("s2.log"));
    wait_for("not replicated", &s2, Duration::from_secs(60), || {
        target_total(&b_direct) == 170
    });
    let (_, metrics) = status_get(http, "/metrics").expect("/metrics");
    // The status is published every 100 ms: it may lag the last copied records that long.
    let lost_shown = |status: &str| -> Vec<(i64, i64)> {
        let doc: serde_json::Value = serde_json::from_str(status).expect("json");
        doc["flows"][0]["topics"][0]["partitions"]
            .as_array()
            .expect("partitions")
            .iter()
            .map(|p| {
                (
                    p["partition"].as_i64().unwrap_or(-1),
                    p["lost_records"].as_i64().unwrap_or(-1),
                )
            })
            .collect()
    };
    let mut status = String::new();
    wait_for("the status caught up", &s2, Duration::from_secs(10), || {
        status = status_get(http, "/api/status").expect("/api/status").1;
        lost_shown(&status) == vec![(0, 30), (1, 0)]
    });
    let log = s2.stop();
    // One line with the partition and offset as fields.
    assert!(
        log.lines().any(|l| l.contains(
            "records 50..80 were deleted by retention before they could be replicated; continuing at 80"
        ) && l.contains("partition=0")
            && l.contains("offset=50")),
        "{log}"
    );
    assert!(
        metrics.contains("strait_source_records_lost_total{flow=\"a->b\",topic=\"events\"} 30"),
        "{metrics}"
    );
    assert_eq!(lost_shown(&status), vec![(0, 30), (1, 0)], "{status}");
    // Partition 0 holds the even records 0..100 and 160..200 (offsets 80..100), partition 1
    // every odd record.
    let mut want: Vec<String> = (0..200)
        .filter(|i| i % 2 == 1 || *i < 100 || *i >= 160)
        .map(|i| format!("r-{i}"))
        .collect();
    want.sort();
    assert_eq!(target_values(&b_direct, 170), want);
    proxy.assert_clean();
}

/// The remote topic deleted under a running flow: what strait wrote there is gone. Strait must
/// not write the rest at other offsets than its offset map says (a group translated through it
/// would land on the wrong records): the partitions stop and say why.
#[test]
fn a_remote_topic_deleted_under_a_running_flow_stops_its_partitions() {
    let a = start_kafka("a");
    let (b, proxy) = start_kafka_behind_proxy("b");
    let b_direct = b.direct_bootstrap();
    let dir = std::env::temp_dir().join(topic_name("remote-deleted"));
    std::fs::create_dir_all(&dir).expect("dir");
    let config = write_config(&dir, &a, &b.bootstrap());
    create_topic(&a.bootstrap(), TOPIC, PARTITIONS);
    produce(&a.bootstrap(), "r", 100);
    let (s, http) = run(&config, dir.join("run.log"));
    wait_for("not replicated", &s, Duration::from_secs(60), || {
        target_total(&b_direct) == 100
    });
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let results = rt
        .block_on(admin(&b_direct).delete_topics(&[REMOTE], &AdminOptions::new()))
        .expect("delete topic");
    assert!(results.iter().all(|r| r.is_ok()), "{results:?}");
    std::thread::sleep(Duration::from_secs(2));
    produce(&a.bootstrap(), "more", 100);
    let body = wait_not_ready(http, &s, "the remote topic was deleted");
    std::thread::sleep(Duration::from_secs(3));
    let log = s.stop();
    assert_eq!(stopped_partitions(&body), vec![0, 1], "{body}\n{log}");
    // Nothing written at offsets the map does not say: the remote topic holds none of the
    // later records at the offsets 0.. of a re-created topic.
    let total: i64 = watermarks(&b_direct, REMOTE).iter().map(|w| w.1).sum();
    assert_eq!(
        total, 0,
        "records written into a re-created remote topic:\n{log}"
    );
    proxy.assert_clean();
}
