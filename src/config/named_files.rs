//! The files a config names (the include_from file, the users config) and where they are
//! read: beside the main config, or in a `--root` checkout; where the users come from.

use super::*;

pub(super) enum UsersSource {
    File(PathBuf),
    Main,
    None,
}

/// Where users come from, as AccessControl::addStoragesFromMainConfig finds them:
/// `user_directories/users_xml/path`, else `users_config`, else the main config itself (a
/// users.xml beside it is not read). A relative path is resolved against the main config's
/// directory.
pub(super) fn users_config_path(
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
pub(super) struct Named {
    /// As named: a relative path under the main config's directory.
    pub(super) named: PathBuf,
    /// Where it is read: under a `--root`, in the checkout.
    pub(super) path: PathBuf,
    /// ` (read as ..., --root ...)` when a root maps it.
    pub(super) read_as: Option<String>,
    /// The config names it by an absolute path (a server's, perhaps).
    pub(super) absolute: bool,
}

impl Named {
    pub(super) fn resolve(main: &Path, value: &str, roots: &Roots) -> Named {
        let named = main.parent().unwrap_or(Path::new("")).join(value);
        let absolute = Path::new(value).is_absolute();
        match roots.map(Path::new(value)) {
            Some((path, root)) => Named { read_as: Some(roots::read_as(&path, root)), named, path, absolute },
            None => Named { path: named.clone(), named, read_as: None, absolute },
        }
    }

    /// What a missing file's diagnostic adds: the root to give for an absolute path no root
    /// maps (a relative one is the tree's own).
    pub(super) fn missing_help(&self) -> Option<String> {
        match &self.read_as {
            None if self.absolute => roots::suggestion(&self.named),
            _ => None,
        }
    }
}

/// The options with each `--root`'s checkout written under the main config's directory when
/// it lies there (see [`Roots::under`]); the options themselves when there is no root.
pub(super) fn rooted_under<'a>(
    fs: &dyn ConfigFs,
    options: &'a LoadOptions,
    base_dir: &Path,
) -> std::borrow::Cow<'a, LoadOptions> {
    if options.roots.is_empty() {
        return std::borrow::Cow::Borrowed(options);
    }
    let mut rooted = options.clone();
    rooted.roots = options.roots.under(fs, base_dir);
    std::borrow::Cow::Owned(rooted)
}

/// A users file beside the main config (users.xml, users.yaml, users.yml).
pub(super) fn users_file_beside(fs: &dyn ConfigFs, main: &Path) -> Option<PathBuf> {
    let base_dir = main.parent().unwrap_or(Path::new(""));
    ["users.xml", "users.yaml", "users.yml"]
        .iter()
        .map(|name| base_dir.join(name))
        .find(|p| fs.is_file(p).unwrap_or(false) && !same_file(fs, p, main))
}

pub(super) fn same_file(fs: &dyn ConfigFs, a: &Path, b: &Path) -> bool {
    a == b || matches!((fs.canonicalize(a), fs.canonicalize(b)), (Ok(x), Ok(y)) if x == y)
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
            base: None,
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
