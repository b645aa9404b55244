//! Soak: two strait instances sharing one flow between two Apache Kafka clusters, each cluster
//! behind a fault-injecting [`ProduceCheckProxy`], while a background producer writes numbered
//! records into a multi-partition topic and a fault loop breaks the network in random ways (one
//! fault at a time, 2 to 6 s each, blackholes up to 12 s, with healthy gaps of 1 to 4 s): abrupt
//! cuts of every connection, latency with jitter, a bandwidth limit, blackholes (the longer ones
//! outlast strait's 5 s request timeout and the 10 s group session), resets in the middle of a
//! response (of any API, or of Produce on the target / Fetch on the source). Then
//! everything heals and the test waits (at most 120 s) for the target to catch up and checks
//! every source record exactly once on the target, in order, partition by partition; that no
//! instance stopped a partition; and that neither proxy saw a Produce-rule violation.
//!
//! Every random choice (which fault, on which side, for how long, its parameters, the proxies'
//! jitter and cut points, the producer's batch sizes) comes from one seed, printed first; a
//! failure replays with the same seed (the interleaving with the processes' own timing does
//! not replay exactly).
//!
//! ```text
//! # short form (about 75 s of faults; the default, fits the CI budget)
//! RUST_TEST_THREADS=1 cargo test --test soak -- --nocapture
//! # long form: 10 minutes of faults
//! STRAIT_SOAK_SECS=600 RUST_TEST_THREADS=1 cargo test --test soak -- --nocapture
//! # replay a run
//! STRAIT_SOAK_SEED=<printed seed> STRAIT_SOAK_SECS=<its duration> cargo test --test soak -- --nocapture
//! ```

mod support;

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use support::data::{produce_records_with, watermarks, ProduceOptions};
use support::kafka::{start_kafka_behind_proxy, KafkaCluster};
use support::proxy::{SplitMix64, ANY_API_KEY, PRODUCE};
use support::{consume_all, create_topic, topic_name, Codec, ProduceCheckProxy, StraitRun};
use support::{OwnedRecord, TestRecord};

const TOPIC: &str = "events";
const REMOTE: &str = "a.events";
const PARTITIONS: i32 = 6;
/// Fetch API key (for resets in the middle of a Fetch response).
const FETCH: i16 = 1;
/// Faults, by default (`STRAIT_SOAK_SECS` overrides).
const DEFAULT_FAULT_SECS: u64 = 75;
/// How long the target may take to catch up once everything healed.
const CATCH_UP_BOUND: Duration = Duration::from_secs(120);

fn env_u64(name: &str) -> Option<u64> {
    let v = std::env::var(name).ok()?;
    let v = v.trim();
    let parsed = match v.strip_prefix("0x") {
        Some(hex) => u64::from_str_radix(hex, 16),
        None => v.parse(),
    };
    Some(parsed.unwrap_or_else(|e| panic!("{name}={v}: {e}")))
}

/// The run's seed: `STRAIT_SOAK_SEED`, or a fresh one.
fn seed() -> u64 {
    env_u64("STRAIT_SOAK_SEED").unwrap_or_else(|| {
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64)
            .unwrap_or(0);
        SplitMix64::new(nanos ^ u64::from(std::process::id())).next_u64()
    })
}

fn write_config(dir: &Path, a: &KafkaCluster, b: &KafkaCluster, group: &str) -> PathBuf {
    let config = dir.join("strait.toml");
    // A request timeout shorter than the longer faults, so timed-out requests (and their
    // late delivery after a blackhole) are part of the soak.
    std::fs::write(
        &config,
        format!(
            "instance_group = \"{group}\"\n\
             [clusters.a]\nbootstrap_servers = \"{}\"\nrequest_timeout_secs = 5\n\
             [clusters.b]\nbootstrap_servers = \"{}\"\nrequest_timeout_secs = 5\n\
             [[flows]]\nsource = \"a\"\ntarget = \"b\"\ntopics = [\"{TOPIC}\"]\n\
             refresh_topics_interval_secs = 2\n",
            a.bootstrap(),
            b.bootstrap()
        ),
    )
    .expect("write config");
    config
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

/// The last `lines` lines of each instance's log (the whole logs stay in their files).
fn log_tails(runs: &[(&str, &StraitRun)], lines: usize) -> String {
    runs.iter()
        .map(|(name, r)| {
            let log = r.log();
            let all: Vec<&str> = log.lines().collect();
            let from = all.len().saturating_sub(lines);
            format!(
                "----- {name}: last {} of {} log lines -----\n{}",
                all.len() - from,
                all.len(),
                all[from..].join("\n")
            )
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The value of record `i`: `seq-{i}-` and 50 to 350 hex digits drawn from `i` (so they
/// compress little and the bandwidth limit has bytes to limit).
fn value(i: usize) -> String {
    let mut r = SplitMix64::new(i as u64);
    let pad: String = (0..50 + i * 7 % 300)
        .map(|_| char::from(b"0123456789abcdef"[r.below(16) as usize]))
        .collect();
    format!("seq-{i}-{pad}")
}

/// Produces records numbered `from..from + n`, record `i` to partition `i % PARTITIONS` with
/// [`value`] `i`; idempotent, so retries under faults add no duplicate to the source.
fn produce(bootstrap: &str, from: usize, n: usize) -> usize {
    let records: Vec<TestRecord> = (from..from + n)
        .map(|i| TestRecord {
            partition: Some((i % PARTITIONS as usize) as i32),
            ..TestRecord::kv(format!("k{i}"), value(i))
        })
        .collect();
    produce_records_with(
        bootstrap,
        TOPIC,
        &records,
        &ProduceOptions {
            codec: Codec::Lz4,
            idempotent: true,
            timeout: Duration::from_secs(120),
            ..Default::default()
        },
    );
    from + n
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Side {
    Source,
    Target,
}

/// Plays one fault on `proxy` for `d`, drawing its parameters from `rng`, and announces it;
/// clears the proxy's plan at the end.
fn play_fault(
    kind: u64,
    side: Side,
    proxy: &ProduceCheckProxy,
    d: Duration,
    rng: &mut SplitMix64,
    announce: &mut dyn FnMut(String),
) {
    let end = Instant::now() + d;
    match kind {
        0 => {
            // Abrupt cuts (RST both ways) at 1 to 3 random moments of the episode.
            let cuts = rng.range(1, 3);
            let mut at: Vec<Duration> =
                (0..cuts).map(|_| rng.duration(Duration::ZERO, d)).collect();
            at.sort();
            announce(format!("cut every connection {cuts}x at {at:?} over {d:?}"));
            let start = Instant::now();
            for t in at {
                std::thread::sleep((start + t).saturating_duration_since(Instant::now()));
                proxy.drop_connections_now();
            }
        }
        1 => {
            let base = rng.duration(Duration::from_millis(20), Duration::from_millis(300));
            let jitter = rng.duration(Duration::ZERO, Duration::from_millis(400));
            announce(format!(
                "latency {base:?} + jitter up to {jitter:?} for {d:?}"
            ));
            proxy.update_faults(|f| {
                f.latency(base, jitter);
            });
        }
        2 => {
            let rate = rng.range(8, 128) * 1024;
            announce(format!(
                "bandwidth {} KiB/s each way for {d:?}",
                rate / 1024
            ));
            proxy.update_faults(|f| {
                f.bandwidth(rate);
            });
        }
        3 => {
            announce(format!("blackhole for {d:?}"));
            proxy.update_faults(|f| {
                f.blackhole_for(d);
            });
        }
        _ => {
            // Which responses: any, or the ones that matter most on this side (Produce on the
            // target: appended but unacknowledged; Fetch on the source).
            let key = match (rng.below(2), side) {
                (0, _) => ANY_API_KEY,
                (_, Side::Target) => PRODUCE,
                (_, Side::Source) => FETCH,
            };
            let times = rng.range(1, 4) as u32;
            let before = proxy.responses_cut();
            announce(format!(
                "reset in the middle of the next {times} response(s) to api key {key} within {d:?}"
            ));
            proxy.update_faults(|f| {
                f.reset_mid_response(key, times);
            });
            std::thread::sleep(end.saturating_duration_since(Instant::now()));
            announce(format!(
                "  ... {} response(s) cut",
                proxy.responses_cut() - before
            ));
        }
    }
    std::thread::sleep(end.saturating_duration_since(Instant::now()));
    proxy.update_faults(|f| f.clear());
}

const FAULT_NAMES: [&str; 5] = [
    "cut",
    "latency",
    "bandwidth",
    "blackhole",
    "reset-mid-response",
];

/// The target's records against the source's, partition by partition (every value is
/// unique): how many source records are missing on the target, how many extra copies it holds,
/// how many of its records are not from the source, and a line per partition that is not an
/// exact copy, in order.
fn compare(on_a: &[OwnedRecord], on_b: &[OwnedRecord]) -> (usize, usize, usize, Vec<String>) {
    let by_partition = |v: &[OwnedRecord]| {
        let mut m: BTreeMap<i32, Vec<Vec<u8>>> = BTreeMap::new();
        for r in v {
            m.entry(r.partition)
                .or_default()
                .push(r.value.clone().unwrap_or_default());
        }
        m
    };
    let (src, dst) = (by_partition(on_a), by_partition(on_b));
    let (mut lost, mut duplicated, mut foreign) = (0, 0, 0);
    let mut problems = Vec::new();
    let partitions: std::collections::BTreeSet<i32> =
        src.keys().chain(dst.keys()).copied().collect();
    for p in partitions {
        let s = src.get(&p).cloned().unwrap_or_default();
        let d = dst.get(&p).cloned().unwrap_or_default();
        if s == d {
            continue;
        }
        let mut counts: HashMap<&[u8], usize> = HashMap::new();
        for v in &d {
            *counts.entry(v.as_slice()).or_default() += 1;
        }
        let in_source: std::collections::HashSet<&[u8]> = s.iter().map(Vec::as_slice).collect();
        let (mut p_lost, mut p_dup, mut p_foreign) = (0, 0, 0);
        for v in &s {
            match counts.get(v.as_slice()) {
                None => p_lost += 1,
                Some(n) => p_dup += n - 1,
            }
        }
        for v in counts.keys() {
            if !in_source.contains(v) {
                p_foreign += counts[v];
            }
        }
        let first_difference = s
            .iter()
            .zip(&d)
            .position(|(x, y)| x != y)
            .unwrap_or(s.len().min(d.len()));
        let show = |v: Option<&Vec<u8>>| {
            v.map(|b| String::from_utf8_lossy(&b[..b.len().min(16)]).into_owned())
        };
        problems.push(format!(
            "partition {p}: {} records on the source, {} on the target: {p_lost} lost, {p_dup} duplicated, \
             {p_foreign} not from the source; first difference at offset {first_difference} \
             (source {:?}, target {:?})",
            s.len(),
            d.len(),
            show(s.get(first_difference)),
            show(d.get(first_difference)),
        ));
        lost += p_lost;
        duplicated += p_dup;
        foreign += p_foreign;
    }
    (lost, duplicated, foreign, problems)
}

#[test]
fn soak_under_network_faults_copies_every_record_exactly_once() {
    let seed = seed();
    let fault_secs = env_u64("STRAIT_SOAK_SECS").unwrap_or(DEFAULT_FAULT_SECS);
    eprintln!(
        "\nsoak: seed {seed} ({fault_secs} s of faults); replay with \
         STRAIT_SOAK_SEED={seed} STRAIT_SOAK_SECS={fault_secs} cargo test --test soak -- --nocapture"
    );
    let mut rng = SplitMix64::new(seed);

    let (a, a_proxy) = start_kafka_behind_proxy("soak-a");
    let (b, b_proxy) = start_kafka_behind_proxy("soak-b");
    a_proxy.update_faults(|f| {
        f.seed(rng.next_u64());
    });
    b_proxy.update_faults(|f| {
        f.seed(rng.next_u64());
    });
    let producer_seed = rng.next_u64();
    let dir = std::env::temp_dir().join(topic_name("soak"));
    std::fs::create_dir_all(&dir).expect("dir");
    let config = write_config(&dir, &a, &b, &topic_name("g"));
    create_topic(&a.bootstrap(), TOPIC, PARTITIONS);
    let mut total = produce(&a.bootstrap(), 0, 600);

    let s1 = StraitRun::start(&config, &dir.join("s1.log"));
    let s2 = StraitRun::start(&config, &dir.join("s2.log"));
    eprintln!("soak: logs in {}", dir.display());
    let runs = [("s1", &s1), ("s2", &s2)];
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let m = members(&config);
        let caught_up = watermarks(&b.bootstrap(), REMOTE) == watermarks(&a.bootstrap(), TOPIC);
        if m.len() == 2 && m.values().sum::<usize>() == PARTITIONS as usize && caught_up {
            eprintln!("soak: two members share the partitions: {m:?}");
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the two instances never shared the flow and caught up: {m:?}\n{}",
            log_tails(&runs, 200)
        );
        std::thread::sleep(Duration::from_millis(500));
    }

    // The background producer, through the source's proxy (so its faults hit it too).
    let stop = Arc::new(AtomicBool::new(false));
    let produced = Arc::new(AtomicUsize::new(total));
    let producer = {
        let (stop, produced, bootstrap) = (stop.clone(), produced.clone(), a.bootstrap());
        std::thread::spawn(move || {
            let mut rng = SplitMix64::new(producer_seed);
            while !stop.load(Ordering::Relaxed) {
                let from = produced.load(Ordering::Relaxed);
                let n = rng.range(20, 300) as usize;
                produced.store(produce(&bootstrap, from, n), Ordering::Relaxed);
                std::thread::sleep(rng.duration(Duration::ZERO, Duration::from_millis(100)));
            }
        })
    };

    // The faults.
    let start = Instant::now();
    let faults_end = start + Duration::from_secs(fault_secs);
    let mut fault_log: Vec<String> = Vec::new();
    let mut per_kind = [0usize; 5];
    while Instant::now() < faults_end {
        let gap = rng.duration(Duration::from_millis(1000), Duration::from_millis(4000));
        std::thread::sleep(gap.min(faults_end.saturating_duration_since(Instant::now())));
        if Instant::now() >= faults_end {
            break;
        }
        let side = if rng.chance(50) {
            Side::Source
        } else {
            Side::Target
        };
        let kind = rng.below(5);
        // Mostly shorter than the request timeout (5 s); blackholes up to 12 s, longer than
        // the group session (10 s).
        let longest = if kind == 3 { 12_000 } else { 6_000 };
        let d = rng.duration(Duration::from_millis(2000), Duration::from_millis(longest));
        let n = per_kind.iter().sum::<usize>() + 1;
        let mut announce = |what: String| {
            let line = format!(
                "[{:>7.1} s] fault {n} ({}) on the {}: {what}",
                start.elapsed().as_secs_f64(),
                FAULT_NAMES[kind as usize],
                if side == Side::Source {
                    "source"
                } else {
                    "target"
                },
            );
            eprintln!("soak: {line}");
            fault_log.push(line);
        };
        let proxy = if side == Side::Source {
            &a_proxy
        } else {
            &b_proxy
        };
        play_fault(kind, side, proxy, d, &mut rng, &mut announce);
        per_kind[kind as usize] += 1;
    }
    let faults: usize = per_kind.iter().sum();

    // Heal, stop producing, wait for the target.
    a_proxy.update_faults(|f| f.clear());
    b_proxy.update_faults(|f| f.clear());
    let healed = Instant::now();
    eprintln!(
        "soak: [{:>7.1} s] healed after {faults} faults",
        start.elapsed().as_secs_f64()
    );
    stop.store(true, Ordering::Relaxed);
    if let Err(e) = producer.join() {
        panic!(
            "the background producer failed (a harness problem, not strait's): {:?}",
            e.downcast_ref::<String>()
        );
    }
    total = produced.load(Ordering::Relaxed);
    let source = watermarks(&a.bootstrap(), TOPIC);
    let mut target;
    loop {
        target = watermarks(&b.bootstrap(), REMOTE);
        // Caught up everywhere (or beyond the source somewhere: duplicates, compared below).
        let reached =
            target.len() == source.len() && target.iter().zip(&source).all(|(t, s)| t.1 >= s.1);
        if reached {
            break;
        }
        if healed.elapsed() > CATCH_UP_BOUND {
            panic!(
                "soak (seed {seed}): the target did not catch up within {CATCH_UP_BOUND:?} of healing: \
                 target {target:?} vs source {source:?}\nfaults:\n  {}\n{}",
                fault_log.join("\n  "),
                log_tails(&runs, 300)
            );
        }
        std::thread::sleep(Duration::from_millis(500));
    }
    let catch_up = healed.elapsed();

    // Every record, read back with rdkafka.
    let count = |marks: &[(i64, i64)]| marks.iter().map(|(lo, hi)| hi - lo).sum::<i64>() as usize;
    let on_a = consume_all(
        &a.bootstrap(),
        TOPIC,
        count(&source),
        Duration::from_secs(120),
    );
    let on_b = consume_all(
        &b.bootstrap(),
        REMOTE,
        count(&target),
        Duration::from_secs(120),
    );
    let (lost, duplicated, foreign, problems) = compare(&on_a, &on_b);
    eprintln!(
        "soak summary: seed {seed}, {fault_secs} s of faults, {faults} faults injected \
         ({}), {} records produced, {lost} lost, {duplicated} duplicated, {foreign} foreign, \
         {} partitions not an exact copy, \
         caught up {:.1} s after healing",
        FAULT_NAMES
            .iter()
            .zip(per_kind)
            .map(|(name, n)| format!("{name} {n}"))
            .collect::<Vec<_>>()
            .join(", "),
        on_a.len(),
        problems.len(),
        catch_up.as_secs_f64()
    );
    assert_eq!(
        (on_a.len(), count(&source)),
        (total, total),
        "the source holds every acknowledged record once, and all were read (harness check)"
    );
    assert_eq!(on_b.len(), count(&target), "every target record was read");
    assert!(
        problems.is_empty(),
        "soak (seed {seed}): the target differs from the source:\n  {}\nfaults:\n  {}\n{}",
        problems.join("\n  "),
        fault_log.join("\n  "),
        log_tails(&runs, 300)
    );
    assert_eq!(target, source, "log ends");
    for (name, r) in &runs {
        let log = r.log();
        let stopped: Vec<&str> = log
            .lines()
            .filter(|l| l.contains("partition stopped"))
            .collect();
        assert!(
            stopped.is_empty(),
            "soak (seed {seed}): {name} stopped partitions:\n{}\nfaults:\n  {}",
            stopped.join("\n"),
            fault_log.join("\n  ")
        );
    }
    drop((s1, s2));
    a_proxy.assert_clean();
    b_proxy.assert_clean();
}
