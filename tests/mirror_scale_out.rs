//! Issue 32: mirror topics in a scale-out group. A mirror flow is one unit of work (its
//! commands, promotion and foreign-write checks need every partition in one place): one
//! instance runs it, and when that instance is killed (-9) while the mirror is paused, the
//! other takes the whole flow over, paused: nothing is copied until it is resumed, then
//! everything exactly once at the source's offsets; the promotion completes there and nothing
//! is written into the promoted topic afterwards. Checked record by record on the
//! destination, and every Produce request through the proxy.

mod support;

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use support::broker::free_port;
use support::data::watermarks;
use support::{
    consume_all, create_topic, produce_records, topic_name, Broker, Codec, StraitRun, TestRecord,
};

fn strait(args: &[&str]) -> (bool, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_strait"))
        .args(args)
        .output()
        .expect("run strait");
    (
        out.status.success(),
        format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ),
    )
}

fn wait_until(what: &str, runs: &[&StraitRun], mut cond: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(90);
    while !cond() {
        if Instant::now() > deadline {
            let logs: Vec<String> = runs.iter().map(|r| r.log()).collect();
            panic!("timed out waiting for {what}\n{}", logs.join("\n-----\n"));
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// The flow document of the instance at `port`.
fn flow(port: u16) -> serde_json::Value {
    support::strait::status_get(port, "/api/flows")
        .and_then(|(_, body)| serde_json::from_str::<serde_json::Value>(&body).ok())
        .map(|v| v["flows"][0].clone())
        .unwrap_or_default()
}

/// The mirror state of `topic` as the instance at `port` shows it.
fn state(port: u16, topic: &str) -> String {
    flow(port)["mirrors"]
        .as_array()
        .and_then(|m| m.iter().find(|m| m["topic"] == topic))
        .and_then(|m| m["state"].as_str())
        .unwrap_or_default()
        .to_string()
}

/// Ten records on each of the four partitions, numbered from `from`.
fn ten_each(from: usize) -> Vec<TestRecord> {
    (from..from + 40)
        .map(|i| TestRecord {
            partition: Some((i % 4) as i32),
            ..TestRecord::kv(format!("k{i}"), format!("v{i}"))
        })
        .collect()
}

fn total(bootstrap: &str, topic: &str) -> i64 {
    watermarks(bootstrap, topic).iter().map(|w| w.1).sum()
}

fn write_config(path: &Path, west: &Broker, east: &Broker, port: u16) {
    std::fs::write(
        path,
        format!(
            "http = \"127.0.0.1:{port}\"\n\
             [clusters.west]\nbootstrap_servers = \"{}\"\n[clusters.east]\nbootstrap_servers = \"{}\"\n\
             [[flows]]\nsource = \"west\"\ntarget = \"east\"\nmode = \"mirror\"\nlink = \"west-link\"\n\
             topics = [\"trades\"]\nrefresh_topics_interval_secs = 1\n",
            west.bootstrap(),
            east.bootstrap()
        ),
    )
    .expect("config");
}

/// The port of the instance running the mirror flow, once one does.
fn runner(ports: &[u16]) -> Option<u16> {
    ports.iter().copied().find(|p| {
        flow(*p)["members"]
            .as_array()
            .and_then(|m| m.iter().find(|m| m["this_instance"] == true))
            .is_some_and(|m| m["duties"] == true)
    })
}

#[test]
fn a_paused_mirror_moves_whole_to_another_instance_and_stays_paused() {
    let west = Broker::start("west");
    let (east, proxy_east) = Broker::start_behind_proxy("east");
    let (w, e) = (west.bootstrap(), east.direct_bootstrap());
    create_topic(&w, "trades", 4);
    produce_records(&w, "trades", &ten_each(0), Codec::None);
    let dir = std::env::temp_dir().join(topic_name("mirror-scale-out"));
    std::fs::create_dir_all(&dir).expect("dir");
    let (p1, p2) = (free_port(), free_port());
    let (c1, c2) = (dir.join("s1.toml"), dir.join("s2.toml"));
    write_config(&c1, &west, &east, p1);
    write_config(&c2, &west, &east, p2);
    let c = c1.to_str().expect("path");
    let mut s1 = StraitRun::start_with(&c1, &dir.join("s1.log"), "info");
    let mut s2 = StraitRun::start_with(&c2, &dir.join("s2.log"), "info");
    wait_until("the first 40 mirrored", &[&s1, &s2], || {
        total(&e, "trades") == 40
    });
    wait_until("one instance runs the flow", &[&s1, &s2], || {
        runner(&[p1, p2]).is_some()
    });
    let first = runner(&[p1, p2]).expect("runner");

    // Paused, then the instance running it killed: the other takes it over, paused.
    let (ok, out) = strait(&["mirror", "pause", "--config", c, "--topic", "trades"]);
    assert!(ok, "{out}");
    wait_until("the pause applied", &[&s1, &s2], || {
        state(first, "trades") == "paused"
    });
    produce_records(&w, "trades", &ten_each(40), Codec::None);
    let (killed, survivor, other) = if first == p1 {
        (&mut s1, p2, &s2)
    } else {
        (&mut s2, p1, &s1)
    };
    killed.kill9();
    wait_until("the survivor runs the flow", &[other], || {
        runner(&[survivor]).is_some() && state(survivor, "trades") == "paused"
    });
    std::thread::sleep(Duration::from_secs(4));
    assert_eq!(total(&e, "trades"), 40, "copied while paused");
    let (ok, out) = strait(&["mirror", "resume", "--config", c, "--topic", "trades"]);
    assert!(ok, "{out}");
    wait_until("resumed on the survivor", &[other], || {
        total(&e, "trades") == 80
    });

    // Promoted there: it completes, and nothing more is written.
    let (ok, out) = strait(&["mirror", "promote", "--config", c, "--topic", "trades"]);
    assert!(ok, "{out}");
    wait_until("promoted", &[other], || {
        state(survivor, "trades") == "promoted"
    });
    produce_records(&w, "trades", &ten_each(80), Codec::None);
    std::thread::sleep(Duration::from_secs(4));
    assert_eq!(total(&e, "trades"), 80, "written after the promotion");
    // The promoted topic is an ordinary one: an application writes, strait stays out.
    produce_records(&e, "trades", &ten_each(1000), Codec::None);
    std::thread::sleep(Duration::from_secs(2));
    assert_eq!(total(&e, "trades"), 120);
    assert!(
        !other.log().contains("something other than strait"),
        "{}",
        other.log()
    );
    // Record by record: the first 80 at the source's own offsets, none twice.
    let source = consume_all(&w, "trades", 120, Duration::from_secs(30));
    let dest = consume_all(&e, "trades", 120, Duration::from_secs(30));
    let first_20 = |r: &[support::data::OwnedRecord]| -> Vec<String> {
        r.iter()
            .filter(|r| r.offset < 20)
            .map(|r| format!("{} {} {:?} {:?}", r.partition, r.offset, r.key, r.value))
            .collect()
    };
    assert_eq!(first_20(&dest).len(), 80);
    assert_eq!(first_20(&dest), first_20(&source));
    drop(s1);
    drop(s2);
    proxy_east.assert_clean();
}
