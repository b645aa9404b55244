//! strait's TOML format: [`parse_toml`], the top level, `[clusters.<alias>]` tables and the HTTP
//! endpoints, the readers of TOML values, and one-line errors that name the key (with a
//! suggestion for a misspelt or MM2-style key). Flow tables are read in `toml_flow`.

use std::collections::BTreeMap;
use std::time::Duration;

use crate::sasl::SaslMechanism;

use super::error::ConfigError;
use super::security::{check_security, toml_secret, SaslParts};
use super::stores::{TomlStores, CLUSTER_STORE_KEYS, HTTP_STORE_KEYS};
use super::toml_flow::{check_defaults, toml_flows, FLOW_KEYS};
use super::validate::{
    check_alias, check_host_port, check_http, check_instance_group, check_replication_factor,
    check_timeout_ms, validate_flows, ALIAS_RULE, BOOTSTRAP_ALLOWED, LISTEN_ALLOWED,
    REPLICATION_FACTOR_ALLOWED,
};
use super::{
    split_servers, ClusterSettings, Config, HttpSettings, SecurityProtocol, DEFAULT_HTTP_LISTEN,
    DEFAULT_INSTANCE_GROUP,
};

/// The keys of the top-level table.
const TOP_KEYS: &[&str] = &["http", "instance_group", "clusters", "defaults", "flows"];

/// The keys of a `[clusters.<alias>]` table (and the OAUTHBEARER keys of
/// [`super::oauth::TOML_KEYS`]); the GSSAPI keys repeat [`super::kerberos::TOML_KEYS`].
const CLUSTER_KEYS: &[&str] = &[
    "bootstrap_servers",
    "security_protocol",
    "client_id",
    "request_timeout_secs",
    "request_timeout_ms",
    "connect_timeout_secs",
    "connect_timeout_ms",
    "replication_factor",
    "control_topic",
    "progress_topic",
    "sasl_mechanism",
    "sasl_username",
    "sasl_password",
    "sasl_kerberos_service_name",
    "sasl_kerberos_principal",
    "sasl_kerberos_keytab",
    "sasl_kerberos_ccache",
    "ssl_ca_file",
    "ssl_certificate_file",
    "ssl_key_file",
    "ssl_server_name",
    "ssl_keystore_location",
    "ssl_keystore_type",
    "ssl_keystore_password",
    "ssl_key_password",
    "ssl_keystore_alias",
    "ssl_truststore_location",
    "ssl_truststore_type",
    "ssl_truststore_password",
];

/// The keys of the `[http]` table.
const HTTP_KEYS: &[&str] = &[
    "listen",
    "allow_remote",
    "tls_cert",
    "tls_key",
    "tls_keystore_location",
    "tls_keystore_type",
    "tls_keystore_password",
    "tls_key_password",
    "tls_keystore_alias",
    "token",
    "write_token",
];

/// MM2 keys a user may carry over into TOML by habit, and their TOML names.
const MM2_TO_TOML: &[(&str, &str)] = &[
    ("bootstrap.servers", "bootstrap_servers"),
    ("security.protocol", "security_protocol"),
    ("sasl.mechanism", "sasl_mechanism"),
    ("sasl.jaas.config", "sasl_username"),
    ("sasl.kerberos.service.name", "sasl_kerberos_service_name"),
    ("ssl.truststore.location", "ssl_truststore_location"),
    ("ssl.truststore.type", "ssl_truststore_type"),
    ("ssl.truststore.password", "ssl_truststore_password"),
    ("ssl.keystore.location", "ssl_keystore_location"),
    ("ssl.keystore.type", "ssl_keystore_type"),
    ("ssl.keystore.password", "ssl_keystore_password"),
    ("ssl.key.password", "ssl_key_password"),
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
        "replication.policy.internal.topic.separator.enabled",
        "internal_topic_separator",
    ),
    (
        "default.replication.policy.heartbeats.topic.name",
        "heartbeats_topic",
    ),
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
    ("sync.topic.configs.enabled", "sync_topic_configs"),
    (
        "sync.topic.configs.interval.seconds",
        "sync_topic_configs_interval_secs",
    ),
    ("sync.topic.acls.enabled", "sync_topic_acls"),
    (
        "sync.topic.acls.interval.seconds",
        "sync_topic_acls_interval_secs",
    ),
];

/// Parses strait's TOML format; `origin` names the file in errors.
pub fn parse_toml(text: &str, origin: &str) -> Result<Config, ConfigError> {
    let file = origin;
    let root: toml::Table = text
        .parse::<toml::Table>()
        .map_err(|e| toml_syntax_error(file, text, &e))?;
    check_top_keys(file, &root)?;
    let instance_group = match root.get("instance_group") {
        None => DEFAULT_INSTANCE_GROUP.to_string(),
        Some(v) => {
            let s = toml_str(file, "instance_group", v)?.trim().to_string();
            check_instance_group(file, &s)?;
            s
        }
    };
    let http = match root.get("http") {
        None => None,
        Some(v) => Some(toml_http(file, v)?),
    };
    let clusters = toml_clusters(file, root.get("clusters"))?;
    let empty = toml::Table::new();
    let defaults = match root.get("defaults") {
        None => &empty,
        Some(v) => v
            .as_table()
            .ok_or_else(|| wrong_type(file, "defaults", v, "a table ([defaults])"))?,
    };
    // Check [defaults] on its own, so its errors show even without flows.
    check_defaults(file, defaults)?;
    let known = clusters.keys().cloned().collect::<Vec<_>>().join(", ");
    let flows = toml_flows(file, root.get("flows"), defaults, &known)?;
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

/// Every top-level key is known; a flow key there gets a hint where it belongs.
fn check_top_keys(file: &str, root: &toml::Table) -> Result<(), ConfigError> {
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
    Ok(())
}

/// Levenshtein distance, in characters.
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

/// The allowed key a user probably meant: the TOML name of an MM2 key, a key spelt with dots or
/// dashes, or one within two edits.
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
pub(super) fn dotted_name(key: &str, v: &toml::Value) -> String {
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

/// An unknown key at `path`, with a suggestion, `hint`, and the allowed keys.
pub(super) fn unknown_key(
    file: &str,
    path: &str,
    key: &str,
    allowed: &[&str],
    hint: &str,
) -> ConfigError {
    let mut problem = "unknown key".to_string();
    if let Some(s) = suggest(key, allowed) {
        problem.push_str(&format!("; did you mean `{s}`?"));
    }
    problem.push_str(hint);
    ConfigError::new(file, path, problem).allowed(allowed.join(", "))
}

/// A hint for a top-level key written below a table header, where TOML puts it in that table.
pub(super) fn misplaced_hint(key: &str) -> &'static str {
    if TOP_KEYS.contains(&key) {
        "; top-level keys such as `http` must come before the first [table] header"
    } else {
        ""
    }
}

/// A TOML syntax error as one line, with `file:line:column`.
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

/// A value of the wrong type.
pub(super) fn wrong_type(file: &str, path: &str, v: &toml::Value, expected: &str) -> ConfigError {
    ConfigError::new(
        file,
        path,
        format!("expected {expected}, found a {}", v.type_str()),
    )
}

/// A string value.
pub(super) fn toml_str<'v>(
    file: &str,
    path: &str,
    v: &'v toml::Value,
) -> Result<&'v str, ConfigError> {
    v.as_str()
        .ok_or_else(|| wrong_type(file, path, v, "a string"))
}

/// A boolean value.
pub(super) fn toml_bool(file: &str, path: &str, v: &toml::Value) -> Result<bool, ConfigError> {
    v.as_bool()
        .ok_or_else(|| wrong_type(file, path, v, "true or false").allowed("true, false"))
}

/// A positive duration in seconds, or in milliseconds when `millis`.
pub(super) fn toml_duration(
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

/// The `[clusters.<alias>]` tables (at least one).
fn toml_clusters(
    file: &str,
    v: Option<&toml::Value>,
) -> Result<BTreeMap<String, ClusterSettings>, ConfigError> {
    let Some(v) = v else {
        return Err(ConfigError::new(
            file,
            "clusters",
            "missing: define each cluster in a [clusters.<alias>] table",
        )
        .allowed(format!("aliases made of {ALIAS_RULE}")));
    };
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
    let mut clusters = BTreeMap::new();
    for (alias, cv) in table {
        clusters.insert(alias.clone(), toml_cluster(file, alias, cv)?);
    }
    Ok(clusters)
}

/// One `[clusters.<alias>]` table.
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
    let mut stores = TomlStores::default();
    for (key, v) in table {
        let kpath = format!("{path}.{key}");
        match key.as_str() {
            k if CLUSTER_STORE_KEYS.contains(&k) => stores.read(file, &kpath, k, v)?,
            "sasl_mechanism" => sasl.mechanism = Some(toml_sasl_mechanism(file, &kpath, v)?),
            "sasl_username" => sasl.username = Some(toml_str(file, &kpath, v)?.to_string()),
            "sasl_password" => sasl.password = Some(toml_secret(file, &kpath, v)?),
            "ssl_ca_file" => c.tls.ca_file = Some(toml_str(file, &kpath, v)?.into()),
            "ssl_certificate_file" => {
                c.tls.certificate_file = Some(toml_str(file, &kpath, v)?.into())
            }
            "ssl_key_file" => c.tls.key_file = Some(toml_str(file, &kpath, v)?.into()),
            "ssl_server_name" => c.tls.server_name = Some(toml_str(file, &kpath, v)?.to_string()),
            "bootstrap_servers" => {
                c.bootstrap_servers = toml_bootstrap(file, &kpath, v)?;
                have_bootstrap = true;
            }
            "security_protocol" => c.security_protocol = toml_protocol(file, &kpath, v)?,
            "client_id" => c.client_id = toml_str(file, &kpath, v)?.to_string(),
            "control_topic" => c.internal_topics.control = toml_str(file, &kpath, v)?.to_string(),
            "progress_topic" => c.internal_topics.progress = toml_str(file, &kpath, v)?.to_string(),
            "replication_factor" => {
                c.replication_factor = toml_replication_factor(file, &kpath, v)?
            }
            "request_timeout_secs"
            | "request_timeout_ms"
            | "connect_timeout_secs"
            | "connect_timeout_ms" => toml_timeout(file, table, key, &kpath, v, &mut c)?,
            _ if sasl.oauth.toml_key(file, &kpath, key, v)? => {}
            _ if sasl.kerberos.toml_key(file, &kpath, key, v)? => {}
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
    stores.apply_cluster(file, &path, &mut c)?;
    finish_cluster(file, &path, have_bootstrap, c, sasl)
}

/// Checks a cluster read from its table at `path`: bootstrap servers were given
/// (`have_bootstrap`) and are not empty, and the SASL parts and TLS settings fit the protocol.
fn finish_cluster(
    file: &str,
    path: &str,
    have_bootstrap: bool,
    mut c: ClusterSettings,
    sasl: SaslParts,
) -> Result<ClusterSettings, ConfigError> {
    if !have_bootstrap || c.bootstrap_servers.is_empty() {
        let problem = if have_bootstrap {
            "empty: a cluster needs at least one bootstrap server"
        } else {
            "missing: a cluster needs at least one bootstrap server"
        };
        return Err(
            ConfigError::new(file, format!("{path}.bootstrap_servers"), problem)
                .allowed(BOOTSTRAP_ALLOWED),
        );
    }
    c.sasl = sasl
        .finish(c.security_protocol)
        .map_err(|(field, problem)| ConfigError::new(file, format!("{path}.{field}"), problem))?;
    super::oauth::fill_msk_region(&mut c);
    check_security(&c)
        .map_err(|(field, problem)| ConfigError::new(file, format!("{path}.{field}"), problem))?;
    Ok(c)
}

/// `bootstrap_servers`: `["host:port", ...]` or `"host:port,host:port"` (may be empty here).
fn toml_bootstrap(file: &str, kpath: &str, v: &toml::Value) -> Result<Vec<String>, ConfigError> {
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
        other => return Err(wrong_type(file, kpath, other, "servers").allowed(BOOTSTRAP_ALLOWED)),
    };
    for s in &servers {
        check_host_port(s)
            .map_err(|p| ConfigError::new(file, kpath, p).allowed("host:port entries"))?;
    }
    Ok(servers)
}

/// `security_protocol`.
fn toml_protocol(
    file: &str,
    kpath: &str,
    v: &toml::Value,
) -> Result<SecurityProtocol, ConfigError> {
    let s = toml_str(file, kpath, v)?;
    SecurityProtocol::parse(s).ok_or_else(|| {
        ConfigError::new(file, kpath, format!("unknown security protocol `{s}`"))
            .allowed(SecurityProtocol::allowed())
    })
}

/// `sasl_mechanism`.
fn toml_sasl_mechanism(
    file: &str,
    kpath: &str,
    v: &toml::Value,
) -> Result<SaslMechanism, ConfigError> {
    let s = toml_str(file, kpath, v)?;
    SaslMechanism::parse(s).ok_or_else(|| {
        ConfigError::new(file, kpath, format!("unknown SASL mechanism `{s}`"))
            .allowed(SaslMechanism::allowed())
    })
}

/// `replication_factor`.
fn toml_replication_factor(file: &str, kpath: &str, v: &toml::Value) -> Result<i16, ConfigError> {
    let n = v.as_integer().ok_or_else(|| {
        wrong_type(file, kpath, v, "an integer").allowed(REPLICATION_FACTOR_ALLOWED)
    })?;
    check_replication_factor(n)
        .map_err(|p| ConfigError::new(file, kpath, p).allowed(REPLICATION_FACTOR_ALLOWED))
}

/// `request_timeout_*` / `connect_timeout_*` (`key`): one of `_secs` and `_ms` in `table`.
fn toml_timeout(
    file: &str,
    table: &toml::Table,
    key: &str,
    kpath: &str,
    v: &toml::Value,
    c: &mut ClusterSettings,
) -> Result<(), ConfigError> {
    let millis = key.ends_with("_ms");
    let (base, other) = match key {
        "request_timeout_secs" => ("request_timeout", "request_timeout_ms"),
        "request_timeout_ms" => ("request_timeout", "request_timeout_secs"),
        "connect_timeout_secs" => ("connect_timeout", "connect_timeout_ms"),
        _ => ("connect_timeout", "connect_timeout_secs"),
    };
    if table.contains_key(other) {
        return Err(
            ConfigError::new(file, kpath, format!("also set as `{other}`; set one"))
                .allowed(format!("{base}_secs or {base}_ms")),
        );
    }
    let d = toml_duration(file, kpath, v, millis)?;
    check_timeout_ms(d).map_err(|p| {
        ConfigError::new(file, kpath, p).allowed(format!("1 to {} milliseconds", i32::MAX))
    })?;
    if base == "request_timeout" {
        c.request_timeout = d;
    } else {
        c.connect_timeout = d;
    }
    Ok(())
}

/// `http = "host:port"` or an `[http]` table.
fn toml_http(file: &str, v: &toml::Value) -> Result<HttpSettings, ConfigError> {
    let (mut h, key) = match v {
        toml::Value::String(s) => (HttpSettings::new(s.trim()), "http"),
        toml::Value::Table(t) => {
            let mut h = HttpSettings::new(DEFAULT_HTTP_LISTEN);
            let mut stores = TomlStores::default();
            for (key, v) in t {
                let kpath = format!("http.{key}");
                match key.as_str() {
                    k if HTTP_STORE_KEYS.contains(&k) => stores.read(file, &kpath, k, v)?,
                    "listen" => h.addr = toml_str(file, &kpath, v)?.trim().to_string(),
                    "allow_remote" => h.allow_remote = toml_bool(file, &kpath, v)?,
                    "tls_cert" => h.tls_cert = Some(toml_str(file, &kpath, v)?.into()),
                    "tls_key" => h.tls_key = Some(toml_str(file, &kpath, v)?.into()),
                    "token" => h.token = Some(toml_secret(file, &kpath, v)?),
                    "write_token" => h.write_token = Some(toml_secret(file, &kpath, v)?),
                    _ => return Err(unknown_key(file, &kpath, key, HTTP_KEYS, "")),
                }
            }
            stores.apply_http(file, &mut h)?;
            (h, "http.listen")
        }
        other => {
            return Err(
                wrong_type(file, "http", other, "a string or a table ([http])")
                    .allowed(LISTEN_ALLOWED),
            )
        }
    };
    h.addr = h.addr.trim().to_string();
    check_http(file, &h, key)?;
    Ok(h)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::is_loopback_listen;
    use crate::config::testing::*;

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
control_topic = "ops.strait-control.internal"
progress_topic = "ops-strait-progress-internal"
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
        assert_eq!(e.internal_topics.control, "ops.strait-control.internal");
        assert_eq!(e.internal_topics.progress, "ops-strait-progress-internal");
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
        let allowed = e.allowed.as_deref().unwrap();
        assert!(
            !allowed
                .split(|c: char| !(c.is_alphanumeric() || c == '_'))
                .any(|k| k == "source"),
            "{allowed}"
        );

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
        assert!(h.write_token.is_none());
        let c = parse_toml(
            &format!(
                "{TWO}[http]\ntoken = \"r\"\nwrite_token = {{ env = \"STRAIT_CFG_TEST_TOKEN\" }}\n"
            ),
            "h.toml",
        )
        .unwrap();
        let h = c.http.unwrap();
        assert_eq!(h.write_token.as_ref().unwrap().expose(), "tok-xyz");
        assert!(!format!("{h:?}").contains("tok-xyz"));
        let e = parse_toml(
            &format!("{TWO}[http]\ntoken = \"same\"\nwrite_token = \"same\"\n"),
            "h.toml",
        )
        .unwrap_err();
        assert_eq!(e.key, "http.write_token");
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
}
