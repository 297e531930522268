//! Command-line behaviour, one case per file in tests/cmd/ (`TRYCMD=overwrite` refreshes them).

#[test]
fn cli_cases() {
    // a fixed width: the cases do not depend on the terminal they run in
    trycmd::TestCases::new().env("NO_COLOR", "1").env("COLUMNS", "100").case("tests/cmd/*.toml");
}

use std::path::Path;
use std::process::{Command, Output};

fn chaudit(args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_chaudit"));
    command.args(args).current_dir(env!("CARGO_MANIFEST_DIR")).env("NO_COLOR", "1").env_remove("COLUMNS");
    for (k, v) in env {
        command.env(k, v);
    }
    command.output().expect("run chaudit")
}

const EXAMPLE: &str = "examples/production/config.xml";

/// Every line of every fix (config snippet and SQL) is printed whole, at any terminal width.
#[test]
fn fix_snippets_are_never_wrapped() {
    let json: serde_json::Value =
        serde_json::from_slice(&chaudit(&["--config", EXAMPLE, "--format", "json"], &[]).stdout).expect("json report");
    let findings = json["findings"].as_array().expect("findings");
    assert!(findings.iter().any(|f| f["remediation"]["config"].is_string()), "the example has config fixes");
    for columns in ["60", "200"] {
        let text = String::from_utf8(chaudit(&["--config", EXAMPLE], &[("COLUMNS", columns)]).stdout).expect("utf-8");
        let printed: Vec<&str> = text.lines().map(str::trim).collect();
        for f in findings {
            for part in ["config", "sql"] {
                for line in f["remediation"][part].as_str().unwrap_or_default().lines().filter(|l| !l.trim().is_empty())
                {
                    assert!(
                        printed.contains(&line.trim()),
                        "COLUMNS={columns}: fix line {line:?} not printed whole:\n{text}"
                    );
                }
            }
        }
        let widest =
            text.lines().filter(|l| l.starts_with("  │") || l.starts_with("  ×")).map(|l| l.chars().count()).max();
        assert!(
            widest.unwrap_or(0) <= columns.parse::<usize>().unwrap_or(0) + 1,
            "prose wider than {columns}:\n{text}"
        );
    }
}

/// No format and no `config show` prints a secret of the config files; `--show-secrets` does.
#[test]
fn secrets_are_masked_everywhere() {
    let config = "tests/cmd/fixtures/secrets/config.xml";
    let secrets =
        ["changeme-hunter2", "s3-secret-hunter2", "AKIAEXAMPLEKEYID", "5e884898da28047151d0e56f8dc6292773603d0d6"];
    let mut runs: Vec<Vec<&str>> = ["text", "json", "markdown", "html", "sarif", "junit", "openmetrics"]
        .iter()
        .map(|format| vec!["--config", config, "--format", format, "--fail-on", "never"])
        .collect();
    runs.push(vec!["config", "show", "--config", config]);
    runs.push(vec!["config", "show", "--users", "--provenance", "--config", config]);
    for args in &runs {
        let out = chaudit(args, &[]);
        assert!(out.status.success(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
        let all = String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
        for secret in secrets {
            assert!(!all.contains(secret), "{args:?} prints {secret}:\n{all}");
        }
    }
    // an error quoting the lines around a password
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(
        dir.path().join("config.xml"),
        "<clickhouse><listen_host>::1</listen_host><users_config>users.xml</users_config></clickhouse>\n",
    )
    .unwrap();
    std::fs::write(
        dir.path().join("users.xml"),
        "<clickhouse>\n<users>\n<app>\n<password>changeme-hunter2</password>\n<networks><ip>::1</networks>\n</app>\n</users>\n</clickhouse>\n",
    )
    .unwrap();
    std::fs::write(dir.path().join("config.yaml"), "users:\n  app:\n    password: changeme-hunter2\n   networks: x\n")
        .unwrap();
    for main in ["config.xml", "config.yaml"] {
        let broken = dir.path().join(main);
        for args in [vec!["config", "show", "--users", "--config"], vec!["--config"]] {
            let out = chaudit(&[args.as_slice(), &[broken.to_str().unwrap()]].concat(), &[]);
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert!(!out.status.success() && !stderr.is_empty(), "{main} {args:?}: the error is reported");
            assert!(!stderr.contains("changeme-hunter2"), "{main} {args:?}: the error quotes the password:\n{stderr}");
        }
    }
    let shown = chaudit(&["config", "show", "--users", "--show-secrets", "--config", config], &[]);
    assert!(String::from_utf8_lossy(&shown.stdout).contains("changeme-hunter2"));
}

/// A secret's whole value span is masked (several lines, CDATA, an attribute) in every format,
/// and switches whose names merely mention a secret are shown.
#[test]
fn secrets_are_masked_over_their_span() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(
        dir.path().join("config.xml"),
        "<clickhouse>\n<listen_host>::1</listen_host>\n<users_config>users.xml</users_config>\n\
         <remote_servers><c><secret>\n    cluster-hunter2\n</secret><shard><replica><host>a</host><port>9000</port>\
         </replica></shard></c></remote_servers>\n</clickhouse>\n",
    )
    .unwrap();
    std::fs::write(
        dir.path().join("users.xml"),
        "<clickhouse>\n<profiles><default><allow_nullable_key>1</allow_nullable_key></default></profiles>\n<users>\n\
         <a>\n<password>\n    multi-hunter2\n</password>\n<networks><ip>::/0</ip></networks>\n</a>\n\
         <b>\n<password><![CDATA[cdata-hunter2]]></password>\n<networks><ip>::/0</ip></networks>\n</b>\n\
         </users>\n</clickhouse>\n",
    )
    .unwrap();
    let config = dir.path().join("config.xml");
    let config = config.to_str().unwrap();
    let mut runs: Vec<Vec<&str>> = ["text", "json", "markdown", "html", "sarif", "junit", "openmetrics"]
        .iter()
        .map(|format| vec!["--config", config, "--format", format, "--fail-on", "never"])
        .collect();
    runs.push(vec!["config", "show", "--users", "--config", config]);
    for args in &runs {
        let out = chaudit(args, &[]);
        assert!(out.status.success(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
        let all = String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
        for secret in ["cluster-hunter2", "multi-hunter2", "cdata-hunter2"] {
            assert!(!all.contains(secret), "{args:?} prints {secret}:\n{all}");
        }
    }
    let text = chaudit(&["--config", config, "--fail-on", "never"], &[]);
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(text.contains("    ******"), "the multi-line password shows masked in its snippet:\n{text}");
    let shown = chaudit(&["config", "show", "--users", "--config", config], &[]);
    assert!(String::from_utf8_lossy(&shown.stdout).contains("<allow_nullable_key>1</allow_nullable_key>"));
}

/// A huge value is shown as a bounded excerpt, in every format.
#[test]
fn huge_values_are_cut() {
    let dir = tempfile::tempdir().expect("tempdir");
    let huge = "x".repeat(4 << 20);
    std::fs::write(
        dir.path().join("config.xml"),
        "<clickhouse><listen_host>::1</listen_host><users_config>users.xml</users_config></clickhouse>\n",
    )
    .unwrap();
    std::fs::write(
        dir.path().join("users.xml"),
        format!(
            "<clickhouse><profiles><default><use_query_condition_cache>0</use_query_condition_cache>\
             <log_comment>{huge}</log_comment></default></profiles>\
             <users><default><password>{huge}</password><networks><ip>::1</ip></networks><profile>default</profile></default></users></clickhouse>\n"
        ),
    )
    .unwrap();
    let config = dir.path().join("config.xml");
    for format in ["text", "json", "markdown", "html", "sarif", "junit", "openmetrics"] {
        let out = chaudit(&["--config", config.to_str().unwrap(), "--format", format, "--fail-on", "never"], &[]);
        assert!(out.status.success(), "{format}: {}", String::from_utf8_lossy(&out.stderr));
        // the input holds 8 MB of values; SARIF alone lists every rule with its documentation
        assert!(out.stdout.len() + out.stderr.len() < 1_000_000, "{format}: {} bytes of output", out.stdout.len());
    }
}

#[test]
fn report_to_a_file_whole_or_not_at_all() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("report.sarif");
    let out = chaudit(&["--config", EXAMPLE, "--format", "sarif", "-o", file.to_str().unwrap()], &[]);
    assert_eq!(out.status.code(), Some(1), "findings at or above high: {}", String::from_utf8_lossy(&out.stderr));
    assert!(out.stdout.is_empty());
    let written: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).expect("SARIF");
    assert_eq!(written["version"], "2.1.0");
    // a directory is not replaced
    let out = chaudit(&["--config", EXAMPLE, "-o", dir.path().to_str().unwrap()], &[]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("not a regular file"));
    assert!(std::fs::read_dir(dir.path()).unwrap().count() == 1, "nothing else written");
}

#[test]
fn color_follows_the_flag() {
    let colored = |args: &[&str]| chaudit(args, &[]).stdout.contains(&0x1b);
    assert!(colored(&["--config", EXAMPLE, "--color", "always"]));
    assert!(!colored(&["--config", EXAMPLE, "--color", "never"]));
    assert!(!colored(&["--config", EXAMPLE]), "a pipe is not a terminal");
    assert!(!colored(&["--color", "always", "config", "show", "--config", EXAMPLE]), "config show is XML");
}

#[test]
fn completions_and_manual_page() {
    for (shell, marker) in [("bash", "_chaudit()"), ("zsh", "#compdef chaudit"), ("fish", "complete -c chaudit")] {
        let out = chaudit(&["completions", shell], &[]);
        assert!(out.status.success());
        assert!(String::from_utf8_lossy(&out.stdout).contains(marker), "{shell}");
    }
    let man = chaudit(&["man"], &[]);
    let text = String::from_utf8_lossy(&man.stdout);
    assert!(man.status.success() && text.contains(".TH chaudit") && text.contains("\\-\\-fail\\-on"), "{text}");
    // what a manual page owes its reader: exit status, environment, examples
    for section in [".SH \"EXIT STATUS\"", ".SH ENVIRONMENT", ".SH EXAMPLES", "CLICKHOUSE_PASSWORD", "\\fB3\\fR"] {
        assert!(text.contains(section), "no {section} in the manual page");
    }
    // every exit code of the README's table is in the manual page
    let readme = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md")).unwrap();
    for code in ["| 0 |", "| 1 |", "| 2 |", "| 3 |"] {
        assert!(readme.contains(code));
        let roff = format!("\\fB{}\\fR", code.trim_matches(|c| c == '|' || c == ' '));
        assert!(text.contains(&roff), "exit code {code} missing from the manual page");
    }
}

/// The rule docs speak to users: no internal labels (`seed 004`, tags like S1..S24).
#[test]
fn rule_files_carry_no_internal_labels() {
    let mut bad = Vec::new();
    let mut stack = vec![Path::new(env!("CARGO_MANIFEST_DIR")).join("rules")];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap().flatten() {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "yaml") {
                let text = std::fs::read_to_string(&path).unwrap();
                for (n, line) in text.lines().enumerate() {
                    if internal_label(line) {
                        bad.push(format!("{}:{}: {line}", path.display(), n + 1));
                    }
                }
            }
        }
    }
    assert!(bad.is_empty(), "internal labels in rule files:\n{}", bad.join("\n"));
    for line in
        ["tags: [cache, S1]", "  - seed 004 (the Context lock)", "worse (S21).", "(S9/S12)", "the seed measured"]
    {
        assert!(internal_label(line), "{line}");
    }
    for line in ["every read still goes to S3/Azure", "the S3 round trip", "tags: [cache, object-storage]"] {
        assert!(!internal_label(line), "{line}");
    }
}

/// `seed` as a word, or an S-number: any but `S3` (the object store), which counts only as a
/// tag or in parentheses or a list.
fn internal_label(line: &str) -> bool {
    let words: Vec<&str> = line.split(|c: char| !c.is_ascii_alphanumeric()).collect();
    let s_number = |w: &str| {
        w.len() <= 3 && w.strip_prefix('S').is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
    };
    let listed_s3 =
        ["(S3", "S3)", ", S3", "S3,"].iter().any(|p| line.contains(p)) || line.trim_start().starts_with("tags:");
    words.iter().any(|w| w.eq_ignore_ascii_case("seed") || w.eq_ignore_ascii_case("seeds"))
        || words.iter().any(|w| s_number(w) && (*w != "S3" || listed_s3))
}

/// The packaging files install and run the binary this package builds, from this source tree.
#[test]
fn packaging_files_use_this_tree() {
    let read = |path: &str| std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(path)).unwrap();
    let hooks = read(".pre-commit-hooks.yaml");
    assert!(hooks.contains("- id: chaudit") && hooks.contains("entry: chaudit") && hooks.contains("language: rust"));
    let docker = read("Dockerfile");
    assert!(docker.contains("cargo build --release --locked") && docker.contains("target/release/chaudit"));
    // the Actions example installs the release workflow's asset, checked by its checksum
    let actions = read("examples/github-actions.yml");
    let release = read(".github/workflows/release.yml");
    assert!(actions.contains("chaudit-$CHAUDIT_VERSION-x86_64-unknown-linux-musl") && actions.contains("sha256sum -c"));
    assert!(
        release.contains("name=\"chaudit-$VERSION-$TARGET\"") && release.contains("TARGET: x86_64-unknown-linux-musl")
    );
    assert!(release.contains("sha256sum \"$name.tar.gz\" > \"$name.tar.gz.sha256\""));
    assert!(!actions.contains("cargo install"), "compiles chaudit on every run");
}

/// clickhouse-client's environment completes a live audit that was asked for; exported, it
/// never turns an offline run live (it did: CLICKHOUSE_HOST made `--config` connect).
#[test]
fn clickhouse_environment_never_makes_an_offline_run_live() {
    let env = [
        ("CLICKHOUSE_HOST", "127.0.0.1"),
        ("CLICKHOUSE_PORT", "1"),
        ("CLICKHOUSE_USER", "someone"),
        ("CLICKHOUSE_PASSWORD", "hunter2"),
    ];
    let audit = ["--config", EXAMPLE, "--format", "json"];
    let offline = chaudit(&audit, &[]);
    let exported = chaudit(&audit, &env);
    assert_eq!(exported.status.code(), offline.status.code(), "{}", String::from_utf8_lossy(&exported.stderr));
    assert_eq!(exported.stdout, offline.stdout);
    // the offline review judges what it can without a server (exit 3: a known issue it cannot
    // check), and the environment changes nothing of it
    let upgrade = ["upgrade", "--from", "25.8", "--to", "26.9"];
    let review = chaudit(&upgrade, &env);
    assert_eq!(
        review.status.code(),
        chaudit(&upgrade, &[]).status.code(),
        "{}",
        String::from_utf8_lossy(&review.stderr)
    );
    assert!(
        !String::from_utf8_lossy(&review.stderr).contains("cannot reach"),
        "{}",
        String::from_utf8_lossy(&review.stderr)
    );
    // credentials without a server to send them to are a mistake, not an offline audit
    let out = chaudit(&["--config", EXAMPLE, "-u", "bob"], &env);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--user is for a live audit: give --host or --dsn"));
}

/// `-h` is the host, as in clickhouse-client; `--help` prints the help.
#[test]
fn dash_h_is_the_host() {
    let out = chaudit(&["-h", "127.0.0.1", "--port", "1", "--timeout", "1"], &[]);
    assert_eq!(out.status.code(), Some(3));
    assert!(String::from_utf8_lossy(&out.stderr).contains("cannot reach default@http://127.0.0.1:1"));
    let out = chaudit(&["-h"], &[]);
    assert_eq!(out.status.code(), Some(2), "a bare -h is not a run that judged nothing and passed");
    assert!(String::from_utf8_lossy(&out.stderr).contains("--help"));
    let out = chaudit(&["--help"], &[]);
    assert_eq!(out.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&out.stdout).contains("-h, --host <HOST>"));
    let out = chaudit(&["check", "--help"], &[]);
    assert!(String::from_utf8_lossy(&out.stdout).contains("--snapshot"));
    // `--password` without a value and no terminal: no prompt to answer, a clear error
    let out = chaudit(&["-h", "127.0.0.1", "--password"], &[]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("use --password-file or CLICKHOUSE_PASSWORD"));
    let out = chaudit(&["-h", "127.0.0.1", "--password", "a", "--password-file", "f"], &[]);
    assert_eq!(out.status.code(), Some(2), "two passwords are refused, not picked silently");
}

/// `check --snapshot` judges the recorded facts only: a flag that reads a server or this
/// machine is refused (it was honoured, and the snapshot ignored).
#[test]
fn snapshot_mode_is_offline() {
    let snapshot = "tests/cmd/fixtures/snapshots/overloaded.json";
    assert!(Path::new(snapshot).is_file());
    for flags in [
        &["--dsn", "http://127.0.0.1:1"][..],
        &["--cluster", "prod"],
        &["--host-facts"],
        &["--dry-run"],
        &["-h", "127.0.0.1"],
    ] {
        let out = chaudit(&[&["check", "--snapshot", snapshot][..], flags].concat(), &[]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{flags:?}: {stderr}");
        assert!(stderr.contains("check --snapshot audits the recorded snapshot offline") && stderr.contains(flags[0]));
        assert!(out.stdout.is_empty());
    }
}
