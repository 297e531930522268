//! The parser's events a spanned tree is built from, each at its byte offset, read from
//! YAML text or replayed from a recording of them. build.rs records the built-in rules
//! (this file is part of the build script too, so it uses nothing but std and the parser):
//! scanning their 270 KB of YAML cost every run 37 M instructions, half of loading the pack.

use std::borrow::Cow;

use saphyr_parser::{Event, Parser, ScalarStyle};

/// One event, as the tree builder needs it.
#[derive(Debug)]
pub enum Step<'a> {
    /// `plain`: written without quotes or block style (so `~` and `null` are null).
    Scalar {
        value: Cow<'a, str>,
        plain: bool,
        anchor: usize,
    },
    Alias(usize),
    SequenceStart {
        anchor: usize,
    },
    MappingStart {
        anchor: usize,
    },
    /// The end of a sequence or a mapping.
    End,
    DocumentEnd,
}

/// An event or a parse failure, at its byte offset in the text.
pub type Item<'a> = Result<(Step<'a>, u32), (u32, String)>;

/// The events of `text`, as the parser gives them.
pub fn of_text(text: &str) -> impl Iterator<Item = Item<'_>> {
    let lines = LineIndex::new(text);
    Parser::new_from_str(text).filter_map(move |item| {
        let (event, span) = match item {
            Ok(ok) => ok,
            Err(e) => {
                return Some(Err((lines.offset(text, e.marker().line(), e.marker().col()), e.info().to_string())));
            }
        };
        let step = match event {
            Event::Scalar(value, style, anchor, _) => {
                Step::Scalar { value, plain: style == ScalarStyle::Plain, anchor }
            }
            Event::Alias(id) => Step::Alias(id),
            Event::SequenceStart(anchor, _) => Step::SequenceStart { anchor },
            Event::MappingStart(anchor, _) => Step::MappingStart { anchor },
            Event::SequenceEnd | Event::MappingEnd => Step::End,
            Event::DocumentEnd => Step::DocumentEnd,
            _ => return None,
        };
        Some(Ok((step, lines.offset(text, span.start.line(), span.start.col()))))
    })
}

// A recorded event: its kind (one byte), its offset and its anchor (or an alias's anchor)
// as little-endian u32s, then a scalar's length and text.
const PLAIN_SCALAR: u8 = 0;
const OTHER_SCALAR: u8 = 1;
const ALIAS: u8 = 2;
const SEQUENCE_START: u8 = 3;
const MAPPING_START: u8 = 4;
const END: u8 = 5;
const DOCUMENT_END: u8 = 6;

/// The events of `text`, recorded for [`replay`]; none when the text does not parse (it is
/// then parsed where it is read, and fails there with its message).
pub fn record(text: &str) -> Option<Vec<u8>> {
    let mut out = Vec::new();
    for item in of_text(text) {
        let (step, offset) = item.ok()?;
        let (kind, anchor) = match &step {
            Step::Scalar { plain: true, anchor, .. } => (PLAIN_SCALAR, *anchor),
            Step::Scalar { plain: false, anchor, .. } => (OTHER_SCALAR, *anchor),
            Step::Alias(id) => (ALIAS, *id),
            Step::SequenceStart { anchor } => (SEQUENCE_START, *anchor),
            Step::MappingStart { anchor } => (MAPPING_START, *anchor),
            Step::End => (END, 0),
            Step::DocumentEnd => (DOCUMENT_END, 0),
        };
        out.push(kind);
        let mut number = |n: usize| u32::try_from(n).ok().map(|n| out.extend_from_slice(&n.to_le_bytes()));
        number(offset as usize)?;
        number(anchor)?;
        if let Step::Scalar { value, .. } = &step {
            number(value.len())?;
            out.extend_from_slice(value.as_bytes());
        }
    }
    Some(out)
}

/// The events [`record`] wrote, in order (a recording cut short or malformed ends with a
/// failure: it is chaudit's own mistake, not the rule's).
pub fn replay(recording: &[u8]) -> impl Iterator<Item = Item<'_>> {
    let mut reader = Reader(recording);
    std::iter::from_fn(move || {
        let kind = *reader.take(1)?.first()?;
        let step = reader.step(kind);
        if step.is_none() {
            reader.0 = &[];
        }
        Some(step.ok_or_else(|| (0, "chaudit's recording of this built-in rule file is malformed".to_string())))
    })
}

struct Reader<'a>(&'a [u8]);

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        let (taken, rest) = self.0.split_at_checked(n)?;
        self.0 = rest;
        Some(taken)
    }

    fn number(&mut self) -> Option<u32> {
        Some(u32::from_le_bytes(self.take(4)?.try_into().ok()?))
    }

    fn step(&mut self, kind: u8) -> Option<(Step<'a>, u32)> {
        let offset = self.number()?;
        let anchor = self.number()? as usize;
        let step = match kind {
            PLAIN_SCALAR | OTHER_SCALAR => {
                let len = self.number()? as usize;
                let value = std::str::from_utf8(self.take(len)?).ok()?;
                Step::Scalar { value: Cow::Borrowed(value), plain: kind == PLAIN_SCALAR, anchor }
            }
            ALIAS => Step::Alias(anchor),
            SEQUENCE_START => Step::SequenceStart { anchor },
            MAPPING_START => Step::MappingStart { anchor },
            END => Step::End,
            DOCUMENT_END => Step::DocumentEnd,
            _ => return None,
        };
        Some((step, offset))
    }
}

/// Byte offsets of line starts, to turn the parser's (line, character column) into bytes.
struct LineIndex(Vec<usize>);

impl LineIndex {
    fn new(text: &str) -> Self {
        let mut starts = vec![0];
        starts.extend(text.bytes().enumerate().filter(|(_, b)| *b == b'\n').map(|(i, _)| i + 1));
        LineIndex(starts)
    }

    fn offset(&self, text: &str, line: usize, col: usize) -> u32 {
        let start = self.0.get(line.saturating_sub(1)).copied().unwrap_or(text.len());
        let within = text[start..].char_indices().nth(col).map_or(text.len() - start, |(i, _)| i);
        (start + within) as u32
    }
}
