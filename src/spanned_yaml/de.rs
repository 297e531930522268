//! Serde over a spanned YAML tree: a file is read into types that derive `Deserialize`, a
//! value whose position matters as [`Spanned<T>`]. Every problem is recorded where it is
//! found: a key a struct does not have (with the closest key it has) is skipped, a value of
//! the wrong type read as [`Lenient<T>`] is left out, and the rest of the file is still
//! read, so one run names every mistake it can.

use std::cell::RefCell;
use std::fmt;
use std::marker::PhantomData;

use serde::de::{self, DeserializeSeed, Deserializer, EnumAccess, MapAccess, SeqAccess, VariantAccess, Visitor};
use serde::{Deserialize, forward_to_deserialize_any};

use super::Yaml;
use crate::source::{FileId, Origin};

/// A value and where it is written.
#[derive(Debug, Clone, PartialEq)]
pub struct Spanned<T> {
    pub value: T,
    pub origin: Origin,
}

/// The struct name by which the deserializer knows a [`Spanned`] (serde has no other way to
/// hand a value its position).
const SPANNED: &str = "$chaudit::Spanned";
const SPANNED_FIELDS: &[&str] = &["$origin", "$value"];

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Spanned<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Spanned<T>, D::Error> {
        struct SpannedVisitor<T>(PhantomData<T>);

        impl<'de, T: Deserialize<'de>> Visitor<'de> for SpannedVisitor<T> {
            type Value = Spanned<T>;

            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a value with its position")
            }

            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Spanned<T>, A::Error> {
                let (Some(_), packed) = (map.next_key::<&str>()?, map.next_value::<u64>()?) else {
                    return Err(de::Error::custom("a position"));
                };
                let (Some(_), value) = (map.next_key::<&str>()?, map.next_value::<T>()?) else {
                    return Err(de::Error::custom("a value"));
                };
                let origin = Origin { file: FileId((packed >> 32) as u32), offset: packed as u32 };
                Ok(Spanned { value, origin })
            }
        }
        deserializer.deserialize_struct(SPANNED, SPANNED_FIELDS, SpannedVisitor(PhantomData))
    }
}

/// A value that may be wrong without stopping the read: `None` when it is not of its type (the
/// problem is recorded).
#[derive(Debug, Clone, PartialEq)]
pub struct Lenient<T>(pub Option<T>);

impl<T: Default> Default for Lenient<T> {
    fn default() -> Lenient<T> {
        Lenient(Some(T::default()))
    }
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Lenient<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Lenient<T>, D::Error> {
        // the reader recorded the problem where it found it
        Ok(Lenient(T::deserialize(deserializer).ok()))
    }
}

/// What is wrong, where (`None` until the node it arose at says), and what may help.
#[derive(Debug, Clone, PartialEq)]
pub struct Problem {
    pub origin: Option<Origin>,
    pub message: String,
    pub help: Option<String>,
    /// The message names the node's path when it gets its position (`missing` a field of
    /// it, or a value of the wrong kind).
    about: About,
}

#[derive(Debug, Clone, PartialEq)]
enum About {
    Missing(&'static str),
    Value,
    Said,
}

impl Problem {
    /// The problem said at `origin` (a node's path is written before it: `remediation.restart`).
    fn at(mut self, origin: Origin, path: &str) -> Problem {
        if self.origin.is_none() {
            self.origin = Some(origin);
            self.message = match (&self.about, path) {
                (About::Missing(field), "") => format!("missing `{field}`"),
                (About::Missing(field), path) => format!("missing `{path}.{field}`"),
                (About::Value, "") | (About::Said, _) => self.message,
                (About::Value, path) => format!("`{path}`: {}", self.message),
            };
            self.about = About::Said;
        }
        self
    }
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Problem {}

impl de::Error for Problem {
    fn custom<T: fmt::Display>(message: T) -> Problem {
        Problem { origin: None, message: message.to_string(), help: None, about: About::Value }
    }

    fn invalid_type(found: de::Unexpected, expected: &dyn de::Expected) -> Problem {
        let found = match found {
            de::Unexpected::Str(s) => format!("`{s}`"),
            de::Unexpected::Unit => "nothing".into(),
            other => other.to_string(),
        };
        Problem::custom(format!("expected {expected}, found {found}"))
    }

    fn invalid_value(found: de::Unexpected, expected: &dyn de::Expected) -> Problem {
        Problem::invalid_type(found, expected)
    }

    fn unknown_variant(variant: &str, expected: &'static [&'static str]) -> Problem {
        let help = crate::suggest::closest_above(variant, expected.iter().copied(), 0.7)
            .map_or_else(|| format!("one of {}", expected.join(", ")), |s| format!("did you mean `{s}`?"));
        Problem { help: Some(help), ..Problem::custom(format!("unknown value `{variant}`")) }
    }

    fn unknown_field(field: &str, expected: &'static [&'static str]) -> Problem {
        Problem { help: Some(known_keys_help(field, expected)), ..Problem::custom(format!("unknown key `{field}`")) }
    }

    fn missing_field(field: &'static str) -> Problem {
        Problem { about: About::Missing(field), ..Problem::custom("") }
    }
}

fn known_keys_help(key: &str, known: &[&str]) -> String {
    crate::suggest::closest_above(key, known.iter().copied(), 0.7)
        .map_or_else(|| format!("known keys: {}", known.join(", ")), |s| format!("did you mean `{s}`?"))
}

/// Reads `T` from `node`: its value (`None` when a problem stopped the read) and every
/// problem found, in the order found.
pub fn from_yaml<'y, T: Deserialize<'y>>(node: &'y Yaml) -> (Option<T>, Vec<Problem>) {
    let problems = RefCell::new(Vec::new());
    let read = T::deserialize(Node { node, path: String::new(), problems: &problems }).ok();
    (read, problems.into_inner())
}

/// A node being read, with its path in the file (`tests[].at`) for messages.
struct Node<'y, 'u> {
    node: &'y Yaml,
    path: String,
    /// Every problem found, each recorded once, where it gets its position.
    problems: &'u RefCell<Vec<Problem>>,
}

impl<'y, 'u> Node<'y, 'u> {
    fn child(&self, node: &'y Yaml, name: &str) -> Node<'y, 'u> {
        let path = match (self.path.as_str(), name) {
            ("", name) => name.to_string(),
            (path, "[]") => format!("{path}[]"),
            (path, name) => format!("{path}.{name}"),
        };
        Node { node, path, problems: self.problems }
    }

    fn said<T>(&self, read: Result<T, Problem>) -> Result<T, Problem> {
        read.map_err(|problem| match problem.origin {
            Some(_) => problem,
            None => {
                let problem = problem.at(self.node.origin(), &self.path);
                self.problems.borrow_mut().push(problem.clone());
                problem
            }
        })
    }

    fn scalar(&self) -> Option<&'y str> {
        self.node.as_str()
    }
}

impl<'de, 'u> Deserializer<'de> for Node<'de, 'u> {
    type Error = Problem;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Problem> {
        let read = match self.node {
            Yaml::Null(_) => visitor.visit_unit(),
            Yaml::Scalar(text, _) => visitor.visit_borrowed_str(text),
            Yaml::Sequence(items, _) => visitor.visit_seq(Items { items: items.iter(), node: &self }),
            Yaml::Mapping(pairs, _) => visitor.visit_map(Pairs { pairs: pairs.iter(), value: None, node: &self }),
        };
        self.said(read)
    }

    fn deserialize_bool<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Problem> {
        let read = match self.scalar() {
            Some("true") => visitor.visit_bool(true),
            Some("false") => visitor.visit_bool(false),
            _ => return self.deserialize_any(visitor),
        };
        self.said(read)
    }

    fn deserialize_u64<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Problem> {
        match self.scalar().map(str::parse::<u64>) {
            Some(Ok(n)) => self.said(visitor.visit_u64(n)),
            _ => self.deserialize_any(visitor),
        }
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Problem> {
        match self.node {
            Yaml::Null(_) => self.said(visitor.visit_none()),
            _ => visitor.visit_some(self),
        }
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(self, _: &'static str, visitor: V) -> Result<V::Value, Problem> {
        visitor.visit_newtype_struct(self)
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Problem> {
        if name == SPANNED {
            let origin = self.node.origin();
            let packed = (u64::from(origin.file.0) << 32) | u64::from(origin.offset);
            return visitor.visit_map(Position { packed: Some(packed), node: Some(self) });
        }
        let Yaml::Mapping(pairs, _) = self.node else { return self.deserialize_any(visitor) };
        // a key the struct does not have is said and skipped: the rest is still read
        let known = pairs.iter().filter(|(key, _)| match key.as_str() {
            Some(k) if fields.contains(&k) => true,
            _ => {
                let shown = key.as_str().unwrap_or("(not text)");
                let path = if self.path.is_empty() { shown.to_string() } else { format!("{}.{shown}", self.path) };
                self.problems.borrow_mut().push(Problem {
                    origin: Some(key.origin()),
                    message: format!("unknown key `{path}`"),
                    help: Some(known_keys_help(shown, fields)),
                    about: About::Said,
                });
                false
            }
        });
        let known: Vec<&(Yaml, Yaml)> = known.collect();
        let read = visitor.visit_map(Pairs { pairs: known.into_iter(), value: None, node: &self });
        self.said(read)
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        _: &'static str,
        _: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Problem> {
        let read = match self.node {
            Yaml::Scalar(..) => visitor.visit_enum(Variant { name: &self, value: None }),
            Yaml::Mapping(pairs, _) if pairs.len() == 1 => {
                let (key, value) = &pairs[0];
                let name = self.child(key, "");
                let value = self.child(value, key.as_str().unwrap_or_default());
                visitor.visit_enum(Variant { name: &name, value: Some(value) })
            }
            _ => return self.deserialize_any(visitor),
        };
        self.said(read)
    }

    fn deserialize_ignored_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Problem> {
        visitor.visit_unit()
    }

    forward_to_deserialize_any! {
        i8 i16 i32 i64 i128 u8 u16 u32 u128 f32 f64 char str string bytes byte_buf unit unit_struct seq
        tuple tuple_struct map identifier
    }
}

/// A sequence's items.
struct Items<'a, 'y, 'u, I> {
    items: I,
    node: &'a Node<'y, 'u>,
}

impl<'de, 'u, I: Iterator<Item = &'de Yaml>> SeqAccess<'de> for Items<'_, 'de, 'u, I> {
    type Error = Problem;

    fn next_element_seed<T: DeserializeSeed<'de>>(&mut self, seed: T) -> Result<Option<T::Value>, Problem> {
        self.items.next().map(|item| seed.deserialize(self.node.child(item, "[]"))).transpose()
    }
}

/// A mapping's pairs.
struct Pairs<'a, 'y, 'u, I> {
    pairs: I,
    value: Option<Node<'y, 'u>>,
    node: &'a Node<'y, 'u>,
}

impl<'de, 'u, I: Iterator<Item = &'de (Yaml, Yaml)>> MapAccess<'de> for Pairs<'_, 'de, 'u, I> {
    type Error = Problem;

    fn next_key_seed<K: DeserializeSeed<'de>>(&mut self, seed: K) -> Result<Option<K::Value>, Problem> {
        let Some((key, value)) = self.pairs.next() else { return Ok(None) };
        self.value = Some(self.node.child(value, key.as_str().unwrap_or("?")));
        let key = Node { node: key, path: self.node.path.clone(), problems: self.node.problems };
        seed.deserialize(key).map(Some)
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, Problem> {
        let value = self.value.take().ok_or_else(|| de::Error::custom("a value without its key"))?;
        seed.deserialize(value)
    }
}

/// A [`Spanned`]'s two fields: the node's position, then the node.
struct Position<'y, 'u> {
    packed: Option<u64>,
    node: Option<Node<'y, 'u>>,
}

impl<'de, 'u> MapAccess<'de> for Position<'de, 'u> {
    type Error = Problem;

    fn next_key_seed<K: DeserializeSeed<'de>>(&mut self, seed: K) -> Result<Option<K::Value>, Problem> {
        let field = match (self.packed.is_some(), self.node.is_some()) {
            (true, _) => SPANNED_FIELDS[0],
            (false, true) => SPANNED_FIELDS[1],
            (false, false) => return Ok(None),
        };
        seed.deserialize(de::value::BorrowedStrDeserializer::new(field)).map(Some)
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, Problem> {
        if let Some(packed) = self.packed.take() {
            return seed.deserialize(de::value::U64Deserializer::new(packed));
        }
        let node = self.node.take().ok_or_else(|| de::Error::custom("a position without its value"))?;
        seed.deserialize(node)
    }
}

/// An enum's variant: its name (a scalar, or a one-key mapping's key) and its value.
struct Variant<'a, 'y, 'u> {
    name: &'a Node<'y, 'u>,
    value: Option<Node<'y, 'u>>,
}

impl<'de, 'u> EnumAccess<'de> for Variant<'_, 'de, 'u> {
    type Error = Problem;
    type Variant = Self;

    fn variant_seed<S: DeserializeSeed<'de>>(self, seed: S) -> Result<(S::Value, Self), Problem> {
        let name = self.name.scalar().ok_or_else(|| de::Error::custom("a variant's name is text"))?;
        let variant = seed.deserialize(de::value::BorrowedStrDeserializer::<Problem>::new(name))?;
        Ok((variant, self))
    }
}

impl<'de, 'u> VariantAccess<'de> for Variant<'_, 'de, 'u> {
    type Error = Problem;

    fn unit_variant(self) -> Result<(), Problem> {
        match self.value {
            None => Ok(()),
            Some(value) => value.said(Err(de::Error::custom("expected a name alone, found a mapping"))),
        }
    }

    fn newtype_variant_seed<T: DeserializeSeed<'de>>(self, seed: T) -> Result<T::Value, Problem> {
        let value = self.value.ok_or_else(|| de::Error::custom("expected `name: value`, found a name alone"))?;
        seed.deserialize(value)
    }

    fn tuple_variant<V: Visitor<'de>>(self, _: usize, visitor: V) -> Result<V::Value, Problem> {
        let value = self.value.ok_or_else(|| de::Error::custom("expected `name: [values]`, found a name alone"))?;
        value.deserialize_any(visitor)
    }

    fn struct_variant<V: Visitor<'de>>(self, fields: &'static [&'static str], visitor: V) -> Result<V::Value, Problem> {
        let value = self.value.ok_or_else(|| de::Error::custom("expected `name: {fields}`, found a name alone"))?;
        value.deserialize_struct("", fields, visitor)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, Deserialize, PartialEq)]
    struct Rule {
        id: Spanned<String>,
        #[serde(default)]
        tags: Vec<String>,
        restart: Option<bool>,
        level: Option<Level>,
        inner: Option<Inner>,
    }

    #[derive(Debug, Deserialize, PartialEq)]
    #[serde(rename_all = "lowercase")]
    enum Level {
        Low,
        High,
    }

    #[derive(Debug, Deserialize, PartialEq)]
    struct Inner {
        at: Spanned<String>,
    }

    fn read(text: &str) -> (Option<Rule>, Vec<Problem>) {
        let node = super::super::read_document(text, FileId(7)).unwrap();
        from_yaml::<Rule>(&node)
    }

    #[test]
    fn values_keep_their_positions() {
        let (rule, unknown) = read("id: x\ntags: [a, b]\nrestart: true\nlevel: high\ninner:\n  at: here\n");
        let rule = rule.unwrap();
        assert_eq!(rule.id, Spanned { value: "x".into(), origin: Origin { file: FileId(7), offset: 4 } });
        assert_eq!((rule.tags.len(), rule.restart, rule.level), (2, Some(true), Some(Level::High)));
        assert_eq!(rule.inner.unwrap().at.origin.offset, 58);
        assert!(unknown.is_empty());
    }

    #[test]
    fn every_unknown_key_is_said_and_the_rest_read() {
        let (rule, unknown) = read("id: x\ntagz: [a]\ninner:\n  att: 1\n  at: y\n");
        assert!(rule.is_some());
        let said: Vec<(&str, Option<&str>)> = unknown.iter().map(|p| (p.message.as_str(), p.help.as_deref())).collect();
        assert_eq!(
            said,
            [
                ("unknown key `tagz`", Some("did you mean `tags`?")),
                ("unknown key `inner.att`", Some("did you mean `at`?"))
            ]
        );
        assert_eq!(unknown[0].origin, Some(Origin { file: FileId(7), offset: 6 }));
    }

    #[test]
    fn a_value_of_the_wrong_kind_names_its_path_and_position() {
        let problem = |text: &str| {
            let (rule, problems) = read(text);
            assert!(rule.is_none() && problems.len() == 1, "{problems:?}");
            problems[0].clone()
        };
        let wrong = problem("id: x\nrestart: maybe\n");
        assert_eq!(wrong.message, "`restart`: expected a boolean, found `maybe`");
        assert_eq!(wrong.origin, Some(Origin { file: FileId(7), offset: 15 }));
        let wrong = problem("id: x\nlevel: hgh\n");
        assert_eq!(
            (wrong.message.as_str(), wrong.help.as_deref()),
            ("`level`: unknown value `hgh`", Some("did you mean `high`?"))
        );
        assert_eq!(problem("tags: []\n").message, "missing `id`");
        assert_eq!(problem("id: x\ninner: {}\n").message, "missing `inner.at`");
    }

    #[derive(Debug, Deserialize)]
    struct Sections {
        first: Lenient<Level>,
        second: Lenient<bool>,
        third: Lenient<Vec<String>>,
    }

    /// Each wrong value is said, and the values after it still read.
    #[test]
    fn lenient_values_let_the_read_go_on() {
        let node = super::super::read_document("first: hgh\nsecond: maybe\nthird: [a]\n", FileId(7)).unwrap();
        let (sections, problems) = from_yaml::<Sections>(&node);
        let sections = sections.unwrap();
        assert_eq!((sections.first.0, sections.second.0, sections.third.0), (None, None, Some(vec!["a".to_string()])));
        let said: Vec<&str> = problems.iter().map(|p| p.message.as_str()).collect();
        assert_eq!(said, ["`first`: unknown value `hgh`", "`second`: expected a boolean, found `maybe`"]);
    }
}
