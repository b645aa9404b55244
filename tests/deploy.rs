//! Issue 31: what platform teams deploy strait with, checked without a Kubernetes API server.
//!
//! - the Helm chart (`deploy/helm/strait`): `helm lint` and `helm template` over the default
//!   values and every `ci/*-values.yaml`, and the rendered manifests checked (replicas, probes
//!   on `/health` and `/ready` at the status port, the ConfigMap's strait.toml reaching
//!   `strait run --config`, every secret the configuration names provided by an env var from a
//!   Secret or a mounted path, security context, PodDisruptionBudget, grace period over the
//!   drain, Service, ServiceMonitor); the default configuration loads in strait;
//! - the Prometheus rules (`deploy/prometheus`): `promtool check rules` and `promtool test
//!   rules`;
//! - the Grafana dashboard and the rules name only series a running strait exposes: one
//!   replicating against Apache Kafka, its live `/metrics`;
//! - the systemd unit (`deploy/systemd/strait.service`): its hardening, and
//!   `systemd-analyze verify` and `security` where systemd-analyze exists.
//!
//! `helm` and `promtool` come from `scripts/setup.sh` (into `~/.cache/strait/bin`); a test that
//! needs one skips, saying so, when it is missing.

mod support;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use serde_json::Value;
use support::broker::free_port;
use support::strait::{status_get, wait_until};
use support::{create_topic, produce_records, topic_name, Broker, Codec, StraitRun, TestRecord};

const CHART: &str = "deploy/helm/strait";
/// Where the chart puts strait.toml, and what the container's `--config` must say.
const CONFIG_PATH: &str = "/etc/strait/strait.toml";
/// The clusters' default `request_timeout` (docs/configuration.md): the drain on SIGTERM waits
/// for the Produce answers in flight, each bounded by it, then stores progress.
const REQUEST_TIMEOUT_SECS: i64 = 30;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// `name` on PATH or in `~/.cache/strait/bin` (where scripts/setup.sh installs it).
fn tool(name: &str) -> Option<PathBuf> {
    let mut dirs: Vec<PathBuf> = std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).collect())
        .unwrap_or_default();
    if let Some(home) = std::env::var_os("HOME") {
        dirs.push(Path::new(&home).join(".cache/strait/bin"));
    }
    dirs.into_iter().map(|d| d.join(name)).find(|p| p.is_file())
}

fn tool_or_skip(name: &str) -> Option<PathBuf> {
    let t = tool(name);
    if t.is_none() {
        eprintln!(
            "SKIPPED: `{name}` is not installed (scripts/setup.sh installs it into ~/.cache/strait/bin)"
        );
    }
    t
}

/// Runs `cmd`; (success, stdout, stderr).
fn run(cmd: &mut Command) -> (bool, String, String) {
    let out = cmd.output().expect("run a tool");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// The values files the chart is tested with: the defaults and `ci/*-values.yaml`.
fn values_files() -> Vec<Option<PathBuf>> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(root().join(CHART).join("ci"))
        .expect("chart ci/ directory")
        .map(|e| e.expect("dir entry").path())
        .filter(|p| p.to_string_lossy().ends_with("-values.yaml"))
        .collect();
    files.sort();
    assert!(files.len() >= 4, "ci/ values files: {files:?}");
    std::iter::once(None)
        .chain(files.into_iter().map(Some))
        .collect()
}

/// `helm template` of the chart with `values` (and `--set` pairs): the documents as JSON.
fn render(helm: &Path, values: Option<&Path>, set: &[&str]) -> Result<Vec<Value>, String> {
    let mut cmd = Command::new(helm);
    cmd.current_dir(root())
        .args(["template", "strait", CHART, "--namespace", "kafka"]);
    if let Some(v) = values {
        cmd.arg("-f").arg(v);
    }
    for s in set {
        cmd.args(["--set", s]);
    }
    let (ok, out, err) = run(&mut cmd);
    if !ok {
        return Err(err);
    }
    let mut docs = Vec::new();
    for d in serde_norway::Deserializer::from_str(&out) {
        let v: serde_norway::Value = serde::Deserialize::deserialize(d).expect("rendered YAML");
        if !v.is_null() {
            docs.push(serde_json::to_value(v).expect("YAML as JSON"));
        }
    }
    Ok(docs)
}

fn of_kind<'a>(docs: &'a [Value], kind: &str) -> Vec<&'a Value> {
    docs.iter().filter(|d| d["kind"] == kind).collect()
}

fn one<'a>(docs: &'a [Value], kind: &str) -> &'a Value {
    let found = of_kind(docs, kind);
    assert_eq!(found.len(), 1, "one {kind} expected: {docs:#?}");
    found[0]
}

fn str_list(v: &Value) -> Vec<String> {
    v.as_array()
        .map(|a| {
            a.iter()
                .filter_map(|x| x.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

/// `a` (a label map) contains every label of `b`.
fn labels_match(selector: &Value, labels: &Value) -> bool {
    let (Some(s), Some(l)) = (selector.as_object(), labels.as_object()) else {
        return false;
    };
    !s.is_empty() && s.iter().all(|(k, v)| l.get(k) == Some(v))
}

/// A Kubernetes memory quantity in bytes (`64Mi`, `256M`, plain bytes).
fn quantity_bytes(q: &str) -> u64 {
    let units = [
        ("Ki", 1u64 << 10),
        ("Mi", 1 << 20),
        ("Gi", 1 << 30),
        ("K", 1000),
        ("M", 1_000_000),
        ("G", 1_000_000_000),
    ];
    for (u, m) in units {
        if let Some(n) = q.strip_suffix(u) {
            return n.parse::<u64>().expect("quantity") * m;
        }
    }
    q.parse().expect("quantity")
}

#[test]
fn helm_lint_passes_for_every_values_file() {
    let Some(helm) = tool_or_skip("helm") else {
        return;
    };
    for v in values_files() {
        let mut cmd = Command::new(&helm);
        cmd.current_dir(root()).args(["lint", "--strict", CHART]);
        if let Some(v) = &v {
            cmd.arg("-f").arg(v);
        }
        let (ok, out, err) = run(&mut cmd);
        assert!(ok, "helm lint {v:?}:\n{out}\n{err}");
    }
}

#[test]
fn helm_template_renders_a_deployment_strait_can_run() {
    let Some(helm) = tool_or_skip("helm") else {
        return;
    };
    let env_re = regex::Regex::new(r#"env\s*=\s*"([A-Za-z_][A-Za-z0-9_]*)""#).expect("re");
    let path_re = regex::Regex::new(r#""(/[^"]+)""#).expect("re");
    let mut seen_secret_env = 0;
    let mut seen_secret_mounts = 0;
    for v in values_files() {
        let name = v
            .as_ref()
            .and_then(|p| p.file_name())
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| "default values".into());
        let values: Value = match &v {
            Some(p) => {
                let text = std::fs::read_to_string(p).expect("values file");
                serde_json::to_value(
                    serde_norway::from_str::<serde_norway::Value>(&text).expect("values YAML"),
                )
                .expect("values as JSON")
            }
            None => Value::Null,
        };
        let docs = render(&helm, v.as_deref(), &[]).unwrap_or_else(|e| panic!("{name}: {e}"));

        // The ConfigMap carries strait.toml with the status server on every interface.
        let cm = one(&docs, "ConfigMap");
        let toml_text = cm["data"]["strait.toml"]
            .as_str()
            .unwrap_or_else(|| panic!("{name}: no strait.toml in the ConfigMap"));
        let parsed: toml::Value = toml::from_str(toml_text)
            .unwrap_or_else(|e| panic!("{name}: strait.toml is not TOML: {e}\n{toml_text}"));
        let listen = parsed["http"]["listen"].as_str().expect("[http] listen");
        let port: i64 = listen
            .rsplit_once(':')
            .and_then(|(_, p)| p.parse().ok())
            .expect("listen port");
        assert!(listen.starts_with("0.0.0.0:"), "{name}: {listen}");
        assert_eq!(parsed["http"]["allow_remote"].as_bool(), Some(true));
        assert!(parsed.get("instance_group").is_some(), "{name}");
        assert!(parsed.get("flows").is_some(), "{name}: no flows");

        // The Deployment: replicas, the config reaching `--config`, probes, ports.
        let dep = one(&docs, "Deployment");
        let want_replicas = values["replicaCount"].as_i64().unwrap_or(1);
        assert_eq!(
            dep["spec"]["replicas"].as_i64(),
            Some(want_replicas),
            "{name}"
        );
        let pod = &dep["spec"]["template"]["spec"];
        let pod_labels = &dep["spec"]["template"]["metadata"]["labels"];
        assert!(labels_match(
            &dep["spec"]["selector"]["matchLabels"],
            pod_labels
        ));
        assert!(
            dep["spec"]["template"]["metadata"]["annotations"]["checksum/config"].is_string(),
            "{name}: pods roll when the configuration changes"
        );
        let containers = pod["containers"].as_array().expect("containers");
        assert_eq!(containers.len(), 1);
        let c = &containers[0];
        let args = str_list(&c["args"]);
        let at = args
            .iter()
            .position(|a| a == "--config")
            .unwrap_or_else(|| panic!("{name}: no --config in {args:?}"));
        assert_eq!(args.first().map(String::as_str), Some("run"), "{args:?}");
        assert_eq!(args.get(at + 1).map(String::as_str), Some(CONFIG_PATH));
        let mounts = c["volumeMounts"].as_array().expect("volumeMounts");
        let mount_of = |path: &str| {
            mounts
                .iter()
                .filter(|m| {
                    m["mountPath"].as_str().is_some_and(|mp| {
                        path.starts_with(&format!("{}/", mp.trim_end_matches('/')))
                    })
                })
                .max_by_key(|m| m["mountPath"].as_str().map_or(0, str::len))
                .cloned()
        };
        let config_mount = mount_of(CONFIG_PATH).expect("a mount holding the config");
        let config_key = Path::new(CONFIG_PATH)
            .strip_prefix(config_mount["mountPath"].as_str().expect("mountPath"))
            .expect("config under its mount")
            .to_string_lossy()
            .into_owned();
        assert_eq!(config_key, "strait.toml");
        assert_eq!(config_mount["readOnly"], true);
        let volumes = pod["volumes"].as_array().expect("volumes");
        let volume = |n: &Value| volumes.iter().find(|v| v["name"] == *n).cloned();
        let config_volume = volume(&config_mount["name"]).expect("config volume");
        assert_eq!(config_volume["configMap"]["name"], cm["metadata"]["name"]);

        let ports = c["ports"].as_array().expect("ports");
        assert_eq!(ports.len(), 1);
        assert_eq!(ports[0]["name"], "status");
        assert_eq!(ports[0]["containerPort"].as_i64(), Some(port));
        for (probe, path) in [("livenessProbe", "/health"), ("readinessProbe", "/ready")] {
            let p = &c[probe]["httpGet"];
            assert_eq!(p["path"], path, "{name}: {probe}");
            assert!(
                p["port"] == "status" || p["port"].as_i64() == Some(port),
                "{name}: {probe} on {}",
                p["port"]
            );
        }
        // Liveness must not restart a pod that is only slow to answer.
        assert!(c["livenessProbe"]["failureThreshold"].as_i64().unwrap_or(3) >= 3);

        // Every secret the configuration names comes from the pod: `{ env = "X" }` from an env
        // var filled from a Secret, files (keytabs, stores, `{ file = ... }`) under a mount.
        let env = c["env"].as_array().cloned().unwrap_or_default();
        for cap in env_re.captures_iter(toml_text) {
            let var = &cap[1];
            let e = env
                .iter()
                .find(|e| e["name"] == var)
                .unwrap_or_else(|| panic!("{name}: {var} is named in strait.toml, not set"));
            let secret = &e["valueFrom"]["secretKeyRef"];
            assert!(
                secret["name"].is_string() && secret["key"].is_string(),
                "{name}: {var} not from a Secret: {e}"
            );
            seen_secret_env += 1;
        }
        for cap in path_re.captures_iter(toml_text) {
            let path = &cap[1];
            let m = mount_of(path)
                .unwrap_or_else(|| panic!("{name}: {path} in strait.toml is on no mount"));
            let vol = volume(&m["name"]).expect("volume of a mount");
            if path.starts_with("/etc/strait-secrets/") {
                assert!(vol["secret"]["secretName"].is_string(), "{name}: {vol}");
                assert_eq!(m["readOnly"], true);
                seen_secret_mounts += 1;
            }
        }
        if values["krb5Conf"].is_string() {
            let e = env
                .iter()
                .find(|e| e["name"] == "KRB5_CONFIG")
                .expect("KRB5_CONFIG");
            let path = e["value"].as_str().expect("KRB5_CONFIG path");
            let m = mount_of(path).expect("krb5.conf mount");
            assert_eq!(m["name"], config_mount["name"]);
            assert!(cm["data"]["krb5.conf"].is_string(), "{name}: krb5.conf");
        }

        // Non-root, read-only root filesystem, no privilege.
        let psc = &pod["securityContext"];
        let sc = &c["securityContext"];
        assert_eq!(psc["runAsNonRoot"], true, "{name}");
        assert!(psc["runAsUser"].as_i64().is_some_and(|u| u > 0), "{name}");
        assert_eq!(sc["readOnlyRootFilesystem"], true, "{name}");
        assert_eq!(sc["allowPrivilegeEscalation"], false, "{name}");
        assert_eq!(str_list(&sc["capabilities"]["drop"]), vec!["ALL"], "{name}");
        assert_eq!(pod["automountServiceAccountToken"], false);

        // SIGTERM drains: Produce answers in flight (each up to the request timeout), then the
        // progress records; the grace period leaves room for both.
        let grace = pod["terminationGracePeriodSeconds"]
            .as_i64()
            .expect("terminationGracePeriodSeconds");
        assert!(
            grace >= 2 * REQUEST_TIMEOUT_SECS + 10,
            "{name}: grace period {grace} s does not cover the drain"
        );

        // Resources from measured RSS (29 to 65 MB peak, docs/benchmarks.md).
        let req = c["resources"]["requests"]["memory"]
            .as_str()
            .map(quantity_bytes)
            .expect("memory request");
        let limit = c["resources"]["limits"]["memory"]
            .as_str()
            .map(quantity_bytes)
            .expect("memory limit");
        assert!(
            req >= 32 << 20 && limit >= 2 * (65 << 20) && limit >= req,
            "{name}"
        );

        // PodDisruptionBudget over the same pods; Service to the status port.
        let pdb = one(&docs, "PodDisruptionBudget");
        assert!(labels_match(
            &pdb["spec"]["selector"]["matchLabels"],
            pod_labels
        ));
        assert_eq!(pdb["spec"]["maxUnavailable"].as_i64(), Some(1));
        let svc = one(&docs, "Service");
        assert!(labels_match(&svc["spec"]["selector"], pod_labels));
        let sp = &svc["spec"]["ports"][0];
        assert_eq!(
            (sp["name"].as_str(), sp["port"].as_i64()),
            (Some("status"), Some(port))
        );
        assert_eq!(sp["targetPort"], "status");

        let monitors = of_kind(&docs, "ServiceMonitor");
        if values["serviceMonitor"]["enabled"] == true {
            assert_eq!(monitors.len(), 1, "{name}");
            let ep = &monitors[0]["spec"]["endpoints"][0];
            assert_eq!(
                (ep["port"].as_str(), ep["path"].as_str()),
                (Some("status"), Some("/metrics"))
            );
            assert!(labels_match(
                &monitors[0]["spec"]["selector"]["matchLabels"],
                &svc["metadata"]["labels"]
            ));
        } else {
            assert!(monitors.is_empty(), "{name}");
        }

        // Configurations without secrets load in strait itself, as the pod would load them.
        if env_re.find(toml_text).is_none() && path_re.find(toml_text).is_none() {
            let dir = std::env::temp_dir().join(topic_name("helm-config"));
            std::fs::create_dir_all(&dir).expect("dir");
            let file = dir.join("strait.toml");
            std::fs::write(&file, toml_text).expect("write strait.toml");
            let cfg = strait::config::load(&file)
                .unwrap_or_else(|e| panic!("{name}: strait refuses the rendered config: {e}"));
            assert!(!cfg.flows.is_empty());
            let _ = std::fs::remove_dir_all(&dir);
        }
    }
    assert!(
        seen_secret_env >= 3,
        "SCRAM, OIDC and store passwords from Secrets"
    );
    assert!(
        seen_secret_mounts >= 3,
        "keytab and stores mounted from Secrets"
    );

    // What the chart writes itself cannot be set twice in the configuration.
    let dir = std::env::temp_dir().join(topic_name("helm-values"));
    std::fs::create_dir_all(&dir).expect("dir");
    let bad = dir.join("http-in-config.yaml");
    std::fs::write(&bad, "config: |\n  http = \"0.0.0.0:9\"\n").expect("values");
    let err = render(&helm, Some(&bad), &[]).expect_err("refused");
    let _ = std::fs::remove_dir_all(&dir);
    assert!(err.contains("leave out `http`"), "{err}");
    // Replica count from the command line, as `helm upgrade --set replicaCount=5` does.
    let docs = render(&helm, None, &["replicaCount=5"]).expect("render");
    assert_eq!(
        one(&docs, "Deployment")["spec"]["replicas"].as_i64(),
        Some(5)
    );
}

#[test]
fn promtool_checks_and_tests_the_alert_rules() {
    let Some(promtool) = tool_or_skip("promtool") else {
        return;
    };
    let dir = root().join("deploy/prometheus");
    let (ok, out, err) =
        run(Command::new(&promtool)
            .current_dir(&dir)
            .args(["check", "rules", "strait-rules.yml"]));
    assert!(ok, "promtool check rules:\n{out}\n{err}");
    let (ok, out, err) = run(Command::new(&promtool).current_dir(&dir).args([
        "test",
        "rules",
        "strait-rules.test.yml",
    ]));
    assert!(ok, "promtool test rules:\n{out}\n{err}");
}

/// Every alert has a runbook and a severity; the test file exercises every alert, each both
/// firing and not firing.
#[test]
fn every_alert_has_a_runbook_and_tests_both_ways() {
    let read = |p: &str| -> Value {
        let text = std::fs::read_to_string(root().join(p)).expect("rules file");
        serde_json::to_value(serde_norway::from_str::<serde_norway::Value>(&text).expect("YAML"))
            .expect("as JSON")
    };
    let rules = read("deploy/prometheus/strait-rules.yml");
    let tests = read("deploy/prometheus/strait-rules.test.yml");
    let mut alerts = BTreeSet::new();
    for g in rules["groups"].as_array().expect("groups") {
        for r in g["rules"].as_array().expect("rules") {
            let a = r["alert"].as_str().expect("alert rules only").to_string();
            assert!(
                r["annotations"]["runbook"]
                    .as_str()
                    .is_some_and(|s| s.contains("docs/deploy.md#")),
                "{a}: runbook"
            );
            assert!(r["labels"]["severity"].is_string(), "{a}: severity");
            alerts.insert(a);
        }
    }
    for want in [
        "StraitFlowDisconnected",
        "StraitPartitionStopped",
        "StraitLagGrowing",
        "StraitCheckpointsStale",
        "StraitReplicationLatencyHigh",
        "StraitFewerInstancesThanExpected",
        "StraitFlowPaused",
    ] {
        assert!(alerts.contains(want), "{want} missing");
    }
    let mut fired: BTreeMap<String, (bool, bool)> = BTreeMap::new();
    for t in tests["tests"].as_array().expect("tests") {
        for a in t["alert_rule_test"].as_array().expect("alert_rule_test") {
            let name = a["alertname"].as_str().expect("alertname").to_string();
            let e = fired.entry(name).or_default();
            match a["exp_alerts"].as_array().map(Vec::len) {
                Some(0) | None => e.1 = true,
                Some(_) => e.0 = true,
            }
        }
    }
    for a in &alerts {
        assert_eq!(
            fired.get(a),
            Some(&(true, true)),
            "{a}: fires and stays quiet"
        );
    }
    let runbooks = std::fs::read_to_string(root().join("docs/deploy.md")).expect("deploy.md");
    for a in &alerts {
        assert!(
            runbooks.contains(&format!("### {a}")),
            "docs/deploy.md has no runbook section for {a}"
        );
    }
}

/// Series names (`strait_...`, `process_...`) in PromQL expressions found in `v`: the values
/// of `expr`, `query` and `definition` keys, anywhere.
fn series_in(v: &Value, out: &mut BTreeSet<String>) {
    let re = regex::Regex::new(r"\b((?:strait|process)_[a-z_]+)\b").expect("re");
    match v {
        Value::Object(m) => {
            for (k, x) in m {
                match (k.as_str(), x) {
                    ("expr" | "query" | "definition", Value::String(s)) => {
                        out.extend(re.captures_iter(s).map(|c| c[1].to_string()));
                    }
                    _ => series_in(x, out),
                }
            }
        }
        Value::Array(a) => a.iter().for_each(|x| series_in(x, out)),
        _ => {}
    }
}

/// The metric families of a Prometheus exposition: name to type, and the names with samples.
fn families(text: &str) -> (BTreeMap<String, String>, BTreeSet<String>) {
    let mut types = BTreeMap::new();
    let mut sampled = BTreeSet::new();
    for l in text.lines() {
        if let Some(rest) = l.strip_prefix("# TYPE ") {
            let mut it = rest.split_whitespace();
            if let (Some(n), Some(t)) = (it.next(), it.next()) {
                types.insert(n.to_string(), t.to_string());
            }
        } else if !l.starts_with('#') && !l.is_empty() {
            let name = l.split(['{', ' ']).next().unwrap_or_default();
            sampled.insert(name.to_string());
        }
    }
    (types, sampled)
}

/// The family a series name belongs to, and whether `name` is a valid series of it.
fn family_of<'a>(name: &'a str, types: &BTreeMap<String, String>) -> Option<&'a str> {
    if types.contains_key(name) {
        return (types[name] != "histogram").then_some(name);
    }
    for suffix in ["_bucket", "_sum", "_count"] {
        if let Some(base) = name.strip_suffix(suffix) {
            if types.get(base).map(String::as_str) == Some("histogram") {
                return Some(base);
            }
        }
    }
    None
}

/// Commits offsets for `group` with rdkafka, as a consumer of the group would.
fn commit(bootstrap: &str, group: &str, offsets: &[(&str, i32, i64)]) {
    use rdkafka::consumer::{BaseConsumer, CommitMode, Consumer};
    let c: BaseConsumer = rdkafka::ClientConfig::new()
        .set("bootstrap.servers", bootstrap)
        .set("group.id", group)
        .set("enable.auto.commit", "false")
        .create()
        .expect("consumer");
    let mut tpl = rdkafka::TopicPartitionList::new();
    for (t, p, o) in offsets {
        tpl.add_partition_offset(t, *p, rdkafka::Offset::Offset(*o))
            .expect("tpl");
    }
    c.commit(&tpl, CommitMode::Sync).expect("commit");
}

#[test]
fn dashboard_and_alerts_name_only_series_a_running_strait_exposes() {
    let mut wanted = BTreeSet::new();
    let dash: Value = serde_json::from_str(
        &std::fs::read_to_string(root().join("deploy/grafana/strait.json")).expect("dashboard"),
    )
    .expect("dashboard JSON");
    series_in(&dash, &mut wanted);
    let rules_text =
        std::fs::read_to_string(root().join("deploy/prometheus/strait-rules.yml")).expect("rules");
    let rules = serde_json::to_value(
        serde_norway::from_str::<serde_norway::Value>(&rules_text).expect("rules YAML"),
    )
    .expect("as JSON");
    series_in(&rules, &mut wanted);
    assert!(wanted.len() >= 15, "{wanted:?}");

    // A running strait replicating records (so histograms have samples), checkpoints and
    // heartbeats every second.
    let a = Broker::start("a");
    let b = Broker::start("b");
    create_topic(&a.bootstrap(), "orders", 2);
    let dir = std::env::temp_dir().join(topic_name("deploy-metrics"));
    std::fs::create_dir_all(&dir).expect("dir");
    let port = free_port();
    let config = dir.join("flow.toml");
    std::fs::write(
        &config,
        format!(
            "http = \"127.0.0.1:{port}\"\n\
             [clusters.a]\nbootstrap_servers = \"{}\"\n[clusters.b]\nbootstrap_servers = \"{}\"\n\
             [[flows]]\nsource = \"a\"\ntarget = \"b\"\ntopics = [\"orders\"]\ngroups = [\".*\"]\n\
             refresh_topics_interval_secs = 1\nheartbeat_interval_secs = 1\ncheckpoint_interval_secs = 1\n",
            a.bootstrap(),
            b.bootstrap(),
        ),
    )
    .expect("config");
    let strait = StraitRun::start(&config, &dir.join("strait.log"));
    wait_until("/ready = 200", Duration::from_secs(60), &strait, || {
        status_get(port, "/ready").is_some_and(|(c, _)| c == 200)
    });
    let records: Vec<TestRecord> = (0..50)
        .map(|i| TestRecord {
            key: Some(format!("k{i}").into_bytes()),
            value: Some(format!("order {i}").into_bytes()),
            headers: Vec::new(),
            partition: Some(i % 2),
            timestamp: None,
        })
        .collect();
    produce_records(&a.bootstrap(), "orders", &records, Codec::None);
    // A consumer group with offsets on the source: checkpoint passes have work (a pass with no
    // group selected records nothing).
    commit(
        &a.bootstrap(),
        "billing",
        &[("orders", 0, 10), ("orders", 1, 10)],
    );
    // The series that appear once strait has done its work: replicated, checkpointed, beat.
    let after_work = [
        "strait_replication_records_total",
        "strait_replication_bytes_total",
        "strait_replication_latency_seconds_bucket",
        "strait_record_age_seconds_bucket",
        "strait_heartbeat_latency_seconds_bucket",
        "strait_partition_lag_records",
        "strait_checkpoint_latency_seconds_count",
        "strait_request_latency_seconds_bucket",
        "strait_buffered_bytes",
        "strait_flow_connected",
        "process_resident_memory_bytes",
    ];
    let mut text = String::new();
    wait_until(
        "records replicated, checkpoints and heartbeats in /metrics",
        Duration::from_secs(60),
        &strait,
        || {
            text = status_get(port, "/metrics")
                .map(|(_, b)| b)
                .unwrap_or_default();
            let (_, sampled) = families(&text);
            text.contains("strait_replication_records_total{")
                && after_work.iter().all(|s| sampled.contains(*s))
        },
    );
    let (types, sampled) = families(&text);
    let docs = std::fs::read_to_string(root().join("docs/operations.md")).expect("operations.md");
    let mut unsampled = Vec::new();
    for name in &wanted {
        let family = family_of(name, &types).unwrap_or_else(|| {
            panic!("{name} (dashboard or alert rules) is not exposed by strait:\n{text}")
        });
        assert!(
            docs.contains(&format!("`{family}`")),
            "{family} is not in docs/operations.md's metrics table"
        );
        if !sampled.contains(name.as_str()) {
            unsampled.push(name.clone());
        }
    }
    // Families that only get series on an event (an error, a retry, a record lost, a stopped
    // partition, recompress) are declared (HELP/TYPE) from the start, checked above.
    eprintln!("declared, no sample in this run (event-driven): {unsampled:?}");
    for s in after_work {
        assert!(!unsampled.iter().any(|u| u == s), "{s} has no sample");
    }
    drop(strait);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn the_systemd_unit_is_hardened_and_verifies() {
    let path = root().join("deploy/systemd/strait.service");
    let unit = std::fs::read_to_string(&path).expect("unit");
    let keys: BTreeMap<&str, Vec<&str>> = unit
        .lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| l.split_once('='))
        .fold(BTreeMap::new(), |mut m, (k, v)| {
            m.entry(k.trim()).or_insert_with(Vec::new).push(v.trim());
            m
        });
    let get = |k: &str| keys.get(k).and_then(|v| v.last()).copied();
    for (k, v) in [
        ("DynamicUser", "yes"),
        ("ProtectSystem", "strict"),
        ("NoNewPrivileges", "yes"),
        ("CapabilityBoundingSet", ""),
        ("Restart", "on-failure"),
        ("ReadOnlyPaths", "/etc/strait"),
        ("ProtectHome", "yes"),
        ("PrivateTmp", "yes"),
    ] {
        assert_eq!(get(k), Some(v), "{k}");
    }
    assert!(get("RestrictAddressFamilies").is_some_and(|v| !v.contains("AF_PACKET")));
    let exec = get("ExecStart").expect("ExecStart");
    assert!(
        exec.contains(&format!("run --config {CONFIG_PATH}")),
        "{exec}"
    );
    let stop = get("TimeoutStopSec")
        .and_then(|v| v.trim_end_matches('s').parse::<i64>().ok())
        .expect("TimeoutStopSec in seconds");
    assert!(
        stop >= 2 * REQUEST_TIMEOUT_SECS + 10,
        "TimeoutStopSec {stop}"
    );
    let max = get("MemoryMax").expect("MemoryMax");
    assert!(
        quantity_bytes(&max.replace('M', "Mi")) >= 2 * (65 << 20),
        "{max}"
    );

    let Some(analyze) = tool("systemd-analyze") else {
        eprintln!("SKIPPED: systemd-analyze verify/security (systemd-analyze is not installed)");
        return;
    };
    // verify needs the binary to exist: the one this test run built stands in for
    // /usr/local/bin/strait.
    let dir = std::env::temp_dir().join(topic_name("systemd"));
    std::fs::create_dir_all(&dir).expect("dir");
    let copy = dir.join("strait.service");
    std::fs::write(
        &copy,
        unit.replace("/usr/local/bin/strait", env!("CARGO_BIN_EXE_strait")),
    )
    .expect("unit copy");
    let (ok, out, err) = run(Command::new(&analyze).arg("verify").arg(&copy));
    assert!(
        ok && err.trim().is_empty(),
        "systemd-analyze verify:\n{out}\n{err}"
    );
    // The exposure score systemd gives it: at most 2.0 ("OK"; 10 is fully exposed).
    let (ok, out, err) = run(Command::new(&analyze)
        .args(["security", "--offline=yes", "--threshold=20"])
        .arg(&copy));
    assert!(ok, "systemd-analyze security:\n{out}\n{err}");
    let _ = std::fs::remove_dir_all(&dir);
}
