//! Exactly once while partitions change hands, on Apache Kafka: a partition that comes back to
//! an instance that had it before, an outage of the target longer than the group session, and
//! the requests of a replaced instance delivered after its successor took over. Every record is
//! checked with rdkafka, partition by partition, against the source; the proxy in front of the
//! target checks every Produce request against Kafka's rules.

mod support;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use rdkafka::consumer::BaseConsumer;
use strait::assignment::{Assignment, WorkItem};
use strait::replicate::membership::group_id;
use support::data::{batch_codecs, group_assignments_with, group_client, watermarks};
use support::kafka::{start_kafka, start_kafka_behind_proxy, KafkaCluster};
use support::{
    consume_all, create_topic, produce_records, topic_name, Codec, StraitRun, TestRecord,
};

const TOPIC: &str = "events";
const REMOTE: &str = "a.events";

fn write_config(dir: &Path, a: &KafkaCluster, b: &str, group: &str) -> PathBuf {
    write_config_with(dir, a, b, group, "")
}

/// As [`write_config`], with `flow` added to the flow's settings.
fn write_config_with(dir: &Path, a: &KafkaCluster, b: &str, group: &str, flow: &str) -> PathBuf {
    let config = dir.join("strait.toml");
    std::fs::write(
        &config,
        format!(
            "instance_group = \"{group}\"\n\
             [clusters.a]\nbootstrap_servers = \"{}\"\n[clusters.b]\nbootstrap_servers = \"{b}\"\n\
             [[flows]]\nsource = \"a\"\ntarget = \"b\"\ntopics = [\"{TOPIC}\"]\n\
             refresh_topics_interval_secs = 2\n{flow}",
            a.bootstrap()
        ),
    )
    .expect("write config");
    config
}

fn instance(config: &Path, log: PathBuf) -> StraitRun {
    StraitRun::start_with(config, &log, "info,strait=debug")
}

/// Members of the group and how many partitions of `events` each runs (`strait members`).
fn members(config: &Path) -> BTreeMap<String, usize> {
    let out = Command::new(env!("CARGO_BIN_EXE_strait"))
        .args(["members", "--units", "--config"])
        .arg(config)
        .output()
        .expect("strait members");
    let mut m = BTreeMap::new();
    for l in String::from_utf8_lossy(&out.stdout).lines() {
        let f: Vec<&str> = l.split_whitespace().collect();
        if f.len() >= 3 && f[2].starts_with("p|a->b|events|") {
            *m.entry(f[1].to_string()).or_default() += 1;
        }
    }
    m
}

fn wait_for_members(config: &Path, n: usize, partitions: usize, runs: &[&StraitRun]) {
    let deadline = Instant::now() + Duration::from_secs(90);
    loop {
        let m = members(config);
        if m.len() == n && m.values().sum::<usize>() == partitions {
            return;
        }
        if Instant::now() > deadline {
            panic!("timed out waiting for {n} members: {m:?}\n{}", logs(runs));
        }
        std::thread::sleep(Duration::from_millis(300));
    }
}

fn logs(runs: &[&StraitRun]) -> String {
    runs.iter()
        .map(|r| r.log())
        .collect::<Vec<_>>()
        .join("\n-----\n")
}

/// Produces `n` records spread over `partitions`, numbered from `from`.
fn produce(bootstrap: &str, from: usize, n: usize, partitions: i32) -> usize {
    produce_with(bootstrap, from, n, partitions, Codec::Lz4)
}

/// As [`produce`], in batches compressed with `codec`.
fn produce_with(bootstrap: &str, from: usize, n: usize, partitions: i32, codec: Codec) -> usize {
    let records: Vec<TestRecord> = (from..from + n)
        .map(|i| TestRecord {
            partition: Some((i % partitions as usize) as i32),
            ..TestRecord::kv(format!("k{i}"), format!("seq-{i}"))
        })
        .collect();
    produce_records(bootstrap, TOPIC, &records, codec);
    from + n
}

/// Waits until every partition of the remote topic ends where the source's does.
fn wait_caught_up(a: &KafkaCluster, b_direct: &str, timeout: Duration, runs: &[&StraitRun]) {
    let source = watermarks(&a.bootstrap(), TOPIC);
    let deadline = Instant::now() + timeout;
    loop {
        let target = watermarks(b_direct, REMOTE);
        if target == source {
            return;
        }
        if Instant::now() > deadline {
            panic!(
                "the target never caught up: {target:?} vs source {source:?}\n{}",
                logs(runs)
            );
        }
        std::thread::sleep(Duration::from_millis(300));
    }
}

/// Every source record exactly once on the target, in order, partition by partition.
fn assert_exactly_once(a: &KafkaCluster, b_direct: &str, total: usize) {
    let by_partition = |v: &[support::OwnedRecord]| {
        let mut m: BTreeMap<i32, Vec<Vec<u8>>> = BTreeMap::new();
        for r in v {
            m.entry(r.partition)
                .or_default()
                .push(r.value.clone().unwrap_or_default());
        }
        m
    };
    let on_a = by_partition(&consume_all(
        &a.bootstrap(),
        TOPIC,
        total,
        Duration::from_secs(60),
    ));
    let on_b = by_partition(&consume_all(
        b_direct,
        REMOTE,
        total,
        Duration::from_secs(60),
    ));
    assert_eq!(on_a.values().map(Vec::len).sum::<usize>(), total);
    for (p, src) in &on_a {
        let dst = on_b.get(p).cloned().unwrap_or_default();
        let dup = dst.len().saturating_sub(src.len());
        let lost = src.len().saturating_sub(dst.len());
        assert!(
            *src == dst,
            "partition {p}: {} records on the source, {} on the target (lost {lost}, duplicated {dup}, or out of order)",
            src.len(),
            dst.len()
        );
    }
    // No record beyond them either (a duplicate past the count consume_all waited for).
    let src_marks = watermarks(&a.bootstrap(), TOPIC);
    assert_eq!(watermarks(b_direct, REMOTE), src_marks, "log ends");
}

fn assert_never_stopped(runs: &[&StraitRun]) {
    for r in runs {
        let log = r.log();
        assert!(
            !log.contains("partition stopped"),
            "a partition stopped:\n{log}"
        );
    }
}

/// Issue 16.1: partitions go back to an instance that ran them before (after a SIGTERM, after a
/// kill -9 and the session timeout, and after the target was unreachable for longer than the
/// session): each time they resume where the target ends, and nothing stops.
#[test]
fn partitions_return_to_an_earlier_owner_and_survive_a_long_target_outage() {
    const PARTITIONS: i32 = 4;
    let a = start_kafka("a");
    let (b, proxy) = start_kafka_behind_proxy("b");
    let dir = std::env::temp_dir().join(topic_name("handover-back"));
    std::fs::create_dir_all(&dir).expect("dir");
    let config = write_config(&dir, &a, &b.bootstrap(), &topic_name("g"));
    let b_direct = b.direct_bootstrap();
    create_topic(&a.bootstrap(), TOPIC, PARTITIONS);
    let mut total = produce(&a.bootstrap(), 0, 400, PARTITIONS);

    let s1 = instance(&config, dir.join("s1.log"));
    wait_caught_up(&a, &b_direct, Duration::from_secs(60), &[&s1]);

    // A second instance joins and takes half; it stops (SIGTERM): its partitions go back to s1.
    let mut s2 = instance(&config, dir.join("s2.log"));
    wait_for_members(&config, 2, PARTITIONS as usize, &[&s1, &s2]);
    total = produce(&a.bootstrap(), total, 400, PARTITIONS);
    wait_caught_up(&a, &b_direct, Duration::from_secs(60), &[&s1, &s2]);
    assert!(
        s2.terminate(Duration::from_secs(30)),
        "clean stop\n{}",
        s2.log()
    );
    wait_for_members(&config, 1, PARTITIONS as usize, &[&s1]);
    total = produce(&a.bootstrap(), total, 400, PARTITIONS);
    wait_caught_up(&a, &b_direct, Duration::from_secs(60), &[&s1, &s2]);

    // Again, and this time the second instance is killed: s1 takes its partitions back after
    // the session timeout.
    let mut s3 = instance(&config, dir.join("s3.log"));
    wait_for_members(&config, 2, PARTITIONS as usize, &[&s1, &s3]);
    total = produce(&a.bootstrap(), total, 400, PARTITIONS);
    wait_caught_up(&a, &b_direct, Duration::from_secs(60), &[&s1, &s3]);
    s3.kill9();
    total = produce(&a.bootstrap(), total, 400, PARTITIONS);
    wait_caught_up(&a, &b_direct, Duration::from_secs(90), &[&s1, &s3]);

    // The target unreachable for longer than the session timeout while the source moves on.
    proxy.update_faults(|f| f.refuse_connections = true);
    proxy.drop_connections_now();
    total = produce(&a.bootstrap(), total, 400, PARTITIONS);
    std::thread::sleep(Duration::from_secs(16));
    proxy.update_faults(|f| f.refuse_connections = false);
    total = produce(&a.bootstrap(), total, 400, PARTITIONS);
    wait_caught_up(&a, &b_direct, Duration::from_secs(90), &[&s1]);
    assert!(
        s1.log().contains("group membership lost"),
        "the outage was longer than the session: {}",
        s1.log()
    );

    assert_exactly_once(&a, &b_direct, total);
    assert_never_stopped(&[&s1, &s2, &s3]);
    drop(s1);
    proxy.assert_clean();
}

/// Issue 16.2: an instance's Produce requests are held by the network; it loses the group, is
/// killed, another instance takes over and writes; then the held requests reach the broker.
/// The broker's idempotence refuses or de-duplicates every one of them.
#[test]
fn late_requests_of_a_replaced_instance_land_nothing_twice() {
    late_requests(false);
}

/// The same with uncompressed source batches that strait sends zstd-compressed
/// (`recompress`): the take-up reads s1's re-compressed batches back.
#[test]
fn late_requests_of_a_replaced_instance_land_nothing_twice_with_recompress() {
    late_requests(true);
}

/// s1's connections to the target are held while production goes on, s1 is killed and s2
/// takes over, then s1's held requests land: every record once. `recompress`: uncompressed
/// source batches, sent zstd-compressed (else lz4 batches, forwarded as they are).
fn late_requests(recompress: bool) {
    const PARTITIONS: i32 = 5;
    let (codec, flow) = match recompress {
        true => (Codec::None, "recompress = \"zstd\"\n"),
        false => (Codec::Lz4, ""),
    };
    let a = start_kafka("a");
    let (b, proxy) = start_kafka_behind_proxy("b");
    let dir = std::env::temp_dir().join(topic_name("handover-late"));
    std::fs::create_dir_all(&dir).expect("dir");
    let config = write_config_with(&dir, &a, &b.bootstrap(), &topic_name("g"), flow);
    let b_direct = b.direct_bootstrap();
    create_topic(&a.bootstrap(), TOPIC, PARTITIONS);
    produce_with(&a.bootstrap(), 0, 500, PARTITIONS, codec);
    let mut s1 = instance(&config, dir.join("s1.log"));
    wait_caught_up(&a, &b_direct, Duration::from_secs(60), &[&s1]);

    // Production goes on in the background throughout.
    let stop = Arc::new(AtomicBool::new(false));
    let produced = Arc::new(AtomicUsize::new(500));
    let producer = {
        let (stop, produced, bootstrap) = (stop.clone(), produced.clone(), a.bootstrap());
        std::thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                let from = produced.load(Ordering::Relaxed);
                produced.store(
                    produce_with(&bootstrap, from, 100, PARTITIONS, codec),
                    Ordering::Relaxed,
                );
                std::thread::sleep(Duration::from_millis(20));
            }
        })
    };
    std::thread::sleep(Duration::from_secs(2));

    // Every connection s1 has to the target is held (its requests delivered 20 s from now), and
    // new connections are refused until the group has dropped s1.
    let held_until = Instant::now() + Duration::from_secs(20);
    let accepted = proxy.connections_accepted();
    proxy.update_faults(|f| {
        f.hold_existing(accepted, held_until);
        f.refuse_connections = true;
    });
    std::thread::sleep(Duration::from_secs(12));
    s1.kill9();
    proxy.update_faults(|f| f.refuse_connections = false);
    let s2 = instance(&config, dir.join("s2.log"));
    wait_for_members(&config, 1, PARTITIONS as usize, &[&s2]);

    // The held requests reach the broker while s2 writes.
    while Instant::now() < held_until + Duration::from_secs(3) {
        std::thread::sleep(Duration::from_millis(200));
    }
    std::thread::sleep(Duration::from_secs(2));
    stop.store(true, Ordering::Relaxed);
    producer.join().expect("producer");
    let total = produced.load(Ordering::Relaxed);
    wait_caught_up(&a, &b_direct, Duration::from_secs(90), &[&s1, &s2]);
    let late = proxy.held_produce_requests();
    assert!(late > 0, "the test held no Produce request of s1");
    eprintln!("{late} Produce requests of s1 were delivered late");
    assert_exactly_once(&a, &b_direct, total);
    assert_never_stopped(&[&s2]);
    if recompress {
        let codecs = batch_codecs(&b_direct, REMOTE, 0);
        assert!(
            codecs.contains(&Some(strait::records::Compression::Zstd)),
            "{codecs:?}"
        );
    }
    drop(s2);
    proxy.assert_clean();
}

/// The coordinator's assignments of the instance group (decoded from DescribeGroups by rdkafka):
/// member id → its units: the source partitions it replicates (of `events` and of the
/// replicated `heartbeats` topic) as (topic, partition), the flow's duties as (name, -1);
/// `None` unless the group is stable.
fn coordinator_view(
    client: &BaseConsumer,
    group: &str,
) -> Option<BTreeMap<String, BTreeSet<(String, i32)>>> {
    let (state, members) = group_assignments_with(client, group);
    if state != "Stable" {
        return None;
    }
    let mut view = BTreeMap::new();
    for (id, bytes) in members {
        let a = Assignment::decode(&bytes).expect("the coordinator holds strait's assignment");
        let parts = a
            .items
            .iter()
            .map(|i| match i {
                WorkItem::Partition {
                    topic, partition, ..
                } => (topic.clone(), *partition),
                WorkItem::Duties { .. } | WorkItem::Flow { .. } => (i.to_string(), -1),
            })
            .collect();
        view.insert(id, parts);
    }
    Some(view)
}

/// How many of `units` are partitions.
fn partitions(units: &BTreeSet<(String, i32)>) -> usize {
    units.iter().filter(|(_, p)| *p >= 0).count()
}

/// `strait members`: member id → (Assigned, Running) partition counts.
fn members_table(config: &Path) -> BTreeMap<String, (usize, usize)> {
    let out = Command::new(env!("CARGO_BIN_EXE_strait"))
        .args(["members", "--config"])
        .arg(config)
        .output()
        .expect("strait members");
    let text = String::from_utf8_lossy(&out.stdout);
    text.lines()
        .skip(1)
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            let n = |s: &str| s.parse::<usize>().ok();
            Some((f.get(3)?.to_string(), (n(f.get(5)?)?, n(f.get(6)?)?)))
        })
        .collect()
}

/// Issue 17: `strait members` shows the coordinator's own assignments, and a hand-over on Apache
/// Kafka's coordinator follows KIP-429: a joining instance gets its units only in a second
/// round, after their owner released them (a stable generation in which they belong to nobody);
/// the units that stay are never taken from their owner; no unit ever has two owners.
#[test]
fn members_match_the_coordinator_and_hand_overs_are_cooperative() {
    const PARTITIONS: i32 = 6;
    let a = start_kafka("a");
    let (b, proxy) = start_kafka_behind_proxy("b");
    let dir = std::env::temp_dir().join(topic_name("handover-coop"));
    std::fs::create_dir_all(&dir).expect("dir");
    let instance_group = topic_name("g");
    let config = write_config(&dir, &a, &b.bootstrap(), &instance_group);
    let group = group_id(&instance_group, "b");
    let b_direct = b.direct_bootstrap();
    create_topic(&a.bootstrap(), TOPIC, PARTITIONS);
    let mut total = produce(&a.bootstrap(), 0, 600, PARTITIONS);
    let s1 = instance(&config, dir.join("s1.log"));
    let s2 = instance(&config, dir.join("s2.log"));
    wait_for_members(&config, 2, PARTITIONS as usize, &[&s1, &s2]);
    wait_caught_up(&a, &b_direct, Duration::from_secs(60), &[&s1, &s2]);

    // Stable: strait's table equals the coordinator's assignments, and each member runs
    // exactly what the coordinator gave it.
    let deadline = Instant::now() + Duration::from_secs(60);
    let client = group_client(&b_direct);
    let before = loop {
        let view = coordinator_view(&client, &group);
        let table = members_table(&config);
        if let Some(v) = view.filter(|v| v.len() == 2) {
            let expected: BTreeMap<String, (usize, usize)> = v
                .iter()
                .map(|(id, u)| (id.clone(), (partitions(u), partitions(u))))
                .collect();
            if table == expected {
                break v;
            }
        }
        assert!(
            Instant::now() < deadline,
            "strait members never matched the coordinator: {table:?} vs {:?}",
            coordinator_view(&client, &group)
        );
        std::thread::sleep(Duration::from_millis(300));
    };

    // A third instance joins while every answer of the target takes 300 ms (so the
    // revocation round lasts long enough to be seen); the coordinator is sampled directly.
    proxy.update_faults(|f| f.response_delay = Some(Duration::from_millis(300)));
    let stop = Arc::new(AtomicBool::new(false));
    let sampler = {
        let (stop, b_direct, group) = (stop.clone(), b_direct.clone(), group.clone());
        std::thread::spawn(move || {
            let client = group_client(&b_direct);
            let mut seen: Vec<BTreeMap<String, BTreeSet<(String, i32)>>> = Vec::new();
            while !stop.load(Ordering::Relaxed) {
                if let Some(v) = coordinator_view(&client, &group) {
                    if seen.last() != Some(&v) {
                        seen.push(v);
                    }
                }
                std::thread::sleep(Duration::from_millis(25));
            }
            seen
        })
    };
    let s3 = instance(&config, dir.join("s3.log"));
    total = produce(&a.bootstrap(), total, 600, PARTITIONS);
    // Three members, each running what the coordinator gave it (the newcomer's share may be
    // the flow's duties and the replicated heartbeats partition rather than `events` ones).
    let units: usize = before.values().map(partitions).sum();
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let table = members_table(&config);
        let settled = table.len() == 3
            && table.values().all(|(given, running)| given == running)
            && table.values().map(|(given, _)| given).sum::<usize>() == units;
        if settled {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "three members never settled: {table:?}\n{}",
            logs(&[&s1, &s2, &s3])
        );
        std::thread::sleep(Duration::from_millis(500));
    }
    proxy.update_faults(|f| f.response_delay = None);
    total = produce(&a.bootstrap(), total, 600, PARTITIONS);
    wait_caught_up(&a, &b_direct, Duration::from_secs(90), &[&s1, &s2, &s3]);
    std::thread::sleep(Duration::from_secs(1));
    stop.store(true, Ordering::Relaxed);
    let seen = sampler.join().expect("sampler");
    let runs = [&s1, &s2, &s3];

    let last = seen.last().expect("the coordinator was seen stable");
    assert_eq!(last.len(), 3, "three members at the end: {seen:?}");
    let sizes: Vec<usize> = last.values().map(|p| p.len()).collect();
    assert!(
        sizes.iter().max() <= Some(&(sizes.iter().min().unwrap_or(&0) + 1)),
        "balanced: {seen:?}"
    );
    let newcomer = last
        .keys()
        .find(|id| !before.contains_key(*id))
        .expect("a new member id")
        .clone();
    for (i, v) in seen.iter().enumerate() {
        // No unit with two owners, in any generation.
        let mut owners: BTreeMap<&(String, i32), usize> = BTreeMap::new();
        for p in v.values().flatten() {
            *owners.entry(p).or_default() += 1;
        }
        assert!(owners.values().all(|n| *n == 1), "sample {i}: {seen:?}");
        // Sticky and cooperative: an earlier member keeps, in every generation, the units it
        // ends with.
        for (id, kept) in last.iter().filter(|(id, _)| **id != newcomer) {
            if let Some(now) = v.get(id) {
                assert!(
                    kept.is_subset(now) || !before.contains_key(id),
                    "sample {i}: {seen:?}"
                );
                assert!(
                    before[id].is_superset(kept),
                    "units moved between old members: {seen:?}"
                );
            }
        }
    }
    // The revocation round: all three members present and the newcomer's final units with
    // nobody, before the generation that hands them over.
    let moving = &last[&newcomer];
    let revoked = seen
        .iter()
        .any(|v| v.len() == 3 && v.values().all(|p| p.is_disjoint(moving)));
    assert!(
        revoked,
        "no stable generation withheld the moving units {moving:?} (eager hand-over?): {seen:?}\n{}",
        logs(&runs)
    );
    eprintln!("coordinator generations seen: {}", seen.len());

    assert_exactly_once(&a, &b_direct, total);
    assert_never_stopped(&runs);
    drop((s1, s2, s3));
    proxy.assert_clean();
}

/// A partition idle for longer than the target keeps producer state (`producer.id.expiration.ms`,
/// a day by default, seconds here): the broker forgot strait's producer id, and writing goes
/// on under the same identity, both in the running process and after a restart.
#[test]
fn writing_continues_after_the_target_forgot_the_producer() {
    const PARTITIONS: i32 = 2;
    let a = start_kafka("a");
    let mut opts = support::kafka::KafkaOptions::new("b");
    opts.properties = vec![
        ("producer.id.expiration.ms".into(), "2000".into()),
        (
            "producer.id.expiration.check.interval.ms".into(),
            "500".into(),
        ),
    ];
    let (b, proxy) =
        support::kafka::start_kafka_behind_proxy_with(opts, support::ProxyConfig::default());
    let dir = std::env::temp_dir().join(topic_name("handover-expiry"));
    std::fs::create_dir_all(&dir).expect("dir");
    let config = write_config(&dir, &a, &b.bootstrap(), &topic_name("g"));
    let b_direct = b.direct_bootstrap();
    create_topic(&a.bootstrap(), TOPIC, PARTITIONS);
    let mut total = produce(&a.bootstrap(), 0, 200, PARTITIONS);
    let mut s1 = instance(&config, dir.join("s1.log"));
    wait_caught_up(&a, &b_direct, Duration::from_secs(60), &[&s1]);
    std::thread::sleep(Duration::from_secs(6));
    total = produce(&a.bootstrap(), total, 200, PARTITIONS);
    wait_caught_up(&a, &b_direct, Duration::from_secs(60), &[&s1]);
    assert!(s1.terminate(Duration::from_secs(30)), "{}", s1.log());
    std::thread::sleep(Duration::from_secs(6));
    let s2 = instance(&config, dir.join("s2.log"));
    total = produce(&a.bootstrap(), total, 200, PARTITIONS);
    wait_caught_up(&a, &b_direct, Duration::from_secs(60), &[&s2]);
    assert_exactly_once(&a, &b_direct, total);
    assert_never_stopped(&[&s1, &s2]);
    drop(s2);
    proxy.assert_clean();
}
