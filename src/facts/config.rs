//! Facts from the merged configuration files. Every item carries `at`, the
//! `file:line:column` of the element it was read from, so findings point into the user's files.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Map;

use super::catalog;
use super::config_keeper as keeper;
pub use super::config_root::{RootElement, is_known_section, root_element_suggestion};
use super::config_root::{USERS_SECTIONS, is_graphite_rollup, is_server_section, referenced_root_names, root_names};
use super::config_sections as sections;
use super::config_storage as storage;
use super::config_users;
use super::document::{Document, Fact};
use super::keys::config;
use super::typed::{BuiltAs, FactKey, Location, Settings};
use crate::config::model;
use crate::config::{ConfigError, Element, LoadedConfig, Origin};

/// The facts read from the users config.
const USERS_FACTS: &[&str] = &[
    config::USERS.name(),
    config::PROFILES.name(),
    config::PROFILE_SETTINGS.name(),
    config::PROFILE_SETTINGS_BY_NAME.name(),
    config::USERS_FILE_SECTIONS.name(),
];

/// A macro that a replicated table's default path or name uses and `<macros>` does not define
/// (`config.undefined_replica_macros`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct UndefinedMacro {
    /// default_replica_path or default_replica_name
    pub setting: String,
    /// the setting's text
    pub value: String,
    /// the macro's name (without braces)
    pub name: String,
    pub at: Location,
}

crate::fact_object!(UndefinedMacro { setting, value, name, at });

/// The macros ClickHouse expands itself in a replicated table's path and name (Macros.cpp):
/// the table's database, name and UUID.
const SERVER_MACROS: &[&str] = &["database", "table", "uuid"];

/// The `{name}` macros of `text`, in order, each once.
fn macros_in(text: &str) -> Vec<&str> {
    let mut out: Vec<&str> = Vec::new();
    let mut rest = text;
    while let Some(open) = rest.find('{') {
        let Some(close) = rest[open..].find('}') else { break };
        let name = &rest[open + 1..open + close];
        if !name.is_empty() && !out.contains(&name) {
            out.push(name);
        }
        rest = &rest[open + close + 1..];
    }
    out
}

/// A problem ClickHouse starts with (`config.problems`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct LoaderProblem {
    /// substitution_left_empty (an unset from_env), incl_left_empty (an incl not found, the element without a value), substitution_not_found, or root_attribute_ignored (replace/remove on a fragment's root)
    pub kind: String,
    /// what was substituted (the variable, the include), or the file
    pub what: String,
    /// the variable or include name alone (CH_SHARD), empty for a file
    pub name: String,
    /// the element
    pub tag: String,
    /// the element is a setting that takes a number or a switch: left empty, it stops the server (or the users config)
    pub needs_value: bool,
    pub at: Location,
}

crate::fact_object!(LoaderProblem { kind, what, name, tag, needs_value, at });

/// Why facts are absent or unavailable, by fact name.
type Reasons = BTreeMap<String, String>;

/// Whether `fact` says why others are left out (`unavailable`, `absent`): always built.
fn reasons(fact: &str) -> bool {
    fact == config::UNAVAILABLE.name() || fact == config::ABSENT.name()
}

/// The users config's profiles and users, shared by the facts about them.
type Users = (Arc<Vec<config_users::ConfigProfile>>, Arc<Vec<config_users::ConfigUser>>);

type Build<'f> = Box<dyn Fn() -> Box<dyn Fact> + Sync + 'f>;

/// The fact of `key` and how it is built: as its key's type, or shared with other facts.
fn fact<'f, T, F: BuiltAs<T>>(key: FactKey<T>, build: impl Fn() -> F + Sync + 'f) -> (&'static str, Build<'f>) {
    (key.name(), Box::new(move || Box::new(build())))
}

pub struct ConfigFacts<'a> {
    loaded: &'a LoadedConfig,
    /// The facts to build (the rules' reads); `None`: all of them.
    wanted: Option<&'a BTreeSet<String>>,
    /// The disks and policies as ClickHouse reads them, read once for every fact about them.
    disks: std::sync::OnceLock<Vec<model::Disk<'a>>>,
    policies: std::sync::OnceLock<Vec<model::Policy<'a>>>,
    /// The users tree's profiles, read once for its facts and its start-up checks.
    profiles: std::sync::OnceLock<Vec<model::Profile<'a>>>,
    users: std::sync::OnceLock<Users>,
    /// The settings of the audited version (the newest bundled when unknown).
    catalog: &'static catalog::Catalog,
}

impl<'a> ConfigFacts<'a> {
    pub fn new(loaded: &'a LoadedConfig, version: Option<crate::version::Version>) -> Self {
        Self::with(loaded, None, version)
    }

    fn with(
        loaded: &'a LoadedConfig,
        wanted: Option<&'a BTreeSet<String>>,
        version: Option<crate::version::Version>,
    ) -> Self {
        ConfigFacts {
            loaded,
            wanted,
            disks: Default::default(),
            policies: Default::default(),
            profiles: Default::default(),
            users: Default::default(),
            catalog: catalog::of(version),
        }
    }

    /// The users facts when there is no users config: rules about users are not
    /// applicable (a CI lint of server XML alone), not passed.
    fn absent(&self) -> Reasons {
        if self.loaded.users_root().is_some() || self.loaded.users_error.is_some() {
            return Reasons::new();
        }
        let why =
            "user_directories names no users_xml: users live in the server's access storage, not in the config files";
        USERS_FACTS.iter().map(|f| (f.to_string(), why.to_string())).collect()
    }

    /// The users facts when the users config cannot be processed (ClickHouse refuses it):
    /// rules that read them are inconclusive, not passed.
    fn unavailable(&self) -> Reasons {
        let Some(error) = &self.loaded.users_error else { return Reasons::new() };
        let why = format!("the users config cannot be processed: {error}");
        USERS_FACTS.iter().map(|f| (f.to_string(), why.clone())).collect()
    }

    /// Only the facts named: a tree with 16,000 disks costs nothing for them when no rule
    /// reads `config.disks`.
    pub fn only(
        loaded: &'a LoadedConfig,
        wanted: &'a BTreeSet<String>,
        version: Option<crate::version::Version>,
    ) -> Self {
        Self::with(loaded, Some(wanted), version)
    }

    fn model_disks(&self) -> &[model::Disk<'a>] {
        self.disks.get_or_init(|| model::disks(&self.loaded.server.root))
    }

    fn model_policies(&self) -> &[model::Policy<'a>] {
        self.policies.get_or_init(|| model::storage_policies(&self.loaded.server.root))
    }

    fn model_profiles(&self) -> &[model::Profile<'a>] {
        self.profiles.get_or_init(|| self.loaded.users_root().map(model::profiles).unwrap_or_default())
    }

    fn wants(&self, fact: &str) -> bool {
        self.wanted.is_none_or(|w| w.contains(fact))
    }

    /// `file:line:column`: one string per item (a map per item would double the facts).
    fn location(&self, origin: Origin) -> Location {
        Location(self.loaded.sources.file(origin.file).at(origin.offset))
    }

    /// The `config` document: the facts the rules read, built on every core (with 2,000
    /// profiles and users, or 100,000 root elements, one fact is a fifth of the audit).
    pub fn document(&self) -> Document {
        let builders: Vec<(&str, Build)> =
            self.builders().into_iter().filter(|(name, _)| reasons(name) || self.wants(name)).collect();
        let mut document = Document::default();
        let built = crate::parallel::pipeline(
            &builders,
            |_, (name, build)| (*name, build()),
            |(name, fact)| {
                document.insert(name, fact);
                Ok::<(), std::convert::Infallible>(())
            },
        );
        let Ok(()) = built;
        if let Some(error) = &self.loaded.server_error {
            // the server tree is empty: its facts say nothing, their rules cannot judge
            let why = format!("the server config cannot be processed: {error}");
            let server_facts: Vec<String> =
                document.names().filter(|k| !USERS_FACTS.contains(k) && !reasons(k)).map(str::to_string).collect();
            let mut unavailable = self.unavailable();
            unavailable.extend(server_facts.into_iter().map(|k| (k, why.clone())));
            config::UNAVAILABLE.put(&mut document, unavailable);
        }
        document
    }

    /// `<default_profile>`: the profile beneath every user's (`default` without one).
    fn default_profile(&self) -> String {
        self.loaded.server.root.child("default_profile").map_or("default".to_string(), Element::value)
    }

    /// The users config's profiles and users, read once for every fact about them.
    fn model_users(&self) -> &Users {
        self.users.get_or_init(|| {
            let (profiles, users) = config_users::profiles_and_users(
                self.loaded.users_root(),
                self.model_profiles(),
                &self.default_profile(),
                &|o| self.location(o),
            );
            (Arc::new(profiles), Arc::new(users))
        })
    }

    /// Each fact and how it is built, the costly first (they are dealt out to the cores in
    /// this order). Each is moved into the document as built, typed: the rules read its
    /// fields in place.
    fn builders(&self) -> Vec<(&'static str, Build<'_>)> {
        let root = &self.loaded.server.root;
        let merge_tree = root.child("merge_tree");
        let at = move |origin: Origin| self.location(origin);
        vec![
            fact(config::USERS, || Arc::clone(&self.model_users().1)),
            fact(config::ROOT_ELEMENTS, || self.root_elements()),
            fact(config::SERVER, || Settings(leaf_values(root))),
            fact(config::SERVER_AT, || self.leaf_locations(root)),
            fact(config::DISKS, move || storage::disks(self.model_disks(), &at)),
            fact(config::PROFILES, || Arc::clone(&self.model_users().0)),
            fact(config::PROFILE_SETTINGS, || config_users::profile_settings(&self.model_users().0)),
            fact(config::PROFILE_SETTINGS_BY_NAME, || config_users::profile_settings_by_name(&self.model_users().0)),
            fact(config::MISSPELLED_DISKS, move || storage::misspelled_disks(self.model_disks(), &at)),
            fact(config::CACHE_DISKS, move || storage::cache_disks(self.model_disks(), &at)),
            fact(config::DISK_POLICIES, || storage::disk_policies(self.model_disks(), self.model_policies())),
            fact(config::DECLARED_DISKS, || storage::declared_disks(self.model_disks())),
            fact(config::POLICY_NAMES, || self.model_policies().iter().map(|p| p.name.clone()).collect::<Vec<_>>()),
            fact(config::POLICIES, move || storage::policies(self.model_policies(), &at)),
            fact(config::CLUSTERS, move || storage::clusters(&model::clusters(root), &at)),
            fact(config::AT, || self.location(root.origin)),
            fact(config::MERGE_TREE, move || Settings(merge_tree.map(leaf_values).unwrap_or_default())),
            fact(config::MERGE_TREE_AT, move || merge_tree.map(|m| self.leaf_locations(m)).unwrap_or_default()),
            fact(config::MACROS, || model::macros(root).into_iter().collect::<BTreeMap<String, String>>()),
            fact(config::UNDEFINED_REPLICA_MACROS, || self.undefined_replica_macros()),
            fact(config::LISTEN_HOSTS, || root.children_named("listen_host").map(Element::value).collect::<Vec<_>>()),
            fact(config::EXPOSED, || root.children_named("listen_host").any(every_interface)),
            fact(config::DEFAULT_PROFILE, || self.default_profile()),
            fact(config::CUSTOM_SETTINGS_PREFIXES, || {
                let prefixes = root.child("custom_settings_prefixes").map_or("custom_".to_string(), Element::value);
                let prefixes = prefixes.split(',').map(str::trim).filter(|p| !p.is_empty());
                prefixes.map(str::to_string).collect::<Vec<_>>()
            }),
            fact(config::LOGS, move || sections::logs(root, &at)),
            fact(config::LOG_UNKNOWN_ELEMENTS, move || sections::log_unknown_elements(root, &at)),
            fact(config::INTERSERVER_EXPOSED, || interserver_exposed(root)),
            fact(config::INTERSERVER_CREDENTIALS, move || sections::interserver_credentials(root, &at)),
            fact(config::ENTRYPOINT_KEEPS_DEFAULT_LOCAL, || {
                crate::config::entrypoint::written_setup(self.loaded)
                    == Some(crate::config::entrypoint::WrittenSetup::LocalDefault)
            }),
            fact(config::OPENSSL_CLIENT, move || sections::openssl_client(root, &at)),
            fact(config::PLAINTEXT_CREDENTIALS, move || sections::plaintext_credentials(root, &at)),
            fact(config::PROBLEMS, || self.problems()),
            fact(config::START_PROBLEMS, || {
                super::startup::facts(self.loaded, self.model_disks(), self.model_profiles(), |o| self.location(o))
            }),
            // <backups><allowed_disk>: the disks BACKUP ... TO Disk(...) may write to
            fact(config::BACKUPS_ALLOWED_DISKS, move || sections::backups_allowed_disks(root, &at)),
            fact(config::UNREAD_USERS_FILE, || self.loaded.unread_users_file.as_ref().map(|p| p.display().to_string())),
            fact(config::ABSENT, || self.absent()),
            fact(config::UNAVAILABLE, || self.unavailable()),
            fact(config::USERS_FILE_SECTIONS, || self.users_file_sections()),
            // users come from config.xml itself (no separate users_config file)
            fact(config::USERS_IN_MAIN, || self.loaded.users_in_main),
            fact(config::OVER_IMAGE_FILES, || self.loaded.over_image_files),
            fact(config::LOGGER, move || sections::logger(root, &at)),
            fact(config::ZOOKEEPER, move || keeper::zookeeper(root, &at)),
            fact(config::KEEPER_SERVER, move || keeper::keeper_server(root, &at)),
            fact(config::DISTRIBUTED_DDL, move || keeper::distributed_ddl(root, &at)),
        ]
    }

    /// The macros default_replica_path and default_replica_name use that `<macros>` lacks.
    fn undefined_replica_macros(&self) -> Vec<UndefinedMacro> {
        let root = &self.loaded.server.root;
        let defined: Vec<(String, String)> = model::macros(root);
        let mut out = Vec::new();
        for setting in ["default_replica_path", "default_replica_name"] {
            let Some(element) = root.child(setting) else { continue };
            let value = element.value();
            for name in macros_in(&value) {
                if SERVER_MACROS.contains(&name) || defined.iter().any(|(d, _)| d == name) {
                    continue;
                }
                out.push(UndefinedMacro {
                    setting: setting.to_string(),
                    value: value.clone(),
                    name: name.to_string(),
                    at: self.location(element.origin),
                });
            }
        }
        out
    }

    /// Where each of [`leaf_values`]'s leaves is written.
    fn leaf_locations(&self, e: &Element) -> Settings<Location> {
        Settings(first_leaves(e, |leaf| self.location(leaf.origin)))
    }

    fn root_elements(&self) -> Vec<RootElement> {
        let catalog = self.catalog;
        let referenced = referenced_root_names(&self.loaded.server.root);
        // looked up once: a root of 150,000 elements is not scanned again for each
        let include_from = self.loaded.server.root.child("include_from").map(|e| e.value().trim().to_string());
        self.loaded
            .server
            .root
            .elements()
            .map(|e| {
                let name = e.name.as_str();
                let known = root_names().contains(name)
                    || super::config_keys::is_read(name)
                    || name.ends_with("_log")
                    || catalog.is_server(name)
                    || catalog.is_session(name);
                RootElement {
                    name: name.to_string(),
                    leaf: !e.has_element_children(),
                    value: e.value().to_string(),
                    at: self.location(e.origin),
                    server_section: is_server_section(name),
                    known,
                    in_conf_d: self.in_conf_d(e.origin),
                    referenced: referenced.contains(name)
                        || is_graphite_rollup(e)
                        || include_from.as_deref().is_some_and(|include| self.in_include_from(e.origin, include)),
                }
            })
            .collect()
    }

    /// Whether `origin` is in a conf.d/ fragment: ClickHouse merges those into every config
    /// file it loads, the server's and the users'.
    fn in_conf_d(&self, origin: Origin) -> bool {
        let path = &self.loaded.sources.file(origin.file).path;
        path.parent().and_then(|p| p.file_name()).is_some_and(|d| d == "conf.d")
    }

    /// Whether `origin` is in the file `<include_from>` names (merged into the config because
    /// it lies in config.d/): its sections are `incl` sources, which ClickHouse's check for
    /// unknown top-level keys lets pass.
    fn in_include_from(&self, origin: Origin, include: &str) -> bool {
        let (include, path) = (std::path::Path::new(include), &self.loaded.sources.file(origin.file).path);
        let in_config_d = |p: &std::path::Path| p.parent().and_then(|d| d.file_name()).is_some_and(|d| d == "config.d");
        path == include
            || (in_config_d(path)
                && in_config_d(include)
                && path.file_name().is_some()
                && path.file_name() == include.file_name())
    }

    /// Loader problems that rules turn into findings (an unset from_env, ...).
    fn problems(&self) -> Vec<LoaderProblem> {
        let problem = |kind: &str, what: &str, name: &str, tag: &str, origin: &Origin| LoaderProblem {
            kind: kind.to_string(),
            what: what.to_string(),
            name: name.to_string(),
            tag: tag.to_string(),
            needs_value: self.takes_number_or_switch(tag),
            at: self.location(*origin),
        };
        self.loaded
            .problems
            .iter()
            .filter_map(|p| match p {
                ConfigError::SubstitutionLeftEmpty { what, name, by, tag, origin, .. } => {
                    let kind = if *by == "incl" { "incl_left_empty" } else { "substitution_left_empty" };
                    Some(problem(kind, what, name, tag, origin))
                }
                ConfigError::SubstitutionNotFound { what, name, tag, origin, .. } => {
                    Some(problem("substitution_not_found", what, name, tag, origin))
                }
                ConfigError::RootAttributeIgnored { attribute, origin, .. } => {
                    let file = &self.loaded.sources.file(origin.file).display;
                    Some(problem("root_attribute_ignored", file, "", attribute, origin))
                }
                _ => None,
            })
            .collect()
    }

    /// Whether a setting of this name takes a number or a switch (its catalog type is not a
    /// string): ClickHouse cannot parse it empty. Macros, names and paths start empty.
    fn takes_number_or_switch(&self, tag: &str) -> bool {
        let catalog = self.catalog;
        [&catalog.server, &catalog.session]
            .into_iter()
            .filter_map(|settings| settings.get(tag))
            .any(|setting| setting.kind.is_some_and(|kind| !kind.contains("String") && !kind.contains("Path")))
    }

    /// Top-level elements of users.xml / users.d files that belong in the server config.
    fn users_file_sections(&self) -> Vec<sections::NamedAt> {
        let (Some(users), false) = (&self.loaded.users, self.loaded.users_in_main) else { return Vec::new() };
        let catalog = self.catalog;
        users
            .root
            .elements()
            .filter(|e| !USERS_SECTIONS.contains(&e.name.as_str()))
            .filter(|e| is_server_section(&e.name) || catalog.is_server(&e.name) || e.name.ends_with("_log"))
            // conf.d/ is merged into both configs: only users.xml and users.d/ count
            .filter(|e| !self.in_conf_d(e.origin))
            .map(|e| sections::NamedAt { name: e.name.to_string(), at: self.location(e.origin) })
            .collect()
    }
}

/// Leaf children's values by name (first occurrence, as ClickHouse reads them).
pub(super) fn leaf_values(e: &Element) -> BTreeMap<String, String> {
    first_leaves(e, Element::value)
}

/// `read` of each leaf child by name: the first occurrence wins, a later one of the same
/// name is not read.
fn first_leaves<T>(e: &Element, read: impl Fn(&Element) -> T) -> BTreeMap<String, T> {
    let mut out = BTreeMap::new();
    for child in e.elements().filter(|c| !c.has_element_children()) {
        out.entry(child.name.to_string()).or_insert_with(|| read(child));
    }
    out
}

/// A listen address that is every interface.
fn every_interface(host: &Element) -> bool {
    matches!(host.value().as_str(), "0.0.0.0" | "::")
}

/// The interserver port listens on every interface: `interserver_listen_host` says so, or,
/// without one, `listen_host` does (the port is `interserver_http_port`, on by default in the
/// stock config, or `interserver_https_port`).
fn interserver_exposed(root: &Element) -> bool {
    let port = root.child("interserver_http_port").or(root.child("interserver_https_port"));
    let mut own = root.children_named("interserver_listen_host").peekable();
    port.is_some_and(|p| !p.value().trim().is_empty())
        && if own.peek().is_some() {
            own.any(every_interface)
        } else {
            root.children_named("listen_host").any(every_interface)
        }
}

pub(crate) fn is_true(v: &str) -> bool {
    matches!(v.trim().to_ascii_lowercase().as_str(), "1" | "true" | "yes" | "on")
}

/// The facts of an offline audit: the merged config and, when the user states it, the version.
pub fn facts(loaded: &LoadedConfig, target: String, version: Option<crate::version::Version>) -> super::Facts {
    facts_for(ConfigFacts::new(loaded, version), kind_of(loaded), target, version)
}

/// The facts of an offline audit, only those named in `wanted` (what the selected rules read).
pub fn facts_read(
    loaded: &LoadedConfig,
    wanted: &BTreeSet<String>,
    target: String,
    version: Option<crate::version::Version>,
) -> super::Facts {
    facts_for(ConfigFacts::only(loaded, wanted, version), kind_of(loaded), target, version)
}

/// A Keeper installation's config is a Keeper node's; every other a server's.
fn kind_of(loaded: &LoadedConfig) -> super::ConfigKind {
    let keeper = loaded.manifest.as_ref().is_some_and(|m| m.kind == crate::config::manifest::KEEPER_KIND);
    if keeper { super::ConfigKind::Keeper } else { super::ConfigKind::Server }
}

fn facts_for(
    facts: ConfigFacts,
    config_kind: super::ConfigKind,
    target: String,
    version: Option<crate::version::Version>,
) -> super::Facts {
    super::Facts {
        target,
        version,
        sources: [super::Source::Config].into(),
        config_kind,
        document: Map::new(),
        typed: [(super::Source::Config, Arc::new(facts.document()))].into(),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_macros_of_a_replica_path_are_read_in_order_once() {
        assert_eq!(
            super::macros_in("/clickhouse/tables/{layer}-{shard}/{database}/{table}/{shard}"),
            ["layer", "shard", "database", "table"]
        );
        assert_eq!(super::macros_in("{replica}"), ["replica"]);
        assert!(super::macros_in("r1").is_empty());
        assert!(super::macros_in("/a/{}/{unclosed").is_empty());
    }
}
