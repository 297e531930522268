//! Secrets known by their value, masked in every byte chaudit writes.
//!
//! Two kinds are registered while a run works, wherever they enter it:
//! - chaudit's own credentials (the password of `--dsn`, `--password`, `--password-file`,
//!   CLICKHOUSE_PASSWORD): registered when a [`crate::collect::dsn::Secret`] is made, and
//!   never shown;
//! - values a config took from the environment (`from_env`): registered by the loader when it
//!   substitutes one (unless the files under review hold it themselves), and shown only
//!   after [`show_environment_values`] (`--show-secrets`). A
//!   config under review may name any variable of the CI job that audits it
//!   (`<display_name from_env="AWS_SECRET_ACCESS_KEY"/>`); its value must not reach a log or
//!   an uploaded report.
//!
//! The command line writes stdout, stderr and every report or snapshot file through
//! [`redact`] or [`Redacting`], so no path that prints (a message, an evidence snippet, a
//! server's error echoing the password, a panic) can forget it. Each value is also sought as
//! JSON, XML and percent-encoding write it. Values shorter than [`MIN_LEN`] bytes are not
//! sought: masking every `1` or `info` would garble the reports, and no variable that short
//! holds a credential.

use std::borrow::Cow;
use std::io::{self, Write};
use std::sync::{Arc, LazyLock, RwLock};

use aho_corasick::{AhoCorasick, MatchKind};

use crate::mask::MASK;

/// The shortest value sought.
pub const MIN_LEN: usize = 4;

#[derive(Default)]
struct Registry {
    credentials: Vec<String>,
    environment: Vec<String>,
    /// Environment values registered since [`settle_environment_values`] last looked for them
    /// in the files under review.
    unsettled: Vec<String>,
    show_environment: bool,
    matcher: Option<Arc<Matcher>>,
    /// The values changed since `matcher` was built: it is built again when next asked, not
    /// once per value (a config substituting a thousand variables).
    stale: bool,
}

struct Matcher {
    automaton: AhoCorasick,
    /// The longest pattern's length: a streamed match can straddle two writes by this much.
    longest: usize,
}

static REGISTRY: LazyLock<RwLock<Registry>> = LazyLock::new(RwLock::default);

impl Registry {
    fn rebuild(&mut self) {
        self.stale = false;
        let shown_environment: &[String] = if self.show_environment { &[] } else { &self.environment };
        let mut patterns: Vec<String> =
            self.credentials.iter().chain(shown_environment).flat_map(|value| encodings(value)).collect();
        patterns.sort_unstable();
        patterns.dedup();
        self.matcher = (!patterns.is_empty()).then(|| {
            let automaton = AhoCorasick::builder()
                .match_kind(MatchKind::LeftmostLongest)
                .build(&patterns)
                .expect("a few secret values make an automaton");
            Arc::new(Matcher { automaton, longest: patterns.iter().map(String::len).max().unwrap_or(0) })
        });
    }
}

/// The forms a value takes in chaudit's output: as is, and as JSON, XML, a URL and the
/// reports' written-out control characters escape it.
fn encodings(value: &str) -> Vec<String> {
    let value = value.trim();
    if value.len() < MIN_LEN {
        return Vec::new();
    }
    let json = serde_json::to_string(value).unwrap_or_default();
    let xml_text = value.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;");
    let xml_attribute = xml_text.replace('"', "&quot;").replace('\'', "&apos;");
    vec![
        value.to_string(),
        json.get(1..json.len().saturating_sub(1)).unwrap_or_default().to_string(),
        xml_text,
        xml_attribute,
        percent_encoding::utf8_percent_encode(value, percent_encoding::NON_ALPHANUMERIC).to_string(),
        crate::mask::without_controls(value).into_owned(),
    ]
}

/// Registers `value` (trimmed) as `kind`; whether it is new there.
fn register(value: &str, kind: fn(&mut Registry) -> &mut Vec<String>) -> bool {
    let value = value.trim();
    if value.len() < MIN_LEN {
        return false;
    }
    let mut registry = REGISTRY.write().unwrap_or_else(|poisoned| poisoned.into_inner());
    let list = kind(&mut registry);
    if list.iter().any(|known| known == value) {
        return false;
    }
    list.push(value.to_string());
    registry.stale = true;
    true
}

/// A credential of chaudit's own: never shown.
pub fn register_credential(value: &str) {
    register(value, |r| &mut r.credentials);
}

/// A value a config took from the environment: shown only with [`show_environment_values`].
pub fn register_environment_value(value: &str) {
    if register(value, |r| &mut r.environment) {
        REGISTRY.write().unwrap_or_else(|poisoned| poisoned.into_inner()).unsettled.push(value.trim().to_string());
    }
}

/// Shows again the environment values registered since the last call that `texts` (the files
/// under review) hold themselves: no secret to their author, and masking one would mask that
/// text wherever it stands (a user named `default`). One pass over the texts for all of them;
/// until it is made, every value is masked.
pub fn settle_environment_values(texts: impl IntoIterator<Item = impl AsRef<str>>) {
    let mut registry = REGISTRY.write().unwrap_or_else(|poisoned| poisoned.into_inner());
    let unsettled = std::mem::take(&mut registry.unsettled);
    if unsettled.is_empty() {
        return;
    }
    let Ok(searcher) = AhoCorasick::new(&unsettled) else { return };
    let mut held = vec![false; unsettled.len()];
    for text in texts {
        for found in searcher.find_overlapping_iter(text.as_ref()) {
            held[found.pattern().as_usize()] = true;
        }
    }
    let held: std::collections::HashSet<&String> =
        unsettled.iter().zip(held).filter(|(_, h)| *h).map(|(v, _)| v).collect();
    if !held.is_empty() {
        registry.environment.retain(|value| !held.contains(value));
        registry.stale = true;
    }
}

/// `--show-secrets`: values taken from the environment are shown (credentials never are).
pub fn show_environment_values(show: bool) {
    let mut registry = REGISTRY.write().unwrap_or_else(|poisoned| poisoned.into_inner());
    if registry.show_environment != show {
        registry.show_environment = show;
        registry.rebuild();
    }
}

/// Whether values taken from the environment are shown (`--show-secrets`).
pub fn environment_values_shown() -> bool {
    REGISTRY.read().unwrap_or_else(|poisoned| poisoned.into_inner()).show_environment
}

fn matcher() -> Option<Arc<Matcher>> {
    {
        let registry = REGISTRY.read().unwrap_or_else(|poisoned| poisoned.into_inner());
        if !registry.stale {
            return registry.matcher.clone();
        }
    }
    let mut registry = REGISTRY.write().unwrap_or_else(|poisoned| poisoned.into_inner());
    if registry.stale {
        registry.rebuild();
    }
    registry.matcher.clone()
}

/// `text` with every registered value masked.
pub fn redact(text: &str) -> Cow<'_, str> {
    match matcher() {
        Some(m) if m.automaton.is_match(text) => {
            let mut out = String::with_capacity(text.len());
            m.automaton.replace_all_with(text, &mut out, |_, _, out| {
                out.push_str(MASK);
                true
            });
            Cow::Owned(out)
        }
        _ => Cow::Borrowed(text),
    }
}

/// A writer that masks every registered value in what passes through it. A value split
/// between two writes is still found: the last bytes that could begin one are held until
/// the next write or [`Redacting::finish`] (also done on drop).
pub struct Redacting<W: Write> {
    inner: W,
    pending: Vec<u8>,
}

impl<W: Write> Redacting<W> {
    pub fn new(inner: W) -> Redacting<W> {
        Redacting { inner, pending: Vec::new() }
    }

    pub fn get_ref(&self) -> &W {
        &self.inner
    }

    /// Writes out what is held back and flushes.
    pub fn finish(&mut self) -> io::Result<()> {
        self.pass(true)?;
        self.inner.flush()
    }

    /// Writes out the pending bytes, masked, up to where a value could still be cut short
    /// (all of them at the end).
    fn pass(&mut self, at_end: bool) -> io::Result<()> {
        let Some(m) = matcher() else {
            self.inner.write_all(&self.pending)?;
            self.pending.clear();
            return Ok(());
        };
        let safe = if at_end { self.pending.len() } else { self.pending.len().saturating_sub(m.longest - 1) };
        let mut written = 0;
        for found in m.automaton.find_iter(&self.pending) {
            if found.start() >= safe {
                break;
            }
            self.inner.write_all(&self.pending[written..found.start()])?;
            self.inner.write_all(MASK.as_bytes())?;
            written = found.end();
        }
        let upto = safe.max(written);
        self.inner.write_all(&self.pending[written..upto])?;
        self.pending.drain(..upto);
        Ok(())
    }
}

impl<W: Write> Write for Redacting<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.pending.extend_from_slice(buf);
        self.pass(false)?;
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

impl<W: Write> Drop for Redacting<W> {
    fn drop(&mut self) {
        let _ = self.finish();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // The registry is the process's: each test registers values of its own.
    #[test]
    fn registered_values_are_masked_in_every_encoding() {
        register_credential("dsn-pw\"&<x>");
        let text = r#"raw dsn-pw"&<x> json dsn-pw\"&<x> xml dsn-pw&quot;&amp;&lt;x&gt; url dsn%2Dpw%22%26%3Cx%3E"#;
        assert_eq!(redact(text), "raw ****** json ****** xml ****** url ******");
        register_credential("ab");
        assert_eq!(redact("ab cd"), "ab cd", "too short to seek");
    }

    #[test]
    fn environment_values_show_only_when_asked() {
        register_environment_value("  env-value-1  ");
        assert_eq!(redact("level env-value-1."), "level ******.");
        show_environment_values(true);
        assert_eq!(redact("level env-value-1."), "level env-value-1.");
        show_environment_values(false);
        assert_eq!(redact("level env-value-1."), "level ******.");
        // the values the files under review hold are shown once settled, the others never
        register_environment_value("held-by-a-file");
        register_environment_value("held-by-none");
        assert_eq!(redact("held-by-a-file held-by-none"), "****** ******", "masked until settled");
        settle_environment_values(["<a>x</a>", "<user>held-by-a-file</user>"]);
        assert_eq!(redact("held-by-a-file held-by-none env-value-1"), "held-by-a-file ****** ******");
    }

    #[test]
    fn a_value_split_between_writes_is_found() {
        register_credential("split-secret-42");
        let mut out = Vec::new();
        {
            let mut w = Redacting::new(&mut out);
            for piece in ["{\"a\": \"spl", "it-sec", "ret-42\", \"b\": 1}", " tail split-secret-"] {
                w.write_all(piece.as_bytes()).unwrap();
            }
            w.write_all(b"42").unwrap();
        }
        assert_eq!(String::from_utf8(out).unwrap(), "{\"a\": \"******\", \"b\": 1} tail ******");
    }
}
