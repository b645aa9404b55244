//! The OAUTHBEARER messages (RFC 7628 §3.1), sans-io: the client's initial response carrying
//! the token and the SASL extensions, the checks Kafka applies to extension names and values,
//! and the broker's error challenge.

/// The separator between key-value pairs (`%x01`).
pub(crate) const SEPARATOR: u8 = 0x01;

/// The client's initial response: `n,,` `%x01` `auth=Bearer <token>` then `%x01<key>=<value>`
/// for each extension, closed by `%x01%x01`. The authorization id is left empty, as Kafka's
/// clients leave it.
pub fn client_first(token: &str, extensions: &[(String, String)]) -> Vec<u8> {
    let mut out = Vec::with_capacity(token.len() + 32);
    out.extend_from_slice(b"n,,");
    out.push(SEPARATOR);
    out.extend_from_slice(b"auth=Bearer ");
    out.extend_from_slice(token.as_bytes());
    for (k, v) in extensions {
        out.push(SEPARATOR);
        out.extend_from_slice(k.as_bytes());
        out.push(b'=');
        out.extend_from_slice(v.as_bytes());
    }
    out.push(SEPARATOR);
    out.push(SEPARATOR);
    out
}

/// The message a client sends after the broker's error challenge, so that the broker ends
/// the exchange with its error (RFC 7628 §3.2.3).
pub(crate) fn after_failure() -> Vec<u8> {
    vec![SEPARATOR]
}

/// Checks a SASL extension as Kafka does: the name is ASCII letters and not `auth`; the value
/// is printable ASCII, space, tab, CR or LF, and not empty. The problem never quotes the value.
pub fn check_extension(name: &str, value: &str) -> Result<(), String> {
    if name.is_empty() || !name.bytes().all(|b| b.is_ascii_alphabetic()) {
        return Err(format!(
            "extension name `{name}` is invalid (ASCII letters only)"
        ));
    }
    if name == "auth" {
        return Err("extension name `auth` is reserved".to_string());
    }
    let ok = |b: u8| (0x21..=0x7e).contains(&b) || matches!(b, b' ' | b'\t' | b'\r' | b'\n');
    if value.is_empty() || !value.bytes().all(ok) {
        return Err(format!(
            "the value of extension `{name}` is invalid (printable ASCII, not empty)"
        ));
    }
    Ok(())
}

/// Describes the broker's error challenge (a JSON object with `status`, and perhaps `scope`
/// and `openid-configuration`), for an error line. Unknown text is shown cut to 200 bytes.
pub(crate) fn describe_server_error(challenge: &[u8]) -> String {
    match serde_json::from_slice::<serde_json::Value>(challenge) {
        Ok(serde_json::Value::Object(m)) => {
            let mut parts = Vec::new();
            for key in ["status", "scope", "openid-configuration"] {
                if let Some(v) = m.get(key).and_then(|v| v.as_str()) {
                    parts.push(format!("{key} {v}"));
                }
            }
            if parts.is_empty() {
                "the broker rejected the token".to_string()
            } else {
                format!("the broker rejected the token ({})", parts.join(", "))
            }
        }
        _ => {
            let text = String::from_utf8_lossy(&challenge[..challenge.len().min(200)]);
            format!("the broker rejected the token ({})", text.trim())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn initial_response_as_kafka_parses_it() {
        assert_eq!(
            client_first("a.b.c", &[]),
            b"n,,\x01auth=Bearer a.b.c\x01\x01"
        );
        let ext = vec![
            ("logicalCluster".to_string(), "lkc-123".to_string()),
            ("identityPoolId".to_string(), "pool-9".to_string()),
        ];
        assert_eq!(
            client_first("t", &ext),
            b"n,,\x01auth=Bearer t\x01logicalCluster=lkc-123\x01identityPoolId=pool-9\x01\x01"
        );
    }

    #[test]
    fn extensions_follow_kafkas_rules() {
        assert!(check_extension("logicalCluster", "lkc-1").is_ok());
        assert!(check_extension("auth", "x").is_err());
        assert!(check_extension("logical_cluster", "x").is_err());
        assert!(check_extension("a1", "x").is_err());
        assert!(check_extension("a", "").is_err());
        let e = check_extension("a", "s\u{1}cret").unwrap_err();
        assert!(!e.contains("cret"), "{e}");
    }

    #[test]
    fn server_errors_are_described() {
        assert_eq!(
            describe_server_error(br#"{"status":"invalid_token"}"#),
            "the broker rejected the token (status invalid_token)"
        );
        assert_eq!(
            describe_server_error(br#"{"status":"insufficient_scope","scope":"kafka"}"#),
            "the broker rejected the token (status insufficient_scope, scope kafka)"
        );
        assert_eq!(
            describe_server_error(b"nope"),
            "the broker rejected the token (nope)"
        );
    }
}
