//! `--format json`: the [`Report`](super::Report) as is (schema in the README).

pub fn render(report: &super::Report) -> String {
    let mut text = serde_json::to_string_pretty(report).unwrap_or_else(|e| format!("{{\"error\": \"{e}\"}}"));
    text.push('\n');
    text
}
