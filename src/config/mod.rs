//! Loading a ClickHouse server configuration exactly as ClickHouse does: the main file,
//! its `config.d/` and `conf.d/` fragments, substitutions, and the users config with
//! `users.d/`, every value keeping the file, line and column that set it.

pub mod clickhouse_operator;
pub mod env_file;
pub mod error;
pub mod files;
pub mod fragment;
pub mod fs;
pub mod manifest;
pub mod manifest_patch;
pub mod merge;
pub mod model;
pub mod render;
pub mod roots;
pub use crate::source;
pub mod substitute;
pub mod tree;
pub mod xml;
pub mod yaml;

use std::collections::HashMap;
use std::path::{Path, PathBuf};

pub use error::ConfigError;
pub use fs::{ConfigFs, MemoryFs, RealFs};
pub use roots::{Root, Roots};
pub use source::{FileId, Location, Origin, SourceMap};
pub use tree::{Element, Node};

use error::{Pointer, Result};
use merge::Merger;
use substitute::Substituter;

/// The include file used when the config has no `<include_from>` (ClickHouse: /etc/metrika.xml
/// when it exists, on the host the server runs on).
#[derive(Debug, Clone, PartialEq)]
pub enum DefaultInclude {
    /// /etc/metrika.xml, but only for an installed config (under /etc/clickhouse-server): a
    /// checked-out tree must not depend on the machine that lints it.
    Installed,
    /// This file, when it exists.
    File(PathBuf),
    /// No default include file.
    None,
}

/// ClickHouse's default include file, and where a config must be for chaudit to use it.
const HOST_INCLUDE_FILE: &str = "/etc/metrika.xml";
const INSTALLED_CONFIG_DIR: &str = "/etc/clickhouse-server";

impl DefaultInclude {
    /// `none`, or a file.
    pub fn parse(value: &str) -> DefaultInclude {
        if value == "none" { DefaultInclude::None } else { DefaultInclude::File(value.into()) }
    }

    fn path_for(&self, fs: &dyn ConfigFs, main: &Path, roots: &Roots) -> Option<PathBuf> {
        let path = match self {
            // a `--root` holding /etc/metrika.xml: the checkout's, whatever this machine has
            DefaultInclude::Installed if roots.map(Path::new(HOST_INCLUDE_FILE)).is_some() => {
                roots.map(Path::new(HOST_INCLUDE_FILE))?.0
            }
            DefaultInclude::Installed => {
                let main = fs.canonicalize(main).unwrap_or_else(|_| main.to_path_buf());
                main.starts_with(INSTALLED_CONFIG_DIR).then(|| PathBuf::from(HOST_INCLUDE_FILE))?
            }
            DefaultInclude::File(path) => path.clone(),
            DefaultInclude::None => return None,
        };
        fs.exists(&path).then_some(path)
    }
}

/// Settings of the loader that differ between a server host and a test.
#[derive(Debug, Clone)]
pub struct LoadOptions {
    /// Used when the config has no `<include_from>`.
    pub default_include_from: DefaultInclude,
    /// The environment `from_env` reads (chaudit's own by default).
    pub env: HashMap<String, String>,
    /// Where `env` comes from when it is not chaudit's own (`--env-file .env`): findings about
    /// a variable say which environment they judged.
    pub env_origin: Option<String>,
    /// `--root SERVER_DIR=DIR`: the absolute paths the config names (include_from, the users
    /// config, /etc/metrika.xml) are read from a checkout.
    pub roots: Roots,
}

impl Default for LoadOptions {
    fn default() -> Self {
        LoadOptions {
            default_include_from: DefaultInclude::Installed,
            env: std::env::vars().collect(),
            env_origin: None,
            roots: Default::default(),
        }
    }
}

impl LoadOptions {
    /// Options for a test fixture: no /etc/metrika.xml, and exactly the environment of its
    /// `env` file (KEY=VALUE lines), if any.
    pub fn for_fixture(dir: &Path) -> LoadOptions {
        let env = std::fs::read_to_string(dir.join("env"))
            .unwrap_or_default()
            .lines()
            .filter_map(|l| l.split_once('='))
            .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
            .collect();
        LoadOptions {
            default_include_from: DefaultInclude::File(dir.join("metrika.xml")),
            env,
            env_origin: None,
            roots: Default::default(),
        }
    }
}

/// One processed config (the server's or the users'): its merged tree and the files used.
#[derive(Debug)]
pub struct ConfigTree {
    pub root: Element,
    /// Main file, fragments in merge order, then the include_from file, as ClickHouse lists them.
    pub files: Vec<FileId>,
}

#[derive(Debug)]
pub struct LoadedConfig {
    pub sources: SourceMap,
    pub server: ConfigTree,
    /// The users config (users.xml + users.d/); `None` when user_directories names none.
    pub users: Option<ConfigTree>,
    /// True when users come from the main config itself: it names neither users_config nor
    /// user_directories (AccessControl::addStoragesFromMainConfig), or names itself.
    pub users_in_main: bool,
    /// A users.xml (or .yaml/.yml) beside the main config that the server does not read,
    /// because users come from the main config itself.
    pub unread_users_file: Option<PathBuf>,
    /// Why the users config could not be processed: ClickHouse then fails only the users
    /// (the server config is still written), so the server tree stands on its own.
    pub users_error: Option<ConfigError>,
    /// Why the server config could not be processed, when the users config could (an audit
    /// then checks the users alone; the server tree is an empty root).
    pub server_error: Option<ConfigError>,
    /// The default include file used (the config names no `<include_from>`), if any.
    pub default_include: Option<PathBuf>,
    /// Problems ClickHouse starts with anyway (it logs a warning): an unset from_env, a
    /// missing incl, a missing users config, a skipped fragment, from_zk offline.
    pub problems: Vec<ConfigError>,
    /// The trees sit over the official image's stock config.xml and users.xml, which are not
    /// among the files (a Kubernetes manifest: the operator's files go on top of the image's).
    pub over_image_files: bool,
    /// The ClickHouseInstallation the trees were rendered from: its fixes are changes to it.
    pub manifest: Option<manifest_patch::Installation>,
}

impl LoadedConfig {
    pub fn locate(&self, origin: Origin) -> Location {
        self.sources.locate(origin)
    }

    /// Every file of the config: the main config, its fragments, include_from files, the
    /// users config and its fragments (outputs never go over one of them).
    pub fn inputs(&self) -> impl Iterator<Item = (&'static str, &Path)> {
        self.sources.files().map(|(_, f)| ("a file of the config", f.path.as_path()))
    }

    /// The users tree, falling back to the server tree when users live in the main config.
    pub fn users_root(&self) -> Option<&Element> {
        match (&self.users, self.users_in_main) {
            (Some(users), _) => Some(&users.root),
            (None, true) => Some(&self.server.root),
            (None, false) => None,
        }
    }
}

/// Loads the main server config, its fragments and its users config.
pub fn load(main: &Path, options: &LoadOptions) -> Result<LoadedConfig> {
    load_with(&RealFs, main, options)
}

/// [`load`] from the files of `fs`.
pub fn load_with(fs: &dyn ConfigFs, main: &Path, options: &LoadOptions) -> Result<LoadedConfig> {
    let base_dir = main.parent().map(Path::to_path_buf).unwrap_or_default();
    let options = &*rooted_under(fs, options, &base_dir);
    if let Some(loaded) = load_manifest(fs, main, &base_dir, options)? {
        return Ok(loaded);
    }
    let mut sources = SourceMap::new(base_dir.clone());
    let mut problems = Vec::new();
    let server = process(fs, main, options, &mut sources, &mut problems)?;
    let default_include = match server.root.child("include_from") {
        None => options.default_include_from.path_for(fs, main, &options.roots),
        Some(_) => None,
    };
    let (mut users, mut users_error, mut users_in_main) = (None, None, false);
    match users_config_path(fs, &server.root, main, &options.roots, &sources, &mut problems) {
        UsersSource::File(path) => match process(fs, &path, options, &mut sources, &mut problems) {
            Ok(tree) => users = Some(tree),
            Err(err) => users_error = Some(err),
        },
        UsersSource::Main => users_in_main = true,
        UsersSource::None => {}
    }
    let unread_users_file = users_in_main.then(|| users_file_beside(fs, main)).flatten();
    // The <include_from> element is substituted twice (as ClickHouse does): report once.
    let mut seen = std::collections::HashSet::new();
    problems.retain(|p| seen.insert(p.to_string()));
    Ok(LoadedConfig {
        sources,
        server,
        users,
        users_in_main,
        unread_users_file,
        users_error,
        server_error: None,
        default_include,
        problems,
        over_image_files: false,
        manifest: None,
    })
}

/// A Kubernetes manifest (see [`manifest`] and [`clickhouse_operator`]): the server and users trees the operator
/// generates, both from the one file; `None` for any other file.
fn load_manifest(
    fs: &dyn ConfigFs,
    main: &Path,
    base_dir: &Path,
    options: &LoadOptions,
) -> Result<Option<LoadedConfig>> {
    let yaml = main.extension().and_then(|e| e.to_str()).is_some_and(|e| matches!(e, "yaml" | "yml"));
    if !yaml {
        return Ok(None);
    }
    let mut sources = SourceMap::new(base_dir.to_path_buf());
    let id = files::read(fs, &mut sources, main)?;
    if !manifest::may_be_manifest(&sources.file(id).text) {
        return Ok(None);
    }
    let rendered = match clickhouse_operator::render(&mut sources, id)? {
        Some(rendered) => rendered,
        None => {
            let mut defaults: manifest::Defaults = (Vec::new(), Vec::new());
            for (name, text) in manifest::OPERATOR_FILES {
                let path = PathBuf::from(format!("(clickhouse-operator)/{name}"));
                let file = sources.add(path, text.to_string());
                let fragment = files::parse(sources.file(file), file)?;
                if name.starts_with("users.d/") { &mut defaults.1 } else { &mut defaults.0 }.push(fragment);
            }
            let Some(rendered) = manifest::render(&mut sources, id, defaults)? else {
                return match manifest::no_clickhouse_kind(sources.file(id), id) {
                    Some(error) => Err(error),
                    None => Ok(None),
                };
            };
            rendered
        }
    };
    let mut problems = Vec::new();
    let (mut server, mut users) = (rendered.server, rendered.users);
    // the pod's environment: the operator sets the Secret values' variables
    let mut env = options.env.clone();
    env.extend(rendered.env);
    for root in [&mut server, &mut users] {
        Substituter {
            include_from: None,
            env: &env,
            env_origin: options.env_origin.as_deref(),
            sources: &sources,
            problems: &mut problems,
            added: 0,
        }
        .run(root)?;
    }
    Ok(Some(LoadedConfig {
        sources,
        server: ConfigTree { root: server, files: vec![id] },
        users: Some(ConfigTree { root: users, files: vec![id] }),
        users_in_main: false,
        unread_users_file: None,
        users_error: None,
        server_error: None,
        default_include: None,
        problems,
        over_image_files: true,
        manifest: rendered.installation,
    }))
}

/// Each tree as far as it loads, as ClickHouse preprocesses them apart: a server config it
/// refuses leaves the users config standing (`server_error` says why, the server tree is
/// empty). An error only when neither loads: the server config's.
pub fn load_each(main: &Path, options: &LoadOptions) -> Result<LoadedConfig> {
    let server_error = match load(main, options) {
        Ok(loaded) => return Ok(loaded),
        Err(e) => e,
    };
    // no main file at all (a mistyped path): one error, not a users-only audit
    if !main.is_file() {
        return Err(server_error);
    }
    let Ok((sources, users, problems)) = load_users(main, options) else { return Err(server_error) };
    let server =
        ConfigTree { root: Element::new("clickhouse", Origin { file: FileId(0), offset: 0 }), files: Vec::new() };
    Ok(LoadedConfig {
        sources,
        server,
        users: Some(users),
        users_in_main: false,
        unread_users_file: None,
        users_error: None,
        server_error: Some(server_error),
        default_include: None,
        problems,
        over_image_files: false,
        manifest: None,
    })
}

/// The users config alone, for when the server config cannot be processed (ClickHouse
/// preprocesses the two separately): found through the main file as written when it parses,
/// else users.xml beside it (on the real file system). Also returns the warnings of its
/// processing.
pub fn load_users(main: &Path, options: &LoadOptions) -> Result<(SourceMap, ConfigTree, Vec<ConfigError>)> {
    let base_dir = main.parent().map(Path::to_path_buf).unwrap_or_default();
    let fs = &RealFs;
    let options = &*rooted_under(fs, options, &base_dir);
    let mut sources = SourceMap::new(base_dir);
    let mut problems = Vec::new();
    let written = files::read(fs, &mut sources, main).and_then(|id| files::parse(sources.file(id), id));
    let unparsed = Element::new("clickhouse", Origin { file: FileId(0), offset: 0 });
    let root = written.as_ref().unwrap_or(&unparsed);
    match users_config_path(fs, root, main, &options.roots, &sources, &mut problems) {
        UsersSource::File(path) => {
            let tree = process(fs, &path, options, &mut sources, &mut problems)?;
            Ok((sources, tree, problems))
        }
        // a main config that cannot be processed: the users.xml beside it, which is what
        // such a tree most often means
        _ => match users_file_beside(fs, main) {
            Some(path) => {
                let tree = process(fs, &path, options, &mut sources, &mut problems)?;
                Ok((sources, tree, problems))
            }
            None => Err(ConfigError::NotFound { path: main.with_file_name("users.xml") }),
        },
    }
}

/// ClickHouse's ConfigProcessor::processConfig: parse, merge fragments, substitute.
pub fn process(
    fs: &dyn ConfigFs,
    main: &Path,
    options: &LoadOptions,
    sources: &mut SourceMap,
    problems: &mut Vec<ConfigError>,
) -> Result<ConfigTree> {
    let main_id = files::read(fs, sources, main)?;
    let mut root = files::parse(sources.file(main_id), main_id)?;
    let mut used = vec![main_id];
    let paths = files::merge_files(fs, main)?;
    let first_id = sources.next_id().0;
    let base_dir = sources.base_dir().to_path_buf();
    let mut merger = Merger::new(&root);
    // Each fragment is read and parsed on a worker while the ones before it merge here, and
    // is dropped once merged: the tree grows, not a heap of parsed fragments.
    let read_and_parse = |k: usize, path: &PathBuf| {
        let file = files::read_file(fs, path, &base_dir)?;
        let id = FileId(first_id + k as u32);
        let parsed = files::parse(&file, id);
        Ok((file, parsed))
    };
    crate::parallel::pipeline(&paths, read_and_parse, |read: Result<_>| {
        let (file, parsed) = read?;
        let id = sources.push(file);
        let fragment = parsed?;
        if !same_root(&root.name, &fragment.name) {
            if is_clickhouse_root(&root.name) {
                let p = Pointer::new(sources, fragment.origin, fragment.name.len() + 1);
                return Err(ConfigError::RootMismatch {
                    found: fragment.name.to_string(),
                    expected: root.name.to_string(),
                    at: p.at,
                    src: p.src,
                    span: p.span,
                });
            }
            let path = sources.file(id).display.clone();
            problems.push(ConfigError::FragmentSkipped {
                path,
                found: fragment.name.to_string(),
                expected: root.name.to_string(),
            });
            return Ok(());
        }
        for attribute in fragment.attributes.iter().filter(|a| matches!(a.name.as_str(), "replace" | "remove")) {
            let p = Pointer::new(sources, fragment.origin, fragment.name.len() + 1);
            problems.push(ConfigError::RootAttributeIgnored {
                attribute: attribute.name.clone(),
                origin: fragment.origin,
                at: p.at,
                src: p.src,
                span: p.span,
            });
        }
        merger.merge(&mut root, fragment, sources)?;
        used.push(id);
        Ok(())
    })?;
    merger.finish(&mut root);

    let include_from = read_include_from(fs, &mut root, main, options, sources, problems)?;
    if let Some((id, _)) = &include_from {
        used.push(*id);
    }
    Substituter {
        include_from: include_from.as_ref().map(|(_, e)| e),
        env: &options.env,
        env_origin: options.env_origin.as_deref(),
        sources,
        problems,
        added: 0,
    }
    .run(&mut root)?;
    Ok(ConfigTree { root, files: used })
}

fn same_root(a: &str, b: &str) -> bool {
    a == b || (is_clickhouse_root(a) && is_clickhouse_root(b))
}

fn is_clickhouse_root(name: &str) -> bool {
    name == "clickhouse" || name == "yandex"
}

/// The include_from file (after substituting the `<include_from>` element itself), or
/// /etc/metrika.xml when there is no such element and that file exists.
fn read_include_from(
    fs: &dyn ConfigFs,
    root: &mut Element,
    main: &Path,
    options: &LoadOptions,
    sources: &mut SourceMap,
    problems: &mut Vec<ConfigError>,
) -> Result<Option<(FileId, Element)>> {
    let element = root.elements_mut().find(|e| e.name == "include_from");
    let path = match element {
        Some(element) => {
            let kept = Substituter {
                include_from: None,
                env: &options.env,
                env_origin: options.env_origin.as_deref(),
                sources,
                problems,
                added: 0,
            }
            .element(element)?;
            let value = element.value();
            if !kept || value.is_empty() {
                return Ok(None);
            }
            // ClickHouse resolves a relative path against its working directory; the
            // config's own directory is the best offline stand-in.
            let named = Named::resolve(main, &value, &options.roots);
            if !fs.exists(&named.path) {
                let p = Pointer::new(sources, element.value_origin(), value.len());
                let refused = "ClickHouse refuses to start with 'File not found'";
                let help = match named.missing_help() {
                    Some(more) => format!("{refused}; {more}"),
                    None => refused.to_string(),
                };
                return Err(ConfigError::IncludeFromMissing {
                    path: named.named,
                    read_as: named.read_as,
                    help,
                    at: p.at,
                    src: p.src,
                    span: p.span,
                });
            }
            named.path
        }
        None => match options.default_include_from.path_for(fs, main, &options.roots) {
            Some(path) => path,
            None => return Ok(None),
        },
    };
    let id = files::read(fs, sources, &path)?;
    Ok(Some((id, files::parse(sources.file(id), id)?)))
}

enum UsersSource {
    File(PathBuf),
    Main,
    None,
}

/// Where users come from, as AccessControl::addStoragesFromMainConfig finds them:
/// `user_directories/users_xml/path`, else `users_config`, else the main config itself (a
/// users.xml beside it is not read). A relative path is resolved against the main config's
/// directory.
fn users_config_path(
    fs: &dyn ConfigFs,
    root: &Element,
    main: &Path,
    roots: &Roots,
    sources: &SourceMap,
    problems: &mut Vec<ConfigError>,
) -> UsersSource {
    let named = match root.child("user_directories") {
        Some(dirs) => match dirs.find("users_xml/path") {
            Some(path) => Some(path),
            None => return UsersSource::None,
        },
        None => root.child("users_config"),
    };
    let Some(element) = named else { return UsersSource::Main };
    let named = Named::resolve(main, &element.value(), roots);
    if !fs.exists(&named.path) {
        let p = Pointer::new(sources, element.value_origin(), element.value().len().max(1));
        let help = named.missing_help();
        let (path, read_as) = (named.named, named.read_as);
        problems.push(ConfigError::UsersConfigMissing { path, read_as, help, at: p.at, src: p.src, span: p.span });
        return UsersSource::None;
    }
    if same_file(fs, &named.path, main) { UsersSource::Main } else { UsersSource::File(named.path) }
}

/// A file the config names (include_from, the users config), and where it is read.
struct Named {
    /// As named: a relative path under the main config's directory.
    named: PathBuf,
    /// Where it is read: under a `--root`, in the checkout.
    path: PathBuf,
    /// ` (read as ..., --root ...)` when a root maps it.
    read_as: Option<String>,
    /// The config names it by an absolute path (a server's, perhaps).
    absolute: bool,
}

impl Named {
    fn resolve(main: &Path, value: &str, roots: &Roots) -> Named {
        let named = main.parent().unwrap_or(Path::new("")).join(value);
        let absolute = Path::new(value).is_absolute();
        match roots.map(Path::new(value)) {
            Some((path, root)) => Named { read_as: Some(roots::read_as(&path, root)), named, path, absolute },
            None => Named { path: named.clone(), named, read_as: None, absolute },
        }
    }

    /// What a missing file's diagnostic adds: the root to give for an absolute path no root
    /// maps (a relative one is the tree's own).
    fn missing_help(&self) -> Option<String> {
        match &self.read_as {
            None if self.absolute => roots::suggestion(&self.named),
            _ => None,
        }
    }
}

/// The options with each `--root`'s checkout written under the main config's directory when
/// it lies there (see [`Roots::under`]); the options themselves when there is no root.
fn rooted_under<'a>(fs: &dyn ConfigFs, options: &'a LoadOptions, base_dir: &Path) -> std::borrow::Cow<'a, LoadOptions> {
    if options.roots.is_empty() {
        return std::borrow::Cow::Borrowed(options);
    }
    let mut rooted = options.clone();
    rooted.roots = options.roots.under(fs, base_dir);
    std::borrow::Cow::Owned(rooted)
}

/// A users file beside the main config (users.xml, users.yaml, users.yml).
fn users_file_beside(fs: &dyn ConfigFs, main: &Path) -> Option<PathBuf> {
    let base_dir = main.parent().unwrap_or(Path::new(""));
    ["users.xml", "users.yaml", "users.yml"]
        .iter()
        .map(|name| base_dir.join(name))
        .find(|p| fs.is_file(p).unwrap_or(false) && !same_file(fs, p, main))
}

fn same_file(fs: &dyn ConfigFs, a: &Path, b: &Path) -> bool {
    a == b || matches!((fs.canonicalize(a), fs.canonicalize(b)), (Ok(x), Ok(y)) if x == y)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_host_include_file_is_only_for_an_installed_config() {
        let dir = tempfile::tempdir().unwrap();
        let main = dir.path().join("config.xml");
        assert_eq!(DefaultInclude::Installed.path_for(&RealFs, &main, &Roots::default()), None);
        assert_eq!(
            DefaultInclude::None.path_for(&RealFs, Path::new("/etc/clickhouse-server/config.xml"), &Roots::default()),
            None
        );
        let named = dir.path().join("metrika.xml");
        assert_eq!(
            DefaultInclude::parse(named.to_str().unwrap()).path_for(&RealFs, &main, &Roots::default()),
            None,
            "a missing file is no include"
        );
        std::fs::write(&named, "<clickhouse/>").unwrap();
        assert_eq!(
            DefaultInclude::parse(named.to_str().unwrap()).path_for(&RealFs, &main, &Roots::default()),
            Some(named)
        );
        assert_eq!(DefaultInclude::parse("none"), DefaultInclude::None);
    }

    #[test]
    fn a_tree_in_memory_loads_as_on_disk() {
        let dir = tempfile::tempdir().unwrap();
        let tree = [
            (
                "config.xml",
                "<clickhouse><include_from>metrika.xml</include_from><users_config>users.xml</users_config><a incl=\"m\"/></clickhouse>",
            ),
            ("config.d/b.yaml", "b: 2"),
            ("conf.d/c.xml", "<clickhouse><c from_env=\"C\"/></clickhouse>"),
            ("metrika.xml", "<clickhouse><m>1</m></clickhouse>"),
            ("users.xml", "<clickhouse><users><u/></users></clickhouse>"),
            ("users.d/broken.xml", "<clickhouse>\n  <profiles>"),
        ];
        let mut memory = MemoryFs::default();
        for (name, text) in tree {
            let path = dir.path().join(name);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(&path, text).unwrap();
            memory.insert(path, text);
        }
        let env = HashMap::from([("C".to_string(), "3".to_string())]);
        let options = LoadOptions {
            default_include_from: DefaultInclude::None,
            env,
            env_origin: None,
            roots: Default::default(),
        };
        let shown = |fs: &dyn ConfigFs| {
            let loaded = load_with(fs, &dir.path().join("config.xml"), &options).unwrap();
            let rendered = render::render(
                &loaded.server,
                &loaded.sources,
                &render::RenderOptions { provenance: true, masking: None },
            );
            (rendered, loaded.users_error.map(|e| format!("{:?}", miette::Report::new(e))))
        };
        let on_disk = shown(&RealFs);
        assert!(on_disk.0.contains("<a>1</a>") && on_disk.0.contains("<c>3</c>"), "{}", on_disk.0);
        assert!(on_disk.1.as_deref().is_some_and(|e| e.contains("users.d/broken.xml:1:1")), "{:?}", on_disk.1);
        assert_eq!(shown(&memory), on_disk);
    }

    #[test]
    fn an_optional_root_whose_substitution_finds_nothing_refuses_the_config() {
        // 25.8.2.1 removes the optional element, the root too: "No root node in document"
        let dir = tempfile::tempdir().unwrap();
        let options = LoadOptions {
            default_include_from: DefaultInclude::None,
            env: HashMap::new(),
            env_origin: None,
            roots: Default::default(),
        };
        let main = dir.path().join("config.xml");
        std::fs::write(dir.path().join("inc.xml"), "<clickhouse><t1><a>1</a></t1></clickhouse>").unwrap();
        for (root, refused) in [
            (r#"<clickhouse incl="t9" optional="true">"#, true),
            (r#"<clickhouse from_env="UNSET_HERE" optional="true">"#, true),
            (r#"<clickhouse incl="t9">"#, false),
            (r#"<clickhouse incl="t1" optional="true">"#, false),
        ] {
            std::fs::write(&main, format!("{root}<include_from>inc.xml</include_from><b>2</b></clickhouse>")).unwrap();
            assert_eq!(load(&main, &options).is_err(), refused, "{root}");
        }
    }

    /// Loads `main` (with `inc.xml` as include_from) and renders it without provenance;
    /// `Err` when it is refused.
    fn load_main(main: &str, include: &str) -> std::result::Result<String, String> {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("inc.xml"), include).unwrap();
        std::fs::write(dir.path().join("config.xml"), main).unwrap();
        let options = LoadOptions {
            default_include_from: DefaultInclude::None,
            env: HashMap::new(),
            env_origin: None,
            roots: Default::default(),
        };
        let loaded = load(&dir.path().join("config.xml"), &options).map_err(|e| e.to_string())?;
        Ok(render::render(&loaded.server, &loaded.sources, &render::RenderOptions { provenance: false, masking: None }))
    }

    #[test]
    fn an_optional_element_that_goes_has_its_children_substituted_first() {
        // 25.8.2.1 refuses the from_env on a value inside the removed element
        let main = r#"<clickhouse><include_from>inc.xml</include_from>
            <a incl="t9" optional="true"><b from_env="UNSET_HERE"><c/></b></a></clickhouse>"#;
        assert!(load_main(main, "<clickhouse/>").is_err());
        let main = r#"<clickhouse><include_from>inc.xml</include_from>
            <a incl="t9" optional="true"><b><c/></b></a></clickhouse>"#;
        assert!(!load_main(main, "<clickhouse/>").unwrap().contains("<a"));
    }

    #[test]
    fn attributes_an_incl_brings_are_substituted_like_the_elements_own() {
        // the included element's from_env lands on <b>, which is optional: unset, <b> goes
        let main =
            r#"<clickhouse><include_from>inc.xml</include_from><b incl="t1" optional="true"/><c>1</c></clickhouse>"#;
        let shown = load_main(main, r#"<clickhouse><t1 from_env="UNSET_HERE"/></clickhouse>"#).unwrap();
        assert!(!shown.contains("<b") && shown.contains("<c>1</c>"), "{shown}");
    }

    #[test]
    fn an_include_merge_of_an_empty_element_merges_nothing() {
        // ClickHouse merges the included element once per child node: none, no merge, and
        // the parent's text stays (a merge drops it)
        let main =
            r#"<clickhouse><include_from>inc.xml</include_from><a>2<include incl="t2" merge="true"/></a></clickhouse>"#;
        let shown = load_main(main, "<clickhouse><t2/><t3><b>1</b></t3></clickhouse>").unwrap();
        assert!(shown.contains("<a>2</a>"), "{shown}");
        let main =
            r#"<clickhouse><include_from>inc.xml</include_from><a>2<include incl="t3" merge="true"/></a></clickhouse>"#;
        let shown = load_main(main, "<clickhouse><t2/><t3><b>1</b></t3></clickhouse>").unwrap();
        assert!(!shown.contains(">2") && shown.contains("<b>1</b>"), "{shown}");
    }

    #[test]
    fn an_include_merge_merges_once_per_child_node_and_goes_on_with_the_next_sibling() {
        // t2 has three child nodes (whitespace, <a remove>, whitespace): three merges, each
        // removing one more <a>, as 25.8.2.1 does
        let include = "<clickhouse><t2>\n<a remove=\"1\"/>\n</t2><t3><c>1</c></t3></clickhouse>";
        let main = r#"<clickhouse><include_from>inc.xml</include_from><x><include incl="t2" merge="true"/><a k="1"/><a/><a/><a/><a/><b/></x></clickhouse>"#;
        let shown = load_main(main, include).unwrap();
        assert!(shown.contains(r#"<a k="1"/>"#) && shown.matches("<a").count() == 2, "{shown}");
        // the merge drops the text before the <include>; the optional <b> after it is still
        // substituted (and goes)
        let main = r#"<clickhouse><include_from>inc.xml</include_from><x>t<include incl="t3" merge="true"/><b incl="t9" optional="true"/></x></clickhouse>"#;
        let shown = load_main(main, include).unwrap();
        assert!(!shown.contains("<b") && shown.contains("<c>1</c>"), "{shown}");
    }

    #[test]
    fn a_broken_users_config_leaves_the_server_tree() {
        let dir = tempfile::tempdir().unwrap();
        let config = "<clickhouse><a>1</a><users_config>users.xml</users_config></clickhouse>";
        std::fs::write(dir.path().join("config.xml"), config).unwrap();
        std::fs::write(dir.path().join("users.xml"), "<clickhouse><users>").unwrap();
        let options = LoadOptions {
            default_include_from: DefaultInclude::None,
            env: HashMap::new(),
            env_origin: None,
            roots: Default::default(),
        };
        let loaded = load(&dir.path().join("config.xml"), &options).unwrap();
        assert_eq!(loaded.server.root.child("a").unwrap().value(), "1");
        assert!(loaded.users.is_none() && loaded.users_error.is_some());
    }

    #[test]
    fn without_users_config_users_come_from_the_main_config_not_the_file_beside_it() {
        // AccessControl::addStoragesFromMainConfig; the real 25.8 server agrees
        // (tests/startup_rules.rs, users-read-from-main-config)
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("config.xml"), "<clickhouse><profiles><default/></profiles></clickhouse>")
            .unwrap();
        std::fs::write(dir.path().join("users.xml"), "<clickhouse><users><u/></users></clickhouse>").unwrap();
        let options = LoadOptions {
            default_include_from: DefaultInclude::None,
            env: HashMap::new(),
            env_origin: None,
            roots: Default::default(),
        };
        let loaded = load(&dir.path().join("config.xml"), &options).unwrap();
        assert!(loaded.users_in_main && loaded.users.is_none());
        assert_eq!(loaded.unread_users_file, Some(dir.path().join("users.xml")));
        assert!(loaded.users_root().unwrap().child("profiles").is_some());
    }

    #[test]
    fn an_unset_variable_leaves_the_element_as_written() {
        // as clickhouse-server 25.8.2.1 writes it to preprocessed_configs
        let dir = tempfile::tempdir().unwrap();
        let text = "<clickhouse><max_threads replace=\"1\" from_env=\"UNSET\">1</max_threads><a from_env=\"UNSET\"/></clickhouse>";
        std::fs::write(dir.path().join("config.xml"), text).unwrap();
        let options = LoadOptions {
            default_include_from: DefaultInclude::None,
            env: HashMap::new(),
            env_origin: None,
            roots: Default::default(),
        };
        let loaded = load(&dir.path().join("config.xml"), &options).unwrap();
        let kept = loaded.server.root.child("max_threads").unwrap();
        assert_eq!(
            (kept.value().as_str(), kept.attribute("from_env"), kept.attribute("replace")),
            ("1", Some("UNSET"), Some("1"))
        );
        assert_eq!(loaded.server.root.child("a").unwrap().attribute("from_env"), Some("UNSET"));
        assert!(loaded.problems.iter().all(ConfigError::is_warning));
        assert!(matches!(
            loaded.problems[..],
            [ConfigError::SubstitutionNotFound { .. }, ConfigError::SubstitutionLeftEmpty { .. }]
        ));
    }
}

#[cfg(test)]
mod root_tests {
    use super::*;

    /// A checkout of /etc/clickhouse-server whose config names its files by their absolute
    /// paths on the server, and /etc/metrika.xml.
    fn checkout() -> MemoryFs {
        let mut fs = MemoryFs::default();
        let files = [
            (
                "/work/deploy/config.xml",
                "<clickhouse><include_from>/etc/clickhouse-server/config.d/macros.xml</include_from>\
                 <users_config>/etc/clickhouse-server/users.xml</users_config><macros incl=\"macros\"/></clickhouse>",
            ),
            ("/work/deploy/config.d/macros.xml", "<clickhouse><macros><shard>01</shard></macros></clickhouse>"),
            ("/work/deploy/users.xml", "<clickhouse><users><u/></users></clickhouse>"),
            ("/work/deploy/users.d/more.xml", "<clickhouse><users><v/></users></clickhouse>"),
            ("/work/etc/metrika.xml", "<clickhouse><zk>1</zk></clickhouse>"),
            ("/work/plain/config.xml", "<clickhouse><a incl=\"zk\"/></clickhouse>"),
        ];
        for (path, text) in files {
            fs.insert(path, text);
        }
        fs
    }

    fn options(roots: &[&str]) -> LoadOptions {
        LoadOptions {
            default_include_from: DefaultInclude::Installed,
            env: HashMap::new(),
            env_origin: None,
            roots: Roots::new(roots.iter().map(|r| Root::parse(r).unwrap()).collect()),
        }
    }

    #[test]
    fn absolute_paths_under_a_root_are_read_from_the_checkout_and_shown_in_it() {
        let fs = checkout();
        let main = Path::new("/work/deploy/config.xml");
        let loaded = load_with(&fs, main, &options(&["/etc/clickhouse-server=/work/deploy"])).unwrap();
        assert_eq!(loaded.server.root.find("macros/shard").unwrap().value(), "01");
        let users = loaded.users.as_ref().unwrap();
        assert!(users.root.find("users/u").is_some() && users.root.find("users/v").is_some(), "users.d/ merged");
        let shown: Vec<_> = loaded.sources.files().map(|(_, f)| f.display.as_str()).collect();
        assert_eq!(
            shown,
            ["config.xml", "config.d/macros.xml", "config.d/macros.xml", "users.xml", "users.d/more.xml"]
        );
        // without the root: the server's path, refused, with the root to give
        let err = load_with(&fs, main, &options(&[])).unwrap_err();
        assert!(err.to_string().contains("/etc/clickhouse-server/config.d/macros.xml does not exist"), "{err}");
        let help = miette::Diagnostic::help(&err).map(|h| h.to_string()).unwrap_or_default();
        assert!(help.contains("--root /etc/clickhouse-server=DIR"), "{help}");
        // a relative path is the tree's own: no root to suggest, under an absolute main too
        let mut fs = fs;
        fs.insert("/work/rel/config.xml", "<clickhouse><include_from>inc/m.xml</include_from></clickhouse>");
        let err = load_with(&fs, Path::new("/work/rel/config.xml"), &options(&[])).unwrap_err();
        assert!(err.to_string().contains("include_from file /work/rel/inc/m.xml does not exist"), "{err}");
        assert!(!miette::Diagnostic::help(&err).unwrap().to_string().contains("--root"));
    }

    #[test]
    fn a_mapped_file_that_is_missing_names_both_paths() {
        let mut fs = checkout();
        fs.insert(
            "/work/other/config.xml",
            "<clickhouse><users_config>/etc/clickhouse-server/users.xml</users_config></clickhouse>",
        );
        let roots = ["/etc/clickhouse-server=/work/deploy", "/etc/clickhouse-server/config.d=/work/empty"];
        let err = load_with(&fs, Path::new("/work/deploy/config.xml"), &options(&roots)).unwrap_err();
        assert_eq!(
            err.to_string(),
            "config.xml:1:27: include_from file /etc/clickhouse-server/config.d/macros.xml (read as \
             /work/empty/macros.xml, --root /etc/clickhouse-server/config.d=/work/empty) does not exist"
        );
        let roots = ["/etc/clickhouse-server=/work/nowhere"];
        let loaded = load_with(&fs, Path::new("/work/other/config.xml"), &options(&roots)).unwrap();
        let warning = loaded.problems.iter().map(ToString::to_string).collect::<Vec<_>>().join("\n");
        assert!(
            warning.contains("users config /etc/clickhouse-server/users.xml (read as /work/nowhere/users.xml"),
            "{warning}"
        );
    }

    #[test]
    fn the_default_include_file_is_the_checkouts_under_a_root_and_never_this_machines() {
        let fs = checkout();
        let main = Path::new("/work/plain/config.xml");
        let loaded = load_with(&fs, main, &options(&["/etc=/work/etc"])).unwrap();
        assert_eq!(loaded.default_include, Some(PathBuf::from("/work/etc/metrika.xml")));
        assert_eq!(loaded.server.root.find("a/zk").map(|e| e.value()), None, "incl takes the content");
        assert_eq!(loaded.server.root.child("a").unwrap().value(), "1");
        let loaded = load_with(&fs, main, &options(&["/etc/clickhouse-server=/work/plain"])).unwrap();
        assert_eq!(loaded.default_include, None);
    }
}
