//! The data path against a source with two leaders, and a stop during a long poll.
//!
//! `SplitLeaders` makes one Kafka broker look like two (even partitions led by broker 1, odd
//! ones by broker 2), so the flow keeps one Fetch outstanding per leader and takes each answer in
//! as it arrives: a slow leader does not hold up the other's partitions.

mod support;

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use support::data::watermarks;
use support::leaders::SplitLeaders;
use support::{consume_all, create_topic, produce_records, topic_name, Broker, Codec, TestRecord};

const TOPIC: &str = "events";
const REMOTE: &str = "a.events";
const PARTITIONS: i32 = 4;

/// A record's key and value.
type KeyValue = (Option<Vec<u8>>, Vec<u8>);

fn by_partition(v: &[support::OwnedRecord]) -> BTreeMap<i32, Vec<KeyValue>> {
    let mut m: BTreeMap<i32, Vec<KeyValue>> = BTreeMap::new();
    for r in v {
        m.entry(r.partition)
            .or_default()
            .push((r.key.clone(), r.value.clone().unwrap_or_default()));
    }
    m
}

#[test]
fn fetches_from_every_leader_and_stops_without_waiting_for_a_long_poll() {
    let a = Broker::start("a");
    let (b, proxy_b) = Broker::start_behind_proxy("b");
    create_topic(&a.bootstrap(), TOPIC, PARTITIONS);
    let records: Vec<TestRecord> = (0..6000)
        .map(|i| TestRecord {
            partition: Some(i % PARTITIONS),
            ..TestRecord::kv(format!("k{}", i % 101), format!("value-{i}"))
        })
        .collect();
    produce_records(&a.bootstrap(), TOPIC, &records[..3000], Codec::Lz4);
    produce_records(&a.bootstrap(), TOPIC, &records[3000..], Codec::None);

    let split = SplitLeaders::start(&a.bootstrap());
    // Broker 1 is slow: each of its Fetch answers comes a second late.
    split.delay_fetch_answers(1, Duration::from_secs(1));
    let dir = std::env::temp_dir().join(topic_name("leaders"));
    std::fs::create_dir_all(&dir).expect("dir");
    let config = dir.join("leaders.toml");
    // A long configured wait: once the flow is idle, its Fetch waits double up to 15 s long polls (the broker
    // holds it to the end when nothing arrives). No heartbeats, which would keep the flow busy every second.
    std::fs::write(
        &config,
        format!(
            "[clusters.a]\nbootstrap_servers = \"{}\"\n[clusters.b]\nbootstrap_servers = \"{}\"\n\
             [[flows]]\nsource = \"a\"\ntarget = \"b\"\ntopics = [\"{TOPIC}\"]\n\
             fetch_max_wait_ms = 15000\nfetch_max_bytes = 65536\nemit_heartbeats = false\n",
            split.bootstrap(),
            b.bootstrap()
        ),
    )
    .expect("config");
    let mut run = support::StraitRun::start(&config, &dir.join("strait.log"));

    let source = watermarks(&a.bootstrap(), TOPIC);
    let deadline = Instant::now() + Duration::from_secs(90);
    // Fetch requests broker 2 got while broker 1's first (slow) answer was still out.
    let mut while_broker_1_answers = 0;
    loop {
        let fetches = split.fetches();
        if fetches[0] <= 1 {
            while_broker_1_answers = while_broker_1_answers.max(fetches[1]);
        }
        if watermarks(&b.direct_bootstrap(), REMOTE) == source {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "target never caught up: {:?} vs {source:?}\n{}",
            watermarks(&b.direct_bootstrap(), REMOTE),
            run.log()
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    assert!(split.problems().is_empty(), "{:?}", split.problems());

    // Every record once, in order, with its key, on the partition it came from.
    let on_a = consume_all(
        &a.bootstrap(),
        TOPIC,
        records.len(),
        Duration::from_secs(60),
    );
    let on_b = consume_all(
        &b.direct_bootstrap(),
        REMOTE,
        records.len(),
        Duration::from_secs(60),
    );
    assert_eq!(on_a.len(), records.len());
    assert!(
        by_partition(&on_a) == by_partition(&on_b),
        "same records per partition ({} on a, {} on b)",
        on_a.len(),
        on_b.len()
    );
    proxy_b.assert_clean();

    // Broker 2 was asked again each time it answered, not once per slow answer of broker 1:
    // while broker 1's first answer took its second, broker 2 answered several times (10 ms
    // waits after data, then doubling).
    let fetches = split.fetches();
    assert!(
        fetches[0] > 0 && while_broker_1_answers >= 3,
        "Fetch requests to broker 2 while broker 1's first answer was out: {while_broker_1_answers}; in all, to broker 1 and 2: {fetches:?}\n{}",
        run.log()
    );
    // Idle: after data the waits double from 10 ms (10, 20, ... 5 120 ms: 10.2 s in all), so
    // 12 s later the Fetch requests out are long polls of 10 s or more, begun about 2 s ago. A
    // stop does not wait for them.
    std::thread::sleep(Duration::from_secs(12));
    let asked = Instant::now();
    assert!(
        run.terminate(Duration::from_secs(10)),
        "clean stop\n{}",
        run.log()
    );
    let took = asked.elapsed();
    assert!(
        took < Duration::from_secs(6),
        "stopped in {took:?}, not before the long poll ended\n{}",
        run.log()
    );
    assert!(run.log().contains("stopped"), "{}", run.log());
}
