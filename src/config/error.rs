//! What can be wrong with a configuration tree. Each problem names the file, line and
//! column, and carries the file's text so miette can show the offending snippet.

use std::path::PathBuf;
use std::sync::Arc;

use miette::{Diagnostic, NamedSource, SourceSpan};
use thiserror::Error;

use super::source::{Origin, SourceFile, SourceMap};

/// A file position ready for a diagnostic: its text, the span, and `file:line:column`.
#[derive(Debug, Clone)]
pub struct Pointer {
    pub src: NamedSource<Arc<String>>,
    pub span: SourceSpan,
    pub at: String,
}

impl Pointer {
    pub fn new(sources: &SourceMap, origin: Origin, len: usize) -> Self {
        Pointer::in_file(sources.file(origin.file), origin.offset, len)
    }

    /// A pointer into a file not (yet) in a source map: one being parsed on another thread.
    pub fn in_file(file: &SourceFile, offset: u32, len: usize) -> Self {
        let loc = file.locate(offset);
        let at = loc.to_string();
        // an offset inside a multi-byte character (a parser's error position) points at it
        let text = file.text();
        let start = floor_char_boundary(&text, (offset as usize).min(text.len()));
        let len = len.min(text.len() - start);
        let line_start = text[..start].rfind('\n').map_or(0, |i| i + 1);
        let line_end = text[start..].find('\n').map_or(text.len(), |i| start + i);
        if line_end - line_start <= LONG_LINE {
            let src = miette::NamedSource::new(&file.display, text);
            return Pointer { src, span: SourceSpan::new(start.into(), len), at };
        }
        // A snippet of a very long line (a minified file) would take seconds to lay out: show
        // its part around the position, on the same line number.
        let from = floor_char_boundary(&text, start.saturating_sub(LONG_LINE / 2).max(line_start));
        let to =
            floor_char_boundary(&text, (start + LONG_LINE / 2).min(line_end)).max(start + len.min(line_end - start));
        let mut window = "\n".repeat(loc.line as usize - 1);
        let span_start = window.len() + start - from;
        window.push_str(&text[from..to]);
        let len = len.min(window.len() - span_start);
        Pointer {
            src: miette::NamedSource::new(&file.display, Arc::new(window)),
            span: SourceSpan::new(span_start.into(), len),
            at,
        }
    }
}

/// A path in an error, its control characters written out (the name of a file is the
/// author's, and must not drive the terminal).
fn shown(path: impl AsRef<std::path::Path>) -> String {
    crate::mask::without_controls(&path.as_ref().display().to_string()).into_owned()
}

/// Lines longer than this are cut around the position in a snippet.
const LONG_LINE: usize = 400;

fn floor_char_boundary(text: &str, mut i: usize) -> usize {
    while !text.is_char_boundary(i) {
        i -= 1;
    }
    i
}

/// A problem at a position in a file the user wrote (a rule file, a suppression): its code,
/// the message, `file:line:column`, and the snippet with a label.
#[derive(Debug, Error)]
#[error("{at}: {message}")]
pub struct FileProblem {
    pub code: &'static str,
    pub message: String,
    pub at: String,
    pub src: NamedSource<Arc<String>>,
    pub span: SourceSpan,
    pub label: String,
    pub help: Option<String>,
}

impl FileProblem {
    pub fn new(
        code: &'static str,
        sources: &SourceMap,
        origin: Origin,
        message: impl Into<String>,
        label: &str,
        help: Option<String>,
    ) -> Self {
        let p = Pointer::new(sources, origin, 1);
        FileProblem { code, message: message.into(), at: p.at, src: p.src, span: p.span, label: label.into(), help }
    }
}

impl Diagnostic for FileProblem {
    fn code<'a>(&'a self) -> Option<Box<dyn std::fmt::Display + 'a>> {
        Some(Box::new(self.code))
    }

    fn help<'a>(&'a self) -> Option<Box<dyn std::fmt::Display + 'a>> {
        self.help.as_ref().map(|h| Box::new(h) as Box<dyn std::fmt::Display>)
    }

    fn source_code(&self) -> Option<&dyn miette::SourceCode> {
        Some(&self.src)
    }

    fn labels(&self) -> Option<Box<dyn Iterator<Item = miette::LabeledSpan> + '_>> {
        Some(Box::new(std::iter::once(miette::LabeledSpan::new_with_span(Some(self.label.clone()), self.span))))
    }
}

#[derive(Debug, Error, Diagnostic)]
pub enum ConfigError {
    #[error("cannot read {}: {source}", shown(path))]
    #[diagnostic(code(chaudit::config::read))]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },

    #[error("configuration file {} does not exist", shown(path))]
    #[diagnostic(code(chaudit::config::not_found))]
    NotFound { path: PathBuf },

    #[error("{}:{line}:{column}: file is not valid UTF-8", shown(path))]
    #[diagnostic(code(chaudit::config::encoding), help("ClickHouse reads config files as UTF-8; re-encode the file"))]
    NotUtf8 { path: PathBuf, line: usize, column: usize },

    #[error("{}: symbolic link loop", shown(path))]
    #[diagnostic(code(chaudit::config::symlink_loop))]
    SymlinkLoop { path: PathBuf },

    #[error("{at}: {message}")]
    #[diagnostic(code(chaudit::config::syntax))]
    Syntax {
        message: String,
        at: String,
        #[source_code]
        src: NamedSource<Arc<String>>,
        #[label("here")]
        span: SourceSpan,
    },

    #[error("{at}: root element <{found}> does not match the main config's <{expected}>")]
    #[diagnostic(
        code(chaudit::config::root_mismatch),
        help("ClickHouse refuses to start: a fragment's root must be <clickhouse> (or the legacy <yandex>)")
    )]
    RootMismatch {
        found: String,
        expected: String,
        at: String,
        #[source_code]
        src: NamedSource<Arc<String>>,
        #[label("this root")]
        span: SourceSpan,
    },

    #[error("{at}: both remove and replace attributes set for element <{tag}>")]
    #[diagnostic(code(chaudit::config::remove_and_replace), help("ClickHouse refuses to start; keep one of the two"))]
    RemoveAndReplace {
        tag: String,
        at: String,
        #[source_code]
        src: NamedSource<Arc<String>>,
        #[label("remove and replace")]
        span: SourceSpan,
    },

    #[error("{at}: more than one substitution attribute (incl, from_env, from_zk) on <{tag}>")]
    #[diagnostic(
        code(chaudit::config::substitution),
        help("ClickHouse refuses to start; an element takes one substitution")
    )]
    MultipleSubstitutions {
        tag: String,
        at: String,
        #[source_code]
        src: NamedSource<Arc<String>>,
        #[label("here")]
        span: SourceSpan,
    },

    #[error("{at}: <include> {problem}")]
    #[diagnostic(code(chaudit::config::include))]
    BadInclude {
        problem: &'static str,
        at: String,
        #[source_code]
        src: NamedSource<Arc<String>>,
        #[label("here")]
        span: SourceSpan,
    },

    #[error(
        "{at}: the substitutions add more than {cap} nodes to the config tree (MAX_SUBSTITUTED_NODES), \
         the one of <{tag}> here passing it"
    )]
    #[diagnostic(
        code(chaudit::config::substitutions_too_large),
        help(
            "an `incl` whose content holds more `incl`s fans out (\"billion laughs\"): ClickHouse would expand it without a bound"
        )
    )]
    SubstitutionsTooLarge {
        cap: usize,
        tag: String,
        at: String,
        #[source_code]
        src: NamedSource<Arc<String>>,
        #[label("here")]
        span: SourceSpan,
    },

    #[error("{at}: <{tag}> has a value and {attribute} but no 'replace' attribute")]
    #[diagnostic(
        code(chaudit::config::substitution_on_value),
        help("ClickHouse refuses to start: remove the value or add replace=\"1\"")
    )]
    SubstitutionOnValue {
        tag: String,
        attribute: String,
        at: String,
        #[source_code]
        src: NamedSource<Arc<String>>,
        #[label("has a value")]
        span: SourceSpan,
    },

    #[error("{at}: include_from file {}{} does not exist", shown(path), read_as.as_deref().unwrap_or_default())]
    #[diagnostic(code(chaudit::config::include_from_missing))]
    IncludeFromMissing {
        /// As the config names it (on the server).
        path: PathBuf,
        /// ` (read as DIR/..., --root ...)` when a `--root` maps it.
        read_as: Option<String>,
        #[help]
        help: String,
        at: String,
        #[source_code]
        src: NamedSource<Arc<String>>,
        #[label("names a missing file")]
        span: SourceSpan,
    },

    #[error("{at}: {what} is {}, so <{tag}> is left empty", if *by == "incl" { "not found" } else { "not set" })]
    #[diagnostic(
        code(chaudit::config::substitution_missing),
        severity(Warning),
        help(
            "ClickHouse only warns and starts with an empty <{tag}>; a numeric or required setting then fails start-up. Provide it, or mark the element optional=\"true\" to drop it instead"
        )
    )]
    SubstitutionLeftEmpty {
        what: String,
        /// The variable or include name (`CH_SHARD`).
        name: String,
        /// The substitution: `from_env` or `incl`.
        by: &'static str,
        /// The element left as it was.
        origin: Origin,
        tag: String,
        at: String,
        #[source_code]
        src: NamedSource<Arc<String>>,
        #[label("empty after substitution")]
        span: SourceSpan,
    },

    #[error("{at}: environment variable {var} is not valid XML content: {message}")]
    #[diagnostic(code(chaudit::config::env_value))]
    BadEnvValue {
        var: String,
        message: String,
        at: String,
        #[source_code]
        src: NamedSource<Arc<String>>,
        #[label("from_env")]
        span: SourceSpan,
    },

    #[error(
        "{at}: users config {}{} does not exist: the server will not start (FILE_DOESNT_EXIST, code 107)",
        shown(path),
        read_as.as_deref().unwrap_or_default()
    )]
    #[diagnostic(code(chaudit::config::users_missing), severity(Warning))]
    UsersConfigMissing {
        /// As the config names it (on the server, relative ones under the main config's directory).
        path: PathBuf,
        /// ` (read as DIR/..., --root ...)` when a `--root` maps it.
        read_as: Option<String>,
        #[help]
        help: Option<String>,
        at: String,
        #[source_code]
        src: NamedSource<Arc<String>>,
        #[label("names a missing file")]
        span: SourceSpan,
    },

    // ---- warnings: ClickHouse starts, but the operator should know ----
    #[error("{at}: {what} is not available; <{tag}> keeps what it has")]
    #[diagnostic(code(chaudit::config::substitution_missing), severity(Warning))]
    SubstitutionNotFound {
        what: String,
        /// The variable or include name (`CH_SHARD`).
        name: String,
        /// The element left as it was.
        origin: Origin,
        tag: String,
        at: String,
        #[source_code]
        src: NamedSource<Arc<String>>,
        #[label("not substituted")]
        span: SourceSpan,
    },

    #[error("{at}: from_zk=\"{path}\" cannot be resolved offline; its value is unknown")]
    #[diagnostic(
        code(chaudit::config::from_zk),
        severity(Advice),
        help("rules that read <{tag}> see it as written, without the ZooKeeper content")
    )]
    FromZkOffline {
        path: String,
        tag: String,
        at: String,
        #[source_code]
        src: NamedSource<Arc<String>>,
        #[label("from ZooKeeper")]
        span: SourceSpan,
    },

    #[error(
        "{at}: {attribute}=\"...\" on the root of a config.d or users.d file does nothing: ClickHouse merges the file like any other (what the main file holds stays)"
    )]
    #[diagnostic(code(chaudit::config::root_attribute_ignored), severity(Warning))]
    RootAttributeIgnored {
        attribute: String,
        origin: Origin,
        at: String,
        #[source_code]
        src: NamedSource<Arc<String>>,
        #[label("ignored here")]
        span: SourceSpan,
    },

    #[error(
        "{at}: the ClickHouseKeeperInstallation `{name}` is not audited in this run, the ClickHouseInstallation beside it is: give it in a file of its own to audit its Keeper config"
    )]
    #[diagnostic(code(chaudit::config::keeper_not_audited), severity(Warning))]
    KeeperNotAudited {
        name: String,
        at: String,
        #[source_code]
        src: NamedSource<Arc<String>>,
        #[label("not audited")]
        span: SourceSpan,
    },

    #[error("{}: root <{found}> differs from the main config's <{expected}>; ClickHouse skips this file", shown(path))]
    #[diagnostic(code(chaudit::config::fragment_skipped), severity(Warning))]
    FragmentSkipped { path: String, found: String, expected: String },
}

impl ConfigError {
    pub fn syntax(pointer: Pointer, message: impl Into<String>) -> Self {
        ConfigError::Syntax { message: message.into(), at: pointer.at, src: pointer.src, span: pointer.span }
    }

    /// True for problems ClickHouse itself would start with (warnings and advice).
    pub fn is_warning(&self) -> bool {
        matches!(
            self,
            ConfigError::SubstitutionNotFound { .. }
                | ConfigError::SubstitutionLeftEmpty { .. }
                | ConfigError::UsersConfigMissing { .. }
                | ConfigError::FromZkOffline { .. }
                | ConfigError::FragmentSkipped { .. }
                | ConfigError::RootAttributeIgnored { .. }
                | ConfigError::KeeperNotAudited { .. }
        )
    }
}

pub type Result<T, E = ConfigError> = std::result::Result<T, E>;
