//! What no report shows: the values of secret elements (passwords, keys, tokens), and more
//! than a bounded excerpt of any one value.

use std::borrow::Cow;

/// Shown instead of a secret's value.
pub const MASK: &str = "******";

/// The most characters of one value or source line a report shows.
pub const EXCERPT_CHARS: usize = 240;

/// An element or key whose value is a credential: `password`, `password_sha256_hex`,
/// `secret_access_key`, `access_key_id`, `*_key`, `*token*`, a disk's encryption `key`...
pub fn is_secret_name(name: &str) -> bool {
    let name = name.rsplit('.').next().unwrap_or(name).to_ascii_lowercase();
    let name = name.trim_start_matches('@');
    ["password", "secret", "token", "credential", "passphrase", "connection_string", "identity"]
        .iter()
        .any(|word| name.contains(word))
        || name == "key"
        || name == "key_hex"
        || name.ends_with("_key")
        || name.ends_with("key_base64")
        || name == "access_key_id"
}

/// `text` with the value of every secret XML element (`<password>x</password>`) and YAML key
/// (`password: x`) masked, line by line.
pub fn mask_text(text: &str) -> Cow<'_, str> {
    if !text.lines().any(|l| mask_line(l).is_some()) {
        return Cow::Borrowed(text);
    }
    let masked: Vec<Cow<str>> = text.split('\n').map(|l| mask_line(l).map_or(Cow::Borrowed(l), Cow::Owned)).collect();
    Cow::Owned(masked.join("\n"))
}

/// One line with its secrets masked, or None when it shows none.
pub fn mask_line(line: &str) -> Option<String> {
    mask_xml_line(line).or_else(|| mask_yaml_line(line))
}

/// Every `<secret ...>value<` on the line: the text up to the next tag (or a CDATA section)
/// becomes the mask.
fn mask_xml_line(line: &str) -> Option<String> {
    let mut out = String::new();
    let mut rest = line;
    let mut changed = false;
    while let Some(open) = rest.find('<') {
        let tag = &rest[open + 1..];
        let name_len = tag.find(|c: char| c.is_whitespace() || c == '>' || c == '/').unwrap_or(tag.len());
        let name = &tag[..name_len];
        let Some(close) = tag.find('>') else { break };
        let start_tag_end = open + 1 + close + 1;
        out.push_str(&rest[..start_tag_end]);
        rest = &rest[start_tag_end..];
        let self_closing = tag[..close].ends_with('/');
        if name.is_empty() || name.starts_with(['/', '!', '?']) || self_closing || !is_secret_name(name) {
            continue;
        }
        // a value is what lies before the next tag: `<password>)` in prose is no value
        let value_len = if rest.starts_with("<![CDATA[") {
            rest.find("]]>").map_or(rest.len(), |i| i + 3)
        } else {
            match rest.find('<') {
                Some(i) => i,
                None => continue,
            }
        };
        if !is_placeholder(rest[..value_len].trim()) {
            out.push_str(MASK);
            changed = true;
        } else {
            out.push_str(&rest[..value_len]);
        }
        rest = &rest[value_len..];
    }
    out.push_str(rest);
    changed.then_some(out)
}

/// No value, or a fix's stand-in for one (`...`, `$PASSWORD`).
fn is_placeholder(value: &str) -> bool {
    value.is_empty() || value.chars().all(|c| c == '.' || c == '…') || value.starts_with('$')
}

/// `  password: value` or `- secret_access_key: value` (YAML configs).
fn mask_yaml_line(line: &str) -> Option<String> {
    let body = line.trim_start().trim_start_matches("- ").trim_start();
    let (key, value) = body.split_once(':')?;
    let key = key.trim().trim_matches(['"', '\'']);
    if key.is_empty() || key.contains(char::is_whitespace) || !is_secret_name(key) {
        return None;
    }
    let value = value.split(" #").next().unwrap_or(value).trim();
    if is_placeholder(value) || value == "''" || value == "\"\"" {
        return None;
    }
    // `body` is a suffix of `line`: the key ends at its first colon
    let after_colon = line.len() - body.len() + body.find(':')? + 1;
    Some(format!("{} {MASK}", &line[..after_colon]))
}

/// At most [`EXCERPT_CHARS`] characters of `text`, with how much was left out.
pub fn excerpt(text: &str) -> Cow<'_, str> {
    match text.char_indices().nth(EXCERPT_CHARS) {
        None => Cow::Borrowed(text),
        Some((cut, _)) => Cow::Owned(format!("{}… ({} more bytes)", &text[..cut], text.len() - cut)),
    }
}

/// A value as reports show it: secrets masked, then bounded.
pub fn shown(text: &str) -> String {
    excerpt(&without_controls(&mask_text(text))).into_owned()
}

/// Control characters other than line breaks and tabs written out (`\u{1b}`): text from a
/// server or a file never moves the terminal's cursor or colours, and stays well-formed XML.
pub fn without_controls(text: &str) -> Cow<'_, str> {
    if !text.chars().any(is_hidden_control) {
        return Cow::Borrowed(text);
    }
    Cow::Owned(text.chars().map(|c| if is_hidden_control(c) { c.escape_unicode().to_string() } else { c.to_string() }).collect())
}

fn is_hidden_control(c: char) -> bool {
    c.is_control() && c != '\n' && c != '\t'
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_characters_are_written_out() {
        assert_eq!(shown("red \u{1b}[31mtext\u{7}\nnext\tline"), "red \\u{1b}[31mtext\\u{7}\nnext\tline");
    }

    #[test]
    fn secret_names() {
        for name in [
            "password",
            "password_sha256_hex",
            "password_double_sha1_hex",
            "secret_access_key",
            "access_key_id",
            "key",
            "key_hex",
            "server_side_encryption_customer_key_base64",
            "interserver_http_credentials",
            "access_token",
            "connection_string",
            "profiles.analyst.password",
        ] {
            assert!(is_secret_name(name), "{name}");
        }
        for name in ["max_threads", "networks", "keep_alive_timeout", "primary_key_cache", "user", "endpoint"] {
            assert!(!is_secret_name(name), "{name}");
        }
    }

    #[test]
    fn xml_values_are_masked() {
        assert_eq!(mask_line("    <password>changeme</password>").as_deref(), Some("    <password>******</password>"));
        assert_eq!(
            mask_line("<s3><secret_access_key>abc</secret_access_key><endpoint>x</endpoint></s3>").as_deref(),
            Some("<s3><secret_access_key>******</secret_access_key><endpoint>x</endpoint></s3>")
        );
        assert_eq!(mask_line("<password><![CDATA[a<b]]></password>").as_deref(), Some("<password>******</password>"));
        assert_eq!(
            mask_line("<key_hex id=\"1\">00ff</key_hex>").as_deref(),
            Some("<key_hex id=\"1\">******</key_hex>")
        );
        assert_eq!(mask_line("has its password in plain text (<password>)"), None);
        assert_eq!(mask_line("<password></password>"), None);
        assert_eq!(mask_line("<password_sha256_hex>...</password_sha256_hex>"), None);
        assert_eq!(mask_line("<password remove=\"1\"/>"), None);
        assert_eq!(mask_line("<max_threads>8</max_threads>"), None);
    }

    #[test]
    fn yaml_values_are_masked() {
        assert_eq!(mask_line("    password: changeme").as_deref(), Some("    password: ******"));
        assert_eq!(mask_line("  - access_key_id: AKIA # prod").as_deref(), Some("  - access_key_id: ******"));
        assert_eq!(mask_line("password: ''"), None);
        assert_eq!(mask_line("users:"), None);
        assert_eq!(mask_line("max_threads: 8"), None);
    }

    #[test]
    fn huge_values_are_cut() {
        let big = "x".repeat(10_000);
        let shown = shown(&big);
        assert!(shown.len() < EXCERPT_CHARS + 40, "{}", shown.len());
        assert!(shown.ends_with("(9760 more bytes)"), "{shown}");
        assert_eq!(excerpt("short"), "short");
    }
}
