//! `--format html` in a real browser, for the tests that load reports: headless Chromium
//! (installed from Debian by tests/clickhouse/ensure-chromium.sh when missing; a test fails if
//! it cannot be) loads a page from its file with every host name resolving nowhere; what every
//! report page must show (`check_page`); screenshots in target/html-screenshots/, checked not
//! blank.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use super::repo_root as root;

/// The browser's path; panics (never skips) when it is not there and cannot be installed.
pub fn chromium() -> PathBuf {
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
    super::chaudit(&root(), args).0
}

/// The HTML and the JSON report of one run, and both exit codes (which must agree).
pub fn reports(dir: &Path, name: &str, args: &[&str]) -> (PathBuf, Value, i32) {
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
pub struct Page {
    pub dom: String,
    /// Console messages (errors, uncaught exceptions).
    pub console: Vec<String>,
    /// URLs requested for the page (not the browser's own background requests).
    pub requests: Vec<String>,
    /// Its screenshot.
    pub shot: PathBuf,
}

pub fn run_bounded(mut command: Command, what: &str) -> std::process::Output {
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

pub fn chromium_command(profile: &Path) -> Command {
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
pub fn browse(page: &Path, shot: &Path) -> Page {
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
pub fn page_requests(net: &Path) -> Vec<String> {
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

pub fn shot(name: &str) -> PathBuf {
    root().join("target/html-screenshots").join(format!("{name}.png"))
}

/// HTML text as the serialized DOM writes it.
pub fn escaped(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('\u{a0}', "&nbsp;")
}

/// What every report page must show: each finding of the JSON report (fingerprint, title,
/// message), the verdict and exit code, no console message, no request, one script.
pub fn check_page(name: &str, page: &Page, report: &Value, code: i32) {
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
            assert_eq!(figure.matches("<rect class=\"bar s").count(), points, "{name}: a bar per point of {key}");
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

/// The points of one evidence value that is a series: an object of numbers, or a list of
/// `[key, number]` pairs, keyed by times (one or more) or names (two to 60).
fn points(value: &Value) -> Option<usize> {
    let numeric = |v: &Value| v.is_number() || v.as_str().is_some_and(|s| s.parse::<f64>().is_ok());
    let timed =
        |k: &str| k.len() == 19 && k.as_bytes()[4] == b'-' && k.as_bytes()[10] == b' ' && k.as_bytes()[13] == b':';
    let pairs: Vec<(&str, &Value)> = match value {
        Value::Object(map) => map.iter().map(|(k, v)| (k.as_str(), v)).collect(),
        Value::Array(list) => list
            .iter()
            .map(|p| match p.as_array().map(Vec::as_slice) {
                Some([Value::String(k), v]) => Some((k.as_str(), v)),
                _ => None,
            })
            .collect::<Option<_>>()?,
        _ => return None,
    };
    let is_series = !pairs.is_empty()
        && pairs.iter().all(|(_, v)| numeric(v))
        && (pairs.iter().all(|(k, _)| timed(k)) || (2..=60).contains(&pairs.len()));
    is_series.then_some(pairs.len())
}

/// The series of an evidence object, each key with the bars its chart must have: a bar per
/// point, and for an object of two to four series drawn together, a key per series in the
/// legend.
pub fn series(evidence: &Value) -> Vec<(String, usize)> {
    let mut out = Vec::new();
    for (key, value) in evidence.as_object().into_iter().flatten() {
        if let Some(n) = points(value) {
            out.push((key.clone(), n));
        } else {
            // two to four series: an object of them, or a list of [name, series] pairs
            let named: Option<Vec<&Value>> = match value {
                Value::Object(map) => Some(map.values().collect()),
                Value::Array(list) => list
                    .iter()
                    .map(|p| match p.as_array().map(Vec::as_slice) {
                        Some([Value::String(_), v]) => Some(v),
                        _ => None,
                    })
                    .collect(),
                _ => None,
            };
            let each: Option<Vec<usize>> =
                named.filter(|n| (2..=4).contains(&n.len())).and_then(|n| n.into_iter().map(points).collect());
            if let Some(each) = each {
                out.push((key.clone(), each.iter().sum::<usize>() + each.len()));
            }
        }
    }
    out
}

/// A PNG's share of pixels that are not white, and its colours (up to 1,000): a blank
/// screenshot has neither. Reads 8-bit, non-interlaced PNGs, what Chromium writes.
pub fn png_ink(path: &Path) -> (f64, usize) {
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
