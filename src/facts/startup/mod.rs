//! What stops clickhouse-server at start-up, read offline from the merged trees: each check
//! mirrors a throw on the server's start path (users config parsing, server settings, storage
//! configuration, listening sockets), and its reason carries the server's own message and
//! error code. docs/coverage.md lists each check with the function in ClickHouse's source.

use std::net::{IpAddr, Ipv4Addr};

use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

mod checks;
mod disks;
mod server;
mod users;

pub use checks::StartCheck;

use super::catalog;
use super::config::is_true;
use super::typed::Location;
use crate::config::{ConfigError, Element, LoadedConfig, Origin, model};

/// One way the config stops the server: which check, what it is about, the server's
/// reason, and the element to fix.
pub struct StartProblem {
    pub check: StartCheck,
    pub subject: String,
    /// Which of the subject's elements, when several of them can each fail (an `<ip>`, a
    /// setting, a quota limit); empty otherwise.
    pub part: String,
    pub reason: String,
    pub at: Origin,
}

/// The profiles of the official image's stock users.xml.
const STOCK_PROFILES: [&str; 2] = ["default", "readonly"];

/// Every way the loaded config stops the server; `disks` are its disks (`model::disks`),
/// `profiles` the users tree's (`model::profiles`).
pub fn problems(loaded: &LoadedConfig, disks: &[model::Disk], profiles: &[model::Profile]) -> Vec<StartProblem> {
    let mut out = Vec::new();
    let root = &loaded.server.root;
    users::users_source(loaded, &mut out);
    if let Some(users_root) = loaded.users_root() {
        // under a manifest the image's stock users.xml is there too: its profiles exist
        let stock: &[&str] = if loaded.over_image_files { &STOCK_PROFILES } else { &[] };
        users::users(root, users_root, profiles, stock, &mut out);
        users::profile_problems(root, profiles, stock, &mut out);
        users::quotas(users_root, &mut out);
        users::default_profile(loaded, root, users_root, profiles, &mut out);
    }
    server::server(root, &mut out);
    disks::disk_problems(disks, &mut out);
    server::system_logs(root, &mut out);
    server::log_levels(root, &mut out);
    server::clusters(root, &mut out);
    out
}

fn problem(out: &mut Vec<StartProblem>, check: StartCheck, subject: impl Into<String>, reason: String, at: Origin) {
    problem_in(out, check, subject, String::new(), reason, at);
}

/// A problem with one of a subject's several elements (`part`).
fn problem_in(
    out: &mut Vec<StartProblem>,
    check: StartCheck,
    subject: impl Into<String>,
    part: String,
    reason: String,
    at: Origin,
) {
    out.push(StartProblem { check, subject: subject.into(), part, reason, at });
}

/// Where the server was when it threw: `while parsing user 'u' in users configuration file`,
/// written only into a problem's reason (2,000 users need none).
struct Parsing<'a>(&'static str, &'a str);

impl std::fmt::Display for Parsing<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "while parsing {} '{}' in users configuration file", self.0, self.1)
    }
}

/// An address or subnet as AllowedClientHosts reads `<ip>`: `addr`, `addr/prefix` or
/// `addr/mask`.
fn is_subnet(value: &str) -> bool {
    let (addr, suffix) = match value.split_once('/') {
        Some((a, s)) => (a, Some(s)),
        None => (value, None),
    };
    let Ok(addr) = addr.parse::<IpAddr>() else { return false };
    let bits = if addr.is_ipv4() { 32 } else { 128 };
    match suffix {
        None => true,
        Some(s) => s.parse::<u32>().map_or_else(|_| s.parse::<IpAddr>().is_ok(), |n| n <= bits),
    }
}

/// Whether ClickHouse parses `value` as a setting of type `kind`. Only what is certainly
/// refused is flagged: a number type given no digit at all, a Bool that is no boolean word.
fn parses_as(kind: &str, value: &str) -> bool {
    let v = value.trim().to_ascii_lowercase();
    let numeric = ["UInt", "Int", "Float", "Seconds", "Milliseconds", "NonZeroUInt", "MaxThreads", "Double"]
        .iter()
        .any(|prefix| kind.starts_with(prefix));
    if kind == "Bool" {
        return matches!(v.as_str(), "0" | "1" | "true" | "false" | "yes" | "no" | "on" | "off" | "enable" | "disable");
    }
    if numeric {
        return v.bytes().any(|b| b.is_ascii_digit()) || matches!(v.as_str(), "auto" | "inf" | "-inf" | "nan" | "");
    }
    true
}

/// A start-up problem as the rules read it (`config.start_problems`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct StartProblemFact {
    /// which check (the rule under rules/startup/ of that name)
    pub check: String,
    /// the user, profile, disk, setting or file it is about
    pub subject: String,
    /// which of the subject's elements, when several can each fail (an <ip>, a setting, a quota interval's limit, a replica); empty otherwise
    pub part: String,
    /// the server's error message and code
    pub reason: String,
    /// the element to fix
    pub at: Location,
}

crate::fact_object!(StartProblemFact { check, subject, part, reason, at });

/// The facts of the problems, each located by `at`.
pub fn facts(
    loaded: &LoadedConfig,
    disks: &[model::Disk],
    profiles: &[model::Profile],
    at: impl Fn(Origin) -> Location,
) -> Vec<StartProblemFact> {
    problems(loaded, disks, profiles)
        .into_iter()
        .map(|p| StartProblemFact {
            check: p.check.id().to_string(),
            subject: p.subject,
            part: p.part,
            reason: p.reason,
            at: at(p.at),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn subnets_read_as_the_server_reads_them() {
        for ok in ["::1", "127.0.0.1", "10.0.0.0/8", "::/0", "192.168.0.0/255.255.0.0", "2001:db8::/32"] {
            assert!(is_subnet(ok), "{ok}");
        }
        for bad in ["localhost", "10.0.0.0/33", "::/129", "300.1.1.1", "10.0.0.0/x", ""] {
            assert!(!is_subnet(bad), "{bad}");
        }
    }

    #[test]
    fn only_values_certainly_refused_are_unparsable() {
        assert!(parses_as("UInt64", "10G"));
        assert!(parses_as("MaxThreads", "auto"));
        assert!(parses_as("Float", "0.9"));
        assert!(!parses_as("UInt64", "many"));
        assert!(!parses_as("Bool", "maybe"));
        assert!(parses_as("String", "anything"));
    }
}
