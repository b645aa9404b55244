//! `strait probe` against a real broker, a closed port, and a port that speaks something else.

mod support;

use std::io::{Read, Write};
use std::net::TcpListener;
use std::process::Command;
use std::time::{Duration, Instant};

use support::{create_topic, produce_records, topic_name, Broker, Codec, TestRecord};

fn probe(bootstrap: &str) -> (bool, String, String, Duration) {
    let start = Instant::now();
    let out = Command::new(env!("CARGO_BIN_EXE_strait"))
        .args(["probe", "--bootstrap", bootstrap, "--timeout", "3"])
        .output()
        .expect("run strait");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
        start.elapsed(),
    )
}

#[test]
fn probe_shows_cluster_topics_leaders_and_offsets() {
    let broker = Broker::start("probe-cluster");
    let topic = topic_name("probe");
    create_topic(&broker.bootstrap(), &topic, 2);
    let records: Vec<_> = (0..10)
        .map(|i| TestRecord {
            partition: Some(i % 2),
            ..TestRecord::kv(format!("k{i}"), "v")
        })
        .collect();
    produce_records(&broker.bootstrap(), &topic, &records, Codec::Lz4);
    let (ok, stdout, stderr, _) = probe(&broker.bootstrap());
    assert!(ok, "probe failed: {stderr}");
    // Apache Kafka's cluster id is the one its storage was formatted with (random).
    assert!(
        stdout.contains(&format!("cluster id:  {}\n", broker.cluster_id())),
        "{stdout}"
    );
    assert!(stdout.contains("Produce"), "{stdout}");
    assert!(
        stdout.contains(&format!("{topic}  partitions 2")),
        "{stdout}"
    );
    // Each partition holds 5 records: log start 0, log end 5.
    let lines: Vec<&str> = stdout
        .lines()
        .skip_while(|l| !l.contains(&topic))
        .skip(2)
        .take(2)
        .collect();
    for l in lines {
        let cols: Vec<&str> = l.split_whitespace().collect();
        assert_eq!(&cols[2..5], &["0", "5", "5"], "{l}");
    }
}

#[test]
fn probe_of_a_closed_port_fails_clearly() {
    let port = support::broker::free_port();
    let (ok, _, stderr, took) = probe(&format!("127.0.0.1:{port}"));
    assert!(!ok);
    assert!(stderr.starts_with("error: "), "{stderr}");
    assert!(
        stderr.contains(&port.to_string()),
        "names the address: {stderr}"
    );
    assert!(stderr.to_lowercase().contains("refused"), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert!(took < Duration::from_secs(15));
}

#[test]
fn probe_of_a_port_speaking_http_fails_clearly() {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("addr").port();
    let server = std::thread::spawn(move || {
        // Answer every connection like a web server would.
        listener.set_nonblocking(false).ok();
        for _ in 0..3 {
            let Ok((mut s, _)) = listener.accept() else {
                return;
            };
            let mut buf = [0u8; 512];
            let _ = s.read(&mut buf);
            let _ = s.write_all(
                b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
            );
        }
    });
    let (ok, _, stderr, took) = probe(&format!("127.0.0.1:{port}"));
    assert!(!ok);
    assert!(stderr.starts_with("error: "), "{stderr}");
    assert!(stderr.contains(&port.to_string()), "{stderr}");
    assert!(stderr.contains("Kafka"), "says it is not Kafka: {stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert!(took < Duration::from_secs(15), "no hang: {took:?}");
    drop(server);
}

#[test]
fn probe_of_a_silent_port_times_out_clearly() {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("addr").port();
    let (ok, _, stderr, took) = probe(&format!("127.0.0.1:{port}"));
    drop(listener);
    assert!(!ok);
    assert!(
        stderr.contains("timed out") || stderr.contains("Kafka"),
        "{stderr}"
    );
    assert!(took < Duration::from_secs(20), "no hang: {took:?}");
}
