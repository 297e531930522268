//! `--format html` in a real browser: headless Chromium (installed from Debian by
//! tests/clickhouse/ensure-chromium.sh when missing; the test fails if it cannot be) loads
//! each report from its file with every host name resolving nowhere. The DOM after the
//! page's script ran must hold every finding of the JSON report of the same run and the
//! verdict; names with markup stay text; the console shows no error; the net log shows no
//! request made for the page; every series in a finding's evidence is drawn as a chart in
//! that finding; the screenshot is not blank. A control page that does make a request and
//! throws proves the two checks see them. Screenshots are kept in target/html-screenshots/.
//! One real ClickHouse 26.9 server with a workload gives the report of a live server.

mod support;

use std::sync::OnceLock;

use support::browser::{browse, check_page, escaped, png_ink, reports, series, shot};
use support::repo_root as root;

#[test]
fn the_checks_see_a_request_and_a_console_error() {
    let dir = tempfile::tempdir().unwrap();
    let page = dir.path().join("control.html");
    std::fs::write(
        &page,
        "<!DOCTYPE html><html><body><img src=\"http://probe.invalid/x.png\">\
         <script>console.error('control'); throw new Error('control');</script></body></html>",
    )
    .unwrap();
    let seen = browse(&page, &shot("control"));
    assert_eq!(seen.requests, ["http://probe.invalid/x.png"]);
    assert!(seen.console.iter().any(|l| l.contains("Uncaught Error: control")), "{:?}", seen.console);
    // and a blank screenshot is told from one with something on it
    let (ink, _) = png_ink(&seen.shot);
    assert!(ink < 0.01, "the control page is nearly blank: {ink}");
}

#[test]
fn the_example_report_in_a_browser() {
    let dir = tempfile::tempdir().unwrap();
    let (html, report, code) = reports(dir.path(), "example", &["--config", "examples/production/config.xml"]);
    assert_eq!(code, 1);
    let page = browse(&html, &shot("example"));
    check_page("example", &page, &report, code);
    // without its script (a copy without it: --dump-dom itself needs scripts) every finding is
    // shown, and the filters, which need the script, are not
    let file = std::fs::read_to_string(&html).unwrap();
    // the page's policy runs its own script only: one slipped into it would not run
    let injected = dir.path().join("injected.html");
    let script = "<script>document.body.setAttribute('data-injected','ran')</script>";
    std::fs::write(&injected, file.replacen("<body>", &format!("<body>{script}"), 1)).unwrap();
    let seen = browse(&injected, &shot("injected"));
    assert!(!seen.dom.contains("data-injected=\"ran\""), "a script not the page's own ran");
    assert!(seen.console.iter().any(|l| l.contains("Content Security Policy")), "{:?}", seen.console);
    assert!(seen.dom.contains("<form id=\"filters\">"), "the page's own script still ran");
    let (before, after) = file.rsplit_once("<script>").unwrap();
    let without = dir.path().join("without-script.html");
    std::fs::write(&without, format!("{before}{}", &after[after.find("</script>").unwrap() + 9..])).unwrap();
    let plain = browse(&without, &shot("without-script")).dom;
    assert_eq!(plain.matches("<script").count(), 0);
    let findings = report["findings"].as_array().unwrap().len();
    let articles: Vec<&str> = plain.split("<article ").skip(1).map(|a| &a[..a.find('>').unwrap()]).collect();
    assert_eq!(articles.len(), findings);
    assert!(articles.iter().all(|a| !a.contains(" hidden")), "no finding hidden without the script");
    assert!(plain.contains("<form id=\"filters\" hidden=\"\">"), "the filters stay hidden without the script");
    assert!(file.contains("Content-Security-Policy") && file.contains("default-src 'none'"));
    for f in report["findings"].as_array().unwrap() {
        let sql = f["remediation"]["sql"].as_str().or(f["remediation"]["config"].as_str());
        if let Some(snippet) = sql {
            assert!(page.dom.contains(&escaped(snippet.trim_end())), "the fix of {} shown", f["rule_id"]);
        }
    }
}

#[test]
fn the_filters_hide_what_does_not_match() {
    let dir = tempfile::tempdir().unwrap();
    let (html, report, _) = reports(dir.path(), "filters", &["--config", "examples/production/config.xml"]);
    let first = report["findings"][0]["rule_id"].as_str().unwrap();
    let matching = report["findings"].as_array().unwrap().iter().filter(|f| f["rule_id"] == first).count();
    // the page's policy lets only its own script run: this copy drops the policy and types
    // the first finding's rule into the search box
    let text = std::fs::read_to_string(&html).unwrap();
    let start = text.find("<meta http-equiv=\"Content-Security-Policy\"").unwrap();
    let end = start + text[start..].find('>').unwrap() + 1;
    let typed = format!(
        "{}{}",
        &text[..start],
        text[end..].replace(
            "</body>",
            &format!(
                "<script>var t=document.getElementById('f-text');t.value='{first}';\
                 t.dispatchEvent(new Event('input',{{bubbles:true}}));\
                 var b=document.querySelector('button.copy');b.click();\
                 setTimeout(function(){{document.body.setAttribute('data-copied',b.textContent+'|'+\
                 String(window.getSelection()).length);}},300);</script></body>"
            )
        )
    );
    let page = dir.path().join("typed.html");
    std::fs::write(&page, typed).unwrap();
    let seen = browse(&page, &shot("filtered"));
    assert!(seen.console.is_empty(), "{:?}", seen.console);
    // a script's click is no user gesture: the clipboard refuses it, and the snippet is
    // selected instead (a person's click copies)
    let copied = seen.dom.split("data-copied=\"").nth(1).expect("the copy button answered");
    let copied = &copied[..copied.find('"').unwrap()];
    let (word, selected) = copied.split_once('|').unwrap();
    assert!(
        word == "Copied" || (word == "Selected: press Ctrl+C" && selected.parse::<usize>().unwrap() > 0),
        "the copy button: {copied}"
    );
    let total = report["findings"].as_array().unwrap().len();
    assert!(seen.dom.contains(&format!("{matching} of {total} shown")), "the count after the search");
    let articles: Vec<&str> = seen.dom.split("<article ").skip(1).map(|a| &a[..a.find('>').unwrap()]).collect();
    assert_eq!(articles.len(), total);
    let hidden = articles.iter().filter(|a| a.contains(" hidden")).count();
    assert_eq!(hidden, total - matching, "the findings of other rules are hidden");
    for a in articles.iter().filter(|a| !a.contains(" hidden")) {
        assert!(a.contains(&format!("data-rule=\"{first}\"")), "a shown finding is of {first}: {a}");
    }
}

#[test]
fn a_cluster_report_has_the_replica_matrix() {
    let dir = tempfile::tempdir().unwrap();
    // a replica whose name is markup
    let hostile = "b\\\"<script>alert(3)</script>&'";
    let snapshot = std::fs::read_to_string(root().join("tests/cmd/fixtures/snapshots/cluster-one-unread.json"))
        .unwrap()
        .replace("\"b:8123\"", &format!("\"{hostile}:8123\""));
    let file = dir.path().join("snapshot.json");
    std::fs::write(&file, snapshot).unwrap();
    let (html, report, code) = reports(dir.path(), "cluster", &["check", "--snapshot", file.to_str().unwrap()]);
    assert_eq!(code, 3, "an unread replica leaves the audit incomplete");
    let page = browse(&html, &shot("cluster"));
    check_page("cluster", &page, &report, code);
    let dom = &page.dom;
    assert!(dom.contains("<section id=\"matrix\">"), "the replica x rule matrix");
    assert!(dom.contains("<section id=\"unjudged\" class=\"alert\">"), "the rules not judged, at the top");
    assert!(dom.find("id=\"unjudged\"").unwrap() < dom.find("id=\"findings\"").unwrap());
    let name = escaped("b\"<script>alert(3)</script>&'");
    assert!(dom.contains(&format!("<th><code>{name}:8123</code></th>")), "the hostile replica as text");
    let hosts: std::collections::BTreeSet<&str> = report["outcomes"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|o| o["hosts"].as_array().into_iter().flatten())
        .map(|h| h["host"].as_str().unwrap())
        .collect();
    assert_eq!(hosts.len(), 2, "{hosts:?}");
    for host in hosts {
        assert!(dom.contains(&format!("<th><code>{}</code></th>", escaped(host))), "{host} in the matrix");
    }
    // every rule with hosts that is not not-applicable everywhere has a row
    for o in report["outcomes"].as_array().unwrap() {
        let shown = o["outcome"] != "not-applicable"
            || o["hosts"].as_array().into_iter().flatten().any(|h| h["outcome"] != "not-applicable");
        if shown {
            let id = o["rule_id"].as_str().unwrap();
            assert!(dom.contains(&format!("<tr><th><code>{id}</code></th>")), "{id} in the matrix");
        }
    }
}

#[test]
fn names_with_markup_stay_text() {
    let dir = tempfile::tempdir().unwrap();
    let (html, report, code) =
        reports(dir.path(), "hostile", &["--config", "tests/cmd/fixtures/markup-names/config.yaml"]);
    let page = browse(&html, &shot("hostile"));
    check_page("hostile", &page, &report, code);
    let dom = &page.dom;
    for name in [
        "<script>alert(1)</script>",
        "<script>alert(2)</script>",
        "<img src=x onerror=alert(1)>",
        "a\"b'c&d",
        "p\"'&<b>",
    ] {
        assert!(dom.contains(&escaped(name)), "{name} shown as text");
    }
    assert!(!dom.contains("<img"), "no element from a name");
    assert!(!dom.contains("<b>"), "no element from a name");
    // in an attribute too: the category and hosts attributes, and the option values
    let file = std::fs::read_to_string(&html).unwrap();
    assert!(!file.contains("<script>alert"), "the file holds no markup from a name");
    assert!(file.contains("a&quot;b&#39;c&amp;d"), "quotes escaped in the file");
}

#[test]
fn the_merged_config_links_each_finding_to_its_element() {
    let dir = tempfile::tempdir().unwrap();
    let main = "examples/production/config.xml";
    let (html, report, code) = reports(dir.path(), "config", &["--config", main]);
    let page = browse(&html, &shot("config"));
    check_page("config", &page, &report, code);
    let dom = &page.dom;
    let start = dom.find("<section id=\"config\">").expect("the merged config section");
    let section = &dom[start..start + dom[start..].find("</section>").unwrap()];
    assert!(section.contains("<details class=\"config-tree\" id=\"config-server\">"), "the server tree, folded");
    assert!(section.contains("<details class=\"config-tree\" id=\"config-users\">"), "the users tree, folded");
    // each element `config show --provenance` prints, at the file:line it names
    for users in [false, true] {
        let mut args = vec!["config", "show", "--provenance", "--config", main];
        args.extend(users.then_some("--users"));
        let (status, shown, _) = support::chaudit(&root(), &args);
        assert_eq!(status, 0);
        let mut elements = 0;
        for comment in shown.lines().filter_map(|l| l.trim().strip_prefix("<!-- ")?.strip_suffix(" -->")) {
            let (at, overrides) = match comment.split_once(" (overrides ") {
                Some((at, o)) => (at, Some(o.trim_end_matches(')'))),
                None => (comment, None),
            };
            if !at.contains(':') || at.contains(' ') {
                continue;
            }
            elements += 1;
            let mut cell = format!("<td><code>{at}</code>");
            if let Some(o) = overrides {
                cell.push_str(&format!(" <span class=\"note\">(overrides {o})</span>"));
            }
            assert!(section.contains(&cell), "{at} as config show says: {cell}");
        }
        assert!(elements > 20, "config show's provenance read: {elements}");
    }
    // a finding at an element links to it; the element links back
    let mut linked = 0;
    for f in report["findings"].as_array().unwrap() {
        let Some(line) = f["location"]["line"].as_u64() else { continue };
        let fp = f["fingerprint"].as_str().unwrap();
        let at = dom.find(&format!("data-fingerprint=\"{fp}\"")).unwrap();
        let article = &dom[at..at + dom[at..].find("</article>").unwrap()];
        let link = article.split("class=\"to-config\" href=\"#").nth(1).unwrap_or_else(|| panic!("{fp}: no link"));
        let id = &link[..link.find('"').unwrap()];
        let row = section.find(&format!("<tr id=\"{id}\"")).unwrap_or_else(|| panic!("{fp}: no element {id}"));
        let row = &section[row..row + section[row..].find("</tr>").unwrap()];
        let file = f["location"]["file"].as_str().unwrap();
        assert!(row.contains(&format!("{file}:{line}")), "{fp}: the element set at {file}:{line}: {row}");
        let rank = f["rank"].as_u64().unwrap();
        assert!(row.contains(&format!("href=\"#f-{rank}\"")), "{fp}: the element names the finding: {row}");
        linked += 1;
    }
    assert!(linked >= 10, "the example's findings at an element: {linked}");
    // the example's passwords: the plain one never shown, the element masked as config show masks it
    let file = std::fs::read_to_string(&html).unwrap();
    assert!(!file.contains("changeme") && !dom.contains("changeme"), "a password in the page");
    assert!(section.contains("&lt;password&gt;******&lt;/password&gt;"), "the password masked");
    // a link to an element unfolds its tree (this copy drops the page's policy to follow one)
    let users_row = section[section.find("id=\"config-users\"").unwrap()..].split("<tr id=\"").nth(1).unwrap();
    let users_row = &users_row[..users_row.find('"').unwrap()];
    let csp = file.find("<meta http-equiv=\"Content-Security-Policy\"").unwrap();
    let end = csp + file[csp..].find('>').unwrap() + 1;
    let followed = format!(
        "{}{}",
        &file[..csp],
        file[end..].replace(
            "</body>",
            &format!(
                "<script>location.hash='#{users_row}';setTimeout(function(){{document.body.setAttribute('data-open',\
                 [document.getElementById('config-server').open,document.getElementById('config-users').open].join());\
                 }},300);</script></body>"
            )
        )
    );
    let copy = dir.path().join("followed.html");
    std::fs::write(&copy, followed).unwrap();
    let seen = browse(&copy, &shot("config-followed"));
    assert!(seen.console.is_empty(), "{:?}", seen.console);
    assert!(seen.dom.contains("data-open=\"false,true\""), "the users tree unfolded, the server tree not");
    // the trees unfolded, the section at the top of the page: its screenshot is kept
    let body = file.find("<body>").unwrap() + "<body>".len();
    let unfolded = format!("{}{}", &file[..body], &file[file.find("<section id=\"config\">").unwrap()..])
        .replace("<details class=\"config-tree\"", "<details open class=\"config-tree\"");
    let copy = dir.path().join("unfolded.html");
    std::fs::write(&copy, unfolded).unwrap();
    let seen = browse(&copy, &shot("config-unfolded"));
    assert!(seen.console.is_empty() && seen.requests.is_empty(), "{:?} {:?}", seen.console, seen.requests);
    let (ink, colours) = png_ink(&seen.shot);
    assert!(ink > 0.01 && colours > 8, "the unfolded config looks blank: {ink} of it inked, {colours} colours");
}

#[test]
fn config_values_with_markup_and_secrets_stay_text_and_masked() {
    let dir = tempfile::tempdir().unwrap();
    let tree = dir.path().join("tree");
    std::fs::create_dir_all(tree.join("config.d")).unwrap();
    std::fs::write(
        tree.join("config.xml"),
        "<clickhouse>\n  <display_name><![CDATA[<script>alert(4)</script>]]></display_name>\n  \
         <listen_host>0.0.0.0</listen_host>\n  <storage_configuration><disks><s3 note=\"&lt;b&gt;&amp;'\">\n    \
         <type>s3</type>\n    <endpoint>https://keyid:urlpass1234@bucket.invalid/data/</endpoint>\n    \
         <access_key_id>AKIAEXAMPLE</access_key_id>\n    <secret_access_key>topsecret9876</secret_access_key>\n  \
         </s3></disks></storage_configuration>\n  <users><default><password>plainpass4321</password>\
         <networks><ip>::/0</ip></networks></default></users>\n</clickhouse>\n",
    )
    .unwrap();
    let main = tree.join("config.xml");
    let (html, report, code) = reports(dir.path(), "config-values", &["--config", main.to_str().unwrap()]);
    let page = browse(&html, &shot("config-values"));
    check_page("config-values", &page, &report, code);
    let file = std::fs::read_to_string(&html).unwrap();
    assert!(file.contains("<section id=\"config\">"));
    assert!(!file.contains("<script>alert"), "a value is text");
    assert!(page.dom.contains(&escaped("<script>alert(4)</script>")), "the value shown as text");
    assert!(!page.dom.contains("<b>"), "an attribute value is text");
    for secret in ["urlpass1234", "topsecret9876", "plainpass4321"] {
        assert!(!file.contains(secret), "{secret} in the page");
    }
}

#[test]
fn a_run_stopped_before_any_rule_carries_its_errors() {
    let dir = tempfile::tempdir().unwrap();
    for (name, args, code) in [
        ("unreachable", &["--dsn", "http://127.0.0.1:1"][..], 3),
        ("broken-config", &["--config", "tests/cmd/fixtures/broken-server/config.xml"][..], 2),
    ] {
        let (html, report, got) = reports(dir.path(), name, args);
        assert_eq!(got, code, "{name}");
        assert!(!report["errors"].as_array().unwrap().is_empty(), "{name}: errors in the JSON report");
        let page = browse(&html, &shot(name));
        check_page(name, &page, &report, code);
        assert!(page.dom.contains("<section id=\"errors\" class=\"alert\">"), "{name}: the errors, prominent");
    }
}

/// The one live server of this binary: ClickHouse 26.9 with a workload in its logs (reads of
/// a table, 30 failed queries, 18 INSERTs into two partitions with its merges stopped), the
/// logs flushed.
fn live_server() -> &'static support::LiveServer {
    static SERVER: OnceLock<support::LiveServer> = OnceLock::new();
    SERVER.get_or_init(|| {
        let server = support::LiveServer::start(|_| {});
        server.query("CREATE TABLE default.events (day Date, n UInt64) ENGINE = MergeTree PARTITION BY day ORDER BY n");
        server.query("SYSTEM STOP MERGES default.events");
        for i in 0..18 {
            let day = if i < 12 { "2026-12-01" } else { "2026-12-02" };
            server.query(&format!("INSERT INTO default.events SELECT '{day}', number + {i} FROM numbers(100)"));
        }
        for i in 0..10 {
            server.query(&format!(
                "SELECT count() FROM default.events WHERE n IN (SELECT number FROM numbers({})) AND n > (SELECT {i})",
                50 + i
            ));
        }
        for _ in 0..30 {
            let refused = server.try_query("SELECT throwIf(number = 3, 'planted failure') FROM numbers(10)");
            assert!(refused.is_err(), "the planted failure failed");
        }
        // metric_log writes a row a second: wait until its rows span three 2 s steps (the
        // audit's steps over its 2 minutes' window), so the node's series has several points
        let started = std::time::Instant::now();
        loop {
            server.query("SYSTEM FLUSH LOGS");
            let steps = server.query("SELECT uniqExact(intDiv(toUInt32(event_time), 2)) FROM system.metric_log");
            if steps.trim().parse::<u32>().unwrap() >= 3 {
                break;
            }
            assert!(started.elapsed().as_secs() < 60, "metric_log has {} steps after a minute", steps.trim());
            std::thread::sleep(std::time::Duration::from_millis(500));
        }
        server
    })
}

#[test]
fn a_live_server_report_draws_its_log_series() {
    let server = live_server();
    let dir = tempfile::tempdir().unwrap();
    let dsn = format!("http://default@127.0.0.1:{}", server.http_port);
    // thresholds lowered so that the workload's evidence makes findings: the failed queries
    // (per hour), the shapes' Context locks (the node's locks per second, in 2 s steps over the
    // 2 minutes' window), the INSERTs with no merge (new parts per hour) and the partition with
    // 12 parts (the table's parts per partition)
    let args = [
        "--dsn",
        &dsn,
        "--since",
        "2m",
        "--param",
        "query-error-spike.max_errors_per_hour=1",
        "--param",
        "context-lock-heavy-shapes.min_runs=1",
        "--param",
        "context-lock-heavy-shapes.min_locks_per_call=0",
        "--param",
        "context-lock-heavy-shapes.min_times_typical=0",
        "--param",
        "context-lock-heavy-shapes.min_share=0",
        "--param",
        "merges-stalled.min_new_parts=10",
        "--param",
        "merges-stalled.min_partition_parts=10",
        "--param",
        "too-many-parts-in-partition.max_parts_per_partition=10",
    ];
    let (html, report, code) = reports(dir.path(), "live", &args);
    assert!(code == 0 || code == 1, "the live audit judged every rule: exit {code}");
    let page = browse(&html, &shot("live"));
    check_page("live", &page, &report, code);
    let findings = report["findings"].as_array().unwrap();
    let of = |rule: &str| findings.iter().filter(|f| f["rule_id"] == rule).collect::<Vec<_>>();
    let errors = of("query-error-spike");
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert_eq!(errors[0]["evidence"]["errors"].to_string().trim_matches('"'), "30");
    let hours = series(&errors[0]["evidence"]);
    assert_eq!(hours.iter().map(|(k, _)| k.as_str()).collect::<Vec<_>>(), ["errors_per_hour"]);
    // the table's parts per partition beside the partition over the limit: 12 and 6
    let piled = of("too-many-parts-in-partition");
    assert_eq!(piled.len(), 1, "{piled:?}");
    assert_eq!(series(&piled[0]["evidence"]), [("parts_per_partition".to_string(), 2)]);
    let stalled = of("merges-stalled");
    assert!(stalled.iter().any(|f| f["object"] == "default.events"), "{stalled:?}");
    // the node's Context locks over the window: a point per 2 s step the server was up in
    let heavy = of("context-lock-heavy-shapes");
    assert!(!heavy.is_empty(), "the shapes with their locks");
    let locks = series(&heavy[0]["evidence"]);
    let per_second = locks.iter().find(|(k, _)| k == "node_locks_per_second").expect("the node's locks per second");
    assert!(per_second.1 >= 2, "{locks:?}");
    let charts = page.dom.matches("<figure class=\"chart\"").count();
    let expected: usize = findings.iter().map(|f| series(&f["evidence"]).len()).sum();
    assert!(charts >= 5 && charts == expected, "{charts} charts, {expected} series");
    // the series as the server gave them: every log query answered, the cache's too (zero on
    // a server without a cache disk, in the same steps as the locks)
    let (code, _, stderr) =
        support::chaudit(dir.path(), &["collect", "--dsn", &dsn, "--since", "2m", "-o", "snapshot.json"]);
    assert_eq!(code, 0, "{stderr}");
    let snapshot: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("snapshot.json")).unwrap()).unwrap();
    let log = &snapshot["document"]["log"];
    assert_eq!(log["unavailable"], serde_json::json!({}), "{log:#}");
    let steps =
        |v: &serde_json::Value| v.as_object().map(|m| m.keys().cloned().collect::<Vec<_>>()).unwrap_or_default();
    let cache = &log["cache_rate"][0];
    assert!(!steps(&cache["cache_bytes"]).is_empty(), "{cache}");
    assert_eq!(steps(&cache["cache_bytes"]), steps(&cache["object_store_bytes"]), "{cache}");
    assert!(steps(&log["lock_rate"][0]["locks_per_second"]).len() >= 2, "{}", log["lock_rate"]);
    // what the server names stays text: a chart's labels are escaped like the rest
    assert!(!page.dom.contains("<script>alert"), "no markup from the server");
}

/// `chaudit diff --format html` of two config trees: every difference in the page, a value
/// with markup stays text, nothing runs and nothing is requested; equal sides say so.
#[test]
fn a_diff_in_a_browser() {
    let dir = tempfile::tempdir().unwrap();
    for (side, limit, database) in [("a", 100, "plain"), ("b", 150, "&lt;script&gt;alert(1)&lt;/script&gt;")] {
        let tree = dir.path().join(side);
        std::fs::create_dir_all(&tree).unwrap();
        std::fs::write(
            tree.join("config.xml"),
            format!(
                "<clickhouse>\n    <max_concurrent_queries>{limit}</max_concurrent_queries>\n    \
                 <default_database>{database}</default_database>\n</clickhouse>\n"
            ),
        )
        .unwrap();
    }
    let (code, _, stderr) = support::chaudit(dir.path(), &["diff", "a", "b", "--format", "html", "-o", "drift.html"]);
    assert_eq!(code, 1, "{stderr}");
    let page = browse(&dir.path().join("drift.html"), &shot("diff"));
    assert!(page.console.is_empty(), "{:?}", page.console);
    assert!(page.requests.is_empty(), "{:?}", page.requests);
    assert_eq!(page.dom.matches("<script").count(), 0, "no script, and the value's stays text");
    assert!(page.dom.contains("max_concurrent_queries") && page.dom.contains(&escaped("<script>alert(1)</script>")));
    assert!(page.dom.contains("2 difference(s); exit 1"), "{}", page.dom);
    // a short page on a tall screenshot: little ink, but text and table lines in several shades
    let (ink, colours) = png_ink(&page.shot);
    assert!(ink > 0.002 && colours > 8, "the page is drawn: {ink}, {colours} colours");
    let (code, stdout, stderr) = support::chaudit(dir.path(), &["diff", "a", "a", "--format", "html"]);
    assert_eq!(code, 0, "{stderr}");
    assert!(stdout.contains("The two sides are equal."), "{stdout}");
}
