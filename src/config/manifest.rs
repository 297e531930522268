//! Kubernetes manifests of the Altinity operator: a ClickHouseInstallation (or
//! ClickHouseInstallationTemplate) read as the config files the operator generates for its
//! first host (cluster 0, shard 0, replica 0), every element keeping the manifest line that
//! set it. Other kinds beside it (Secrets, Services) are skipped.
//!
//! What is rendered, as the operator's config generator (pkg/model/chi/config) writes it:
//! `spec.configuration.settings` (keys with `/` paths) as config.d/chop-generated-settings.xml,
//! `zookeeper` and `<distributed_ddl>`, `clusters` as `<remote_servers>`, the host's
//! `<macros>`, the settings of its cluster, shard and replica over the global ones, and
//! `users`, `profiles` and `quotas` as users.d/chop-generated-users.xml. A value from a
//! Secret (`valueFrom.secretKeyRef`) becomes `from_env`, as the operator passes it to the pod.

use super::error::{ConfigError, Pointer, Result};
use super::source::{FileId, Origin, SourceFile, SourceMap};
use super::tree::{Attribute, Element, Node, Text};
use crate::spanned_yaml::{Yaml, read_documents};

/// The kinds whose `spec.configuration` is a ClickHouse config.
pub const KINDS: [&str; 2] = ["ClickHouseInstallation", "ClickHouseInstallationTemplate"];

/// Hosts of an installation's clusters rendered at most (a `shardsCount` of a million is a
/// typo or an attack, not a cluster).
pub(super) const MAX_HOSTS: usize = 10_000;

/// Documents read from one manifest at most (a stream of a few kinds, not a dump).
pub(super) const MAX_DOCUMENTS: usize = 1000;

/// The server and users trees the operator generates for the installation's first host.
pub struct Rendered {
    pub server: Element,
    pub users: Element,
    /// The variables the operator adds to the pod for Secret values: the Secret's
    /// `stringData` when the manifest holds it, else a stand-in naming the Secret.
    pub env: Vec<(String, String)>,
    /// The installation itself (a ClickHouseCluster of ClickHouse's operator has no fixes in its terms yet).
    pub installation: Option<super::manifest_patch::Installation>,
}

/// Whether a YAML file could be a Kubernetes manifest (cheap: before parsing it as one).
pub fn may_be_manifest(text: &str) -> bool {
    let kinds = KINDS.iter().chain(&[super::clickhouse_operator::KIND]);
    text.contains("kind:") && (text.contains("apiVersion:") || kinds.into_iter().any(|k| text.contains(k)))
}

/// A manifest none of whose documents is a ClickHouse kind: the error naming the kinds it
/// holds, or `None` when the file is not a Kubernetes manifest after all (a ClickHouse YAML
/// config that mentions the words).
pub fn no_clickhouse_kind(source: &SourceFile, file: FileId) -> Option<ConfigError> {
    let documents = read_documents(&source.text, file, MAX_DOCUMENTS).ok()?;
    let kinds: Vec<&str> = documents
        .iter()
        .filter(|d| d.get("apiVersion").is_some())
        .filter_map(|d| d.get("kind").and_then(Yaml::as_str))
        .collect();
    let first = documents.iter().find(|d| d.get("apiVersion").is_some())?;
    Some(ConfigError::syntax(
        Pointer::in_file(source, first.origin().offset, 1),
        format!(
            "a Kubernetes manifest with no ClickHouseInstallation, ClickHouseInstallationTemplate or \
             ClickHouseCluster (it holds {}): chaudit reads the ClickHouse config out of those",
            kinds.join(", ")
        ),
    ))
}

/// The files the operator puts on every host (its config/chi/config.d and users.d), bundled
/// from the operator's repository: they come before the generated ones.
pub const OPERATOR_FILES: [(&str, &str); 7] = [
    (
        "config.d/01-clickhouse-01-listen.xml",
        include_str!("../../data/altinity-operator/config.d/01-clickhouse-01-listen.xml"),
    ),
    (
        "config.d/01-clickhouse-02-logger.xml",
        include_str!("../../data/altinity-operator/config.d/01-clickhouse-02-logger.xml"),
    ),
    (
        "config.d/01-clickhouse-03-query_log.xml",
        include_str!("../../data/altinity-operator/config.d/01-clickhouse-03-query_log.xml"),
    ),
    (
        "config.d/01-clickhouse-04-part_log.xml",
        include_str!("../../data/altinity-operator/config.d/01-clickhouse-04-part_log.xml"),
    ),
    (
        "config.d/01-clickhouse-05-trace_log.xml",
        include_str!("../../data/altinity-operator/config.d/01-clickhouse-05-trace_log.xml"),
    ),
    (
        "users.d/01-clickhouse-operator-profile.xml",
        include_str!("../../data/altinity-operator/users.d/01-clickhouse-operator-profile.xml"),
    ),
    (
        "users.d/02-clickhouse-default-profile.xml",
        include_str!("../../data/altinity-operator/users.d/02-clickhouse-default-profile.xml"),
    ),
];

/// The operator's files as parsed fragments: (server, users).
pub type Defaults = (Vec<Element>, Vec<Element>);

/// The installation in a manifest file over the operator's own files, or `None` when no
/// document is one.
pub fn render(sources: &mut SourceMap, file: FileId, defaults: Defaults) -> Result<Option<Rendered>> {
    let manifest = sources.file(file);
    let source = SourceFile::new(manifest.path.clone(), manifest.display.clone(), manifest.text.to_string());
    let source = &source;
    let fail =
        |origin: Origin, message: String| ConfigError::syntax(Pointer::in_file(source, origin.offset, 1), message);
    let documents = read_documents(&source.text, file, MAX_DOCUMENTS).map_err(|(o, m)| fail(o, m))?;
    let Some(installation) =
        documents.iter().find(|d| d.get("kind").and_then(Yaml::as_str).is_some_and(|k| KINDS.contains(&k)))
    else {
        return Ok(None);
    };
    let root = Origin { file, offset: 0 };
    let name = installation.get("metadata").and_then(|m| m.get("name")).and_then(Yaml::as_str).unwrap_or("chi");
    let configuration = installation.get("spec").and_then(|s| s.get("configuration"));
    let section = |key: &str| configuration.and_then(|c| c.get(key));
    let convert = |document: Yaml| super::yaml::convert(document, root).map_err(|(o, m)| fail(o, m));
    let secrets = Secrets { documents: &documents, env: std::cell::RefCell::new(Vec::new()) };
    let paths = |section: &str, given: &Yaml| paths(section, given, &secrets);

    let (server_defaults, users_defaults) = defaults;
    let mut server = Element::new("clickhouse", root);
    let mut fragments = server_defaults;
    if let Some(settings) = section("settings") {
        fragments.push(convert(paths("settings", settings))?);
    }
    if let Some(zookeeper) = section("zookeeper") {
        fragments.push(zookeeper_fragment(zookeeper, name, root));
    }
    let clusters: Vec<&Yaml> = match section("clusters") {
        Some(Yaml::Sequence(items, _)) => items.iter().collect(),
        _ => Vec::new(),
    };
    if !clusters.is_empty() {
        let hosts: usize = clusters.iter().flat_map(|c| layout(c)).map(|(_, _, replicas)| replicas).sum();
        if hosts > MAX_HOSTS {
            let at = clusters.first().map_or(root, |c| c.origin());
            return Err(fail(at, format!("the clusters have more than {MAX_HOSTS} hosts, more than chaudit renders")));
        }
        fragments.push(remote_servers(name, &clusters, root, &secrets));
    }
    if let Some(cluster) = clusters.first() {
        fragments.push(macros(name, cluster, root));
        for settings in host_settings(cluster) {
            fragments.push(convert(paths("settings", settings))?);
        }
    }
    let mut users_files = Vec::new();
    let host_files = clusters.first().and_then(|c| c.get("files"));
    for given in [section("files"), host_files] {
        let Some(Yaml::Mapping(pairs, _)) = given else { continue };
        for (key, value) in pairs {
            let (Some(name), Yaml::Scalar(content, at)) = (key.as_str(), value) else { continue };
            let Some((place, file_name)) = placement(name) else { continue };
            let Some(fragment) = file_fragment(sources, source, file_name, content, *at)? else { continue };
            match place {
                Place::Users => users_files.push(fragment),
                Place::Server => fragments.push(fragment),
            }
        }
    }
    super::merge::merge_fragments(&mut server, fragments, sources)?;

    let mut users = Element::new("clickhouse", root);
    let mut fragments = users_defaults;
    for key in ["users", "profiles", "quotas"] {
        if let Some(given) = section(key) {
            let mut fragment = Element::new("clickhouse", root);
            let mut inner = convert(paths(key, given))?;
            inner.name = key.into();
            inner.origin = given.origin();
            if key == "users" {
                let namespace = installation.get("metadata").and_then(|m| m.get("namespace")).and_then(Yaml::as_str);
                let pods = host_regexp(name, namespace.unwrap_or("default"));
                inner.elements_mut().for_each(|user| normalize_user(user, &pods));
            }
            fragment.children.push(Node::Element(inner));
            fragments.push(fragment);
        }
    }
    fragments.extend(users_files);
    super::merge::merge_fragments(&mut users, fragments, sources)?;
    let kind = installation.get("kind").and_then(Yaml::as_str).unwrap_or_default().to_string();
    let installation =
        super::manifest_patch::Installation { kind, name: name.to_string(), document: installation.clone() };
    Ok(Some(Rendered { server, users, env: secrets.env.into_inner(), installation: Some(installation) }))
}

/// The operator's `network.hostRegexpTemplate` (config/config.yaml) for an installation: its
/// pods, by their service names.
fn host_regexp(installation: &str, namespace: &str) -> String {
    format!(r"(chi-{installation}-[^.]+\d+-\d+|clickhouse\-{installation})\.{namespace}\.svc\.cluster\.local$")
}

/// The operator's normalizer (normalizer-configuration-user.go) with its stock config: one
/// password kept (double SHA1 over SHA256 over plain text), a plain-text password stored as
/// its SHA256 (unless the user logs in by certificate; a non-default user without any gets
/// the operator's default password, `default`), and the profile, quota and networks a user
/// does not set.
fn normalize_user(user: &mut Element, pods: &str) {
    let has = |user: &Element, name: &str| user.child(name).is_some();
    if has(user, "password_double_sha1_hex") {
        remove(user, &["password_sha256_hex", "password"]);
    } else if has(user, "password_sha256_hex") {
        remove(user, &["password_double_sha1_hex", "password"]);
    } else if user.child("password").is_none_or(|p| p.attributes.is_empty()) {
        let origin = user.child("password").map_or(user.origin, |p| p.value_origin());
        let given = user.child("password").map(Element::value).unwrap_or_default();
        let plain = if given.is_empty() && user.name != "default" { "default".to_string() } else { given };
        if !plain.is_empty() && user.find("ssl_certificates/common_name").is_none() {
            use sha2::Digest;
            let digest = sha2::Sha256::digest(plain.as_bytes());
            let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
            remove(user, &["password", "password_double_sha1_hex"]);
            user.children.push(Node::Element(leaf("password_sha256_hex", &hex, origin)));
        }
    }
    let origin = user.origin;
    for (name, value) in [("profile", "default"), ("quota", "default")] {
        if !has(user, name) {
            user.children.push(Node::Element(leaf(name, value, origin)));
        }
    }
    if !has(user, "networks") {
        user.children.push(Node::Element(Element::new("networks", origin)));
    }
    if let Some(networks) = user.elements_mut().find(|e| e.name == "networks") {
        let given: Vec<String> = networks.children_named("ip").map(Element::value).collect();
        for ip in ["::1", "127.0.0.1"].into_iter().filter(|ip| !given.iter().any(|g| g == ip)) {
            networks.children.push(Node::Element(leaf("ip", ip, origin)));
        }
        if networks.child("host_regexp").is_none() {
            networks.children.push(Node::Element(leaf("host_regexp", pods, origin)));
        }
    }
}

fn remove(element: &mut Element, names: &[&str]) {
    element.children.retain(|n| !matches!(n, Node::Element(e) if names.contains(&e.name.as_str())));
}

/// Where the operator puts a file of `files`.
enum Place {
    Server,
    Users,
}

/// A `files` key as the operator reads it (files_generator.go): `config.d/` or `{common}/`
/// (or no prefix, at the installation's level) for config.d, `conf.d/` or `{hosts}/` (or no
/// prefix, at a cluster's) for conf.d, `users.d/` or `{users}/` for users.d; another prefix is
/// ignored, a subfolder dropped. Only the names ClickHouse reads from those folders count
/// (.xml, .conf, .yaml, .yml).
fn placement(key: &str) -> Option<(Place, &str)> {
    let (prefix, rest) = key.split_once('/').unwrap_or(("", key));
    let place = match prefix {
        "" | "config.d" | "{common}" | "conf.d" | "{hosts}" => Place::Server,
        "users.d" | "{users}" => Place::Users,
        _ => return None,
    };
    let name = rest.rsplit('/').next().unwrap_or(rest);
    let extension = name.rsplit_once('.').map(|(_, e)| e.to_ascii_lowercase());
    matches!(extension.as_deref(), Some("xml" | "conf" | "yaml" | "yml")).then_some((place, name))
}

/// A file given inline: parsed where it stands in the manifest when it is a block scalar
/// (`|`), so its elements keep the manifest's lines; otherwise as a file of its own, named
/// after the manifest and the key. A root other than `<clickhouse>`/`<yandex>` is skipped,
/// as ClickHouse skips such a fragment.
fn file_fragment(
    sources: &mut SourceMap,
    manifest: &SourceFile,
    name: &str,
    content: &str,
    at: Origin,
) -> Result<Option<Element>> {
    let file = match in_place(&manifest.text, at.offset as usize, content) {
        Some(text) => SourceFile::new(manifest.path.clone(), manifest.display.clone(), text),
        None => SourceFile::new(
            manifest.path.with_file_name(format!("{}#{name}", manifest.display)),
            format!("{}#{name}", manifest.display),
            content.to_string(),
        ),
    };
    let yaml = name.ends_with(".yaml") || name.ends_with(".yml");
    let id = sources.next_id();
    let parsed = if yaml { super::yaml::parse(&file, id) } else { super::xml::parse(&file, id) };
    sources.push(file);
    let fragment = parsed?;
    Ok(matches!(fragment.name.as_str(), "clickhouse" | "yandex").then_some(fragment))
}

/// The manifest's text with everything but a block scalar's lines blanked (newlines kept):
/// parsed, its positions are the manifest's. `None` when the lines are not the scalar's
/// content as written (a quoted or folded scalar).
fn in_place(text: &str, scalar: usize, content: &str) -> Option<String> {
    let mut out: Vec<u8> = text.bytes().map(|b| if b == b'\n' { b'\n' } else { b' ' }).collect();
    // the scalar's position is its `|` indicator, or (as the parser reports some) its first line
    let indicator = text.get(scalar..)?.starts_with(['|', '>']);
    let line_start = text[..scalar].rfind('\n').map_or(0, |i| i + 1);
    let mut pos = if indicator { scalar + text[scalar..].find('\n')? + 1 } else { line_start };
    for line in content.lines() {
        let end = text[pos..].find('\n').map_or(text.len(), |i| pos + i);
        let written = &text[pos..end];
        let indent = written.len().checked_sub(line.len())?;
        if !written.ends_with(line) || !written[..indent].trim().is_empty() {
            return None;
        }
        out[pos + indent..end].copy_from_slice(line.as_bytes());
        pos = (end + 1).min(text.len());
    }
    String::from_utf8(out).ok()
}

/// The settings of the first host's cluster, shard and replica, in the order the operator
/// lays them over the global ones.
fn host_settings(cluster: &Yaml) -> Vec<&Yaml> {
    let layout = cluster.get("layout");
    let shard = layout.and_then(|l| first(l.get("shards")));
    let replica =
        shard.and_then(|s| first(s.get("replicas"))).or_else(|| layout.and_then(|l| first(l.get("replicas"))));
    [cluster.get("settings"), shard.and_then(|s| s.get("settings")), replica.and_then(|r| r.get("settings"))]
        .into_iter()
        .flatten()
        .collect()
}

fn first(items: Option<&Yaml>) -> Option<&Yaml> {
    match items {
        Some(Yaml::Sequence(items, _)) => items.first(),
        _ => None,
    }
}

/// A section whose keys are `/` paths (`admin/networks/ip: [...]`) as the nested mapping
/// ClickHouse's YAML reads; `section` names the environment variables of Secret values.
fn paths(section: &str, given: &Yaml, secrets: &Secrets) -> Yaml {
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
pub(super) fn stand_in(element: &str, description: String) -> String {
    match element {
        "password_sha256_hex" => "0".repeat(64),
        "password_double_sha1_hex" => "0".repeat(40),
        _ => description,
    }
}

/// `data.item` of the manifest's document of this kind and name (a Secret's `stringData`, a
/// ConfigMap's `data`), when the manifest holds it.
pub(super) fn held_value<'a>(documents: &'a [Yaml], kind: &str, name: &str, data: &str, item: &str) -> Option<&'a str> {
    documents
        .iter()
        .filter(|d| d.get("kind").and_then(Yaml::as_str) == Some(kind))
        .find(|d| d.get("metadata").and_then(|m| m.get("name")).and_then(Yaml::as_str) == Some(name))
        .and_then(|d| d.get(data)?.get(item)?.as_str())
}

/// The manifest's Secrets, and the variables Secret values became.
struct Secrets<'a> {
    documents: &'a [Yaml],
    env: std::cell::RefCell<Vec<(String, String)>>,
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
struct Branch(Vec<(String, Origin, Entry)>);

enum Entry {
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

fn element(name: &str, origin: Origin, children: Vec<Element>) -> Element {
    let mut e = Element::new(name, origin);
    e.children = children.into_iter().map(Node::Element).collect();
    e
}

fn leaf(name: &str, value: &str, origin: Origin) -> Element {
    let mut e = Element::new(name, origin);
    e.children.push(Node::Text(Text::new(value, false, origin)));
    e
}

fn fragment(origin: Origin, children: Vec<Element>) -> Element {
    element("clickhouse", origin, children)
}

/// `<zookeeper>` (each node's host and port, the session settings) and the
/// `<distributed_ddl>` path the operator gives every installation.
fn zookeeper_fragment(zookeeper: &Yaml, name: &str, root: Origin) -> Element {
    let mut children = Vec::new();
    if let Some(Yaml::Sequence(nodes, _)) = zookeeper.get("nodes") {
        for node in nodes {
            let mut parts = Vec::new();
            for (key, default) in [("host", None), ("port", Some("2181")), ("secure", None)] {
                match (node.get(key), default) {
                    (Some(Yaml::Scalar(value, at)), _) => parts.push(leaf(key, value, *at)),
                    (_, Some(default)) => parts.push(leaf(key, default, node.origin())),
                    _ => {}
                }
            }
            children.push(element("node", node.origin(), parts));
        }
    }
    for (key, tag) in [
        ("session_timeout_ms", "session_timeout_ms"),
        ("operation_timeout_ms", "operation_timeout_ms"),
        ("root", "root"),
        ("identity", "identity"),
    ] {
        if let Some(Yaml::Scalar(value, at)) = zookeeper.get(key) {
            children.push(leaf(tag, value, *at));
        }
    }
    let ddl = element("distributed_ddl", root, vec![leaf("path", &format!("/clickhouse/{name}/task_queue/ddl"), root)]);
    fragment(root, vec![element("zookeeper", zookeeper.origin(), children), ddl])
}

/// A cluster's shards and replicas: from `layout.shards`/`replicas` when listed, else
/// `shardsCount` x `replicasCount` (1 each by default).
fn layout(cluster: &Yaml) -> Vec<(Origin, Option<&Yaml>, usize)> {
    let layout = cluster.get("layout");
    let count = |node: Option<&Yaml>, key: &str| {
        node.and_then(|n| n.get(key)).and_then(Yaml::as_str).and_then(|c| c.parse::<usize>().ok())
    };
    let replicas_of = |shard: Option<&Yaml>| {
        count(shard, "replicasCount")
            .or_else(|| match shard.and_then(|s| s.get("replicas")) {
                Some(Yaml::Sequence(items, _)) => Some(items.len()),
                _ => None,
            })
            .or_else(|| count(layout, "replicasCount"))
            .unwrap_or(1)
            .clamp(1, MAX_HOSTS + 1)
    };
    match layout.and_then(|l| l.get("shards")) {
        Some(Yaml::Sequence(shards, _)) if !shards.is_empty() => {
            shards.iter().map(|s| (s.origin(), Some(s), replicas_of(Some(s)))).collect()
        }
        _ => {
            let shards = count(layout, "shardsCount").unwrap_or(1).clamp(1, MAX_HOSTS + 1);
            (0..shards).map(|_| (cluster.origin(), None, replicas_of(None))).collect()
        }
    }
}

/// The host name the operator gives a replica's service (chi-NAME-CLUSTER-SHARD-REPLICA).
fn host_name(installation: &str, cluster: &str, shard: usize, replica: usize) -> String {
    format!("chi-{installation}-{cluster}-{shard}-{replica}")
}

fn cluster_name(cluster: &Yaml) -> (&str, Origin) {
    match cluster.get("name") {
        Some(Yaml::Scalar(name, at)) => (name, *at),
        _ => ("cluster", cluster.origin()),
    }
}

/// `<remote_servers>`: each cluster's shards and replicas on the native port.
fn remote_servers(installation: &str, clusters: &[&Yaml], root: Origin, secrets: &Secrets) -> Element {
    let mut list = Vec::new();
    for cluster in clusters {
        let (name, at) = cluster_name(cluster);
        let mut children = Vec::new();
        if let Some(secret) = cluster.get("secret") {
            children.push(secrets.cluster_secret(secret));
        }
        for (s, (shard_at, shard, replicas)) in layout(cluster).into_iter().enumerate() {
            let internal = shard.and_then(|s| s.get("internalReplication")).and_then(Yaml::as_str).map_or(
                if replicas > 1 { "true" } else { "false" },
                |v| {
                    if v.eq_ignore_ascii_case("true") || v == "1" { "true" } else { "false" }
                },
            );
            let mut parts = vec![leaf("internal_replication", internal, shard_at)];
            for r in 0..replicas {
                let host = host_name(installation, name, s, r);
                parts.push(element(
                    "replica",
                    shard_at,
                    vec![leaf("host", &host, shard_at), leaf("port", "9000", shard_at)],
                ));
            }
            children.push(element("shard", shard_at, parts));
        }
        list.push(element(name, at, children));
    }
    fragment(root, vec![element("remote_servers", root, list)])
}

/// The variable the operator passes a cluster's generated or referenced secret in.
const CLUSTER_SECRET_VARIABLE: &str = "CLICKHOUSE_INTERNODE_CLUSTER_SECRET";

impl Secrets<'_> {
    /// A cluster's `secret` as the operator renders it: its `value` in the config, else
    /// `from_env` of the variable the operator fills from a Secret, the one `valueFrom`
    /// names or the one it generates for `auto` (normalizer's appendClusterSecretEnvVar).
    fn cluster_secret(&self, secret: &Yaml) -> Element {
        let mut e = Element::new("secret", secret.origin());
        if let Some(Yaml::Scalar(value, at)) = secret.get("value") {
            e.children.push(Node::Text(Text::new(value.as_str(), false, *at)));
            return e;
        }
        let reference = secret.get("valueFrom").and_then(|v| v.get("secretKeyRef"));
        let auto =
            secret.get("auto").and_then(Yaml::as_str).is_some_and(|v| v.eq_ignore_ascii_case("true") || v == "1");
        let value = match reference {
            Some(reference) => {
                let name = reference.get("name").and_then(Yaml::as_str).unwrap_or_default();
                let key = reference.get("key").and_then(Yaml::as_str).unwrap_or_default();
                Some(
                    held_value(self.documents, "Secret", name, "stringData", key)
                        .map_or_else(|| format!("(Secret {name}, key {key})"), str::to_string),
                )
            }
            None => auto.then(|| "(a Secret the operator generates)".to_string()),
        };
        if let Some(value) = value {
            self.env.borrow_mut().push((CLUSTER_SECRET_VARIABLE.into(), value));
        }
        e.attributes.push(Attribute { name: "from_env".into(), value: CLUSTER_SECRET_VARIABLE.into() });
        e
    }
}

/// The first host's `<macros>`.
fn macros(installation: &str, cluster: &Yaml, root: Origin) -> Element {
    let (name, at) = cluster_name(cluster);
    let children = vec![
        leaf("installation", installation, root),
        leaf("cluster", name, at),
        leaf("shard", "0", at),
        leaf("replica", &host_name(installation, name, 0, 0), at),
    ];
    fragment(root, vec![element("macros", root, children)])
}
