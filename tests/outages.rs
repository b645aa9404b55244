//! Whole clusters down under load, on Apache Kafka: the target's broker stopped while the source
//! keeps receiving records, and the source's broker stopped. While a cluster is down strait must
//! hold no more than its buffer (`buffer_bytes`), not spin (CPU stays low), and afterwards copy
//! every record exactly once. The outage lasts `STRAIT_OUTAGE_SECS` (default 45; the long form:
//! `STRAIT_OUTAGE_SECS=300 cargo test --test outages`).

mod support;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use rdkafka::config::ClientConfig;
use rdkafka::producer::{BaseProducer, BaseRecord, Producer};

use support::data::watermarks;
use support::kafka::{start_kafka_behind_proxy, KafkaCluster};
use support::{consume_all, create_topic, topic_name, StraitRun};

const TOPIC: &str = "load";
const REMOTE: &str = "a.load";
const PARTITIONS: i32 = 4;
const BUFFER_BYTES: u64 = 8 << 20;

fn outage() -> Duration {
    let secs = std::env::var("STRAIT_OUTAGE_SECS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(45);
    Duration::from_secs(secs)
}

fn write_config(dir: &Path, a: &KafkaCluster, b: &str) -> PathBuf {
    let config = dir.join("strait.toml");
    std::fs::write(
        &config,
        format!(
            "instance_group = \"{}\"\n\
             [clusters.a]\nbootstrap_servers = \"{}\"\n[clusters.b]\nbootstrap_servers = \"{b}\"\n\
             [[flows]]\nsource = \"a\"\ntarget = \"b\"\ntopics = [\"{TOPIC}\"]\n\
             buffer_bytes = {BUFFER_BYTES}\n",
            topic_name("g"),
            a.bootstrap()
        ),
    )
    .expect("write config");
    config
}

/// Writes numbered 1 KB records into the source until stopped; returns how many were acked.
struct Load {
    stop: Arc<AtomicBool>,
    paused: Arc<AtomicBool>,
    sent: Arc<AtomicUsize>,
    thread: std::thread::JoinHandle<()>,
}

impl Load {
    fn start(bootstrap: String) -> Load {
        let stop = Arc::new(AtomicBool::new(false));
        let paused = Arc::new(AtomicBool::new(false));
        let sent = Arc::new(AtomicUsize::new(0));
        let (s, p, n) = (stop.clone(), paused.clone(), sent.clone());
        let thread = std::thread::spawn(move || {
            let producer: BaseProducer = ClientConfig::new()
                .set("bootstrap.servers", &bootstrap)
                .set("broker.address.family", "v4")
                .set("enable.idempotence", "true")
                .set("linger.ms", "5")
                .create()
                .expect("producer");
            let pad = "x".repeat(1000);
            let mut i = 0usize;
            while !s.load(Ordering::Relaxed) {
                if p.load(Ordering::Relaxed) {
                    producer.poll(Duration::from_millis(100));
                    continue;
                }
                for _ in 0..50 {
                    let value = format!("seq-{i:08}-{pad}");
                    let key = format!("k{i}");
                    let rec = BaseRecord::to(TOPIC)
                        .partition((i % PARTITIONS as usize) as i32)
                        .key(&key)
                        .payload(&value);
                    if producer.send(rec).is_ok() {
                        i += 1;
                    }
                }
                producer.poll(Duration::from_millis(10));
                std::thread::sleep(Duration::from_millis(10));
            }
            producer.flush(Duration::from_secs(60)).expect("flush");
            n.store(i, Ordering::Relaxed);
        });
        Load {
            stop,
            paused,
            sent,
            thread,
        }
    }

    fn pause(&self, paused: bool) {
        self.paused.store(paused, Ordering::Relaxed);
    }

    fn finish(self) -> usize {
        self.stop.store(true, Ordering::Relaxed);
        self.thread.join().expect("load");
        self.sent.load(Ordering::Relaxed)
    }
}

/// Waits until the target holds everything the source held when called (records keep
/// arriving meanwhile).
fn wait_reached(a: &str, b: &str, run: &StraitRun, timeout: Duration) {
    let started = Instant::now();
    let source = watermarks(a, TOPIC);
    loop {
        let target = watermarks(b, REMOTE);
        if target.len() == source.len() && target.iter().zip(&source).all(|(t, s)| t.1 >= s.1) {
            return;
        }
        assert!(
            started.elapsed() < timeout,
            "never reached {source:?}: {target:?}\n{}",
            run.log()
        );
        std::thread::sleep(Duration::from_millis(500));
    }
}

/// Waits until the target ends where the source ends (no record arriving any more).
fn wait_caught_up(a: &str, b: &str, run: &StraitRun, timeout: Duration) -> Duration {
    let started = Instant::now();
    loop {
        let source = watermarks(a, TOPIC);
        if !source.is_empty() && watermarks(b, REMOTE) == source {
            return started.elapsed();
        }
        assert!(
            started.elapsed() < timeout,
            "not caught up: {:?} vs {source:?}\n{}",
            watermarks(b, REMOTE),
            run.log()
        );
        std::thread::sleep(Duration::from_millis(500));
    }
}

/// Every source record on the target exactly once, in order, partition by partition.
fn assert_exactly_once(a: &str, b: &str, total: usize) {
    let by_partition = |v: Vec<support::OwnedRecord>| {
        let mut m: BTreeMap<i32, Vec<Vec<u8>>> = BTreeMap::new();
        for r in v {
            m.entry(r.partition)
                .or_default()
                .push(r.value.unwrap_or_default());
        }
        m
    };
    let source = by_partition(consume_all(a, TOPIC, total, Duration::from_secs(120)));
    let target = by_partition(consume_all(b, REMOTE, total, Duration::from_secs(120)));
    let n: usize = source.values().map(|v| v.len()).sum();
    assert_eq!(n, total, "the source holds every record written");
    for (p, want) in &source {
        let got = target.get(p).cloned().unwrap_or_default();
        assert_eq!(got.len(), want.len(), "partition {p}: record count");
        assert!(got == *want, "partition {p}: records differ");
    }
}

/// Stops the target's (or the source's) broker under load for [`outage`], starts it again, and
/// checks CPU, memory and every record.
fn outage_scenario(target_down: bool) {
    let (mut a, _a_proxy) = start_kafka_behind_proxy("a");
    let (mut b, proxy) = start_kafka_behind_proxy("b");
    let (a_direct, b_direct) = (a.direct_bootstrap(), b.direct_bootstrap());
    let dir = std::env::temp_dir().join(topic_name("outage"));
    std::fs::create_dir_all(&dir).expect("dir");
    let config = write_config(&dir, &a, &b.bootstrap());
    create_topic(&a_direct, TOPIC, PARTITIONS);
    let load = Load::start(a_direct.clone());
    std::thread::sleep(Duration::from_secs(2));
    let run = StraitRun::start(&config, &dir.join("run.log"));
    wait_reached(&a_direct, &b_direct, &run, Duration::from_secs(90));

    let outage = outage();
    let cpu_before = run.cpu_seconds();
    if target_down {
        b.stop_node(0);
    } else {
        load.pause(true); // nothing can be written into a source that is down
        a.stop_node(0);
    }
    let started = Instant::now();
    let mut peak_rss = 0;
    while started.elapsed() < outage {
        std::thread::sleep(Duration::from_secs(1));
        peak_rss = peak_rss.max(run.memory().0);
    }
    let cpu = run.cpu_seconds() - cpu_before;
    if target_down {
        b.start_node(0).expect("restart the target");
    } else {
        a.start_node(0).expect("restart the source");
        load.pause(false);
    }
    std::thread::sleep(Duration::from_secs(5));
    let total = load.finish();
    let caught_up = wait_caught_up(&a_direct, &b_direct, &run, Duration::from_secs(240));
    let (_, hwm) = run.memory();
    let log = run.stop();
    let busy = cpu / outage.as_secs_f64();
    eprintln!(
        "{} down for {outage:?}: {total} records written, strait used {cpu:.2} CPU-s ({:.1} % of a core) and at most {:.1} MiB resident during the outage (peak {:.1} MiB over the run); caught up {caught_up:?} after the load stopped",
        if target_down { "target" } else { "source" },
        busy * 100.0,
        peak_rss as f64 / (1 << 20) as f64,
        hwm as f64 / (1 << 20) as f64,
    );
    assert!(
        busy < 0.25,
        "strait spun while the cluster was down: {cpu:.2} CPU-s in {outage:?}\n{log}"
    );
    assert!(
        hwm < BUFFER_BYTES + (96 << 20),
        "strait held more than its buffer: peak {hwm} bytes\n{log}"
    );
    assert!(!log.contains("partition stopped"), "{log}");
    assert_exactly_once(&a_direct, &b_direct, total);
    proxy.assert_clean();
}

/// The target's broker stopped for the outage while the source keeps receiving 1 KB records.
#[test]
fn the_target_down_under_load_then_back_exactly_once_within_the_buffer() {
    outage_scenario(true);
}

/// The source's broker stopped for the outage, then back: replication resumes exactly.
#[test]
fn the_source_down_then_back_exactly_once() {
    outage_scenario(false);
}
