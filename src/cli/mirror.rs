//! `strait mirror ...`: Cluster Linking style mirror topics. Commands and settings are stored in
//! the destination cluster; a running `strait run` applies them within a second, and the
//! commands wait for it to confirm.

use std::path::PathBuf;
use std::time::Duration;

use strait::client::{Cluster, FetchRead, EARLIEST, LATEST};
use strait::config::{Config, FlowConfig};
use strait::mirror::{lag, MirrorAction, MirrorPartitionStatus, MirrorRecord, MirrorState};
use strait::offsets::OffsetMap;
use strait::records::batch::{split, Entry};
use strait::replicate::admin;
use strait::replicate::mirrors::{self, ControlView};
use strait::replicate::store;
use strait::{Error, Result};

/// Arguments of `strait mirror`.
#[derive(Debug, clap::Args)]
pub struct MirrorArgs {
    #[command(subcommand)]
    pub command: MirrorCommandArgs,
}

/// Which link and topic a command is about.
#[derive(Debug, clap::Args)]
pub struct Target {
    /// Configuration file (TOML or mm2.properties).
    #[arg(long)]
    pub config: PathBuf,
    /// Link name (a mirror flow's `link`, or its `source->target` name); optional when the
    /// configuration has one mirror flow.
    #[arg(long)]
    pub link: Option<String>,
}

/// A command on one mirror topic.
#[derive(Debug, clap::Args)]
pub struct TopicArgs {
    #[command(flatten)]
    pub target: Target,
    /// Mirror topic: its name on the destination (or its source topic's name).
    #[arg(long)]
    pub topic: String,
    /// Seconds to wait for a running `strait run` to carry the command out.
    #[arg(long, default_value_t = 60)]
    pub timeout: u64,
}

/// `strait mirror` subcommands.
#[derive(Debug, clap::Subcommand)]
pub enum MirrorCommandArgs {
    /// Lists the links and their mirror topics.
    List(Target),
    /// Shows one mirror topic: state, offsets mode per partition, consumer offset sync.
    Describe {
        #[command(flatten)]
        target: Target,
        /// Mirror topic: its name on the destination (or its source topic's name).
        #[arg(long)]
        topic: String,
    },
    /// Per partition: source log start/end, destination log end, lag, caught up.
    Status {
        #[command(flatten)]
        target: Target,
        /// Only this topic.
        #[arg(long)]
        topic: Option<String>,
    },
    /// Suspends mirroring of a topic.
    Pause(TopicArgs),
    /// Continues mirroring of a paused topic.
    Resume(TopicArgs),
    /// Waits until the topic caught up and consumer offsets are synced, then stops mirroring:
    /// the topic becomes an ordinary writable topic.
    Promote(TopicArgs),
    /// Stops mirroring at once (for when the source is gone).
    Failover(TopicArgs),
    /// Waits until the topic caught up and consumer offsets are synced, then reverses the
    /// mirror: the topic becomes writable here and its source topic a mirror of it, mirrored by
    /// the mirror flow in the other direction from where this one stopped (planned failover).
    #[command(name = "reverse-and-start")]
    ReverseAndStart(TopicArgs),
    /// As `reverse-and-start`, with the mirror in the other direction paused.
    #[command(name = "reverse-and-pause")]
    ReverseAndPause(TopicArgs),
    /// After a failover: the topic on the cluster it was failed over from (the link's
    /// destination) becomes a mirror again; records it got past the failover point are cut,
    /// reported and saved, and its consumer groups restored up to that point.
    #[command(name = "truncate-and-restore")]
    TruncateAndRestore(super::mirror_restore::RestoreArgs),
    /// Changes a link's consumer offset sync while it runs.
    Configure {
        #[command(flatten)]
        target: Target,
        /// Cluster Linking JSON, e.g.
        /// `{"groupFilters":[{"name":"*","patternType":"LITERAL","filterType":"INCLUDE"}]}`.
        #[arg(long)]
        consumer_offset_group_filters: Option<String>,
        /// Sync interval in milliseconds.
        #[arg(long)]
        consumer_offset_sync_ms: Option<u64>,
        /// Turn consumer offset sync on or off.
        #[arg(long)]
        consumer_offset_sync_enable: Option<bool>,
        /// Seconds to wait for a running `strait run` to apply it.
        #[arg(long, default_value_t = 10)]
        timeout: u64,
    },
}

/// Runs a `strait mirror` command and returns its output.
pub async fn run(args: &MirrorArgs) -> Result<String> {
    match &args.command {
        MirrorCommandArgs::List(t) => list(t).await,
        MirrorCommandArgs::Describe { target, topic } => describe(target, topic).await,
        MirrorCommandArgs::Status { target, topic } => status(target, topic.as_deref()).await,
        MirrorCommandArgs::Pause(a) => command(a, MirrorAction::Pause).await,
        MirrorCommandArgs::Resume(a) => command(a, MirrorAction::Resume).await,
        MirrorCommandArgs::Promote(a) => command(a, MirrorAction::Promote).await,
        MirrorCommandArgs::Failover(a) => command(a, MirrorAction::Failover).await,
        MirrorCommandArgs::ReverseAndStart(a) => command(a, MirrorAction::ReverseAndStart).await,
        MirrorCommandArgs::ReverseAndPause(a) => command(a, MirrorAction::ReverseAndPause).await,
        MirrorCommandArgs::TruncateAndRestore(a) => super::mirror_restore::run(a).await,
        MirrorCommandArgs::Configure {
            target,
            consumer_offset_group_filters,
            consumer_offset_sync_ms,
            consumer_offset_sync_enable,
            timeout,
        } => {
            configure(
                target,
                consumer_offset_group_filters.as_deref(),
                *consumer_offset_sync_ms,
                *consumer_offset_sync_enable,
                *timeout,
            )
            .await
        }
    }
}

fn load(t: &Target) -> Result<Config> {
    strait::config::load(&t.config).map_err(|e| Error::invalid(e.to_string()))
}

/// The mirror flows `t` selects: the one named by `--link`, or all of them.
fn mirror_flows<'a>(config: &'a Config, t: &Target) -> Result<Vec<&'a FlowConfig>> {
    admin::mirror_flows(config, t.link.as_deref()).map_err(admin::AdminError::into_error)
}

/// The one mirror flow that mirrors `topic` (its destination or source name), with its target,
/// view and source topic.
async fn flow_of_topic<'a>(
    config: &'a Config,
    t: &Target,
    topic: &str,
) -> Result<(&'a FlowConfig, Cluster, ControlView, String)> {
    admin::flow_of_topic(config, t.link.as_deref(), topic)
        .await
        .map_err(admin::AdminError::into_error)
}

/// A mirror's state as the status shows it: `stopped(partitions=0,3)` while partitions are
/// stopped (by a foreign write), whatever the mirror's own state.
fn state_text(r: &MirrorRecord) -> String {
    if r.diverged.is_empty() {
        return r.state.as_str().to_string();
    }
    let parts: Vec<String> = r.diverged.keys().map(|p| p.to_string()).collect();
    format!("stopped(partitions={})", parts.join(","))
}

/// The source cluster's error if it cannot be reached now (shown as `SOURCE_UNAVAILABLE`).
async fn source_problem(config: &Config, f: &FlowConfig) -> Option<String> {
    strait::replicate::connect_once(config, &f.source)
        .await
        .err()
        .map(|e| e.to_string())
}

/// A mirror's status as Cluster Linking spells it, and its reason (`-` if none).
fn status_cells(r: &MirrorRecord, source_problem: Option<&str>) -> (String, String) {
    let (kind, why) = r.status(source_problem);
    (kind.as_str().to_string(), why.unwrap_or_else(|| "-".into()))
}

async fn list(t: &Target) -> Result<String> {
    let config = load(t)?;
    let mut rows = vec![vec![
        "Link".to_string(),
        "Source".into(),
        "Destination".into(),
        "Topic".into(),
        "SourceTopic".into(),
        "State".into(),
        "CreatedByStrait".into(),
        "Status".into(),
        "Reason".into(),
    ]];
    for f in mirror_flows(&config, t)? {
        let target = strait::replicate::connect_once(&config, &f.target).await?;
        let view = mirrors::read_view(&target, &f.source, &f.link_name()).await?;
        let problem = source_problem(&config, f).await;
        let mut topics: Vec<&MirrorRecord> = view.records.values().collect();
        topics.sort_by(|a, b| a.topic.cmp(&b.topic));
        for r in topics {
            let (status, why) = status_cells(r, problem.as_deref());
            rows.push(vec![
                f.link_name(),
                f.source.clone(),
                f.target.clone(),
                f.mirror_topic(&r.topic),
                r.topic.clone(),
                state_text(r),
                r.created_by_strait.to_string(),
                status,
                why,
            ]);
        }
    }
    Ok(super::table::format(&rows))
}

/// Stored offset maps of `topic`'s partitions, by partition.
async fn maps(target: &Cluster, source: &str, topic: &str) -> Result<Vec<(i32, OffsetMap)>> {
    let mut out: Vec<(i32, OffsetMap)> = store::read_progress(target, source)
        .await?
        .into_iter()
        .filter(|((t, _), _)| t == topic)
        .map(|((_, p), m)| (p, m))
        .collect();
    out.sort_by_key(|(p, _)| *p);
    Ok(out)
}

async fn describe(t: &Target, topic: &str) -> Result<String> {
    let config = load(t)?;
    let (f, target, view, source_topic) = flow_of_topic(&config, t, topic).await?;
    let topic = source_topic.as_str();
    let rec = &view.records[topic];
    let (enable, every, filters) = mirrors::effective(f, view.link.as_ref());
    let mut out = String::new();
    let line = |out: &mut String, k: &str, v: String| {
        out.push_str(&format!("{k:<24}{v}\n"));
    };
    line(&mut out, "Topic", f.mirror_topic(topic));
    line(&mut out, "Source topic", topic.to_string());
    line(&mut out, "Link", f.link_name());
    line(&mut out, "Source", f.source.clone());
    line(&mut out, "Destination", f.target.clone());
    line(&mut out, "State", state_text(rec));
    let problem = source_problem(&config, f).await;
    let (status, why) = status_cells(rec, problem.as_deref());
    line(&mut out, "Status", status);
    if why != "-" {
        line(&mut out, "Status reason", why);
    }
    for (p, why) in &rec.diverged {
        line(
            &mut out,
            &format!("Partition {p}"),
            format!("stopped: {why}"),
        );
    }
    if let Some(c) = view.commands.get(topic) {
        let status = if rec.has_done(c) {
            "done"
        } else if rec.is_pending(c) && !rec.state.is_stopped() {
            "pending"
        } else {
            "applied"
        };
        line(
            &mut out,
            "Last command",
            format!("{} ({status})", c.action.as_str()),
        );
    }
    if let Some(r) = &rec.reason {
        line(&mut out, "Reason", r.clone());
    }
    line(
        &mut out,
        "Created by strait",
        rec.created_by_strait.to_string(),
    );
    line(
        &mut out,
        "Consumer offset sync",
        if enable {
            format!("every {} ms", every.as_millis())
        } else {
            "off".to_string()
        },
    );
    line(&mut out, "Group filters", filters.to_json());
    let maps = maps(&target, &f.source, topic).await?;
    let mut rows = vec![vec![
        "Partition".to_string(),
        "MirroredUpTo".into(),
        "DestLogEnd".into(),
        "Offsets".into(),
    ]];
    for (p, m) in &maps {
        let mode = match rec.diverged.get(p) {
            Some(why) => format!("stopped: {why}"),
            None => rec.offsets_mode(*p, m).to_string(),
        };
        rows.push(vec![
            p.to_string(),
            m.source_next().to_string(),
            m.target_next().to_string(),
            mode,
        ]);
    }
    out.push('\n');
    out.push_str(&super::table::format(&rows));
    Ok(out)
}

/// Timestamps of the first batch at or after `offset` (base timestamp) and of the last batch of
/// the response (max timestamp), read from batch headers only.
async fn timestamps(
    cluster: &Cluster,
    topic: &str,
    partition: i32,
    offset: i64,
) -> Option<(i64, i64)> {
    let read = FetchRead::at(offset).max_bytes(64 << 10);
    let p = cluster
        .partition(topic, partition)
        .fetch_once(read)
        .await
        .ok()?;
    let mut first = None;
    let mut last = None;
    for e in split(p.records) {
        if let Ok(Entry::V2(b)) = e {
            if b.is_control() {
                continue;
            }
            first.get_or_insert(b.base_timestamp());
            last = Some(b.max_timestamp());
        }
    }
    Some((first?, last?))
}

async fn status(t: &Target, only: Option<&str>) -> Result<String> {
    let config = load(t)?;
    let mut rows = Vec::new();
    let mut notes = Vec::new();
    for f in mirror_flows(&config, t)? {
        let target = strait::replicate::connect_once(&config, &f.target).await?;
        let view = mirrors::read_view(&target, &f.source, &f.link_name()).await?;
        let mut problem = None;
        let source = match strait::replicate::connect_once(&config, &f.source).await {
            Ok(c) => Some(c),
            Err(e) => {
                notes.push(format!(
                    "source cluster {} unreachable ({e}); source columns show -1",
                    f.source
                ));
                problem = Some(e.to_string());
                None
            }
        };
        let mut topics: Vec<&MirrorRecord> = view
            .records
            .values()
            .filter(|r| only.is_none_or(|o| o == r.topic || o == f.mirror_topic(&r.topic)))
            .collect();
        topics.sort_by(|a, b| a.topic.cmp(&b.topic));
        for rec in topics {
            let maps = maps(&target, &f.source, &rec.topic).await?;
            let parts: Vec<i32> = maps.iter().map(|(p, _)| *p).collect();
            if parts.is_empty() {
                continue;
            }
            let mirror = f.mirror_topic(&rec.topic);
            let dest_end = target.list_offsets(&mirror, &parts, LATEST).await?;
            let (src_start, src_end) = match &source {
                Some(s) => (
                    s.list_offsets(&rec.topic, &parts, EARLIEST).await.ok(),
                    s.list_offsets(&rec.topic, &parts, LATEST).await.ok(),
                ),
                None => (None, None),
            };
            let find = |v: &Option<Vec<(i32, i64)>>, p: i32| {
                v.as_ref()
                    .and_then(|v| v.iter().find(|(q, _)| *q == p).map(|x| x.1))
                    .unwrap_or(-1)
            };
            let (status, _) = status_cells(rec, problem.as_deref());
            for (p, map) in &maps {
                let source_log_end = find(&src_end, *p);
                let dest_log_end = dest_end
                    .iter()
                    .find(|(q, _)| q == p)
                    .map(|x| x.1)
                    .unwrap_or(-1);
                let next = map.source_next();
                let lag_records = if source_log_end < 0 {
                    -1
                } else {
                    lag(source_log_end, next)
                };
                let stopped = rec.diverged.contains_key(p) || rec.failed.is_some();
                let fetch_lag_ms = match (&source, lag_records) {
                    // A stopped partition's position may name other records now.
                    _ if stopped => -1,
                    (_, 0) => 0,
                    (Some(s), n) if n > 0 => {
                        match (
                            timestamps(s, &rec.topic, *p, next).await,
                            timestamps(s, &rec.topic, *p, (source_log_end - 1).max(0)).await,
                        ) {
                            (Some((oldest_unmirrored, _)), Some((_, newest))) => {
                                (newest - oldest_unmirrored).max(0)
                            }
                            _ => -1,
                        }
                    }
                    _ => -1,
                };
                let offsets = match rec.diverged.get(p) {
                    Some(_) => "stopped (foreign write)".to_string(),
                    None => match rec.offsets_mode(*p, map) {
                        strait::mirror::OffsetsMode::Identical => "identical".to_string(),
                        strait::mirror::OffsetsMode::Mapped(_) => "mapped".to_string(),
                    },
                };
                rows.push(MirrorPartitionStatus {
                    topic: mirror.clone(),
                    partition: *p,
                    link: f.link_name(),
                    state: rec.state,
                    source_log_start: find(&src_start, *p),
                    source_log_end,
                    dest_log_end,
                    lag: lag_records,
                    fetch_lag_ms,
                    caught_up: lag_records == 0 && dest_log_end == map.target_next(),
                    offsets,
                    status: status.clone(),
                });
            }
        }
    }
    let mut out = format_status(&rows);
    for n in notes {
        out.push_str(&format!("note: {n}\n"));
    }
    Ok(out)
}

async fn command(a: &TopicArgs, action: MirrorAction) -> Result<String> {
    let config = load(&a.target)?;
    let admin::MirrorSent {
        flow: f,
        target,
        command: cmd,
        record,
    } = admin::mirror_command(&config, a.target.link.as_deref(), &a.topic, action)
        .await
        .map_err(admin::AdminError::into_error)?;
    let rec = &record;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(a.timeout);
    let mut last = rec.clone();
    loop {
        let view = mirrors::read_view(&target, &f.source, &f.link_name()).await?;
        if let Some(r) = view.records.get(&rec.topic) {
            last = r.clone();
            if r.has_done(&cmd) {
                let how = match (r.state, &r.reason) {
                    (MirrorState::Reversed, Some(why)) => why.as_str(),
                    _ => done_text(r.state),
                };
                return Ok(format!(
                    "topic {}: {how} (link {}, cluster {})\n",
                    a.topic,
                    f.link_name(),
                    f.target
                ));
            }
            if r.state.is_stopped() && r.command_at_ms < cmd.at_ms {
                return Err(Error::invalid(format!(
                    "topic {}: the mirror ended ({}) before the {} command was applied",
                    a.topic,
                    r.state.as_str(),
                    action.as_str()
                )));
            }
        }
        if tokio::time::Instant::now() >= deadline {
            let why = if last.command_at_ms >= cmd.at_ms {
                format!(
                    "a running strait run took the command; the mirror is {}{}",
                    last.state.as_str(),
                    last.reason
                        .as_ref()
                        .map(|r| format!(": {r}"))
                        .unwrap_or_default()
                )
            } else {
                "no running `strait run` took it yet; it is stored in the destination cluster and applied when one runs".to_string()
            };
            return Err(Error::invalid(format!(
                "topic {}: {} not finished after {} s: {why}",
                a.topic,
                action.as_str(),
                a.timeout
            )));
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

fn done_text(state: MirrorState) -> &'static str {
    match state {
        MirrorState::Active => "mirroring resumed",
        MirrorState::Paused => "mirroring paused",
        MirrorState::Promoting => "promoting",
        MirrorState::Promoted => {
            "promoted: caught up, consumer offsets synced, mirroring stopped; the topic is writable"
        }
        MirrorState::FailedOver => "failed over: mirroring stopped; the topic is writable",
        MirrorState::Reversing => "reversing",
        MirrorState::Reversed => {
            "reversed: the topic is writable here and mirrored back into its source"
        }
    }
}

async fn configure(
    t: &Target,
    filters: Option<&str>,
    sync_ms: Option<u64>,
    enable: Option<bool>,
    timeout: u64,
) -> Result<String> {
    let config = load(t)?;
    let change = admin::LinkChange {
        group_filters: filters.map(str::to_string),
        sync_ms,
        enable,
    };
    let admin::LinkSent {
        flow: f,
        target,
        settings,
    } = admin::configure_link(&config, t.link.as_deref(), &change)
        .await
        .map_err(|e| match e {
            admin::AdminError::BadInput { field, message } if field != "link" => {
                Error::invalid(format!("--{}: {message}", field.replace('_', "-")))
            }
            e => e.into_error(),
        })?;
    let link = f.link_name();
    let (en, every, fl) = mirrors::effective(f, Some(&settings));
    let summary = format!(
        "link {link}: consumer offset sync {}, group filters {}",
        if en {
            format!("every {} ms", every.as_millis())
        } else {
            "off".to_string()
        },
        fl.to_json()
    );
    let deadline = tokio::time::Instant::now() + Duration::from_secs(timeout);
    loop {
        let view = mirrors::read_view(&target, &f.source, &link).await?;
        if view.applied.is_some_and(|v| v >= settings.version) {
            return Ok(format!("{summary}\napplied by the running strait run\n"));
        }
        if tokio::time::Instant::now() >= deadline {
            // Like pause and promote: not applied in time is a failure (exit code 1); the
            // change stays stored and is applied when an instance runs.
            return Err(Error::invalid(format!(
                "{}: not applied after {timeout} s: no running `strait run` took it yet; it is stored in cluster {} and applied when one runs",
                summary.lines().next().unwrap_or("link settings"),
                f.target
            )));
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// Formats rows as an aligned table.
fn format_status(rows: &[MirrorPartitionStatus]) -> String {
    let header = [
        "Topic",
        "Partition",
        "ClusterLink",
        "State",
        "SourceLogStart",
        "SourceLogEnd",
        "DestLogEnd",
        "Lag",
        "LastFetchLagMs",
        "IsCaughtUp",
        "Offsets",
        "Status",
    ];
    let mut cells: Vec<Vec<String>> = vec![header.iter().map(|s| s.to_string()).collect()];
    for r in rows {
        cells.push(vec![
            r.topic.clone(),
            r.partition.to_string(),
            r.link.clone(),
            if r.offsets.starts_with("stopped") {
                "stopped".to_string()
            } else {
                r.state.as_str().to_string()
            },
            r.source_log_start.to_string(),
            r.source_log_end.to_string(),
            r.dest_log_end.to_string(),
            r.lag.to_string(),
            if r.fetch_lag_ms < 0 {
                "-".to_string()
            } else {
                r.fetch_lag_ms.to_string()
            },
            r.caught_up.to_string(),
            r.offsets.clone(),
            r.status.clone(),
        ]);
    }
    super::table::format(&cells)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_table() {
        let rows = vec![MirrorPartitionStatus {
            topic: "west-trades".into(),
            partition: 0,
            link: "west-link".into(),
            state: MirrorState::Active,
            source_log_start: 0,
            source_log_end: 200,
            dest_log_end: 150,
            lag: lag(200, 150),
            fetch_lag_ms: 12,
            caught_up: false,
            offsets: "identical".into(),
            status: "ACTIVE".into(),
        }];
        let t = format_status(&rows);
        let lines: Vec<&str> = t.lines().collect();
        assert_eq!(lines.len(), 2);
        assert!(
            lines[0].starts_with("Topic        Partition  ClusterLink"),
            "{t}"
        );
        assert!(
            lines[1].starts_with("west-trades  0          west-link"),
            "{t}"
        );
        assert!(lines[1].contains(" 50 "), "{t}");
        assert_eq!(lag(10, 20), 0);
    }
}
