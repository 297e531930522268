//! Kubernetes manifests: an Altinity ClickHouseInstallation, or a ClickHouseCluster of
//! ClickHouse's own operator, read as the config files the operator generates, audited by
//! every offline rule, each finding at the manifest's line. The examples are the operators'
//! own (tests/manifests/SOURCE.md).

mod support;

use std::path::Path;

use chaudit::config::{self, Element, LoadOptions};
use serde_json::Value;
use support::manifest::{apply, documents, write_manifest};

fn audit(manifest: &str) -> (i32, Value, String) {
    let dir = support::repo_root().join("tests/manifests");
    let (code, stdout, stderr) = support::chaudit(&dir, &["--config", manifest, "--format", "json"]);
    let json = serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("{manifest}: exit {code}, {e}: {stderr}"));
    (code, json, stderr)
}

fn findings(report: &Value) -> Vec<(String, String, u64)> {
    report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            let at = &f["location"];
            (
                f["rule_id"].as_str().unwrap().to_string(),
                at["file"].as_str().unwrap_or("").to_string(),
                at["line"].as_u64().unwrap_or(0),
            )
        })
        .collect()
}

const EXAMPLES: [&str; 6] = [
    "01-simple-layout-02-1shard-2repl.yaml",
    "04-replication-zookeeper-02-detailed.yaml",
    "05-settings-01-overview.yaml",
    "21-secure-cluster-secret-02-plaintext.yaml",
    "50-CHIT-01-manual-template-simple.yaml",
    "99-clickhouseinstallation-max.yaml",
];

/// The operator's examples audit cleanly: no finding about the manifest's own keys
/// (apiVersion, kind, metadata, spec: they were reported as unknown server settings), no
/// error, and every finding is at a line of the manifest or of the operator's own files.
#[test]
fn the_operators_examples_audit_as_the_configs_it_generates() {
    for manifest in EXAMPLES {
        let (code, report, stderr) = audit(manifest);
        assert!(code == 0 || code == 1, "{manifest}: exit {code}: {stderr}");
        assert!(report.get("errors").is_none(), "{manifest}: {}", report["errors"]);
        let text = report["findings"].to_string();
        for key in ["apiVersion", "<kind>", "<spec>", "<metadata>"] {
            assert!(!text.contains(key), "{manifest}: a finding about the manifest's own {key}: {text}");
        }
        for (rule, file, line) in findings(&report) {
            assert!(file == manifest && line > 0, "{manifest}: {rule} at {file}:{line}");
        }
    }
}

/// Settings, users, per-cluster settings, Secret references and files given inline, each
/// finding at the line of the manifest that set it; a file ClickHouse would not read from
/// config.d (notes.txt) is not read.
#[test]
fn findings_point_at_the_manifest_lines() {
    let (code, report, _) = audit("mistakes.yaml");
    assert_eq!(code, 1);
    let mut found = findings(&report);
    found.sort();
    let at = |rule: &str, line: u64| (rule.to_string(), "mistakes.yaml".to_string(), line);
    assert_eq!(
        found,
        [
            // the installation's cluster has no `secret` (the operator writes none unless given)
            at("cluster-without-secret", 45),
            // two replicas and no `zookeeper` in the spec: the operator writes the replica macro
            // and no <zookeeper>, so no replicated table can be created
            at("keeper-missing-for-replicas", 45),
            at("logger-level-test", 47),
            at("plaintext-password", 34),
            at("query-setting-at-server-root", 17),
            at("system-log-without-ttl", 25),
            at("unknown-server-setting", 19),
        ]
    );
    // a file given inline is parsed where it stands: its finding has the manifest's column too
    let ttl = report["findings"].as_array().unwrap().iter().find(|f| f["rule_id"] == "system-log-without-ttl").unwrap();
    assert_eq!(ttl["location"]["column"], 13);
    // the Secret's value reached the user through from_env, never printed
    assert!(!report.to_string().contains("s3cr3t-from-secret"));
    // the example whose users the operator hashes: only the Secret passed by environment
    // stays a plain-text password
    let (_, report, _) = audit("05-settings-01-overview.yaml");
    assert_eq!(findings(&report), [("plaintext-password".to_string(), "05-settings-01-overview.yaml".to_string(), 55)]);
}

fn users_of(manifest: &str) -> Element {
    let path = support::repo_root().join("tests/manifests").join(manifest);
    let loaded = config::load(&path, &LoadOptions::for_fixture(path.parent().unwrap())).unwrap();
    loaded.users.expect("a users tree").root
}

/// The operator's normalizer: a plain password stored as its SHA256, the profile, quota and
/// networks it adds, the Secret's value through the variable it sets on the pod.
#[test]
fn users_are_normalized_as_the_operator_does() {
    let users = users_of("05-settings-01-overview.yaml");
    let test = users.find("users/test").unwrap();
    assert!(test.child("password").is_none());
    // sha256("qwerty")
    assert_eq!(
        test.child("password_sha256_hex").unwrap().value(),
        "65e84be33532fb784c48129675f9eff3a682b27168c0ea744b2cf58ee02337c5"
    );
    let ips: Vec<String> = test.find("networks").unwrap().children_named("ip").map(Element::value).collect();
    assert_eq!(ips, ["127.0.0.1/32", "192.168.74.1/24", "::1", "127.0.0.1"]);
    let default = users.find("users/default").unwrap();
    assert_eq!(default.child("quota").unwrap().value(), "default");
    assert!(default.find("networks/host_regexp").unwrap().value().starts_with("(chi-settings-01-[^.]+"));
    // a Secret in the same manifest: its stringData value, as the pod's environment has it
    let analyst = users_of("mistakes.yaml");
    let password = analyst.find("users/analyst/password").unwrap();
    assert_eq!(password.value(), "s3cr3t-from-secret");
    // the cluster's settings over the global ones, and the host's macros
    let path = support::repo_root().join("tests/manifests/mistakes.yaml");
    let server = config::load(&path, &LoadOptions::for_fixture(Path::new("tests/manifests"))).unwrap().server.root;
    assert_eq!(server.find("logger/level").unwrap().value(), "test");
    assert_eq!(server.find("macros/replica").unwrap().value(), "chi-mistakes-replicated-0-0");
    let shard = server.find("remote_servers/replicated/shard").unwrap();
    assert_eq!(shard.children_named("replica").count(), 2);
    assert_eq!(shard.child("internal_replication").unwrap().value(), "true");
}

/// A YAML file that is not a manifest is a ClickHouse YAML config as before.
#[test]
fn other_yaml_is_a_clickhouse_config() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("config.yaml"), "kind: ClickHouseInstallation-like\nmax_concurent_queries: 1\n")
        .unwrap();
    let (_, stdout, _) = support::chaudit(dir.path(), &["--config", "config.yaml", "--format", "json"]);
    assert!(stdout.contains("<max_concurent_queries> is read by no ClickHouse server code"), "{stdout}");
}

/// A layout of a hundred million hosts is an error at the cluster, not a memory bomb.
#[test]
fn a_huge_layout_is_refused_at_its_line() {
    let dir = tempfile::tempdir().unwrap();
    let manifest = "kind: ClickHouseInstallation\nmetadata: {name: big}\nspec:\n  configuration:\n    clusters:\n      - name: c\n        layout: {shardsCount: 100000000, replicasCount: 1000000}\n";
    std::fs::write(dir.path().join("chi.yaml"), manifest).unwrap();
    let (code, _, stderr) = support::chaudit(dir.path(), &["--config", "chi.yaml"]);
    assert_eq!(code, 2);
    assert!(stderr.contains("chi.yaml:6:9: the clusters have more than 10000 hosts"), "{stderr}");
}

/// Starts the real clickhouse-server 25.8 on the server and users configs rendered from the
/// manifest (the server config amended for this machine): it starts, except on
/// `mistakes.yaml`, whose query setting at the server's root stops it.
fn start_rendered(manifests: &Path, manifest: &str, amend: impl Fn(String) -> String) {
    let verdict = support::manifest::start_rendered(manifests, manifest, amend);
    if manifest == "mistakes.yaml" {
        assert!(!verdict.started, "{verdict:?}");
        assert!(verdict.errors.iter().any(|e| e.contains("max_threads")), "{verdict:?}");
    } else {
        assert!(verdict.started, "{manifest}: {verdict:?}");
    }
}

/// The rendered files are what the real clickhouse-server 25.8 accepts: each example's server
/// and users configs start it; the manifest with a query setting at the server's root (the
/// critical finding above) stops it, as the rule says.
#[test]
fn the_real_server_starts_on_the_rendered_files() {
    let manifests = support::repo_root().join("tests/manifests");
    for manifest in EXAMPLES.iter().chain(&["mistakes.yaml"]) {
        // the users config beside it, named as the image's config.xml names it
        start_rendered(&manifests, manifest, support::manifest::beside_users_xml);
    }
}

const CLICKHOUSE_OPERATOR_EXAMPLES: [&str; 5] =
    ["aws_eks_gp3.yaml", "cluster_with_ssl.yaml", "custom_configuration.yaml", "gcp_gke_ssd.yaml", "minimal.yaml"];

/// ClickHouse's operator's examples audit as the files it writes: no error, no finding about
/// the manifest's keys, every finding at a manifest line or at the operator's own file. Its
/// `default` user has no password, `GRANT ALL` and no networks unless `defaultUserPassword`
/// names one, on `listen_host ::`: critical; with a password from a Secret, no such finding.
#[test]
fn clickhouse_operator_examples_audit_as_the_files_it_writes() {
    for manifest in CLICKHOUSE_OPERATOR_EXAMPLES {
        let (code, report, stderr) = audit(&format!("clickhouse-operator/{manifest}"));
        assert!(code == 0 || code == 1, "{manifest}: exit {code}: {stderr}");
        assert!(report.get("errors").is_none(), "{manifest}: {}", report["errors"]);
        let found = findings(&report);
        for (rule, file, line) in &found {
            assert!(file.starts_with("(clickhouse-operator)/") && *line > 0, "{manifest}: {rule} at {file}:{line}");
        }
        let open = found.iter().any(|(rule, ..)| rule == "default-user-open");
        let has_password =
            std::fs::read_to_string(support::repo_root().join("tests/manifests/clickhouse-operator").join(manifest))
                .unwrap()
                .contains("defaultUserPassword");
        assert_eq!(open, !has_password, "{manifest}: {found:?}");
    }
}

/// `extraConfig` and `extraUsersConfig` at their manifest lines; a default password from a
/// Secret the manifest does not hold stands in as a well-formed hash (no false refusal); a
/// file with other kinds only is an error naming them.
#[test]
fn clickhouse_cluster_findings_point_at_the_manifest_lines() {
    let (code, report, _) = audit("clickhouse-operator/mistakes.yaml");
    assert_eq!(code, 1);
    let mut found: Vec<_> =
        findings(&report).into_iter().filter(|(_, file, _)| file.ends_with("mistakes.yaml")).collect();
    found.sort();
    let at = |rule: &str, line: u64| (rule.to_string(), "mistakes.yaml".to_string(), line);
    assert_eq!(
        found,
        [at("logger-level-test", 28), at("passwordless-user-open", 32), at("query-setting-at-server-root", 26)]
    );
    assert!(findings(&report).iter().all(|(rule, ..)| rule != "user-password-hash-invalid"), "{report:#}");

    let path = support::repo_root().join("tests/manifests/clickhouse-operator/mistakes.yaml");
    let server = config::load(&path, &LoadOptions::for_fixture(path.parent().unwrap())).unwrap().server.root;
    assert_eq!(server.find("remote_servers/default/shard").map(|s| s.name.clone()), Some("shard".into()));
    assert!(server.find("macros/shard").is_some_and(|s| s.value() == "0"));
    assert!(
        server
            .find("zookeeper/nodes/host")
            .unwrap()
            .value()
            .starts_with("shop-keeper-0-0.shop-keeper-headless.analytics.svc")
    );

    let (code, _, stderr) = support::chaudit(
        &support::repo_root().join("tests/manifests/clickhouse-operator"),
        &["--config", "prometheus_secure_metrics_scraper.yaml"],
    );
    assert_eq!(code, 2);
    let said = stderr.replace('│', " ").split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(said.contains("no ClickHouseInstallation, ClickHouseInstallationTemplate, ClickHouseKeeperInstallation or ClickHouseCluster"), "{said}");
}

/// The real clickhouse-server 25.8 starts on the files rendered from ClickHouse's operator's
/// examples (with its Keeper and the other hosts, which do not resolve here, left out) and
/// refuses the manifest with a query setting at the server's root.
#[test]
fn the_real_server_starts_on_the_clickhouse_operator_files() {
    let manifests = support::repo_root().join("tests/manifests/clickhouse-operator");
    for manifest in CLICKHOUSE_OPERATOR_EXAMPLES.iter().chain(&["mistakes.yaml"]) {
        start_rendered(&manifests, manifest, support::manifest::on_this_machine);
    }
}

/// Every manifest fix chaudit prints for an installation, applied as `kubectl patch` would:
/// each alone clears its finding and brings nothing at medium or more; all of them together
/// add up (each is applied to the manifest the previous ones left) and clear every one; and
/// the real clickhouse-server 25.8 starts on the files rendered from the fixed manifest,
/// `mistakes.yaml` included, which it refused before. A fix written as `config.d/` files
/// beside a manifest would change nothing the operator deploys.
#[test]
fn every_manifest_fix_applied_as_kubectl_would_clears_its_finding() {
    let manifests = support::repo_root().join("tests/manifests");
    let dir = tempfile::tempdir().unwrap();
    let (mut fixes_seen, mut native) = (0, 0);
    for manifest in EXAMPLES.iter().chain(&["mistakes.yaml"]) {
        let text = std::fs::read_to_string(manifests.join(manifest)).unwrap();
        let (_, before, _) = audit(manifest);
        let before = before["findings"].as_array().unwrap().clone();
        let key = |f: &Value| format!("{} {}", f["rule_id"], f["object"]);
        let old: std::collections::BTreeSet<String> = before.iter().map(key).collect();
        let fixes: Vec<&Value> = before.iter().filter(|f| f["remediation"].get("manifest").is_some()).collect();
        for f in before.iter().filter(|f| f["remediation"].get("manifest").is_none()) {
            assert!(
                f["remediation"].get("config").is_none(),
                "{manifest}: {} prints config.d files: {f}",
                f["rule_id"]
            );
        }
        let reaudit = |docs: &[Value]| {
            write_manifest(dir.path(), manifest, docs);
            let (code, stdout, stderr) = support::chaudit(dir.path(), &["--config", manifest, "--format", "json"]);
            let report: Value =
                serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("{manifest}: {code} {e} {stderr}"));
            report["findings"].as_array().unwrap().clone()
        };
        let mut all = documents(&text);
        for finding in &fixes {
            fixes_seen += 1;
            let fix = &finding["remediation"]["manifest"];
            if !fix["merge"].as_str().unwrap().contains("files:") {
                native += 1;
            }
            let mut docs = documents(&text);
            apply(&mut docs, fix);
            let after = reaudit(&docs);
            assert!(
                !after.iter().any(|f| f["fingerprint"] == finding["fingerprint"]),
                "{manifest}: {} still reported after its fix:\n{}",
                finding["rule_id"],
                fix["merge"]
            );
            for new in after.iter().filter(|f| !old.contains(&key(f))) {
                let severity = new["severity"].as_str().unwrap();
                assert!(
                    !["medium", "high", "critical"].contains(&severity),
                    "{manifest}: the fix of {} brought {new}",
                    finding["rule_id"]
                );
            }
            apply(&mut all, fix);
        }
        if fixes.is_empty() {
            continue;
        }
        let after = reaudit(&all);
        for finding in &fixes {
            assert!(
                !after.iter().any(|f| f["fingerprint"] == finding["fingerprint"]),
                "{manifest}: with every fix, {} remains",
                finding["rule_id"]
            );
        }
        let fixed = format!("fixed-{manifest}");
        write_manifest(&manifests.join("..").join("..").join("target"), &fixed, &all);
        let target = support::repo_root().join("target");
        let verdict = support::manifest::start_rendered(&target, &fixed, support::manifest::beside_users_xml);
        assert!(verdict.started, "{manifest} with every fix applied: {verdict:?}");
        let _ = std::fs::remove_file(target.join(&fixed));
    }
    eprintln!("{fixes_seen} manifest fix(es) applied, {native} in the manifest's own terms");
    assert!(fixes_seen >= 6 && native >= 2, "{fixes_seen} fixes, {native} native");
}

/// An installation runs the version of its pod template's image: the audit judges it as that
/// version and says so; `--clickhouse-version` overrides it.
#[test]
fn the_version_is_the_pod_templates_image() {
    let (_, report, _) = audit("99-clickhouseinstallation-max.yaml");
    let warnings = report["warnings"].to_string();
    assert!(
        warnings.contains("judged as ClickHouse 23.8") && warnings.contains("clickhouse/clickhouse-server:23.8"),
        "{warnings}"
    );
    let dir = support::repo_root().join("tests/manifests");
    let (_, out, _) = support::chaudit(
        &dir,
        &["--config", "99-clickhouseinstallation-max.yaml", "--clickhouse-version", "25.8", "--format", "json"],
    );
    assert!(!out.contains("judged as ClickHouse 23.8"), "{out}");
}

/// A user or a settings profile of an installation may name the `readonly` profile of the
/// image's stock users.xml, which sits under the operator's files: it exists (the operator's
/// own example 05-settings-08-grants.yaml names it); a profile defined nowhere is still
/// missing.
#[test]
fn the_stock_readonly_profile_exists_under_a_manifest() {
    let dir = tempfile::tempdir().unwrap();
    let manifest = |settings: &str| {
        format!(
            "apiVersion: clickhouse.altinity.com/v1\nkind: ClickHouseInstallation\nmetadata:\n  name: p\nspec:\n  \
             configuration:\n{settings}"
        )
    };
    let user =
        |profile: &str| format!("    users:\n      myuser/profile: {profile}\n      myuser/networks/ip: \"::1\"\n");
    let parent = |profile: &str| {
        format!("    profiles:\n      analysts/profile: {profile}\n      analysts/max_threads: \"4\"\n")
    };
    for (rule, settings) in
        [("user-profile-missing", &user as &dyn Fn(&str) -> String), ("profile-parent-missing", &parent)]
    {
        for (profile, missing) in [("readonly", false), ("default", false), ("nosuch", true)] {
            std::fs::write(dir.path().join("chi.yaml"), manifest(&settings(profile))).unwrap();
            let (_, out, stderr) =
                support::chaudit(dir.path(), &["--config", "chi.yaml", "--select", rule, "--format", "json"]);
            let report: Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {stderr}"));
            assert_eq!(support::findings_of(&report, rule).len(), usize::from(missing), "{rule} {profile}: {out}");
        }
    }
}

/// A ClickHouseKeeperInstallation alone is audited as the Keeper config of its first host:
/// the operator's examples bring no finding (a server's rules do not judge a Keeper node's
/// config), the planted raft id and log level are found at the settings that wrote them, and
/// the raft configuration is the operator's (one server per replica). Beside an installation
/// the installation is audited and a warning names the Keeper installation left out.
#[test]
fn a_keeper_installation_is_audited_as_a_keeper_node() {
    let dir = support::repo_root().join("tests/manifests/keeper");
    let audit = |file: &str| {
        let (code, stdout, stderr) = support::chaudit(&dir, &["--config", file, "--format", "json"]);
        let report: Value = serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("{file}: {e}: {stderr}"));
        let found: Vec<String> =
            findings(&report).into_iter().map(|(rule, file, line)| format!("{rule} {file}:{line}")).collect();
        (code, report, found, stderr)
    };
    for clean in ["01-simple-3.yaml", "02-extended-1-node.yaml", "02-extended-3-nodes.yaml"] {
        let (code, report, found, stderr) = audit(clean);
        assert_eq!((code, found), (0, Vec::<String>::new()), "{clean}: {stderr}");
        assert!(report["summary"]["outcomes"]["passed"].as_u64() > Some(0), "{clean}: {}", report["summary"]);
    }
    let (code, report, found, _) = audit("mistakes.yaml");
    assert_eq!(code, 1);
    assert_eq!(
        found,
        [
            "keeper-raft-duplicate-server mistakes.yaml:16",
            "keeper-server-id-not-in-raft mistakes.yaml:10",
            "logger-level-test mistakes.yaml:17"
        ]
    );
    let fixes: Vec<&str> =
        report["findings"].as_array().unwrap().iter().filter_map(|f| f["remediation"]["manual"].as_str()).collect();
    assert!(fixes[0].contains("replicasCount: 3") && fixes[1].contains("keeper_server/server_id"), "{fixes:?}");

    let loaded = config::load(&dir.join("01-simple-3.yaml"), &LoadOptions::for_fixture(&dir)).unwrap();
    let raft = loaded.server.root.find("keeper_server/raft_configuration").unwrap();
    let servers: Vec<String> = raft
        .children_named("server")
        .map(|s| format!("{} {}", s.find("id").unwrap().value(), s.find("hostname").unwrap().value()))
        .collect();
    assert_eq!(servers, ["0 chk-simple-3-cluster1-0-0", "1 chk-simple-3-cluster1-0-1", "2 chk-simple-3-cluster1-0-2"]);
    assert_eq!(loaded.server.root.find("keeper_server/server_id").unwrap().value(), "0");

    let (code, report, found, stderr) = audit("chi-with-keeper.yaml");
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(found, ["keeper-single-node chi-with-keeper.yaml:21", "cluster-without-secret chi-with-keeper.yaml:25"]);
    let warned = format!("{} {stderr}", report["warnings"]);
    assert!(warned.contains("the ClickHouseKeeperInstallation `simple-1` is not audited in this run"), "{warned}");
}
