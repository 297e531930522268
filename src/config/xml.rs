//! XML config files into [`Element`] trees, every node stamped with its position.

use quick_xml::events::{BytesStart, Event};
use quick_xml::{Reader, XmlVersion};

use super::error::{ConfigError, Pointer, Result};
use super::source::{FileId, Origin, SourceFile};
use super::tree::{Attribute, Children, Element, Node, Text};

/// Elements nested deeper than this are refused. The real engine has no limit of its own but
/// slows down steeply with depth (25.8.2.1: 2,000 levels take seconds, 3,000 more than 20 s)
/// and real configs stay under ten; past this, recursion over the tree could exhaust a stack.
pub const MAX_DEPTH: usize = 1000;

/// Parses one XML file (`source`, numbered `file` in its source map) into its root element.
pub fn parse(source: &SourceFile, file: FileId) -> Result<Element> {
    let text = source.text();
    let body = text.strip_prefix('\u{feff}').unwrap_or(&text);
    let bom = text.len() - body.len();
    let at = |offset: u64| Origin { file, offset: (offset as usize + bom) as u32 };
    let fail =
        |offset: u64, message: String| ConfigError::syntax(Pointer::in_file(source, at(offset).offset, 1), message);

    let mut reader = Reader::from_str(body);
    reader.config_mut().trim_text(false);
    let mut open = Open::default();
    let mut root: Option<Element> = None;
    loop {
        let start = reader.buffer_position();
        let event = reader.read_event().map_err(|e| fail(reader.error_position(), e.to_string()))?;
        match event {
            Event::Start(_) | Event::Empty(_) if root.is_some() && open.stack.is_empty() => {
                return Err(fail(start, "a second root element; a config file has exactly one".into()));
            }
            Event::Start(_) if open.stack.len() >= MAX_DEPTH => {
                return Err(fail(start, format!("elements nest deeper than {MAX_DEPTH} levels")));
            }
            Event::Start(tag) => open.start(element(&tag, at(start)).map_err(|m| fail(start, m))?),
            Event::Empty(tag) => {
                let e = element(&tag, at(start)).map_err(|m| fail(start, m))?;
                if open.stack.is_empty() {
                    root = Some(e);
                } else {
                    open.nodes.push(Node::Element(e));
                }
            }
            // quick-xml has already checked that the end tag matches
            Event::End(_) => {
                if let Some(e) = open.end() {
                    root = Some(e);
                }
            }
            // most text events are the indentation between tags: no decoding for those
            Event::Text(t) if is_blank(&t) && open.try_mark_blank() => {}
            // XML forbids it outside CDATA, and ClickHouse's parser refuses it
            Event::Text(t) if cdata_end(&t).is_some() => {
                let at = start + cdata_end(&t).unwrap_or(0) as u64;
                return Err(fail(at, "`]]>` is not allowed in text (write `]]&gt;`)".into()));
            }
            Event::Text(t) => {
                let value = t.xml_content(XmlVersion::Implicit1_0);
                open.push_text(&value, at(start)).map_err(|m| fail(start, m))?;
            }
            Event::GeneralRef(r) => {
                let name = r.xml_content(XmlVersion::Implicit1_0);
                let mut utf8 = [0; 4];
                let resolved = match r.resolve_char_ref() {
                    Ok(Some(c)) => &*c.encode_utf8(&mut utf8),
                    Ok(None) => quick_xml::escape::resolve_predefined_entity(&name)
                        .ok_or_else(|| fail(start, format!("unknown entity &{name};")))?,
                    Err(e) => return Err(fail(start, e.to_string())),
                };
                open.push_text(resolved, at(start)).map_err(|m| fail(start, m))?;
            }
            Event::CData(c) => {
                let value = c.xml_content(XmlVersion::Implicit1_0).into_owned();
                if !open.stack.is_empty() {
                    open.nodes.push(Node::Text(Text::new(value, true, at(start))));
                }
            }
            Event::Comment(c) => {
                if !open.stack.is_empty() {
                    let value = c.xml_content(XmlVersion::Implicit1_0).into_owned();
                    open.nodes.push(Node::Comment(Text::new(value, false, at(start))));
                }
            }
            Event::Decl(_) | Event::PI(_) | Event::DocType(_) => {}
            Event::Eof => break,
        }
    }
    if let Some(Node::Element(unclosed)) = open.stack.first().map(|&at| &open.nodes[at]) {
        return Err(ConfigError::syntax(
            Pointer::in_file(source, unclosed.origin.offset, unclosed.name.len() + 1),
            format!("<{}> is never closed", unclosed.name),
        ));
    }
    root.ok_or_else(|| fail(0, "no root element".into()))
}

fn element(tag: &BytesStart, origin: Origin) -> std::result::Result<Element, String> {
    let mut e = Element::new(tag.name().into_inner(), origin);
    if is_blank(tag.attributes_raw()) {
        return Ok(e);
    }
    for attribute in tag.attributes() {
        let attribute = attribute.map_err(|err| err.to_string())?;
        let value = attribute.normalized_value(XmlVersion::Implicit1_0).map_err(|err| err.to_string())?;
        e.attributes.push(Attribute { name: attribute.key.as_ref().to_string(), value: value.into_owned() });
    }
    Ok(e)
}

/// The open elements, each followed by its children so far, in one vector: an element is
/// written once, where it stays until it closes and its children move into an exact-size
/// vector of its own (no per-element growing and shrinking, no moves through a stack).
#[derive(Default)]
struct Open {
    nodes: Vec<Node>,
    /// Where each open element is in `nodes`, innermost last.
    stack: Vec<usize>,
}

impl Open {
    fn start(&mut self, e: Element) {
        self.stack.push(self.nodes.len());
        self.nodes.push(Node::Element(e));
    }

    /// Closes the innermost element; the root element when that was it.
    fn end(&mut self) -> Option<Element> {
        let at = self.stack.pop()?;
        let children: Children = self.nodes.drain(at + 1..).collect();
        if let Some(Node::Element(e)) = self.nodes.get_mut(at) {
            e.children = children;
        }
        if !self.stack.is_empty() {
            return None;
        }
        match self.nodes.pop() {
            Some(Node::Element(root)) => Some(root),
            _ => None,
        }
    }

    /// The innermost open element, and whether its last child is a text node (entity
    /// references split one DOM text node into events).
    fn top(&mut self) -> Option<(&mut Element, bool)> {
        let &at = self.stack.last()?;
        let continues_text =
            self.nodes.len() > at + 1 && matches!(self.nodes.last(), Some(Node::Text(t)) if !t.is_cdata());
        match &mut self.nodes[at] {
            Node::Element(e) => Some((e, continues_text)),
            _ => None,
        }
    }

    /// Marks the open element as having (whitespace) text, unless the text would continue
    /// a text node: false then.
    fn try_mark_blank(&mut self) -> bool {
        match self.top() {
            None => true,
            Some((_, true)) => false,
            Some((top, false)) => {
                top.blank_text = true;
                true
            }
        }
    }

    /// Adds text to the open element, joining it with a preceding text node.
    fn push_text(&mut self, value: &str, origin: Origin) -> std::result::Result<(), String> {
        let Some((top, continues_text)) = self.top() else {
            return if value.trim().is_empty() { Ok(()) } else { Err("text outside the root element".into()) };
        };
        if continues_text {
            if let Some(Node::Text(last)) = self.nodes.last_mut() {
                last.push_str(value);
            }
        } else if is_blank(value) {
            top.blank_text = true;
        } else {
            self.nodes.push(Node::Text(Text::new(value, false, origin)));
        }
        Ok(())
    }
}

/// Where `]]>` starts in text. Text rarely holds a `>`: looking for it alone is far cheaper
/// than a substring search set up for every text event.
fn cdata_end(text: &str) -> Option<usize> {
    memchr::memchr_iter(b'>', text.as_bytes()).find(|&i| i >= 2 && &text.as_bytes()[i - 2..i] == b"]]").map(|i| i - 2)
}

/// XML whitespace only (a line break stays one when its `\r` is normalised away).
fn is_blank(text: &str) -> bool {
    text.bytes().all(|b| matches!(b, b' ' | b'\t' | b'\n' | b'\r'))
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::config::SourceMap;

    fn parse_str(text: &str) -> Result<Element> {
        let mut sources = SourceMap::new("/".into());
        let id = sources.add("/t.xml".into(), text.into());
        parse(sources.file(id), id)
    }

    #[test]
    fn keeps_positions_text_and_entities() {
        let mut sources = SourceMap::new("/".into());
        let id = sources.add("/t.xml".into(), "<clickhouse>\n  <a x=\"1\">b &amp; c</a>\n</clickhouse>".into());
        let root = parse(sources.file(id), id).unwrap();
        let a = root.child("a").unwrap();
        assert_eq!(a.inner_text(), "b & c");
        assert_eq!(a.attribute("x"), Some("1"));
        let loc = sources.locate(a.origin);
        assert_eq!((loc.line, loc.column), (2, 3));
    }

    #[test]
    fn malformed_xml_names_line_and_column() {
        let err = parse_str("<clickhouse>\n  <a>1</b>\n</clickhouse>").unwrap_err();
        let text = err.to_string();
        assert!(text.starts_with("t.xml:2:"), "{text}");
    }

    #[test]
    fn unclosed_and_empty_documents_are_errors() {
        assert!(parse_str("<clickhouse><a>").is_err());
        assert!(parse_str("   ").is_err());
        assert!(parse_str("<a/><b/>").is_err());
    }

    #[test]
    fn nesting_past_the_limit_is_refused_at_its_line() {
        let deep = |n: usize| format!("<clickhouse>\n{}{}</clickhouse>", "<a>".repeat(n), "</a>".repeat(n));
        assert!(parse_str(&deep(MAX_DEPTH - 1)).is_ok());
        let err = parse_str(&deep(200_000)).unwrap_err().to_string();
        assert!(err.starts_with("t.xml:2:") && err.contains("nest deeper than 1000"), "{err}");
    }

    #[test]
    fn a_cdata_end_in_text_is_refused() {
        let err = parse_str("<r>\n x]]>y</r>").unwrap_err().to_string();
        assert!(err.starts_with("t.xml:2:3:") && err.contains("]]>"), "{err}");
        assert!(parse_str("<r>x]]&gt;y</r>").is_ok());
    }

    #[test]
    fn cdata_is_kept_apart() {
        let root = parse_str("<r><![CDATA[<x>]]></r>").unwrap();
        assert!(matches!(&root.children[0], Node::Text(t) if t.is_cdata() && t.value() == "<x>"));
    }
}
