//! Issue 8 acceptance: secure clusters on Apache Kafka, and secrets that never show up in
//! output. The secured cluster of each test is one Kafka node ([`secure_kafka`]) with an `SSL`
//! listener that requires client certificates (`ssl.client.auth=required`), `SASL_PLAINTEXT` and
//! `SASL_SSL` listeners with SCRAM-SHA-256 and SCRAM-SHA-512 users, and its PLAINTEXT listener.
//!
//! Every test collects what strait printed (trace-level logs, errors, command output) and runs
//! it through [`assert_no_secret`]; add more texts (metrics, API responses) the same way.

mod support;

use std::io::Write as _;
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use strait::local_kafka::{KafkaCluster, KafkaSecurity};
use support::cli::{assert_no_secret, lines_with, probe, strait_cmd, temp_dir, text, write_file};
use support::kafka::{start_kafka_with, KafkaOptions};
use support::{
    consume_all, create_topic, produce_records, topic_name, Broker, Codec, TestPki, TestRecord,
};

const SCRAM256_USER: &str = "alice256";
const SCRAM256_PASSWORD: &str = "pw-Alice-256-Zq8vXk";
const SCRAM512_USER: &str = "bob512";
const SCRAM512_PASSWORD: &str = "pw-Bob-512-Lm3Tr9";
const WRONG_PASSWORD: &str = "pw-Wrong-Guess-77Hq";

/// Every configured secret of these tests.
const SECRETS: &[&str] = &[SCRAM256_PASSWORD, SCRAM512_PASSWORD, WRONG_PASSWORD];

/// The bearer token of the status endpoints in the flow test.
const HTTP_TOKEN: &str = "tok-Zq81-vv93-LLk2-status";

/// `GET path` from the status server at `addr`, with an optional bearer token: (code, body).
fn http_get(addr: &str, path: &str, token: Option<&str>) -> (u16, String) {
    use std::io::Read as _;
    let mut s = TcpStream::connect(addr).expect("connect to the status server");
    let auth = token
        .map(|t| format!("Authorization: Bearer {t}\r\n"))
        .unwrap_or_default();
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\n{auth}Connection: close\r\n\r\n"
    )
    .expect("send");
    let mut raw = String::new();
    s.read_to_string(&mut raw).expect("read");
    let (head, body) = raw.split_once("\r\n\r\n").unwrap_or((&raw, ""));
    let code = head
        .split(' ')
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    (code, body.to_string())
}

/// A one-node Kafka cluster with, besides PLAINTEXT, the listeners `SSL` (client certificates
/// signed by `pki`'s CA required), `SASL_PLAINTEXT` and `SASL_SSL` (its server certificate from
/// `pki`), and two SCRAM users: one with SCRAM-SHA-256 credentials only, one with
/// SCRAM-SHA-512 credentials only.
fn secure_kafka(name: &str, pki: &TestPki) -> KafkaCluster {
    let mut opts = KafkaOptions::new(name);
    opts.security = Some(KafkaSecurity {
        server_cert: pki.server_cert.clone(),
        server_key: pki.server_key.clone(),
        client_ca: pki.ca_cert.clone(),
        scram_users: vec![
            (
                "SCRAM-SHA-256".into(),
                SCRAM256_USER.into(),
                SCRAM256_PASSWORD.into(),
            ),
            (
                "SCRAM-SHA-512".into(),
                SCRAM512_USER.into(),
                SCRAM512_PASSWORD.into(),
            ),
        ],
        ..KafkaSecurity::default()
    });
    start_kafka_with(opts)
}

/// "127.0.0.1:PORT" of a secured listener of `kafka`.
fn listener(kafka: &KafkaCluster, name: &str) -> String {
    kafka
        .listener_bootstrap(name)
        .unwrap_or_else(|| panic!("no {name} listener"))
}

fn listener_addr(kafka: &KafkaCluster, name: &str) -> SocketAddr {
    listener(kafka, name)
        .parse()
        .expect("listener address is host:port")
}

/// A TCP forwarder that counts the connections it accepted.
struct CountingProxy {
    addr: String,
    accepted: Arc<AtomicUsize>,
}

fn counting_proxy(target: SocketAddr) -> CountingProxy {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind proxy");
    let addr = listener.local_addr().expect("proxy addr").to_string();
    let accepted = Arc::new(AtomicUsize::new(0));
    let count = accepted.clone();
    std::thread::spawn(move || {
        for conn in listener.incoming() {
            let Ok(client) = conn else { break };
            count.fetch_add(1, Ordering::SeqCst);
            let Ok(upstream) = TcpStream::connect(target) else {
                continue;
            };
            for (mut from, mut to) in [
                (
                    client.try_clone().expect("clone"),
                    upstream.try_clone().expect("clone"),
                ),
                (upstream, client),
            ] {
                std::thread::spawn(move || {
                    let _ = std::io::copy(&mut from, &mut to);
                    let _ = to.shutdown(std::net::Shutdown::Both);
                });
            }
        }
    });
    CountingProxy { addr, accepted }
}

/// Runs `strait run` until it exits by itself (at most `timeout`); returns status and output.
fn run_until_exit(config: &Path, env: &[(&str, &str)], timeout: Duration) -> (bool, String) {
    let mut child = strait_cmd(env)
        .args(["--log", "trace", "run", "--config"])
        .arg(config)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start strait run");
    let deadline = Instant::now() + timeout;
    loop {
        if child.try_wait().expect("wait").is_some() {
            let out = child.wait_with_output().expect("output");
            return (out.status.success(), text(&out));
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let out = child.wait_with_output().expect("output");
            panic!(
                "strait run did not stop by itself within {timeout:?} (retrying?):\n{}",
                text(&out)
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn flow_toml(source: &str, target_cluster: &str, topic: &str) -> String {
    format!(
        r#"
[clusters.a]
bootstrap_servers = "{source}"
{target_cluster}
[[flows]]
source = "a"
target = "b"
topics = ["{topic}"]
refresh_topics_interval_secs = 1
checkpoint_interval_secs = 1
offset_sync_interval_secs = 1
"#
    )
}

/// `strait probe` over mutual TLS, configured in TOML and in mm2.properties (PEM trust and key
/// stores): the broker asks for a client certificate and strait presents the configured one.
/// No client certificate, a missing CA file, and plain TCP to the TLS listener each fail with
/// one clear error.
#[test]
fn tls_broker_probe_with_toml_and_mm2_config() {
    let pki = TestPki::generate("tls-probe");
    let broker = secure_kafka("tls-probe", &pki);
    let ssl = listener(&broker, "SSL");
    let cluster_id_line = format!("cluster id:  {}\n", broker.cluster_id());
    let dir = temp_dir("tls-probe");
    let toml = write_file(
        &dir,
        "tls.toml",
        &format!(
            "[clusters.t]\nbootstrap_servers = \"{ssl}\"\nsecurity_protocol = \"SSL\"\nssl_ca_file = \"{}\"\n\
             ssl_certificate_file = \"{}\"\nssl_key_file = \"{}\"\n",
            pki.ca_cert.display(),
            pki.client_cert.display(),
            pki.client_key.display()
        ),
    );
    let out = probe(&toml, "t", &[]);
    assert!(out.status.success(), "{}", text(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains(&cluster_id_line), "{stdout}");
    assert!(stdout.contains("SaslHandshake"), "{stdout}");

    // Kafka asks for a client certificate (`ssl.client.auth=required`): without one the broker
    // refuses the session (a bad_certificate alert), which is one clear error naming the cluster
    // and what to configure.
    let no_cert = write_file(
        &dir,
        "no-client-cert.toml",
        &format!(
            "[clusters.t]\nbootstrap_servers = \"{ssl}\"\nsecurity_protocol = \"SSL\"\nssl_ca_file = \"{}\"\n",
            pki.ca_cert.display()
        ),
    );
    let out = probe(&no_cert, "t", &[]);
    assert!(!out.status.success(), "{}", text(&out));
    let t = text(&out);
    let errors = lines_with(&t, "error:");
    assert_eq!(errors.len(), 1, "{t}");
    assert!(
        errors[0].contains("cluster t")
            && errors[0].contains(&ssl)
            && errors[0].contains("TLS handshake failed")
            && errors[0].contains("client certificate"),
        "{t}"
    );

    // The client certificate from an mm2.properties PEM key store (key and chain in one file);
    // the broker requires it, so the probe only succeeds if strait presents it.
    let mtls = write_file(
        &dir,
        "mtls.properties",
        &format!(
            "clusters = t, u\nt.bootstrap.servers = {ssl}\nu.bootstrap.servers = 127.0.0.1:1\n\
             t.security.protocol = SSL\nt.ssl.truststore.type = PEM\nt.ssl.truststore.location = {}\n\
             t.ssl.keystore.type = PEM\nt.ssl.keystore.location = {}\n",
            pki.ca_cert.display(),
            {
                let both = dir.join("client-keystore.pem");
                let mut f = std::fs::File::create(&both).expect("keystore");
                f.write_all(&std::fs::read(&pki.client_key).expect("key"))
                    .expect("write");
                f.write_all(&std::fs::read(&pki.client_cert).expect("cert"))
                    .expect("write");
                both.display().to_string()
            }
        ),
    );
    let out = probe(&mtls, "t", &[]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(
        String::from_utf8_lossy(&out.stdout).contains(&cluster_id_line),
        "{}",
        text(&out)
    );

    // A CA file that is not there stops before any connection, naming cluster and file.
    let missing = write_file(
        &dir,
        "missing-ca.toml",
        &format!(
            "[clusters.t]\nbootstrap_servers = \"{ssl}\"\nsecurity_protocol = \"SSL\"\nssl_ca_file = \"{}\"\n",
            dir.join("no-such-ca.pem").display()
        ),
    );
    let out = probe(&missing, "t", &[]);
    assert!(!out.status.success());
    let t = text(&out);
    let errors = lines_with(&t, "error:");
    assert_eq!(errors.len(), 1, "{t}");
    assert!(
        errors[0].contains("cluster t") && errors[0].contains("no-such-ca.pem"),
        "{t}"
    );

    // Plain TCP against the TLS listener fails clearly instead of hanging: Kafka answers the
    // plaintext request with a TLS alert, which strait recognises.
    let plain = write_file(
        &dir,
        "plain.toml",
        &format!("[clusters.t]\nbootstrap_servers = \"{ssl}\"\n"),
    );
    let out = strait_cmd(&[])
        .args(["probe", "--timeout", "5", "--config"])
        .arg(&plain)
        .args(["--cluster", "t"])
        .output()
        .expect("probe");
    assert!(!out.status.success());
    let t = text(&out);
    let errors = lines_with(&t, "error:");
    assert_eq!(errors.len(), 1, "{t}");
    assert!(
        errors[0].contains("cluster t") && errors[0].contains("this listener speaks TLS"),
        "{t}"
    );
}

/// A target whose certificate is signed by a CA strait does not trust stops `strait run` with
/// one error line (cluster, broker, reason) after one connection; TLS to a plaintext listener is
/// a TLS failure too.
#[test]
fn untrusted_certificate_is_one_clear_error_without_retries() {
    let pki = TestPki::generate("untrusted");
    let a = Broker::start("untrusted-a");
    let b = secure_kafka("untrusted-b", &pki);
    let proxy = counting_proxy(listener_addr(&b, "SSL"));
    let topic = topic_name("untrusted");
    create_topic(&a.bootstrap(), &topic, 1);
    let dir = temp_dir("untrusted");
    let config = write_file(
        &dir,
        "untrusted.toml",
        &flow_toml(
            &a.bootstrap(),
            &format!(
                "[clusters.b]\nbootstrap_servers = \"{}\"\nsecurity_protocol = \"SSL\"\nssl_ca_file = \"{}\"\n",
                proxy.addr,
                pki.other_ca_cert.display()
            ),
            &topic,
        ),
    );
    let (ok, out) = run_until_exit(&config, &[], Duration::from_secs(60));
    assert!(!ok, "strait run should fail:\n{out}");
    let errors = lines_with(&out, "TLS handshake failed");
    assert_eq!(errors.len(), 1, "one error line expected:\n{out}");
    assert!(
        errors[0].contains("cluster b") && errors[0].contains(&proxy.addr),
        "the error names the cluster and broker: {}",
        errors[0]
    );
    assert!(
        errors[0].contains("UnknownIssuer") || errors[0].contains("invalid peer certificate"),
        "the error gives the reason: {}",
        errors[0]
    );
    assert_eq!(
        proxy.accepted.load(Ordering::SeqCst),
        1,
        "one connection attempt, no retries:\n{out}"
    );
    assert_no_secret("strait run output", &out, SECRETS);

    // TLS to a plaintext listener: a TLS failure too, not a retried socket error (Kafka takes
    // the ClientHello for an oversized request and closes the connection).
    let plain = write_file(
        &dir,
        "tls-to-plain.toml",
        &format!(
            "[clusters.p]\nbootstrap_servers = \"{}\"\nsecurity_protocol = \"SSL\"\nssl_ca_file = \"{}\"\n",
            a.bootstrap(),
            pki.ca_cert.display()
        ),
    );
    let out = probe(&plain, "p", &[]);
    assert!(!out.status.success());
    let t = text(&out);
    assert_eq!(lines_with(&t, "TLS handshake failed").len(), 1, "{t}");
}

/// SCRAM-SHA-256 and SCRAM-SHA-512 users authenticate over SASL_PLAINTEXT (passwords from an
/// environment variable, a file, and an mm2.properties config provider); a user without
/// credentials for the configured mechanism is refused with one error line.
#[test]
fn scram_sha_256_and_512_users_authenticate() {
    let pki = TestPki::generate("scram");
    let broker = secure_kafka("scram", &pki);
    let sasl = listener(&broker, "SASL_PLAINTEXT");
    let cluster_id_line = format!("cluster id:  {}\n", broker.cluster_id());
    let dir = temp_dir("scram");
    let pw_file = write_file(&dir, "bob.password", &format!("{SCRAM512_PASSWORD}\n"));
    let toml = write_file(
        &dir,
        "scram.toml",
        &format!(
            r#"
[clusters.s256]
bootstrap_servers = "{b}"
security_protocol = "SASL_PLAINTEXT"
sasl_mechanism = "SCRAM-SHA-256"
sasl_username = "{SCRAM256_USER}"
sasl_password = {{ env = "STRAIT_TEST_S256_PASSWORD" }}
[clusters.s512]
bootstrap_servers = "{b}"
security_protocol = "SASL_PLAINTEXT"
sasl_mechanism = "SCRAM-SHA-512"
sasl_username = "{SCRAM512_USER}"
sasl_password = {{ file = "{pw}" }}
[clusters.mismatch]
bootstrap_servers = "{b}"
security_protocol = "SASL_PLAINTEXT"
sasl_mechanism = "SCRAM-SHA-512"
sasl_username = "{SCRAM256_USER}"
sasl_password = {{ env = "STRAIT_TEST_S256_PASSWORD" }}
"#,
            b = sasl,
            pw = pw_file.display()
        ),
    );
    let env = [("STRAIT_TEST_S256_PASSWORD", SCRAM256_PASSWORD)];
    for alias in ["s256", "s512"] {
        let out = probe(&toml, alias, &env);
        assert!(out.status.success(), "{alias}: {}", text(&out));
        assert!(
            String::from_utf8_lossy(&out.stdout).contains(&cluster_id_line),
            "{alias}: {}",
            text(&out)
        );
        assert_no_secret("strait probe output", &text(&out), SECRETS);
    }
    // A SCRAM-SHA-256 user has no SCRAM-SHA-512 credentials.
    let out = probe(&toml, "mismatch", &env);
    assert!(!out.status.success());
    let t = text(&out);
    assert_eq!(lines_with(&t, "SASL authentication failed").len(), 1, "{t}");
    assert_no_secret("strait probe output", &t, SECRETS);

    // The same users through mm2.properties with config providers, over TLS-less SASL.
    let secrets = write_file(
        &dir,
        "secrets.properties",
        &format!("s256.password={SCRAM256_PASSWORD}\n"),
    );
    let mm2 = write_file(
        &dir,
        "scram.properties",
        &format!(
            "clusters = s256, other\ns256.bootstrap.servers = {sasl}\nother.bootstrap.servers = 127.0.0.1:1\n\
             config.providers = file\n\
             config.providers.file.class = org.apache.kafka.common.config.provider.FileConfigProvider\n\
             s256.security.protocol = SASL_PLAINTEXT\ns256.sasl.mechanism = SCRAM-SHA-256\n\
             s256.sasl.jaas.config = org.apache.kafka.common.security.scram.ScramLoginModule required \\\n  username=\"{SCRAM256_USER}\" password=\"${{file:{}:s256.password}}\";\n",
            secrets.display()
        ),
    );
    let out = probe(&mm2, "s256", &[]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(
        String::from_utf8_lossy(&out.stdout).contains(&cluster_id_line),
        "{}",
        text(&out)
    );
    assert_no_secret("strait probe output", &text(&out), SECRETS);
    drop(pki);
}

/// A wrong SCRAM password stops `strait run` with one error line naming cluster and broker,
/// after one connection, and the passwords appear nowhere in its output.
#[test]
fn wrong_password_is_one_clear_error_without_retries() {
    let pki = TestPki::generate("wrongpw");
    let a = Broker::start("wrongpw-a");
    let b = secure_kafka("wrongpw-b", &pki);
    let proxy = counting_proxy(listener_addr(&b, "SASL_PLAINTEXT"));
    let topic = topic_name("wrongpw");
    create_topic(&a.bootstrap(), &topic, 1);
    let dir = temp_dir("wrongpw");
    let config = write_file(
        &dir,
        "wrongpw.toml",
        &flow_toml(
            &a.bootstrap(),
            &format!(
                "[clusters.b]\nbootstrap_servers = \"{}\"\nsecurity_protocol = \"SASL_PLAINTEXT\"\nsasl_mechanism = \"SCRAM-SHA-512\"\nsasl_username = \"{SCRAM512_USER}\"\nsasl_password = {{ env = \"STRAIT_TEST_WRONG_PASSWORD\" }}\n",
                proxy.addr
            ),
            &topic,
        ),
    );
    let (ok, out) = run_until_exit(
        &config,
        &[("STRAIT_TEST_WRONG_PASSWORD", WRONG_PASSWORD)],
        Duration::from_secs(60),
    );
    assert!(!ok, "strait run should fail:\n{out}");
    let errors = lines_with(&out, "SASL authentication failed");
    assert_eq!(errors.len(), 1, "one error line expected:\n{out}");
    assert!(
        errors[0].contains("cluster b") && errors[0].contains(&proxy.addr),
        "the error names the cluster and broker: {}",
        errors[0]
    );
    assert_eq!(
        proxy.accepted.load(Ordering::SeqCst),
        1,
        "one connection attempt, no retries:\n{out}"
    );
    assert_no_secret("strait run output (wrong password)", &out, SECRETS);
}

/// `strait run` in the background.
struct Running {
    child: Child,
    log: PathBuf,
}

impl Running {
    fn start(config: &Path, env: &[(&str, &str)], log: &Path) -> Running {
        let file = std::fs::File::create(log).expect("log file");
        let err = file.try_clone().expect("clone log");
        let child = strait_cmd(env)
            .args(["--log", "trace", "run", "--config"])
            .arg(config)
            .stdout(file)
            .stderr(err)
            .spawn()
            .expect("start strait run");
        Running {
            child,
            log: log.to_path_buf(),
        }
    }

    fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    fn stop(mut self) -> String {
        let ok = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status()
            .expect("kill");
        assert!(ok.success());
        let deadline = Instant::now() + Duration::from_secs(30);
        while self.child.try_wait().expect("wait").is_none() {
            assert!(
                Instant::now() < deadline,
                "strait run did not stop:\n{}",
                self.log()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        self.log()
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Sum of the high watermarks of `topic` on configured cluster `alias`, read by strait's own
/// client (SASL_SSL).
fn end_offsets(config: &Path, alias: &str, topic: &str, env_var: (&str, &str)) -> i64 {
    std::env::set_var(env_var.0, env_var.1);
    let config = strait::config::load(config).expect("config");
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    rt.block_on(async {
        let Ok(cluster) = strait::replicate::connect_once(&config, alias).await else {
            return 0;
        };
        let Ok(meta) = cluster.metadata(Some(&[topic.to_string()])).await else {
            return 0;
        };
        let Some(t) = meta
            .topics
            .iter()
            .find(|t| t.name == topic && t.error_code == 0)
        else {
            return 0;
        };
        let ids: Vec<i32> = t.partitions.iter().map(|p| p.partition).collect();
        match cluster
            .list_offsets(topic, &ids, strait::client::LATEST)
            .await
        {
            Ok(v) => v.iter().map(|(_, o)| *o).sum(),
            Err(_) => 0,
        }
    })
}

/// A flow from a PLAINTEXT source to a SASL_SSL (SCRAM-SHA-512) target replicates every record
/// exactly once, and no secret (passwords, the status token) shows up in the trace log, the
/// metrics and API answers, `--help`, or the Debug output of the parsed configuration.
#[test]
fn plaintext_to_sasl_ssl_flow_and_no_secret_in_any_output() {
    let pki = TestPki::generate("flow");
    let a = Broker::start("flow-a");
    let b = secure_kafka("flow-b", &pki);
    let topic = topic_name("secure-flow");
    create_topic(&a.bootstrap(), &topic, 2);
    let n = 300;
    let records: Vec<TestRecord> = (0..n)
        .map(|i| TestRecord {
            key: Some(format!("k{}", i % 13).into_bytes()),
            value: Some(format!("secure value {i}").into_bytes()),
            headers: vec![("i".to_string(), Some(i.to_string().into_bytes()))],
            partition: Some((i % 2) as i32),
            // Recent timestamps: the target applies its retention (7 days) to old ones.
            timestamp: None,
        })
        .collect();
    produce_records(&a.bootstrap(), &topic, &records, Codec::Lz4);

    let dir = temp_dir("flow");
    let env_var = ("STRAIT_TEST_B_PASSWORD", SCRAM512_PASSWORD);
    // The status endpoints, protected by a bearer token (itself a secret).
    let token_var = ("STRAIT_TEST_HTTP_TOKEN", HTTP_TOKEN);
    let http = format!("127.0.0.1:{}", support::broker::free_port());
    let http_table = format!(
        "[http]\nlisten = \"{http}\"\ntoken = {{ env = \"{}\" }}\n",
        token_var.0
    );
    let config = write_file(
        &dir,
        "flow.toml",
        &(http_table
            + &flow_toml(
            &a.bootstrap(),
            &format!(
                "[clusters.b]\nbootstrap_servers = \"{}\"\nsecurity_protocol = \"SASL_SSL\"\nsasl_mechanism = \"SCRAM-SHA-512\"\nsasl_username = \"{SCRAM512_USER}\"\nsasl_password = {{ env = \"{}\" }}\nssl_ca_file = \"{}\"\nssl_server_name = \"localhost\"\n",
                listener(&b, "SASL_SSL"),
                env_var.0,
                pki.ca_cert.display()
            ),
            &topic,
        )),
    );
    let remote = format!("a.{topic}");
    // Commands run in-process (end_offsets) load the same file, token included.
    std::env::set_var(token_var.0, token_var.1);
    let run = Running::start(&config, &[env_var, token_var], &dir.join("run.log"));
    let deadline = Instant::now() + Duration::from_secs(60);
    while end_offsets(&config, "b", &remote, env_var) < n as i64 {
        assert!(
            Instant::now() < deadline,
            "records did not reach the SASL_SSL cluster:\n{}",
            run.log()
        );
        std::thread::sleep(Duration::from_millis(300));
    }
    let all_secrets: Vec<&str> = SECRETS.iter().copied().chain([HTTP_TOKEN]).collect();
    // Every metric and API answer of the running instance.
    let (code, body) = http_get(&http, "/api/status", None);
    assert_eq!(code, 401, "a request without the token is refused: {body}");
    assert_no_secret("401 answer", &body, &all_secrets);
    let (code, _) = http_get(&http, "/metrics", Some("wrong-token"));
    assert_eq!(code, 401, "a wrong token is refused");
    let mut answers = String::new();
    for path in [
        "/metrics",
        "/api/status",
        "/api/flows",
        "/api/groups",
        "/health",
        "/ready",
    ] {
        let (code, body) = http_get(&http, path, Some(HTTP_TOKEN));
        assert!(
            code == 200 || (path == "/ready" && code == 503),
            "{path}: {code} {body}"
        );
        answers.push_str(&body);
    }
    assert!(
        answers.contains("strait_replication_records_total"),
        "{answers}"
    );
    assert!(answers.contains(&remote), "{answers}");
    assert_no_secret("metrics and API answers", &answers, &all_secrets);
    let log = run.stop();
    assert!(log.contains("TRACE") || log.contains("DEBUG"), "{log}");
    assert_no_secret("strait run log (trace level)", &log, &all_secrets);

    // Check the target's records with rdkafka (built without SSL/SASL here) through the same
    // node's PLAINTEXT listener.
    let source = consume_all(&a.bootstrap(), &topic, n, Duration::from_secs(60));
    let target = consume_all(&b.bootstrap(), &remote, n, Duration::from_secs(60));
    assert_eq!(source.len(), n);
    assert_eq!(target.len(), n, "every record exactly once on the target");
    for (s, t) in source.iter().zip(&target) {
        assert_eq!((s.partition, s.offset), (t.partition, t.offset));
        assert_eq!(
            (&s.key, &s.value, &s.headers, s.timestamp),
            (&t.key, &t.value, &t.headers, t.timestamp)
        );
    }

    // Other places a secret could leak: --help of every command, and the parsed config.
    let mut help = String::new();
    for args in [
        vec!["--help"],
        vec!["run", "--help"],
        vec!["probe", "--help"],
        vec!["topics", "--help"],
        vec!["offsets", "--help"],
    ] {
        let out = strait_cmd(&[env_var]).args(&args).output().expect("help");
        help.push_str(&text(&out));
    }
    assert!(help.contains("Usage"), "{help}");
    assert_no_secret("--help output", &help, SECRETS);
    std::env::set_var(env_var.0, env_var.1);
    let parsed = strait::config::load(&config).expect("config");
    assert_eq!(
        parsed.clusters["b"]
            .sasl
            .as_ref()
            .and_then(|s| match &s.credentials {
                strait::sasl::SaslCredentials::Password { password, .. } => {
                    Some(password.expose())
                }
                _ => None,
            }),
        Some(SCRAM512_PASSWORD),
        "the secret was resolved"
    );
    assert_no_secret(
        "Debug of the parsed config",
        &format!("{parsed:?}"),
        SECRETS,
    );
    assert_no_secret(
        "Debug of the client config",
        &format!(
            "{:?}",
            strait::replicate::cluster_config(&parsed.clusters["b"]).expect("client config")
        ),
        SECRETS,
    );
}
