//! `--root SERVER_DIR=DIR`: a checked-out tree standing for the server's directories. A config
//! names files by the absolute paths they have on the server (`<include_from>`,
//! `<users_config>`, `user_directories/users_xml/path`, the default /etc/metrika.xml); under a
//! root those paths are read from the checkout instead.

use std::path::{Path, PathBuf};

use super::fs::ConfigFs;

/// One mapping: files under `server` (absolute) are read from `local`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Root {
    pub server: PathBuf,
    pub local: PathBuf,
}

impl Root {
    /// `SERVER_DIR=DIR`, as `--root` takes it.
    pub fn parse(value: &str) -> Result<Root, String> {
        let example = "e.g. --root /etc/clickhouse-server=./deploy/clickhouse";
        let Some((server, local)) = value.split_once('=') else {
            return Err(format!(
                "`{value}` has no `=`: --root is SERVER_DIR=DIR, the server's directory and the checkout that holds \
                 its files ({example})"
            ));
        };
        let (server, local) = (Path::new(server.trim()), Path::new(local.trim()));
        if !server.is_absolute() {
            return Err(format!(
                "`{}` is not an absolute path: --root maps the absolute paths a config names on the server \
                 ({example})",
                server.display()
            ));
        }
        if local.as_os_str().is_empty() {
            return Err(format!("`{value}` names no directory after `=` ({example})"));
        }
        Ok(Root { server: super::fs::normalize(server), local: local.to_path_buf() })
    }
}

/// Every `--root` given. The longest server directory that holds a path wins.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Roots(Vec<Root>);

impl Roots {
    pub fn new(roots: Vec<Root>) -> Roots {
        Roots(roots)
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub fn iter(&self) -> impl Iterator<Item = &Root> {
        self.0.iter()
    }

    /// Where the server's absolute `path` is read from, and the root that maps it; `None` for
    /// a relative path or one no root holds.
    pub fn map(&self, path: &Path) -> Option<(PathBuf, &Root)> {
        if !path.is_absolute() {
            return None;
        }
        let path = super::fs::normalize(path);
        let root =
            self.0.iter().filter(|r| path.starts_with(&r.server)).max_by_key(|r| r.server.components().count())?;
        let rest = path.strip_prefix(&root.server).ok()?;
        let local = if rest.as_os_str().is_empty() { root.local.clone() } else { root.local.join(rest) };
        Some((local, root))
    }

    /// The roots with each checkout directory written under `base_dir` (the main config's
    /// directory) when it is that directory or below it, so the files read through a root are
    /// shown relative to it like every other file of the tree (`--root
    /// /etc/clickhouse-server=$PWD/deploy` with `--config deploy/config.xml`).
    pub fn under(&self, fs: &dyn ConfigFs, base_dir: &Path) -> Roots {
        let base = fs.canonicalize(if base_dir.as_os_str().is_empty() { Path::new(".") } else { base_dir });
        let roots = self.0.iter().map(|root| {
            let local = match (&base, fs.canonicalize(&root.local)) {
                (Ok(base), Ok(local)) => match local.strip_prefix(base) {
                    Ok(rest) if rest.as_os_str().is_empty() => base_dir.to_path_buf(),
                    Ok(rest) => base_dir.join(rest),
                    Err(_) => root.local.clone(),
                },
                _ => root.local.clone(),
            };
            Root { server: root.server.clone(), local }
        });
        Roots(roots.collect())
    }
}

/// How a message names where a server path was read: ` (read as deploy/x.xml, --root
/// /etc/clickhouse-server=deploy)`.
pub fn read_as(local: &Path, root: &Root) -> String {
    format!(" (read as {}, --root {}={})", local.display(), root.server.display(), root.local.display())
}

/// What to suggest for an absolute path that is not there: the server directory to map.
pub fn suggestion(path: &Path) -> Option<String> {
    if !path.is_absolute() {
        return None;
    }
    let dir = if path.starts_with(super::INSTALLED_CONFIG_DIR) {
        PathBuf::from(super::INSTALLED_CONFIG_DIR)
    } else {
        path.parent()?.to_path_buf()
    };
    Some(format!(
        "a checked-out tree? Map the server's directory onto the checkout that holds its files: --root {}=DIR",
        dir.display()
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_longest_server_directory_wins() {
        let roots = Roots::new(vec![
            Root::parse("/etc/clickhouse-server=deploy").unwrap(),
            Root::parse("/etc/clickhouse-server/users.d=shared/users").unwrap(),
            Root::parse("/etc/metrika.xml=deploy/metrika.xml").unwrap(),
        ]);
        let local = |p: &str| roots.map(Path::new(p)).map(|(l, _)| l);
        assert_eq!(local("/etc/clickhouse-server/config.d/macros.xml"), Some("deploy/config.d/macros.xml".into()));
        assert_eq!(local("/etc/clickhouse-server/users.d/a.xml"), Some("shared/users/a.xml".into()));
        assert_eq!(local("/etc/clickhouse-server/./x/../users.xml"), Some("deploy/users.xml".into()));
        assert_eq!(local("/etc/metrika.xml"), Some("deploy/metrika.xml".into()));
        // component by component: /etc/clickhouse-server-2 is not under /etc/clickhouse-server
        assert_eq!(local("/etc/clickhouse-server-2/users.xml"), None);
        assert_eq!(local("users.xml"), None);
    }

    #[test]
    fn a_value_must_be_an_absolute_server_dir_and_a_dir() {
        assert!(Root::parse("/etc/clickhouse-server").unwrap_err().contains("SERVER_DIR=DIR"));
        assert!(Root::parse("etc/clickhouse-server=deploy").unwrap_err().contains("not an absolute path"));
        assert!(Root::parse("/etc/clickhouse-server=").unwrap_err().contains("no directory"));
        assert_eq!(
            Root::parse("/etc/clickhouse-server/=./deploy").unwrap(),
            Root { server: "/etc/clickhouse-server".into(), local: "./deploy".into() }
        );
    }

    #[test]
    fn a_checkout_below_the_main_config_is_written_under_its_directory() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("deploy/config.d")).unwrap();
        let absolute = dir.path().join("deploy").canonicalize().unwrap();
        let roots = Roots::new(vec![
            Root { server: "/etc/clickhouse-server".into(), local: absolute.clone() },
            Root { server: "/etc/a".into(), local: absolute.join("config.d") },
            Root { server: "/etc/b".into(), local: "/nowhere".into() },
        ]);
        let under = roots.under(&crate::config::RealFs, Path::new("rel/deploy"));
        // rel/deploy does not exist from here: nothing is rewritten
        assert_eq!(under, roots);
        let under = roots.under(&crate::config::RealFs, &dir.path().join("deploy/config.d/.."));
        let locals: Vec<_> = under.iter().map(|r| r.local.clone()).collect();
        let base = dir.path().join("deploy/config.d/..");
        assert_eq!(locals, [base.clone(), base.join("config.d"), PathBuf::from("/nowhere")]);
    }
}
