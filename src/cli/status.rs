//! `strait status`: what a running instance is doing, from its REST API, as terminal tables;
//! with a progress line (records remaining, rate, ETA) while a flow catches up on a backlog.

use std::fmt::Write as _;
use std::path::PathBuf;
use std::time::Duration;

use strait::observe::api::{FlowDoc, StatusDoc};
use strait::observe::client;
use strait::observe::series::Sample;
use strait::{Error, Result};

/// Arguments of `strait status`.
#[derive(Debug, clap::Args)]
pub struct StatusArgs {
    /// Address of the running instance's HTTP server (its `http` setting).
    #[arg(long, conflicts_with = "config")]
    pub http: Option<String>,
    /// Read the address from this configuration's `http` setting.
    #[arg(long)]
    pub config: Option<PathBuf>,
    /// Print again every `--interval` seconds until interrupted.
    #[arg(long)]
    pub watch: bool,
    /// Seconds between prints with `--watch`.
    #[arg(long, default_value_t = 2)]
    pub interval: u64,
}

/// The default `http` address.
pub const DEFAULT_HTTP: &str = "127.0.0.1:8083";

/// Where to ask, and the bearer token if the configuration sets one.
fn address(args: &StatusArgs) -> Result<(String, Option<strait::secret::Secret>)> {
    if let Some(a) = &args.http {
        return Ok((a.clone(), None));
    }
    if let Some(path) = &args.config {
        let config = strait::config::load(path).map_err(|e| Error::invalid(e.to_string()))?;
        let h = config.http.ok_or_else(|| {
            Error::invalid(format!(
                "{}: no `http` setting, so the instance serves no status; pass --http",
                config.origin
            ))
        })?;
        if h.tls_cert.is_some() || h.tls_keystore.is_some() {
            return Err(Error::invalid(format!(
                "{}: the status endpoints use TLS, which `strait status` does not speak; use a TLS client such as `curl --cacert CERT https://{}/api/status`",
                config.origin, h.addr
            )));
        }
        return Ok((h.addr, h.token));
    }
    Ok((DEFAULT_HTTP.to_string(), None))
}

async fn fetch(addr: &str, token: Option<&strait::secret::Secret>) -> Result<StatusDoc> {
    let (code, body) = client::get_with(
        addr,
        "/api/status",
        Duration::from_secs(10),
        token.map(|t| t.expose()),
    )
    .await?;
    if code != 200 {
        return Err(Error::invalid(format!(
            "http://{addr}/api/status answered {code}: {}",
            String::from_utf8_lossy(&body)
        )));
    }
    serde_json::from_slice(&body).map_err(|e| {
        Error::invalid(format!(
            "http://{addr}/api/status: not a strait status document: {e}"
        ))
    })
}

/// Fetches and renders the status; with `--watch` prints until interrupted.
pub async fn run(args: &StatusArgs) -> Result<String> {
    let (addr, token) = address(args)?;
    if !args.watch {
        return Ok(render(&fetch(&addr, token.as_ref()).await?));
    }
    loop {
        match fetch(&addr, token.as_ref()).await {
            Ok(doc) => println!("{}", render(&doc)),
            Err(e) => println!("{e}\n"),
        }
        tokio::select! {
            _ = tokio::time::sleep(Duration::from_secs(args.interval.max(1))) => {}
            _ = tokio::signal::ctrl_c() => return Ok(String::new()),
        }
    }
}

/// Left-aligned columns separated by two spaces, under `headers`.
pub fn table(headers: &[&str], rows: &[Vec<String>]) -> String {
    let mut all = Vec::with_capacity(rows.len() + 1);
    all.push(headers.iter().map(|h| h.to_string()).collect());
    all.extend(rows.iter().cloned());
    super::table::format(&all)
}

/// A count with k/M suffixes.
pub fn count(v: f64) -> String {
    let a = v.abs();
    if a >= 1e9 {
        format!("{:.1}G", v / 1e9)
    } else if a >= 1e6 {
        format!("{:.1}M", v / 1e6)
    } else if a >= 1e4 {
        format!("{:.1}k", v / 1e3)
    } else if v.fract() == 0.0 {
        format!("{v:.0}")
    } else {
        format!("{v:.1}")
    }
}

fn bytes(v: u64) -> String {
    let v = v as f64;
    if v >= 1073741824.0 {
        format!("{:.1} GiB", v / 1073741824.0)
    } else if v >= 1048576.0 {
        format!("{:.1} MiB", v / 1048576.0)
    } else if v >= 1024.0 {
        format!("{:.1} KiB", v / 1024.0)
    } else {
        format!("{v:.0} B")
    }
}

fn millis(v: Option<f64>) -> String {
    match v {
        None => "-".into(),
        Some(v) if v >= 60_000.0 => format!("{:.1} min", v / 60_000.0),
        Some(v) if v >= 1000.0 => format!("{:.2} s", v / 1000.0),
        Some(v) => format!("{v:.0} ms"),
    }
}

/// A duration as `1h02m`, `3m05s` or `12s`.
pub fn eta(secs: f64) -> String {
    let s = secs.ceil().max(0.0) as u64;
    if s >= 3600 {
        format!("{}h{:02}m", s / 3600, s % 3600 / 60)
    } else if s >= 60 {
        format!("{}m{:02}s", s / 60, s % 60)
    } else {
        format!("{s}s")
    }
}

/// Catch-up progress: records remaining, drain rate (records/s), seconds to go.
#[derive(Debug, Clone, PartialEq)]
pub struct Progress {
    /// Records on the source not yet on the target.
    pub remaining: i64,
    /// How fast the lag went down over the last half minute.
    pub rate: f64,
    /// `remaining / rate`.
    pub eta_secs: f64,
}

/// Progress over the samples of the last 30 seconds: `None` unless the lag is above zero, went
/// down over that window, and went down in the latest interval (a stalled flow has no ETA).
pub fn progress(series: &[Sample]) -> Option<Progress> {
    let last = series.last()?;
    let previous = series.len().checked_sub(2).map(|i| &series[i])?;
    if last.lag <= 0 || last.lag >= previous.lag {
        return None;
    }
    let first = series
        .iter()
        .find(|s| s.t_ms >= last.t_ms - 30_000 && s.t_ms < last.t_ms)?;
    let seconds = (last.t_ms - first.t_ms) as f64 / 1000.0;
    let drained = first.lag - last.lag;
    if drained <= 0 || seconds <= 0.0 {
        return None;
    }
    let rate = drained as f64 / seconds;
    Some(Progress {
        remaining: last.lag,
        rate,
        eta_secs: last.lag as f64 / rate,
    })
}

fn state(f: &FlowDoc) -> String {
    let stopped_partitions: usize = f.topics.iter().map(|t| t.failed_partitions).sum();
    match (&f.stopped, f.source_connected, f.target_connected) {
        (Some(_), _, _) => "stopped".into(),
        _ if stopped_partitions > 0 => format!("{stopped_partitions} partition(s) stopped"),
        _ if f.paused.is_some() => "paused".into(),
        (None, true, true) => "connected".into(),
        (None, false, _) => match &f.source_problem {
            Some(p) => format!("connecting to source: {p}"),
            None => "connecting to source".into(),
        },
        (None, true, false) => match &f.target_problem {
            Some(p) => format!("connecting to target: {p}"),
            None => "connecting to target".into(),
        },
    }
}

fn ago(now_ms: i64, then_ms: i64) -> String {
    format!("{} ago", eta(((now_ms - then_ms).max(0)) as f64 / 1000.0))
}

/// The status document as terminal tables (ages relative to the server's clock).
pub fn render(doc: &StatusDoc) -> String {
    let mut out = format!(
        "strait {}, up {}, {}\n\n",
        doc.version,
        eta(doc.uptime_seconds as f64),
        if doc.ready { "ready" } else { "NOT READY" }
    );
    out.push_str(&flows_table(doc));
    for f in &doc.flows {
        if let Some(why) = &f.stopped {
            let _ = writeln!(out, "\n{}: {why}", f.name);
        }
        if let Some(p) = &f.paused {
            let why = p
                .reason
                .as_deref()
                .map(|r| format!(": {r}"))
                .unwrap_or_default();
            let _ = writeln!(
                out,
                "\n{}: paused {}{why} (nothing is copied until `strait resume`)",
                f.name,
                ago(doc.now_ms, p.changed_ms)
            );
        }
        if !f.topics.is_empty() {
            out.push('\n');
            topics_table(f, &mut out);
        }
        if !f.mirrors.is_empty() {
            out.push('\n');
            out.push_str(&mirrors_table(f));
        }
        if !f.members.is_empty() {
            out.push('\n');
            out.push_str(&members_table(f));
        }
        if !f.groups.is_empty() {
            out.push('\n');
            out.push_str(&groups_table(f, doc.now_ms));
        }
    }
    for f in &doc.flows {
        if let Some(p) = progress(&f.series) {
            let _ = writeln!(
                out,
                "\n{} catching up: records remaining {}, rate {}/s, ETA {}",
                f.name,
                p.remaining,
                count(p.rate.round()),
                eta(p.eta_secs)
            );
        }
    }
    out
}

/// One line per flow: state, rates, lag, latency, totals.
fn flows_table(doc: &StatusDoc) -> String {
    let rows: Vec<Vec<String>> = doc
        .flows
        .iter()
        .map(|f| {
            vec![
                f.name.clone(),
                state(f),
                count(f.records_per_second),
                bytes(f.bytes_per_second as u64) + "/s",
                count(f.lag as f64),
                millis(f.latency_p99_ms),
                millis(f.heartbeat_latency_ms),
                format!("{} rec, {}", count(f.records as f64), bytes(f.bytes)),
            ]
        })
        .collect();
    table(
        &[
            "FLOW",
            "STATE",
            "RECORDS/S",
            "BYTES/S",
            "LAG",
            "P99 LATENCY",
            "HEARTBEAT",
            "REPLICATED",
        ],
        &rows,
    )
}

/// One line per topic of the flow, then a line per stopped partition or lost records.
fn topics_table(f: &FlowDoc, out: &mut String) {
    let rows: Vec<Vec<String>> = f
        .topics
        .iter()
        .map(|t| {
            vec![
                t.source_topic.clone(),
                t.target_topic.clone(),
                t.partitions.len().to_string(),
                count(t.lag as f64),
                count(t.records_per_second),
                count(t.records as f64),
                if t.failed_partitions > 0 {
                    format!("{} partition(s) stopped", t.failed_partitions)
                } else if t.lag > 0 {
                    "catching up".into()
                } else {
                    "in sync".into()
                },
            ]
        })
        .collect();
    let head = format!("TOPIC ({})", f.name);
    out.push_str(&table(
        &[
            &head,
            "REMOTE TOPIC",
            "PARTITIONS",
            "LAG",
            "RECORDS/S",
            "REPLICATED",
            "STATE",
        ],
        &rows,
    ));
    for t in &f.topics {
        for p in &t.partitions {
            if let Some(why) = &p.failed {
                let _ = writeln!(out, "{}/{}: {why}", t.source_topic, p.partition);
            }
            if p.lost_records > 0 {
                let _ = writeln!(
                    out,
                    "{}/{}: {} source records were deleted by retention before they could be replicated",
                    t.source_topic, p.partition, p.lost_records
                );
            }
        }
    }
}

/// One line per mirror topic of the flow.
fn mirrors_table(f: &FlowDoc) -> String {
    let rows: Vec<Vec<String>> = f
        .mirrors
        .iter()
        .map(|m| {
            let list = |v: &[i32]| {
                if v.is_empty() {
                    "-".to_string()
                } else {
                    v.iter()
                        .map(|p| p.to_string())
                        .collect::<Vec<_>>()
                        .join(",")
                }
            };
            let mapped: Vec<i32> = m.mapped_partitions.iter().map(|x| x.0).collect();
            let stopped: Vec<i32> = m.stopped_partitions.iter().map(|x| x.0).collect();
            let state = if stopped.is_empty() {
                m.state.clone()
            } else {
                format!("stopped(partitions={})", list(&stopped))
            };
            let status = match &m.status_reason {
                Some(why) => format!("{}: {why}", m.status),
                None => m.status.clone(),
            };
            vec![
                m.topic.clone(),
                m.link.clone(),
                state,
                list(&m.identical_partitions),
                list(&mapped),
                list(&stopped),
                status,
            ]
        })
        .collect();
    let head = format!("MIRROR ({})", f.name);
    table(
        &[
            &head,
            "LINK",
            "STATE",
            "IDENTICAL",
            "MAPPED",
            "STOPPED",
            "STATUS",
        ],
        &rows,
    )
}

/// One line per member of the flow's group.
fn members_table(f: &FlowDoc) -> String {
    let rows: Vec<Vec<String>> = f
        .members
        .iter()
        .map(|m| {
            vec![
                format!(
                    "{}{}",
                    m.member_id,
                    if m.this_instance { " (this)" } else { "" }
                ),
                m.instance.clone(),
                m.partitions.to_string(),
                if m.duties { "yes" } else { "-" }.to_string(),
            ]
        })
        .collect();
    let head = format!("MEMBER ({})", f.name);
    table(&[&head, "INSTANCE", "PARTITIONS", "DUTIES"], &rows)
}

/// One line per checkpointed partition of each consumer group.
fn groups_table(f: &FlowDoc, now_ms: i64) -> String {
    let mut rows = Vec::new();
    for g in &f.groups {
        for p in &g.partitions {
            rows.push(vec![
                g.group.clone(),
                p.topic.clone(),
                p.partition.to_string(),
                p.upstream_offset.to_string(),
                p.downstream_offset.to_string(),
                ago(now_ms, p.updated_ms),
            ]);
        }
    }
    let head = format!("GROUP ({})", f.name);
    table(
        &[
            &head,
            "TOPIC",
            "PARTITION",
            "SOURCE OFFSET",
            "TARGET OFFSET",
            "LAST CHANGE",
        ],
        &rows,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// The documents are built as an embedder or `strait status` receives them: from JSON
    /// (their types are `#[non_exhaustive]`).
    fn sample(t_ms: i64, lag: i64) -> Sample {
        serde_json::from_value(json!({
            "t_ms": t_ms,
            "records_per_second": 0.0,
            "bytes_per_second": 0.0,
            "lag": lag,
            "latency_p99_ms": null,
            "latency_max_ms": null,
        }))
        .unwrap()
    }

    #[test]
    fn progress_only_while_lag_goes_down() {
        assert_eq!(progress(&[]), None);
        assert_eq!(progress(&[sample(0, 100)]), None);
        // Lag not going down: no ETA.
        assert_eq!(progress(&[sample(0, 100), sample(2_000, 100)]), None);
        assert_eq!(progress(&[sample(0, 100), sample(2_000, 0)]), None);
        // Went down over the window but stalled in the latest interval: no ETA.
        assert_eq!(
            progress(&[sample(0, 100), sample(2_000, 50), sample(4_000, 50)]),
            None
        );
        // Older than 30 s is ignored: from 10_000 (lag 9_000) to 40_000 (lag 3_000).
        let p = progress(&[
            sample(0, 10_000),
            sample(10_000, 9_000),
            sample(20_000, 7_000),
            sample(40_000, 3_000),
        ])
        .unwrap();
        assert_eq!(p.remaining, 3_000);
        assert_eq!(p.rate, 200.0);
        assert_eq!(p.eta_secs, 15.0);
    }

    #[test]
    fn renders_tables_and_progress() {
        let mut doc: StatusDoc = serde_json::from_str(
            r#"{
        "version": "0.1.0",
        "now_ms": 5000,
        "uptime_seconds": 75,
        "ready": true,
        "flows": [{
            "name": "a->b",
            "source": "a",
            "target": "b",
            "source_connected": true,
            "target_connected": true,
            "stopped": null,
            "records": 12345,
            "bytes": 2097152,
            "lag": 500,
            "records_per_second": 250.0,
            "bytes_per_second": 2048.0,
            "latency_p99_ms": 25.0,
            "latency_max_ms": 30.0,
            "heartbeat_latency_ms": 1500.0,
            "buffered_bytes": 0,
            "topics": [{
                "source_topic": "orders",
                "target_topic": "a.orders",
                "lag": 500,
                "records": 12345,
                "bytes": 2097152,
                "records_per_second": 250.0,
                "failed_partitions": 0,
                "partitions": [{
                    "partition": 0,
                    "source_next": 12345,
                    "target_next": 12345,
                    "source_end": 12845,
                    "lag": 500,
                    "records": 12345,
                    "bytes": 2097152,
                    "lost_records": 0,
                    "failed": null
                }]
            }],
            "groups": [{
                "group": "billing",
                "updated_ms": 1000,
                "partitions": [{
                    "topic": "a.orders",
                    "partition": 0,
                    "upstream_offset": 100,
                    "downstream_offset": 100,
                    "updated_ms": 1000
                }]
            }],
            "series": [],
            "mirrors": [],
            "members": []
        }]
        }"#,
        )
        .unwrap();
        doc.flows[0].series = vec![sample(0, 1_000), sample(2_000, 500)];
        let text = render(&doc);
        let want = "\
strait 0.1.0, up 1m15s, ready

FLOW  STATE      RECORDS/S  BYTES/S    LAG  P99 LATENCY  HEARTBEAT  REPLICATED
a->b  connected  250        2.0 KiB/s  500  25 ms        1.50 s     12.3k rec, 2.0 MiB

TOPIC (a->b)  REMOTE TOPIC  PARTITIONS  LAG  RECORDS/S  REPLICATED  STATE
orders        a.orders      1           500  250        12.3k       catching up

GROUP (a->b)  TOPIC     PARTITION  SOURCE OFFSET  TARGET OFFSET  LAST CHANGE
billing       a.orders  0          100            100            4s ago

a->b catching up: records remaining 500, rate 250/s, ETA 2s
";
        assert_eq!(text, want);
    }
}
