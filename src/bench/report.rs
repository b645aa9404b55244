//! What `strait bench` measured, the ratios derived from it, and its text form (sans-io).
//!
//! Units: MB is 10^6 bytes, GB 10^9 bytes; bytes are record-batch bytes (what a broker stores).

use std::fmt::Write as _;

use serde::Serialize;

use super::peer::{PeerRatios, PeerRun};
use super::stats::Summary;

/// The shape of the data and where it went.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Settings {
    /// Source bootstrap address.
    pub source: String,
    /// Target bootstrap address.
    pub target: String,
    /// True when the bench started the two clusters itself (local brokers).
    pub local_brokers: bool,
    /// Topic filled on the source and replicated.
    pub topic: String,
    /// Its name on the target (strait's remote topic).
    pub remote_topic: String,
    /// Topic on the target written directly for the ceiling.
    pub ceiling_topic: String,
    /// Partitions of every bench topic.
    pub partitions: i32,
    /// Value bytes per record.
    pub record_bytes: usize,
    /// Distinct keys.
    pub key_spread: u64,
    /// Codec of the batches.
    pub codec: String,
    /// Records per batch.
    pub records_per_batch: usize,
    /// The round trip of the delay link between strait (and the direct writer) and the
    /// target, when the bench put one there.
    pub link_rtt_ms: Option<f64>,
}

/// Bytes and records moved in a measured time.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Transfer {
    /// Batch bytes.
    pub bytes: u64,
    /// Records.
    pub records: u64,
    /// Wall-clock seconds.
    pub seconds: f64,
}

impl Transfer {
    /// MB per second (0 when no time passed).
    pub fn mb_per_s(&self) -> f64 {
        per_second(self.bytes as f64 / 1e6, self.seconds)
    }

    /// Records per second (0 when no time passed).
    pub fn records_per_s(&self) -> f64 {
        per_second(self.records as f64, self.seconds)
    }
}

fn per_second(amount: f64, seconds: f64) -> f64 {
    if seconds > 0.0 {
        amount / seconds
    } else {
        0.0
    }
}

/// What a measured child process used, from its resource usage when it was reaped.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct ProcessCost {
    /// User CPU seconds.
    pub user_seconds: f64,
    /// System (kernel) CPU seconds.
    pub system_seconds: f64,
    /// Peak resident set size in bytes (`VmHWM` just before the process stopped).
    pub peak_rss_bytes: u64,
}

impl ProcessCost {
    /// User plus system CPU seconds.
    pub fn cpu_seconds(&self) -> f64 {
        self.user_seconds + self.system_seconds
    }

    /// CPU seconds per GB of `bytes` (0 for no bytes).
    pub fn cpu_seconds_per_gb(&self, bytes: u64) -> f64 {
        if bytes == 0 {
            0.0
        } else {
            self.cpu_seconds() / (bytes as f64 / 1e9)
        }
    }
}

/// The latency phase: records produced at a fixed rate while strait replicates them.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct LatencyRun {
    /// Produce rate asked for, MB/s.
    pub rate_mb_per_s: f64,
    /// What was produced (the warm-up included).
    pub produced: Transfer,
    /// Seconds of it that were the warm-up, read but not sampled.
    pub warmup_seconds: f64,
    /// Records read back from the target.
    pub records_seen: u64,
    /// Batch latencies: time the batch was read on the target minus its max timestamp.
    pub latency: Summary,
    /// The same batches read on the source meanwhile, the same way: the part of the latency
    /// that is there before the replicator fetches (the producer, the source broker, the
    /// machine), `None` where the reader writes and reads one cluster.
    pub source_latency: Option<Summary>,
    /// Fraction of the machine's cores busy while the bench produced (everything on the
    /// machine: the bench's producer and reader, strait, local brokers).
    pub machine_busy: Option<f64>,
    /// The phase ran on local brokers started anew for it (the throughput phases leave over a
    /// GB in in-memory brokers, which slows nisshi down).
    pub fresh_brokers: bool,
    /// The same producer and reader on the target alone, no strait: the setup's own latency.
    pub direct: Option<DirectLatency>,
}

/// Latency of the bench's producer and reader on one topic of the target, at the same rate.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct DirectLatency {
    /// Records read back.
    pub records: u64,
    /// Batch latencies, as in [`LatencyRun::latency`].
    pub latency: Summary,
    /// Fraction of the machine's cores busy meanwhile.
    pub machine_busy: Option<f64>,
}

/// CPU seconds of the local brokers (when the bench started them) in each phase, and the
/// machine's cores: how much of the machine the brokers leave to strait.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct BrokerCpu {
    /// The source broker while the bench filled it.
    pub fill_source: Option<f64>,
    /// The target broker while the bench wrote the ceiling.
    pub ceiling_target: Option<f64>,
    /// The source broker while strait moved the data (first to last record).
    pub strait_source: Option<f64>,
    /// The target broker while strait moved the data.
    pub strait_target: Option<f64>,
    /// CPUs this process may run on.
    pub cores: usize,
}

/// Everything `strait bench` measured.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Report {
    /// The data and the clusters.
    pub settings: Settings,
    /// The bench's own writer filling the source topic.
    pub fill: Transfer,
    /// The same batches written straight into a fresh topic on the target: the ceiling.
    pub ceiling: Transfer,
    /// strait's replication, from the first record visible on the target to the last.
    pub strait: Transfer,
    /// strait's replication from process start to the last record visible on the target.
    pub strait_total_seconds: f64,
    /// Records found on the target's remote topic when the replication was done.
    pub target_records: u64,
    /// The strait process (`strait run`), start to stop.
    pub strait_process: ProcessCost,
    /// CPU seconds of the strait process from the first record on the target to the last (no
    /// start-up, group join or shutdown), when `/proc` could be read.
    pub strait_moving_cpu_seconds: Option<f64>,
    /// The local brokers' CPU, when the bench started them.
    pub brokers: Option<BrokerCpu>,
    /// The socket-to-socket relay of the same number of bytes: the floor. The relay runs just
    /// before strait and just after; this is the cheaper run (the stricter floor).
    pub relay: Transfer,
    /// The relay process of that run.
    pub relay_process: ProcessCost,
    /// CPU seconds per GB of every relay run, in order (before strait, after strait): how much
    /// the floor itself moved during the bench.
    pub relay_runs_cpu_per_gb: Vec<f64>,
    /// The latency phase, when it ran.
    pub latency: Option<LatencyRun>,
    /// strait left running with nothing to move after the backlog (`--idle-secs`).
    pub idle: Option<Idle>,
    /// Another replicator on the same backlog (`--peer`), when it ran.
    pub peer: Option<PeerRun>,
}

/// strait with nothing to move: every record replicated, no new ones.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Idle {
    /// How long it was watched.
    pub seconds: f64,
    /// CPU seconds it used meanwhile.
    pub cpu_seconds: f64,
}

impl Idle {
    /// Share of one core busy.
    pub fn core_share(&self) -> f64 {
        if self.seconds > 0.0 {
            self.cpu_seconds / self.seconds
        } else {
            0.0
        }
    }
}

/// The ratios and per-GB figures the report derives from its measurements.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Ratios {
    /// strait MB/s over the ceiling's MB/s.
    pub ceiling_fraction: f64,
    /// strait CPU-seconds per GB.
    pub strait_cpu_seconds_per_gb: f64,
    /// Relay CPU-seconds per GB.
    pub floor_cpu_seconds_per_gb: f64,
    /// strait's CPU per GB over the relay's.
    pub floor_multiple: f64,
    /// strait CPU-seconds per GB while moving data (first to last record).
    pub strait_moving_cpu_seconds_per_gb: Option<f64>,
    /// That over the relay's CPU per GB.
    pub moving_floor_multiple: Option<f64>,
    /// strait's figures over the peer's, when it ran.
    pub peer: Option<PeerRatios>,
}

/// The JSON form: what was measured and what follows from it.
#[derive(Debug, Clone, Serialize)]
pub struct JsonReport<'a> {
    /// The measurements.
    pub measured: &'a Report,
    /// The derived figures.
    pub ratios: Ratios,
}

impl Report {
    /// The derived figures.
    pub fn ratios(&self) -> Ratios {
        Ratios {
            ceiling_fraction: self.ceiling_fraction(),
            strait_cpu_seconds_per_gb: self.strait_cpu_per_gb(),
            floor_cpu_seconds_per_gb: self.relay_cpu_per_gb(),
            floor_multiple: self.floor_multiple(),
            strait_moving_cpu_seconds_per_gb: self.strait_moving_cpu_per_gb(),
            moving_floor_multiple: self.moving_floor_multiple(),
            peer: self.peer_ratios(),
        }
    }

    /// Seconds from strait's start to its first record on the target.
    pub fn strait_first_record_seconds(&self) -> f64 {
        (self.strait_total_seconds - self.strait.seconds).max(0.0)
    }

    /// strait's figures over the peer's, when it ran.
    pub fn peer_ratios(&self) -> Option<PeerRatios> {
        let peer = self.peer.as_ref()?;
        Some(super::peer::ratios(
            &self.strait,
            self.strait_moving_cpu_per_gb(),
            self.strait_process.peak_rss_bytes,
            self.strait_first_record_seconds(),
            self.latency.as_ref().map(|l| &l.latency),
            peer,
        ))
    }

    /// The report as pretty JSON: `{"measured": ..., "ratios": ...}`.
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(&JsonReport {
            measured: self,
            ratios: self.ratios(),
        })
        .unwrap_or_else(|e| format!("{{\"error\": \"{e}\"}}"))
    }

    /// strait's throughput as a fraction of the ceiling's.
    pub fn ceiling_fraction(&self) -> f64 {
        ratio(self.strait.mb_per_s(), self.ceiling.mb_per_s())
    }

    /// strait's CPU seconds per GB.
    pub fn strait_cpu_per_gb(&self) -> f64 {
        self.strait_process.cpu_seconds_per_gb(self.strait.bytes)
    }

    /// The relay's CPU seconds per GB.
    pub fn relay_cpu_per_gb(&self) -> f64 {
        self.relay_process.cpu_seconds_per_gb(self.relay.bytes)
    }

    /// strait's CPU per GB as a multiple of the relay's.
    pub fn floor_multiple(&self) -> f64 {
        ratio(self.strait_cpu_per_gb(), self.relay_cpu_per_gb())
    }

    /// strait's CPU seconds per GB while moving data.
    pub fn strait_moving_cpu_per_gb(&self) -> Option<f64> {
        let cpu = self.strait_moving_cpu_seconds?;
        (self.strait.bytes > 0).then(|| cpu / (self.strait.bytes as f64 / 1e9))
    }

    /// strait's CPU per GB while moving data as a multiple of the relay's.
    pub fn moving_floor_multiple(&self) -> Option<f64> {
        Some(ratio(
            self.strait_moving_cpu_per_gb()?,
            self.relay_cpu_per_gb(),
        ))
    }

    /// How busy the machine was while strait moved the data: CPU seconds of strait and both
    /// local brokers over cores times seconds.
    pub fn machine_busy(&self) -> Option<f64> {
        let b = self.brokers?;
        let used = self.strait_moving_cpu_seconds? + b.strait_source? + b.strait_target?;
        let capacity = b.cores as f64 * self.strait.seconds;
        (capacity > 0.0).then(|| used / capacity)
    }

    /// The report as text, one figure a line.
    pub fn render(&self) -> String {
        let mut o = String::new();
        self.render_settings(&mut o);
        let _ = writeln!(o);
        self.render_transfers(&mut o);
        let _ = writeln!(o);
        self.render_costs(&mut o);
        self.render_brokers(&mut o);
        let _ = writeln!(o);
        self.render_latency(&mut o);
        if let Some(peer) = &self.peer {
            self.render_peer(&mut o, peer);
        }
        o
    }

    /// What was measured: records, codec, clusters, topics.
    fn render_settings(&self, o: &mut String) {
        let s = &self.settings;
        let _ = writeln!(
            o,
            "strait bench: {} records of {} B, {} partitions, codec {}, {} records a batch, {} keys",
            self.fill.records,
            s.record_bytes,
            s.partitions,
            s.codec,
            s.records_per_batch,
            s.key_spread
        );
        let _ = writeln!(
            o,
            "source {} -> target {}{}; topic {} -> {}",
            s.source,
            s.target,
            if s.local_brokers {
                " (two local brokers the bench started)"
            } else {
                ""
            },
            s.topic,
            s.remote_topic
        );
        if let Some(rtt) = s.link_rtt_ms {
            let _ = writeln!(
                o,
                "the target is behind a link with a {rtt} ms round trip: strait's writes and the ceiling's cross it alike"
            );
        }
    }

    /// The three transfers: fill, ceiling, strait.
    fn render_transfers(&self, o: &mut String) {
        transfer_line(
            o,
            "fill (direct write to source)",
            &self.fill,
            String::new(),
        );
        transfer_line(
            o,
            "ceiling (direct write to target)",
            &self.ceiling,
            String::new(),
        );
        transfer_line(
            o,
            "strait (first to last record)",
            &self.strait,
            format!("  = {:.2} of the ceiling", self.ceiling_fraction()),
        );
        let _ = writeln!(
            o,
            "{:<34} {:>9} records on the target, {:.2} s from process start",
            "", self.target_records, self.strait_total_seconds
        );
    }

    /// CPU and memory of strait and of the floor (the socket relay).
    fn render_costs(&self, o: &mut String) {
        cost_line(
            o,
            "strait process",
            &self.strait_process,
            self.strait_cpu_per_gb(),
            format!("  = {:.2}x the floor", self.floor_multiple()),
        );
        if let (Some(cpu), Some(per_gb), Some(multiple)) = (
            self.strait_moving_cpu_seconds,
            self.strait_moving_cpu_per_gb(),
            self.moving_floor_multiple(),
        ) {
            let _ = writeln!(
                o,
                "{:<34} {cpu:>7.2} CPU-s {:>21} {per_gb:>6.2} CPU-s/GB  = {multiple:.2}x the floor",
                "strait while moving data", ""
            );
        }
        let runs = if self.relay_runs_cpu_per_gb.len() > 1 {
            let each: Vec<String> = self
                .relay_runs_cpu_per_gb
                .iter()
                .map(|v| format!("{v:.2}"))
                .collect();
            format!(
                "; the cheaper of {} relays ({} CPU-s/GB, before and after strait)",
                each.len(),
                each.join(", ")
            )
        } else {
            String::new()
        };
        cost_line(
            o,
            "floor (socket relay, 1 MiB buffer)",
            &self.relay_process,
            self.relay_cpu_per_gb(),
            format!(", {:.1} MB/s{runs}", self.relay.mb_per_s()),
        );
    }

    /// CPU of the local brokers, and how busy the machine was.
    fn render_brokers(&self, o: &mut String) {
        if let Some(b) = &self.brokers {
            let f = |v: Option<f64>| v.map(|v| format!("{v:.2}")).unwrap_or_else(|| "?".into());
            let _ = writeln!(
                o,
                "{:<34} fill: source {} | ceiling: target {} | strait: source {}, target {}",
                "local brokers (CPU-s)",
                f(b.fill_source),
                f(b.ceiling_target),
                f(b.strait_source),
                f(b.strait_target)
            );
            if let Some(busy) = self.machine_busy() {
                let _ = writeln!(
                    o,
                    "{:<34} {:.0}% of {} cores busy (strait and both brokers)",
                    "machine while strait moved data",
                    busy * 100.0,
                    b.cores
                );
            }
        }
        if let Some(i) = &self.idle {
            let _ = writeln!(
                o,
                "{:<34} {:>7.3} CPU-s in {:.0} s = {:.2}% of a core",
                "strait idle after the backlog",
                i.cpu_seconds,
                i.seconds,
                i.core_share() * 100.0
            );
        }
    }

    /// Latency at a fixed rate, with and without strait.
    fn render_latency(&self, o: &mut String) {
        match &self.latency {
            Some(l) => {
                let _ = writeln!(
                    o,
                    "latency at {:.1} MB/s{}{} ({} records produced in {:.1} s, {} seen on the target): p50 {} ms, p99 {} ms, max {} ms over {} batches",
                    l.rate_mb_per_s,
                    if l.fresh_brokers { ", fresh brokers" } else { "" },
                    warmup_text(l.warmup_seconds),
                    l.produced.records,
                    l.produced.seconds,
                    l.records_seen,
                    l.latency.p50_ms,
                    l.latency.p99_ms,
                    l.latency.max_ms,
                    l.latency.count
                );
                if let Some(s) = &l.source_latency {
                    let _ = writeln!(
                        o,
                        "{:<34} p50 {} ms, p99 {} ms, max {} ms over {} batches (the same batches read there meanwhile)",
                        "on the source, before strait",
                        s.p50_ms,
                        s.p99_ms,
                        s.max_ms,
                        s.count
                    );
                }
                if let Some(busy) = l.machine_busy {
                    let _ = writeln!(
                        o,
                        "{:<34} {:.0}% of the cores busy (bench producer and reader, strait, brokers)",
                        "machine while producing",
                        busy * 100.0
                    );
                }
                if let Some(d) = &l.direct {
                    let _ = writeln!(
                        o,
                        "{:<34} p50 {} ms, p99 {} ms, max {} ms over {} batches{}",
                        "without strait (target only)",
                        d.latency.p50_ms,
                        d.latency.p99_ms,
                        d.latency.max_ms,
                        d.latency.count,
                        d.machine_busy
                            .map(|b| format!(", {:.0}% of the cores busy", b * 100.0))
                            .unwrap_or_default()
                    );
                }
            }
            None => {
                let _ = writeln!(o, "latency: not measured");
            }
        }
    }

    /// The side-by-side table of strait and the peer.
    fn render_peer(&self, o: &mut String, peer: &PeerRun) {
        let Some(r) = self.peer_ratios() else {
            return;
        };
        let _ = writeln!(o);
        let _ = writeln!(
            o,
            "side by side with {} on the same backlog and brokers ({}; {} records on {}):",
            peer.name, peer.settings, peer.target_records, peer.remote_topic
        );
        let _ = writeln!(
            o,
            "{:<36} {:>10} {:>14} {:>11}",
            "", "strait", "MirrorMaker 2", "strait/MM2"
        );
        let row = |o: &mut String, what: &str, a: String, b: String, ratio: Option<f64>| {
            let ratio = ratio
                .map(|v| format!("{v:.2}"))
                .unwrap_or_else(|| "?".into());
            let _ = writeln!(o, "{what:<36} {a:>10} {b:>14} {ratio:>11}");
        };
        let opt = |v: Option<f64>| v.map(|v| format!("{v:.2}")).unwrap_or_else(|| "?".into());
        row(
            o,
            "throughput, first to last (MB/s)",
            format!("{:.1}", self.strait.mb_per_s()),
            format!("{:.1}", peer.transfer.mb_per_s()),
            Some(r.throughput),
        );
        row(
            o,
            "CPU-s per GB while moving data",
            opt(self.strait_moving_cpu_per_gb()),
            opt(peer.moving_cpu_per_gb()),
            r.moving_cpu_per_gb,
        );
        row(
            o,
            "peak RSS (MB)",
            format!("{:.1}", self.strait_process.peak_rss_bytes as f64 / 1e6),
            format!("{:.1}", peer.process.peak_rss_bytes as f64 / 1e6),
            Some(r.peak_rss),
        );
        row(
            o,
            "start to first record (s)",
            format!("{:.2}", self.strait_first_record_seconds()),
            format!("{:.2}", peer.first_record_seconds),
            Some(r.first_record),
        );
        let ms = |l: Option<&LatencyRun>, p99: bool| {
            l.map(|l| {
                if p99 {
                    l.latency.p99_ms
                } else {
                    l.latency.p50_ms
                }
            })
            .map(|v| v.to_string())
            .unwrap_or_else(|| "?".into())
        };
        if let Some(pl) = &peer.latency {
            let mine = self.latency.as_ref();
            row(
                o,
                &format!("latency p50 at {:.1} MB/s (ms)", pl.rate_mb_per_s),
                ms(mine, false),
                ms(Some(pl), false),
                r.latency_p50,
            );
            row(
                o,
                &format!("latency p99 at {:.1} MB/s (ms)", pl.rate_mb_per_s),
                ms(mine, true),
                ms(Some(pl), true),
                r.latency_p99,
            );
            let _ = writeln!(
                o,
                "MirrorMaker 2's latency run{}{}: {} records produced in {:.1} s, {} seen on the target, max {} ms over {} batches{}",
                if pl.fresh_brokers { " (fresh brokers)" } else { "" },
                warmup_text(pl.warmup_seconds),
                pl.produced.records,
                pl.produced.seconds,
                pl.records_seen,
                pl.latency.max_ms,
                pl.latency.count,
                pl.machine_busy
                    .map(|b| format!(", {:.0}% of the cores busy", b * 100.0))
                    .unwrap_or_default()
            );
        }
    }
}

/// One transfer: size, time, throughput.
fn transfer_line(o: &mut String, what: &str, t: &Transfer, extra: String) {
    let _ = writeln!(
        o,
        "{what:<34} {:>9.1} MB {:>7.2} s {:>8.1} MB/s {:>10.0} records/s{extra}",
        t.bytes as f64 / 1e6,
        t.seconds,
        t.mb_per_s(),
        t.records_per_s()
    );
}

/// One process's cost: CPU seconds, CPU per GB, peak memory.
fn cost_line(o: &mut String, what: &str, c: &ProcessCost, per_gb: f64, extra: String) {
    let _ = writeln!(
        o,
        "{what:<34} {:>7.2} CPU-s (user {:.2}, sys {:.2}) {:>6.2} CPU-s/GB  peak RSS {:.1} MB{extra}",
        c.cpu_seconds(),
        c.user_seconds,
        c.system_seconds,
        per_gb,
        c.peak_rss_bytes as f64 / 1e6
    );
}

fn ratio(a: f64, b: f64) -> f64 {
    if b > 0.0 {
        a / b
    } else {
        0.0
    }
}

/// ", sampled after a N s warm-up", or nothing without one.
fn warmup_text(seconds: f64) -> String {
    if seconds > 0.0 {
        format!(", sampled after a {seconds:.0} s warm-up")
    } else {
        String::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn report() -> Report {
        let t = |bytes, records, seconds| Transfer {
            bytes,
            records,
            seconds,
        };
        Report {
            settings: Settings {
                source: "a:1".into(),
                target: "b:2".into(),
                local_brokers: true,
                topic: "t".into(),
                remote_topic: "source.t".into(),
                ceiling_topic: "t-ceiling".into(),
                partitions: 16,
                record_bytes: 1000,
                key_spread: 100,
                codec: "none".into(),
                records_per_batch: 64,
                link_rtt_ms: None,
            },
            fill: t(2_000_000_000, 2_000_000, 20.0),
            ceiling: t(2_000_000_000, 2_000_000, 10.0),
            strait: t(2_000_000_000, 2_000_000, 12.5),
            strait_total_seconds: 13.0,
            target_records: 2_000_000,
            strait_process: ProcessCost {
                user_seconds: 0.5,
                system_seconds: 1.5,
                peak_rss_bytes: 50_000_000,
            },
            strait_moving_cpu_seconds: Some(1.6),
            brokers: Some(BrokerCpu {
                fill_source: Some(10.0),
                ceiling_target: Some(8.0),
                strait_source: Some(7.4),
                strait_target: Some(11.0),
                cores: 2,
            }),
            relay: t(2_000_000_000, 0, 1.0),
            relay_process: ProcessCost {
                user_seconds: 0.1,
                system_seconds: 0.7,
                peak_rss_bytes: 3_000_000,
            },
            relay_runs_cpu_per_gb: vec![0.45, 0.4],
            latency: None,
            idle: Some(Idle {
                seconds: 60.0,
                cpu_seconds: 0.3,
            }),
            peer: None,
        }
    }

    #[test]
    fn rates_and_ratios() {
        let r = report();
        assert_eq!(r.ceiling.mb_per_s(), 200.0);
        assert_eq!(r.strait.mb_per_s(), 160.0);
        assert_eq!(r.strait.records_per_s(), 160_000.0);
        assert!((r.ceiling_fraction() - 0.8).abs() < 1e-12);
        assert!((r.strait_cpu_per_gb() - 1.0).abs() < 1e-12);
        assert!((r.relay_cpu_per_gb() - 0.4).abs() < 1e-12);
        assert!((r.floor_multiple() - 2.5).abs() < 1e-12);
        assert!((r.strait_moving_cpu_per_gb().unwrap() - 0.8).abs() < 1e-12);
        assert!((r.moving_floor_multiple().unwrap() - 2.0).abs() < 1e-12);
        // (1.6 + 7.4 + 11.0) CPU-s over 2 cores x 12.5 s.
        assert!((r.machine_busy().unwrap() - 0.8).abs() < 1e-12);
    }

    #[test]
    fn json_carries_measurements_and_ratios() {
        let r = report();
        let v: serde_json::Value = serde_json::from_str(&r.to_json()).unwrap();
        assert_eq!(v["measured"]["strait"]["bytes"], 2_000_000_000u64);
        assert_eq!(v["ratios"]["floor_multiple"], r.floor_multiple());
        assert_eq!(v["ratios"]["ceiling_fraction"], r.ceiling_fraction());
    }

    #[test]
    fn zero_time_and_bytes_do_not_divide_by_zero() {
        let t = Transfer {
            bytes: 10,
            records: 1,
            seconds: 0.0,
        };
        assert_eq!(t.mb_per_s(), 0.0);
        let c = ProcessCost {
            user_seconds: 1.0,
            system_seconds: 0.0,
            peak_rss_bytes: 0,
        };
        assert_eq!(c.cpu_seconds_per_gb(0), 0.0);
    }

    #[test]
    fn render_shows_every_figure_and_ratio() {
        let mut r = report();
        let text = r.render();
        assert!(text.contains("= 0.80 of the ceiling"), "{text}");
        assert!(text.contains("1.00 CPU-s/GB"), "{text}");
        assert!(text.contains("0.40 CPU-s/GB"), "{text}");
        assert!(text.contains("= 2.50x the floor"), "{text}");
        assert!(text.contains("peak RSS 50.0 MB"), "{text}");
        assert!(text.contains("latency: not measured"), "{text}");
        assert!(
            text.contains("0.300 CPU-s in 60 s = 0.50% of a core"),
            "{text}"
        );
        assert!(text.contains("0.80 CPU-s/GB  = 2.00x the floor"), "{text}");
        assert!(
            text.contains(
                "fill: source 10.00 | ceiling: target 8.00 | strait: source 7.40, target 11.00"
            ),
            "{text}"
        );
        assert!(text.contains("80% of 2 cores busy"), "{text}");
        assert!(
            text.contains("the cheaper of 2 relays (0.45, 0.40 CPU-s/GB, before and after strait)"),
            "{text}"
        );
        r.latency = Some(LatencyRun {
            rate_mb_per_s: 80.0,
            produced: Transfer {
                bytes: 400_000_000,
                records: 400_000,
                seconds: 5.0,
            },
            records_seen: 400_000,
            latency: Summary {
                count: 6000,
                p50_ms: 4,
                p99_ms: 21,
                max_ms: 40,
            },
            source_latency: Some(Summary {
                count: 6000,
                p50_ms: 3,
                p99_ms: 17,
                max_ms: 30,
            }),
            machine_busy: Some(0.6),
            fresh_brokers: true,
            warmup_seconds: 5.0,
            direct: Some(DirectLatency {
                records: 400_000,
                latency: Summary {
                    count: 6000,
                    p50_ms: 2,
                    p99_ms: 9,
                    max_ms: 15,
                },
                machine_busy: Some(0.4),
            }),
        });
        let text = r.render();
        assert!(
            text.contains(
                "latency at 80.0 MB/s, fresh brokers, sampled after a 5 s warm-up (400000 records"
            ),
            "{text}"
        );
        assert!(
            text.contains("p50 4 ms, p99 21 ms, max 40 ms over 6000 batches"),
            "{text}"
        );
        assert!(text.contains("60% of the cores busy"), "{text}");
        assert!(
            text.contains("on the source, before strait       p50 3 ms, p99 17 ms, max 30 ms over 6000 batches"),
            "{text}"
        );
        assert!(
            text.contains("without strait (target only)       p50 2 ms, p99 9 ms, max 15 ms over 6000 batches, 40% of the cores busy"),
            "{text}"
        );
    }

    #[test]
    fn a_peer_is_shown_side_by_side() {
        let mut r = report();
        assert!(!r.render().contains("side by side"));
        assert!(r.ratios().peer.is_none());
        r.peer = Some(PeerRun {
            name: "MirrorMaker 2 (Apache Kafka 4.1.1)".into(),
            settings: "dedicated mode".into(),
            remote_topic: "mm2.t".into(),
            transfer: Transfer {
                bytes: 2_000_000_000,
                records: 2_000_000,
                seconds: 50.0,
            },
            first_record_seconds: 5.0,
            total_seconds: 55.0,
            target_records: 2_000_000,
            process: ProcessCost {
                user_seconds: 40.0,
                system_seconds: 4.0,
                peak_rss_bytes: 500_000_000,
            },
            moving_cpu_seconds: Some(32.0),
            latency: None,
        });
        // strait: 160 MB/s, 0.8 CPU-s/GB moving, 50 MB, 0.5 s to the first record.
        let p = r.ratios().peer.unwrap();
        assert!((p.throughput - 4.0).abs() < 1e-12);
        assert!((p.moving_cpu_per_gb.unwrap() - 0.05).abs() < 1e-12);
        assert!((p.peak_rss - 0.1).abs() < 1e-12);
        assert!((p.first_record - 0.1).abs() < 1e-12);
        let text = r.render();
        assert!(
            text.contains("side by side with MirrorMaker 2 (Apache Kafka 4.1.1)"),
            "{text}"
        );
        let row = |what: &str| {
            text.lines()
                .find(|l| l.starts_with(what))
                .unwrap_or_else(|| panic!("no {what} in {text}"))
                .split_whitespace()
                .rev()
                .take(3)
                .collect::<Vec<_>>()
        };
        assert_eq!(row("throughput, first to last"), ["4.00", "40.0", "160.0"]);
        assert_eq!(row("CPU-s per GB while moving"), ["0.05", "16.00", "0.80"]);
        assert_eq!(row("peak RSS"), ["0.10", "500.0", "50.0"]);
        assert_eq!(row("start to first record"), ["0.10", "5.00", "0.50"]);
        assert!(r.to_json().contains("\"first_record_seconds\": 5.0"));
        assert!(!text.contains("latency p99 at"), "{text}");

        // Both latencies measured: two rows more, strait's over the peer's.
        let run = |p50_ms, p99_ms| LatencyRun {
            rate_mb_per_s: 80.0,
            produced: r.strait,
            records_seen: 400_000,
            latency: Summary {
                count: 6000,
                p50_ms,
                p99_ms,
                max_ms: 900,
            },
            source_latency: None,
            machine_busy: None,
            fresh_brokers: true,
            warmup_seconds: 5.0,
            direct: None,
        };
        r.latency = Some(run(3, 10));
        if let Some(p) = r.peer.as_mut() {
            p.latency = Some(run(12, 400));
        }
        let text = r.render();
        let row = |what: &str| {
            text.lines()
                .find(|l| l.starts_with(what))
                .unwrap_or_else(|| panic!("no {what} in {text}"))
                .split_whitespace()
                .rev()
                .take(3)
                .collect::<Vec<_>>()
        };
        assert_eq!(row("latency p50 at 80.0 MB/s (ms)"), ["0.25", "12", "3"]);
        assert_eq!(row("latency p99 at 80.0 MB/s (ms)"), ["0.03", "400", "10"]);
        assert!(
            text.contains("MirrorMaker 2's latency run (fresh brokers), sampled after a 5 s warm-up: 2000000 records produced in 12.5 s, 400000 seen on the target, max 900 ms over 6000 batches"),
            "{text}"
        );
        assert!(
            r.to_json().contains("\"latency_p99\": 0.025"),
            "{}",
            r.to_json()
        );
    }
}
