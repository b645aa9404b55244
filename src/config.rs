//! Configuration: strait's own TOML format, and MirrorMaker 2's `mm2.properties`.
//!
//! Every command's `--config FILE` takes either form; [`load`] tells them apart (`.toml` → TOML,
//! `.properties` → MM2, otherwise a line `clusters = ...` / `clusters: ...` means MM2, anything
//! else TOML). Both produce the same [`Config`]; defaults follow MirrorMaker 2.
//!
//! # TOML
//!
//! ```toml
//! http = "127.0.0.1:8083"                  # optional status API listen address (or [http], below)
//! [clusters.cluster_a]
//! bootstrap_servers = ["127.0.0.1:9092"]   # or "host:port,host:port"
//! security_protocol = "PLAINTEXT"          # PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL
//! [clusters.cluster_b]
//! bootstrap_servers = "kafka-b:9093"
//! security_protocol = "SASL_SSL"
//! sasl_mechanism = "SCRAM-SHA-512"         # PLAIN, SCRAM-SHA-256, SCRAM-SHA-512
//! sasl_username = "strait"
//! sasl_password = { env = "B_PASSWORD" }   # or { file = "/run/secrets/b" }, or a string (warned)
//! ssl_ca_file = "/etc/strait/ca.pem"       # PEM CAs to trust; default: the system roots
//! ssl_certificate_file = "client.pem"      # optional client certificate (mutual TLS) ...
//! ssl_key_file = "client.key"              # ... and its unencrypted PEM key
//! ssl_server_name = "kafka-b.internal"     # optional: name to verify instead of each broker host
//! [defaults]                               # optional: any flow key except source/target
//! refresh_topics_interval_secs = 10
//! [[flows]]
//! source = "cluster_a"
//! target = "cluster_b"
//! topics = ["global_iot"]
//! ```
//!
//! Durations: each duration setting `X` is written either as whole seconds, `X_secs = 5`, or as
//! milliseconds, `X_ms = 500` (not both in one table); a flow's own value beats `[defaults]`.
//! Sizes (`buffer_bytes`, `fetch_max_bytes`) are an integer number of bytes or a string with a
//! binary unit: `"64MiB"` (units `B`, `KiB`, `MiB`, `GiB`).
//!
//! Mirror flows (`mode = "mirror"`, Cluster Linking style, see [`crate::mirror`]) keep topic names
//! (identity naming is implied; another naming is an error) and add `link` (the link's name,
//! default `source->target`), `consumer_offset_sync` (default true),
//! `consumer_offset_sync_interval_secs`/`_ms` (default 5 s) and `consumer_offset_group_filters`
//! (Cluster Linking's JSON, default every group). They write no MM2 heartbeats, checkpoints or
//! offset syncs.
//!
//! Secrets (`sasl_password`, the `[http]` `token`) are `{ env = "VAR" }`, `{ file = "PATH" }`
//! (whole file, one trailing line break dropped), `{ file = "PATH", key = "KEY" }` (a key of a
//! Java properties file) or a plain string, which works but is warned about; see
//! [`crate::secret`]. They are read when the file is loaded and print as `***`.
//!
//! The HTTP endpoints take either `http = "host:port"` or a table:
//!
//! ```toml
//! [http]
//! listen = "127.0.0.1:8083"       # default; a non-loopback address needs allow_remote = true
//! allow_remote = false
//! tls_cert = "/etc/strait/http.pem"  # optional TLS (both or neither)
//! tls_key = "/etc/strait/http.key"
//! token = { env = "STRAIT_HTTP_TOKEN" }  # optional bearer token
//! ```
//!
//! Topic and group lists are regular expressions (the `regex` crate's syntax) that must match a
//! whole name, as in MirrorMaker 2: `global_iot` matches only `global_iot`.
//!
//! # MirrorMaker 2 properties
//!
//! Java properties syntax. Understood: `clusters`, `<alias>.bootstrap.servers`,
//! `<alias>.security.protocol`, `<alias>.client.id`, `<alias>.request.timeout.ms`,
//! `<alias>.socket.connection.setup.timeout.ms`, `<alias>.sasl.mechanism`,
//! `<alias>.sasl.jaas.config` (`PlainLoginModule` / `ScramLoginModule` with `username="..."
//! password="..."`), `<alias>.ssl.truststore.type` (`PEM` only), `<alias>.ssl.truststore.location`,
//! `<alias>.ssl.truststore.certificates`, `<alias>.ssl.keystore.type` (`PEM` only),
//! `<alias>.ssl.keystore.location` (one PEM file with the key and the certificate chain)
//! (all of these also globally), `A->B.enabled`,
//! and, per flow (`A->B.<key>`) or globally (`<key>`): `topics`, `topics.exclude`
//! (`topics.blacklist`), `groups`, `groups.exclude` (`groups.blacklist`),
//! `replication.policy.class`, `replication.policy.separator`, `refresh.topics.interval.seconds`,
//! `refresh.groups.interval.seconds`, `emit.checkpoints.interval.seconds`,
//! `emit.heartbeats.interval.seconds`, `emit.checkpoints.enabled`, `emit.heartbeats.enabled`,
//! `emit.offset-syncs.enabled`, `sync.group.offsets.enabled`,
//! `sync.group.offsets.interval.seconds`, `replication.factor`. Every other key is listed in
//! [`Config::unsupported`] with the reason, in file order.
//!
//! Config providers: a user name or password in `sasl.jaas.config` may be `${env:VAR}`,
//! `${file:PATH}` or `${file:PATH:KEY}` (Kafka's `EnvVarConfigProvider` / `FileConfigProvider`
//! syntax); other provider names work when declared with `config.providers` and
//! `config.providers.<name>.class` naming one of those two classes.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::path::Path;
use std::time::Duration;

use crate::mirror::GroupFilters;
use regex::Regex;

use crate::sasl::{SaslMechanism, SaslSettings};
use crate::secret::{ProviderKind, Secret, SecretSource};
use crate::tls::TlsSettings;

/// Default client id sent to brokers.
pub const DEFAULT_CLIENT_ID: &str = "strait";
/// Default topics to replicate (MM2 `topics`).
pub const DEFAULT_TOPICS: &[&str] = &[".*"];
/// Default topics never replicated (MM2 `topics.exclude`).
pub const DEFAULT_TOPICS_EXCLUDE: &[&str] = &[r".*[\-\.]internal", r".*\.replica", "__.*"];
/// Default groups whose offsets are translated (MM2 `groups`).
pub const DEFAULT_GROUPS: &[&str] = &[".*"];
/// Default groups never translated (MM2 `groups.exclude`).
pub const DEFAULT_GROUPS_EXCLUDE: &[&str] = &["console-consumer-.*", "connect-.*", "__.*"];
/// Default separator of remote topic names (MM2 `replication.policy.separator`).
pub const DEFAULT_SEPARATOR: &str = ".";
/// MM2's class for [`NamingPolicy::Default`].
pub const DEFAULT_POLICY_CLASS: &str = "org.apache.kafka.connect.mirror.DefaultReplicationPolicy";
/// MM2's class for [`NamingPolicy::Identity`].
pub const IDENTITY_POLICY_CLASS: &str = "org.apache.kafka.connect.mirror.IdentityReplicationPolicy";

const DEFAULT_TOPIC_FILTER_CLASS: &str = "org.apache.kafka.connect.mirror.DefaultTopicFilter";
const DEFAULT_GROUP_FILTER_CLASS: &str = "org.apache.kafka.connect.mirror.DefaultGroupFilter";
const MIB: usize = 1024 * 1024;

// ------------------------------------------------------------------------------------------------
// Public types
// ------------------------------------------------------------------------------------------------

/// A whole configuration: clusters, the flows between them, and process settings.
#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    /// Clusters by alias.
    pub clusters: BTreeMap<String, ClusterSettings>,
    /// Replication flows, in file order (MM2: only enabled flows).
    pub flows: Vec<FlowConfig>,
    /// The file this was read from.
    pub origin: String,
    /// MM2 keys read but not supported, each as `"key: reason"`, in file order (TOML: empty).
    pub unsupported: Vec<String>,
    /// The HTTP endpoints (status API); `None` = off.
    pub http: Option<HttpSettings>,
    /// Name shared by the instances that split the work (default `default`): instances with the
    /// same name and configuration form one group per target cluster, `strait.<name>.<target>`.
    pub instance_group: String,
}

/// Default listen address of the HTTP endpoints when `[http]` names none.
pub const DEFAULT_HTTP_LISTEN: &str = "127.0.0.1:8083";

/// Where and how the HTTP endpoints are served.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HttpSettings {
    /// Listen address, `host:port`; loopback unless [`HttpSettings::allow_remote`].
    pub addr: String,
    /// Whether a non-loopback listen address is allowed (refused otherwise).
    pub allow_remote: bool,
    /// PEM certificate chain for TLS (with [`HttpSettings::tls_key`]).
    pub tls_cert: Option<std::path::PathBuf>,
    /// PEM private key for TLS.
    pub tls_key: Option<std::path::PathBuf>,
    /// Bearer token required on every request, if set.
    pub token: Option<Secret>,
}

impl HttpSettings {
    /// Plain HTTP on `addr`, no token.
    pub fn new(addr: &str) -> HttpSettings {
        HttpSettings {
            addr: addr.to_string(),
            allow_remote: false,
            tls_cert: None,
            tls_key: None,
            token: None,
        }
    }
}

impl Config {
    /// The flow from `source` to `target`, if configured.
    pub fn flow(&self, source: &str, target: &str) -> Option<&FlowConfig> {
        self.flows
            .iter()
            .find(|f| f.source == source && f.target == target)
    }

    /// The cluster with this alias, if configured.
    pub fn cluster(&self, alias: &str) -> Option<&ClusterSettings> {
        self.clusters.get(alias)
    }
}

/// How to reach one cluster.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClusterSettings {
    /// The alias (also the prefix of remote topic names under the default naming policy).
    pub alias: String,
    /// `host:port` addresses to bootstrap from (never empty).
    pub bootstrap_servers: Vec<String>,
    /// Transport security.
    pub security_protocol: SecurityProtocol,
    /// Client id sent to the brokers (default `"strait"`).
    pub client_id: String,
    /// How long to wait for a response (default 30 s).
    pub request_timeout: Duration,
    /// How long to wait for a TCP connection (default 10 s).
    pub connect_timeout: Duration,
    /// Replication factor of topics strait creates here; -1 (default) = the broker's default.
    pub replication_factor: i16,
    /// SASL credentials (with `SASL_PLAINTEXT` / `SASL_SSL`).
    pub sasl: Option<SaslSettings>,
    /// TLS settings (with `SSL` / `SASL_SSL`).
    pub tls: TlsSettings,
}

impl ClusterSettings {
    /// Settings with defaults for `alias` reached at `bootstrap_servers`.
    pub fn new(alias: &str, bootstrap_servers: Vec<String>) -> ClusterSettings {
        ClusterSettings {
            alias: alias.to_string(),
            bootstrap_servers,
            security_protocol: SecurityProtocol::Plaintext,
            client_id: DEFAULT_CLIENT_ID.to_string(),
            request_timeout: Duration::from_secs(30),
            connect_timeout: Duration::from_secs(10),
            replication_factor: -1,
            sasl: None,
            tls: TlsSettings::default(),
        }
    }

    /// Secrets of this cluster written in clear in the configuration file, described by
    /// cluster and role (never by value).
    pub fn literal_secrets(&self) -> Vec<String> {
        match &self.sasl {
            Some(s) if s.password.source() == &SecretSource::Literal => {
                vec![format!("the SASL password of cluster {}", self.alias)]
            }
            _ => Vec::new(),
        }
    }
}

/// Kafka's `security.protocol`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SecurityProtocol {
    /// `PLAINTEXT`.
    #[default]
    Plaintext,
    /// `SSL`.
    Ssl,
    /// `SASL_PLAINTEXT`.
    SaslPlaintext,
    /// `SASL_SSL`.
    SaslSsl,
}

impl SecurityProtocol {
    /// All values, in the order they are listed in messages.
    pub const ALL: [SecurityProtocol; 4] = [
        SecurityProtocol::Plaintext,
        SecurityProtocol::Ssl,
        SecurityProtocol::SaslPlaintext,
        SecurityProtocol::SaslSsl,
    ];

    /// Kafka's name, e.g. `"SASL_SSL"`.
    pub fn as_str(self) -> &'static str {
        match self {
            SecurityProtocol::Plaintext => "PLAINTEXT",
            SecurityProtocol::Ssl => "SSL",
            SecurityProtocol::SaslPlaintext => "SASL_PLAINTEXT",
            SecurityProtocol::SaslSsl => "SASL_SSL",
        }
    }

    /// Parses Kafka's name, ignoring case and surrounding whitespace.
    pub fn parse(s: &str) -> Option<SecurityProtocol> {
        let s = s.trim();
        SecurityProtocol::ALL
            .into_iter()
            .find(|p| p.as_str().eq_ignore_ascii_case(s))
    }

    fn allowed() -> String {
        SecurityProtocol::ALL.map(|p| p.as_str()).join(", ")
    }

    /// Whether connections use TLS (`SSL`, `SASL_SSL`).
    pub fn uses_tls(self) -> bool {
        matches!(self, SecurityProtocol::Ssl | SecurityProtocol::SaslSsl)
    }

    /// Whether connections authenticate with SASL (`SASL_PLAINTEXT`, `SASL_SSL`).
    pub fn uses_sasl(self) -> bool {
        matches!(
            self,
            SecurityProtocol::SaslPlaintext | SecurityProtocol::SaslSsl
        )
    }
}

/// How remote topics are named on the target cluster.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NamingPolicy {
    /// `<source alias><separator><topic>`, like MM2's `DefaultReplicationPolicy`.
    Default {
        /// Separator between alias and topic (default `"."`).
        separator: String,
    },
    /// Same name as upstream, like MM2's `IdentityReplicationPolicy`.
    Identity,
}

impl Default for NamingPolicy {
    fn default() -> NamingPolicy {
        NamingPolicy::Default {
            separator: DEFAULT_SEPARATOR.to_string(),
        }
    }
}

/// What a flow does with the topics it selects.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum FlowMode {
    /// MirrorMaker 2 style replication into remote topics (default).
    #[default]
    Replicate,
    /// Cluster Linking style mirror topics.
    Mirror,
}

impl FlowMode {
    /// The TOML spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            FlowMode::Replicate => "replicate",
            FlowMode::Mirror => "mirror",
        }
    }
}

/// One replication flow, `source` → `target`.
#[derive(Debug, Clone, PartialEq)]
pub struct FlowConfig {
    /// Source cluster alias.
    pub source: String,
    /// Target cluster alias.
    pub target: String,
    /// Whether the flow runs (default true).
    pub enabled: bool,
    /// Replicate or mirror.
    pub mode: FlowMode,
    /// Topic regexes to replicate (full match; default `.*`).
    pub topics: Vec<String>,
    /// Topic regexes never replicated; beats `topics`.
    pub topics_exclude: Vec<String>,
    /// Group regexes whose offsets are translated (full match; default `.*`).
    pub groups: Vec<String>,
    /// Group regexes never translated; beats `groups`.
    pub groups_exclude: Vec<String>,
    /// Remote topic naming.
    pub naming: NamingPolicy,
    /// How often to look for new topics and partitions (default 600 s).
    pub refresh_topics_interval: Duration,
    /// How often to look for new consumer groups (default 600 s).
    pub refresh_groups_interval: Duration,
    /// How often to emit checkpoints (default 60 s).
    pub checkpoint_interval: Duration,
    /// How often to emit heartbeats (default 1 s).
    pub heartbeat_interval: Duration,
    /// How often to emit offset syncs per active partition (default 1 s).
    pub offset_sync_interval: Duration,
    /// Emit heartbeats (default true).
    pub emit_heartbeats: bool,
    /// Emit checkpoints (default true).
    pub emit_checkpoints: bool,
    /// Emit offset syncs (default true; checkpoints need them).
    pub emit_offset_syncs: bool,
    /// Write translated offsets into idle groups on the target (default false).
    pub sync_group_offsets: bool,
    /// How often to sync group offsets (default 60 s).
    pub sync_group_offsets_interval: Duration,
    /// Memory bound of this flow's data path in bytes (default 8 MiB).
    pub buffer_bytes: usize,
    /// Largest fetch response in bytes (default 1 MiB; raise it with `buffer_bytes` on
    /// high-latency links: one Fetch per source broker is outstanding at a time).
    pub fetch_max_bytes: i32,
    /// Longest a fetch waits for data (default 500 ms).
    pub fetch_max_wait: Duration,
    /// Mirror flows: the link name (default the flow name, `source->target`).
    pub link: Option<String>,
    /// Mirror flows: sync consumer offsets of mirrored topics into the target (default true).
    pub consumer_offset_sync: bool,
    /// Mirror flows: how often consumer offsets are synced (default 5 s).
    pub consumer_offset_sync_interval: Duration,
    /// Mirror flows: which groups are synced, in Cluster Linking's JSON form (default all).
    pub consumer_offset_group_filters: GroupFilters,
}

impl FlowConfig {
    /// A flow with every setting at its default.
    pub fn new(source: &str, target: &str) -> FlowConfig {
        let list = |l: &[&str]| l.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        FlowConfig {
            source: source.to_string(),
            target: target.to_string(),
            enabled: true,
            mode: FlowMode::Replicate,
            topics: list(DEFAULT_TOPICS),
            topics_exclude: list(DEFAULT_TOPICS_EXCLUDE),
            groups: list(DEFAULT_GROUPS),
            groups_exclude: list(DEFAULT_GROUPS_EXCLUDE),
            naming: NamingPolicy::default(),
            refresh_topics_interval: Duration::from_secs(600),
            refresh_groups_interval: Duration::from_secs(600),
            checkpoint_interval: Duration::from_secs(60),
            heartbeat_interval: Duration::from_secs(1),
            offset_sync_interval: Duration::from_secs(1),
            emit_heartbeats: true,
            emit_checkpoints: true,
            emit_offset_syncs: true,
            sync_group_offsets: false,
            sync_group_offsets_interval: Duration::from_secs(60),
            buffer_bytes: 8 * MIB,
            fetch_max_bytes: 1024 * 1024,
            fetch_max_wait: Duration::from_millis(500),
            link: None,
            consumer_offset_sync: true,
            consumer_offset_sync_interval: Duration::from_secs(5),
            consumer_offset_group_filters: GroupFilters::all(),
        }
    }

    /// `"source->target"`.
    pub fn name(&self) -> String {
        format!("{}->{}", self.source, self.target)
    }

    /// The link name of a mirror flow: `link`, or the flow name.
    pub fn link_name(&self) -> String {
        self.link.clone().unwrap_or_else(|| self.name())
    }

    fn duration_mut(&mut self, field: &str) -> Option<&mut Duration> {
        Some(match field {
            "refresh_topics_interval" => &mut self.refresh_topics_interval,
            "refresh_groups_interval" => &mut self.refresh_groups_interval,
            "checkpoint_interval" => &mut self.checkpoint_interval,
            "heartbeat_interval" => &mut self.heartbeat_interval,
            "offset_sync_interval" => &mut self.offset_sync_interval,
            "sync_group_offsets_interval" => &mut self.sync_group_offsets_interval,
            "fetch_max_wait" => &mut self.fetch_max_wait,
            "consumer_offset_sync_interval" => &mut self.consumer_offset_sync_interval,
            _ => return None,
        })
    }

    fn durations(&self) -> [(&'static str, Duration); 8] {
        [
            ("refresh_topics_interval", self.refresh_topics_interval),
            ("refresh_groups_interval", self.refresh_groups_interval),
            ("checkpoint_interval", self.checkpoint_interval),
            ("heartbeat_interval", self.heartbeat_interval),
            ("offset_sync_interval", self.offset_sync_interval),
            (
                "sync_group_offsets_interval",
                self.sync_group_offsets_interval,
            ),
            ("fetch_max_wait", self.fetch_max_wait),
            (
                "consumer_offset_sync_interval",
                self.consumer_offset_sync_interval,
            ),
        ]
    }

    fn bool_mut(&mut self, field: &str) -> Option<&mut bool> {
        Some(match field {
            "enabled" => &mut self.enabled,
            "emit_heartbeats" => &mut self.emit_heartbeats,
            "emit_checkpoints" => &mut self.emit_checkpoints,
            "emit_offset_syncs" => &mut self.emit_offset_syncs,
            "sync_group_offsets" => &mut self.sync_group_offsets,
            "consumer_offset_sync" => &mut self.consumer_offset_sync,
            _ => return None,
        })
    }

    fn list_mut(&mut self, field: &str) -> Option<&mut Vec<String>> {
        Some(match field {
            "topics" => &mut self.topics,
            "topics_exclude" => &mut self.topics_exclude,
            "groups" => &mut self.groups,
            "groups_exclude" => &mut self.groups_exclude,
            _ => return None,
        })
    }
}

/// A configuration problem: which file, which key, what is wrong, and what is allowed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{origin}: {key}: {problem}{}", allowed_suffix(.allowed))]
pub struct ConfigError {
    /// The file (MM2: `file:line` when the line is known).
    pub origin: String,
    /// The key as written (TOML: a path such as `flows[0].topics`).
    pub key: String,
    /// What is wrong.
    pub problem: String,
    /// What would be accepted, when that can be listed.
    pub allowed: Option<String>,
}

fn allowed_suffix(allowed: &Option<String>) -> String {
    match allowed {
        Some(a) => format!(" (allowed: {a})"),
        None => String::new(),
    }
}

impl ConfigError {
    fn new(origin: &str, key: impl Into<String>, problem: impl Into<String>) -> ConfigError {
        ConfigError {
            origin: origin.to_string(),
            key: key.into(),
            problem: problem.into(),
            allowed: None,
        }
    }

    fn allowed(mut self, allowed: impl Into<String>) -> ConfigError {
        self.allowed = Some(allowed.into());
        self
    }
}

/// The two file formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConfigFormat {
    /// strait's TOML.
    Toml,
    /// MirrorMaker 2's `mm2.properties`.
    Mm2,
}

// ------------------------------------------------------------------------------------------------
// Entry points
// ------------------------------------------------------------------------------------------------

/// Reads a configuration file in either format (see [`detect_format`]).
pub fn load(path: &Path) -> Result<Config, ConfigError> {
    let origin = path.display().to_string();
    let text = std::fs::read_to_string(path)
        .map_err(|e| ConfigError::new(&origin, "file", format!("cannot read it: {e}")))?;
    parse(&text, &origin, detect_format(path, &text))
}

/// The format of a file: by extension (`.toml`, `.properties`), else MM2 when a line reads
/// `clusters = ...` or `clusters: ...`, else TOML.
pub fn detect_format(path: &Path, text: &str) -> ConfigFormat {
    match path.extension().and_then(|e| e.to_str()) {
        Some(e) if e.eq_ignore_ascii_case("toml") => ConfigFormat::Toml,
        Some(e) if e.eq_ignore_ascii_case("properties") => ConfigFormat::Mm2,
        _ if looks_like_mm2(text) => ConfigFormat::Mm2,
        _ => ConfigFormat::Toml,
    }
}

fn looks_like_mm2(text: &str) -> bool {
    text.lines().any(|line| {
        line.trim_start()
            .strip_prefix("clusters")
            .map(|rest| rest.trim_start().starts_with(['=', ':']))
            .unwrap_or(false)
    })
}

/// Parses `text` in the given format; `origin` names the file in errors.
pub fn parse(text: &str, origin: &str, format: ConfigFormat) -> Result<Config, ConfigError> {
    match format {
        ConfigFormat::Toml => parse_toml(text, origin),
        ConfigFormat::Mm2 => parse_mm2(text, origin),
    }
}

// ------------------------------------------------------------------------------------------------
// Provenance: which key set a field, for error messages
// ------------------------------------------------------------------------------------------------

#[derive(Debug, Clone)]
struct Where {
    key: String,
    line: Option<usize>,
}

impl Where {
    fn key(key: impl Into<String>) -> Where {
        Where {
            key: key.into(),
            line: None,
        }
    }

    fn error(&self, file: &str, problem: impl Into<String>) -> ConfigError {
        let origin = match self.line {
            Some(line) => format!("{file}:{line}"),
            None => file.to_string(),
        };
        ConfigError::new(&origin, self.key.clone(), problem)
    }
}

/// Where each field of one flow came from.
struct FlowProv {
    format: ConfigFormat,
    /// `flows[0]` / `defaults` (TOML) or `A->B` (MM2).
    table: String,
    set: HashMap<&'static str, Where>,
}

impl FlowProv {
    fn new(format: ConfigFormat, table: String) -> FlowProv {
        FlowProv {
            format,
            table,
            set: HashMap::new(),
        }
    }

    /// The key a user writes for `field` in this format.
    fn name(&self, field: &'static str) -> &'static str {
        match self.format {
            ConfigFormat::Toml => toml_name(field),
            ConfigFormat::Mm2 => mm2_name(field),
        }
    }

    fn at(&self, field: &'static str) -> Where {
        match self.set.get(field) {
            Some(w) => w.clone(),
            None if self.table.is_empty() => Where::key(self.name(field)),
            None => Where::key(format!("{}.{}", self.table, self.name(field))),
        }
    }
}

fn toml_name(field: &'static str) -> &'static str {
    match field {
        "refresh_topics_interval" => "refresh_topics_interval_secs",
        "refresh_groups_interval" => "refresh_groups_interval_secs",
        "checkpoint_interval" => "checkpoint_interval_secs",
        "heartbeat_interval" => "heartbeat_interval_secs",
        "offset_sync_interval" => "offset_sync_interval_secs",
        "sync_group_offsets_interval" => "sync_group_offsets_interval_secs",
        "fetch_max_wait" => "fetch_max_wait_ms",
        "consumer_offset_sync_interval" => "consumer_offset_sync_interval_ms",
        other => other,
    }
}

fn mm2_name(field: &'static str) -> &'static str {
    match field {
        "source" | "target" | "enabled" => "enabled",
        "topics_exclude" => "topics.exclude",
        "groups_exclude" => "groups.exclude",
        "naming" => "replication.policy.class",
        "separator" => "replication.policy.separator",
        "refresh_topics_interval" => "refresh.topics.interval.seconds",
        "refresh_groups_interval" => "refresh.groups.interval.seconds",
        "checkpoint_interval" => "emit.checkpoints.interval.seconds",
        "heartbeat_interval" => "emit.heartbeats.interval.seconds",
        "sync_group_offsets_interval" => "sync.group.offsets.interval.seconds",
        "emit_heartbeats" => "emit.heartbeats.enabled",
        "emit_checkpoints" => "emit.checkpoints.enabled",
        "emit_offset_syncs" => "emit.offset-syncs.enabled",
        "sync_group_offsets" => "sync.group.offsets.enabled",
        other => other,
    }
}

// ------------------------------------------------------------------------------------------------
// Validation shared by both formats
// ------------------------------------------------------------------------------------------------

const ALIAS_RULE: &str = "letters, digits, `_` and `-`";

fn check_alias(alias: &str) -> Result<(), String> {
    if alias.is_empty() {
        return Err("a cluster alias must not be empty".into());
    }
    if let Some(c) = alias
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || *c == '_' || *c == '-'))
    {
        return Err(format!(
            "cluster alias `{alias}` contains `{c}`; aliases name remote topics and MM2 flow keys (`A->B.`)"
        ));
    }
    Ok(())
}

fn check_regex(re: &str) -> Result<(), String> {
    if re.is_empty() {
        return Err("an empty pattern matches no name; remove it".into());
    }
    // Compile the pattern as written first so the error positions match the user's text.
    Regex::new(re).map_err(|e| e.to_string())?;
    Regex::new(&format!("^(?:{re})$")).map_err(|e| e.to_string())?;
    Ok(())
}

fn check_host_port(s: &str) -> Result<(), String> {
    let Some((host, port)) = s.rsplit_once(':') else {
        return Err(format!("`{s}` has no port"));
    };
    if host.is_empty() {
        return Err(format!("`{s}` has no host"));
    }
    match port.parse::<u16>() {
        Ok(p) if p > 0 => Ok(()),
        _ => Err(format!("`{s}` has an invalid port `{port}`")),
    }
}

fn split_servers(s: &str) -> Vec<String> {
    s.split(',')
        .map(|x| x.trim().to_string())
        .filter(|x| !x.is_empty())
        .collect()
}

fn check_timeout_ms(d: Duration) -> Result<(), String> {
    if d.is_zero() {
        return Err("must be greater than zero".into());
    }
    if d.as_millis() > i32::MAX as u128 {
        return Err(format!(
            "{} ms is more than Kafka's limit of {} ms",
            d.as_millis(),
            i32::MAX
        ));
    }
    Ok(())
}

/// Checks the values that stand on their own (regex lists, separator); also used for
/// `[defaults]` and MM2's global keys, which cross-setting checks see only through a flow.
fn validate_values(file: &str, flow: &FlowConfig, prov: &FlowProv) -> Result<(), ConfigError> {
    let lists = [
        ("topics", &flow.topics),
        ("topics_exclude", &flow.topics_exclude),
        ("groups", &flow.groups),
        ("groups_exclude", &flow.groups_exclude),
    ];
    for (field, list) in lists {
        for re in list.iter() {
            if let Err(msg) = check_regex(re) {
                return Err(prov
                    .at(field)
                    .error(file, format!("invalid regular expression `{re}`: {msg}"))
                    .allowed("regular expressions in the `regex` crate's syntax, matched against whole names"));
            }
        }
    }
    if let NamingPolicy::Default { separator } = &flow.naming {
        if separator.is_empty() {
            return Err(prov
                .at("separator")
                .error(file, "the separator must not be empty")
                .allowed("a non-empty string such as \".\""));
        }
    }
    Ok(())
}

/// Checks one flow's own values.
fn validate_flow(file: &str, flow: &FlowConfig, prov: &FlowProv) -> Result<(), ConfigError> {
    validate_values(file, flow, prov)?;
    for (field, d) in flow.durations() {
        if d.is_zero() {
            let allowed = match prov.format {
                ConfigFormat::Toml => {
                    "a positive integer (`_secs` = seconds, `_ms` = milliseconds)"
                }
                ConfigFormat::Mm2 => "a positive whole number of seconds",
            };
            return Err(prov
                .at(field)
                .error(file, "an interval of zero is not allowed")
                .allowed(allowed));
        }
    }
    if flow.fetch_max_wait.as_millis() > i32::MAX as u128 {
        return Err(prov
            .at("fetch_max_wait")
            .error(file, "longer than Kafka's limit for a fetch wait")
            .allowed(format!("1 to {} ms", i32::MAX)));
    }
    if let NamingPolicy::Default { separator } = &flow.naming {
        for alias in [&flow.source, &flow.target] {
            if alias.contains(separator.as_str()) {
                return Err(prov
                    .at("separator")
                    .error(
                        file,
                        format!(
                            "cluster alias `{alias}` contains the separator `{separator}`: remote topics are \
                             named `<alias>{separator}<topic>` and the source cluster is read back as the text \
                             before the first separator, so `{alias}{separator}<topic>` would be misparsed \
                             (MirrorMaker 2 has the same limitation)"
                        ),
                    )
                    .allowed(format!(
                        "a separator that occurs in neither `{}` nor `{}`, or identity naming",
                        flow.source, flow.target
                    )));
            }
        }
    }
    if flow.fetch_max_bytes <= 0 {
        return Err(prov
            .at("fetch_max_bytes")
            .error(file, "must be greater than zero")
            .allowed(format!("1 to {} bytes", i32::MAX)));
    }
    if flow.buffer_bytes < flow.fetch_max_bytes as usize {
        let field = if prov.set.contains_key("buffer_bytes") {
            "buffer_bytes"
        } else {
            "fetch_max_bytes"
        };
        return Err(prov
            .at(field)
            .error(
                file,
                format!(
                    "buffer_bytes ({}) is smaller than fetch_max_bytes ({}): one fetch response must fit in the buffer",
                    flow.buffer_bytes, flow.fetch_max_bytes
                ),
            )
            .allowed("buffer_bytes >= fetch_max_bytes"));
    }
    if !flow.emit_offset_syncs && (flow.emit_checkpoints || flow.sync_group_offsets) {
        return Err(prov
            .at("emit_offset_syncs")
            .error(
                file,
                "offset syncs are off but checkpoints or group offset sync are on; translating group \
                 offsets needs offset syncs",
            )
            .allowed(format!(
                "{} = true, or {} = false and {} = false",
                prov.name("emit_offset_syncs"),
                prov.name("emit_checkpoints"),
                prov.name("sync_group_offsets")
            )));
    }
    Ok(())
}

/// Checks flows against the clusters and each other.
fn validate_flows(
    file: &str,
    clusters: &BTreeMap<String, ClusterSettings>,
    flows: &[(FlowConfig, FlowProv)],
) -> Result<(), ConfigError> {
    let known = || clusters.keys().cloned().collect::<Vec<_>>().join(", ");
    let mut seen: HashMap<(&str, &str), &str> = HashMap::new();
    for (flow, prov) in flows {
        for (field, alias) in [("source", &flow.source), ("target", &flow.target)] {
            if !clusters.contains_key(alias.as_str()) {
                return Err(prov
                    .at(field)
                    .error(file, format!("unknown cluster alias `{alias}`"))
                    .allowed(known()));
            }
        }
        if flow.source == flow.target {
            return Err(prov
                .at("target")
                .error(
                    file,
                    format!(
                        "source and target are the same cluster `{}`; a flow copies between two clusters",
                        flow.source
                    ),
                )
                .allowed(
                    clusters
                        .keys()
                        .filter(|a| **a != flow.source)
                        .cloned()
                        .collect::<Vec<_>>()
                        .join(", "),
                ));
        }
        if let Some(first) = seen.insert((&flow.source, &flow.target), &prov.table) {
            return Err(ConfigError::new(
                file,
                prov.table.clone(),
                format!(
                    "duplicate flow {} (already defined by {first}); each source->target pair may appear once",
                    flow.name()
                ),
            ));
        }
        validate_flow(file, flow, prov)?;
    }
    Ok(())
}

fn check_replication_factor(n: i64) -> Result<i16, String> {
    if n == -1 || (1..=i16::MAX as i64).contains(&n) {
        Ok(n as i16)
    } else {
        Err(format!("{n} is not a valid replication factor"))
    }
}

const REPLICATION_FACTOR_ALLOWED: &str = "-1 (broker default) or 1 to 32767";

// ------------------------------------------------------------------------------------------------
// TOML
// ------------------------------------------------------------------------------------------------

const TOP_KEYS: &[&str] = &["http", "instance_group", "clusters", "defaults", "flows"];

/// The instance group of a configuration that names none.
pub const DEFAULT_INSTANCE_GROUP: &str = "default";

const CLUSTER_KEYS: &[&str] = &[
    "bootstrap_servers",
    "security_protocol",
    "client_id",
    "request_timeout_secs",
    "request_timeout_ms",
    "connect_timeout_secs",
    "connect_timeout_ms",
    "replication_factor",
    "sasl_mechanism",
    "sasl_username",
    "sasl_password",
    "ssl_ca_file",
    "ssl_certificate_file",
    "ssl_key_file",
    "ssl_server_name",
];

const HTTP_KEYS: &[&str] = &["listen", "allow_remote", "tls_cert", "tls_key", "token"];

const FLOW_DURATIONS: &[&str] = &[
    "refresh_topics_interval",
    "refresh_groups_interval",
    "checkpoint_interval",
    "heartbeat_interval",
    "offset_sync_interval",
    "sync_group_offsets_interval",
    "fetch_max_wait",
    "consumer_offset_sync_interval",
];

const FLOW_KEYS: &[&str] = &[
    "source",
    "target",
    "enabled",
    "mode",
    "topics",
    "topics_exclude",
    "groups",
    "groups_exclude",
    "naming",
    "separator",
    "refresh_topics_interval_secs",
    "refresh_topics_interval_ms",
    "refresh_groups_interval_secs",
    "refresh_groups_interval_ms",
    "checkpoint_interval_secs",
    "checkpoint_interval_ms",
    "heartbeat_interval_secs",
    "heartbeat_interval_ms",
    "offset_sync_interval_secs",
    "offset_sync_interval_ms",
    "sync_group_offsets_interval_secs",
    "sync_group_offsets_interval_ms",
    "fetch_max_wait_secs",
    "fetch_max_wait_ms",
    "emit_heartbeats",
    "emit_checkpoints",
    "emit_offset_syncs",
    "sync_group_offsets",
    "buffer_bytes",
    "fetch_max_bytes",
    "link",
    "consumer_offset_sync",
    "consumer_offset_sync_interval_secs",
    "consumer_offset_sync_interval_ms",
    "consumer_offset_group_filters",
];

/// MM2 keys a user may carry over into TOML by habit, and their TOML names.
const MM2_TO_TOML: &[(&str, &str)] = &[
    ("bootstrap.servers", "bootstrap_servers"),
    ("security.protocol", "security_protocol"),
    ("sasl.mechanism", "sasl_mechanism"),
    ("sasl.jaas.config", "sasl_username"),
    ("ssl.truststore.location", "ssl_ca_file"),
    ("ssl.keystore.location", "ssl_certificate_file"),
    ("client.id", "client_id"),
    ("request.timeout.ms", "request_timeout_ms"),
    ("replication.factor", "replication_factor"),
    ("topics.exclude", "topics_exclude"),
    ("topics.blacklist", "topics_exclude"),
    ("groups.exclude", "groups_exclude"),
    ("groups.blacklist", "groups_exclude"),
    ("replication.policy.class", "naming"),
    ("replication.policy.separator", "separator"),
    (
        "refresh.topics.interval.seconds",
        "refresh_topics_interval_secs",
    ),
    (
        "refresh.groups.interval.seconds",
        "refresh_groups_interval_secs",
    ),
    (
        "emit.checkpoints.interval.seconds",
        "checkpoint_interval_secs",
    ),
    (
        "emit.heartbeats.interval.seconds",
        "heartbeat_interval_secs",
    ),
    ("emit.checkpoints.enabled", "emit_checkpoints"),
    ("emit.heartbeats.enabled", "emit_heartbeats"),
    ("emit.offset-syncs.enabled", "emit_offset_syncs"),
    ("sync.group.offsets.enabled", "sync_group_offsets"),
    (
        "sync.group.offsets.interval.seconds",
        "sync_group_offsets_interval_secs",
    ),
];

fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut cur = vec![i + 1; b.len() + 1];
        for (j, cb) in b.iter().enumerate() {
            let cost = usize::from(ca != *cb);
            cur[j + 1] = (prev[j] + cost).min(prev[j + 1] + 1).min(cur[j] + 1);
        }
        prev = cur;
    }
    prev[b.len()]
}

fn suggest(key: &str, allowed: &[&str]) -> Option<String> {
    if let Some((_, t)) = MM2_TO_TOML.iter().find(|(m, _)| *m == key) {
        if allowed.contains(t) {
            return Some(t.to_string());
        }
    }
    let normal = key.to_ascii_lowercase().replace(['.', '-'], "_");
    let normal = normal
        .strip_suffix("_seconds")
        .map(|s| format!("{s}_secs"))
        .unwrap_or(normal);
    for candidate in [normal.clone(), format!("{normal}_secs")] {
        if allowed.contains(&candidate.as_str()) {
            return Some(candidate);
        }
    }
    allowed
        .iter()
        .map(|a| (edit_distance(&normal, a), *a))
        .filter(|(d, _)| *d <= 2)
        .min()
        .map(|(_, a)| a.to_string())
}

/// The full name of a key written with dots (`a.b.c = 1` is a nested table in TOML).
fn dotted_name(key: &str, v: &toml::Value) -> String {
    let mut name = key.to_string();
    let mut v = v;
    while let Some(t) = v.as_table() {
        let mut entries = t.iter();
        match (entries.next(), entries.next()) {
            (Some((k, inner)), None) => {
                name.push('.');
                name.push_str(k);
                v = inner;
            }
            _ => break,
        }
    }
    name
}

fn unknown_key(file: &str, path: &str, key: &str, allowed: &[&str], hint: &str) -> ConfigError {
    let mut problem = "unknown key".to_string();
    if let Some(s) = suggest(key, allowed) {
        problem.push_str(&format!("; did you mean `{s}`?"));
    }
    problem.push_str(hint);
    ConfigError::new(file, path, problem).allowed(allowed.join(", "))
}

/// A hint for a top-level key written below a table header, where TOML puts it in that table.
fn misplaced_hint(key: &str) -> &'static str {
    if TOP_KEYS.contains(&key) {
        "; top-level keys such as `http` must come before the first [table] header"
    } else {
        ""
    }
}

fn toml_syntax_error(file: &str, text: &str, e: &toml::de::Error) -> ConfigError {
    let origin = match e.span() {
        Some(span) => {
            let before = &text[..span.start.min(text.len())];
            let line = before.matches('\n').count() + 1;
            let col = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
            format!("{file}:{line}:{col}")
        }
        None => file.to_string(),
    };
    // One line: the parser's message can span several.
    let message = e
        .message()
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join("; ");
    ConfigError::new(&origin, "TOML syntax", message)
}

fn wrong_type(file: &str, path: &str, v: &toml::Value, expected: &str) -> ConfigError {
    ConfigError::new(
        file,
        path,
        format!("expected {expected}, found a {}", v.type_str()),
    )
}

fn toml_str<'v>(file: &str, path: &str, v: &'v toml::Value) -> Result<&'v str, ConfigError> {
    v.as_str()
        .ok_or_else(|| wrong_type(file, path, v, "a string"))
}

fn toml_bool(file: &str, path: &str, v: &toml::Value) -> Result<bool, ConfigError> {
    v.as_bool()
        .ok_or_else(|| wrong_type(file, path, v, "true or false").allowed("true, false"))
}

fn toml_regex_list(file: &str, path: &str, v: &toml::Value) -> Result<Vec<String>, ConfigError> {
    let not_list = || {
        wrong_type(file, path, v, "an array of regular expressions")
            .allowed("an array of strings, e.g. [\"global_iot\", \"orders\\\\..*\"]")
    };
    let arr = v.as_array().ok_or_else(not_list)?;
    arr.iter()
        .enumerate()
        .map(|(i, item)| {
            item.as_str()
                .map(str::to_string)
                .ok_or_else(|| wrong_type(file, &format!("{path}[{i}]"), item, "a string"))
        })
        .collect()
}

fn toml_duration(
    file: &str,
    path: &str,
    v: &toml::Value,
    millis: bool,
) -> Result<Duration, ConfigError> {
    let unit = if millis { "milliseconds" } else { "seconds" };
    let allowed = format!("a positive integer number of {unit}");
    let n = v.as_integer().ok_or_else(|| {
        wrong_type(file, path, v, &format!("an integer number of {unit}")).allowed(allowed.clone())
    })?;
    if n < 0 {
        return Err(ConfigError::new(file, path, format!("{n} is negative")).allowed(allowed));
    }
    if n == 0 {
        return Err(
            ConfigError::new(file, path, "an interval of zero is not allowed").allowed(allowed),
        );
    }
    let n = n as u64;
    Ok(if millis {
        Duration::from_millis(n)
    } else {
        Duration::from_secs(n)
    })
}

const SIZE_ALLOWED: &str =
    "a positive integer number of bytes or a string like \"64MiB\" (units: B, KiB, MiB, GiB)";

fn toml_size(file: &str, path: &str, v: &toml::Value) -> Result<u64, ConfigError> {
    let bad = |problem: String| ConfigError::new(file, path, problem).allowed(SIZE_ALLOWED);
    let n = match v {
        toml::Value::Integer(n) => {
            if *n <= 0 {
                return Err(bad(format!("{n} is not a positive size")));
            }
            *n as u64
        }
        toml::Value::String(s) => {
            let t = s.trim();
            let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
            let (digits, unit) = t.split_at(split);
            let mult: u64 = match unit.trim().to_ascii_lowercase().as_str() {
                "" | "b" => 1,
                "kib" => 1 << 10,
                "mib" => 1 << 20,
                "gib" => 1 << 30,
                _ => return Err(bad(format!("`{s}` has an unknown unit"))),
            };
            let n: u64 = digits
                .parse()
                .map_err(|_| bad(format!("`{s}` is not a size")))?;
            if n == 0 {
                return Err(bad(format!("`{s}` is not a positive size")));
            }
            n.checked_mul(mult)
                .ok_or_else(|| bad(format!("`{s}` is too large")))?
        }
        other => return Err(wrong_type(file, path, other, "a size").allowed(SIZE_ALLOWED)),
    };
    Ok(n)
}

/// Naming settings gathered over the `[defaults]` layer (0) and the flow's own table (1).
#[derive(Default)]
struct NamingParts {
    identity: Option<(bool, usize)>,
    separator: Option<(String, usize)>,
}

/// Applies one TOML table of flow keys (`[defaults]` or a `[[flows]]` entry) onto `flow`.
fn apply_flow_table(
    file: &str,
    table: &toml::Table,
    table_path: &str,
    layer: usize,
    flow: &mut FlowConfig,
    prov: &mut FlowProv,
    naming: &mut NamingParts,
) -> Result<(), ConfigError> {
    let is_defaults = layer == 0;
    let allowed: Vec<&str> = FLOW_KEYS
        .iter()
        .copied()
        .filter(|k| !is_defaults || (*k != "source" && *k != "target"))
        .collect();
    for (key, v) in table {
        let path = format!("{table_path}.{key}");
        let here = Where::key(path.clone());
        let field: &'static str = match FLOW_KEYS.iter().find(|k| **k == key.as_str()) {
            Some(k) if allowed.contains(k) => k,
            _ => {
                let hint = if is_defaults && (key == "source" || key == "target") {
                    "; source and target belong in each [[flows]] entry"
                } else {
                    misplaced_hint(key)
                };
                let key = dotted_name(key, v);
                let path = format!("{table_path}.{key}");
                return Err(unknown_key(file, &path, &key, &allowed, hint));
            }
        };
        match field {
            "source" | "target" => continue, // read by the caller
            "mode" => {
                let s = toml_str(file, &path, v)?;
                flow.mode = match s.trim().to_ascii_lowercase().as_str() {
                    "replicate" => FlowMode::Replicate,
                    "mirror" => FlowMode::Mirror,
                    _ => {
                        return Err(ConfigError::new(file, &path, format!("unknown mode `{s}`"))
                            .allowed("replicate, mirror"))
                    }
                };
            }
            "naming" => {
                let s = toml_str(file, &path, v)?;
                let identity = match s.trim().to_ascii_lowercase().as_str() {
                    "default" => false,
                    "identity" => true,
                    _ => {
                        return Err(ConfigError::new(
                            file,
                            &path,
                            format!("unknown naming policy `{s}`"),
                        )
                        .allowed("default (`<source><separator><topic>`), identity (same name)"))
                    }
                };
                naming.identity = Some((identity, layer));
            }
            "separator" => {
                naming.separator = Some((toml_str(file, &path, v)?.to_string(), layer));
            }
            "link" => {
                let s = toml_str(file, &path, v)?.trim().to_string();
                if s.is_empty() || s.contains('|') {
                    return Err(
                        ConfigError::new(file, &path, format!("bad link name `{s}`"))
                            .allowed("a non-empty name without `|`"),
                    );
                }
                flow.link = Some(s);
            }
            "consumer_offset_group_filters" => {
                let s = toml_str(file, &path, v)?;
                flow.consumer_offset_group_filters =
                    GroupFilters::parse(s).map_err(|e| ConfigError::new(file, &path, e))?;
            }
            "buffer_bytes" => {
                let n = toml_size(file, &path, v)?;
                flow.buffer_bytes = usize::try_from(n).map_err(|_| {
                    ConfigError::new(file, &path, "too large for this machine")
                        .allowed(SIZE_ALLOWED)
                })?;
            }
            "fetch_max_bytes" => {
                let n = toml_size(file, &path, v)?;
                flow.fetch_max_bytes = i32::try_from(n).map_err(|_| {
                    ConfigError::new(file, &path, format!("{n} bytes is more than Kafka allows"))
                        .allowed(format!("1 to {} bytes", i32::MAX))
                })?;
            }
            _ => {
                if let Some(list) = flow.list_mut(field) {
                    *list = toml_regex_list(file, &path, v)?;
                } else if let Some(b) = flow.bool_mut(field) {
                    *b = toml_bool(file, &path, v)?;
                } else {
                    // A duration key: `<base>_secs` or `<base>_ms`.
                    let (base, millis) = match field.strip_suffix("_ms") {
                        Some(b) => (b, true),
                        None => (field.strip_suffix("_secs").unwrap_or(field), false),
                    };
                    let other = if millis {
                        format!("{base}_secs")
                    } else {
                        format!("{base}_ms")
                    };
                    if table.contains_key(&other) {
                        return Err(ConfigError::new(
                            file,
                            &path,
                            format!("also set as `{other}` in the same table; set one"),
                        )
                        .allowed(format!("{base}_secs or {base}_ms")));
                    }
                    let d = toml_duration(file, &path, v, millis)?;
                    let base: &'static str = FLOW_DURATIONS
                        .iter()
                        .copied()
                        .find(|b| *b == base)
                        .unwrap_or("fetch_max_wait");
                    if let Some(slot) = flow.duration_mut(base) {
                        *slot = d;
                    }
                    prov.set.insert(base, here);
                    continue;
                }
            }
        }
        prov.set.insert(field, here);
    }
    Ok(())
}

/// Resolves naming from the layers; `table_paths` are the paths of layer 0 and 1.
fn resolve_naming(
    file: &str,
    naming: &NamingParts,
    table_paths: [&str; 2],
    flow: &mut FlowConfig,
) -> Result<(), ConfigError> {
    let identity = naming.identity.map(|(b, _)| b).unwrap_or(false);
    if identity {
        if let Some((_, sep_layer)) = &naming.separator {
            let naming_layer = naming.identity.map(|(_, l)| l).unwrap_or(0);
            if *sep_layer == 1 || *sep_layer == naming_layer {
                return Err(ConfigError::new(
                    file,
                    format!("{}.separator", table_paths[*sep_layer]),
                    "a separator only applies to naming = \"default\"; identity naming keeps topic names",
                )
                .allowed("remove `separator`, or naming = \"default\""));
            }
        }
        flow.naming = NamingPolicy::Identity;
    } else {
        flow.naming = NamingPolicy::Default {
            separator: naming
                .separator
                .as_ref()
                .map(|(s, _)| s.clone())
                .unwrap_or_else(|| DEFAULT_SEPARATOR.to_string()),
        };
    }
    Ok(())
}

/// Mirror flows keep topic names: identity naming is implied, and asking for another is an error.
fn resolve_mirror(
    file: &str,
    naming: &NamingParts,
    table_paths: [&str; 2],
    flow: &mut FlowConfig,
) -> Result<(), ConfigError> {
    if flow.mode != FlowMode::Mirror {
        return Ok(());
    }
    // `[defaults]` naming applies to replicate flows; only the flow's own table is an error.
    if let Some((false, layer @ 1)) = naming.identity {
        return Err(ConfigError::new(
            file,
            format!("{}.naming", table_paths[layer]),
            "a mirror flow keeps topic names (and offsets); it cannot rename topics",
        )
        .allowed("naming = \"identity\", or mode = \"replicate\""));
    }
    if let Some((_, layer @ 1)) = &naming.separator {
        return Err(ConfigError::new(
            file,
            format!("{}.separator", table_paths[*layer]),
            "a separator only applies to renamed remote topics; a mirror flow keeps topic names",
        )
        .allowed("remove `separator`, or mode = \"replicate\""));
    }
    flow.naming = NamingPolicy::Identity;
    Ok(())
}

fn toml_cluster(file: &str, alias: &str, v: &toml::Value) -> Result<ClusterSettings, ConfigError> {
    let path = format!("clusters.{alias}");
    if let Err(problem) = check_alias(alias) {
        return Err(ConfigError::new(file, &path, problem).allowed(ALIAS_RULE));
    }
    let table = v
        .as_table()
        .ok_or_else(|| wrong_type(file, &path, v, "a table ([clusters.<alias>])"))?;
    let mut c = ClusterSettings::new(alias, Vec::new());
    let mut have_bootstrap = false;
    let mut sasl = SaslParts::default();
    for (key, v) in table {
        let kpath = format!("{path}.{key}");
        match key.as_str() {
            "sasl_mechanism" => {
                let s = toml_str(file, &kpath, v)?;
                sasl.mechanism = Some(SaslMechanism::parse(s).ok_or_else(|| {
                    ConfigError::new(file, &kpath, format!("unknown SASL mechanism `{s}`"))
                        .allowed(SaslMechanism::allowed())
                })?);
            }
            "sasl_username" => sasl.username = Some(toml_str(file, &kpath, v)?.to_string()),
            "sasl_password" => sasl.password = Some(toml_secret(file, &kpath, v)?),
            "ssl_ca_file" => c.tls.ca_file = Some(toml_str(file, &kpath, v)?.into()),
            "ssl_certificate_file" => {
                c.tls.certificate_file = Some(toml_str(file, &kpath, v)?.into())
            }
            "ssl_key_file" => c.tls.key_file = Some(toml_str(file, &kpath, v)?.into()),
            "ssl_server_name" => c.tls.server_name = Some(toml_str(file, &kpath, v)?.to_string()),
            "bootstrap_servers" => {
                let servers = match v {
                    toml::Value::String(s) => split_servers(s),
                    toml::Value::Array(items) => {
                        let mut out = Vec::new();
                        for (i, item) in items.iter().enumerate() {
                            let s = toml_str(file, &format!("{kpath}[{i}]"), item)?;
                            out.extend(split_servers(s));
                        }
                        out
                    }
                    other => {
                        return Err(wrong_type(file, &kpath, other, "servers")
                            .allowed("[\"host:port\", ...] or \"host:port,host:port\""))
                    }
                };
                for s in &servers {
                    check_host_port(s).map_err(|p| {
                        ConfigError::new(file, &kpath, p).allowed("host:port entries")
                    })?;
                }
                c.bootstrap_servers = servers;
                have_bootstrap = true;
            }
            "security_protocol" => {
                let s = toml_str(file, &kpath, v)?;
                c.security_protocol = SecurityProtocol::parse(s).ok_or_else(|| {
                    ConfigError::new(file, &kpath, format!("unknown security protocol `{s}`"))
                        .allowed(SecurityProtocol::allowed())
                })?;
            }
            "client_id" => c.client_id = toml_str(file, &kpath, v)?.to_string(),
            "replication_factor" => {
                let n = v.as_integer().ok_or_else(|| {
                    wrong_type(file, &kpath, v, "an integer").allowed(REPLICATION_FACTOR_ALLOWED)
                })?;
                c.replication_factor = check_replication_factor(n).map_err(|p| {
                    ConfigError::new(file, &kpath, p).allowed(REPLICATION_FACTOR_ALLOWED)
                })?;
            }
            "request_timeout_secs"
            | "request_timeout_ms"
            | "connect_timeout_secs"
            | "connect_timeout_ms" => {
                let millis = key.ends_with("_ms");
                let (base, other) = match key.as_str() {
                    "request_timeout_secs" => ("request_timeout", "request_timeout_ms"),
                    "request_timeout_ms" => ("request_timeout", "request_timeout_secs"),
                    "connect_timeout_secs" => ("connect_timeout", "connect_timeout_ms"),
                    _ => ("connect_timeout", "connect_timeout_secs"),
                };
                if table.contains_key(other) {
                    return Err(ConfigError::new(
                        file,
                        &kpath,
                        format!("also set as `{other}`; set one"),
                    )
                    .allowed(format!("{base}_secs or {base}_ms")));
                }
                let d = toml_duration(file, &kpath, v, millis)?;
                check_timeout_ms(d).map_err(|p| {
                    ConfigError::new(file, &kpath, p)
                        .allowed(format!("1 to {} milliseconds", i32::MAX))
                })?;
                if base == "request_timeout" {
                    c.request_timeout = d;
                } else {
                    c.connect_timeout = d;
                }
            }
            _ => {
                let key = dotted_name(key, v);
                return Err(unknown_key(
                    file,
                    &format!("{path}.{key}"),
                    &key,
                    CLUSTER_KEYS,
                    misplaced_hint(&key),
                ));
            }
        }
    }
    if !have_bootstrap || c.bootstrap_servers.is_empty() {
        let problem = if have_bootstrap {
            "empty: a cluster needs at least one bootstrap server"
        } else {
            "missing: a cluster needs at least one bootstrap server"
        };
        return Err(
            ConfigError::new(file, format!("{path}.bootstrap_servers"), problem)
                .allowed("[\"host:port\", ...] or \"host:port,host:port\""),
        );
    }
    c.sasl = sasl
        .finish(c.security_protocol)
        .map_err(|(field, problem)| ConfigError::new(file, format!("{path}.{field}"), problem))?;
    check_security(&c)
        .map_err(|(field, problem)| ConfigError::new(file, format!("{path}.{field}"), problem))?;
    Ok(c)
}

/// Parses strait's TOML format; `origin` names the file in errors.
pub fn parse_toml(text: &str, origin: &str) -> Result<Config, ConfigError> {
    let file = origin;
    let root: toml::Table = text
        .parse::<toml::Table>()
        .map_err(|e| toml_syntax_error(file, text, &e))?;
    for key in root.keys() {
        if !TOP_KEYS.contains(&key.as_str()) {
            let hint =
                if FLOW_KEYS.contains(&key.as_str()) || MM2_TO_TOML.iter().any(|(m, _)| m == key) {
                    "; flow settings go in a [[flows]] entry or in [defaults]"
                } else {
                    ""
                };
            return Err(unknown_key(file, key, key, TOP_KEYS, hint));
        }
    }

    let instance_group = match root.get("instance_group") {
        None => DEFAULT_INSTANCE_GROUP.to_string(),
        Some(v) => {
            let s = toml_str(file, "instance_group", v)?.trim().to_string();
            check_alias(&s).map_err(|p| {
                ConfigError::new(file, "instance_group", p.replace("cluster alias", "name"))
                    .allowed(ALIAS_RULE)
            })?;
            s
        }
    };
    let http = match root.get("http") {
        None => None,
        Some(v) => Some(toml_http(file, v)?),
    };

    let mut clusters = BTreeMap::new();
    match root.get("clusters") {
        None => {
            return Err(ConfigError::new(
                file,
                "clusters",
                "missing: define each cluster in a [clusters.<alias>] table",
            )
            .allowed(format!("aliases made of {ALIAS_RULE}")))
        }
        Some(v) => {
            let table = v
                .as_table()
                .ok_or_else(|| wrong_type(file, "clusters", v, "a table"))?;
            if table.is_empty() {
                return Err(ConfigError::new(
                    file,
                    "clusters",
                    "empty: define each cluster in a [clusters.<alias>] table",
                ));
            }
            for (alias, cv) in table {
                clusters.insert(alias.clone(), toml_cluster(file, alias, cv)?);
            }
        }
    }

    let empty = toml::Table::new();
    let defaults = match root.get("defaults") {
        None => &empty,
        Some(v) => v
            .as_table()
            .ok_or_else(|| wrong_type(file, "defaults", v, "a table ([defaults])"))?,
    };
    // Check [defaults] on its own, so its errors show even without flows.
    {
        let mut scratch = FlowConfig::new("", "");
        let mut prov = FlowProv::new(ConfigFormat::Toml, "defaults".into());
        let mut naming = NamingParts::default();
        apply_flow_table(
            file,
            defaults,
            "defaults",
            0,
            &mut scratch,
            &mut prov,
            &mut naming,
        )?;
        resolve_naming(file, &naming, ["defaults", "defaults"], &mut scratch)?;
        if naming.separator.is_some() {
            prov.set
                .insert("separator", Where::key("defaults.separator"));
        }
        validate_values(file, &scratch, &prov)?;
    }

    let mut flows = Vec::new();
    if let Some(v) = root.get("flows") {
        let arr = v
            .as_array()
            .ok_or_else(|| wrong_type(file, "flows", v, "an array of tables ([[flows]])"))?;
        let known = clusters.keys().cloned().collect::<Vec<_>>().join(", ");
        for (i, item) in arr.iter().enumerate() {
            let table_path = format!("flows[{i}]");
            let table = item
                .as_table()
                .ok_or_else(|| wrong_type(file, &table_path, item, "a table ([[flows]])"))?;
            let mut ends = Vec::new();
            for end in ["source", "target"] {
                let path = format!("{table_path}.{end}");
                let alias = match table.get(end) {
                    Some(v) => toml_str(file, &path, v)?.trim().to_string(),
                    None => {
                        return Err(ConfigError::new(file, &path, "missing").allowed(known.clone()))
                    }
                };
                ends.push(alias);
            }
            let mut flow = FlowConfig::new(&ends[0], &ends[1]);
            let mut prov = FlowProv::new(ConfigFormat::Toml, table_path.clone());
            prov.set
                .insert("source", Where::key(format!("{table_path}.source")));
            prov.set
                .insert("target", Where::key(format!("{table_path}.target")));
            let mut naming = NamingParts::default();
            apply_flow_table(
                file,
                defaults,
                "defaults",
                0,
                &mut flow,
                &mut prov,
                &mut naming,
            )?;
            apply_flow_table(
                file,
                table,
                &table_path,
                1,
                &mut flow,
                &mut prov,
                &mut naming,
            )?;
            resolve_naming(file, &naming, ["defaults", &table_path], &mut flow)?;
            resolve_mirror(file, &naming, ["defaults", &table_path], &mut flow)?;
            flows.push((flow, prov));
        }
    }
    validate_flows(file, &clusters, &flows)?;

    Ok(Config {
        clusters,
        flows: flows.into_iter().map(|(f, _)| f).collect(),
        origin: origin.to_string(),
        unsupported: Vec::new(),
        http,
        instance_group,
    })
}

// ------------------------------------------------------------------------------------------------
// Security settings (both formats) and the HTTP endpoints
// ------------------------------------------------------------------------------------------------

const SECRET_FORMS: &str =
    "{ env = \"VAR\" }, { file = \"PATH\" }, { file = \"PATH\", key = \"KEY\" } or a string";

/// SASL settings as read, before they are checked against the security protocol.
#[derive(Default)]
struct SaslParts {
    mechanism: Option<SaslMechanism>,
    username: Option<String>,
    password: Option<Secret>,
}

impl SaslParts {
    /// Checks the parts against the protocol. Errors name TOML fields.
    fn finish(
        self,
        protocol: SecurityProtocol,
    ) -> Result<Option<SaslSettings>, (&'static str, String)> {
        if !protocol.uses_sasl() {
            let set = [
                ("sasl_mechanism", self.mechanism.is_some()),
                ("sasl_username", self.username.is_some()),
                ("sasl_password", self.password.is_some()),
            ];
            if let Some((field, _)) = set.iter().find(|(_, s)| *s) {
                return Err((
                    field,
                    format!(
                        "set, but the security protocol is {} (SASL needs SASL_PLAINTEXT or SASL_SSL)",
                        protocol.as_str()
                    ),
                ));
            }
            return Ok(None);
        }
        let p = protocol.as_str();
        let mechanism = self.mechanism.ok_or((
            "sasl_mechanism",
            format!("missing: {p} needs a SASL mechanism"),
        ))?;
        let username = self
            .username
            .filter(|u| !u.is_empty())
            .ok_or(("sasl_username", format!("missing: {p} needs a user name")))?;
        let password = self
            .password
            .ok_or(("sasl_password", format!("missing: {p} needs a password")))?;
        Ok(Some(SaslSettings {
            mechanism,
            username,
            password,
        }))
    }
}

/// Checks TLS settings against the security protocol. Errors name TOML fields.
fn check_security(c: &ClusterSettings) -> Result<(), (&'static str, String)> {
    let t = &c.tls;
    let set = [
        ("ssl_ca_file", t.ca_file.is_some() || t.ca_pem.is_some()),
        ("ssl_certificate_file", t.certificate_file.is_some()),
        ("ssl_key_file", t.key_file.is_some()),
        ("ssl_server_name", t.server_name.is_some()),
    ];
    if !c.security_protocol.uses_tls() {
        if let Some((field, _)) = set.iter().find(|(_, s)| *s) {
            return Err((
                field,
                format!(
                    "set, but the security protocol is {} (TLS needs SSL or SASL_SSL)",
                    c.security_protocol.as_str()
                ),
            ));
        }
        return Ok(());
    }
    match (&t.certificate_file, &t.key_file) {
        (Some(_), None) => {
            return Err((
                "ssl_key_file",
                "missing: a client certificate needs its private key".to_string(),
            ))
        }
        (None, Some(_)) => {
            return Err((
                "ssl_certificate_file",
                "missing: a client private key needs its certificate".to_string(),
            ))
        }
        _ => {}
    }
    if let Some(n) = &t.server_name {
        crate::tls::server_name("", Some(n)).map_err(|p| ("ssl_server_name", p))?;
    }
    Ok(())
}

/// A secret in TOML: a string, `{ env = "VAR" }`, `{ file = "PATH" }` or
/// `{ file = "PATH", key = "KEY" }`.
fn toml_secret(file: &str, path: &str, v: &toml::Value) -> Result<Secret, ConfigError> {
    match v {
        toml::Value::String(s) if s.is_empty() => {
            Err(ConfigError::new(file, path, "empty").allowed(SECRET_FORMS))
        }
        toml::Value::String(s) => Ok(Secret::literal(s)),
        toml::Value::Table(t) => {
            for k in t.keys() {
                if !["env", "file", "key"].contains(&k.as_str()) {
                    return Err(unknown_key(
                        file,
                        &format!("{path}.{k}"),
                        k,
                        &["env", "file", "key"],
                        "",
                    ));
                }
            }
            let resolved = match (t.get("env"), t.get("file"), t.get("key")) {
                (Some(e), None, None) => {
                    Secret::from_env(toml_str(file, &format!("{path}.env"), e)?)
                }
                (None, Some(f), None) => {
                    Secret::from_file(Path::new(toml_str(file, &format!("{path}.file"), f)?))
                }
                (None, Some(f), Some(k)) => Secret::from_properties_file(
                    Path::new(toml_str(file, &format!("{path}.file"), f)?),
                    toml_str(file, &format!("{path}.key"), k)?,
                ),
                _ => {
                    return Err(ConfigError::new(file, path, "give either `env` or `file`")
                        .allowed(SECRET_FORMS))
                }
            };
            resolved.map_err(|p| ConfigError::new(file, path, p))
        }
        other => Err(wrong_type(file, path, other, "a secret").allowed(SECRET_FORMS)),
    }
}

/// Whether a `host:port` listen address is on the loopback interface.
pub fn is_loopback_listen(addr: &str) -> bool {
    let host = addr.rsplit_once(':').map(|(h, _)| h).unwrap_or(addr);
    let host = host.trim_start_matches('[').trim_end_matches(']');
    host.eq_ignore_ascii_case("localhost")
        || host
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

/// `http = "host:port"` or an `[http]` table.
fn toml_http(file: &str, v: &toml::Value) -> Result<HttpSettings, ConfigError> {
    const LISTEN: &str = "host:port, e.g. \"127.0.0.1:8083\"";
    let (mut h, key) = match v {
        toml::Value::String(s) => (HttpSettings::new(s.trim()), "http"),
        toml::Value::Table(t) => {
            let mut h = HttpSettings::new(DEFAULT_HTTP_LISTEN);
            for (key, v) in t {
                let kpath = format!("http.{key}");
                match key.as_str() {
                    "listen" => h.addr = toml_str(file, &kpath, v)?.trim().to_string(),
                    "allow_remote" => h.allow_remote = toml_bool(file, &kpath, v)?,
                    "tls_cert" => h.tls_cert = Some(toml_str(file, &kpath, v)?.into()),
                    "tls_key" => h.tls_key = Some(toml_str(file, &kpath, v)?.into()),
                    "token" => h.token = Some(toml_secret(file, &kpath, v)?),
                    _ => return Err(unknown_key(file, &kpath, key, HTTP_KEYS, "")),
                }
            }
            (h, "http.listen")
        }
        other => {
            return Err(
                wrong_type(file, "http", other, "a string or a table ([http])").allowed(LISTEN),
            )
        }
    };
    h.addr = h.addr.trim().to_string();
    check_host_port(&h.addr).map_err(|p| ConfigError::new(file, key, p).allowed(LISTEN))?;
    if !h.allow_remote && !is_loopback_listen(&h.addr) {
        return Err(ConfigError::new(
            file,
            key,
            format!(
                "`{}` is not a loopback address: the HTTP endpoints listen on localhost only unless [http] allow_remote = true (then protect them with tls_cert, tls_key and token)",
                h.addr
            ),
        )
        .allowed("127.0.0.1:PORT, [::1]:PORT or localhost:PORT"));
    }
    match (&h.tls_cert, &h.tls_key) {
        (Some(_), None) => Err(ConfigError::new(
            file,
            "http.tls_key",
            "missing: tls_cert needs its private key",
        )),
        (None, Some(_)) => Err(ConfigError::new(
            file,
            "http.tls_cert",
            "missing: tls_key needs its certificate",
        )),
        _ => Ok(h),
    }
}

/// Parses Java properties text into `(key, value)` pairs in file order; `Err(line)` on a
/// syntax error (the message is left out: it could quote a secret).
pub fn parse_properties_pairs(text: &str) -> Result<Vec<(String, String)>, usize> {
    parse_properties(text)
        .map(|props| props.into_iter().map(|p| (p.key, p.value)).collect())
        .map_err(|(line, _)| line)
}

/// A parsed `sasl.jaas.config`: one login module and its options.
#[derive(Debug, PartialEq, Eq)]
struct Jaas {
    module: String,
    options: Vec<(String, String)>,
}

#[derive(Debug, PartialEq, Eq)]
enum JaasToken {
    Word(String),
    Equals,
    Semicolon,
}

fn jaas_tokens(value: &str) -> Result<Vec<JaasToken>, String> {
    let mut out = Vec::new();
    let mut chars = value.chars().peekable();
    while let Some(&c) = chars.peek() {
        if c.is_whitespace() {
            chars.next();
        } else if c == '=' {
            chars.next();
            out.push(JaasToken::Equals);
        } else if c == ';' {
            chars.next();
            out.push(JaasToken::Semicolon);
        } else if c == '"' || c == '\'' {
            let quote = c;
            chars.next();
            let mut word = String::new();
            loop {
                match chars.next() {
                    None => return Err("unterminated quoted value".to_string()),
                    Some('\\') => match chars.next() {
                        Some(e) => word.push(e),
                        None => return Err("unterminated quoted value".to_string()),
                    },
                    Some(ch) if ch == quote => break,
                    Some(ch) => word.push(ch),
                }
            }
            out.push(JaasToken::Word(word));
        } else {
            let mut word = String::new();
            while let Some(&ch) = chars.peek() {
                if ch.is_whitespace() || ch == '=' || ch == ';' || ch == '"' {
                    break;
                }
                word.push(ch);
                chars.next();
            }
            out.push(JaasToken::Word(word));
        }
    }
    Ok(out)
}

/// Parses `Module flag key="value" ...;`. Messages never quote option values.
fn parse_jaas(value: &str) -> Result<Jaas, String> {
    let tokens = jaas_tokens(value)?;
    let mut it = tokens.into_iter();
    let Some(JaasToken::Word(module)) = it.next() else {
        return Err("expected a login module class, e.g. org.apache.kafka.common.security.scram.ScramLoginModule".to_string());
    };
    match it.next() {
        Some(JaasToken::Word(flag))
            if ["required", "requisite", "sufficient", "optional"]
                .contains(&flag.to_ascii_lowercase().as_str()) => {}
        _ => {
            return Err(format!(
            "expected a control flag (required, requisite, sufficient or optional) after {module}"
        ))
        }
    }
    let mut options = Vec::new();
    loop {
        match it.next() {
            Some(JaasToken::Semicolon) => break,
            Some(JaasToken::Word(key)) => {
                if it.next() != Some(JaasToken::Equals) {
                    return Err(format!("expected `=` after option `{key}`"));
                }
                match it.next() {
                    Some(JaasToken::Word(v)) => options.push((key, v)),
                    _ => return Err(format!("option `{key}` has no value")),
                }
            }
            Some(JaasToken::Equals) => return Err("unexpected `=`".to_string()),
            None => return Err("missing the closing `;`".to_string()),
        }
    }
    if it.next().is_some() {
        return Err("only one login module is supported".to_string());
    }
    Ok(Jaas { module, options })
}

const PLAIN_MODULE: &str = "org.apache.kafka.common.security.plain.PlainLoginModule";
const SCRAM_MODULE: &str = "org.apache.kafka.common.security.scram.ScramLoginModule";

/// The config providers an mm2.properties declares with a class strait implements.
fn mm2_providers(props: &Props) -> Vec<(String, ProviderKind)> {
    let Some((names, _)) = props.get("config.providers") else {
        return Vec::new();
    };
    mm2_list(names)
        .into_iter()
        .filter_map(|name| {
            let (class, _) = props.get(&format!("config.providers.{name}.class"))?;
            Some((name, ProviderKind::from_class(class)?))
        })
        .collect()
}

/// Whether a `config.providers*` key only declares providers strait implements.
fn mm2_provider_key_understood(key: &str, props: &Props) -> bool {
    if key == "config.providers" {
        let Some((names, _)) = props.get(key) else {
            return false;
        };
        let known = mm2_providers(props);
        return mm2_list(names)
            .iter()
            .all(|n| known.iter().any(|(k, _)| k == n));
    }
    key.strip_prefix("config.providers.")
        .and_then(|rest| rest.strip_suffix(".class"))
        .is_some_and(|_| {
            props
                .get(key)
                .is_some_and(|(class, _)| ProviderKind::from_class(class).is_some())
        })
}

/// The mm2 key for a TOML security field.
fn mm2_security_key(field: &str) -> &'static str {
    match field {
        "sasl_mechanism" => "sasl.mechanism",
        "sasl_username" | "sasl_password" => "sasl.jaas.config",
        "ssl_ca_file" => "ssl.truststore.location",
        _ => "ssl.keystore.location",
    }
}

/// Reads a cluster's SASL and TLS settings from mm2.properties (`get` looks up the
/// cluster's own key, then the global one).
fn mm2_security<'p>(
    file: &str,
    alias: &str,
    get: &dyn Fn(&str) -> Option<(&'p str, Where)>,
    providers: &[(String, ProviderKind)],
    c: &mut ClusterSettings,
) -> Result<(), ConfigError> {
    // As in Kafka's clients, SASL and SSL settings apply only to protocols that use them
    // (a global `sasl.mechanism` does not break a PLAINTEXT cluster).
    let protocol = c.security_protocol;
    let mut sasl = SaslParts::default();
    if let Some((v, at)) = get("sasl.mechanism").filter(|_| protocol.uses_sasl()) {
        sasl.mechanism = Some(SaslMechanism::parse(v).ok_or_else(|| {
            at.error(
                file,
                format!("unknown or unsupported SASL mechanism `{}`", v.trim()),
            )
            .allowed(SaslMechanism::allowed())
        })?);
    }
    if let Some((v, at)) = get("sasl.jaas.config").filter(|_| protocol.uses_sasl()) {
        let jaas = parse_jaas(v).map_err(|p| at.error(file, p))?;
        let scram = match jaas.module.as_str() {
            PLAIN_MODULE => false,
            SCRAM_MODULE => true,
            other => {
                return Err(at
                    .error(file, format!("login module {other} is not supported"))
                    .allowed(format!("{PLAIN_MODULE}, {SCRAM_MODULE}")))
            }
        };
        if let Some(m) = sasl.mechanism {
            if (m == SaslMechanism::Plain) == scram {
                return Err(at.error(
                    file,
                    format!(
                        "login module {} does not implement sasl.mechanism {}",
                        jaas.module,
                        m.as_str()
                    ),
                ));
            }
        }
        for (key, value) in &jaas.options {
            let secret = || {
                Secret::from_mm2_value(value, providers)
                    .map_err(|p| at.error(file, format!("option `{key}`: {p}")))
            };
            match key.as_str() {
                "username" => sasl.username = Some(secret()?.expose().to_string()),
                "password" => sasl.password = Some(secret()?),
                _ => {}
            }
        }
    }
    let field_at = |field: &str| {
        let key = mm2_security_key(field);
        get(key)
            .map(|(_, at)| at)
            .unwrap_or_else(|| Where::key(format!("{alias}.{key}")))
    };
    c.sasl = sasl
        .finish(c.security_protocol)
        .map_err(|(field, p)| field_at(field).error(file, p))?;

    let pem_only = |kind: &str| -> Result<(), ConfigError> {
        let key = format!("ssl.{kind}.type");
        match get(&key) {
            Some((t, at)) if !t.trim().eq_ignore_ascii_case("PEM") => Err(at
                .error(
                    file,
                    format!(
                        "{kind} type {} is not supported: strait reads PEM files (convert with keytool/openssl and set {key}=PEM)",
                        t.trim()
                    ),
                )
                .allowed("PEM")),
            Some(_) => Ok(()),
            None => {
                if let Some((_, at)) = get(&format!("ssl.{kind}.location")) {
                    return Err(at
                        .error(
                            file,
                            format!(
                                "{key} is not set, so this is a JKS file (Kafka's default), which strait cannot read: give a PEM file and set {key}=PEM"
                            ),
                        )
                        .allowed("PEM"));
                }
                Ok(())
            }
        }
    };
    if !protocol.uses_tls() {
        return Ok(());
    }
    pem_only("truststore")?;
    pem_only("keystore")?;
    if let Some((v, _)) = get("ssl.truststore.location") {
        c.tls.ca_file = Some(v.trim().into());
    }
    if let Some((v, _)) = get("ssl.truststore.certificates") {
        c.tls.ca_pem = Some(v.to_string());
    }
    if let Some((v, _)) = get("ssl.keystore.location") {
        c.tls.certificate_file = Some(v.trim().into());
        c.tls.key_file = Some(v.trim().into());
    }
    check_security(c).map_err(|(field, p)| field_at(field).error(file, p))
}

// ------------------------------------------------------------------------------------------------
// Java properties
// ------------------------------------------------------------------------------------------------

/// One `key=value` entry of a properties file.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Prop {
    key: String,
    value: String,
    /// 1-based line where the entry starts.
    line: usize,
}

fn is_prop_ws(c: char) -> bool {
    c == ' ' || c == '\t' || c == '\x0c'
}

/// Splits into physical lines at `\n`, `\r\n` or `\r`, as Java does.
fn physical_lines(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let bytes = text.as_bytes();
    let mut start = 0;
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'\n' => {
                out.push(&text[start..i]);
                start = i + 1;
            }
            b'\r' => {
                out.push(&text[start..i]);
                if bytes.get(i + 1) == Some(&b'\n') {
                    i += 1;
                }
                start = i + 1;
            }
            _ => {}
        }
        i += 1;
    }
    if start < text.len() {
        out.push(&text[start..]);
    }
    out
}

fn ends_with_odd_backslashes(s: &str) -> bool {
    s.chars().rev().take_while(|c| *c == '\\').count() % 2 == 1
}

/// Resolves Java properties escapes: `\t \n \r \f \uXXXX`, and `\x` → `x` for any other `x`.
fn unescape(s: &str) -> Result<String, String> {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            None => {}
            Some('t') => out.push('\t'),
            Some('n') => out.push('\n'),
            Some('r') => out.push('\r'),
            Some('f') => out.push('\x0c'),
            Some('u') => {
                let hex: String = chars.by_ref().take(4).collect();
                let code = (hex.len() == 4)
                    .then(|| u32::from_str_radix(&hex, 16).ok())
                    .flatten()
                    .ok_or_else(|| "malformed \\uXXXX escape".to_string())?;
                // Surrogates (a pair encodes one character in Java) are kept as U+FFFD.
                out.push(char::from_u32(code).unwrap_or('\u{fffd}'));
            }
            Some(other) => out.push(other),
        }
    }
    Ok(out)
}

/// Parses Java properties text into entries in file order.
fn parse_properties(text: &str) -> Result<Vec<Prop>, (usize, String)> {
    let lines = physical_lines(text);
    let mut props = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let line_no = i + 1;
        let first = lines[i].trim_start_matches(is_prop_ws);
        i += 1;
        if first.is_empty() || first.starts_with('#') || first.starts_with('!') {
            continue;
        }
        let mut logical = first.to_string();
        while ends_with_odd_backslashes(&logical) {
            logical.pop();
            match lines.get(i) {
                Some(next) => {
                    logical.push_str(next.trim_start_matches(is_prop_ws));
                    i += 1;
                }
                None => break,
            }
        }
        // The key ends at the first unescaped `=`, `:` or whitespace.
        let mut key_end = logical.len();
        let mut escaped = false;
        for (pos, c) in logical.char_indices() {
            if escaped {
                escaped = false;
            } else if c == '\\' {
                escaped = true;
            } else if c == '=' || c == ':' || is_prop_ws(c) {
                key_end = pos;
                break;
            }
        }
        let raw_key = &logical[..key_end];
        let mut rest = logical[key_end..].trim_start_matches(is_prop_ws);
        if let Some(r) = rest.strip_prefix(['=', ':']) {
            rest = r.trim_start_matches(is_prop_ws);
        }
        let key = unescape(raw_key).map_err(|e| (line_no, e))?;
        let value = unescape(rest).map_err(|e| (line_no, e))?;
        props.push(Prop {
            key: key.trim().to_string(),
            value: value.trim().to_string(),
            line: line_no,
        });
    }
    Ok(props)
}

// ------------------------------------------------------------------------------------------------
// MirrorMaker 2
// ------------------------------------------------------------------------------------------------

/// The MM2 keys a flow reads, per flow (`A->B.<key>`) or globally.
const MM2_FLOW_KEYS: &[&str] = &[
    "topics",
    "topics.exclude",
    "topics.blacklist",
    "groups",
    "groups.exclude",
    "groups.blacklist",
    "replication.policy.class",
    "replication.policy.separator",
    "refresh.topics.interval.seconds",
    "refresh.groups.interval.seconds",
    "emit.checkpoints.interval.seconds",
    "emit.heartbeats.interval.seconds",
    "emit.checkpoints.enabled",
    "emit.heartbeats.enabled",
    "emit.offset-syncs.enabled",
    "sync.group.offsets.enabled",
    "sync.group.offsets.interval.seconds",
    "replication.factor",
];

/// Per-cluster client keys (`<alias>.<key>`, or globally as a fallback for every cluster).
const MM2_CLIENT_KEYS: &[&str] = &[
    "security.protocol",
    "sasl.mechanism",
    "sasl.jaas.config",
    "ssl.truststore.type",
    "ssl.truststore.location",
    "ssl.truststore.certificates",
    "ssl.keystore.type",
    "ssl.keystore.location",
    "client.id",
    "request.timeout.ms",
    "socket.connection.setup.timeout.ms",
];

const SECURITY_OTHER: &str = "this SSL/SASL setting is not supported by strait; ignored (understood: security.protocol, sasl.mechanism, sasl.jaas.config, ssl.truststore.type/location/certificates, ssl.keystore.type/location)";

/// Why a key strait does not act on is not supported, for keys with a specific reason.
fn mm2_known_reason(key: &str) -> Option<&'static str> {
    let reason = match key {
        "tasks.max" => {
            "strait does not split work into Kafka Connect tasks; every flow runs in this process"
        }
        "sync.topic.acls.enabled" | "sync.topic.acls.interval.seconds" => {
            "topic ACLs are not synchronized"
        }
        "sync.topic.configs.enabled" | "sync.topic.configs.interval.seconds" => {
            "topic configurations are not synchronized"
        }
        "config.property.filter.class" | "config.properties.exclude" | "config.properties.blacklist" => {
            "topic configurations are not synchronized"
        }
        "refresh.topics.enabled" => {
            "topic discovery cannot be turned off; set refresh.topics.interval.seconds instead"
        }
        "refresh.groups.enabled" => {
            "group discovery cannot be turned off; set refresh.groups.interval.seconds instead"
        }
        "config.storage.replication.factor"
        | "offset.storage.replication.factor"
        | "status.storage.replication.factor" => {
            "a Kafka Connect internal topic; strait keeps no Kafka Connect state"
        }
        "checkpoints.topic.replication.factor"
        | "heartbeats.topic.replication.factor"
        | "offset-syncs.topic.replication.factor" => {
            "a separate replication factor for this internal topic is not supported"
        }
        "offset-syncs.topic.location" => "the offset-syncs topic location is not configurable",
        "offset.lag.max" => {
            "strait emits offset syncs on a timer (offset_sync_interval in TOML), not by lag"
        }
        "dedicated.mode.enable.internal.rest" => {
            "strait is a single process with no internal REST server (the TOML key `http` enables its status API)"
        }
        "replication.policy.internal.topic.separator.enabled" => {
            "internal topic names are not configurable"
        }
        "config.providers" => {
            "only FileConfigProvider and EnvVarConfigProvider are supported, and only in sasl.jaas.config"
        }
        "ssl.key.password" | "ssl.keystore.password" | "ssl.truststore.password" => {
            "strait reads unencrypted PEM files only; no password is used (keep the key file readable only by strait)"
        }
        "ssl.endpoint.identification.algorithm" => {
            "broker host names are always verified (strait's TOML has ssl_server_name to verify another name)"
        }
        "bootstrap.servers" => "set <alias>.bootstrap.servers for each cluster instead",
        "key.converter" | "value.converter" | "header.converter" => {
            "strait copies record bytes unchanged; converters do not apply"
        }
        "topic.filter.class" => {
            "custom topic filters are not supported; strait applies topics / topics.exclude"
        }
        "group.filter.class" => {
            "custom group filters are not supported; strait applies groups / groups.exclude"
        }
        _ => {
            let prefixed = [
                ("ssl.", SECURITY_OTHER),
                ("sasl.", SECURITY_OTHER),
                (
                    "producer.",
                    "Kafka client overrides are not supported; strait uses its own clients",
                ),
                (
                    "consumer.",
                    "Kafka client overrides are not supported; strait uses its own clients",
                ),
                (
                    "admin.",
                    "Kafka client overrides are not supported; strait uses its own clients",
                ),
                (
                    "config.storage.",
                    "a Kafka Connect internal topic; strait keeps no Kafka Connect state",
                ),
                (
                    "offset.storage.",
                    "a Kafka Connect internal topic; strait keeps no Kafka Connect state",
                ),
                (
                    "status.storage.",
                    "a Kafka Connect internal topic; strait keeps no Kafka Connect state",
                ),
                (
                    "config.providers.",
                    "only FileConfigProvider and EnvVarConfigProvider are supported, and only in sasl.jaas.config",
                ),
                (
                    "key.converter.",
                    "strait copies record bytes unchanged; converters do not apply",
                ),
                (
                    "value.converter.",
                    "strait copies record bytes unchanged; converters do not apply",
                ),
                (
                    "header.converter.",
                    "strait copies record bytes unchanged; converters do not apply",
                ),
            ];
            return prefixed
                .iter()
                .find(|(p, _)| key.starts_with(p))
                .map(|(_, r)| *r);
        }
    };
    Some(reason)
}

const MM2_GENERIC: &str = "not a setting strait understands; ignored";

/// The file's entries: last value wins (as in Java), first occurrence gives the order.
struct Props {
    map: HashMap<String, (String, usize)>,
    /// Keys in order of first occurrence.
    order: Vec<String>,
    first: HashMap<String, usize>,
}

impl Props {
    fn new(entries: Vec<Prop>) -> Props {
        let mut map = HashMap::new();
        let mut order = Vec::new();
        let mut first = HashMap::new();
        for p in entries {
            if !map.contains_key(&p.key) {
                order.push(p.key.clone());
                first.insert(p.key.clone(), p.line);
            }
            map.insert(p.key, (p.value, p.line));
        }
        Props { map, order, first }
    }

    /// Line of a key's first occurrence (its place in file order).
    fn first_line(&self, key: &str) -> usize {
        self.first.get(key).copied().unwrap_or(0)
    }

    fn get(&self, key: &str) -> Option<(&str, Where)> {
        self.map.get(key).map(|(v, line)| {
            (
                v.as_str(),
                Where {
                    key: key.to_string(),
                    line: Some(*line),
                },
            )
        })
    }
}

fn mm2_bool(file: &str, value: &str, at: &Where) -> Result<bool, ConfigError> {
    let v = value.trim();
    if v.eq_ignore_ascii_case("true") {
        Ok(true)
    } else if v.eq_ignore_ascii_case("false") {
        Ok(false)
    } else {
        Err(at
            .error(file, format!("`{value}` is not a boolean"))
            .allowed("true, false"))
    }
}

fn mm2_int(file: &str, value: &str, at: &Where, what: &str) -> Result<i64, ConfigError> {
    value.trim().parse::<i64>().map_err(|_| {
        at.error(file, format!("`{value}` is not a whole number"))
            .allowed(what.to_string())
    })
}

fn mm2_secs(file: &str, value: &str, at: &Where) -> Result<Duration, ConfigError> {
    let allowed = "a positive whole number of seconds";
    let n = mm2_int(file, value, at, allowed)?;
    if n == 0 {
        return Err(at
            .error(file, "an interval of zero is not allowed")
            .allowed(allowed));
    }
    if n < 0 {
        return Err(at.error(file, format!("{n} is negative")).allowed(allowed));
    }
    Ok(Duration::from_secs(n as u64))
}

fn mm2_millis(file: &str, value: &str, at: &Where) -> Result<Duration, ConfigError> {
    let allowed = format!("1 to {} milliseconds", i32::MAX);
    let n = mm2_int(file, value, at, &allowed)?;
    if n <= 0 || n > i32::MAX as i64 {
        return Err(at
            .error(file, format!("{n} is out of range"))
            .allowed(allowed));
    }
    Ok(Duration::from_millis(n as u64))
}

/// MM2's LIST type: comma-separated, items trimmed; empty items dropped.
fn mm2_list(value: &str) -> Vec<String> {
    value
        .split(',')
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .collect()
}

/// Splits `A->B` into known aliases; `Err` carries the unknown alias.
fn split_flow_name(head: &str, aliases: &BTreeSet<String>) -> Result<(String, String), String> {
    for (pos, _) in head.match_indices("->") {
        let (s, t) = (&head[..pos], &head[pos + 2..]);
        if aliases.contains(s) && aliases.contains(t) {
            return Ok((s.to_string(), t.to_string()));
        }
    }
    let (s, t) = head.split_once("->").unwrap_or((head, ""));
    Err(if aliases.contains(s) { t } else { s }.to_string())
}

/// A key's flow prefix `A->B` (before the first `.`), when it has one.
fn flow_head(key: &str) -> Option<(&str, &str)> {
    let (head, rest) = key.split_once('.')?;
    head.contains("->").then_some((head, rest))
}

/// Builds one flow from flow-specific keys over global keys; `pair = None` reads globals only.
fn mm2_flow(
    file: &str,
    props: &Props,
    pair: Option<(&str, &str, Where)>,
    notes: &mut Vec<(usize, String)>,
) -> Result<(FlowConfig, FlowProv), ConfigError> {
    let (source, target) = pair.as_ref().map(|(s, t, _)| (*s, *t)).unwrap_or(("", ""));
    let prefix = pair
        .as_ref()
        .map(|(s, t, _)| format!("{s}->{t}."))
        .unwrap_or_default();
    let mut flow = FlowConfig::new(source, target);
    let mut prov = FlowProv::new(ConfigFormat::Mm2, prefix.trim_end_matches('.').to_string());
    if let Some((_, _, at)) = &pair {
        prov.set.insert("source", at.clone());
        prov.set.insert("target", at.clone());
    }
    let lookup = |name: &str| -> Option<(&str, Where)> {
        if !prefix.is_empty() {
            if let Some(hit) = props.get(&format!("{prefix}{name}")) {
                return Some(hit);
            }
        }
        props.get(name)
    };

    // Lists; a `.exclude` key beats its deprecated `.blacklist` alias, as in MM2.
    let lists: [(&'static str, &[&str]); 4] = [
        ("topics", &["topics"]),
        ("topics_exclude", &["topics.exclude", "topics.blacklist"]),
        ("groups", &["groups"]),
        ("groups_exclude", &["groups.exclude", "groups.blacklist"]),
    ];
    for (field, names) in lists {
        if let Some((value, at)) = names.iter().find_map(|n| lookup(n)) {
            if let Some(list) = flow.list_mut(field) {
                *list = mm2_list(value);
            }
            prov.set.insert(field, at);
        }
    }

    let durations: [(&'static str, &str); 5] = [
        ("refresh_topics_interval", "refresh.topics.interval.seconds"),
        ("refresh_groups_interval", "refresh.groups.interval.seconds"),
        ("checkpoint_interval", "emit.checkpoints.interval.seconds"),
        ("heartbeat_interval", "emit.heartbeats.interval.seconds"),
        (
            "sync_group_offsets_interval",
            "sync.group.offsets.interval.seconds",
        ),
    ];
    for (field, name) in durations {
        if let Some((value, at)) = lookup(name) {
            let d = mm2_secs(file, value, &at)?;
            if let Some(slot) = flow.duration_mut(field) {
                *slot = d;
            }
            prov.set.insert(field, at);
        }
    }

    let bools: [(&'static str, &str); 4] = [
        ("emit_heartbeats", "emit.heartbeats.enabled"),
        ("emit_checkpoints", "emit.checkpoints.enabled"),
        ("emit_offset_syncs", "emit.offset-syncs.enabled"),
        ("sync_group_offsets", "sync.group.offsets.enabled"),
    ];
    for (field, name) in bools {
        if let Some((value, at)) = lookup(name) {
            let b = mm2_bool(file, value, &at)?;
            if let Some(slot) = flow.bool_mut(field) {
                *slot = b;
            }
            prov.set.insert(field, at);
        }
    }

    let identity = match lookup("replication.policy.class") {
        None => false,
        Some((value, at)) => {
            let class = value.trim();
            let identity = if class == DEFAULT_POLICY_CLASS {
                false
            } else if class == IDENTITY_POLICY_CLASS {
                true
            } else {
                return Err(at
                    .error(
                        file,
                        format!("replication policy `{class}` is not supported"),
                    )
                    .allowed(format!("{DEFAULT_POLICY_CLASS}, {IDENTITY_POLICY_CLASS}")));
            };
            prov.set.insert("naming", at);
            identity
        }
    };
    let separator = lookup("replication.policy.separator");
    if identity {
        flow.naming = NamingPolicy::Identity;
        if let Some((value, at)) = separator {
            if value != DEFAULT_SEPARATOR {
                notes.push((
                    props.first_line(&at.key),
                    format!(
                        "{}: ignored with IdentityReplicationPolicy: identity naming has no separator",
                        at.key
                    ),
                ));
            }
        }
    } else if let Some((value, at)) = separator {
        flow.naming = NamingPolicy::Default {
            separator: value.to_string(),
        };
        prov.set.insert("separator", at);
    }
    Ok((flow, prov))
}

/// Parses a MirrorMaker 2 `mm2.properties`; `origin` names the file in errors.
pub fn parse_mm2(text: &str, origin: &str) -> Result<Config, ConfigError> {
    let file = origin;
    let entries = parse_properties(text).map_err(|(line, problem)| {
        ConfigError::new(&format!("{file}:{line}"), "properties syntax", problem)
    })?;
    let props = Props::new(entries);

    // clusters
    let Some((value, clusters_at)) = props.get("clusters") else {
        return Err(ConfigError::new(
            file,
            "clusters",
            "missing: MirrorMaker 2 files list their cluster aliases, e.g. `clusters = cluster_a, cluster_b`",
        )
        .allowed(format!("comma-separated aliases made of {ALIAS_RULE}")));
    };
    let mut aliases: Vec<String> = Vec::new();
    for alias in mm2_list(value) {
        check_alias(&alias).map_err(|p| clusters_at.error(file, p).allowed(ALIAS_RULE))?;
        if !aliases.contains(&alias) {
            aliases.push(alias);
        }
    }
    if aliases.is_empty() {
        return Err(clusters_at
            .error(file, "no cluster aliases listed")
            .allowed(format!("comma-separated aliases made of {ALIAS_RULE}")));
    }
    let alias_set: BTreeSet<String> = aliases.iter().cloned().collect();
    let known = aliases.join(", ");

    // Flow keys name known clusters; collect the enabled flows in file order.
    let mut enabled: Vec<(String, String, Where)> = Vec::new();
    for key in &props.order {
        let Some((head, rest)) = flow_head(key) else {
            continue;
        };
        let Some((value, at)) = props.get(key) else {
            continue;
        };
        let (s, t) = split_flow_name(head, &alias_set).map_err(|unknown| {
            at.error(
                file,
                format!("unknown cluster alias `{unknown}` (not listed in `clusters`)"),
            )
            .allowed(known.clone())
        })?;
        if rest == "enabled" && mm2_bool(file, value, &at)? {
            enabled.push((s, t, at));
        }
    }
    let enabled_pairs: HashSet<(String, String)> = enabled
        .iter()
        .map(|(s, t, _)| (s.clone(), t.clone()))
        .collect();

    // Every key is either understood or listed, in file order.
    let mut notes: Vec<(usize, String)> = Vec::new();
    for key in &props.order {
        let Some((value, _)) = props.get(key) else {
            continue;
        };
        let line = props.first_line(key);
        let default_filter = |k: &str| {
            (k == "topic.filter.class" && value.trim() == DEFAULT_TOPIC_FILTER_CLASS)
                || (k == "group.filter.class" && value.trim() == DEFAULT_GROUP_FILTER_CLASS)
        };
        let alias_head = key
            .split_once('.')
            .filter(|(head, _)| alias_set.contains(*head));
        let reason: Option<String> = if key == "clusters"
            || MM2_FLOW_KEYS.contains(&key.as_str())
            || MM2_CLIENT_KEYS.contains(&key.as_str())
            || default_filter(key)
            || mm2_provider_key_understood(key, &props)
        {
            None
        } else if let Some((head, rest)) = flow_head(key) {
            // Names resolved above.
            let (s, t) = split_flow_name(head, &alias_set).unwrap_or_default();
            if rest == "enabled" {
                None
            } else if MM2_FLOW_KEYS.contains(&rest) {
                if enabled_pairs.contains(&(s.clone(), t.clone())) {
                    None
                } else {
                    Some(format!(
                        "flow {s}->{t} is not enabled ({s}->{t}.enabled = true is not set), so this has no effect"
                    ))
                }
            } else if default_filter(rest) {
                None
            } else {
                Some(
                    mm2_known_reason(rest)
                        .unwrap_or("per-flow setting not supported by strait; ignored")
                        .to_string(),
                )
            }
        } else if let Some((_, rest)) = alias_head {
            if rest == "bootstrap.servers" || MM2_CLIENT_KEYS.contains(&rest) {
                None
            } else {
                Some(
                    mm2_known_reason(rest)
                        .unwrap_or("per-cluster setting not supported by strait; ignored")
                        .to_string(),
                )
            }
        } else if let Some(r) = mm2_known_reason(key) {
            Some(r.to_string())
        } else if let Some(head) = key.strip_suffix(".bootstrap.servers") {
            Some(format!(
                "`{head}` is not listed in `clusters` ({known}), so this cluster is not used"
            ))
        } else {
            Some(MM2_GENERIC.to_string())
        };
        if let Some(reason) = reason {
            notes.push((line, format!("{key}: {reason}")));
        }
    }

    // Clusters.
    let global_rf = match props.get("replication.factor") {
        None => None,
        Some((value, at)) => {
            let n = mm2_int(file, value, &at, REPLICATION_FACTOR_ALLOWED)?;
            Some(
                check_replication_factor(n)
                    .map_err(|p| at.error(file, p).allowed(REPLICATION_FACTOR_ALLOWED))?,
            )
        }
    };
    let providers = mm2_providers(&props);
    let mut clusters = BTreeMap::new();
    for alias in &aliases {
        let own = |k: &str| props.get(&format!("{alias}.{k}"));
        let inherited = |k: &str| own(k).or_else(|| props.get(k));
        let bootstrap_key = format!("{alias}.bootstrap.servers");
        let servers = match own("bootstrap.servers") {
            None => {
                return Err(Where::key(bootstrap_key)
                    .error(
                        file,
                        format!("missing: cluster `{alias}` is listed in `clusters` and needs bootstrap servers"),
                    )
                    .allowed("host:port,host:port"))
            }
            Some((value, at)) => {
                let servers = split_servers(value);
                if servers.is_empty() {
                    return Err(at
                        .error(file, "empty: a cluster needs at least one bootstrap server")
                        .allowed("host:port,host:port"));
                }
                for s in &servers {
                    check_host_port(s)
                        .map_err(|p| at.error(file, p).allowed("host:port,host:port"))?;
                }
                servers
            }
        };
        let mut c = ClusterSettings::new(alias, servers);
        if let Some((value, at)) = inherited("security.protocol") {
            c.security_protocol = SecurityProtocol::parse(value).ok_or_else(|| {
                at.error(file, format!("unknown security protocol `{value}`"))
                    .allowed(SecurityProtocol::allowed())
            })?;
        }
        if let Some((value, _)) = inherited("client.id") {
            c.client_id = value.to_string();
        }
        if let Some((value, at)) = inherited("request.timeout.ms") {
            c.request_timeout = mm2_millis(file, value, &at)?;
        }
        if let Some((value, at)) = inherited("socket.connection.setup.timeout.ms") {
            c.connect_timeout = mm2_millis(file, value, &at)?;
        }
        if let Some(rf) = global_rf {
            c.replication_factor = rf;
        }
        mm2_security(file, alias, &inherited, &providers, &mut c)?;
        clusters.insert(alias.clone(), c);
    }

    // Global flow keys are parsed and their regexes checked even when no flow uses them;
    // cross-setting checks apply to each flow's merged settings, as in MM2.
    let (global_flow, global_prov) = mm2_flow(file, &props, None, &mut notes)?;
    validate_values(file, &global_flow, &global_prov)?;
    let mut flows = Vec::new();
    let mut rf_set_by: HashMap<String, (i16, Where)> = HashMap::new();
    for (s, t, at) in &enabled {
        let (flow, prov) = mm2_flow(file, &props, Some((s, t, at.clone())), &mut notes)?;
        if let Some((value, rf_at)) = props.get(&format!("{s}->{t}.replication.factor")) {
            let n = mm2_int(file, value, &rf_at, REPLICATION_FACTOR_ALLOWED)?;
            let rf = check_replication_factor(n)
                .map_err(|p| rf_at.error(file, p).allowed(REPLICATION_FACTOR_ALLOWED))?;
            if let Some((other, other_at)) = rf_set_by.get(t) {
                if *other != rf {
                    return Err(rf_at
                        .error(
                            file,
                            format!(
                                "conflicts with {} = {other}: strait keeps one replication factor per target cluster (`{t}`)",
                                other_at.key
                            ),
                        )
                        .allowed(format!("{other}, as set by {}", other_at.key)));
                }
            }
            rf_set_by.insert(t.clone(), (rf, rf_at));
            if let Some(c) = clusters.get_mut(t) {
                c.replication_factor = rf;
            }
        }
        flows.push((flow, prov));
    }
    validate_flows(file, &clusters, &flows)?;

    notes.sort_by_key(|(line, _)| *line);
    let mut unsupported: Vec<String> = Vec::new();
    for (_, note) in notes {
        if !unsupported.contains(&note) {
            unsupported.push(note);
        }
    }
    Ok(Config {
        clusters,
        flows: flows.into_iter().map(|(f, _)| f).collect(),
        origin: origin.to_string(),
        unsupported,
        http: None,
        instance_group: DEFAULT_INSTANCE_GROUP.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const TWO: &str = r#"
[clusters.a]
bootstrap_servers = ["127.0.0.1:9092"]
[clusters.b]
bootstrap_servers = "127.0.0.1:9093"
"#;

    fn toml_with(extra: &str) -> Result<Config, ConfigError> {
        // Extra text first: top-level keys must precede the first table header.
        parse_toml(&format!("{extra}\n{TWO}"), "test.toml")
    }

    fn toml_err(extra: &str) -> ConfigError {
        match toml_with(extra) {
            Ok(c) => panic!("expected an error, got {c:?}"),
            Err(e) => e,
        }
    }

    fn mm2_err(text: &str) -> ConfigError {
        match parse_mm2(text, "mm2.properties") {
            Ok(c) => panic!("expected an error, got {c:?}"),
            Err(e) => e,
        }
    }

    /// Asserts the error names the file, the key, and (when given) the allowed values.
    fn check(e: &ConfigError, origin: &str, key: &str, problem: &str, allowed: Option<&str>) {
        let text = e.to_string();
        assert!(e.origin.starts_with(origin), "origin in {text}");
        assert_eq!(e.key, key, "key in {text}");
        assert!(
            text.starts_with(&format!("{}: {key}: ", e.origin)),
            "{text}"
        );
        assert!(e.problem.contains(problem), "problem `{problem}` in {text}");
        if let Some(a) = allowed {
            assert!(
                e.allowed.as_deref().is_some_and(|x| x.contains(a)),
                "allowed `{a}` in {text}"
            );
            assert!(text.contains(" (allowed: "), "{text}");
        }
    }

    const MM2_BASE: &str =
        "clusters = a, b\na.bootstrap.servers = h1:9092\nb.bootstrap.servers = h2:9092\n";

    fn mm2_with(extra: &str) -> Config {
        match parse_mm2(&format!("{MM2_BASE}{extra}"), "mm2.properties") {
            Ok(c) => c,
            Err(e) => panic!("{e}"),
        }
    }

    // ---- defaults --------------------------------------------------------------------------

    #[test]
    fn defaults_follow_mm2() {
        let c = toml_with("[[flows]]\nsource = \"a\"\ntarget = \"b\"\n").unwrap();
        let a = &c.clusters["a"];
        assert_eq!(a.alias, "a");
        assert_eq!(a.bootstrap_servers, vec!["127.0.0.1:9092"]);
        assert_eq!(a.security_protocol, SecurityProtocol::Plaintext);
        assert_eq!(a.client_id, "strait");
        assert_eq!(a.request_timeout, Duration::from_secs(30));
        assert_eq!(a.connect_timeout, Duration::from_secs(10));
        assert_eq!(a.replication_factor, -1);
        assert_eq!(c.http, None);
        assert!(c.unsupported.is_empty());
        assert_eq!(c.origin, "test.toml");

        let f = &c.flows[0];
        assert_eq!(f.name(), "a->b");
        assert!(f.enabled);
        assert_eq!(f.mode, FlowMode::Replicate);
        assert_eq!(f.topics, vec![".*"]);
        assert_eq!(
            f.topics_exclude,
            vec![r".*[\-\.]internal", r".*\.replica", "__.*"]
        );
        assert_eq!(f.groups, vec![".*"]);
        assert_eq!(
            f.groups_exclude,
            vec!["console-consumer-.*", "connect-.*", "__.*"]
        );
        assert_eq!(
            f.naming,
            NamingPolicy::Default {
                separator: ".".into()
            }
        );
        assert_eq!(f.refresh_topics_interval, Duration::from_secs(600));
        assert_eq!(f.refresh_groups_interval, Duration::from_secs(600));
        assert_eq!(f.checkpoint_interval, Duration::from_secs(60));
        assert_eq!(f.heartbeat_interval, Duration::from_secs(1));
        assert_eq!(f.offset_sync_interval, Duration::from_secs(1));
        assert!(f.emit_heartbeats && f.emit_checkpoints && f.emit_offset_syncs);
        assert!(!f.sync_group_offsets);
        assert_eq!(f.sync_group_offsets_interval, Duration::from_secs(60));
        assert_eq!(f.buffer_bytes, 8 << 20);
        assert_eq!(f.fetch_max_bytes, 1 << 20);
        assert_eq!(f.fetch_max_wait, Duration::from_millis(500));
        assert_eq!(*f, FlowConfig::new("a", "b"));

        // The same defaults from MM2.
        let m = mm2_with("a->b.enabled = true\n");
        assert_eq!(m.flows, vec![FlowConfig::new("a", "b")]);
        assert_eq!(
            m.clusters["a"],
            ClusterSettings::new("a", vec!["h1:9092".into()])
        );
    }

    #[test]
    fn default_regexes_compile_and_behave_like_mm2() {
        let full = |re: &str, s: &str| Regex::new(&format!("^(?:{re})$")).unwrap().is_match(s);
        for re in DEFAULT_TOPICS_EXCLUDE.iter().chain(DEFAULT_GROUPS_EXCLUDE) {
            assert!(check_regex(re).is_ok(), "{re}");
        }
        assert!(full(DEFAULT_TOPICS_EXCLUDE[0], "mm2-offsets.a.internal"));
        assert!(full(DEFAULT_TOPICS_EXCLUDE[0], "x-internal"));
        assert!(!full(DEFAULT_TOPICS_EXCLUDE[0], "internal"));
        assert!(full(DEFAULT_TOPICS_EXCLUDE[2], "__consumer_offsets"));
        assert!(full("global_iot", "global_iot"));
        assert!(!full("global_iot", "cluster_a.global_iot"));
    }

    // ---- TOML ------------------------------------------------------------------------------

    #[test]
    fn toml_full_flow_and_defaults_layering() {
        let c = toml_with(
            r#"
http = "127.0.0.1:8083"
[defaults]
refresh_topics_interval_secs = 5
heartbeat_interval_ms = 500
topics_exclude = []
separator = "_"
[[flows]]
source = "a"
target = "b"
topics = ["global_iot", 'orders\..*']
refresh_topics_interval_ms = 250
mode = "Mirror"
buffer_bytes = "128MiB"
fetch_max_bytes = 1048576
fetch_max_wait_ms = 100
sync_group_offsets = true
sync_group_offsets_interval_secs = 15
emit_heartbeats = false
enabled = false
[[flows]]
source = "b"
target = "a"
naming = "identity"
"#,
        )
        .unwrap();
        assert_eq!(
            c.http.as_ref().map(|h| h.addr.as_str()),
            Some("127.0.0.1:8083")
        );
        let f = &c.flows[0];
        assert_eq!(f.topics, vec!["global_iot", r"orders\..*"]);
        assert!(f.topics_exclude.is_empty());
        // The flow's `_ms` beats the defaults' `_secs`.
        assert_eq!(f.refresh_topics_interval, Duration::from_millis(250));
        assert_eq!(f.heartbeat_interval, Duration::from_millis(500));
        assert_eq!(f.mode, FlowMode::Mirror);
        assert_eq!(f.buffer_bytes, 128 << 20);
        assert_eq!(f.fetch_max_bytes, 1 << 20);
        assert_eq!(f.fetch_max_wait, Duration::from_millis(100));
        assert!(f.sync_group_offsets);
        assert_eq!(f.sync_group_offsets_interval, Duration::from_secs(15));
        assert!(!f.emit_heartbeats);
        assert!(!f.enabled);
        // A mirror flow keeps topic names whatever [defaults] says.
        assert_eq!(f.naming, NamingPolicy::Identity);
        let g = &c.flows[1];
        // An identity flow ignores a separator that only [defaults] sets.
        assert_eq!(g.naming, NamingPolicy::Identity);
        assert_eq!(g.refresh_topics_interval, Duration::from_secs(5));
        assert_eq!(c.flow("b", "a"), Some(g));
        assert!(c.cluster("a").is_some());
    }

    #[test]
    fn toml_cluster_settings() {
        let c = parse_toml(
            r#"
[clusters.east-1]
bootstrap_servers = "h1:9092, h2:9092,,"
security_protocol = "sasl_ssl"
sasl_mechanism = "scram-sha-256"
sasl_username = "u"
sasl_password = "p"
client_id = "me"
request_timeout_ms = 1500
connect_timeout_secs = 3
replication_factor = 3
"#,
            "c.toml",
        )
        .unwrap();
        let e = &c.clusters["east-1"];
        assert_eq!(e.bootstrap_servers, vec!["h1:9092", "h2:9092"]);
        assert_eq!(e.security_protocol, SecurityProtocol::SaslSsl);
        assert_eq!(e.client_id, "me");
        assert_eq!(e.request_timeout, Duration::from_millis(1500));
        assert_eq!(e.connect_timeout, Duration::from_secs(3));
        assert_eq!(e.replication_factor, 3);
        assert!(c.flows.is_empty());
    }

    #[test]
    fn toml_unknown_keys_list_allowed_ones() {
        let e = toml_err("[[flows]]\nsource = \"a\"\ntarget = \"b\"\ntopic = [\"x\"]\n");
        check(
            &e,
            "test.toml",
            "flows[0].topic",
            "unknown key; did you mean `topics`?",
            Some("topics_exclude"),
        );
        assert!(e
            .allowed
            .as_deref()
            .unwrap()
            .contains("refresh_topics_interval_ms"));

        let e = toml_err(
            "[[flows]]\nsource = \"a\"\ntarget = \"b\"\n\"refresh.topics.interval.seconds\" = 5\n",
        );
        check(
            &e,
            "test.toml",
            "flows[0].refresh.topics.interval.seconds",
            "did you mean `refresh_topics_interval_secs`?",
            Some("refresh_topics_interval_secs"),
        );
        // Unquoted, the same key is a nested table in TOML; the message shows it as written.
        let e = toml_err(
            "[[flows]]\nsource = \"a\"\ntarget = \"b\"\nrefresh.topics.interval.seconds = 5\n",
        );
        check(
            &e,
            "test.toml",
            "flows[0].refresh.topics.interval.seconds",
            "did you mean `refresh_topics_interval_secs`?",
            Some("refresh_topics_interval_secs"),
        );

        let e = toml_err("[defaults]\nsource = \"a\"\n");
        check(
            &e,
            "test.toml",
            "defaults.source",
            "belong in each [[flows]] entry",
            Some("topics"),
        );
        assert!(!e.allowed.as_deref().unwrap().contains("source"));

        let e = toml_err("topics = [\"x\"]\n");
        check(
            &e,
            "test.toml",
            "topics",
            "flow settings go in a [[flows]] entry",
            Some("http, instance_group, clusters, defaults, flows"),
        );
        let e = parse_toml(&format!("{TWO}http = \"127.0.0.1:8083\"\n"), "x.toml").unwrap_err();
        check(
            &e,
            "x.toml",
            "clusters.b.http",
            "must come before the first [table] header",
            Some("bootstrap_servers"),
        );

        let e = parse_toml("[clusters.a]\nbootstrap.servers = \"h:1\"\n", "x.toml").unwrap_err();
        check(
            &e,
            "x.toml",
            "clusters.a.bootstrap.servers",
            "did you mean `bootstrap_servers`?",
            Some("bootstrap_servers"),
        );
        let e = parse_toml(
            "[clusters.a]\nbootstrap_servers = \"h:1\"\nbootstrap = 1\n",
            "x.toml",
        )
        .unwrap_err();
        check(
            &e,
            "x.toml",
            "clusters.a.bootstrap",
            "unknown key",
            Some("bootstrap_servers, security_protocol"),
        );
    }

    #[test]
    fn toml_unknown_alias_in_flow_lists_known_aliases() {
        let e = toml_err("[[flows]]\nsource = \"a\"\ntarget = \"c\"\n");
        check(
            &e,
            "test.toml",
            "flows[0].target",
            "unknown cluster alias `c`",
            Some("a, b"),
        );
        let e = toml_err("[[flows]]\ntarget = \"b\"\n");
        check(&e, "test.toml", "flows[0].source", "missing", Some("a, b"));
    }

    #[test]
    fn toml_source_equals_target() {
        let e = toml_err("[[flows]]\nsource = \"a\"\ntarget = \"a\"\n");
        check(
            &e,
            "test.toml",
            "flows[0].target",
            "same cluster `a`",
            Some("b"),
        );
    }

    #[test]
    fn toml_empty_or_missing_bootstrap() {
        let e = parse_toml("[clusters.a]\nbootstrap_servers = []\n", "x.toml").unwrap_err();
        check(
            &e,
            "x.toml",
            "clusters.a.bootstrap_servers",
            "empty",
            Some("host:port"),
        );
        let e = parse_toml("[clusters.a]\nbootstrap_servers = \" , \"\n", "x.toml").unwrap_err();
        check(
            &e,
            "x.toml",
            "clusters.a.bootstrap_servers",
            "empty",
            Some("host:port"),
        );
        let e = parse_toml("[clusters.a]\nsecurity_protocol = \"SSL\"\n", "x.toml").unwrap_err();
        check(
            &e,
            "x.toml",
            "clusters.a.bootstrap_servers",
            "missing",
            Some("host:port"),
        );
        let e = parse_toml("[clusters.a]\nbootstrap_servers = \"nohost\"\n", "x.toml").unwrap_err();
        check(
            &e,
            "x.toml",
            "clusters.a.bootstrap_servers",
            "has no port",
            Some("host:port"),
        );
        let e = parse_toml("http = 1\n", "x.toml").unwrap_err();
        check(
            &e,
            "x.toml",
            "http",
            "expected a string or a table ([http]), found a integer",
            None,
        );
        let e = parse_toml("", "x.toml").unwrap_err();
        check(&e, "x.toml", "clusters", "missing", Some("letters, digits"));
    }

    #[test]
    fn toml_bad_regex_shows_the_regex_message() {
        let e = toml_err(
            "[[flows]]\nsource = \"a\"\ntarget = \"b\"\ngroups_exclude = [\"ok\", \"bad(\"]\n",
        );
        check(
            &e,
            "test.toml",
            "flows[0].groups_exclude",
            "invalid regular expression `bad(`",
            Some("regex"),
        );
        assert!(e.problem.contains("unclosed group"), "{e}");
        let e = toml_err("[defaults]\ntopics = [\"\"]\n");
        check(
            &e,
            "test.toml",
            "defaults.topics",
            "empty pattern",
            Some("regex"),
        );
        // An error in [defaults] surfaces at the defaults key, also through a flow.
        let e = toml_err(
            "[defaults]\ntopics = [\"(?<=x)y\"]\n[[flows]]\nsource = \"a\"\ntarget = \"b\"\n",
        );
        check(&e, "test.toml", "defaults.topics", "look-around", None);
        let e = toml_err("[defaults]\ntopics = \"global_iot\"\n");
        check(
            &e,
            "test.toml",
            "defaults.topics",
            "expected an array",
            Some("an array of strings"),
        );
    }

    #[test]
    fn toml_zero_and_double_intervals() {
        let e = toml_err("[[flows]]\nsource = \"a\"\ntarget = \"b\"\nheartbeat_interval_ms = 0\n");
        check(
            &e,
            "test.toml",
            "flows[0].heartbeat_interval_ms",
            "zero",
            Some("positive integer number of milliseconds"),
        );
        let e = toml_err("[defaults]\ncheckpoint_interval_secs = 0\n");
        check(
            &e,
            "test.toml",
            "defaults.checkpoint_interval_secs",
            "zero",
            Some("seconds"),
        );
        let e = toml_err("[defaults]\ncheckpoint_interval_secs = -5\n");
        check(
            &e,
            "test.toml",
            "defaults.checkpoint_interval_secs",
            "negative",
            Some("seconds"),
        );
        let e = toml_err("[defaults]\ncheckpoint_interval_secs = 1\ncheckpoint_interval_ms = 1\n");
        assert!(e.key.starts_with("defaults.checkpoint_interval_"), "{e}");
        check(
            &e,
            "test.toml",
            &e.key.clone(),
            "set one",
            Some("checkpoint_interval_secs or checkpoint_interval_ms"),
        );
        let e = parse_toml(
            "[clusters.a]\nbootstrap_servers = \"h:1\"\nrequest_timeout_secs = 0\n",
            "x.toml",
        )
        .unwrap_err();
        check(
            &e,
            "x.toml",
            "clusters.a.request_timeout_secs",
            "zero",
            Some("seconds"),
        );
    }

    #[test]
    fn toml_duplicate_flow() {
        let flow = "[[flows]]\nsource = \"a\"\ntarget = \"b\"\n";
        let e = toml_err(&format!("{flow}{flow}"));
        check(
            &e,
            "test.toml",
            "flows[1]",
            "duplicate flow a->b (already defined by flows[0])",
            None,
        );
    }

    #[test]
    fn toml_bad_enums() {
        let e = parse_toml(
            "[clusters.a]\nbootstrap_servers = \"h:1\"\nsecurity_protocol = \"TLS\"\n",
            "x.toml",
        )
        .unwrap_err();
        check(
            &e,
            "x.toml",
            "clusters.a.security_protocol",
            "unknown security protocol `TLS`",
            Some("PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL"),
        );
        let e = toml_err("[defaults]\nmode = \"copy\"\n");
        check(
            &e,
            "test.toml",
            "defaults.mode",
            "unknown mode `copy`",
            Some("replicate, mirror"),
        );
        let e = toml_err("[[flows]]\nsource = \"a\"\ntarget = \"b\"\nnaming = \"prefix\"\n");
        check(
            &e,
            "test.toml",
            "flows[0].naming",
            "unknown naming policy `prefix`",
            Some("identity"),
        );
        let e = toml_err(
            "[[flows]]\nsource = \"a\"\ntarget = \"b\"\nnaming = \"identity\"\nseparator = \"_\"\n",
        );
        check(
            &e,
            "test.toml",
            "flows[0].separator",
            "only applies to naming = \"default\"",
            Some("remove `separator`"),
        );
        let e = toml_err("[defaults]\nemit_checkpoints = \"yes\"\n");
        check(
            &e,
            "test.toml",
            "defaults.emit_checkpoints",
            "expected true or false",
            Some("true, false"),
        );
        let e = toml_err("[defaults]\nbuffer_bytes = \"64MB\"\n");
        check(
            &e,
            "test.toml",
            "defaults.buffer_bytes",
            "unknown unit",
            Some("KiB, MiB, GiB"),
        );
    }

    #[test]
    fn toml_alias_rules() {
        let e = parse_toml(
            "[clusters.\"a.b\"]\nbootstrap_servers = \"h:1\"\n",
            "x.toml",
        )
        .unwrap_err();
        check(
            &e,
            "x.toml",
            "clusters.a.b",
            "contains `.`",
            Some("letters, digits, `_` and `-`"),
        );
        // With the default naming policy, an alias must not contain the separator.
        let e = parse_toml(
            "[clusters.cluster_a]\nbootstrap_servers = \"h:1\"\n[clusters.b]\nbootstrap_servers = \"h:2\"\n\
             [[flows]]\nsource = \"cluster_a\"\ntarget = \"b\"\nseparator = \"_\"\n",
            "x.toml",
        )
        .unwrap_err();
        check(
            &e,
            "x.toml",
            "flows[0].separator",
            "cluster alias `cluster_a` contains the separator `_`",
            Some("identity naming"),
        );
        assert!(e.problem.contains("misparsed"), "{e}");
        // ... which identity naming does not have.
        parse_toml(
            "[clusters.cluster_a]\nbootstrap_servers = \"h:1\"\n[clusters.b]\nbootstrap_servers = \"h:2\"\n\
             [defaults]\nseparator = \"_\"\n[[flows]]\nsource = \"cluster_a\"\ntarget = \"b\"\nnaming = \"identity\"\n",
            "x.toml",
        )
        .unwrap();
        let e = toml_err("[defaults]\nseparator = \"\"\n");
        check(
            &e,
            "test.toml",
            "defaults.separator",
            "must not be empty",
            Some("non-empty"),
        );
    }

    #[test]
    fn toml_cross_setting_checks() {
        let flow = "[[flows]]\nsource = \"a\"\ntarget = \"b\"\n";
        // Cross-setting checks apply to a flow's merged settings.
        toml_with("[defaults]\nemit_offset_syncs = false\n").unwrap();
        let e = toml_err(&format!("[defaults]\nemit_offset_syncs = false\n{flow}"));
        check(
            &e,
            "test.toml",
            "defaults.emit_offset_syncs",
            "translating group offsets needs offset syncs",
            Some("emit_checkpoints = false"),
        );
        toml_with(&format!(
            "[defaults]\nemit_offset_syncs = false\n{flow}emit_checkpoints = false\n"
        ))
        .unwrap();
        let e = toml_err(&format!("{flow}fetch_max_bytes = \"128MiB\"\n"));
        check(
            &e,
            "test.toml",
            "flows[0].fetch_max_bytes",
            "smaller than fetch_max_bytes",
            Some("buffer_bytes >= fetch_max_bytes"),
        );
        let e = toml_err(&format!("[defaults]\nbuffer_bytes = \"512KiB\"\n{flow}"));
        check(
            &e,
            "test.toml",
            "defaults.buffer_bytes",
            "smaller than fetch_max_bytes",
            Some("buffer_bytes >= fetch_max_bytes"),
        );
        let e = toml_err("[defaults]\nfetch_max_bytes = \"4GiB\"\n");
        check(
            &e,
            "test.toml",
            "defaults.fetch_max_bytes",
            "more than Kafka allows",
            Some("bytes"),
        );
        let e = parse_toml(
            "[clusters.a]\nbootstrap_servers = \"h:1\"\nreplication_factor = 0\n",
            "x.toml",
        )
        .unwrap_err();
        check(
            &e,
            "x.toml",
            "clusters.a.replication_factor",
            "not a valid replication factor",
            Some("-1 (broker default) or 1 to 32767"),
        );
    }

    #[test]
    fn toml_syntax_error_names_the_line() {
        let e = parse_toml("[clusters.a]\nbootstrap_servers = \n", "x.toml").unwrap_err();
        assert!(e.origin.starts_with("x.toml:2:"), "{e}");
        let e = parse_toml("x = [\n", "x.toml").unwrap_err();
        assert!(!e.to_string().contains('\n'), "one line: {e}");
        assert_eq!(e.key, "TOML syntax");
        let e = toml_err("[[flows]]\nsource = 1\n");
        check(
            &e,
            "test.toml",
            "flows[0].source",
            "expected a string, found a integer",
            None,
        );
    }

    // ---- Java properties ---------------------------------------------------------------------

    #[test]
    fn properties_syntax() {
        let text = "# comment\n  ! also a comment \\\nk1=v1\n\
                    k2 : v2  \n\
                    k3 value three\n\
                    k4 = first, \\\n     second, \\\n\tthird\n\
                    k5 = a\\\\.b\n\
                    k6 = a\\.b\n\
                    k\\=7 = x\\u0041\\n\n\
                    \n\
                    k8\n\
                    k9 = ends with escaped backslash \\\\\n\
                    k10 = #not a comment\r\nk11=\\\n";
        let props = parse_properties(text).unwrap();
        let got: Vec<(&str, &str, usize)> = props
            .iter()
            .map(|p| (p.key.as_str(), p.value.as_str(), p.line))
            .collect();
        assert_eq!(
            got,
            vec![
                ("k1", "v1", 3),
                ("k2", "v2", 4),
                ("k3", "value three", 5),
                ("k4", "first, second, third", 6),
                ("k5", r"a\.b", 9),
                ("k6", "a.b", 10),
                ("k=7", "xA", 11),
                ("k8", "", 13),
                ("k9", r"ends with escaped backslash \", 14),
                ("k10", "#not a comment", 15),
                ("k11", "", 16),
            ]
        );
        assert!(parse_properties("k = \\u12\n").is_err());
    }

    // ---- MM2 --------------------------------------------------------------------------------

    #[test]
    fn mm2_flow_specific_beats_global() {
        let c = mm2_with(
            "topics = global.*\n\
             a->b.topics = only_this, and_that\n\
             refresh.topics.interval.seconds = 30\n\
             b->a.refresh.topics.interval.seconds = 7\n\
             emit.checkpoints.enabled = false\n\
             a->b.emit.checkpoints.enabled = true\n\
             sync.group.offsets.enabled = TRUE\n\
             groups.blacklist = old.*\n\
             a->b.groups.exclude = new.*\n\
             b->a.topics.blacklist = t1\n\
             topics.exclude = t2\n\
             a->b.enabled = true\n\
             b->a.enabled = true\n",
        );
        let ab = c.flow("a", "b").unwrap();
        let ba = c.flow("b", "a").unwrap();
        assert_eq!(ab.topics, vec!["only_this", "and_that"]);
        assert_eq!(ba.topics, vec!["global.*"]);
        assert_eq!(ab.refresh_topics_interval, Duration::from_secs(30));
        assert_eq!(ba.refresh_topics_interval, Duration::from_secs(7));
        assert!(ab.emit_checkpoints);
        assert!(!ba.emit_checkpoints);
        assert!(ab.sync_group_offsets && ba.sync_group_offsets);
        assert_eq!(ab.groups_exclude, vec!["new.*"]);
        assert_eq!(ba.groups_exclude, vec!["old.*"]);
        // As in MM2, `topics.exclude` (here global) beats the deprecated alias (here per flow).
        assert_eq!(ba.topics_exclude, vec!["t2"]);
        assert!(c.unsupported.is_empty(), "{:?}", c.unsupported);
    }

    #[test]
    fn mm2_only_enabled_flows_in_file_order() {
        let c = mm2_with("b->a.enabled = true\na->b.enabled = false\na->b.topics = x\n");
        assert_eq!(
            c.flows.iter().map(FlowConfig::name).collect::<Vec<_>>(),
            vec!["b->a"]
        );
        assert_eq!(
            c.unsupported,
            vec!["a->b.topics: flow a->b is not enabled (a->b.enabled = true is not set), so this has no effect"]
        );
        let c = mm2_with("");
        assert!(c.flows.is_empty());
    }

    #[test]
    fn mm2_cluster_settings_and_replication_factor() {
        let c = mm2_with(
            "security.protocol = ssl\n\
             b.security.protocol = SASL_PLAINTEXT\n\
             b.sasl.mechanism = PLAIN\n\
             b.sasl.jaas.config = org.apache.kafka.common.security.plain.PlainLoginModule required username=u password=p;\n\
             a.client.id = alpha\n\
             request.timeout.ms = 5000\n\
             b.socket.connection.setup.timeout.ms = 2500\n\
             replication.factor = 2\n\
             a->b.enabled = true\n\
             a->b.replication.factor = 3\n",
        );
        let (a, b) = (&c.clusters["a"], &c.clusters["b"]);
        assert_eq!(a.security_protocol, SecurityProtocol::Ssl);
        assert_eq!(b.security_protocol, SecurityProtocol::SaslPlaintext);
        assert_eq!(
            (a.client_id.as_str(), b.client_id.as_str()),
            ("alpha", "strait")
        );
        assert_eq!(a.request_timeout, Duration::from_secs(5));
        assert_eq!(b.connect_timeout, Duration::from_millis(2500));
        assert_eq!(a.connect_timeout, Duration::from_secs(10));
        assert_eq!((a.replication_factor, b.replication_factor), (2, 3));

        let e = mm2_err(&format!(
            "{MM2_BASE}clusters = a, b, c\nc.bootstrap.servers = h3:1\n\
             a->c.enabled = true\nb->c.enabled = true\n\
             a->c.replication.factor = 3\nb->c.replication.factor = 1\n"
        ));
        check(
            &e,
            "mm2.properties:9",
            "b->c.replication.factor",
            "conflicts with a->c.replication.factor = 3",
            Some("3"),
        );
    }

    #[test]
    fn mm2_naming_policies() {
        let c = mm2_with(&format!(
            "replication.policy.class = {IDENTITY_POLICY_CLASS}\nreplication.policy.separator = _\n\
             a->b.enabled = true\nb->a.enabled = true\n\
             b->a.replication.policy.class = {DEFAULT_POLICY_CLASS}\nb->a.replication.policy.separator = -\n"
        ));
        assert_eq!(c.flow("a", "b").unwrap().naming, NamingPolicy::Identity);
        assert_eq!(
            c.flow("b", "a").unwrap().naming,
            NamingPolicy::Default {
                separator: "-".into()
            }
        );
        assert_eq!(
            c.unsupported,
            vec!["replication.policy.separator: ignored with IdentityReplicationPolicy: identity naming has no separator"]
        );
        let e = mm2_err(&format!(
            "{MM2_BASE}a->b.enabled = true\na->b.replication.policy.class = com.example.MyPolicy\n"
        ));
        check(
            &e,
            "mm2.properties:5",
            "a->b.replication.policy.class",
            "`com.example.MyPolicy` is not supported",
            Some(IDENTITY_POLICY_CLASS),
        );
        assert!(e.allowed.as_deref().unwrap().contains(DEFAULT_POLICY_CLASS));
    }

    #[test]
    fn mm2_unsupported_keys_in_file_order() {
        let c = mm2_with(
            "tasks.max = 4\n\
             a.ssl.cipher.suites = X\n\
             sync.topic.acls.enabled = false\n\
             a->b.enabled = true\n\
             a->b.producer.compression.type = zstd\n\
             config.storage.replication.factor = 1\n\
             c.bootstrap.servers = h:1\n\
             refresh.groups.enabled = false\n\
             sasl.login.class = X\n\
             dedicated.mode.enable.internal.rest = true\n\
             something.else = 1\n\
             tasks.max = 5\n\
             topic.filter.class = org.apache.kafka.connect.mirror.DefaultTopicFilter\n\
             group.filter.class = com.example.Filter\n",
        );
        let keys: Vec<&str> = c
            .unsupported
            .iter()
            .map(|n| n.split(": ").next().unwrap())
            .collect();
        assert_eq!(
            keys,
            vec![
                "tasks.max",
                "a.ssl.cipher.suites",
                "sync.topic.acls.enabled",
                "a->b.producer.compression.type",
                "config.storage.replication.factor",
                "c.bootstrap.servers",
                "refresh.groups.enabled",
                "sasl.login.class",
                "dedicated.mode.enable.internal.rest",
                "something.else",
                "group.filter.class",
            ]
        );
        assert!(c.unsupported[1].contains("this SSL/SASL setting is not supported"));
        assert!(c.unsupported[5].contains("`c` is not listed in `clusters` (a, b)"));
        assert!(c
            .unsupported
            .iter()
            .all(|n| n.contains(": ") && n.split(": ").nth(1).is_some_and(|r| !r.is_empty())));
    }

    #[test]
    fn mm2_errors() {
        let e = mm2_err("a.bootstrap.servers = h:1\n");
        check(
            &e,
            "mm2.properties",
            "clusters",
            "missing",
            Some("comma-separated aliases"),
        );
        let e = mm2_err("clusters = a, b\na.bootstrap.servers = h:1\n");
        check(
            &e,
            "mm2.properties",
            "b.bootstrap.servers",
            "missing",
            Some("host:port"),
        );
        let e = mm2_err("clusters = a, b\na.bootstrap.servers = h:1\nb.bootstrap.servers = ,\n");
        check(
            &e,
            "mm2.properties:3",
            "b.bootstrap.servers",
            "empty",
            Some("host:port"),
        );
        let e = mm2_err("clusters = a, b.c\n");
        check(
            &e,
            "mm2.properties:1",
            "clusters",
            "contains `.`",
            Some("letters, digits"),
        );
        let e = mm2_err(&format!("{MM2_BASE}a->c.enabled = true\n"));
        check(
            &e,
            "mm2.properties:4",
            "a->c.enabled",
            "unknown cluster alias `c`",
            Some("a, b"),
        );
        let e = mm2_err(&format!("{MM2_BASE}x->b.topics = t\n"));
        check(
            &e,
            "mm2.properties:4",
            "x->b.topics",
            "unknown cluster alias `x`",
            Some("a, b"),
        );
        let e = mm2_err(&format!("{MM2_BASE}a->a.enabled = true\n"));
        check(
            &e,
            "mm2.properties:4",
            "a->a.enabled",
            "same cluster `a`",
            Some("b"),
        );
        let e = mm2_err(&format!("{MM2_BASE}a->b.enabled = yes\n"));
        check(
            &e,
            "mm2.properties:4",
            "a->b.enabled",
            "not a boolean",
            Some("true, false"),
        );
        let e = mm2_err(&format!(
            "{MM2_BASE}a->b.enabled = true\na->b.emit.heartbeats.interval.seconds = 0\n"
        ));
        check(
            &e,
            "mm2.properties:5",
            "a->b.emit.heartbeats.interval.seconds",
            "zero",
            Some("positive whole number of seconds"),
        );
        let e = mm2_err(&format!(
            "{MM2_BASE}refresh.groups.interval.seconds = soon\n"
        ));
        check(
            &e,
            "mm2.properties:4",
            "refresh.groups.interval.seconds",
            "not a whole number",
            Some("seconds"),
        );
        // A bad global regex is reported even when no flow is enabled.
        let e = mm2_err(&format!("{MM2_BASE}topics = ok, [bad\n"));
        check(
            &e,
            "mm2.properties:4",
            "topics",
            "invalid regular expression `[bad`",
            Some("regex"),
        );
        let e = mm2_err(&format!("{MM2_BASE}a.security.protocol = TLS\n"));
        check(
            &e,
            "mm2.properties:4",
            "a.security.protocol",
            "unknown security protocol `TLS`",
            Some("SASL_SSL"),
        );
        let e = mm2_err(&format!(
            "{MM2_BASE}a->b.enabled = true\nemit.offset-syncs.enabled = false\n"
        ));
        check(
            &e,
            "mm2.properties:5",
            "emit.offset-syncs.enabled",
            "needs offset syncs",
            Some("emit.checkpoints.enabled = false"),
        );
        let e = mm2_err(&format!("{MM2_BASE}replication.policy.separator = _\nclusters = a_1, b\na_1.bootstrap.servers = h:1\na_1->b.enabled = true\n"));
        check(
            &e,
            "mm2.properties:4",
            "replication.policy.separator",
            "alias `a_1` contains the separator `_`",
            Some("identity naming"),
        );
        let e = mm2_err(&format!("{MM2_BASE}replication.factor = 0\n"));
        check(
            &e,
            "mm2.properties:4",
            "replication.factor",
            "not a valid replication factor",
            Some("-1 (broker default)"),
        );
        let e = mm2_err("clusters = a\\u00\n");
        check(
            &e,
            "mm2.properties:1",
            "properties syntax",
            "malformed",
            None,
        );
    }

    #[test]
    fn mm2_continuation_and_comments() {
        let c = parse_mm2(
            "# MM2\n! old-style comment\nclusters = a, \\\n    b\n\
             a.bootstrap.servers: h1:9092,\\\n  h1b:9092\n\
             b.bootstrap.servers h2:9092\n\
             a->b.enabled = true\n\
             # a->b.topics = commented.out\n\
             a->b.topics = one, \\\n   two\n",
            "m.properties",
        )
        .unwrap();
        assert_eq!(c.clusters.keys().collect::<Vec<_>>(), vec!["a", "b"]);
        assert_eq!(
            c.clusters["a"].bootstrap_servers,
            vec!["h1:9092", "h1b:9092"]
        );
        assert_eq!(c.clusters["b"].bootstrap_servers, vec!["h2:9092"]);
        assert_eq!(c.flows[0].topics, vec!["one", "two"]);
    }

    // ---- format detection ---------------------------------------------------------------------

    #[test]
    fn sniffing() {
        let mm2 = "# mm2\n  clusters = a, b\n";
        let toml = "[clusters.a]\nbootstrap_servers = \"h:1\"\n";
        assert_eq!(detect_format(Path::new("x.toml"), mm2), ConfigFormat::Toml);
        assert_eq!(detect_format(Path::new("x.TOML"), mm2), ConfigFormat::Toml);
        assert_eq!(
            detect_format(Path::new("x.properties"), toml),
            ConfigFormat::Mm2
        );
        assert_eq!(detect_format(Path::new("mm2.conf"), mm2), ConfigFormat::Mm2);
        assert_eq!(
            detect_format(Path::new("mm2"), "clusters: a\n"),
            ConfigFormat::Mm2
        );
        assert_eq!(
            detect_format(Path::new("strait.conf"), toml),
            ConfigFormat::Toml
        );
        assert_eq!(
            detect_format(Path::new("x"), "clusters_x = 1\n"),
            ConfigFormat::Toml
        );

        let dir = std::env::temp_dir().join(format!("strait-config-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("replication.conf");
        std::fs::write(&p, "clusters = a\na.bootstrap.servers = h:1\n").unwrap();
        let c = load(&p).unwrap();
        assert_eq!(c.origin, p.display().to_string());
        assert!(c.clusters.contains_key("a"));
        let q = dir.join("strait.cfg");
        std::fs::write(&q, toml).unwrap();
        assert!(load(&q).unwrap().clusters.contains_key("a"));
        let missing = dir.join("missing.toml");
        let e = load(&missing).unwrap_err();
        check(
            &e,
            &missing.display().to_string(),
            "file",
            "cannot read it",
            None,
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    // ---- the example files ----------------------------------------------------------------------

    #[test]
    fn example_files_are_equivalent() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples");
        let t = load(&root.join("lab.toml")).unwrap_or_else(|e| panic!("{e}"));
        let m = load(&root.join("lab-mm2.properties")).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(t.clusters, m.clusters);
        assert_eq!(t.flows, m.flows);
        assert_eq!(t.http, None, "the status API is not served yet");
        assert!(t.unsupported.is_empty());

        assert_eq!(
            t.clusters["cluster_a"].bootstrap_servers,
            vec!["127.0.0.1:9092"]
        );
        assert_eq!(
            t.clusters["cluster_b"].bootstrap_servers,
            vec!["127.0.0.1:9093"]
        );
        assert_eq!(t.clusters["cluster_b"].replication_factor, 1);
        let ab = t.flow("cluster_a", "cluster_b").unwrap();
        assert_eq!(ab.topics, vec!["global_iot"]);
        assert_eq!(ab.groups, vec![".*"]);
        assert_eq!(ab.refresh_topics_interval, Duration::from_secs(10));
        assert_eq!(ab.checkpoint_interval, Duration::from_secs(5));
        let ba = t.flow("cluster_b", "cluster_a").unwrap();
        assert_eq!(ba.topics, vec![r"cluster_a\.global_iot"]);
        assert_eq!(t.flows.len(), 2);

        let keys: Vec<&str> = m
            .unsupported
            .iter()
            .map(|n| n.split(": ").next().unwrap())
            .collect();
        assert_eq!(
            keys,
            vec![
                "checkpoints.topic.replication.factor",
                "heartbeats.topic.replication.factor",
                "offset-syncs.topic.replication.factor",
                "offset.storage.replication.factor",
                "status.storage.replication.factor",
                "config.storage.replication.factor",
            ]
        );
    }

    #[test]
    fn mirror_flows() {
        let text = std::fs::read_to_string(
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/mirror.toml"),
        )
        .unwrap();
        let c = parse_toml(&text, "mirror.toml").unwrap();
        let f = c.flow("west", "east").unwrap();
        assert_eq!(f.mode, FlowMode::Mirror);
        assert_eq!(f.naming, NamingPolicy::Identity, "implied by mirror mode");
        assert_eq!(f.link_name(), "west-link");
        assert!(f.consumer_offset_sync);
        assert_eq!(f.consumer_offset_sync_interval, Duration::from_secs(5));
        assert!(f.consumer_offset_group_filters.includes("someGroup"));

        let flow = "[[flows]]\nsource = \"a\"\ntarget = \"b\"\nmode = \"mirror\"\n";
        let c = parse_toml(&format!("{TWO}{flow}"), "x.toml").unwrap();
        let f = c.flow("a", "b").unwrap();
        assert_eq!(f.link_name(), "a->b");
        assert_eq!(f.consumer_offset_sync_interval, Duration::from_secs(5));
        assert!(f.consumer_offset_group_filters.includes("any"));

        let e = parse_toml(&format!("{TWO}{flow}naming = \"default\"\n"), "x.toml").unwrap_err();
        check(
            &e,
            "x.toml",
            "flows[0].naming",
            "keeps topic names",
            Some("naming = \"identity\""),
        );
        let e = parse_toml(&format!("{TWO}{flow}separator = \"_\"\n"), "x.toml").unwrap_err();
        check(&e, "x.toml", "flows[0].separator", "mirror flow", None);
        let e = parse_toml(
            &format!("{TWO}{flow}consumer_offset_group_filters = '{{\"groupFilters\":[{{\"name\":\"g\",\"patternType\":\"REGEX\"}}]}}'\n"),
            "x.toml",
        )
        .unwrap_err();
        check(
            &e,
            "x.toml",
            "flows[0].consumer_offset_group_filters",
            "REGEX",
            None,
        );
        let e = parse_toml(
            &format!("{TWO}{flow}consumer_offset_sync_interval_ms = 0\n"),
            "x.toml",
        )
        .unwrap_err();
        check(
            &e,
            "x.toml",
            "flows[0].consumer_offset_sync_interval_ms",
            "zero",
            None,
        );
    }

    fn temp_file(name: &str, text: &str) -> std::path::PathBuf {
        let p = std::env::temp_dir().join(format!("strait-config-{}-{name}", std::process::id()));
        std::fs::write(&p, text).unwrap();
        p
    }

    #[test]
    fn toml_security_settings_and_secret_forms() {
        std::env::set_var("STRAIT_CFG_TEST_PW", "env-pass-1");
        let pw_file = temp_file("pw", "file-pass-2\n");
        let props = temp_file("pw.properties", "b.password=props-pass-3\n");
        let text = format!(
            r#"
[clusters.a]
bootstrap_servers = "h:1"
security_protocol = "SASL_SSL"
sasl_mechanism = "SCRAM-SHA-512"
sasl_username = "alice"
sasl_password = {{ env = "STRAIT_CFG_TEST_PW" }}
ssl_ca_file = "/etc/ca.pem"
ssl_certificate_file = "/etc/c.pem"
ssl_key_file = "/etc/c.key"
ssl_server_name = "kafka.internal"
[clusters.b]
bootstrap_servers = "h:2"
security_protocol = "SASL_PLAINTEXT"
sasl_mechanism = "PLAIN"
sasl_username = "bob"
sasl_password = {{ file = "{}", key = "b.password" }}
[clusters.c]
bootstrap_servers = "h:3"
security_protocol = "SASL_PLAINTEXT"
sasl_mechanism = "SCRAM-SHA-256"
sasl_username = "carol"
sasl_password = {{ file = "{}" }}
"#,
            props.display(),
            pw_file.display()
        );
        let c = parse_toml(&text, "s.toml").unwrap();
        let a = &c.clusters["a"];
        let sa = a.sasl.as_ref().unwrap();
        assert_eq!(sa.mechanism, SaslMechanism::ScramSha512);
        assert_eq!(sa.username, "alice");
        assert_eq!(sa.password.expose(), "env-pass-1");
        assert_eq!(a.tls.ca_file.as_deref(), Some(Path::new("/etc/ca.pem")));
        assert_eq!(a.tls.server_name.as_deref(), Some("kafka.internal"));
        assert_eq!(
            c.clusters["b"].sasl.as_ref().unwrap().password.expose(),
            "props-pass-3"
        );
        assert_eq!(
            c.clusters["c"].sasl.as_ref().unwrap().password.expose(),
            "file-pass-2"
        );
        assert!(c.clusters["a"].literal_secrets().is_empty());
        let debug = format!("{c:?}");
        for secret in ["env-pass-1", "props-pass-3", "file-pass-2"] {
            assert!(!debug.contains(secret), "{debug}");
        }
    }

    #[test]
    fn toml_security_errors_name_the_key_not_the_value() {
        let base = "[clusters.a]\nbootstrap_servers = \"h:1\"\n";
        let e = parse_toml(
            &format!("{base}security_protocol = \"SASL_SSL\"\nsasl_mechanism = \"PLAIN\"\nsasl_username = \"u\"\nsasl_password = {{ env = \"STRAIT_CFG_TEST_UNSET\" }}\n"),
            "s.toml",
        )
        .unwrap_err();
        check(
            &e,
            "s.toml",
            "clusters.a.sasl_password",
            "environment variable STRAIT_CFG_TEST_UNSET is not set",
            None,
        );
        let e = parse_toml(
            &format!("{base}security_protocol = \"SASL_SSL\"\nsasl_mechanism = \"GSSAPI\"\n"),
            "s.toml",
        )
        .unwrap_err();
        check(
            &e,
            "s.toml",
            "clusters.a.sasl_mechanism",
            "unknown SASL mechanism `GSSAPI`",
            Some("PLAIN, SCRAM-SHA-256, SCRAM-SHA-512"),
        );
        let e = parse_toml(
            &format!("{base}security_protocol = \"SASL_SSL\"\nsasl_mechanism = \"PLAIN\"\nsasl_password = \"hunter2\"\n"),
            "s.toml",
        )
        .unwrap_err();
        assert_eq!(e.key, "clusters.a.sasl_username");
        assert!(!e.to_string().contains("hunter2"));
        let e = parse_toml(&format!("{base}sasl_mechanism = \"PLAIN\"\n"), "s.toml").unwrap_err();
        assert_eq!(e.key, "clusters.a.sasl_mechanism");
        assert!(e.problem.contains("PLAINTEXT"), "{e}");
        let e = parse_toml(&format!("{base}ssl_ca_file = \"/x\"\n"), "s.toml").unwrap_err();
        assert_eq!(e.key, "clusters.a.ssl_ca_file");
        let e = parse_toml(
            &format!("{base}security_protocol = \"SSL\"\nssl_certificate_file = \"/c\"\n"),
            "s.toml",
        )
        .unwrap_err();
        assert_eq!(e.key, "clusters.a.ssl_key_file");
        let e = parse_toml(
            &format!("{base}security_protocol = \"SASL_SSL\"\nsasl_mechanism = \"PLAIN\"\nsasl_username = \"u\"\nsasl_password = {{ vault = \"x\" }}\n"),
            "s.toml",
        )
        .unwrap_err();
        assert_eq!(e.key, "clusters.a.sasl_password.vault");
        let c = parse_toml(
            &format!("{base}security_protocol = \"SASL_SSL\"\nsasl_mechanism = \"PLAIN\"\nsasl_username = \"u\"\nsasl_password = \"hunter2\"\n"),
            "s.toml",
        )
        .unwrap();
        assert_eq!(
            c.clusters["a"].literal_secrets(),
            vec!["the SASL password of cluster a".to_string()]
        );
    }

    #[test]
    fn toml_http_forms() {
        let c = parse_toml(&format!("http = \"localhost:9000\"\n{TWO}"), "h.toml").unwrap();
        assert_eq!(c.http, Some(HttpSettings::new("localhost:9000")));
        std::env::set_var("STRAIT_CFG_TEST_TOKEN", "tok-xyz");
        let c = parse_toml(
            &format!("{TWO}[http]\ntls_cert = \"/c.pem\"\ntls_key = \"/k.pem\"\ntoken = {{ env = \"STRAIT_CFG_TEST_TOKEN\" }}\n"),
            "h.toml",
        )
        .unwrap();
        let h = c.http.unwrap();
        assert_eq!(h.addr, DEFAULT_HTTP_LISTEN);
        assert_eq!(h.token.as_ref().unwrap().expose(), "tok-xyz");
        assert!(!format!("{h:?}").contains("tok-xyz"));
        let e = parse_toml(&format!("http = \"0.0.0.0:8083\"\n{TWO}"), "h.toml").unwrap_err();
        assert_eq!(e.key, "http");
        assert!(e.problem.contains("allow_remote"), "{e}");
        let c = parse_toml(
            &format!("{TWO}[http]\nlisten = \"0.0.0.0:8083\"\nallow_remote = true\n"),
            "h.toml",
        )
        .unwrap();
        assert!(c.http.unwrap().allow_remote);
        let e = parse_toml(&format!("{TWO}[http]\ntls_cert = \"/c.pem\"\n"), "h.toml").unwrap_err();
        assert_eq!(e.key, "http.tls_key");
        let e = parse_toml(&format!("{TWO}[http]\nport = 1\n"), "h.toml").unwrap_err();
        assert_eq!(e.key, "http.port");
        assert!(is_loopback_listen("[::1]:1") && is_loopback_listen("127.1.2.3:80"));
        assert!(!is_loopback_listen("10.0.0.1:80") && !is_loopback_listen("example.com:80"));
    }

    #[test]
    fn mm2_sasl_ssl_with_config_providers() {
        let props = temp_file("mm2.secrets", "b.pw = from-props\n");
        std::env::set_var("STRAIT_CFG_TEST_MM2", "from-env");
        let c = mm2_with(&format!(
            "config.providers = file, env\n\
             config.providers.file.class = org.apache.kafka.common.config.provider.FileConfigProvider\n\
             config.providers.env.class = org.apache.kafka.common.config.provider.EnvVarConfigProvider\n\
             a.security.protocol = SASL_SSL\n\
             a.sasl.mechanism = SCRAM-SHA-256\n\
             a.sasl.jaas.config = org.apache.kafka.common.security.scram.ScramLoginModule required username=\"alice\" password=\"${{env:STRAIT_CFG_TEST_MM2}}\";\n\
             a.ssl.truststore.type = PEM\n\
             a.ssl.truststore.location = /etc/ca.pem\n\
             b.security.protocol = SASL_PLAINTEXT\n\
             b.sasl.mechanism = PLAIN\n\
             b.sasl.jaas.config = org.apache.kafka.common.security.plain.PlainLoginModule required \\\n  username=\"bob\" password=\"${{file:{}:b.pw}}\";\n",
            props.display()
        ));
        let a = &c.clusters["a"];
        assert_eq!(a.security_protocol, SecurityProtocol::SaslSsl);
        let sa = a.sasl.as_ref().unwrap();
        assert_eq!(
            (sa.mechanism, sa.username.as_str()),
            (SaslMechanism::ScramSha256, "alice")
        );
        assert_eq!(sa.password.expose(), "from-env");
        assert_eq!(a.tls.ca_file.as_deref(), Some(Path::new("/etc/ca.pem")));
        let sb = c.clusters["b"].sasl.as_ref().unwrap();
        assert_eq!(sb.password.expose(), "from-props");
        assert!(c.unsupported.is_empty(), "{:?}", c.unsupported);
        assert!(!format!("{c:?}").contains("from-env"));
    }

    #[test]
    fn mm2_security_errors() {
        let e = mm2_err(&format!(
            "{MM2_BASE}a.security.protocol = SSL\na.ssl.truststore.location = /etc/ts.jks\n"
        ));
        assert_eq!(e.key, "a.ssl.truststore.location");
        assert!(e.problem.contains("JKS"), "{e}");
        let e = mm2_err(&format!(
            "{MM2_BASE}a.security.protocol = SSL\na.ssl.truststore.type = PKCS12\na.ssl.truststore.location = /x.p12\n"
        ));
        assert_eq!(e.key, "a.ssl.truststore.type");
        let e = mm2_err(&format!(
            "{MM2_BASE}a.security.protocol = SASL_SSL\na.sasl.mechanism = SCRAM-SHA-512\n\
             a.sasl.jaas.config = org.apache.kafka.common.security.plain.PlainLoginModule required username=\"u\" password=\"sekrit\";\n"
        ));
        assert_eq!(e.key, "a.sasl.jaas.config");
        assert!(e.problem.contains("does not implement"), "{e}");
        assert!(!e.to_string().contains("sekrit"));
        let e = mm2_err(&format!(
            "{MM2_BASE}a.security.protocol = SASL_SSL\na.sasl.mechanism = PLAIN\n\
             a.sasl.jaas.config = org.apache.kafka.common.security.plain.PlainLoginModule required username=\"u\" password=\"sekrit\n"
        ));
        assert!(e.problem.contains("unterminated"), "{e}");
        assert!(!e.to_string().contains("sekrit"));
        let e = mm2_err(&format!(
            "{MM2_BASE}a.security.protocol = SASL_SSL\na.sasl.mechanism = PLAIN\n\
             a.sasl.jaas.config = com.sun.security.auth.module.Krb5LoginModule required;\n"
        ));
        assert!(e.problem.contains("not supported"), "{e}");
        let e = mm2_err(&format!(
            "{MM2_BASE}a.security.protocol = SASL_SSL\na.sasl.mechanism = PLAIN\n\
             a.sasl.jaas.config = org.apache.kafka.common.security.plain.PlainLoginModule required username=\"u\" password=\"${{env:STRAIT_CFG_TEST_UNSET2}}\";\n"
        ));
        assert!(
            e.problem.contains("STRAIT_CFG_TEST_UNSET2 is not set"),
            "{e}"
        );
        let e = mm2_err(&format!("{MM2_BASE}a.security.protocol = SASL_SSL\n"));
        assert_eq!(e.key, "a.sasl.mechanism");
    }

    #[test]
    fn jaas_parsing() {
        let j = parse_jaas(
            "org.apache.kafka.common.security.scram.ScramLoginModule required username=\"a b\" password='p\\\"q' tokenauth=true;",
        )
        .unwrap();
        assert_eq!(j.module, SCRAM_MODULE);
        assert_eq!(
            j.options,
            vec![
                ("username".to_string(), "a b".to_string()),
                ("password".to_string(), "p\"q".to_string()),
                ("tokenauth".to_string(), "true".to_string()),
            ]
        );
        assert!(parse_jaas("X required a=b").is_err());
        assert!(parse_jaas("X sometimes a=b;").is_err());
        assert!(parse_jaas("X required a b;").is_err());
        assert!(parse_jaas("X required a=b; Y required;").is_err());
    }
}
