//! YAML read into a tree that keeps every node's position, for config files and rule files
//! alike (diagnostics point at the line and column of the offending node).

pub mod events;

pub mod de;

use std::collections::HashMap;

use crate::source::{FileId, Origin};
use events::Step;

#[derive(Debug, Clone, PartialEq)]
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

pub use crate::limits::{MAX_ALIAS_BYTES, MAX_ALIAS_NODES};

/// A tree's size: (nodes, bytes of scalar text). Without recursion: a tree may be deep.
fn weight(node: &Yaml) -> (u64, u64) {
    let (mut nodes, mut bytes) = (0, 0);
    let mut pending = vec![node];
    while let Some(node) = pending.pop() {
        nodes += 1;
        match node {
            Yaml::Null(_) => {}
            Yaml::Scalar(text, _) => bytes += text.len() as u64,
            Yaml::Sequence(items, _) => pending.extend(items),
            Yaml::Mapping(pairs, _) => pending.extend(pairs.iter().flat_map(|(k, v)| [k, v])),
        }
    }
    (nodes, bytes)
}

/// The first document of the stream, with anchors resolved (yaml-cpp reads only the first).
pub fn read_document(text: &str, file: FileId) -> Result<Yaml, Failure> {
    Ok(first(build(events::of_text(text), file, 1)?, file))
}

/// The first document of a file whose events were recorded (see [`events::record`]).
pub fn read_recorded(recording: &[u8], file: FileId) -> Result<Yaml, Failure> {
    Ok(first(build(events::replay(recording), file, 1)?, file))
}

fn first(mut documents: Vec<Yaml>, file: FileId) -> Yaml {
    documents.pop().unwrap_or(Yaml::Null(Origin { file, offset: 0 }))
}

/// Up to `limit` documents of the stream (a Kubernetes manifest holds several), with anchors
/// resolved; the alias budget is the stream's.
pub fn read_documents(text: &str, file: FileId, limit: usize) -> Result<Vec<Yaml>, Failure> {
    build(events::of_text(text), file, limit)
}

fn build<'a>(steps: impl Iterator<Item = events::Item<'a>>, file: FileId, limit: usize) -> Result<Vec<Yaml>, Failure> {
    enum Open {
        Sequence(Vec<Yaml>, usize, Origin),
        Mapping(Vec<(Yaml, Yaml)>, Option<Yaml>, usize, Origin),
    }
    let at = |offset: u32| Origin { file, offset };
    let mut stack: Vec<Open> = Vec::new();
    let mut anchors: HashMap<usize, (Yaml, (u64, u64))> = HashMap::new();
    let (mut alias_nodes, mut alias_bytes) = (0u64, 0u64);
    let mut document: Option<Yaml> = None;
    let mut documents = Vec::new();

    for item in steps {
        let (step, offset) = item.map_err(|(offset, message)| (at(offset), message))?;
        let (value, anchor) = match step {
            Step::Scalar { value, plain, anchor } => {
                let is_null = plain && matches!(value.as_ref(), "" | "~" | "null" | "Null" | "NULL");
                let node = if is_null { Yaml::Null(at(offset)) } else { Yaml::Scalar(value.into_owned(), at(offset)) };
                (node, anchor)
            }
            Step::Alias(id) => {
                let (node, (nodes, bytes)) =
                    anchors.get(&id).ok_or_else(|| (at(offset), "unknown alias".to_string()))?;
                alias_nodes += nodes;
                alias_bytes += bytes;
                if alias_nodes > MAX_ALIAS_NODES || alias_bytes > MAX_ALIAS_BYTES {
                    let message = format!(
                        "aliases expand to more than {MAX_ALIAS_NODES} nodes or {} MiB of text in all (an alias bomb?): \
                         this alias is refused",
                        MAX_ALIAS_BYTES >> 20
                    );
                    return Err((at(offset), message));
                }
                (node.clone(), 0)
            }
            Step::SequenceStart { anchor } => {
                stack.push(Open::Sequence(Vec::new(), anchor, at(offset)));
                continue;
            }
            Step::MappingStart { anchor } => {
                stack.push(Open::Mapping(Vec::new(), None, anchor, at(offset)));
                continue;
            }
            Step::End => match stack.pop() {
                Some(Open::Sequence(items, anchor, origin)) => (Yaml::Sequence(items, origin), anchor),
                Some(Open::Mapping(pairs, _, anchor, origin)) => (Yaml::Mapping(pairs, origin), anchor),
                None => continue,
            },
            Step::DocumentEnd => {
                if let Some(done) = document.take() {
                    documents.push(done);
                    anchors.clear();
                    if documents.len() >= limit {
                        break;
                    }
                }
                continue;
            }
        };
        if anchor > 0 {
            let size = weight(&value);
            anchors.insert(anchor, (value.clone(), size));
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
    documents.extend(document);
    if documents.is_empty() {
        documents.push(Yaml::Null(at(0)));
    }
    Ok(documents)
}

/// The position of the first scalar in a node (for diagnostics about the node).
pub fn item_origin(node: &Yaml) -> Option<Origin> {
    match node {
        Yaml::Null(o) | Yaml::Scalar(_, o) => Some(*o),
        Yaml::Sequence(items, _) => items.iter().find_map(item_origin),
        Yaml::Mapping(pairs, _) => pairs.first().and_then(|(k, _)| item_origin(k)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(text: &str) -> Result<Yaml, Failure> {
        read_document(text, FileId(0))
    }

    fn line(text: &str, origin: Origin) -> usize {
        text[..origin.offset as usize].matches('\n').count() + 1
    }

    #[test]
    fn an_alias_bomb_is_refused_at_its_line() {
        // each level doubles nine times: 9^9 copies of `lol` (was 4 to 6.6 GB)
        let mut bomb = String::from("a: &a [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n");
        for (name, previous) in
            ["b", "c", "d", "e", "f", "g", "h", "i"].iter().zip(["a", "b", "c", "d", "e", "f", "g", "h"])
        {
            let aliases = vec![format!("*{previous}"); 9].join(", ");
            bomb.push_str(&format!("{name}: &{name} [{aliases}]\n"));
        }
        let (origin, message) = read(&bomb).unwrap_err();
        assert!(message.contains("alias bomb"), "{message}");
        assert_eq!(line(&bomb, origin), 6, "{message}");
    }

    #[test]
    fn one_big_anchor_aliased_many_times_is_refused() {
        // 4 MB aliased 400 times (was 6.9 GB)
        let mut text = format!("big: &big \"{}\"\nuses:\n", "x".repeat(4 << 20));
        for _ in 0..400 {
            text.push_str("  - *big\n");
        }
        let (origin, message) = read(&text).unwrap_err();
        assert!(message.contains("MiB"), "{message}");
        assert_eq!(line(&text, origin), 3 + (MAX_ALIAS_BYTES / (4 << 20)) as usize);
    }

    #[test]
    fn ordinary_aliases_still_resolve() {
        let doc = read("base: &base {a: 1, b: [x, y]}\none: *base\ntwo: *base\n").unwrap();
        assert_eq!(doc.get("two").and_then(|t| t.get("a")).and_then(Yaml::as_str), Some("1"));
    }

    #[test]
    fn recorded_events_build_the_tree_the_text_does() {
        let text = "a: &x {b: ~, c: 'null', d: [1, \"two\"]}\ne: *x\nf: |\n  block\n  text\n---\nsecond: doc\n";
        let recorded = events::record(text).unwrap();
        assert_eq!(read_recorded(&recorded, FileId(3)), read_document(text, FileId(3)));
        assert!(events::record("a: [unclosed").is_none(), "a text that does not parse is not recorded");
    }

    #[test]
    fn a_recording_cut_short_is_an_error() {
        let recorded = events::record("a: b\n").unwrap();
        let (_, message) = read_recorded(&recorded[..recorded.len() - 1], FileId(0)).unwrap_err();
        assert!(message.contains("malformed"), "{message}");
    }
}
