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

/// The example's binary, built by `cargo test` (or here, if a single test target was asked).
fn example_binary() -> PathBuf {
    let exe = std::env::current_exe().expect("current exe");
    let profile_dir = exe
        .parent()
        .and_then(|deps| deps.parent())
        .expect("target profile directory");
    let bin = profile_dir.join("examples").join("embed");
    if !bin.exists() {
        let status = Command::new(env!("CARGO"))
            .args(["build", "--example", "embed"])
            .status()
            .expect("cargo build --example embed");
        assert!(status.success(), "the example does not build");
    }
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
