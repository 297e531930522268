//! YAML config files into the same [`Element`] trees as XML, as ClickHouse's
//! YAMLParser converts them: keys become elements under `<clickhouse>`, `"@name": scalar`
//! sets an attribute, a sequence repeats its key's element (sequences of mappings only
//! with `yaml_parser_version: 2`), and `yaml_parser_version` itself is consumed.

use super::error::{ConfigError, Pointer, Result};
use super::source::{FileId, Origin, SourceFile};
use super::tree::{Attribute, Element, Node, Text};
use crate::spanned_yaml::{Failure, Yaml, item_origin, read_document};

const ATTRIBUTE_PREFIX: char = '@';
const PARSER_VERSION_KEY: &str = "yaml_parser_version";
const LATEST_PARSER_VERSION: i64 = 2;

/// Parses one YAML file (`source`, numbered `file` in its source map) into a `<clickhouse>`
/// root element.
pub fn parse(source: &SourceFile, file: FileId) -> Result<Element> {
    let fail =
        |origin: Origin, message: String| ConfigError::syntax(Pointer::in_file(source, origin.offset, 1), message);
    let document = read_document(&source.text(), file).map_err(|(origin, message)| fail(origin, message))?;
    let mut root = Element::new("clickhouse", Origin { file, offset: 0 });
    let mut converter = Converter { version: 1 };
    let mut extra = Vec::new();
    converter.process(document, &mut root, &mut extra).map_err(|(origin, message)| fail(origin, message))?;
    if !extra.is_empty() {
        return Err(fail(Origin { file, offset: 0 }, "the top level of a YAML config must be a mapping".into()));
    }
    Ok(root)
}

/// A YAML tree built elsewhere (a Kubernetes manifest's settings) into a `<clickhouse>`
/// root, by the same rules as a config file.
pub fn convert(document: Yaml, root: Origin) -> std::result::Result<Element, Failure> {
    let mut element = Element::new("clickhouse", root);
    let mut extra = Vec::new();
    Converter { version: 1 }.process(document, &mut element, &mut extra)?;
    Ok(element)
}

struct Converter {
    version: i64,
}

impl Converter {
    /// ClickHouse's `processNode`: puts `node` into `target`; elements cloned for
    /// repeated sequence items go to `siblings` (they follow `target` in its parent).
    fn process(
        &mut self,
        node: Yaml,
        target: &mut Element,
        siblings: &mut Vec<Element>,
    ) -> std::result::Result<(), Failure> {
        match node {
            Yaml::Null(_) => {}
            Yaml::Scalar(value, origin) => {
                target.children.push(Node::Text(Text::new(value, false, origin)));
            }
            Yaml::Sequence(items, _) => {
                for (i, item) in items.into_iter().enumerate() {
                    let clone = (target.has_child_nodes() && !matches!(item, Yaml::Mapping(..)))
                        || (i > 0 && self.version >= 2);
                    if clone {
                        let mut copy = Element::new(target.name.clone(), item_origin(&item).unwrap_or(target.origin));
                        let mut nested = Vec::new();
                        self.process(item, &mut copy, &mut nested)?;
                        siblings.push(copy);
                        siblings.extend(nested);
                    } else {
                        self.process(item, target, siblings)?;
                    }
                }
            }
            Yaml::Mapping(pairs, _) => {
                for (key, value) in pairs {
                    let (name, key_origin) = match key {
                        Yaml::Scalar(name, origin) => (name, origin),
                        other => {
                            let origin = item_origin(&other).unwrap_or(target.origin);
                            return Err((origin, "a key must be a string".into()));
                        }
                    };
                    if let (Some(attribute), Yaml::Scalar(text, _)) = (name.strip_prefix(ATTRIBUTE_PREFIX), &value) {
                        target.attributes.retain(|a| a.name != attribute);
                        target.attributes.push(Attribute { name: attribute.to_string(), value: text.clone() });
                    } else if name == PARSER_VERSION_KEY {
                        self.version = parser_version(&value).map_err(|m| (key_origin, m))?;
                    } else {
                        let mut child = Element::new(name, key_origin);
                        let mut clones = Vec::new();
                        self.process(value, &mut child, &mut clones)?;
                        target.children.push(Node::Element(child));
                        target.children.extend(clones.into_iter().map(Node::Element));
                    }
                }
            }
        }
        Ok(())
    }
}

fn parser_version(value: &Yaml) -> std::result::Result<i64, String> {
    let wrong = || {
        format!("{PARSER_VERSION_KEY} specifies wrong version, must be an integer in range 1..{LATEST_PARSER_VERSION}")
    };
    let Yaml::Scalar(text, _) = value else {
        return Err(wrong());
    };
    let version: i64 = text.trim().parse().map_err(|_| wrong())?;
    if !(1..=LATEST_PARSER_VERSION).contains(&version) {
        return Err(format!(
            "{PARSER_VERSION_KEY} specifies unsupported version {version}, must be 1..{LATEST_PARSER_VERSION}"
        ));
    }
    Ok(version)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::SourceMap;

    fn convert(text: &str) -> (SourceMap, Result<Element>) {
        let mut sources = SourceMap::new("/".into());
        let id = sources.add("/c.yaml".into(), text.into());
        let root = parse(sources.file(id), id);
        (sources, root)
    }

    fn names(e: &Element) -> Vec<String> {
        e.elements().map(|c| format!("{}={}", c.name, c.inner_text())).collect()
    }

    #[test]
    fn attributes_scalars_and_lists() {
        let (sources, root) = convert("listen_host: [a, b]\nmacros:\n  \"@replace\": 1\n  shard: 01\n");
        let root = root.unwrap();
        assert_eq!(names(&root), ["listen_host=a", "listen_host=b", "macros=01"]);
        let macros = root.child("macros").unwrap();
        assert_eq!(macros.attribute("replace"), Some("1"));
        let loc = sources.locate(macros.child("shard").unwrap().origin);
        assert_eq!((loc.line, loc.column), (4, 3));
    }

    #[test]
    fn sequences_of_mappings_depend_on_parser_version() {
        let doc = "seq:\n  - a: 1\n  - b: 2\n";
        let (_, v1) = convert(doc);
        assert_eq!(names(&v1.unwrap()), ["seq=12"]);
        let (_, v2) = convert(&format!("yaml_parser_version: 2\n{doc}"));
        assert_eq!(names(&v2.unwrap()), ["seq=1", "seq=2"]);
    }

    #[test]
    fn null_values_are_empty_elements_and_anchors_resolve() {
        let (_, root) = convert("a:\nb: &x 5\nc: *x\n");
        assert_eq!(names(&root.unwrap()), ["a=", "b=5", "c=5"]);
    }

    #[test]
    fn syntax_errors_name_the_line() {
        let (_, root) = convert("a: [1, 2\nb: 3\n");
        assert!(root.unwrap_err().to_string().starts_with("c.yaml:"));
        let (_, bad_version) = convert("yaml_parser_version: 7\n");
        assert!(bad_version.is_err());
    }
}
