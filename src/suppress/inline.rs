//! Ignore comments in the config files: `chaudit: ignore RULE-ID[,RULE-ID] reason="..."` in
//! an XML comment (`<!-- -->`) or a YAML comment (`#`), on the line(s) just before the
//! element they silence.

use super::{Ignore, SuppressionError, Target};
use crate::config::error::FileProblem;
use crate::config::{Origin, SourceMap};

const MARKER: &str = "chaudit: ignore";

/// Every ignore comment in the files of `sources`.
pub fn collect(sources: &SourceMap) -> (Vec<Ignore>, Vec<SuppressionError>) {
    let mut ignores = Vec::new();
    let mut errors = Vec::new();
    // one fast scan per file: most have no ignore comment
    let finder = memchr::memmem::Finder::new(MARKER);
    for (id, file, text) in
        sources.files().map(|(id, f)| (id, f, f.text())).filter(|(_, _, text)| finder.find(text.as_bytes()).is_some())
    {
        let lines: Vec<&str> = text.lines().collect();
        let mut offset = 0usize;
        for (index, line) in lines.iter().enumerate() {
            if let Some(at) = line.find(MARKER) {
                let origin = Origin { file: id, offset: (offset + at) as u32 };
                match parse(&line[at + MARKER.len()..]) {
                    Ok((rules, reason)) => {
                        let target = next_element_line(&lines, index)
                            .map(|target| Target::Line { file: file.display.clone(), line: target as u32 + 1 });
                        ignores.push(Ignore {
                            rules,
                            reason,
                            kind: "inline",
                            at: format!("{}:{}", file.display, index + 1),
                            target: target.unwrap_or(Target::Locations(Vec::new())),
                            expires: None,
                            host: None,
                            object: None,
                        });
                    }
                    Err((message, help)) => {
                        errors.push(SuppressionError::Invalid(FileProblem::new(
                            "chaudit::suppress::invalid",
                            sources,
                            origin,
                            message,
                            "here",
                            help,
                        )));
                    }
                }
            }
            offset += line.len() + 1;
        }
    }
    (ignores, errors)
}

/// `RULE[,RULE] reason="..."` (the rest of the comment after the marker).
fn parse(rest: &str) -> Result<(Vec<String>, String), (String, Option<String>)> {
    let rest = rest.trim().trim_end_matches("-->").trim();
    let (rules, tail) = rest.split_once(char::is_whitespace).unwrap_or((rest, ""));
    let rules: Vec<String> = rules.split(',').map(str::trim).filter(|r| !r.is_empty()).map(str::to_string).collect();
    if rules.is_empty() {
        return Err((
            "an ignore comment names the rule it silences".into(),
            Some(r#"chaudit: ignore RULE-ID reason="why""#.into()),
        ));
    }
    let reason = tail
        .trim()
        .strip_prefix("reason=")
        .map(|r| r.trim().trim_matches('"').trim().to_string())
        .filter(|r| !r.is_empty());
    match reason {
        Some(reason) => Ok((rules, reason)),
        None => Err((
            format!("suppression of {} has no reason", rules.join(", ")),
            Some(r#"say why: chaudit: ignore RULE-ID reason="..." (reviewers and auditors read it)"#.into()),
        )),
    }
}

/// The index of the first line after `index` that holds an element (not blank, not a comment).
fn next_element_line(lines: &[&str], index: usize) -> Option<usize> {
    let mut in_comment = lines[index].contains("<!--") && !lines[index].contains("-->");
    for (i, line) in lines.iter().enumerate().skip(index + 1) {
        let t = line.trim();
        if in_comment {
            in_comment = !t.contains("-->");
            continue;
        }
        if t.is_empty() || t.starts_with('#') {
            continue;
        }
        if t.starts_with("<!--") {
            in_comment = !t.contains("-->");
            continue;
        }
        return Some(i);
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn comments_name_rules_and_reasons() {
        assert_eq!(
            parse(r#" plaintext-password,default-user-open reason="lab box" -->"#).unwrap(),
            (vec!["plaintext-password".to_string(), "default-user-open".to_string()], "lab box".to_string())
        );
        assert!(parse(" plaintext-password -->").is_err());
        assert!(parse(" -->").is_err());
    }

    #[test]
    fn the_next_element_skips_blanks_and_comments() {
        let lines = ["<!-- chaudit: ignore x reason=\"y\" -->", "", "<!-- other", "-->", "  <password>a</password>"];
        assert_eq!(next_element_line(&lines, 0), Some(4));
    }
}
