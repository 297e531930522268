//! The config elements no other section compares, for a config side: every element under the
//! root's sections (`logger/level`, `query_cache/max_size_in_bytes`), an empty section
//! (`<query_cache/>`), a root element's later occurrences (`listen_host[1]`) and the
//! attributes ClickHouse keeps, each with its value and where it is written.

use std::collections::HashMap;

use super::Items;
use super::sections::item;
use crate::config::{Element, LoadedConfig};

/// Root elements another section compares (clusters, disks and policies, MergeTree
/// settings, users, macros with `--all`).
const COMPARED_ELSEWHERE: &[&str] =
    &["remote_servers", "storage_configuration", "merge_tree", "macros", "profiles", "users", "quotas", "roles"];

/// Attributes that steer the merge or a substitution: gone from the merged config.
const MERGE_MARKERS: &[&str] = &["replace", "remove", "incl", "from_env", "from_zk", "optional", "merge"];

/// What an empty element is shown as: it sets nothing, but its presence can (a log table).
pub(super) const EMPTY: &str = "(empty)";

/// The elements of the merged server config that the settings sections do not hold.
pub(super) fn config_elements(loaded: &LoadedConfig) -> Items {
    let mut items = Items::new();
    for (element, index) in numbered(&loaded.server.root) {
        let name = element.name.as_str();
        // a root leaf with a value, first of its name, is a server setting
        let setting = index == 0 && !element.has_element_children() && !element.value().trim().is_empty();
        if COMPARED_ELSEWHERE.contains(&name) || setting {
            continue;
        }
        add(loaded, element, keyed(name, index), false, &mut items);
    }
    items
}

/// Each child element with how many of its name came before it.
fn numbered(parent: &Element) -> impl Iterator<Item = (&Element, usize)> {
    let mut seen: HashMap<&str, usize> = HashMap::new();
    parent.elements().map(move |child| {
        let occurrence = seen.entry(child.name.as_str()).or_default();
        *occurrence += 1;
        (child, *occurrence - 1)
    })
}

fn keyed(name: &str, index: usize) -> String {
    if index == 0 { name.to_string() } else { format!("{name}[{index}]") }
}

fn add(loaded: &LoadedConfig, e: &Element, key: String, hidden: bool, items: &mut Items) {
    let hidden = hidden || crate::config::render::is_hidden(e);
    let at =
        |origin: crate::config::Origin| serde_json::Value::String(loaded.sources.file(origin.file).at(origin.offset));
    for attribute in e.attributes.iter().filter(|a| !MERGE_MARKERS.contains(&a.name.as_str())) {
        let name = format!("@{}", attribute.name);
        if name == "@hide_in_preprocessed" {
            continue;
        }
        let value = if hidden { crate::mask::MASK } else { attribute.value.as_str() };
        items.insert(format!("{key}/{name}"), item(&name, value, Some(&at(e.origin))));
    }
    if !e.has_element_children() {
        let value = e.value();
        let shown = match value.trim() {
            "" => EMPTY,
            _ if hidden => crate::mask::MASK,
            trimmed => trimmed,
        };
        items.insert(key, item(&e.name, shown, Some(&at(e.origin))));
        return;
    }
    for (child, index) in numbered(e) {
        add(loaded, child, format!("{key}/{}", keyed(&child.name, index)), hidden, items);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn elements_of(xml: &str) -> Items {
        let dir = tempfile::tempdir().unwrap();
        let main = dir.path().join("config.xml");
        std::fs::write(&main, xml).unwrap();
        let loaded = crate::config::load(&main, &crate::config::LoadOptions::default()).unwrap();
        config_elements(&loaded)
    }

    #[test]
    fn sections_are_flattened_and_settings_left_to_their_section() {
        let items = elements_of(
            "<clickhouse>\n<max_concurrent_queries>100</max_concurrent_queries>\n<query_cache/>\n\
             <logger><level>trace</level><size>1000M</size></logger>\n<listen_host>::1</listen_host>\n\
             <listen_host>127.0.0.1</listen_host>\n<merge_tree><x>1</x></merge_tree>\n\
             <zookeeper><node index=\"1\"><host>k</host></node><identity>u:p</identity></zookeeper>\n\
             <s3 hide_in_preprocessed=\"true\"><e><endpoint>http://x</endpoint></e></s3>\n</clickhouse>\n",
        );
        let shown: Vec<(String, String)> = items.iter().map(|(k, v)| (k.clone(), v.value.clone())).collect();
        let expected = [
            ("listen_host[1]", "127.0.0.1"),
            ("logger/level", "trace"),
            ("logger/size", "1000M"),
            ("query_cache", EMPTY),
            ("s3/e/endpoint", crate::mask::MASK),
            ("zookeeper/identity", crate::mask::MASK),
            ("zookeeper/node/@index", "1"),
            ("zookeeper/node/host", "k"),
        ];
        assert_eq!(shown, expected.map(|(k, v)| (k.to_string(), v.to_string())));
        assert_eq!(items["logger/level"].at.as_deref(), Some("config.xml:4:9"));
    }
}
