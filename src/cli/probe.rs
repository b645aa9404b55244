//! `strait probe`: what a user reaches for when a cluster misbehaves.

use std::fmt::Write as _;
use std::time::Duration;

use kafka_protocol::messages::ApiKey;

use strait::client::{Cluster, ClusterConfig, EARLIEST, LATEST};
use strait::protocol::api_versions::ApiVersionsResponse;
use strait::protocol::metadata::{MetadataResponse, TopicMeta};
use strait::protocol::supported_versions;
use strait::{Error, Result};

/// Arguments of `strait probe`.
#[derive(Debug, clap::Args)]
pub struct ProbeArgs {
    /// Bootstrap servers, `host:port[,host:port...]` (PLAINTEXT; use --config and --cluster for
    /// TLS or SASL clusters).
    #[arg(long, required_unless_present = "cluster", conflicts_with = "cluster")]
    pub bootstrap: Option<String>,
    /// Configuration file (TOML or mm2.properties) holding the cluster's address and security
    /// settings.
    #[arg(long, requires = "cluster")]
    pub config: Option<std::path::PathBuf>,
    /// Alias of the cluster to probe in --config.
    #[arg(long, requires = "config")]
    pub cluster: Option<String>,
    /// Only these topics (default: all non-internal topics).
    #[arg(long)]
    pub topic: Vec<String>,
    /// Include internal topics.
    #[arg(long)]
    pub internal: bool,
    /// Seconds to wait for a connection or a response.
    #[arg(long, default_value_t = 10)]
    pub timeout: u64,
}

/// Runs the probe and returns the report text.
pub async fn run(args: &ProbeArgs) -> Result<String> {
    let cluster = connect(args).await?;
    let topics = if args.topic.is_empty() {
        None
    } else {
        Some(args.topic.as_slice())
    };
    let meta = cluster.metadata(topics).await?;
    let versions = cluster.api_versions().await?;
    let mut out = String::new();
    write_brokers(&mut out, &cluster, &meta);
    write_versions(&mut out, &versions);
    let mut topics: Vec<_> = meta
        .topics
        .iter()
        .filter(|t| args.internal || !t.is_internal)
        .collect();
    topics.sort_by(|a, b| a.name.cmp(&b.name));
    let _ = writeln!(out, "topics: {}", topics.len());
    for t in topics {
        write_topic(&mut out, &cluster, t).await;
    }
    Ok(out)
}

/// Connects to the cluster given by `--bootstrap`, or by `--config` and `--cluster`.
async fn connect(args: &ProbeArgs) -> Result<Cluster> {
    let mut cfg = match (&args.config, &args.cluster, &args.bootstrap) {
        (Some(path), Some(alias), _) => {
            let config = strait::config::load(path).map_err(|e| Error::invalid(e.to_string()))?;
            strait::replicate::cluster_config(strait::replicate::cluster_settings(&config, alias)?)?
        }
        (_, _, Some(bootstrap)) => ClusterConfig::new(bootstrap, bootstrap),
        _ => {
            return Err(Error::invalid(
                "give --bootstrap, or --config with --cluster",
            ))
        }
    };
    cfg.connection.connect_timeout = Duration::from_secs(args.timeout);
    cfg.connection.request_timeout = Duration::from_secs(args.timeout);
    cfg.retries = 2;
    Cluster::connect(cfg).await
}

/// The cluster id, the controller and the brokers.
fn write_brokers(out: &mut String, cluster: &Cluster, meta: &MetadataResponse) {
    let _ = writeln!(
        out,
        "cluster id:  {}",
        meta.cluster_id.as_deref().unwrap_or("(none)")
    );
    let _ = writeln!(out, "controller:  {}", meta.controller_id);
    let _ = writeln!(out, "brokers:");
    for b in cluster.brokers() {
        let _ = writeln!(
            out,
            "  {:>4}  {}:{}{}",
            b.node_id,
            b.host,
            b.port,
            b.rack
                .as_deref()
                .map(|r| format!("  rack {r}"))
                .unwrap_or_default()
        );
    }
}

/// The API versions strait and the broker support, and the one used.
fn write_versions(out: &mut String, versions: &ApiVersionsResponse) {
    let _ = writeln!(out, "api versions (strait / broker / used):");
    for key in ApiKey::iter() {
        let Some(ours) = supported_versions(key) else {
            continue;
        };
        let theirs = versions.range(key);
        let used = theirs
            .and_then(|t| ours.negotiate(t))
            .map(|v| format!("v{v}"))
            .unwrap_or_else(|| "unusable".to_string());
        let theirs = theirs
            .map(|t| format!("{}..{}", t.min, t.max))
            .unwrap_or_else(|| "-".to_string());
        let _ = writeln!(
            out,
            "  {:<16} {:>5}..{:<3} {:>8}   {}",
            format!("{key:?}"),
            ours.min,
            ours.max,
            theirs,
            used
        );
    }
}

/// One topic: its partitions with leader, log start and end, and ISR.
async fn write_topic(out: &mut String, cluster: &Cluster, t: &TopicMeta) {
    if t.error_code != 0 {
        let _ = writeln!(
            out,
            "  {}  error {}",
            t.name,
            strait::protocol::error_code::name(t.error_code)
        );
        return;
    }
    let _ = writeln!(
        out,
        "  {}  partitions {}{}",
        t.name,
        t.partitions.len(),
        if t.is_internal { "  (internal)" } else { "" }
    );
    let mut parts: Vec<_> = t.partitions.iter().collect();
    parts.sort_by_key(|p| p.partition);
    let ids: Vec<i32> = parts.iter().map(|p| p.partition).collect();
    let starts = cluster.list_offsets(&t.name, &ids, EARLIEST).await;
    let ends = cluster.list_offsets(&t.name, &ids, LATEST).await;
    let _ = writeln!(
        out,
        "    {:>9} {:>6} {:>12} {:>12} {:>8}  isr",
        "partition", "leader", "log start", "log end", "records"
    );
    for p in parts {
        let find = |r: &Result<Vec<(i32, i64)>>| {
            r.as_ref()
                .ok()
                .and_then(|v| v.iter().find(|(i, _)| *i == p.partition).map(|x| x.1))
        };
        let (s, e) = (find(&starts), find(&ends));
        let show = |v: Option<i64>| v.map(|x| x.to_string()).unwrap_or_else(|| "?".to_string());
        let count = match (s, e) {
            (Some(s), Some(e)) => (e - s).to_string(),
            _ => "?".to_string(),
        };
        let _ = writeln!(
            out,
            "    {:>9} {:>6} {:>12} {:>12} {:>8}  {:?}",
            p.partition,
            p.leader,
            show(s),
            show(e),
            count,
            p.isr
        );
    }
    if let Err(e) = starts.and(ends) {
        let _ = writeln!(out, "    offsets unavailable: {e}");
    }
}
