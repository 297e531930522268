//! `chaudit upgrade` against real servers of the versions it reviews: a 25.8 LTS server's
//! upgrade to 26.9 and a 24.8 LTS server's upgrade to 25.8. Every default change the review
//! lists is checked against the defaults the two real servers report (nothing invented).

mod support;

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::Value;
use support::{CLICKHOUSE_24_8, CLICKHOUSE_25_8, CLICKHOUSE_26_9, LiveServer, chaudit};

fn with_config(xml: &'static str) -> impl Fn(&Path) {
    move |dir: &Path| {
        std::fs::create_dir_all(dir.join("config.d")).unwrap();
        std::fs::write(dir.join("config.d/upgrade-test.xml"), xml).unwrap();
    }
}

fn dsn(server: &LiveServer) -> String {
    format!("http://127.0.0.1:{}", server.http_port)
}

fn review(server: &LiveServer, to: &str, format: &str) -> (i32, String) {
    let dir = tempfile::tempdir().unwrap();
    let (code, out, err) = chaudit(dir.path(), &["upgrade", "--dsn", &dsn(server), "--to", to, "--format", format]);
    assert!(code == 0 || code == 1, "chaudit upgrade failed ({code}):\n{err}");
    (code, out)
}

fn change<'a>(review: &'a Value, name: &str) -> &'a Value {
    review["default_changes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == name)
        .unwrap_or_else(|| panic!("{name} is not among the default changes"))
}

fn breaking<'a>(review: &'a Value, name: &str) -> Option<&'a Value> {
    review["breaking"].as_array().unwrap().iter().find(|b| b["name"] == name)
}

/// name -> default, as a real server reports them (session and MergeTree settings).
fn defaults(server: &LiveServer) -> (BTreeMap<String, String>, BTreeMap<String, String>) {
    let table = |sql: &str| -> BTreeMap<String, String> {
        server
            .query(sql)
            .lines()
            .filter_map(|l| l.split_once('\t'))
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    };
    // 24.8's merge_tree_settings has no `default`: its unchanged values are the defaults
    let merge_tree = if server.query("SELECT count() FROM system.columns WHERE database = 'system' AND table = 'merge_tree_settings' AND name = 'default'").trim() == "1" {
        table("SELECT name, default FROM system.merge_tree_settings FORMAT TSVRaw")
    } else {
        table("SELECT name, value FROM system.merge_tree_settings WHERE NOT changed FORMAT TSVRaw")
    };
    (table("SELECT name, default FROM system.settings FORMAT TSVRaw"), merge_tree)
}

/// Every listed change goes from the running server's default to the target server's.
/// `except`: settings whose history value is not the server's literal default, with why.
fn assert_nothing_invented(review: &Value, from: &LiveServer, to: &LiveServer, except: &[&str]) {
    let (from_session, from_merge_tree) = defaults(from);
    let (to_session, to_merge_tree) = defaults(to);
    let mut wrong = Vec::new();
    for c in review["default_changes"].as_array().unwrap() {
        let name = c["name"].as_str().unwrap();
        if except.contains(&name) {
            continue;
        }
        let (before, after) =
            if c["kind"] == "MergeTree" { (&from_merge_tree, &to_merge_tree) } else { (&from_session, &to_session) };
        // a setting new in the window has no default on the running server
        if let Some(old) = before.get(name)
            && !same_value(old, c["from_default"].as_str().unwrap())
        {
            wrong.push(format!("{name}: review says from {}, the running server {old}", c["from_default"]));
        }
        match after.get(name) {
            Some(new) if same_value(new, c["to_default"].as_str().unwrap()) => {}
            other => wrong.push(format!("{name}: review says to {}, the target server {other:?}", c["to_default"])),
        }
    }
    // and nothing left out: every session default the two servers disagree on is listed
    let listed: Vec<&str> =
        review["default_changes"].as_array().unwrap().iter().filter_map(|c| c["name"].as_str()).collect();
    let current = to.query("SELECT name FROM system.settings WHERE alias_for = '' AND NOT is_obsolete FORMAT TSVRaw");
    for name in current.lines() {
        if let (Some(old), Some(new)) = (from_session.get(name), to_session.get(name))
            && !same_value(old, new)
            && !listed.contains(&name)
        {
            wrong.push(format!("{name}: {old} -> {new} on the real servers, not in the review"));
        }
    }
    assert!(wrong.is_empty(), "{} change(s) disagree with the real servers:\n{}", wrong.len(), wrong.join("\n"));
}

/// As ClickHouse prints one value in different places: quoted or not, true or 1.
fn same_value(a: &str, b: &str) -> bool {
    let norm = |v: &str| match v.trim_matches('\'').to_ascii_lowercase().as_str() {
        "true" => "1".to_string(),
        "false" => "0".to_string(),
        other => other.to_string(),
    };
    norm(a) == norm(b)
        || matches!((a.parse::<f64>(), b.parse::<f64>()), (Ok(x), Ok(y)) if (x - y).abs() < 1e-6 * x.abs().max(1.0))
}

const SERVER_25_8: &str = r#"<clickhouse>
  <profiles><default>
    <allow_experimental_analyzer>0</allow_experimental_analyzer>
    <allow_experimental_correlated_subqueries>1</allow_experimental_correlated_subqueries>
  </default></profiles>
  <merge_tree><replicated_deduplication_window>100</replicated_deduplication_window></merge_tree>
</clickhouse>"#;

#[test]
fn a_25_8_server_reviewed_for_26_9() {
    let old = LiveServer::start_version(CLICKHOUSE_25_8, true, with_config(SERVER_25_8));
    let new = LiveServer::start_version(CLICKHOUSE_26_9, false, |_| {});
    // the workload: an INSERT, a JOIN, a query that changes a setting, and server-to-server
    // traffic over the native protocol (another server querying this one)
    old.query("CREATE TABLE t (k UInt64, v String) ENGINE = MergeTree ORDER BY k");
    old.query("INSERT INTO t SELECT number, toString(number) FROM numbers(1000)");
    old.query("SELECT count() FROM t AS a JOIN t AS b ON a.k = b.k");
    old.query("SELECT k FROM t ORDER BY v LIMIT 2 SETTINGS query_plan_max_limit_for_lazy_materialization = 10");
    new.query(&format!("SELECT * FROM remote('127.0.0.1:{}', system.one)", old.tcp_port));
    old.query("SYSTEM FLUSH LOGS");

    let (code, json) = review(&old, "26.9", "json");
    let r: Value = serde_json::from_str(&json).unwrap();
    assert_eq!(code, 1, "an obsolete setting in the profile blocks: exit 1");
    assert!(r["from"]["version"].as_str().unwrap().starts_with("25.8"));
    assert_eq!((r["from"]["lts"].as_bool(), r["to"]["release"].as_str()), (Some(true), Some("26.9")));

    let compression = change(&r, "network_compression_method");
    assert_eq!((compression["from_default"].as_str(), compression["to_default"].as_str()), (Some("LZ4"), Some("ZSTD")));
    assert_eq!(compression["exposure"], "used_by_workload", "{compression}");
    assert!(compression["used_by"]["what"].as_str().unwrap().contains("native protocol"));
    assert!(compression["used_by"]["count"].as_u64() >= Some(1));
    let async_insert = change(&r, "async_insert");
    assert_eq!(
        (async_insert["exposure"].as_str(), async_insert["used_by"]["what"].as_str()),
        (Some("used_by_workload"), Some("INSERT queries"))
    );
    assert_eq!(change(&r, "allow_dynamic_type_in_join_keys")["used_by"]["what"], "queries with a JOIN");
    let lazy = change(&r, "query_plan_max_limit_for_lazy_materialization");
    assert_eq!(lazy["exposure"], "explicit");
    assert!(lazy["set_at"][0].as_str().unwrap().contains("changed in 1 queries"), "{lazy}");
    let window = change(&r, "replicated_deduplication_window");
    assert_eq!((window["kind"].as_str(), window["exposure"].as_str()), (Some("MergeTree"), Some("explicit")));
    assert!(window["set_at"][0].as_str().unwrap().contains("= 100"), "{window}");
    // a MergeTree default left alone applies to the server's MergeTree table
    let patch = change(&r, "patch_parts_version");
    assert_eq!(
        (patch["exposure"].as_str(), patch["used_by"]["count"].as_u64()),
        (Some("used_by_workload"), Some(1)),
        "{patch}"
    );

    let analyzer = breaking(&r, "allow_experimental_analyzer").expect("the analyzer setting breaks");
    assert_eq!(analyzer["problem"], "obsolete");
    assert!(analyzer["detail"].as_str().unwrap().contains("refused"), "{analyzer}");
    assert!(breaking(&r, "enable_analyzer").is_none(), "an alias is not reported beside its setting");
    assert_eq!(breaking(&r, "allow_experimental_correlated_subqueries").unwrap()["problem"], "renamed");

    let packets =
        r["known_issues"].as_array().unwrap().iter().find(|i| i["rule_id"] == "unbatched-end-of-query-packets");
    let packets = packets.expect("the packet batching of 26.9 is a known issue fixed by the target");
    assert_eq!((packets["change"].as_str(), packets["shows_here"].as_bool()), (Some("fixed_by_target"), Some(true)));

    // max_insert_threads: 25.8 reports 0 (then: no parallelism, as 1); 26.9 reports auto(N)
    assert_nothing_invented(&r, &old, &new, &["max_insert_threads"]);

    let (_, text) = review(&old, "26.9", "text");
    assert!(text.contains("network_compression_method [changes behaviour]  LZ4 -> ZSTD  (26.9)"), "{text}");
    assert!(text.contains("applies to queries over the native protocol"), "{text}");
    let (_, markdown) = review(&old, "26.9", "markdown");
    assert!(markdown.contains("| `network_compression_method` (changes behaviour) | `LZ4` → `ZSTD` |"), "{markdown}");

    // with the server's config files too, a setting's place is its file:line
    let dir = tempfile::tempdir().unwrap();
    let config = old.config_path();
    let args =
        ["upgrade", "--dsn", &dsn(&old), "--config", config.to_str().unwrap(), "--to", "26.9", "--format", "json"];
    let (_, out, err) = chaudit(dir.path(), &args);
    let with_files: Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {err}"));
    let places = breaking(&with_files, "allow_experimental_analyzer").unwrap()["set_at"].to_string();
    assert!(places.contains("config.d/upgrade-test.xml:3:"), "{places}");

    // the version-gated rule, on the versions it describes
    let dir = tempfile::tempdir().unwrap();
    let audit = |server: &LiveServer| {
        let args =
            ["--dsn", &dsn(server), "--since", "0", "--select", "unbatched-end-of-query-packets", "--format", "json"];
        let (_, out, err) = chaudit(dir.path(), &args);
        let report: Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}\n{err}"));
        report["outcomes"][0]["outcome"].as_str().unwrap().to_string()
    };
    assert_eq!(audit(&old), "fired");
    assert_eq!(audit(&new), "not-applicable");
}

const SERVER_24_8: &str = r#"<clickhouse>
  <profiles><default>
    <allow_experimental_dynamic_type>1</allow_experimental_dynamic_type>
    <max_parallel_replicas>4</max_parallel_replicas>
  </default></profiles>
</clickhouse>"#;

#[test]
fn a_24_8_server_reviewed_for_25_8() {
    let old = LiveServer::start_version(CLICKHOUSE_24_8, false, with_config(SERVER_24_8));
    let new = LiveServer::start_version(CLICKHOUSE_25_8, false, |_| {});
    old.query("CREATE TABLE t (k UInt64) ENGINE = MergeTree ORDER BY k");
    old.query("INSERT INTO t SELECT number FROM numbers(100)");
    old.query("SYSTEM FLUSH LOGS");

    let (code, json) = review(&old, "25.8", "json");
    let r: Value = serde_json::from_str(&json).unwrap();
    assert_eq!(code, 1);
    assert!(r["from"]["version"].as_str().unwrap().starts_with("24.8"));
    assert_eq!(r["to"]["release"], "25.8");

    let dynamic = breaking(&r, "allow_experimental_dynamic_type").expect("obsolete in 25.8");
    assert_eq!(dynamic["problem"], "obsolete");
    // 25.1 raised max_parallel_replicas 1 -> 1000; this server sets it, so it keeps its value
    let replicas = change(&r, "max_parallel_replicas");
    assert_eq!((replicas["from_default"].as_str(), replicas["to_default"].as_str()), (Some("1"), Some("1000")));
    assert_eq!(replicas["exposure"], "explicit");
    // query condition cache: new in 25.3 (off), on from 25.4
    let cache = change(&r, "use_query_condition_cache");
    assert_eq!(
        (cache["from_default"].as_str(), cache["to_default"].as_str(), cache["new_setting"].as_bool()),
        (Some("0"), Some("1"), Some(true))
    );
    assert!(
        r["default_changes"].as_array().unwrap().iter().all(|c| c["name"] != "network_compression_method"),
        "a 26.9 change is not in 25.8"
    );

    assert_nothing_invented(&r, &old, &new, &[]);
}

/// The element the advice says to write (`<name>value</name>`, or a `<merge_tree>` with it),
/// as printed, and whether it is for the upgrade itself (the running version refuses it).
fn advised_elements(keep_old: &str) -> Vec<(String, bool)> {
    let mut out = Vec::new();
    let (now, with_upgrade) = match keep_old.split_once("; or with the upgrade, not before") {
        Some((first, rest)) => (Some(first), Some(rest)),
        None if keep_old.starts_with("with the upgrade, not before") => (None, Some(keep_old)),
        None => (Some(keep_old), None),
    };
    // the advice for the upgrade names the version it refuses first, then what to write
    let with_upgrade = with_upgrade.map(|text| text.split_once("): ").map_or(text, |(_, place)| place));
    let element = |text: &str| -> Option<String> {
        let start = text.find('<')?;
        let name_end = start + text[start..].find('>')?;
        let name = &text[start + 1..name_end];
        let close = format!("</{name}>");
        let end = text.find(&close)? + close.len();
        Some(text[start..end].to_string())
    };
    if let Some(e) = now.and_then(element) {
        out.push((e, false));
    }
    if let Some(e) = with_upgrade.and_then(element) {
        out.push((e, true));
    }
    out
}

/// Writes a config tree whose default profile holds `session` and whose config.d holds
/// `merge_tree` (both lists of elements as the advice prints them).
fn advised_tree(dir: &Path, session: &[String], merge_tree: &[String]) {
    std::fs::create_dir_all(dir.join("config.d")).unwrap();
    std::fs::write(
        dir.join("config.xml"),
        "<clickhouse><users_config>users.xml</users_config><path>./data/</path></clickhouse>\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("users.xml"),
        format!(
            "<clickhouse><profiles><default>{}</default></profiles><users><default><password></password>\
             <networks><ip>::1</ip></networks><profile>default</profile><quota>default</quota>\
             <access_management>1</access_management></default></users><quotas><default/></quotas></clickhouse>\n",
            session.concat()
        ),
    )
    .unwrap();
    std::fs::write(dir.join("config.d/merge_tree.xml"), format!("<clickhouse>{}</clickhouse>\n", merge_tree.concat()))
        .unwrap();
}

/// Every "keep the old default" of the reviews from 25.8 to 26.9 and from 24.8 to 25.8, applied
/// as printed where it says: what it says may be written now is written into a tree of the
/// running version, whose real server must start (24.8 must also serve each setting); what it
/// says is for the upgrade is written into a tree the target must load (26.9 with each setting
/// in the profile it serves).
#[test]
fn every_keep_the_old_default_advice_holds_where_it_says() {
    advice_holds_where_it_says("25.8", "26.9");
    advice_holds_where_it_says("24.8", "25.8");
}

fn advice_holds_where_it_says(from: &str, to: &str) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("config.xml"), "<clickhouse/>\n").unwrap();
    let (_, out, stderr) =
        chaudit(dir.path(), &["upgrade", "--config", "config.xml", "--from", from, "--to", to, "--format", "json"]);
    let review: Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {stderr}"));
    let changes = review["default_changes"].as_array().unwrap();
    assert!(changes.len() > 30, "{from} -> {to}: {} changes", changes.len());
    let (mut now, mut later) = ((Vec::new(), Vec::new()), (Vec::new(), Vec::new()));
    for c in changes {
        let keep_old = c["keep_old"].as_str().unwrap();
        let advised = advised_elements(keep_old);
        let obsolete = keep_old.starts_with("nothing:");
        assert!(obsolete || !advised.is_empty(), "advice with nothing to write: {keep_old}");
        for (element, with_upgrade) in advised {
            let side = if with_upgrade { &mut later } else { &mut now };
            match c["kind"].as_str().unwrap() {
                "MergeTree" => side.1.push(element),
                _ => side.0.push(element),
            }
        }
    }
    assert!(!later.0.is_empty() && !now.0.is_empty(), "{from} -> {to}: both kinds of advice: {now:?} {later:?}");
    // one `<compatibility>` serves every revertible change
    for list in [&mut now.0, &mut now.1, &mut later.0, &mut later.1] {
        list.sort();
        list.dedup();
    }

    let running = dir.path().join("running/tree");
    advised_tree(&running, &now.0, &now.1);
    if from == "24.8" {
        // the running 24.8 as a real server: the advice in its config.d, the settings served
        let (session, merge_tree) = (now.0.concat(), now.1.concat());
        let server = LiveServer::start_version(CLICKHOUSE_24_8, false, move |d| {
            std::fs::create_dir_all(d.join("config.d")).unwrap();
            let profile = format!("<clickhouse><profiles><default>{session}</default></profiles></clickhouse>\n");
            std::fs::write(d.join("config.d/profile.xml"), profile).unwrap();
            std::fs::write(d.join("config.d/merge_tree.xml"), format!("<clickhouse>{merge_tree}</clickhouse>\n"))
                .unwrap();
        });
        let changed = server.query("SELECT name FROM system.settings WHERE changed");
        for element in &now.0 {
            let name = &element[1..element.find('>').unwrap()];
            assert!(changed.lines().any(|l| l == name), "24.8 does not serve {name} from the profile: {changed}");
        }
    } else {
        let started = support::engine_start(&running);
        assert!(started.started, "{from} refuses the advice meant for it: {:?}", started.errors);
    }

    let target = dir.path().join("target/tree");
    advised_tree(&target, &later.0, &later.1);
    if to == "26.9" {
        let engine = support::engine_probe(&target.join("config.xml"), &[], &[]);
        assert!(engine.get("error").is_none(), "26.9 refuses the advice meant for the upgrade: {engine}");
        let served: Vec<&str> = engine["profile_settings"]
            .as_array()
            .unwrap_or_else(|| panic!("{engine}"))
            .iter()
            .filter(|r| r["profile_name"] == "default")
            .filter_map(|r| r["setting_name"].as_str())
            .collect();
        for element in &later.0 {
            let name = &element[1..element.find('>').unwrap()];
            assert!(served.contains(&name), "26.9 does not serve {name} from the profile");
        }
    } else {
        let started = support::engine_start(&target);
        assert!(started.started, "{to} refuses the advice meant for the upgrade: {:?}", started.errors);
    }
}

/// The offline review takes what the audit takes: `-o` (never over a file of the reviewed
/// tree) and `--allow-inconclusive` for the known issues it cannot check without a server,
/// which otherwise make it exit 3 with a word on stderr.
#[test]
fn the_offline_review_writes_its_file_and_says_what_it_could_not_check() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("config.xml"), "<clickhouse/>\n").unwrap();
    let review = ["upgrade", "--config", "config.xml", "--from", "25.8", "--to", "26.9"];
    let (code, out, err) = chaudit(dir.path(), &[&review[..], &["-o", "review.txt"]].concat());
    assert_eq!(code, 3, "{err}");
    assert!(out.is_empty() && err.contains("could not be checked without a server"), "{out}{err}");
    assert!(std::fs::read_to_string(dir.path().join("review.txt")).unwrap().contains("26.9"));
    let (code, _, err) = chaudit(dir.path(), &[&review[..], &["--allow-inconclusive"]].concat());
    assert_eq!(code, 0, "{err}");
    let (code, _, err) = chaudit(dir.path(), &[&review[..], &["-o", "config.xml"]].concat());
    assert_eq!(code, 2, "{err}");
    assert_eq!(std::fs::read_to_string(dir.path().join("config.xml")).unwrap(), "<clickhouse/>\n");
}

/// A top-level key no code reads: the real 25.8 server starts and ignores it, and ClickHouse
/// from the first release with its check for unknown top-level keys (PR 100332; 26.9 here)
/// refuses to start. The review from 25.8 to 26.9 is blocked on it, at its file:line, with the
/// fix; a review that stays before the check (25.8 to a 25.8 patch release, to 26.7) is not.
#[test]
fn a_key_no_code_reads_blocks_the_upgrade_past_the_check_for_unknown_keys() {
    let dir = tempfile::tempdir().unwrap();
    let tree = dir.path().join("running/tree");
    advised_tree(&tree, &[], &[]);
    std::fs::write(
        tree.join("config.d/pools.xml"),
        "<clickhouse>\n    <max_thred_pool_size>20000</max_thred_pool_size>\n</clickhouse>\n",
    )
    .unwrap();
    let started = support::engine_start(&tree);
    assert!(started.started, "25.8 refuses a key it should ignore: {:?}", started.errors);

    let review = |to: &str, format: &str| {
        let args = ["upgrade", "--config", "running/tree/config.xml", "--from", "25.8", "--to", to];
        chaudit(dir.path(), &[&args[..], &["--format", format, "--allow-inconclusive"]].concat())
    };
    let (code, out, err) = review("26.9", "json");
    assert_eq!(code, 1, "blocked: {err}");
    let r: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(r["summary"]["blocking"], true);
    let refused = r["refused_at_startup"].as_array().unwrap();
    assert_eq!(refused.len(), 1, "{refused:?}");
    assert_eq!(refused[0]["name"], "max_thred_pool_size");
    assert!(refused[0]["at"].as_str().unwrap().starts_with("config.d/pools.xml:2"), "{}", refused[0]["at"]);
    assert_eq!(refused[0]["suggestion"], "max_thread_pool_size");
    let fix = refused[0]["fix"].as_str().unwrap();
    assert!(
        fix.contains("skip_check_for_incorrect_settings") && fix.contains("rename it to <max_thread_pool_size>"),
        "{fix}"
    );
    let (code, text, _) = review("26.9", "text");
    assert_eq!(code, 1);
    assert!(
        text.contains("<max_thred_pool_size>  config.d/pools.xml:2") && text.contains("the upgrade is blocked"),
        "{text}"
    );
    let (code, markdown, _) = review("26.9", "markdown");
    assert_eq!(code, 1);
    assert!(
        markdown.contains("## Refused at startup") && markdown.contains("`max_thred_pool_size` | config.d/pools.xml:2"),
        "{markdown}"
    );

    for before_the_check in ["25.8.9.1", "26.7"] {
        let (code, out, err) = review(before_the_check, "json");
        let r: Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {err}"));
        assert_eq!(r["refused_at_startup"].as_array().unwrap().len(), 0, "to {before_the_check}");
        assert_eq!((code, &r["summary"]["blocking"]), (0, &Value::Bool(false)), "to {before_the_check}: {err}");
    }

    // the escape hatch, set before the upgrade, lets the target start
    std::fs::write(
        tree.join("config.d/skip.xml"),
        "<clickhouse><skip_check_for_incorrect_settings>1</skip_check_for_incorrect_settings></clickhouse>\n",
    )
    .unwrap();
    let (code, out, err) = review("26.9", "json");
    let r: Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {err}"));
    assert_eq!((code, r["refused_at_startup"].as_array().unwrap().len()), (0, 0), "{err}");
}

/// What ClickHouse's check lets pass, the review lets pass: a static handler's `config://`
/// payload (also inside a protocol's handler section), a protocol's `<handlers>` section, a
/// section of the `<include_from>` file kept in config.d/, a GraphiteMergeTree rollup section
/// of any name. An unknown section is refused like an unknown setting; a payload only a
/// `redirect` handler names is not exempt.
#[test]
fn the_review_refuses_what_the_check_refuses_and_no_more() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("config.d")).unwrap();
    std::fs::write(
        dir.path().join("config.d/metrika.xml"),
        "<clickhouse>\n<clickhouse_compression><case><method>zstd</method></case></clickhouse_compression>\n</clickhouse>\n",
    )
    .unwrap();
    std::fs::write(
        dir.path().join("config.xml"),
        r#"<clickhouse>
<include_from>config.d/metrika.xml</include_from>
<retention_5m><pattern><regexp>x</regexp><function>any</function></pattern></retention_5m>
<protocols><alt><type>http</type><port>8124</port><handlers>my_handlers</handlers></alt></protocols>
<my_handlers><rule><handler><type>static</type><response_content>config://nested_payload</response_content></handler></rule></my_handlers>
<nested_payload>served</nested_payload>
<http_handlers><rule><url>/r</url><handler><type>redirect</type><location>/x</location><response_content>config://redirect_payload</response_content></handler></rule><defaults/></http_handlers>
<redirect_payload>ignored</redirect_payload>
<unknown_section><a>1</a></unknown_section>
</clickhouse>
"#,
    )
    .unwrap();
    let args = ["upgrade", "--config", "config.xml", "--from", "25.8", "--to", "26.9", "--format", "json"];
    let (code, out, err) = chaudit(dir.path(), &args);
    assert_eq!(code, 1, "{err}");
    let r: Value = serde_json::from_str(&out).unwrap();
    let refused: Vec<(&str, bool)> = r["refused_at_startup"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| (k["name"].as_str().unwrap(), k["section"].as_bool().unwrap()))
        .collect();
    assert_eq!(refused, [("redirect_payload", false), ("unknown_section", true)]);
}

/// Among the changes a server meets alike, what refuses or changes today's queries comes
/// first: an `allow_*` turned off, then a switch or choice (`async_insert` 0 -> 1), then a
/// lowered limit (`http_max_fields`), other numbers, formats, new permissions.
#[test]
fn the_default_changes_are_ranked_by_what_they_do_to_what_runs_now() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("config.xml"), "<clickhouse/>\n").unwrap();
    let (_, out, stderr) = chaudit(
        dir.path(),
        &["upgrade", "--config", "config.xml", "--from", "25.8", "--to", "26.9", "--format", "json"],
    );
    let review: Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {stderr}"));
    let order = ["disallows", "changes-behaviour", "limit-lowered", "number", "format", "permits"];
    let changes = review["default_changes"].as_array().unwrap();
    let risks: Vec<usize> = changes
        .iter()
        .filter(|c| c["exposure"] == "default")
        .map(|c| order.iter().position(|r| c["risk"] == *r).unwrap_or_else(|| panic!("{c}")))
        .collect();
    assert!(risks.windows(2).all(|w| w[0] <= w[1]), "{risks:?}");
    assert!(risks.contains(&0) && risks.contains(&5), "{risks:?}");
    let rank = |name: &str| changes.iter().find(|c| c["name"] == name).unwrap()["rank"].as_u64().unwrap();
    assert!(rank("async_insert") < rank("http_max_fields"));
}
