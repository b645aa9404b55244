//! The embedding example (`examples/embed.rs`) as a user runs it: a gateway program that runs
//! one flow through `strait::Replicator` beside its own work, follows its status until it has
//! caught up, and stops it. The target is checked record by record with rdkafka.

mod support;

use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use support::data::watermarks;
use support::kafka::start_kafka;
use support::{consume_all, create_topic, produce_records, topic_name, Codec, TestRecord};

/// The example's binary, built here every time (a no-op when fresh): `cargo test --test embed`
/// does not build examples, and a binary left from an older build would be run otherwise.
fn example_binary() -> PathBuf {
    let exe = std::env::current_exe().expect("current exe");
    let profile_dir = exe
        .parent()
        .and_then(|deps| deps.parent())
        .expect("target profile directory");
    let bin = profile_dir.join("examples").join("embed");
    let status = Command::new(env!("CARGO"))
        .args(["build", "--example", "embed"])
        .status()
        .expect("cargo build --example embed");
    assert!(status.success(), "the example does not build");
    bin
}

#[test]
fn the_embedding_example_runs_a_flow_and_stops_it() {
    let a = start_kafka("a");
    let b = start_kafka("b");
    let topic = "orders";
    create_topic(&a.bootstrap(), topic, 2);
    let records: Vec<TestRecord> = (0..300)
        .map(|i| TestRecord::kv(format!("k{i}"), format!("order-{i}")))
        .collect();
    produce_records(&a.bootstrap(), topic, &records, Codec::Zstd);
    let dir = std::env::temp_dir().join(topic_name("embed"));
    std::fs::create_dir_all(&dir).expect("dir");
    let config = dir.join("gateway.toml");
    std::fs::write(
        &config,
        format!(
            "[clusters.edge]\nbootstrap_servers = \"{}\"\n[clusters.central]\nbootstrap_servers = \"{}\"\n\
             [[flows]]\nsource = \"edge\"\ntarget = \"central\"\ntopics = [\"{topic}\"]\n\
             [[flows]]\nsource = \"central\"\ntarget = \"edge\"\ntopics = [\"nothing\"]\n",
            a.bootstrap(),
            b.bootstrap()
        ),
    )
    .expect("config");

    let out = Command::new(example_binary())
        .arg(&config)
        .arg("edge->central")
        .arg("90")
        .env("RUST_LOG", "warn")
        .output()
        .expect("run the example");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    // The flow's count includes the heartbeats it replicates besides the topic's 300 records.
    let copied_count: Option<u64> = stdout
        .lines()
        .find_map(|l| l.strip_prefix("flow edge->central caught up: "))
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|n| n.parse().ok());
    assert!(copied_count.is_some_and(|n| n >= 300), "{stdout}\n{stderr}");
    assert!(
        stdout.contains("flow edge->central stopped cleanly"),
        "{stdout}"
    );
    // The series read through `Replicator::metrics()`, without a listener: typed totals ...
    let totals: Vec<u64> = stdout
        .lines()
        .find_map(|l| l.strip_prefix("metrics: flow edge->central records "))
        .map(|rest| {
            rest.split_whitespace()
                .filter_map(|w| w.parse().ok())
                .collect()
        })
        .unwrap_or_default();
    assert!(
        matches!(totals[..], [records, bytes] if records >= 300 && bytes > 0),
        "{stdout}"
    );
    // ... and a line of the same Prometheus text `/metrics` serves, with a count above 0.
    let line = stdout
        .lines()
        .find_map(|l| l.strip_prefix("metrics line: "))
        .unwrap_or_default();
    let value: f64 = line
        .rsplit(' ')
        .next()
        .and_then(|v| v.parse().ok())
        .unwrap_or(0.0);
    assert!(
        line.starts_with("strait_replication_records_total{flow=\"edge->central\"") && value > 0.0,
        "{stdout}"
    );

    // Exactly the source's records on the target, and nothing of the flow not asked for.
    let remote = format!("edge.{topic}");
    let copied = consume_all(&b.bootstrap(), &remote, 300, Duration::from_secs(30));
    let ends: i64 = watermarks(&b.bootstrap(), &remote)
        .iter()
        .map(|w| w.1)
        .sum();
    assert_eq!(ends, 300, "the target holds exactly the source's records");
    let mut values: Vec<String> = copied
        .iter()
        .map(|r| String::from_utf8_lossy(r.value.as_deref().unwrap_or(&[])).into_owned())
        .collect();
    values.sort();
    let mut expected: Vec<String> = (0..300).map(|i| format!("order-{i}")).collect();
    expected.sort();
    assert_eq!(values, expected);

    // A flow name that is not in the configuration is one clear error, and nothing starts.
    let out = Command::new(example_binary())
        .arg(&config)
        .arg("edge->nowhere")
        .output()
        .expect("run the example");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("no flow named \"edge->nowhere\"") && stderr.contains("edge->central"),
        "{stderr}"
    );
}

/// CPU seconds this process has used (user and system, from /proc).
fn process_cpu_seconds() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").expect("/proc/self/stat");
    let after_name = stat.rsplit_once(')').map(|(_, r)| r).unwrap_or(&stat);
    let fields: Vec<&str> = after_name.split_whitespace().collect();
    // Fields 14 and 15 of stat (utime, stime) are the 12th and 13th after the name.
    let ticks: f64 =
        fields[11].parse::<f64>().expect("utime") + fields[12].parse::<f64>().expect("stime");
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as f64;
    ticks / hz
}

/// An embedder that drops a running `Replicator` without calling `shutdown()`: its flows stop
/// (records written afterwards are not copied) and none of its tasks keeps running (the
/// process is idle afterwards), while the embedder's own runtime goes on.
#[test]
fn dropping_a_running_replicator_stops_its_flows_and_nothing_spins() {
    let a = start_kafka("drop-a");
    let b = start_kafka("drop-b");
    let topic = topic_name("drop");
    create_topic(&a.bootstrap(), &topic, 2);
    let batch = |from: usize| -> Vec<TestRecord> {
        (from..from + 100)
            .map(|i| TestRecord::kv(format!("k{i}"), format!("v{i}")))
            .collect()
    };
    produce_records(&a.bootstrap(), &topic, &batch(0), Codec::None);
    let config = strait::config::parse_toml(
        &format!(
            "instance_group = \"{}\"\n[clusters.a]\nbootstrap_servers = \"{}\"\n\
             [clusters.b]\nbootstrap_servers = \"{}\"\n\
             [[flows]]\nsource = \"a\"\ntarget = \"b\"\ntopics = [\"{topic}\"]\n\
             refresh_topics_interval_secs = 1\n",
            topic_name("g"),
            a.bootstrap(),
            b.bootstrap()
        ),
        "drop.toml",
    )
    .expect("config");
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let replicator = rt
        .block_on(async { strait::Replicator::builder(config).start() })
        .expect("start");
    let remote = format!("a.{topic}");
    let copied = |b: &str| -> i64 { watermarks(b, &remote).iter().map(|w| w.1).sum() };
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    while copied(&b.bootstrap()) < 100 {
        assert!(
            std::time::Instant::now() < deadline,
            "the flow copied nothing"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    drop(replicator);
    // The flows wind down (in-flight requests answered, progress persisted, group left).
    std::thread::sleep(Duration::from_secs(5));
    let before = process_cpu_seconds();
    std::thread::sleep(Duration::from_secs(5));
    let idle = process_cpu_seconds() - before;
    eprintln!("after the drop the process used {idle:.3} CPU-s in 5 s");
    produce_records(&a.bootstrap(), &topic, &batch(100), Codec::None);
    std::thread::sleep(Duration::from_secs(5));
    assert_eq!(
        copied(&b.bootstrap()),
        100,
        "records written after the drop were copied: the flow still runs"
    );
    assert!(
        idle < 0.5,
        "the process used {idle:.2} CPU-s in 5 s after the drop: a task spins"
    );
    // The embedder's runtime still works.
    assert_eq!(rt.block_on(async { 7 }), 7);
}

/// The engine's stop channel closed without `true` ever sent (its sender dropped, as a program
/// that loses it would): every flow, its duties, topic sync and the group membership stop, the
/// engine's task ends, and nothing keeps running.
#[test]
fn a_closed_stop_channel_stops_the_engine_and_nothing_spins() {
    let a = start_kafka("closed-a");
    let b = start_kafka("closed-b");
    let topic = topic_name("closed");
    create_topic(&a.bootstrap(), &topic, 2);
    let batch = |from: usize| -> Vec<TestRecord> {
        (from..from + 100)
            .map(|i| TestRecord::kv(format!("k{i}"), format!("v{i}")))
            .collect()
    };
    produce_records(&a.bootstrap(), &topic, &batch(0), Codec::None);
    let config = strait::config::parse_toml(
        &format!(
            "instance_group = \"{}\"\n[clusters.a]\nbootstrap_servers = \"{}\"\n\
             [clusters.b]\nbootstrap_servers = \"{}\"\n\
             [[flows]]\nsource = \"a\"\ntarget = \"b\"\ntopics = [\"{topic}\"]\n\
             refresh_topics_interval_secs = 1\nemit_checkpoints = true\n\
             sync_topic_configs = true\n",
            topic_name("g"),
            a.bootstrap(),
            b.bootstrap()
        ),
        "closed.toml",
    )
    .expect("config");
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let (stop, shutdown) = strait::Shutdown::channel();
    let engine = rt
        .block_on(async { strait::replicate::spawn(config, shutdown) })
        .expect("start");
    let remote = format!("a.{topic}");
    let copied = |b: &str| -> i64 { watermarks(b, &remote).iter().map(|w| w.1).sum() };
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    while copied(&b.bootstrap()) < 100 {
        assert!(
            std::time::Instant::now() < deadline,
            "the flow copied nothing"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    drop(stop);
    let ended =
        rt.block_on(async { tokio::time::timeout(Duration::from_secs(60), engine.done).await });
    assert!(
        matches!(ended, Ok(Ok(Ok(())))),
        "the engine did not end cleanly after its stop channel closed: {ended:?}"
    );
    let before = process_cpu_seconds();
    std::thread::sleep(Duration::from_secs(5));
    let idle = process_cpu_seconds() - before;
    eprintln!("after the channel closed the process used {idle:.3} CPU-s in 5 s");
    produce_records(&a.bootstrap(), &topic, &batch(100), Codec::None);
    std::thread::sleep(Duration::from_secs(3));
    assert_eq!(
        copied(&b.bootstrap()),
        100,
        "records written after the stop were copied: the flow still runs"
    );
    assert!(
        idle < 0.5,
        "the process used {idle:.2} CPU-s in 5 s after the stop: a task spins"
    );
}
