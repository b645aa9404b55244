//! Issue 32: Schema Registry migration by mirroring its `_schemas` topic. A registry-like
//! producer writes what Confluent Schema Registry writes into its compacted, one-partition
//! store topic (SCHEMA, CONFIG and NOOP keys as JSON, a soft delete as a value with
//! `"deleted":true`, a hard delete as a tombstone); a mirror flow copies it while the
//! "registry" goes on writing, and a reader of the destination sees every record at the same
//! offset with the same key and the same value (tombstones as tombstones), so a registry
//! started on the destination reads the same schema ids. The mirrored topic keeps
//! `cleanup.policy=compact`.

mod support;

use std::time::Duration;

use rdkafka::admin::{AdminClient, AdminOptions, ResourceSpecifier};
use rdkafka::client::DefaultClientContext;
use rdkafka::ClientConfig;

use support::data::{consume_all, create_topic_with_config, watermarks, OwnedRecord};
use support::strait::wait_until;
use support::{produce_records, topic_name, Broker, Codec, StraitRun, TestRecord};

const SCHEMAS: &str = "_schemas";

fn schema_key(subject: &str, version: u32) -> Vec<u8> {
    format!(r#"{{"keytype":"SCHEMA","subject":"{subject}","version":{version},"magic":1}}"#)
        .into_bytes()
}

fn schema_value(subject: &str, version: u32, id: u32, deleted: bool) -> Vec<u8> {
    format!(
        r#"{{"subject":"{subject}","version":{version},"id":{id},"schemaType":"AVRO","schema":"{{\"type\":\"record\",\"name\":\"R{id}\",\"fields\":[{{\"name\":\"f\",\"type\":\"string\"}}]}}","deleted":{deleted}}}"#
    )
    .into_bytes()
}

fn record(key: Vec<u8>, value: Option<Vec<u8>>) -> TestRecord {
    TestRecord {
        key: Some(key),
        value,
        partition: Some(0),
        ..Default::default()
    }
}

/// What a registry writes for `subjects` subjects with `versions` versions each, ids from
/// `first_id`: a NOOP (null value, as the registry's leader writes on election), then each
/// schema, a CONFIG record per subject, a soft delete of each subject's first version and a
/// hard delete (tombstone) of it.
fn registry_writes(subjects: &[&str], versions: u32, first_id: u32) -> Vec<TestRecord> {
    let mut out = vec![record(br#"{"keytype":"NOOP","magic":0}"#.to_vec(), None)];
    let mut id = first_id;
    for s in subjects {
        for v in 1..=versions {
            out.push(record(
                schema_key(s, v),
                Some(schema_value(s, v, id, false)),
            ));
            id += 1;
        }
        out.push(record(
            format!(r#"{{"keytype":"CONFIG","subject":"{s}","magic":0}}"#).into_bytes(),
            Some(br#"{"compatibilityLevel":"FULL"}"#.to_vec()),
        ));
        out.push(record(
            schema_key(s, 1),
            Some(schema_value(s, 1, first_id, true)),
        ));
        out.push(record(schema_key(s, 1), None));
    }
    out
}

fn same(a: &[OwnedRecord], b: &[OwnedRecord]) {
    assert_eq!(a.len(), b.len(), "record counts");
    for (x, y) in a.iter().zip(b) {
        assert_eq!(
            (x.partition, x.offset, &x.key, &x.value),
            (y.partition, y.offset, &y.key, &y.value),
            "record at {}:{} differs",
            x.partition,
            x.offset
        );
    }
}

/// `_schemas`'s `cleanup.policy` as the cluster at `bootstrap` describes it.
fn cleanup_policy(bootstrap: &str) -> Option<String> {
    let admin: AdminClient<DefaultClientContext> = ClientConfig::new()
        .set("bootstrap.servers", bootstrap)
        .set("broker.address.family", "v4")
        .create()
        .expect("admin");
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let res = rt
        .block_on(admin.describe_configs(
            &[ResourceSpecifier::Topic(SCHEMAS)],
            &AdminOptions::new().request_timeout(Some(Duration::from_secs(30))),
        ))
        .expect("describe configs");
    let resource = res.into_iter().next()?.ok()?;
    resource
        .entries
        .iter()
        .find(|e| e.name == "cleanup.policy")
        .and_then(|e| e.value.clone())
}

fn strait(args: &[&str]) -> (bool, String) {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_strait"))
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

#[test]
fn a_mirrored_schemas_topic_keeps_offsets_keys_values_and_tombstones() {
    let (src, dst) = std::thread::scope(|s| {
        let a = s.spawn(|| Broker::start("registry-src"));
        let b = s.spawn(|| Broker::start("registry-dst"));
        (
            a.join().unwrap_or_else(|e| std::panic::resume_unwind(e)),
            b.join().unwrap_or_else(|e| std::panic::resume_unwind(e)),
        )
    });
    create_topic_with_config(
        &src.bootstrap(),
        SCHEMAS,
        1,
        &[("cleanup.policy", "compact")],
    );
    let first = registry_writes(&["orders-value", "payments-value", "users-key"], 3, 1);
    produce_records(&src.bootstrap(), SCHEMAS, &first, Codec::None);

    let dir = std::env::temp_dir().join(topic_name("schemas-mirror"));
    std::fs::create_dir_all(&dir).expect("dir");
    let config = dir.join("mirror.toml");
    std::fs::write(
        &config,
        format!(
            "[clusters.src]\nbootstrap_servers = \"{}\"\n[clusters.dst]\nbootstrap_servers = \"{}\"\n\
             [[flows]]\nsource = \"src\"\ntarget = \"dst\"\nmode = \"mirror\"\nlink = \"registry\"\n\
             topics = [\"_schemas\"]\nrefresh_topics_interval_secs = 1\n",
            src.bootstrap(),
            dst.bootstrap()
        ),
    )
    .expect("config");
    let config_s = config.to_str().expect("utf-8 path");
    let run = StraitRun::start_with(&config, &dir.join("run.log"), "info");
    let end = |b: &Broker| watermarks(&b.bootstrap(), SCHEMAS).first().map(|w| w.1);
    wait_until("_schemas mirrored", Duration::from_secs(60), &run, || {
        end(&dst) == end(&src)
    });

    // The registry goes on: new subjects and a new version, another hard delete.
    let more = registry_writes(&["orders-value", "shipments-value"], 2, 100);
    produce_records(&src.bootstrap(), SCHEMAS, &more, Codec::Lz4);
    let total = first.len() + more.len();
    wait_until(
        "the later writes mirrored",
        Duration::from_secs(60),
        &run,
        || end(&dst) == Some(total as i64),
    );

    let a = consume_all(&src.bootstrap(), SCHEMAS, total, Duration::from_secs(30));
    let b = consume_all(&dst.bootstrap(), SCHEMAS, total, Duration::from_secs(30));
    assert_eq!(a.len(), total);
    same(&a, &b);
    let tombstones = b.iter().filter(|r| r.value.is_none()).count();
    assert_eq!(
        tombstones,
        2 + 3 + 2,
        "the NOOPs and hard deletes are tombstones on both sides"
    );

    let (ok, out) = strait(&[
        "mirror", "describe", "--config", config_s, "--topic", SCHEMAS,
    ]);
    assert!(ok && out.contains("identical"), "{out}");
    assert_eq!(
        cleanup_policy(&dst.bootstrap()).as_deref(),
        Some("compact"),
        "the mirrored _schemas stays compacted"
    );
    let log = run.stop();
    assert!(!log.contains(" ERROR "), "{log}");
}
