//! Sections whose keys are `/` paths, merged level by level into the nested elements
//! ClickHouse's YAML reads; Secret values, which become `from_env` variables.

use super::*;

/// A section whose keys are `/` paths (`admin/networks/ip: [...]`) as the nested mapping
/// ClickHouse's YAML reads; `section` names the environment variables of Secret values.
pub(super) fn paths(section: &str, given: &Yaml, secrets: &Secrets) -> Yaml {
    let mut tree = Branch::default();
    if let Yaml::Mapping(pairs, _) = given {
        for (key, value) in pairs {
            let Some(path) = key.as_str() else { continue };
            let parts: Vec<&str> = path.split('/').filter(|p| !p.is_empty()).collect();
            tree.insert(&parts, key.origin(), secrets.as_env(section, path, value));
        }
    }
    tree.into_yaml(given.origin())
}

/// What stands for a Secret's value the manifest does not hold, in `element`: a well-formed
/// hash for the hash elements (the server checks their form at start; the Secret's real
/// value is not for chaudit to judge), else `description`.
pub(in crate::config) fn stand_in(element: &str, description: String) -> String {
    match element {
        "password_sha256_hex" => "0".repeat(64),
        "password_double_sha1_hex" => "0".repeat(40),
        _ => description,
    }
}

/// `data.item` of the manifest's document of this kind and name (a Secret's `stringData`, a
/// ConfigMap's `data`), when the manifest holds it.
pub(in crate::config) fn held_value<'a>(
    documents: &'a [Yaml],
    kind: &str,
    name: &str,
    data: &str,
    item: &str,
) -> Option<&'a str> {
    documents
        .iter()
        .filter(|d| d.get("kind").and_then(Yaml::as_str) == Some(kind))
        .find(|d| d.get("metadata").and_then(|m| m.get("name")).and_then(Yaml::as_str) == Some(name))
        .and_then(|d| d.get(data)?.get(item)?.as_str())
}

/// The manifest's Secrets, and the variables Secret values became.
pub(super) struct Secrets<'a> {
    pub(super) documents: &'a [Yaml],
    pub(super) env: std::cell::RefCell<Vec<(String, String)>>,
}

impl Secrets<'_> {
    /// `valueFrom: {secretKeyRef: ...}` as the operator renders it: `from_env` of the variable
    /// it adds to the pod (CONFIGURATION_<SECTION>_<PATH>, as util.BuildShellEnvVarName spells it).
    fn as_env(&self, section: &str, path: &str, value: &Yaml) -> Yaml {
        let Some(reference) = value.get("valueFrom").and_then(|v| v.get("secretKeyRef")) else { return value.clone() };
        let variable: String = format!("CONFIGURATION_{section}_{path}")
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() { c.to_ascii_uppercase() } else { '_' })
            .collect();
        let name = reference.get("name").and_then(Yaml::as_str).unwrap_or_default();
        let key = reference.get("key").and_then(Yaml::as_str).unwrap_or_default();
        let element = path.rsplit('/').next().unwrap_or(path);
        let value = held_value(self.documents, "Secret", name, "stringData", key)
            .map_or_else(|| stand_in(element, format!("(Secret {name}, key {key})")), str::to_string);
        self.env.borrow_mut().push((variable.clone(), value));
        let origin = reference.origin();
        Yaml::Mapping(vec![(Yaml::Scalar("@from_env".into(), origin), Yaml::Scalar(variable, origin))], origin)
    }
}

/// Keys split on `/`, merged level by level in the order written.
#[derive(Default)]
pub(super) struct Branch(Vec<(String, Origin, Entry)>);

pub(super) enum Entry {
    Leaf(Yaml),
    Branch(Branch),
}

impl Branch {
    fn insert(&mut self, parts: &[&str], origin: Origin, value: Yaml) {
        let Some((head, rest)) = parts.split_first() else { return };
        if rest.is_empty() {
            self.0.push((head.to_string(), origin, Entry::Leaf(value)));
            return;
        }
        let existing = self.0.iter_mut().find_map(|(name, _, entry)| match entry {
            Entry::Branch(branch) if name == head => Some(branch),
            _ => None,
        });
        match existing {
            Some(branch) => branch.insert(rest, origin, value),
            None => {
                let mut branch = Branch::default();
                branch.insert(rest, origin, value);
                self.0.push((head.to_string(), origin, Entry::Branch(branch)));
            }
        }
    }

    fn into_yaml(self, origin: Origin) -> Yaml {
        let pairs = self
            .0
            .into_iter()
            .map(|(name, at, entry)| {
                let value = match entry {
                    Entry::Leaf(value) => value,
                    Entry::Branch(branch) => branch.into_yaml(at),
                };
                (Yaml::Scalar(name, at), value)
            })
            .collect();
        Yaml::Mapping(pairs, origin)
    }
}
