//! Validation shared by both formats: the checks on single values (aliases, regexes, addresses,
//! timeouts, replication factors), on each flow's merged settings, and on flows against the
//! clusters and each other; and [`validate`], which runs them all on a [`Config`] built in code.
//!
//! The parsers call the same checks as they read, so errors name the key that set a value; a
//! loaded configuration always passes [`validate`].

use std::collections::{BTreeMap, HashMap};
use std::time::Duration;

use regex::Regex;

use super::error::{ConfigError, FlowProv};
use super::security::{check_security, SaslParts};
use super::topic_names::{
    check_internal_topics, check_mm2_topics, check_topic_name, TOPIC_NAME_RULE,
};
use super::NamingPolicy;
use super::{ClusterSettings, Config, ConfigFormat, FlowConfig, FlowMode, HttpSettings};

/// What a cluster alias (or an instance group) may contain.
pub(super) const ALIAS_RULE: &str = "letters, digits, `_` and `-`";

/// The replication factors a cluster accepts.
pub(super) const REPLICATION_FACTOR_ALLOWED: &str = "-1 (broker default) or 1 to 32767";

/// What an HTTP listen address looks like.
pub(super) const LISTEN_ALLOWED: &str = "host:port, e.g. \"127.0.0.1:8083\"";

/// What bootstrap servers look like in TOML.
pub(super) const BOOTSTRAP_ALLOWED: &str = "[\"host:port\", ...] or \"host:port,host:port\"";

/// Checks a whole configuration as loading does: the instance group, the HTTP endpoints, each
/// cluster's settings, and the flows against the clusters and each other.
///
/// For a [`Config`] built in code ([`super::load`] and [`super::parse`] apply these checks as they
/// read). Errors name `config.origin` as the file and keys as the TOML format writes them
/// (`clusters.<alias>.<key>`, `flows[<i>].<key>`, `http.listen`).
pub fn validate(config: &Config) -> Result<(), ConfigError> {
    let file = config.origin.as_str();
    check_instance_group(file, &config.instance_group)?;
    if let Some(h) = &config.http {
        check_http(file, h, "http.listen")?;
    }
    for (alias, c) in &config.clusters {
        validate_cluster(file, alias, c)?;
    }
    let flows: Vec<(FlowConfig, FlowProv)> = config
        .flows
        .iter()
        .enumerate()
        .map(|(i, f)| {
            let prov = FlowProv::new(ConfigFormat::Toml, format!("flows[{i}]"));
            (f.clone(), prov)
        })
        .collect();
    validate_flows(file, &config.clusters, &flows)
}

/// Checks one cluster's settings; `alias` is its key in [`Config::clusters`].
fn validate_cluster(file: &str, alias: &str, c: &ClusterSettings) -> Result<(), ConfigError> {
    let path = format!("clusters.{alias}");
    check_alias(alias).map_err(|p| ConfigError::new(file, &path, p).allowed(ALIAS_RULE))?;
    if c.alias != alias {
        return Err(ConfigError::new(
            file,
            format!("{path}.alias"),
            format!("`{}` differs from the cluster's key `{alias}`", c.alias),
        )
        .allowed(alias));
    }
    let key = format!("{path}.bootstrap_servers");
    if c.bootstrap_servers.is_empty() {
        return Err(ConfigError::new(
            file,
            &key,
            "empty: a cluster needs at least one bootstrap server",
        )
        .allowed(BOOTSTRAP_ALLOWED));
    }
    for s in &c.bootstrap_servers {
        check_host_port(s)
            .map_err(|p| ConfigError::new(file, &key, p).allowed("host:port entries"))?;
    }
    for (field, d) in [
        ("request_timeout_ms", c.request_timeout),
        ("connect_timeout_ms", c.connect_timeout),
    ] {
        check_timeout_ms(d).map_err(|p| {
            ConfigError::new(file, format!("{path}.{field}"), p)
                .allowed(format!("1 to {} milliseconds", i32::MAX))
        })?;
    }
    check_replication_factor(i64::from(c.replication_factor)).map_err(|p| {
        ConfigError::new(file, format!("{path}.replication_factor"), p)
            .allowed(REPLICATION_FACTOR_ALLOWED)
    })?;
    check_internal_topics(&c.internal_topics)
        .map_err(|(field, p)| ConfigError::new(file, format!("{path}.{field}"), p))?;
    SaslParts::from_settings(c.sasl.clone())
        .finish(c.security_protocol)
        .map_err(|(field, p)| ConfigError::new(file, format!("{path}.{field}"), p))?;
    check_security(c).map_err(|(field, p)| ConfigError::new(file, format!("{path}.{field}"), p))
}

/// Checks a cluster alias.
pub(super) fn check_alias(alias: &str) -> Result<(), String> {
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

/// Checks an instance group name: the rules of a cluster alias.
pub(super) fn check_instance_group(file: &str, name: &str) -> Result<(), ConfigError> {
    check_alias(name).map_err(|p| {
        ConfigError::new(file, "instance_group", p.replace("cluster alias", "name"))
            .allowed(ALIAS_RULE)
    })
}

/// Checks a topic or group regex, as written and as matched against whole names.
pub(super) fn check_regex(re: &str) -> Result<(), String> {
    if re.is_empty() {
        return Err("an empty pattern matches no name; remove it".into());
    }
    // Compile the pattern as written first so the error positions match the user's text.
    Regex::new(re).map_err(|e| e.to_string())?;
    Regex::new(&format!("^(?:{re})$")).map_err(|e| e.to_string())?;
    Ok(())
}

/// Checks a `host:port` address.
pub(super) fn check_host_port(s: &str) -> Result<(), String> {
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

/// Checks a client timeout: positive, and within Kafka's `int` milliseconds.
pub(super) fn check_timeout_ms(d: Duration) -> Result<(), String> {
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

/// Checks a replication factor: -1 (the broker's default) or 1 to `i16::MAX`.
pub(super) fn check_replication_factor(n: i64) -> Result<i16, String> {
    if n == -1 || (1..=i16::MAX as i64).contains(&n) {
        Ok(n as i16)
    } else {
        Err(format!("{n} is not a valid replication factor"))
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

/// Checks the HTTP endpoints' settings; `listen_key` names the listen address in errors.
pub(super) fn check_http(
    file: &str,
    h: &HttpSettings,
    listen_key: &str,
) -> Result<(), ConfigError> {
    check_host_port(&h.addr)
        .map_err(|p| ConfigError::new(file, listen_key, p).allowed(LISTEN_ALLOWED))?;
    if !h.allow_remote && !is_loopback_listen(&h.addr) {
        return Err(ConfigError::new(
            file,
            listen_key,
            format!(
                "`{}` is not a loopback address: the HTTP endpoints listen on localhost only unless [http] allow_remote = true (then protect them with tls_cert, tls_key and token)",
                h.addr
            ),
        )
        .allowed("127.0.0.1:PORT, [::1]:PORT or localhost:PORT"));
    }
    if let (Some(read), Some(write)) = (&h.token, &h.write_token) {
        if read.expose() == write.expose() {
            return Err(ConfigError::new(
                file,
                "http.write_token",
                "the write token must differ from the read token (http.token)",
            ));
        }
    }
    if h.tls_keystore.is_some() && (h.tls_cert.is_some() || h.tls_key.is_some()) {
        let key = if h.tls_cert.is_some() {
            "http.tls_cert"
        } else {
            "http.tls_key"
        };
        return Err(ConfigError::new(
            file,
            key,
            "also set: tls_keystore_location; give the server key either as a key store or as PEM files",
        ));
    }
    if h.tls_keystore.is_none() {
        if h.tls_key_password.is_some() {
            return Err(ConfigError::new(
                file,
                "http.tls_key_password",
                "set, but there is no key store (tls_keystore_location)",
            ));
        }
        if h.tls_keystore_alias.is_some() {
            return Err(ConfigError::new(
                file,
                "http.tls_keystore_alias",
                "set, but there is no key store (tls_keystore_location)",
            ));
        }
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
        _ => Ok(()),
    }
}

/// Checks the values that stand on their own (regex lists, separator); also used for
/// `[defaults]` and MM2's global keys, which cross-setting checks see only through a flow.
pub(super) fn validate_values(
    file: &str,
    flow: &FlowConfig,
    prov: &FlowProv,
) -> Result<(), ConfigError> {
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
    check_intervals(file, flow, prov)?;
    check_separator(file, flow, prov)?;
    check_fetch_sizes(file, flow, prov)?;
    check_offset_syncs(file, flow, prov)?;
    check_mirror(file, flow, prov)?;
    check_mm2_topics(file, flow, prov)?;
    check_takeover(file, flow, prov)
}

/// `takeover_from` is for replicate flows; the keys that tune it need it; the offsets topic is a
/// legal topic name.
fn check_takeover(file: &str, flow: &FlowConfig, prov: &FlowProv) -> Result<(), ConfigError> {
    if flow.takeover_from.is_some() && flow.mode == FlowMode::Mirror {
        return Err(prov
            .at("takeover_from")
            .error(
                file,
                "a mirror flow cannot take over from MirrorMaker 2 (it keeps source offsets, MirrorMaker 2 does not)",
            )
            .allowed("mode = \"replicate\", or no takeover_from"));
    }
    let tuned =
        flow.takeover_offsets_topic.is_some() || prov.set.contains_key("takeover_map_records");
    if flow.takeover_from.is_none() && tuned {
        let field = if flow.takeover_offsets_topic.is_some() {
            "takeover_offsets_topic"
        } else {
            "takeover_map_records"
        };
        return Err(prov
            .at(field)
            .error(file, "has no effect without takeover_from")
            .allowed("takeover_from = \"mm2\" in the same flow (or in [defaults])"));
    }
    if let Some(topic) = &flow.takeover_offsets_topic {
        if let Err(problem) = check_topic_name(topic) {
            return Err(prov
                .at("takeover_offsets_topic")
                .error(file, problem)
                .allowed(TOPIC_NAME_RULE));
        }
    }
    Ok(())
}

/// No interval is zero, and a fetch waits no longer than Kafka allows.
fn check_intervals(file: &str, flow: &FlowConfig, prov: &FlowProv) -> Result<(), ConfigError> {
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
    Ok(())
}

/// With the default naming policy, neither alias contains the separator.
fn check_separator(file: &str, flow: &FlowConfig, prov: &FlowProv) -> Result<(), ConfigError> {
    let NamingPolicy::Default { separator } = &flow.naming else {
        return Ok(());
    };
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
    Ok(())
}

/// A fetch response is positive and fits in the buffer.
fn check_fetch_sizes(file: &str, flow: &FlowConfig, prov: &FlowProv) -> Result<(), ConfigError> {
    if flow.fetch_max_bytes <= 0 {
        return Err(prov
            .at("fetch_max_bytes")
            .error(file, "must be greater than zero")
            .allowed(format!("1 to {} bytes", i32::MAX)));
    }
    if flow.max_bytes_per_second == Some(0) {
        return Err(prov
            .at("max_bytes_per_second")
            .error(file, "must be greater than zero")
            .allowed("a positive rate in bytes per second, or unset (unlimited)"));
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
    Ok(())
}

/// Checkpoints and group offset sync need offset syncs.
fn check_offset_syncs(file: &str, flow: &FlowConfig, prov: &FlowProv) -> Result<(), ConfigError> {
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

/// A mirror flow keeps topic names (after its prefix, made of topic name characters; only mirror
/// flows have one), and a link name is non-empty without `|`. (The TOML parser already ensures
/// the names; this catches a [`FlowConfig`] built in code.)
fn check_mirror(file: &str, flow: &FlowConfig, prov: &FlowProv) -> Result<(), ConfigError> {
    if let Some(link) = &flow.link {
        if link.trim().is_empty() || link.contains('|') {
            return Err(prov
                .at("link")
                .error(file, format!("bad link name `{link}`"))
                .allowed("a non-empty name without `|`"));
        }
    }
    if flow.mode == FlowMode::Mirror && flow.naming != NamingPolicy::Identity {
        return Err(prov
            .at("naming")
            .error(
                file,
                "a mirror flow keeps topic names (and offsets); it cannot rename topics",
            )
            .allowed("naming = \"identity\", or mode = \"replicate\""));
    }
    let bad = flow
        .prefix
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-')));
    let problem = match bad {
        _ if flow.prefix.is_empty() => return Ok(()),
        _ if flow.mode != FlowMode::Mirror => "a prefix only names mirror topics; a replicate flow names remote topics by its naming policy".to_string(),
        Some(c) => format!("`{}` has {c:?}, which no topic name may contain", flow.prefix),
        None => return Ok(()),
    };
    Err(prov
        .at("prefix")
        .error(file, problem)
        .allowed("a-z, A-Z, 0-9, `.`, `_`, `-` in a flow with mode = \"mirror\""))
}

/// Checks flows against the clusters and each other.
pub(super) fn validate_flows(
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::testing::*;
    use crate::config::{
        load, parse_toml, SecurityProtocol, DEFAULT_GROUPS_EXCLUDE, DEFAULT_INSTANCE_GROUP,
        DEFAULT_TOPICS_EXCLUDE,
    };
    use crate::sasl::{SaslMechanism, SaslSettings};
    use crate::secret::Secret;
    use std::path::Path;

    /// Two clusters `a` and `b` and the flow `a->b`, built in code.
    fn built() -> Config {
        let mut clusters = BTreeMap::new();
        for (alias, server) in [("a", "h:1"), ("b", "h:2")] {
            let c = ClusterSettings::new(alias, vec![server.to_string()]);
            clusters.insert(alias.to_string(), c);
        }
        Config {
            clusters,
            flows: vec![FlowConfig::new("a", "b")],
            origin: "code".to_string(),
            unsupported: Vec::new(),
            http: None,
            instance_group: DEFAULT_INSTANCE_GROUP.to_string(),
        }
    }

    /// The error `validate` finds after `change` to [`built`].
    fn invalid(change: impl FnOnce(&mut Config)) -> ConfigError {
        let mut c = built();
        change(&mut c);
        match validate(&c) {
            Ok(()) => panic!("expected an error, got {c:?}"),
            Err(e) => e,
        }
    }

    #[test]
    fn loaded_configs_pass_validate() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples");
        for name in ["lab.toml", "lab-mm2.properties", "mirror.toml"] {
            let c = load(&root.join(name)).unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(validate(&c), Ok(()), "{name}");
        }
        let c = toml_with(
            "http = \"localhost:9000\"\ninstance_group = \"g-1\"\n\
             [defaults]\nseparator = \"_\"\nemit_offset_syncs = false\nemit_checkpoints = false\n\
             [[flows]]\nsource = \"a\"\ntarget = \"b\"\nmode = \"mirror\"\nlink = \"l\"\n\
             [[flows]]\nsource = \"b\"\ntarget = \"a\"\nbuffer_bytes = \"1MiB\"\n",
        )
        .unwrap();
        assert_eq!(validate(&c), Ok(()));
        let c = mm2_with("a->b.enabled = true\nb->a.enabled = true\nreplication.factor = 3\n");
        assert_eq!(validate(&c), Ok(()));
    }

    #[test]
    fn validate_checks_flows_built_in_code() {
        assert_eq!(validate(&built()), Ok(()));
        let e = invalid(|c| c.flows[0].target = "c".into());
        check(
            &e,
            "code",
            "flows[0].target",
            "unknown cluster alias `c`",
            Some("a, b"),
        );
        let e = invalid(|c| c.flows.push(FlowConfig::new("a", "b")));
        check(
            &e,
            "code",
            "flows[1]",
            "duplicate flow a->b (already defined by flows[0])",
            None,
        );
        let e = invalid(|c| c.flows[0].topics = vec!["[bad".into()]);
        check(
            &e,
            "code",
            "flows[0].topics",
            "invalid regular expression `[bad`",
            Some("regex"),
        );
        let e = invalid(|c| c.flows[0].heartbeat_interval = Duration::ZERO);
        check(
            &e,
            "code",
            "flows[0].heartbeat_interval_secs",
            "zero",
            Some("positive"),
        );
        let e = invalid(|c| c.flows[0].fetch_max_bytes = 16 << 20);
        check(
            &e,
            "code",
            "flows[0].fetch_max_bytes",
            "smaller than fetch_max_bytes",
            None,
        );
        let e = invalid(|c| c.flows[0].max_bytes_per_second = Some(0));
        check(
            &e,
            "code",
            "flows[0].max_bytes_per_second",
            "greater than zero",
            Some("positive rate"),
        );
        let e = invalid(|c| c.flows[0].emit_offset_syncs = false);
        check(
            &e,
            "code",
            "flows[0].emit_offset_syncs",
            "needs offset syncs",
            None,
        );
        let e = invalid(|c| c.flows[0].mode = FlowMode::Mirror);
        check(
            &e,
            "code",
            "flows[0].naming",
            "keeps topic names",
            Some("identity"),
        );
        let e = invalid(|c| c.flows[0].link = Some("a|b".into()));
        check(
            &e,
            "code",
            "flows[0].link",
            "bad link name",
            Some("without `|`"),
        );
    }

    #[test]
    fn validate_checks_clusters_built_in_code() {
        let e = invalid(|c| c.clusters.get_mut("a").unwrap().bootstrap_servers.clear());
        check(
            &e,
            "code",
            "clusters.a.bootstrap_servers",
            "empty",
            Some("host:port"),
        );
        let e = invalid(|c| c.clusters.get_mut("a").unwrap().bootstrap_servers = vec!["h".into()]);
        check(
            &e,
            "code",
            "clusters.a.bootstrap_servers",
            "has no port",
            None,
        );
        let e = invalid(|c| c.clusters.get_mut("a").unwrap().alias = "b".into());
        check(&e, "code", "clusters.a.alias", "differs", Some("a"));
        let e = invalid(|c| {
            let a = c.clusters.remove("a").unwrap();
            c.clusters.insert(
                "a.b".into(),
                ClusterSettings {
                    alias: "a.b".into(),
                    ..a
                },
            );
        });
        check(&e, "code", "clusters.a.b", "contains `.`", Some("letters"));
        let e = invalid(|c| c.clusters.get_mut("b").unwrap().replication_factor = 0);
        check(
            &e,
            "code",
            "clusters.b.replication_factor",
            "not a valid",
            Some("-1"),
        );
        let e = invalid(|c| {
            c.clusters.get_mut("b").unwrap().internal_topics.control = "ops.control".into()
        });
        check(
            &e,
            "code",
            "clusters.b.control_topic",
            "would be replicated",
            None,
        );
        let e = invalid(|c| {
            c.clusters.get_mut("a").unwrap().internal_topics.progress = "ops/p-internal".into()
        });
        check(&e, "code", "clusters.a.progress_topic", "has `/`", None);
        let e = invalid(|c| {
            let t = &mut c.clusters.get_mut("b").unwrap().internal_topics;
            t.progress = t.control.clone();
        });
        check(
            &e,
            "code",
            "clusters.b.progress_topic",
            "the control topic too",
            None,
        );
        let e = invalid(|c| c.clusters.get_mut("b").unwrap().request_timeout = Duration::ZERO);
        check(
            &e,
            "code",
            "clusters.b.request_timeout_ms",
            "greater than zero",
            None,
        );
        let e = invalid(|c| {
            c.clusters.get_mut("a").unwrap().security_protocol = SecurityProtocol::SaslSsl
        });
        check(&e, "code", "clusters.a.sasl_mechanism", "missing", None);
        let e = invalid(|c| {
            c.clusters.get_mut("a").unwrap().sasl = Some(SaslSettings::password(
                SaslMechanism::Plain,
                "u",
                Secret::literal("p"),
            ))
        });
        check(&e, "code", "clusters.a.sasl_mechanism", "set, but", None);
        let e = invalid(|c| c.clusters.get_mut("a").unwrap().tls.ca_file = Some("/ca".into()));
        check(&e, "code", "clusters.a.ssl_ca_file", "TLS needs SSL", None);
    }

    #[test]
    fn validate_checks_process_settings_built_in_code() {
        let e = invalid(|c| c.http = Some(HttpSettings::new("0.0.0.0:8083")));
        check(
            &e,
            "code",
            "http.listen",
            "not a loopback address",
            Some("127.0.0.1"),
        );
        let e = invalid(|c| {
            let mut h = HttpSettings::new("127.0.0.1:8083");
            h.tls_cert = Some("/c.pem".into());
            c.http = Some(h);
        });
        check(&e, "code", "http.tls_key", "missing", None);
        let e = invalid(|c| c.instance_group = "a.b".into());
        check(
            &e,
            "code",
            "instance_group",
            "name `a.b` contains `.`",
            Some("letters"),
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
}
