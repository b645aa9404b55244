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
//! sasl_mechanism = "SCRAM-SHA-512"         # PLAIN, SCRAM-SHA-256, SCRAM-SHA-512, OAUTHBEARER, GSSAPI
//! sasl_username = "strait"
//! sasl_password = { env = "B_PASSWORD" }   # or { file = "/run/secrets/b" }, or a string (warned)
//! ssl_ca_file = "/etc/strait/ca.pem"       # PEM CAs to trust; default: the system roots
//! ssl_certificate_file = "client.pem"      # optional client certificate (mutual TLS) ...
//! ssl_key_file = "client.key"              # ... and its PEM key (encrypted: ssl_key_password)
//! ssl_server_name = "kafka-b.internal"     # optional: name to verify instead of each broker host
//! [clusters.cluster_c]                     # key and trust stores instead of PEM files
//! bootstrap_servers = "kafka-c:9093"
//! security_protocol = "SSL"
//! ssl_keystore_location = "/etc/strait/client.jks"   # JKS, PKCS12 or PEM
//! ssl_keystore_type = "JKS"                # optional: detected from the file when unset
//! ssl_keystore_password = { env = "C_KEYSTORE_PASSWORD" }
//! ssl_key_password = { env = "C_KEY_PASSWORD" }       # optional: default the store password
//! ssl_keystore_alias = "strait"            # optional: which key, when the store has several
//! ssl_truststore_location = "/etc/strait/truststore.p12"
//! ssl_truststore_password = { env = "C_TRUSTSTORE_PASSWORD" }
//! [clusters.cluster_k]                     # Kerberos (GSSAPI, RFC 4752)
//! bootstrap_servers = "kafka-k.example.com:9094"
//! security_protocol = "SASL_PLAINTEXT"
//! sasl_mechanism = "GSSAPI"
//! sasl_kerberos_service_name = "kafka"     # default; brokers are kafka/<advertised host>@REALM
//! sasl_kerberos_principal = "strait@EXAMPLE.COM"
//! sasl_kerberos_keytab = "/etc/strait/strait.keytab"  # or sasl_kerberos_ccache = "FILE:/path"
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
//! Mirror flows (`mode = "mirror"`, Cluster Linking style) keep topic names
//! (identity naming is implied; another naming is an error) and add `link` (the link's name,
//! default `source->target`), `consumer_offset_sync` (default true),
//! `consumer_offset_sync_interval_secs`/`_ms` (default 5 s) and `consumer_offset_group_filters`
//! (Cluster Linking's JSON, default every group). They write no MM2 heartbeats, checkpoints or
//! offset syncs.
//!
//! Secrets (`sasl_password`, the store and key passwords, the `[http]` `token`) are `{ env = "VAR" }`, `{ file = "PATH" }`
//! (whole file, one trailing line break dropped), `{ file = "PATH", key = "KEY" }` (a key of a
//! Java properties file) or a plain string, which works but is warned about; see
//! [`Secret`]. They are read when the file is loaded and print as `***`.
//!
//! The HTTP endpoints take either `http = "host:port"` or a table:
//!
//! ```toml
//! [http]
//! listen = "127.0.0.1:8083"       # default; a non-loopback address needs allow_remote = true
//! allow_remote = false
//! tls_cert = "/etc/strait/http.pem"  # optional TLS (both or neither) ...
//! tls_key = "/etc/strait/http.key"
//! # ... or a key store: tls_keystore_location, tls_keystore_type, tls_keystore_password,
//! # tls_key_password, tls_keystore_alias (as ssl_keystore_* of a cluster)
//! token = { env = "STRAIT_HTTP_TOKEN" }  # optional bearer token
//! write_token = { env = "STRAIT_HTTP_WRITE_TOKEN" }  # optional: turns the write API on
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
//! password="..."`, `Krb5LoginModule` with `useKeyTab=true keyTab="..." principal="..."` or
//! `useTicketCache=true [ticketCache="..."]`), `<alias>.sasl.kerberos.service.name`,
//! `<alias>.ssl.truststore.type` (`JKS`, the default, `PKCS12` or `PEM`),
//! `<alias>.ssl.truststore.location`, `<alias>.ssl.truststore.password`,
//! `<alias>.ssl.truststore.certificates`, `<alias>.ssl.keystore.type` (likewise),
//! `<alias>.ssl.keystore.location`, `<alias>.ssl.keystore.password`, `<alias>.ssl.key.password`,
//! `<alias>.ssl.keystore.certificate.chain` and `<alias>.ssl.keystore.key` (inline PEM)
//! (all of these also globally), `A->B.enabled`,
//! and, per flow (`A->B.<key>`) or globally (`<key>`): `topics`, `topics.exclude`
//! (`topics.blacklist`), `groups`, `groups.exclude` (`groups.blacklist`),
//! `replication.policy.class`, `replication.policy.separator`,
//! `replication.policy.internal.topic.separator.enabled`,
//! `default.replication.policy.heartbeats.topic.name`, `refresh.topics.interval.seconds`,
//! `refresh.groups.interval.seconds`, `emit.checkpoints.interval.seconds`,
//! `emit.heartbeats.interval.seconds`, `emit.checkpoints.enabled`, `emit.heartbeats.enabled`,
//! `emit.offset-syncs.enabled`, `sync.group.offsets.enabled`,
//! `sync.group.offsets.interval.seconds`, `replication.factor`. Every other key is listed in
//! [`Config::unsupported`] with the reason, in file order.
//!
//! Config providers: a user name or password in `sasl.jaas.config`, an `ssl.*.password` and
//! `ssl.keystore.key` may be `${env:VAR}`,
//! `${file:PATH}` or `${file:PATH:KEY}` (Kafka's `EnvVarConfigProvider` / `FileConfigProvider`
//! syntax); other provider names work when declared with `config.providers` and
//! `config.providers.<name>.class` naming one of those two classes.
//!
//! # Configurations built in code
//!
//! [`validate`] gives a [`Config`] built in code the checks that loading applies.
//!
//! # Layout
//!
//! This module holds the model (the types below, their defaults, [`load`] and [`parse`]); its
//! private parts are `error` ([`ConfigError`] and which key set a field), `validate` (checks
//! shared by both formats), `toml` and `toml_flow` (strait's TOML), `security` (SASL, TLS and
//! secrets in both formats; `oauth` and `kerberos` for OAUTHBEARER and GSSAPI), `stores` (key and trust stores in both formats), `properties` (Java properties files and JAAS lines), `mm2` and
//! `mm2_keys` (MirrorMaker 2's `mm2.properties`; not `crate::mm2`, MM2's record formats).

mod error;
mod kerberos;
mod mm2;
mod mm2_keys;
mod oauth;
mod properties;
mod security;
mod stores;
#[cfg(test)]
mod testing;
mod toml;
mod toml_flow;
mod topic_names;
mod validate;

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use crate::naming::{Mm2Topics, ReplicationPolicy, TopicPattern};

// Types of the model's fields, defined beside the code that uses them.
pub use crate::mirror::{GroupFilter, GroupFilters};
pub use crate::records::recompress::Recompress;
pub use crate::sasl::{SaslMechanism, SaslSettings};
pub use crate::secret::{Secret, SecretSource};
pub use crate::tls::{StoreFile, StoreType, StoreTypeChoice, TlsSettings};

pub use self::error::ConfigError;
pub use self::mm2::parse_mm2;
pub use self::properties::parse_properties_pairs;
pub use self::toml::parse_toml;
pub use self::validate::{is_loopback_listen, validate};

/// Default client id sent to brokers.
pub const DEFAULT_CLIENT_ID: &str = "strait";

/// The default name of strait's control topic on a cluster (runtime lists, mirror records,
/// membership, pause records).
pub const DEFAULT_CONTROL_TOPIC: &str = "strait-control.internal";

/// The default name of strait's progress topic on a cluster (offset maps, positions).
pub const DEFAULT_PROGRESS_TOPIC: &str = "strait-progress.internal";

/// The names of strait's own compacted topics on one cluster (`control_topic`,
/// `progress_topic`), for clusters whose topic naming policy refuses the defaults.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InternalTopics {
    /// Runtime lists, mirror records, membership and pause records.
    pub control: String,
    /// Offset maps and positions of the flows writing into this cluster.
    pub progress: String,
}

impl Default for InternalTopics {
    fn default() -> InternalTopics {
        InternalTopics {
            control: DEFAULT_CONTROL_TOPIC.to_string(),
            progress: DEFAULT_PROGRESS_TOPIC.to_string(),
        }
    }
}
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

/// The instance group of a configuration that names none.
pub const DEFAULT_INSTANCE_GROUP: &str = "default";

const MIB: usize = 1024 * 1024;

// ------------------------------------------------------------------------------------------------
// Public types
// ------------------------------------------------------------------------------------------------

/// A whole configuration: clusters, the flows between them, and process settings.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
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
#[non_exhaustive]
pub struct HttpSettings {
    /// Listen address, `host:port`; loopback unless [`HttpSettings::allow_remote`].
    pub addr: String,
    /// Whether a non-loopback listen address is allowed (refused otherwise).
    pub allow_remote: bool,
    /// PEM certificate chain for TLS (with [`HttpSettings::tls_key`]).
    pub tls_cert: Option<std::path::PathBuf>,
    /// PEM private key for TLS.
    pub tls_key: Option<std::path::PathBuf>,
    /// A key store (JKS, PKCS#12 or PEM) with the server key and certificate chain, instead of
    /// [`HttpSettings::tls_cert`] and [`HttpSettings::tls_key`].
    pub tls_keystore: Option<StoreFile>,
    /// The password of the key in [`HttpSettings::tls_keystore`] (default: the store password).
    pub tls_key_password: Option<Secret>,
    /// Which key of [`HttpSettings::tls_keystore`] to use when it holds several.
    pub tls_keystore_alias: Option<String>,
    /// Bearer token required on every request, if set.
    pub token: Option<Secret>,
    /// Bearer token of the write API (`POST /api/...`); without it the write API is off.
    /// Distinct from [`HttpSettings::token`].
    pub write_token: Option<Secret>,
}

impl HttpSettings {
    /// Plain HTTP on `addr`, no token.
    pub fn new(addr: &str) -> HttpSettings {
        HttpSettings {
            addr: addr.to_string(),
            allow_remote: false,
            tls_cert: None,
            tls_key: None,
            tls_keystore: None,
            tls_key_password: None,
            tls_keystore_alias: None,
            token: None,
            write_token: None,
        }
    }
}

impl Config {
    /// An empty configuration (no cluster, no flow, no HTTP listener) for one built in code;
    /// `origin` names it in error messages. Check it with [`validate`] once filled in.
    pub fn new(origin: &str) -> Config {
        Config {
            clusters: BTreeMap::new(),
            flows: Vec::new(),
            origin: origin.to_string(),
            unsupported: Vec::new(),
            http: None,
            instance_group: DEFAULT_INSTANCE_GROUP.to_string(),
        }
    }

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
#[non_exhaustive]
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
    /// Names of strait's own topics on this cluster.
    pub internal_topics: InternalTopics,
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
            internal_topics: InternalTopics::default(),
        }
    }

    /// Secrets of this cluster written in clear in the configuration file, described by
    /// cluster and role (never by value).
    pub fn literal_secrets(&self) -> Vec<String> {
        let mut out: Vec<String> = self
            .sasl
            .iter()
            .flat_map(|s| s.literal_secrets())
            .map(|role| format!("{role} of cluster {}", self.alias))
            .collect();
        for role in self.tls.literal_secrets() {
            out.push(format!("{role} of cluster {}", self.alias));
        }
        out
    }
}

/// Splits `host:port,host:port` into trimmed, non-empty entries.
fn split_servers(s: &str) -> Vec<String> {
    s.split(',')
        .map(|x| x.trim().to_string())
        .filter(|x| !x.is_empty())
        .collect()
}

/// Kafka's `security.protocol`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
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

    /// Every name, comma-separated, for error messages.
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
#[non_exhaustive]
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

/// How a flow names MirrorMaker 2's internal topics, for clusters whose naming policy refuses
/// MM2's names (see [`Mm2Topics`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mm2TopicNames {
    /// Whether checkpoints and offset-syncs names use the naming separator (default true;
    /// `false` keeps `.`, MM2 `replication.policy.internal.topic.separator.enabled`).
    pub internal_separator: bool,
    /// The heartbeats topic (default `heartbeats`; MM2
    /// `default.replication.policy.heartbeats.topic.name`).
    pub heartbeats: String,
    /// Checkpoints topics, with the source alias at `{source}` (default MM2's name).
    pub checkpoints: Option<TopicPattern>,
    /// Offset-syncs topics, with the target alias at `{target}` (default MM2's name).
    pub offset_syncs: Option<TopicPattern>,
}

impl Default for Mm2TopicNames {
    fn default() -> Mm2TopicNames {
        Mm2TopicNames {
            internal_separator: true,
            heartbeats: crate::mm2::HEARTBEATS_TOPIC.to_string(),
            checkpoints: None,
            offset_syncs: None,
        }
    }
}

/// Another replicator a flow takes partitions over from (`takeover_from`): a partition with no
/// progress record of its own starts where that replicator stopped, without copying again what
/// it copied.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Takeover {
    /// MirrorMaker 2: its source offsets in its Connect offsets topic on the target, checked
    /// against what it wrote into the remote partition.
    Mm2,
}

impl Takeover {
    /// The TOML spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Takeover::Mm2 => "mm2",
        }
    }
}

/// Records before the take-over point matched into the offset map by default.
pub const DEFAULT_TAKEOVER_MAP_RECORDS: u64 = 100_000;

/// What a flow does with the topics it selects.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
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
#[non_exhaustive]
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
    /// The names of MirrorMaker 2's internal topics (heartbeats, checkpoints, offset syncs).
    pub mm2_topics: Mm2TopicNames,
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
    /// Replicate flows: keep remote topics' configs in step with their source topics while
    /// running (default true; MM2 `sync.topic.configs.enabled`).
    pub sync_topic_configs: bool,
    /// How often topic configs are synced (default 600 s).
    pub sync_topic_configs_interval: Duration,
    /// Replicate flows: copy source topics' ACLs to their remote topics while running, as
    /// MirrorMaker 2 does (default true; MM2 `sync.topic.acls.enabled`).
    pub sync_topic_acls: bool,
    /// How often topic ACLs are synced (default 600 s).
    pub sync_topic_acls_interval: Duration,
    /// Memory bound of this flow's data path in bytes (default 8 MiB).
    pub buffer_bytes: usize,
    /// Largest fetch response in bytes (default 1 MiB; raise it with `buffer_bytes` on
    /// high-latency links: one Fetch per source broker is outstanding at a time).
    pub fetch_max_bytes: i32,
    /// Longest a fetch waits for data (default 500 ms).
    pub fetch_max_wait: Duration,
    /// Bandwidth cap of the flow in record bytes fetched per second (default `None`:
    /// unlimited); bursts up to one second's worth.
    pub max_bytes_per_second: Option<u64>,
    /// What uncompressed source batches become on the target (default
    /// [`Recompress::None`]: forwarded as they came; `zstd` for metered links).
    pub recompress: Recompress,
    /// Mirror flows: the link name (default the flow name, `source->target`).
    pub link: Option<String>,
    /// Mirror flows: what a mirror topic's name on the target starts with, before the source
    /// topic's name (Cluster Linking's `cluster.link.prefix`; default empty: the same name).
    pub prefix: String,
    /// Mirror flows: sync consumer offsets of mirrored topics into the target (default true).
    pub consumer_offset_sync: bool,
    /// Mirror flows: how often consumer offsets are synced (default 5 s).
    pub consumer_offset_sync_interval: Duration,
    /// Mirror flows: which groups are synced, in Cluster Linking's JSON form (default all).
    pub consumer_offset_group_filters: GroupFilters,
    /// Mirror flows: how long the source cluster must stay unreachable before its active
    /// mirrors show as `SOURCE_UNAVAILABLE` (default 5 minutes, as Cluster Linking).
    pub source_unavailable_after: Duration,
    /// Replicate flows: take partitions with no progress record over from this replicator
    /// (default none: they start at the source's log start).
    pub takeover_from: Option<Takeover>,
    /// The Connect offsets topic on the target holding MirrorMaker 2's source offsets (default
    /// `mm2-offsets.<source>.internal`).
    pub takeover_offsets_topic: Option<String>,
    /// Records before the take-over point matched one by one into the offset map, so that
    /// groups committed that far back translate exactly (default 100 000).
    pub takeover_map_records: u64,
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
            mm2_topics: Mm2TopicNames::default(),
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
            sync_topic_configs: true,
            sync_topic_configs_interval: Duration::from_secs(600),
            sync_topic_acls: true,
            sync_topic_acls_interval: Duration::from_secs(600),
            buffer_bytes: 8 * MIB,
            fetch_max_bytes: 1024 * 1024,
            fetch_max_wait: Duration::from_millis(500),
            max_bytes_per_second: None,
            recompress: Recompress::None,
            link: None,
            prefix: String::new(),
            consumer_offset_sync: true,
            consumer_offset_sync_interval: Duration::from_secs(5),
            consumer_offset_group_filters: GroupFilters::all(),
            source_unavailable_after: Duration::from_secs(300),
            takeover_from: None,
            takeover_offsets_topic: None,
            takeover_map_records: DEFAULT_TAKEOVER_MAP_RECORDS,
        }
    }

    /// The topic MirrorMaker 2's source offsets are read from for `takeover_from = "mm2"`.
    pub fn takeover_offsets_topic(&self) -> String {
        self.takeover_offsets_topic
            .clone()
            .unwrap_or_else(|| format!("mm2-offsets.{}.internal", self.source))
    }

    /// The remote topic naming policy.
    pub fn replication_policy(&self) -> ReplicationPolicy {
        match &self.naming {
            NamingPolicy::Default { separator } => ReplicationPolicy::Default {
                separator: separator.clone(),
            },
            NamingPolicy::Identity => ReplicationPolicy::Identity,
        }
    }

    /// The names of MirrorMaker 2's internal topics this flow writes and reads.
    pub fn mm2_topic_names(&self) -> Mm2Topics {
        let names = &self.mm2_topics;
        let mut out = Mm2Topics::for_policy(&self.replication_policy(), names.internal_separator)
            .with_heartbeats(&names.heartbeats);
        if let Some(p) = &names.checkpoints {
            out = out.with_checkpoints(p.clone());
        }
        if let Some(p) = &names.offset_syncs {
            out = out.with_offset_syncs(p.clone());
        }
        out
    }

    /// `"source->target"`.
    pub fn name(&self) -> String {
        format!("{}->{}", self.source, self.target)
    }

    /// The link name of a mirror flow: `link`, or the flow name.
    pub fn link_name(&self) -> String {
        self.link.clone().unwrap_or_else(|| self.name())
    }

    /// A mirror flow's name on the target of the source topic `topic`: the prefix, then `topic`.
    pub fn mirror_topic(&self, topic: &str) -> String {
        format!("{}{topic}", self.prefix)
    }

    /// The source topic of this mirror flow's mirror topic `mirror` (its name on the target):
    /// `mirror` without the prefix, if it has it.
    pub fn mirror_source<'t>(&self, mirror: &'t str) -> Option<&'t str> {
        mirror
            .strip_prefix(self.prefix.as_str())
            .filter(|t| !t.is_empty())
    }

    /// The duration field named `field` (its TOML key without `_secs` / `_ms`).
    fn duration_mut(&mut self, field: &str) -> Option<&mut Duration> {
        Some(match field {
            "refresh_topics_interval" => &mut self.refresh_topics_interval,
            "refresh_groups_interval" => &mut self.refresh_groups_interval,
            "checkpoint_interval" => &mut self.checkpoint_interval,
            "heartbeat_interval" => &mut self.heartbeat_interval,
            "offset_sync_interval" => &mut self.offset_sync_interval,
            "sync_group_offsets_interval" => &mut self.sync_group_offsets_interval,
            "sync_topic_configs_interval" => &mut self.sync_topic_configs_interval,
            "sync_topic_acls_interval" => &mut self.sync_topic_acls_interval,
            "fetch_max_wait" => &mut self.fetch_max_wait,
            "consumer_offset_sync_interval" => &mut self.consumer_offset_sync_interval,
            "source_unavailable_after" => &mut self.source_unavailable_after,
            _ => return None,
        })
    }

    /// Every duration with its field name.
    fn durations(&self) -> [(&'static str, Duration); 11] {
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
            (
                "sync_topic_configs_interval",
                self.sync_topic_configs_interval,
            ),
            ("sync_topic_acls_interval", self.sync_topic_acls_interval),
            ("fetch_max_wait", self.fetch_max_wait),
            (
                "consumer_offset_sync_interval",
                self.consumer_offset_sync_interval,
            ),
            ("source_unavailable_after", self.source_unavailable_after),
        ]
    }

    /// The boolean field named `field`.
    fn bool_mut(&mut self, field: &str) -> Option<&mut bool> {
        Some(match field {
            "enabled" => &mut self.enabled,
            "emit_heartbeats" => &mut self.emit_heartbeats,
            "emit_checkpoints" => &mut self.emit_checkpoints,
            "emit_offset_syncs" => &mut self.emit_offset_syncs,
            "sync_group_offsets" => &mut self.sync_group_offsets,
            "sync_topic_configs" => &mut self.sync_topic_configs,
            "sync_topic_acls" => &mut self.sync_topic_acls,
            "consumer_offset_sync" => &mut self.consumer_offset_sync,
            _ => return None,
        })
    }

    /// The regex list field named `field`.
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

/// The two file formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::testing::*;

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
}
