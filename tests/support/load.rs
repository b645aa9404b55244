//! Continuous production into a source topic (rdkafka, idempotent), and the checks that follow
//! it: the target caught up, and every source record on the target exactly once and in order.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use rdkafka::config::ClientConfig;
use rdkafka::producer::{BaseProducer, BaseRecord, Producer};

use super::data::watermarks;
use super::{consume_all, OwnedRecord, StraitRun};

/// Writes numbered records (`seq-<n>` plus `pad` bytes) round-robin over `partitions` of a topic
/// until finished; counts those acknowledged.
pub struct Load {
    stop: Arc<AtomicBool>,
    paused: Arc<AtomicBool>,
    sent: Arc<AtomicUsize>,
    thread: std::thread::JoinHandle<()>,
}

impl Load {
    /// 1 KB records, 50 every 10 ms at most.
    pub fn start(bootstrap: String, topic: &str, partitions: i32) -> Load {
        Load::start_with(bootstrap, topic, partitions, 1000)
    }

    /// Records padded with `pad` bytes.
    pub fn start_with(bootstrap: String, topic: &str, partitions: i32, pad: usize) -> Load {
        let stop = Arc::new(AtomicBool::new(false));
        let paused = Arc::new(AtomicBool::new(false));
        let sent = Arc::new(AtomicUsize::new(0));
        let (s, p, n) = (stop.clone(), paused.clone(), sent.clone());
        let topic = topic.to_string();
        let thread = std::thread::spawn(move || {
            let producer: BaseProducer = ClientConfig::new()
                .set("bootstrap.servers", &bootstrap)
                .set("broker.address.family", "v4")
                .set("enable.idempotence", "true")
                .set("linger.ms", "5")
                .create()
                .expect("producer");
            let pad = "x".repeat(pad);
            let mut i = 0usize;
            while !s.load(Ordering::Relaxed) {
                if p.load(Ordering::Relaxed) {
                    producer.poll(Duration::from_millis(100));
                    continue;
                }
                for _ in 0..50 {
                    let value = format!("seq-{i:08}-{pad}");
                    let key = format!("k{i}");
                    let rec = BaseRecord::to(&topic)
                        .partition((i % partitions as usize) as i32)
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

    /// Stops (true) or resumes (false) writing.
    pub fn pause(&self, paused: bool) {
        self.paused.store(paused, Ordering::Relaxed);
    }

    /// Stops, flushes, and returns how many records were written.
    pub fn finish(self) -> usize {
        self.stop.store(true, Ordering::Relaxed);
        self.thread.join().expect("load");
        self.sent.load(Ordering::Relaxed)
    }
}

/// Waits until `target` on `b` holds everything `source` on `a` held when called (records keep
/// arriving meanwhile).
pub fn wait_reached(
    a: &str,
    source: &str,
    b: &str,
    target: &str,
    run: &StraitRun,
    timeout: Duration,
) {
    let started = Instant::now();
    let want = watermarks(a, source);
    loop {
        let got = watermarks(b, target);
        if got.len() == want.len() && got.iter().zip(&want).all(|(t, s)| t.1 >= s.1) {
            return;
        }
        assert!(
            started.elapsed() < timeout,
            "never reached {want:?}: {got:?}\n{}",
            run.log()
        );
        std::thread::sleep(Duration::from_millis(500));
    }
}

/// Waits until `target` on `b` ends where `source` on `a` ends (no record arriving any more);
/// returns how long that took.
pub fn wait_caught_up(
    a: &str,
    source: &str,
    b: &str,
    target: &str,
    run: &StraitRun,
    timeout: Duration,
) -> Duration {
    let started = Instant::now();
    loop {
        let want = watermarks(a, source);
        if !want.is_empty() && watermarks(b, target) == want {
            return started.elapsed();
        }
        assert!(
            started.elapsed() < timeout,
            "not caught up: {:?} vs {want:?}\n{}",
            watermarks(b, target),
            run.log()
        );
        std::thread::sleep(Duration::from_millis(500));
    }
}

/// Every record of `source` on `a` (which must hold `total`) is on `target` on `b` exactly
/// once, in order, partition by partition.
pub fn assert_exactly_once(a: &str, source: &str, b: &str, target: &str, total: usize) {
    let by_partition = |v: Vec<OwnedRecord>| {
        let mut m: BTreeMap<i32, Vec<Vec<u8>>> = BTreeMap::new();
        for r in v {
            m.entry(r.partition)
                .or_default()
                .push(r.value.unwrap_or_default());
        }
        m
    };
    let want = by_partition(consume_all(a, source, total, Duration::from_secs(120)));
    let got = by_partition(consume_all(b, target, total, Duration::from_secs(120)));
    let n: usize = want.values().map(|v| v.len()).sum();
    assert_eq!(n, total, "the source holds every record written");
    for (p, w) in &want {
        let g = got.get(p).cloned().unwrap_or_default();
        assert_eq!(g.len(), w.len(), "partition {p}: record count");
        assert!(g == *w, "partition {p}: records differ");
    }
    let extra: usize = got
        .iter()
        .filter(|(p, _)| !want.contains_key(p))
        .map(|(_, v)| v.len())
        .sum();
    assert_eq!(
        extra, 0,
        "records on the target in partitions the source lacks"
    );
}

/// Stops each load (`Load`, its topic on `a`, the copy's topic on `b`), waits until every
/// copy caught up, and checks each exactly once; returns how many records each load wrote.
pub fn finish_and_check(
    a: &str,
    b: &str,
    run: &StraitRun,
    loads: Vec<(Load, &str, &str)>,
) -> Vec<usize> {
    let mut written = Vec::new();
    let mut topics = Vec::new();
    for (load, source, target) in loads {
        written.push(load.finish());
        topics.push((source, target));
    }
    for (source, target) in &topics {
        wait_caught_up(a, source, b, target, run, Duration::from_secs(120));
    }
    for ((source, target), n) in topics.iter().zip(&written) {
        assert_exactly_once(a, source, b, target, *n);
    }
    written
}
