//! What replication is doing: metrics, per-flow facts and time series, the REST API's
//! documents, the HTTP server and its status page.
//!
//! - [`Observer`]: the shared handle the engine and the cluster clients report into (one-line
//!   calls per batch or request); builds the Prometheus exposition and the API documents.
//! - [`series`]: rates and latency over the last minutes, for the status page (sans-io).
//! - [`api`]: the JSON documents.
//! - [`http`]: routing and handlers of the HTTP server (`/`, `/metrics`, `/health`, `/ready`,
//!   `/api/...`).
//! - [`serve`]: its connections (HTTP/1.1 through hyper, timeouts, size limits, TLS).
//! - [`client`]: a tiny HTTP GET client, for `strait status`.

pub mod api;
pub mod client;
pub mod http;
pub mod series;
pub mod serve;
pub mod write_api;

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::metrics::{Histogram, Kind, Registry, LATENCY_BUCKETS};
use crate::replicate::status::FlowStatus;
use api::{CheckpointDoc, FlowDoc, GroupDoc, PartitionDoc, StatusDoc, TopicDoc};
use series::{Series, Totals, SAMPLES_KEPT};

/// Metric names (MirrorMaker 2 equivalents in the README).
pub mod names {
    /// Counter: records replicated {flow, source, target, topic, partition}.
    pub const RECORDS: &str = "strait_replication_records_total";
    /// Counter: batch bytes replicated {flow, source, target, topic, partition}.
    pub const BYTES: &str = "strait_replication_bytes_total";
    /// Histogram: produce acknowledgement time minus batch max timestamp {flow, source, target, topic}.
    pub const LATENCY: &str = "strait_replication_latency_seconds";
    /// Histogram: fetch time minus batch max timestamp {flow, source, target, topic}.
    pub const RECORD_AGE: &str = "strait_record_age_seconds";
    /// Histogram: replicated heartbeat acknowledged on the target minus its timestamp {flow}.
    pub const HEARTBEAT: &str = "strait_heartbeat_latency_seconds";
    /// Gauge: records on the source not yet on the target {flow, source, target, topic, partition}.
    pub const LAG: &str = "strait_partition_lag_records";
    /// Histogram: one checkpoint pass, reading source commits to checkpoints written {flow}.
    pub const CHECKPOINT: &str = "strait_checkpoint_latency_seconds";
    /// Histogram: request round trip {cluster, api}.
    pub const REQUEST: &str = "strait_request_latency_seconds";
    /// Counter: retried operations {cluster, kind}.
    pub const RETRIES: &str = "strait_retries_total";
    /// Counter: errors {flow, kind}.
    pub const ERRORS: &str = "strait_errors_total";
    /// Counter: source records deleted (by retention) before they were replicated
    /// {flow, topic}.
    pub const LOST: &str = "strait_source_records_lost_total";
    /// Gauge: batch bytes fetched and not yet acknowledged {flow}.
    pub const BUFFERED: &str = "strait_buffered_bytes";
    /// Gauge: 1 when the flow reached both clusters {flow}.
    pub const CONNECTED: &str = "strait_flow_connected";
    /// Gauge: 1 for each partition stopped until someone acts (a foreign write, a recreated
    /// source topic, ...) {flow, source, target, topic, partition}; no series while none is.
    pub const STOPPED: &str = "strait_partition_stopped";
    /// Gauge: 1 while an operator has the flow paused, else 0 {flow, source, target}.
    pub const PAUSED: &str = "strait_flow_paused";
    /// Gauge: 1 for a mirror topic's status, 0 for the others {flow, link, topic, status}
    /// (`ACTIVE`, `PAUSED`, `PENDING_STOPPED`, `STOPPED`, `FAILED`, `SOURCE_UNAVAILABLE`).
    pub const MIRROR_STATUS: &str = "strait_mirror_topic_status";
    /// Counter: batch bytes `recompress` saved (fetched size minus size sent) by flow.
    pub const RECOMPRESS_SAVED: &str = "strait_recompress_saved_bytes_total";
    /// Gauge: process resident memory.
    pub const RSS: &str = "process_resident_memory_bytes";
}

const H_RECORDS: &str = "Records replicated (acknowledged by the target).";
const H_BYTES: &str = "Record batch bytes replicated (acknowledged by the target).";
const H_LATENCY: &str =
    "Replication latency: produce acknowledgement time minus the batch's max timestamp.";
const H_AGE: &str = "Record age when fetched: fetch time minus the batch's max timestamp.";
const H_HEARTBEAT: &str =
    "End-to-end heartbeat latency: replicated heartbeat acknowledged on the target minus its timestamp.";
const H_LAG: &str = "Records on the source partition not yet on the target.";
const H_CHECKPOINT: &str =
    "Checkpoint pass: from reading the source group offsets to checkpoints written on the target.";
const H_REQUEST: &str = "Kafka request round trip by cluster and API.";
const H_RETRIES: &str = "Operations retried, by kind.";
const H_ERRORS: &str = "Errors, by kind.";
const H_LOST: &str =
    "Source records deleted (by retention) before they could be replicated; never on the target.";
const H_BUFFERED: &str = "Record batch bytes fetched and not yet acknowledged by the target.";
const H_CONNECTED: &str = "1 when the flow reached both its clusters.";
const H_STOPPED: &str = "1 for each partition stopped until someone acts (reason in /ready).";
const H_MIRROR_STATUS: &str =
    "1 for the mirror topic's status as Cluster Linking reports it, 0 for the others.";
const H_PAUSED: &str = "1 while an operator has the flow paused (strait pause, the write API).";
const H_RECOMPRESS_SAVED: &str =
    "Batch bytes saved by recompress: size as fetched minus size re-compressed.";
const H_RSS: &str = "Resident memory size in bytes.";

/// Which end of a flow.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    /// The source cluster.
    Source,
    /// The target cluster.
    Target,
}

#[derive(Debug, Clone)]
struct Checkpointed {
    upstream: i64,
    downstream: i64,
    updated_ms: i64,
}

#[derive(Debug)]
struct FlowFacts {
    source: Arc<str>,
    target: Arc<str>,
    source_connected: bool,
    target_connected: bool,
    /// Why the source (target) is not connected, when known.
    source_problem: Option<String>,
    target_problem: Option<String>,
    stopped: Option<String>,
    latency: Histogram,
    window_max: Option<f64>,
    heartbeat: Option<f64>,
    buffered: u64,
    checkpoints: BTreeMap<(String, String, i32), Checkpointed>,
    series: Series,
}

impl FlowFacts {
    fn new(source: &str, target: &str) -> FlowFacts {
        FlowFacts {
            source: Arc::from(source),
            target: Arc::from(target),
            source_connected: false,
            target_connected: false,
            source_problem: None,
            target_problem: None,
            stopped: None,
            latency: Histogram::new(LATENCY_BUCKETS),
            window_max: None,
            heartbeat: None,
            buffered: 0,
            checkpoints: BTreeMap::new(),
            series: Series::new(SAMPLES_KEPT),
        }
    }
}

/// The shared observation handle: a metrics registry plus per-flow facts. Cheap calls, one
/// short lock each; share it behind an `Arc`.
#[derive(Debug)]
pub struct Observer {
    registry: Registry,
    flows: Mutex<BTreeMap<String, FlowFacts>>,
    started: Instant,
}

impl Default for Observer {
    fn default() -> Self {
        Observer::new()
    }
}

fn secs_since_ms(now_ms: i64, then_ms: i64) -> f64 {
    (now_ms - then_ms).max(0) as f64 / 1000.0
}

impl Observer {
    /// An observer with every metric family declared.
    pub fn new() -> Observer {
        let registry = Registry::new();
        for (name, help, kind) in [
            (names::RECORDS, H_RECORDS, Kind::Counter),
            (names::BYTES, H_BYTES, Kind::Counter),
            (names::LATENCY, H_LATENCY, Kind::Histogram),
            (names::RECORD_AGE, H_AGE, Kind::Histogram),
            (names::HEARTBEAT, H_HEARTBEAT, Kind::Histogram),
            (names::LAG, H_LAG, Kind::Gauge),
            (names::CHECKPOINT, H_CHECKPOINT, Kind::Histogram),
            (names::REQUEST, H_REQUEST, Kind::Histogram),
            (names::RETRIES, H_RETRIES, Kind::Counter),
            (names::ERRORS, H_ERRORS, Kind::Counter),
            (names::LOST, H_LOST, Kind::Counter),
            (names::BUFFERED, H_BUFFERED, Kind::Gauge),
            (names::CONNECTED, H_CONNECTED, Kind::Gauge),
            (names::STOPPED, H_STOPPED, Kind::Gauge),
            (names::RECOMPRESS_SAVED, H_RECOMPRESS_SAVED, Kind::Counter),
        ] {
            registry.describe(name, help, kind);
        }
        Observer {
            registry,
            flows: Mutex::new(BTreeMap::new()),
            started: Instant::now(),
        }
    }

    /// The metrics registry.
    pub fn registry(&self) -> &Registry {
        &self.registry
    }

    fn facts<R>(&self, f: impl FnOnce(&mut BTreeMap<String, FlowFacts>) -> R) -> R {
        let mut flows = self.flows.lock().unwrap_or_else(|p| p.into_inner());
        f(&mut flows)
    }

    fn ends(&self, flow: &str) -> (Arc<str>, Arc<str>) {
        self.facts(|f| {
            f.get(flow)
                .map(|x| (x.source.clone(), x.target.clone()))
                .unwrap_or_else(|| (Arc::from(""), Arc::from("")))
        })
    }

    /// Declares a flow (before it connects).
    pub fn register_flow(&self, flow: &str, source: &str, target: &str) {
        self.facts(|f| {
            f.entry(flow.to_string())
                .or_insert_with(|| FlowFacts::new(source, target));
        });
        self.registry
            .gauge_set(names::CONNECTED, H_CONNECTED, &[("flow", flow)], 0.0);
    }

    /// A flow reached one of its clusters (`up`), or a request to it failed. Cheap when nothing
    /// changes, so flows may call it on every round.
    pub fn connected(&self, flow: &str, side: Side, up: bool) {
        self.set_connected(flow, side, up, None);
    }

    /// A flow's end could not be reached or used because of `problem` (one line, for `/ready`
    /// and the API until the end answers again).
    pub fn disconnected(&self, flow: &str, side: Side, problem: String) {
        self.set_connected(flow, side, false, Some(problem));
    }

    fn set_connected(&self, flow: &str, side: Side, up: bool, problem: Option<String>) {
        let changed = self.facts(|f| {
            let x = f.get_mut(flow)?;
            let (slot, why) = match side {
                Side::Source => (&mut x.source_connected, &mut x.source_problem),
                Side::Target => (&mut x.target_connected, &mut x.target_problem),
            };
            if up {
                *why = None;
            } else if problem.is_some() {
                *why = problem;
            }
            if *slot == up {
                return None;
            }
            *slot = up;
            Some(x.source_connected && x.target_connected)
        });
        if let Some(both) = changed {
            let v = if both { 1.0 } else { 0.0 };
            self.registry
                .gauge_set(names::CONNECTED, H_CONNECTED, &[("flow", flow)], v);
        }
    }

    /// A flow's task ended; `why` is its error, if any.
    pub fn stopped(&self, flow: &str, why: Option<String>) {
        self.facts(|f| {
            if let Some(x) = f.get_mut(flow) {
                x.stopped = Some(why.unwrap_or_else(|| "stopped".to_string()));
                x.source_connected = false;
                x.target_connected = false;
            }
        });
        self.registry
            .gauge_set(names::CONNECTED, H_CONNECTED, &[("flow", flow)], 0.0);
    }

    /// Every registered flow reached both clusters and none stopped (partitions stopped
    /// inside a running flow are in the flows' statuses: see [`Observer::status_doc`]).
    pub fn ready(&self) -> bool {
        self.facts(|f| {
            !f.is_empty()
                && f.values()
                    .all(|x| x.source_connected && x.target_connected && x.stopped.is_none())
        })
    }

    /// A batch fetched from the source whose newest record has timestamp `max_timestamp_ms`.
    pub fn batch_fetched(&self, flow: &str, topic: &str, max_timestamp_ms: i64, now_ms: i64) {
        if max_timestamp_ms <= 0 {
            return;
        }
        let (source, target) = self.ends(flow);
        self.registry.observe(
            names::RECORD_AGE,
            H_AGE,
            LATENCY_BUCKETS,
            &[
                ("flow", flow),
                ("source", &source),
                ("target", &target),
                ("topic", topic),
            ],
            secs_since_ms(now_ms, max_timestamp_ms),
        );
    }

    /// A batch acknowledged by the target: `records` records, `bytes` bytes, newest record
    /// timestamp `max_timestamp_ms` (skipped when not positive). Batches of heartbeats topics
    /// also give the flow's end-to-end heartbeat latency.
    #[allow(clippy::too_many_arguments)]
    pub fn batch_acked(
        &self,
        flow: &str,
        topic: &str,
        partition: i32,
        records: u64,
        bytes: u64,
        max_timestamp_ms: i64,
        heartbeat: bool,
        now_ms: i64,
    ) {
        let latency = (max_timestamp_ms > 0).then(|| secs_since_ms(now_ms, max_timestamp_ms));
        let (source, target) = self.facts(|f| match f.get_mut(flow) {
            Some(x) => {
                if let Some(l) = latency {
                    x.latency.observe(l);
                    x.window_max = Some(x.window_max.map_or(l, |m| m.max(l)));
                    if heartbeat {
                        x.heartbeat = Some(l);
                    }
                }
                (x.source.clone(), x.target.clone())
            }
            None => (Arc::from(""), Arc::from("")),
        });
        let p = partition.to_string();
        let labels = [
            ("flow", flow),
            ("source", &source),
            ("target", &target),
            ("topic", topic),
            ("partition", p.as_str()),
        ];
        self.registry
            .counter_add(names::RECORDS, H_RECORDS, &labels, records);
        self.registry
            .counter_add(names::BYTES, H_BYTES, &labels, bytes);
        if let Some(l) = latency {
            self.registry
                .observe(names::LATENCY, H_LATENCY, LATENCY_BUCKETS, &labels[..4], l);
            if heartbeat {
                self.registry.observe(
                    names::HEARTBEAT,
                    H_HEARTBEAT,
                    LATENCY_BUCKETS,
                    &labels[..3],
                    l,
                );
            }
        }
    }

    /// One Kafka request's round trip.
    pub fn request(&self, cluster: &str, api: &str, elapsed: Duration) {
        self.registry.observe(
            names::REQUEST,
            H_REQUEST,
            LATENCY_BUCKETS,
            &[("cluster", cluster), ("api", api)],
            elapsed.as_secs_f64(),
        );
    }

    /// An operation retried after a retriable error.
    pub fn retry(&self, cluster: &str, kind: &str) {
        self.registry.counter_add(
            names::RETRIES,
            H_RETRIES,
            &[("cluster", cluster), ("kind", kind)],
            1,
        );
    }

    /// `records` source records of `topic` were deleted before the flow could replicate them.
    pub fn records_lost(&self, flow: &str, topic: &str, records: u64) {
        self.registry.counter_add(
            names::LOST,
            H_LOST,
            &[("flow", flow), ("topic", topic)],
            records,
        );
    }

    /// A batch of a flow re-compressed (`recompress`) from `before` to `after` bytes.
    pub fn recompressed(&self, flow: &str, before: u64, after: u64) {
        self.registry.counter_add(
            names::RECOMPRESS_SAVED,
            H_RECOMPRESS_SAVED,
            &[("flow", flow)],
            before.saturating_sub(after),
        );
    }

    /// An error in a flow.
    pub fn error(&self, flow: &str, kind: &str) {
        self.registry.counter_add(
            names::ERRORS,
            H_ERRORS,
            &[("flow", flow), ("kind", kind)],
            1,
        );
    }

    /// Batch bytes a flow holds (fetched, not yet acknowledged).
    pub fn buffered(&self, flow: &str, bytes: u64) {
        self.facts(|f| {
            if let Some(x) = f.get_mut(flow) {
                x.buffered = bytes;
            }
        });
        self.registry
            .gauge_set(names::BUFFERED, H_BUFFERED, &[("flow", flow)], bytes as f64);
    }

    /// A checkpoint pass ended after `elapsed`; `checkpointed` is the last checkpoint per
    /// (group, target topic, partition): (upstream, downstream).
    pub fn checkpoint_pass(
        &self,
        flow: &str,
        elapsed: Duration,
        checkpointed: &HashMap<(String, String, i32), (i64, i64)>,
        now_ms: i64,
    ) {
        self.registry.observe(
            names::CHECKPOINT,
            H_CHECKPOINT,
            LATENCY_BUCKETS,
            &[("flow", flow)],
            elapsed.as_secs_f64(),
        );
        self.facts(|f| {
            let Some(x) = f.get_mut(flow) else {
                return;
            };
            for (k, (up, down)) in checkpointed {
                let e = x.checkpoints.entry(k.clone()).or_insert(Checkpointed {
                    upstream: *up,
                    downstream: *down,
                    updated_ms: now_ms,
                });
                if (e.upstream, e.downstream) != (*up, *down) {
                    *e = Checkpointed {
                        upstream: *up,
                        downstream: *down,
                        updated_ms: now_ms,
                    };
                }
            }
        });
    }

    /// How many samples a flow's series holds (tests).
    #[cfg(test)]
    pub(crate) fn series_len(&self, flow: &str) -> usize {
        self.facts(|f| f.get(flow).map_or(0, |x| x.series.samples().count()))
    }

    /// Takes one sample of every flow's series from their statuses.
    pub fn sample(&self, statuses: &[FlowStatus], now_ms: i64) {
        self.facts(|f| {
            for s in statuses {
                let Some(x) = f.get_mut(&s.name) else {
                    continue;
                };
                let mut per_topic: BTreeMap<String, u64> = BTreeMap::new();
                for p in &s.partitions {
                    *per_topic.entry(p.source_topic.clone()).or_default() += p.records;
                }
                let totals = Totals {
                    t_ms: now_ms,
                    records: s.partitions.iter().map(|p| p.records).sum(),
                    bytes: s.partitions.iter().map(|p| p.bytes).sum(),
                    per_topic,
                    latency: x.latency.clone(),
                };
                let lag = s.partitions.iter().map(|p| p.lag()).sum();
                let max = x.window_max.take();
                x.series.push(totals, lag, max);
            }
        });
    }

    /// The Prometheus exposition: lag gauges from `statuses`, the process RSS when known, and
    /// everything recorded.
    pub fn exposition(&self, statuses: &[FlowStatus], rss_bytes: Option<u64>) -> String {
        self.refresh_gauges(statuses, rss_bytes);
        self.registry.encode()
    }

    /// The series of [`Observer::exposition`], typed.
    pub fn samples(
        &self,
        statuses: &[FlowStatus],
        rss_bytes: Option<u64>,
    ) -> Vec<crate::metrics::MetricSample> {
        self.refresh_gauges(statuses, rss_bytes);
        self.registry.samples()
    }

    /// Sets the lag gauges from `statuses` and the process RSS when known.
    fn refresh_gauges(&self, statuses: &[FlowStatus], rss_bytes: Option<u64>) {
        for s in statuses {
            let (source, target) = self.ends(&s.name);
            self.registry
                .remove_matching(names::LAG, &[("flow", &s.name)]);
            self.registry
                .remove_matching(names::STOPPED, &[("flow", &s.name)]);
            self.registry
                .remove_matching(names::MIRROR_STATUS, &[("flow", &s.name)]);
            for m in &s.mirrors {
                for kind in crate::mirror::MirrorStatusKind::ALL {
                    let labels = [
                        ("flow", s.name.as_str()),
                        ("link", &m.link),
                        ("topic", &m.topic),
                        ("status", kind.as_str()),
                    ];
                    let on = if m.status == kind.as_str() { 1.0 } else { 0.0 };
                    self.registry
                        .gauge_set(names::MIRROR_STATUS, H_MIRROR_STATUS, &labels, on);
                }
            }
            self.registry.gauge_set(
                names::PAUSED,
                H_PAUSED,
                &[("flow", &s.name), ("source", &source), ("target", &target)],
                if s.paused.is_some() { 1.0 } else { 0.0 },
            );
            for p in &s.partitions {
                let part = p.partition.to_string();
                let labels = [
                    ("flow", s.name.as_str()),
                    ("source", &source),
                    ("target", &target),
                    ("topic", &p.source_topic),
                    ("partition", &part),
                ];
                self.registry
                    .gauge_set(names::LAG, H_LAG, &labels, p.lag() as f64);
                if p.failed.is_some() {
                    self.registry
                        .gauge_set(names::STOPPED, H_STOPPED, &labels, 1.0);
                }
            }
        }
        if let Some(rss) = rss_bytes {
            self.registry.gauge_set(names::RSS, H_RSS, &[], rss as f64);
        }
    }

    /// The `/api/status` document; `series` includes the samples of the last minutes.
    pub fn status_doc(&self, statuses: &[FlowStatus], now_ms: i64, series: bool) -> StatusDoc {
        // A stopped partition moves no data until someone acts: not ready.
        let ready = self.ready()
            && statuses
                .iter()
                .all(|s| s.partitions.iter().all(|p| p.failed.is_none()));
        let flows = self.facts(|f| {
            statuses
                .iter()
                .map(|s| flow_doc(s, f.get(&s.name), series))
                .collect()
        });
        StatusDoc {
            version: env!("CARGO_PKG_VERSION").to_string(),
            now_ms,
            uptime_seconds: self.started.elapsed().as_secs(),
            ready,
            flows,
        }
    }
}

fn flow_doc(s: &FlowStatus, facts: Option<&FlowFacts>, with_series: bool) -> FlowDoc {
    let mut topics: Vec<TopicDoc> = Vec::new();
    for p in &s.partitions {
        let doc = PartitionDoc {
            partition: p.partition,
            source_next: p.source_next,
            target_next: p.target_next,
            source_end: p.source_end,
            lag: p.lag(),
            records: p.records,
            bytes: p.bytes,
            lost_records: p.lost_records,
            failed: p.failed.clone(),
        };
        let t = match topics.iter_mut().find(|t| t.source_topic == p.source_topic) {
            Some(t) => t,
            None => {
                topics.push(TopicDoc {
                    source_topic: p.source_topic.clone(),
                    target_topic: p.target_topic.clone(),
                    lag: 0,
                    records: 0,
                    bytes: 0,
                    records_per_second: facts
                        .map(|x| x.series.topic_rate(&p.source_topic))
                        .unwrap_or(0.0),
                    failed_partitions: 0,
                    partitions: Vec::new(),
                });
                let last = topics.len() - 1;
                &mut topics[last]
            }
        };
        t.lag += doc.lag;
        t.records += doc.records;
        t.bytes += doc.bytes;
        t.failed_partitions += usize::from(doc.failed.is_some());
        t.partitions.push(doc);
    }
    let mut groups: Vec<GroupDoc> = Vec::new();
    if let Some(x) = facts {
        for ((group, topic, partition), c) in &x.checkpoints {
            let cp = CheckpointDoc {
                topic: topic.clone(),
                partition: *partition,
                upstream_offset: c.upstream,
                downstream_offset: c.downstream,
                updated_ms: c.updated_ms,
            };
            match groups.last_mut().filter(|g| &g.group == group) {
                Some(g) => {
                    g.updated_ms = g.updated_ms.max(c.updated_ms);
                    g.partitions.push(cp);
                }
                None => groups.push(GroupDoc {
                    group: group.clone(),
                    updated_ms: c.updated_ms,
                    partitions: vec![cp],
                }),
            }
        }
    }
    let latest = facts.and_then(|x| x.series.latest());
    let (source, target) = match facts {
        Some(x) => (x.source.to_string(), x.target.to_string()),
        None => match s.name.split_once("->") {
            Some((a, b)) => (a.to_string(), b.to_string()),
            None => (s.name.clone(), String::new()),
        },
    };
    FlowDoc {
        name: s.name.clone(),
        source,
        target,
        source_connected: facts.is_some_and(|x| x.source_connected),
        target_connected: facts.is_some_and(|x| x.target_connected),
        source_problem: facts.and_then(|x| x.source_problem.clone()),
        target_problem: facts.and_then(|x| x.target_problem.clone()),
        stopped: facts.and_then(|x| x.stopped.clone()),
        paused: s.paused.clone(),
        records: s.partitions.iter().map(|p| p.records).sum(),
        bytes: s.partitions.iter().map(|p| p.bytes).sum(),
        lag: s.partitions.iter().map(|p| p.lag()).sum(),
        records_per_second: latest.map_or(0.0, |l| l.records_per_second),
        bytes_per_second: latest.map_or(0.0, |l| l.bytes_per_second),
        latency_p99_ms: latest.and_then(|l| l.latency_p99_ms),
        latency_max_ms: latest.and_then(|l| l.latency_max_ms),
        heartbeat_latency_ms: facts.and_then(|x| x.heartbeat).map(|s| s * 1000.0),
        buffered_bytes: facts.map_or(0, |x| x.buffered),
        topics,
        groups,
        mirrors: s.mirrors.clone(),
        members: s.members.clone(),
        series: match (with_series, facts) {
            (true, Some(x)) => x.series.samples().cloned().collect(),
            _ => Vec::new(),
        },
    }
}

/// This process's resident memory in bytes (Linux; `None` elsewhere).
pub fn process_rss() -> Option<u64> {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| parse_vm_rss(&s))
}

/// Resident memory in bytes from the text of `/proc/self/status` (its `VmRSS:` line, in kB).
pub fn parse_vm_rss(status: &str) -> Option<u64> {
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    let mut it = line["VmRSS:".len()..].split_whitespace();
    let n: u64 = it.next()?.parse().ok()?;
    match it.next() {
        Some("kB") | None => Some(n * 1024),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::replicate::status::PartitionStatus;

    fn status(records: u64, source_next: i64, source_end: i64) -> FlowStatus {
        FlowStatus {
            name: "a->b".into(),
            mirrors: Vec::new(),
            members: Vec::new(),
            paused: None,
            partitions: vec![PartitionStatus {
                source_topic: "orders".into(),
                target_topic: "a.orders".into(),
                partition: 0,
                source_next,
                target_next: source_next,
                source_end,
                records,
                bytes: records * 100,
                lost_records: 0,
                failed: None,
            }],
        }
    }

    #[test]
    fn a_stopped_partition_has_a_gauge_until_it_runs_again() {
        let o = Observer::new();
        o.register_flow("a->b", "a", "b");
        let mut st = status(0, 40, 50);
        st.partitions[0].failed = Some("foreign_write".into());
        let text = o.exposition(std::slice::from_ref(&st), None);
        assert!(text.contains(
            "strait_partition_stopped{flow=\"a->b\",source=\"a\",target=\"b\",topic=\"orders\",partition=\"0\"} 1\n"
        ));
        st.partitions[0].failed = None;
        let text = o.exposition(&[st], None);
        assert!(text.contains("# TYPE strait_partition_stopped gauge\n"));
        assert!(!text.contains("strait_partition_stopped{"));
    }

    #[test]
    fn readiness_follows_both_ends() {
        let o = Observer::new();
        assert!(!o.ready());
        o.register_flow("a->b", "a", "b");
        o.connected("a->b", Side::Source, true);
        assert!(!o.ready());
        o.connected("a->b", Side::Target, true);
        assert!(o.ready());
        assert!(o
            .exposition(&[], None)
            .contains("strait_flow_connected{flow=\"a->b\"} 1\n"));
        // A failed request to the target: not ready until it answers again.
        o.connected("a->b", Side::Target, false);
        assert!(!o.ready());
        assert!(o
            .exposition(&[], None)
            .contains("strait_flow_connected{flow=\"a->b\"} 0\n"));
        o.connected("a->b", Side::Target, true);
        assert!(o.ready());
        // A reason for a lost end shows in the documents until the end answers again.
        o.disconnected(
            "a->b",
            Side::Source,
            "cannot obtain credentials: 401".into(),
        );
        assert!(!o.ready());
        let problem = |o: &Observer| {
            let st = FlowStatus {
                name: "a->b".into(),
                ..Default::default()
            };
            o.status_doc(&[st], 0, false).flows[0]
                .source_problem
                .clone()
        };
        assert_eq!(
            problem(&o).as_deref(),
            Some("cannot obtain credentials: 401")
        );
        o.connected("a->b", Side::Source, true);
        assert!(o.ready());
        assert_eq!(problem(&o), None);
        o.stopped("a->b", Some("boom".into()));
        assert!(!o.ready());
        o.connected("a->b", Side::Source, true);
        o.connected("a->b", Side::Target, true);
        assert!(!o.ready(), "a stopped flow stays not ready");
    }

    #[test]
    fn batches_feed_counters_histograms_and_the_documents() {
        let o = Observer::new();
        o.register_flow("a->b", "a", "b");
        o.batch_fetched("a->b", "orders", 9_000, 10_000);
        o.batch_acked("a->b", "orders", 0, 10, 1000, 9_990, false, 10_000);
        o.batch_acked("a->b", "heartbeats", 0, 1, 50, 9_500, true, 10_000);
        o.batch_acked("a->b", "orders", 0, 5, 500, 0, false, 10_000);
        let text = o.exposition(&[status(15, 40, 50)], Some(4096));
        let l = "flow=\"a->b\",source=\"a\",target=\"b\",topic=\"orders\"";
        assert!(text.contains(&format!(
            "strait_replication_records_total{{{l},partition=\"0\"}} 15\n"
        )));
        assert!(text.contains(&format!(
            "strait_replication_bytes_total{{{l},partition=\"0\"}} 1500\n"
        )));
        // Two orders batches, one without a timestamp: one latency observation of 10 ms.
        assert!(text.contains(&format!(
            "strait_replication_latency_seconds_count{{{l}}} 1\n"
        )));
        assert!(text.contains(&format!(
            "strait_replication_latency_seconds_bucket{{{l},le=\"0.01\"}} 1\n"
        )));
        assert!(text.contains(&format!("strait_record_age_seconds_count{{{l}}} 1\n")));
        assert!(text.contains(
            "strait_heartbeat_latency_seconds_sum{flow=\"a->b\",source=\"a\",target=\"b\"} 0.5\n"
        ));
        assert!(text.contains(&format!(
            "strait_partition_lag_records{{{l},partition=\"0\"}} 10\n"
        )));
        assert!(text.contains("process_resident_memory_bytes 4096\n"));

        o.sample(&[status(0, 0, 50)], 1_000);
        o.batch_acked("a->b", "orders", 0, 100, 100, 2_950, false, 3_000);
        o.sample(&[status(100, 40, 50)], 3_000);
        let doc = o.status_doc(&[status(100, 40, 50)], 3_000, true);
        let f = &doc.flows[0];
        assert_eq!((f.source.as_str(), f.target.as_str()), ("a", "b"));
        assert_eq!(f.lag, 10);
        assert_eq!(f.records_per_second, 50.0);
        assert_eq!(f.series.len(), 1);
        assert_eq!(f.latency_max_ms, Some(50.0));
        assert_eq!(f.latency_p99_ms, Some(49.75));
        assert_eq!(f.heartbeat_latency_ms, Some(500.0));
        assert_eq!(f.topics[0].records_per_second, 50.0);
        assert_eq!(f.topics[0].partitions[0].lag, 10);
        let plain = o.status_doc(&[status(100, 40, 50)], 3_000, false);
        assert!(plain.flows[0].series.is_empty());
    }

    #[test]
    fn checkpoints_group_by_group_and_keep_change_time() {
        let o = Observer::new();
        o.register_flow("a->b", "a", "b");
        let mut c = HashMap::new();
        c.insert(("g1".to_string(), "a.orders".to_string(), 0), (10, 8));
        c.insert(("g1".to_string(), "a.orders".to_string(), 1), (5, 5));
        c.insert(("g2".to_string(), "a.orders".to_string(), 0), (1, 1));
        o.checkpoint_pass("a->b", Duration::from_millis(20), &c, 1_000);
        c.insert(("g1".to_string(), "a.orders".to_string(), 1), (7, 7));
        o.checkpoint_pass("a->b", Duration::from_millis(20), &c, 2_000);
        let doc = o.status_doc(&[status(0, 0, 0)], 2_000, false);
        let g = &doc.flows[0].groups;
        assert_eq!(g.len(), 2);
        assert_eq!(g[0].group, "g1");
        assert_eq!(g[0].updated_ms, 2_000);
        assert_eq!(g[0].partitions[0].updated_ms, 1_000);
        assert_eq!(g[0].partitions[1].upstream_offset, 7);
        assert_eq!(g[1].updated_ms, 1_000);
        assert!(o
            .exposition(&[], None)
            .contains("strait_checkpoint_latency_seconds_count{flow=\"a->b\"} 2\n"));
    }

    #[test]
    fn vm_rss_parses() {
        let s = "Name:\tstrait\nVmRSS:\t   12345 kB\nThreads: 4\n";
        assert_eq!(parse_vm_rss(s), Some(12345 * 1024));
        assert_eq!(parse_vm_rss("Name: x\n"), None);
    }
}
