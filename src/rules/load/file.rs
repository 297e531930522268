//! A rule file as written: one type per section, read by serde from the spanned YAML (each
//! key a field; the reader names every key a section does not have, and a [`Lenient`] value
//! of the wrong type does not stop it). The loader then checks and compiles what these hold
//! (`super::Parser`).

use std::fmt;

use serde::Deserialize;
use serde::de::{self, MapAccess, Visitor};

use crate::rules::schema::{Confidence, Effect, Severity};
use crate::spanned_yaml::de::{Lenient, Spanned};

/// A rule: what it finds, where it applies, how it decides, how to fix it, and its fixtures.
#[derive(Deserialize)]
#[serde(expecting = "a rule: a mapping of id, title, severity, description, applies, message, remediation, ...")]
pub struct RuleFile {
    /// Lowercase letters, digits and dashes; the rule's page is docs/rules/ID.md.
    pub id: Spanned<String>,
    pub title: String,
    pub severity: Lenient<Spanned<Severity>>,
    /// What ClickHouse does with the problem a config rule finds (refuses-to-start, ignored,
    /// fails-at-runtime, degrades), proven on the real server.
    pub effect: Option<Lenient<Spanned<Effect>>>,
    pub category: Option<String>,
    #[serde(default)]
    pub tags: Vec<String>,
    pub description: String,
    pub applies: Lenient<Spanned<Applies>>,
    /// An expression giving the items to judge, each one finding when `when` holds.
    pub for_each: Option<Spanned<String>>,
    /// The name of each item of `for_each` (`item` when not given).
    #[serde(rename = "as")]
    pub item: Option<String>,
    /// Named expressions, each readable by the ones after it, `when`, the message and the fix.
    #[serde(rename = "let", default)]
    pub lets: Lenient<Named>,
    pub when: Option<Spanned<String>>,
    pub location: Option<Spanned<String>>,
    pub object: Option<Spanned<String>>,
    pub impact: Option<Spanned<String>>,
    pub message: Spanned<String>,
    #[serde(default)]
    pub evidence: Lenient<Named>,
    pub remediation: Lenient<Spanned<RemediationFile>>,
    #[serde(default)]
    pub references: Vec<String>,
    pub confidence: Option<Lenient<Spanned<Confidence>>>,
    #[serde(default)]
    pub tests: Lenient<Vec<Spanned<TestCase>>>,
    #[serde(default)]
    pub opt_in: Lenient<bool>,
    #[serde(default)]
    pub params: Lenient<Params>,
    pub live_twin: Option<Lenient<LiveTwinFile>>,
}

/// `applies:`: the fact sources a rule needs, those it reads when present, its versions.
#[derive(Deserialize)]
#[serde(expecting = "a mapping of `sources` (and `optional`, `versions`)")]
pub struct Applies {
    #[serde(default)]
    pub sources: Vec<Spanned<String>>,
    #[serde(default)]
    pub optional: Vec<Spanned<String>>,
    pub versions: Option<Spanned<String>>,
    /// The programs whose config the rule judges (`server`, `keeper`; `[server]` without it).
    #[serde(default)]
    pub configs: Vec<Spanned<String>>,
}

/// `remediation:`: the fix, in the forms it has.
#[derive(Deserialize)]
#[serde(expecting = "a mapping of `restart`, `config`, `manual`, `sql`, `command`, `manifest`, `manifest_manual`, \
                 `cluster_manifest` and `cluster_manual`")]
pub struct RemediationFile {
    #[serde(default)]
    pub restart: Lenient<bool>,
    pub config: Option<Lenient<Fragments>>,
    pub manual: Option<Spanned<String>>,
    pub sql: Option<Spanned<String>>,
    pub command: Option<Spanned<String>>,
    pub manifest: Option<Spanned<String>>,
    /// What only the user can do, in a ClickHouseInstallation's keys: replaces `manual` when
    /// the config is a manifest.
    pub manifest_manual: Option<Spanned<String>>,
    /// The same two for a ClickHouseCluster of ClickHouse's operator (its `spec.settings`).
    pub cluster_manifest: Option<Spanned<String>>,
    pub cluster_manual: Option<Spanned<String>>,
}

/// `remediation.config:`: the `<clickhouse>` fragment merged into each tree.
#[derive(Deserialize)]
#[serde(expecting = "a mapping of a tree (`server` or `users`) to the `<clickhouse>` fragment merged into it")]
pub struct Fragments {
    pub server: Option<Spanned<String>>,
    pub users: Option<Spanned<String>>,
}

/// One of `tests:`: a fixture the rule fires on, or stays quiet on.
#[derive(Deserialize)]
#[serde(expecting = "a test: `fires: DIR` or `quiet: DIR` (with `at`, `version`, `outcome`)")]
pub struct TestCase {
    pub fires: Option<Spanned<String>>,
    pub quiet: Option<Spanned<String>>,
    pub at: Option<Spanned<String>>,
    pub version: Option<Spanned<String>>,
    pub outcome: Option<Spanned<String>>,
}

/// A mapping in its order, each name with its position: `let:` and `evidence:` (names to
/// expressions), `params:` (names to their [`ParamSpec`]).
pub struct Ordered<V>(pub Vec<(Spanned<String>, Spanned<V>)>);

/// Named expressions in their order (`let:`, `evidence:`).
pub type Named = Ordered<String>;

/// `params:` in their order: each `NAME: DEFAULT` or `NAME: {type, default, doc}`.
pub type Params = Ordered<ParamSpec>;

impl<V> Default for Ordered<V> {
    fn default() -> Ordered<V> {
        Ordered(Vec::new())
    }
}

impl<'de, V: Deserialize<'de>> Deserialize<'de> for Ordered<V> {
    fn deserialize<D: de::Deserializer<'de>>(deserializer: D) -> Result<Ordered<V>, D::Error> {
        struct OrderedVisitor<V>(std::marker::PhantomData<V>);

        impl<'de, V: Deserialize<'de>> Visitor<'de> for OrderedVisitor<V> {
            type Value = Ordered<V>;

            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a mapping of names")
            }

            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Ordered<V>, A::Error> {
                let mut pairs = Vec::new();
                while let Some(name) = map.next_key()? {
                    pairs.push((name, map.next_value()?));
                }
                Ok(Ordered(pairs))
            }
        }
        deserializer.deserialize_map(OrderedVisitor(std::marker::PhantomData))
    }
}

/// A parameter: a bare default (its type read from the literal), or its type, default and
/// meaning.
pub enum ParamSpec {
    Default(String),
    Typed(ParamFields),
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ParamFields {
    #[serde(rename = "type")]
    pub kind: Spanned<String>,
    pub default: Spanned<String>,
    pub doc: Option<String>,
}

impl<'de> Deserialize<'de> for ParamSpec {
    fn deserialize<D: de::Deserializer<'de>>(deserializer: D) -> Result<ParamSpec, D::Error> {
        struct SpecVisitor;

        impl<'de> Visitor<'de> for SpecVisitor {
            type Value = ParamSpec;

            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("`{type, default, doc}` or a default")
            }

            fn visit_str<E: de::Error>(self, default: &str) -> Result<ParamSpec, E> {
                Ok(ParamSpec::Default(default.to_string()))
            }

            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<ParamSpec, A::Error> {
                ParamFields::deserialize(de::value::MapAccessDeserializer::new(map)).map(ParamSpec::Typed)
            }
        }
        deserializer.deserialize_any(SpecVisitor)
    }
}

const TWIN: &str = "a live rule's id, or `none: <why no live rule can judge it>`";

/// `live_twin:`: a live rule's id, or `none: <why no live rule can judge it>`.
pub enum LiveTwinFile {
    Rule(String),
    None(String),
}

impl<'de> Deserialize<'de> for LiveTwinFile {
    fn deserialize<D: de::Deserializer<'de>>(deserializer: D) -> Result<LiveTwinFile, D::Error> {
        struct TwinVisitor;

        impl<'de> Visitor<'de> for TwinVisitor {
            type Value = LiveTwinFile;

            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str(TWIN)
            }

            fn visit_str<E: de::Error>(self, id: &str) -> Result<LiveTwinFile, E> {
                Ok(LiveTwinFile::Rule(id.to_string()))
            }

            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<LiveTwinFile, A::Error> {
                let expected = || de::Error::custom(format!("expected {TWIN}"));
                if map.next_key::<String>()?.as_deref() != Some("none") {
                    return Err(expected());
                }
                let why: String = map.next_value()?;
                match (why.trim(), map.next_key::<String>()?) {
                    ("", _) | (_, Some(_)) => Err(expected()),
                    (why, None) => Ok(LiveTwinFile::None(why.to_string())),
                }
            }
        }

        deserializer.deserialize_any(TwinVisitor)
    }
}

#[cfg(test)]
mod tests {
    use std::cell::Cell;

    use serde::de::{Deserializer, Visitor, value};
    use serde::forward_to_deserialize_any;

    use super::*;

    /// The keys of a section: the fields its type declares to serde.
    fn keys_of<T: for<'de> Deserialize<'de>>() -> &'static [&'static str] {
        struct Probe<'a>(&'a Cell<&'static [&'static str]>);

        impl<'de> Deserializer<'de> for Probe<'_> {
            type Error = value::Error;

            fn deserialize_struct<V: Visitor<'de>>(
                self,
                _: &'static str,
                fields: &'static [&'static str],
                _: V,
            ) -> Result<V::Value, value::Error> {
                self.0.set(fields);
                Err(de::Error::custom("only its keys"))
            }

            fn deserialize_any<V: Visitor<'de>>(self, _: V) -> Result<V::Value, value::Error> {
                Err(de::Error::custom("a struct"))
            }

            forward_to_deserialize_any! {
                bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf option unit
                unit_struct newtype_struct seq tuple tuple_struct map enum identifier ignored_any
            }
        }
        let fields = Cell::new(&[][..]);
        let _ = T::deserialize(Probe(&fields));
        fields.get()
    }

    /// The example of writing-rules.md shows every key of every section of a rule file.
    #[test]
    fn the_guide_shows_every_key() {
        let guide = include_str!("../../../docs/writing-rules.md");
        let example = guide.split("```yaml").nth(1).and_then(|e| e.split("```").next()).expect("the example");
        // every `key:` of the example, commented out or inline (`{type: uint, default: ...}`)
        let words = example.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == ':'));
        let shown: Vec<&str> = words.filter_map(|w| w.strip_suffix(':')).collect();
        let sections = [
            keys_of::<RuleFile>(),
            keys_of::<Applies>(),
            keys_of::<RemediationFile>(),
            keys_of::<Fragments>(),
            keys_of::<TestCase>(),
            keys_of::<ParamFields>(),
        ];
        let missing: Vec<&str> =
            sections.iter().flat_map(|keys| keys.iter()).filter(|k| !shown.contains(k)).copied().collect();
        assert!(sections.iter().all(|keys| !keys.is_empty()));
        assert!(missing.is_empty(), "keys the guide's example does not show: {missing:?}");
    }
}
