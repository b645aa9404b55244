//! What only a real Apache Kafka can show (issue 17): transactions on the source (committed
//! and aborted, with their control batches), partitions added to a source topic while strait
//! runs, and long polls answered as soon as data arrives. Data checked with rdkafka.

mod support;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use rdkafka::admin::{AdminClient, AdminOptions, NewPartitions};
use rdkafka::client::DefaultClientContext;
use rdkafka::config::ClientConfig;
use rdkafka::producer::{BaseRecord, DefaultProducerContext, Producer, ThreadedProducer};

use support::data::watermarks;
use support::kafka::{
    start_kafka, start_kafka_behind_proxy, start_kafka_with, KafkaCluster, KafkaOptions,
};
use support::strait::wait_until;
use support::{
    consume_all, create_topic, produce_records, topic_name, Codec, StraitRun, TestRecord,
};

fn write_config(dir: &Path, a: &KafkaCluster, b: &str, topic: &str, extra: &str) -> PathBuf {
    let config = dir.join("strait.toml");
    std::fs::write(
        &config,
        format!(
            "instance_group = \"{}\"\n\
             [clusters.a]\nbootstrap_servers = \"{}\"\n[clusters.b]\nbootstrap_servers = \"{b}\"\n\
             [[flows]]\nsource = \"a\"\ntarget = \"b\"\ntopics = [\"{topic}\"]\n\
             refresh_topics_interval_secs = 2\n{extra}",
            topic_name("g"),
            a.bootstrap()
        ),
    )
    .expect("write config");
    config
}

fn values_by_partition(bootstrap: &str, topic: &str, n: usize) -> BTreeMap<i32, Vec<String>> {
    let mut m: BTreeMap<i32, Vec<String>> = BTreeMap::new();
    for r in consume_all(bootstrap, topic, n, Duration::from_secs(60)) {
        m.entry(r.partition)
            .or_default()
            .push(String::from_utf8_lossy(&r.value.unwrap_or_default()).into_owned());
    }
    m
}

/// A transactional producer writes committed and aborted transactions into the source: the
/// target holds exactly the committed records, in order, and nothing of the aborted ones.
#[test]
fn only_committed_transactions_reach_the_target() {
    let a = start_kafka("a");
    let (b, proxy) = start_kafka_behind_proxy("b");
    let topic = "payments";
    create_topic(&a.bootstrap(), topic, 2);
    let producer: ThreadedProducer<DefaultProducerContext> = ClientConfig::new()
        .set("bootstrap.servers", a.bootstrap())
        .set("transactional.id", topic_name("txn"))
        .set("linger.ms", "5")
        .create()
        .expect("transactional producer");
    producer
        .init_transactions(Duration::from_secs(30))
        .expect("init transactions");
    let mut committed = Vec::new();
    for round in 0..6 {
        producer.begin_transaction().expect("begin");
        let keep = round % 2 == 0;
        for i in 0..50 {
            let value = format!("{}-{round}-{i}", if keep { "kept" } else { "aborted" });
            let p = i % 2;
            producer
                .send(BaseRecord::to(topic).partition(p).key("k").payload(&value))
                .map_err(|(e, _)| e)
                .expect("send");
            if keep {
                committed.push((p, value));
            }
        }
        // Sent before the end of the transaction (librdkafka drops what is still queued when
        // a transaction aborts): the aborted records really are in the source log.
        producer.flush(Duration::from_secs(30)).expect("flush");
        if keep {
            producer
                .commit_transaction(Duration::from_secs(30))
                .expect("commit");
        } else {
            producer
                .abort_transaction(Duration::from_secs(30))
                .expect("abort");
        }
    }
    let dir = std::env::temp_dir().join(topic_name("txn"));
    std::fs::create_dir_all(&dir).expect("dir");
    let config = write_config(&dir, &a, &b.bootstrap(), topic, "");
    let run = StraitRun::start(&config, &dir.join("run.log"));
    let remote = format!("a.{topic}");
    let b_direct = b.direct_bootstrap();
    wait_until(
        "150 committed records on b",
        Duration::from_secs(60),
        &run,
        || {
            watermarks(&b_direct, &remote)
                .iter()
                .map(|w| w.1)
                .sum::<i64>()
                >= 150
        },
    );
    std::thread::sleep(Duration::from_secs(2));
    let ends: i64 = watermarks(&b_direct, &remote).iter().map(|w| w.1).sum();
    assert_eq!(
        ends, 150,
        "only the committed records, and no marker, on the target"
    );
    let got = values_by_partition(&b_direct, &remote, 150);
    let mut want: BTreeMap<i32, Vec<String>> = BTreeMap::new();
    for (p, v) in committed {
        want.entry(p).or_default().push(v);
    }
    assert_eq!(got, want);
    drop(run);
    proxy.assert_clean();
}

/// Partitions added to a source topic while strait runs are added to the remote topic and
/// replicated from their first record.
#[test]
fn partitions_added_to_a_source_topic_are_followed() {
    let a = start_kafka("a");
    let (b, proxy) = start_kafka_behind_proxy("b");
    let topic = "growing";
    create_topic(&a.bootstrap(), topic, 2);
    let records = |from: usize, parts: i32| -> Vec<TestRecord> {
        (from..from + 120)
            .map(|i| TestRecord {
                partition: Some((i % parts as usize) as i32),
                ..TestRecord::kv(format!("k{i}"), format!("v{i}"))
            })
            .collect()
    };
    produce_records(&a.bootstrap(), topic, &records(0, 2), Codec::Zstd);
    let dir = std::env::temp_dir().join(topic_name("grow"));
    std::fs::create_dir_all(&dir).expect("dir");
    let config = write_config(&dir, &a, &b.bootstrap(), topic, "");
    let run = StraitRun::start(&config, &dir.join("run.log"));
    let remote = format!("a.{topic}");
    let b_direct = b.direct_bootstrap();
    wait_until("2 partitions on b", Duration::from_secs(60), &run, || {
        watermarks(&b_direct, &remote) == watermarks(&a.bootstrap(), topic)
    });

    let admin: AdminClient<DefaultClientContext> = ClientConfig::new()
        .set("bootstrap.servers", a.bootstrap())
        .create()
        .expect("admin");
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let res = rt
        .block_on(admin.create_partitions(
            &[NewPartitions::new(topic, 4)],
            &AdminOptions::new().operation_timeout(Some(Duration::from_secs(30))),
        ))
        .expect("create partitions");
    assert!(res.iter().all(|r| r.is_ok()), "{res:?}");
    support::data::wait_for_partitions(&a.bootstrap(), topic, 4, Duration::from_secs(30));
    produce_records(&a.bootstrap(), topic, &records(120, 4), Codec::Zstd);
    wait_until(
        "4 partitions on b, each where the source ends",
        Duration::from_secs(90),
        &run,
        || watermarks(&b_direct, &remote) == watermarks(&a.bootstrap(), topic),
    );
    assert_eq!(watermarks(&b_direct, &remote).len(), 4);
    let src = values_by_partition(&a.bootstrap(), topic, 240);
    let dst = values_by_partition(&b_direct, &remote, 240);
    assert_eq!(src, dst);
    assert!(
        run.log().contains("added partitions to the remote topic"),
        "{}",
        run.log()
    );
    drop(run);
    proxy.assert_clean();
}

/// An idle flow's Fetch is answered when data arrives, not when the wait runs out: with a 5 s
/// fetch wait, single records written one at a time reach the target in well under a second.
#[test]
fn long_polls_are_answered_when_data_arrives() {
    let a = start_kafka("a");
    let (b, proxy) = start_kafka_behind_proxy("b");
    let topic = "trickle";
    create_topic(&a.bootstrap(), topic, 1);
    produce_records(
        &a.bootstrap(),
        topic,
        &[TestRecord::kv("k", "warm-up")],
        Codec::None,
    );
    let dir = std::env::temp_dir().join(topic_name("trickle"));
    std::fs::create_dir_all(&dir).expect("dir");
    let config = write_config(
        &dir,
        &a,
        &b.bootstrap(),
        topic,
        "fetch_max_wait_ms = 5000\n",
    );
    let run = StraitRun::start(&config, &dir.join("run.log"));
    let remote = format!("a.{topic}");
    let b_direct = b.direct_bootstrap();
    let end = |w: Vec<(i64, i64)>| w.first().map(|x| x.1).unwrap_or(0);
    wait_until("warm-up on b", Duration::from_secs(60), &run, || {
        end(watermarks(&b_direct, &remote)) == 1
    });
    let mut delays = Vec::new();
    for i in 0..8 {
        std::thread::sleep(Duration::from_millis(700));
        let sent = Instant::now();
        produce_records(
            &a.bootstrap(),
            topic,
            &[TestRecord::kv("k", format!("t{i}"))],
            Codec::None,
        );
        wait_until("the record on b", Duration::from_secs(20), &run, || {
            end(watermarks(&b_direct, &remote)) == i + 2
        });
        delays.push(sent.elapsed());
    }
    delays.sort();
    let p75 = delays[delays.len() * 3 / 4];
    eprintln!("trickle delays: {delays:?}");
    assert!(
        p75 < Duration::from_millis(2500),
        "records waited for the fetch wait to run out: {delays:?}"
    );
    // The broker opened a fetch session and the later fetches were incremental (KIP-227).
    let log = run.stop();
    let incremental: u64 = log
        .split("incremental_fetches=")
        .nth(1)
        .and_then(|rest| rest.split(|c: char| !c.is_ascii_digit()).next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no fetch counts in the log:\n{log}"));
    assert!(incremental > 0, "no incremental fetch:\n{log}");
    proxy.assert_clean();
}

/// Topic configs are copied from the source topic's own settings (DescribeConfigs lists the
/// broker's defaults too; those are not turned into overrides on the target).
#[test]
fn only_a_topics_own_settings_are_copied() {
    use rdkafka::admin::{ConfigSource, ResourceSpecifier};
    let a = start_kafka("a");
    let (b, proxy) = start_kafka_behind_proxy("b");
    let topic = "configured";
    support::data::create_topic_with_config(
        &a.bootstrap(),
        topic,
        1,
        &[
            ("retention.ms", "3600000"),
            ("max.message.bytes", "2000000"),
        ],
    );
    produce_records(
        &a.bootstrap(),
        topic,
        &[TestRecord::kv("k", "v")],
        Codec::None,
    );
    let dir = std::env::temp_dir().join(topic_name("configs"));
    std::fs::create_dir_all(&dir).expect("dir");
    let config = write_config(&dir, &a, &b.bootstrap(), topic, "");
    let run = StraitRun::start(&config, &dir.join("run.log"));
    let remote = format!("a.{topic}");
    let b_direct = b.direct_bootstrap();
    wait_until("the record on b", Duration::from_secs(60), &run, || {
        watermarks(&b_direct, &remote).first().map(|w| w.1) == Some(1)
    });
    let admin: AdminClient<DefaultClientContext> = ClientConfig::new()
        .set("bootstrap.servers", &b_direct)
        .create()
        .expect("admin");
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let res = rt
        .block_on(admin.describe_configs(
            &[ResourceSpecifier::Topic(&remote)],
            &AdminOptions::new().request_timeout(Some(Duration::from_secs(30))),
        ))
        .expect("describe configs");
    let resource = res
        .into_iter()
        .next()
        .expect("one resource")
        .expect("no error");
    let overrides: BTreeMap<String, Option<String>> = resource
        .entries
        .iter()
        .filter(|e| e.source == ConfigSource::DynamicTopic)
        .map(|e| (e.name.clone(), e.value.clone()))
        .collect();
    assert_eq!(
        overrides.get("retention.ms"),
        Some(&Some("3600000".to_string())),
        "{overrides:?}"
    );
    assert_eq!(
        overrides.get("max.message.bytes"),
        Some(&Some("2000000".to_string())),
        "{overrides:?}"
    );
    // What records the topic keeps, their size and timestamps are copied from the source
    // whatever sets them; the rest only where the source topic sets it (no broker default such
    // as segment.bytes or retention.bytes becomes an override).
    assert_eq!(
        overrides.get("cleanup.policy"),
        Some(&Some("delete".to_string())),
        "{overrides:?}"
    );
    assert_eq!(
        overrides.keys().cloned().collect::<Vec<_>>(),
        [
            "cleanup.policy",
            "max.message.bytes",
            "message.timestamp.type",
            "retention.ms"
        ],
        "{overrides:?}"
    );
    drop(run);
    proxy.assert_clean();
}

/// A compacted source topic after Apache Kafka's own log cleaner removed records (offset gaps
/// inside and between batches): replicated with the offset map, every key's latest value on
/// the target, in the source's order.
#[test]
fn a_topic_compacted_by_the_log_cleaner_is_replicated_exactly() {
    let mut opts = KafkaOptions::new("a");
    opts.properties = vec![
        ("log.cleaner.backoff.ms".into(), "300".into()),
        ("log.cleaner.min.compaction.lag.ms".into(), "0".into()),
    ];
    let a = start_kafka_with(opts);
    // The target's cleaner waits (it would compact the copy too, which is not under test).
    let mut target = KafkaOptions::new("b");
    target.properties = vec![("log.cleaner.backoff.ms".into(), "3600000".into())];
    let (b, proxy) =
        support::kafka::start_kafka_behind_proxy_with(target, support::ProxyConfig::default());
    let topic = "compacted";
    support::data::create_topic_with_config(
        &a.bootstrap(),
        topic,
        1,
        &[
            ("cleanup.policy", "compact"),
            ("segment.ms", "100"),
            ("min.cleanable.dirty.ratio", "0.01"),
            ("delete.retention.ms", "100"),
        ],
    );
    // Ten rounds over the same 20 keys, in separate segments (time-rolled).
    let mut produced = 0;
    for round in 0..10 {
        let records: Vec<TestRecord> = (0..100)
            .map(|i| TestRecord {
                partition: Some(0),
                ..TestRecord::kv(format!("key-{}", i % 20), format!("r{round}-{i}"))
            })
            .collect();
        produce_records(&a.bootstrap(), topic, &records, Codec::Lz4);
        produced += records.len();
        std::thread::sleep(Duration::from_millis(250));
    }
    // Until the cleaner has removed records (offsets no longer contiguous).
    let deadline = Instant::now() + Duration::from_secs(90);
    let source = loop {
        let end = watermarks(&a.bootstrap(), topic)[0].1 as usize;
        let got = consume_all(&a.bootstrap(), topic, end, Duration::from_secs(5));
        if got.len() < produced {
            break got;
        }
        assert!(Instant::now() < deadline, "the log cleaner never ran");
        // New records roll the active segment so the older ones can be cleaned.
        produce_records(
            &a.bootstrap(),
            topic,
            &[TestRecord {
                partition: Some(0),
                ..TestRecord::kv("key-0", "tick")
            }],
            Codec::None,
        );
        produced += 1;
        std::thread::sleep(Duration::from_millis(500));
    };
    let end = watermarks(&a.bootstrap(), topic)[0].1;
    let dir = std::env::temp_dir().join(topic_name("compacted"));
    std::fs::create_dir_all(&dir).expect("dir");
    let config = write_config(&dir, &a, &b.bootstrap(), topic, "");
    let run = StraitRun::start(&config, &dir.join("run.log"));
    let remote = format!("a.{topic}");
    let b_direct = b.direct_bootstrap();
    // Every source record that survived the cleaner is on the target, renumbered contiguously.
    wait_until(
        "the compacted topic on b",
        Duration::from_secs(60),
        &run,
        || watermarks(&b_direct, &remote).first().map(|w| w.1) == Some(source.len() as i64),
    );
    let target = consume_all(&b_direct, &remote, source.len(), Duration::from_secs(30));
    let pairs = |v: &[support::OwnedRecord]| -> Vec<(Vec<u8>, Vec<u8>)> {
        v.iter()
            .map(|r| {
                (
                    r.key.clone().unwrap_or_default(),
                    r.value.clone().unwrap_or_default(),
                )
            })
            .collect()
    };
    assert_eq!(
        pairs(&target),
        pairs(&source),
        "the source's records, in order"
    );
    assert!(
        source.last().map(|r| r.offset + 1) <= Some(end),
        "source offsets have gaps: {} records below offset {end}",
        source.len()
    );
    drop(run);
    proxy.assert_clean();
}

/// Groups positioned inside and after source transactions fail over exactly: `strait offsets
/// --export` translates their offsets across the dropped ranges (aborted records and markers),
/// and a read_committed consumer of the target starts at exactly the next committed record. A
/// read_uncommitted reader of the target sees the same records (strait writes no transaction
/// there).
#[test]
fn groups_inside_and_after_transactions_fail_over_exactly() {
    use rdkafka::consumer::{BaseConsumer, CommitMode, Consumer};
    use rdkafka::{Message, Offset, TopicPartitionList};
    let a = start_kafka("a");
    let (b, proxy) = start_kafka_behind_proxy("b");
    let topic = "ledger";
    create_topic(&a.bootstrap(), topic, 1);
    let producer: ThreadedProducer<DefaultProducerContext> = ClientConfig::new()
        .set("bootstrap.servers", a.bootstrap())
        .set("transactional.id", topic_name("ledger-txn"))
        .create()
        .expect("transactional producer");
    producer
        .init_transactions(Duration::from_secs(30))
        .expect("init");
    // Committed A (0..49, marker 50), aborted B (51..100, marker 101), committed C (102..151,
    // marker 152).
    for (name, commit) in [("A", true), ("B", false), ("C", true)] {
        producer.begin_transaction().expect("begin");
        for i in 0..50 {
            let v = format!("{name}-{i}");
            producer
                .send(BaseRecord::to(topic).partition(0).key("k").payload(&v))
                .map_err(|(e, _)| e)
                .expect("send");
        }
        // Sent before the end of the transaction (librdkafka drops what is still queued when
        // a transaction aborts).
        producer.flush(Duration::from_secs(30)).expect("flush");
        if commit {
            producer
                .commit_transaction(Duration::from_secs(30))
                .expect("commit");
        } else {
            producer
                .abort_transaction(Duration::from_secs(30))
                .expect("abort");
        }
    }
    assert_eq!(watermarks(&a.bootstrap(), topic)[0].1, 153);
    // g.inside has read A (next: 51, inside the aborted transaction); g.after everything.
    let commit = |group: &str, offset: i64| {
        let c: BaseConsumer = ClientConfig::new()
            .set("bootstrap.servers", a.bootstrap())
            .set("group.id", group)
            .set("enable.auto.commit", "false")
            .create()
            .expect("consumer");
        let mut tpl = TopicPartitionList::new();
        tpl.add_partition_offset(topic, 0, Offset::Offset(offset))
            .expect("tpl");
        c.commit(&tpl, CommitMode::Sync).expect("commit");
    };
    commit("g.inside", 51);
    commit("g.after", 153);

    let dir = std::env::temp_dir().join(topic_name("txn-failover"));
    std::fs::create_dir_all(&dir).expect("dir");
    let config = write_config(
        &dir,
        &a,
        &b.bootstrap(),
        topic,
        "groups = [\"g\\\\..*\"]\ncheckpoint_interval_secs = 1\n",
    );
    let run = StraitRun::start(&config, &dir.join("run.log"));
    let remote = format!("a.{topic}");
    let b_direct = b.direct_bootstrap();
    wait_until("A and C on b", Duration::from_secs(60), &run, || {
        watermarks(&b_direct, &remote).first().map(|w| w.1) == Some(100)
    });
    let export = |group: &str| -> Option<i64> {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_strait"))
            .args(["offsets", "--config"])
            .arg(&config)
            .args([
                "--source", "a", "--target", "b", "--group", group, "--export",
            ])
            .output()
            .expect("strait offsets");
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        text.lines()
            .find(|l| l.starts_with(&format!("{remote},0,")))
            .and_then(|l| l.rsplit(',').next()?.parse().ok())
    };
    let mut translated = (None, None);
    let deadline = Instant::now() + Duration::from_secs(60);
    while translated.0.is_none() || translated.1.is_none() {
        translated = (export("g.inside"), export("g.after"));
        assert!(
            Instant::now() < deadline,
            "no checkpoints: {translated:?}\n{}",
            run.log()
        );
        std::thread::sleep(Duration::from_millis(500));
    }
    // A took target offsets 0..49 and C 50..99: inside B is just before C; the end is 100.
    assert_eq!(translated, (Some(50), Some(100)));

    // The group moves: a read_committed consumer of the target from the translated offset reads
    // exactly C's first record; both isolation levels see the same log (no transaction there).
    for isolation in ["read_committed", "read_uncommitted"] {
        let c: BaseConsumer = ClientConfig::new()
            .set("bootstrap.servers", &b_direct)
            .set("group.id", topic_name("reader"))
            .set("isolation.level", isolation)
            .set("enable.auto.commit", "false")
            .create()
            .expect("consumer");
        let mut tpl = TopicPartitionList::new();
        tpl.add_partition_offset(&remote, 0, Offset::Offset(50))
            .expect("tpl");
        c.assign(&tpl).expect("assign");
        let deadline = Instant::now() + Duration::from_secs(30);
        let first = loop {
            if let Some(Ok(m)) = c.poll(Duration::from_millis(200)) {
                break String::from_utf8_lossy(m.payload().unwrap_or_default()).into_owned();
            }
            assert!(Instant::now() < deadline, "{isolation}: nothing to read");
        };
        assert_eq!(first, "C-0", "{isolation}");
    }
    drop(run);
    proxy.assert_clean();
}
