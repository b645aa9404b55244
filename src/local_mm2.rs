//! MirrorMaker 2 started as a child process between two local clusters, for `strait bench
//! --peer mm2` and the tests: dedicated mode (`org.apache.kafka.connect.mirror.MirrorMaker
//! mm2.properties --clusters <target>`) from the jars [`local_kafka`](crate::local_kafka) runs
//! Kafka from, one direction (`source->target`), internal topics with replication factor 1, a
//! small heap, warnings only in its log (plus the lines that say it started and what it
//! replicates). Stopped with SIGTERM (then killed) when dropped.
//!
//! [`mm2_properties`] writes the configuration; it is pure and unit-tested.

use std::fs::{self, File};
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use crate::error::{Error, Result};
use crate::local_kafka::{file_tail, fresh_dir, jvm, kafka_libs, terminate};

/// How long MirrorMaker 2 may take to start.
const START_TIMEOUT: Duration = Duration::from_secs(90);

/// How long a stop may take before the process is killed.
const STOP_TIMEOUT: Duration = Duration::from_secs(30);

/// The line MirrorMaker 2 logs once its herders run.
const STARTED: &str = "Kafka MirrorMaker started";

/// The line a replication task logs when it starts (MirrorSourceTask).
const REPLICATING: &str = "topic-partitions";

static RUNS: AtomicU64 = AtomicU64::new(0);

/// One replication direction and how MirrorMaker 2 runs it.
#[derive(Debug, Clone)]
pub struct Mm2Options {
    /// A label for folders and logs.
    pub name: String,
    /// Source cluster alias (remote topics are named `<source>.<topic>`).
    pub source_alias: String,
    /// Source bootstrap servers.
    pub source_bootstrap: String,
    /// Target cluster alias.
    pub target_alias: String,
    /// Target bootstrap servers.
    pub target_bootstrap: String,
    /// Topics to replicate: MirrorMaker 2's `topics` (comma-separated regexes).
    pub topics: String,
    /// Groups whose offsets are checkpointed: MirrorMaker 2's `groups`.
    pub groups: String,
    /// `emit.checkpoints.interval.seconds`.
    pub checkpoint_interval_secs: u64,
    /// `refresh.topics.interval.seconds` and `refresh.groups.interval.seconds`.
    pub refresh_interval_secs: u64,
    /// `sync.group.offsets.enabled` (with `sync.group.offsets.interval.seconds` at the
    /// checkpoint interval).
    pub sync_group_offsets: bool,
    /// The target worker's `offset.flush.interval.ms`: how often source offsets are committed.
    pub offset_flush_interval_ms: u64,
    /// The target producer's `compression.type` (`none`, `gzip`, `snappy`, `lz4`, `zstd`).
    pub compression: String,
    /// Further `mm2.properties` lines; a key given here replaces the launcher's own.
    pub extra: Vec<(String, String)>,
    /// Maximum heap, as java's `-Xmx` takes it.
    pub heap: String,
    /// Further JVM options (garbage collector, initial heap).
    pub jvm_options: Vec<String>,
    /// Parent folder of the run's folder (the system temp folder when `None`).
    pub dir: Option<PathBuf>,
}

impl Mm2Options {
    /// `source->target` for every topic and group, short intervals, 256 MiB of heap and the
    /// serial collector.
    pub fn new(
        source_alias: &str,
        source_bootstrap: &str,
        target_alias: &str,
        target_bootstrap: &str,
    ) -> Mm2Options {
        Mm2Options {
            name: format!("{source_alias}-{target_alias}"),
            source_alias: source_alias.to_string(),
            source_bootstrap: source_bootstrap.to_string(),
            target_alias: target_alias.to_string(),
            target_bootstrap: target_bootstrap.to_string(),
            topics: ".*".to_string(),
            groups: ".*".to_string(),
            checkpoint_interval_secs: 1,
            refresh_interval_secs: 1,
            sync_group_offsets: false,
            offset_flush_interval_ms: 1000,
            compression: "none".to_string(),
            extra: Vec::new(),
            heap: "256m".to_string(),
            jvm_options: vec!["-Xms64m".to_string(), "-XX:+UseSerialGC".to_string()],
            dir: None,
        }
    }

    /// The flow name, `source->target`.
    pub fn flow(&self) -> String {
        format!("{}->{}", self.source_alias, self.target_alias)
    }

    /// MirrorMaker 2's own intervals (`emit.checkpoints.interval.seconds` 60,
    /// `refresh.*.interval.seconds` 600, `offset.flush.interval.ms` 60 000) and the JVM as
    /// Apache Kafka's `bin/connect-mirror-maker.sh` runs it (2 GiB of heap, G1).
    pub fn as_shipped(mut self) -> Mm2Options {
        self.checkpoint_interval_secs = 60;
        self.refresh_interval_secs = 600;
        self.offset_flush_interval_ms = 60_000;
        self.heap = "2G".to_string();
        self.jvm_options = [
            "-Xms256M",
            "-server",
            "-XX:+UseG1GC",
            "-XX:MaxGCPauseMillis=20",
            "-XX:InitiatingHeapOccupancyPercent=35",
            "-XX:+ExplicitGCInvokesConcurrent",
            "-XX:MaxInlineLevel=15",
        ]
        .map(String::from)
        .to_vec();
        self
    }
}

/// The `mm2.properties` text for `opts`: both clusters, the one direction enabled (the reverse
/// explicitly disabled), every internal topic with replication factor 1, and the intervals.
pub fn mm2_properties(opts: &Mm2Options) -> String {
    let (s, t) = (&opts.source_alias, &opts.target_alias);
    let flow = opts.flow();
    let refresh = opts.refresh_interval_secs.to_string();
    let checkpoints = opts.checkpoint_interval_secs.to_string();
    let mut props: Vec<(String, String)> = vec![
        ("clusters".into(), format!("{s}, {t}")),
        (
            format!("{s}.bootstrap.servers"),
            opts.source_bootstrap.clone(),
        ),
        (
            format!("{t}.bootstrap.servers"),
            opts.target_bootstrap.clone(),
        ),
        (format!("{flow}.enabled"), "true".into()),
        (format!("{t}->{s}.enabled"), "false".into()),
        (format!("{flow}.topics"), opts.topics.clone()),
        (format!("{flow}.groups"), opts.groups.clone()),
        ("tasks.max".into(), "1".into()),
        ("replication.factor".into(), "1".into()),
        ("checkpoints.topic.replication.factor".into(), "1".into()),
        ("heartbeats.topic.replication.factor".into(), "1".into()),
        ("offset-syncs.topic.replication.factor".into(), "1".into()),
        ("offset.storage.replication.factor".into(), "1".into()),
        ("status.storage.replication.factor".into(), "1".into()),
        ("config.storage.replication.factor".into(), "1".into()),
        ("refresh.topics.interval.seconds".into(), refresh.clone()),
        ("refresh.groups.interval.seconds".into(), refresh),
        (
            "emit.checkpoints.interval.seconds".into(),
            checkpoints.clone(),
        ),
        (
            "sync.group.offsets.enabled".into(),
            opts.sync_group_offsets.to_string(),
        ),
        ("sync.group.offsets.interval.seconds".into(), checkpoints),
        // Every plugin of the release has a ServiceLoader manifest: skip the class path scan
        // (10 s of start-up on a small machine). Read by the top-level config and each worker.
        ("plugin.discovery".into(), "service_load".into()),
        (format!("{t}.plugin.discovery"), "service_load".into()),
        // No authorizer on local clusters: ACL sync would only log errors.
        ("sync.topic.acls.enabled".into(), "false".into()),
        (
            format!("{t}.offset.flush.interval.ms"),
            opts.offset_flush_interval_ms.to_string(),
        ),
        (
            format!("{t}.producer.compression.type"),
            opts.compression.clone(),
        ),
    ];
    for (k, v) in &opts.extra {
        props.retain(|(pk, _)| pk != k);
        props.push((k.clone(), v.clone()));
    }
    props
        .iter()
        .map(|(k, v)| format!("{} = {}\n", escape_key(k), escape_value(v)))
        .collect()
}

/// A properties key: `=`, `:`, spaces and `#`/`!` at the start escaped.
fn escape_key(k: &str) -> String {
    let mut out = String::new();
    for (i, c) in k.chars().enumerate() {
        match c {
            '=' | ':' | ' ' | '\\' => out.push('\\'),
            '#' | '!' if i == 0 => out.push('\\'),
            _ => {}
        }
        out.push(c);
    }
    out
}

/// A properties value: backslashes and line breaks escaped.
fn escape_value(v: &str) -> String {
    v.replace('\\', "\\\\")
        .replace('\n', "\\n")
        .replace('\r', "\\r")
}

/// A running MirrorMaker 2; stopped (SIGTERM, then SIGKILL) when dropped.
#[derive(Debug)]
pub struct Mm2Process {
    opts: Mm2Options,
    dir: PathBuf,
    config: PathBuf,
    log: PathBuf,
    child: Option<Child>,
}

impl Mm2Process {
    /// Writes the configuration and its logging setup into a fresh folder, starts MirrorMaker
    /// 2 and waits until it says it started.
    pub fn start(opts: Mm2Options) -> Result<Mm2Process> {
        let libs = kafka_libs()?;
        let n = RUNS.fetch_add(1, Ordering::Relaxed);
        let dir = fresh_dir(opts.dir.as_deref(), "mm2", &opts.name, n)?;
        let config = dir.join("mm2.properties");
        fs::write(&config, mm2_properties(&opts)).map_err(Error::from)?;
        let log4j = dir.join("log4j2.yaml");
        fs::write(&log4j, LOG4J).map_err(Error::from)?;
        let log = dir.join("mm2.log");
        let out = File::create(&log).map_err(Error::from)?;
        let err = out.try_clone().map_err(Error::from)?;
        let child = jvm(&opts.heap, &log4j, &libs)
            .args(&opts.jvm_options)
            .arg("org.apache.kafka.connect.mirror.MirrorMaker")
            // The file first: `--clusters` takes every argument after it.
            .arg(&config)
            .arg("--clusters")
            .arg(&opts.target_alias)
            .stdin(Stdio::null())
            .stdout(out)
            .stderr(err)
            .spawn()
            .map_err(|e| Error::invalid(format!("cannot start MirrorMaker 2 (java): {e}")))?;
        let mut mm2 = Mm2Process {
            opts,
            dir,
            config,
            log,
            child: Some(child),
        };
        mm2.wait_for_log(STARTED, 1, START_TIMEOUT)?;
        Ok(mm2)
    }

    /// Waits until a replication task has started (MirrorMaker 2 found topics to replicate
    /// and assigned them), or `timeout`.
    pub fn wait_replicating(&mut self, timeout: Duration) -> Result<()> {
        self.wait_for_log(REPLICATING, 1, timeout)
    }

    /// Waits until `needle` appears `count` times in the log; an error with the log's tail if
    /// the process exits or `timeout` passes first.
    pub fn wait_for_log(&mut self, needle: &str, count: usize, timeout: Duration) -> Result<()> {
        let deadline = Instant::now() + timeout;
        loop {
            let text = fs::read_to_string(&self.log).unwrap_or_default();
            if text.matches(needle).count() >= count {
                return Ok(());
            }
            if !self.is_running() {
                return Err(Error::invalid(format!(
                    "MirrorMaker 2 {} exited (waiting for {needle:?}):\n{}",
                    self.opts.flow(),
                    self.log_tail(4000)
                )));
            }
            if Instant::now() > deadline {
                return Err(Error::invalid(format!(
                    "MirrorMaker 2 {}: no {needle:?} in its log within {timeout:?}:\n{}",
                    self.opts.flow(),
                    self.log_tail(4000)
                )));
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// The process id (0 once stopped).
    pub fn pid(&self) -> u32 {
        self.child.as_ref().map(Child::id).unwrap_or(0)
    }

    /// Whether the process runs.
    pub fn is_running(&mut self) -> bool {
        matches!(self.child.as_mut().map(|c| c.try_wait()), Some(Ok(None)))
    }

    /// Stops it cleanly: SIGTERM (MirrorMaker 2 commits its source offsets on the way out),
    /// then SIGKILL if it has not exited within 30 s.
    pub fn stop(&mut self) {
        if let Some(mut c) = self.child.take() {
            terminate(&mut c, STOP_TIMEOUT);
        }
    }

    /// Kills it at once (SIGKILL), as a crash would: what it wrote since its last offset
    /// commit stays on the target uncommitted.
    pub fn kill(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    /// The options it runs with.
    pub fn options(&self) -> &Mm2Options {
        &self.opts
    }

    /// Its folder (configuration and log).
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The `mm2.properties` it runs from.
    pub fn config_path(&self) -> &Path {
        &self.config
    }

    /// Its log file.
    pub fn log_path(&self) -> &Path {
        &self.log
    }

    /// The last `max` bytes of its log.
    pub fn log_tail(&self, max: usize) -> String {
        file_tail(&self.log, max)
    }
}

impl Drop for Mm2Process {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Logging: warnings, plus MirrorMaker's start and stop and what each task replicates.
const LOG4J: &str = "Configuration:
  Appenders:
    Console:
      name: STDOUT
      PatternLayout:
        pattern: \"[%d] %p %m (%c)%n\"
  Loggers:
    Logger:
      - name: org.apache.kafka.connect.mirror.MirrorMaker
        level: INFO
      - name: org.apache.kafka.connect.mirror.MirrorSourceTask
        level: INFO
    Root:
      level: WARN
      AppenderRef:
        - ref: STDOUT
";

#[cfg(test)]
mod tests {
    use super::*;

    fn parsed(text: &str) -> Vec<(String, String)> {
        crate::config::parse_properties_pairs(text).expect("properties parse")
    }

    fn get<'a>(props: &'a [(String, String)], key: &str) -> Option<&'a str> {
        props
            .iter()
            .rev()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }

    #[test]
    fn properties_name_both_clusters_and_one_direction() {
        let mut o = Mm2Options::new("a", "127.0.0.1:1", "b", "127.0.0.1:2,127.0.0.1:3");
        o.topics = "orders.*, payments".into();
        o.checkpoint_interval_secs = 5;
        o.offset_flush_interval_ms = 250;
        o.compression = "zstd".into();
        let p = parsed(&mm2_properties(&o));
        assert_eq!(get(&p, "clusters"), Some("a, b"));
        assert_eq!(get(&p, "a.bootstrap.servers"), Some("127.0.0.1:1"));
        assert_eq!(
            get(&p, "b.bootstrap.servers"),
            Some("127.0.0.1:2,127.0.0.1:3")
        );
        assert_eq!(get(&p, "a->b.enabled"), Some("true"));
        assert_eq!(get(&p, "b->a.enabled"), Some("false"));
        assert_eq!(get(&p, "a->b.topics"), Some("orders.*, payments"));
        assert_eq!(get(&p, "a->b.groups"), Some(".*"));
        assert_eq!(get(&p, "emit.checkpoints.interval.seconds"), Some("5"));
        assert_eq!(get(&p, "b.offset.flush.interval.ms"), Some("250"));
        assert_eq!(get(&p, "b.producer.compression.type"), Some("zstd"));
        for rf in [
            "replication.factor",
            "checkpoints.topic.replication.factor",
            "heartbeats.topic.replication.factor",
            "offset-syncs.topic.replication.factor",
            "offset.storage.replication.factor",
            "status.storage.replication.factor",
            "config.storage.replication.factor",
        ] {
            assert_eq!(get(&p, rf), Some("1"), "{rf}");
        }
    }

    #[test]
    fn extra_lines_replace_the_launchers_own() {
        let mut o = Mm2Options::new("a", "h:1", "b", "h:2");
        o.extra = vec![
            ("replication.factor".into(), "3".into()),
            ("a->b.offset.lag.max".into(), "0".into()),
        ];
        let text = mm2_properties(&o);
        let p = parsed(&text);
        assert_eq!(get(&p, "replication.factor"), Some("3"));
        assert_eq!(get(&p, "a->b.offset.lag.max"), Some("0"));
        assert_eq!(
            p.iter().filter(|(k, _)| k == "replication.factor").count(),
            1,
            "{text}"
        );
    }

    #[test]
    fn keys_and_values_are_escaped() {
        assert_eq!(escape_key("a b=c:d"), "a\\ b\\=c\\:d");
        assert_eq!(escape_key("#x"), "\\#x");
        assert_eq!(escape_value("C:\\dir\nnext"), "C:\\\\dir\\nnext");
        let mut o = Mm2Options::new("a", "h:1", "b", "h:2");
        o.extra = vec![("weird key".into(), "v\\1".into())];
        let p = parsed(&mm2_properties(&o));
        assert_eq!(get(&p, "weird key"), Some("v\\1"));
    }
}
