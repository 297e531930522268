//! What the official image's entrypoint writes before the server starts: on every start it
//! sets up the `default` user from the container's environment, writing
//! /etc/clickhouse-server/users.d/default-user.xml (ClickHouse's docker/server/entrypoint.sh,
//! `manage_clickhouse_user`, in the images since 25.1.3):
//! - `CLICKHOUSE_SKIP_USER_SETUP=1`: nothing;
//! - `CLICKHOUSE_USER` other than `default`, a `CLICKHOUSE_PASSWORD` (or
//!   `CLICKHOUSE_PASSWORD_FILE`), or `CLICKHOUSE_DEFAULT_ACCESS_MANAGEMENT` other than 0:
//!   `default` removed, that user created, open to every network with that password;
//! - the mounted files changed the `default` user: nothing;
//! - otherwise `default` may connect from the container itself only (::1, 127.0.0.1).
//!
//! Under `--base` the tree is read with that file, from the environment `from_env` reads
//! (`--env`, `--env-file`, or chaudit's own).

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use super::fs::ConfigFs;
use super::tree::{Element, Node};
use super::{LoadOptions, LoadedConfig, SourceMap, UsersSource, process, users_config_path};

/// How the file is shown: findings on the elements it sets name it under this.
pub const ENTRYPOINT_DIR: &str = "(clickhouse-server entrypoint)";

/// Where the entrypoint writes, from the server's directory (the tree mounted over the base).
pub const WRITTEN_FILE: &str = "users.d/default-user.xml";

/// What the entrypoint does to the `default` user.
#[derive(Debug, Clone, PartialEq, Eq)]
enum UserSetup {
    /// Nothing: skipped, or the mounted files take care of the user.
    Nothing,
    /// `default` removed; this user created, reachable from every network.
    Create { user: String, password: String, access_management: String },
    /// `default` reachable from the container itself only.
    LocalOnly,
}

/// The entrypoint's choice for `env`; `default_changed` is asked only when it matters.
fn user_setup(env: &HashMap<String, String>, default_changed: impl FnOnce() -> bool) -> UserSetup {
    // the script's `${VAR:-default}`: unset and empty are the same
    let var = |name: &str, default: &str| env.get(name).filter(|v| !v.is_empty()).cloned().unwrap_or(default.into());
    if var("CLICKHOUSE_SKIP_USER_SETUP", "0") == "1" {
        return UserSetup::Nothing;
    }
    let user = var("CLICKHOUSE_USER", "default");
    // a password file is read inside the container: chaudit cannot, it stands for a password
    let password = match env.get("CLICKHOUSE_PASSWORD_FILE").filter(|v| !v.is_empty()) {
        Some(file) => format!("(the contents of {file})"),
        None => var("CLICKHOUSE_PASSWORD", ""),
    };
    let access_management = var("CLICKHOUSE_DEFAULT_ACCESS_MANAGEMENT", "0");
    if user != "default" || !password.is_empty() || access_management != "0" {
        return UserSetup::Create { user, password, access_management };
    }
    if default_changed() { UserSetup::Nothing } else { UserSetup::LocalOnly }
}

/// The file the entrypoint writes for `setup`, as it writes it (the password in CDATA).
fn written_text(setup: &UserSetup) -> Option<String> {
    match setup {
        UserSetup::Nothing => None,
        UserSetup::Create { user, password, access_management } => Some(format!(
            "<clickhouse>\n  <users>\n    <default remove=\"remove\">\n    </default>\n\n    <{user}>\n      \
             <profile>default</profile>\n      <networks>\n        <ip>::/0</ip>\n      </networks>\n      \
             <password><![CDATA[{}]]></password>\n      <quota>default</quota>\n      \
             <access_management>{access_management}</access_management>\n    </{user}>\n  </users>\n</clickhouse>\n",
            password.replace("]]>", "]]]]><![CDATA[>")
        )),
        UserSetup::LocalOnly => Some(
            "<clickhouse>\n  <users>\n    <default>\n      <networks>\n        <ip>::1</ip>\n        \
             <ip>127.0.0.1</ip>\n      </networks>\n    </default>\n  </users>\n</clickhouse>\n"
                .into(),
        ),
    }
}

/// The file the entrypoint writes over the tree `loaded` (read through `fs` without it), its
/// path in the tree and its text; `None` when it writes none.
pub(super) fn written_file(
    fs: &dyn ConfigFs,
    main: &Path,
    options: &LoadOptions,
    loaded: &LoadedConfig,
) -> Option<(PathBuf, String)> {
    let users = loaded.users.as_ref()?;
    let users_path = || {
        let mut scratch = Vec::new();
        match users_config_path(fs, &loaded.server.root, main, &options.roots, &loaded.sources, &mut scratch) {
            UsersSource::File(path) => Some(path),
            _ => None,
        }
    };
    written_over_users(fs, main, options, users_path, &users.root)
}

/// The file the entrypoint writes over the users config `users_path` gives (merged: `users`).
pub(super) fn written_over_users(
    fs: &dyn ConfigFs,
    main: &Path,
    options: &LoadOptions,
    users_path: impl FnOnce() -> Option<PathBuf>,
    users: &Element,
) -> Option<(PathBuf, String)> {
    let tree = main.parent().unwrap_or(Path::new(""));
    let setup = user_setup(&options.env, || {
        // the script compares `users.default` of the users file alone with the merged one
        let Some(path) = users_path() else { return true };
        let mut scratch = Vec::new();
        let mut sources = SourceMap::new(tree.to_path_buf());
        let Ok(alone) = process(&WithoutFragments(fs), &path, options, &mut sources, &mut scratch) else {
            return true;
        };
        let default = |root: &Element| root.find("users/default").cloned();
        match (default(&alone.root), default(users)) {
            (Some(before), Some(after)) => !same_content(&before, &after),
            (before, after) => before.is_some() != after.is_some(),
        }
    });
    written_text(&setup).map(|text| (tree.join(WRITTEN_FILE), text))
}

/// What the entrypoint's file did to the users, when the tree was read with one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WrittenSetup {
    /// `default` kept to the container (::1, 127.0.0.1): the mounted files leave it as
    /// users.xml has it. A users.d file that changes it ends this at the next start.
    LocalDefault,
    /// `default` replaced by CLICKHOUSE_USER, open to every network.
    NewUser,
}

/// What the entrypoint's file did, when the tree `loaded` was read with it.
pub fn written_setup(loaded: &LoadedConfig) -> Option<WrittenSetup> {
    let written = Path::new(ENTRYPOINT_DIR).join(WRITTEN_FILE);
    loaded.sources.files().find(|(_, file)| file.path == written)?;
    Some(match loaded.users_root().and_then(|users| users.find("users/default")) {
        Some(_) => WrittenSetup::LocalDefault,
        None => WrittenSetup::NewUser,
    })
}

/// What the entrypoint did to the users, when the tree `loaded` was read with its file: said
/// in the report, since it overrides what the mounted files say.
pub fn note(loaded: &LoadedConfig) -> Option<String> {
    let what = match written_setup(loaded)? {
        WrittenSetup::LocalDefault => {
            "the mounted files leave the `default` user as users.xml has it, so it may connect from the container \
             itself only (::1, 127.0.0.1), whatever networks users.xml gives it; a users.d file that changes it \
             (a fix of chaudit's included) ends this, and must keep it to the container itself"
        }
        WrittenSetup::NewUser => {
            "CLICKHOUSE_USER/CLICKHOUSE_PASSWORD replace the `default` user by that user, open to every network"
        }
    };
    Some(format!(
        "read with the file the image's entrypoint writes at start from the container's environment \
         ({ENTRYPOINT_DIR}/{WRITTEN_FILE}): {what}. Images before 25.1.3 write none: audit them with \
         --env CLICKHOUSE_SKIP_USER_SETUP=1"
    ))
}

/// Whether two elements say the same: names, attributes, text and children, wherever written.
fn same_content(a: &Element, b: &Element) -> bool {
    let texts = |e: &Element| -> Vec<String> {
        e.children
            .iter()
            .filter_map(|n| match n {
                Node::Text(t) if !t.is_whitespace() => Some(t.value().to_string()),
                _ => None,
            })
            .collect()
    };
    a.name == b.name
        && a.attributes == b.attributes
        && texts(a) == texts(b)
        && a.elements().count() == b.elements().count()
        && a.elements().zip(b.elements()).all(|(x, y)| same_content(x, y))
}

/// A file system whose directories hold nothing: a file processed alone, as the script's
/// copy of the users file in /tmp is, beside no `users.d/`.
#[derive(Debug)]
struct WithoutFragments<'a>(&'a dyn ConfigFs);

impl ConfigFs for WithoutFragments<'_> {
    fn read(&self, path: &Path) -> std::io::Result<Vec<u8>> {
        self.0.read(path)
    }

    fn read_dir(&self, _dir: &Path) -> std::io::Result<Vec<(PathBuf, bool)>> {
        Err(std::io::ErrorKind::NotFound.into())
    }

    fn is_file(&self, path: &Path) -> std::io::Result<bool> {
        self.0.is_file(path)
    }

    fn canonicalize(&self, path: &Path) -> std::io::Result<PathBuf> {
        self.0.canonicalize(path)
    }

    fn read_from(&self, path: &Path) -> PathBuf {
        self.0.read_from(path)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(pairs: &[(&str, &str)]) -> HashMap<String, String> {
        pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
    }

    #[test]
    fn the_entrypoint_chooses_as_its_script_does() {
        let unchanged = || false;
        assert_eq!(user_setup(&env(&[]), unchanged), UserSetup::LocalOnly);
        assert_eq!(user_setup(&env(&[]), || true), UserSetup::Nothing);
        assert_eq!(user_setup(&env(&[("CLICKHOUSE_SKIP_USER_SETUP", "1")]), unchanged), UserSetup::Nothing);
        // `default` with no password is no user of its own
        assert_eq!(
            user_setup(&env(&[("CLICKHOUSE_USER", "default"), ("CLICKHOUSE_PASSWORD", "")]), unchanged),
            UserSetup::LocalOnly
        );
        let created = user_setup(&env(&[("CLICKHOUSE_USER", "app"), ("CLICKHOUSE_PASSWORD", "pw")]), || unreachable!());
        let expected = UserSetup::Create { user: "app".into(), password: "pw".into(), access_management: "0".into() };
        assert_eq!(created, expected);
        let managing = user_setup(&env(&[("CLICKHOUSE_DEFAULT_ACCESS_MANAGEMENT", "1")]), unchanged);
        assert!(matches!(managing, UserSetup::Create { ref user, .. } if user == "default"));
        let from_file = user_setup(&env(&[("CLICKHOUSE_PASSWORD_FILE", "/run/secrets/pw")]), unchanged);
        assert!(matches!(from_file, UserSetup::Create { ref password, .. } if password.contains("/run/secrets/pw")));
    }

    #[test]
    fn a_password_closing_its_cdata_is_split_as_the_script_splits_it() {
        let setup = UserSetup::Create { user: "u".into(), password: "a]]>b".into(), access_management: "0".into() };
        let text = written_text(&setup).unwrap();
        assert!(text.contains("<password><![CDATA[a]]]]><![CDATA[>b]]></password>"), "{text}");
    }
}
