//! The configuration tree: ClickHouse's DOM, with provenance on every node.

use std::borrow::Cow;

use compact_str::CompactString;
use thin_vec::ThinVec;

use super::source::Origin;

#[derive(Debug, Clone, PartialEq)]
pub struct Attribute {
    pub name: String,
    pub value: String,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Text {
    /// Most values are short (ports, names, numbers): stored inline, no allocation.
    value: CompactString,
    /// CDATA sections survive ClickHouse's "drop the old text" step of a merge.
    cdata: bool,
    /// Whitespace only (kept: merges test it for every sibling, so it is computed once).
    blank: bool,
    pub origin: Origin,
}

impl Text {
    pub fn new(value: impl Into<CompactString>, cdata: bool, origin: Origin) -> Self {
        let value = value.into();
        let blank = !cdata && is_blank(&value);
        Text { value, cdata, blank, origin }
    }

    pub fn value(&self) -> &str {
        &self.value
    }

    pub fn is_cdata(&self) -> bool {
        self.cdata
    }

    pub fn is_whitespace(&self) -> bool {
        self.blank
    }

    /// Appends text (an entity reference continuing a text node).
    pub fn push_str(&mut self, more: &str) {
        self.blank = self.blank && is_blank(more);
        self.value.push_str(more);
    }
}

fn is_blank(s: &str) -> bool {
    s.bytes().all(|b| matches!(b, b' ' | b'\t' | b'\n' | b'\r'))
}

#[derive(Debug, Clone, PartialEq)]
pub enum Node {
    Element(Element),
    Text(Text),
    Comment(Text),
}

/// An element's children: a thin vector (one pointer) keeps every node of a large tree 16
/// bytes smaller than a `Vec` would.
pub type Children = ThinVec<Node>;

#[derive(Debug, Clone, PartialEq)]
pub struct Element {
    /// Tag names are short: stored inline, no allocation per element.
    pub name: CompactString,
    /// Most elements have none: a thin vector (one pointer, no allocation when empty) keeps
    /// every node of a large tree 16 bytes smaller.
    pub attributes: ThinVec<Attribute>,
    pub children: Children,
    /// Whitespace-only text stood between the children. It is not kept as nodes (it would
    /// double the tree's size) but ClickHouse counts it: an element with it "has a value".
    pub blank_text: bool,
    /// The element (start tag or YAML key) that last set or merged into this element.
    pub origin: Origin,
    /// Earlier elements this one overrode or was merged with, oldest first.
    pub history: ThinVec<Origin>,
}

/// Freed with an explicit stack: a deep tree would overflow the call stack of a recursive
/// drop. The common case (no grandchildren) takes no allocation.
impl Drop for Element {
    fn drop(&mut self) {
        let mut pending: Vec<Children> = Vec::new();
        let take_grandchildren = |children: &mut Children, pending: &mut Vec<Children>| {
            for node in children.iter_mut() {
                if let Node::Element(e) = node
                    && !e.children.is_empty()
                {
                    pending.push(std::mem::take(&mut e.children));
                }
            }
        };
        take_grandchildren(&mut self.children, &mut pending);
        while let Some(mut children) = pending.pop() {
            take_grandchildren(&mut children, &mut pending);
        }
    }
}

impl Element {
    pub fn new(name: impl Into<CompactString>, origin: Origin) -> Self {
        Element {
            name: name.into(),
            attributes: ThinVec::new(),
            children: ThinVec::new(),
            blank_text: false,
            origin,
            history: ThinVec::new(),
        }
    }

    pub fn attribute(&self, name: &str) -> Option<&str> {
        self.attributes.iter().find(|a| a.name == name).map(|a| a.value.as_str())
    }

    pub fn has_attribute(&self, name: &str) -> bool {
        self.attributes.iter().any(|a| a.name == name)
    }

    pub fn set_attribute(&mut self, name: &str, value: &str) {
        match self.attributes.iter_mut().find(|a| a.name == name) {
            Some(a) => a.value = value.to_string(),
            None => self.attributes.push(Attribute { name: name.into(), value: value.into() }),
        }
    }

    pub fn remove_attribute(&mut self, name: &str) {
        self.attributes.retain(|a| a.name != name);
    }

    /// Child elements in document order.
    pub fn elements(&self) -> impl Iterator<Item = &Element> {
        self.children.iter().filter_map(|n| match n {
            Node::Element(e) => Some(e),
            _ => None,
        })
    }

    pub fn elements_mut(&mut self) -> impl Iterator<Item = &mut Element> {
        self.children.iter_mut().filter_map(|n| match n {
            Node::Element(e) => Some(e),
            _ => None,
        })
    }

    /// The first child element with this name: what ClickHouse reads for a scalar setting.
    pub fn child(&self, name: &str) -> Option<&Element> {
        self.elements().find(|e| e.name == name)
    }

    /// Every child element with this name (repeated elements such as `listen_host`).
    pub fn children_named<'a>(&'a self, name: &'a str) -> impl Iterator<Item = &'a Element> + 'a {
        self.elements().filter(move |e| e.name == name)
    }

    /// Follows a `/`-separated path of first-matching child names.
    pub fn find(&self, path: &str) -> Option<&Element> {
        path.split('/').filter(|s| !s.is_empty()).try_fold(self, |e, name| e.child(name))
    }

    pub fn has_child_nodes(&self) -> bool {
        self.blank_text || !self.children.is_empty()
    }

    pub fn has_element_children(&self) -> bool {
        self.elements().next().is_some()
    }

    /// All text below this element, as Poco's `innerText` (what ClickHouse reads).
    pub fn inner_text(&self) -> String {
        let mut out = String::new();
        self.collect_text(&mut out);
        out
    }

    fn collect_text(&self, out: &mut String) {
        for node in &self.children {
            match node {
                Node::Text(t) => out.push_str(t.value()),
                Node::Element(e) => e.collect_text(out),
                Node::Comment(_) => {}
            }
        }
    }

    /// The element's value as a setting: its inner text without surrounding whitespace.
    pub fn value(&self) -> String {
        self.text().into_owned()
    }

    /// [`Element::value`] borrowed when it is one text node (most values are): a value only
    /// compared or looked up is not copied, nor gathered and then trimmed.
    pub fn text(&self) -> Cow<'_, str> {
        match self.children.as_slice() {
            [] => Cow::Borrowed(""),
            [Node::Text(t)] => Cow::Borrowed(t.value().trim()),
            _ => Cow::Owned(self.inner_text().trim().to_string()),
        }
    }

    /// Where this element's value was set: the first non-whitespace text node, or the element.
    pub fn value_origin(&self) -> Origin {
        self.children
            .iter()
            .find_map(|n| match n {
                Node::Text(t) if !t.is_whitespace() => Some(t.origin),
                _ => None,
            })
            .unwrap_or(self.origin)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::source::FileId;

    fn origin() -> Origin {
        Origin { file: FileId(0), offset: 0 }
    }

    fn text(v: &str) -> Node {
        Node::Text(Text::new(v, false, origin()))
    }

    #[test]
    fn child_returns_the_first_of_duplicates() {
        let mut root = Element::new("clickhouse", origin());
        for v in ["1", "2"] {
            let mut e = Element::new("max_threads", origin());
            e.children.push(text(v));
            root.children.push(Node::Element(e));
        }
        assert_eq!(root.child("max_threads").unwrap().value(), "1");
        assert_eq!(root.children_named("max_threads").count(), 2);
    }

    #[test]
    fn a_deep_tree_is_freed_without_recursion() {
        let mut e = Element::new("a", origin());
        for _ in 0..200_000 {
            let mut parent = Element::new("a", origin());
            parent.children.push(Node::Element(e));
            e = parent;
        }
        drop(e); // a recursive drop overflows the stack long before this depth
    }

    #[test]
    fn find_follows_a_path() {
        let mut a = Element::new("a", origin());
        let mut b = Element::new("b", origin());
        b.children.push(text(" 5 "));
        a.children.push(Node::Element(b));
        assert_eq!(a.find("b").unwrap().value(), "5");
        assert!(a.find("b/c").is_none());
    }
}
