//! Secrets from the configuration: passwords and tokens, kept out of logs and messages.
//!
//! A [`Secret`] is resolved when the configuration is loaded, from one of:
//! - an environment variable: TOML `{ env = "A_PASSWORD" }`, mm2.properties `${env:A_PASSWORD}`
//!   (Kafka's `EnvVarConfigProvider`);
//! - a file, whole (trailing line break dropped): TOML `{ file = "/run/secrets/a" }`,
//!   mm2.properties `${file:/run/secrets/a}`;
//! - a key of a Java properties file: mm2.properties `${file:/etc/kafka/secrets.properties:key}`
//!   (Kafka's `FileConfigProvider`), TOML `{ file = "...", key = "..." }`;
//! - a literal in the file (accepted, with a warning at start-up).
//!
//! `Debug` and `Display` print `***`; only [`Secret::expose`] gives the value. Errors name the
//! setting and the variable or file, never the value.

use std::fmt;
use std::path::{Path, PathBuf};

/// Largest secret file read.
pub(crate) const MAX_SECRET_FILE: u64 = 1024 * 1024;

/// Where a secret came from.
#[derive(Clone, PartialEq, Eq)]
pub enum SecretSource {
    /// Written in the configuration file itself.
    Literal,
    /// An environment variable.
    Env(String),
    /// A whole file.
    File(PathBuf),
    /// A key of a Java properties file.
    FileKey(PathBuf, String),
}

impl fmt::Debug for SecretSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.describe())
    }
}

impl SecretSource {
    /// Where the value lives, for messages (never the value).
    pub fn describe(&self) -> String {
        match self {
            SecretSource::Literal => "the configuration file (in clear)".to_string(),
            SecretSource::Env(v) => format!("environment variable {v}"),
            SecretSource::File(p) => format!("file {}", p.display()),
            SecretSource::FileKey(p, k) => format!("key `{k}` of file {}", p.display()),
        }
    }
}

/// A secret value. Prints as `***`.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret {
    value: String,
    source: SecretSource,
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("***")
    }
}

impl fmt::Display for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("***")
    }
}

impl Secret {
    /// A secret written in the configuration file.
    pub fn literal(value: &str) -> Secret {
        Secret {
            value: value.to_string(),
            source: SecretSource::Literal,
        }
    }

    /// The value. Never log or format it.
    pub fn expose(&self) -> &str {
        &self.value
    }

    /// Where it came from.
    pub fn source(&self) -> &SecretSource {
        &self.source
    }

    /// Reads an environment variable.
    pub fn from_env(var: &str) -> Result<Secret, String> {
        match std::env::var(var) {
            Ok(v) if v.is_empty() => Err(format!("environment variable {var} is empty")),
            Ok(v) => Ok(Secret {
                value: v,
                source: SecretSource::Env(var.to_string()),
            }),
            Err(std::env::VarError::NotPresent) => {
                Err(format!("environment variable {var} is not set"))
            }
            Err(std::env::VarError::NotUnicode(_)) => {
                Err(format!("environment variable {var} is not valid UTF-8"))
            }
        }
    }

    /// Reads a whole file; one trailing line break is dropped.
    pub fn from_file(path: &Path) -> Result<Secret, String> {
        let text = read_small(path)?;
        let value = text
            .strip_suffix("\r\n")
            .or_else(|| text.strip_suffix('\n'))
            .unwrap_or(&text)
            .to_string();
        if value.is_empty() {
            return Err(format!("secret file {} is empty", path.display()));
        }
        Ok(Secret {
            value,
            source: SecretSource::File(path.to_path_buf()),
        })
    }

    /// Reads `key` from a Java properties file (Kafka's `FileConfigProvider`).
    pub fn from_properties_file(path: &Path, key: &str) -> Result<Secret, String> {
        let text = read_small(path)?;
        let props = crate::config::parse_properties_pairs(&text).map_err(|line| {
            format!(
                "secret file {} is not a valid properties file (line {line})",
                path.display()
            )
        })?;
        let value = props
            .into_iter()
            .rev()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v)
            .ok_or_else(|| format!("key `{key}` not found in secret file {}", path.display()))?;
        Ok(Secret {
            value,
            source: SecretSource::FileKey(path.to_path_buf(), key.to_string()),
        })
    }

    /// Resolves Kafka config-provider syntax: a value that is exactly one `${env:VAR}`,
    /// `${file:PATH}` or `${file:PATH:KEY}` reference, or a literal without `${`.
    /// `providers` maps provider names to their kind (`file` and `env` are always known).
    pub fn from_mm2_value(
        value: &str,
        providers: &[(String, ProviderKind)],
    ) -> Result<Secret, String> {
        match parse_reference(value) {
            None if value.contains("${") => Err(
                "a `${...}` reference must be the whole value: `${env:VAR}`, `${file:PATH}` or `${file:PATH:KEY}`"
                    .to_string(),
            ),
            None => Ok(Secret::literal(value)),
            Some((provider, rest)) => {
                let kind = provider_kind(provider, providers).ok_or_else(|| {
                    format!("unknown config provider `{provider}` (known: file, env, and those declared in config.providers)")
                })?;
                match kind {
                    ProviderKind::Env => Secret::from_env(rest),
                    ProviderKind::File => match rest.rsplit_once(':') {
                        Some((path, key)) if !path.is_empty() && !key.is_empty() && !key.contains('/') => {
                            Secret::from_properties_file(Path::new(path), key)
                        }
                        _ => Secret::from_file(Path::new(rest)),
                    },
                }
            }
        }
    }
}

/// Kinds of Kafka config providers strait resolves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProviderKind {
    /// `org.apache.kafka.common.config.provider.FileConfigProvider`.
    File,
    /// `org.apache.kafka.common.config.provider.EnvVarConfigProvider`.
    Env,
}

impl ProviderKind {
    /// The kind implemented by a Java provider class, if strait knows it.
    pub fn from_class(class: &str) -> Option<ProviderKind> {
        match class.trim() {
            "org.apache.kafka.common.config.provider.FileConfigProvider" => {
                Some(ProviderKind::File)
            }
            "org.apache.kafka.common.config.provider.EnvVarConfigProvider" => {
                Some(ProviderKind::Env)
            }
            _ => None,
        }
    }
}

fn provider_kind(name: &str, declared: &[(String, ProviderKind)]) -> Option<ProviderKind> {
    declared
        .iter()
        .find(|(n, _)| n == name)
        .map(|(_, k)| *k)
        .or(match name {
            "file" => Some(ProviderKind::File),
            "env" => Some(ProviderKind::Env),
            _ => None,
        })
}

/// `${provider:rest}` filling the whole (trimmed) value → `(provider, rest)`.
pub(crate) fn parse_reference(value: &str) -> Option<(&str, &str)> {
    let inner = value.trim().strip_prefix("${")?.strip_suffix('}')?;
    if inner.contains("${") || inner.contains('}') {
        return None;
    }
    let (provider, rest) = inner.split_once(':')?;
    (!provider.is_empty() && !rest.is_empty()).then_some((provider, rest))
}

fn read_small(path: &Path) -> Result<String, String> {
    let meta = std::fs::metadata(path)
        .map_err(|e| format!("cannot read secret file {}: {}", path.display(), e.kind()))?;
    if meta.len() > MAX_SECRET_FILE {
        return Err(format!(
            "secret file {} is larger than {MAX_SECRET_FILE} bytes",
            path.display()
        ));
    }
    let bytes = std::fs::read(path)
        .map_err(|e| format!("cannot read secret file {}: {}", path.display(), e.kind()))?;
    String::from_utf8(bytes).map_err(|_| format!("secret file {} is not UTF-8", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temp(name: &str, text: &str) -> PathBuf {
        let p = std::env::temp_dir().join(format!("strait-secret-{}-{name}", std::process::id()));
        std::fs::write(&p, text).unwrap();
        p
    }

    #[test]
    fn prints_redacted() {
        let s = Secret::literal("hunter2");
        assert_eq!(format!("{s}"), "***");
        assert_eq!(format!("{s:?}"), "***");
        assert_eq!(format!("{:?}", Some(&s)), "Some(***)");
        assert_eq!(s.expose(), "hunter2");
    }

    #[test]
    fn env_and_errors_name_the_variable() {
        std::env::set_var("STRAIT_TEST_SECRET_A", "s3cret-a");
        let s = Secret::from_env("STRAIT_TEST_SECRET_A").unwrap();
        assert_eq!(s.expose(), "s3cret-a");
        assert_eq!(
            s.source(),
            &SecretSource::Env("STRAIT_TEST_SECRET_A".into())
        );
        let e = Secret::from_env("STRAIT_TEST_SECRET_UNSET_X").unwrap_err();
        assert_eq!(
            e,
            "environment variable STRAIT_TEST_SECRET_UNSET_X is not set"
        );
    }

    #[test]
    fn whole_file_drops_one_line_break() {
        let p = temp("whole", "pa ss\n");
        assert_eq!(Secret::from_file(&p).unwrap().expose(), "pa ss");
        let p = temp("crlf", "x\r\n");
        assert_eq!(Secret::from_file(&p).unwrap().expose(), "x");
        let e = Secret::from_file(Path::new("/nonexistent/strait/secret")).unwrap_err();
        assert!(e.contains("/nonexistent/strait/secret"), "{e}");
    }

    #[test]
    fn mm2_references() {
        let props = temp("props", "# c\nuser = alice\npassword = top=secret\n");
        let v = format!("${{file:{}:password}}", props.display());
        let s = Secret::from_mm2_value(&v, &[]).unwrap();
        assert_eq!(s.expose(), "top=secret");
        assert_eq!(
            s.source(),
            &SecretSource::FileKey(props.clone(), "password".into())
        );
        let e = Secret::from_mm2_value(&format!("${{file:{}:nokey}}", props.display()), &[])
            .unwrap_err();
        assert!(e.contains("nokey") && !e.contains("top=secret"), "{e}");

        let whole = temp("whole2", "abc\n");
        let s = Secret::from_mm2_value(&format!("${{file:{}}}", whole.display()), &[]).unwrap();
        assert_eq!(s.expose(), "abc");

        std::env::set_var("STRAIT_TEST_SECRET_B", "bee");
        assert_eq!(
            Secret::from_mm2_value("${env:STRAIT_TEST_SECRET_B}", &[])
                .unwrap()
                .expose(),
            "bee"
        );
        let declared = [("vault".to_string(), ProviderKind::Env)];
        assert_eq!(
            Secret::from_mm2_value("${vault:STRAIT_TEST_SECRET_B}", &declared)
                .unwrap()
                .expose(),
            "bee"
        );
        assert!(Secret::from_mm2_value("${nope:x}", &[]).is_err());
        assert!(Secret::from_mm2_value("pre${env:X}", &[]).is_err());
        assert_eq!(
            Secret::from_mm2_value("plain", &[]).unwrap().source(),
            &SecretSource::Literal
        );
    }
}
