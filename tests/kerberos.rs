//! Issue 29: SASL/GSSAPI (Kerberos) against Apache Kafka and an MIT KDC ([`support::kdc`]).
//!
//! The Kerberos cluster of each test is one Kafka node with a `KERBEROS` listener
//! (SASL_PLAINTEXT, GSSAPI only, advertised as `localhost`, broker principal
//! `kafka/localhost@STRAIT.TEST`) besides its PLAINTEXT listener, which the independent client
//! (rdkafka) reads. The target of the flows is a SCRAM-SHA-512 cluster (SASL_PLAINTEXT).
//! strait finds the realm through `KRB5_CONFIG`; tickets live a minute or less, so they expire
//! and are renewed during the flow tests, and the brokers ask for re-authentication (KIP-368)
//! every 15 s.

mod support;

use std::io::Write as _;
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use strait::local_kafka::{KafkaCluster, KafkaKerberos, KafkaSecurity, KERBEROS_LISTENER};
use support::cli::{lines_with, text, write_file};
use support::kafka::{start_kafka_with, KafkaOptions};
use support::kdc::Kdc;
use support::{consume_all, create_topic, produce_records, topic_name, Codec, TestPki, TestRecord};

const SCRAM_USER: &str = "target-writer";
const SCRAM_PASSWORD: &str = "pw-Target-512-Hq7vRt";

/// The client principal strait authenticates as.
const CLIENT: &str = "strait-client";

/// A realm and a one-node Kafka with a Kerberos listener: (KDC, cluster, client keytab).
fn kerberos_kafka(
    label: &str,
    max_life: Duration,
    reauth_ms: Option<u64>,
) -> (Kdc, KafkaCluster, PathBuf) {
    let kdc = Kdc::start(label, max_life);
    let broker_keytab = kdc.principal_with_keytab("kafka/localhost");
    let client_keytab = kdc.principal_with_keytab(CLIENT);
    let pki = TestPki::generate(label);
    let mut opts = KafkaOptions::new(label);
    opts.security = Some(KafkaSecurity {
        server_cert: pki.server_cert.clone(),
        server_key: pki.server_key.clone(),
        client_ca: pki.ca_cert.clone(),
        reauth_ms,
        kerberos: Some(KafkaKerberos {
            krb5_conf: kdc.krb5_conf(),
            keytab: broker_keytab,
            principal: kdc.full("kafka/localhost"),
        }),
        ..KafkaSecurity::default()
    });
    let kafka = start_kafka_with(opts);
    (kdc, kafka, client_keytab)
}

/// The KDC issues tickets for the client keytab, and Kafka starts with its Kerberos listener.
#[test]
fn kdc_and_kerberos_listener_start() {
    let (kdc, kafka, keytab) = kerberos_kafka("krb-smoke", Duration::from_secs(90), None);
    let out = std::process::Command::new("kinit")
        .env("KRB5_CONFIG", kdc.krb5_conf())
        .env(
            "KRB5CCNAME",
            format!("FILE:{}/smoke.cc", kdc.dir().display()),
        )
        .args(["-kt"])
        .arg(&keytab)
        .arg(kdc.full(CLIENT))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let addr = kafka.listener_bootstrap(KERBEROS_LISTENER).unwrap();
    assert!(addr.starts_with("localhost:"), "{addr}");
}

/// The flows' target: one Kafka node with a SCRAM-SHA-512 user on its SASL_PLAINTEXT listener.
fn scram_kafka(label: &str) -> KafkaCluster {
    let pki = TestPki::generate(label);
    let mut opts = KafkaOptions::new(label);
    opts.security = Some(KafkaSecurity {
        server_cert: pki.server_cert.clone(),
        server_key: pki.server_key.clone(),
        client_ca: pki.ca_cert.clone(),
        scram_users: vec![(
            "SCRAM-SHA-512".into(),
            SCRAM_USER.into(),
            SCRAM_PASSWORD.into(),
        )],
        ..KafkaSecurity::default()
    });
    start_kafka_with(opts)
}

/// TOML of a Kerberos cluster `a` (keytab) and the SCRAM cluster `b`.
fn clusters_toml(a: &str, principal: &str, keytab: &Path, b: &str) -> String {
    format!(
        "[clusters.a]\nbootstrap_servers = \"{a}\"\nsecurity_protocol = \"SASL_PLAINTEXT\"\n\
         sasl_mechanism = \"GSSAPI\"\nsasl_kerberos_service_name = \"kafka\"\n\
         sasl_kerberos_principal = \"{principal}\"\nsasl_kerberos_keytab = \"{}\"\n\
         [clusters.b]\nbootstrap_servers = \"{b}\"\nsecurity_protocol = \"SASL_PLAINTEXT\"\n\
         sasl_mechanism = \"SCRAM-SHA-512\"\nsasl_username = \"{SCRAM_USER}\"\n\
         sasl_password = {{ env = \"STRAIT_TEST_SCRAM_PASSWORD\" }}\n",
        keytab.display()
    )
}

/// A flow a -> b of `topic`, quick to notice topics, with a status server on `http`.
fn flow_toml(topic: &str, http: &str) -> String {
    format!(
        "[http]\nlisten = \"{http}\"\n\
         [[flows]]\nsource = \"a\"\ntarget = \"b\"\ntopics = [\"{topic}\"]\n\
         refresh_topics_interval_secs = 1\ncheckpoint_interval_secs = 1\noffset_sync_interval_secs = 1\n"
    )
}

/// `strait` in the realm (see [`env`]).
fn strait_cmd(kdc: &Kdc) -> Command {
    let conf = kdc.krb5_conf().display().to_string();
    let no_cache = format!("FILE:{}/no-such-cache", kdc.dir().display());
    support::cli::strait_cmd(&env(&conf, &no_cache))
}

/// `strait --log trace probe --config F --cluster ALIAS` in the realm.
fn probe(kdc: &Kdc, config: &Path, alias: &str) -> Output {
    let conf = kdc.krb5_conf().display().to_string();
    let no_cache = format!("FILE:{}/no-such-cache", kdc.dir().display());
    support::cli::probe(config, alias, &env(&conf, &no_cache))
}

/// The environment of strait in the realm: its krb5.conf, no ticket cache of the machine's
/// user read by mistake, and the target's password.
fn env<'a>(conf: &'a str, no_cache: &'a str) -> [(&'a str, &'a str); 3] {
    [
        ("KRB5_CONFIG", conf),
        ("KRB5CCNAME", no_cache),
        ("STRAIT_TEST_SCRAM_PASSWORD", SCRAM_PASSWORD),
    ]
}

/// The secrets of a test: the SCRAM password and the keys in the keytabs (hex, as
/// `klist -kK` shows them).
fn secrets(kdc: &Kdc, keytabs: &[&Path]) -> Vec<String> {
    let mut all = vec![SCRAM_PASSWORD.to_string()];
    for keytab in keytabs {
        let out = Command::new("klist")
            .env("KRB5_CONFIG", kdc.krb5_conf())
            .args(["-k", "-K"])
            .arg(keytab)
            .output()
            .unwrap();
        let listing = String::from_utf8_lossy(&out.stdout).to_string();
        let keys: Vec<String> = listing
            .split(['(', ')'])
            .filter_map(|t| t.strip_prefix("0x"))
            .map(str::to_string)
            .collect();
        assert!(!keys.is_empty(), "no keys listed:\n{listing}");
        all.extend(keys);
    }
    all
}

/// [`support::cli::assert_no_secret`] for owned secrets.
fn assert_no_secret(what: &str, text: &str, secrets: &[String]) {
    let secrets: Vec<&str> = secrets.iter().map(String::as_str).collect();
    support::cli::assert_no_secret(what, text, &secrets);
}

/// `strait run` in the background, its output in a file.
struct Running {
    child: Child,
    log: PathBuf,
}

impl Running {
    fn start(kdc: &Kdc, config: &Path, log: &Path) -> Running {
        let file = std::fs::File::create(log).unwrap();
        let child = strait_cmd(kdc)
            .args(["--log", "info,strait=debug", "run", "--config"])
            .arg(config)
            .stdout(file.try_clone().unwrap())
            .stderr(file)
            .spawn()
            .unwrap();
        Running {
            child,
            log: log.to_path_buf(),
        }
    }

    fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    fn stop(mut self) -> String {
        let _ = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status();
        let deadline = Instant::now() + Duration::from_secs(30);
        while self.child.try_wait().unwrap().is_none() {
            assert!(
                Instant::now() < deadline,
                "strait did not stop:\n{}",
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

/// `GET path` from the status server: (code, body).
fn http_get(addr: &str, path: &str) -> (u16, String) {
    use std::io::Read as _;
    let Ok(mut s) = TcpStream::connect(addr) else {
        return (0, String::new());
    };
    let _ = write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
    );
    let mut raw = String::new();
    let _ = s.read_to_string(&mut raw);
    let (head, body) = raw.split_once("\r\n\r\n").unwrap_or((&raw, ""));
    let code = head
        .split(' ')
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    (code, body.to_string())
}

/// Produces numbered records to `topic` (2 partitions) through the PLAINTEXT listener, a
/// batch of 20 every 250 ms, until `stop`; returns how many.
fn produce_until(
    bootstrap: String,
    topic: String,
    stop: Arc<AtomicBool>,
) -> std::thread::JoinHandle<usize> {
    std::thread::spawn(move || {
        let mut n = 0;
        while !stop.load(Ordering::SeqCst) {
            let batch: Vec<TestRecord> = (n..n + 20)
                .map(|i| TestRecord {
                    key: Some(format!("k{i}").into_bytes()),
                    value: Some(format!("kerberos record {i}").into_bytes()),
                    partition: Some((i % 2) as i32),
                    ..TestRecord::default()
                })
                .collect();
            produce_records(&bootstrap, &topic, &batch, Codec::None);
            n += 20;
            std::thread::sleep(Duration::from_millis(250));
        }
        n
    })
}

/// Every source record is on the target once, at the same partition and offset, in order.
fn assert_replicated(source: &str, target: &str, topic: &str, n: usize) {
    let remote = format!("a.{topic}");
    let src = consume_all(source, topic, n, Duration::from_secs(60));
    let dst = consume_all(target, &remote, n, Duration::from_secs(120));
    assert_eq!(src.len(), n);
    assert_eq!(dst.len(), n, "every record exactly once on the target");
    for (s, t) in src.iter().zip(&dst) {
        assert_eq!((s.partition, s.offset), (t.partition, t.offset));
        assert_eq!((&s.key, &s.value), (&t.key, &t.value));
    }
}

/// How many times the KDC issued `principal` a ticket-granting ticket.
fn tgts_issued(kdc: &Kdc, principal: &str) -> usize {
    kdc.log()
        .lines()
        .filter(|l| {
            l.contains("AS_REQ")
                && l.contains("ISSUE")
                && l.contains(&format!("{principal} for krbtgt"))
        })
        .count()
}

/// How many times the KDC issued `principal` a ticket for the broker.
fn service_tickets_issued(kdc: &Kdc, principal: &str) -> usize {
    kdc.log()
        .lines()
        .filter(|l| {
            l.contains("TGS_REQ")
                && l.contains("ISSUE")
                && l.contains(&format!("{principal} for kafka/localhost@"))
        })
        .count()
}

/// (a) A GSSAPI source replicated to a SCRAM target under continuous production for over a
/// minute, while tickets (40 s) expire and are renewed and the broker asks for
/// re-authentication every 15 s: every record arrives once and in order, strait got new
/// tickets from the KDC by itself, and no secret (keytab keys, password) shows in its log.
/// (b) `strait probe` against the Kerberos listener.
#[test]
fn gssapi_source_flow_renews_tickets_and_reauthenticates() {
    let (kdc, a, keytab) = kerberos_kafka("krb-flow-a", Duration::from_secs(40), Some(15_000));
    let b = scram_kafka("krb-flow-b");
    let topic = topic_name("krb-flow");
    create_topic(&a.bootstrap(), &topic, 2);
    let dir = kdc.dir().to_path_buf();
    let http = format!("127.0.0.1:{}", support::broker::free_port());
    let clusters = clusters_toml(
        &a.listener_bootstrap(KERBEROS_LISTENER).unwrap(),
        &kdc.full(CLIENT),
        &keytab,
        &a_listener(&b, "SASL_PLAINTEXT"),
    );
    let config = write_file(
        &dir,
        "flow.toml",
        &(clusters.clone() + &flow_toml(&topic, &http)),
    );
    let secrets = secrets(&kdc, &[&keytab]);

    // (b) the probe: the broker's cluster id through the Kerberos listener.
    let out = probe(&kdc, &config, "a");
    assert!(out.status.success(), "{}", text(&out));
    assert!(
        String::from_utf8_lossy(&out.stdout).contains(a.cluster_id()),
        "{}",
        text(&out)
    );
    assert_no_secret("strait probe output", &text(&out), &secrets);

    let stop = Arc::new(AtomicBool::new(false));
    let producer = produce_until(a.bootstrap(), topic.clone(), stop.clone());
    let run = Running::start(&kdc, &config, &dir.join("run.log"));
    std::thread::sleep(Duration::from_secs(70));
    stop.store(true, Ordering::SeqCst);
    let n = producer.join().unwrap();
    assert_replicated(&a.bootstrap(), &b.bootstrap(), &topic, n);
    let (code, body) = http_get(&http, "/ready");
    assert_eq!(code, 200, "{body}");
    let log = run.stop();
    assert!(
        tgts_issued(&kdc, &kdc.full(CLIENT)) >= 2,
        "strait got a new ticket before the first expired:\n{}\n{log}",
        kdc.log()
    );
    assert!(
        log.matches("SASL session has a lifetime").count() >= 3,
        "re-authenticated:\n{log}"
    );
    // Each new ticket-granting ticket brought a new service ticket for the broker: sessions
    // after the first ticket expired were authenticated with fresh tickets.
    assert!(
        service_tickets_issued(&kdc, &kdc.full(CLIENT)) >= 2,
        "{}",
        kdc.log()
    );
    assert!(lines_with(&log, "ERROR").is_empty(), "{log}");
    assert_no_secret("strait run log", &log, &secrets);
    println!(
        "kerberos flow: {n} records checked, {} tickets and {} service tickets from the KDC, {} authentications",
        tgts_issued(&kdc, &kdc.full(CLIENT)),
        service_tickets_issued(&kdc, &kdc.full(CLIENT)),
        log.matches("SASL session has a lifetime").count()
    );
}

/// "host:port" of a listener.
fn a_listener(kafka: &KafkaCluster, name: &str) -> String {
    kafka.listener_bootstrap(name).unwrap()
}

/// mm2.properties of the same clusters and a flow a -> b of `topic`; `a_jaas` is cluster a's
/// `sasl.jaas.config`.
fn mm2_properties(a: &str, a_jaas: &str, b: &str, topic: &str) -> String {
    format!(
        "clusters = a, b\n\
         config.providers = env\n\
         config.providers.env.class = org.apache.kafka.common.config.provider.EnvVarConfigProvider\n\
         a.bootstrap.servers = {a}\n\
         a.security.protocol = SASL_PLAINTEXT\n\
         a.sasl.mechanism = GSSAPI\n\
         a.sasl.kerberos.service.name = kafka\n\
         a.sasl.jaas.config = {a_jaas}\n\
         b.bootstrap.servers = {b}\n\
         b.security.protocol = SASL_PLAINTEXT\n\
         b.sasl.mechanism = SCRAM-SHA-512\n\
         b.sasl.jaas.config = org.apache.kafka.common.security.scram.ScramLoginModule required \
         username=\"{SCRAM_USER}\" password=\"${{env:STRAIT_TEST_SCRAM_PASSWORD}}\";\n\
         a->b.enabled = true\n\
         a->b.topics = {topic}\n\
         refresh.topics.interval.seconds = 1\n\
         sync.group.offsets.interval.seconds = 1\n\
         replication.policy.class = org.apache.kafka.connect.mirror.DefaultReplicationPolicy\n"
    )
}

/// (c) The Kerberos cluster configured in an mm2.properties (`Krb5LoginModule` with a keytab)
/// replicates a topic; a ticket cache filled by `kinit` works too, in TOML
/// (`sasl_kerberos_ccache`) and in mm2.properties (`useTicketCache=true ticketCache=...`).
#[test]
fn mm2_properties_keytab_flow_and_ticket_cache_probes() {
    let (kdc, a, keytab) = kerberos_kafka("krb-mm2-a", Duration::from_secs(60), None);
    let b = scram_kafka("krb-mm2-b");
    let topic = topic_name("krb-mm2");
    create_topic(&a.bootstrap(), &topic, 2);
    let n = 400;
    let records: Vec<TestRecord> = (0..n)
        .map(|i| TestRecord {
            key: Some(format!("k{i}").into_bytes()),
            value: Some(format!("mm2 kerberos record {i}").into_bytes()),
            partition: Some((i % 2) as i32),
            ..TestRecord::default()
        })
        .collect();
    produce_records(&a.bootstrap(), &topic, &records, Codec::Lz4);
    let dir = kdc.dir().to_path_buf();
    let kerberos = a.listener_bootstrap(KERBEROS_LISTENER).unwrap();
    let secrets = secrets(&kdc, &[&keytab]);
    let jaas = format!(
        "com.sun.security.auth.module.Krb5LoginModule required useKeyTab=true storeKey=true \
         keyTab=\"{}\" principal=\"{}\";",
        keytab.display(),
        kdc.full(CLIENT)
    );
    let mm2 = write_file(
        &dir,
        "mm2.properties",
        &mm2_properties(&kerberos, &jaas, &a_listener(&b, "SASL_PLAINTEXT"), &topic),
    );
    let out = probe(&kdc, &mm2, "a");
    assert!(out.status.success(), "{}", text(&out));
    let run = Running::start(&kdc, &mm2, &dir.join("mm2-run.log"));
    assert_replicated(&a.bootstrap(), &b.bootstrap(), &topic, n);
    let log = run.stop();
    assert_no_secret("strait run log (mm2)", &log, &secrets);

    // A ticket cache someone else fills (kinit), in both formats.
    let cache = format!("FILE:{}/kinit.cc", dir.display());
    let kinit = Command::new("kinit")
        .env("KRB5_CONFIG", kdc.krb5_conf())
        .env("KRB5CCNAME", &cache)
        .arg("-kt")
        .arg(&keytab)
        .arg(kdc.full(CLIENT))
        .output()
        .unwrap();
    assert!(kinit.status.success(), "{}", text(&kinit));
    let toml = write_file(
        &dir,
        "ccache.toml",
        &format!(
            "[clusters.a]\nbootstrap_servers = \"{kerberos}\"\nsecurity_protocol = \"SASL_PLAINTEXT\"\n\
             sasl_mechanism = \"GSSAPI\"\nsasl_kerberos_ccache = \"{cache}\"\n"
        ),
    );
    let out = probe(&kdc, &toml, "a");
    assert!(out.status.success(), "{}", text(&out));
    let jaas = format!(
        "com.sun.security.auth.module.Krb5LoginModule required useTicketCache=true ticketCache=\"{}\";",
        cache.trim_start_matches("FILE:")
    );
    let mm2 = write_file(
        &dir,
        "ccache.properties",
        &mm2_properties(&kerberos, &jaas, &a_listener(&b, "SASL_PLAINTEXT"), &topic),
    );
    let out = probe(&kdc, &mm2, "a");
    assert!(out.status.success(), "{}", text(&out));
    println!("mm2 kerberos flow: {n} records checked");
}

/// Probes cluster a of `config` expecting failure: its one error line, which names the cluster
/// and the mechanism and contains `cause`.
fn probe_error(kdc: &Kdc, config: &Path, cause: &str, secrets: &[String]) -> String {
    let out = probe(kdc, config, "a");
    let t = text(&out);
    assert!(!out.status.success(), "{t}");
    let errors = lines_with(&t, "error");
    assert_eq!(errors.len(), 1, "one error line:\n{t}");
    let line = errors[0].to_string();
    assert!(
        line.contains("cluster a") && line.contains("GSSAPI") && line.contains(cause),
        "the error names cluster, mechanism and cause ({cause}): {line}"
    );
    assert_no_secret("strait probe output", &t, secrets);
    line
}

/// (d) Bad Kerberos input is one error line naming the cluster, GSSAPI and the cause: a
/// principal the KDC does not know, a keytab whose key changed since, an empty ticket cache.
/// `strait run` stops on it at once (no retries); a missing keytab is a configuration error.
#[test]
fn bad_kerberos_input_is_one_clear_error() {
    let (kdc, a, _keytab) = kerberos_kafka("krb-bad", Duration::from_secs(60), None);
    let dir = kdc.dir().to_path_buf();
    let kerberos = a.listener_bootstrap(KERBEROS_LISTENER).unwrap();
    let toml = |name: &str, auth: &str| {
        write_file(
            &dir,
            name,
            &format!(
                "[clusters.a]\nbootstrap_servers = \"{kerberos}\"\nsecurity_protocol = \"SASL_PLAINTEXT\"\n\
                 sasl_mechanism = \"GSSAPI\"\n{auth}"
            ),
        )
    };
    let keytab_auth = |principal: &str, keytab: &Path| {
        format!(
            "sasl_kerberos_principal = \"{}\"\nsasl_kerberos_keytab = \"{}\"\n",
            kdc.full(principal),
            keytab.display()
        )
    };

    // A principal the KDC does not know (deleted after its keytab was written).
    let ghost = kdc.principal_with_keytab("ghost");
    let mut secrets = secrets(&kdc, &[&ghost]);
    kdc.kadmin("delprinc -force ghost");
    let config = toml("ghost.toml", &keytab_auth("ghost", &ghost));
    let line = probe_error(&kdc, &config, "not found in Kerberos database", &secrets);
    println!("unknown principal: {line}");

    // A keytab whose key changed since (another keytab was made with new keys).
    let stale = kdc.principal_with_keytab("stale");
    secrets.extend(self::secrets(&kdc, &[&stale]));
    kdc.kadmin("cpw -randkey stale");
    let config = toml("stale.toml", &keytab_auth("stale", &stale));
    let line = probe_error(&kdc, &config, "stale@STRAIT.TEST", &secrets);
    println!("stale keytab: {line}");

    // A ticket cache without tickets.
    let config = toml(
        "nocache.toml",
        &format!(
            "sasl_kerberos_ccache = \"FILE:{}/empty.cc\"\n",
            dir.display()
        ),
    );
    let line = probe_error(&kdc, &config, "ticket cache", &secrets);
    println!("empty ticket cache: {line}");

    // A keytab that is not there: the configuration names the key.
    let config = toml(
        "missing.toml",
        &keytab_auth(CLIENT, &dir.join("no-such.keytab")),
    );
    let out = probe(&kdc, &config, "a");
    let t = text(&out);
    assert!(!out.status.success(), "{t}");
    assert!(
        t.contains("sasl_kerberos_keytab") && t.contains("no-such.keytab"),
        "{t}"
    );

    // `strait run` with the unknown principal stops with one error, no retries.
    let topic = topic_name("krb-bad");
    let flow = write_file(
        &dir,
        "ghost-run.toml",
        &format!(
            "{}[clusters.b]\nbootstrap_servers = \"{}\"\n{}",
            std::fs::read_to_string(dir.join("ghost.toml")).unwrap(),
            a.bootstrap(),
            flow_toml(
                &topic,
                &format!("127.0.0.1:{}", support::broker::free_port())
            )
        ),
    );
    let out = strait_cmd(&kdc)
        .args(["run", "--config"])
        .arg(&flow)
        .output()
        .unwrap();
    let t = text(&out);
    assert!(!out.status.success(), "{t}");
    let errors = lines_with(&t, "SASL authentication failed");
    assert_eq!(errors.len(), 1, "{t}");
    assert!(
        errors[0].contains("cluster a") && errors[0].contains("GSSAPI"),
        "{t}"
    );
    assert_no_secret("strait run output", &t, &secrets);
}

/// (e) The KDC goes away during a flow: once the ticket has expired strait cannot
/// re-authenticate, `/ready` answers 503 saying why, and when the KDC is back replication
/// resumes by itself with nothing lost or duplicated.
#[test]
fn kdc_outage_pauses_the_flow_and_replication_resumes() {
    let (mut kdc, a, keytab) =
        kerberos_kafka("krb-outage-a", Duration::from_secs(30), Some(10_000));
    let b = scram_kafka("krb-outage-b");
    let topic = topic_name("krb-outage");
    create_topic(&a.bootstrap(), &topic, 2);
    let dir = kdc.dir().to_path_buf();
    let http = format!("127.0.0.1:{}", support::broker::free_port());
    let clusters = clusters_toml(
        &a.listener_bootstrap(KERBEROS_LISTENER).unwrap(),
        &kdc.full(CLIENT),
        &keytab,
        &a_listener(&b, "SASL_PLAINTEXT"),
    );
    let config = write_file(&dir, "outage.toml", &(clusters + &flow_toml(&topic, &http)));
    let stop = Arc::new(AtomicBool::new(false));
    let producer = produce_until(a.bootstrap(), topic.clone(), stop.clone());
    let run = Running::start(&kdc, &config, &dir.join("outage-run.log"));
    let deadline = Instant::now() + Duration::from_secs(60);
    while http_get(&http, "/ready").0 != 200 {
        assert!(Instant::now() < deadline, "never ready:\n{}", run.log());
        std::thread::sleep(Duration::from_millis(500));
    }
    kdc.stop();
    let deadline = Instant::now() + Duration::from_secs(150);
    let reason = loop {
        let (code, body) = http_get(&http, "/ready");
        if code == 503 && body.contains("KDC") {
            break body;
        }
        assert!(
            Instant::now() < deadline,
            "/ready did not report the KDC outage ({code} {body}):\n{}",
            run.log()
        );
        std::thread::sleep(Duration::from_millis(500));
    };
    println!("/ready while the KDC is down: {reason}");
    assert!(reason.contains("GSSAPI"), "{reason}");
    kdc.start_again();
    let deadline = Instant::now() + Duration::from_secs(120);
    while http_get(&http, "/ready").0 != 200 {
        assert!(Instant::now() < deadline, "not ready again:\n{}", run.log());
        std::thread::sleep(Duration::from_millis(500));
    }
    std::thread::sleep(Duration::from_secs(3));
    stop.store(true, Ordering::SeqCst);
    let n = producer.join().unwrap();
    assert_replicated(&a.bootstrap(), &b.bootstrap(), &topic, n);
    run.stop();
    println!("kdc outage flow: {n} records checked");
}

/// A PLAINTEXT source replicated (MirrorMaker 2 naming) and mirrored (same names and offsets)
/// into a Kerberos target under continuous production while tickets of 20 s expire and the
/// broker asks for re-authentication every 10 s: every record once and in order; then
/// `strait failover` commits a group's translated offsets on the Kerberos cluster, and
/// `strait probe` reads it.
#[test]
fn gssapi_target_replicate_and_mirror_flows_and_failover() {
    use support::data::{commit_group, committed_offset};
    use support::load::{finish_and_check, Load};

    let (kdc, k, keytab) = kerberos_kafka("krb-target", Duration::from_secs(20), Some(10_000));
    let a = support::Broker::start("krb-target-a");
    let (topic, mirrored) = (topic_name("krb-repl"), topic_name("krb-mirror"));
    create_topic(&a.bootstrap(), &topic, 2);
    create_topic(&a.bootstrap(), &mirrored, 2);
    let remote = format!("a.{topic}");
    let group = topic_name("krb-group");
    let krb = |alias: &str| {
        format!(
            "[clusters.{alias}]\nbootstrap_servers = \"{}\"\nsecurity_protocol = \"SASL_PLAINTEXT\"\n\
             sasl_mechanism = \"GSSAPI\"\nsasl_kerberos_principal = \"{}\"\nsasl_kerberos_keytab = \"{}\"\n",
            k.listener_bootstrap(KERBEROS_LISTENER).unwrap(),
            kdc.full(CLIENT),
            keytab.display()
        )
    };
    let config = write_file(
        kdc.dir(),
        "target.toml",
        &format!(
            "instance_group = \"{}\"\n[clusters.a]\nbootstrap_servers = \"{}\"\n{}{}\
             [[flows]]\nsource = \"a\"\ntarget = \"k\"\ntopics = [\"{topic}\"]\n\
             refresh_topics_interval_secs = 1\ncheckpoint_interval_secs = 1\n\
             [[flows]]\nsource = \"a\"\ntarget = \"km\"\nmode = \"mirror\"\ntopics = [\"{mirrored}\"]\n\
             refresh_topics_interval_secs = 1\n",
            topic_name("g"),
            a.bootstrap(),
            krb("k"),
            krb("km"),
        ),
    );
    // `strait run` takes the realm and the (absent) ticket cache from this environment.
    std::env::set_var("KRB5_CONFIG", kdc.krb5_conf());
    std::env::set_var(
        "KRB5CCNAME",
        format!("FILE:{}/no-such-cache", kdc.dir().display()),
    );
    let load = Load::start_with(a.bootstrap(), &topic, 2, 100);
    let load_m = Load::start_with(a.bootstrap(), &mirrored, 2, 100);
    let run = support::StraitRun::start(&config, &kdc.dir().join("target.log"));
    std::thread::sleep(Duration::from_secs(5));
    commit_group(&a.bootstrap(), &group, &topic, 2, 11);
    std::thread::sleep(Duration::from_secs(40));
    let written = finish_and_check(
        &a.bootstrap(),
        &k.bootstrap(),
        &run,
        vec![(load, &topic, &remote), (load_m, &mirrored, &mirrored)],
    );
    // The group's checkpoint reaches the target.
    std::thread::sleep(Duration::from_secs(3));
    let log = run.stop();
    assert!(
        tgts_issued(&kdc, &kdc.full(CLIENT)) >= 2,
        "new tickets after the first expired:\n{}",
        kdc.log()
    );
    assert!(lines_with(&log, "ERROR").is_empty(), "{log}");

    let c = config.display().to_string();
    let out = strait_cmd(&kdc)
        .args(["failover", "--config", &c, "--source", "a", "--target", "k"])
        .args(["--group", &group])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    for p in 0..2 {
        assert_eq!(
            committed_offset(&k.bootstrap(), &group, &remote, p),
            Some(11),
            "partition {p} after failover:\n{}",
            text(&out)
        );
    }
    let probe_out = probe(&kdc, &config, "k");
    assert!(probe_out.status.success(), "{}", text(&probe_out));
    assert!(text(&probe_out).contains(&mirrored), "{}", text(&probe_out));
    let secrets = secrets(&kdc, &[&keytab]);
    for (what, t) in [
        ("strait run log", log),
        ("strait failover", text(&out)),
        ("strait probe", text(&probe_out)),
    ] {
        assert_no_secret(what, &t, &secrets);
    }
    println!(
        "kerberos target: {written:?} records checked, {} tickets from the KDC",
        tgts_issued(&kdc, &kdc.full(CLIENT))
    );
}
