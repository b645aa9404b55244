//! Control work beside the data path, on Apache Kafka: a slow control operation (a checkpoint
//! pass over a thousand consumer groups, or a mirror flow's consumer offset sync over 500,
//! whose offsets the source is slow to answer) does not delay replication. The replication
//! latency of a trickle of records is measured with rdkafka (producer's timestamp to arrival in
//! a reader of the target) while the passes run.

mod support;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use rdkafka::config::ClientConfig;
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::message::Message;
use rdkafka::producer::{BaseProducer, BaseRecord, Producer};
use rdkafka::{Offset, TopicPartitionList};

use support::kafka::{start_kafka, start_kafka_behind_proxy};
use support::{create_topic, produce_records, topic_name, Codec, StraitRun, TestRecord};

const TOPIC: &str = "trickle";
const GROUPS: usize = 1000;
/// OffsetFetch is the API key 9.
const OFFSET_FETCH: i16 = 9;

/// The flow kinds whose group work is slow here.
#[derive(Clone, Copy)]
enum Kind {
    /// A replicate flow: MirrorMaker 2 checkpoints of every group each second.
    Replicate,
    /// A mirror flow: the link's consumer offset sync of every group each second.
    Mirror,
}

impl Kind {
    /// The remote topic of `TOPIC`.
    fn remote(self) -> String {
        match self {
            Kind::Replicate => format!("a.{TOPIC}"),
            Kind::Mirror => TOPIC.to_string(),
        }
    }

    /// The debug line that ends one pass over the groups.
    fn pass_line(self) -> &'static str {
        match self {
            Kind::Replicate => "checkpoint pass done",
            Kind::Mirror => "consumer offset sync pass done",
        }
    }
}

fn write_config(dir: &Path, a: &str, b: &str, kind: Kind) -> PathBuf {
    let config = dir.join("strait.toml");
    let flow = match kind {
        Kind::Replicate => {
            "groups = [\"slow-.*\"]\ncheckpoint_interval_secs = 1\nfetch_max_wait_ms = 500\n"
                .to_string()
        }
        Kind::Mirror => "mode = \"mirror\"\nlink = \"slow-link\"\nfetch_max_wait_ms = 500\n\
             consumer_offset_sync_interval_ms = 1000\n\
             consumer_offset_group_filters = '{\"groupFilters\":[{\"name\":\"slow-\",\"patternType\":\"PREFIXED\",\"filterType\":\"INCLUDE\"}]}'\n"
            .to_string(),
    };
    std::fs::write(
        &config,
        format!(
            "[clusters.a]\nbootstrap_servers = \"{a}\"\n[clusters.b]\nbootstrap_servers = \"{b}\"\n\
             [[flows]]\nsource = \"a\"\ntarget = \"b\"\ntopics = [\"{TOPIC}\"]\n{flow}"
        ),
    )
    .expect("write config");
    config
}

fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

/// Commits offset 1 of `trickle` for `n` groups `slow-0..` on cluster `a` of `config`.
fn commit_groups(config: &Path, n: usize) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    rt.block_on(async {
        let cfg = strait::config::load(config).expect("config");
        let a = strait::replicate::connect_once(&cfg, "a")
            .await
            .expect("connect a");
        for i in 0..n {
            strait::replicate::groups::commit(&a, &format!("slow-{i}"), &[(TOPIC.into(), 0, 1)])
                .await
                .expect("commit");
        }
    });
}

/// Milliseconds from `log` lines `<line> ... elapsed_ms=N`.
fn pass_durations(log: &str, line: &str) -> Vec<u64> {
    log.lines()
        .filter(|l| l.contains(line))
        .filter_map(|l| l.split("elapsed_ms=").nth(1))
        .filter_map(|r| r.split_whitespace().next()?.parse().ok())
        .collect()
}

/// Issue 18: while checkpoint passes over 1 000 groups take seconds each (the source answers
/// every OffsetFetch 5 ms late), records written one every 50 ms reach the target with a p99
/// latency far below the length of a pass.
#[test]
fn a_slow_checkpoint_pass_does_not_delay_replication() {
    slow_group_passes_do_not_delay_replication(Kind::Replicate, GROUPS);
}

/// Issue 30: the same for a mirror flow, whose consumer offset sync over 500 groups (OffsetFetch
/// 5 ms late on the source) runs in the duties task, not beside the data path's answers.
#[test]
fn a_slow_mirror_offset_sync_does_not_delay_replication() {
    slow_group_passes_do_not_delay_replication(Kind::Mirror, 500);
}

fn slow_group_passes_do_not_delay_replication(kind: Kind, groups: usize) {
    let (a, a_proxy) = start_kafka_behind_proxy("a");
    let b = start_kafka("b");
    create_topic(&a.direct_bootstrap(), TOPIC, 1);
    produce_records(
        &a.direct_bootstrap(),
        TOPIC,
        &[TestRecord::kv("k", "warm-up")],
        Codec::None,
    );
    let dir = std::env::temp_dir().join(topic_name("control-plane"));
    std::fs::create_dir_all(&dir).expect("dir");
    let config = write_config(&dir, &a.bootstrap(), &b.bootstrap(), kind);
    commit_groups(&config, groups);
    a_proxy.update_faults(|f| {
        f.response_delay_for
            .push((OFFSET_FETCH, Duration::from_millis(5)))
    });
    let run = StraitRun::start_with(&config, &dir.join("run.log"), "info,strait=debug");

    // A reader of the target, from the first trickle record on.
    let remote = kind.remote();
    let reader: BaseConsumer = ClientConfig::new()
        .set("bootstrap.servers", b.bootstrap())
        .set("broker.address.family", "v4")
        .set("group.id", topic_name("latency-reader"))
        .set("enable.auto.commit", "false")
        .set("fetch.wait.max.ms", "10")
        .create()
        .expect("reader");
    let deadline = std::time::Instant::now() + Duration::from_secs(90);
    while std::time::Instant::now() < deadline
        && pass_durations(&run.log(), kind.pass_line()).is_empty()
    {
        std::thread::sleep(Duration::from_millis(200));
    }
    assert!(
        !pass_durations(&run.log(), kind.pass_line()).is_empty(),
        "no pass over the groups finished:\n{}",
        run.log()
    );
    let mut tpl = TopicPartitionList::new();
    tpl.add_partition_offset(&remote, 0, Offset::Offset(0))
        .expect("tpl");
    reader.assign(&tpl).expect("assign");
    // The reader is connected and positioned once it has read the warm-up record.
    let warm = std::time::Instant::now() + Duration::from_secs(30);
    loop {
        match reader.poll(Duration::from_millis(200)) {
            Some(Ok(m)) if m.offset() == 0 => break,
            _ => assert!(
                std::time::Instant::now() < warm,
                "the warm-up record never reached the target"
            ),
        }
    }

    let stop = Arc::new(AtomicBool::new(false));
    let writer = {
        let (stop, bootstrap) = (stop.clone(), a.direct_bootstrap());
        std::thread::spawn(move || {
            let p: BaseProducer = ClientConfig::new()
                .set("bootstrap.servers", &bootstrap)
                .set("broker.address.family", "v4")
                .set("linger.ms", "0")
                .create()
                .expect("producer");
            let mut sent = 0usize;
            while !stop.load(Ordering::Relaxed) {
                let value = format!("t{sent}");
                let rec = BaseRecord::to(TOPIC)
                    .key("k")
                    .payload(&value)
                    .timestamp(now_ms());
                if p.send(rec).is_ok() {
                    sent += 1;
                }
                p.poll(Duration::from_millis(0));
                std::thread::sleep(Duration::from_millis(50));
            }
            p.flush(Duration::from_secs(10)).expect("flush");
            sent
        })
    };
    let mut latencies = Vec::new();
    let until = std::time::Instant::now() + Duration::from_secs(20);
    while std::time::Instant::now() < until {
        if let Some(Ok(m)) = reader.poll(Duration::from_millis(100)) {
            if let Some(ts) = m.timestamp().to_millis() {
                latencies.push(now_ms() - ts);
            }
        }
    }
    stop.store(true, Ordering::Relaxed);
    let sent = writer.join().expect("writer");
    let log = run.stop();
    let passes = pass_durations(&log, kind.pass_line());
    latencies.sort_unstable();
    let p99 = latencies[latencies.len() * 99 / 100];
    eprintln!(
        "{} records sent, {} measured; latency p50 {} ms, p99 {} ms, max {} ms; passes over {groups} groups (ms): {passes:?}",
        sent,
        latencies.len(),
        latencies[latencies.len() / 2],
        p99,
        latencies[latencies.len() - 1]
    );
    assert!(
        latencies.len() * 10 >= sent * 8,
        "most records measured ({} of {sent})",
        latencies.len()
    );
    let slowest = passes.iter().copied().max().unwrap_or(0);
    assert!(
        slowest >= 3000,
        "the passes were not slow enough to prove anything: {passes:?}"
    );
    assert!(
        (p99 as u64) < 1000 && (p99 as u64) * 4 < slowest,
        "replication waited for the passes over the groups: p99 {p99} ms, passes {passes:?} ms"
    );
    a_proxy.assert_clean();
}
