//! A config fragment (a fix file) as an element tree that keeps ClickHouse's merge markers (`remove="1"`,
//! `replace="1"`) as written: fragments fold into it so that the file does what applying
//! them one after another would. The config loader's tree applies the markers; this one
//! only carries them to the file.

use std::fmt::Write;

use quick_xml::events::{BytesStart, Event};
use quick_xml::{Reader, XmlVersion};

#[derive(Debug, Clone, PartialEq)]
pub struct Node {
    pub name: String,
    pub attributes: Vec<(String, String)>,
    pub text: String,
    pub children: Vec<Node>,
}

impl Node {
    fn new(name: &str) -> Node {
        Node { name: name.to_string(), attributes: Vec::new(), text: String::new(), children: Vec::new() }
    }

    /// An empty `<clickhouse>` document.
    pub fn root() -> Node {
        Node::new("clickhouse")
    }

    fn marked(&self) -> bool {
        self.removes() || self.attributes.iter().any(|(k, _)| k == "replace")
    }

    /// Whether it is `remove`d (the engine removes on the attribute's presence, whatever its
    /// value).
    pub fn removes(&self) -> bool {
        self.attributes.iter().any(|(k, _)| k == "remove")
    }

    /// Folds `later` (a fragment applied after this document) into it: a marked element, a
    /// leaf, or a name the fragment repeats (a list such as `<ip>`s) replaces what is here;
    /// two sections of the same name merge.
    pub fn fold(&mut self, later: Node) {
        let mut replaced: Vec<String> = Vec::new();
        let repeated = |name: &str| later.children.iter().filter(|c| c.name == name).count() > 1;
        let repeats: Vec<bool> = later.children.iter().map(|c| repeated(&c.name)).collect();
        for (child, repeat) in later.children.into_iter().zip(repeats) {
            let existing = self.children.iter().position(|c| c.name == child.name);
            match existing {
                Some(i)
                    if !repeat
                        && !child.marked()
                        && !self.children[i].marked()
                        && !child.children.is_empty()
                        && !self.children[i].children.is_empty() =>
                {
                    self.children[i].fold(child);
                }
                _ if repeat && replaced.contains(&child.name) => self.children.push(child),
                _ => {
                    self.children.retain(|c| c.name != child.name);
                    replaced.push(child.name.clone());
                    self.children.push(child);
                }
            }
        }
    }

    /// The document as XML, four spaces per level.
    pub fn render(&self, header: &str) -> String {
        let mut out = String::new();
        for line in header.lines() {
            let _ = writeln!(out, "<!-- {line} -->");
        }
        self.write(&mut out, 0);
        out
    }

    fn write(&self, out: &mut String, depth: usize) {
        let indent = "    ".repeat(depth);
        let _ = write!(out, "{indent}<{}", self.name);
        for (k, v) in &self.attributes {
            let _ = write!(out, " {k}=\"{}\"", quick_xml::escape::escape(v.as_str()));
        }
        if self.children.is_empty() && self.text.is_empty() {
            out.push_str("/>\n");
        } else if self.children.is_empty() {
            let _ = writeln!(out, ">{}</{}>", quick_xml::escape::escape(self.text.as_str()), self.name);
        } else {
            out.push_str(">\n");
            for child in &self.children {
                child.write(out, depth + 1);
            }
            let _ = writeln!(out, "{indent}</{}>", self.name);
        }
    }
}

/// Parses a `<clickhouse>` (or legacy `<yandex>`) document; comments and the declaration
/// are dropped, text is trimmed (whitespace between elements is no value).
pub fn parse(text: &str) -> Result<Node, String> {
    let mut reader = Reader::from_str(text);
    // text is trimmed once whole: an entity splits it into events, each with its own spaces
    reader.config_mut().trim_text(false);
    let mut stack: Vec<Node> = Vec::new();
    let mut root = None;
    loop {
        let event = reader.read_event().map_err(|e| format!("at byte {}: {e}", reader.error_position()))?;
        match event {
            Event::Start(tag) => stack.push(element(&tag)?),
            Event::Empty(tag) => {
                let node = element(&tag)?;
                match stack.last_mut() {
                    Some(parent) => parent.children.push(node),
                    None => root = Some(node),
                }
            }
            Event::End(_) => {
                let mut node = stack.pop().ok_or("a closing tag without its opening tag")?;
                node.text = node.text.trim().to_string();
                match stack.last_mut() {
                    Some(parent) => parent.children.push(node),
                    None if root.is_none() => root = Some(node),
                    None => return Err("a second root element".into()),
                }
            }
            Event::Text(t) => {
                if let Some(node) = stack.last_mut() {
                    node.text.push_str(&t.xml_content(XmlVersion::Implicit1_0));
                }
            }
            Event::CData(t) => {
                if let Some(node) = stack.last_mut() {
                    node.text.push_str(&t.xml_content(XmlVersion::Implicit1_0));
                }
            }
            Event::GeneralRef(r) => {
                if let Some(node) = stack.last_mut() {
                    let name = r.xml_content(XmlVersion::Implicit1_0);
                    let resolved = match r.resolve_char_ref() {
                        Ok(Some(c)) => c.to_string(),
                        _ => quick_xml::escape::resolve_predefined_entity(&name)
                            .ok_or_else(|| format!("unknown entity &{name};"))?
                            .to_string(),
                    };
                    node.text.push_str(&resolved);
                }
            }
            Event::Eof => break,
            _ => {}
        }
    }
    if !stack.is_empty() {
        return Err(format!("<{}> is not closed", stack[stack.len() - 1].name));
    }
    let root = root.ok_or("no root element")?;
    if root.name != "clickhouse" && root.name != "yandex" {
        return Err(format!("the root element is <{}>, not <clickhouse>", root.name));
    }
    Ok(root)
}

fn element(tag: &BytesStart) -> Result<Node, String> {
    let mut node = Node::new(tag.name().into_inner());
    for attribute in tag.attributes() {
        let attribute = attribute.map_err(|e| e.to_string())?;
        let value = attribute.normalized_value(XmlVersion::Implicit1_0).map_err(|e| e.to_string())?;
        node.attributes.push((attribute.key.as_ref().to_string(), value.into_owned()));
    }
    Ok(node)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn folded(a: &str, b: &str) -> String {
        let mut doc = parse(a).unwrap();
        doc.fold(parse(b).unwrap());
        doc.render("")
    }

    #[test]
    fn sections_merge_and_leaves_replace() {
        let out = folded(
            "<clickhouse><profiles><default><a>1</a></default></profiles></clickhouse>",
            "<clickhouse><profiles><default><a>2</a><b remove=\"1\"/></default></profiles></clickhouse>",
        );
        assert_eq!(
            out,
            "<clickhouse>\n    <profiles>\n        <default>\n            <a>2</a>\n            <b remove=\"1\"/>\n        </default>\n    </profiles>\n</clickhouse>\n"
        );
    }

    #[test]
    fn a_later_value_replaces_a_removal_and_lists_stay_whole() {
        let out = folded(
            "<clickhouse><x remove=\"1\"/><n><ip>a</ip></n></clickhouse>",
            "<clickhouse><x>1</x><n replace=\"1\"><ip>b</ip><ip>c</ip></n></clickhouse>",
        );
        assert!(out.contains("<x>1</x>") && !out.contains("remove"), "{out}");
        assert!(out.contains("<ip>b</ip>") && out.contains("<ip>c</ip>") && !out.contains("<ip>a</ip>"), "{out}");
    }

    #[test]
    fn text_is_escaped_and_bad_documents_are_refused() {
        let doc = parse("<clickhouse><ttl>a &lt; b</ttl></clickhouse>").unwrap();
        assert!(doc.render("").contains("<ttl>a &lt; b</ttl>"));
        assert!(parse("<profiles/>").is_err());
        assert!(parse("<clickhouse><a></clickhouse>").is_err());
    }
}
