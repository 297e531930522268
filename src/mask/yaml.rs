//! Secret values in YAML text: `password: x`, quoted, in a flow mapping
//! (`{password: x, networks: ...}`), and block scalars (`password: |` with the value on the
//! lines below, indented).

use super::{MASK, is_placeholder, is_secret_name};

/// `text` with every secret key's value masked, or None when it shows none. Each line keeps
/// its indentation and the text its line count.
pub(super) fn mask(text: &str) -> Option<String> {
    let mut out = String::with_capacity(text.len());
    let mut changed = false;
    // the indentation of a secret key whose block scalar is being masked
    let mut block: Option<usize> = None;
    for (i, line) in text.split('\n').enumerate() {
        if i > 0 {
            out.push('\n');
        }
        let indent = line.len() - line.trim_start_matches(' ').len();
        if let Some(key_indent) = block {
            if line.trim().is_empty() {
                out.push_str(line);
                continue;
            }
            if indent > key_indent {
                out.push_str(&line[..indent]);
                out.push_str(MASK);
                changed = true;
                continue;
            }
            block = None;
        }
        let (spans, opens_block) = secret_values(line);
        if opens_block {
            block = Some(indent);
        }
        changed |= !spans.is_empty();
        out.push_str(&super::replace_spans(line, &spans, |_| MASK.to_string()));
    }
    changed.then_some(out)
}

/// The spans of the secret values written on one line, and whether a secret key's value is a
/// block scalar starting on the next line.
fn secret_values(line: &str) -> (Vec<(usize, usize)>, bool) {
    let mut spans = Vec::new();
    let bytes = line.as_bytes();
    let mut depth = 0usize;
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'{' | b'[' => depth += 1,
            b'}' | b']' => depth = depth.saturating_sub(1),
            b'#' if i == 0 || bytes[i - 1] == b' ' => break,
            b'\'' | b'"' => {
                // a quoted key or value: skip to its end, then see whether it is a key
                let quote = bytes[i];
                let Some(len) = line[i + 1..].find(quote as char) else { break };
                i += len + 2;
                continue;
            }
            b':' if bytes.get(i + 1).is_none_or(|c| *c == b' ') => {
                let key = key_before(line, i);
                // a key, not prose that ends in a colon ("has no password (networks: ...)")
                let is_key = !key.is_empty()
                    && key.chars().all(|c| c.is_alphanumeric() || matches!(c, '_' | '-' | '.' | '/' | '@'));
                if is_key && is_secret_name(key) {
                    let value_start = i + 1 + (line[i + 1..].len() - line[i + 1..].trim_start().len());
                    match value_span(line, value_start, depth > 0) {
                        Value::Block => return (spans, true),
                        Value::Span(start, end) => {
                            spans.push((start, end));
                            i = end;
                            continue;
                        }
                        Value::None => {}
                    }
                }
            }
            _ => {}
        }
        i += 1;
    }
    (spans, false)
}

/// The key ending at the colon at `colon`, quotes removed: what stands after the line's
/// indentation or list dash, or after a flow collection's `{`, `[` or `,`.
fn key_before(line: &str, colon: usize) -> &str {
    let head = line[..colon].trim_end();
    let start = head.rfind(['{', '[', ',']).map_or(0, |i| i + 1);
    head[start..].trim_start().trim_start_matches("- ").trim().trim_matches(['"', '\''])
}

enum Value {
    None,
    Block,
    Span(usize, usize),
}

/// The value starting at `start`: quoted, a block scalar's indicator, or plain up to a
/// comment, the line's end or, in a flow collection, the next `,` `}` or `]`.
fn value_span(line: &str, start: usize, in_flow: bool) -> Value {
    let rest = &line[start..];
    let Some(first) = rest.chars().next() else { return Value::None };
    if matches!(first, '|' | '>') {
        return Value::Block;
    }
    let end = if matches!(first, '\'' | '"') {
        rest[1..].find(first).map_or(line.len(), |i| start + i + 2)
    } else {
        let stop = |c: char| in_flow && matches!(c, ',' | '}' | ']');
        let comment = rest.find(" #").unwrap_or(rest.len());
        start + rest[..comment].find(stop).unwrap_or(comment)
    };
    let value = line[start..end].trim_end();
    let unquoted = value.trim_matches(['"', '\'']);
    if is_placeholder(unquoted) || matches!(first, '{' | '&' | '*') {
        return Value::None;
    }
    Value::Span(start, start + value.len())
}

#[cfg(test)]
mod tests {
    use super::mask;

    #[test]
    fn yaml_values_are_masked() {
        assert_eq!(mask("    password: changeme").as_deref(), Some("    password: ******"));
        assert_eq!(mask("  - access_key_id: AKIA # prod").as_deref(), Some("  - access_key_id: ****** # prod"));
        assert_eq!(mask("password: ''"), None);
        assert_eq!(mask("users:"), None);
        assert_eq!(mask("max_threads: 8"), None);
        assert_eq!(mask("app/password: \"x y\"").as_deref(), Some("app/password: ******"));
        assert_eq!(mask("password:\n  - '@from_env': CH_PASSWORD"), None);
        assert_eq!(mask("user `default` has no password and accepts any network (networks: ::/0)"), None);
        assert_eq!(mask("cluster `events` has no <secret>: its shards"), None);
    }

    #[test]
    fn flow_and_block_values_are_masked() {
        assert_eq!(
            mask("  alice: {password: hunter2, networks: {ip: '::1'}}").as_deref(),
            Some("  alice: {password: ******, networks: {ip: '::1'}}")
        );
        let block = "  default:\n    password: |\n      line one\n\n      line two\n    networks: x\n  bob: y";
        assert_eq!(
            mask(block).as_deref(),
            Some("  default:\n    password: |\n      ******\n\n      ******\n    networks: x\n  bob: y")
        );
        assert_eq!(mask("secret: >-\n  folded").as_deref(), Some("secret: >-\n  ******"));
    }
}
