//! Text from a file name, a server or a config never reaches the terminal raw (its control
//! characters are written out), and every report format stays valid whatever that text
//! holds: JUnit is well-formed XML, a SARIF artifact location is a URI reference.

use std::io::{Read, Write};
use std::path::Path;
use std::process::{Command, Stdio};

/// Runs chaudit in `dir`: (exit code, stdout, stderr).
fn chaudit(dir: &Path, args: &[&str]) -> (i32, String, String) {
    let out =
        Command::new(env!("CARGO_BIN_EXE_chaudit")).args(args).current_dir(dir).stdin(Stdio::null()).output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// No character that moves a terminal's cursor or changes its colours.
fn assert_no_controls(what: &str, text: &str) {
    let raw: Vec<char> = text.chars().filter(|c| c.is_control() && *c != '\n' && *c != '\t').collect();
    assert!(raw.is_empty(), "{what} holds raw control characters {raw:?}:\n{text}");
}

/// A tree whose server config has a fragment named `name` holding an element ClickHouse reads
/// nowhere (one finding at that fragment).
fn tree(name: &str, fragment: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::create_dir(d.join("config.d")).unwrap();
    std::fs::write(d.join("config.xml"), "<clickhouse><users_config>users.xml</users_config></clickhouse>").unwrap();
    std::fs::write(
        d.join("users.xml"),
        "<clickhouse><users><default><password_sha256_hex>00</password_sha256_hex></default></users></clickhouse>",
    )
    .unwrap();
    std::fs::write(d.join("config.d").join(name), fragment).unwrap();
    dir
}

#[test]
fn a_fragment_name_is_written_out_in_text_and_errors() {
    let name = "evil\u{1b}]0;owned\u{7}\u{1b}[2J.xml";
    let dir = tree(name, "<clickhouse><bogus_element>1</bogus_element></clickhouse>");
    let d = dir.path();
    let (code, stdout, stderr) = chaudit(d, &["--config", "config.xml", "--color", "never", "--fail-on", "never"]);
    assert_eq!(code, 0, "{stderr}");
    assert!(stdout.contains("bogus_element") && stdout.contains("evil\\u{1b}"), "{stdout}");
    assert_no_controls("the text report", &stdout);
    assert_no_controls("stderr", &stderr);
    for format in ["markdown", "json"] {
        let (_, stdout, _) = chaudit(d, &["--config", "config.xml", "--format", format, "--fail-on", "never"]);
        assert_no_controls(format, &stdout);
    }
    // a fragment ClickHouse refuses: the error names it
    std::fs::write(d.join("config.d").join(name), "<clickhouse><unclosed></clickhouse>").unwrap();
    let (code, stdout, stderr) = chaudit(d, &["--config", "config.xml", "--color", "never"]);
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("evil\\u{1b}"), "{stderr}");
    assert_no_controls("the config error", &stderr);
    assert_no_controls("stdout", &stdout);
    // a fragment after the fix file, named in fix's warning
    std::fs::write(d.join("config.d").join(name), "<clickhouse></clickhouse>").unwrap();
    std::fs::write(d.join("config.d").join("zzz\u{1b}[31m.xml"), "<clickhouse></clickhouse>").unwrap();
    std::fs::write(
        d.join("config.d/logs.xml"),
        "<clickhouse><query_log><database>system</database><table>query_log</table></query_log></clickhouse>",
    )
    .unwrap();
    let (_, stdout, stderr) = chaudit(d, &["fix", "--config", "config.xml", "--dry-run"]);
    assert!(stderr.contains("merges after"), "{stderr}");
    assert_no_controls("fix's output", &stdout);
    assert_no_controls("fix's warnings", &stderr);
}

#[test]
fn a_servers_error_text_is_written_out() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let mut request = [0u8; 4096];
            let _ = stream.read(&mut request);
            let body = "Code: 516. DB::Exception: \u{1b}]0;owned\u{7}\u{1b}[2Jauthentication failed\u{9b}31m. (AUTHENTICATION_FAILED)";
            let _ = write!(
                stream,
                "HTTP/1.1 516 Unauthorized\r\nContent-Type: text/plain\r\nX-ClickHouse-Exception-Code: 516\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
        }
    });
    let dir = tempfile::tempdir().unwrap();
    let dsn = format!("http://127.0.0.1:{port}");
    for args in [vec!["--dsn", dsn.as_str()], vec!["collect", "--dsn", dsn.as_str()]] {
        let (code, stdout, stderr) = chaudit(dir.path(), &args);
        assert_eq!(code, 3, "{args:?}: {stderr}");
        assert!(stderr.contains("authentication failed"), "{args:?}: {stderr}");
        assert_no_controls("the connect error", &stderr);
        assert_no_controls("stdout", &stdout);
    }
}

#[test]
fn junit_stays_well_formed_xml() {
    // U+FFFF in an element name and a value: not an XML 1.0 character
    let dir = tree(
        "odd.xml",
        "<clickhouse><bogus_\u{ffff}x>1</bogus_\u{ffff}x><macros><replica>a\u{fffe}b</replica></macros></clickhouse>",
    );
    let (_, stdout, stderr) =
        chaudit(dir.path(), &["--config", "config.xml", "--format", "junit", "--fail-on", "info"]);
    assert!(stdout.contains("bogus_"), "{stderr}\n{stdout}");
    if let Err(e) = roxmltree::Document::parse(&stdout) {
        panic!("the JUnit report is not well-formed: {e}\n{stdout}");
    }
    assert!(stdout.contains("bogus_\\u{ffff}x"), "{stdout}");
}

/// RFC 3986 URI-reference characters: unreserved, reserved, and `%` as the start of `%XX`.
fn is_uri_reference(uri: &str) -> bool {
    let bytes = uri.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        if b == b'%' {
            if i + 2 >= bytes.len() || !bytes[i + 1].is_ascii_hexdigit() || !bytes[i + 2].is_ascii_hexdigit() {
                return false;
            }
            i += 3;
            continue;
        }
        if !(b.is_ascii_alphanumeric() || b"-._~:/?#[]@!$&'()*+,;=".contains(&b)) {
            return false;
        }
        i += 1;
    }
    true
}

#[test]
fn sarif_locations_are_uri_references() {
    let name = "a b#c%d?e[f].xml";
    let dir = tree(name, "<clickhouse><bogus_element>1</bogus_element></clickhouse>");
    let (_, stdout, stderr) = chaudit(dir.path(), &["--config", "config.xml", "--format", "sarif"]);
    let sarif: serde_json::Value = serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("{e}: {stderr}"));
    let mut seen = false;
    for result in sarif["runs"][0]["results"].as_array().unwrap() {
        let Some(uri) = result["locations"][0]["physicalLocation"]["artifactLocation"]["uri"].as_str() else {
            continue;
        };
        assert!(is_uri_reference(uri), "{uri}");
        // read back as a URL, it names the file
        let url = url::Url::parse("file:///w/").unwrap().join(uri).unwrap();
        let path = url.to_file_path().unwrap();
        if path == Path::new("/w/config.d").join(name) {
            seen = true;
            assert!(!uri.contains('#') && !uri.contains('?') && !uri.contains(' '), "{uri}");
        }
    }
    assert!(seen, "no result at {name}: {stdout}");
    // an absolute base: a file URI of the same path
    let abs = dir.path().join("config.xml");
    let (_, stdout, _) = chaudit(dir.path(), &["--config", abs.to_str().unwrap(), "--format", "sarif"]);
    let sarif: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    let uris: Vec<&str> = sarif["runs"][0]["results"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|r| r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"].as_str())
        .collect();
    let wanted = dir.path().join("config.d").join(name);
    assert!(
        uris.iter().any(|u| url::Url::parse(u).is_ok_and(|url| url.to_file_path().is_ok_and(|p| p == wanted))),
        "{uris:?}"
    );
    for uri in uris {
        assert!(is_uri_reference(uri), "{uri}");
    }
}
