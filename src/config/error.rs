//! Configuration errors ([`ConfigError`]) and provenance: which key set each field of a flow, so
//! that an error names the key as the user wrote it (a TOML path such as `flows[0].topics`, or an
//! MM2 key with its line) even when the check runs on merged settings.

use std::collections::HashMap;

use super::ConfigFormat;

/// A configuration problem: which file, which key, what is wrong, and what is allowed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{origin}: {key}: {problem}{}", allowed_suffix(.allowed))]
#[non_exhaustive]
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

/// ` (allowed: ...)` when the allowed values are known.
fn allowed_suffix(allowed: &Option<String>) -> String {
    match allowed {
        Some(a) => format!(" (allowed: {a})"),
        None => String::new(),
    }
}

impl ConfigError {
    /// An error at `key` of `origin` (a file, or `file:line`).
    pub(super) fn new(
        origin: &str,
        key: impl Into<String>,
        problem: impl Into<String>,
    ) -> ConfigError {
        ConfigError {
            origin: origin.to_string(),
            key: key.into(),
            problem: problem.into(),
            allowed: None,
        }
    }

    /// Adds what would be accepted.
    pub(super) fn allowed(mut self, allowed: impl Into<String>) -> ConfigError {
        self.allowed = Some(allowed.into());
        self
    }
}

// ------------------------------------------------------------------------------------------------
// Provenance: which key set a field, for error messages
// ------------------------------------------------------------------------------------------------

/// Where a value was set: the key as written and, in a properties file, its line.
#[derive(Debug, Clone)]
pub(super) struct Where {
    /// The key (TOML: a path).
    pub(super) key: String,
    /// 1-based line, when known.
    pub(super) line: Option<usize>,
}

impl Where {
    /// A key without a line.
    pub(super) fn key(key: impl Into<String>) -> Where {
        Where {
            key: key.into(),
            line: None,
        }
    }

    /// An error at this key of `file` (with `:line` when known).
    pub(super) fn error(&self, file: &str, problem: impl Into<String>) -> ConfigError {
        let origin = match self.line {
            Some(line) => format!("{file}:{line}"),
            None => file.to_string(),
        };
        ConfigError::new(&origin, self.key.clone(), problem)
    }
}

/// Where each field of one flow came from.
pub(super) struct FlowProv {
    /// The format, which names the keys.
    pub(super) format: ConfigFormat,
    /// `flows[0]` / `defaults` (TOML) or `A->B` (MM2).
    pub(super) table: String,
    /// The fields set explicitly, and where.
    pub(super) set: HashMap<&'static str, Where>,
}

impl FlowProv {
    /// No field set yet; `table` prefixes the keys of fields left at their defaults.
    pub(super) fn new(format: ConfigFormat, table: String) -> FlowProv {
        FlowProv {
            format,
            table,
            set: HashMap::new(),
        }
    }

    /// The key a user writes for `field` in this format.
    pub(super) fn name(&self, field: &'static str) -> &'static str {
        match self.format {
            ConfigFormat::Toml => toml_name(field),
            ConfigFormat::Mm2 => mm2_name(field),
        }
    }

    /// Where `field` was set, or the key that would set it.
    pub(super) fn at(&self, field: &'static str) -> Where {
        match self.set.get(field) {
            Some(w) => w.clone(),
            None if self.table.is_empty() => Where::key(self.name(field)),
            None => Where::key(format!("{}.{}", self.table, self.name(field))),
        }
    }
}

/// The TOML key of a flow field.
fn toml_name(field: &'static str) -> &'static str {
    match field {
        "refresh_topics_interval" => "refresh_topics_interval_secs",
        "refresh_groups_interval" => "refresh_groups_interval_secs",
        "checkpoint_interval" => "checkpoint_interval_secs",
        "heartbeat_interval" => "heartbeat_interval_secs",
        "offset_sync_interval" => "offset_sync_interval_secs",
        "sync_group_offsets_interval" => "sync_group_offsets_interval_secs",
        "sync_topic_configs_interval" => "sync_topic_configs_interval_secs",
        "sync_topic_acls_interval" => "sync_topic_acls_interval_secs",
        "fetch_max_wait" => "fetch_max_wait_ms",
        "consumer_offset_sync_interval" => "consumer_offset_sync_interval_ms",
        "source_unavailable_after" => "source_unavailable_after_secs",
        other => other,
    }
}

/// The MM2 key of a flow field.
fn mm2_name(field: &'static str) -> &'static str {
    match field {
        "source" | "target" | "enabled" => "enabled",
        "topics_exclude" => "topics.exclude",
        "groups_exclude" => "groups.exclude",
        "naming" => "replication.policy.class",
        "separator" => "replication.policy.separator",
        "internal_topic_separator" => "replication.policy.internal.topic.separator.enabled",
        "heartbeats_topic" => "default.replication.policy.heartbeats.topic.name",
        "refresh_topics_interval" => "refresh.topics.interval.seconds",
        "refresh_groups_interval" => "refresh.groups.interval.seconds",
        "checkpoint_interval" => "emit.checkpoints.interval.seconds",
        "heartbeat_interval" => "emit.heartbeats.interval.seconds",
        "sync_group_offsets_interval" => "sync.group.offsets.interval.seconds",
        "sync_topic_configs_interval" => "sync.topic.configs.interval.seconds",
        "sync_topic_acls_interval" => "sync.topic.acls.interval.seconds",
        "emit_heartbeats" => "emit.heartbeats.enabled",
        "emit_checkpoints" => "emit.checkpoints.enabled",
        "emit_offset_syncs" => "emit.offset-syncs.enabled",
        "sync_group_offsets" => "sync.group.offsets.enabled",
        "sync_topic_configs" => "sync.topic.configs.enabled",
        "sync_topic_acls" => "sync.topic.acls.enabled",
        other => other,
    }
}
