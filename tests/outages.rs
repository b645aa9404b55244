//! Whole clusters down under load, on Apache Kafka: the target's broker stopped while the source
//! keeps receiving records, and the source's broker stopped. While a cluster is down strait must
//! hold no more than its buffer (`buffer_bytes`), not spin (CPU stays low), and afterwards copy
//! every record exactly once. The outage lasts `STRAIT_OUTAGE_SECS` (default 45; the long form:
//! `STRAIT_OUTAGE_SECS=300 cargo test --test outages`).

mod support;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use support::kafka::{start_kafka_behind_proxy, KafkaCluster};
use support::load::{assert_exactly_once, wait_caught_up, wait_reached, Load};
use support::{create_topic, topic_name, StraitRun};

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
    let load = Load::start(a_direct.clone(), TOPIC, PARTITIONS);
    std::thread::sleep(Duration::from_secs(2));
    let run = StraitRun::start(&config, &dir.join("run.log"));
    wait_reached(
        &a_direct,
        TOPIC,
        &b_direct,
        REMOTE,
        &run,
        Duration::from_secs(90),
    );

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
    let caught_up = wait_caught_up(
        &a_direct,
        TOPIC,
        &b_direct,
        REMOTE,
        &run,
        Duration::from_secs(240),
    );
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
    assert_exactly_once(&a_direct, TOPIC, &b_direct, REMOTE, total);
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
