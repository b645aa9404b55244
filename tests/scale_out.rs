//! Issue 9 acceptance: several `strait run` processes share a flow through Kafka's group
//! protocol on the target cluster. Under continuous production one instance is stopped with
//! SIGTERM, one is killed with -9 and restarted, and a fourth joins; afterwards every source
//! record is on the target exactly once, and every partition has exactly one owner.

mod support;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use support::data::watermarks;
use support::{
    consume_all, create_topic, produce_records, topic_name, Broker, Codec, StraitRun, TestRecord,
};

const PARTITIONS: i32 = 24;
const TOPIC: &str = "events";
const REMOTE: &str = "a.events";

/// One instance: `strait run` at log level info.
fn instance(config: &Path, log: PathBuf) -> StraitRun {
    StraitRun::start_with(config, &log, "info")
}

/// `strait members --units`: (member, unit) lines.
fn units(config: &Path) -> Vec<(String, String)> {
    let out = Command::new(env!("CARGO_BIN_EXE_strait"))
        .args(["members", "--units", "--config"])
        .arg(config)
        .output()
        .expect("strait members");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| {
            let mut f = l.split_whitespace();
            let _target = f.next()?;
            Some((f.next()?.to_string(), f.next()?.to_string()))
        })
        .collect()
}

/// Waits until `n` members run every unit (the 24 partitions of `events`, the one of the
/// source's `heartbeats` topic and the flow's duties), each unit once and every member some.
fn wait_for_members(config: &Path, n: usize, logs: &[&StraitRun]) -> BTreeMap<String, usize> {
    let deadline = Instant::now() + Duration::from_secs(90);
    loop {
        let u = units(config);
        let mut per_member: BTreeMap<String, usize> = BTreeMap::new();
        let mut distinct = BTreeSet::new();
        for (m, unit) in &u {
            *per_member.entry(m.clone()).or_default() += 1;
            distinct.insert(unit.clone());
        }
        let events = distinct
            .iter()
            .filter(|x| x.starts_with("p|a->b|events|"))
            .count();
        if per_member.len() == n
            && events == PARTITIONS as usize
            && u.len() == PARTITIONS as usize + 2
            && distinct.len() == u.len()
            && per_member.values().all(|c| *c > 0)
        {
            return per_member;
        }
        if Instant::now() > deadline {
            let logs: String = logs
                .iter()
                .map(|i| i.log())
                .collect::<Vec<_>>()
                .join("\n-----\n");
            panic!("timed out waiting for {n} members; last: {u:?}\n{logs}");
        }
        std::thread::sleep(Duration::from_millis(300));
    }
}

#[test]
fn instances_share_partitions_and_hand_them_over_exactly_once() {
    let a = Broker::start("a");
    let (b, proxy_b) = Broker::start_behind_proxy("b");
    let dir = std::env::temp_dir().join(topic_name("scale-out"));
    std::fs::create_dir_all(&dir).expect("dir");
    let config = dir.join("scale.toml");
    std::fs::write(
        &config,
        format!(
            "[clusters.a]\nbootstrap_servers = \"{}\"\n[clusters.b]\nbootstrap_servers = \"{}\"\n\
             [[flows]]\nsource = \"a\"\ntarget = \"b\"\ntopics = [\"events\"]\n\
             refresh_topics_interval_secs = 5\ncheckpoint_interval_secs = 1\n",
            a.bootstrap(),
            b.bootstrap()
        ),
    )
    .expect("config");
    create_topic(&a.bootstrap(), TOPIC, PARTITIONS);

    // Continuous production in the background.
    let stop = Arc::new(AtomicBool::new(false));
    let produced = Arc::new(AtomicUsize::new(0));
    let producer = {
        let (stop, produced, bootstrap) = (stop.clone(), produced.clone(), a.bootstrap());
        std::thread::spawn(move || {
            let mut seq = 0usize;
            while !stop.load(Ordering::Relaxed) {
                let chunk: Vec<TestRecord> = (seq..seq + 480)
                    .map(|i| TestRecord {
                        partition: Some((i % PARTITIONS as usize) as i32),
                        ..TestRecord::kv(format!("k{}", i % 97), format!("seq-{i}"))
                    })
                    .collect();
                produce_records(&bootstrap, TOPIC, &chunk, Codec::Lz4);
                seq += chunk.len();
                produced.store(seq, Ordering::Relaxed);
                std::thread::sleep(Duration::from_millis(50));
            }
        })
    };

    let mut s1 = instance(&config, dir.join("s1.log"));
    let mut s2 = instance(&config, dir.join("s2.log"));
    let s3 = instance(&config, dir.join("s3.log"));
    let shares = wait_for_members(&config, 3, &[&s1, &s2, &s3]);
    assert!(shares.values().all(|c| *c >= 8), "balanced: {shares:?}");

    // SIGTERM: s1 drains, stores its progress and leaves; the others take over at once.
    assert!(
        s1.terminate(Duration::from_secs(30)),
        "clean stop\n{}",
        s1.log()
    );
    assert!(s1.log().contains("left the group"), "{}", s1.log());
    wait_for_members(&config, 2, &[&s2, &s3]);

    // kill -9 and restart: s2's partitions move after its session times out.
    s2.kill9();
    let s2b = instance(&config, dir.join("s2b.log"));
    wait_for_members(&config, 2, &[&s2b, &s3]);

    // A fourth instance joins.
    let s4 = instance(&config, dir.join("s4.log"));
    let shares = wait_for_members(&config, 3, &[&s2b, &s3, &s4]);
    assert!(shares.values().all(|c| *c >= 8), "balanced: {shares:?}");

    stop.store(true, Ordering::Relaxed);
    producer.join().expect("producer");
    let total = produced.load(Ordering::Relaxed);
    assert!(total > 0);
    let source = watermarks(&a.bootstrap(), TOPIC);
    let deadline = Instant::now() + Duration::from_secs(120);
    while watermarks(&b.direct_bootstrap(), REMOTE) != source {
        assert!(
            Instant::now() < deadline,
            "target never caught up: {:?} vs {:?}\n{}\n{}\n{}",
            watermarks(&b.direct_bootstrap(), REMOTE),
            source,
            s2b.log(),
            s3.log(),
            s4.log()
        );
        std::thread::sleep(Duration::from_millis(300));
    }
    // Exactly once, record by record, in order, per partition.
    let on_a = consume_all(&a.bootstrap(), TOPIC, total, Duration::from_secs(120));
    let on_b = consume_all(
        &b.direct_bootstrap(),
        REMOTE,
        total,
        Duration::from_secs(120),
    );
    assert_eq!(on_a.len(), total);
    let by_partition = |v: &[support::OwnedRecord]| {
        let mut m: BTreeMap<i32, Vec<Vec<u8>>> = BTreeMap::new();
        for r in v {
            m.entry(r.partition)
                .or_default()
                .push(r.value.clone().unwrap_or_default());
        }
        m
    };
    assert!(
        by_partition(&on_a) == by_partition(&on_b),
        "every record exactly once ({} on a, {} on b)",
        on_a.len(),
        on_b.len()
    );
    // Every partition has exactly one owner.
    let u = units(&config);
    let parts: Vec<&String> = u
        .iter()
        .map(|(_, unit)| unit)
        .filter(|unit| unit.starts_with("p|a->b|events|"))
        .collect();
    let distinct: BTreeSet<&String> = parts.iter().copied().collect();
    assert_eq!(parts.len(), PARTITIONS as usize);
    assert_eq!(distinct.len(), PARTITIONS as usize);
    drop((s2b, s3, s4));
    proxy_b.assert_clean();
}
