//! Substitutions after the merge (ConfigProcessor::doIncludesRecursive): `incl` from the
//! include_from file, `from_env`, `from_zk`, and `<include .../>` elements.

use std::collections::HashMap;

use super::error::{ConfigError, Pointer, Result};
use super::merge::{SUBSTITUTION_ATTRIBUTES, merge_fragments};
use super::source::{Origin, SourceMap};
use super::tree::{Children, Element, Node, Text};
use super::xml;
use crate::limits::MAX_SUBSTITUTED_NODES;

/// Substitutions inside substituted content nest at most this deep. ClickHouse recurses without
/// a limit, so a self-including config never finishes there.
const MAX_INCLUDE_DEPTH: usize = 256;

pub struct Substituter<'a> {
    pub include_from: Option<&'a Element>,
    pub env: &'a HashMap<String, String>,
    /// Where `env` comes from when it is not chaudit's own (`--env-file .env`).
    pub env_origin: Option<&'a str>,
    pub sources: &'a SourceMap,
    /// Problems ClickHouse starts with (it only logs a warning for them).
    pub problems: &'a mut Vec<ConfigError>,
    /// Nodes the substitutions added so far (at most [`MAX_SUBSTITUTED_NODES`]).
    pub added: usize,
}

/// The text of the comment that holds an `<include merge>`'s place while it merges (NUL
/// cannot be in a parsed comment).
const PLACE: &str = "\0include";

/// What the parent does with a child after its substitution.
enum Outcome {
    Keep,
    Remove,
    /// `<include>` replaced by the included nodes (which ClickHouse does not substitute again).
    Splice(Children),
    /// `<include merge="true">`: the included nodes merge into the parent.
    MergeIntoParent(Element),
}

impl Substituter<'_> {
    /// Substitutes `root` and everything below it. ClickHouse substitutes the root like any
    /// other element: `<yandex incl="base_config">` (an old layout with include_from
    /// metrika.xml) takes its content from the include file. A root left without its
    /// substitution stays, unless it is optional: ClickHouse removes an optional element
    /// whose substitution finds nothing, the root too, and then refuses the document ("No
    /// root node in document", 25.8.2.1).
    pub fn run(&mut self, root: &mut Element) -> Result<()> {
        match self.process(root, 0)? {
            Outcome::Remove => Err(self.syntax(
                root,
                "the optional root element's substitution finds nothing: ClickHouse removes the root and refuses the file (no root node in document)",
            )),
            _ => Ok(()),
        }
    }

    /// Substitutes one element in place, e.g. `<include_from from_env=...>` before it is read.
    pub fn element(&mut self, e: &mut Element) -> Result<bool> {
        Ok(!matches!(self.process(e, 0)?, Outcome::Remove))
    }

    fn children(&mut self, e: &mut Element, depth: usize) -> Result<()> {
        let mut i = 0;
        while i < e.children.len() {
            let Node::Element(child) = &mut e.children[i] else {
                i += 1;
                continue;
            };
            match self.process(child, depth)? {
                Outcome::Keep => i += 1,
                Outcome::Remove => {
                    e.children.remove(i);
                }
                Outcome::Splice(nodes) => {
                    let n = nodes.len();
                    e.children.splice(i..=i, nodes);
                    i += n;
                }
                Outcome::MergeIntoParent(source) => {
                    // ClickHouse goes on with the sibling that followed the <include>, but the
                    // merge drops text nodes (and `remove` may drop elements) before it: a
                    // comment, which merges leave alone, keeps the place
                    e.children[i] = Node::Comment(Text::new(PLACE, false, e.origin));
                    // it merges the included element once per child node the element has
                    // (whitespace nodes count: chaudit keeps none, so an indented element is
                    // taken for one with whitespace around each child); again and again only
                    // changes something while `remove` finds more
                    let child_nodes = match source.blank_text {
                        true => 2 * source.children.len() + 1,
                        false => source.children.len(),
                    };
                    let mut last = None;
                    for time in 0..child_nodes {
                        if time > 0 {
                            self.count(e, nodes(&source))?;
                        }
                        merge_fragments(e, vec![source.clone()], self.sources)?;
                        let now = nodes(e);
                        if last == Some(now) {
                            break;
                        }
                        last = Some(now);
                    }
                    i = e
                        .children
                        .iter()
                        .position(|n| matches!(n, Node::Comment(t) if t.value() == PLACE))
                        .unwrap_or(i);
                    if matches!(e.children.get(i), Some(Node::Comment(t)) if t.value() == PLACE) {
                        e.children.remove(i);
                    }
                }
            }
        }
        Ok(())
    }

    /// `depth` counts the substitutions this element lies in, not its nesting.
    fn process(&mut self, e: &mut Element, depth: usize) -> Result<Outcome> {
        if depth > MAX_INCLUDE_DEPTH {
            return Err(self.syntax(e, "substitutions nest too deeply (an include loop?)"));
        }
        let present: Vec<&str> = SUBSTITUTION_ATTRIBUTES.into_iter().filter(|a| e.has_attribute(a)).collect();
        if present.len() > 1 {
            let p = self.point(e);
            return Err(ConfigError::MultipleSubstitutions {
                tag: e.name.to_string(),
                at: p.at,
                src: p.src,
                span: p.span,
            });
        }
        let is_include = e.name == "include";
        if is_include && e.has_child_nodes() {
            return Err(self.bad_include(e, "must have no children"));
        }
        if is_include && present.is_empty() {
            return Err(self.bad_include(e, "needs one of incl, from_env or from_zk"));
        }
        let Some(&kind) = present.first() else {
            self.children(e, depth)?;
            return Ok(Outcome::Keep);
        };
        let name = e.attribute(kind).unwrap_or_default().to_string();
        let replace = e.has_attribute("replace");
        if kind != "incl" && e.has_child_nodes() && !replace {
            let p = self.point(e);
            return Err(ConfigError::SubstitutionOnValue {
                tag: e.name.to_string(),
                attribute: format!("{kind}=\"{name}\""),
                at: p.at,
                src: p.src,
                span: p.span,
            });
        }
        let source = match kind {
            "incl" => match self.include_from.and_then(|root| root.find(&name)) {
                // counted before it is copied: a copy past the cap is never made
                Some(found) => {
                    self.count(e, nodes(found))?;
                    Some(found.clone())
                }
                None => None,
            },
            "from_env" => self.env_value(e, &name)?,
            _ => {
                // No ZooKeeper offline: ClickHouse without ZooKeeper leaves the element as written.
                let p = self.point(e);
                self.problems.push(ConfigError::FromZkOffline {
                    path: name,
                    tag: e.name.to_string(),
                    at: p.at,
                    src: p.src,
                    span: p.span,
                });
                self.children(e, depth)?;
                return Ok(Outcome::Keep);
            }
        };
        if kind == "from_env"
            && let Some(source) = &source
        {
            self.count(e, nodes(source))?;
        }
        let Some(mut source) = source else {
            let outcome = self.missing(e, kind, &name, is_include);
            // an optional element that goes has its children substituted all the same (they
            // are gone with it, but what ClickHouse refuses there, it refuses)
            self.children(e, depth)?;
            return Ok(outcome);
        };
        if is_include {
            return Ok(if e.has_attribute("merge") {
                // ClickHouse merges the included element once per child node it has: with
                // none, nothing merges (the parent keeps its text)
                if source.has_child_nodes() { Outcome::MergeIntoParent(source) } else { Outcome::Remove }
            } else {
                Outcome::Splice(std::mem::take(&mut source.children))
            });
        }
        for attribute in SUBSTITUTION_ATTRIBUTES {
            e.remove_attribute(attribute);
        }
        if replace {
            e.children.clear();
            e.blank_text = false;
            e.remove_attribute("replace");
        }
        e.blank_text |= source.blank_text;
        e.children.extend(std::mem::take(&mut source.children));
        for attribute in std::mem::take(&mut source.attributes) {
            e.set_attribute(&attribute.name, &attribute.value);
        }
        // ClickHouse processes the element again: included content may hold substitutions,
        // and attributes copied from the included element may be one (an optional element
        // whose new substitution finds nothing then goes).
        self.process(e, depth + 1)
    }

    /// The value of an environment variable, parsed as XML content as ClickHouse does.
    fn env_value(&self, e: &Element, var: &str) -> Result<Option<Element>> {
        let Some(value) = self.env.get(var) else {
            return Ok(None);
        };
        // The config may name any variable of whoever audits it: its value is shown nowhere
        // (unless the files under review hold it: see `redact::settle_environment_values`,
        // asked once the whole config is read).
        crate::redact::register_environment_value(value);
        let mut scratch = SourceMap::new("/".into());
        let id = scratch.add(format!("${var}").into(), format!("<from_env>{value}</from_env>"));
        let mut parsed = xml::parse(scratch.file(id), id).map_err(|err| {
            let p = self.point(e);
            ConfigError::BadEnvValue {
                var: var.to_string(),
                message: without_quoted_text(&err.to_string()),
                at: p.at,
                src: p.src,
                span: p.span,
            }
        })?;
        // The value was set where from_env is written: findings point there.
        restamp(&mut parsed, e.origin);
        Ok(Some(parsed))
    }

    /// ClickHouse's answer to a substitution with nothing to substitute: an optional element
    /// goes, an `<include>` goes, any other element stays as written (attributes and text
    /// included) and the server starts with a warning.
    fn missing(&mut self, e: &Element, kind: &str, name: &str, is_include: bool) -> Outcome {
        if e.has_attribute("optional") {
            return Outcome::Remove;
        }
        let what = match kind {
            "incl" => format!("incl \"{name}\" (not in the include_from file)"),
            _ => match self.env_origin {
                Some(origin) => format!("environment variable {name} of {origin}"),
                None => format!("environment variable {name}"),
            },
        };
        let p = self.point(e);
        let (origin, tag, at, src, span) = (e.origin, e.name.to_string(), p.at, p.src, p.span);
        let name = name.to_string();
        // An element left without a value is what breaks a numeric or required setting (an
        // incl not found leaves the element as written: empty, when it has no value of its own)
        let by = if kind == "incl" { "incl" } else { "from_env" };
        self.problems.push(if !is_include && !e.has_child_nodes() {
            ConfigError::SubstitutionLeftEmpty { what, name, by, origin, tag, at, src, span }
        } else {
            ConfigError::SubstitutionNotFound { what, name, origin, tag, at, src, span }
        });
        if is_include { Outcome::Remove } else { Outcome::Keep }
    }

    /// Counts `n` more nodes added by the substitution at `e`; past the cap, an error there.
    fn count(&mut self, e: &Element, n: usize) -> Result<()> {
        self.added = self.added.saturating_add(n);
        if self.added <= MAX_SUBSTITUTED_NODES {
            return Ok(());
        }
        let p = self.point(e);
        let (tag, at, src, span) = (e.name.to_string(), p.at, p.src, p.span);
        Err(ConfigError::SubstitutionsTooLarge { cap: MAX_SUBSTITUTED_NODES, tag, at, src, span })
    }

    fn point(&self, e: &Element) -> Pointer {
        Pointer::new(self.sources, e.origin, e.name.len() + 1)
    }

    fn bad_include(&self, e: &Element, problem: &'static str) -> ConfigError {
        let p = self.point(e);
        ConfigError::BadInclude { problem, at: p.at, src: p.src, span: p.span }
    }

    fn syntax(&self, e: &Element, message: &str) -> ConfigError {
        ConfigError::syntax(self.point(e), message)
    }
}

/// A parser's message about an environment value with the pieces of it that it quotes
/// (`expected `</a>``) left out, unless `--show-secrets`: the value may be a credential.
fn without_quoted_text(message: &str) -> String {
    if crate::redact::environment_values_shown() {
        return message.to_string();
    }
    message.split('`').enumerate().map(|(i, part)| if i % 2 == 1 { "…" } else { part }).collect::<Vec<_>>().join("`")
}

/// The nodes below `e` (its children, theirs, ...), counted without recursion.
fn nodes(e: &Element) -> usize {
    let mut count = 0;
    let mut stack = vec![e];
    while let Some(e) = stack.pop() {
        count += e.children.len();
        stack.extend(e.children.iter().filter_map(|n| match n {
            Node::Element(child) => Some(child),
            _ => None,
        }));
    }
    count
}

fn restamp(e: &mut Element, origin: Origin) {
    e.origin = origin;
    for node in &mut e.children {
        match node {
            Node::Element(child) => restamp(child, origin),
            Node::Text(t) | Node::Comment(t) => t.origin = origin,
        }
    }
}
