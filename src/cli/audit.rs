//! `chaudit --config X`: the audit's arguments as a request, its verdict as an exit code.

use std::io::IsTerminal;
use std::path::Path;
use std::process::ExitCode;

use chaudit::audit::{self, AuditError, Live, ProjectSuppressions, Request, RulesRequest};
use chaudit::report::{self, text::TextOptions};
use chaudit::rules::RulePack;
use chaudit::verdict::{Policy, Status};

use super::{AuditArgs, Format, color_stdout, exit, live, report_all, stream_output, warn, write_output};

pub fn run(args: &AuditArgs, snapshot: Option<&Path>) -> ExitCode {
    let started = std::time::Instant::now();
    let asked = match snapshot {
        Some(_) => offline_only(args),
        None => args.connect.check_asked(),
    };
    if let Err(message) = asked {
        eprintln!("chaudit: {message}");
        return ExitCode::from(exit::USAGE_OR_CONFIG);
    }
    let server = args.connect.wanted() || args.connect.is_cluster();
    if args.connect.dry_run && (!server || snapshot.is_some()) {
        eprintln!(
            "chaudit: --dry-run shows the queries a server would be sent: give --dsn (a snapshot or a config reads no server)"
        );
        return ExitCode::from(exit::USAGE_OR_CONFIG);
    }
    if args.connect.dry_run {
        return live::print_plan(&args.connect, false);
    }
    // the endpoint is resolved only for --host-facts: resolving asks for a prompted password
    let remote = || args.connect.wanted() && args.connect.endpoint().is_ok_and(|e| !is_this_machine(&e.host));
    if args.host_facts && (snapshot.is_some() || args.connect.is_cluster() || remote()) {
        eprintln!(
            "chaudit: --host-facts reads the machine chaudit runs on: it describes a server on this machine, not a \
             snapshot's, a cluster's or a server on another machine"
        );
        return ExitCode::from(exit::USAGE_OR_CONFIG);
    }
    if let Some(Err(e)) = args.write_baseline.as_deref().map(chaudit::regular_file::ensure_replaceable) {
        eprintln!("chaudit: baseline: {e}");
        return exit::of_write_error(&e);
    }
    chaudit::rules::budget::set_limit(std::time::Duration::from_secs_f64(args.rule_budget));
    let version = args.clickhouse_version;
    let load = match super::config_show::load_options(args.default_include_from.as_deref()) {
        Ok(load) => load,
        Err(code) => return code,
    };
    let request = Request {
        config: args.config.clone(),
        load,
        version,
        snapshot: snapshot.map(Path::to_path_buf),
        host: args.host_facts.then(|| std::sync::Arc::new(chaudit::collect::host::collect())),
        rules: RulesRequest {
            builtin: !args.rules.no_builtin_rules,
            dirs: args.rules.dirs.clone(),
            select: args.select.clone(),
            ignore: args.ignore.clone(),
            params: args.params.clone(),
        },
        suppressions: args.suppressions.clone().map_or(ProjectSuppressions::Default, ProjectSuppressions::File),
        baseline: args.baseline.clone(),
        write_baseline: args.write_baseline.clone(),
        output: args.output.clone(),
        policy: Policy { fail_on: args.fail_on.severity(), allow_inconclusive: args.allow_inconclusive },
        config_view: matches!(args.format, Format::Html),
        fix_fragments: false,
    };
    // an output over a file the request names: refused before anything is read or written
    if let Err(e) = request.check_outputs(None) {
        eprintln!("chaudit: {e}");
        return exit::of_write_error(&e);
    }
    let footprint = std::cell::Cell::new(None);
    let mut verdict = match audit::run(&request, || collect_for_audit(args, &footprint)) {
        Ok(verdict) => verdict,
        Err(error) => return fail(args, error, started),
    };
    if let Some(stats) = footprint.take() {
        let rows = stats
            .rows_read
            .map_or_else(|| "rows read unknown for a readonly=1 user".to_string(), |r| format!("{r} rows read"));
        let rules = verdict.report.rules.len();
        eprintln!("chaudit: {} round trips to the server, {rows} ({rules} rules)", stats.round_trips);
    }
    let users_broken = matches!(verdict.broken, Some(("users", _)));
    if let (Some(loaded), Some(main), false) = (&verdict.loaded, &args.config, users_broken) {
        let users = super::config_show::users_warning(loaded, main);
        verdict.report.warnings.extend(users);
    }
    for w in &verdict.report.warnings {
        warn(w);
    }
    if args.new_only {
        verdict.report.new_only();
    }
    // stderr says why; the exit code is the verdict's, whatever is printed
    let broken = verdict.broken.take();
    let broken_shown = broken.is_some();
    let report = &verdict.report;
    if let Some((tree, err)) = broken {
        let audited = if tree == "users" { "server" } else { "users" };
        eprintln!("chaudit: error: the {tree} config cannot be processed; only the {audited} config was audited:");
        report_all(vec![err]);
    }
    // the broken tree's errors come first in the report's errors, and have been shown with their snippet
    for error in report.errors.iter().filter(|e| !broken_shown || e.location.is_none()) {
        eprintln!("chaudit: error: {}", error.message);
    }
    if report.summary.status == Status::Incomplete {
        let unread = report.unjudged.iter().any(|u| u.outcome == chaudit::eval::OutcomeKind::Inconclusive);
        let rules: std::collections::BTreeSet<&str> = report.unjudged.iter().map(|u| u.rule_id.as_str()).collect();
        eprintln!(
            "chaudit: error: the audit could not judge {} rule(s){}:",
            rules.len(),
            if unread { " (--allow-inconclusive accepts unread evidence)" } else { "" }
        );
        // a replica that could not be read is one line, with the rules it alone kept from
        // judging counted (the JSON report lists each); then one line per rule and reason,
        // naming the replicas it holds on: a fleet's same unread table is one line, not one per replica
        let lines = report.not_judged(&report.unjudged);
        for (group, rules) in &lines.unread {
            let hosts: Vec<&str> = group.iter().map(|r| r.host.as_str()).collect();
            let line = format!(
                "  {} could not be read: {} ({rules} rule(s) not judged on {})",
                chaudit::report::replicas_named(&hosts),
                group[0].reason,
                if hosts.len() == 1 { "it" } else { "each" }
            );
            eprintln!("{}", chaudit::mask::without_controls(&line));
        }
        for (u, hosts) in lines.rest {
            // a replica's name and a reason come from the servers: written out
            let line = format!(
                "  {}{}: {}: {}",
                u.rule_id,
                on_hosts(&hosts),
                chaudit::report::outcome_name(u.outcome),
                u.reason
            );
            eprintln!("{}", chaudit::mask::without_controls(&line));
        }
    }
    let code = verdict.status().exit_code();
    if let Some(path) = verdict.loaded.as_ref().and_then(|l| l.default_include.as_ref()) {
        eprintln!("chaudit: include file (the default, no <include_from>): {}", path.display());
    }
    // every format is streamed to the output a finding at a time, never rendered whole first
    let report = &verdict.report;
    let output = args.output.as_deref();
    let code = match args.format {
        Format::Text => {
            let mut options = TextOptions::new(color_stdout());
            if args.all {
                options.per_rule = None;
            }
            let sources = verdict.loaded.as_ref().map(|l| &l.sources);
            write_files(&verdict, output, |out| report::text::write(report, sources, &options, out), code)
        }
        Format::Sarif => write_files(&verdict, output, |out| report::sarif::write(report, out), code),
        Format::Junit => write_files(&verdict, output, |out| report::junit::write(report, out), code),
        Format::Openmetrics => {
            write_files(&verdict, output, |out| report::openmetrics::write(report, Some(started.elapsed()), out), code)
        }
        Format::Html => write_files(&verdict, output, |out| report::html::write(report, out), code),
        Format::Markdown => write_files(&verdict, output, |out| report::markdown::write(report, out), code),
        Format::Json => write_files(&verdict, output, |out| report::json::write(report, out), code),
    };
    // the process ends here: freeing a big config tree node by node would only delay the exit
    std::mem::forget(verdict);
    code
}

/// The baseline and the report file, all or none; or the baseline, then the report on stdout.
fn write_files(
    verdict: &audit::Audited,
    output: Option<&Path>,
    report: impl FnOnce(&mut dyn std::io::Write) -> std::io::Result<()>,
    code: u8,
) -> ExitCode {
    let written = match output {
        Some(path) => verdict.write_files(Some(path), report).map(|()| None),
        None => verdict.write_files(None, |_| Ok(())).map(|()| Some(report)),
    };
    match written {
        Ok(None) => ExitCode::from(code),
        Ok(Some(report)) => stream_output(None, report, code),
        Err(e) => {
            eprintln!("chaudit: {e}");
            exit::of_write_error(&e)
        }
    }
}

/// ` on HOST`, ` on A, B, C and N more replicas`, or nothing for a single server.
fn on_hosts(hosts: &[&str]) -> String {
    const SHOWN: usize = 3;
    match hosts {
        [] => String::new(),
        few if few.len() <= SHOWN + 1 => format!(" on {}", few.join(", ")),
        many => format!(" on {} and {} more replicas", many[..SHOWN].join(", "), many.len() - SHOWN),
    }
}

/// Whether a server's host is the machine chaudit runs on: loopback, or its own host name.
fn is_this_machine(host: &str) -> bool {
    let host = host.trim_start_matches('[').trim_end_matches(']');
    if host.eq_ignore_ascii_case("localhost") || host.parse::<std::net::IpAddr>().is_ok_and(|ip| ip.is_loopback()) {
        return true;
    }
    std::fs::read_to_string("/proc/sys/kernel/hostname").is_ok_and(|name| name.trim().eq_ignore_ascii_case(host))
}

/// `check --snapshot` judges the recorded facts, offline: a flag that reads a server or this
/// machine would mix another source into them.
fn offline_only(args: &AuditArgs) -> Result<(), String> {
    let c = &args.connect;
    let live = [
        (!c.dsn.is_empty(), "--dsn"),
        (c.host.is_some(), "--host"),
        (c.port.is_some(), "--port"),
        (c.cluster.is_some(), "--cluster"),
        (c.dry_run, "--dry-run"),
        (args.host_facts, "--host-facts"),
        (c.user.is_some(), "--user"),
        (c.password.is_some(), "--password"),
        (c.password_file.is_some(), "--password-file"),
    ];
    match live.iter().find(|(given, _)| *given) {
        Some((_, flag)) => Err(format!(
            "check --snapshot audits the recorded snapshot offline; {flag} reads a live server or this machine: \
             drop it, or run `chaudit {flag} …` without `check --snapshot`"
        )),
        None => Ok(()),
    }
}

/// Maps an audit error to its message and exit code; SARIF, JUnit, JSON, HTML and the metrics
/// carry it too, so a CI step that uploads the report shows why nothing was audited, and an
/// alert on the metrics fires.
fn fail(args: &AuditArgs, error: AuditError, started: std::time::Instant) -> ExitCode {
    let class = error.class();
    // an output that names an input is not written, not even with the error
    let writable = !matches!(error, AuditError::Output(_));
    let carried = (writable
        && matches!(args.format, Format::Sarif | Format::Junit | Format::Json | Format::Html | Format::Openmetrics))
    .then(|| {
        let target = args.config.as_ref().map_or_else(|| "chaudit".to_string(), |c| c.display().to_string());
        let base = args.config.as_ref().and_then(|m| m.parent()).map(|p| p.display().to_string()).unwrap_or_default();
        report::Report::of(report::Run::stopped(target, base, report::RunError::of(&error), class))
    });
    match error {
        AuditError::Config(e) => report_all(vec![*e]),
        AuditError::Rules(errors) => report_all(errors),
        AuditError::Suppressions(errors) => report_all(errors),
        AuditError::Selection(e) => report_all(vec![e]),
        other => eprintln!("chaudit: {other}"),
    }
    let code = class.status().exit_code();
    match carried {
        Some(report) => {
            let path = args.output.as_deref();
            match args.format {
                Format::Sarif => write_output(path, &report::sarif::render(&report), code),
                Format::Junit => write_output(path, &report::junit::render(&report), code),
                Format::Html => write_output(path, &report::html::render(&report), code),
                Format::Openmetrics => {
                    write_output(path, &report::openmetrics::render(&report, Some(started.elapsed())), code)
                }
                _ => stream_output(path, |out| report::json::write(&report, out), code),
            }
        }
        None => ExitCode::from(code),
    }
}

/// Reads the server or cluster the arguments name, if any (progress and `--stats` on stderr).
fn collect_for_audit(
    args: &AuditArgs,
    footprint: &std::cell::Cell<Option<live::Stats>>,
) -> Result<Option<Live>, AuditError> {
    let failed = |unread: live::Unread| AuditError::Collection { failure: unread.failure, message: unread.message };
    if args.connect.is_cluster() {
        let progress = matches!(args.format, Format::Text) && std::io::stderr().is_terminal() && !super::quiet();
        let (name, collected) = live::collect_cluster(&args.connect, progress).map_err(failed)?;
        if args.connect.stats {
            eprintln!(
                "chaudit: {} round trips for {} replicas ({})",
                collected.round_trips,
                collected.nodes.len(),
                collected.path.name()
            );
        }
        return Ok(Some(Live::Cluster { name, collected: Box::new(collected) }));
    }
    if !args.connect.wanted() {
        return Ok(None);
    }
    let (node, stats) = live::collect_live(&args.connect, false).map_err(failed)?;
    if args.connect.stats {
        footprint.set(Some(stats));
    }
    Ok(Some(Live::Node(Box::new(node))))
}

/// `chaudit collect`: the server's facts into a snapshot file (written whole or not at all).
pub fn collect(connect: &live::ConnectArgs, output: Option<&Path>) -> ExitCode {
    if connect.dry_run {
        return live::print_plan(connect, false);
    }
    if let Some(Err(e)) = output.map(chaudit::regular_file::ensure_replaceable) {
        eprintln!("chaudit: {e}");
        return exit::of_write_error(&e);
    }
    // what could not be read: the snapshot is written, and the exit says it is incomplete
    let snapshot = if connect.is_cluster() {
        match live::collect_cluster(connect, std::io::stderr().is_terminal() && !super::quiet()) {
            Ok((name, collected)) => audit::snapshot::of_cluster(name.as_deref(), &collected),
            Err(unread) => return unread.exit(),
        }
    } else {
        match live::collect_live(connect, false) {
            Ok((node, _)) => audit::snapshot::of_node(node),
            Err(unread) => return unread.exit(),
        }
    };
    let snapshot = match snapshot {
        Ok(snapshot) => snapshot,
        Err(e) => {
            eprintln!("chaudit: {e}");
            return ExitCode::from(exit::RUNTIME);
        }
    };
    for why in &snapshot.unread {
        eprintln!("chaudit: not collected: {}", chaudit::mask::without_controls(why));
    }
    if !snapshot.unread.is_empty() {
        eprintln!("chaudit: the snapshot is incomplete: {} fact(s) could not be read", snapshot.unread.len());
    }
    write_output(output, &snapshot.text, snapshot.status().exit_code())
}

pub fn load_pack(args: &super::RuleArgs) -> Result<RulePack, ExitCode> {
    RulePack::load(!args.no_builtin_rules, &args.dirs).map_err(|errors| {
        report_all(errors);
        ExitCode::from(exit::USAGE_OR_CONFIG)
    })
}
