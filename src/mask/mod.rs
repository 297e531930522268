//! What no report shows: the values of secret elements (passwords, keys, tokens), and more
//! than a bounded excerpt of any one value.

use std::borrow::Cow;

/// Shown instead of a secret's value.
pub const MASK: &str = "******";

/// The most characters of one value or source line a report shows.
pub const EXCERPT_CHARS: usize = 240;

mod names;
mod url;
mod yaml;

pub use names::is_secret_name;
pub use url::mask_url_credentials;

/// Whether `text` may hold a secret: it names one, or holds a URL (credentials in its
/// userinfo or query). Text that does not (most of a report's messages and fixes) is not
/// parsed for tags and keys (that was a seventh of the work of a report of 100,000 findings).
fn may_hold_secret(text: &str) -> bool {
    names::may_name_secret(text) || url::may_hold_url(text)
}

/// `text` with the value of every secret XML element and attribute (`<password>x</password>`,
/// `password="x"`) and YAML key (`password: x`) masked. An element's value is its whole span
/// up to its own end tag: several lines, CDATA, nested elements. Each masked line keeps its
/// indentation and the text keeps its line count, so line numbers still point right. Text that
/// is no element (a rule's own prose naming `<secret_access_key>`) is left alone.
pub fn mask_text(text: &str) -> Cow<'_, str> {
    if !may_hold_secret(text) {
        return Cow::Borrowed(text);
    }
    mask_all(text)
}

/// [`mask_text`] of a whole config file's text (an evidence or error snippet, a diff): it is
/// parsed for tags and keys whatever names it holds, so a misspelled secret element
/// (`<secert>`) is masked too.
pub fn mask_source(text: &str) -> Cow<'_, str> {
    mask_all(text)
}

fn mask_all(text: &str) -> Cow<'_, str> {
    let xml = mask_xml(text);
    let masked = match yaml::mask(&xml) {
        Some(masked) => Cow::Owned(masked),
        None => xml,
    };
    match mask_url_credentials(&masked) {
        Cow::Owned(more) => Cow::Owned(more),
        Cow::Borrowed(_) => masked,
    }
}

/// Whether XML text holds the value of a secret element or attribute.
pub fn holds_secret(text: &str) -> bool {
    may_hold_secret(text) && matches!(mask_xml(text), Cow::Owned(_))
}

/// One line with its secrets masked, or None when it shows none.
pub fn mask_line(line: &str) -> Option<String> {
    if !may_hold_secret(line) {
        return None;
    }
    match mask_all(line) {
        Cow::Owned(masked) => Some(masked),
        Cow::Borrowed(_) => None,
    }
}

/// The secret spans of XML text, in order, as byte ranges to mask.
fn mask_xml(text: &str) -> Cow<'_, str> {
    let mut spans = Vec::new();
    let mut at = 0;
    while let Some(open) = text[at..].find('<').map(|i| at + i) {
        let Some(tag) = StartTag::at(text, open) else {
            at = open + 1;
            continue;
        };
        spans.extend(tag.secret_attributes);
        at = tag.end;
        if tag.self_closing || !is_secret_name(tag.name) {
            continue;
        }
        let close = format!("</{}", tag.name);
        let Some(value_end) = find_close(text, tag.end, &close) else { continue };
        spans.extend(text_runs(text, tag.end, value_end));
        at = value_end;
    }
    replace_spans(text, &spans, masked_span)
}

/// `text` with each of `spans` (byte ranges in order, not overlapping) replaced by what `with`
/// makes of it; borrowed when there is none.
fn replace_spans<'a>(text: &'a str, spans: &[(usize, usize)], with: impl Fn(&str) -> String) -> Cow<'a, str> {
    if spans.is_empty() {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len());
    let mut last = 0;
    for &(start, end) in spans {
        out.push_str(&text[last..start]);
        out.push_str(&with(&text[start..end]));
        last = end;
    }
    out.push_str(&text[last..]);
    Cow::Owned(out)
}

/// A start tag: its name, where it ends, whether it closes itself, its secret attribute values.
struct StartTag<'a> {
    name: &'a str,
    end: usize,
    self_closing: bool,
    secret_attributes: Vec<(usize, usize)>,
}

impl<'a> StartTag<'a> {
    fn at(text: &'a str, open: usize) -> Option<StartTag<'a>> {
        let body = &text[open + 1..];
        let name_len = body.find(|c: char| c.is_whitespace() || c == '>' || c == '/').unwrap_or(body.len());
        let name = &body[..name_len];
        if name.is_empty() || !name.chars().all(|c| c.is_alphanumeric() || matches!(c, '_' | '-' | '.' | ':')) {
            return None;
        }
        let close = body.find('>')?;
        if body[..close].contains('<') {
            return None;
        }
        let attributes = &body[name_len..close];
        let base = open + 1 + name_len;
        Some(StartTag {
            name,
            end: open + 1 + close + 1,
            self_closing: attributes.ends_with('/'),
            secret_attributes: secret_attribute_values(attributes)
                .into_iter()
                .map(|(s, e)| (base + s, base + e))
                .collect(),
        })
    }
}

/// The value ranges of `name="value"` attributes with a secret name.
fn secret_attribute_values(attributes: &str) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut rest = 0;
    while let Some(eq) = attributes[rest..].find('=').map(|i| rest + i) {
        let name = attributes[..eq].trim_end().rsplit(char::is_whitespace).next().unwrap_or_default();
        let after = attributes[eq + 1..].trim_start();
        let value_start = attributes.len() - after.len();
        let Some(quote) = after.chars().next().filter(|c| matches!(c, '"' | '\'')) else { break };
        let Some(len) = after[1..].find(quote) else { break };
        if is_secret_name(name) && !is_placeholder(&after[1..1 + len]) {
            out.push((value_start + 1, value_start + 1 + len));
        }
        rest = value_start + 1 + len + 1;
    }
    out
}

/// Where the element's end tag `</name>` starts, skipping CDATA and comments.
fn find_close(text: &str, from: usize, close: &str) -> Option<usize> {
    let mut at = from;
    loop {
        let next = text[at..].find('<').map(|i| at + i)?;
        let rest = &text[next..];
        if rest.starts_with("<![CDATA[") {
            at = next + rest.find("]]>")? + 3;
        } else if rest.starts_with("<!--") {
            at = next + rest.find("-->")? + 3;
        } else if rest.starts_with(close) && rest[close.len()..].trim_start().starts_with('>') {
            return Some(next);
        } else {
            at = next + 1;
        }
    }
}

/// The text between `from` and `to` that is a value: character data and CDATA sections, not
/// tags or comments; runs that show nothing (blank, `...`, `$VAR`) are left out.
fn text_runs(text: &str, from: usize, to: usize) -> Vec<(usize, usize)> {
    let mut runs = Vec::new();
    let mut at = from;
    let mut run_start = from;
    let close_run = |start: usize, end: usize, runs: &mut Vec<(usize, usize)>| {
        if start < end && !is_placeholder(text[start..end].trim()) {
            runs.push((start, end));
        }
    };
    while at < to {
        let rest = &text[at..to];
        if rest.starts_with("<![CDATA[") {
            at += rest.find("]]>").map_or(rest.len(), |i| i + 3);
        } else if rest.starts_with('<') {
            close_run(run_start, at, &mut runs);
            let skip =
                if rest.starts_with("<!--") { rest.find("-->").map(|i| i + 3) } else { rest.find('>').map(|i| i + 1) };
            at += skip.unwrap_or(rest.len());
            run_start = at;
        } else {
            at += rest.find('<').unwrap_or(rest.len());
        }
    }
    close_run(run_start, to, &mut runs);
    runs
}

/// A value's span masked line by line: each line keeps its indentation and line break.
fn masked_span(span: &str) -> String {
    span.split('\n')
        .map(|line| {
            let body = line.trim();
            if body.is_empty() {
                return line.to_string();
            }
            let lead = &line[..line.len() - line.trim_start().len()];
            let trail = &line[line.trim_end().len()..];
            format!("{lead}{MASK}{trail}")
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// No value, or a fix's stand-in for one (`...`, `$PASSWORD`).
pub(super) fn is_placeholder(value: &str) -> bool {
    value.is_empty() || value.chars().all(|c| c == '.' || c == '…') || value.starts_with('$')
}

/// At most [`EXCERPT_CHARS`] characters of `text`, with how much was left out.
/// The cut falls at a word's end (see [`cut_point`]): a message is never cut mid-word; a
/// value without spaces or punctuation, a hash, is cut where it is long.
pub fn excerpt(text: &str) -> Cow<'_, str> {
    // no more bytes than characters kept: most messages, not decoded
    if text.len() <= EXCERPT_CHARS {
        return Cow::Borrowed(text);
    }
    let Some((limit, _)) = text.char_indices().nth(EXCERPT_CHARS) else { return Cow::Borrowed(text) };
    let kept = text[..cut_point(text, limit)].trim_end();
    Cow::Owned(format!("{kept}… ({} more bytes)", text.len() - kept.len()))
}

/// `text` in at most `max_chars` characters for a one-line message: its runs of white space
/// as one space, and when longer, cut at a word's or token's end with `…` (a query's text:
/// `WITH (SELECT count() FROM t WHERE …`).
pub fn shorten(text: &str, max_chars: usize) -> String {
    let flat = text.split_whitespace().collect::<Vec<_>>().join(" ");
    let Some((limit, _)) = flat.char_indices().nth(max_chars.saturating_sub(1)) else { return flat };
    if flat[limit..].chars().nth(1).is_none() {
        return flat;
    }
    let kept = flat[..cut_point(&flat, limit)].trim_end();
    format!("{kept}…")
}

/// Where to cut `text` at or before byte `limit` (a char boundary) so that no word is split:
/// after a whole word ending in the last sixth of the kept part, else at `limit` when no word
/// goes on across it, else after the last whole word in its second half, else at the last end
/// of a token there (`count(`, `a.`), else, a single long word (a hash), at `limit`.
fn cut_point(text: &str, limit: usize) -> usize {
    let word = |c: char| c.is_alphanumeric() || c == '_';
    let splits_word =
        |at: usize| text[..at].chars().next_back().is_some_and(word) && text[at..].chars().next().is_some_and(word);
    let head = &text[..limit];
    let space = head.rfind(char::is_whitespace);
    if let Some(space) = space.filter(|&i| i >= limit - limit / 6) {
        return space;
    }
    if !splits_word(limit) {
        return limit;
    }
    if let Some(space) = space.filter(|&i| i >= limit / 2) {
        return space;
    }
    head.char_indices()
        .rev()
        .map(|(i, _)| i)
        .take_while(|&i| i >= limit / 2)
        .find(|&i| !splits_word(i))
        .unwrap_or(limit)
}

/// A value as reports show it (see [`show`]).
pub fn shown(text: &str) -> String {
    let mut shown = text.to_owned();
    show(&mut shown);
    shown
}

/// `text` as reports show it: secrets masked, control characters written out, then
/// bounded. Replaced only when that changes it: most messages have nothing to mask, and
/// 100,000 findings need not be copied.
pub fn show(text: &mut String) {
    let unchanged = |shown: &Cow<str>| matches!(shown, Cow::Borrowed(_));
    let masked = mask_text(text);
    let visible = without_controls(&masked);
    let bounded = excerpt(&visible);
    if unchanged(&masked) && unchanged(&visible) && unchanged(&bounded) {
        return;
    }
    *text = bounded.into_owned();
}

/// `text` with its control characters written out (see [`without_controls`]), replaced only
/// when it holds one: a name a report prints (a replica's host, the target, a fix's element).
pub fn make_visible(text: &mut String) {
    if let Cow::Owned(visible) = without_controls(text) {
        *text = visible;
    }
}

/// Control characters other than line breaks and tabs written out (`\u{1b}`): text from a
/// server or a file never moves the terminal's cursor or colours, and stays well-formed XML.
pub fn without_controls(text: &str) -> Cow<'_, str> {
    if is_plain_ascii(text) || !text.chars().any(is_hidden_control) {
        return Cow::Borrowed(text);
    }
    Cow::Owned(
        text.chars()
            .map(|c| if is_hidden_control(c) { c.escape_unicode().to_string() } else { c.to_string() })
            .collect(),
    )
}

fn is_hidden_control(c: char) -> bool {
    c.is_control() && c != '\n' && c != '\t'
}

/// Printable ASCII, line breaks and tabs only: most messages and fixes. Tested a block of
/// bytes at a time without stopping early, which the compiler turns into vector
/// instructions (decoding every character was a twentieth of writing 100,000 findings).
fn is_plain_ascii(text: &str) -> bool {
    let plain = |b: u8| (0x20..0x7f).contains(&b) || b == b'\n' || b == b'\t';
    text.as_bytes().chunks(32).all(|block| block.iter().fold(true, |all, &b| all & plain(b)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_characters_are_written_out() {
        assert_eq!(shown("red \u{1b}[31mtext\u{7}\nnext\tline"), "red \\u{1b}[31mtext\\u{7}\nnext\tline");
        assert_eq!(without_controls("C1 \u{85} and \u{7f} too, é kept"), "C1 \\u{85} and \\u{7f} too, é kept");
    }

    #[test]
    fn a_fix_that_would_copy_a_secret_is_seen() {
        assert!(holds_secret("<s3><secret_access_key>xxx</secret_access_key></s3>"));
        assert!(holds_secret("<S3><Secret_Access_Key>xxx</Secret_Access_Key></S3>"), "names in any case");
        assert!(matches!(mask_text("<app_metric_4_threshold remove=\"1\"/>"), Cow::Borrowed(_)));
        assert!(holds_secret("<user password=\"x\"/>"));
        assert!(!holds_secret("<default><password remove=\"1\"/><networks><ip>::1</ip></networks></default>"));
        assert!(!holds_secret("<fast><keep_free_space_ratio>0.1</keep_free_space_ratio></fast>"));
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
    fn a_value_is_masked_over_its_whole_span() {
        let multi = "<password>\n    hunter2\n    more\n</password>\n<x>1</x>";
        assert_eq!(mask_text(multi), "<password>\n    ******\n    ******\n</password>\n<x>1</x>");
        let cdata = "<secret>\n<![CDATA[abc\ndef]]>\n</secret>";
        assert!(!mask_text(cdata).contains("abc") && !mask_text(cdata).contains("def"), "{}", mask_text(cdata));
        assert_eq!(mask_text(cdata).lines().count(), cdata.lines().count());
        let nested = "<password><pass1>one</pass1><pass2>two</pass2></password>";
        assert_eq!(mask_text(nested), "<password><pass1>******</pass1><pass2>******</pass2></password>");
        let commented = "<password><!-- rotated monthly -->x</password>";
        assert_eq!(mask_text(commented), "<password><!-- rotated monthly -->******</password>");
    }

    #[test]
    fn secret_attributes_are_masked() {
        assert_eq!(mask_text(r#"<user name="a" password="hunter2"/>"#), r#"<user name="a" password="******"/>"#);
        assert_eq!(mask_text(r#"<password from_env="CH_PASSWORD"/>"#), r#"<password from_env="CH_PASSWORD"/>"#);
    }

    #[test]
    fn prose_and_switches_are_not_masked() {
        let prose = "<sekret_access_key> is read by no code (did you mean <secret_access_key>?)";
        assert_eq!(mask_text(prose), prose);
        for switch in [
            "<allow_nullable_key>1</allow_nullable_key>",
            "<allow_plaintext_password>1</allow_plaintext_password>",
            "<show_named_collections_secrets>1</show_named_collections_secrets>",
        ] {
            assert_eq!(mask_text(switch), switch);
        }
    }

    #[test]
    fn huge_values_are_cut() {
        let big = "x".repeat(10_000);
        let shown = shown(&big);
        assert!(shown.len() < EXCERPT_CHARS + 40, "{}", shown.len());
        assert!(shown.ends_with("(9760 more bytes)"), "{shown}");
        assert_eq!(excerpt("short"), "short");
    }

    #[test]
    fn a_query_is_shortened_at_a_token_with_an_ellipsis() {
        let query = "WITH (SELECT count() FROM ssb.lineorder_flat WHERE LO_DISCOUNT = 0) AS d0,\n  (SELECT 1) AS d1 SELECT d0 + d1";
        assert_eq!(shorten(query, 200), query.replace("\n  ", " "));
        let short = shorten(query, 40);
        assert_eq!(short, "WITH (SELECT count() FROM…");
        assert!(short.chars().count() <= 40);
        // no space in reach: the last token's end
        let short = shorten("SELECT(aaaa,bbbbbbbbbbbbbbbbbbbbbbbbbb)", 20);
        assert_eq!(short, "SELECT(aaaa,…");
        assert_eq!(shorten("SELECT 1", 8), "SELECT 1");
        assert_eq!(shorten("SELECT 12", 8), "SELECT…");
    }

    #[test]
    fn a_message_is_never_cut_mid_word() {
        // the only space early: cut at the last punctuation instead of mid-word
        let message = format!("shape {}", "abc/def,".repeat(60));
        let cut = excerpt(&message);
        let kept = cut.split('…').next().unwrap();
        let word = |c: Option<char>| c.is_some_and(|c| c.is_alphanumeric());
        assert!(!(word(kept.chars().last()) && word(message[kept.len()..].chars().next())), "{cut}");
        assert!(kept.len() > EXCERPT_CHARS / 2, "{cut}");
        // words of many lengths: the cut falls after a whole word
        let message = "a bb ccc dddd eeeee ffffff ggggggg hhhhhhhh iiiiiiiii ".repeat(8);
        let cut = excerpt(&message);
        let kept = cut.split('…').next().unwrap();
        assert!(message[kept.len()..].starts_with(' '), "{cut}");
    }

    #[test]
    fn a_message_is_cut_after_a_whole_word() {
        let message = "the query shape SELECT count() FROM events WHERE ".repeat(10);
        let cut = excerpt(&message);
        let kept = cut.split('…').next().unwrap();
        assert!(message.starts_with(kept) && message[kept.len()..].starts_with(' '), "{cut}");
        assert!(cut.ends_with(&format!("({} more bytes)", message.len() - kept.len())), "{cut}");
    }
}
