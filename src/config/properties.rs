//! Java properties files (the syntax of `mm2.properties`, and of the files secrets are read from
//! by key) with line continuations and escapes, the last-value-wins view MM2 takes of them
//! ([`Props`]), and JAAS lines (`sasl.jaas.config`).

use std::collections::HashMap;

use super::error::Where;

/// Parses Java properties text into `(key, value)` pairs in file order; `Err(line)` on a
/// syntax error (the message is left out: it could quote a secret).
pub fn parse_properties_pairs(text: &str) -> Result<Vec<(String, String)>, usize> {
    parse_properties(text)
        .map(|props| props.into_iter().map(|p| (p.key, p.value)).collect())
        .map_err(|(line, _)| line)
}

/// One `key=value` entry of a properties file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Prop {
    /// The key, unescaped and trimmed.
    key: String,
    /// The value, unescaped and trimmed.
    value: String,
    /// 1-based line where the entry starts.
    line: usize,
}

/// Java properties whitespace: space, tab, form feed.
fn is_prop_ws(c: char) -> bool {
    c == ' ' || c == '\t' || c == '\x0c'
}

/// Splits into physical lines at `\n`, `\r\n` or `\r`, as Java does.
fn physical_lines(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let bytes = text.as_bytes();
    let mut start = 0;
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'\n' => {
                out.push(&text[start..i]);
                start = i + 1;
            }
            b'\r' => {
                out.push(&text[start..i]);
                if bytes.get(i + 1) == Some(&b'\n') {
                    i += 1;
                }
                start = i + 1;
            }
            _ => {}
        }
        i += 1;
    }
    if start < text.len() {
        out.push(&text[start..]);
    }
    out
}

/// Whether a line ends in an unescaped `\` (it continues on the next line).
fn ends_with_odd_backslashes(s: &str) -> bool {
    s.chars().rev().take_while(|c| *c == '\\').count() % 2 == 1
}

/// Resolves Java properties escapes: `\t \n \r \f \uXXXX`, and `\x` → `x` for any other `x`.
fn unescape(s: &str) -> Result<String, String> {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            None => {}
            Some('t') => out.push('\t'),
            Some('n') => out.push('\n'),
            Some('r') => out.push('\r'),
            Some('f') => out.push('\x0c'),
            Some('u') => {
                let hex: String = chars.by_ref().take(4).collect();
                let code = (hex.len() == 4)
                    .then(|| u32::from_str_radix(&hex, 16).ok())
                    .flatten()
                    .ok_or_else(|| "malformed \\uXXXX escape".to_string())?;
                // Surrogates (a pair encodes one character in Java) are kept as U+FFFD.
                out.push(char::from_u32(code).unwrap_or('\u{fffd}'));
            }
            Some(other) => out.push(other),
        }
    }
    Ok(out)
}

/// Parses Java properties text into entries in file order; `Err((line, message))` on a syntax
/// error.
pub(super) fn parse_properties(text: &str) -> Result<Vec<Prop>, (usize, String)> {
    let lines = physical_lines(text);
    let mut props = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let line_no = i + 1;
        let first = lines[i].trim_start_matches(is_prop_ws);
        i += 1;
        if first.is_empty() || first.starts_with('#') || first.starts_with('!') {
            continue;
        }
        let logical = logical_line(first, &lines, &mut i);
        let (raw_key, rest) = split_entry(&logical);
        let key = unescape(raw_key).map_err(|e| (line_no, e))?;
        let value = unescape(rest).map_err(|e| (line_no, e))?;
        props.push(Prop {
            key: key.trim().to_string(),
            value: value.trim().to_string(),
            line: line_no,
        });
    }
    Ok(props)
}

/// Joins `first` with the physical lines it continues onto (from `lines[*next]`, advancing
/// `next`), dropping each continuation backslash and the next line's leading whitespace.
fn logical_line(first: &str, lines: &[&str], next: &mut usize) -> String {
    let mut logical = first.to_string();
    while ends_with_odd_backslashes(&logical) {
        logical.pop();
        match lines.get(*next) {
            Some(line) => {
                logical.push_str(line.trim_start_matches(is_prop_ws));
                *next += 1;
            }
            None => break,
        }
    }
    logical
}

/// Splits a logical line into its raw key and raw value: the key ends at the first unescaped
/// `=`, `:` or whitespace, which (with whitespace around it) is dropped.
fn split_entry(logical: &str) -> (&str, &str) {
    let mut key_end = logical.len();
    let mut escaped = false;
    for (pos, c) in logical.char_indices() {
        if escaped {
            escaped = false;
        } else if c == '\\' {
            escaped = true;
        } else if c == '=' || c == ':' || is_prop_ws(c) {
            key_end = pos;
            break;
        }
    }
    let mut rest = logical[key_end..].trim_start_matches(is_prop_ws);
    if let Some(r) = rest.strip_prefix(['=', ':']) {
        rest = r.trim_start_matches(is_prop_ws);
    }
    (&logical[..key_end], rest)
}

/// The file's entries: last value wins (as in Java), first occurrence gives the order.
pub(super) struct Props {
    /// Each key's last value and its line.
    map: HashMap<String, (String, usize)>,
    /// Keys in order of first occurrence.
    pub(super) order: Vec<String>,
    /// Each key's first line.
    first: HashMap<String, usize>,
}

impl Props {
    /// Gathers entries in file order.
    pub(super) fn new(entries: Vec<Prop>) -> Props {
        let mut map = HashMap::new();
        let mut order = Vec::new();
        let mut first = HashMap::new();
        for p in entries {
            if !map.contains_key(&p.key) {
                order.push(p.key.clone());
                first.insert(p.key.clone(), p.line);
            }
            map.insert(p.key, (p.value, p.line));
        }
        Props { map, order, first }
    }

    /// Line of a key's first occurrence (its place in file order).
    pub(super) fn first_line(&self, key: &str) -> usize {
        self.first.get(key).copied().unwrap_or(0)
    }

    /// A key's value and where it was set.
    pub(super) fn get(&self, key: &str) -> Option<(&str, Where)> {
        self.map.get(key).map(|(v, line)| {
            (
                v.as_str(),
                Where {
                    key: key.to_string(),
                    line: Some(*line),
                },
            )
        })
    }
}

/// A parsed `sasl.jaas.config`: one login module and its options.
#[derive(Debug, PartialEq, Eq)]
pub(super) struct Jaas {
    /// The login module class.
    pub(super) module: String,
    /// Its options, `key="value"`, in order.
    pub(super) options: Vec<(String, String)>,
}

/// A token of a JAAS line.
#[derive(Debug, PartialEq, Eq)]
enum JaasToken {
    /// A bare or quoted word.
    Word(String),
    /// `=`.
    Equals,
    /// `;`.
    Semicolon,
}

/// Splits a JAAS line into words (quotes removed, `\x` → `x` inside quotes), `=` and `;`.
fn jaas_tokens(value: &str) -> Result<Vec<JaasToken>, String> {
    let mut out = Vec::new();
    let mut chars = value.chars().peekable();
    while let Some(&c) = chars.peek() {
        if c.is_whitespace() {
            chars.next();
        } else if c == '=' {
            chars.next();
            out.push(JaasToken::Equals);
        } else if c == ';' {
            chars.next();
            out.push(JaasToken::Semicolon);
        } else if c == '"' || c == '\'' {
            let quote = c;
            chars.next();
            let mut word = String::new();
            loop {
                match chars.next() {
                    None => return Err("unterminated quoted value".to_string()),
                    Some('\\') => match chars.next() {
                        Some(e) => word.push(e),
                        None => return Err("unterminated quoted value".to_string()),
                    },
                    Some(ch) if ch == quote => break,
                    Some(ch) => word.push(ch),
                }
            }
            out.push(JaasToken::Word(word));
        } else {
            let mut word = String::new();
            while let Some(&ch) = chars.peek() {
                if ch.is_whitespace() || ch == '=' || ch == ';' || ch == '"' {
                    break;
                }
                word.push(ch);
                chars.next();
            }
            out.push(JaasToken::Word(word));
        }
    }
    Ok(out)
}

/// Parses `Module flag key="value" ...;`. Messages never quote option values.
pub(super) fn parse_jaas(value: &str) -> Result<Jaas, String> {
    let tokens = jaas_tokens(value)?;
    let mut it = tokens.into_iter();
    let Some(JaasToken::Word(module)) = it.next() else {
        return Err("expected a login module class, e.g. org.apache.kafka.common.security.scram.ScramLoginModule".to_string());
    };
    match it.next() {
        Some(JaasToken::Word(flag))
            if ["required", "requisite", "sufficient", "optional"]
                .contains(&flag.to_ascii_lowercase().as_str()) => {}
        _ => {
            return Err(format!(
            "expected a control flag (required, requisite, sufficient or optional) after {module}"
        ))
        }
    }
    let mut options = Vec::new();
    loop {
        match it.next() {
            Some(JaasToken::Semicolon) => break,
            Some(JaasToken::Word(key)) => {
                if it.next() != Some(JaasToken::Equals) {
                    return Err(format!("expected `=` after option `{key}`"));
                }
                match it.next() {
                    Some(JaasToken::Word(v)) => options.push((key, v)),
                    _ => return Err(format!("option `{key}` has no value")),
                }
            }
            Some(JaasToken::Equals) => return Err("unexpected `=`".to_string()),
            None => return Err("missing the closing `;`".to_string()),
        }
    }
    if it.next().is_some() {
        return Err("only one login module is supported".to_string());
    }
    Ok(Jaas { module, options })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::security::SCRAM_MODULE;

    #[test]
    fn properties_syntax() {
        let text = "# comment\n  ! also a comment \\\nk1=v1\n\
                    k2 : v2  \n\
                    k3 value three\n\
                    k4 = first, \\\n     second, \\\n\tthird\n\
                    k5 = a\\\\.b\n\
                    k6 = a\\.b\n\
                    k\\=7 = x\\u0041\\n\n\
                    \n\
                    k8\n\
                    k9 = ends with escaped backslash \\\\\n\
                    k10 = #not a comment\r\nk11=\\\n";
        let props = parse_properties(text).unwrap();
        let got: Vec<(&str, &str, usize)> = props
            .iter()
            .map(|p| (p.key.as_str(), p.value.as_str(), p.line))
            .collect();
        assert_eq!(
            got,
            vec![
                ("k1", "v1", 3),
                ("k2", "v2", 4),
                ("k3", "value three", 5),
                ("k4", "first, second, third", 6),
                ("k5", r"a\.b", 9),
                ("k6", "a.b", 10),
                ("k=7", "xA", 11),
                ("k8", "", 13),
                ("k9", r"ends with escaped backslash \", 14),
                ("k10", "#not a comment", 15),
                ("k11", "", 16),
            ]
        );
        assert!(parse_properties("k = \\u12\n").is_err());
    }

    #[test]
    fn jaas_parsing() {
        let j = parse_jaas(
            "org.apache.kafka.common.security.scram.ScramLoginModule required username=\"a b\" password='p\\\"q' tokenauth=true;",
        )
        .unwrap();
        assert_eq!(j.module, SCRAM_MODULE);
        assert_eq!(
            j.options,
            vec![
                ("username".to_string(), "a b".to_string()),
                ("password".to_string(), "p\"q".to_string()),
                ("tokenauth".to_string(), "true".to_string()),
            ]
        );
        assert!(parse_jaas("X required a=b").is_err());
        assert!(parse_jaas("X sometimes a=b;").is_err());
        assert!(parse_jaas("X required a b;").is_err());
        assert!(parse_jaas("X required a=b; Y required;").is_err());
    }
}
