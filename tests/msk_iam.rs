//! Amazon MSK IAM over OAUTHBEARER (issue 29), on Apache Kafka. MSK itself cannot be reached
//! here, so the brokers check each token as an MSK broker would, with
//! `MskIamTokenValidator` (tests/java): a SigV4-presigned `kafka-cluster:Connect` URL for the
//! region, signed with the test's access key (the signature recomputed from the canonical
//! request), not expired. strait takes its credentials from the AWS SDK's standard chain:
//! environment variables, and a named profile of a shared credentials file.
//!
//! Instance metadata is switched off (`AWS_EC2_METADATA_DISABLED`) so that the chain never
//! looks beyond this machine.

mod support;

use std::time::Duration;

use strait::local_kafka::{KafkaCluster, KafkaOAuth, KafkaSecurity};
use support::cli::{assert_no_secret, lines_with, strait_out, temp_dir, text, write_file};
use support::kafka::{start_kafka_with, KafkaOptions};
use support::load::{assert_exactly_once, wait_caught_up, Load};
use support::{create_topic, topic_name, Broker, StraitRun, TestPki};

const REGION: &str = "eu-west-1";
const ACCESS_KEY: &str = "AKIASTRAITTEST0001";
const SECRET_KEY: &str = "sEcReT/Strait+Test-Key-0123456789abcdefXY";
const SESSION_TOKEN: &str = "IQoJb3JpZ2luX2VjEStraitSessionToken0042";
const SECRETS: &[&str] = &[SECRET_KEY, SESSION_TOKEN];

/// A one-node Kafka whose SASL listeners take OAUTHBEARER tokens checked by
/// `MskIamTokenValidator`, sessions ending every 5 s.
fn msk_like_kafka(name: &str, pki: &TestPki) -> KafkaCluster {
    let validator = support::java::compile("MskIamTokenValidator");
    let dir = temp_dir("msk-jwks");
    // Kafka's own validator is not used; its URL setting must still be allowed.
    let jwks = write_file(&dir, "jwks.json", r#"{"keys":[]}"#);
    let mut opts = KafkaOptions::new(name);
    opts.security = Some(KafkaSecurity {
        server_cert: pki.server_cert.clone(),
        server_key: pki.server_key.clone(),
        client_ca: pki.ca_cert.clone(),
        reauth_ms: Some(5000),
        oauth: Some(KafkaOAuth {
            jwks_url: format!("file://{}", jwks.display()),
            audience: "kafka".into(),
            issuer: "aws".into(),
            validator_class: Some("MskIamTokenValidator".into()),
        }),
        ..KafkaSecurity::default()
    });
    opts.classpath = vec![validator.classes().to_path_buf()];
    opts.jvm_args = vec![
        format!("-Dstrait.test.region={REGION}"),
        format!("-Dstrait.test.awsAccessKey={ACCESS_KEY}"),
        format!("-Dstrait.test.awsSecretKey={SECRET_KEY}"),
        format!("-Dstrait.test.awsSessionToken={SESSION_TOKEN}"),
    ];
    start_kafka_with(opts)
}

/// The environment of a strait command: credentials (or none) and no instance metadata.
fn aws_env<'a>(secret: &'a str, extra: &[(&'a str, &'a str)]) -> Vec<(&'a str, &'a str)> {
    let mut env = vec![
        ("AWS_EC2_METADATA_DISABLED", "true"),
        ("AWS_CONFIG_FILE", "/nonexistent/strait-test-aws-config"),
        (
            "AWS_SHARED_CREDENTIALS_FILE",
            "/nonexistent/strait-test-aws-credentials",
        ),
    ];
    if !secret.is_empty() {
        env.extend([
            ("AWS_ACCESS_KEY_ID", ACCESS_KEY),
            ("AWS_SECRET_ACCESS_KEY", secret),
            ("AWS_SESSION_TOKEN", SESSION_TOKEN),
        ]);
    }
    for (k, v) in extra {
        env.retain(|(e, _)| e != k);
        env.push((k, v));
    }
    env
}

/// A flow from a PLAINTEXT source to an MSK IAM target with credentials from the environment:
/// every record exactly once under continuous production while tokens are refreshed every 10 s
/// and sessions re-authenticate every 5 s; `strait probe` with a named profile of a shared
/// credentials file; a wrong secret key is refused by the broker, and no credentials at all
/// is one line naming the cluster and the cause. No secret key or session token shows.
#[test]
fn msk_iam_tokens_are_accepted_refreshed_and_refused_when_wrong() {
    let pki = TestPki::generate("msk");
    let a = Broker::start("msk-a");
    let b = msk_like_kafka("msk-b", &pki);
    let topic = topic_name("msk");
    create_topic(&a.bootstrap(), &topic, 2);
    let remote = format!("a.{topic}");
    let dir = temp_dir("msk");
    let sasl = b
        .listener_bootstrap("SASL_PLAINTEXT")
        .expect("SASL_PLAINTEXT listener");
    let cluster_b = |extra: &str| {
        format!(
            "[clusters.b]\nbootstrap_servers = \"{sasl}\"\nsecurity_protocol = \"SASL_PLAINTEXT\"\n\
             sasl_mechanism = \"OAUTHBEARER\"\nsasl_oauthbearer_provider = \"aws_msk_iam\"\n\
             sasl_aws_region = \"{REGION}\"\n{extra}"
        )
    };
    let config = write_file(
        &dir,
        "strait.toml",
        &format!(
            "instance_group = \"{}\"\n[clusters.a]\nbootstrap_servers = \"{}\"\n{}\
             [[flows]]\nsource = \"a\"\ntarget = \"b\"\ntopics = [\"{topic}\"]\nrefresh_topics_interval_secs = 1\n",
            topic_name("g"),
            a.bootstrap(),
            cluster_b(
                "sasl_login_refresh_min_period_secs = 0\nsasl_login_refresh_buffer_secs = 890\n"
            ),
        ),
    );
    for (k, v) in aws_env(SECRET_KEY, &[]) {
        std::env::set_var(k, v);
    }
    let load = Load::start_with(a.bootstrap(), &topic, 2, 100);
    let run = StraitRun::start(&config, &dir.join("run.log"));
    // The commands below get their credentials (or none) from their own environment only.
    for k in [
        "AWS_ACCESS_KEY_ID",
        "AWS_SECRET_ACCESS_KEY",
        "AWS_SESSION_TOKEN",
    ] {
        std::env::remove_var(k);
    }
    std::thread::sleep(Duration::from_secs(35));
    let total = load.finish();
    wait_caught_up(
        &a.bootstrap(),
        &topic,
        &b.bootstrap(),
        &remote,
        &run,
        Duration::from_secs(90),
    );
    let log = run.stop();
    assert_exactly_once(&a.bootstrap(), &topic, &b.bootstrap(), &remote, total);
    let tokens = log.matches("obtained an OAUTHBEARER token").count();
    assert!(tokens >= 3, "tokens were not refreshed ({tokens}):\n{log}");
    assert!(
        log.matches("re-authenticating (SASL session lifetime)")
            .count()
            >= 3,
        "{log}"
    );
    assert!(!log.contains("SASL authentication failed"), "{log}");

    // A named profile of a shared credentials file, with no credentials in the environment.
    let creds = write_file(
        &dir,
        "credentials",
        &format!(
            "[default]\naws_access_key_id = AKIAWRONGDEFAULT0000\naws_secret_access_key = wrong\n\
             [msk]\naws_access_key_id = {ACCESS_KEY}\naws_secret_access_key = {SECRET_KEY}\n\
             aws_session_token = {SESSION_TOKEN}\n"
        ),
    );
    let profile = write_file(
        &dir,
        "profile.toml",
        &format!(
            "[clusters.b]\nbootstrap_servers = \"{sasl}\"\nsecurity_protocol = \"SASL_PLAINTEXT\"\n\
             sasl_mechanism = \"OAUTHBEARER\"\nsasl_oauthbearer_provider = \"aws_msk_iam\"\n\
             sasl_aws_region = \"{REGION}\"\nsasl_aws_profile = \"msk\"\n"
        ),
    );
    let creds_path = creds.display().to_string();
    let env = aws_env("", &[("AWS_SHARED_CREDENTIALS_FILE", &creds_path)]);
    let p = profile.display().to_string();
    let probe = strait_out(&["probe", "--config", &p, "--cluster", "b"], &env);
    assert!(probe.status.success(), "{}", text(&probe));
    assert!(text(&probe).contains(&remote), "{}", text(&probe));

    // A wrong secret key: the broker refuses the signature.
    let c = config.display().to_string();
    let wrong = strait_out(
        &["probe", "--config", &c, "--cluster", "b"],
        &aws_env("wrong-secret-key-for-strait", &[]),
    );
    assert!(!wrong.status.success(), "{}", text(&wrong));
    let t = text(&wrong);
    let lines = lines_with(&t, "SASL authentication failed");
    assert_eq!(lines.len(), 1, "{t}");
    assert!(
        lines[0].contains("cluster b") && lines[0].contains("invalid_token"),
        "{t}"
    );

    // No credentials anywhere in the chain.
    let none = strait_out(
        &["probe", "--config", &c, "--cluster", "b"],
        &aws_env("", &[]),
    );
    assert!(!none.status.success(), "{}", text(&none));
    let t2 = text(&none);
    let lines = lines_with(&t2, "no AWS credentials");
    assert_eq!(lines.len(), 1, "{t2}");
    assert!(
        lines[0].contains("cluster b") && lines[0].contains("OAUTHBEARER"),
        "{t2}"
    );
    for (what, t) in [
        ("strait run log", log.as_str()),
        ("strait probe (profile)", &text(&probe)),
        ("strait probe (wrong key)", &t),
        ("strait probe (no credentials)", &t2),
    ] {
        assert_no_secret(what, t, SECRETS);
    }
}
