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

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use serde_json::Value;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The browser's path; panics (never skips) when it is not there and cannot be installed.
fn chromium() -> PathBuf {
    static FOUND: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    FOUND
        .get_or_init(|| {
            let script = root().join("tests/clickhouse/ensure-chromium.sh");
            let out = Command::new("bash").arg(&script).output().expect("run ensure-chromium.sh");
            assert!(
                out.status.success(),
                "Chromium is needed for this test and could not be installed:\n{}",
                String::from_utf8_lossy(&out.stderr)
            );
            let path = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
            assert!(path.is_file(), "ensure-chromium.sh printed {path:?}, which is not a file");
            path
        })
        .clone()
}

/// chaudit run in the repository's root: its exit code.
fn chaudit(args: &[&str]) -> i32 {
    let out = Command::new(env!("CARGO_BIN_EXE_chaudit"))
        .args(args)
        .current_dir(root())
        .env("NO_COLOR", "1")
        .output()
        .expect("run chaudit");
    out.status.code().expect("chaudit exited by a signal")
}

/// The HTML and the JSON report of one run, and both exit codes (which must agree).
fn reports(dir: &Path, name: &str, args: &[&str]) -> (PathBuf, Value, i32) {
    let html = dir.join(format!("{name}.html"));
    let json = dir.join(format!("{name}.json"));
    let with = |format: &str, out: &Path| {
        let mut all: Vec<&str> = args.to_vec();
        all.extend(["--format", format, "-o", out.to_str().unwrap()]);
        chaudit(&all)
    };
    let code = with("html", &html);
    assert_eq!(code, with("json", &json), "{name}: the HTML and the JSON runs exit alike");
    let report: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    (html, report, code)
}

/// What the browser made of a page.
struct Page {
    dom: String,
    /// Console messages (errors, uncaught exceptions).
    console: Vec<String>,
    /// URLs requested for the page (not the browser's own background requests).
    requests: Vec<String>,
    /// Its screenshot.
    shot: PathBuf,
}

fn run_bounded(mut command: Command, what: &str) -> std::process::Output {
    let mut child = command.stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().expect("start chromium");
    let started = Instant::now();
    // stdout and stderr are drained by threads so a full pipe never stalls the browser
    let mut stdout = child.stdout.take().unwrap();
    let mut stderr = child.stderr.take().unwrap();
    let out = std::thread::spawn(move || {
        let mut b = Vec::new();
        std::io::Read::read_to_end(&mut stdout, &mut b).ok();
        b
    });
    let err = std::thread::spawn(move || {
        let mut b = Vec::new();
        std::io::Read::read_to_end(&mut stderr, &mut b).ok();
        b
    });
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if started.elapsed() > Duration::from_secs(45) {
            child.kill().ok();
            panic!("{what}: chromium did not finish in 45 s");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    std::process::Output { status, stdout: out.join().unwrap(), stderr: err.join().unwrap() }
}

fn chromium_command(profile: &Path) -> Command {
    let mut c = Command::new(chromium());
    c.args([
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--no-first-run",
        "--no-default-browser-check",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--disable-default-apps",
        "--disable-extensions",
        "--enable-logging=stderr",
        "--v=0",
        // every name resolves nowhere: a request the page made fails, and the net log has it
        "--host-resolver-rules=MAP * ~NOTFOUND",
    ]);
    c.arg(format!("--user-data-dir={}", profile.display()));
    c
}

/// Loads the page, dumps its DOM after its scripts ran, and takes a screenshot.
fn browse(page: &Path, shot: &Path) -> Page {
    let work = tempfile::tempdir().unwrap();
    let net = work.path().join("net.json");
    let url = format!("file://{}", page.canonicalize().unwrap().display());
    let mut dump = chromium_command(&work.path().join("profile"));
    // virtual time: the page's timers run before the DOM is dumped, without waiting for them
    dump.arg(format!("--log-net-log={}", net.display())).arg("--virtual-time-budget=2000").arg("--dump-dom").arg(&url);
    let out = run_bounded(dump, "dump-dom");
    assert!(out.status.success(), "chromium --dump-dom failed: {}", String::from_utf8_lossy(&out.stderr));
    let stderr = String::from_utf8_lossy(&out.stderr);
    let console: Vec<String> = stderr
        .lines()
        .filter(|l| l.contains(":CONSOLE") || l.contains("Uncaught") || l.contains("Content Security Policy"))
        .map(str::to_string)
        .collect();
    let mut shoot = chromium_command(&work.path().join("profile-shot"));
    std::fs::create_dir_all(shot.parent().unwrap()).unwrap();
    shoot.arg(format!("--screenshot={}", shot.display())).arg("--window-size=1280,2000").arg(&url);
    let shot_out = run_bounded(shoot, "screenshot");
    assert!(
        shot_out.status.success() && shot.is_file(),
        "no screenshot: {}",
        String::from_utf8_lossy(&shot_out.stderr)
    );
    Page {
        dom: String::from_utf8(out.stdout).unwrap(),
        console,
        requests: page_requests(&net),
        shot: shot.to_path_buf(),
    }
}

/// The URLs the net log shows requested on behalf of a page (an initiator other than the
/// browser itself), file: and data: URLs aside.
fn page_requests(net: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(net).expect("the net log");
    let log: Value = serde_json::from_str(&text)
        .or_else(|_| serde_json::from_str(&format!("{}]}}", text.trim_end().trim_end_matches(','))))
        .expect("the net log is JSON");
    let mut urls: Vec<String> = log["events"]
        .as_array()
        .expect("net log events")
        .iter()
        .filter_map(|e| {
            let p = &e["params"];
            let url = p["url"].as_str()?;
            let by_page = p["initiator"].as_str().is_some_and(|i| i != "not an origin")
                || p["network_isolation_key"].as_str().is_some_and(|k| k.contains("file://"));
            (by_page && !url.starts_with("file:") && !url.starts_with("data:")).then(|| url.to_string())
        })
        .collect();
    urls.sort();
    urls.dedup();
    urls
}

fn shot(name: &str) -> PathBuf {
    root().join("target/html-screenshots").join(format!("{name}.png"))
}

/// HTML text as the serialized DOM writes it.
fn escaped(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('\u{a0}', "&nbsp;")
}

/// What every report page must show: each finding of the JSON report (fingerprint, title,
/// message), the verdict and exit code, no console message, no request, one script.
fn check_page(name: &str, page: &Page, report: &Value, code: i32) {
    assert!(page.console.is_empty(), "{name}: console messages:\n{}", page.console.join("\n"));
    assert!(page.requests.is_empty(), "{name}: requests made: {:?}", page.requests);
    let (ink, colours) = png_ink(&page.shot);
    assert!(ink > 0.01 && colours > 8, "{name}: the screenshot looks blank: {ink} of it inked, {colours} colours");
    let dom = &page.dom;
    let status = report["summary"]["status"].as_str().unwrap();
    assert!(dom.contains(&format!("class=\"verdict status-{status}\"")), "{name}: the verdict {status}");
    assert!(dom.contains(&format!("exit code {code}")), "{name}: the exit code {code}");
    assert_eq!(dom.matches("<script").count(), 1, "{name}: only the page's own script");
    let findings = report["findings"].as_array().unwrap();
    assert_eq!(dom.matches("<article class=\"finding").count(), findings.len(), "{name}: one article per finding");
    for f in findings {
        let fp = f["fingerprint"].as_str().unwrap();
        assert!(dom.contains(&format!("data-fingerprint=\"{fp}\"")), "{name}: finding {fp} missing");
        let rule = f["rule_id"].as_str().unwrap();
        assert!(dom.contains(&format!("<tr id=\"rule-{rule}\">")), "{name}: what {rule} checks, in the rules table");
        for key in ["title", "message"] {
            let text = escaped(f[key].as_str().unwrap());
            assert!(dom.contains(&text), "{name}: the {key} of {fp} is not shown as text: {text}");
        }
    }
    if !findings.is_empty() {
        // the script ran: the filters are shown and count the findings
        assert!(dom.contains("<form id=\"filters\">"), "{name}: the filters are shown by the script");
        let n = findings.len();
        assert!(dom.contains(&format!("{n} of {n} shown")), "{name}: the filters' count");
        assert!(!dom.contains("class=\"copy\" hidden"), "{name}: the copy buttons are shown");
    }
    // every series of a finding's evidence is a chart in that finding, a bar per point
    for f in findings {
        let fp = f["fingerprint"].as_str().unwrap();
        let start = dom.find(&format!("data-fingerprint=\"{fp}\"")).unwrap();
        let article = &dom[start..start + dom[start..].find("</article>").unwrap()];
        let all =
            std::iter::once(&f["evidence"]).chain(f["hosts"].as_array().into_iter().flatten().map(|h| &h["evidence"]));
        for (key, points) in all.flat_map(series) {
            let at = article.find(&format!("<figure class=\"chart\" data-series=\"{}\">", escaped(&key)));
            let figure = &article[at.unwrap_or_else(|| panic!("{name}: no chart of {key} in {fp}"))..];
            let figure = &figure[..figure.find("</figure>").unwrap()];
            assert!(figure.contains("<svg "), "{name}: {key} is drawn");
            assert_eq!(figure.matches("<rect class=\"bar\"").count(), points, "{name}: a bar per point of {key}");
        }
    }
    // a rule kept from judging only by a replica that could not be read is in that replica's
    // row, which says why; every other one with its own reason
    let unread = report["unread_replicas"].as_array().cloned().unwrap_or_default();
    for r in &unread {
        assert!(dom.contains(&format!("could not be read: {}", escaped(r["reason"].as_str().unwrap()))), "{name}: {r}");
    }
    for u in report["unjudged"].as_array().into_iter().flatten() {
        let folded = unread.iter().any(|r| {
            u.get("host").is_none_or(|h| *h == r["host"]) && r["rules"].as_array().unwrap().contains(&u["rule_id"])
        });
        let rule = format!("<code>{}</code>", escaped(u["rule_id"].as_str().unwrap()));
        assert!(dom.contains(&rule), "{name}: an unjudged rule: {u}");
        assert!(folded || dom.contains(&escaped(u["reason"].as_str().unwrap())), "{name}: an unjudged rule's reason");
    }
    for e in report["errors"].as_array().into_iter().flatten() {
        assert!(dom.contains(&escaped(e["message"].as_str().unwrap())), "{name}: an error's message");
    }
}

/// The series of an evidence object: the keys whose value maps times (one or more) or names
/// (two or more) to numbers, and how many points each has.
fn series(evidence: &Value) -> Vec<(String, usize)> {
    let numeric = |v: &Value| v.is_number() || v.as_str().is_some_and(|s| s.parse::<f64>().is_ok());
    let timed =
        |k: &str| k.len() == 19 && k.as_bytes()[4] == b'-' && k.as_bytes()[10] == b' ' && k.as_bytes()[13] == b':';
    let mut out = Vec::new();
    for (key, value) in evidence.as_object().into_iter().flatten() {
        let Some(map) = value.as_object() else { continue };
        let is_series = !map.is_empty()
            && map.values().all(numeric)
            && (map.keys().all(|k| timed(k)) || (2..=60).contains(&map.len()));
        if is_series {
            out.push((key.clone(), map.len()));
        }
    }
    out
}

/// A PNG's share of pixels that are not white, and its colours (up to 1,000): a blank
/// screenshot has neither. Reads 8-bit, non-interlaced PNGs, what Chromium writes.
fn png_ink(path: &Path) -> (f64, usize) {
    let data = std::fs::read(path).unwrap();
    assert_eq!(&data[..8], b"\x89PNG\r\n\x1a\n", "{path:?} is a PNG");
    let (mut width, mut height, mut channels) = (0usize, 0usize, 0usize);
    let mut compressed = Vec::new();
    let mut at = 8;
    while at + 8 <= data.len() {
        let len = u32::from_be_bytes(data[at..at + 4].try_into().unwrap()) as usize;
        let body = &data[at + 8..at + 8 + len];
        match &data[at + 4..at + 8] {
            b"IHDR" => {
                width = u32::from_be_bytes(body[0..4].try_into().unwrap()) as usize;
                height = u32::from_be_bytes(body[4..8].try_into().unwrap()) as usize;
                assert_eq!((body[8], body[12]), (8, 0), "8-bit, not interlaced");
                channels = match body[9] {
                    0 => 1,
                    2 => 3,
                    4 => 2,
                    6 => 4,
                    other => panic!("PNG colour type {other}"),
                };
            }
            b"IDAT" => compressed.extend_from_slice(body),
            b"IEND" => break,
            _ => {}
        }
        at += 12 + len;
    }
    let mut raw = Vec::new();
    flate2::read::ZlibDecoder::new(&compressed[..]).read_to_end(&mut raw).unwrap();
    let stride = width * channels;
    assert_eq!(raw.len(), height * (stride + 1), "{path:?}: the image data");
    let (mut previous, mut line) = (vec![0u8; stride], vec![0u8; stride]);
    let mut colours = std::collections::HashSet::new();
    let mut inked = 0usize;
    for row in raw.chunks(stride + 1) {
        for x in 0..stride {
            let a = if x >= channels { line[x - channels] } else { 0 };
            let (b, c) = (previous[x], if x >= channels { previous[x - channels] } else { 0 });
            let predicted = match row[0] {
                0 => 0,
                1 => a,
                2 => b,
                3 => ((u16::from(a) + u16::from(b)) / 2) as u8,
                4 => {
                    let p = i16::from(a) + i16::from(b) - i16::from(c);
                    let (pa, pb, pc) = ((p - i16::from(a)).abs(), (p - i16::from(b)).abs(), (p - i16::from(c)).abs());
                    if pa <= pb && pa <= pc {
                        a
                    } else if pb <= pc {
                        b
                    } else {
                        c
                    }
                }
                other => panic!("PNG filter {other}"),
            };
            line[x] = row[1 + x].wrapping_add(predicted);
        }
        for pixel in line.chunks(channels) {
            let colour = &pixel[..channels.min(3)];
            inked += usize::from(colour.iter().any(|v| *v < 245));
            if colours.len() < 1000 {
                colours.insert(colour.to_vec());
            }
        }
        std::mem::swap(&mut previous, &mut line);
    }
    (inked as f64 / (width * height) as f64, colours.len())
}

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
/// a table, 30 failed queries, 12 INSERTs into one partition with its merges stopped), the
/// logs flushed.
fn live_server() -> &'static support::LiveServer {
    static SERVER: OnceLock<support::LiveServer> = OnceLock::new();
    SERVER.get_or_init(|| {
        let server = support::LiveServer::start(|_| {});
        server.query("CREATE TABLE default.events (day Date, n UInt64) ENGINE = MergeTree PARTITION BY day ORDER BY n");
        server.query("SYSTEM STOP MERGES default.events");
        for i in 0..12 {
            server.query(&format!("INSERT INTO default.events SELECT '2026-12-01', number + {i} FROM numbers(100)"));
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
        server.query("SYSTEM FLUSH LOGS");
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
    // 2 minutes' window) and the INSERTs with no merge (new parts per hour)
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
    assert!(charts >= 4 && charts == expected, "{charts} charts, {expected} series");
    // what the server names stays text: a chart's labels are escaped like the rest
    assert!(!page.dom.contains("<script>alert"), "no markup from the server");
}
