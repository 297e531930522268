//! Kubernetes manifests in the tests: their documents as JSON, a printed fix applied as
//! `kubectl patch` applies it, the manifest written back, and the real clickhouse-server 25.8
//! started on the files chaudit renders from one.

use std::path::Path;

use serde_json::Value;

/// Starts the real server on the server and users configs chaudit renders from `manifest`
/// (in `dir`), the server config amended for this machine by `amend`.
pub fn start_rendered(dir: &Path, manifest: &str, amend: impl Fn(String) -> String) -> super::EngineStart {
    let render = |users: bool| {
        let mut args = vec!["config", "show", "--show-secrets", "--config", manifest];
        if users {
            args.push("--users");
        }
        let (code, stdout, stderr) = super::chaudit(dir, &args);
        assert_eq!(code, 0, "{manifest}: {stderr}");
        stdout
    };
    let tmp = tempfile::tempdir().unwrap();
    let tree = tmp.path().join("tree");
    std::fs::create_dir_all(&tree).unwrap();
    std::fs::write(tree.join("config.xml"), amend(render(false))).unwrap();
    std::fs::write(tree.join("users.xml"), render(true)).unwrap();
    super::engine_start(&tree)
}

/// An Altinity installation's server config with the users config beside it, named as the
/// image's config.xml names it.
pub fn beside_users_xml(server: String) -> String {
    server.replacen("</clickhouse>", "    <users_config>users.xml</users_config>\n</clickhouse>", 1)
}

/// A ClickHouseCluster's server config for this machine: the users file (XML here) named
/// .xml, as the server picks its parser by name; its Keeper, the replicated user directory
/// and the other hosts, which do not resolve here, left out.
pub fn on_this_machine(server: String) -> String {
    // each `<tag>...</tag>` of the text left out
    let without = |text: &str, tag: &str| -> String {
        let (open, close) = (format!("<{tag}>"), format!("</{tag}>"));
        let mut out = text.to_string();
        while let (Some(start), Some(end)) = (out.find(&open), out.find(&close)) {
            out.replace_range(start..end + close.len(), "");
        }
        out
    };
    let server = server.replace("<path>users.yaml</path>", "<path>users.xml</path>");
    without(&without(&server, "zookeeper"), "replicated")
        .lines()
        .map(|l| if l.contains(".svc.cluster.local</host>") { "<host>localhost</host>" } else { l })
        .collect::<Vec<_>>()
        .join("\n")
}

/// A manifest's documents as JSON values (JSON is YAML: the patched manifest is written so).
pub fn documents(text: &str) -> Vec<Value> {
    fn json(yaml: &chaudit::spanned_yaml::Yaml) -> Value {
        use chaudit::spanned_yaml::Yaml;
        match yaml {
            Yaml::Null(_) => Value::Null,
            Yaml::Scalar(s, _) => Value::String(s.clone()),
            Yaml::Sequence(items, _) => Value::Array(items.iter().map(json).collect()),
            Yaml::Mapping(pairs, _) => {
                Value::Object(pairs.iter().map(|(k, v)| (k.as_str().unwrap().to_string(), json(v))).collect())
            }
        }
    }
    let parsed = chaudit::spanned_yaml::read_documents(text, chaudit::source::FileId(0), 100).unwrap();
    parsed.iter().map(json).collect()
}

/// RFC 7386: objects merge, anything else replaces.
pub fn merge_patch(target: &mut Value, patch: &Value) {
    let Value::Object(changes) = patch else {
        *target = patch.clone();
        return;
    };
    if !target.is_object() {
        *target = Value::Object(Default::default());
    }
    for (key, change) in changes {
        let map = target.as_object_mut().unwrap();
        if change.is_null() {
            map.remove(key);
        } else {
            merge_patch(map.entry(key.clone()).or_insert(Value::Null), change);
        }
    }
}

/// RFC 6902 `add` and `replace`, the operations chaudit prints.
pub fn json_patch(target: &mut Value, operations: &Value) {
    for op in operations.as_array().unwrap() {
        let path = op["path"].as_str().unwrap();
        let (parent, last) = path.rsplit_once('/').unwrap();
        let last = last.replace("~1", "/").replace("~0", "~");
        let value = op["value"].clone();
        match (op["op"].as_str().unwrap(), target.pointer_mut(parent).unwrap_or_else(|| panic!("no {parent}"))) {
            ("add", Value::Array(items)) if last == "-" => items.push(value),
            ("add", Value::Array(items)) => items.insert(last.parse().unwrap(), value),
            ("add" | "replace", Value::Object(map)) => {
                map.insert(last, value);
            }
            ("replace", Value::Array(items)) => items[last.parse::<usize>().unwrap()] = value,
            (other, at) => panic!("{other} at {path} on {at}"),
        }
    }
}

/// Applies a finding's manifest fix to the installation (or ClickHouseCluster) among `docs`.
pub fn apply(docs: &mut [Value], fix: &Value) {
    let fixed = |kind: &str| kind.starts_with("ClickHouseInstallation") || kind == "ClickHouseCluster";
    let installation = docs.iter_mut().find(|d| d["kind"].as_str().is_some_and(fixed)).unwrap();
    match fix["patch_type"].as_str().unwrap() {
        "merge" => merge_patch(installation, &fix["patch"]),
        "json" => json_patch(installation, &fix["patch"]),
        other => panic!("patch type {other}"),
    }
}

/// Block YAML of a JSON value, every scalar a double-quoted string (as JSON quotes it).
pub fn block_yaml(value: &Value, indent: usize, out: &mut String) {
    let pad = " ".repeat(indent);
    let key = |k: &str| {
        let plain = k.chars().all(|c| c.is_ascii_alphanumeric() || "_./-".contains(c));
        if plain { k.to_string() } else { serde_json::to_string(k).unwrap() }
    };
    let nested =
        |v: &Value| matches!(v, Value::Object(m) if !m.is_empty()) || matches!(v, Value::Array(a) if !a.is_empty());
    let scalar = |v: &Value| match v {
        Value::Object(_) => "{}".to_string(),
        Value::Array(_) => "[]".to_string(),
        Value::Null => "null".to_string(),
        Value::String(s) => serde_json::to_string(s).unwrap(),
        other => serde_json::to_string(&other.to_string()).unwrap(),
    };
    match value {
        Value::Object(map) => {
            for (k, v) in map {
                if nested(v) {
                    out.push_str(&format!("{pad}{}:\n", key(k)));
                    block_yaml(v, indent + 2, out);
                } else {
                    out.push_str(&format!("{pad}{}: {}\n", key(k), scalar(v)));
                }
            }
        }
        Value::Array(items) => {
            for v in items {
                if nested(v) {
                    out.push_str(&format!("{pad}-\n"));
                    block_yaml(v, indent + 2, out);
                } else {
                    out.push_str(&format!("{pad}- {}\n", scalar(v)));
                }
            }
        }
        other => out.push_str(&format!("{pad}{}\n", scalar(other))),
    }
}

pub fn write_manifest(dir: &Path, name: &str, docs: &[Value]) {
    let mut text = String::new();
    for doc in docs {
        text.push_str("---\n");
        block_yaml(doc, 0, &mut text);
    }
    std::fs::write(dir.join(name), text).unwrap();
}

/// The findings of auditing `manifest` in `dir` (JSON report), none of the run's errors.
pub fn findings(dir: &Path, manifest: &str) -> Vec<Value> {
    let (code, stdout, stderr) = super::chaudit(dir, &["--config", manifest, "--format", "json"]);
    let report: Value =
        serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("{manifest}: exit {code}, {e}: {stderr}"));
    assert!(report.get("errors").is_none(), "{manifest}: {}", report["errors"]);
    report["findings"].as_array().unwrap().clone()
}
