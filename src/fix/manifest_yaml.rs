//! The YAML a fix adds to a manifest, written as block YAML lines with each scalar's quoting
//! as the fix wrote it.

use super::manifest::Node;

/// `key: value` as block YAML lines, at `indent`.
pub(super) fn entry(key: &str, value: &Node, indent: usize, out: &mut Vec<String>) {
    let pad = " ".repeat(indent);
    let key = if plain_safe(key) { key.to_string() } else { quoted(key) };
    match value {
        Node::Mapping(pairs) if !pairs.is_empty() => {
            out.push(format!("{pad}{key}:"));
            pairs.iter().for_each(|(k, v)| entry(k, v, indent + 2, out));
        }
        Node::Sequence(items) if !items.is_empty() => {
            out.push(format!("{pad}{key}:"));
            items.iter().for_each(|item| list_item(item, indent + 2, out));
        }
        scalar => {
            let (head, block) = scalar_text(scalar, indent + 2);
            out.push(format!("{pad}{key}:{head}"));
            out.extend(block);
        }
    }
}

fn list_item(item: &Node, indent: usize, out: &mut Vec<String>) {
    let pad = " ".repeat(indent);
    match item {
        Node::Mapping(pairs) if !pairs.is_empty() => {
            let mut lines = Vec::new();
            pairs.iter().for_each(|(k, v)| entry(k, v, indent + 2, &mut lines));
            if let Some(first) = lines.first_mut() {
                *first = format!("{pad}- {}", first.trim_start());
            }
            out.extend(lines);
        }
        Node::Sequence(items) if !items.is_empty() => {
            out.push(format!("{pad}-"));
            items.iter().for_each(|i| list_item(i, indent + 2, out));
        }
        scalar => {
            let (head, block) = scalar_text(scalar, indent + 2);
            out.push(format!("{pad}-{head}"));
            out.extend(block);
        }
    }
}

/// What follows `key:` on its line, and the lines of a block scalar below it.
pub(super) fn scalar_text(node: &Node, indent: usize) -> (String, Vec<String>) {
    let (text, plain) = match node {
        Node::Mapping(_) => return (" {}".into(), Vec::new()),
        Node::Sequence(_) => return (" []".into(), Vec::new()),
        Node::Scalar(text, plain) => (text, *plain),
    };
    if plain {
        return (if text.is_empty() { String::new() } else { format!(" {text}") }, Vec::new());
    }
    let printable = text.chars().all(|c| c == '\n' || !c.is_control());
    if text.contains('\n') && printable && !text.starts_with([' ', '\n']) {
        let body = text.trim_end_matches('\n');
        let chomp = match text.len() - body.len() {
            0 => "-",
            1 => "",
            _ => "+",
        };
        let pad = " ".repeat(indent);
        let mut lines: Vec<String> =
            body.split('\n').map(|l| if l.is_empty() { String::new() } else { format!("{pad}{l}") }).collect();
        // `|+` keeps the trailing line breaks as empty lines
        lines.extend(std::iter::repeat_n(String::new(), (text.len() - body.len()).saturating_sub(1)));
        return (format!(" |{chomp}"), lines);
    }
    (format!(" {}", quoted(text)), Vec::new())
}

/// A key written as it is: letters, digits and `_./-`, not starting with `-`.
fn plain_safe(text: &str) -> bool {
    !text.is_empty()
        && !text.starts_with('-')
        && text.chars().all(|c| c.is_ascii_alphanumeric() || "_./-".contains(c))
        && !matches!(text, "true" | "false" | "null" | "yes" | "no" | "on" | "off" | "y" | "n")
}

/// Double-quoted (JSON's string syntax is YAML's double-quoted style).
fn quoted(text: &str) -> String {
    serde_json::Value::String(text.to_string()).to_string()
}
