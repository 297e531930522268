//! The types of the values facts hold: a UInt8 flag, a count or a measure the server may
//! quote, a location, a `sumMap` result, a map by setting name; each with its catalog type.

use super::*;

/// A ClickHouse UInt8 used as a bool: `0`/`1`, or a bool.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Flag(pub bool);

impl<'de> Deserialize<'de> for Flag {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Flag, D::Error> {
        match Value::deserialize(deserializer)? {
            Value::Bool(b) => Ok(Flag(b)),
            Value::Number(n) if n.as_u64().is_some_and(|n| n <= 1) => Ok(Flag(n.as_u64() == Some(1))),
            other => Err(D::Error::custom(format!("expected 0, 1 or a bool, found {other}"))),
        }
    }
}

catalog_type!(Flag, "integer", "flag");

/// Where a fact was read: `file:line:column` in the user's config.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Location(pub String);

catalog_type!(Location, "string", "location");

impl ToCel for Location {
    fn cel(&self) -> Box<dyn Val + '_> {
        self.0.cel()
    }
}

/// A ClickHouse count: a number, or a string when the server quotes 64-bit integers
/// (`output_format_json_quote_64bit_integers`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct Count(pub u64);

impl<'de> Deserialize<'de> for Count {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Count, D::Error> {
        // a `number` fact is read as a double: a whole one is a count
        let of_number = |n: &serde_json::Number| n.as_u64().or_else(|| crate::facts::whole(n.as_f64()?));
        number_or_text(deserializer, of_number, "a count").map(Count)
    }
}

catalog_type!(Count, "integer", "number");

impl std::fmt::Display for Count {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

/// A measure that may have a fraction (an average, a median), or a count: a number, or a
/// string when the server quotes 64-bit integers.
#[derive(Debug, Clone, Copy, Default, PartialEq, PartialOrd, Serialize)]
pub struct Number(pub f64);

impl<'de> Deserialize<'de> for Number {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Number, D::Error> {
        number_or_text(deserializer, serde_json::Number::as_f64, "a number").map(Number)
    }
}

catalog_type!(Number, "number", "number");

/// A JSON number read as `T`, or text holding one (the server quotes 64-bit integers);
/// `what` names `T` in the error.
fn number_or_text<'de, D: Deserializer<'de>, T: std::str::FromStr>(
    deserializer: D,
    of_number: fn(&serde_json::Number) -> Option<T>,
    what: &str,
) -> Result<T, D::Error> {
    let value = Value::deserialize(deserializer)?;
    let read = match &value {
        Value::Number(n) => of_number(n),
        Value::String(s) => s.parse().ok(),
        _ => None,
    };
    read.ok_or_else(|| D::Error::custom(format!("expected {what}, found {value}")))
}

/// A `sumMap` result as the server writes it, a pair of lists (`[[names], [counts]]`), read
/// as counts by name.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct SummedMap(pub BTreeMap<String, u64>);

impl<'de> Deserialize<'de> for SummedMap {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<SummedMap, D::Error> {
        let (names, counts) = <(Vec<String>, Vec<Count>)>::deserialize(deserializer)?;
        if names.len() != counts.len() {
            return Err(D::Error::custom(format!("{} names but {} counts", names.len(), counts.len())));
        }
        Ok(SummedMap(names.into_iter().zip(counts.into_iter().map(|c| c.0)).collect()))
    }
}

impl JsonSchema for SummedMap {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "SummedMap".into()
    }

    fn inline_schema() -> bool {
        true
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        // the names' list, then the counts' list
        schemars::json_schema!({"type": "array", "items": {"x-fact": "any"}})
    }
}

/// A UInt8 flag column: 0/1 (or a JSON bool).
pub fn flag<'de, D: Deserializer<'de>>(deserializer: D) -> Result<bool, D::Error> {
    Flag::deserialize(deserializer).map(|flag| flag.0)
}

/// A UInt64 column: a number, or a string when the server quotes 64-bit integers.
pub fn uint<'de, D: Deserializer<'de>>(deserializer: D) -> Result<u64, D::Error> {
    Count::deserialize(deserializer).map(|count| count.0)
}

/// A map by setting (or section) name.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Settings<T>(pub BTreeMap<String, T>);

impl<T: ToCel> ToCel for Settings<T> {
    fn cel(&self) -> Box<dyn Val + '_> {
        self.0.cel()
    }
}

impl<T> Default for Settings<T> {
    fn default() -> Settings<T> {
        Settings(BTreeMap::new())
    }
}

impl<T> FromIterator<(String, T)> for Settings<T> {
    fn from_iter<I: IntoIterator<Item = (String, T)>>(items: I) -> Settings<T> {
        Settings(items.into_iter().collect())
    }
}

impl<T: JsonSchema> JsonSchema for Settings<T> {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        format!("Settings_of_{}", T::schema_name()).into()
    }

    fn inline_schema() -> bool {
        true
    }

    fn json_schema(generator: &mut SchemaGenerator) -> Schema {
        let mut schema = BTreeMap::<String, T>::json_schema(generator);
        schema.insert("x-fact".into(), "dict:setting".into());
        schema
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_and_counts_read_as_the_server_writes_them() {
        let flags: Vec<Flag> = serde_json::from_str("[0, 1, true, false]").unwrap();
        assert_eq!(flags, [Flag(false), Flag(true), Flag(true), Flag(false)]);
        assert!(serde_json::from_str::<Flag>("2").is_err());
        let counts: Vec<Count> = serde_json::from_str(r#"[42, "18446744073709551615"]"#).unwrap();
        assert_eq!(counts, [Count(42), Count(u64::MAX)]);
        assert!(serde_json::from_str::<Count>(r#""many""#).is_err());
    }
}
