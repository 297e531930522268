//! The two edits a ClickHouseCluster's fix makes beside adding keys: a value of its
//! `extraConfig` replaced (a `logger.level` the rule corrects) and a key deleted (an element
//! the fix removes, which the merge patch sets to null). Made as text on the one scalar or the
//! key's lines, so the rest of the file stays byte for byte, and checked: the file must read
//! back as the same documents with exactly that value changed or that key gone.

use serde_json::Value;

use crate::config::manifest_patch::value;
use crate::spanned_yaml::Yaml;

/// A change to what the manifest already holds.
#[derive(Debug)]
pub(super) enum Change {
    /// The scalar starting at `offset` becomes `text` (YAML, as written).
    Replace { path: Vec<String>, offset: usize, text: String },
    /// The key starting at `offset` goes, with its value and the comments heading it.
    Delete { path: Vec<String>, offset: usize },
}

impl Change {
    pub fn path(&self) -> &[String] {
        match self {
            Change::Replace { path, .. } | Change::Delete { path, .. } => path,
        }
    }

    /// The text with the change made; None when it cannot be made as text.
    pub fn apply(&self, text: &str) -> Option<String> {
        match self {
            Change::Replace { offset, text: new, .. } => {
                let end = *offset + scalar_length(text.get(*offset..)?)?;
                Some(format!("{}{new}{}", &text[..*offset], &text[end..]))
            }
            Change::Delete { offset, .. } => {
                let (start, end) = key_lines(text, *offset)?;
                Some(format!("{}{}", &text[..start], &text[end..]))
            }
        }
    }

    /// Whether `after` (the documents read back) is `before` with exactly this change made to
    /// the document at `index`.
    pub fn made(&self, before: &[Yaml], after: &[Yaml], index: usize) -> bool {
        let mut expected: Vec<Value> = before.iter().map(value).collect();
        let Some(document) = expected.get_mut(index) else { return false };
        let (parent_path, key) = match self.path().split_last() {
            Some((key, parent)) => (parent, key),
            None => return false,
        };
        let Some(parent) = parent_path.iter().try_fold(document, |node, k| node.get_mut(k)) else { return false };
        match self {
            Change::Replace { text, .. } => {
                let Ok(Value::String(new)) = serde_yaml_scalar(text) else { return false };
                match parent.get_mut(key) {
                    Some(slot) => *slot = Value::String(new),
                    None => return false,
                }
            }
            Change::Delete { .. } => {
                let Some(map) = parent.as_object_mut() else { return false };
                if map.remove(key).is_none() {
                    return false;
                }
                // a mapping left without a key reads back as an empty value
                if map.is_empty() {
                    *parent = Value::Null;
                }
            }
        }
        after.iter().map(value).collect::<Vec<_>>() == expected
    }
}

/// The text of a one-line YAML scalar as the fix writes it (double-quoted or plain).
fn serde_yaml_scalar(text: &str) -> Result<Value, ()> {
    if text.starts_with('"') {
        return serde_json::from_str(text).map_err(|_| ());
    }
    Ok(Value::String(text.to_string()))
}

/// The length of the one-line scalar at the head of `rest`: quoted, or plain up to a comment
/// or the line's end. None for a block scalar or one running onto the next line.
fn scalar_length(rest: &str) -> Option<usize> {
    let line = &rest[..rest.find('\n').unwrap_or(rest.len())];
    let mut chars = line.char_indices();
    match chars.next()?.1 {
        '"' => {
            let mut escaped = false;
            for (i, c) in chars {
                match c {
                    '\\' if !escaped => escaped = true,
                    '"' if !escaped => return Some(i + 1),
                    _ => escaped = false,
                }
            }
            None
        }
        '\'' => {
            let bytes = line.as_bytes();
            let mut i = 1;
            while i < bytes.len() {
                if bytes[i] == b'\'' {
                    if bytes.get(i + 1) == Some(&b'\'') {
                        i += 2;
                        continue;
                    }
                    return Some(i + 1);
                }
                i += 1;
            }
            None
        }
        '|' | '>' | '{' | '[' | '&' | '*' | '!' => None,
        _ => {
            let end = line.find(" #").unwrap_or(line.len());
            Some(line[..end].trim_end().len())
        }
    }
}

/// The lines of the key at `offset` in a block mapping: from the comment lines heading it
/// (at its column) to the last line indented under it. None when the key is not the first
/// thing on its line (a list item's first key, a flow mapping).
fn key_lines(text: &str, offset: usize) -> Option<(usize, usize)> {
    let line_start = text.get(..offset)?.rfind('\n').map_or(0, |i| i + 1);
    let column = offset - line_start;
    if !text[line_start..offset].chars().all(|c| c == ' ') {
        return None;
    }
    let indent = |line: &str| line.len() - line.trim_start_matches(' ').len();
    let mut start = line_start;
    while start > 0 {
        let previous = text[..start - 1].rfind('\n').map_or(0, |i| i + 1);
        let line = &text[previous..start - 1];
        if !(line.trim_start().starts_with('#') && indent(line) == column) {
            break;
        }
        start = previous;
    }
    // the key's own line, then every blank or deeper line below it (trailing blank lines kept)
    let mut end = text[offset..].find('\n').map_or(text.len(), |i| offset + i + 1);
    let mut scan = end;
    while scan < text.len() {
        let next = text[scan..].find('\n').map_or(text.len(), |i| scan + i + 1);
        let line = text[scan..next].trim_end_matches('\n');
        if line.trim().is_empty() {
            scan = next;
            continue;
        }
        if indent(line) <= column {
            break;
        }
        scan = next;
        end = next;
    }
    Some((start, end))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_scalar_ends_at_its_quote_or_its_comment() {
        assert_eq!(scalar_length("test # why\nnext"), Some(4));
        assert_eq!(scalar_length("\"a \\\" b\" # x"), Some(8));
        assert_eq!(scalar_length("'it''s' x"), Some(7));
        assert_eq!(scalar_length("|\n  a"), None);
    }

    #[test]
    fn a_key_goes_with_its_comments_and_what_is_under_it() {
        let text = "a:\n  # about b\n  b:\n    c: 1\n\n  d: 2\n";
        let offset = text.find("b:").unwrap();
        let (start, end) = key_lines(text, offset).unwrap();
        assert_eq!(format!("{}{}", &text[..start], &text[end..]), "a:\n\n  d: 2\n");
        let item = "l:\n  - b: 1\n";
        assert_eq!(key_lines(item, item.find("b:").unwrap()), None);
    }
}
