//! Which `mm2.properties` keys strait reads, and why each other key has no effect: the notes of
//! [`super::Config::unsupported`], one per key in file order, each with its reason.

use std::collections::{BTreeSet, HashSet};

use super::error::Where;
use super::mm2::{flow_head, split_flow_name};
use super::properties::Props;
use super::security::mm2_provider_key_understood;

/// The MM2 keys a flow reads, per flow (`A->B.<key>`) or globally.
pub(super) const MM2_FLOW_KEYS: &[&str] = &[
    "topics",
    "topics.exclude",
    "topics.blacklist",
    "groups",
    "groups.exclude",
    "groups.blacklist",
    "replication.policy.class",
    "replication.policy.separator",
    "replication.policy.internal.topic.separator.enabled",
    "default.replication.policy.heartbeats.topic.name",
    "refresh.topics.interval.seconds",
    "refresh.groups.interval.seconds",
    "emit.checkpoints.interval.seconds",
    "emit.heartbeats.interval.seconds",
    "emit.checkpoints.enabled",
    "emit.heartbeats.enabled",
    "emit.offset-syncs.enabled",
    "sync.group.offsets.enabled",
    "sync.group.offsets.interval.seconds",
    "sync.topic.configs.enabled",
    "sync.topic.configs.interval.seconds",
    "sync.topic.acls.enabled",
    "sync.topic.acls.interval.seconds",
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
    "ssl.keystore.password",
    "ssl.key.password",
    "ssl.truststore.password",
    "ssl.keystore.certificate.chain",
    "ssl.keystore.key",
    "client.id",
    "request.timeout.ms",
    "socket.connection.setup.timeout.ms",
];

/// Whether strait reads this client key (per cluster or global).
fn is_client_key(key: &str) -> bool {
    MM2_CLIENT_KEYS.contains(&key)
        || super::oauth::MM2_KEYS.contains(&key)
        || super::kerberos::MM2_KEYS.contains(&key)
}

/// The note on the older MSK IAM mechanism.
const MSK_IAM_MAPPED: &str = "strait authenticates with the same IAM credentials over OAUTHBEARER (MSK's IAM listeners accept both mechanisms); the IAMLoginModule options awsProfileName, awsRoleArn, awsRoleSessionName and awsStsRegion are kept";

/// MM2's default topic filter, which strait's `topics` / `topics.exclude` implement.
const DEFAULT_TOPIC_FILTER_CLASS: &str = "org.apache.kafka.connect.mirror.DefaultTopicFilter";
/// MM2's default group filter, which strait's `groups` / `groups.exclude` implement.
const DEFAULT_GROUP_FILTER_CLASS: &str = "org.apache.kafka.connect.mirror.DefaultGroupFilter";

/// The reason for an SSL or SASL key strait does not read.
const SECURITY_OTHER: &str = "this SSL/SASL setting is not supported by strait; ignored (understood: security.protocol, sasl.mechanism, sasl.jaas.config, sasl.oauthbearer.*, sasl.login.*, sasl.kerberos.service.name, ssl.truststore.type/location/password/certificates, ssl.keystore.type/location/password/certificate.chain/key, ssl.key.password)";
/// The reason for a Kafka Connect internal topic's key.
const CONNECT_STATE: &str = "a Kafka Connect internal topic; strait keeps no Kafka Connect state";
/// The reason for a config provider strait does not implement.
const PROVIDERS: &str =
    "only FileConfigProvider and EnvVarConfigProvider are supported, in sasl.jaas.config and the SSL passwords and key";
/// The reason for a converter key.
const CONVERTERS: &str = "strait copies record bytes unchanged; converters do not apply";
/// The reason for a Kafka client override.
const CLIENT_OVERRIDES: &str =
    "Kafka client overrides are not supported; strait uses its own clients";
/// The reason for any other key.
const MM2_GENERIC: &str = "not a setting strait understands; ignored";

/// Keys strait does not act on that have a specific reason.
const KEY_REASONS: &[(&[&str], &str)] = &[
    (
        &["tasks.max"],
        "strait does not split work into Kafka Connect tasks; every flow runs in this process",
    ),
    (
        &[
            "config.property.filter.class",
            "config.properties.exclude",
            "config.properties.blacklist",
            "use.defaults.from",
        ],
        "strait syncs the topic configs it copies at creation, with MirrorMaker 2's default exclusions; other filters are not supported",
    ),
    (
        &["refresh.topics.enabled"],
        "topic discovery cannot be turned off; set refresh.topics.interval.seconds instead",
    ),
    (
        &["refresh.groups.enabled"],
        "group discovery cannot be turned off; set refresh.groups.interval.seconds instead",
    ),
    (
        &[
            "config.storage.replication.factor",
            "offset.storage.replication.factor",
            "status.storage.replication.factor",
        ],
        CONNECT_STATE,
    ),
    (
        &[
            "checkpoints.topic.replication.factor",
            "heartbeats.topic.replication.factor",
            "offset-syncs.topic.replication.factor",
        ],
        "a separate replication factor for this internal topic is not supported",
    ),
    (
        &["offset-syncs.topic.location"],
        "the offset-syncs topic location is not configurable",
    ),
    (
        &["offset.lag.max"],
        "strait emits offset syncs on a timer (offset_sync_interval in TOML), not by lag",
    ),
    (
        &["dedicated.mode.enable.internal.rest"],
        "strait is a single process with no internal REST server (the TOML key `http` enables its status API)",
    ),
    (&["config.providers"], PROVIDERS),
    (
        &["ssl.endpoint.identification.algorithm"],
        "broker host names are always verified (strait's TOML has ssl_server_name to verify another name)",
    ),
    (
        &["bootstrap.servers"],
        "set <alias>.bootstrap.servers for each cluster instead",
    ),
    (
        &["key.converter", "value.converter", "header.converter"],
        CONVERTERS,
    ),
    (
        &["topic.filter.class"],
        "custom topic filters are not supported; strait applies topics / topics.exclude",
    ),
    (
        &["group.filter.class"],
        "custom group filters are not supported; strait applies groups / groups.exclude",
    ),
];

/// Key prefixes strait does not act on, with the reason, for keys not in [`KEY_REASONS`].
const PREFIX_REASONS: &[(&str, &str)] = &[
    ("ssl.", SECURITY_OTHER),
    ("sasl.", SECURITY_OTHER),
    ("producer.", CLIENT_OVERRIDES),
    ("consumer.", CLIENT_OVERRIDES),
    ("admin.", CLIENT_OVERRIDES),
    ("config.storage.", CONNECT_STATE),
    ("offset.storage.", CONNECT_STATE),
    ("status.storage.", CONNECT_STATE),
    ("config.providers.", PROVIDERS),
    ("key.converter.", CONVERTERS),
    ("value.converter.", CONVERTERS),
    ("header.converter.", CONVERTERS),
];

/// Why a key strait does not act on is not supported, for keys with a specific reason.
fn mm2_known_reason(key: &str) -> Option<&'static str> {
    let exact = KEY_REASONS.iter().find(|(keys, _)| keys.contains(&key));
    match exact {
        Some((_, r)) => Some(r),
        None => PREFIX_REASONS
            .iter()
            .find(|(p, _)| key.starts_with(p))
            .map(|(_, r)| *r),
    }
}

/// Whether `key` names MM2's default topic or group filter, which strait implements.
fn is_default_filter(key: &str, value: &str) -> bool {
    (key == "topic.filter.class" && value.trim() == DEFAULT_TOPIC_FILTER_CLASS)
        || (key == "group.filter.class" && value.trim() == DEFAULT_GROUP_FILTER_CLASS)
}

/// What deciding whether a key has an effect needs to know about the file.
struct KeyNotes<'a> {
    /// The file's entries.
    props: &'a Props,
    /// The aliases listed in `clusters`.
    aliases: &'a BTreeSet<String>,
    /// The enabled flows.
    enabled: HashSet<(String, String)>,
    /// The aliases, comma-separated, for messages.
    known: &'a str,
}

/// A `(line, "key: reason")` note for every key strait does not act on, in file order; flow
/// keys name known aliases (checked before). `enabled` are the enabled flows.
pub(super) fn unsupported_notes(
    props: &Props,
    aliases: &BTreeSet<String>,
    enabled: &[(String, String, Where)],
    known: &str,
) -> Vec<(usize, String)> {
    let notes = KeyNotes {
        props,
        aliases,
        enabled: enabled
            .iter()
            .map(|(s, t, _)| (s.clone(), t.clone()))
            .collect(),
        known,
    };
    let mut out = Vec::new();
    for key in &props.order {
        let Some((value, _)) = props.get(key) else {
            continue;
        };
        if let Some(reason) = notes.reason(key, value) {
            out.push((props.first_line(key), format!("{key}: {reason}")));
        }
    }
    out
}

/// The notes ordered by line, each once: what [`super::Config::unsupported`] lists.
pub(super) fn sorted_notes(mut notes: Vec<(usize, String)>) -> Vec<String> {
    notes.sort_by_key(|(line, _)| *line);
    let mut unsupported: Vec<String> = Vec::new();
    for (_, note) in notes {
        if !unsupported.contains(&note) {
            unsupported.push(note);
        }
    }
    unsupported
}

impl KeyNotes<'_> {
    /// Why `key` (set to `value`) has no effect, or `None` when strait reads it.
    fn reason(&self, key: &str, value: &str) -> Option<String> {
        if (key == "sasl.mechanism" || key.ends_with(".sasl.mechanism"))
            && value.trim().eq_ignore_ascii_case("AWS_MSK_IAM")
        {
            return Some(MSK_IAM_MAPPED.to_string());
        }
        let alias_head = key
            .split_once('.')
            .filter(|(head, _)| self.aliases.contains(*head));
        if key == "clusters"
            || MM2_FLOW_KEYS.contains(&key)
            || is_client_key(key)
            || is_default_filter(key, value)
            || mm2_provider_key_understood(key, self.props)
        {
            None
        } else if let Some((head, rest)) = flow_head(key) {
            self.flow_key_reason(head, rest, value)
        } else if let Some((_, rest)) = alias_head {
            if rest == "bootstrap.servers" || is_client_key(rest) {
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
                "`{head}` is not listed in `clusters` ({}), so this cluster is not used",
                self.known
            ))
        } else {
            Some(MM2_GENERIC.to_string())
        }
    }

    /// Why a flow key `head.rest` has no effect, or `None`.
    fn flow_key_reason(&self, head: &str, rest: &str, value: &str) -> Option<String> {
        // Names resolved before.
        let (s, t) = split_flow_name(head, self.aliases).unwrap_or_default();
        if rest == "enabled" {
            None
        } else if MM2_FLOW_KEYS.contains(&rest) {
            if self.enabled.contains(&(s.clone(), t.clone())) {
                None
            } else {
                Some(format!(
                    "flow {s}->{t} is not enabled ({s}->{t}.enabled = true is not set), so this has no effect"
                ))
            }
        } else if is_default_filter(rest, value) {
            None
        } else {
            Some(
                mm2_known_reason(rest)
                    .unwrap_or("per-flow setting not supported by strait; ignored")
                    .to_string(),
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::config::testing::*;

    #[test]
    fn mm2_unsupported_keys_in_file_order() {
        let c = mm2_with(
            "tasks.max = 4\n\
             a.ssl.cipher.suites = X\n\
             config.properties.exclude = x\n\
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
                "config.properties.exclude",
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
}
