//! Every will-it-start rule (rules/startup/) judged by the real clickhouse-server 25.8: the
//! tree its rule fires on does not start, with the server's own error; the tree it is quiet
//! on starts.

mod support;

use std::path::PathBuf;

/// Each rule and a part of the error the server gives on its `refused` fixture.
const REFUSALS: &[(&str, &str)] = &[
    ("cache-disk-setting-unknown", "Unknown setting"),
    ("cache-disk-target-invalid", "Cannot wrap disk"),
    ("cache-disk-without-size", "must be defined in cache configuration"),
    ("cluster-definition-invalid", "Unknown element in config"),
    ("cluster-replica-without-host", "Not found"),
    ("default-disk-path", "should be provided in <path>"),
    ("default-profile-missing", "THERE_IS_NO_PROFILE"),
    ("disk-path-missing", "Disk path can not be empty"),
    ("disk-path-without-slash", "Disk path must end with /"),
    ("disk-type-unknown", "unknown disk type"),
    ("disks-same-path", "cannot have the same path"),
    ("encrypted-disk-key-invalid", "BAD_ARGUMENTS"),
    ("interserver-both-ports", "EXCESSIVE_ELEMENT_IN_CONFIG"),
    ("listen-host-invalid", "NETWORK_ERROR"),
    ("listen-host-overlap", "Address already in use"),
    ("log-level-invalid", "Not a valid log level"),
    ("merge-tree-setting-unparsable", "CANNOT_PARSE"),
    ("merge-tree-unknown-setting", "UNKNOWN_SETTING"),
    ("network-ip-invalid", "Invalid"),
    ("object-disk-endpoint-missing", "endpoint"),
    ("port-invalid", "ARGUMENT_OUT_OF_BOUND"),
    ("profile-constraint-unknown-setting", "UNKNOWN_SETTING"),
    ("profile-parent-missing", "THERE_IS_NO_PROFILE"),
    ("profile-setting-unparsable", "CANNOT_PARSE"),
    ("quota-duration-invalid", "Not a valid integer"),
    ("quota-limit-unparsable", "Cannot parse input"),
    ("s3-endpoint-empty-key", "Invalid S3 key"),
    ("server-setting-unparsable", "CANNOT_PARSE"),
    ("system-log-engine-with-parameters", "If 'engine' is specified for system table"),
    ("user-auth-ambiguous", "More than one field"),
    ("user-auth-missing", "must be specified for user"),
    ("user-auth-not-allowed", "BAD_ARGUMENTS"),
    ("user-grants-with-other-access", "can't be specified with `grants`"),
    ("user-password-hash-invalid", "BAD_ARGUMENTS"),
    ("user-profile-missing", "THERE_IS_NO_PROFILE"),
    ("users-config-missing", "FILE_DOESNT_EXIST"),
    ("users-read-from-main-config", "THERE_IS_NO_PROFILE"),
];

/// Rules of configs the server starts on but that break it (tests/startup_broken.rs shows
/// how): their `broken` fixture starts.
const STARTS_BROKEN: &[&str] = &["backups-disk-missing", "policy-disk-missing"];

fn fixture(rule: &str, case: &str) -> PathBuf {
    support::repo_root().join("rules/startup").join(rule).join(case)
}

#[test]
fn every_startup_rule_has_a_refusal_here() {
    let dir = support::repo_root().join("rules/startup");
    let mut on_disk: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().to_str()?.strip_suffix(".yaml").map(str::to_string))
        .collect();
    on_disk.sort();
    let mut here: Vec<String> =
        REFUSALS.iter().map(|(id, _)| id.to_string()).chain(STARTS_BROKEN.iter().map(|id| id.to_string())).collect();
    here.sort();
    assert_eq!(on_disk, here);
}

#[test]
fn the_server_refuses_what_each_rule_fires_on_and_starts_on_what_it_passes() {
    let failures: Vec<String> = std::thread::scope(|scope| {
        let halves: Vec<_> = REFUSALS
            .chunks(REFUSALS.len().div_ceil(2))
            .map(|chunk| {
                scope.spawn(move || {
                    let mut failed = Vec::new();
                    for (rule, error) in chunk {
                        let refused = support::engine_start(&fixture(rule, "refused"));
                        if refused.started || !refused.errors.iter().any(|e| e.contains(error)) {
                            failed.push(format!("{rule}: refused fixture, expected `{error}`: {refused:?}"));
                        }
                        let starts = support::engine_start(&fixture(rule, "starts"));
                        if !starts.started {
                            failed.push(format!("{rule}: starts fixture did not start: {starts:?}"));
                        }
                    }
                    failed
                })
            })
            .collect();
        halves.into_iter().flat_map(|h| h.join().unwrap()).collect()
    });
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn the_server_starts_on_what_breaks_it_later() {
    for rule in STARTS_BROKEN {
        let broken = support::engine_start(&fixture(rule, "broken"));
        assert!(broken.started, "{rule}: {broken:?}");
    }
}

/// Rules of other areas whose finding also means the server will not start.
const REFUSED_ELSEWHERE: &[(&str, &str)] = &[("config/unknown-setting-in-profile/typo", "UNKNOWN_SETTING")];

#[test]
fn other_rules_that_mean_the_server_will_not_start() {
    for (tree, error) in REFUSED_ELSEWHERE {
        let refused = support::engine_start(&support::repo_root().join("rules").join(tree));
        assert!(!refused.started && refused.errors.iter().any(|e| e.contains(error)), "{tree}: {refused:?}");
    }
}
