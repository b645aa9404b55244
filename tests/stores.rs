//! Issue 29: JKS, PKCS#12 and PEM key and trust stores made by the JDK's `keytool`, in strait's
//! TOML and in mm2.properties, for the clusters and for the status server's HTTPS.
//!
//! The secured clusters are Apache Kafka nodes ([`secure_kafka`]) whose `SSL` listener requires
//! a client certificate signed by the keytool CA; their own certificate comes from the rcgen
//! test PKI, whose CA the trust stores hold. Records are checked with rdkafka (an independent
//! client) through each node's PLAINTEXT listener.
//!
//! Every output of strait here goes through [`assert_no_secret`] with every store password.

mod support;

use std::io::{Read as _, Write as _};
use std::net::TcpStream;
use std::path::Path;
use std::process::Output;
use std::sync::Arc;
use std::time::Duration;

use strait::local_kafka::{KafkaCluster, KafkaSecurity};
use support::cli::{assert_no_secret, strait_cmd, text, write_file};
use support::kafka::{start_kafka_with, KafkaOptions};
use support::stores::*;
use support::{consume_all, create_topic, produce_records, topic_name, Codec, TestPki, TestRecord};

/// `strait --log trace probe --config F --cluster ALIAS`.
fn probe(config: &Path, alias: &str) -> Output {
    support::cli::probe(config, alias, &[])
}

/// The error lines of `out` (leaving out debug and trace log lines).
fn error_lines(out: &str) -> Vec<&str> {
    out.lines()
        .filter(|l| l.contains("error") && !l.contains("DEBUG") && !l.contains("TRACE"))
        .collect()
}

/// A one-node Kafka cluster whose `SSL` listener requires client certificates signed by
/// `client_ca`, with its server certificate from `pki`.
fn secure_kafka(name: &str, pki: &TestPki, client_ca: &Path) -> KafkaCluster {
    let mut opts = KafkaOptions::new(name);
    opts.security = Some(KafkaSecurity {
        server_cert: pki.server_cert.clone(),
        server_key: pki.server_key.clone(),
        client_ca: client_ca.to_path_buf(),
        ..KafkaSecurity::default()
    });
    start_kafka_with(opts)
}

fn ssl_listener(kafka: &KafkaCluster) -> String {
    kafka.listener_bootstrap("SSL").expect("SSL listener")
}

/// TOML of a cluster `alias` at `servers` with a JKS key and trust store (passwords from the
/// environment and a file, a separate key password).
fn jks_cluster_toml(alias: &str, servers: &str, st: &TestStores) -> String {
    let key_pw = write_file(&st.dir, "jks-key.pw", &format!("{JKS_KEY_PASSWORD}\n"));
    format!(
        "[clusters.{alias}]\nbootstrap_servers = \"{servers}\"\nsecurity_protocol = \"SSL\"\n\
         ssl_keystore_location = \"{}\"\nssl_keystore_type = \"JKS\"\n\
         ssl_keystore_password = {{ env = \"STRAIT_TEST_JKS_PW\" }}\n\
         ssl_key_password = {{ file = \"{}\" }}\n\
         ssl_truststore_location = \"{}\"\nssl_truststore_type = \"JKS\"\n\
         ssl_truststore_password = {{ env = \"STRAIT_TEST_TRUST_PW\" }}\n",
        st.client_jks.display(),
        key_pw.display(),
        st.trust_jks.display()
    )
}

/// TOML of a cluster `alias` with PKCS#12 stores (types detected from the files).
fn p12_cluster_toml(alias: &str, servers: &str, st: &TestStores) -> String {
    format!(
        "[clusters.{alias}]\nbootstrap_servers = \"{servers}\"\nsecurity_protocol = \"SSL\"\n\
         ssl_keystore_location = \"{}\"\nssl_keystore_password = {{ env = \"STRAIT_TEST_P12_PW\" }}\n\
         ssl_truststore_location = \"{}\"\nssl_truststore_password = {{ env = \"STRAIT_TEST_TRUST_PW\" }}\n",
        st.client_p12.display(),
        st.trust_p12.display()
    )
}

/// The environment the configurations take their passwords from.
fn store_env() -> Vec<(&'static str, &'static str)> {
    vec![
        ("STRAIT_TEST_JKS_PW", JKS_STORE_PASSWORD),
        ("STRAIT_TEST_P12_PW", P12_PASSWORD),
        ("STRAIT_TEST_TRUST_PW", TRUST_PASSWORD),
    ]
}

fn set_store_env() {
    for (k, v) in store_env() {
        std::env::set_var(k, v);
    }
}

/// `GET path` over HTTPS from the status server at `addr`, trusting only `ca` (PEM): the code.
fn https_get(addr: &str, path: &str, ca: &Path) -> (u16, String) {
    use rustls::pki_types::pem::PemObject as _;
    let mut roots = rustls::RootCertStore::empty();
    for c in rustls::pki_types::CertificateDer::pem_file_iter(ca).expect("CA PEM") {
        roots.add(c.expect("CA cert")).expect("add CA");
    }
    let config = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .expect("TLS versions")
    .with_root_certificates(roots)
    .with_no_client_auth();
    let name = rustls::pki_types::ServerName::try_from("127.0.0.1").expect("name");
    let conn = rustls::ClientConnection::new(Arc::new(config), name).expect("TLS client");
    let sock = TcpStream::connect(addr).expect("connect to the status server");
    let mut tls = rustls::StreamOwned::new(conn, sock);
    write!(
        tls,
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
    )
    .expect("send over TLS");
    let mut raw = Vec::new();
    // A peer that closes without close_notify ends the read with an error after the data.
    let _ = tls.read_to_end(&mut raw);
    let raw = String::from_utf8_lossy(&raw).into_owned();
    let (head, body) = raw.split_once("\r\n\r\n").unwrap_or((&raw, ""));
    let code = head
        .split(' ')
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    (code, body.to_string())
}

fn records(n: usize) -> Vec<TestRecord> {
    (0..n)
        .map(|i| TestRecord {
            key: Some(format!("k{}", i % 11).into_bytes()),
            value: Some(format!("stored value {i}").into_bytes()),
            headers: vec![("i".to_string(), Some(i.to_string().into_bytes()))],
            partition: Some((i % 2) as i32),
            timestamp: None,
        })
        .collect()
}

/// Runs `strait run` with `config` until `remote` on `target` holds the `n` records of
/// `topic` on `source`, calls `while_running` (with the run's log), stops it, and checks every
/// record arrived exactly once and in order. Returns the run's log.
fn replicate_and_check(
    config: &Path,
    source: &KafkaCluster,
    target: &KafkaCluster,
    topic: &str,
    remote: &str,
    n: usize,
    while_running: impl FnOnce(&support::StraitRun),
) -> String {
    let log = config.with_extension("log");
    let run = support::StraitRun::start_with(config, &log, "trace");
    let got = consume_all(&target.bootstrap(), remote, n, Duration::from_secs(120));
    assert_eq!(got.len(), n, "records did not all arrive:\n{}", run.log());
    while_running(&run);
    let log = run.stop();
    let source = consume_all(&source.bootstrap(), topic, n, Duration::from_secs(60));
    let target = consume_all(&target.bootstrap(), remote, n + 1, Duration::from_secs(5));
    assert_eq!(target.len(), n, "every record exactly once on the target");
    for (s, t) in source.iter().zip(&target) {
        assert_eq!((s.partition, s.offset), (t.partition, t.offset));
        assert_eq!(
            (&s.key, &s.value, &s.headers, s.timestamp),
            (&t.key, &t.value, &t.headers, t.timestamp)
        );
    }
    log
}

/// A flow between two secured Kafka clusters, the source with JKS key and trust stores (TOML,
/// separate key password), the target with PKCS#12 stores (types detected), copies every record
/// once and in order; the status server serves HTTPS from a PKCS#12 store meanwhile. Then the
/// same setup as an mm2.properties (JKS by default, PKCS12 set, passwords through config
/// providers) replicates a second topic; `strait probe` works against the JKS-secured cluster.
#[test]
fn jks_source_and_pkcs12_target_replicate_every_record_once() {
    let pki = TestPki::generate("stores-flow");
    let st = TestStores::generate("flow", &pki.ca_cert);
    // Client certificates signed by the keytool CA, or (inline PEM below) by the rcgen CA.
    let client_cas = st.dir.join("client-cas.pem");
    std::fs::write(
        &client_cas,
        std::fs::read_to_string(&st.ca_pem).expect("CA")
            + &std::fs::read_to_string(&pki.ca_cert).expect("CA"),
    )
    .expect("write client CAs");
    let a = secure_kafka("stores-a", &pki, &client_cas);
    let b = secure_kafka("stores-b", &pki, &client_cas);
    set_store_env();
    let dir = st.dir.clone();
    let mut outputs = String::new();

    // strait probe against the JKS-secured cluster (the broker requires the client certificate).
    let toml_a = write_file(
        &dir,
        "probe.toml",
        &jks_cluster_toml("a", &ssl_listener(&a), &st),
    );
    let out = probe(&toml_a, "a");
    assert!(out.status.success(), "{}", text(&out));
    assert!(
        String::from_utf8_lossy(&out.stdout)
            .contains(&format!("cluster id:  {}\n", a.cluster_id())),
        "{}",
        text(&out)
    );
    outputs.push_str(&text(&out));

    let n = 200;
    let topic = topic_name("stores-toml");
    create_topic(&a.bootstrap(), &topic, 2);
    produce_records(&a.bootstrap(), &topic, &records(n), Codec::Lz4);
    let http = format!("127.0.0.1:{}", support::broker::free_port());
    let config = write_file(
        &dir,
        "flow.toml",
        &format!(
            "[http]\nlisten = \"{http}\"\ntls_keystore_location = \"{}\"\ntls_keystore_type = \"PKCS12\"\n\
             tls_keystore_password = {{ env = \"STRAIT_TEST_P12_PW\" }}\n\
             {}{}[[flows]]\nsource = \"a\"\ntarget = \"b\"\ntopics = [\"{topic}\"]\n\
             refresh_topics_interval_secs = 1\n",
            st.server_p12.display(),
            jks_cluster_toml("a", &ssl_listener(&a), &st),
            p12_cluster_toml("b", &ssl_listener(&b), &st),
        ),
    );
    let log = replicate_and_check(&config, &a, &b, &topic, &format!("a.{topic}"), n, |run| {
        let (code, body) = https_get(&http, "/health", &st.ca_pem);
        assert_eq!(code, 200, "{body}\n{}", run.log());
        let (code, body) = https_get(&http, "/api/status", &st.ca_pem);
        assert_eq!(code, 200, "{body}");
        outputs.push_str(&body);
    });
    outputs.push_str(&log);

    // The same clusters from an mm2.properties: no type on a's stores (JKS, Kafka's default),
    // PKCS12 on b's, passwords through the file and env config providers.
    let topic2 = topic_name("stores-mm2");
    create_topic(&a.bootstrap(), &topic2, 2);
    produce_records(&a.bootstrap(), &topic2, &records(n), Codec::None);
    let secrets = write_file(
        &dir,
        "secrets.properties",
        &format!("jks.store={JKS_STORE_PASSWORD}\njks.key={JKS_KEY_PASSWORD}\n"),
    );
    let mm2 = write_file(
        &dir,
        "mm2.properties",
        &format!(
            "clusters = a, b\n\
             a.bootstrap.servers = {a_ssl}\nb.bootstrap.servers = {b_ssl}\n\
             config.providers = file,env\n\
             config.providers.file.class = org.apache.kafka.common.config.provider.FileConfigProvider\n\
             config.providers.env.class = org.apache.kafka.common.config.provider.EnvVarConfigProvider\n\
             a.security.protocol = SSL\n\
             a.ssl.keystore.location = {a_ks}\n\
             a.ssl.keystore.password = ${{file:{sec}:jks.store}}\n\
             a.ssl.key.password = ${{file:{sec}:jks.key}}\n\
             a.ssl.truststore.location = {a_ts}\n\
             a.ssl.truststore.password = ${{env:STRAIT_TEST_TRUST_PW}}\n\
             b.security.protocol = SSL\n\
             b.ssl.keystore.type = PKCS12\nb.ssl.keystore.location = {b_ks}\n\
             b.ssl.keystore.password = ${{env:STRAIT_TEST_P12_PW}}\n\
             b.ssl.truststore.type = PKCS12\nb.ssl.truststore.location = {b_ts}\n\
             b.ssl.truststore.password = ${{env:STRAIT_TEST_TRUST_PW}}\n\
             a->b.enabled = true\na->b.topics = {topic2}\n\
             refresh.topics.interval.seconds = 1\n",
            a_ssl = ssl_listener(&a),
            b_ssl = ssl_listener(&b),
            a_ks = st.client_jks.display(),
            a_ts = st.trust_jks.display(),
            b_ks = st.client_p12.display(),
            b_ts = st.trust_p12.display(),
            sec = secrets.display(),
        ),
    );
    let parsed = strait::config::load(&mm2).expect("mm2.properties");
    assert!(parsed.unsupported.is_empty(), "{:?}", parsed.unsupported);
    let log = replicate_and_check(&mm2, &a, &b, &topic2, &format!("a.{topic2}"), n, |_| {});
    outputs.push_str(&log);
    let out = probe(&mm2, "a");
    assert!(out.status.success(), "{}", text(&out));
    outputs.push_str(&text(&out));
    outputs.push_str(&format!("{parsed:?}"));

    // Inline PEM as the vendors document it (ssl.keystore.certificate.chain, ssl.keystore.key
    // and ssl.truststore.certificates written over several lines with `\` continuations).
    let inline = |path: &Path| {
        std::fs::read_to_string(path)
            .expect("PEM")
            .lines()
            .filter(|l| !l.trim().is_empty())
            .collect::<Vec<_>>()
            .join(" \\\n  ")
    };
    let inline_mm2 = write_file(
        &dir,
        "inline.properties",
        &format!(
            "clusters = a, b
a.bootstrap.servers = {}
b.bootstrap.servers = 127.0.0.1:1
             a.security.protocol = SSL
             a.ssl.truststore.type = PEM
a.ssl.truststore.certificates = {}
             a.ssl.keystore.type = PEM
a.ssl.keystore.certificate.chain = {}
             a.ssl.keystore.key = {}
",
            ssl_listener(&a),
            inline(&pki.ca_cert),
            inline(&pki.client_cert),
            inline(&pki.client_key),
        ),
    );
    let out = probe(&inline_mm2, "a");
    assert!(out.status.success(), "{}", text(&out));
    assert!(
        String::from_utf8_lossy(&out.stdout)
            .contains(&format!("cluster id:  {}\n", a.cluster_id())),
        "{}",
        text(&out)
    );
    let key_text = std::fs::read_to_string(&pki.client_key).expect("key");
    let key_line = key_text.lines().nth(1).expect("a base64 line of the key");
    assert!(
        !text(&out).contains(key_line),
        "the inline key shows:\n{}",
        text(&out)
    );
    assert_no_secret("strait's output", &outputs, STORE_SECRETS);
}

/// The first error line of `strait probe` for cluster `a` of `config`; checks it is the only
/// one, names the cluster and `store`, gives `cause`, and no secret shows.
fn probe_error(config: &Path, store: &Path, cause: &str) -> String {
    let out = probe(config, "a");
    let t = text(&out);
    assert!(!out.status.success(), "{t}");
    let errors = error_lines(&t);
    assert_eq!(errors.len(), 1, "one error line expected:\n{t}");
    let line = errors[0];
    assert!(line.contains("cluster a"), "names the cluster: {line}");
    assert!(
        line.contains(&store.display().to_string()),
        "names the store: {line}"
    );
    assert!(line.contains(cause), "gives `{cause}`: {line}");
    assert_no_secret("strait probe output", &t, STORE_SECRETS);
    line.to_string()
}

/// Each bad store setting stops `strait probe` (before any connection) with one line naming
/// the cluster, the store and the cause, in TOML and in mm2.properties; a bad HTTPS key store
/// stops `strait run` the same way. No password shows in any output.
#[test]
fn bad_stores_give_one_line_errors() {
    let pki = TestPki::generate("stores-bad");
    let st = TestStores::generate("bad", &pki.ca_cert);
    set_store_env();
    let dir = st.dir.clone();
    // Nothing listens here: each error comes from reading the store.
    let nowhere = "127.0.0.1:1";
    let base =
        format!("[clusters.a]\nbootstrap_servers = \"{nowhere}\"\nsecurity_protocol = \"SSL\"\n");
    let case = |name: &str, extra: String| write_file(&dir, name, &format!("{base}{extra}"));
    let key_store = |path: &Path, pw: &str| {
        format!(
            "ssl_keystore_location = \"{}\"\nssl_keystore_password = \"{pw}\"\n",
            path.display()
        )
    };

    // Wrong store password of a JKS and of a PKCS12 key store: the integrity check fails.
    let c = case("wrong-jks.toml", key_store(&st.client_jks, P12_PASSWORD));
    probe_error(&c, &st.client_jks, "wrong store password");
    let c = case(
        "wrong-p12.toml",
        key_store(&st.client_p12, JKS_STORE_PASSWORD),
    );
    probe_error(&c, &st.client_p12, "wrong store password");
    // Right store password, but the key has its own password, not given (nor right).
    let c = case(
        "no-key-pw.toml",
        key_store(&st.client_jks, JKS_STORE_PASSWORD),
    );
    probe_error(&c, &st.client_jks, "wrong key password for `client`");
    let c = case(
        "wrong-key-pw.toml",
        key_store(&st.client_jks, JKS_STORE_PASSWORD)
            + &format!("ssl_key_password = \"{TRUST_PASSWORD}\"\n"),
    );
    probe_error(&c, &st.client_jks, "wrong key password");
    // A trust store given as key store: no private key.
    let c = case("no-key.toml", key_store(&st.trust_jks, TRUST_PASSWORD));
    probe_error(&c, &st.trust_jks, "holds no private key");
    // Two keys and no alias, then an unknown alias, then the right one.
    let c = case(
        "two-keys.toml",
        key_store(&st.two_keys_jks, JKS_STORE_PASSWORD),
    );
    let line = probe_error(&c, &st.two_keys_jks, "holds 2 private keys");
    assert!(line.contains("first, second"), "lists the aliases: {line}");
    let c = case(
        "bad-alias.toml",
        key_store(&st.two_keys_jks, JKS_STORE_PASSWORD) + "ssl_keystore_alias = \"third\"\n",
    );
    probe_error(&c, &st.two_keys_jks, "no private key with alias `third`");
    let two = strait::config::parse_toml(
        &(base.clone()
            + &key_store(&st.two_keys_jks, JKS_STORE_PASSWORD)
            + "ssl_keystore_alias = \"second\"\n"),
        "alias.toml",
    )
    .expect("config");
    strait::replicate::cluster_config(&two.clusters["a"]).expect("the key chosen by alias");
    // The same with PKCS12 (aliases are the keys' friendly names, as keytool sets them).
    let two_p12 = dir.join("two-keys.p12");
    for alias in ["p-one", "p-two"] {
        keytool(&[
            "-genkeypair",
            "-keystore",
            two_p12.to_str().expect("path"),
            "-storetype",
            "PKCS12",
            "-storepass",
            P12_PASSWORD,
            "-alias",
            alias,
            "-dname",
            "CN=p",
            "-keyalg",
            "EC",
        ]);
    }
    let c = case("two-keys-p12.toml", key_store(&two_p12, P12_PASSWORD));
    let line = probe_error(&c, &two_p12, "holds 2 private keys");
    assert!(line.contains("p-one, p-two"), "lists the aliases: {line}");
    let two = strait::config::parse_toml(
        &(base.clone() + &key_store(&two_p12, P12_PASSWORD) + "ssl_keystore_alias = \"p-two\"\n"),
        "alias.toml",
    )
    .expect("config");
    strait::replicate::cluster_config(&two.clusters["a"]).expect("the PKCS12 key chosen by alias");
    // A JKS trust store opens without its password (integrity unchecked, as in Java); a PKCS12
    // one, whose certificates are encrypted, needs it.
    let no_pw = strait::config::parse_toml(
        &format!(
            "{base}ssl_truststore_location = \"{}\"\n",
            st.trust_jks.display()
        ),
        "t.toml",
    )
    .expect("config");
    strait::replicate::cluster_config(&no_pw.clusters["a"]).expect("JKS trust store, no password");
    let c = case(
        "p12-trust-no-pw.toml",
        format!("ssl_truststore_location = \"{}\"\n", st.trust_p12.display()),
    );
    probe_error(&c, &st.trust_p12, "set the trust store password");

    // A corrupt store: a JKS file cut short, and bytes of no store format.
    let cut = dir.join("cut.jks");
    let bytes = std::fs::read(&st.client_jks).expect("jks");
    std::fs::write(&cut, &bytes[..bytes.len() / 2]).expect("write");
    let c = case("cut.toml", key_store(&cut, JKS_STORE_PASSWORD));
    probe_error(&c, &cut, "wrong store password");
    let c = case(
        "cut-trust.toml",
        format!("ssl_truststore_location = \"{}\"\n", cut.display()),
    );
    probe_error(&c, &cut, "corrupt JKS file");
    let junk = write_file(&dir, "junk.p12", "just some text, not a store\n");
    let c = case("junk.toml", key_store(&junk, P12_PASSWORD));
    probe_error(&c, &junk, "not a JKS, PKCS#12 or PEM file");
    // A trust store with no certificate: a JKS store whose only entry was deleted.
    let empty = dir.join("empty.jks");
    keytool(&[
        "-genkeypair",
        "-keystore",
        empty.to_str().expect("path"),
        "-storetype",
        "JKS",
        "-storepass",
        TRUST_PASSWORD,
        "-alias",
        "gone",
        "-dname",
        "CN=gone",
        "-keyalg",
        "RSA",
    ]);
    keytool(&[
        "-delete",
        "-keystore",
        empty.to_str().expect("path"),
        "-storepass",
        TRUST_PASSWORD,
        "-alias",
        "gone",
    ]);
    let c = case(
        "empty-trust.toml",
        format!(
            "ssl_truststore_location = \"{}\"\nssl_truststore_password = \"{TRUST_PASSWORD}\"\n",
            empty.display()
        ),
    );
    probe_error(&c, &empty, "holds no certificate");
    // A type that does not match the file.
    let c = case(
        "pem-type.toml",
        key_store(&st.client_jks, JKS_STORE_PASSWORD) + "ssl_keystore_type = \"PEM\"\n",
    );
    probe_error(&c, &st.client_jks, "the type is set to PEM");
    let c = case(
        "jks-type.toml",
        format!(
            "ssl_truststore_location = \"{}\"\nssl_truststore_type = \"JKS\"\n",
            st.ca_pem.display()
        ),
    );
    probe_error(&c, &st.ca_pem, "the file is PEM");
    // A key store needs its password.
    let c = case(
        "no-pw.toml",
        format!("ssl_keystore_location = \"{}\"\n", st.client_p12.display()),
    );
    probe_error(&c, &st.client_p12, "no store password");

    // mm2.properties: no type means JKS (Kafka's default), which a PEM file is not; a wrong
    // password through a config provider.
    let mm2 = |name: &str, extra: String| {
        write_file(
            &dir,
            name,
            &format!(
                "clusters = a, b\na.bootstrap.servers = {nowhere}\nb.bootstrap.servers = {nowhere}\n\
                 a.security.protocol = SSL\n{extra}"
            ),
        )
    };
    let c = mm2(
        "pem-default.properties",
        format!("a.ssl.truststore.location = {}\n", st.ca_pem.display()),
    );
    probe_error(&c, &st.ca_pem, "no type is set, so it is read as JKS");
    let c = mm2(
        "wrong-pw.properties",
        format!(
            "a.ssl.keystore.type = PKCS12\na.ssl.keystore.location = {}\n\
             a.ssl.keystore.password = ${{env:STRAIT_TEST_JKS_PW}}\n",
            st.client_p12.display()
        ),
    );
    probe_error(&c, &st.client_p12, "wrong store password");
    let c = mm2(
        "two-keys.properties",
        format!(
            "a.ssl.keystore.location = {}\na.ssl.keystore.password = ${{env:STRAIT_TEST_JKS_PW}}\n",
            st.two_keys_jks.display()
        ),
    );
    probe_error(&c, &st.two_keys_jks, "first, second");

    // The status server's key store: a wrong password stops `strait run` with one line.
    let http = format!("127.0.0.1:{}", support::broker::free_port());
    let run_cfg = write_file(
        &dir,
        "http-wrong.toml",
        &format!(
            "[http]\nlisten = \"{http}\"\ntls_keystore_location = \"{}\"\n\
             tls_keystore_password = {{ env = \"STRAIT_TEST_JKS_PW\" }}\n\
             [clusters.a]\nbootstrap_servers = \"{nowhere}\"\n[clusters.b]\nbootstrap_servers = \"{nowhere}\"\n\
             [[flows]]\nsource = \"a\"\ntarget = \"b\"\n",
            st.server_p12.display()
        ),
    );
    let out = strait_cmd(&[])
        .args(["run", "--config"])
        .arg(&run_cfg)
        .output()
        .expect("strait run");
    let t = text(&out);
    assert!(!out.status.success(), "{t}");
    let errors = error_lines(&t);
    assert_eq!(errors.len(), 1, "{t}");
    assert!(
        errors[0].contains(&st.server_p12.display().to_string())
            && errors[0].contains("wrong store password"),
        "{t}"
    );
    assert_no_secret("strait run output", &t, STORE_SECRETS);
}

/// Mutual TLS with keytool stores under load: a replicate flow and a mirror flow from a JKS
/// source to a PKCS#12 target (both requiring client certificates), with records written
/// continuously for 60 s, copy every record exactly once and in order; `strait failover` then
/// commits a group's translated offsets on the PKCS#12 cluster and `strait probe` reads it.
#[test]
fn mutual_tls_stores_under_load_replicate_and_mirror_exactly_once() {
    use support::data::{commit_group, committed_offset};
    use support::load::{finish_and_check, Load};

    let pki = TestPki::generate("stores-load");
    let st = TestStores::generate("load", &pki.ca_cert);
    let a = secure_kafka("stores-load-a", &pki, &st.ca_pem);
    let b = secure_kafka("stores-load-b", &pki, &st.ca_pem);
    set_store_env();
    let (topic, mirrored) = (topic_name("mtls-repl"), topic_name("mtls-mirror"));
    create_topic(&a.bootstrap(), &topic, 4);
    create_topic(&a.bootstrap(), &mirrored, 2);
    let remote = format!("a.{topic}");
    let group = topic_name("mtls-group");
    let config = write_file(
        &st.dir,
        "load.toml",
        &format!(
            "instance_group = \"{}\"\n{}{}{}\
             [[flows]]\nsource = \"a\"\ntarget = \"b\"\ntopics = [\"{topic}\"]\n\
             refresh_topics_interval_secs = 1\ncheckpoint_interval_secs = 1\n\
             [[flows]]\nsource = \"a\"\ntarget = \"bm\"\nmode = \"mirror\"\ntopics = [\"{mirrored}\"]\n\
             refresh_topics_interval_secs = 1\n",
            topic_name("g"),
            jks_cluster_toml("a", &ssl_listener(&a), &st),
            p12_cluster_toml("b", &ssl_listener(&b), &st),
            p12_cluster_toml("bm", &ssl_listener(&b), &st),
        ),
    );
    let load = Load::start_with(a.bootstrap(), &topic, 4, 100);
    let load_m = Load::start_with(a.bootstrap(), &mirrored, 2, 100);
    let run = support::StraitRun::start(&config, &st.dir.join("load.log"));
    std::thread::sleep(Duration::from_secs(5));
    commit_group(&a.bootstrap(), &group, &topic, 4, 9);
    std::thread::sleep(Duration::from_secs(55));
    let written = finish_and_check(
        &a.bootstrap(),
        &b.bootstrap(),
        &run,
        vec![(load, &topic, &remote), (load_m, &mirrored, &mirrored)],
    );
    // The group's checkpoint reaches the target.
    std::thread::sleep(Duration::from_secs(3));
    let log = run.stop();
    eprintln!("mutual TLS with stores: {written:?} records in 60 s");
    assert!(!log.contains("partition stopped"), "{log}");

    let c = config.display().to_string();
    let out = strait_cmd(&store_env())
        .args(["failover", "--config", &c, "--source", "a", "--target", "b"])
        .args(["--group", &group])
        .output()
        .expect("strait failover");
    assert!(out.status.success(), "{}", text(&out));
    for p in 0..4 {
        assert_eq!(
            committed_offset(&b.bootstrap(), &group, &remote, p),
            Some(9),
            "partition {p} of {group} after failover:\n{}",
            text(&out)
        );
    }
    let probe_b = probe(&config, "b");
    assert!(probe_b.status.success(), "{}", text(&probe_b));
    assert!(text(&probe_b).contains(&mirrored), "{}", text(&probe_b));
    for (what, t) in [
        ("strait run log", log),
        ("strait failover", text(&out)),
        ("strait probe", text(&probe_b)),
    ] {
        assert_no_secret(what, &t, STORE_SECRETS);
    }
}
