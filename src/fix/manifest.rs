//! `chaudit fix` on a Kubernetes manifest: a fix in the manifest's terms (YAML to merge into
//! the ClickHouseInstallation) written into the manifest file itself. The file is edited, not
//! rewritten: each key the fix adds is inserted as text into the mapping that receives it
//! (after a list item's first line, else above the key that heads the mapping and its
//! comments), so the file's comments, its other documents, its key order and its quoting stay
//! as they were; each insertion must read back as the manifest with exactly that key added. A
//! fix that would change a value the manifest sets, add an item to one of its lists, or reach
//! a mapping written in flow style (`{a: 1}`) is not written: the user merges it.

use std::path::{Path, PathBuf};

use super::{FixError, FixFile, FixRequest};
use crate::config::LoadedConfig;
use crate::config::manifest::{KINDS, MAX_DOCUMENTS};
use crate::config::manifest_patch::ManifestFix;
use crate::eval::Finding;
use crate::rules::ConfigTree;
use crate::source::FileId;
use crate::spanned_yaml::events::{self, Step};
use crate::spanned_yaml::{Yaml, read_documents};

/// The manifest a fix run edits: its text as read, and as the fixes so far leave it.
pub(super) struct ManifestEdit {
    /// The config is a Kubernetes manifest: the operator writes the server's files, so no
    /// fragment beside it would reach the server.
    pub operator_files: bool,
    /// `ClickHouseInstallation `NAME``, when the manifest holds one (fixes in its terms).
    installation: Option<String>,
    path: PathBuf,
    before: String,
    text: String,
    fixes: usize,
}

impl ManifestEdit {
    pub fn of(request: &FixRequest, loaded: &LoadedConfig) -> ManifestEdit {
        let path = request.config.clone();
        let mut edit = ManifestEdit {
            operator_files: loaded.from_manifest,
            installation: None,
            path,
            before: String::new(),
            text: String::new(),
            fixes: 0,
        };
        // the manifest's text as the audit read it
        let manifest = loaded.server.files.first().map(|id| loaded.sources.file(*id).text.to_string());
        if let (Some(installation), Some(text)) = (&loaded.manifest, manifest) {
            edit.before = text;
            edit.text = edit.before.clone();
            edit.installation = Some(format!("{} `{}`", installation.kind, installation.name));
        }
        edit
    }

    /// A finding whose fix is config fragments, on a manifest that takes none in its terms
    /// (a ClickHouseCluster): what the user does instead.
    pub fn operator_owned(&self, finding: &Finding) -> Option<String> {
        let fix = &finding.remediation;
        if !self.operator_files || fix.fragments.is_empty() || fix.manual.is_some() || fix.manifest.is_some() {
            return None;
        }
        if fix.config.is_none() {
            return Some(
                "The operator writes this server's files, and this fix would copy a secret value: make the \
                 change in the manifest, where the value is written."
                    .into(),
            );
        }
        let parts: Vec<String> = fix
            .fragments
            .iter()
            .map(|f| {
                let key = if f.tree == ConfigTree::Users { "extraUsersConfig" } else { "extraConfig" };
                format!("in spec.settings.{key}:\n{}", f.xml.trim_end())
            })
            .collect();
        Some(format!(
            "The operator writes this server's files, so a file beside the manifest would change nothing: put these \
             elements into the ClickHouseCluster, written as YAML, {}",
            parts.join("\n")
        ))
    }

    /// Merges a fix into the manifest's text, or says why it is left to the user.
    pub fn merge(&mut self, fix: &ManifestFix) -> Result<(), String> {
        let by_hand = |why: String| {
            format!(
                "{why}, so chaudit does not write it. Merge into the manifest:\n{}or patch the installation:\n{}",
                fix.merge, fix.command
            )
        };
        if self.installation.is_none() {
            return Err(by_hand("the manifest holds no installation chaudit can edit".into()));
        }
        if crate::mask::holds_secret(&fix.merge) {
            return Err(by_hand("the fix would copy a secret value".into()));
        }
        self.text = merge_into(&self.text, &fix.merge).map_err(by_hand)?;
        self.fixes += 1;
        Ok(())
    }

    /// The manifest as a file to write, when a fix went into it.
    pub fn file(self, request: &FixRequest) -> Result<Option<FixFile>, FixError> {
        let (Some(installation), true) = (self.installation, self.fixes > 0) else { return Ok(None) };
        // a link, a FIFO or a device is refused, as a fix file is (the file it names is yours to edit)
        crate::regular_file::ensure_replaceable(&self.path).map_err(FixError::Write)?;
        // everything chaudit writes passes through its redaction: a value it masks would be lost
        if crate::redact::redact(&self.text) != self.text {
            return Err(FixError::MaskedManifest { path: self.path.display().to_string() });
        }
        let base = request.config.parent().unwrap_or(Path::new(""));
        let shown = self.path.strip_prefix(base).unwrap_or(&self.path).display().to_string();
        Ok(Some(FixFile {
            path: self.path,
            shown,
            tree: ConfigTree::Server,
            before: self.before,
            after: self.text,
            fixes: self.fixes,
            manifest: Some(installation),
        }))
    }
}

/// The fix's YAML as written, each scalar with whether it was plain (`true`) or quoted (`"true"`).
#[derive(Debug, Clone, PartialEq)]
enum Node {
    Scalar(String, bool),
    Sequence(Vec<Node>),
    Mapping(Vec<(String, Node)>),
}

/// The manifest's text with `merge` merged into its installation (maps merge by key, list
/// items by their `name`), or why it cannot be written into the file.
pub fn merge_into(text: &str, merge: &str) -> Result<String, String> {
    let wanted = parse(merge)?;
    let mut edited = text.to_string();
    // each round inserts one missing key (with everything under it); a fix adds a few
    for _ in 0..64 {
        let documents = read(&edited)?;
        let Some(insertion) = missing(&wanted, installation(&documents)?, "")? else { return Ok(edited) };
        // after a list item's first line (`- name: a` stays first) when that reads back as
        // meant, else before the mapping's first key
        let placed = [true, false].into_iter().find_map(|after_first| {
            let text = insert(&edited, &insertion, after_first)?;
            let read_back = read(&text).ok()?;
            let grown = size_of_all(&documents) + 1 + size(&insertion.value);
            (read_back.len() == documents.len()
                && documents.iter().zip(&read_back).all(|(old, new)| holds(new, old))
                && size_of_all(&read_back) == grown)
                .then_some(text)
        });
        edited = placed.ok_or_else(|| {
            format!("`{}` cannot be inserted as text where it goes (a mapping written in flow style?)", insertion.key)
        })?;
    }
    Err("the fix adds more keys than chaudit inserts in one change".into())
}

/// Nodes in a tree (a key counts as one), to see that an edit added exactly what it meant.
fn size(node: &Node) -> usize {
    1 + match node {
        Node::Scalar(..) => 0,
        Node::Sequence(items) => items.iter().map(size).sum(),
        Node::Mapping(pairs) => pairs.iter().map(|(_, v)| 1 + size(v)).sum(),
    }
}

fn size_of_all(documents: &[Yaml]) -> usize {
    fn of(node: &Yaml) -> usize {
        1 + match node {
            Yaml::Null(_) | Yaml::Scalar(..) => 0,
            Yaml::Sequence(items, _) => items.iter().map(of).sum(),
            Yaml::Mapping(pairs, _) => pairs.iter().map(|(_, v)| 1 + of(v)).sum(),
        }
    }
    documents.iter().map(of).sum()
}

fn read(text: &str) -> Result<Vec<Yaml>, String> {
    read_documents(text, FileId(0), MAX_DOCUMENTS).map_err(|(_, m)| format!("the manifest does not read as YAML: {m}"))
}

fn installation(documents: &[Yaml]) -> Result<&Yaml, String> {
    let of_kind = |wanted: &dyn Fn(&str) -> bool| {
        documents.iter().find(|d| d.get("kind").and_then(Yaml::as_str).is_some_and(wanted))
    };
    // a Keeper installation is the one audited only in a file without a ClickHouse one
    of_kind(&|k| KINDS.contains(&k))
        .or_else(|| of_kind(&|k| k == crate::config::manifest::KEEPER_KIND))
        .ok_or_else(|| "the manifest holds no ClickHouseInstallation".to_string())
}

/// The fix's YAML, quoting kept (the events say which scalars were plain).
fn parse(merge: &str) -> Result<Node, String> {
    enum Open {
        Sequence(Vec<Node>),
        Mapping(Vec<(String, Node)>, Option<String>),
    }
    let mut stack: Vec<Open> = Vec::new();
    let mut done = None;
    for item in events::of_text(merge) {
        let (step, _) = item.map_err(|(_, m)| format!("the fix is not YAML: {m}"))?;
        let node = match step {
            Step::Scalar { value, plain, .. } => Node::Scalar(value.into_owned(), plain),
            Step::SequenceStart { .. } => {
                stack.push(Open::Sequence(Vec::new()));
                continue;
            }
            Step::MappingStart { .. } => {
                stack.push(Open::Mapping(Vec::new(), None));
                continue;
            }
            Step::End => match stack.pop() {
                Some(Open::Sequence(items)) => Node::Sequence(items),
                Some(Open::Mapping(pairs, _)) => Node::Mapping(pairs),
                None => continue,
            },
            Step::Alias(_) => return Err("the fix uses a YAML alias".into()),
            Step::DocumentEnd => continue,
        };
        match stack.last_mut() {
            Some(Open::Sequence(items)) => items.push(node),
            Some(Open::Mapping(pairs, key)) => match key.take() {
                Some(key) => pairs.push((key, node)),
                None => match node {
                    Node::Scalar(text, _) => *key = Some(text),
                    _ => return Err("the fix has a key that is not text".into()),
                },
            },
            None => done = done.or(Some(node)),
        }
    }
    match done {
        Some(node @ Node::Mapping(_)) => Ok(node),
        _ => Err("the fix is not a YAML mapping".into()),
    }
}

/// A key to insert: at `offset`, where the first key of the receiving mapping starts.
struct Insertion {
    offset: usize,
    key: String,
    value: Node,
}

/// The first key of `wanted` the manifest lacks, or why the fix cannot be merged as text.
fn missing(wanted: &Node, present: &Yaml, pointer: &str) -> Result<Option<Insertion>, String> {
    match (wanted, present) {
        (Node::Mapping(pairs), Yaml::Mapping(existing, _)) => {
            for (key, value) in pairs {
                let at = format!("{pointer}/{key}");
                match present.get(key) {
                    Some(Yaml::Null(_)) => return Err(format!("`{at}` is empty in the manifest")),
                    Some(inner) => {
                        if let Some(insertion) = missing(value, inner, &at)? {
                            return Ok(Some(insertion));
                        }
                    }
                    None => {
                        let offset = match existing.first() {
                            Some((Yaml::Scalar(_, origin), _)) => origin.offset as usize,
                            _ => return Err(format!("`{}` is written in flow style", or_root(pointer))),
                        };
                        return Ok(Some(Insertion { offset, key: key.clone(), value: value.clone() }));
                    }
                }
            }
            Ok(None)
        }
        (Node::Sequence(items), Yaml::Sequence(existing, _)) => {
            for item in items {
                let Some(Node::Scalar(name, _)) = field(item, "name") else {
                    // an item without a name is there as it is, or is an item to add
                    if existing.iter().any(|e| same(e, item)) {
                        continue;
                    }
                    return Err(format!("the fix adds an item to the list `{pointer}`"));
                };
                let Some(index) = existing.iter().position(|e| e.get("name").and_then(Yaml::as_str) == Some(name))
                else {
                    return Err(format!("the fix adds an item `{name}` to the list `{pointer}`"));
                };
                if let Some(insertion) = missing(item, &existing[index], &format!("{pointer}/{index}"))? {
                    return Ok(Some(insertion));
                }
            }
            Ok(None)
        }
        (Node::Scalar(wanted, _), Yaml::Scalar(present, _)) if wanted == present => Ok(None),
        (Node::Scalar(..), Yaml::Scalar(..)) => {
            Err(format!("the fix changes the value the manifest sets at `{pointer}`"))
        }
        _ => Err(format!("the manifest holds something else than the fix expects at `{}`", or_root(pointer))),
    }
}

fn or_root(pointer: &str) -> &str {
    if pointer.is_empty() { "/" } else { pointer }
}

/// Whether the manifest's node is the fix's, as read (quoting aside).
fn same(present: &Yaml, wanted: &Node) -> bool {
    match (present, wanted) {
        (Yaml::Null(_), Node::Scalar(text, true)) => matches!(text.as_str(), "" | "~" | "null" | "Null" | "NULL"),
        (Yaml::Scalar(a, _), Node::Scalar(b, _)) => a == b,
        (Yaml::Sequence(a, _), Node::Sequence(b)) => a.len() == b.len() && a.iter().zip(b).all(|(a, b)| same(a, b)),
        (Yaml::Mapping(a, _), Node::Mapping(b)) => {
            a.len() == b.len() && b.iter().all(|(k, v)| present.get(k).is_some_and(|p| same(p, v)))
        }
        _ => false,
    }
}

fn field<'a>(node: &'a Node, key: &str) -> Option<&'a Node> {
    match node {
        Node::Mapping(pairs) => pairs.iter().find(|(k, _)| k == key).map(|(_, v)| v),
        _ => None,
    }
}

/// The key inserted before the receiving mapping's first key, which then follows it at the
/// same column, or (`after_first`, in a list item) on the line after that key's: a block
/// mapping only (spaces, and the `- ` of a list item, before its key). None: not as text.
fn insert(text: &str, insertion: &Insertion, after_first: bool) -> Option<String> {
    let offset = insertion.offset;
    let line_start = text.get(..offset)?.rfind('\n').map_or(0, |i| i + 1);
    let prefix = &text[line_start..offset];
    let block = prefix.replace("- ", "  ").chars().all(|c| c == ' ');
    let key_start = text[offset..].chars().next().is_some_and(|c| c.is_alphanumeric() || "\"'_./-".contains(c));
    if !block || !key_start || (after_first && !prefix.contains('-')) {
        return None;
    }
    let pad = " ".repeat(prefix.len());
    let mut lines = Vec::new();
    entry(&insertion.key, &insertion.value, 0, &mut lines);
    let mut added = String::new();
    for (i, line) in lines.iter().enumerate() {
        if (i > 0 || after_first) && !line.is_empty() {
            added.push_str(&pad);
        }
        added.push_str(line);
        added.push('\n');
    }
    if after_first {
        let at = offset + text[offset..].find('\n')? + 1;
        return Some(format!("{}{added}{}", &text[..at], &text[at..]));
    }
    // above the comment lines that head the first key: they stay with it
    let mut at = line_start;
    while let Some(previous) = text[..at.saturating_sub(1)].rfind('\n').map(|i| i + 1).or((at > 0).then_some(0)) {
        if !text[previous..at].trim_start().starts_with('#') || !prefix.trim().is_empty() {
            break;
        }
        at = previous;
    }
    if at == line_start {
        added.push_str(&pad);
        at = offset;
    } else {
        added.insert_str(0, &pad);
    }
    Some(format!("{}{added}{}", &text[..at], &text[at..]))
}

/// `key: value` as block YAML lines, at `indent`.
fn entry(key: &str, value: &Node, indent: usize, out: &mut Vec<String>) {
    let pad = " ".repeat(indent);
    let key = if plain_safe(key) { key.to_string() } else { quoted(key) };
    match value {
        Node::Mapping(pairs) if !pairs.is_empty() => {
            out.push(format!("{pad}{key}:"));
            pairs.iter().for_each(|(k, v)| entry(k, v, indent + 2, out));
        }
        Node::Sequence(items) if !items.is_empty() => {
            out.push(format!("{pad}{key}:"));
            items.iter().for_each(|item| list_item(item, indent + 2, out));
        }
        scalar => {
            let (head, block) = scalar_text(scalar, indent + 2);
            out.push(format!("{pad}{key}:{head}"));
            out.extend(block);
        }
    }
}

fn list_item(item: &Node, indent: usize, out: &mut Vec<String>) {
    let pad = " ".repeat(indent);
    match item {
        Node::Mapping(pairs) if !pairs.is_empty() => {
            let mut lines = Vec::new();
            pairs.iter().for_each(|(k, v)| entry(k, v, indent + 2, &mut lines));
            if let Some(first) = lines.first_mut() {
                *first = format!("{pad}- {}", first.trim_start());
            }
            out.extend(lines);
        }
        Node::Sequence(items) if !items.is_empty() => {
            out.push(format!("{pad}-"));
            items.iter().for_each(|i| list_item(i, indent + 2, out));
        }
        scalar => {
            let (head, block) = scalar_text(scalar, indent + 2);
            out.push(format!("{pad}-{head}"));
            out.extend(block);
        }
    }
}

/// What follows `key:` on its line, and the lines of a block scalar below it.
fn scalar_text(node: &Node, indent: usize) -> (String, Vec<String>) {
    let (text, plain) = match node {
        Node::Mapping(_) => return (" {}".into(), Vec::new()),
        Node::Sequence(_) => return (" []".into(), Vec::new()),
        Node::Scalar(text, plain) => (text, *plain),
    };
    if plain {
        return (if text.is_empty() { String::new() } else { format!(" {text}") }, Vec::new());
    }
    let printable = text.chars().all(|c| c == '\n' || !c.is_control());
    if text.contains('\n') && printable && !text.starts_with([' ', '\n']) {
        let body = text.trim_end_matches('\n');
        let chomp = match text.len() - body.len() {
            0 => "-",
            1 => "",
            _ => "+",
        };
        let pad = " ".repeat(indent);
        let mut lines: Vec<String> =
            body.split('\n').map(|l| if l.is_empty() { String::new() } else { format!("{pad}{l}") }).collect();
        // `|+` keeps the trailing line breaks as empty lines
        lines.extend(std::iter::repeat_n(String::new(), (text.len() - body.len()).saturating_sub(1)));
        return (format!(" |{chomp}"), lines);
    }
    (format!(" {}", quoted(text)), Vec::new())
}

/// A key written as it is: letters, digits and `_./-`, not starting with `-`.
fn plain_safe(text: &str) -> bool {
    !text.is_empty()
        && !text.starts_with('-')
        && text.chars().all(|c| c.is_ascii_alphanumeric() || "_./-".contains(c))
        && !matches!(text, "true" | "false" | "null" | "yes" | "no" | "on" | "off" | "y" | "n")
}

/// Double-quoted (JSON's string syntax is YAML's double-quoted style).
fn quoted(text: &str) -> String {
    serde_json::Value::String(text.to_string()).to_string()
}

/// Whether `outer` holds everything `inner` does (positions ignored; lists item for item).
fn holds(outer: &Yaml, inner: &Yaml) -> bool {
    match (outer, inner) {
        (Yaml::Null(_), Yaml::Null(_)) => true,
        (Yaml::Scalar(a, _), Yaml::Scalar(b, _)) => a == b,
        (Yaml::Sequence(a, _), Yaml::Sequence(b, _)) => a.len() == b.len() && a.iter().zip(b).all(|(a, b)| holds(a, b)),
        (Yaml::Mapping(..), Yaml::Mapping(pairs, _)) => {
            pairs.iter().all(|(k, v)| k.as_str().and_then(|k| outer.get(k)).is_some_and(|o| holds(o, v)))
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MANIFEST: &str = "apiVersion: v1\nkind: Secret\nmetadata: {name: s}\n---\n# the installation\n\
apiVersion: \"clickhouse.altinity.com/v1\"\nkind: \"ClickHouseInstallation\"\nmetadata:\n  name: \"demo\"\nspec:\n  \
configuration:\n    settings:\n      max_threads: 8 # a comment\n    clusters:\n      - name: \"a\"\n        \
layout:\n          replicasCount: 2\n";

    #[test]
    fn a_cluster_secret_goes_into_its_list_item_and_the_rest_stays_as_written() {
        let fixed = merge_into(
            MANIFEST,
            "spec:\n  configuration:\n    clusters:\n      - name: a\n        secret:\n          auto: \"true\"\n",
        )
        .unwrap();
        assert_eq!(
            fixed,
            MANIFEST
                .replace("      - name: \"a\"\n", "      - name: \"a\"\n        secret:\n          auto: \"true\"\n")
        );
    }

    #[test]
    fn files_are_added_as_literal_blocks_and_a_second_fix_adds_up() {
        let first = "spec:\n  configuration:\n    files:\n      config.d/zz-1.xml: |\n        <clickhouse>\n          <a>1</a>\n        </clickhouse>\n";
        let second = first.replace("zz-1", "zz-2").replace("<a>1", "<a>2");
        let fixed = merge_into(&merge_into(MANIFEST, first).unwrap(), &second).unwrap();
        let documents = read(&fixed).unwrap();
        let files = installation(&documents).unwrap().get("spec").unwrap().get("configuration").unwrap().get("files");
        let file = |name: &str| files.and_then(|f| f.get(name)).and_then(Yaml::as_str).map(str::to_string);
        assert_eq!(file("config.d/zz-1.xml").as_deref(), Some("<clickhouse>\n  <a>1</a>\n</clickhouse>\n"));
        assert_eq!(file("config.d/zz-2.xml").as_deref(), Some("<clickhouse>\n  <a>2</a>\n</clickhouse>\n"));
        assert!(fixed.contains("max_threads: 8 # a comment") && fixed.starts_with("apiVersion: v1\nkind: Secret"));
        // merging the same fix again changes nothing
        assert_eq!(merge_into(&fixed, &second).unwrap(), fixed);
    }

    #[test]
    fn a_fix_that_would_change_or_append_is_left_to_the_user() {
        let change =
            merge_into(MANIFEST, "spec:\n  configuration:\n    settings:\n      max_threads: 4\n").unwrap_err();
        assert!(change.contains("/spec/configuration/settings/max_threads"), "{change}");
        let append = merge_into(MANIFEST, "spec:\n  configuration:\n    clusters:\n      - name: b\n").unwrap_err();
        assert!(append.contains("adds an item"), "{append}");
        let flow = "kind: ClickHouseInstallation\nmetadata: {name: x}\nspec: {configuration: {settings: {a: 1}}}\n";
        let err = merge_into(flow, "spec:\n  configuration:\n    files:\n      a.xml: x\n").unwrap_err();
        assert!(err.contains("cannot be inserted as text"), "{err}");
    }

    #[test]
    fn a_comment_stays_with_the_key_below_it() {
        let text = "kind: ClickHouseInstallation\nspec:\n  configuration:\n    files:\n      # about a.xml\n      # more\n      a.xml: x\n";
        let fixed = merge_into(text, "spec:\n  configuration:\n    files:\n      b.xml: \"y\"\n").unwrap();
        assert_eq!(fixed, text.replace("      # about", "      b.xml: \"y\"\n      # about"));
    }

    #[test]
    fn a_new_list_goes_in_whole_and_once() {
        let nodes = "spec:\n  configuration:\n    zookeeper:\n      nodes:\n        - host: k1\n          port: \"9181\"\n        - host: k2\n";
        let fixed = merge_into(MANIFEST, nodes).unwrap();
        assert!(fixed.contains("    zookeeper:\n      nodes:\n        - host: k1\n          port: \"9181\"\n        - host: k2\n    settings:"), "{fixed}");
        assert_eq!(merge_into(&fixed, nodes).unwrap(), fixed);
    }

    #[test]
    fn scalars_keep_their_quoting() {
        let fixed = merge_into(
            MANIFEST,
            "spec:\n  configuration:\n    zookeeper:\n      root: \"true\"\n      port: 9181\n      note: 'a: b'\n",
        )
        .unwrap();
        assert!(
            fixed.contains(
                "    zookeeper:\n      root: \"true\"\n      port: 9181\n      note: \"a: b\"\n    settings:"
            ),
            "{fixed}"
        );
    }
}
