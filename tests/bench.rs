//! `strait bench` end to end, small: against two clusters given by address (checked afterwards
//! with rdkafka) and in its default mode with its own local brokers. Only consistency is
//! checked, never speed.

mod support;

use std::process::Command;
use std::time::Duration;

use serde_json::Value;
use support::{consume_all, Broker};

fn strait() -> Command {
    Command::new(env!("CARGO_BIN_EXE_strait"))
}

fn f(v: &Value) -> f64 {
    v.as_f64().unwrap_or_else(|| panic!("not a number: {v}"))
}

fn u(v: &Value) -> u64 {
    v.as_u64().unwrap_or_else(|| panic!("not an integer: {v}"))
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * a.abs().max(b.abs()).max(1.0)
}

#[test]
fn bench_against_two_clusters_reports_consistent_figures() {
    let a = Broker::start("bench-a");
    let b = Broker::start("bench-b");
    let out = strait()
        .args([
            "bench",
            "--source",
            &a.bootstrap(),
            "--target",
            &b.bootstrap(),
        ])
        .args([
            "--topic",
            "bench_t",
            "--partitions",
            "3",
            "--records",
            "3000",
        ])
        .args(["--record-bytes", "500", "--keys", "50", "--codec", "zstd"])
        .args([
            "--latency-secs",
            "1",
            "--latency-warmup-secs",
            "1",
            "--json",
        ])
        .output()
        .expect("run strait bench");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "strait bench failed: {stderr}");
    let v: Value = serde_json::from_slice(&out.stdout).expect("JSON report");
    let m = &v["measured"];
    let per_batch = u(&m["settings"]["records_per_batch"]);
    assert_eq!(per_batch, 64 * 1024 / 530); // 64 KiB / (500 + 30)
    let records = u(&m["fill"]["records"]);
    assert_eq!(records, 3000u64.div_ceil(per_batch) * per_batch);
    assert_eq!(u(&m["target_records"]), records);
    assert_eq!(u(&m["strait"]["records"]), records);
    assert_eq!(u(&m["ceiling"]["records"]), records);
    let bytes = u(&m["fill"]["bytes"]);
    assert!(bytes > 0);
    for part in ["ceiling", "strait"] {
        assert_eq!(u(&m[part]["bytes"]), bytes, "{part} moved other bytes");
    }
    // The relay moves at least FLOOR_MIN_BYTES, so its CPU time is not start-up noise.
    assert_eq!(
        u(&m["relay"]["bytes"]),
        bytes.max(strait::bench::FLOOR_MIN_BYTES),
        "relay moved other bytes"
    );
    for part in ["fill", "ceiling", "strait", "relay"] {
        assert!(f(&m[part]["seconds"]) > 0.0, "{part}");
    }
    for proc in ["strait_process", "relay_process"] {
        let cpu = f(&m[proc]["user_seconds"]) + f(&m[proc]["system_seconds"]);
        assert!(cpu > 0.0, "{proc} used no CPU");
        assert!(u(&m[proc]["peak_rss_bytes"]) > 0, "{proc}");
    }
    // The ratios are those of the measured values.
    let r = &v["ratios"];
    let mbps = |part: &str| u(&m[part]["bytes"]) as f64 / 1e6 / f(&m[part]["seconds"]);
    assert!(close(
        f(&r["ceiling_fraction"]),
        mbps("strait") / mbps("ceiling")
    ));
    let per_gb = |proc: &str, part: &str| {
        (f(&m[proc]["user_seconds"]) + f(&m[proc]["system_seconds"]))
            / (u(&m[part]["bytes"]) as f64 / 1e9)
    };
    let strait_gb = per_gb("strait_process", "strait");
    let floor_gb = per_gb("relay_process", "relay");
    assert!(close(f(&r["strait_cpu_seconds_per_gb"]), strait_gb));
    assert!(close(f(&r["floor_cpu_seconds_per_gb"]), floor_gb));
    // The relay ran before strait and after it; the floor is the cheaper run.
    let runs: Vec<f64> = m["relay_runs_cpu_per_gb"]
        .as_array()
        .expect("relay runs")
        .iter()
        .map(|v| v.as_f64().expect("number"))
        .collect();
    assert_eq!(runs.len(), 2, "{runs:?}");
    assert!(runs.iter().all(|r| *r > 0.0), "{runs:?}");
    assert!(
        close(floor_gb, runs[0].min(runs[1])),
        "{floor_gb} of {runs:?}"
    );
    assert!(close(f(&r["floor_multiple"]), strait_gb / floor_gb));
    // CPU while data moved: a part of the whole process's, in the same ratio to the floor.
    let moving = f(&m["strait_moving_cpu_seconds"]);
    let total = f(&m["strait_process"]["user_seconds"]) + f(&m["strait_process"]["system_seconds"]);
    assert!(
        moving >= 0.0 && moving <= total + 0.02,
        "{moving} of {total}"
    );
    let moving_gb = moving / (u(&m["strait"]["bytes"]) as f64 / 1e9);
    assert!(close(f(&r["strait_moving_cpu_seconds_per_gb"]), moving_gb));
    assert!(close(f(&r["moving_floor_multiple"]), moving_gb / floor_gb));
    // Brokers given by address: their CPU is not the bench's to read.
    assert!(m["brokers"].is_null());
    // Latency phase: everything produced was read back, percentiles in order.
    let l = &m["latency"];
    assert_eq!(u(&l["records_seen"]), u(&l["produced"]["records"]));
    assert!(u(&l["produced"]["records"]) > 0);
    assert!(u(&l["latency"]["count"]) > 0);
    let (p50, p99, max) = (
        l["latency"]["p50_ms"].as_i64().unwrap(),
        l["latency"]["p99_ms"].as_i64().unwrap(),
        l["latency"]["max_ms"].as_i64().unwrap(),
    );
    assert!(p50 <= p99 && p99 <= max, "{p50} {p99} {max}");
    // The warm-up's batches were read back but not sampled.
    assert_eq!(f(&l["warmup_seconds"]), 1.0, "{l}");
    assert!(
        u(&l["latency"]["count"]) * per_batch < u(&l["produced"]["records"]),
        "every batch produced was sampled, the warm-up's too: {l}"
    );
    // The same batches read on the source meanwhile: every one, no later than on the target
    // at the median (they are read there first).
    let s = &l["source_latency"];
    assert_eq!(u(&s["count"]), u(&l["latency"]["count"]), "{s}");
    assert!(u(&s["p50_ms"]) <= u(&s["p99_ms"]), "{s}");
    // Its yardstick, the same producer and reader on the target alone, read what it wrote.
    let d = &l["direct"];
    assert!(u(&d["records"]) > 0, "{d}");
    assert!(u(&d["latency"]["count"]) > 0, "{d}");
    assert!(
        u(&d["latency"]["p50_ms"]) <= u(&d["latency"]["max_ms"]),
        "{d}"
    );
    assert!(
        !l["fresh_brokers"].as_bool().unwrap(),
        "clusters given by address are kept"
    );

    // An independent reader finds every record on the target, with the source's keys.
    let remote = m["settings"]["remote_topic"].as_str().unwrap();
    assert_eq!(remote, "source.bench_t");
    let got = consume_all(
        &b.bootstrap(),
        remote,
        records as usize,
        Duration::from_secs(30),
    );
    assert_eq!(got.len() as u64, records);
    let mut keys: Vec<_> = got.iter().map(|r| r.key.clone().unwrap()).collect();
    keys.sort();
    keys.dedup();
    assert_eq!(keys.len(), 50);
    assert!(got.iter().all(|r| r.value.as_ref().unwrap().len() == 500));
}

#[test]
fn bench_starts_its_own_brokers_by_default() {
    // Apache Kafka, as `strait bench` starts by default.
    let out = strait()
        .args(["bench", "--partitions", "2", "--records", "500"])
        .args(["--record-bytes", "1000", "--latency-secs", "1"])
        .output()
        .expect("run strait bench");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "strait bench failed: {stderr}");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("(two local brokers the bench started)"),
        "{text}"
    );
    assert!(text.contains("records on the target"), "{text}");
    assert!(text.contains("of the ceiling"), "{text}");
    assert!(text.contains("x the floor"), "{text}");
    // The latency phase and its yardstick each ran on two fresh local brokers.
    assert!(
        text.contains(", fresh brokers, sampled after a 5 s warm-up ("),
        "{text}"
    );
    assert!(text.contains("without strait (target only)"), "{text}");
    // With its own brokers it reads their CPU time too.
    assert!(text.contains("strait while moving data"), "{text}");
    assert!(text.contains("local brokers (CPU-s)"), "{text}");
    assert!(text.contains("cores busy"), "{text}");
    // 500 records in batches of 63: 8 batches, 504 records, all replicated.
    assert!(text.contains("strait bench: 504 records"), "{text}");
    assert!(text.contains("504 records on the target"), "{text}");
}

#[test]
fn bench_over_a_long_distance_link_moves_every_record_across_it() {
    // What --link-rtt-ms cannot go with is refused before anything starts.
    let refused = strait()
        .args(["bench", "--link-rtt-ms", "40", "--latency-secs", "1"])
        .output()
        .expect("run strait bench");
    assert!(!refused.status.success());
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(stderr.contains("--latency-secs 0"), "{stderr}");
    // A latency phase or warm-up without end, the same.
    for flag in ["--latency-secs", "--latency-warmup-secs"] {
        let refused = strait()
            .args(["bench", flag, "inf"])
            .output()
            .expect("run strait bench");
        assert!(!refused.status.success());
        let stderr = String::from_utf8_lossy(&refused.stderr);
        assert!(
            stderr.contains(&format!("{flag} inf: a number of seconds")),
            "{stderr}"
        );
    }

    let out = strait()
        .args(["bench", "--partitions", "2", "--records", "500"])
        .args(["--record-bytes", "1000", "--latency-secs", "0"])
        .args(["--link-rtt-ms", "40", "--json"])
        .output()
        .expect("run strait bench");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "strait bench failed: {stderr}");
    let v: Value = serde_json::from_slice(&out.stdout).expect("JSON report");
    let m = &v["measured"];
    assert_eq!(f(&m["settings"]["link_rtt_ms"]), 40.0);
    // The target is reached through the link: its address is the link's, not the broker's.
    let records = u(&m["fill"]["records"]);
    assert_eq!(records, 504);
    assert_eq!(u(&m["target_records"]), records);
    assert_eq!(u(&m["ceiling"]["records"]), records);
    // Crossing a 40 ms link takes at least one round trip (a lower bound: load only adds).
    assert!(f(&m["ceiling"]["seconds"]) >= 0.04, "{m}");
}

#[test]
fn bench_peer_mm2_reports_both_side_by_side() {
    // MirrorMaker 2 replicates the same backlog after strait; both are measured and compared.
    let a = Broker::start("bench-peer-a");
    let b = Broker::start("bench-peer-b");
    let out = strait()
        .args([
            "bench",
            "--source",
            &a.bootstrap(),
            "--target",
            &b.bootstrap(),
        ])
        .args([
            "--topic",
            "bench_peer",
            "--partitions",
            "2",
            "--records",
            "2000",
        ])
        .args(["--record-bytes", "300", "--keys", "40", "--codec", "zstd"])
        .args(["--latency-secs", "2", "--latency-mb-per-s", "0.5"])
        .args(["--latency-warmup-secs", "1"])
        .args(["--peer", "mm2", "--json"])
        .output()
        .expect("run strait bench");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "strait bench --peer mm2 failed: {stderr}"
    );
    let v: Value = serde_json::from_slice(&out.stdout).expect("JSON report");
    let m = &v["measured"];
    let records = u(&m["fill"]["records"]);
    let p = &m["peer"];
    assert!(
        p["name"].as_str().unwrap().starts_with("MirrorMaker 2"),
        "{p}"
    );
    assert_eq!(p["remote_topic"].as_str(), Some("mm2.bench_peer"));
    assert_eq!(u(&p["target_records"]), records);
    assert_eq!(u(&p["transfer"]["records"]), records);
    assert_eq!(u(&p["transfer"]["bytes"]), u(&m["fill"]["bytes"]));
    assert!(f(&p["transfer"]["seconds"]) > 0.0);
    assert!(f(&p["first_record_seconds"]) > 0.0);
    assert!(f(&p["first_record_seconds"]) <= f(&p["total_seconds"]));
    let cpu = f(&p["process"]["user_seconds"]) + f(&p["process"]["system_seconds"]);
    let moving = f(&p["moving_cpu_seconds"]);
    assert!(cpu > 0.0 && moving >= 0.0 && moving <= cpu + 0.02, "{p}");
    assert!(u(&p["process"]["peak_rss_bytes"]) > 0, "{p}");
    // The ratios are strait's figures over MirrorMaker 2's.
    let r = &v["ratios"]["peer"];
    let mbps = |t: &Value| u(&t["bytes"]) as f64 / 1e6 / f(&t["seconds"]);
    assert!(close(
        f(&r["throughput"]),
        mbps(&m["strait"]) / mbps(&p["transfer"])
    ));
    let rss = |x: &Value| u(&x["peak_rss_bytes"]) as f64;
    assert!(close(
        f(&r["peak_rss"]),
        rss(&m["strait_process"]) / rss(&p["process"])
    ));
    let strait_first = f(&m["strait_total_seconds"]) - f(&m["strait"]["seconds"]);
    assert!(close(
        f(&r["first_record"]),
        strait_first / f(&p["first_record_seconds"])
    ));
    let gb = u(&m["fill"]["bytes"]) as f64 / 1e9;
    let strait_moving = f(&m["strait_moving_cpu_seconds"]) / gb;
    assert!(close(
        f(&r["moving_cpu_per_gb"]),
        strait_moving / (moving / gb)
    ));
    // MirrorMaker 2's latency at strait's rate: every record it was given read on the target,
    // and the p50/p99 ratios are strait's over its.
    let (mine, peer_l) = (&m["latency"], &p["latency"]);
    assert_eq!(
        f(&peer_l["rate_mb_per_s"]),
        f(&mine["rate_mb_per_s"]),
        "{p}"
    );
    let produced = u(&peer_l["produced"]["records"]);
    assert!(produced > 0, "{peer_l}");
    assert_eq!(u(&peer_l["records_seen"]), produced, "{peer_l}");
    assert!(u(&peer_l["latency"]["count"]) > 0, "{peer_l}");
    for (ratio, key) in [("latency_p50", "p50_ms"), ("latency_p99", "p99_ms")] {
        let theirs = f(&peer_l["latency"][key]);
        if theirs > 0.0 {
            assert!(
                close(f(&r[ratio]), f(&mine["latency"][key]) / theirs),
                "{ratio}: {r}"
            );
        }
    }
    let on_target = consume_all(
        &b.bootstrap(),
        "mm2.bench_peer-latency-mm2",
        produced as usize,
        Duration::from_secs(30),
    );
    assert_eq!(on_target.len() as u64, produced);
    // Both remote topics hold every record, with the source's keys.
    for remote in ["source.bench_peer", "mm2.bench_peer"] {
        let got = consume_all(
            &b.bootstrap(),
            remote,
            records as usize,
            Duration::from_secs(30),
        );
        assert_eq!(got.len() as u64, records, "{remote}");
        let mut keys: Vec<_> = got.iter().map(|r| r.key.clone().unwrap()).collect();
        keys.sort();
        keys.dedup();
        assert_eq!(keys.len(), 40, "{remote}");
    }
}
