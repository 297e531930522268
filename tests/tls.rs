//! HTTPS against a real server: ClickHouse 25.8 (its clickhouse-server entry point) with an
//! https_port and a certificate from a private CA made here with openssl.

mod support;

use std::path::Path;
use std::process::Command;

use support::{CLICKHOUSE_25_8, LiveServer, chaudit, free_port};

fn openssl(dir: &Path, args: &[&str]) {
    let out = Command::new("openssl").args(args).current_dir(dir).output().expect("run openssl (Debian: openssl)");
    assert!(out.status.success(), "openssl {args:?}:\n{}", String::from_utf8_lossy(&out.stderr));
}

/// A CA and a server certificate for 127.0.0.1 signed by it.
fn certificates(dir: &Path) {
    openssl(
        dir,
        &[
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-keyout",
            "ca.key",
            "-out",
            "ca.pem",
            "-days",
            "2",
            "-subj",
            "/CN=chaudit test CA",
        ],
    );
    openssl(
        dir,
        &[
            "req",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-keyout",
            "server.key",
            "-out",
            "server.csr",
            "-subj",
            "/CN=127.0.0.1",
        ],
    );
    std::fs::write(dir.join("san.cnf"), "subjectAltName=IP:127.0.0.1\n").unwrap();
    openssl(
        dir,
        &[
            "x509",
            "-req",
            "-in",
            "server.csr",
            "-CA",
            "ca.pem",
            "-CAkey",
            "ca.key",
            "-CAcreateserial",
            "-out",
            "server.crt",
            "-days",
            "2",
            "-extfile",
            "san.cnf",
        ],
    );
}

#[test]
fn https_with_a_private_ca() {
    let certs = tempfile::tempdir().unwrap();
    certificates(certs.path());
    let https_port = free_port();
    let server = LiveServer::start_version(CLICKHOUSE_25_8, false, |dir| {
        std::fs::create_dir_all(dir.join("config.d")).unwrap();
        let tls = format!(
            "<clickhouse><https_port>{https_port}</https_port><openSSL><server>\
             <certificateFile>{0}/server.crt</certificateFile><privateKeyFile>{0}/server.key</privateKeyFile>\
             <verificationMode>none</verificationMode><loadDefaultCAFile>false</loadDefaultCAFile>\
             </server></openSSL></clickhouse>",
            certs.path().display()
        );
        std::fs::write(dir.join("config.d/tls.xml"), tls).unwrap();
    });
    let dsn = format!("https://127.0.0.1:{https_port}");
    let ca = certs.path().join("ca.pem");
    let dir = tempfile::tempdir().unwrap();

    let (code, out, err) = chaudit(
        dir.path(),
        &["--dsn", &dsn, "--ca-cert", ca.to_str().unwrap(), "--since", "0", "--format", "json", "--fail-on", "never"],
    );
    assert_eq!(code, 0, "{err}");
    let report: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(report["target"], format!("default@{dsn}"));
    // 25.8 sends ProfileEvents unbatched: the live rule fired over TLS
    assert!(report["findings"].as_array().unwrap().iter().any(|f| f["rule_id"] == "unbatched-end-of-query-packets"));

    // --secure with --host/--port is the same connection
    let port = https_port.to_string();
    let args = [
        "--host",
        "127.0.0.1",
        "--port",
        &port,
        "--secure",
        "--ca-cert",
        ca.to_str().unwrap(),
        "--since",
        "0",
        "--fail-on",
        "never",
    ];
    assert_eq!(chaudit(dir.path(), &args).0, 0);

    // an unknown issuer is refused, and said so
    let (code, _, err) = chaudit(dir.path(), &["--dsn", &dsn, "--since", "0"]);
    assert_eq!(code, 3);
    assert!(err.contains("invalid peer certificate: UnknownIssuer"), "{err}");

    // HTTPS to the plain HTTP port: said what is wrong, not only rustls' words
    let plain = format!("https://127.0.0.1:{}", server.http_port);
    let (code, _, err) = chaudit(dir.path(), &["--dsn", &plain, "--since", "0"]);
    assert_eq!(code, 3);
    assert!(err.contains("the server answered in plain HTTP, not TLS: this is its http_port"), "{err}");
    drop(server);
}
