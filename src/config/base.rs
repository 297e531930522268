//! `--base DIR|image`: a tree of `config.d/` and `users.d/` alone, read as the official Docker
//! image runs it, its files mounted one by one over the image's /etc/clickhouse-server. The
//! main config and the users config come from the base unless the tree has its own; the
//! fragment directories are the union of both, a file of the tree hiding the base's file of
//! the same name, as a file mount does.

use std::collections::BTreeSet;
use std::io::{self, ErrorKind};
use std::path::{Path, PathBuf};

use super::fs::{ConfigFs, MemoryFs, normalize};
use super::{LoadOptions, Root, Roots};

/// Where the image's stock files come from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Base {
    /// A copy of the image's /etc/clickhouse-server.
    Dir(PathBuf),
    /// The stock files bundled into chaudit (see data/image/SOURCES).
    Image,
}

/// How the bundled files are shown: findings and provenance name them under it.
pub const IMAGE_DIR: &str = "(clickhouse-server image)";

/// The bundled stock files, by their path under /etc/clickhouse-server.
const IMAGE_FILES: [(&str, &str); 3] = [
    ("config.xml", include_str!("../../data/image/config.xml")),
    ("users.xml", include_str!("../../data/image/users.xml")),
    ("config.d/docker_related_config.xml", include_str!("../../data/image/config.d/docker_related_config.xml")),
];

/// Where the bundled files come from, for the message refusing a version chaudit does not hold.
const IMAGE_SOURCES: &str = "ClickHouse/ClickHouse programs/server/config.xml at commit 001409ce725057e7, \
     programs/server/users.xml at 022a8859d1c12abc and docker/server/docker_related_config.xml at e8c8014d4f241340";

impl Base {
    /// `image`, `image:VERSION` or a directory, as `--base` takes it.
    pub fn parse(value: &str) -> Result<Base, String> {
        if value == "image" {
            return Ok(Base::Image);
        }
        if let Some(version) = value.strip_prefix("image:") {
            return Err(format!(
                "chaudit holds no stock files proven to be those of clickhouse-server {version}: `--base image` \
                 reads {IMAGE_SOURCES}, not a release's. Pass the image's own files instead: docker run --rm \
                 --entrypoint tar clickhouse/clickhouse-server:{version} -C /etc/clickhouse-server -c . | tar -x -C \
                 base/ then --base base/"
            ));
        }
        let dir = PathBuf::from(value);
        if value.is_empty() {
            return Err(
                "--base takes `image` or a directory holding a copy of the image's /etc/clickhouse-server".into()
            );
        }
        if !dir.is_dir() {
            return Err(format!(
                "{value} is not a directory: --base takes `image` or a copy of the image's /etc/clickhouse-server \
                 (docker run --rm --entrypoint tar clickhouse/clickhouse-server:VERSION -C /etc/clickhouse-server -c . \
                 | tar -x -C {value})"
            ));
        }
        if !["config.xml", "config.yaml", "config.yml"].iter().any(|main| dir.join(main).is_file()) {
            return Err(format!(
                "{value} holds no config.xml: --base DIR is a copy of the image's /etc/clickhouse-server, with its \
                 config.xml and users.xml"
            ));
        }
        Ok(Base::Dir(dir))
    }

    /// The directory the base's files are shown under.
    pub fn dir(&self) -> PathBuf {
        match self {
            Base::Dir(dir) => dir.clone(),
            Base::Image => PathBuf::from(IMAGE_DIR),
        }
    }
}

/// The main config `--config PATH` names: PATH itself, or the config.xml (config.yaml,
/// config.yml) of the directory PATH; with `based`, a directory holding none stands for the
/// config.xml the base gives it.
pub fn main_config(path: &Path, based: bool) -> Result<PathBuf, String> {
    if !path.is_dir() {
        return Ok(path.to_path_buf());
    }
    let found = ["config.xml", "config.yaml", "config.yml"].iter().map(|name| path.join(name)).find(|p| p.is_file());
    match found {
        Some(main) => Ok(main),
        None if based => Ok(path.join("config.xml")),
        None => Err(format!(
            "{} is a directory without config.xml, config.yaml or config.yml. A tree of config.d/ and users.d/ \
             that runs over the official image's files? Add --base image (stock files bundled into chaudit) or \
             --base DIR (a copy of the image's /etc/clickhouse-server)",
            path.display()
        )),
    }
}

/// The tree's directory and the base's: a file read from the base is shown as the base's, and
/// a file chaudit writes goes into the tree at the same place.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mount {
    pub tree: PathBuf,
    pub base: PathBuf,
}

impl Mount {
    pub fn new(tree: &Path, base: &Base) -> Mount {
        Mount { tree: normalize(tree), base: base.dir() }
    }

    /// Where a file of the base sits in the tree (the path a fix beside it is written under);
    /// any other path as it is.
    pub fn in_tree(&self, path: &Path) -> PathBuf {
        match normalize(path).strip_prefix(normalize(&self.base)) {
            Ok(rest) => self.tree.join(rest),
            Err(_) => path.to_path_buf(),
        }
    }

    /// Whether `path` is one of the base's files.
    pub fn is_base_file(&self, path: &Path) -> bool {
        normalize(path).starts_with(normalize(&self.base))
    }
}

/// The options a tree over a base is loaded with: the absolute paths a config names under
/// /etc/clickhouse-server are read from the tree (and through it from the base), as in the
/// container, unless a `--root` says otherwise.
pub(super) fn mounted_options(options: &LoadOptions, tree: &Path) -> LoadOptions {
    let mut mounted = options.clone();
    let server = Path::new(super::INSTALLED_CONFIG_DIR);
    if !options.roots.iter().any(|root| root.server == server) {
        let tree = if tree.as_os_str().is_empty() { Path::new(".") } else { tree };
        let mut roots: Vec<Root> = options.roots.iter().cloned().collect();
        roots.push(Root { server: server.to_path_buf(), local: tree.to_path_buf() });
        mounted.roots = Roots::new(roots);
    }
    mounted
}

/// The tree's files over the base's: what ClickHouse sees in a container whose
/// /etc/clickhouse-server is the image's, with the tree's files mounted over it.
#[derive(Debug)]
pub(super) struct Overlay<'a> {
    tree_fs: &'a dyn ConfigFs,
    mount: Mount,
    /// The bundled files (`--base image`); otherwise the base is read from `tree_fs`.
    image: Option<MemoryFs>,
    /// The file the image's entrypoint writes into the tree at start (see [`super::entrypoint`]).
    written: Option<(PathBuf, String)>,
}

impl<'a> Overlay<'a> {
    pub(super) fn new(tree_fs: &'a dyn ConfigFs, tree: &Path, base: &Base) -> Overlay<'a> {
        let image = matches!(base, Base::Image).then(|| {
            let mut files = MemoryFs::default();
            for (name, text) in IMAGE_FILES {
                files.insert(Path::new(IMAGE_DIR).join(name), text);
            }
            files
        });
        Overlay { tree_fs, mount: Mount::new(tree, base), image, written: None }
    }

    /// The same files with the one the entrypoint writes at `path` (in the tree).
    pub(super) fn with_written(self, path: &Path, text: String) -> Overlay<'a> {
        Overlay { written: Some((normalize(path), text)), ..self }
    }

    fn written(&self, path: &Path) -> Option<&str> {
        self.written.as_ref().filter(|(at, _)| *at == normalize(path)).map(|(_, text)| text.as_str())
    }

    pub(super) fn mount(&self) -> &Mount {
        &self.mount
    }

    fn base_fs(&self) -> &dyn ConfigFs {
        self.image.as_ref().map_or(self.tree_fs, |files| files as &dyn ConfigFs)
    }

    /// The base's path for a path of the tree the tree itself does not hold.
    fn in_base(&self, path: &Path) -> Option<PathBuf> {
        let path = normalize(path);
        if path.is_absolute() != self.mount.tree.is_absolute() || self.tree_fs.is_file(&path).is_ok() {
            return None;
        }
        let rest = path.strip_prefix(&self.mount.tree).ok()?;
        Some(if rest.as_os_str().is_empty() { self.mount.base.clone() } else { self.mount.base.join(rest) })
    }
}

impl ConfigFs for Overlay<'_> {
    fn read(&self, path: &Path) -> io::Result<Vec<u8>> {
        if let Some(text) = self.written(path) {
            return Ok(text.as_bytes().to_vec());
        }
        match self.in_base(path) {
            Some(base) => self.base_fs().read(&base),
            None => self.tree_fs.read(path),
        }
    }

    fn read_dir(&self, dir: &Path) -> io::Result<Vec<(PathBuf, bool)>> {
        let normal = normalize(dir);
        let Ok(rest) = normal.strip_prefix(&self.mount.tree) else { return self.tree_fs.read_dir(dir) };
        let base_dir = self.mount.base.join(rest);
        let missing = |e: &io::Error| matches!(e.kind(), ErrorKind::NotFound | ErrorKind::NotADirectory);
        let (own, base) = (self.tree_fs.read_dir(dir), self.base_fs().read_dir(&base_dir));
        let written = self.written.as_ref().filter(|(at, _)| at.parent() == Some(normal.as_path()));
        let mut entries = match (own, &base) {
            (Err(e), Ok(_)) if missing(&e) => Vec::new(),
            (Err(e), Err(_)) if missing(&e) && written.is_some() => Vec::new(),
            (own, _) => own?,
        };
        // the entrypoint's file replaces the tree's of its name, and hides the base's
        if let Some((at, _)) = written {
            entries.retain(|(p, _)| p.file_name() != at.file_name());
            entries.push((dir.join(at.file_name().unwrap_or_default()), true));
        }
        let names: BTreeSet<_> = entries.iter().filter_map(|(p, _)| p.file_name().map(|n| n.to_owned())).collect();
        match base {
            Ok(listed) => {
                // a base file the tree holds one of the same name of is hidden by it; the rest
                // are listed in the tree's directory, where the server sees them
                for (path, regular) in listed {
                    let Some(name) = path.file_name() else { continue };
                    if !names.contains(name) {
                        entries.push((dir.join(name), regular));
                    }
                }
            }
            Err(e) if missing(&e) => {}
            Err(e) => return Err(e),
        }
        Ok(entries)
    }

    fn is_file(&self, path: &Path) -> io::Result<bool> {
        if self.written(path).is_some() {
            return Ok(true);
        }
        match self.in_base(path) {
            Some(base) => self.base_fs().is_file(&base),
            None => self.tree_fs.is_file(path),
        }
    }

    fn canonicalize(&self, path: &Path) -> io::Result<PathBuf> {
        if self.written(path).is_some() {
            return Ok(normalize(path));
        }
        match self.in_base(path) {
            Some(base) => self.base_fs().canonicalize(&base),
            None => self.tree_fs.canonicalize(path),
        }
    }

    fn read_from(&self, path: &Path) -> PathBuf {
        if self.written(path).is_some() {
            return Path::new(super::entrypoint::ENTRYPOINT_DIR).join(super::entrypoint::WRITTEN_FILE);
        }
        match self.in_base(path) {
            // written from the tree's directory (`deploy/../base/config.xml`), so that it is
            // shown relative to it like every other file (`../base/config.xml`) and a report
            // naming files from the working directory finds it
            Some(base) if self.image.is_none() => through(&self.mount.tree, &normalize(&base)).unwrap_or(base),
            Some(base) => base,
            None => path.to_path_buf(),
        }
    }
}

/// `target` written as a path from `dir` (`dir/../target`), both as given (relative to the
/// same working directory, or both absolute); `None` when that cannot be said without the file
/// system.
fn through(dir: &Path, target: &Path) -> Option<PathBuf> {
    use std::path::Component;
    if dir.is_absolute() != target.is_absolute() {
        return None;
    }
    let (dir_parts, target_parts): (Vec<_>, Vec<_>) = (dir.components().collect(), target.components().collect());
    let common = dir_parts.iter().zip(&target_parts).take_while(|(a, b)| a == b).count();
    let mut out = dir.to_path_buf();
    for part in &dir_parts[common..] {
        if !matches!(part, Component::Normal(_)) {
            return None;
        }
        out.push("..");
    }
    out.extend(&target_parts[common..]);
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tree_and_base() -> MemoryFs {
        let mut fs = MemoryFs::default();
        fs.insert("/base/config.xml", "<clickhouse><a>base</a></clickhouse>");
        fs.insert("/base/users.xml", "<clickhouse/>");
        fs.insert("/base/config.d/docker.xml", "base docker");
        fs.insert("/base/config.d/same.xml", "base same");
        fs.insert("/tree/config.d/same.xml", "tree same");
        fs.insert("/tree/config.d/own.xml", "tree own");
        fs.insert("/tree/users.d/u.xml", "tree users");
        fs
    }

    #[test]
    fn the_tree_is_mounted_file_by_file_over_the_base() {
        let fs = tree_and_base();
        let overlay = Overlay::new(&fs, Path::new("/tree"), &Base::Dir("/base".into()));
        assert_eq!(overlay.read(Path::new("/tree/config.xml")).unwrap(), b"<clickhouse><a>base</a></clickhouse>");
        assert_eq!(overlay.read_from(Path::new("/tree/config.xml")), Path::new("/tree/../base/config.xml"));
        assert_eq!(overlay.read(Path::new("/tree/config.d/same.xml")).unwrap(), b"tree same");
        assert_eq!(overlay.read_from(Path::new("/tree/config.d/same.xml")), Path::new("/tree/config.d/same.xml"));
        let mut listed = overlay.read_dir(Path::new("/tree/config.d")).unwrap();
        listed.sort();
        let names: Vec<_> = listed.iter().map(|(p, _)| p.display().to_string()).collect();
        assert_eq!(names, ["/tree/config.d/docker.xml", "/tree/config.d/own.xml", "/tree/config.d/same.xml"]);
        // a directory only the tree has, or only the base
        assert_eq!(overlay.read_dir(Path::new("/tree/users.d")).unwrap().len(), 1);
        assert!(overlay.exists(Path::new("/tree/users.xml")));
        assert_eq!(overlay.read_dir(Path::new("/tree/conf.d")).unwrap_err().kind(), ErrorKind::NotFound);
        // outside the tree: as the files are
        assert!(!overlay.exists(Path::new("/elsewhere/config.xml")));
    }

    #[test]
    fn a_base_file_is_written_from_the_trees_directory() {
        let from = |dir: &str, target: &str| through(Path::new(dir), Path::new(target));
        assert_eq!(from("deploy/ch", "base/config.xml"), Some("deploy/ch/../../base/config.xml".into()));
        assert_eq!(from("", "base/config.xml"), Some("base/config.xml".into()));
        assert_eq!(from("/srv/deploy", "/srv/base/users.xml"), Some("/srv/deploy/../base/users.xml".into()));
        assert_eq!(from("deploy", "/srv/base/users.xml"), None);
        assert_eq!(from("../deploy", "base/users.xml"), None);
        assert_eq!(from("../deploy", "../base/users.xml"), Some("../deploy/../base/users.xml".into()));
    }

    #[test]
    fn the_bundled_image_is_a_base() {
        let fs = MemoryFs::default();
        let overlay = Overlay::new(&fs, Path::new("deploy"), &Base::Image);
        let main = overlay.read_from(Path::new("deploy/config.xml"));
        assert_eq!(main, Path::new(IMAGE_DIR).join("config.xml"));
        let listed = overlay.read_dir(Path::new("deploy/config.d")).unwrap();
        assert_eq!(listed, [(PathBuf::from("deploy/config.d/docker_related_config.xml"), true)]);
        let mount = overlay.mount();
        assert_eq!(mount.in_tree(&Path::new(IMAGE_DIR).join("users.xml")), Path::new("deploy/users.xml"));
        assert!(mount.is_base_file(&main) && !mount.is_base_file(Path::new("deploy/config.d/a.xml")));
    }

    #[test]
    fn the_servers_directory_is_read_through_the_tree_unless_a_root_maps_it() {
        let options = LoadOptions::for_fixture(Path::new("/none"));
        let mounted = mounted_options(&options, Path::new("deploy"));
        let read = mounted.roots.map(Path::new("/etc/clickhouse-server/config.d/macros.xml")).map(|(local, _)| local);
        assert_eq!(read, Some(PathBuf::from("deploy/config.d/macros.xml")));
        let rooted = LoadOptions {
            roots: Roots::new(vec![Root::parse("/etc/clickhouse-server=elsewhere").unwrap()]),
            ..options
        };
        assert_eq!(mounted_options(&rooted, Path::new("deploy")).roots, rooted.roots);
    }

    #[test]
    fn a_tree_over_the_image_is_named_over_it_and_its_users_read_with_the_entrypoints_file() {
        let dir = tempfile::tempdir().unwrap();
        let tree = dir.path().join("deploy");
        std::fs::create_dir_all(tree.join("config.d")).unwrap();
        let options = LoadOptions { base: Some(Base::Image), ..LoadOptions::for_fixture(dir.path()) };
        let main = tree.join("config.xml");
        let loaded = crate::config::load_each(&main, &options).unwrap();
        let over = format!("{}/ over {IMAGE_DIR}/config.xml", tree.display());
        assert_eq!(loaded.target(&main), over);
        // a fragment the server refuses: the users are audited alone, with the file the
        // entrypoint writes when the tree leaves `default` as it is (local connections only)
        std::fs::write(tree.join("config.d/broken.xml"), "<clickhouse><a></clickhouse>").unwrap();
        let users_alone = crate::config::load_each(&main, &options).unwrap();
        assert!(users_alone.server_error.is_some());
        let networks = users_alone.users_root().unwrap().find("users/default/networks").unwrap();
        let written = users_alone.sources.file(networks.origin.file).display.clone();
        assert_eq!(
            written,
            format!("{}/{}", crate::config::entrypoint::ENTRYPOINT_DIR, crate::config::entrypoint::WRITTEN_FILE)
        );
        assert_eq!(users_alone.target(&main), over);
        // a main file neither the tree nor the image holds: one error, no users audited
        let missing = crate::config::load_each(&tree.join("mistyped.xml"), &options).unwrap_err();
        assert!(matches!(missing, crate::config::ConfigError::NotFound { .. }), "{missing:?}");
    }

    #[test]
    fn a_version_chaudit_does_not_hold_is_refused_naming_the_bundled_commits() {
        let refused = Base::parse("image:1.1").unwrap_err();
        assert!(refused.contains("001409ce725057e7") && refused.contains("clickhouse-server:1.1"), "{refused}");
        assert_eq!(Base::parse("image"), Ok(Base::Image));
        assert!(Base::parse("/no/such/base/dir").unwrap_err().contains("not a directory"));
    }
}
