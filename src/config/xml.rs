//! XML config files into [`Element`] trees, every node stamped with its position.

use quick_xml::events::{BytesStart, Event};
use quick_xml::{Reader, XmlVersion};

use super::error::{ConfigError, Pointer, Result};
use super::source::{FileId, Origin, SourceMap};
use super::tree::{Attribute, Element, Node, Text};

/// Parses one XML file of the source map and returns its root element.
pub fn parse(sources: &SourceMap, file: FileId) -> Result<Element> {
    let text = std::sync::Arc::clone(&sources.file(file).text);
    let body = text.strip_prefix('\u{feff}').unwrap_or(&text);
    let bom = text.len() - body.len();
    let at = |offset: u64| Origin { file, offset: (offset as usize + bom) as u32 };
    let fail = |offset: u64, message: String| ConfigError::syntax(Pointer::new(sources, at(offset), 1), message);

    let mut reader = Reader::from_str(body);
    reader.config_mut().trim_text(false);
    let mut stack: Vec<Element> = Vec::new();
    let mut root: Option<Element> = None;
    loop {
        let start = reader.buffer_position();
        let event = reader.read_event().map_err(|e| fail(reader.error_position(), e.to_string()))?;
        match event {
            Event::Start(_) | Event::Empty(_) if root.is_some() && stack.is_empty() => {
                return Err(fail(start, "a second root element; a config file has exactly one".into()));
            }
            Event::Start(tag) => stack.push(element(&tag, at(start)).map_err(|m| fail(start, m))?),
            Event::Empty(tag) => {
                let e = element(&tag, at(start)).map_err(|m| fail(start, m))?;
                attach(&mut stack, &mut root, e);
            }
            Event::End(_) => {
                // quick-xml has already checked that the end tag matches
                if let Some(mut e) = stack.pop() {
                    // a Vec grows to 4 slots for one child: most elements hold one text node
                    e.children.shrink_to_fit();
                    attach(&mut stack, &mut root, e);
                }
            }
            Event::Text(t) => {
                let value = t.xml_content(XmlVersion::Implicit1_0);
                push_text(&mut stack, &value, at(start)).map_err(|m| fail(start, m))?;
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
                push_text(&mut stack, &resolved, at(start)).map_err(|m| fail(start, m))?;
            }
            Event::CData(c) => {
                let value = c.xml_content(XmlVersion::Implicit1_0).into_owned();
                if let Some(top) = stack.last_mut() {
                    top.children.push(Node::Text(Text::new(value, true, at(start))));
                }
            }
            Event::Comment(c) => {
                if let Some(top) = stack.last_mut() {
                    let value = c.xml_content(XmlVersion::Implicit1_0).into_owned();
                    top.children.push(Node::Comment(Text::new(value, false, at(start))));
                }
            }
            Event::Decl(_) | Event::PI(_) | Event::DocType(_) => {}
            Event::Eof => break,
        }
    }
    if let Some(open) = stack.first() {
        let origin = open.origin;
        return Err(ConfigError::syntax(
            Pointer::new(sources, origin, open.name.len() + 1),
            format!("<{}> is never closed", open.name),
        ));
    }
    root.ok_or_else(|| fail(0, "no root element".into()))
}

fn element(tag: &BytesStart, origin: Origin) -> std::result::Result<Element, String> {
    let mut e = Element::new(tag.name().as_ref().to_string(), origin);
    for attribute in tag.attributes() {
        let attribute = attribute.map_err(|err| err.to_string())?;
        let value = attribute.normalized_value(XmlVersion::Implicit1_0).map_err(|err| err.to_string())?;
        e.attributes.push(Attribute { name: attribute.key.as_ref().to_string(), value: value.into_owned() });
    }
    Ok(e)
}

fn attach(stack: &mut [Element], root: &mut Option<Element>, e: Element) {
    match stack.last_mut() {
        Some(parent) => parent.children.push(Node::Element(e)),
        None => *root = Some(e),
    }
}

/// Adds text to the open element, joining it with a preceding text node (entity
/// references arrive as separate events but are one DOM text node).
fn push_text(stack: &mut [Element], value: &str, origin: Origin) -> std::result::Result<(), String> {
    let Some(top) = stack.last_mut() else {
        return if value.trim().is_empty() { Ok(()) } else { Err("text outside the root element".into()) };
    };
    if let Some(Node::Text(last)) = top.children.last_mut()
        && !last.is_cdata()
    {
        last.push_str(value);
        return Ok(());
    }
    if value.bytes().all(|b| matches!(b, b' ' | b'\t' | b'\n' | b'\r')) {
        top.blank_text = true;
    } else {
        top.children.push(Node::Text(Text::new(value, false, origin)));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_str(text: &str) -> Result<Element> {
        let mut sources = SourceMap::new("/".into());
        let id = sources.add("/t.xml".into(), text.into());
        parse(&sources, id)
    }

    #[test]
    fn keeps_positions_text_and_entities() {
        let mut sources = SourceMap::new("/".into());
        let id = sources.add("/t.xml".into(), "<clickhouse>\n  <a x=\"1\">b &amp; c</a>\n</clickhouse>".into());
        let root = parse(&sources, id).unwrap();
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
