//! MirrorMaker 2's `mm2.properties`, translated into a [`Config`] by [`parse_mm2`]: the cluster
//! aliases, each cluster's client and security settings (its own `<alias>.<key>` over the global
//! key), the enabled flows (flow-specific `A->B.<key>` over global keys) and replication factors.
//! Not to be confused with `crate::mm2`, MM2's record formats.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::time::Duration;

use crate::secret::ProviderKind;

use super::error::{ConfigError, FlowProv, Where};
use super::mm2_keys::{sorted_notes, unsupported_notes};
use super::properties::{parse_properties, Props};
use super::security::{mm2_providers, mm2_security};
use super::validate::{
    check_alias, check_host_port, check_replication_factor, validate_flows, validate_values,
    ALIAS_RULE, REPLICATION_FACTOR_ALLOWED,
};
use super::{
    split_servers, ClusterSettings, Config, ConfigFormat, FlowConfig, NamingPolicy,
    SecurityProtocol, DEFAULT_INSTANCE_GROUP, DEFAULT_POLICY_CLASS, DEFAULT_SEPARATOR,
    IDENTITY_POLICY_CLASS,
};

/// Looks up an MM2 key with a fallback: a cluster's or a flow's own key, else the global one.
pub(super) type Lookup<'g, 'p> = &'g dyn Fn(&str) -> Option<(&'p str, Where)>;

/// Notes on keys without effect, with the line that orders them.
type Notes = Vec<(usize, String)>;

/// Parses a MirrorMaker 2 `mm2.properties`; `origin` names the file in errors.
pub fn parse_mm2(text: &str, origin: &str) -> Result<Config, ConfigError> {
    let file = origin;
    let entries = parse_properties(text).map_err(|(line, problem)| {
        ConfigError::new(&format!("{file}:{line}"), "properties syntax", problem)
    })?;
    let props = Props::new(entries);
    let aliases = mm2_aliases(file, &props)?;
    let alias_set: BTreeSet<String> = aliases.iter().cloned().collect();
    let known = aliases.join(", ");
    let enabled = mm2_enabled_flows(file, &props, &alias_set, &known)?;
    // Every key is either understood or listed, in file order.
    let mut notes = unsupported_notes(&props, &alias_set, &enabled, &known);
    let mut clusters = mm2_clusters(file, &props, &aliases)?;
    // Global flow keys are parsed and their regexes checked even when no flow uses them;
    // cross-setting checks apply to each flow's merged settings, as in MM2.
    let (global_flow, global_prov) = mm2_flow(file, &props, None, &mut notes)?;
    validate_values(file, &global_flow, &global_prov)?;
    let flows = mm2_flows(file, &props, &enabled, &mut clusters, &mut notes)?;
    validate_flows(file, &clusters, &flows)?;
    Ok(Config {
        clusters,
        flows: flows.into_iter().map(|(f, _)| f).collect(),
        origin: origin.to_string(),
        unsupported: sorted_notes(notes),
        http: None,
        instance_group: DEFAULT_INSTANCE_GROUP.to_string(),
    })
}

/// The aliases listed in `clusters`, each once, in order (at least one).
fn mm2_aliases(file: &str, props: &Props) -> Result<Vec<String>, ConfigError> {
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
    Ok(aliases)
}

/// Checks that flow keys name known clusters (`known` lists them); the enabled flows in file
/// order, each with where it was enabled.
fn mm2_enabled_flows(
    file: &str,
    props: &Props,
    aliases: &BTreeSet<String>,
    known: &str,
) -> Result<Vec<(String, String, Where)>, ConfigError> {
    let mut enabled = Vec::new();
    for key in &props.order {
        let Some((head, rest)) = flow_head(key) else {
            continue;
        };
        let Some((value, at)) = props.get(key) else {
            continue;
        };
        let (s, t) = split_flow_name(head, aliases).map_err(|unknown| {
            at.error(
                file,
                format!("unknown cluster alias `{unknown}` (not listed in `clusters`)"),
            )
            .allowed(known)
        })?;
        if rest == "enabled" && mm2_bool(file, value, &at)? {
            enabled.push((s, t, at));
        }
    }
    Ok(enabled)
}

/// The listed clusters with their settings.
fn mm2_clusters(
    file: &str,
    props: &Props,
    aliases: &[String],
) -> Result<BTreeMap<String, ClusterSettings>, ConfigError> {
    let global_rf = match props.get("replication.factor") {
        None => None,
        Some((value, at)) => Some(mm2_replication_factor(file, value, &at)?),
    };
    let providers = mm2_providers(props);
    let mut clusters = BTreeMap::new();
    for alias in aliases {
        let c = mm2_cluster(file, props, alias, global_rf, &providers)?;
        clusters.insert(alias.clone(), c);
    }
    Ok(clusters)
}

/// One cluster: `<alias>.bootstrap.servers`, then client and security keys (its own, else
/// global); `global_rf` is the global `replication.factor`.
fn mm2_cluster(
    file: &str,
    props: &Props,
    alias: &str,
    global_rf: Option<i16>,
    providers: &[(String, ProviderKind)],
) -> Result<ClusterSettings, ConfigError> {
    let own = |k: &str| props.get(&format!("{alias}.{k}"));
    let inherited = |k: &str| own(k).or_else(|| props.get(k));
    let servers = mm2_bootstrap(file, alias, own("bootstrap.servers"))?;
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
    mm2_security(file, alias, &inherited, providers, &mut c)?;
    Ok(c)
}

/// `<alias>.bootstrap.servers` (`own`, when set): at least one `host:port`.
fn mm2_bootstrap(
    file: &str,
    alias: &str,
    own: Option<(&str, Where)>,
) -> Result<Vec<String>, ConfigError> {
    let Some((value, at)) = own else {
        return Err(Where::key(format!("{alias}.bootstrap.servers"))
            .error(
                file,
                format!("missing: cluster `{alias}` is listed in `clusters` and needs bootstrap servers"),
            )
            .allowed("host:port,host:port"));
    };
    let servers = split_servers(value);
    if servers.is_empty() {
        return Err(at
            .error(file, "empty: a cluster needs at least one bootstrap server")
            .allowed("host:port,host:port"));
    }
    for s in &servers {
        check_host_port(s).map_err(|p| at.error(file, p).allowed("host:port,host:port"))?;
    }
    Ok(servers)
}

/// A `replication.factor` value set at `at`.
fn mm2_replication_factor(file: &str, value: &str, at: &Where) -> Result<i16, ConfigError> {
    let n = mm2_int(file, value, at, REPLICATION_FACTOR_ALLOWED)?;
    check_replication_factor(n).map_err(|p| at.error(file, p).allowed(REPLICATION_FACTOR_ALLOWED))
}

/// The enabled flows, each with flow-specific keys over global ones. A flow's
/// `replication.factor` sets its target cluster's, which takes one value.
fn mm2_flows(
    file: &str,
    props: &Props,
    enabled: &[(String, String, Where)],
    clusters: &mut BTreeMap<String, ClusterSettings>,
    notes: &mut Notes,
) -> Result<Vec<(FlowConfig, FlowProv)>, ConfigError> {
    let mut flows = Vec::new();
    let mut rf_set_by: HashMap<String, (i16, Where)> = HashMap::new();
    for (s, t, at) in enabled {
        let (flow, prov) = mm2_flow(file, props, Some((s, t, at.clone())), notes)?;
        if let Some((value, rf_at)) = props.get(&format!("{s}->{t}.replication.factor")) {
            let rf = mm2_replication_factor(file, value, &rf_at)?;
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
    Ok(flows)
}

/// Builds one flow from flow-specific keys over global keys; `pair = None` reads globals only.
fn mm2_flow(
    file: &str,
    props: &Props,
    pair: Option<(&str, &str, Where)>,
    notes: &mut Notes,
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
    let lookup = |name: &str| {
        if !prefix.is_empty() {
            if let Some(hit) = props.get(&format!("{prefix}{name}")) {
                return Some(hit);
            }
        }
        props.get(name)
    };
    mm2_flow_lists(&lookup, &mut flow, &mut prov);
    mm2_flow_durations(file, &lookup, &mut flow, &mut prov)?;
    mm2_flow_bools(file, &lookup, &mut flow, &mut prov)?;
    mm2_flow_naming(file, props, &lookup, &mut flow, &mut prov, notes)?;
    Ok((flow, prov))
}

/// The regex lists; a `.exclude` key beats its deprecated `.blacklist` alias, as in MM2.
fn mm2_flow_lists(lookup: Lookup, flow: &mut FlowConfig, prov: &mut FlowProv) {
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
}

/// The intervals, in whole seconds.
fn mm2_flow_durations(
    file: &str,
    lookup: Lookup,
    flow: &mut FlowConfig,
    prov: &mut FlowProv,
) -> Result<(), ConfigError> {
    let durations: [(&'static str, &str); 7] = [
        ("refresh_topics_interval", "refresh.topics.interval.seconds"),
        ("refresh_groups_interval", "refresh.groups.interval.seconds"),
        ("checkpoint_interval", "emit.checkpoints.interval.seconds"),
        ("heartbeat_interval", "emit.heartbeats.interval.seconds"),
        (
            "sync_group_offsets_interval",
            "sync.group.offsets.interval.seconds",
        ),
        (
            "sync_topic_configs_interval",
            "sync.topic.configs.interval.seconds",
        ),
        (
            "sync_topic_acls_interval",
            "sync.topic.acls.interval.seconds",
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
    Ok(())
}

/// The switches.
fn mm2_flow_bools(
    file: &str,
    lookup: Lookup,
    flow: &mut FlowConfig,
    prov: &mut FlowProv,
) -> Result<(), ConfigError> {
    let bools: [(&'static str, &str); 6] = [
        ("emit_heartbeats", "emit.heartbeats.enabled"),
        ("emit_checkpoints", "emit.checkpoints.enabled"),
        ("emit_offset_syncs", "emit.offset-syncs.enabled"),
        ("sync_group_offsets", "sync.group.offsets.enabled"),
        ("sync_topic_configs", "sync.topic.configs.enabled"),
        ("sync_topic_acls", "sync.topic.acls.enabled"),
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
    Ok(())
}

/// The naming policy; a separator with identity naming is noted as ignored.
fn mm2_flow_naming(
    file: &str,
    props: &Props,
    lookup: Lookup,
    flow: &mut FlowConfig,
    prov: &mut FlowProv,
    notes: &mut Notes,
) -> Result<(), ConfigError> {
    let identity = mm2_identity(file, lookup, prov)?;
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
    if let Some((value, at)) = lookup("replication.policy.internal.topic.separator.enabled") {
        flow.mm2_topics.internal_separator = mm2_bool(file, value, &at)?;
        prov.set.insert("internal_topic_separator", at);
    }
    if let Some((value, at)) = lookup("default.replication.policy.heartbeats.topic.name") {
        flow.mm2_topics.heartbeats = value.trim().to_string();
        prov.set.insert("heartbeats_topic", at);
    }
    Ok(())
}

/// Whether `replication.policy.class` names the identity policy (only MM2's two are supported).
fn mm2_identity(file: &str, lookup: Lookup, prov: &mut FlowProv) -> Result<bool, ConfigError> {
    let Some((value, at)) = lookup("replication.policy.class") else {
        return Ok(false);
    };
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
    Ok(identity)
}

/// A boolean, `true` or `false` in any case.
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

/// A whole number; `what` is the allowed values for the error.
fn mm2_int(file: &str, value: &str, at: &Where, what: &str) -> Result<i64, ConfigError> {
    value.trim().parse::<i64>().map_err(|_| {
        at.error(file, format!("`{value}` is not a whole number"))
            .allowed(what.to_string())
    })
}

/// A positive whole number of seconds.
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

/// 1 to `i32::MAX` milliseconds.
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
pub(super) fn mm2_list(value: &str) -> Vec<String> {
    value
        .split(',')
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .collect()
}

/// Splits `A->B` into known aliases; `Err` carries the unknown alias.
pub(super) fn split_flow_name(
    head: &str,
    aliases: &BTreeSet<String>,
) -> Result<(String, String), String> {
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
pub(super) fn flow_head(key: &str) -> Option<(&str, &str)> {
    let (head, rest) = key.split_once('.')?;
    head.contains("->").then_some((head, rest))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::testing::*;

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
             a->b.sync.topic.configs.enabled = false\n\
             sync.topic.configs.interval.seconds = 20\n\
             b->a.sync.topic.acls.enabled = false\n\
             sync.topic.acls.interval.seconds = 40\n\
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
        assert!(!ab.sync_topic_configs && ba.sync_topic_configs);
        assert!(ab.sync_topic_acls && !ba.sync_topic_acls);
        assert_eq!(ab.sync_topic_configs_interval, Duration::from_secs(20));
        assert_eq!(ba.sync_topic_acls_interval, Duration::from_secs(40));
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
    fn mm2_internal_topic_names() {
        let c = mm2_with(
            "replication.policy.separator = _
a->b.enabled = true
b->a.enabled = true
             b->a.replication.policy.internal.topic.separator.enabled = false
             default.replication.policy.heartbeats.topic.name = mm2-heartbeats
",
        );
        assert!(c.unsupported.is_empty(), "{:?}", c.unsupported);
        let ab = c.flow("a", "b").unwrap().mm2_topic_names();
        let ba = c.flow("b", "a").unwrap().mm2_topic_names();
        assert_eq!(ab.checkpoints("a"), "a_checkpoints_internal");
        assert_eq!(ba.checkpoints("b"), "b.checkpoints.internal");
        assert_eq!(ba.offset_syncs("a"), "mm2-offset-syncs.a.internal");
        assert_eq!(
            (ab.heartbeats(), ba.heartbeats()),
            ("mm2-heartbeats", "mm2-heartbeats")
        );
        let e = mm2_err(&format!(
            "{MM2_BASE}a->b.enabled = true
replication.policy.internal.topic.separator.enabled = maybe
"
        ));
        assert!(
            e.key
                .contains("replication.policy.internal.topic.separator.enabled"),
            "{e}"
        );
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
    }

    #[test]
    fn mm2_value_errors() {
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
}
