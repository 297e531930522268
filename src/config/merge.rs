//! ClickHouse's merge of a config fragment into the tree (ConfigProcessor::mergeRecursive).
//!
//! A fragment child pairs with the first not-yet-paired sibling of the same identity
//! (tag + attributes other than replace/remove and the substitution attributes). On a pair:
//! `remove` deletes it, `replace` swaps in the fragment's element (the attribute's presence
//! counts, not its value), otherwise attributes are copied, the old text is dropped and
//! children merge recursively. Unpaired children are appended.

use std::collections::{HashMap, VecDeque};

use super::error::{ConfigError, Pointer, Result};
use super::source::SourceMap;
use super::tree::{Element, Node};

/// Attributes that drive merging and substitution, ignored for an element's identity.
pub const SUBSTITUTION_ATTRIBUTES: [&str; 3] = ["incl", "from_zk", "from_env"];

/// Merges the children of `with` into `target` (roots and `<include merge>` use this directly:
/// their own attributes are not copied).
pub fn merge_children(target: &mut Element, with: Element, sources: &SourceMap) -> Result<()> {
    // ClickHouse drops the old (non-whitespace, non-CDATA) text first: the fragment's text wins.
    target.children.retain(|n| !matches!(n, Node::Text(t) if !t.cdata && !t.is_whitespace()));

    let mut by_identity: HashMap<String, VecDeque<usize>> = HashMap::new();
    for (i, node) in target.children.iter().enumerate() {
        if let Node::Element(e) = node {
            by_identity.entry(identity(e)).or_default().push_back(i);
        }
    }
    let mut slots: Vec<Option<Node>> = std::mem::take(&mut target.children).into_iter().map(Some).collect();

    for node in with.children {
        let Node::Element(mut incoming) = node else {
            slots.push(Some(node));
            continue;
        };
        let remove = incoming.has_attribute("remove");
        let replace = incoming.has_attribute("replace");
        if remove && replace {
            let p = Pointer::new(sources, incoming.origin, incoming.name.len() + 1);
            return Err(ConfigError::RemoveAndReplace { tag: incoming.name, at: p.at, src: p.src, span: p.span });
        }
        let paired = by_identity.get_mut(&identity(&incoming)).and_then(VecDeque::pop_front);
        match paired {
            Some(i) if remove => slots[i] = None,
            Some(i) => {
                let Some(Node::Element(existing)) = slots[i].as_mut() else {
                    continue;
                };
                if replace {
                    incoming.history = std::mem::take(&mut existing.history);
                    incoming.history.push(existing.origin);
                    *existing = incoming;
                } else {
                    merge_element(existing, incoming, sources)?;
                }
            }
            None if remove => {}
            None => {
                strip_merge_attributes(&mut incoming);
                slots.push(Some(Node::Element(incoming)));
            }
        }
    }
    target.children = slots.into_iter().flatten().collect();
    Ok(())
}

/// A paired element without remove/replace: attributes copied, children merged.
fn merge_element(existing: &mut Element, incoming: Element, sources: &SourceMap) -> Result<()> {
    // A fragment that gives a value drops a substitution the old element asked for.
    if incoming.has_child_nodes() {
        for name in SUBSTITUTION_ATTRIBUTES {
            existing.remove_attribute(name);
        }
    }
    for attribute in &incoming.attributes {
        existing.set_attribute(&attribute.name, &attribute.value);
    }
    existing.history.push(existing.origin);
    existing.origin = incoming.origin;
    merge_children(existing, incoming, sources)
}

/// ClickHouse's identity of an element for pairing: its tag and sorted attributes,
/// without replace/remove/incl/from_zk/from_env.
pub fn identity(e: &Element) -> String {
    let mut attributes: Vec<(&str, &str)> = e
        .attributes
        .iter()
        .filter(|a| a.name != "replace" && a.name != "remove" && !SUBSTITUTION_ATTRIBUTES.contains(&a.name.as_str()))
        .map(|a| (a.name.as_str(), a.value.as_str()))
        .collect();
    attributes.sort_unstable();
    let mut key = e.name.clone();
    for (name, value) in attributes {
        key.push('\0');
        key.push_str(name);
        key.push('\0');
        key.push_str(value);
    }
    key
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
        for (n, f) in fragments.iter().enumerate() {
            let id = sources.add(format!("/config.d/{n}.xml").into(), (*f).into());
            let with = xml::parse(&sources, id)?;
            merge_children(&mut root, with, &sources)?;
        }
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
