//! SASL/OAUTHBEARER with OIDC client credentials (issue 29) on Apache Kafka. Tokens come from
//! an identity provider the tests serve on loopback ([`support::oidc`]); Kafka validates them
//! with its own `OAuthBearerValidatorCallbackHandler` against the provider's JWKS, inside
//! `ExtensionCheckingValidator` (tests/java), which also refuses a client whose SASL extensions
//! `logicalCluster` and `identityPoolId` are not the ones Confluent Cloud-style configurations
//! send. Tokens live shorter than the tests and the brokers end SASL sessions every few
//! seconds (KIP-368), so strait refreshes tokens and re-authenticates under load.
//!
//! Every record is checked with rdkafka through the brokers' PLAINTEXT listeners; every output
//! (trace logs, errors, command output, `/metrics`, `/api`, `/ready`) is searched for the
//! client secret, the SCRAM password and any token.

mod support;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use strait::local_kafka::{KafkaCluster, KafkaOAuth, KafkaSecurity};
use support::cli::{assert_no_secret, lines_with, strait_out, temp_dir, text, write_file};
use support::data::{commit_group, committed_offset};
use support::kafka::{start_kafka_with, KafkaOptions};
use support::load::{assert_exactly_once, finish_and_check, wait_caught_up, Load};
use support::oidc::{Idp, Mode, AUDIENCE};
use support::strait::{status_get, wait_until};
use support::{create_topic, topic_name, Broker, StraitRun, TestPki};

const CLIENT_ID: &str = "strait-replicator";
const CLIENT_SECRET: &str = "oidc-Secret-Zq81-Kp2x-77Lm";
const SCRAM_USER: &str = "scram512";
const SCRAM_PASSWORD: &str = "pw-Scram-512-Hq4Vw9";
const LOGICAL_CLUSTER: &str = "lkc-strait01";
const POOL: &str = "pool-Ab12";
/// The start of every JWT header strait is given (`{"alg":"RS256"...`): no token may show.
const TOKEN_PREFIX: &str = "eyJhbGciOiJSUzI1NiIs";

const SECRETS: &[&str] = &[CLIENT_SECRET, SCRAM_PASSWORD, TOKEN_PREFIX];

/// A one-node Kafka whose SASL listeners take SCRAM-SHA-512 and OAUTHBEARER (validated against
/// `jwks_url` by `ExtensionCheckingValidator`), sessions ending every `reauth_ms`.
fn oauth_kafka(
    name: &str,
    pki: &TestPki,
    idp: &Idp,
    jwks_url: &str,
    reauth_ms: u64,
) -> KafkaCluster {
    let validator = support::java::compile("ExtensionCheckingValidator");
    let mut opts = KafkaOptions::new(name);
    opts.security = Some(KafkaSecurity {
        server_cert: pki.server_cert.clone(),
        server_key: pki.server_key.clone(),
        client_ca: pki.ca_cert.clone(),
        scram_users: vec![(
            "SCRAM-SHA-512".into(),
            SCRAM_USER.into(),
            SCRAM_PASSWORD.into(),
        )],
        reauth_ms: Some(reauth_ms),
        oauth: Some(KafkaOAuth {
            jwks_url: jwks_url.to_string(),
            audience: AUDIENCE.to_string(),
            issuer: idp.issuer(),
            validator_class: Some("ExtensionCheckingValidator".to_string()),
        }),
        ..KafkaSecurity::default()
    });
    opts.classpath = vec![validator.classes().to_path_buf()];
    opts.jvm_args = vec![format!("-Dstrait.test.logicalCluster={LOGICAL_CLUSTER}")];
    start_kafka_with(opts)
}

fn listener(kafka: &KafkaCluster, name: &str) -> String {
    kafka
        .listener_bootstrap(name)
        .unwrap_or_else(|| panic!("no {name} listener"))
}

/// The TOML of an OAUTHBEARER cluster `alias` on `bootstrap` (SASL_PLAINTEXT), its secret
/// from the environment variable `STRAIT_TEST_OIDC_SECRET`.
fn oauth_cluster_toml(alias: &str, bootstrap: &str, idp: &Idp, extra: &str) -> String {
    format!(
        "[clusters.{alias}]\nbootstrap_servers = \"{bootstrap}\"\nsecurity_protocol = \"SASL_PLAINTEXT\"\n\
         sasl_mechanism = \"OAUTHBEARER\"\n\
         sasl_oauthbearer_token_endpoint_url = \"{}\"\n\
         sasl_oauthbearer_client_id = \"{CLIENT_ID}\"\n\
         sasl_oauthbearer_client_secret = {{ env = \"STRAIT_TEST_OIDC_SECRET\" }}\n\
         sasl_oauthbearer_scope = \"kafka\"\n\
         sasl_oauthbearer_extensions = {{ logicalCluster = \"{LOGICAL_CLUSTER}\", identityPoolId = \"{POOL}\" }}\n\
         {extra}",
        idp.token_url()
    )
}

const ENV: &[(&str, &str)] = &[
    ("STRAIT_TEST_OIDC_SECRET", CLIENT_SECRET),
    ("STRAIT_TEST_SCRAM_PASSWORD", SCRAM_PASSWORD),
];

/// `strait run` with the test's secrets in its environment.
fn start_run(config: &Path, log: &Path, filter: &str) -> StraitRun {
    for (k, v) in ENV {
        std::env::set_var(k, v);
    }
    StraitRun::start_with(config, log, filter)
}

/// Every answer of the status server on `port`, joined.
fn status_answers(port: u16) -> String {
    ["/metrics", "/api/status", "/api/flows", "/ready", "/health"]
        .iter()
        .filter_map(|p| status_get(port, p).map(|(_, b)| b))
        .collect::<Vec<_>>()
        .join("\n")
}

/// A replicate flow and a mirror flow from a SCRAM-SHA-512 over SASL_SSL source to an
/// OAUTHBEARER target (tokens of 20 s, SASL sessions of 8 s), under continuous production for
/// 60 s: every record exactly once and in order, tokens refreshed and connections
/// re-authenticated meanwhile; then `strait failover` commits a group's translated offsets on
/// the OAUTHBEARER cluster, and no secret or token shows in any output.
#[test]
fn oauthbearer_target_under_load_with_expiring_tokens_exactly_once() {
    let pki = TestPki::generate("oauth-load");
    let idp = Idp::start(CLIENT_ID, CLIENT_SECRET, Duration::from_secs(20), None);
    let mut a_opts = KafkaOptions::new("oauth-load-a");
    a_opts.security = Some(KafkaSecurity {
        server_cert: pki.server_cert.clone(),
        server_key: pki.server_key.clone(),
        client_ca: pki.ca_cert.clone(),
        scram_users: vec![(
            "SCRAM-SHA-512".into(),
            SCRAM_USER.into(),
            SCRAM_PASSWORD.into(),
        )],
        reauth_ms: Some(8000),
        ..KafkaSecurity::default()
    });
    let a = start_kafka_with(a_opts);
    let b = oauth_kafka("oauth-load-b", &pki, &idp, &idp.jwks_url(), 8000);
    let (topic, mirrored) = (topic_name("oauth-repl"), topic_name("oauth-mirror"));
    create_topic(&a.bootstrap(), &topic, 4);
    create_topic(&a.bootstrap(), &mirrored, 2);
    let remote = format!("a.{topic}");
    let group = topic_name("oauth-group");

    let dir = temp_dir("oauth-load");
    let http = support::broker::free_port();
    let refresh = "sasl_login_refresh_min_period_secs = 0\nsasl_login_refresh_buffer_secs = 0\n";
    let config = write_file(
        &dir,
        "strait.toml",
        &format!(
            "instance_group = \"{}\"\n[http]\nlisten = \"127.0.0.1:{http}\"\n\
             [clusters.a]\nbootstrap_servers = \"{}\"\nsecurity_protocol = \"SASL_SSL\"\n\
             sasl_mechanism = \"SCRAM-SHA-512\"\nsasl_username = \"{SCRAM_USER}\"\n\
             sasl_password = {{ env = \"STRAIT_TEST_SCRAM_PASSWORD\" }}\n\
             ssl_ca_file = \"{}\"\nssl_server_name = \"localhost\"\n\
             {}{}\
             [[flows]]\nsource = \"a\"\ntarget = \"b\"\ntopics = [\"{topic}\"]\n\
             refresh_topics_interval_secs = 1\ncheckpoint_interval_secs = 1\noffset_sync_interval_secs = 1\n\
             [[flows]]\nsource = \"a\"\ntarget = \"bm\"\nmode = \"mirror\"\ntopics = [\"{mirrored}\"]\n\
             refresh_topics_interval_secs = 1\n",
            topic_name("g"),
            listener(&a, "SASL_SSL"),
            pki.ca_cert.display(),
            oauth_cluster_toml("b", &listener(&b, "SASL_PLAINTEXT"), &idp, refresh),
            oauth_cluster_toml("bm", &listener(&b, "SASL_PLAINTEXT"), &idp, refresh),
        ),
    );
    let load = Load::start_with(a.bootstrap(), &topic, 4, 100);
    let load_m = Load::start_with(a.bootstrap(), &mirrored, 2, 100);
    let run = start_run(&config, &dir.join("run.log"), "info,strait=debug");
    std::thread::sleep(Duration::from_secs(5));
    commit_group(&a.bootstrap(), &group, &topic, 4, 7);
    let started = Instant::now();
    let mut ready_seen = 0;
    while started.elapsed() < Duration::from_secs(60) {
        std::thread::sleep(Duration::from_secs(2));
        if status_get(http, "/ready").is_some_and(|(c, _)| c == 200) {
            ready_seen += 1;
        }
    }
    let written = finish_and_check(
        &a.bootstrap(),
        &b.bootstrap(),
        &run,
        vec![(load, &topic, &remote), (load_m, &mirrored, &mirrored)],
    );
    // The group's checkpoint reaches the target.
    std::thread::sleep(Duration::from_secs(3));
    let answers = status_answers(http);
    let log = run.stop();
    eprintln!(
        "OAUTHBEARER target: {written:?} records in 60 s; {} tokens issued for {} requests; ready in {ready_seen} of 30 checks",
        idp.tokens_issued(),
        idp.token_requests()
    );
    // Two aliases, tokens of 20 s refreshed at 80 to 85 % over 60 s and more: at least 3 each.
    assert!(
        idp.tokens_issued() >= 6,
        "tokens were not refreshed:\n{log}"
    );
    let reauths = log
        .matches("re-authenticating (SASL session lifetime)")
        .count();
    assert!(
        reauths >= 6,
        "connections did not re-authenticate ({reauths}):\n{log}"
    );
    assert!(
        ready_seen >= 25,
        "ready only {ready_seen} times of 30:\n{log}"
    );
    assert!(!log.contains("partition stopped"), "{log}");
    assert!(!log.contains("SASL authentication failed"), "{log}");

    // `strait failover` on the OAUTHBEARER cluster commits the translated offsets.
    let c = config.display().to_string();
    let args = [
        "failover", "--config", &c, "--source", "a", "--target", "b", "--group", &group,
    ];
    let out = strait_out(&args, ENV);
    assert!(out.status.success(), "{}", text(&out));
    for p in 0..4 {
        assert_eq!(
            committed_offset(&b.bootstrap(), &group, &remote, p),
            Some(7),
            "partition {p} of {group} after failover:\n{}",
            text(&out)
        );
    }
    let probe = strait_out(&["probe", "--config", &c, "--cluster", "b"], ENV);
    assert!(probe.status.success(), "{}", text(&probe));
    assert!(text(&probe).contains(&mirrored), "{}", text(&probe));
    for (what, t) in [
        ("strait run log", log.as_str()),
        ("status answers", answers.as_str()),
        ("strait failover", &text(&out)),
        ("strait probe", &text(&probe)),
    ] {
        assert_no_secret(what, t, SECRETS);
    }
}

/// Waits until `/ready` answers 503 with `needle` in the target's problem.
fn wait_not_ready_because(http: u16, needle: &str, run: &StraitRun, timeout: Duration) {
    wait_until(
        &format!("/ready 503 naming `{needle}`"),
        timeout,
        run,
        || {
            status_get(http, "/ready").is_some_and(|(c, body)| {
                let ok = c == 503 && body.contains(needle);
                if !ok && c == 503 && !body.contains(needle) {
                    eprintln!("/ready: {body}");
                }
                ok
            })
        },
    );
}

/// The identity provider at its worst: it refuses the client (401), goes down for longer than
/// a token lives, answers too slowly, and issues tokens that already expired by strait's clock.
/// Each gives one error line naming the cluster, OAUTHBEARER and the cause, `/ready` 503 with
/// that cause while it lasts, a backoff rather than a storm of requests, and replication that
/// resumes by itself when the provider is well again, every record exactly once.
#[test]
fn identity_provider_failures_are_named_backed_off_and_recovered() {
    let pki = TestPki::generate("oauth-bad");
    let mut idp = Idp::start(CLIENT_ID, CLIENT_SECRET, Duration::from_secs(12), None);
    idp.set_mode(Mode::Refuse);
    let a = Broker::start("oauth-bad-a");
    let b = oauth_kafka("oauth-bad-b", &pki, &idp, &idp.jwks_url(), 5000);
    let topic = topic_name("oauth-bad");
    create_topic(&a.bootstrap(), &topic, 2);
    let remote = format!("a.{topic}");
    let dir = temp_dir("oauth-bad");
    let http = support::broker::free_port();
    let config = write_file(
        &dir,
        "strait.toml",
        &format!(
            "instance_group = \"{}\"\n[http]\nlisten = \"127.0.0.1:{http}\"\n\
             [clusters.a]\nbootstrap_servers = \"{}\"\n{}\
             [[flows]]\nsource = \"a\"\ntarget = \"b\"\ntopics = [\"{topic}\"]\nrefresh_topics_interval_secs = 1\n",
            topic_name("g"),
            a.bootstrap(),
            oauth_cluster_toml(
                "b",
                &listener(&b, "SASL_PLAINTEXT"),
                &idp,
                "sasl_login_retry_backoff_max_ms = 2000\nsasl_login_read_timeout_ms = 1500\n\
                 sasl_login_refresh_min_period_secs = 0\nsasl_login_refresh_buffer_secs = 0\n",
            ),
        ),
    );
    let load = Load::start_with(a.bootstrap(), &topic, 2, 50);
    let run = start_run(&config, &dir.join("run.log"), "info,strait=trace");
    let timeout = Duration::from_secs(60);

    // 1. The provider refuses the client: one line per attempt, spaced by the backoff.
    wait_not_ready_because(http, "401", &run, timeout);
    let before = idp.token_requests();
    std::thread::sleep(Duration::from_secs(8));
    let during = idp.token_requests() - before;
    assert!(
        during <= 12,
        "{during} token requests in 8 s: a retry storm\n{}",
        run.log()
    );
    let log = run.log();
    let refused = lines_with(&log, "answered 401");
    assert!(!refused.is_empty(), "{log}");
    for l in &refused {
        assert!(
            l.contains("cluster b") && l.contains("OAUTHBEARER") && l.contains("invalid_client"),
            "the line names the cluster, the mechanism and the cause: {l}"
        );
    }
    idp.set_mode(Mode::Serve);
    wait_until("ready once the provider accepts", timeout, &run, || {
        status_get(http, "/ready").is_some_and(|(c, _)| c == 200)
    });

    // 2. The provider down for longer than a token lives.
    idp.down();
    wait_not_ready_because(http, "cannot connect to the token endpoint", &run, timeout);
    idp.up();
    wait_until("ready once the provider is back", timeout, &run, || {
        status_get(http, "/ready").is_some_and(|(c, _)| c == 200)
    });

    // 3. The provider answers after the read timeout (1.5 s).
    idp.set_mode(Mode::Slow(Duration::from_secs(4)));
    wait_not_ready_because(http, "did not answer within", &run, timeout);
    idp.set_mode(Mode::Serve);
    wait_until("ready once the provider is fast", timeout, &run, || {
        status_get(http, "/ready").is_some_and(|(c, _)| c == 200)
    });

    // 4. Tokens already expired by this machine's clock (a clock skew).
    idp.set_mode(Mode::Expired);
    wait_not_ready_because(http, "check the clock", &run, timeout);
    idp.set_mode(Mode::Serve);
    wait_until("ready once tokens are valid", timeout, &run, || {
        status_get(http, "/ready").is_some_and(|(c, _)| c == 200)
    });

    let total = load.finish();
    wait_caught_up(
        &a.bootstrap(),
        &topic,
        &b.bootstrap(),
        &remote,
        &run,
        timeout,
    );
    let answers = status_answers(http);
    let log = run.stop();
    assert_exactly_once(&a.bootstrap(), &topic, &b.bootstrap(), &remote, total);
    assert!(!log.contains("partition stopped"), "{log}");
    assert!(log.contains("TRACE"), "trace logging was on");
    assert_no_secret("strait run log (trace)", &log, SECRETS);
    assert_no_secret("status answers", &answers, SECRETS);
}

/// mm2.properties as Kafka and Confluent document OAUTHBEARER (the login callback handler,
/// the token endpoint over HTTPS trusted through the JAAS `ssl.truststore.*` options, the
/// extensions as `extension_<name>` options): a flow from an OAUTHBEARER source replicates
/// every record, `strait probe` reads the cluster, and an extension the broker does not accept
/// fails `strait probe` with one line naming the cluster and the broker's refusal.
#[test]
fn mm2_properties_oauthbearer_over_an_https_token_endpoint() {
    let pki = TestPki::generate("oauth-mm2");
    let idp = Idp::start(
        CLIENT_ID,
        CLIENT_SECRET,
        Duration::from_secs(60),
        Some((&pki.server_cert, &pki.server_key)),
    );
    let dir = temp_dir("oauth-mm2");
    // Kafka reads the keys from a file: its JWKS client would need the provider's CA too.
    let jwks = idp.write_jwks(&dir.join("jwks.json"));
    let a = oauth_kafka("oauth-mm2-a", &pki, &idp, &jwks, 30_000);
    let b = Broker::start("oauth-mm2-b");
    let topic = topic_name("oauth-mm2");
    create_topic(&a.bootstrap(), &topic, 2);
    let secrets = write_file(
        &dir,
        "secrets.properties",
        &format!("oidc.secret={CLIENT_SECRET}\n"),
    );
    let mm2 = |extension: &str| -> PathBuf {
        write_file(
            &dir,
            &format!("mm2-{extension}.properties"),
            &format!(
                "clusters = a, b\n\
                 a.bootstrap.servers = {}\nb.bootstrap.servers = {}\n\
                 config.providers = file\n\
                 config.providers.file.class = org.apache.kafka.common.config.provider.FileConfigProvider\n\
                 a.security.protocol = SASL_PLAINTEXT\n\
                 a.sasl.mechanism = OAUTHBEARER\n\
                 a.sasl.login.callback.handler.class = org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginCallbackHandler\n\
                 a.sasl.oauthbearer.token.endpoint.url = {}\n\
                 a.sasl.jaas.config = org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required \\\n  \
                 clientId=\"{CLIENT_ID}\" clientSecret=\"${{file:{}:oidc.secret}}\" scope=\"kafka\" \\\n  \
                 extension_logicalCluster=\"{extension}\" extension_identityPoolId=\"{POOL}\" \\\n  \
                 ssl.truststore.type=\"PEM\" ssl.truststore.location=\"{}\";\n\
                 a->b.enabled = true\na->b.topics = {topic}\n\
                 refresh.topics.interval.seconds = 1\n",
                listener(&a, "SASL_PLAINTEXT"),
                b.bootstrap(),
                idp.token_url(),
                secrets.display(),
                pki.ca_cert.display(),
            ),
        )
    };
    let good = mm2(LOGICAL_CLUSTER);
    support::produce_records(
        &a.bootstrap(),
        &topic,
        &(0..400)
            .map(|i| support::TestRecord::kv(format!("k{i}"), format!("v{i}")))
            .collect::<Vec<_>>(),
        support::Codec::None,
    );
    let run = start_run(&good, &dir.join("run.log"), "info,strait=debug");
    let remote = format!("a.{topic}");
    wait_caught_up(
        &a.bootstrap(),
        &topic,
        &b.bootstrap(),
        &remote,
        &run,
        Duration::from_secs(90),
    );
    let log = run.stop();
    assert_exactly_once(&a.bootstrap(), &topic, &b.bootstrap(), &remote, 400);
    let g = good.display().to_string();
    let probe = strait_out(&["probe", "--config", &g, "--cluster", "a"], &[]);
    assert!(probe.status.success(), "{}", text(&probe));
    assert!(text(&probe).contains(&topic), "{}", text(&probe));

    let wrong = mm2("lkc-someone-else").display().to_string();
    let refused = strait_out(&["probe", "--config", &wrong, "--cluster", "a"], &[]);
    assert!(!refused.status.success(), "{}", text(&refused));
    let t = text(&refused);
    let lines = lines_with(&t, "SASL authentication failed");
    assert_eq!(lines.len(), 1, "one error line: {t}");
    assert!(
        lines[0].contains("cluster a") || lines[0].contains("a:"),
        "{t}"
    );
    for (what, t) in [
        ("strait run log", log.as_str()),
        ("strait probe", &text(&probe)),
        ("strait probe (refused)", &t),
    ] {
        assert_no_secret(what, t, SECRETS);
    }
    assert!(idp.tokens_issued() >= 2);
}
