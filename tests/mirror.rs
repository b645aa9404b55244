//! Issue 5 acceptance: mirror topics with Cluster Linking parity. The walkthrough of
//! `../shared/seeds/004_*` (west-trades mirrored west -> east with the same offsets, consumer
//! offset sync with group filters, a group migrated at runtime, promotion), identical offsets
//! for a 5-partition mirror in every codec, and a foreign write stopping a mirrored partition.

mod support;

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use rdkafka::consumer::{BaseConsumer, CommitMode, Consumer};
use rdkafka::{ClientConfig, Message, Offset, TopicPartitionList};
use support::data::watermarks;
use support::{
    consume_all, create_topic, produce_records, topic_name, Broker, Codec, StraitRun, TestRecord,
};

fn strait(args: &[&str]) -> (bool, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_strait"))
        .args(args)
        .output()
        .expect("run strait");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// `strait run` at log level info.
fn start(config: &Path, log: &Path) -> StraitRun {
    StraitRun::start_with(config, log, "info")
}

fn wait_until(what: &str, run: &StraitRun, mut cond: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(90);
    while !cond() {
        assert!(
            Instant::now() < deadline,
            "timed out waiting for {what}\n{}",
            run.log()
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

fn committed(bootstrap: &str, group: &str, topic: &str, partition: i32) -> Option<i64> {
    support::data::committed_offset(bootstrap, group, topic, partition)
}

/// Reads `n` records of partition 0 of `topic` as `group` from its committed offset, commits,
/// and returns their values.
fn consume_and_commit(bootstrap: &str, group: &str, topic: &str, n: usize) -> Vec<String> {
    let c: BaseConsumer = ClientConfig::new()
        .set("bootstrap.servers", bootstrap)
        .set("broker.address.family", "v4")
        .set("group.id", group)
        .set("enable.auto.commit", "false")
        .set("auto.offset.reset", "earliest")
        .create()
        .expect("consumer");
    let mut tpl = TopicPartitionList::new();
    tpl.add_partition_offset(topic, 0, Offset::Stored)
        .expect("tpl");
    c.assign(&tpl).expect("assign");
    let mut out = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(60);
    while out.len() < n && Instant::now() < deadline {
        match c.poll(Duration::from_millis(200)) {
            Some(Ok(m)) => {
                out.push(String::from_utf8_lossy(m.payload().unwrap_or_default()).into_owned())
            }
            // A group coordinator still loading or moving (Apache Kafka right after start):
            // librdkafka retries by itself.
            Some(Err(e)) => eprintln!("{group}: {e}"),
            None => {}
        }
    }
    assert_eq!(out.len(), n, "read {n} records of {topic} as {group}");
    // Nothing more to read: the consumer stops exactly at the log end.
    assert!(
        c.poll(Duration::from_millis(500)).is_none(),
        "more than {n} records"
    );
    c.commit_consumer_state(CommitMode::Sync).expect("commit");
    out
}

/// The body of `GET path` from the status server at `addr`.
fn http_get(addr: &str, path: &str) -> String {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(addr).expect("connect to the status server");
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
    )
    .expect("send");
    let mut raw = String::new();
    s.read_to_string(&mut raw).expect("read");
    raw.split_once("\r\n\r\n")
        .map(|x| x.1.to_string())
        .unwrap_or_default()
}

fn numbers(from: usize, to: usize) -> Vec<TestRecord> {
    (from..=to)
        .map(|i| TestRecord {
            partition: Some(0),
            ..TestRecord::kv(format!("k{i}"), i.to_string())
        })
        .collect()
}

fn end(bootstrap: &str, topic: &str, partition: usize) -> i64 {
    watermarks(bootstrap, topic)
        .get(partition)
        .map(|w| w.1)
        .unwrap_or(-1)
}

#[test]
fn cluster_linking_walkthrough() {
    let (west, proxy_west) = Broker::start_behind_proxy("west");
    let (east, proxy_east) = Broker::start_behind_proxy("east");
    let topic = "west-trades";
    let dir = std::env::temp_dir().join(topic_name("mirror-walkthrough"));
    std::fs::create_dir_all(&dir).expect("dir");
    let config = dir.join("link.toml");
    std::fs::write(
        &config,
        format!(
            "[clusters.west]\nbootstrap_servers = \"{}\"\n[clusters.east]\nbootstrap_servers = \"{}\"\n\
             [[flows]]\nsource = \"west\"\ntarget = \"east\"\nmode = \"mirror\"\nlink = \"west-link\"\n\
             topics = [\"west-trades\"]\nrefresh_topics_interval_secs = 1\n\
             consumer_offset_sync_interval_ms = 500\n\
             consumer_offset_group_filters = '{{\"groupFilters\":[{{\"name\":\"*\",\"patternType\":\"LITERAL\",\"filterType\":\"INCLUDE\"}}]}}'\n",
            west.bootstrap(),
            east.bootstrap()
        ),
    )
    .expect("config");
    let config_s = config.to_str().expect("utf-8 path");

    // 100 records produced and consumed on west by someGroup with commits.
    create_topic(&west.direct_bootstrap(), topic, 1);
    produce_records(
        &west.direct_bootstrap(),
        topic,
        &numbers(1, 100),
        Codec::None,
    );
    let first = consume_and_commit(&west.direct_bootstrap(), "someGroup", topic, 100);
    assert_eq!(first.first().map(String::as_str), Some("1"));
    assert_eq!(
        committed(&west.direct_bootstrap(), "someGroup", topic, 0),
        Some(100)
    );

    let run = start(&config, &dir.join("run.log"));
    // Within the sync interval east shows someGroup at 100 and west-trades ending at 100.
    wait_until("someGroup at 100 on east", &run, || {
        end(&east.direct_bootstrap(), topic, 0) == 100
            && committed(&east.direct_bootstrap(), "someGroup", topic, 0) == Some(100)
    });

    let (ok, out, err) = strait(&["mirror", "list", "--config", config_s]);
    assert!(ok, "{err}");
    assert!(
        out.lines().any(|l| l.starts_with("west-link")
            && l.contains("west-trades")
            && l.contains("active")),
        "{out}"
    );
    let (ok, out, err) = strait(&["mirror", "describe", "--config", config_s, "--topic", topic]);
    assert!(ok, "{err}");
    assert!(out.contains("identical"), "{out}");

    // someGroup is excluded from offset sync at runtime.
    let (ok, out, err) = strait(&[
        "mirror",
        "configure",
        "--config",
        config_s,
        "--link",
        "west-link",
        "--consumer-offset-group-filters",
        r#"{"groupFilters":[{"name":"*","patternType":"LITERAL","filterType":"INCLUDE"},{"name":"someGroup","patternType":"LITERAL","filterType":"EXCLUDE"}]}"#,
    ]);
    assert!(ok, "{err}");
    assert!(out.contains("applied by the running strait run"), "{out}");

    // 100 more on west; someGroup moves to east and reads exactly 101..200 there.
    produce_records(
        &west.direct_bootstrap(),
        topic,
        &numbers(101, 200),
        Codec::Lz4,
    );
    wait_until("west-trades at 200 on east", &run, || {
        end(&east.direct_bootstrap(), topic, 0) == 200
    });
    let on_east = consume_and_commit(&east.direct_bootstrap(), "someGroup", topic, 100);
    let want: Vec<String> = (101..=200).map(|i| i.to_string()).collect();
    assert_eq!(on_east, want);
    assert_eq!(
        committed(&east.direct_bootstrap(), "someGroup", topic, 0),
        Some(200)
    );
    // Several sync intervals later: west still 100, east still 200 (left alone).
    std::thread::sleep(Duration::from_secs(3));
    assert_eq!(
        committed(&west.direct_bootstrap(), "someGroup", topic, 0),
        Some(100)
    );
    assert_eq!(
        committed(&east.direct_bootstrap(), "someGroup", topic, 0),
        Some(200)
    );

    // Same offsets on both sides, record by record.
    let w = consume_all(
        &west.direct_bootstrap(),
        topic,
        200,
        Duration::from_secs(30),
    );
    let e = consume_all(
        &east.direct_bootstrap(),
        topic,
        200,
        Duration::from_secs(30),
    );
    type Row = (i64, Option<Vec<u8>>, Option<Vec<u8>>);
    let pairs = |v: &[support::OwnedRecord]| -> Vec<Row> {
        v.iter()
            .map(|r| (r.offset, r.key.clone(), r.value.clone()))
            .collect()
    };
    assert_eq!(pairs(&w), pairs(&e));

    let (ok, status, err) = strait(&["mirror", "status", "--config", config_s]);
    assert!(ok, "{err}");
    println!("{status}");
    let row: Vec<&str> = status
        .lines()
        .find(|l| l.starts_with("west-trades"))
        .unwrap_or_else(|| panic!("{status}"))
        .split_whitespace()
        .collect();
    // Topic Partition ClusterLink State SourceLogStart SourceLogEnd DestLogEnd Lag FetchLag CaughtUp Offsets
    // Status
    assert_eq!(
        row,
        [
            "west-trades",
            "0",
            "west-link",
            "active",
            "0",
            "200",
            "200",
            "0",
            "0",
            "true",
            "identical",
            "ACTIVE"
        ],
        "{status}"
    );

    // Promotion: east's west-trades becomes an ordinary writable topic.
    let (ok, out, err) = strait(&["mirror", "promote", "--config", config_s, "--topic", topic]);
    assert!(ok, "{out}{err}\n{}", run.log());
    assert!(out.contains("promoted"), "{out}");
    let local: Vec<TestRecord> = (0..10)
        .map(|i| TestRecord {
            partition: Some(0),
            ..TestRecord::kv("east", format!("east-{i}"))
        })
        .collect();
    produce_records(&east.direct_bootstrap(), topic, &local, Codec::None);
    produce_records(
        &west.direct_bootstrap(),
        topic,
        &numbers(201, 210),
        Codec::None,
    );
    std::thread::sleep(Duration::from_secs(3));
    let e = consume_all(
        &east.direct_bootstrap(),
        topic,
        210,
        Duration::from_secs(30),
    );
    assert_eq!(
        e.len(),
        210,
        "east: 200 mirrored + 10 written locally, nothing more"
    );
    assert_eq!(e[200].value.as_deref(), Some(&b"east-0"[..]));
    let log = run.log();
    assert!(
        !log.contains("written by something other than strait"),
        "{log}"
    );
    let (ok, out, _) = strait(&["mirror", "list", "--config", config_s]);
    assert!(ok && out.contains("promoted"), "{out}");
    let (ok, _, err) = strait(&["mirror", "pause", "--config", config_s, "--topic", topic]);
    assert!(!ok && err.contains("already ended"), "{err}");
    drop(run);
    proxy_west.assert_clean();
    proxy_east.assert_clean();
}

#[test]
fn identical_offsets_in_every_codec_and_foreign_writes_stop_a_partition() {
    let (west, _proxy_west) = Broker::start_behind_proxy("west");
    let (east, proxy_east) = Broker::start_behind_proxy("east");
    let topic = "trades";
    let existing = "preexisting";
    let dir = std::env::temp_dir().join(topic_name("mirror-codecs"));
    std::fs::create_dir_all(&dir).expect("dir");
    let config = dir.join("link.toml");
    std::fs::write(
        &config,
        format!(
            "[clusters.west]\nbootstrap_servers = \"{}\"\n[clusters.east]\nbootstrap_servers = \"{}\"\n\
             [[flows]]\nsource = \"west\"\ntarget = \"east\"\nmode = \"mirror\"\n\
             topics = [\"trades\", \"preexisting\"]\nrefresh_topics_interval_secs = 1\n",
            west.bootstrap(),
            east.bootstrap()
        ),
    )
    .expect("config");
    let config_s = config.to_str().expect("utf-8 path");
    let partitions = 5;
    create_topic(&west.direct_bootstrap(), topic, partitions);
    create_topic(&west.direct_bootstrap(), existing, 1);
    create_topic(&east.direct_bootstrap(), existing, 1);
    let per_codec = 20_000;
    let codecs = [
        Codec::None,
        Codec::Gzip,
        Codec::Snappy,
        Codec::Lz4,
        Codec::Zstd,
    ];
    for (c, codec) in codecs.iter().enumerate() {
        let records: Vec<TestRecord> = (0..per_codec)
            .map(|i| TestRecord {
                partition: Some((i % partitions as usize) as i32),
                headers: vec![("codec".into(), Some(codec.as_str().as_bytes().to_vec()))],
                ..TestRecord::kv(format!("key-{}", i % 97), format!("{}-{i}", codec.as_str()))
            })
            .collect();
        produce_records(&west.direct_bootstrap(), topic, &records, codecs[c]);
    }
    produce_records(
        &west.direct_bootstrap(),
        existing,
        &numbers(1, 10),
        Codec::None,
    );
    let total = per_codec * codecs.len();

    let run = start(&config, &dir.join("run.log"));
    let source_marks = watermarks(&west.direct_bootstrap(), topic);
    wait_until("every partition mirrored", &run, || {
        watermarks(&east.direct_bootstrap(), topic) == source_marks
    });
    let w = consume_all(
        &west.direct_bootstrap(),
        topic,
        total,
        Duration::from_secs(120),
    );
    let e = consume_all(
        &east.direct_bootstrap(),
        topic,
        total,
        Duration::from_secs(120),
    );
    assert_eq!(w.len(), total);
    let key = |r: &support::OwnedRecord| {
        (
            (r.partition, r.offset),
            (
                r.key.clone(),
                r.value.clone(),
                r.headers.clone(),
                r.timestamp,
            ),
        )
    };
    let w: BTreeMap<_, _> = w.iter().map(key).collect();
    let e: BTreeMap<_, _> = e.iter().map(key).collect();
    assert!(w == e, "same records at the same offsets on both sides");

    let (ok, out, err) = strait(&["mirror", "describe", "--config", config_s, "--topic", topic]);
    assert!(ok, "{err}");
    assert_eq!(
        out.matches("identical").count(),
        partitions as usize,
        "{out}"
    );
    wait_until("the pre-existing topic mirrored", &run, || {
        end(&east.direct_bootstrap(), existing, 0) == 10
    });
    let (ok, out, err) = strait(&[
        "mirror", "describe", "--config", config_s, "--topic", existing,
    ]);
    assert!(ok, "{err}");
    assert!(
        out.contains("the destination topic already existed"),
        "{out}"
    );
    assert!(run.log().contains("the destination topic already existed"));

    // Something else writes into partition 0 of the mirror: strait stops that partition and
    // says so; later source records of partition 0 are not interleaved; the others go on.
    let foreign = vec![TestRecord {
        partition: Some(0),
        ..TestRecord::kv("intruder", "x")
    }];
    produce_records(&east.direct_bootstrap(), topic, &foreign, Codec::None);
    wait_until("the foreign write reported", &run, || {
        run.log().contains("written by something other than strait")
    });
    let more: Vec<TestRecord> = (0..50)
        .map(|i| TestRecord {
            partition: Some(i % 2),
            ..TestRecord::kv("late", format!("late-{i}"))
        })
        .collect();
    produce_records(&west.direct_bootstrap(), topic, &more, Codec::None);
    let p1_end = watermarks(&west.direct_bootstrap(), topic)[1].1;
    wait_until("partition 1 goes on", &run, || {
        watermarks(&east.direct_bootstrap(), topic)[1].1 == p1_end
    });
    assert_eq!(
        watermarks(&east.direct_bootstrap(), topic)[0].1,
        source_marks[0].1 + 1,
        "partition 0: the mirrored records and the foreign one, nothing after"
    );
    let (ok, status, err) = strait(&["mirror", "status", "--config", config_s, "--topic", topic]);
    assert!(ok, "{err}");
    assert!(
        status
            .lines()
            .any(|l| l.starts_with("trades  0") && l.contains("stopped (foreign write)")),
        "{status}"
    );
    drop(run);
    proxy_east.assert_clean();
}

#[test]
fn pause_resume_and_failover_are_durable_and_taken_up_while_running() {
    let (west, _pw) = Broker::start_behind_proxy("west");
    let (east, proxy_east) = Broker::start_behind_proxy("east");
    let dir = std::env::temp_dir().join(topic_name("mirror-states"));
    std::fs::create_dir_all(&dir).expect("dir");
    let config = dir.join("link.toml");
    let http = format!("127.0.0.1:{}", support::broker::free_port());
    std::fs::write(
        &config,
        format!(
            "http = \"{http}\"\n[clusters.west]\nbootstrap_servers = \"{}\"\n[clusters.east]\nbootstrap_servers = \"{}\"\n\
             [[flows]]\nsource = \"west\"\ntarget = \"east\"\nmode = \"mirror\"\n\
             topics = [\"orders\", \"payments\"]\nrefresh_topics_interval_secs = 1\n",
            west.bootstrap(),
            east.bootstrap()
        ),
    )
    .expect("config");
    let c = config.to_str().expect("utf-8 path");
    let w = west.direct_bootstrap();
    let e = east.direct_bootstrap();
    for t in ["orders", "payments"] {
        create_topic(&w, t, 1);
        produce_records(&w, t, &numbers(1, 20), Codec::None);
    }
    let run = start(&config, &dir.join("run.log"));
    wait_until("both mirrored", &run, || {
        end(&e, "orders", 0) == 20 && end(&e, "payments", 0) == 20
    });

    // Pause: nothing more arrives until resume; the other mirror goes on.
    let (ok, out, err) = strait(&["mirror", "pause", "--config", c, "--topic", "orders"]);
    assert!(ok && out.contains("paused"), "{out}{err}");
    produce_records(&w, "orders", &numbers(21, 30), Codec::None);
    produce_records(&w, "payments", &numbers(21, 30), Codec::None);
    wait_until("payments goes on", &run, || end(&e, "payments", 0) == 30);
    std::thread::sleep(Duration::from_secs(2));
    assert_eq!(end(&e, "orders", 0), 20, "paused");
    let (ok, status, _) = strait(&["mirror", "status", "--config", c, "--topic", "orders"]);
    assert!(ok && status.contains("paused"), "{status}");
    let row: Vec<&str> = status
        .lines()
        .find(|l| l.starts_with("orders"))
        .unwrap_or_else(|| panic!("{status}"))
        .split_whitespace()
        .collect();
    assert_eq!(row[7], "10", "lag of 10 records: {status}");
    assert_eq!(row[9], "false", "not caught up: {status}");
    // The REST API shows the mirror states and who runs the flow.
    let api = http_get(&http, "/api/flows");
    let flows: serde_json::Value = serde_json::from_str(&api).expect("json");
    let flow = &flows["flows"][0];
    let states: BTreeMap<String, String> = flow["mirrors"]
        .as_array()
        .expect("mirrors")
        .iter()
        .map(|m| {
            (
                m["topic"].as_str().unwrap_or_default().to_string(),
                m["state"].as_str().unwrap_or_default().to_string(),
            )
        })
        .collect();
    assert_eq!(
        states.get("orders").map(String::as_str),
        Some("paused"),
        "{api}"
    );
    assert_eq!(
        states.get("payments").map(String::as_str),
        Some("active"),
        "{api}"
    );
    assert_eq!(
        flow["members"].as_array().map(|m| m.len()),
        Some(1),
        "{api}"
    );
    let (ok, out, err) = strait(&["mirror", "resume", "--config", c, "--topic", "orders"]);
    assert!(ok && out.contains("resumed"), "{out}{err}");
    wait_until("orders resumed", &run, || end(&e, "orders", 0) == 30);

    // Failover while strait is stopped: stored, and applied by the next run before it writes.
    drop(run);
    let (ok, _, err) = strait(&[
        "mirror",
        "failover",
        "--config",
        c,
        "--topic",
        "orders",
        "--timeout",
        "1",
    ]);
    assert!(
        !ok && err.contains("no running `strait run` took it yet"),
        "{err}"
    );
    produce_records(&w, "orders", &numbers(31, 40), Codec::None);
    produce_records(&w, "payments", &numbers(31, 40), Codec::None);
    let run = start(&config, &dir.join("run2.log"));
    wait_until("payments after restart", &run, || {
        end(&e, "payments", 0) == 40
    });
    let (ok, out, _) = strait(&["mirror", "list", "--config", c]);
    assert!(
        ok && out
            .lines()
            .any(|l| l.contains("orders") && l.contains("failed_over")),
        "{out}"
    );
    std::thread::sleep(Duration::from_secs(2));
    assert_eq!(end(&e, "orders", 0), 30, "failed over: never written again");

    // Failover while running: returns once strait stopped writing.
    let (ok, out, err) = strait(&["mirror", "failover", "--config", c, "--topic", "payments"]);
    assert!(ok && out.contains("failed over"), "{out}{err}");
    produce_records(&w, "payments", &numbers(41, 50), Codec::None);
    produce_records(&e, "payments", &numbers(1, 5), Codec::None);
    std::thread::sleep(Duration::from_secs(2));
    assert_eq!(end(&e, "payments", 0), 45, "40 mirrored + 5 local");
    assert!(
        !run.log().contains("something other than strait"),
        "{}",
        run.log()
    );
    drop(run);
    proxy_east.assert_clean();
}

/// Issue 32, the group offset sync rule for mirror flows: a group reset backwards on the source
/// (to read again) is reset on the destination too, as Cluster Linking's consumer offset sync
/// does, and a consumer moved there then reads from exactly the rewound position.
#[test]
fn a_group_rewound_on_the_source_is_rewound_on_the_mirror() {
    let west = Broker::start("rewind-west");
    let east = Broker::start("rewind-east");
    let topic = "rewound";
    create_topic(&west.bootstrap(), topic, 1);
    produce_records(&west.bootstrap(), topic, &numbers(1, 200), Codec::None);
    let dir = std::env::temp_dir().join(topic_name("mirror-rewind"));
    std::fs::create_dir_all(&dir).expect("dir");
    let config = dir.join("link.toml");
    std::fs::write(
        &config,
        format!(
            "[clusters.west]\nbootstrap_servers = \"{}\"\n[clusters.east]\nbootstrap_servers = \"{}\"\n\
             [[flows]]\nsource = \"west\"\ntarget = \"east\"\nmode = \"mirror\"\nlink = \"l\"\n\
             topics = [\"rewound\"]\nrefresh_topics_interval_secs = 1\n\
             consumer_offset_sync_interval_ms = 500\n",
            west.bootstrap(),
            east.bootstrap()
        ),
    )
    .expect("config");
    let run = start(&config, &dir.join("run.log"));
    support::data::commit_group(&west.bootstrap(), "rewinder", topic, 1, 150);
    wait_until("rewinder at 150 on east", &run, || {
        end(&east.bootstrap(), topic, 0) == 200
            && committed(&east.bootstrap(), "rewinder", topic, 0) == Some(150)
    });
    // Reset on the source, as `kafka-consumer-groups --reset-offsets --to-offset 40` does.
    support::data::commit_group(&west.bootstrap(), "rewinder", topic, 1, 40);
    wait_until("rewinder back at 40 on east", &run, || {
        committed(&east.bootstrap(), "rewinder", topic, 0) == Some(40)
    });
    let read = consume_and_commit(&east.bootstrap(), "rewinder", topic, 160);
    assert_eq!(read.first().map(String::as_str), Some("41"));
    assert_eq!(read.last().map(String::as_str), Some("200"));
    let log = run.stop();
    assert!(!log.contains("consumer offset sync failed"), "{log}");
}
