//! Issue 32: mirror statuses as Cluster Linking reports them, each reached by its real cause on
//! Apache Kafka and shown alike by `strait mirror list|status|describe`, `/api/flows`,
//! `/metrics` and `strait status`: `SOURCE_UNAVAILABLE` while the source cluster is stopped past
//! `source_unavailable_after`, back to `ACTIVE` by itself when it returns (every record then
//! copied once); `FAILED` when a source topic is deleted, and still `FAILED` (its partitions
//! stopped) when it is created again, nothing of the new topic copied; `PAUSED`; `STOPPED`
//! after a failover. Every Produce request goes through the checking proxy.

mod support;

use std::process::Command;
use std::time::{Duration, Instant};

use rdkafka::admin::{AdminClient, AdminOptions};
use rdkafka::client::DefaultClientContext;
use rdkafka::ClientConfig;
use support::broker::free_port;
use support::data::watermarks;
use support::strait::status_get;
use support::{create_topic, produce_records, topic_name, Broker, Codec, StraitRun, TestRecord};

fn strait(args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_strait"))
        .args(args)
        .output()
        .expect("run strait");
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

fn wait_until(what: &str, run: &StraitRun, mut cond: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(90);
    while !cond() {
        assert!(
            Instant::now() < deadline,
            "timed out waiting for {what}\n{}",
            run.log()
        );
        std::thread::sleep(Duration::from_millis(300));
    }
}

/// `(status, reason)` of `topic`'s mirror as the instance at `port` shows it.
fn api_status(port: u16, topic: &str) -> (String, String) {
    let doc = status_get(port, "/api/flows")
        .and_then(|(_, b)| serde_json::from_str::<serde_json::Value>(&b).ok())
        .unwrap_or_default();
    let m = doc["flows"][0]["mirrors"]
        .as_array()
        .and_then(|m| m.iter().find(|m| m["topic"] == topic).cloned())
        .unwrap_or_default();
    (
        m["status"].as_str().unwrap_or_default().to_string(),
        m["status_reason"].as_str().unwrap_or_default().to_string(),
    )
}

/// The `strait mirror list` line of `topic`.
fn listed(config: &str, topic: &str) -> String {
    let out = strait(&["mirror", "list", "--config", config]);
    out.lines()
        .find(|l| l.split_whitespace().nth(3) == Some(topic))
        .unwrap_or_else(|| panic!("{topic} not listed: {out}"))
        .to_string()
}

fn metric(port: u16, topic: &str, status: &str) -> bool {
    let line = format!(
        "strait_mirror_topic_status{{flow=\"west->east\",link=\"west->east\",topic=\"{topic}\",status=\"{status}\"}} 1"
    );
    status_get(port, "/metrics").is_some_and(|(_, b)| b.contains(&line))
}

fn records(from: usize, n: usize) -> Vec<TestRecord> {
    (from..from + n)
        .map(|i| TestRecord {
            partition: Some((i % 2) as i32),
            ..TestRecord::kv(format!("k{i}"), format!("v{i}"))
        })
        .collect()
}

fn total(bootstrap: &str, topic: &str) -> i64 {
    watermarks(bootstrap, topic).iter().map(|w| w.1).sum()
}

fn delete_topic(bootstrap: &str, topic: &str) {
    let admin: AdminClient<DefaultClientContext> = ClientConfig::new()
        .set("bootstrap.servers", bootstrap)
        .set("broker.address.family", "v4")
        .create()
        .expect("admin client");
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let results = rt
        .block_on(admin.delete_topics(&[topic], &AdminOptions::new()))
        .expect("delete topic");
    assert!(results.iter().all(|r| r.is_ok()), "{results:?}");
}

#[test]
fn each_mirror_status_is_reached_by_its_cause_and_shown_everywhere() {
    let mut west = Broker::start("west");
    let (east, proxy_east) = Broker::start_behind_proxy("east");
    let (w, e) = (west.bootstrap(), east.direct_bootstrap());
    for t in ["orders", "payments"] {
        create_topic(&w, t, 2);
        produce_records(&w, t, &records(0, 20), Codec::None);
    }
    let dir = std::env::temp_dir().join(topic_name("mirror-states"));
    std::fs::create_dir_all(&dir).expect("dir");
    let port = free_port();
    let config = dir.join("link.toml");
    std::fs::write(
        &config,
        format!(
            "http = \"127.0.0.1:{port}\"\n\
             [clusters.west]\nbootstrap_servers = \"{w}\"\nconnect_timeout_ms = 1000\nrequest_timeout_ms = 3000\n\
             [clusters.east]\nbootstrap_servers = \"{}\"\n\
             [[flows]]\nsource = \"west\"\ntarget = \"east\"\nmode = \"mirror\"\n\
             topics = [\"orders\", \"payments\"]\nrefresh_topics_interval_secs = 1\n\
             source_unavailable_after_secs = 3\n",
            east.bootstrap()
        ),
    )
    .expect("config");
    let c = config.to_str().expect("path");
    let run = StraitRun::start_with(&config, &dir.join("run.log"), "info");
    wait_until("both mirrored", &run, || {
        total(&e, "orders") == 20 && total(&e, "payments") == 20
    });
    wait_until("both ACTIVE", &run, || {
        api_status(port, "orders").0 == "ACTIVE" && api_status(port, "payments").0 == "ACTIVE"
    });
    assert!(metric(port, "orders", "ACTIVE"));
    assert!(listed(c, "orders").contains("ACTIVE"));

    // The source cluster stopped past source_unavailable_after: SOURCE_UNAVAILABLE everywhere.
    west.stop();
    wait_until("SOURCE_UNAVAILABLE", &run, || {
        api_status(port, "orders").0 == "SOURCE_UNAVAILABLE"
            && api_status(port, "payments").0 == "SOURCE_UNAVAILABLE"
    });
    let (_, why) = api_status(port, "orders");
    assert!(why.contains("source cluster unreachable"), "{why}");
    assert!(metric(port, "orders", "SOURCE_UNAVAILABLE"));
    assert!(!metric(port, "orders", "ACTIVE"));
    let line = listed(c, "orders");
    assert!(line.contains("SOURCE_UNAVAILABLE"), "{line}");
    let status = strait(&["mirror", "status", "--config", c, "--topic", "orders"]);
    assert!(status.contains("SOURCE_UNAVAILABLE"), "{status}");
    let status = strait(&["status", "--config", c]);
    assert!(status.contains("SOURCE_UNAVAILABLE"), "{status}");
    // Records written meanwhile wait on the source.
    west.start_again();
    wait_until("ACTIVE again", &run, || {
        api_status(port, "orders").0 == "ACTIVE" && api_status(port, "payments").0 == "ACTIVE"
    });
    for t in ["orders", "payments"] {
        produce_records(&w, t, &records(20, 10), Codec::None);
    }
    wait_until("the next 10 of each", &run, || {
        total(&e, "orders") == 30 && total(&e, "payments") == 30
    });

    // Paused, as Cluster Linking spells it.
    let out = strait(&["mirror", "pause", "--config", c, "--topic", "orders"]);
    assert!(out.contains("paused"), "{out}");
    wait_until("PAUSED", &run, || api_status(port, "orders").0 == "PAUSED");
    assert!(listed(c, "orders").contains("PAUSED"));
    let out = strait(&["mirror", "resume", "--config", c, "--topic", "orders"]);
    assert!(out.contains("resumed"), "{out}");
    wait_until("ACTIVE after resume", &run, || {
        api_status(port, "orders").0 == "ACTIVE"
    });

    // A source topic deleted: FAILED, the other mirror untouched.
    delete_topic(&w, "payments");
    wait_until("payments FAILED", &run, || {
        api_status(port, "payments").0 == "FAILED"
    });
    let (_, why) = api_status(port, "payments");
    assert!(why.contains("gone from the metadata"), "{why}");
    assert!(metric(port, "payments", "FAILED"));
    assert_eq!(api_status(port, "orders").0, "ACTIVE");
    let line = listed(c, "payments");
    assert!(line.contains("FAILED"), "{line}");
    let describe = strait(&["mirror", "describe", "--config", c, "--topic", "payments"]);
    assert!(
        describe.contains("FAILED") && describe.contains("gone from the metadata"),
        "{describe}"
    );
    // Created again under the same name: its offsets name other records, so it stays FAILED
    // (its partitions stopped) and nothing of the new topic is copied.
    let deadline = Instant::now() + Duration::from_secs(60);
    while std::panic::catch_unwind(|| create_topic(&w, "payments", 2)).is_err() {
        assert!(Instant::now() < deadline, "payments not created again");
        std::thread::sleep(Duration::from_millis(500));
    }
    produce_records(&w, "payments", &records(100, 10), Codec::None);
    wait_until("payments FAILED as created again", &run, || {
        let (s, why) = api_status(port, "payments");
        s == "FAILED" && why.contains("created again")
    });
    std::thread::sleep(Duration::from_secs(3));
    assert_eq!(
        total(&e, "payments"),
        30,
        "a record of the new topic was copied"
    );
    assert!(listed(c, "payments").contains("FAILED"));
    let status = strait(&["mirror", "status", "--config", c, "--topic", "payments"]);
    assert!(
        status
            .lines()
            .filter(|l| l.starts_with("payments"))
            .all(|l| l.contains(" - ") && l.contains("FAILED")),
        "a stopped partition shows no fetch lag: {status}"
    );

    // Failed over: STOPPED.
    let out = strait(&["mirror", "failover", "--config", c, "--topic", "orders"]);
    assert!(out.contains("failed over"), "{out}");
    wait_until("STOPPED", &run, || {
        api_status(port, "orders").0 == "STOPPED"
    });
    assert!(listed(c, "orders").contains("STOPPED"));
    assert!(metric(port, "orders", "STOPPED"));
    assert_eq!(total(&e, "orders"), 30);
    drop(run);
    proxy_east.assert_clean();
}
