//! `chaudit fix` on a Kubernetes manifest: a fix in the manifest's terms (YAML to merge into
//! the ClickHouseInstallation, or a ClickHouseCluster's `spec.settings`) written into the
//! manifest file itself. The file is edited, not
//! rewritten: each key the fix adds is inserted as text into the mapping that receives it
//! (after a list item's first line, else above the key that heads the mapping and its
//! comments), so the file's comments, its other documents, its key order and its quoting stay
//! as they were; each insertion must read back as the manifest with exactly that key added. A
//! fix that would change a value the manifest sets (outside a ClickHouseCluster's extraConfig,
//! see manifest_change.rs), add an item to one of its lists, or reach a mapping written in
//! flow style (`{a: 1}`) is not written: the user merges it.

use std::path::{Path, PathBuf};

use super::manifest_change::Change;
use super::manifest_yaml::{entry, scalar_text};
use super::{FixError, FixFile, FixRequest};
use crate::config::LoadedConfig;
use crate::config::clickhouse_operator;
use crate::config::extra_config::{SERVER_KEY, USERS_KEY};
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
    target: Target,
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
            target: Target::Installation,
            path,
            before: String::new(),
            text: String::new(),
            fixes: 0,
        };
        // the manifest's text as the audit read it
        let manifest = loaded.server.files.first().map(|id| loaded.sources.file(*id).text().to_string());
        if let (Some(installation), Some(text)) = (&loaded.manifest, manifest) {
            edit.before = text;
            edit.text = edit.before.clone();
            edit.installation = Some(format!("{} `{}`", installation.kind, installation.name));
            if installation.is_clickhouse_cluster() {
                edit.target = Target::ClickHouseCluster;
            }
        }
        edit
    }

    /// A finding whose fix is config fragments on a manifest and was made neither a change of
    /// the manifest nor a step of the user's (the audit makes it one or the other): what the
    /// user does instead, since no fragment is written beside a manifest.
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
                "{why}, so chaudit does not write it. Merge into the manifest:\n{}or patch the {}:\n{}",
                fix.merge, fix.patches, fix.command
            )
        };
        if self.installation.is_none() {
            return Err(by_hand("the manifest holds no installation chaudit can edit".into()));
        }
        if crate::mask::holds_secret(&fix.merge) {
            return Err(by_hand("the fix would copy a secret value".into()));
        }
        self.text = merge_into(&self.text, &fix.merge, self.target).map_err(by_hand)?;
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
pub(super) enum Node {
    Scalar(String, bool),
    Sequence(Vec<Node>),
    Mapping(Vec<(String, Node)>),
}

/// The document a fix goes into, and what the fix may do to what it holds.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Target {
    /// A ClickHouseInstallation (or its template): keys are added, nothing written changes.
    Installation,
    /// A ClickHouseCluster: a fix is ClickHouse's config under its `extraConfig`, where it
    /// replaces a value or deletes a key, as a later config.d file would override them.
    ClickHouseCluster,
}

impl Target {
    /// Whether the fix may change or delete what the manifest holds at `path`: a key inside a
    /// ClickHouseCluster's extraConfig or extraUsersConfig (ClickHouse's config, which a fix
    /// overrides as a later config.d file would), never the operator's own keys.
    fn may_change(self, path: &[String]) -> bool {
        self == Target::ClickHouseCluster
            && matches!(path, [spec, settings, map, _, ..]
                if spec == "spec" && settings == "settings" && (map == SERVER_KEY || map == USERS_KEY))
    }

    fn kinds(self) -> &'static [&'static str] {
        match self {
            Target::Installation => &KINDS,
            Target::ClickHouseCluster => &[clickhouse_operator::KIND],
        }
    }
}

/// An edit of the manifest's text: a key added, or (a ClickHouseCluster) a value changed.
enum Edit {
    Insert(Insertion),
    Change(Change),
}

/// The manifest's text with `merge` merged into its installation (maps merge by key, list
/// items by their `name`), or why it cannot be written into the file.
pub fn merge_into(text: &str, merge: &str, target: Target) -> Result<String, String> {
    let wanted = parse(merge)?;
    let mut edited = text.to_string();
    // each round makes one edit (a missing key with everything under it); a fix makes a few
    for _ in 0..64 {
        let documents = read(&edited)?;
        let (index, document) = installation(&documents, target)?;
        let mut path = Vec::new();
        let insertion = match missing(&wanted, document, "", &mut path, target)? {
            None => return Ok(edited),
            Some(Edit::Insert(insertion)) => insertion,
            Some(Edit::Change(change)) => {
                let changed = change
                    .apply(&edited)
                    .filter(|text| read(text).is_ok_and(|read_back| change.made(&documents, &read_back, index)));
                edited = changed.ok_or_else(|| {
                    format!("`/{}` cannot be changed as text where it is written", change.path().join("/"))
                })?;
                continue;
            }
        };
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

fn installation(documents: &[Yaml], target: Target) -> Result<(usize, &Yaml), String> {
    let kinds = target.kinds();
    let of_kind = |wanted: &dyn Fn(&str) -> bool| {
        documents.iter().enumerate().find(|(_, d)| d.get("kind").and_then(Yaml::as_str).is_some_and(wanted))
    };
    // a Keeper installation is the one audited only in a file without a ClickHouse one
    of_kind(&|k| kinds.contains(&k))
        .or_else(|| {
            (target == Target::Installation).then(|| of_kind(&|k| k == crate::config::manifest::KEEPER_KIND)).flatten()
        })
        .ok_or_else(|| format!("the manifest holds no {}", kinds[0]))
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

/// The first edit `wanted` needs (a key the manifest lacks; on a ClickHouseCluster also a
/// value it holds otherwise or a key to delete), or why the fix cannot be merged as text.
/// `path` is where `present` is, as keys.
fn missing(
    wanted: &Node,
    present: &Yaml,
    pointer: &str,
    path: &mut Vec<String>,
    target: Target,
) -> Result<Option<Edit>, String> {
    match (wanted, present) {
        (Node::Mapping(pairs), Yaml::Mapping(existing, _)) => {
            for (key, value) in pairs {
                let at = format!("{pointer}/{key}");
                let held = existing.iter().find(|(k, _)| k.as_str() == Some(key));
                path.push(key.clone());
                let changes = target.may_change(path);
                match (held, changes && is_null(value)) {
                    // a merge patch's null deletes the key, when there is one
                    (None, true) => {}
                    (Some((Yaml::Scalar(_, origin), _)), true) => {
                        let offset = origin.offset as usize;
                        return Ok(Some(Edit::Change(Change::Delete { path: path.clone(), offset })));
                    }
                    (Some((_, Yaml::Null(_))), false) => return Err(format!("`{at}` is empty in the manifest")),
                    (Some((_, Yaml::Scalar(held, origin))), false) if changes => {
                        if let Node::Scalar(text, plain) = value
                            && text != held
                        {
                            let (head, block) = scalar_text(&Node::Scalar(text.clone(), *plain), 0);
                            if !block.is_empty() {
                                return Err(format!("`{at}` would take a value of several lines"));
                            }
                            let (offset, text) = (origin.offset as usize, head.trim_start().to_string());
                            return Ok(Some(Edit::Change(Change::Replace { path: path.clone(), offset, text })));
                        }
                        if let Some(edit) = missing(value, &Yaml::Scalar(held.clone(), *origin), &at, path, target)? {
                            return Ok(Some(edit));
                        }
                    }
                    (Some(_), true) => return Err(format!("`{at}` is written as a key chaudit cannot delete")),
                    (Some((_, inner)), false) => {
                        if let Some(edit) = missing(value, inner, &at, path, target)? {
                            return Ok(Some(edit));
                        }
                    }
                    (None, false) => {
                        let offset = match existing.first() {
                            Some((Yaml::Scalar(_, origin), _)) => origin.offset as usize,
                            _ => return Err(format!("`{}` is written in flow style", or_root(pointer))),
                        };
                        return Ok(Some(Edit::Insert(Insertion { offset, key: key.clone(), value: value.clone() })));
                    }
                }
                path.pop();
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
                path.push(index.to_string());
                if let Some(edit) = missing(item, &existing[index], &format!("{pointer}/{index}"), path, target)? {
                    return Ok(Some(edit));
                }
                path.pop();
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

/// A plain `null` (or `~`, or nothing): a merge patch's deletion.
fn is_null(node: &Node) -> bool {
    matches!(node, Node::Scalar(text, true) if matches!(text.as_str(), "" | "~" | "null" | "Null" | "NULL"))
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

    fn merge(text: &str, fix: &str) -> Result<String, String> {
        merge_into(text, fix, Target::Installation)
    }

    const CLUSTER: &str = "# the cluster\napiVersion: clickhouse.com/v1alpha1\nkind: ClickHouseCluster\nmetadata:\n  name: shop\nspec:\n  settings:\n    extraConfig:\n      # why eight\n      max_threads: 8 # a comment\n      logger:\n        level: test # for now\n";

    #[test]
    fn a_cluster_fix_replaces_a_value_deletes_a_key_and_adds_one() {
        let fix = "spec:\n  settings:\n    extraConfig:\n      max_threads: null\n      logger:\n        level: \"information\"\n      query_log:\n        ttl: \"x\"\n";
        let fixed = merge_into(CLUSTER, fix, Target::ClickHouseCluster).unwrap();
        assert_eq!(
            fixed,
            "# the cluster\napiVersion: clickhouse.com/v1alpha1\nkind: ClickHouseCluster\nmetadata:\n  name: shop\nspec:\n  settings:\n    extraConfig:\n      query_log:\n        ttl: \"x\"\n      logger:\n        level: \"information\" # for now\n"
        );
        assert_eq!(merge_into(&fixed, fix, Target::ClickHouseCluster).unwrap(), fixed);
        // an installation's values are never changed, nor a cluster's own keys
        assert!(merge_into(CLUSTER, fix, Target::Installation).is_err());
        let own = merge_into(CLUSTER, "metadata:\n  name: other\n", Target::ClickHouseCluster).unwrap_err();
        assert!(own.contains("/metadata/name"), "{own}");
    }

    const MANIFEST: &str = "apiVersion: v1\nkind: Secret\nmetadata: {name: s}\n---\n# the installation\n\
apiVersion: \"clickhouse.altinity.com/v1\"\nkind: \"ClickHouseInstallation\"\nmetadata:\n  name: \"demo\"\nspec:\n  \
configuration:\n    settings:\n      max_threads: 8 # a comment\n    clusters:\n      - name: \"a\"\n        \
layout:\n          replicasCount: 2\n";

    #[test]
    fn a_cluster_secret_goes_into_its_list_item_and_the_rest_stays_as_written() {
        let fixed = merge(
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
        let fixed = merge(&merge(MANIFEST, first).unwrap(), &second).unwrap();
        let documents = read(&fixed).unwrap();
        let files = installation(&documents, Target::Installation)
            .unwrap()
            .1
            .get("spec")
            .unwrap()
            .get("configuration")
            .unwrap()
            .get("files");
        let file = |name: &str| files.and_then(|f| f.get(name)).and_then(Yaml::as_str).map(str::to_string);
        assert_eq!(file("config.d/zz-1.xml").as_deref(), Some("<clickhouse>\n  <a>1</a>\n</clickhouse>\n"));
        assert_eq!(file("config.d/zz-2.xml").as_deref(), Some("<clickhouse>\n  <a>2</a>\n</clickhouse>\n"));
        assert!(fixed.contains("max_threads: 8 # a comment") && fixed.starts_with("apiVersion: v1\nkind: Secret"));
        // merging the same fix again changes nothing
        assert_eq!(merge(&fixed, &second).unwrap(), fixed);
    }

    #[test]
    fn a_fix_that_would_change_or_append_is_left_to_the_user() {
        let change = merge(MANIFEST, "spec:\n  configuration:\n    settings:\n      max_threads: 4\n").unwrap_err();
        assert!(change.contains("/spec/configuration/settings/max_threads"), "{change}");
        let append = merge(MANIFEST, "spec:\n  configuration:\n    clusters:\n      - name: b\n").unwrap_err();
        assert!(append.contains("adds an item"), "{append}");
        let flow = "kind: ClickHouseInstallation\nmetadata: {name: x}\nspec: {configuration: {settings: {a: 1}}}\n";
        let err = merge(flow, "spec:\n  configuration:\n    files:\n      a.xml: x\n").unwrap_err();
        assert!(err.contains("cannot be inserted as text"), "{err}");
    }

    #[test]
    fn a_comment_stays_with_the_key_below_it() {
        let text = "kind: ClickHouseInstallation\nspec:\n  configuration:\n    files:\n      # about a.xml\n      # more\n      a.xml: x\n";
        let fixed = merge(text, "spec:\n  configuration:\n    files:\n      b.xml: \"y\"\n").unwrap();
        assert_eq!(fixed, text.replace("      # about", "      b.xml: \"y\"\n      # about"));
    }

    #[test]
    fn a_new_list_goes_in_whole_and_once() {
        let nodes = "spec:\n  configuration:\n    zookeeper:\n      nodes:\n        - host: k1\n          port: \"9181\"\n        - host: k2\n";
        let fixed = merge(MANIFEST, nodes).unwrap();
        assert!(fixed.contains("    zookeeper:\n      nodes:\n        - host: k1\n          port: \"9181\"\n        - host: k2\n    settings:"), "{fixed}");
        assert_eq!(merge(&fixed, nodes).unwrap(), fixed);
    }

    #[test]
    fn scalars_keep_their_quoting() {
        let fixed = merge(
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
