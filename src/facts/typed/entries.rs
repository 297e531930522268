//! The catalog entries of a typed fact, generated from its type's JSON schema: each field's
//! path, catalog type and meaning (its doc comment).

use super::*;

/// The catalog entries of a typed fact, parents before children.
pub fn entries(fact: &TypedFact) -> Result<Vec<Entry>, String> {
    let root = (fact.schema)();
    let mut out = Vec::new();
    describe(&root, root.as_value(), fact.path, fact.meaning, &mut out)?;
    Ok(out)
}

fn describe(root: &Schema, schema: &Value, path: &str, meaning: &str, out: &mut Vec<Entry>) -> Result<(), String> {
    // a field's own doc comment (a type's describes the Rust type, not the fact)
    let own = schema["description"].as_str().unwrap_or_default().to_string();
    let meaning = if meaning.is_empty() { own.as_str() } else { meaning };
    let (schema, nullable) = resolve(root, schema)?;
    let json_type = schema["type"].as_str().unwrap_or_default();
    let extension = schema["x-fact"].as_str();
    let kind = match (extension, json_type) {
        (Some(kind), _) => kind,
        (None, "object") if schema.get("additionalProperties").is_some() => "dict",
        (None, "object") => "map",
        (None, "array") => "list",
        (None, "string") => "string",
        (None, "boolean") => "bool",
        (None, "integer") if schema["minimum"] == 0 => "uint",
        (None, "integer") => "int",
        (None, "number") => "float",
        (None, other) => return Err(format!("{path}: a schema of type `{other}` has no catalog type")),
    };
    let shown = if nullable { format!("{kind}?") } else { kind.to_string() };
    out.push(Entry { path: path.to_string(), kind: shown, meaning: meaning.to_string() });
    if let Some(items) = schema.get("items") {
        describe(root, items, &format!("{path}[]"), "", out)?;
    } else if let Some(value) = schema.get("additionalProperties") {
        describe(root, value, &format!("{path}{{}}"), "", out)?;
    } else if let Some(fields) = schema["properties"].as_object() {
        for (name, field) in fields {
            describe(root, field, &format!("{path}.{name}"), "", out)?;
        }
    }
    Ok(())
}

/// A schema with its `$ref` followed and `null` taken out of its types: (schema, nullable).
/// A field's own description and extension win over its type's.
fn resolve(root: &Schema, schema: &Value) -> Result<(Value, bool), String> {
    let mut schema = schema.clone();
    let mut nullable = false;
    if let Some(options) = schema.get("anyOf").and_then(Value::as_array).cloned() {
        let (nulls, others): (Vec<&Value>, Vec<&Value>) = options.iter().partition(|o| o["type"] == "null");
        let [only] = others.as_slice() else { return Err(format!("a union of {} types", others.len())) };
        nullable = !nulls.is_empty();
        let own = schema.as_object().cloned().unwrap_or_default();
        schema = (*only).clone();
        merge_own(&mut schema, own);
    }
    if let Some(reference) = schema.get("$ref").and_then(Value::as_str).map(str::to_string) {
        let name = reference.trim_start_matches("#/$defs/");
        let target = root.as_value()["$defs"][name].clone();
        if target.is_null() {
            return Err(format!("no definition of `{reference}`"));
        }
        let own = schema.as_object().cloned().unwrap_or_default();
        schema = target;
        merge_own(&mut schema, own);
    }
    if let Some(types) = schema["type"].as_array().cloned() {
        let others: Vec<&Value> = types.iter().filter(|t| *t != "null").collect();
        nullable |= others.len() < types.len();
        let [only] = others.as_slice() else { return Err(format!("a union of {} types", others.len())) };
        schema["type"] = (*only).clone();
    }
    Ok((schema, nullable))
}

fn merge_own(schema: &mut Value, own: serde_json::Map<String, Value>) {
    for key in ["description", "x-fact"] {
        if let Some(value) = own.get(key) {
            schema[key] = value.clone();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Whether `path` is `fact` or a fact below it.
    fn under(path: &str, fact: &str) -> bool {
        path == fact || path.strip_prefix(fact).is_some_and(|rest| rest.starts_with(['.', '[', '{']))
    }

    /// `text` (schema.txt) with the lines of `fact` and the facts below it replaced by `entries`,
    /// written in the file's columns.
    fn replace_block(text: &str, fact: &str, entries: &[Entry]) -> String {
        let within = |line: &str| under(line.split_whitespace().next().unwrap_or_default(), fact);
        let lines: Vec<&str> = text.lines().collect();
        let Some(first) = lines.iter().position(|l| within(l)) else { return text.to_string() };
        let end = lines[first..].iter().position(|l| !within(l)).map_or(lines.len(), |n| first + n);
        let written = entries.iter().map(|e| {
            let mut line = format!("{:<39} ", e.path);
            line.push_str(&e.kind);
            if !e.meaning.is_empty() {
                let column = 54.max(line.len() + 1);
                line = format!("{line:<column$}{}", e.meaning);
            }
            line
        });
        let kept = lines[..first]
            .iter()
            .map(|l| l.to_string())
            .chain(written)
            .chain(lines[end..].iter().map(|l| l.to_string()));
        kept.collect::<Vec<_>>().join("\n") + "\n"
    }

    #[test]
    fn the_catalog_says_what_the_types_say() {
        let catalog = crate::facts::schema::catalog();
        let overwrite = std::env::var("CHAUDIT_CATALOG").as_deref() == Ok("overwrite");
        let mut text = crate::facts::schema::CATALOG.to_string();
        let mut differ = Vec::new();
        for fact in facts() {
            let generated = entries(&fact).unwrap();
            let mut expected: Vec<(&str, &str, &str)> =
                generated.iter().map(|e| (e.path.as_str(), e.kind.as_str(), e.meaning.as_str())).collect();
            let mut listed: Vec<(&str, &str, &str)> = catalog
                .entries
                .iter()
                .filter(|e| under(&e.path, fact.path))
                .map(|e| (e.path.as_str(), e.kind.as_str(), e.meaning.as_str()))
                .collect();
            expected.sort();
            listed.sort();
            if expected != listed {
                differ.push(fact.path);
                // the lines keep the order they have (JSON schema's fields are sorted)
                let mut generated = generated.clone();
                let place = |e: &Entry| catalog.entries.iter().position(|c| c.path == e.path).unwrap_or(usize::MAX);
                generated.sort_by_key(place);
                text = replace_block(&text, fact.path, &generated);
            }
        }
        if overwrite && !differ.is_empty() {
            let path = concat!(env!("CARGO_MANIFEST_DIR"), "/src/facts/schema.txt");
            std::fs::write(path, text).unwrap();
        } else {
            assert!(differ.is_empty(), "schema.txt differs from the types of {differ:?} (CHAUDIT_CATALOG=overwrite)");
        }
    }
}
