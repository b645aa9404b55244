//! Issue 32: reversing a mirror (Cluster Linking's `reverse-and-start-mirror` and
//! `reverse-and-pause-mirror`) with mirror flows both ways under the same topic name. A topic
//! is mirrored west -> east under continuous production, reversed (east writable, west a
//! mirror of it), then reversed back (failback) with the new mirror paused and resumed; a
//! consumer group moves across both ways. Checked with rdkafka: every record on both sides at
//! the same offsets exactly once, the group reading each record exactly once; and every Produce
//! request strait sends passes the proxy's checks. Also: records written into the old source
//! after the reversal stop the reversed mirror (FAILED) instead of being mixed with the new
//! source's.

mod support;

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::time::{Duration, Instant};

use rdkafka::consumer::{BaseConsumer, CommitMode, Consumer};
use rdkafka::{ClientConfig, Message, Offset, TopicPartitionList};
use support::cli::{both_ways_config, mirror_verb, strait_out, text};
use support::data::{committed_offset, watermarks};
use support::load::{wait_caught_up, Load};
use support::{consume_all, create_topic, produce_records, Broker, StraitRun};
use support::{Codec, TestRecord};

const PARTITIONS: i32 = 3;

/// `strait mirror VERB --config F --link LINK --topic T`: its output, asserting success.
fn mirror(config: &Path, verb: &str, link: &str, topic: &str) -> String {
    let out = mirror_verb(config, verb, link, topic, 90);
    let t = text(&out);
    assert!(
        out.status.success(),
        "strait mirror {verb} --link {link}: {t}"
    );
    t
}

/// `strait mirror list`.
fn list(config: &Path) -> String {
    let c = config.to_string_lossy();
    text(&strait_out(&["mirror", "list", "--config", &c], &[]))
}

/// Reads `topic` as `group` from its committed offsets (or the start) up to the log ends of
/// the moment it is called (records may keep arriving), commits, and returns what it read:
/// (partition, offset, value).
fn read_as_group(bootstrap: &str, group: &str, topic: &str) -> Vec<(i32, i64, String)> {
    let ends = watermarks(bootstrap, topic);
    let c: BaseConsumer = ClientConfig::new()
        .set("bootstrap.servers", bootstrap)
        .set("broker.address.family", "v4")
        .set("group.id", group)
        .set("enable.auto.commit", "false")
        .set("auto.offset.reset", "earliest")
        .create()
        .expect("consumer");
    let mut tpl = TopicPartitionList::new();
    let mut next: BTreeMap<i32, i64> = BTreeMap::new();
    for p in 0..PARTITIONS {
        tpl.add_partition_offset(topic, p, Offset::Stored)
            .expect("tpl");
        next.insert(p, committed_offset(bootstrap, group, topic, p).unwrap_or(0));
    }
    c.assign(&tpl).expect("assign");
    let reached = |next: &BTreeMap<i32, i64>| {
        next.iter()
            .all(|(p, n)| *n >= ends.get(*p as usize).map_or(0, |e| e.1))
    };
    let mut out = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(60);
    while !reached(&next) {
        assert!(
            Instant::now() < deadline,
            "{group} never reached {ends:?}: {next:?}"
        );
        match c.poll(Duration::from_millis(100)) {
            Some(Ok(m)) => {
                let value = String::from_utf8_lossy(m.payload().unwrap_or_default()).into_owned();
                let end = ends.get(m.partition() as usize).map_or(0, |e| e.1);
                if m.offset() < end {
                    out.push((m.partition(), m.offset(), value));
                    next.insert(m.partition(), m.offset() + 1);
                }
            }
            Some(Err(e)) => eprintln!("{group} on {bootstrap}: {e}"),
            None => {}
        }
    }
    // Commit exactly up to the ends (records read past them are read again next time).
    let mut done = TopicPartitionList::new();
    for (p, n) in &next {
        done.add_partition_offset(topic, *p, Offset::Offset(*n))
            .expect("tpl");
    }
    c.commit(&done, CommitMode::Sync).expect("commit");
    out
}

/// The group's committed offsets of `topic` on a cluster, by partition.
fn committed(bootstrap: &str, group: &str, topic: &str) -> Vec<Option<i64>> {
    (0..PARTITIONS)
        .map(|p| committed_offset(bootstrap, group, topic, p))
        .collect()
}

/// Each partition's reads continue exactly after the previous ones: no record skipped, none
/// read twice.
fn assert_continues(before: &[(i32, i64, String)], after: &[(i32, i64, String)], what: &str) {
    let mut next: BTreeMap<i32, i64> = BTreeMap::new();
    for (p, o, _) in before {
        next.insert(*p, o + 1);
    }
    for (p, o, v) in after {
        let want = next.get(p).copied().unwrap_or(0);
        assert_eq!(
            *o, want,
            "{what}: partition {p} read {v} at {o}, expected offset {want}"
        );
        next.insert(*p, o + 1);
    }
}

fn wait(what: &str, run: &StraitRun, timeout: Duration, mut cond: impl FnMut() -> bool) {
    let deadline = Instant::now() + timeout;
    while !cond() {
        assert!(
            Instant::now() < deadline,
            "timed out: {what}\n{}",
            run.log()
        );
        std::thread::sleep(Duration::from_millis(300));
    }
}

#[test]
fn reverse_and_start_then_back_keeps_every_record_and_the_group_exact() {
    let (west, proxy_west) = Broker::start_behind_proxy("west");
    let (east, proxy_east) = Broker::start_behind_proxy("east");
    let (w, e) = (west.direct_bootstrap(), east.direct_bootstrap());
    let topic = "trades";
    let group = "trades-app";
    let dir = support::cli::temp_dir("mirror-reverse");
    create_topic(&w, topic, PARTITIONS);
    let config = both_ways_config(&dir, &west, &east, topic);
    let run = StraitRun::start_with(&config, &dir.join("strait.log"), "info");

    // Phase 1: producers and the group on west; east mirrors.
    let load = Load::start_with(w.clone(), topic, PARTITIONS, 10);
    std::thread::sleep(Duration::from_secs(4));
    let read_west = read_as_group(&w, group, topic);
    assert!(!read_west.is_empty());
    // Meanwhile the flow east -> west leaves east's mirror alone (the loop check): west ends
    // up with each record once (checked at the end).
    std::thread::sleep(Duration::from_secs(2));
    // Planned switch-over: producers stop, the mirror reverses, producers move to east.
    let sent_west = load.finish();
    let out = mirror(&config, "reverse-and-start", "west-link", topic);
    assert!(
        out.contains(
            "reversed: link east-link mirrors topic trades from cluster east into cluster west"
        ),
        "{out}"
    );
    assert_eq!(
        watermarks(&w, topic),
        watermarks(&e, topic),
        "caught up first"
    );
    // The group's offsets reached east before the topic became writable there.
    assert_eq!(committed(&e, group, topic), committed(&w, group, topic));

    // Phase 2: producers and the group on east; west mirrors east.
    let load = Load::start_with(e.clone(), topic, PARTITIONS, 11);
    std::thread::sleep(Duration::from_secs(4));
    let read_east = read_as_group(&e, group, topic);
    assert_continues(
        &read_west,
        &read_east,
        "the group on east after the reversal",
    );
    // The group's commits on east reach west (it has no members there).
    wait(
        "the group synced back to west",
        &run,
        Duration::from_secs(60),
        || committed(&w, group, topic) == committed(&e, group, topic),
    );
    let sent_east = load.finish();
    wait_caught_up(&e, topic, &w, topic, &run, Duration::from_secs(60));

    // Failback, the mirror east -> west ... west -> east paused at first.
    let out = mirror(&config, "reverse-and-pause", "east-link", topic);
    assert!(out.contains("paused"), "{out}");
    let ends_at_failback = watermarks(&e, topic);
    assert_eq!(watermarks(&w, topic), ends_at_failback);
    let listed = list(&config);
    assert!(
        listed.contains("PAUSED") && listed.contains("STOPPED"),
        "{listed}"
    );

    // Phase 3: producers and the group back on west; east waits until resumed.
    let load = Load::start_with(w.clone(), topic, PARTITIONS, 12);
    std::thread::sleep(Duration::from_secs(3));
    assert_eq!(
        watermarks(&e, topic),
        ends_at_failback,
        "paused: nothing mirrored"
    );
    let out = mirror(&config, "resume", "west-link", topic);
    assert!(out.contains("resumed"), "{out}");
    let sent_back = load.finish();
    wait_caught_up(&w, topic, &e, topic, &run, Duration::from_secs(60));
    let read_back = read_as_group(&w, group, topic);
    let mut so_far = read_west.clone();
    so_far.extend(read_east.iter().cloned());
    assert_continues(
        &so_far,
        &read_back,
        "the group back on west after the failback",
    );

    // Every record on both sides, at the same offsets, exactly once; the group read each once.
    let total = sent_west + sent_east + sent_back;
    let on_west = consume_all(&w, topic, total, Duration::from_secs(60));
    let on_east = consume_all(&e, topic, total, Duration::from_secs(60));
    assert_eq!(on_west.len(), total, "west holds every record once");
    let strip = |r: &support::OwnedRecord| (r.partition, r.offset, r.key.clone(), r.value.clone());
    assert_eq!(
        on_west.iter().map(strip).collect::<Vec<_>>(),
        on_east.iter().map(strip).collect::<Vec<_>>(),
        "the same records at the same offsets on both sides"
    );
    let values: BTreeSet<Vec<u8>> = on_west.iter().filter_map(|r| r.value.clone()).collect();
    assert_eq!(values.len(), total, "no record twice");
    let read: Vec<&String> = read_west
        .iter()
        .chain(&read_east)
        .chain(&read_back)
        .map(|r| &r.2)
        .collect();
    assert_eq!(read.len(), total, "the group read every record");
    assert_eq!(
        read.iter().collect::<BTreeSet<_>>().len(),
        total,
        "and none twice"
    );
    let listed = list(&config);
    assert!(
        listed.contains("ACTIVE") && listed.contains("STOPPED"),
        "{listed}"
    );
    assert!(proxy_west.produce_batches() > 0 && proxy_east.produce_batches() > 0);
    proxy_west.assert_clean();
    proxy_east.assert_clean();
}

#[test]
fn records_written_to_the_old_source_after_a_reversal_stop_the_new_mirror() {
    let west = Broker::start("west");
    let east = Broker::start("east");
    let (w, e) = (west.bootstrap(), east.bootstrap());
    let topic = "orders";
    let dir = support::cli::temp_dir("mirror-reverse-tail");
    create_topic(&w, topic, 1);
    let numbered = |label: &str, n: usize| -> Vec<TestRecord> {
        (0..n)
            .map(|i| TestRecord::kv(format!("k{i}"), format!("{label}-{i}")))
            .collect()
    };
    produce_records(&w, topic, &numbered("west", 30), Codec::None);
    let config = both_ways_config(&dir, &west, &east, topic);
    let run = StraitRun::start_with(&config, &dir.join("strait.log"), "info");
    wait_caught_up(&w, topic, &e, topic, &run, Duration::from_secs(60));
    mirror(&config, "reverse-and-pause", "west-link", topic);
    // A producer that was not stopped writes into west after the reversal.
    produce_records(&w, topic, &numbered("late", 5), Codec::None);
    produce_records(&e, topic, &numbered("east", 10), Codec::None);
    // Found while the new mirror is paused, before anything is written after them.
    wait(
        "the reversed mirror failed",
        &run,
        Duration::from_secs(60),
        || list(&config).contains("FAILED"),
    );
    mirror(&config, "resume", "east-link", topic);
    let listed = list(&config);
    assert!(listed.contains("partition 0 stopped"), "{listed}");
    assert!(
        run.log()
            .contains("cluster west, topic orders, partition 0"),
        "{}",
        run.log()
    );
    std::thread::sleep(Duration::from_secs(3));
    // Nothing of east's was written after west's late records: west holds 30 + 5.
    assert_eq!(watermarks(&w, topic), vec![(0, 35)]);
    let on_west = consume_all(&w, topic, 35, Duration::from_secs(30));
    assert!(on_west.iter().all(|r| !String::from_utf8_lossy(
        r.value.as_deref().unwrap_or_default()
    )
    .starts_with("east")));
}

/// Restarts at each step of a reversal: the command stored while no `strait run` runs is
/// carried out by the next one; `strait run` killed (-9) right after the reversal, before the
/// new mirror copied anything, and again as records arrive; every record once, same offsets.
#[test]
fn a_reversal_survives_kill_9_at_each_step() {
    let (west, proxy_west) = Broker::start_behind_proxy("west");
    let east = Broker::start("east");
    let (w, e) = (west.direct_bootstrap(), east.bootstrap());
    let topic = "ledger";
    let dir = support::cli::temp_dir("mirror-reverse-kill");
    create_topic(&w, topic, 2);
    let numbered = |label: &str, n: usize| -> Vec<TestRecord> {
        (0..n)
            .map(|i| TestRecord::kv(format!("k{i}"), format!("{label}-{i}")))
            .collect()
    };
    produce_records(&w, topic, &numbered("west", 40), Codec::None);
    let config = both_ways_config(&dir, &west, &east, topic);
    let log = |n: usize| dir.join(format!("strait-{n}.log"));
    let mut run = StraitRun::start_with(&config, &log(1), "info");
    wait_caught_up(&w, topic, &e, topic, &run, Duration::from_secs(60));
    run.kill9();

    // Stored while nothing runs: the command says so and exits 1; the next run carries it out.
    let out = mirror_verb(&config, "reverse-and-start", "west-link", topic, 3);
    assert!(!out.status.success(), "{}", text(&out));
    assert!(
        text(&out).contains("no running `strait run` took it yet"),
        "{}",
        text(&out)
    );
    let mut run = StraitRun::start_with(&config, &log(2), "info");
    wait(
        "the reversal carried out",
        &run,
        Duration::from_secs(60),
        || run.log().contains("mirror reversed"),
    );
    // Killed before the new mirror copied anything; records arrive on east meanwhile.
    run.kill9();
    produce_records(&e, topic, &numbered("east", 30), Codec::None);
    let mut run = StraitRun::start_with(&config, &log(3), "info");
    wait_caught_up(&e, topic, &w, topic, &run, Duration::from_secs(60));
    // Killed as more records arrive (mirrored or not yet); the next run goes on from what its
    // progress and west's log say.
    produce_records(&e, topic, &numbered("more", 30), Codec::None);
    run.kill9();
    let run = StraitRun::start_with(&config, &log(4), "info");
    produce_records(&e, topic, &numbered("last", 30), Codec::None);
    wait_caught_up(&e, topic, &w, topic, &run, Duration::from_secs(60));
    let on_west = consume_all(&w, topic, 130, Duration::from_secs(30));
    let on_east = consume_all(&e, topic, 130, Duration::from_secs(30));
    let strip = |r: &support::OwnedRecord| (r.partition, r.offset, r.key.clone(), r.value.clone());
    assert_eq!(on_west.len(), 130, "every record once on west");
    assert_eq!(
        on_west.iter().map(strip).collect::<Vec<_>>(),
        on_east.iter().map(strip).collect::<Vec<_>>()
    );
    let listed = list(&config);
    assert!(
        listed.contains("ACTIVE") && listed.contains("STOPPED"),
        "{listed}"
    );
    proxy_west.assert_clean();
}

/// A reversal asked for while the source cluster is down is refused with one line naming it
/// (the source is to become the mirror: it must be reachable), nothing is stored, the mirror
/// goes on; once the source is back the reversal works: nothing lost, nothing twice.
#[test]
fn a_reversal_is_refused_while_the_source_is_down_then_works() {
    let mut west = Broker::start("west");
    let east = Broker::start("east");
    let (w, e) = (west.bootstrap(), east.bootstrap());
    let topic = "audit";
    let dir = support::cli::temp_dir("mirror-reverse-outage");
    create_topic(&w, topic, 1);
    let numbered = |label: &str, n: usize| -> Vec<TestRecord> {
        (0..n)
            .map(|i| TestRecord::kv(format!("k{i}"), format!("{label}-{i}")))
            .collect()
    };
    produce_records(&w, topic, &numbered("west", 25), Codec::None);
    let config = both_ways_config(&dir, &west, &east, topic);
    let run = StraitRun::start_with(&config, &dir.join("strait.log"), "info");
    wait_caught_up(&w, topic, &e, topic, &run, Duration::from_secs(60));
    west.stop();
    let out = mirror_verb(&config, "reverse-and-start", "west-link", topic, 10);
    let said = text(&out);
    assert!(!out.status.success(), "{said}");
    assert!(said.contains("cluster west"), "{said}");
    assert_eq!(said.trim().lines().count(), 1, "{said}");
    west.start_again();
    std::thread::sleep(Duration::from_secs(2));
    assert!(
        !run.log().contains("command applied"),
        "nothing stored\n{}",
        run.log()
    );
    // The mirror goes on after the outage, then the reversal works.
    produce_records(&w, topic, &numbered("after", 5), Codec::None);
    wait_caught_up(&w, topic, &e, topic, &run, Duration::from_secs(90));
    mirror(&config, "reverse-and-start", "west-link", topic);
    produce_records(&e, topic, &numbered("east", 15), Codec::None);
    wait_caught_up(&e, topic, &w, topic, &run, Duration::from_secs(60));
    let strip = |r: &support::OwnedRecord| (r.partition, r.offset, r.key.clone(), r.value.clone());
    let on_west = consume_all(&w, topic, 45, Duration::from_secs(30));
    let on_east = consume_all(&e, topic, 45, Duration::from_secs(30));
    assert_eq!(on_west.len(), 45, "every record once on west");
    assert_eq!(
        on_west.iter().map(strip).collect::<Vec<_>>(),
        on_east.iter().map(strip).collect::<Vec<_>>()
    );
}
