//! Issue 16.3 and 16.4: something writes into a replica while strait is down. On restart strait
//! must not count those records as its own (and so skip the source's): the partition stops
//! with a report naming the offsets and the producer, nothing more is written there, and every
//! view says so: `/ready` answers 503, `strait mirror status` shows the partition stopped.
//! On Apache Kafka; the data is checked record by record with rdkafka.

mod support;

use support::strait::status_get;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use support::data::watermarks;
use support::kafka::{start_kafka, start_kafka_behind_proxy, KafkaCluster};
use support::{
    consume_all, create_topic, produce_records, topic_name, Codec, StraitRun, TestRecord,
};

const TOPIC: &str = "events";

fn write_config(dir: &Path, a: &KafkaCluster, b: &str, mirror: bool, http: u16) -> PathBuf {
    let config = dir.join("strait.toml");
    let mode = if mirror { "mode = \"mirror\"\n" } else { "" };
    std::fs::write(
        &config,
        format!(
            "http = \"127.0.0.1:{http}\"\ninstance_group = \"{}\"\n\
             [clusters.a]\nbootstrap_servers = \"{}\"\n[clusters.b]\nbootstrap_servers = \"{b}\"\n\
             [[flows]]\nsource = \"a\"\ntarget = \"b\"\n{mode}topics = [\"{TOPIC}\"]\n\
             refresh_topics_interval_secs = 2\n",
            topic_name("g"),
            a.bootstrap()
        ),
    )
    .expect("write config");
    config
}

fn one(bootstrap: &str, topic: &str, value: &str) {
    let r = TestRecord {
        partition: Some(0),
        ..TestRecord::kv("k", value)
    };
    produce_records(bootstrap, topic, &[r], Codec::None);
}

fn values(bootstrap: &str, topic: &str, n: usize) -> Vec<String> {
    consume_all(bootstrap, topic, n, Duration::from_secs(30))
        .into_iter()
        .map(|r| String::from_utf8_lossy(&r.value.unwrap_or_default()).into_owned())
        .collect()
}

fn scenario(mirror: bool) {
    let remote = if mirror {
        TOPIC.to_string()
    } else {
        format!("a.{TOPIC}")
    };
    let a = start_kafka("a");
    let (b, proxy) = start_kafka_behind_proxy("b");
    let b_direct = b.direct_bootstrap();
    let dir = std::env::temp_dir().join(topic_name("foreign"));
    std::fs::create_dir_all(&dir).expect("dir");
    let http = strait::local_kafka::free_port().expect("port");
    let config = write_config(&dir, &a, &b.bootstrap(), mirror, http);
    create_topic(&a.bootstrap(), TOPIC, 1);
    for i in 0..10 {
        one(&a.bootstrap(), TOPIC, &format!("src-{i}"));
    }
    let s1 = StraitRun::start(&config, &dir.join("s1.log"));
    let deadline = Instant::now() + Duration::from_secs(60);
    while watermarks(&b_direct, &remote).first().map(|w| w.1) != Some(10) {
        assert!(Instant::now() < deadline, "not replicated:\n{}", s1.log());
        std::thread::sleep(Duration::from_millis(200));
    }
    assert_eq!(
        status_get(http, "/ready").map(|r| r.0),
        Some(200),
        "{}",
        s1.log()
    );
    s1.stop();

    // While strait is down: the source moves on by one record, and one record is written
    // straight into the replica.
    one(&a.bootstrap(), TOPIC, "src-10");
    one(&b_direct, &remote, "FOREIGN");

    // The second run serves its status on another port (`--http` overrides the configuration,
    // as for a second instance on the same machine).
    let http = strait::local_kafka::free_port().expect("port");
    let addr = format!("127.0.0.1:{http}");
    let s2 = StraitRun::start_with_args(
        &config,
        &dir.join("s2.log"),
        "info,strait=debug",
        &["--http", &addr],
    );
    one(&a.bootstrap(), TOPIC, "src-11");
    let deadline = Instant::now() + Duration::from_secs(60);
    let body = loop {
        match status_get(http, "/ready") {
            Some((503, body)) if body.contains("\"reason\"") => break body,
            _ => {}
        }
        assert!(
            Instant::now() < deadline,
            "/ready never reported the stopped partition ({:?}):\n{}",
            status_get(http, "/ready"),
            s2.log()
        );
        std::thread::sleep(Duration::from_millis(300));
    };
    assert!(body.contains("offsets 10..11"), "{body}");
    let log = s2.log();
    assert!(log.contains("partition stopped"), "{log}");
    assert!(
        log.contains(&format!("topic {remote}, partition 0")),
        "{log}"
    );
    assert!(
        log.contains(&format!("REST API at http://{addr}/")),
        "{log}"
    );

    // Nothing of the source's records 10 and 11 was counted as copied or written after the
    // foreign record.
    std::thread::sleep(Duration::from_secs(3));
    assert_eq!(watermarks(&b_direct, &remote)[0].1, 11);
    let on_b = values(&b_direct, &remote, 11);
    let mut expected: Vec<String> = (0..10).map(|i| format!("src-{i}")).collect();
    expected.push("FOREIGN".into());
    assert_eq!(on_b, expected);

    if mirror {
        let out = Command::new(env!("CARGO_BIN_EXE_strait"))
            .args(["mirror", "status", "--config"])
            .arg(&config)
            .output()
            .expect("strait mirror status");
        let text = String::from_utf8_lossy(&out.stdout);
        let row = text
            .lines()
            .find(|l| l.starts_with(TOPIC))
            .unwrap_or_else(|| panic!("no row for {TOPIC}: {text}"));
        assert!(row.contains("stopped"), "{text}");
        assert!(!row.contains("active"), "{text}");
    }
    drop(s2);
    proxy.assert_clean();
}

#[test]
fn a_foreign_write_into_a_replica_while_strait_was_down_stops_the_partition() {
    scenario(false);
}

#[test]
fn a_foreign_write_into_a_mirror_while_strait_was_down_stops_the_partition() {
    scenario(true);
}
