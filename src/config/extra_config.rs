//! A fix's config fragments as a change of a ClickHouseCluster (ClickHouse's operator): the
//! operator writes `spec.settings.extraConfig` as `config.d/99-extra-config.yaml` and
//! `extraUsersConfig` as `users.d/99-extra-users-config.yaml`, so a fragment becomes keys of
//! those maps in ClickHouse's YAML config form (yaml.rs reads it back the same way): an
//! element is a key, a repeated element a list, an attribute an `"@name"` key, text a value,
//! an element with attributes and text `[{"@name": value}, text]`.
//!
//! The snippet is a merge patch (RFC 7386) of the cluster: maps merge with what the user
//! already has there, a value replaces theirs, and a `remove="1"` of an element the user's
//! map holds is `null`, which deletes the key (the element is then gone from the file, as
//! the marker would make it); one the map does not hold stays a `"@remove": 1` key, which
//! removes what the operator's earlier files generate.

use super::fragment::Node;
use crate::spanned_yaml::Yaml;

/// The keys under `spec.settings` the operator writes as the server's and the users' files.
pub const SERVER_KEY: &str = "extraConfig";
pub const USERS_KEY: &str = "extraUsersConfig";

/// YAML as the snippet writes it.
#[derive(Debug, Clone, PartialEq)]
enum Out {
    /// Deletes the key (merge patch).
    Delete,
    Text(String),
    List(Vec<Out>),
    Map(Vec<(String, Out)>),
}

/// The merge snippet for `fragments` (each the key under `spec.settings` it goes to and its
/// `<clickhouse>` XML), against the cluster document as it stands; an error names what has
/// no form in the operator's YAML.
pub fn snippet(fragments: &[(&str, &str)], cluster: &Yaml) -> Result<String, String> {
    let settings = cluster.get("spec").and_then(|s| s.get("settings"));
    let mut keys: Vec<(String, Out)> = Vec::new();
    for (key, xml) in fragments {
        let root = super::fragment::parse(xml).map_err(|e| format!("the fix's fragment does not parse: {e}"))?;
        let present = settings.and_then(|s| s.get(key));
        let Out::Map(mut entries) = children(&root, present)? else { continue };
        // a second fragment for the same map (two of one tree) adds its keys
        match keys.iter_mut().find(|(k, _)| k == key) {
            Some((_, Out::Map(existing))) => existing.append(&mut entries),
            _ => keys.push((key.to_string(), Out::Map(entries))),
        }
    }
    let mut out = String::from("spec:\n  settings:\n");
    for (key, value) in &keys {
        write(key, value, 4, &mut out);
    }
    Ok(out)
}

/// An element's children as a map (repeated names as lists), against what the user's map
/// holds at that element.
fn children(node: &Node, present: Option<&Yaml>) -> Result<Out, String> {
    let mut entries: Vec<(String, Out)> = Vec::new();
    for (name, value) in node.attributes.iter().filter(|(k, _)| k != "remove") {
        entries.push((format!("@{name}"), Out::Text(value.clone())));
    }
    let mut names: Vec<&str> = Vec::new();
    for child in &node.children {
        if !names.contains(&child.name.as_str()) {
            names.push(&child.name);
        }
    }
    for name in names {
        let same: Vec<&Node> = node.children.iter().filter(|c| c.name == name).collect();
        let held = present.and_then(|p| p.get(name));
        let value = match same.as_slice() {
            [one] if one.removes() && one.children.is_empty() && one.text.is_empty() => match held {
                Some(_) => Out::Delete,
                None => Out::Map(vec![("@remove".into(), Out::Text("1".into()))]),
            },
            [one] => element(one, held)?,
            many => {
                // a list of mappings merges into one element unless the whole file says
                // `yaml_parser_version: 2`, which would change how the user's own lists read
                if many.iter().any(|c| !c.children.is_empty() || !c.attributes.is_empty()) {
                    return Err(format!("the repeated element <{name}> has no form in the operator's YAML config"));
                }
                Out::List(many.iter().map(|c| Out::Text(c.text.clone())).collect())
            }
        };
        entries.push((name.to_string(), value));
    }
    Ok(Out::Map(entries))
}

/// One element's value: its text, or its attributes and children as a map.
fn element(node: &Node, held: Option<&Yaml>) -> Result<Out, String> {
    if node.attributes.iter().any(|(k, _)| k == "replace") && held.is_some() {
        return Err(format!("<{} replace=\"1\"> would merge with the map the manifest holds", node.name));
    }
    let attributes: Vec<(String, Out)> =
        node.attributes.iter().map(|(k, v)| (format!("@{k}"), Out::Text(v.clone()))).collect();
    if !node.children.is_empty() {
        return children(node, held.filter(|h| matches!(h, Yaml::Mapping(..))));
    }
    Ok(match attributes.is_empty() {
        // an empty element is an empty text: a YAML null would delete the key in a merge patch
        true => Out::Text(node.text.clone()),
        false if node.text.is_empty() => Out::Map(attributes),
        false => Out::List(vec![Out::Map(attributes), Out::Text(node.text.clone())]),
    })
}

/// `key: value` as block YAML at `indent`; every scalar double-quoted (JSON's string syntax
/// is YAML's), so `"1"` and `"true"` stay text.
fn write(key: &str, value: &Out, indent: usize, out: &mut String) {
    let pad = " ".repeat(indent);
    let key = if key.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') { key.to_string() } else { quoted(key) };
    match value {
        Out::Delete => out.push_str(&format!("{pad}{key}: null\n")),
        Out::Text(text) => out.push_str(&format!("{pad}{key}: {}\n", quoted(text))),
        Out::Map(entries) if entries.is_empty() => out.push_str(&format!("{pad}{key}: {{}}\n")),
        Out::Map(entries) => {
            out.push_str(&format!("{pad}{key}:\n"));
            entries.iter().for_each(|(k, v)| write(k, v, indent + 2, out));
        }
        Out::List(items) => {
            out.push_str(&format!("{pad}{key}:\n"));
            for item in items {
                match item {
                    Out::Map(entries) if !entries.is_empty() => {
                        let mut lines = String::new();
                        entries.iter().for_each(|(k, v)| write(k, v, indent + 4, &mut lines));
                        let item_pad = " ".repeat(indent + 4);
                        out.push_str(&format!("{pad}  - {}", &lines[item_pad.len()..]));
                    }
                    Out::Text(text) => out.push_str(&format!("{pad}  - {}\n", quoted(text))),
                    // no fragment gives these: an empty map, a list in a list, a deletion in a list
                    _ => out.push_str(&format!("{pad}  - {{}}\n")),
                }
            }
        }
    }
}

fn quoted(text: &str) -> String {
    serde_json::Value::String(text.to_string()).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::source::FileId;
    use crate::spanned_yaml::read_document;

    const CLUSTER: &str = "kind: ClickHouseCluster\nspec:\n  settings:\n    extraConfig:\n      max_threads: 8\n      logger:\n        level: test\n";

    fn of(fragments: &[(&str, &str)]) -> Result<String, String> {
        snippet(fragments, &read_document(CLUSTER, FileId(0)).unwrap())
    }

    #[test]
    fn a_removed_element_the_user_set_is_deleted_and_values_merge() {
        let server = "<clickhouse><max_threads remove=\"1\"/><logger><level>information</level></logger><listen_host remove=\"1\"/></clickhouse>";
        let users = "<clickhouse><profiles><default><max_threads>8</max_threads></default></profiles></clickhouse>";
        assert_eq!(
            of(&[(SERVER_KEY, server), (USERS_KEY, users)]).unwrap(),
            "spec:\n  settings:\n    extraConfig:\n      max_threads: null\n      logger:\n        level: \"information\"\n      listen_host:\n        \"@remove\": \"1\"\n    extraUsersConfig:\n      profiles:\n        default:\n          max_threads: \"8\"\n"
        );
    }

    #[test]
    fn repeated_elements_are_lists_and_text_beside_attributes_a_list_item() {
        let server = "<clickhouse><listen_host>::1</listen_host><listen_host>127.0.0.1</listen_host><secret from_env=\"S\">x</secret><empty/></clickhouse>";
        assert_eq!(
            of(&[(SERVER_KEY, server)]).unwrap(),
            "spec:\n  settings:\n    extraConfig:\n      listen_host:\n        - \"::1\"\n        - \"127.0.0.1\"\n      secret:\n        - \"@from_env\": \"S\"\n        - \"x\"\n      empty: \"\"\n"
        );
        let nodes =
            "<clickhouse><zookeeper><node><host>a</host></node><node><host>b</host></node></zookeeper></clickhouse>";
        assert!(of(&[(SERVER_KEY, nodes)]).unwrap_err().contains("<node>"));
    }

    /// What the snippet says is what ClickHouse's YAML reader makes of it.
    #[test]
    fn the_snippet_reads_back_as_the_fragment() {
        let server = "<clickhouse><query_log><ttl>event_date + INTERVAL 30 DAY DELETE</ttl></query_log><secret from_env=\"S\"/></clickhouse>";
        let text = of(&[(SERVER_KEY, server)]).unwrap();
        let document = read_document(&text, FileId(0)).unwrap();
        let extra = document.get("spec").and_then(|s| s.get("settings")).and_then(|s| s.get(SERVER_KEY)).unwrap();
        let root =
            super::super::yaml::convert(extra.clone(), crate::source::Origin { file: FileId(0), offset: 0 }).unwrap();
        let ttl = root.find("query_log/ttl").map(|e| e.inner_text());
        assert_eq!(ttl.as_deref(), Some("event_date + INTERVAL 30 DAY DELETE"));
        assert_eq!(root.child("secret").and_then(|e| e.attribute("from_env")), Some("S"));
    }
}
