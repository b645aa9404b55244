//! Helpers shared by the configuration's unit tests: two-cluster bases in each format, parsing
//! that expects success or an error, an assertion on an error's file, key, problem and allowed
//! values, and temporary files.

use super::{parse_mm2, parse_toml, Config, ConfigError};

/// Two clusters, `a` and `b`, in TOML.
pub(super) const TWO: &str = r#"
[clusters.a]
bootstrap_servers = ["127.0.0.1:9092"]
[clusters.b]
bootstrap_servers = "127.0.0.1:9093"
"#;

/// Parses `extra` followed by [`TWO`] as `test.toml`.
pub(super) fn toml_with(extra: &str) -> Result<Config, ConfigError> {
    // Extra text first: top-level keys must precede the first table header.
    parse_toml(&format!("{extra}\n{TWO}"), "test.toml")
}

/// The error of [`toml_with`].
pub(super) fn toml_err(extra: &str) -> ConfigError {
    match toml_with(extra) {
        Ok(c) => panic!("expected an error, got {c:?}"),
        Err(e) => e,
    }
}

/// The error of parsing `text` as `mm2.properties`.
pub(super) fn mm2_err(text: &str) -> ConfigError {
    match parse_mm2(text, "mm2.properties") {
        Ok(c) => panic!("expected an error, got {c:?}"),
        Err(e) => e,
    }
}

/// Asserts the error names the file, the key, and (when given) the allowed values.
pub(super) fn check(
    e: &ConfigError,
    origin: &str,
    key: &str,
    problem: &str,
    allowed: Option<&str>,
) {
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

/// Two clusters, `a` and `b`, in MM2 properties.
pub(super) const MM2_BASE: &str =
    "clusters = a, b\na.bootstrap.servers = h1:9092\nb.bootstrap.servers = h2:9092\n";

/// Parses [`MM2_BASE`] followed by `extra`.
pub(super) fn mm2_with(extra: &str) -> Config {
    match parse_mm2(&format!("{MM2_BASE}{extra}"), "mm2.properties") {
        Ok(c) => c,
        Err(e) => panic!("{e}"),
    }
}

/// Writes `text` to a temporary file named after `name` and this process.
pub(super) fn temp_file(name: &str, text: &str) -> std::path::PathBuf {
    let p = std::env::temp_dir().join(format!("strait-config-{}-{name}", std::process::id()));
    std::fs::write(&p, text).unwrap();
    p
}
