//! Secure listeners of Apache Kafka itself (issue 17): mutual TLS required by the broker, SASL
//! PLAIN, SCRAM-SHA-256 and SCRAM-SHA-512 over plaintext and TLS, and re-authentication when
//! the broker closes expired sessions (`connections.max.reauth.ms`, KIP-368). One target
//! cluster serves them all; one flow per listener replicates its own topic, checked with rdkafka
//! over the plaintext listener.

mod support;

use std::time::{Duration, Instant};

use strait::local_kafka::KafkaSecurity;
use support::data::watermarks;
use support::kafka::{start_kafka, start_kafka_with, KafkaOptions};
use support::{
    consume_all, create_topic, produce_records, topic_name, Codec, StraitRun, TestPki, TestRecord,
};

const SCRAM256: (&str, &str) = ("alice256", "pw-Alice-256-kafka-Zq8");
const SCRAM512: (&str, &str) = ("bob512", "pw-Bob-512-kafka-Lm3");
const PLAIN: (&str, &str) = ("carol", "pw-Carol-plain-kafka-Tr9");

fn records(topic: &str, from: usize, n: usize) -> Vec<TestRecord> {
    (from..from + n)
        .map(|i| TestRecord {
            partition: Some((i % 2) as i32),
            ..TestRecord::kv(format!("k{i}"), format!("{topic}-{i}"))
        })
        .collect()
}

#[test]
fn mutual_tls_sasl_plain_scram_and_reauthentication_on_apache_kafka() {
    let pki = TestPki::generate("kafka-security");
    let a = start_kafka("a");
    let mut opts = KafkaOptions::new("b");
    opts.security = Some(KafkaSecurity {
        server_cert: pki.server_cert.clone(),
        server_key: pki.server_key.clone(),
        client_ca: pki.ca_cert.clone(),
        scram_users: vec![
            ("SCRAM-SHA-256".into(), SCRAM256.0.into(), SCRAM256.1.into()),
            ("SCRAM-SHA-512".into(), SCRAM512.0.into(), SCRAM512.1.into()),
        ],
        plain_users: vec![(PLAIN.0.into(), PLAIN.1.into())],
        // Sessions expire every 4 s: the SCRAM flows re-authenticate several times.
        reauth_ms: Some(4000),
        ..KafkaSecurity::default()
    });
    let b = start_kafka_with(opts);
    let listener = |name: &str| {
        b.listener_bootstrap(name)
            .unwrap_or_else(|| panic!("no {name} listener"))
    };
    let ca = pki.ca_cert.display().to_string();
    let clusters = [
        (
            "b_mtls",
            "t_mtls",
            format!(
                "bootstrap_servers = \"{}\"\nsecurity_protocol = \"SSL\"\nssl_ca_file = \"{ca}\"\nssl_server_name = \"localhost\"\nssl_certificate_file = \"{}\"\nssl_key_file = \"{}\"\n",
                listener("SSL"),
                pki.client_cert.display(),
                pki.client_key.display()
            ),
        ),
        (
            "b_plain",
            "t_plain",
            format!(
                "bootstrap_servers = \"{}\"\nsecurity_protocol = \"SASL_PLAINTEXT\"\nsasl_mechanism = \"PLAIN\"\nsasl_username = \"{}\"\nsasl_password = \"{}\"\n",
                listener("SASL_PLAINTEXT"),
                PLAIN.0,
                PLAIN.1
            ),
        ),
        (
            "b_scram256",
            "t_scram256",
            format!(
                "bootstrap_servers = \"{}\"\nsecurity_protocol = \"SASL_PLAINTEXT\"\nsasl_mechanism = \"SCRAM-SHA-256\"\nsasl_username = \"{}\"\nsasl_password = \"{}\"\n",
                listener("SASL_PLAINTEXT"),
                SCRAM256.0,
                SCRAM256.1
            ),
        ),
        (
            "b_scram512",
            "t_scram512",
            format!(
                "bootstrap_servers = \"{}\"\nsecurity_protocol = \"SASL_SSL\"\nsasl_mechanism = \"SCRAM-SHA-512\"\nsasl_username = \"{}\"\nsasl_password = \"{}\"\nssl_ca_file = \"{ca}\"\nssl_server_name = \"localhost\"\n",
                listener("SASL_SSL"),
                SCRAM512.0,
                SCRAM512.1
            ),
        ),
    ];
    let mut config = format!(
        "instance_group = \"{}\"\n[clusters.a]\nbootstrap_servers = \"{}\"\n",
        topic_name("g"),
        a.bootstrap()
    );
    for (alias, _, settings) in &clusters {
        config.push_str(&format!("[clusters.{alias}]\n{settings}"));
    }
    for (alias, topic, _) in &clusters {
        config.push_str(&format!(
            "[[flows]]\nsource = \"a\"\ntarget = \"{alias}\"\ntopics = [\"{topic}\"]\nrefresh_topics_interval_secs = 2\nemit_heartbeats = false\n"
        ));
        create_topic(&a.bootstrap(), topic, 2);
        produce_records(&a.bootstrap(), topic, &records(topic, 0, 200), Codec::Lz4);
    }
    let dir = std::env::temp_dir().join(topic_name("kafka-security"));
    std::fs::create_dir_all(&dir).expect("dir");
    let path = dir.join("secure.toml");
    std::fs::write(&path, config).expect("config");
    // A password in clear in the file is allowed (warned about); these are test secrets.
    let run = StraitRun::start(&path, &dir.join("run.log"));

    // More data over more than two re-authentication periods.
    for round in 1..=3 {
        std::thread::sleep(Duration::from_secs(4));
        for (_, topic, _) in &clusters {
            produce_records(
                &a.bootstrap(),
                topic,
                &records(topic, round * 200, 200),
                Codec::Lz4,
            );
        }
    }
    let direct = b.bootstrap();
    let deadline = Instant::now() + Duration::from_secs(90);
    for (alias, topic, _) in &clusters {
        let remote = format!("a.{topic}");
        while watermarks(&direct, &remote) != watermarks(&a.bootstrap(), topic) {
            assert!(
                Instant::now() < deadline,
                "{alias}: {remote} never caught up: {:?}\n{}",
                watermarks(&direct, &remote),
                run.log()
            );
            std::thread::sleep(Duration::from_millis(300));
        }
        let values = |bootstrap: &str, t: &str| {
            let mut v: Vec<(i32, Vec<u8>)> =
                consume_all(bootstrap, t, 800, Duration::from_secs(60))
                    .into_iter()
                    .map(|r| (r.partition, r.value.unwrap_or_default()))
                    .collect();
            v.sort();
            v
        };
        assert_eq!(
            values(&a.bootstrap(), topic),
            values(&direct, &remote),
            "{alias}"
        );
    }
    let log = run.stop();
    assert!(!log.contains("partition stopped"), "{log}");
    for secret in [SCRAM256.1, SCRAM512.1, PLAIN.1] {
        assert!(!log.contains(secret), "a password in the log");
    }
}

/// The broker requires a client certificate: a flow configured without one stops with one
/// clear line and does not retry.
#[test]
fn a_missing_client_certificate_is_one_clear_error() {
    let pki = TestPki::generate("kafka-mtls-missing");
    let a = start_kafka("a");
    let mut opts = KafkaOptions::new("b");
    opts.security = Some(KafkaSecurity {
        server_cert: pki.server_cert.clone(),
        server_key: pki.server_key.clone(),
        client_ca: pki.ca_cert.clone(),
        ..KafkaSecurity::default()
    });
    let b = start_kafka_with(opts);
    let ssl = b.listener_bootstrap("SSL").expect("SSL listener");
    let dir = std::env::temp_dir().join(topic_name("kafka-mtls-missing"));
    std::fs::create_dir_all(&dir).expect("dir");
    let path = dir.join("c.toml");
    std::fs::write(
        &path,
        format!(
            "[clusters.a]\nbootstrap_servers = \"{}\"\n[clusters.b]\nbootstrap_servers = \"{ssl}\"\nsecurity_protocol = \"SSL\"\nssl_ca_file = \"{}\"\nssl_server_name = \"localhost\"\n[[flows]]\nsource = \"a\"\ntarget = \"b\"\ntopics = [\"x\"]\n",
            a.bootstrap(),
            pki.ca_cert.display()
        ),
    )
    .expect("config");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_strait"))
        .args(["probe", "--cluster", "b", "--config"])
        .arg(&path)
        .output()
        .expect("strait probe");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{err}");
    assert!(err.contains("cluster b"), "{err}");
    assert!(err.contains("TLS") || err.contains("certificate"), "{err}");
}
