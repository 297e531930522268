//! Users created by SQL, generated rather than chosen, on real clickhouse-server 24.8 and 25.8: every
//! combination of authentication (none, an empty plaintext password, plaintext, SHA-256, double
//! SHA-1), host (any, local, a
//! network), administration (none, `GRANT ALL ... WITH GRANT OPTION`, `ACCESS MANAGEMENT`, a
//! role holding ALL) and quota (none, one with limits). The live audit, as a read-only auditor,
//! must name exactly the users an independent model of each rule names; then every SQL fix it
//! prints is applied as an administrator would paste it, and the second audit no longer reports
//! those findings and brings none of medium or more.

mod support;

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;

const RULES: [&str; 4] = [
    "live-passwordless-user-open",
    "live-admin-open-to-any-network",
    "live-weak-password-hash",
    "live-user-without-quota",
];

const AUTHS: [(&str, &str); 5] = [
    ("none", "IDENTIFIED WITH no_password"),
    // system.users lists it as plaintext_password: only a login shows it opens with nothing
    ("empty", "IDENTIFIED WITH plaintext_password BY ''"),
    ("plain", "IDENTIFIED WITH plaintext_password BY 'p4ss'"),
    ("sha", "IDENTIFIED WITH sha256_password BY 'p4ss'"),
    ("dsha", "IDENTIFIED WITH double_sha1_password BY 'p4ss'"),
];
const HOSTS: [(&str, &str); 3] = [("any", "HOST ANY"), ("local", "HOST LOCAL"), ("net", "HOST IP '10.0.0.0/8'")];
const ADMINS: [&str; 4] = ["none", "all", "access", "role"];

/// One generated user.
struct User {
    name: String,
    auth: &'static str,
    host: &'static str,
    admin: &'static str,
    quota: bool,
}

fn users() -> Vec<User> {
    let mut out = Vec::new();
    for (auth, _) in AUTHS {
        for (host, _) in HOSTS {
            for admin in ADMINS {
                for quota in [false, true] {
                    let name = format!("u_{auth}_{host}_{admin}_{}", if quota { "q" } else { "nq" });
                    out.push(User { name, auth, host, admin, quota });
                }
            }
        }
    }
    out
}

/// The rules the model says fire on the user, each rule as its documentation states it.
fn expected(user: &User) -> BTreeSet<&'static str> {
    let open = user.host == "any";
    let mut rules = BTreeSet::new();
    let passwordless = ["none", "empty"].contains(&user.auth);
    if passwordless && open {
        rules.insert("live-passwordless-user-open");
    }
    if !passwordless && open && user.admin != "none" {
        rules.insert("live-admin-open-to-any-network");
    }
    if user.auth == "dsha" && open {
        rules.insert("live-weak-password-hash");
    }
    if user.host != "local" && !user.quota {
        rules.insert("live-user-without-quota");
    }
    rules
}

fn audit(dir: &std::path::Path, dsn: &str) -> Vec<Value> {
    let (_, out, stderr) =
        support::chaudit(dir, &["--dsn", dsn, "--select", &RULES.join(","), "--format", "json", "--fail-on", "never"]);
    let report: Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {stderr}"));
    for outcome in report["outcomes"].as_array().unwrap() {
        assert!(["passed", "fired"].contains(&outcome["outcome"].as_str().unwrap()), "not judged: {outcome}");
    }
    report["findings"].as_array().unwrap().clone()
}

/// (rule, user) of each finding about a generated user.
fn named(findings: &[Value]) -> BTreeMap<(String, String), Value> {
    findings
        .iter()
        .filter_map(|f| {
            let user = f["object"].as_str().or_else(|| f["evidence"]["user"].as_str())?;
            user.starts_with("u_").then(|| ((f["rule_id"].as_str().unwrap().to_string(), user.to_string()), f.clone()))
        })
        .collect()
}

#[test]
fn generated_sql_users_are_judged_as_modelled_and_every_sql_fix_clears_its_finding() {
    // one server at a time (the 26.9 engine runs here as clickhouse-local, which has no
    // writable access storage: tests/live_grants.rs judges its users of users.xml)
    for package in [support::CLICKHOUSE_24_8, support::CLICKHOUSE_25_8] {
        judged_as_modelled_and_fixed(package);
    }
}

fn judged_as_modelled_and_fixed(package: &str) {
    let server = support::LiveServer::start_version(package, false, |dir| {
        // `default` may grant everything (GRANT ALL needs named collection control too)
        let users = support::users_xml(
            "aud1tor-pw",
            "<grants><query>GRANT SELECT ON system.*</query>\
             <query>GRANT SHOW DATABASES, SHOW TABLES, SHOW ACCESS ON *.*</query></grants>",
        )
        .replacen(
            "<access_management>1</access_management>",
            "<access_management>1</access_management><named_collection_control>1</named_collection_control>\
             <show_named_collections>1</show_named_collections><show_named_collections_secrets>1</show_named_collections_secrets>",
            1,
        );
        std::fs::write(dir.join("users.xml"), users).unwrap();
        std::fs::create_dir_all(dir.join("config.d")).unwrap();
        std::fs::write(
            dir.join("config.d/access.xml"),
            format!(
                "<clickhouse>\n    <user_directories replace=\"1\">\n        <users_xml><path>{}</path></users_xml>\n        \
                 <local_directory><path>{}</path></local_directory>\n    </user_directories>\n</clickhouse>\n",
                dir.join("users.xml").display(),
                dir.join("access/").display()
            ),
        )
        .unwrap();
    });
    server.query("CREATE ROLE generated_admins");
    server.query("GRANT ALL ON *.* TO generated_admins WITH GRANT OPTION");
    let generated = users();
    for user in &generated {
        let auth = AUTHS.iter().find(|(a, _)| *a == user.auth).unwrap().1;
        let host = HOSTS.iter().find(|(h, _)| *h == user.host).unwrap().1;
        server.query(&format!("CREATE USER {} {auth} {host}", user.name));
        match user.admin {
            "all" => server.query(&format!("GRANT ALL ON *.* TO {} WITH GRANT OPTION", user.name)),
            "access" => server.query(&format!("GRANT ACCESS MANAGEMENT ON *.* TO {}", user.name)),
            "role" => server.query(&format!("GRANT generated_admins TO {}", user.name)),
            _ => String::new(),
        };
        if user.quota {
            server.query(&format!("CREATE QUOTA {0}_quota FOR INTERVAL 1 hour MAX queries = 1000 TO {0}", user.name));
        }
    }
    let dir = tempfile::tempdir().unwrap();
    let auditor = format!("http://auditor:aud1tor-pw@127.0.0.1:{}", server.http_port);
    let before = named(&audit(dir.path(), &auditor));

    let mut failures = Vec::new();
    for user in &generated {
        let fired: BTreeSet<&str> =
            RULES.iter().copied().filter(|r| before.contains_key(&(r.to_string(), user.name.clone()))).collect();
        if fired != expected(user) {
            failures.push(format!("{}: fired {fired:?}, the model says {:?}", user.name, expected(user)));
        }
    }

    // every statement that changes something, as printed (SELECTs only show what to look at)
    let mut applied = BTreeSet::new();
    for (key, finding) in &before {
        let Some(sql) = finding["remediation"]["sql"].as_str() else { continue };
        let code: String = sql.lines().filter(|l| !l.trim_start().starts_with("--")).collect::<Vec<_>>().join("\n");
        for statement in code.split(';').map(str::trim).filter(|s| !s.is_empty()) {
            let verb = statement.split_whitespace().next().unwrap_or_default().to_ascii_uppercase();
            if ["SELECT", "SHOW", "WITH", "EXPLAIN", "DESCRIBE"].contains(&verb.as_str()) {
                continue;
            }
            if let Err(e) = server.try_query(statement) {
                failures.push(format!("{key:?}: the server refuses its fix `{statement}`: {e}"));
            }
            applied.insert(key.clone());
        }
    }
    let after = named(&audit(dir.path(), &auditor));
    for key in &applied {
        if after.contains_key(key) {
            failures.push(format!("{key:?}: still reported after its SQL fix"));
        }
    }
    for (key, finding) in &after {
        let severity = finding["severity"].as_str().unwrap();
        if !before.contains_key(key) && ["medium", "high", "critical"].contains(&severity) {
            failures.push(format!("{key:?}: brought by the fixes: {}", finding["message"]));
        }
    }
    eprintln!(
        "{package}: {} generated users, {} findings, {} fixed by their SQL, {} left to the user",
        generated.len(),
        before.len(),
        applied.len(),
        before.len() - applied.len()
    );
    assert!(applied.len() >= 20, "{package}: only {} SQL fixes applied", applied.len());
    assert!(failures.is_empty(), "{package}: {} failure(s):\n{}", failures.len(), failures.join("\n"));
}
