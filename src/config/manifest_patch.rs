//! Fixes for a ClickHouseInstallation, in the manifest's own terms: the operator generates
//! the server's files, so a `config.d/` fragment written beside the manifest changes nothing.
//! A fix is a YAML snippet to merge into the manifest (a rule's own, such as a cluster's
//! `secret`, or its config fragments as `spec.configuration.files` entries, which the
//! operator writes into config.d/ and users.d/), and the same change as a JSON Patch
//! (RFC 6902) of the manifest as it stands, for `kubectl patch --type json`.

use serde_json::{Value, json};

use crate::source::FileId;
use crate::spanned_yaml::{Yaml, read_document};

/// The installation a manifest holds, as written.
#[derive(Debug, Clone)]
pub struct Installation {
    /// `ClickHouseInstallation` or `ClickHouseInstallationTemplate`.
    pub kind: String,
    pub name: String,
    pub document: Yaml,
}

/// A fix of the installation: what to merge, the patch and the command applying it.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct ManifestFix {
    /// YAML to merge into the manifest; items of a list merge with the item of the same `name`.
    pub merge: String,
    /// `merge` (RFC 7386: maps merge, so several fixes add up) when the change meets no list of
    /// the manifest, else `json` (RFC 6902 operations on the manifest as it stands: an item
    /// of a list is reached by its index).
    pub patch_type: &'static str,
    pub patch: Value,
    /// `kubectl patch` with that patch.
    pub command: String,
    /// What the command patches, as the reports name it: `installation` or `cluster`.
    #[serde(skip)]
    pub patches: &'static str,
}

impl ManifestFix {
    /// A rule's snippet as rendered, before it is made a patch of the manifest it is for.
    pub fn snippet(merge: String) -> ManifestFix {
        ManifestFix { merge, patch_type: "", patch: Value::Null, command: String::new(), patches: "" }
    }
}

impl Installation {
    /// The image the installation's ClickHouse container runs and its version: the pod
    /// template the installation's defaults (else its first cluster) name, else the first one;
    /// its container named `clickhouse` (`clickhouse-keeper` in a Keeper installation), else
    /// the first running a clickhouse-server (or clickhouse-keeper) image.
    /// None when the tag is no version (`latest`, a digest).
    pub fn image_version(&self) -> Option<(String, crate::version::Version)> {
        let spec = self.document.get("spec")?;
        let named = |at: Option<&Yaml>| at?.get("templates")?.get("podTemplate")?.as_str().map(str::to_string);
        let first_cluster = match spec.get("configuration").and_then(|c| c.get("clusters")) {
            Some(Yaml::Sequence(clusters, _)) => clusters.first(),
            _ => None,
        };
        let wanted = named(spec.get("defaults")).or_else(|| named(first_cluster));
        let Some(Yaml::Sequence(templates, _)) = spec.get("templates").and_then(|t| t.get("podTemplates")) else {
            return None;
        };
        let template = match &wanted {
            Some(name) => templates.iter().find(|t| t.get("name").and_then(Yaml::as_str) == Some(name.as_str()))?,
            None => templates.first()?,
        };
        let Some(Yaml::Sequence(containers, _)) = template.get("spec").and_then(|s| s.get("containers")) else {
            return None;
        };
        let image = |c: &Yaml| c.get("image").and_then(Yaml::as_str).map(str::to_string);
        let image = containers
            .iter()
            .find(|c| matches!(c.get("name").and_then(Yaml::as_str), Some("clickhouse" | "clickhouse-keeper")))
            .and_then(image)
            .or_else(|| {
                // a Keeper installation runs clickhouse-keeper, of ClickHouse's own versions
                let server_image = |i: &String| i.contains("clickhouse-server") || i.contains("clickhouse-keeper");
                containers.iter().filter_map(image).find(server_image)
            })?;
        let (repository, tag) = image.rsplit_once(':')?;
        if tag.contains('/') || repository.ends_with("@sha256") {
            return None;
        }
        let version = tag.parse().ok()?;
        Some((image, version))
    }

    /// The fix merging `merge` into the installation; an error when the snippet is no YAML
    /// mapping or meets the manifest where a mapping or list holds a value of another shape.
    pub fn fix(&self, merge: &str) -> Result<ManifestFix, String> {
        let snippet = read_document(merge, FileId(u32::MAX)).map_err(|(_, m)| format!("the manifest fix: {m}"))?;
        let (patch_type, patch) = if self.is_clickhouse_cluster() {
            // its fixes are under extraConfig, ClickHouse's config as a map: a merge patch
            // replaces a list there whole and deletes a key set to null, as meant
            ("merge", value(&snippet))
        } else {
            let mut operations = Vec::new();
            let meets_list = diff(&snippet, Some(&self.document), "", &mut operations)?;
            if meets_list { ("json", Value::Array(operations)) } else { ("merge", value(&snippet)) }
        };
        let resource = match self.kind.as_str() {
            "ClickHouseInstallationTemplate" => "chit",
            super::clickhouse_operator::KIND => "clickhousecluster",
            super::manifest::KEEPER_KIND => "chk",
            _ => "chi",
        };
        let quoted = patch.to_string().replace('\'', "'\\''");
        Ok(ManifestFix {
            merge: merge.trim_end().to_string() + "\n",
            patch_type,
            command: format!("kubectl patch {resource} {} --type {patch_type} -p '{quoted}'", self.name),
            patches: if self.is_clickhouse_cluster() { "cluster" } else { "installation" },
            patch,
        })
    }
}

impl Installation {
    /// A ClickHouseCluster of ClickHouse's operator: its fixes go under `spec.settings`.
    pub fn is_clickhouse_cluster(&self) -> bool {
        self.kind == super::clickhouse_operator::KIND
    }
}

/// Config fragments as `spec.configuration.files` entries: `dir/name` and the XML.
pub fn files_snippet(entries: &[(String, String)]) -> String {
    let mut out = String::from("spec:\n  configuration:\n    files:\n");
    for (path, xml) in entries {
        out.push_str(&format!("      {path}: |\n"));
        for line in xml.trim_end().lines() {
            out.push_str(&format!("        {line}\n"));
        }
    }
    out
}

/// JSON Patch operations making `present` (the manifest at `pointer`) hold `wanted`; true
/// when they reach into a list of the manifest.
fn diff(wanted: &Yaml, present: Option<&Yaml>, pointer: &str, out: &mut Vec<Value>) -> Result<bool, String> {
    let Some(present) = present.filter(|p| !matches!(p, Yaml::Null(_))) else {
        out.push(json!({"op": "add", "path": pointer, "value": value(wanted)}));
        return Ok(false);
    };
    match (wanted, present) {
        (Yaml::Mapping(pairs, _), Yaml::Mapping(..)) => {
            let mut meets_list = false;
            for (key, item) in pairs {
                let key = key.as_str().ok_or("the manifest fix has a key that is not text")?;
                meets_list |= diff(item, present.get(key), &format!("{pointer}/{}", escape(key)), out)?;
            }
            Ok(meets_list)
        }
        (Yaml::Sequence(items, _), Yaml::Sequence(existing, _)) => {
            for item in items {
                let name = item.get("name").and_then(Yaml::as_str);
                match existing.iter().position(|e| name.is_some() && e.get("name").and_then(Yaml::as_str) == name) {
                    Some(index) => {
                        diff(item, existing.get(index), &format!("{pointer}/{index}"), out)?;
                    }
                    None => out.push(json!({"op": "add", "path": format!("{pointer}/-"), "value": value(item)})),
                }
            }
            Ok(true)
        }
        (Yaml::Scalar(wanted_text, _), Yaml::Scalar(present_text, _)) => {
            if wanted_text != present_text {
                out.push(json!({"op": "replace", "path": pointer, "value": value(wanted)}));
            }
            Ok(false)
        }
        _ => Err(format!("the manifest holds something else than the fix expects at `{pointer}`")),
    }
}

/// A JSON Pointer token: `~` and `/` escaped.
fn escape(key: &str) -> String {
    key.replace('~', "~0").replace('/', "~1")
}

/// YAML as JSON; scalars stay text, as the operator's fields are.
pub(crate) fn value(yaml: &Yaml) -> Value {
    match yaml {
        Yaml::Null(_) => Value::Null,
        Yaml::Scalar(text, _) => Value::String(text.clone()),
        Yaml::Sequence(items, _) => Value::Array(items.iter().map(value).collect()),
        Yaml::Mapping(pairs, _) => {
            Value::Object(pairs.iter().map(|(k, v)| (k.as_str().unwrap_or_default().to_string(), value(v))).collect())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn installation(text: &str) -> Installation {
        Installation {
            kind: "ClickHouseInstallation".into(),
            name: "demo".into(),
            document: read_document(text, FileId(0)).unwrap(),
        }
    }

    const MANIFEST: &str = "kind: ClickHouseInstallation\nmetadata: {name: demo}\nspec:\n  configuration:\n    clusters:\n      - name: a\n      - name: b\n        layout: {replicasCount: 2}\n";

    #[test]
    fn a_named_list_item_is_patched_in_place() {
        let fix = installation(MANIFEST)
            .fix("spec:\n  configuration:\n    clusters:\n      - name: b\n        secret:\n          auto: \"true\"\n")
            .unwrap();
        assert_eq!(fix.patch_type, "json");
        assert_eq!(
            fix.patch,
            json!([{"op": "add", "path": "/spec/configuration/clusters/1/secret", "value": {"auto": "true"}}])
        );
        assert!(fix.command.starts_with("kubectl patch chi demo --type json -p '[{"), "{}", fix.command);
    }

    #[test]
    fn files_are_a_merge_patch_that_adds_up() {
        let snippet =
            files_snippet(&[("config.d/zz.xml".into(), "<clickhouse>\n    <a>it's</a>\n</clickhouse>".into())]);
        let fix = installation(MANIFEST).fix(&snippet).unwrap();
        assert_eq!(fix.patch_type, "merge");
        let xml = "<clickhouse>\n    <a>it's</a>\n</clickhouse>\n";
        assert_eq!(fix.patch, json!({"spec": {"configuration": {"files": {"config.d/zz.xml": xml}}}}));
        assert!(fix.command.contains("it'\\''s"), "{}", fix.command);
    }

    #[test]
    fn the_version_is_the_tag_of_the_named_pod_templates_image() {
        let with = |defaults: &str, tag: &str| {
            let text = format!(
                "kind: ClickHouseInstallation\nspec:\n{defaults}  templates:\n    podTemplates:\n      - name: other\n        spec:\n          containers:\n            - name: clickhouse\n              image: clickhouse/clickhouse-server:23.3\n      - name: main\n        spec:\n          containers:\n            - name: sidecar\n              image: busybox:1.36\n            - name: server\n              image: clickhouse/clickhouse-server:{tag}\n"
            );
            installation(&text).image_version().map(|(image, v)| (image, v.to_string()))
        };
        let defaults = "  defaults:\n    templates:\n      podTemplate: main\n";
        assert_eq!(
            with(defaults, "24.8.4.13-alpine"),
            Some(("clickhouse/clickhouse-server:24.8.4.13-alpine".into(), "24.8.4.13".into()))
        );
        assert_eq!(with(defaults, "latest"), None);
        assert_eq!(with("", "24.8").map(|(_, v)| v), Some("23.3".into()));
    }

    #[test]
    fn a_shape_the_manifest_does_not_have_is_an_error() {
        let err = installation(MANIFEST).fix("spec:\n  configuration: [1]\n").unwrap_err();
        assert!(err.contains("/spec/configuration"), "{err}");
    }
}
