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
//!
//! A ClickHouseKeeperInstallation in a file without a ClickHouse installation is read as the
//! Keeper config of its first host ([`render_keeper`], in keeper.rs).

use super::error::{ConfigError, Pointer, Result};
use super::source::{FileId, Origin, SourceFile, SourceMap};
use super::tree::{Attribute, Element, Node, Text};
use crate::spanned_yaml::{Yaml, read_documents};

mod clusters;
mod files;
mod keeper;
mod paths;

use clusters::*;
use files::*;
pub use keeper::{KEEPER_OPERATOR_FILES, render_keeper};
use paths::*;
pub(super) use paths::{held_value, stand_in};

/// The kinds whose `spec.configuration` is a ClickHouse config.
pub const KINDS: [&str; 2] = ["ClickHouseInstallation", "ClickHouseInstallationTemplate"];

/// Hosts of an installation's clusters rendered at most (a `shardsCount` of a million is a
/// typo or an attack, not a cluster).
pub(super) const MAX_HOSTS: usize = 10_000;

/// Documents read from one manifest at most (a stream of a few kinds, not a dump).
pub(crate) const MAX_DOCUMENTS: usize = 1000;

/// The server and users trees the operator generates for the installation's first host.
pub struct Rendered {
    pub server: Element,
    pub users: Element,
    /// The variables the operator adds to the pod for Secret values: the Secret's
    /// `stringData` when the manifest holds it, else a stand-in naming the Secret.
    pub env: Vec<(String, String)>,
    /// The installation (or ClickHouseCluster) itself: its fixes are made in its terms.
    pub installation: Option<super::manifest_patch::Installation>,
}

/// The Altinity operator's Keeper kind: audited as a Keeper node's config when the file holds
/// no ClickHouse kind ([`render_keeper`]).
pub const KEEPER_KIND: &str = "ClickHouseKeeperInstallation";

/// The ClickHouseKeeperInstallations beside the audited ClickHouseInstallation, each a warning
/// that it is not audited in this run (one configuration is audited per run).
pub fn keepers_not_audited(source: &SourceFile, file: FileId) -> Vec<ConfigError> {
    let Ok(documents) = read_documents(&source.text(), file, MAX_DOCUMENTS) else { return Vec::new() };
    documents
        .iter()
        .filter(|d| d.get("kind").and_then(Yaml::as_str) == Some(KEEPER_KIND))
        .map(|d| {
            let name = d.get("metadata").and_then(|m| m.get("name")).and_then(Yaml::as_str).unwrap_or("");
            let at = d.get("kind").map_or(d.origin(), Yaml::origin);
            let pointer = Pointer::in_file(source, at.offset, KEEPER_KIND.len());
            ConfigError::KeeperNotAudited {
                name: name.to_string(),
                at: pointer.at,
                src: pointer.src,
                span: pointer.span,
            }
        })
        .collect()
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
    let documents = read_documents(&source.text(), file, MAX_DOCUMENTS).ok()?;
    let kinds: Vec<&str> = documents
        .iter()
        .filter(|d| d.get("apiVersion").is_some())
        .filter_map(|d| d.get("kind").and_then(Yaml::as_str))
        .collect();
    let first = documents.iter().find(|d| d.get("apiVersion").is_some())?;
    Some(ConfigError::syntax(
        Pointer::in_file(source, first.origin().offset, 1),
        format!(
            "a Kubernetes manifest with no ClickHouseInstallation, ClickHouseInstallationTemplate, \
             ClickHouseKeeperInstallation or ClickHouseCluster (it holds {}): chaudit reads the ClickHouse \
             config out of those",
            kinds.join(", ")
        ),
    ))
}

/// The files the operator puts on every host (its config/chi/config.d and users.d), bundled
/// from the operator's repository: they come before the generated ones.
pub const OPERATOR_FILES: [(&str, &str); 7] = [
    (
        "config.d/01-clickhouse-01-listen.xml",
        include_str!("../../../data/altinity-operator/config.d/01-clickhouse-01-listen.xml"),
    ),
    (
        "config.d/01-clickhouse-02-logger.xml",
        include_str!("../../../data/altinity-operator/config.d/01-clickhouse-02-logger.xml"),
    ),
    (
        "config.d/01-clickhouse-03-query_log.xml",
        include_str!("../../../data/altinity-operator/config.d/01-clickhouse-03-query_log.xml"),
    ),
    (
        "config.d/01-clickhouse-04-part_log.xml",
        include_str!("../../../data/altinity-operator/config.d/01-clickhouse-04-part_log.xml"),
    ),
    (
        "config.d/01-clickhouse-05-trace_log.xml",
        include_str!("../../../data/altinity-operator/config.d/01-clickhouse-05-trace_log.xml"),
    ),
    (
        "users.d/01-clickhouse-operator-profile.xml",
        include_str!("../../../data/altinity-operator/users.d/01-clickhouse-operator-profile.xml"),
    ),
    (
        "users.d/02-clickhouse-default-profile.xml",
        include_str!("../../../data/altinity-operator/users.d/02-clickhouse-default-profile.xml"),
    ),
];

/// The operator's files as parsed fragments: (server, users).
pub type Defaults = (Vec<Element>, Vec<Element>);

/// The installation in a manifest file over the operator's own files, or `None` when no
/// document is one.
pub fn render(sources: &mut SourceMap, file: FileId, defaults: Defaults) -> Result<Option<Rendered>> {
    let manifest = sources.file(file);
    let source = SourceFile::new(manifest.path.clone(), manifest.display.clone(), manifest.text().to_string());
    let source = &source;
    let fail =
        |origin: Origin, message: String| ConfigError::syntax(Pointer::in_file(source, origin.offset, 1), message);
    let documents = read_documents(&source.text(), file, MAX_DOCUMENTS).map_err(|(o, m)| fail(o, m))?;
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
        if let Some((at, message)) = too_many_hosts(&clusters) {
            return Err(fail(at, message));
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
    for (place, fragment) in inline_files(sources, source, section("files"), host_files)? {
        match place {
            Place::Users => users_files.push(fragment),
            Place::Server => fragments.push(fragment),
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
