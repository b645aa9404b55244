//! Plain-text tables for the commands' output, sans-io.

/// Left-aligned columns separated by two spaces; the last column is not padded and trailing
/// spaces are trimmed. The first row is usually the header.
pub fn format(rows: &[Vec<String>]) -> String {
    let cols = rows.iter().map(|r| r.len()).max().unwrap_or(0);
    let mut width = vec![0; cols];
    for row in rows {
        for (i, c) in row.iter().enumerate() {
            width[i] = width[i].max(c.chars().count());
        }
    }
    let mut out = String::new();
    for row in rows {
        let mut line = String::new();
        for (i, c) in row.iter().enumerate() {
            line.push_str(c);
            if i + 1 < row.len() {
                line.push_str(&" ".repeat(width[i] - c.chars().count() + 2));
            }
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn aligned_columns() {
        let rows = vec![
            vec!["A".to_string(), "Bee".into(), "C".into()],
            vec!["long".to_string(), "b".into(), "".into()],
        ];
        assert_eq!(super::format(&rows), "A     Bee  C\nlong  b\n");
        assert_eq!(super::format(&[]), "");
    }
}
