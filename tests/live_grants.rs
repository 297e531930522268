//! Administrators as a 26.9 server lists them. ClickHouse 26.x writes a grant as it was given,
//! not as `ALL`: a users.xml user with `GRANT CREATE USER, ROLE ADMIN ON *.* WITH GRANT OPTION`
//! is two rows of system.grants, and a user without `<access_management>` holds every other
//! privilege one row each. Each user below is put into one state in users.xml; the live rule
//! must name the users who can take over accounts and accept any host, and no other; its advice
//! for a user of the config files (a `<networks>` fragment in users.d/, not SQL, which that
//! storage refuses) is applied, the server started again, and the finding goes.

use std::path::Path;

use serde_json::Value;

mod support;

const RULE: &str = "live-admin-open-to-any-network";
const HASH: &str = "65e84be33532fb784c48129675f9eff3a682b27168c0ea744b2cf58ee02337c5";

fn user(name: &str, networks: &str, extra: &str) -> String {
    format!(
        "<{name}><password_sha256_hex>{HASH}</password_sha256_hex><networks>{networks}</networks>\
         <profile>default</profile>{extra}</{name}>"
    )
}

fn users_xml() -> String {
    let any = "<ip>::/0</ip>";
    let local = "<ip>::1</ip><ip>127.0.0.1</ip>";
    let users = [
        "<default><password></password><networks><ip>127.0.0.1</ip></networks><profile>default</profile>\
         <access_management>1</access_management></default>"
            .to_string(),
        user(
            "delegated",
            any,
            "<grants><query>GRANT CREATE USER, ROLE ADMIN ON *.* WITH GRANT OPTION</query></grants>",
        ),
        user("everything", any, "<grants><query>GRANT ALL ON *.*</query></grants>"),
        user("analyst", any, ""),
        user("local_admin", local, "<grants><query>GRANT CREATE USER ON *.*</query></grants>"),
    ];
    format!(
        "<clickhouse><profiles><default/></profiles><users>{}</users><quotas><default/></quotas></clickhouse>\n",
        users.concat()
    )
}

fn audit(dir: &Path, port: u16) -> Value {
    let dsn = format!("http://default@127.0.0.1:{port}");
    let (_, out, stderr) = support::chaudit(dir, &["--dsn", &dsn, "--select", RULE, "--format", "json"]);
    serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {stderr}"))
}

fn named(report: &Value) -> Vec<String> {
    let mut names: Vec<String> =
        support::findings_of(report, RULE).iter().map(|f| f["object"].as_str().unwrap().to_string()).collect();
    names.sort();
    names
}

#[test]
fn administrators_are_named_as_26_9_lists_their_grants_and_their_advice_works() {
    let mut server = support::LiveServer::start(|dir| {
        std::fs::write(dir.join("users.xml"), users_xml()).unwrap();
        std::fs::create_dir_all(dir.join("config.d")).unwrap();
        let users = dir.join("users.xml");
        std::fs::write(
            dir.join("config.d/users.xml"),
            format!("<clickhouse><users_config>{}</users_config></clickhouse>\n", users.display()),
        )
        .unwrap();
    });
    // the state is what the test meant: the engine's own rows
    let rows =
        server.query("SELECT user_name, access_type FROM system.grants WHERE user_name = 'delegated' ORDER BY 2");
    assert_eq!(rows.trim(), "delegated\tCREATE USER\ndelegated\tROLE ADMIN", "{rows}");
    let analyst = server.query("SELECT count() FROM system.grants WHERE user_name = 'analyst'");
    assert!(analyst.trim().parse::<u32>().unwrap() > 20, "every privilege one by one: {analyst}");

    let dir = tempfile::tempdir().unwrap();
    let report = audit(dir.path(), server.http_port);
    assert_eq!(named(&report), ["delegated", "everything"], "{report:#}");
    let finding = support::findings_of(&report, RULE).into_iter().find(|f| f["object"] == "delegated").unwrap();
    let message = finding["message"].as_str().unwrap();
    assert!(message.contains("CREATE USER WITH GRANT OPTION") && message.contains("ROLE ADMIN"), "{message}");
    // users of the config files cannot be altered by SQL: no SQL is offered for them
    assert!(finding["remediation"]["sql"].is_null(), "{finding:#}");
    let manual = finding["remediation"]["manual"].as_str().unwrap();
    assert!(manual.contains("users.d/zz-chaudit-fix.xml") && manual.contains("<networks replace=\"1\">"), "{manual}");

    // the advice, followed: a users.d fragment the running server reloads
    let users_d = server.config_path().with_file_name("users.d");
    std::fs::create_dir_all(&users_d).unwrap();
    std::fs::write(
        users_d.join("zz-chaudit-fix.xml"),
        "<clickhouse><users><delegated><networks replace=\"1\"><ip>::1</ip><ip>127.0.0.1</ip></networks></delegated></users></clickhouse>\n",
    )
    .unwrap();
    // the server of the tests (clickhouse-local's engine) runs no config reloader: started
    // again, it reads the fragment
    server.restart();
    let hosts = server.query("SELECT host_ip FROM system.users WHERE name = 'delegated'");
    assert!(!hosts.contains("::/0"), "the fragment did not apply: {hosts}");
    assert_eq!(named(&audit(dir.path(), server.http_port)), ["everything"]);
}
