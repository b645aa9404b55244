//! The flow tables of strait's TOML format: `[defaults]` and each `[[flows]]` entry, layered (a
//! flow's own value beats `[defaults]`), with durations in `_secs` or `_ms`, sizes with binary
//! units, and naming resolved over both layers (mirror flows keep topic names).

use std::time::Duration;

use crate::mirror::GroupFilters;
use crate::naming::{TopicPattern, SOURCE_PLACEHOLDER, TARGET_PLACEHOLDER};

use super::error::{ConfigError, FlowProv, Where};
use super::toml::{
    dotted_name, misplaced_hint, toml_bool, toml_duration, toml_str, unknown_key, wrong_type,
};
use super::validate::validate_values;
use super::{
    ConfigFormat, FlowConfig, FlowMode, NamingPolicy, Recompress, Takeover, DEFAULT_SEPARATOR,
};

/// The flow durations, by field name (each is a TOML key with `_secs` or `_ms`).
const FLOW_DURATIONS: &[&str] = &[
    "refresh_topics_interval",
    "refresh_groups_interval",
    "checkpoint_interval",
    "heartbeat_interval",
    "offset_sync_interval",
    "sync_group_offsets_interval",
    "sync_topic_configs_interval",
    "sync_topic_acls_interval",
    "fetch_max_wait",
    "consumer_offset_sync_interval",
    "source_unavailable_after",
];

/// The keys of a `[[flows]]` entry (`[defaults]`: all but `source` and `target`).
pub(super) const FLOW_KEYS: &[&str] = &[
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
    "internal_topic_separator",
    "heartbeats_topic",
    "checkpoints_topic",
    "offset_syncs_topic",
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
    "sync_topic_configs_interval_secs",
    "sync_topic_configs_interval_ms",
    "sync_topic_acls_interval_secs",
    "sync_topic_acls_interval_ms",
    "fetch_max_wait_secs",
    "fetch_max_wait_ms",
    "emit_heartbeats",
    "emit_checkpoints",
    "emit_offset_syncs",
    "sync_group_offsets",
    "sync_topic_configs",
    "sync_topic_acls",
    "buffer_bytes",
    "fetch_max_bytes",
    "max_bytes_per_second",
    "recompress",
    "link",
    "prefix",
    "consumer_offset_sync",
    "consumer_offset_sync_interval_secs",
    "consumer_offset_sync_interval_ms",
    "consumer_offset_group_filters",
    "source_unavailable_after_secs",
    "source_unavailable_after_ms",
    "takeover_from",
    "takeover_offsets_topic",
    "takeover_map_records",
];

/// Naming settings gathered over the `[defaults]` layer (0) and the flow's own table (1).
#[derive(Default)]
struct NamingParts {
    /// Identity naming or not, and the layer that said so.
    identity: Option<(bool, usize)>,
    /// The separator, and the layer that set it.
    separator: Option<(String, usize)>,
}

/// One TOML table of flow keys: `[defaults]` (layer 0) or a `[[flows]]` entry (layer 1).
struct FlowLayer<'a> {
    /// The file, for errors.
    file: &'a str,
    /// The table.
    table: &'a toml::Table,
    /// Its path: `defaults` or `flows[<i>]`.
    path: &'a str,
    /// 0 for `[defaults]`, 1 for a flow's own table.
    layer: usize,
}

/// Checks `[defaults]` on its own (values that stand alone), so its errors show without flows.
pub(super) fn check_defaults(file: &str, defaults: &toml::Table) -> Result<(), ConfigError> {
    let mut scratch = FlowConfig::new("", "");
    let mut prov = FlowProv::new(ConfigFormat::Toml, "defaults".into());
    let mut naming = NamingParts::default();
    let layer = FlowLayer {
        file,
        table: defaults,
        path: "defaults",
        layer: 0,
    };
    apply_flow_table(&layer, &mut scratch, &mut prov, &mut naming)?;
    resolve_naming(file, &naming, ["defaults", "defaults"], &mut scratch)?;
    if naming.separator.is_some() {
        prov.set
            .insert("separator", Where::key("defaults.separator"));
    }
    validate_values(file, &scratch, &prov)
}

/// The `[[flows]]` entries over `defaults`, in file order; `known` lists the cluster aliases.
/// Checks against the clusters and each other are left to the caller.
pub(super) fn toml_flows(
    file: &str,
    v: Option<&toml::Value>,
    defaults: &toml::Table,
    known: &str,
) -> Result<Vec<(FlowConfig, FlowProv)>, ConfigError> {
    let Some(v) = v else {
        return Ok(Vec::new());
    };
    let arr = v
        .as_array()
        .ok_or_else(|| wrong_type(file, "flows", v, "an array of tables ([[flows]])"))?;
    let mut flows = Vec::new();
    for (i, item) in arr.iter().enumerate() {
        let table_path = format!("flows[{i}]");
        let table = item
            .as_table()
            .ok_or_else(|| wrong_type(file, &table_path, item, "a table ([[flows]])"))?;
        flows.push(toml_flow(file, table, &table_path, defaults, known)?);
    }
    Ok(flows)
}

/// One `[[flows]]` entry at `table_path`, over `defaults`.
fn toml_flow(
    file: &str,
    table: &toml::Table,
    table_path: &str,
    defaults: &toml::Table,
    known: &str,
) -> Result<(FlowConfig, FlowProv), ConfigError> {
    let mut ends = Vec::new();
    for end in ["source", "target"] {
        let path = format!("{table_path}.{end}");
        let alias = match table.get(end) {
            Some(v) => toml_str(file, &path, v)?.trim().to_string(),
            None => return Err(ConfigError::new(file, &path, "missing").allowed(known)),
        };
        ends.push(alias);
    }
    let mut flow = FlowConfig::new(&ends[0], &ends[1]);
    let mut prov = FlowProv::new(ConfigFormat::Toml, table_path.to_string());
    prov.set
        .insert("source", Where::key(format!("{table_path}.source")));
    prov.set
        .insert("target", Where::key(format!("{table_path}.target")));
    let mut naming = NamingParts::default();
    let layers = [
        FlowLayer {
            file,
            table: defaults,
            path: "defaults",
            layer: 0,
        },
        FlowLayer {
            file,
            table,
            path: table_path,
            layer: 1,
        },
    ];
    for layer in &layers {
        apply_flow_table(layer, &mut flow, &mut prov, &mut naming)?;
    }
    resolve_naming(file, &naming, ["defaults", table_path], &mut flow)?;
    resolve_mirror(file, &naming, ["defaults", table_path], &mut flow)?;
    Ok((flow, prov))
}

/// Applies one table of flow keys onto `flow`, recording where each field was set.
fn apply_flow_table(
    t: &FlowLayer,
    flow: &mut FlowConfig,
    prov: &mut FlowProv,
    naming: &mut NamingParts,
) -> Result<(), ConfigError> {
    let is_defaults = t.layer == 0;
    let allowed: Vec<&str> = FLOW_KEYS
        .iter()
        .copied()
        .filter(|k| !is_defaults || (*k != "source" && *k != "target"))
        .collect();
    for (key, v) in t.table {
        let path = format!("{}.{key}", t.path);
        let field = flow_key_field(t, key, v, &allowed)?;
        if field == "source" || field == "target" {
            continue; // read by the caller
        }
        let set = apply_flow_value(t, &path, field, v, flow, naming)?;
        prov.set.insert(set, Where::key(path));
    }
    Ok(())
}

/// The field `key` names, if `allowed`; otherwise an unknown-key error with a hint.
fn flow_key_field(
    t: &FlowLayer,
    key: &str,
    v: &toml::Value,
    allowed: &[&str],
) -> Result<&'static str, ConfigError> {
    match FLOW_KEYS.iter().find(|k| **k == key) {
        Some(k) if allowed.contains(k) => Ok(k),
        _ => {
            let hint = if t.layer == 0 && (key == "source" || key == "target") {
                "; source and target belong in each [[flows]] entry"
            } else {
                misplaced_hint(key)
            };
            let key = dotted_name(key, v);
            let path = format!("{}.{key}", t.path);
            Err(unknown_key(t.file, &path, &key, allowed, hint))
        }
    }
}

/// Applies one key (`field`, at `path`) onto `flow` or `naming`; returns the field it set (for a
/// duration, its name without `_secs` / `_ms`).
fn apply_flow_value(
    t: &FlowLayer,
    path: &str,
    field: &'static str,
    v: &toml::Value,
    flow: &mut FlowConfig,
    naming: &mut NamingParts,
) -> Result<&'static str, ConfigError> {
    let file = t.file;
    match field {
        "mode" => flow.mode = toml_mode(file, path, v)?,
        "naming" => naming.identity = Some((toml_identity(file, path, v)?, t.layer)),
        "separator" => naming.separator = Some((toml_str(file, path, v)?.to_string(), t.layer)),
        "internal_topic_separator" => {
            flow.mm2_topics.internal_separator = toml_bool(file, path, v)?
        }
        "heartbeats_topic" => {
            flow.mm2_topics.heartbeats = toml_str(file, path, v)?.trim().to_string()
        }
        "checkpoints_topic" => {
            flow.mm2_topics.checkpoints = Some(toml_pattern(file, path, v, SOURCE_PLACEHOLDER)?)
        }
        "offset_syncs_topic" => {
            flow.mm2_topics.offset_syncs = Some(toml_pattern(file, path, v, TARGET_PLACEHOLDER)?)
        }
        "link" => flow.link = Some(toml_link(file, path, v)?),
        "prefix" => flow.prefix = toml_str(file, path, v)?.to_string(),
        "consumer_offset_group_filters" => {
            let s = toml_str(file, path, v)?;
            flow.consumer_offset_group_filters =
                GroupFilters::parse(s).map_err(|e| ConfigError::new(file, path, e))?;
        }
        "buffer_bytes" => flow.buffer_bytes = toml_buffer_bytes(file, path, v)?,
        "fetch_max_bytes" => flow.fetch_max_bytes = toml_fetch_max_bytes(file, path, v)?,
        "max_bytes_per_second" => flow.max_bytes_per_second = Some(toml_size(file, path, v)?),
        "recompress" => flow.recompress = toml_recompress(file, path, v)?,
        "takeover_from" => flow.takeover_from = toml_takeover(file, path, v)?,
        "takeover_offsets_topic" => {
            flow.takeover_offsets_topic = Some(toml_str(file, path, v)?.trim().to_string())
        }
        "takeover_map_records" => flow.takeover_map_records = toml_count(file, path, v)?,
        _ => {
            if let Some(list) = flow.list_mut(field) {
                *list = toml_regex_list(file, path, v)?;
            } else if let Some(b) = flow.bool_mut(field) {
                *b = toml_bool(file, path, v)?;
            } else {
                return apply_flow_duration(t, path, field, v, flow);
            }
        }
    }
    Ok(field)
}

/// A duration key, `<base>_secs` or `<base>_ms` (not both in one table); returns `<base>`.
fn apply_flow_duration(
    t: &FlowLayer,
    path: &str,
    field: &'static str,
    v: &toml::Value,
    flow: &mut FlowConfig,
) -> Result<&'static str, ConfigError> {
    let (base, millis) = match field.strip_suffix("_ms") {
        Some(b) => (b, true),
        None => (field.strip_suffix("_secs").unwrap_or(field), false),
    };
    let other = if millis {
        format!("{base}_secs")
    } else {
        format!("{base}_ms")
    };
    if t.table.contains_key(&other) {
        return Err(ConfigError::new(
            t.file,
            path,
            format!("also set as `{other}` in the same table; set one"),
        )
        .allowed(format!("{base}_secs or {base}_ms")));
    }
    let d: Duration = toml_duration(t.file, path, v, millis)?;
    let base: &'static str = FLOW_DURATIONS
        .iter()
        .copied()
        .find(|b| *b == base)
        .unwrap_or("fetch_max_wait");
    if let Some(slot) = flow.duration_mut(base) {
        *slot = d;
    }
    Ok(base)
}

/// A topic name pattern holding `placeholder` once.
fn toml_pattern(
    file: &str,
    path: &str,
    v: &toml::Value,
    placeholder: &str,
) -> Result<TopicPattern, ConfigError> {
    let s = toml_str(file, path, v)?;
    TopicPattern::parse(s.trim(), placeholder).map_err(|e| ConfigError::new(file, path, e.0))
}

/// `mode`: `replicate` or `mirror`, in any case.
fn toml_mode(file: &str, path: &str, v: &toml::Value) -> Result<FlowMode, ConfigError> {
    let s = toml_str(file, path, v)?;
    match s.trim().to_ascii_lowercase().as_str() {
        "replicate" => Ok(FlowMode::Replicate),
        "mirror" => Ok(FlowMode::Mirror),
        _ => Err(ConfigError::new(file, path, format!("unknown mode `{s}`"))
            .allowed("replicate, mirror")),
    }
}

/// `takeover_from`: `mm2`, or `none` (the default), in any case.
fn toml_takeover(file: &str, path: &str, v: &toml::Value) -> Result<Option<Takeover>, ConfigError> {
    let s = toml_str(file, path, v)?;
    match s.trim().to_ascii_lowercase().as_str() {
        "mm2" => Ok(Some(Takeover::Mm2)),
        "none" => Ok(None),
        _ => Err(
            ConfigError::new(file, path, format!("unknown replicator `{s}`"))
                .allowed("mm2 (MirrorMaker 2), none"),
        ),
    }
}

/// `recompress`: `none` (the default) or `zstd`, in any case.
fn toml_recompress(file: &str, path: &str, v: &toml::Value) -> Result<Recompress, ConfigError> {
    const ALLOWED: &str = "none, zstd";
    toml_str(file, path, v)
        .map_err(|e| e.allowed(ALLOWED))?
        .parse()
        .map_err(|e: String| ConfigError::new(file, path, e).allowed(ALLOWED))
}

/// A number of records: a non-negative integer.
fn toml_count(file: &str, path: &str, v: &toml::Value) -> Result<u64, ConfigError> {
    match v {
        toml::Value::Integer(n) if *n >= 0 => Ok(*n as u64),
        toml::Value::Integer(n) => {
            Err(
                ConfigError::new(file, path, format!("{n} is not a number of records"))
                    .allowed("an integer, 0 or more"),
            )
        }
        other => Err(wrong_type(file, path, other, "an integer").allowed("an integer, 0 or more")),
    }
}

/// `naming`: whether it is `identity` (else `default`).
fn toml_identity(file: &str, path: &str, v: &toml::Value) -> Result<bool, ConfigError> {
    let s = toml_str(file, path, v)?;
    match s.trim().to_ascii_lowercase().as_str() {
        "default" => Ok(false),
        "identity" => Ok(true),
        _ => Err(
            ConfigError::new(file, path, format!("unknown naming policy `{s}`"))
                .allowed("default (`<source><separator><topic>`), identity (same name)"),
        ),
    }
}

/// `link`: a non-empty name without `|`, trimmed.
fn toml_link(file: &str, path: &str, v: &toml::Value) -> Result<String, ConfigError> {
    let s = toml_str(file, path, v)?.trim().to_string();
    if s.is_empty() || s.contains('|') {
        return Err(ConfigError::new(file, path, format!("bad link name `{s}`"))
            .allowed("a non-empty name without `|`"));
    }
    Ok(s)
}

/// `buffer_bytes`: a size that fits this machine's `usize`.
fn toml_buffer_bytes(file: &str, path: &str, v: &toml::Value) -> Result<usize, ConfigError> {
    let n = toml_size(file, path, v)?;
    usize::try_from(n).map_err(|_| {
        ConfigError::new(file, path, "too large for this machine").allowed(SIZE_ALLOWED)
    })
}

/// `fetch_max_bytes`: a size within Kafka's `int`.
fn toml_fetch_max_bytes(file: &str, path: &str, v: &toml::Value) -> Result<i32, ConfigError> {
    let n = toml_size(file, path, v)?;
    i32::try_from(n).map_err(|_| {
        ConfigError::new(file, path, format!("{n} bytes is more than Kafka allows"))
            .allowed(format!("1 to {} bytes", i32::MAX))
    })
}

/// An array of regular expressions.
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

/// What a size looks like.
const SIZE_ALLOWED: &str =
    "a positive integer number of bytes or a string like \"64MiB\" (units: B, KiB, MiB, GiB)";

/// A size: a positive integer number of bytes, or a string with a binary unit.
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::parse_toml;
    use crate::config::testing::*;

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
max_bytes_per_second = "200KiB"
sync_group_offsets = true
sync_group_offsets_interval_secs = 15
sync_topic_configs = false
sync_topic_configs_interval_ms = 1500
sync_topic_acls_interval_secs = 30
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
        assert_eq!(f.max_bytes_per_second, Some(200 << 10));
        assert_eq!(c.flows[1].max_bytes_per_second, None, "unset: unlimited");
        assert!(f.sync_group_offsets);
        assert_eq!(f.sync_group_offsets_interval, Duration::from_secs(15));
        assert!(!f.sync_topic_configs && f.sync_topic_acls);
        assert_eq!(f.sync_topic_configs_interval, Duration::from_millis(1500));
        assert_eq!(f.sync_topic_acls_interval, Duration::from_secs(30));
        assert!(!f.emit_heartbeats);
        assert!(!f.enabled);
        // A mirror flow keeps topic names whatever [defaults] says.
        assert_eq!(f.naming, NamingPolicy::Identity);
        let g = &c.flows[1];
        // An identity flow ignores a separator that only [defaults] sets.
        assert_eq!(g.naming, NamingPolicy::Identity);
        assert_eq!(g.refresh_topics_interval, Duration::from_secs(5));
        assert!(g.sync_topic_configs && g.sync_topic_acls);
        assert_eq!(g.sync_topic_configs_interval, Duration::from_secs(600));
        assert_eq!(g.sync_topic_acls_interval, Duration::from_secs(600));
        assert_eq!(c.flow("b", "a"), Some(g));
        assert!(c.cluster("a").is_some());
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
    fn toml_recompress_layers_and_rejects_other_codecs() {
        let c = toml_with(
            "[defaults]\nrecompress = \"ZSTD\"\n[[flows]]\nsource = \"a\"\ntarget = \"b\"\n[[flows]]\nsource = \"b\"\ntarget = \"a\"\nrecompress = \"none\"\n",
        )
        .unwrap();
        assert_eq!(c.flows[0].recompress, Recompress::Zstd, "from [defaults]");
        assert_eq!(c.flows[1].recompress, Recompress::None, "the flow's own");
        let plain = toml_with("[[flows]]\nsource = \"a\"\ntarget = \"b\"\n").unwrap();
        assert_eq!(
            plain.flows[0].recompress,
            Recompress::None,
            "off by default"
        );
        let e = toml_err("[defaults]\nrecompress = \"lz4\"\n");
        check(
            &e,
            "test.toml",
            "defaults.recompress",
            "unknown recompress codec `lz4`",
            Some("none, zstd"),
        );
        let e = toml_err("[[flows]]\nsource = \"a\"\ntarget = \"b\"\nrecompress = true\n");
        check(
            &e,
            "test.toml",
            "flows[0].recompress",
            "expected a string",
            Some("zstd"),
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
        let e = toml_err("[defaults]\nmax_bytes_per_second = 0\n");
        check(
            &e,
            "test.toml",
            "defaults.max_bytes_per_second",
            "not a positive size",
            Some("positive integer"),
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

    #[test]
    fn mirror_prefix() {
        let flow = "[[flows]]\nsource = \"a\"\ntarget = \"b\"\n";
        let mirror = format!("{flow}mode = \"mirror\"\n");
        let c = parse_toml(&format!("{TWO}{mirror}prefix = \"a.\"\n"), "x.toml").unwrap();
        let f = c.flow("a", "b").unwrap();
        assert_eq!(f.mirror_topic("trades"), "a.trades");
        assert_eq!(f.mirror_source("a.trades"), Some("trades"));
        assert_eq!(f.mirror_source("trades"), None);
        assert_eq!(
            f.mirror_source("a."),
            None,
            "the prefix alone names no topic"
        );
        assert_eq!(f.naming, NamingPolicy::Identity);
        let plain = parse_toml(&format!("{TWO}{mirror}"), "x.toml").unwrap();
        let f = plain.flow("a", "b").unwrap();
        assert_eq!(f.prefix, "", "none by default: the same name");
        assert_eq!(f.mirror_topic("trades"), "trades");
        assert_eq!(f.mirror_source("trades"), Some("trades"));
        let c = parse_toml(
            &format!("{TWO}[defaults]\nprefix = \"dc1-\"\n{mirror}"),
            "x.toml",
        )
        .unwrap();
        assert_eq!(c.flows[0].prefix, "dc1-", "from [defaults]");
        // Only mirror flows have a prefix, wherever it is set.
        let e = parse_toml(&format!("{TWO}{flow}prefix = \"a.\"\n"), "x.toml").unwrap_err();
        check(
            &e,
            "x.toml",
            "flows[0].prefix",
            "only names mirror topics",
            Some("mode = \"mirror\""),
        );
        assert_eq!(e.to_string().lines().count(), 1, "{e}");
        let e = parse_toml(
            &format!("{TWO}[defaults]\nprefix = \"a.\"\n{flow}"),
            "x.toml",
        )
        .unwrap_err();
        check(&e, "x.toml", "defaults.prefix", "replicate flow", None);
        // Topic name characters only.
        for bad in ["a/", "west trades.", "é.", "a:b"] {
            let e =
                parse_toml(&format!("{TWO}{mirror}prefix = \"{bad}\"\n"), "x.toml").unwrap_err();
            check(
                &e,
                "x.toml",
                "flows[0].prefix",
                "which no topic name may contain",
                Some("a-z, A-Z, 0-9"),
            );
        }
        let e = parse_toml(&format!("{TWO}{mirror}prefix = 1\n"), "x.toml").unwrap_err();
        check(&e, "x.toml", "flows[0].prefix", "expected a string", None);
    }

    #[test]
    fn toml_takeover_keys() {
        let flow = "[[flows]]\nsource = \"a\"\ntarget = \"b\"\n";
        let c = parse_toml(&format!("{TWO}{flow}"), "x.toml").unwrap();
        assert_eq!(c.flows[0].takeover_from, None);
        assert_eq!(
            c.flows[0].takeover_offsets_topic(),
            "mm2-offsets.a.internal"
        );
        assert_eq!(c.flows[0].takeover_map_records, 100_000);
        let c = parse_toml(
            &format!("{TWO}[defaults]\ntakeover_from = \"MM2\"\n{flow}takeover_offsets_topic = \"my-offsets\"\ntakeover_map_records = 0\n"),
            "x.toml",
        )
        .unwrap();
        let f = &c.flows[0];
        assert_eq!(f.takeover_from, Some(Takeover::Mm2));
        assert_eq!(f.takeover_offsets_topic(), "my-offsets");
        assert_eq!(f.takeover_map_records, 0);
        let e = parse_toml(&format!("{TWO}{flow}takeover_from = \"mm1\"\n"), "x.toml").unwrap_err();
        check(
            &e,
            "x.toml",
            "flows[0].takeover_from",
            "unknown replicator `mm1`",
            Some("mm2"),
        );
        let e = parse_toml(
            &format!("{TWO}{flow}takeover_offsets_topic = \"t\"\n"),
            "x.toml",
        )
        .unwrap_err();
        check(
            &e,
            "x.toml",
            "flows[0].takeover_offsets_topic",
            "without takeover_from",
            None,
        );
        let e =
            parse_toml(&format!("{TWO}{flow}takeover_map_records = 5\n"), "x.toml").unwrap_err();
        check(
            &e,
            "x.toml",
            "flows[0].takeover_map_records",
            "without takeover_from",
            None,
        );
        let e = parse_toml(
            &format!("{TWO}{flow}takeover_from = \"mm2\"\ntakeover_map_records = -1\n"),
            "x.toml",
        )
        .unwrap_err();
        check(
            &e,
            "x.toml",
            "flows[0].takeover_map_records",
            "not a number",
            Some("0 or more"),
        );
        let e = parse_toml(
            &format!("{TWO}{flow}takeover_from = \"mm2\"\ntakeover_offsets_topic = \"a b\"\n"),
            "x.toml",
        )
        .unwrap_err();
        check(
            &e,
            "x.toml",
            "flows[0].takeover_offsets_topic",
            "has ` `: Kafka topic names use",
            None,
        );
        let e = parse_toml(
            &format!(
                "{TWO}{flow}takeover_from = \"mm2\"\nmode = \"mirror\"\nnaming = \"identity\"\n"
            ),
            "x.toml",
        )
        .unwrap_err();
        check(
            &e,
            "x.toml",
            "flows[0].takeover_from",
            "mirror flow",
            Some("replicate"),
        );
    }
}
