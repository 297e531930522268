//! XML config files into [`Element`] trees, every node stamped with its position.

use quick_xml::events::{BytesStart, Event};
use quick_xml::{Reader, XmlVersion};

use super::error::{ConfigError, Pointer, Result};
use super::source::{FileId, Origin, SourceFile};
use super::tree::{Attribute, Element, Node, Text};

/// Parses one XML file (`source`, numbered `file` in its source map) into its root element.
pub fn parse(source: &SourceFile, file: FileId) -> Result<Element> {
    let body = source.text.strip_prefix('\u{feff}').unwrap_or(&source.text);
    let bom = source.text.len() - body.len();
    let at = |offset: u64| Origin { file, offset: (offset as usize + bom) as u32 };
    let fail =
        |offset: u64, message: String| ConfigError::syntax(Pointer::in_file(source, at(offset).offset, 1), message);

    let mut reader = Reader::from_str(body);
    reader.config_mut().trim_text(false);
    // The children of every open element gather in one shared vector (from the index
    // saved beside the element) and move into an exact-size one when it closes: no
    // per-element vector growing, then shrinking.
    let mut stack: Vec<(Element, usize)> = Vec::new();
    let mut open = Open { children: Vec::new() };
    let mut root: Option<Element> = None;
    loop {
        let start = reader.buffer_position();
        let event = reader.read_event().map_err(|e| fail(reader.error_position(), e.to_string()))?;
        match event {
            Event::Start(_) | Event::Empty(_) if root.is_some() && stack.is_empty() => {
                return Err(fail(start, "a second root element; a config file has exactly one".into()));
            }
            Event::Start(tag) => {
                stack.push((element(&tag, at(start)).map_err(|m| fail(start, m))?, open.children.len()))
            }
            Event::Empty(tag) => {
                let e = element(&tag, at(start)).map_err(|m| fail(start, m))?;
                open.attach(&stack, &mut root, e);
            }
            Event::End(_) => {
                // quick-xml has already checked that the end tag matches
                if let Some((mut e, first)) = stack.pop() {
                    e.children = open.children.drain(first..).collect();
                    open.attach(&stack, &mut root, e);
                }
            }
            // most text events are the indentation between tags: no decoding for those
            Event::Text(t) if is_blank(&t) && open.try_mark_blank(&mut stack) => {}
            Event::Text(t) => {
                let value = t.xml_content(XmlVersion::Implicit1_0);
                open.push_text(&mut stack, &value, at(start)).map_err(|m| fail(start, m))?;
            }
            Event::GeneralRef(r) => {
                let name = r.xml_content(XmlVersion::Implicit1_0);
                let resolved = match r.resolve_char_ref() {
                    Ok(Some(c)) => c.to_string(),
                    Ok(None) => quick_xml::escape::resolve_predefined_entity(&name)
                        .ok_or_else(|| fail(start, format!("unknown entity &{name};")))?
                        .to_string(),
                    Err(e) => return Err(fail(start, e.to_string())),
                };
                open.push_text(&mut stack, &resolved, at(start)).map_err(|m| fail(start, m))?;
            }
            Event::CData(c) => {
                let value = c.xml_content(XmlVersion::Implicit1_0).into_owned();
                if !stack.is_empty() {
                    open.children.push(Node::Text(Text::new(value, true, at(start))));
                }
            }
            Event::Comment(c) => {
                if !stack.is_empty() {
                    let value = c.xml_content(XmlVersion::Implicit1_0).into_owned();
                    open.children.push(Node::Comment(Text::new(value, false, at(start))));
                }
            }
            Event::Decl(_) | Event::PI(_) | Event::DocType(_) => {}
            Event::Eof => break,
        }
    }
    if let Some((unclosed, _)) = stack.first() {
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

/// The children of the open elements, innermost last.
struct Open {
    children: Vec<Node>,
}

impl Open {
    fn attach(&mut self, stack: &[(Element, usize)], root: &mut Option<Element>, e: Element) {
        if stack.is_empty() {
            *root = Some(e);
        } else {
            self.children.push(Node::Element(e));
        }
    }

    /// Marks the open element as having (whitespace) text, unless the text would continue
    /// a text node (entity references split one node into events): false then.
    fn try_mark_blank(&self, stack: &mut [(Element, usize)]) -> bool {
        let Some((top, first)) = stack.last_mut() else { return true };
        if self.children.len() > *first && matches!(self.children.last(), Some(Node::Text(t)) if !t.is_cdata()) {
            return false;
        }
        top.blank_text = true;
        true
    }

    /// Adds text to the open element, joining it with a preceding text node (entity
    /// references arrive as separate events but are one DOM text node).
    fn push_text(
        &mut self,
        stack: &mut [(Element, usize)],
        value: &str,
        origin: Origin,
    ) -> std::result::Result<(), String> {
        let Some((top, first)) = stack.last_mut() else {
            return if value.trim().is_empty() { Ok(()) } else { Err("text outside the root element".into()) };
        };
        if self.children.len() > *first
            && let Some(Node::Text(last)) = self.children.last_mut()
            && !last.is_cdata()
        {
            last.push_str(value);
            return Ok(());
        }
        if is_blank(value) {
            top.blank_text = true;
        } else {
            self.children.push(Node::Text(Text::new(value, false, origin)));
        }
        Ok(())
    }
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
    fn cdata_is_kept_apart() {
        let root = parse_str("<r><![CDATA[<x>]]></r>").unwrap();
        assert!(matches!(&root.children[0], Node::Text(t) if t.is_cdata() && t.value() == "<x>"));
    }
}
