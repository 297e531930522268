//! The environment a deployment gives the server, from an env file in Docker Compose's syntax
//! (`.env`, `env_file:`): `KEY=VALUE` lines, `#` comments, an optional `export `, values
//! unquoted (a ` #` starts a comment), in single quotes (as written) or in double quotes
//! (`\n`, `\t`, `\"` and `\\` escaped). `from_env` is then judged against what the server gets,
//! not against the shell that runs the audit.

use thiserror::Error;

#[derive(Debug, Error, PartialEq, Eq)]
#[error("{path}:{line}: {message}")]
pub struct EnvFileError {
    pub path: String,
    pub line: usize,
    pub message: String,
}

/// The variables of an env file, in order (a later one of a name wins, as in Compose).
pub fn parse(text: &str, path: &str) -> Result<Vec<(String, String)>, EnvFileError> {
    let mut out = Vec::new();
    let mut lines = text.lines().enumerate();
    while let Some((i, raw)) = lines.next() {
        let error = |message: &str| EnvFileError { path: path.to_string(), line: i + 1, message: message.to_string() };
        let line = raw.trim_start();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let line = line.strip_prefix("export ").map_or(line, str::trim_start);
        let Some((key, rest)) = line.split_once('=') else {
            return Err(error("not KEY=VALUE"));
        };
        let key = key.trim_end();
        if key.is_empty() || !key.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-')) {
            return Err(error("a variable name is letters, digits, `_`, `.` or `-`"));
        }
        let rest = rest.trim_start();
        let value = match rest.chars().next() {
            Some(quote @ ('\'' | '"')) => {
                // a quoted value may run over several lines
                let mut body = rest[1..].to_string();
                loop {
                    if let Some(end) = closing(&body, quote) {
                        let tail = body[end + 1..].trim_start();
                        if !tail.is_empty() && !tail.starts_with('#') {
                            return Err(error("text after the closing quote"));
                        }
                        body.truncate(end);
                        break;
                    }
                    let Some((_, next)) = lines.next() else { return Err(error("a quote that is not closed")) };
                    body.push('\n');
                    body.push_str(next);
                }
                if quote == '"' { unescape(&body) } else { body }
            }
            _ => rest.split(" #").next().unwrap_or_default().trim_end().to_string(),
        };
        out.push((key.to_string(), value));
    }
    Ok(out)
}

/// Where the quote closing a value starts in `body` (a double quote escaped by `\` is not).
fn closing(body: &str, quote: char) -> Option<usize> {
    let mut escaped = false;
    for (i, c) in body.char_indices() {
        match c {
            '\\' if quote == '"' && !escaped => escaped = true,
            c if c == quote && !escaped => return Some(i),
            _ => escaped = false,
        }
    }
    None
}

fn unescape(body: &str) -> String {
    let mut out = String::with_capacity(body.len());
    let mut chars = body.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('n') => out.push('\n'),
            Some('t') => out.push('\t'),
            Some('r') => out.push('\r'),
            Some(other) => out.push(other),
            None => out.push('\\'),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compose_syntax() {
        let text = "# shard of this host\nCH_SHARD=01\nexport CH_REPLICA = r1 # inline\nEMPTY=\n\
                    SINGLE='a # b'\nDOUBLE=\"x\\ny \\\"q\\\"\"\nMULTI=\"one\ntwo\"\n\n  SPACED=v  \n";
        let vars = parse(text, ".env").unwrap();
        let get = |k: &str| vars.iter().rev().find(|(n, _)| n == k).map(|(_, v)| v.as_str());
        assert_eq!(get("CH_SHARD"), Some("01"));
        assert_eq!(get("CH_REPLICA"), Some("r1"));
        assert_eq!(get("EMPTY"), Some(""));
        assert_eq!(get("SINGLE"), Some("a # b"));
        assert_eq!(get("DOUBLE"), Some("x\ny \"q\""));
        assert_eq!(get("MULTI"), Some("one\ntwo"));
        assert_eq!(get("SPACED"), Some("v"));
    }

    proptest::proptest! {
        /// Any variables written as Compose writes a double-quoted value read back as they were.
        #[test]
        fn double_quoted_values_read_back(vars in proptest::collection::vec(("[A-Z_][A-Z0-9_]{0,8}", "[ -~\n]{0,20}"), 0..6)) {
            let text: String = vars
                .iter()
                .map(|(k, v)| format!("{k}=\"{}\"\n", v.replace('\\', "\\\\").replace('"', "\\\"").replace('\n', "\\n")))
                .collect();
            proptest::prop_assert_eq!(parse(&text, "p.env").unwrap(), vars);
        }

        /// Any text: variables or an error at a line of it, never a panic.
        #[test]
        fn any_text_parses_or_names_a_line(text in "[A-Za-z_=#'\" \\\n]{0,40}") {
            if let Err(e) = parse(&text, "p.env") {
                proptest::prop_assert!(e.line >= 1 && e.line <= text.lines().count().max(1));
            }
        }
    }

    #[test]
    fn errors_name_the_line() {
        assert_eq!(parse("A=1\nno equals sign\n", ".env").unwrap_err().to_string(), ".env:2: not KEY=VALUE");
        assert_eq!(parse("A=\"open\nB=2\n", "e").unwrap_err().line, 1);
        assert!(parse("A B=1", "e").unwrap_err().message.contains("variable name"));
        assert!(parse("A='x' y", "e").unwrap_err().message.contains("after the closing quote"));
    }
}
