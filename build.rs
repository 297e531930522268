//! Embeds the built-in rule pack (rules/**/*.yaml, fixtures excluded) into the binary with
//! its YAML events recorded (see src/spanned_yaml/events.rs), indexes the lines of
//! data/config-keys.txt, and writes the setting catalogs (data/catalogs/*.json) as static
//! tables.

use std::path::{Path, PathBuf};

#[path = "src/spanned_yaml/events.rs"]
#[allow(dead_code)] // the build records events; the binary replays them
mod events;

fn main() {
    let root = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"));
    embed_rules(&root);
    index_config_keys(&root);
    write_catalogs(&root);
}

/// Where the build writes what the crate includes.
fn out_dir() -> PathBuf {
    PathBuf::from(std::env::var("OUT_DIR").expect("cargo sets OUT_DIR"))
}

/// The rule files, each with its text and the span of its recorded YAML events in one blob
/// (`BUILTIN_RULES` and `EVENTS`, see src/rules/mod.rs).
fn embed_rules(root: &Path) {
    println!("cargo:rerun-if-changed=rules");
    println!("cargo:rerun-if-changed=src/spanned_yaml/events.rs");
    let out = out_dir();
    let mut files = Vec::new();
    collect(&root.join("rules"), &mut files);
    files.sort();
    let mut recorded = Vec::new();
    let entries: String = files
        .iter()
        .map(|f| {
            let relative = f.strip_prefix(root).expect("under the manifest dir").display().to_string();
            let text = std::fs::read_to_string(f).expect("read a rule file");
            let span = match events::record(&text) {
                Some(events) => {
                    let start = recorded.len();
                    recorded.extend_from_slice(&events);
                    format!("Some({start}..{})", recorded.len())
                }
                None => "None".to_string(),
            };
            format!("    ({relative:?}, include_str!({:?}), {span}),\n", f.display().to_string())
        })
        .collect();
    let blob = out.join("builtin_rules.events");
    std::fs::write(&blob, &recorded).expect("write builtin_rules.events");
    std::fs::write(
        out.join("builtin_rules.rs"),
        format!(
            "/// Each rule file: its path, its text and where its recorded YAML events are in [`EVENTS`].\n\
             pub const BUILTIN_RULES: &[(&str, &str, Option<std::ops::Range<usize>>)] = &[\n{entries}];\n\
             pub static EVENTS: &[u8] = include_bytes!({:?});\n",
            blob.display().to_string()
        ),
    )
    .expect("write builtin_rules.rs");
}

/// The catalogs as static tables sorted by name (`facts::catalog` looks names up in them):
/// parsing the JSON at start cost each audit 10 M instructions, on the path every rule
/// check waits for.
fn write_catalogs(root: &Path) {
    println!("cargo:rerun-if-changed=data/catalogs");
    let dir = root.join("data/catalogs");
    let mut versions: Vec<(u32, u32, PathBuf)> = std::fs::read_dir(&dir)
        .expect("read data/catalogs")
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .map(|p| {
            let stem = p.file_stem().and_then(|s| s.to_str()).expect("a catalog is named <major>.<minor>.json");
            let (major, minor) = stem.split_once('.').expect("a catalog is named <major>.<minor>.json");
            (major.parse().expect("a major version"), minor.parse().expect("a minor version"), p)
        })
        .collect();
    versions.sort();
    let mut out = format!("static CATALOGS: [((u32, u32), Catalog); {}] = [\n", versions.len());
    for (major, minor, path) in &versions {
        let text = std::fs::read_to_string(path).expect("read a catalog");
        let json: serde_json::Value = serde_json::from_str(&text).expect("a catalog is JSON");
        let version = json["version"].as_str().expect("a catalog names its version");
        out.push_str(&format!("    (({major}, {minor}), Catalog {{\n        version: {version:?},\n"));
        for section in ["session", "server", "merge_tree"] {
            let settings = json[section].as_object().expect("a catalog section is an object");
            let mut names: Vec<&String> = settings.keys().collect();
            names.sort();
            out.push_str(&format!("        {section}: SettingMap(&[\n"));
            for name in names {
                out.push_str(&format!("            ({name:?}, {}),\n", setting(&settings[name.as_str()])));
            }
            out.push_str("        ]),\n");
        }
        out.push_str("        session_names: OnceLock::new(),\n    }),\n");
    }
    out.push_str("];\n");
    let target = out_dir().join("catalogs.rs");
    std::fs::write(target, out).expect("write catalogs.rs");
}

/// One setting as a `Setting` literal; a field the catalog does not know stops the build.
fn setting(value: &serde_json::Value) -> String {
    let fields = value.as_object().expect("a setting is an object");
    let text = |key: &str| match fields.get(key) {
        None | Some(serde_json::Value::Null) => "None".to_string(),
        Some(v) => format!("Some({:?})", v.as_str().expect("a setting's field is text")),
    };
    for key in fields.keys() {
        let known = ["default", "type", "is_obsolete", "tier", "alias_for", "changeable_without_restart"];
        assert!(known.contains(&key.as_str()), "data/catalogs: unknown setting field `{key}`");
    }
    let obsolete = fields.get("is_obsolete").and_then(serde_json::Value::as_u64).unwrap_or(0) != 0;
    format!(
        "Setting {{ default: {}, kind: {}, is_obsolete: {obsolete}, tier: {}, alias_for: {}, changeable_without_restart: {} }}",
        text("default"),
        text("type"),
        text("tier"),
        text("alias_for"),
        text("changeable_without_restart"),
    )
}

/// Where each name's line starts in data/config-keys.txt after its comment line, as
/// little-endian u32s: the search for a name probes lines without scanning for them.
fn index_config_keys(root: &Path) {
    println!("cargo:rerun-if-changed=data/config-keys.txt");
    let text = std::fs::read_to_string(root.join("data/config-keys.txt")).expect("read data/config-keys.txt");
    let names = text.split_once('\n').map_or("", |(_, rest)| rest);
    let mut starts = Vec::new();
    let mut at = 0;
    for line in names.split_inclusive('\n') {
        starts.extend_from_slice(&u32::try_from(at).expect("the file is under 4 GiB").to_le_bytes());
        at += line.len();
    }
    let out = out_dir().join("config_key_lines.bin");
    std::fs::write(out, starts).expect("write config_key_lines.bin");
}

/// Rule files: YAML files not inside a fixture tree (a directory with a config.xml, or
/// the config.d/, conf.d/, users.d/ of one).
fn collect(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    let is_fixture = ["config.xml", "config.yaml", "config.yml"].iter().any(|m| dir.join(m).exists())
        || dir.file_name().is_some_and(|n| n == "config.d" || n == "conf.d" || n == "users.d");
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            collect(&path, out);
        } else if !is_fixture && path.extension().is_some_and(|e| e == "yaml" || e == "yml") {
            out.push(path);
        }
    }
}
