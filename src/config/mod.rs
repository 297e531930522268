//! Loading a ClickHouse server configuration exactly as ClickHouse does: the main file,
//! its `config.d/` and `conf.d/` fragments, substitutions, and the users config with
//! `users.d/`, every value keeping the file, line and column that set it.

pub mod base;
pub mod clickhouse_operator;
pub mod entrypoint;
pub mod env_file;
pub mod error;
pub mod extra_config;
pub mod files;
pub mod fragment;
pub mod fs;
pub mod manifest;
pub mod manifest_patch;
pub mod merge;
pub mod model;
mod named_files;
mod options;
mod process;
pub mod render;
pub mod roots;
pub use crate::source;
pub mod substitute;
pub mod tree;
pub mod xml;
pub mod yaml;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

pub use base::{Base, Mount};
pub use error::ConfigError;
pub use fs::{ConfigFs, MemoryFs, RealFs};
use named_files::{Named, UsersSource, rooted_under, users_config_path, users_file_beside};
use options::INSTALLED_CONFIG_DIR;
pub use options::{DefaultInclude, LoadOptions};
pub use process::process;
pub use roots::{Root, Roots};
pub use source::{FileId, Location, Origin, SourceMap};
pub use tree::{Element, Node};

use error::{Pointer, Result};
use merge::Merger;
use substitute::Substituter;

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
    /// The trees are rendered from a Kubernetes manifest: the operator writes the server's
    /// files, so a fix is a change to the manifest, never a file beside it.
    pub from_manifest: bool,
    /// The ClickHouseInstallation the trees were rendered from: its fixes are changes to it.
    pub manifest: Option<manifest_patch::Installation>,
    /// `--base`: the tree's files are mounted over the base's; files chaudit writes go into
    /// the tree, never the base.
    pub mount: Option<Mount>,
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

    /// What a report names as audited: the main config `main`, or, when the tree holds none
    /// and runs over the base's, the tree over that file (`deploy/ over base/config.xml`).
    pub fn target(&self, main: &Path) -> String {
        // the server tree's first file is its main; a users-only load read the main first
        let first = self.server.files.first().copied().or_else(|| self.sources.files().next().map(|(id, _)| id));
        let main_read = first.map(|id| self.sources.file(id).path.as_path());
        match (&self.mount, main_read) {
            (Some(mount), Some(read)) if mount.is_base_file(read) => {
                let tree = main.parent().filter(|tree| !tree.as_os_str().is_empty()).unwrap_or(Path::new("."));
                format!("{}/ over {}", tree.display(), fs::normalize(read).display())
            }
            _ => main.display().to_string(),
        }
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

/// [`load`] from the files of `fs`; under `--base`, the tree's files mounted over the base's.
pub fn load_with(fs: &dyn ConfigFs, main: &Path, options: &LoadOptions) -> Result<LoadedConfig> {
    let loaded = load_mounted(fs, main, options)?;
    settle_environment_values(&loaded.sources);
    Ok(loaded)
}

/// The values the config took from the environment that its files hold are no secret.
fn settle_environment_values(sources: &SourceMap) {
    // the texts are unpacked only when a value is to be looked for (an unpacked text is
    // this call's own: taken, not copied)
    crate::redact::settle_environment_values(sources.files().map(|(_, file)| Arc::unwrap_or_clone(file.text())));
}

/// The directory of `main` that `--base` mounts over the base, which must exist: a mistyped
/// tree must not leave the base's files audited alone.
fn mounted_tree<'a>(fs: &dyn ConfigFs, main: &'a Path) -> Result<&'a Path> {
    let tree = main.parent().unwrap_or(Path::new(""));
    let listed = if tree.as_os_str().is_empty() { Path::new(".") } else { tree };
    match fs.read_dir(listed) {
        Ok(_) => Ok(tree),
        Err(_) => Err(ConfigError::NotFound { path: main.to_path_buf() }),
    }
}

/// [`load_with`], the environment values it took not yet settled.
fn load_mounted(fs: &dyn ConfigFs, main: &Path, options: &LoadOptions) -> Result<LoadedConfig> {
    let Some(base) = &options.base else { return load_tree(fs, main, options) };
    let tree = mounted_tree(fs, main)?;
    let overlay = base::Overlay::new(fs, tree, base);
    let mounted = base::mounted_options(options, tree);
    let mut loaded = load_tree(&overlay, main, &mounted)?;
    let mount = overlay.mount().clone();
    // the container starts on the files and the one its entrypoint writes from its environment
    if let Some((path, text)) = entrypoint::written_file(&overlay, main, &mounted, &loaded) {
        loaded = load_tree(&overlay.with_written(&path, text), main, &mounted)?;
    }
    loaded.mount = Some(mount);
    Ok(loaded)
}

/// [`load_with`] of the files `fs` shows.
fn load_tree(fs: &dyn ConfigFs, main: &Path, options: &LoadOptions) -> Result<LoadedConfig> {
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
        from_manifest: false,
        manifest: None,
        mount: None,
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
    if !manifest::may_be_manifest(&sources.file(id).text()) {
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
            match manifest::render(&mut sources, id, defaults)? {
                Some(rendered) => rendered,
                None => match render_keeper_installation(&mut sources, id)? {
                    Some(rendered) => rendered,
                    None => {
                        return match manifest::no_clickhouse_kind(sources.file(id), id) {
                            Some(error) => Err(error),
                            None => Ok(None),
                        };
                    }
                },
            }
        }
    };
    // a Keeper installation beside a ClickHouse installation is recognised, and said not to
    // be audited in this run
    let keeper_audited = rendered.installation.as_ref().is_some_and(|i| i.kind == manifest::KEEPER_KIND);
    let mut problems = if keeper_audited { Vec::new() } else { manifest::keepers_not_audited(sources.file(id), id) };
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
        from_manifest: true,
        manifest: rendered.installation,
        mount: None,
    }))
}

/// A ClickHouseKeeperInstallation over the operator's keeper_config.d files, when the manifest
/// holds one.
fn render_keeper_installation(sources: &mut SourceMap, id: FileId) -> Result<Option<manifest::Rendered>> {
    let mut defaults = Vec::new();
    for (name, text) in manifest::KEEPER_OPERATOR_FILES {
        let file = sources.add(PathBuf::from(format!("(clickhouse-operator)/{name}")), text.to_string());
        defaults.push(files::parse(sources.file(file), file)?);
    }
    manifest::render_keeper(sources, id, defaults)
}

/// Each tree as far as it loads, as ClickHouse preprocesses them apart: a server config it
/// refuses leaves the users config standing (`server_error` says why, the server tree is
/// empty). An error only when neither loads: the server config's.
pub fn load_each(main: &Path, options: &LoadOptions) -> Result<LoadedConfig> {
    let server_error = match load(main, options) {
        Ok(loaded) => return Ok(loaded),
        Err(e) => e,
    };
    // no main file at all (a mistyped path, in the tree or the base): one error, not a
    // users-only audit
    let main_missing = matches!(&server_error, ConfigError::NotFound { path } if path == main);
    if main_missing || (options.base.is_none() && !main.is_file()) {
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
        from_manifest: false,
        manifest: None,
        mount: options.base.as_ref().map(|base| Mount::new(main.parent().unwrap_or(Path::new("")), base)),
    })
}

/// The users config alone, for when the server config cannot be processed (ClickHouse
/// preprocesses the two separately): found through the main file as written when it parses,
/// else users.xml beside it (on the real file system). Also returns the warnings of its
/// processing.
pub fn load_users(main: &Path, options: &LoadOptions) -> Result<(SourceMap, ConfigTree, Vec<ConfigError>)> {
    let (sources, users, problems) = load_users_mounted(main, options)?;
    settle_environment_values(&sources);
    Ok((sources, users, problems))
}

/// [`load_users`], the environment values it took not yet settled.
fn load_users_mounted(main: &Path, options: &LoadOptions) -> Result<(SourceMap, ConfigTree, Vec<ConfigError>)> {
    let Some(base) = &options.base else {
        return load_users_through(&RealFs, main, options)
            .map(|(sources, tree, problems, _)| (sources, tree, problems));
    };
    let tree = mounted_tree(&RealFs, main)?;
    let overlay = base::Overlay::new(&RealFs, tree, base);
    let mounted = base::mounted_options(options, tree);
    let (sources, users, problems, path) = load_users_through(&overlay, main, &mounted)?;
    // the container starts on the files and the one its entrypoint writes from its environment
    match entrypoint::written_over_users(&overlay, main, &mounted, || Some(path), &users.root) {
        Some((written, text)) => load_users_through(&overlay.with_written(&written, text), main, &mounted)
            .map(|(sources, tree, problems, _)| (sources, tree, problems)),
        None => Ok((sources, users, problems)),
    }
}

/// [`load_users`] from the files of `fs`, with the users file's path.
fn load_users_through(
    fs: &dyn ConfigFs,
    main: &Path,
    options: &LoadOptions,
) -> Result<(SourceMap, ConfigTree, Vec<ConfigError>, PathBuf)> {
    let base_dir = main.parent().map(Path::to_path_buf).unwrap_or_default();
    let options = &*rooted_under(fs, options, &base_dir);
    let mut sources = SourceMap::new(base_dir);
    let mut problems = Vec::new();
    let written = files::read(fs, &mut sources, main).and_then(|id| files::parse(sources.file(id), id));
    let unparsed = Element::new("clickhouse", Origin { file: FileId(0), offset: 0 });
    let root = written.as_ref().unwrap_or(&unparsed);
    let path = match users_config_path(fs, root, main, &options.roots, &sources, &mut problems) {
        UsersSource::File(path) => path,
        // a main config that cannot be processed: the users.xml beside it, which is what
        // such a tree most often means
        _ => users_file_beside(fs, main)
            .ok_or_else(|| ConfigError::NotFound { path: main.with_file_name("users.xml") })?,
    };
    let tree = process(fs, &path, options, &mut sources, &mut problems)?;
    Ok((sources, tree, problems, path))
}

#[cfg(test)]
mod tests {
    use super::*;

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
            base: None,
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
            base: None,
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
            base: None,
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
    fn a_tree_over_a_base_must_exist() {
        let mut fs = MemoryFs::default();
        fs.insert("/base/config.xml", "<clickhouse><a>1</a></clickhouse>");
        fs.insert("/tree/config.d/b.xml", "<clickhouse><b>2</b></clickhouse>");
        let options = LoadOptions { base: Some(Base::Dir("/base".into())), ..LoadOptions::for_fixture(Path::new("/")) };
        let loaded = load_with(&fs, Path::new("/tree/config.xml"), &options).unwrap();
        assert_eq!(loaded.server.root.child("b").map(|b| b.value()), Some("2".into()));
        let main = &loaded.sources.file(loaded.server.files[0]);
        assert_eq!(
            (main.path.as_path(), main.display.as_str()),
            (Path::new("/tree/../base/config.xml"), "../base/config.xml")
        );
        assert!(matches!(
            load_with(&fs, Path::new("/typo/config.xml"), &options),
            Err(ConfigError::NotFound { path }) if path == Path::new("/typo/config.xml")
        ));
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
            base: None,
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
            base: None,
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
            base: None,
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
