//! YAML read into a tree that keeps every node's position, for config files and rule files
//! alike (diagnostics point at the line and column of the offending node).

use std::collections::HashMap;

use saphyr_parser::{Event, Parser, ScalarStyle, Span};

use crate::config::source::{FileId, Origin};

#[derive(Debug, Clone)]
pub enum Yaml {
    Null(Origin),
    Scalar(String, Origin),
    Sequence(Vec<Yaml>, Origin),
    Mapping(Vec<(Yaml, Yaml)>, Origin),
}

impl Yaml {
    pub fn origin(&self) -> Origin {
        match self {
            Yaml::Null(o) | Yaml::Scalar(_, o) | Yaml::Sequence(_, o) | Yaml::Mapping(_, o) => *o,
        }
    }

    pub fn as_str(&self) -> Option<&str> {
        match self {
            Yaml::Scalar(s, _) => Some(s),
            _ => None,
        }
    }

    /// The value of `key` in a mapping.
    pub fn get(&self, key: &str) -> Option<&Yaml> {
        match self {
            Yaml::Mapping(pairs, _) => pairs.iter().find(|(k, _)| k.as_str() == Some(key)).map(|(_, v)| v),
            _ => None,
        }
    }
}

/// A parse failure: where, and what.
pub type Failure = (Origin, String);

/// The first document of the stream, with anchors resolved (yaml-cpp reads only the first).
pub fn read_document(text: &str, file: FileId) -> Result<Yaml, Failure> {
    enum Open {
        Sequence(Vec<Yaml>, usize, Origin),
        Mapping(Vec<(Yaml, Yaml)>, Option<Yaml>, usize, Origin),
    }
    let lines = LineIndex::new(text);
    let origin_of = |line: usize, col: usize| Origin { file, offset: lines.offset(text, line, col) };
    let at = |span: &Span| origin_of(span.start.line(), span.start.col());
    let mut stack: Vec<Open> = Vec::new();
    let mut anchors: HashMap<usize, Yaml> = HashMap::new();
    let mut document: Option<Yaml> = None;

    for item in Parser::new_from_str(text) {
        let (event, span) = item.map_err(|e| (origin_of(e.marker().line(), e.marker().col()), e.info().to_string()))?;
        let (value, anchor) = match event {
            Event::Scalar(value, style, anchor, _) => {
                let is_null =
                    style == ScalarStyle::Plain && matches!(value.as_ref(), "" | "~" | "null" | "Null" | "NULL");
                let node = if is_null { Yaml::Null(at(&span)) } else { Yaml::Scalar(value.into_owned(), at(&span)) };
                (node, anchor)
            }
            Event::Alias(id) => {
                let node = anchors.get(&id).cloned().ok_or_else(|| (at(&span), "unknown alias".to_string()))?;
                (node, 0)
            }
            Event::SequenceStart(anchor, _) => {
                stack.push(Open::Sequence(Vec::new(), anchor, at(&span)));
                continue;
            }
            Event::MappingStart(anchor, _) => {
                stack.push(Open::Mapping(Vec::new(), None, anchor, at(&span)));
                continue;
            }
            Event::SequenceEnd | Event::MappingEnd => match stack.pop() {
                Some(Open::Sequence(items, anchor, origin)) => (Yaml::Sequence(items, origin), anchor),
                Some(Open::Mapping(pairs, _, anchor, origin)) => (Yaml::Mapping(pairs, origin), anchor),
                None => continue,
            },
            Event::DocumentEnd => {
                if document.is_some() {
                    break;
                }
                continue;
            }
            _ => continue,
        };
        if anchor > 0 {
            anchors.insert(anchor, value.clone());
        }
        match stack.last_mut() {
            Some(Open::Sequence(items, _, _)) => items.push(value),
            Some(Open::Mapping(pairs, pending_key, _, _)) => match pending_key.take() {
                Some(key) => pairs.push((key, value)),
                None => *pending_key = Some(value),
            },
            None => document = Some(value),
        }
    }
    Ok(document.unwrap_or(Yaml::Null(origin_of(1, 0))))
}

/// The position of the first scalar in a node (for diagnostics about the node).
pub fn item_origin(node: &Yaml) -> Option<Origin> {
    match node {
        Yaml::Null(o) | Yaml::Scalar(_, o) => Some(*o),
        Yaml::Sequence(items, _) => items.iter().find_map(item_origin),
        Yaml::Mapping(pairs, _) => pairs.first().and_then(|(k, _)| item_origin(k)),
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
