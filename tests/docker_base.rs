//! `--base`: a tree of config.d/ and users.d/ alone, the commonest Docker layout, read as
//! mounted file by file over the official image's /etc/clickhouse-server.
//!
//! The tree is tests/docker-trees/ch-and-openldap, a public compose project's (see
//! tests/docker-trees/SOURCES): its docker-compose.yaml mounts config.d/config.xml and
//! users.d/users.xml one by one over the image's files. The base is the stock files bundled
//! into chaudit (data/image, see data/image/SOURCES). The real clickhouse-server 25.8 gets the
//! base's files with the tree's copied over them, installed at /etc/clickhouse-server
//! (scripts/engine-preprocess.py --install-at, in a private mount namespace): its
//! preprocessed config.xml and users.xml must be what `config show --base` prints, as element
//! trees (the comparison of tests/differential_engine.rs), and it must start on them.

mod support;

use std::path::{Path, PathBuf};

use chaudit::config::{Base, DefaultInclude, LoadOptions};
use support::preprocessed;

const TREE: &str = "tests/docker-trees/ch-and-openldap";

fn tree() -> PathBuf {
    support::repo_root().join(TREE)
}

/// What the container's /etc/clickhouse-server holds: the base's files, then the tree's
/// copied over them (a file mount replaces the base's file of the same name, adds the rest).
fn installed(tree: &Path, base: &Path) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let server_dir = dir.path().join("clickhouse-server");
    support::copy_tree(base, &server_dir);
    support::copy_tree(tree, &server_dir);
    dir
}

fn engine_preprocessed(server_dir: &Path) -> tempfile::TempDir {
    let expected = tempfile::tempdir().unwrap();
    let out = std::process::Command::new(support::server_engine_python())
        .arg(support::repo_root().join("scripts/engine-preprocess.py"))
        .arg(server_dir)
        .arg(expected.path())
        .args(["--install-at", "/etc/clickhouse-server"])
        .output()
        .expect("run engine-preprocess.py");
    assert!(out.status.success(), "engine-preprocess.py failed:\n{}", String::from_utf8_lossy(&out.stderr));
    expected
}

#[test]
fn a_tree_over_the_image_is_the_tree_the_engine_reads_installed() {
    let base = support::repo_root().join("data/image");
    let dir = installed(&tree(), &base);
    let expected = engine_preprocessed(&dir.path().join("clickhouse-server"));
    let log = std::fs::read_to_string(expected.path().join("log")).unwrap_or_default();
    // the engine merged the base's fragment and the tree's, and the tree's users fragment
    for merged in ["config.d/docker_related_config.xml", "config.d/config.xml"] {
        assert!(log.contains(&format!("Merging configuration file '/etc/clickhouse-server/{merged}'")), "{log}");
    }
    let users = std::fs::read_to_string(expected.path().join("users.xml")).unwrap_or_default();
    assert!(users.contains("/etc/clickhouse-server/users.d/users.xml"), "{users}\n{log}");

    // the library, over the bundled image and over a copy of the image's directory
    for base in [Base::Image, Base::Dir(base.clone())] {
        let options = LoadOptions {
            default_include_from: DefaultInclude::None,
            env: Default::default(),
            env_origin: None,
            roots: Default::default(),
            base: Some(base.clone()),
        };
        let result = preprocessed::compare("ch-and-openldap", &tree().join("config.xml"), expected.path(), &options);
        assert!(result.failures.is_empty(), "{base:?}: {}", result.failures.join("\n"));
        assert_eq!(result.files, 2, "config.xml and users.xml compared");
    }

    // the command line, from the repository, as CI runs it
    for base in ["image", "data/image"] {
        for (mode, engine) in [(&[][..], "config.xml"), (&["--users"][..], "users.xml")] {
            let out = std::process::Command::new(env!("CARGO_BIN_EXE_chaudit"))
                .current_dir(support::repo_root())
                .args(["config", "show", "--show-secrets", "--config", TREE, "--base", base])
                .args(mode)
                .output()
                .expect("run chaudit");
            assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
            let ours = preprocessed::parse_xml(String::from_utf8(out.stdout).unwrap(), "chaudit");
            let theirs =
                preprocessed::parse_xml(std::fs::read_to_string(expected.path().join(engine)).unwrap(), "engine");
            let difference = preprocessed::difference(&preprocessed::shape(&ours), &preprocessed::shape(&theirs), "");
            assert_eq!(difference, None, "--base {base} {mode:?}");
        }
    }
}

#[test]
fn the_engine_starts_on_a_tree_over_the_image() {
    let dir = installed(&tree(), &support::repo_root().join("data/image"));
    let verdict = support::engine_start(&dir.path().join("clickhouse-server"));
    assert!(verdict.started, "{verdict:?}");
}

/// Findings on the base's elements name the base's file; a fix never goes into it.
#[test]
fn findings_name_the_base_files_and_fixes_go_into_the_tree() {
    let scratch = tempfile::tempdir().unwrap();
    let tree = scratch.path().join("deploy");
    support::copy_tree(&self::tree(), &tree);
    let base = scratch.path().join("base");
    support::copy_tree(&support::repo_root().join("data/image"), &base);
    // default gets a password: its access_management=1 is then a finding of its own, whose fix
    // is a users fragment (the users config is the base's users.xml)
    let hash = "5e884898da28047151d0e56f8dc6292773603d0d6aabbdd62a11ef721d1542d8";
    std::fs::write(
        tree.join("users.d/30-default-password.xml"),
        format!(
            "<clickhouse><users><default><password remove=\"1\"/><password_sha256_hex>{hash}</password_sha256_hex>\
             </default></users></clickhouse>"
        ),
    )
    .unwrap();
    let before = support::files_under(&base, &|_| true);
    let rules = "default-user-access-management,query-log-without-ttl";
    let (code, stdout, stderr) =
        support::chaudit(scratch.path(), &["fix", "--config", "deploy", "--base", "base", "--select", rules]);
    assert!(stdout.contains("users.d/zz-chaudit-fix.xml"), "{stdout}\n{stderr}");
    assert!(code == 0 || code == 1, "{code}\n{stdout}\n{stderr}");
    // the base is as it was: no file added, none changed
    assert_eq!(support::files_under(&base, &|_| true), before);
    for file in &before {
        let original = support::repo_root().join("data/image").join(file.strip_prefix(&base).unwrap());
        assert_eq!(std::fs::read(file).unwrap(), std::fs::read(original).unwrap(), "{}", file.display());
    }
    // the server fix (query_log lives only in the base's config.xml) and the users fix went
    // into the tree's fragment directories
    let written = support::files_under(&tree, &|_| true);
    assert!(
        written.iter().any(|f| f.starts_with(tree.join("config.d")) && f.to_string_lossy().contains("chaudit-fix"))
    );
    assert!(written.iter().any(|f| f.starts_with(tree.join("users.d")) && f.to_string_lossy().contains("chaudit-fix")));

    let (_, report, _) =
        support::chaudit(scratch.path(), &["--config", "deploy", "--base", "image", "--format", "json"]);
    let report: serde_json::Value = serde_json::from_str(&report).unwrap();
    let files: Vec<&str> =
        report["findings"].as_array().unwrap().iter().filter_map(|f| f["location"]["file"].as_str()).collect();
    assert!(files.iter().any(|f| f.starts_with("(clickhouse-server image)/config.xml")), "{files:?}");
}

/// chaudit on the public tree over the bundled image: exactly the recorded findings, each
/// rule with the reason its findings are true there (tests/docker-trees/REAL-WORLD.json).
#[test]
fn every_finding_on_a_public_docker_tree_is_recorded_true() {
    let path = support::repo_root().join("tests/docker-trees/REAL-WORLD.json");
    let record: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let reasons = record["reasons"].as_object().unwrap();
    for (name, case) in record["cases"].as_object().unwrap() {
        let tree = format!("tests/docker-trees/{name}");
        let base = case["base"].as_str().unwrap();
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_chaudit"))
            .current_dir(support::repo_root())
            .args(["--config", &tree, "--base", base, "--format", "json"])
            // the compose file's `environment:` for the container, where it sets one
            .args(case["env_file"].as_str().map(|file| ["--env-file", file]).into_iter().flatten())
            .env_clear()
            .output()
            .expect("run chaudit");
        assert_eq!(out.status.code(), case["exit_status"].as_i64().map(|c| c as i32), "{name}");
        let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        let found: std::collections::BTreeSet<String> = report["findings"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| {
                let at = &f["location"];
                format!("{} {}:{}", f["rule_id"].as_str().unwrap(), at["file"].as_str().unwrap(), at["line"])
            })
            .collect();
        let recorded: std::collections::BTreeSet<String> =
            case["findings"].as_array().unwrap().iter().map(|f| f.as_str().unwrap().to_string()).collect();
        assert_eq!(found, recorded, "{name}: a new finding must be judged and recorded");
        for rule in found.iter().map(|f| f.split(' ').next().unwrap()) {
            assert!(reasons.contains_key(rule), "{name}: {rule} has no recorded reason");
        }
    }
}

/// The file the image's entrypoint writes into users.d/ before the server starts, as its
/// script writes it (ClickHouse's docker/server/entrypoint.sh, `manage_clickhouse_user`), for
/// the container's environment; `None` where it writes none.
fn entrypoint_file(env: &[(&str, &str)]) -> Option<String> {
    let get = |name: &str| env.iter().find(|(k, _)| *k == name).map(|(_, v)| *v).filter(|v| !v.is_empty());
    if get("CLICKHOUSE_SKIP_USER_SETUP") == Some("1") {
        return None;
    }
    let user = get("CLICKHOUSE_USER").unwrap_or("default");
    let password = get("CLICKHOUSE_PASSWORD").unwrap_or("");
    if user != "default" || !password.is_empty() {
        return Some(format!(
            "<clickhouse>\n  <users>\n    <default remove=\"remove\">\n    </default>\n\n    <{user}>\n      \
             <profile>default</profile>\n      <networks>\n        <ip>::/0</ip>\n      </networks>\n      \
             <password><![CDATA[{password}]]></password>\n      <quota>default</quota>\n      \
             <access_management>0</access_management>\n    </{user}>\n  </users>\n</clickhouse>\n"
        ));
    }
    // (the tree below leaves the default user as the image has it)
    Some(
        "<clickhouse>\n  <users>\n    <default>\n      <networks>\n        <ip>::1</ip>\n        \
         <ip>127.0.0.1</ip>\n      </networks>\n    </default>\n  </users>\n</clickhouse>\n"
            .into(),
    )
}

/// `dir/deploy`: a tree of one config.d fragment, which leaves the default user as the
/// image has it.
fn default_left_alone(dir: &Path) -> PathBuf {
    let tree = dir.join("deploy");
    std::fs::create_dir_all(tree.join("config.d")).unwrap();
    std::fs::write(
        tree.join("config.d/logger.xml"),
        "<clickhouse><logger><level>warning</level></logger></clickhouse>",
    )
    .unwrap();
    tree
}

/// A tree that leaves the default user alone, in the three environments the entrypoint tells
/// apart: the real clickhouse-server 25.8, given the image's files, the tree's and the file
/// the entrypoint writes, merges the users as `config show --base image --env ...` prints
/// them, and starts; `default-user-open` holds only where the entrypoint leaves the image's
/// default user open to every network.
#[test]
fn the_entrypoints_user_setup_is_read_with_the_containers_environment() {
    let scratch = tempfile::tempdir().unwrap();
    let tree = default_left_alone(scratch.path());
    let cases: [(&[(&str, &str)], bool); 3] = [
        (&[], false),
        (&[("CLICKHOUSE_SKIP_USER_SETUP", "1")], true),
        (&[("CLICKHOUSE_USER", "app"), ("CLICKHOUSE_PASSWORD", "s3cret")], false),
    ];
    for (env, open) in cases {
        let dir = installed(&tree, &support::repo_root().join("data/image"));
        let server_dir = dir.path().join("clickhouse-server");
        if let Some(text) = entrypoint_file(env) {
            // the image has the directory, empty
            std::fs::create_dir_all(server_dir.join("users.d")).unwrap();
            std::fs::write(server_dir.join("users.d/default-user.xml"), text).unwrap();
        }
        let expected = engine_preprocessed(&server_dir);
        let env_args: Vec<String> = env.iter().flat_map(|(k, v)| ["--env".to_string(), format!("{k}={v}")]).collect();
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_chaudit"))
            .current_dir(scratch.path())
            .args(["config", "show", "--users", "--show-secrets", "--config", "deploy", "--base", "image"])
            .args(&env_args)
            .output()
            .expect("run chaudit");
        assert!(out.status.success(), "{env:?}: {}", String::from_utf8_lossy(&out.stderr));
        let ours = preprocessed::parse_xml(String::from_utf8(out.stdout).unwrap(), "chaudit");
        let theirs =
            preprocessed::parse_xml(std::fs::read_to_string(expected.path().join("users.xml")).unwrap(), "engine");
        let difference = preprocessed::difference(&preprocessed::shape(&ours), &preprocessed::shape(&theirs), "");
        assert_eq!(difference, None, "{env:?}");
        let verdict = support::engine_start(&server_dir);
        assert!(verdict.started, "{env:?}: {verdict:?}");

        let mut args = vec!["--config", "deploy", "--base", "image", "--format", "json"];
        args.extend(env_args.iter().map(String::as_str));
        let (_, report, stderr) = support::chaudit(scratch.path(), &args);
        let report: serde_json::Value = serde_json::from_str(&report).unwrap_or_else(|e| panic!("{e}: {stderr}"));
        let rules: Vec<&str> =
            report["findings"].as_array().unwrap().iter().filter_map(|f| f["rule_id"].as_str()).collect();
        assert_eq!(rules.contains(&"default-user-open"), open, "{env:?}: {rules:?}");
        // the report says the entrypoint's file overrides the mounted ones, whenever one is
        // written and a selected rule reads the users
        let said =
            |report: &serde_json::Value| {
                report["warnings"].as_array().into_iter().flatten().any(|w| {
                    w.as_str().is_some_and(|w| w.starts_with("read with the file the image's entrypoint writes"))
                })
            };
        assert_eq!(said(&report), entrypoint_file(env).is_some(), "{env:?}: {}", report["warnings"]);
        args.extend(["--select", "logger-level-test"]);
        let (_, unrelated, stderr) = support::chaudit(scratch.path(), &args);
        let unrelated: serde_json::Value = serde_json::from_str(&unrelated).unwrap_or_else(|e| panic!("{e}: {stderr}"));
        assert!(!said(&unrelated), "{env:?}: {}", unrelated["warnings"]);
        assert!(!report.to_string().contains("s3cret"), "a password from the environment is never printed");
    }
}

/// A users fix over the image, whose entrypoint keeps an unchanged `default` to the container:
/// the fix's users.d file changes `default`, so the entrypoint writes no file at the next
/// start, and the fix keeps `default` to the container itself. The re-audit brings nothing
/// new; the engine, given the image's files and the fixed tree, merges the users as `config
/// show --users --base image` prints them, keeps `default` to ::1 and 127.0.0.1, and starts.
#[test]
fn a_users_fix_over_the_image_keeps_the_entrypoints_default_in_the_container() {
    let scratch = tempfile::tempdir().unwrap();
    let tree = default_left_alone(scratch.path());
    let rule = "default-user-access-management";
    let (code, stdout, stderr) =
        support::chaudit(scratch.path(), &["fix", "--config", "deploy", "--base", "image", "--select", rule]);
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    assert!(stdout.contains("every fixed finding is gone"), "{stdout}");
    assert!(!stdout.contains("new after the fix"), "{stdout}");

    let dir = installed(&tree, &support::repo_root().join("data/image"));
    let server_dir = dir.path().join("clickhouse-server");
    let expected = engine_preprocessed(&server_dir);
    let users = std::fs::read_to_string(expected.path().join("users.xml")).unwrap();
    let elements: String = users
        .split("<!--")
        .enumerate()
        .map(|(i, part)| if i == 0 { part } else { part.split_once("-->").map_or("", |(_, rest)| rest) })
        .collect();
    assert!(elements.contains("<ip>127.0.0.1</ip>") && elements.contains("<ip>::1</ip>"), "{elements}");
    assert!(!elements.contains("::/0"), "{elements}");
    let (_, shown, stderr) = support::chaudit(
        scratch.path(),
        &["config", "show", "--users", "--show-secrets", "--config", "deploy", "--base", "image"],
    );
    let ours = preprocessed::parse_xml(shown, "chaudit");
    let theirs = preprocessed::parse_xml(users, "engine");
    let difference = preprocessed::difference(&preprocessed::shape(&ours), &preprocessed::shape(&theirs), "");
    assert_eq!(difference, None, "{stderr}");
    let verdict = support::engine_start(&server_dir);
    assert!(verdict.started, "{verdict:?}");

    let (_, report, stderr) =
        support::chaudit(scratch.path(), &["--config", "deploy", "--base", "image", "--format", "json"]);
    let report: serde_json::Value = serde_json::from_str(&report).unwrap_or_else(|e| panic!("{e}: {stderr}"));
    for rule in [rule, "default-user-open"] {
        assert!(support::report_entry(&report, "findings", rule).is_none(), "{rule}: {report:#}");
    }
}
