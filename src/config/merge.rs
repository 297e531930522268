//! ClickHouse's merge of a config fragment into the tree (ConfigProcessor::mergeRecursive).
//!
//! A fragment child pairs with the first not-yet-paired sibling of the same identity
//! (tag + attributes other than replace/remove and the substitution attributes). On a pair:
//! `remove` deletes it, `replace` swaps in the fragment's element (the attribute's presence
//! counts, not its value), otherwise attributes are copied, the old text is dropped and
//! children merge recursively. Unpaired children are appended.

use std::hash::{Hash, Hasher};

use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};

use super::error::{ConfigError, Pointer, Result};
use super::source::SourceMap;
use super::tree::{Children, Element, Node};

/// Attributes that drive merging and substitution, ignored for an element's identity.
pub const SUBSTITUTION_ATTRIBUTES: [&str; 3] = ["incl", "from_zk", "from_env"];

/// Merges fragments (root elements, in path order) into `target`, with the result of
/// ClickHouse merging them one after another.
pub fn merge_fragments(target: &mut Element, fragments: Vec<Element>, sources: &SourceMap) -> Result<()> {
    let mut merger = Merger::new(target);
    for fragment in fragments {
        merger.merge(target, fragment, sources)?;
    }
    merger.finish(target);
    Ok(())
}

/// Fragments merged into one tree as they come (each can be dropped right after), in
/// ClickHouse's order. Big sections (thousands of disks or clusters gathered from as many
/// fragments) keep a hash index of their children from one fragment to the next, so each
/// fragment costs its own size, not the size of the tree it lands in.
pub struct Merger {
    root: Level,
}

impl Merger {
    pub fn new(target: &Element) -> Self {
        Merger { root: Level::new(&target.children) }
    }

    /// Merges one fragment's root element into `target` (the root this merger was made for).
    pub fn merge(&mut self, target: &mut Element, mut fragment: Element, sources: &SourceMap) -> Result<()> {
        self.root.merge(&mut target.children, std::mem::take(&mut fragment.children), sources)
    }

    /// Drops the elements that fragments removed (until now only marked, so positions held).
    pub fn finish(self, target: &mut Element) {
        self.root.compact(&mut target.children);
    }
}

/// Levels with more nodes than this get a hash index for pairing; smaller ones scan.
const INDEX_THRESHOLD: usize = 32;

/// The bookkeeping of merges into one element's children. The children stay where they
/// are: removed ones are only marked dead until the level is compacted, so positions hold
/// for the index and for the levels below.
struct Level {
    dead: Marks,
    /// Built once the level has more than [`INDEX_THRESHOLD`] nodes; small levels scan.
    by_identity: Option<HashMap<u64, Positions>>,
    /// Live non-whitespace text nodes (each merge drops them first).
    text_nodes: usize,
    /// The levels of paired children that outlive one merge (those with an index below).
    below: HashMap<usize, Level>,
}

fn is_text(node: &Node) -> bool {
    matches!(node, Node::Text(t) if !t.is_cdata() && !t.is_whitespace())
}

/// A set of child positions. Most levels are small: their positions fit a bit mask, and
/// merging thousands of leaves allocates nothing for them.
#[derive(Default)]
struct Marks {
    low: u64,
    high: HashSet<usize>,
}

impl Marks {
    fn insert(&mut self, position: usize) {
        match 1u64.checked_shl(position as u32) {
            Some(bit) if position < 64 => self.low |= bit,
            _ => {
                self.high.insert(position);
            }
        }
    }

    /// Removes a position; false when it was not there.
    fn remove(&mut self, position: usize) -> bool {
        if position < 64 {
            let was = self.contains(position);
            self.low &= !(1u64 << position);
            was
        } else {
            self.high.remove(&position)
        }
    }

    fn contains(&self, position: usize) -> bool {
        if position < 64 { self.low & (1u64 << position) != 0 } else { self.high.contains(&position) }
    }

    fn is_empty(&self) -> bool {
        self.low == 0 && self.high.is_empty()
    }
}

/// What the current fragment has paired so far.
#[derive(Default)]
struct Paired {
    positions: Marks,
    /// Per identity (indexed levels), where its positions' unpaired part begins.
    cursor: HashMap<u64, usize>,
}

impl Level {
    fn new(children: &[Node]) -> Self {
        Level {
            dead: Marks::default(),
            by_identity: None,
            text_nodes: children.iter().filter(|n| is_text(n)).count(),
            below: HashMap::default(),
        }
    }

    fn build_index(&mut self, children: &[Node]) {
        let mut index: HashMap<u64, Positions> = HashMap::default();
        for (i, node) in children.iter().enumerate() {
            if let Node::Element(e) = node
                && !self.dead.contains(i)
            {
                index.entry(identity_hash(e)).or_default().push(i);
            }
        }
        self.by_identity = Some(index);
    }

    /// The first live child of `incoming`'s identity among the first `fragment_start`
    /// nodes, not yet paired in this fragment.
    fn pair(
        &self,
        children: &[Node],
        fragment_start: usize,
        paired: &mut Paired,
        incoming: &Element,
        hash: u64,
    ) -> Option<usize> {
        let candidate = |p: usize| matches!(&children[p], Node::Element(e) if same_identity(e, incoming));
        let Some(index) = &self.by_identity else {
            let found = (0..fragment_start)
                .find(|&p| !paired.positions.contains(p) && !self.dead.contains(p) && candidate(p))?;
            paired.positions.insert(found);
            return Some(found);
        };
        let positions = index.get(&hash)?.as_slice();
        let start = paired.cursor.entry(hash).or_default();
        let mut found = None;
        for (k, &p) in positions.iter().enumerate().skip(*start) {
            if paired.positions.contains(p) {
                if k == *start {
                    *start += 1; // everything before the cursor is paired
                }
                continue;
            }
            if candidate(p) {
                found = Some(p);
                break;
            }
        }
        let p = found?;
        paired.positions.insert(p);
        Some(p)
    }

    /// A leaf merged by many fragments gets a new text from each while the old ones are only
    /// marked dead: when the last child is such a dead text, the new text takes its place
    /// (no position before it moves), so the children do not grow with every fragment.
    fn reuse_dead_text_slot(&mut self, target: &mut Children) {
        let last = target.len().wrapping_sub(1);
        if target.last().is_some_and(is_text) && self.dead.remove(last) {
            target.pop();
        }
    }

    /// ClickHouse's mergeRecursive of one fragment element's children. Pairing uses the
    /// identities as they were when this fragment started: removals, attribute changes and
    /// appended elements count from the next fragment on.
    fn merge(&mut self, target: &mut Children, children: Children, sources: &SourceMap) -> Result<()> {
        if self.text_nodes > 0 {
            for (i, node) in target.iter().enumerate() {
                if is_text(node) {
                    self.dead.insert(i);
                }
            }
            self.text_nodes = 0;
        }
        let mut fragment_start = target.len();
        if self.by_identity.is_none() && fragment_start > INDEX_THRESHOLD {
            self.build_index(target);
        }
        let mut paired = Paired::default();
        let mut removed = Vec::new();
        for node in children {
            let Node::Element(mut incoming) = node else {
                if is_text(&node) {
                    self.text_nodes += 1;
                    self.reuse_dead_text_slot(target);
                    fragment_start = fragment_start.min(target.len());
                }
                target.push(node);
                continue;
            };
            let remove = incoming.has_attribute("remove");
            let replace = incoming.has_attribute("replace");
            if remove && replace {
                let p = Pointer::new(sources, incoming.origin, incoming.name.len() + 1);
                return Err(ConfigError::RemoveAndReplace {
                    tag: incoming.name.to_string(),
                    at: p.at,
                    src: p.src,
                    span: p.span,
                });
            }
            // only an indexed level looks identities up by their hash
            let hash = if self.by_identity.is_some() { identity_hash(&incoming) } else { 0 };
            match self.pair(target, fragment_start, &mut paired, &incoming, hash) {
                Some(i) if remove => removed.push((i, hash)),
                Some(i) => {
                    let Node::Element(existing) = &mut target[i] else { continue };
                    if replace {
                        incoming.history = std::mem::take(&mut existing.history);
                        incoming.history.push(existing.origin);
                        *existing = incoming;
                        self.below.remove(&i);
                    } else {
                        // the identity stays: only attributes outside it can be new
                        absorb(existing, &incoming);
                        self.merge_child(i, existing, std::mem::take(&mut incoming.children), sources)?;
                    }
                }
                None if remove => {}
                None => {
                    strip_merge_attributes(&mut incoming);
                    target.push(Node::Element(incoming));
                }
            }
        }
        for &(i, _) in &removed {
            self.dead.insert(i);
            self.below.remove(&i);
        }
        if let Some(index) = self.by_identity.as_mut() {
            for (i, hash) in removed {
                if let Some(positions) = index.get_mut(&hash) {
                    positions.remove(i);
                }
            }
            for (i, node) in target.iter().enumerate().skip(fragment_start) {
                if let Node::Element(e) = node {
                    index.entry(identity_hash(e)).or_default().push(i);
                }
            }
        }
        Ok(())
    }

    /// Merges `children` into the paired child at position `i`. Its level is kept for the
    /// next fragment only when it holds an index (or one below): any other level is
    /// compacted at once, since nothing refers to its positions any more.
    fn merge_child(&mut self, i: usize, child: &mut Element, children: Children, sources: &SourceMap) -> Result<()> {
        // A value over a value (`<port>` merged by every fragment): the old text is dropped
        // and the new nodes appended, which leaves exactly the new nodes.
        let replaces_value =
            child.children.iter().all(is_text) && !children.iter().any(|n| matches!(n, Node::Element(_)));
        if replaces_value && !self.below.contains_key(&i) {
            child.children = children;
            return Ok(());
        }
        let mut level = self.below.remove(&i).unwrap_or_else(|| Level::new(&child.children));
        level.merge(&mut child.children, children, sources)?;
        if level.by_identity.is_none() && level.below.is_empty() {
            level.compact(&mut child.children);
        } else {
            self.below.insert(i, level);
        }
        Ok(())
    }

    /// Drops the dead nodes of this level and of the levels below it.
    fn compact(self, children: &mut Children) {
        for (i, level) in self.below {
            if let Some(Node::Element(child)) = children.get_mut(i) {
                level.compact(&mut child.children);
            }
        }
        if !self.dead.is_empty() {
            let mut position = 0;
            children.retain(|_| {
                position += 1;
                !self.dead.contains(position - 1)
            });
        }
    }
}

/// Positions of one identity's elements in document order. Most identities occur once:
/// they cost no allocation.
#[derive(Default)]
enum Positions {
    #[default]
    None,
    One([usize; 1]),
    Many(Vec<usize>),
}

impl Positions {
    fn as_slice(&self) -> &[usize] {
        match self {
            Positions::None => &[],
            Positions::One(p) => p,
            Positions::Many(v) => v,
        }
    }

    fn push(&mut self, position: usize) {
        *self = match std::mem::take(self) {
            Positions::None => Positions::One([position]),
            Positions::One([p]) => Positions::Many(vec![p, position]),
            Positions::Many(mut v) => {
                v.push(position);
                Positions::Many(v)
            }
        };
    }

    fn remove(&mut self, position: usize) {
        let v: Vec<usize> = self.as_slice().iter().copied().filter(|&p| p != position).collect();
        *self = Positions::from_vec(v);
    }

    fn from_vec(v: Vec<usize>) -> Self {
        match v.as_slice() {
            [] => Positions::None,
            [p] => Positions::One([*p]),
            _ => Positions::Many(v),
        }
    }
}

/// The paired-element part of a merge that does not touch children: a fragment giving a
/// value drops the old substitution, attributes are copied, provenance moves on.
fn absorb(existing: &mut Element, incoming: &Element) {
    if incoming.has_child_nodes() && !existing.attributes.is_empty() {
        for name in SUBSTITUTION_ATTRIBUTES {
            existing.remove_attribute(name);
        }
    }
    for attribute in &incoming.attributes {
        existing.set_attribute(&attribute.name, &attribute.value);
    }
    existing.blank_text |= incoming.blank_text;
    existing.history.push(existing.origin);
    existing.origin = incoming.origin;
}

/// The attributes that make up an element's identity, sorted (most elements have none).
fn identity_attributes(e: &Element) -> Vec<(&str, &str)> {
    let mut attributes: Vec<(&str, &str)> = e
        .attributes
        .iter()
        .filter(|a| a.name != "replace" && a.name != "remove" && !SUBSTITUTION_ATTRIBUTES.contains(&a.name.as_str()))
        .map(|a| (a.name.as_str(), a.value.as_str()))
        .collect();
    attributes.sort_unstable();
    attributes
}

/// ClickHouse's identity of an element for pairing: its tag and sorted attributes,
/// without replace/remove/incl/from_zk/from_env.
pub fn identity(e: &Element) -> String {
    let mut key = e.name.to_string();
    for (name, value) in identity_attributes(e) {
        key.push('\0');
        key.push_str(name);
        key.push('\0');
        key.push_str(value);
    }
    key
}

fn identity_hash(e: &Element) -> u64 {
    let mut hasher = rustc_hash::FxHasher::default();
    e.name.hash(&mut hasher);
    if !e.attributes.is_empty() {
        let attributes = identity_attributes(e);
        if !attributes.is_empty() {
            attributes.hash(&mut hasher);
        }
    }
    hasher.finish()
}

fn same_identity(a: &Element, b: &Element) -> bool {
    a.name == b.name
        && ((a.attributes.is_empty() && b.attributes.is_empty()) || identity_attributes(a) == identity_attributes(b))
}

/// An appended element keeps its own attributes, but below it `replace` is meaningless
/// and `remove`-marked children are dropped (ClickHouse's deleteAttributesRecursive).
fn strip_merge_attributes(e: &mut Element) {
    e.children.retain(|n| !matches!(n, Node::Element(c) if c.has_attribute("remove")));
    for child in e.elements_mut() {
        child.remove_attribute("replace");
        strip_merge_attributes(child);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::xml;

    fn merged(main: &str, fragments: &[&str]) -> Result<Element> {
        let mut sources = SourceMap::new("/".into());
        let id = sources.add("/config.xml".into(), main.into());
        let mut root = xml::parse(sources.file(id), id)?;
        let mut parsed = Vec::new();
        for (n, f) in fragments.iter().enumerate() {
            let id = sources.add(format!("/config.d/{n}.xml").into(), (*f).into());
            parsed.push(xml::parse(sources.file(id), id)?);
        }
        merge_fragments(&mut root, parsed, &sources)?;
        Ok(root)
    }

    fn values(root: &Element, name: &str) -> Vec<String> {
        root.children_named(name).map(Element::value).collect()
    }

    #[test]
    fn positional_pairing_of_repeated_elements() {
        let root = merged(
            "<clickhouse><listen_host>::1</listen_host><listen_host>127.0.0.1</listen_host></clickhouse>",
            &["<clickhouse><listen_host>0.0.0.0</listen_host></clickhouse>"],
        )
        .unwrap();
        assert_eq!(values(&root, "listen_host"), ["0.0.0.0", "127.0.0.1"]);
    }

    #[test]
    fn replace_counts_by_presence_and_remove_deletes() {
        let root = merged(
            "<clickhouse><a><x>1</x><y>2</y></a><b>1</b></clickhouse>",
            &["<clickhouse><a replace=\"0\"><z>3</z></a><b remove=\"remove\"/></clickhouse>"],
        )
        .unwrap();
        let a = root.child("a").unwrap();
        assert!(a.child("x").is_none());
        assert_eq!(a.child("z").unwrap().value(), "3");
        assert!(root.child("b").is_none());
    }

    #[test]
    fn attributes_are_part_of_identity() {
        let root = merged(
            "<clickhouse><shard><r>1</r></shard></clickhouse>",
            &["<clickhouse><shard tag=\"x\"><r>2</r></shard></clickhouse>"],
        )
        .unwrap();
        assert_eq!(root.children_named("shard").count(), 2);
    }

    #[test]
    fn text_is_replaced_and_history_kept() {
        let root = merged("<clickhouse><a>1</a></clickhouse>", &["<clickhouse><a>2</a></clickhouse>"]).unwrap();
        let a = root.child("a").unwrap();
        assert_eq!(a.value(), "2");
        assert_eq!(a.history.len(), 1);
    }

    #[test]
    fn an_empty_fragment_element_empties_the_value() {
        let root = merged("<clickhouse><a>1</a></clickhouse>", &["<clickhouse><a/></clickhouse>"]).unwrap();
        assert_eq!(root.child("a").unwrap().value(), "");
    }

    #[test]
    fn remove_and_replace_together_is_an_error() {
        let err =
            merged("<clickhouse><a/></clickhouse>", &["<clickhouse><a remove=\"1\" replace=\"1\"/></clickhouse>"]);
        assert!(matches!(err, Err(ConfigError::RemoveAndReplace { .. })));
    }
}
