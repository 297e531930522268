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
use super::tree::{Element, Node};

/// Attributes that drive merging and substitution, ignored for an element's identity.
pub const SUBSTITUTION_ATTRIBUTES: [&str; 3] = ["incl", "from_zk", "from_env"];

/// Merges fragments (root elements, in path order) into `target`, with the result of
/// ClickHouse merging them one after another. All fragments are handled in one pass per
/// element, so thousands of fragments that touch one big section stay linear.
pub fn merge_fragments(target: &mut Element, fragments: Vec<Element>, sources: &SourceMap) -> Result<()> {
    let incoming = fragments.into_iter().map(|f| f.children).collect();
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    merge_sequence(target, incoming, sources, threads)
}

/// `target` receives, in order, the children of each element merged into it. The paired
/// children's own merges are independent of each other: with `threads` > 1 they run on
/// that many threads at the first level with enough of them (e.g. the clusters of
/// remote_servers), one thread each below.
fn merge_sequence(target: &mut Element, incoming: Vec<Vec<Node>>, sources: &SourceMap, threads: usize) -> Result<()> {
    let mut level = Level::new(&target.children);
    for children in incoming {
        level.merge(&mut target.children, children, sources)?;
    }
    let Level { dead, mut pending, .. } = level;
    let mut jobs: Vec<Job> = target
        .children
        .iter_mut()
        .enumerate()
        .filter_map(|(i, node)| match node {
            Node::Element(child) => pending.remove(&i).map(|lists| (child, lists)),
            _ => None,
        })
        .collect();
    let big =
        || jobs.iter().map(|(_, lists)| lists.iter().map(Vec::len).sum::<usize>()).sum::<usize>() >= PARALLEL_MIN_NODES;
    if threads > 1 && jobs.len() >= 2 * threads && big() {
        merge_in_parallel(jobs, sources, threads)?;
    } else {
        for (child, lists) in jobs.drain(..) {
            merge_sequence(child, lists, sources, threads)?;
        }
    }
    if !dead.is_empty() {
        let mut position = 0;
        target.children.retain(|_| {
            position += 1;
            !dead.contains(&(position - 1))
        });
    }
    Ok(())
}

/// A paired child and the children lists still to merge into it.
type Job<'a> = (&'a mut Element, Vec<Vec<Node>>);

/// The children's merges spread over `threads` threads, the biggest first; the first error
/// in document order wins, as it would merging one after another.
fn merge_in_parallel(jobs: Vec<Job>, sources: &SourceMap, threads: usize) -> Result<()> {
    let weight = |job: &Job| job.1.iter().map(Vec::len).sum::<usize>();
    let mut numbered: Vec<(usize, Job)> = jobs.into_iter().enumerate().collect();
    numbered.sort_by_key(|(_, job)| std::cmp::Reverse(weight(job)));
    let mut buckets: Vec<(usize, Vec<(usize, Job)>)> = (0..threads).map(|_| (0, Vec::new())).collect();
    for (j, job) in numbered {
        if let Some(lightest) = buckets.iter_mut().min_by_key(|(load, _)| *load) {
            lightest.0 += weight(&job);
            lightest.1.push((j, job));
        }
    }
    let mut results: Vec<(usize, Result<()>)> = std::thread::scope(|scope| {
        let workers: Vec<_> = buckets
            .into_iter()
            .map(|(_, bucket)| {
                scope.spawn(move || {
                    bucket
                        .into_iter()
                        .map(|(j, (child, lists))| (j, merge_sequence(child, lists, sources, 1)))
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        workers.into_iter().flat_map(|w| w.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic))).collect()
    });
    results.sort_by_key(|(j, _)| *j);
    results.into_iter().try_for_each(|(_, r)| r)
}

/// Merges of fewer incoming nodes than this stay on one thread (a thread costs more).
const PARALLEL_MIN_NODES: usize = 4096;

/// Levels with more nodes than this get a hash index for pairing; smaller ones scan.
const INDEX_THRESHOLD: usize = 32;

/// The bookkeeping while fragments merge into one element's children. The children stay
/// where they are: removed ones are only marked dead until the end, so positions hold.
struct Level {
    dead: HashSet<usize>,
    /// Built once the level has more than [`INDEX_THRESHOLD`] nodes; small levels scan.
    by_identity: Option<HashMap<u64, Positions>>,
    /// Nodes present when the current fragment started: the only ones it can pair with.
    fragment_start: usize,
    /// Children lists still to merge into a paired child, in fragment order.
    pending: HashMap<usize, Vec<Vec<Node>>>,
    /// Live non-whitespace text nodes (each merge drops them first).
    text_nodes: usize,
    /// Per fragment: positions already paired, and where each list's unpaired part begins.
    paired: HashSet<usize>,
    cursor: HashMap<u64, usize>,
}

fn is_text(node: &Node) -> bool {
    matches!(node, Node::Text(t) if !t.is_cdata() && !t.is_whitespace())
}

impl Level {
    fn new(children: &[Node]) -> Self {
        Level {
            dead: HashSet::default(),
            by_identity: None,
            fragment_start: 0,
            pending: HashMap::default(),
            text_nodes: children.iter().filter(|n| is_text(n)).count(),
            paired: HashSet::default(),
            cursor: HashMap::default(),
        }
    }

    fn build_index(&mut self, children: &[Node]) {
        let mut index: HashMap<u64, Positions> = HashMap::default();
        for (i, node) in children.iter().enumerate() {
            if let Node::Element(e) = node
                && !self.dead.contains(&i)
            {
                index.entry(identity_hash(e)).or_default().push(i);
            }
        }
        self.by_identity = Some(index);
    }

    /// The first live child of `incoming`'s identity not yet paired in this fragment.
    fn pair(&mut self, children: &[Node], incoming: &Element, hash: u64) -> Option<usize> {
        let candidate = |p: usize| matches!(&children[p], Node::Element(e) if same_identity(e, incoming));
        let Some(index) = &self.by_identity else {
            let found = (0..self.fragment_start)
                .find(|&p| !self.paired.contains(&p) && !self.dead.contains(&p) && candidate(p))?;
            self.paired.insert(found);
            return Some(found);
        };
        let positions = index.get(&hash)?.as_slice();
        let start = self.cursor.entry(hash).or_default();
        let mut found = None;
        for (k, &p) in positions.iter().enumerate().skip(*start) {
            if self.paired.contains(&p) {
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
        self.paired.insert(p);
        Some(p)
    }

    /// A leaf merged by many fragments gets a new text from each while the old ones are only
    /// marked dead: when the last child is such a dead text, the new text takes its place
    /// (no position before it moves), so the children do not grow with every fragment.
    fn reuse_dead_text_slot(&mut self, target: &mut Vec<Node>) {
        let last = target.len().wrapping_sub(1);
        if target.last().is_some_and(is_text) && self.dead.remove(&last) {
            target.pop();
            self.fragment_start = self.fragment_start.min(last);
        }
    }

    /// ClickHouse's mergeRecursive of one fragment element's children. Pairing uses the
    /// identities as they were when this fragment started: removals, attribute changes and
    /// appended elements count from the next fragment on.
    fn merge(&mut self, target: &mut Vec<Node>, children: Vec<Node>, sources: &SourceMap) -> Result<()> {
        if self.text_nodes > 0 {
            for (i, node) in target.iter().enumerate() {
                if is_text(node) {
                    self.dead.insert(i);
                }
            }
            self.text_nodes = 0;
        }
        self.paired.clear();
        self.cursor.clear();
        self.fragment_start = target.len();
        if self.by_identity.is_none() && target.len() > INDEX_THRESHOLD {
            self.build_index(target);
        }
        let mut removed = Vec::new();
        let mut renamed = Vec::new();
        for node in children {
            let Node::Element(mut incoming) = node else {
                if is_text(&node) {
                    self.text_nodes += 1;
                    self.reuse_dead_text_slot(target);
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
            let hash = identity_hash(&incoming);
            match self.pair(target, &incoming, hash) {
                Some(i) if remove => removed.push((i, hash)),
                Some(i) => {
                    let Node::Element(existing) = &mut target[i] else { continue };
                    if replace {
                        incoming.history = std::mem::take(&mut existing.history);
                        incoming.history.push(existing.origin);
                        *existing = incoming;
                        self.pending.remove(&i);
                    } else {
                        absorb(existing, &incoming);
                        let new_hash = identity_hash(existing);
                        if new_hash != hash {
                            renamed.push((i, hash, new_hash));
                        }
                        self.pending.entry(i).or_default().push(incoming.children);
                    }
                }
                None if remove => {}
                None => {
                    strip_merge_attributes(&mut incoming);
                    target.push(Node::Element(incoming));
                }
            }
        }
        let index = self.by_identity.as_mut();
        let mut index = index;
        for (i, hash) in removed {
            self.dead.insert(i);
            self.pending.remove(&i);
            if let Some(positions) = index.as_mut().and_then(|index| index.get_mut(&hash)) {
                positions.remove(i);
            }
        }
        if let Some(index) = index {
            for (i, old, new) in renamed {
                if let Some(positions) = index.get_mut(&old) {
                    positions.remove(i);
                }
                index.entry(new).or_default().insert_sorted(i);
            }
            for (i, node) in target.iter().enumerate().skip(self.fragment_start) {
                if let Node::Element(e) = node {
                    index.entry(identity_hash(e)).or_default().push(i);
                }
            }
        }
        Ok(())
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

    fn insert_sorted(&mut self, position: usize) {
        let mut v = self.as_slice().to_vec();
        v.insert(v.partition_point(|&p| p < position), position);
        *self = Positions::from_vec(v);
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
    if incoming.has_child_nodes() {
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
        let mut root = xml::parse(&sources, id)?;
        let mut parsed = Vec::new();
        for (n, f) in fragments.iter().enumerate() {
            let id = sources.add(format!("/config.d/{n}.xml").into(), (*f).into());
            parsed.push(xml::parse(&sources, id)?);
        }
        merge_fragments(&mut root, parsed, &sources)?;
        Ok(root)
    }

    #[test]
    fn merging_on_threads_gives_the_one_thread_result() {
        // clusters repeated across fragments (merged), shards paired by position, removals
        let fragment = |i: usize| {
            let mut f = String::from("<clickhouse><remote_servers>");
            for c in 0..12 {
                f.push_str(&format!("<cluster_{}>", (i + c) % 20));
                for s in 0..3 {
                    f.push_str(&format!(
                        "<shard><replica><host>h{i}-{c}-{s}</host><port>{}</port></replica></shard>",
                        9000 + i
                    ));
                }
                if i.is_multiple_of(7) {
                    f.push_str("<shard remove=\"1\"/>");
                }
                f.push_str(&format!("</cluster_{}>", (i + c) % 20));
            }
            f.push_str("</remote_servers></clickhouse>");
            f
        };
        // 300 fragments: far above PARALLEL_MIN_NODES at remote_servers, so the threads do run
        let fragments: Vec<String> = (0..300).map(fragment).collect();
        let run = |threads: usize| {
            let mut sources = SourceMap::new("/".into());
            let id = sources.add("/config.xml".into(), "<clickhouse><remote_servers/></clickhouse>".into());
            let mut root = xml::parse(&sources, id).unwrap();
            let ids: Vec<_> = fragments
                .iter()
                .enumerate()
                .map(|(n, f)| sources.add(format!("/config.d/{n}.xml").into(), f.clone()))
                .collect();
            let parsed: Vec<Element> = ids.iter().map(|id| xml::parse(&sources, *id).unwrap()).collect();
            let incoming = parsed.into_iter().map(|f| f.children).collect();
            merge_sequence(&mut root, incoming, &sources, threads).unwrap();
            root
        };
        let one = run(1);
        assert!(one.find("remote_servers").unwrap().elements().count() == 20);
        assert_eq!(run(4), one);
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
