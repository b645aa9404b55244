//! Issue 19 §5: topic configs and topic ACLs kept in step with the source while a flow runs
//! (MirrorMaker 2's `sync.topic.configs.enabled` and `sync.topic.acls.enabled`), on Apache
//! Kafka clusters with `StandardAuthorizer`. Configs are changed with librdkafka's admin client
//! and read back with it; ACLs are created and listed with Kafka's own Admin client
//! (`tests/java/AclTool.java`).

mod support;

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use rdkafka::admin::{AdminClient, AdminOptions, AlterConfig, ConfigSource, ResourceSpecifier};
use rdkafka::client::DefaultClientContext;
use rdkafka::ClientConfig;
use support::data::{
    create_topic_with_config, produce_records, topic_name, watermarks, Codec, TestRecord,
};
use support::java::{self, JavaProgram};
use support::kafka::{start_each, start_kafka, start_kafka_with, KafkaCluster, KafkaOptions};
use support::strait::wait_until;
use support::StraitRun;

const TOPIC: &str = "orders";
const REMOTE: &str = "a.orders";

/// A one-node cluster whose brokers and controller authorize every request with
/// `StandardAuthorizer`; the anonymous PLAINTEXT principal (the tests, strait) is a super user.
fn start_with_authorizer(name: &str) -> KafkaCluster {
    let mut opts = KafkaOptions::new(name);
    opts.properties = vec![
        (
            "authorizer.class.name".into(),
            "org.apache.kafka.metadata.authorizer.StandardAuthorizer".into(),
        ),
        ("super.users".into(), "User:ANONYMOUS".into()),
    ];
    start_kafka_with(opts)
}

fn admin(bootstrap: &str) -> AdminClient<DefaultClientContext> {
    ClientConfig::new()
        .set("bootstrap.servers", bootstrap)
        .set("broker.address.family", "v4")
        .create()
        .expect("admin")
}

/// A topic's own settings (config source DYNAMIC_TOPIC_CONFIG).
fn configs(bootstrap: &str, topic: &str) -> BTreeMap<String, String> {
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let res = rt
        .block_on(admin(bootstrap).describe_configs(
            &[ResourceSpecifier::Topic(topic)],
            &AdminOptions::new().request_timeout(Some(Duration::from_secs(30))),
        ))
        .expect("describe configs");
    let resource = res
        .into_iter()
        .next()
        .expect("one resource")
        .expect("no error");
    resource
        .entries
        .iter()
        .filter(|e| e.source == ConfigSource::DynamicTopic)
        .map(|e| (e.name.clone(), e.value.clone().unwrap_or_default()))
        .collect()
}

/// Sets the topic's own settings to exactly `settings` (AlterConfigs replaces them all).
fn set_configs(bootstrap: &str, topic: &str, settings: &[(&str, &str)]) {
    let mut alter = AlterConfig::new(ResourceSpecifier::Topic(topic));
    for (k, v) in settings {
        alter = alter.set(k, v);
    }
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let res = rt
        .block_on(admin(bootstrap).alter_configs(
            &[alter],
            &AdminOptions::new().request_timeout(Some(Duration::from_secs(30))),
        ))
        .expect("alter configs");
    for r in res {
        r.unwrap_or_else(|(_, e)| panic!("alter configs of {topic}: {e:?}"));
    }
}

/// Topic ACLs as Kafka's Admin client lists them: (name, pattern, principal, host, operation,
/// permission).
fn acls(tool: &JavaProgram, bootstrap: &str) -> BTreeSet<Vec<String>> {
    tool.run(&["list", bootstrap], "")
        .lines()
        .filter_map(|l| l.strip_prefix("acl\t"))
        .map(|l| l.split('\t').map(str::to_string).collect())
        .collect()
}

fn acl(fields: &str) -> Vec<String> {
    fields.split_whitespace().map(str::to_string).collect()
}

fn create_acls(tool: &JavaProgram, bootstrap: &str, lines: &[&str]) {
    let input: String = lines
        .iter()
        .map(|l| format!("{}\n", l.split_whitespace().collect::<Vec<_>>().join("\t")))
        .collect();
    let out = tool.run(&["create", bootstrap], &input);
    assert!(out.contains(&format!("created\t{}", lines.len())), "{out}");
}

#[test]
fn configs_and_acls_follow_the_source_while_running() {
    let tool = java::compile("AclTool");
    let (a, b, c) = std::thread::scope(|s| {
        let a = s.spawn(|| start_with_authorizer("a"));
        let b = s.spawn(|| start_with_authorizer("b"));
        let c = s.spawn(|| start_kafka("c"));
        let join = |h: std::thread::ScopedJoinHandle<'_, KafkaCluster>| {
            h.join().unwrap_or_else(|e| std::panic::resume_unwind(e))
        };
        (join(a), join(b), join(c))
    });
    create_topic_with_config(
        &a.bootstrap(),
        TOPIC,
        2,
        &[
            ("retention.ms", "86400000"),
            ("retention.bytes", "1073741824"),
            ("segment.ms", "3600000"),
        ],
    );
    create_topic_with_config(&a.bootstrap(), "secret", 1, &[]);
    let records: Vec<TestRecord> = (0..100)
        .map(|i| TestRecord::kv(format!("k{i}"), "v"))
        .collect();
    produce_records(&a.bootstrap(), TOPIC, &records, Codec::None);
    create_acls(
        &tool,
        &a.bootstrap(),
        &[
            "orders LITERAL User:alice * READ ALLOW",
            "orders LITERAL User:alice * DESCRIBE ALLOW",
            "orders LITERAL User:bob * WRITE ALLOW",
            "orders LITERAL User:carol * ALL ALLOW",
            "orders LITERAL User:mallory 10.0.0.1 READ DENY",
            "ord PREFIXED User:dave * READ ALLOW",
            "secret LITERAL User:alice * READ ALLOW",
        ],
    );

    let dir = std::env::temp_dir().join(topic_name("topic-sync"));
    std::fs::create_dir_all(&dir).expect("dir");
    let config = dir.join("sync.toml");
    std::fs::write(
        &config,
        format!(
            "[clusters.a]\nbootstrap_servers = \"{}\"\n[clusters.b]\nbootstrap_servers = \"{}\"\n\
             [clusters.c]\nbootstrap_servers = \"{}\"\n\
             [defaults]\nrefresh_topics_interval_secs = 1\ntopics = [\"orders\"]\n\
             sync_topic_configs_interval_secs = 1\nsync_topic_acls_interval_secs = 1\n\
             [[flows]]\nsource = \"a\"\ntarget = \"b\"\n\
             [[flows]]\nsource = \"a\"\ntarget = \"c\"\nsync_topic_configs = false\nsync_topic_acls = false\n",
            a.bootstrap(),
            b.bootstrap(),
            c.bootstrap()
        ),
    )
    .expect("config");
    let run = StraitRun::start_with(&config, &dir.join("run.log"), "info");
    let replicated = |bootstrap: &str| {
        watermarks(bootstrap, REMOTE)
            .iter()
            .map(|(_, h)| h)
            .sum::<i64>()
            == 100
    };
    wait_until("a.orders on b and c", Duration::from_secs(60), &run, || {
        replicated(&b.bootstrap()) && replicated(&c.bootstrap())
    });

    // ACLs: MirrorMaker 2's rules. WRITE never; ALL becomes READ; denials as they are; only
    // literal names of replicated topics.
    let expected: BTreeSet<Vec<String>> = [
        "a.orders LITERAL User:alice * READ ALLOW",
        "a.orders LITERAL User:alice * DESCRIBE ALLOW",
        "a.orders LITERAL User:carol * READ ALLOW",
        "a.orders LITERAL User:mallory 10.0.0.1 READ DENY",
    ]
    .iter()
    .map(|l| acl(l))
    .collect();
    wait_until(
        "the ACLs of orders on b",
        Duration::from_secs(30),
        &run,
        || acls(&tool, &b.bootstrap()) == expected,
    );

    // Changed on the source while running: the remote topic follows, except for an excluded
    // config; a setting the source no longer has is removed.
    // Created with the source topic's own settings, and the effective values of those that
    // decide what records the topic keeps (cleanup.policy, max.message.bytes,
    // message.timestamp.type).
    let created = BTreeMap::from([
        ("retention.ms".to_string(), "86400000".to_string()),
        ("retention.bytes".to_string(), "1073741824".to_string()),
        ("segment.ms".to_string(), "3600000".to_string()),
        ("cleanup.policy".to_string(), "delete".to_string()),
        ("max.message.bytes".to_string(), "1048588".to_string()),
        (
            "message.timestamp.type".to_string(),
            "CreateTime".to_string(),
        ),
    ]);
    assert_eq!(configs(&b.bootstrap(), REMOTE), created);
    set_configs(
        &a.bootstrap(),
        TOPIC,
        &[
            ("retention.ms", "3600000"),
            ("retention.bytes", "1073741824"),
            ("message.timestamp.type", "LogAppendTime"),
        ],
    );
    create_acls(
        &tool,
        &a.bootstrap(),
        &["orders LITERAL User:erin * DESCRIBE ALLOW"],
    );
    wait_until(
        "retention.ms of a.orders on b follows",
        Duration::from_secs(30),
        &run,
        || {
            configs(&b.bootstrap(), REMOTE)
                .get("retention.ms")
                .map(String::as_str)
                == Some("3600000")
        },
    );
    let mut followed = created.clone();
    followed.insert("retention.ms".to_string(), "3600000".to_string());
    followed.remove("segment.ms");
    assert_eq!(
        configs(&b.bootstrap(), REMOTE),
        followed,
        "retention.ms followed, segment.ms removed with the source's, message.timestamp.type \
         (excluded, as in MirrorMaker 2) kept"
    );
    let mut with_erin = expected.clone();
    with_erin.insert(acl("a.orders LITERAL User:erin * DESCRIBE ALLOW"));
    wait_until(
        "the ACL added on the source",
        Duration::from_secs(30),
        &run,
        || acls(&tool, &b.bootstrap()) == with_erin,
    );

    // The flow to c syncs nothing: its remote topic keeps what it was created with.
    std::thread::sleep(Duration::from_secs(3));
    assert_eq!(configs(&c.bootstrap(), REMOTE), created);
    let log = run.stop();
    assert!(
        log.contains("synced topic configs from the source topic"),
        "{log}"
    );
    assert!(
        !log.contains("topic config sync failed") && !log.contains("topic ACL sync failed"),
        "{log}"
    );
}

/// Cluster Linking's topic config and ACL sync for a mirror flow: a mirror topic follows a
/// `retention.ms` change and a new ACL on its source topic (same name on both sides), and once
/// promoted it is an ordinary topic whose settings are its own.
#[test]
fn a_mirror_topic_follows_its_source_until_promoted() {
    let tool = java::compile("AclTool");
    let [a, d] = start_each(["a", "d"], start_with_authorizer);
    create_topic_with_config(&a.bootstrap(), TOPIC, 2, &[("retention.ms", "86400000")]);
    let records: Vec<TestRecord> = (0..50)
        .map(|i| TestRecord::kv(format!("k{i}"), "v"))
        .collect();
    produce_records(&a.bootstrap(), TOPIC, &records, Codec::None);
    create_acls(
        &tool,
        &a.bootstrap(),
        &["orders LITERAL User:alice * READ ALLOW"],
    );
    let dir = std::env::temp_dir().join(topic_name("mirror-sync"));
    std::fs::create_dir_all(&dir).expect("dir");
    let config = dir.join("mirror.toml");
    std::fs::write(
        &config,
        format!(
            "[clusters.a]\nbootstrap_servers = \"{}\"\n[clusters.d]\nbootstrap_servers = \"{}\"\n\
             [[flows]]\nsource = \"a\"\ntarget = \"d\"\nmode = \"mirror\"\nlink = \"l\"\n\
             topics = [\"orders\"]\nrefresh_topics_interval_secs = 1\n\
             sync_topic_configs_interval_secs = 1\nsync_topic_acls_interval_secs = 1\n",
            a.bootstrap(),
            d.bootstrap()
        ),
    )
    .expect("config");
    let run = StraitRun::start_with(&config, &dir.join("run.log"), "info");
    wait_until("orders mirrored", Duration::from_secs(60), &run, || {
        watermarks(&d.bootstrap(), TOPIC)
            .iter()
            .map(|(_, h)| h)
            .sum::<i64>()
            == 50
    });
    let alice = acl("orders LITERAL User:alice * READ ALLOW");
    wait_until("alice's ACL on d", Duration::from_secs(30), &run, || {
        acls(&tool, &d.bootstrap()).contains(&alice)
    });
    set_configs(&a.bootstrap(), TOPIC, &[("retention.ms", "3600000")]);
    create_acls(
        &tool,
        &a.bootstrap(),
        &["orders LITERAL User:erin * DESCRIBE ALLOW"],
    );
    let erin = acl("orders LITERAL User:erin * DESCRIBE ALLOW");
    wait_until(
        "retention.ms and the new ACL follow",
        Duration::from_secs(30),
        &run,
        || {
            configs(&d.bootstrap(), TOPIC)
                .get("retention.ms")
                .map(String::as_str)
                == Some("3600000")
                && acls(&tool, &d.bootstrap()).contains(&erin)
        },
    );

    // Promoted: the topic's settings are its own from now on.
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_strait"))
        .args(["mirror", "promote", "--config"])
        .arg(&config)
        .args(["--topic", TOPIC])
        .output()
        .expect("promote");
    assert!(out.status.success(), "{out:?}");
    set_configs(&a.bootstrap(), TOPIC, &[("retention.ms", "7200000")]);
    std::thread::sleep(Duration::from_secs(4));
    assert_eq!(
        configs(&d.bootstrap(), TOPIC)
            .get("retention.ms")
            .map(String::as_str),
        Some("3600000"),
        "a promoted topic no longer follows its source"
    );
    let log = run.stop();
    assert!(
        log.contains("synced topic configs from the source topic")
            && !log.contains("topic config sync failed")
            && !log.contains("topic ACL sync failed"),
        "{log}"
    );
}
