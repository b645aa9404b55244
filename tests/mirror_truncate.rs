//! Issue 32: truncate-and-restore (Cluster Linking's `kafka-mirrors --truncate-and-restore`).
//! A topic mirrored west -> east (after a switch-over to east and back) is failed over to east;
//! east takes the producers and the consumers while producers that were not stopped write a
//! divergent tail into west. Then `strait mirror truncate-and-restore --link east-link` makes
//! west's topic a mirror of east's: the tail is reported and saved (checked record by record
//! against what was written), west ends up with east's records at east's offsets (rdkafka,
//! record by record, every Produce request checked by the proxy), groups come back on west: one
//! moved on east follows east, one that read west's tail resumes at the failover point, one
//! behind the switch-back stays where it was; refusals with one line. Also: the command killed
//! (-9) at ever later moments and run again, `strait run` killed meanwhile.

mod support;

use std::collections::BTreeSet;
use std::path::Path;
use std::process::{Child, Stdio};
use std::time::Duration;

use base64::Engine;
use rdkafka::consumer::{BaseConsumer, CommitMode, Consumer};
use rdkafka::{ClientConfig, Offset, TopicPartitionList};
use support::cli::{both_ways_config, mirror_verb, strait_cmd, strait_out, text};
use support::data::{committed_offset, watermarks};
use support::load::wait_caught_up;
use support::strait::wait_until;
use support::{consume_all, create_topic, produce_records, Broker, StraitRun};
use support::{Codec, OwnedRecord, TestRecord};

fn numbered(label: &str, n: usize) -> Vec<TestRecord> {
    (0..n)
        .map(|i| TestRecord::kv(format!("k{i}"), format!("{label}-{i}")))
        .collect()
}

/// `strait mirror truncate-and-restore --config F --link east-link --topic T EXTRA...`.
fn restore_cmd(config: &Path, topic: &str, extra: &[&str]) -> std::process::Command {
    let mut cmd = strait_cmd(&[]);
    cmd.args(["mirror", "truncate-and-restore", "--config"])
        .arg(config)
        .args(["--link", "east-link", "--topic", topic])
        .args(extra);
    cmd
}

fn restore(config: &Path, topic: &str, extra: &[&str]) -> (bool, String) {
    let out = restore_cmd(config, topic, extra)
        .output()
        .expect("run strait mirror truncate-and-restore");
    (out.status.success(), text(&out))
}

/// `strait mirror VERB --link LINK --topic T`, asserting success.
fn mirror_ok(config: &Path, verb: &str, link: &str, topic: &str) {
    let out = mirror_verb(config, verb, link, topic, 90);
    assert!(out.status.success(), "{verb} --link {link}: {}", text(&out));
}

fn list(config: &Path) -> String {
    let c = config.to_string_lossy();
    text(&strait_out(&["mirror", "list", "--config", &c], &[]))
}

/// Commits `offsets` (partition, offset) of `topic` for `group`, from outside the group.
fn commit_at(bootstrap: &str, group: &str, topic: &str, offsets: &[(i32, i64)]) {
    let c: BaseConsumer = ClientConfig::new()
        .set("bootstrap.servers", bootstrap)
        .set("broker.address.family", "v4")
        .set("group.id", group)
        .set("enable.auto.commit", "false")
        .create()
        .expect("consumer");
    let mut tpl = TopicPartitionList::new();
    for (p, o) in offsets {
        tpl.add_partition_offset(topic, *p, Offset::Offset(*o))
            .expect("tpl");
    }
    c.commit(&tpl, CommitMode::Sync).expect("commit");
}

fn committed(bootstrap: &str, group: &str, topic: &str, partitions: i32) -> Vec<Option<i64>> {
    (0..partitions)
        .map(|p| committed_offset(bootstrap, group, topic, p))
        .collect()
}

/// What a partition's record is, for comparing both sides: (partition, offset, key, value).
type Row = (i32, i64, Option<Vec<u8>>, Option<Vec<u8>>);

fn rows(records: &[OwnedRecord]) -> Vec<Row> {
    records
        .iter()
        .map(|r| (r.partition, r.offset, r.key.clone(), r.value.clone()))
        .collect()
}

/// The records saved in `dir` (every `*.jsonl`), as rows.
fn saved_rows(dir: &Path) -> Vec<Row> {
    let b64 = |v: &serde_json::Value| {
        v.as_str().map(|s| {
            base64::engine::general_purpose::STANDARD
                .decode(s)
                .expect("base64")
        })
    };
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).expect("saved dir") {
        let path = entry.expect("entry").path();
        if path.extension().is_none_or(|e| e != "jsonl") {
            continue;
        }
        for line in std::fs::read_to_string(&path).expect("read").lines() {
            let v: serde_json::Value = serde_json::from_str(line).expect("a JSON line");
            out.push((
                v["partition"].as_i64().expect("partition") as i32,
                v["offset"].as_i64().expect("offset"),
                b64(&v["key"]),
                b64(&v["value"]),
            ));
        }
    }
    out.sort();
    out
}

#[test]
fn truncate_and_restore_cuts_the_divergent_tail_saves_it_and_restores_groups() {
    let (west, proxy_west) = Broker::start_behind_proxy("west");
    let east = Broker::start("east");
    let (w, e) = (west.direct_bootstrap(), east.bootstrap());
    let topic = "payments";
    let parts = 2;
    let dir = support::cli::temp_dir("mirror-truncate");
    create_topic(&w, topic, parts);
    produce_records(&w, topic, &numbered("west", 60), Codec::None);
    // A group on west that read part of the topic (it is synced to east).
    commit_at(&w, "app", topic, &[(0, 5), (1, 7)]);
    let config = both_ways_config(&dir, &west, &east, topic);
    let run = StraitRun::start_with(&config, &dir.join("strait.log"), "info");
    wait_caught_up(&w, topic, &e, topic, &run, Duration::from_secs(60));
    wait_until("app synced to east", Duration::from_secs(60), &run, || {
        committed(&e, "app", topic, parts) == vec![Some(5), Some(7)]
    });
    // A switch-over to east and back first: the mirror failed over below was handed over by
    // a reversal, and the flow east -> west holds positions of the topic from the first one.
    mirror_ok(&config, "reverse-and-start", "west-link", topic);
    produce_records(&e, topic, &numbered("east0", 10), Codec::None);
    wait_caught_up(&e, topic, &w, topic, &run, Duration::from_secs(60));
    mirror_ok(&config, "reverse-and-start", "east-link", topic);
    produce_records(&w, topic, &numbered("west2", 10), Codec::None);
    wait_caught_up(&w, topic, &e, topic, &run, Duration::from_secs(60));
    // A group that read only the start of the topic, below where the mirror was handed over.
    commit_at(&w, "slow", topic, &[(0, 2), (1, 3)]);
    let failover_point = watermarks(&w, topic);
    // Refused while the mirror west -> east is live: one line, nothing changed.
    let (ok, said) = restore(&config, topic, &[]);
    assert!(!ok, "{said}");
    assert!(
        said.contains("is still active; fail it over first"),
        "{said}"
    );
    assert_eq!(said.trim().lines().count(), 1, "{said}");
    assert_eq!(watermarks(&w, topic), failover_point);

    // West is cut off from its clients: fail over to east, which takes the producers and app.
    mirror_ok(&config, "failover", "west-link", topic);
    produce_records(&e, topic, &numbered("east", 40), Codec::None);
    commit_at(&e, "app", topic, &[(0, 20), (1, 21)]);
    // Producers that were not stopped keep writing into west: the divergent tail; a group
    // that only ever ran on west reads it all.
    let before_tail: BTreeSet<Row> = rows(&consume_all(&w, topic, 80, Duration::from_secs(30)))
        .into_iter()
        .collect();
    produce_records(&w, topic, &numbered("late", 9), Codec::None);
    let tail_end = watermarks(&w, topic);
    commit_at(
        &w,
        "tail-reader",
        topic,
        &[(0, tail_end[0].1), (1, tail_end[1].1)],
    );
    let tail: Vec<Row> = rows(&consume_all(&w, topic, 89, Duration::from_secs(30)))
        .into_iter()
        .filter(|r| !before_tail.contains(r))
        .collect();
    assert_eq!(tail.len(), 9);

    // Refused while the flow that would mirror back does not exist under that link.
    let (ok, said) = {
        let out = strait_cmd(&[])
            .args(["mirror", "truncate-and-restore", "--config"])
            .arg(&config)
            .args(["--link", "nope", "--topic", topic])
            .output()
            .expect("run");
        (out.status.success(), text(&out))
    };
    assert!(!ok && said.contains("no mirror link \"nope\""), "{said}");

    // The dry run says what would be cut and changes nothing.
    let (ok, said) = restore(&config, topic, &["--dry-run"]);
    assert!(ok, "{said}");
    assert!(said.contains("would cut"), "{said}");
    assert!(said.contains("9 offsets would be cut"), "{said}");
    assert_eq!(watermarks(&w, topic), tail_end);

    let saved = dir.join("saved");
    let (ok, said) = restore(
        &config,
        topic,
        &["--save-to", &saved.to_string_lossy(), "--timeout", "90"],
    );
    assert!(ok, "{said}\n{}", run.log());
    eprintln!("{said}");
    assert!(said.contains("9 records cut (9 offsets)"), "{said}");
    for (p, (_, end)) in failover_point.iter().enumerate() {
        assert!(
            said.lines()
                .any(|l| l.split_whitespace().collect::<Vec<_>>()[..2]
                    == [p.to_string(), end.to_string()]),
            "partition {p} cut at {end}: {said}"
        );
    }
    // What was cut is saved, record by record, at the offsets it had on west.
    let mut want = tail.clone();
    want.sort();
    assert_eq!(saved_rows(&saved), want, "the saved tail");
    assert!(saved.join("restore-plan.json").exists());

    // West is a mirror of east: east's records at east's offsets, nothing of the tail.
    wait_caught_up(&e, topic, &w, topic, &run, Duration::from_secs(60));
    let on_east = consume_all(&e, topic, 120, Duration::from_secs(30));
    let on_west = consume_all(&w, topic, 120, Duration::from_secs(30));
    assert_eq!(rows(&on_west), rows(&on_east), "west holds east's records");
    assert!(on_west.iter().all(|r| !String::from_utf8_lossy(
        r.value.as_deref().unwrap_or_default()
    )
    .starts_with("late")));
    // Groups: app follows east (it moved there); tail-reader resumes at the failover point.
    wait_until(
        "app synced back to west",
        Duration::from_secs(60),
        &run,
        || committed(&w, "app", topic, parts) == vec![Some(20), Some(21)],
    );
    assert_eq!(
        committed(&w, "tail-reader", topic, parts),
        failover_point
            .iter()
            .map(|(_, end)| Some(*end))
            .collect::<Vec<_>>(),
        "read from the failover point on: east's records after it, none of the cut ones"
    );
    assert_eq!(
        committed(&w, "slow", topic, parts),
        vec![Some(2), Some(3)],
        "where it was"
    );

    // The mirror goes on; a second run says it was done; the listing shows both directions.
    produce_records(&e, topic, &numbered("after", 20), Codec::None);
    wait_caught_up(&e, topic, &w, topic, &run, Duration::from_secs(60));
    assert_eq!(
        rows(&consume_all(&w, topic, 140, Duration::from_secs(30))),
        rows(&consume_all(&e, topic, 140, Duration::from_secs(30)))
    );
    let (ok, said) = restore(&config, topic, &["--timeout", "5"]);
    assert!(ok && said.contains("was restored earlier"), "{said}");
    let listed = list(&config);
    assert!(
        listed.contains("ACTIVE") && listed.contains("STOPPED"),
        "{listed}"
    );
    assert!(proxy_west.produce_batches() > 0);
    proxy_west.assert_clean();
}

/// Spawns the command with output to a file.
fn spawn_restore(config: &Path, topic: &str, saved: &Path, log: &Path) -> Child {
    let file = std::fs::File::create(log).expect("log");
    restore_cmd(
        config,
        topic,
        &["--save-to", &saved.to_string_lossy(), "--timeout", "60"],
    )
    .stdout(file.try_clone().expect("log"))
    .stderr(Stdio::from(file))
    .spawn()
    .expect("spawn")
}

/// How far a truncate-and-restore got, as seen from outside: `planned` (nothing saved yet),
/// `saving` (some of the tail saved), `saved` (the whole tail saved, topic not deleted),
/// `deleted` (west's topic gone or empty, no mirror record yet), `restored` (the new mirror's
/// record written).
fn step_reached(west: &str, topic: &str, saved: &Path, config: &Path) -> &'static str {
    let listed = list(config);
    if listed
        .lines()
        .any(|l| l.contains("east-link") && l.contains("ACTIVE"))
    {
        return "restored";
    }
    let ends = watermarks(west, topic);
    if ends.iter().all(|(_, end)| *end == 0) {
        return "deleted";
    }
    match saved_rows_if_any(saved) {
        0 => "planned",
        n if n < 20_000 => "saving",
        _ => "saved",
    }
}

fn saved_rows_if_any(dir: &Path) -> usize {
    std::fs::read_dir(dir)
        .map(|d| {
            d.filter_map(|e| e.ok())
                .filter(|e| e.path().extension().is_some_and(|x| x == "jsonl"))
                .map(|e| std::fs::read_to_string(e.path()).map_or(0, |t| t.lines().count()))
                .sum()
        })
        .unwrap_or(0)
}

/// The command killed (-9) at points spread over its steps (planning, saving, deleting,
/// writing the record, restoring groups) and run again each time, with `strait run` killed
/// and restarted meanwhile: in the end west is east's mirror, record by record, the saved
/// files hold exactly the cut tail, and the west-only group resumes at the failover point.
#[test]
fn truncate_and_restore_survives_kill_9_at_each_step() {
    let mut west = Broker::start("west");
    let east = Broker::start("east");
    let (w, e) = (west.bootstrap(), east.bootstrap());
    let topic = "ledger";
    let dir = support::cli::temp_dir("mirror-truncate-kill");
    create_topic(&w, topic, 3);
    produce_records(&w, topic, &numbered("west", 300), Codec::None);
    let config = both_ways_config(&dir, &west, &east, topic);
    let mut run = StraitRun::start_with(&config, &dir.join("strait-1.log"), "info");
    wait_caught_up(&w, topic, &e, topic, &run, Duration::from_secs(60));
    let failover_point = watermarks(&w, topic);

    // West goes down; failover to east; east writes on.
    west.stop();
    let out = mirror_verb(&config, "failover", "west-link", topic, 60);
    assert!(out.status.success(), "{}", text(&out));
    produce_records(&e, topic, &numbered("east", 150), Codec::None);
    west.start_again();
    let before: BTreeSet<Row> = rows(&consume_all(&w, topic, 300, Duration::from_secs(30)))
        .into_iter()
        .collect();
    produce_records(&w, topic, &numbered("late", 20_000), Codec::None);
    let tail_end = watermarks(&w, topic);
    commit_at(
        &w,
        "tail-reader",
        topic,
        &tail_end
            .iter()
            .enumerate()
            .map(|(p, (_, end))| (p as i32, *end))
            .collect::<Vec<_>>(),
    );
    let mut tail: Vec<Row> = rows(&consume_all(&w, topic, 20_300, Duration::from_secs(30)))
        .into_iter()
        .filter(|r| !before.contains(r))
        .collect();
    tail.sort();
    assert_eq!(tail.len(), 20_000);

    let saved = dir.join("saved");
    // Killed ever later, 15 ms more each time, until a run got as far as the new mirror's
    // record; `strait run` is killed too once west's topic is gone.
    let mut kills: Vec<(u64, &str)> = Vec::new();
    let mut runner_killed = false;
    for i in 0..80u64 {
        let delay_ms = 15 * (i + 1);
        let mut child = spawn_restore(&config, topic, &saved, &dir.join(format!("cmd-{i}.log")));
        std::thread::sleep(Duration::from_millis(delay_ms));
        if child.try_wait().expect("try_wait").is_none() {
            child.kill().expect("kill -9");
        }
        let _ = child.wait();
        let step = step_reached(&w, topic, &saved, &config);
        kills.push((delay_ms, step));
        if step != "planned" && step != "saving" && step != "saved" && !runner_killed {
            run.kill9();
            run = StraitRun::start_with(&config, &dir.join("strait-2.log"), "info");
            runner_killed = true;
        }
        if step == "restored" {
            break;
        }
    }
    eprintln!("killed at (ms, step reached): {kills:?}");
    let (ok, said) = restore(
        &config,
        topic,
        &["--save-to", &saved.to_string_lossy(), "--timeout", "90"],
    );
    assert!(ok, "{said}\n{}", run.log());
    assert_eq!(saved_rows(&saved), tail, "the saved tail, once, whole");

    wait_caught_up(&e, topic, &w, topic, &run, Duration::from_secs(90));
    let on_east = consume_all(&e, topic, 450, Duration::from_secs(30));
    let on_west = consume_all(&w, topic, 450, Duration::from_secs(30));
    assert_eq!(on_west.len(), 450, "every record of east once on west");
    assert_eq!(rows(&on_west), rows(&on_east));
    assert_eq!(
        committed(&w, "tail-reader", topic, 3),
        failover_point
            .iter()
            .map(|(_, end)| Some(*end))
            .collect::<Vec<_>>()
    );
}

/// East's log no longer starts at 0 (retention, here DeleteRecords) when west is restored: the
/// new mirror starts at east's log start, so west's offsets are mapped (east's minus 20), and
/// west's groups are translated through both mirrors' maps: one inside the kept records moves
/// with them, one below east's log start goes to the start, one in the cut tail to the cut.
#[test]
fn truncate_and_restore_maps_offsets_when_the_new_source_log_starts_later() {
    use rdkafka::admin::{AdminClient, AdminOptions};
    use rdkafka::client::DefaultClientContext;
    let west = Broker::start("west");
    let east = Broker::start("east");
    let (w, e) = (west.bootstrap(), east.bootstrap());
    let topic = "audit";
    let dir = support::cli::temp_dir("mirror-truncate-mapped");
    create_topic(&w, topic, 1);
    produce_records(&w, topic, &numbered("west", 50), Codec::None);
    let config = both_ways_config(&dir, &west, &east, topic);
    let run = StraitRun::start_with(&config, &dir.join("strait.log"), "info");
    wait_caught_up(&w, topic, &e, topic, &run, Duration::from_secs(60));
    mirror_ok(&config, "failover", "west-link", topic);
    produce_records(&e, topic, &numbered("east", 30), Codec::None);
    let admin: AdminClient<DefaultClientContext> = ClientConfig::new()
        .set("bootstrap.servers", &e)
        .set("broker.address.family", "v4")
        .create()
        .expect("admin client");
    let mut tpl = TopicPartitionList::new();
    tpl.add_partition_offset(topic, 0, Offset::Offset(20))
        .expect("tpl");
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    rt.block_on(admin.delete_records(&tpl, &AdminOptions::new()))
        .expect("delete records");
    produce_records(&w, topic, &numbered("late", 5), Codec::None);
    // Groups that only ran on west after the failover (never synced to east).
    commit_at(&w, "inside", topic, &[(0, 30)]);
    commit_at(&w, "below", topic, &[(0, 10)]);
    commit_at(&w, "in-tail", topic, &[(0, 53)]);

    let (ok, said) = restore(
        &config,
        topic,
        &["--save-to", &dir.join("saved").to_string_lossy()],
    );
    assert!(ok, "{said}\n{}", run.log());
    assert!(said.contains("5 records cut (5 offsets)"), "{said}");
    wait_until(
        "east's 60 records on west",
        Duration::from_secs(60),
        &run,
        || watermarks(&w, topic) == vec![(0, 60)],
    );
    let on_east = consume_all(&e, topic, 60, Duration::from_secs(30));
    let on_west = consume_all(&w, topic, 60, Duration::from_secs(30));
    let shifted: Vec<Row> = rows(&on_east)
        .into_iter()
        .map(|(p, o, k, v)| (p, o - 20, k, v))
        .collect();
    assert_eq!(rows(&on_west), shifted, "east's 20..80 at west's 0..60");
    assert_eq!(committed(&w, "inside", topic, 1), vec![Some(10)]);
    assert_eq!(committed(&w, "below", topic, 1), vec![Some(0)]);
    assert_eq!(committed(&w, "in-tail", topic, 1), vec![Some(30)]);
    let described = text(&strait_out(
        &[
            "mirror",
            "describe",
            "--config",
            &config.to_string_lossy(),
            "--link",
            "east-link",
            "--topic",
            topic,
        ],
        &[],
    ));
    assert!(described.contains("mapped"), "{described}");
}
