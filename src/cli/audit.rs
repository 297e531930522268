//! `chaudit --config X`: the audit.

use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use chaudit::baseline::Baseline;
use chaudit::config::{self, LoadOptions, LoadedConfig, Location};
use chaudit::eval::Finding;
use chaudit::eval::{Selection, evaluate};
use chaudit::facts::{self, Facts};
use chaudit::report::RuleInfo;
use chaudit::report::{self, Report, text::TextOptions};
use chaudit::rules::Rule;
use chaudit::rules::{RulePack, Severity};
use chaudit::suppress::{self, date::Date};
use chaudit::version::Version;

use super::{AuditArgs, FailOn, Format, color_stdout, exit, live, report_all, write_stdout};

pub fn run(args: &AuditArgs, snapshot: Option<&Path>) -> ExitCode {
    if args.connect.dry_run {
        return live::print_plan(&args.connect, false);
    }
    if args.config.is_none() && !args.connect.wanted() && snapshot.is_none() && !args.host_facts {
        eprintln!(
            "chaudit: nothing to audit: give --config /etc/clickhouse-server/config.xml and/or --dsn http://host:8123 (see --help)"
        );
        return ExitCode::from(exit::USAGE_OR_CONFIG);
    }
    if let Some(Err(e)) = args.write_baseline.as_deref().map(chaudit::regular_file::ensure_replaceable) {
        eprintln!("chaudit: baseline: {e}");
        return exit::of_write_error(&e);
    }
    let version = match args.clickhouse_version.as_deref().map(str::parse::<Version>).transpose() {
        Ok(v) => v,
        Err(message) => {
            eprintln!("chaudit: --clickhouse-version: {message}");
            return ExitCode::from(exit::USAGE_OR_CONFIG);
        }
    };
    chaudit::eval::budget::set_limit(std::time::Duration::from_secs_f64(args.rule_budget));
    // the rule pack compiles while the config loads and the server answers
    std::thread::scope(|scope| {
        let pack = scope.spawn(|| load_pack(&args.rules));
        audit(args, snapshot, version, || pack.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic)))
    })
}

/// The audit once the arguments are checked; `pack` waits for the rule pack.
fn audit(
    args: &AuditArgs,
    snapshot: Option<&Path>,
    version: Option<Version>,
    pack: impl FnOnce() -> Result<RulePack, ExitCode>,
) -> ExitCode {
    let loaded = match &args.config {
        Some(main) => match config::load(main, &LoadOptions::default()) {
            Ok(loaded) => Some(loaded),
            Err(err) => {
                report_all(vec![err]);
                return ExitCode::from(exit::USAGE_OR_CONFIG);
            }
        },
        None => None,
    };
    // Problems ClickHouse starts with become findings of rules; fatal ones stopped the load.
    let mut facts = match (&loaded, &args.config) {
        (Some(loaded), Some(main)) => facts::config::facts(loaded, main.display().to_string(), version),
        _ => Facts::empty(String::new()),
    };
    let mut cluster_run = None;
    if let Some(path) = snapshot {
        match read_snapshot(path) {
            Ok(mut recorded) => {
                // a cluster snapshot: its nodes are audited as the cluster audit does
                if let Some(nodes) = recorded.document.remove("nodes") {
                    let name =
                        recorded.document.get("cluster").and_then(|c| c["name"].as_str()).filter(|n| !n.is_empty());
                    cluster_run =
                        chaudit::collect::cluster::Collected::from_json(&nodes).map(|c| (name.map(str::to_string), c));
                    recorded.document.remove("cluster");
                    recorded.sources.remove(&chaudit::facts::Source::Cluster);
                }
                facts.merge(recorded)
            }
            Err(message) => {
                eprintln!("chaudit: {message}");
                return ExitCode::from(exit::USAGE_OR_CONFIG);
            }
        }
    }
    let mut footprint = None;
    if args.connect.is_cluster() {
        let progress = matches!(args.format, Format::Text) && std::io::stderr().is_terminal();
        match live::collect_cluster(&args.connect, progress) {
            Ok(collected) => cluster_run = Some(collected),
            Err(code) => return code,
        }
    } else if args.connect.wanted() {
        match live::collect_live(&args.connect, false) {
            Ok((node, stats)) => {
                facts.add_live(node.live);
                if let Some(log) = node.log {
                    facts.add_log(log);
                }
                footprint = Some(stats);
            }
            Err(code) => return code,
        }
    }
    if args.host_facts {
        facts.add_host(chaudit::collect::host::collect());
    }
    facts.target = match &cluster_run {
        Some((name, collected)) => {
            let what = name.as_ref().map_or_else(|| "nodes".to_string(), |n| format!("cluster {n}"));
            format!("{what} ({} replicas, {})", collected.nodes.len(), collected.path.name())
        }
        None => target_name(args, &facts),
    };
    let pack = match pack() {
        Ok(pack) => pack,
        Err(code) => return code,
    };
    let selection = Selection { select: args.select.clone(), ignore: args.ignore.clone(), params: args.params.clone() };
    let mut evaluation = match &cluster_run {
        Some((name, collected)) => {
            if args.connect.stats {
                eprintln!(
                    "chaudit: {} round trips for {} replicas ({})",
                    collected.round_trips,
                    collected.nodes.len(),
                    collected.path.name()
                );
            }
            chaudit::cluster::audit(&pack, &facts, name.as_deref(), collected, &selection)
        }
        None => evaluate(&pack, &facts, &selection),
    };
    let warnings = match &loaded {
        Some(loaded) => match suppress(loaded, args, &mut evaluation.findings) {
            Ok(warnings) => warnings,
            Err(code) => return code,
        },
        None => Vec::new(),
    };
    if let (true, Some(stats)) = (args.connect.stats, footprint) {
        let rows = stats
            .rows_read
            .map_or_else(|| "rows read unknown for a readonly=1 user".to_string(), |r| format!("{r} rows read"));
        eprintln!("chaudit: {} round trips to the server, {rows} ({} rules)", stats.round_trips, pack.rules.len());
    }
    if let Some(path) = &args.baseline {
        match Baseline::read(path) {
            Ok(baseline) => baseline.apply(&mut evaluation.findings),
            Err(message) => {
                eprintln!("chaudit: {message}");
                return ExitCode::from(exit::USAGE_OR_CONFIG);
            }
        }
    }
    if let Some(path) = &args.write_baseline {
        let baseline = Baseline::of(&evaluation.findings);
        if let Err(e) = baseline.write(path) {
            eprintln!("chaudit: baseline: {e}");
            return exit::of_write_error(&e);
        }
        baseline.apply(&mut evaluation.findings);
    }
    let fail_on = match args.fail_on {
        FailOn::Critical => Some(Severity::Critical),
        FailOn::High => Some(Severity::High),
        FailOn::Medium => Some(Severity::Medium),
        FailOn::Low => Some(Severity::Low),
        FailOn::Info => Some(Severity::Info),
        FailOn::Never => None,
    };
    let mut report = Report::new(facts.target.clone(), evaluation, fail_on.unwrap_or(Severity::Critical));
    for w in &warnings {
        eprintln!("chaudit: warning: {w}");
    }
    let inconclusive = report.outcomes.iter().filter(|o| o.outcome == chaudit::eval::OutcomeKind::Inconclusive).count();
    if inconclusive > 0 {
        eprintln!(
            "chaudit: warning: {inconclusive} rule(s) inconclusive: some facts could not be read (see their reasons)"
        );
    }
    report.warnings = warnings;
    report.rules = pack.rules.iter().filter(|r| selection.includes(r)).map(rule_info).collect();
    report.artifact_base =
        args.config.as_ref().and_then(|m| m.parent()).map(|p| p.display().to_string()).unwrap_or_default();
    let failing = if fail_on.is_some() { report.summary.failing } else { 0 };
    let text = match args.format {
        Format::Text => {
            report::text::render(&report, loaded.as_ref().map(|l| &l.sources), &TextOptions { color: color_stdout() })
        }
        Format::Json => report::json::render(&report),
        Format::Markdown => report::markdown::render(&report),
        Format::Sarif => report::sarif::render(&report),
        Format::Junit => report::junit::render(&report),
    };
    let code = write_stdout(&text, if failing > 0 { exit::FINDINGS } else { exit::OK });
    // The process ends here: freeing a big config tree and its facts node by node would
    // only delay the exit.
    std::mem::forget((loaded, facts));
    code
}

/// What the report calls the audited thing: the config path and/or the server (no password).
fn target_name(args: &AuditArgs, facts: &Facts) -> String {
    let config = args.config.as_ref().map(|p| p.display().to_string());
    let server = facts.document.get("live").and_then(|l| l["endpoint"].as_str()).map(str::to_string);
    match (config, server) {
        (Some(c), Some(s)) => format!("{c} + {s}"),
        (Some(c), None) => c,
        (None, Some(s)) => s,
        (None, None) => facts.target.clone(),
    }
}

fn read_snapshot(path: &Path) -> Result<Facts, String> {
    let text = chaudit::regular_file::read_to_string(path)
        .map_err(|e| format!("cannot read snapshot {}: {e}", path.display()))?;
    serde_json::from_str(&text)
        .map_err(|e| format!("{}:{}:{}: not a chaudit snapshot: {e}", path.display(), e.line(), e.column()))
}

/// `chaudit collect`: the server's facts into a snapshot file (written whole or not at all).
pub fn collect(connect: &live::ConnectArgs, output: &Path) -> ExitCode {
    if connect.dry_run {
        return live::print_plan(connect, false);
    }
    if let Err(e) = chaudit::regular_file::ensure_replaceable(output) {
        eprintln!("chaudit: {e}");
        return exit::of_write_error(&e);
    }
    // what could not be read: the snapshot is written, and the exit says it is incomplete
    let mut unread = Vec::new();
    let facts = if connect.is_cluster() {
        let (name, collected) = match live::collect_cluster(connect, std::io::stderr().is_terminal()) {
            Ok(collected) => collected,
            Err(code) => return code,
        };
        for node in &collected.nodes {
            let failed =
                node.error.iter().cloned().chain(node.live.iter().chain(&node.log).flat_map(chaudit::collect::unread));
            unread.extend(failed.map(|why| format!("{}: {why}", node.name)));
        }
        let mut facts = Facts::empty(name.clone().map_or_else(|| "nodes".into(), |n| format!("cluster {n}")));
        facts.add_cluster(chaudit::cluster::document::document(name.as_deref(), &collected));
        facts.document.insert("nodes".into(), collected.to_json());
        facts
    } else {
        let (live, log) = match live::collect_live(connect, false) {
            Ok((node, _)) => (node.live, node.log),
            Err(code) => return code,
        };
        unread.extend(chaudit::collect::unread(&live));
        unread.extend(log.iter().flat_map(chaudit::collect::unread));
        let mut facts = Facts::empty(live["endpoint"].as_str().unwrap_or_default().to_string());
        facts.add_live(live);
        if let Some(log) = log {
            facts.add_log(log);
        }
        facts
    };
    let text = match serde_json::to_string_pretty(&facts) {
        Ok(t) => t + "\n",
        Err(e) => {
            eprintln!("chaudit: {e}");
            return ExitCode::from(exit::RUNTIME);
        }
    };
    match chaudit::regular_file::replace(output, text.as_bytes()) {
        Ok(()) if unread.is_empty() => ExitCode::from(exit::OK),
        Ok(()) => {
            for why in &unread {
                eprintln!("chaudit: not collected: {why}");
            }
            eprintln!(
                "chaudit: {} written, but incomplete: {} fact(s) could not be read",
                output.display(),
                unread.len()
            );
            ExitCode::from(exit::RUNTIME)
        }
        Err(e) => {
            eprintln!("chaudit: {e}");
            exit::of_write_error(&e)
        }
    }
}

/// Inline ignore comments and the project file, applied to the findings; returns the
/// warnings (unused or expired suppressions).
fn suppress(loaded: &LoadedConfig, args: &AuditArgs, findings: &mut [Finding]) -> Result<Vec<String>, ExitCode> {
    let (mut ignores, errors) = suppress::inline::collect(&loaded.sources);
    if !errors.is_empty() {
        report_all(errors);
        return Err(ExitCode::from(exit::USAGE_OR_CONFIG));
    }
    let project = args.suppressions.clone().or_else(|| Some(PathBuf::from(".chaudit.yaml")).filter(|p| p.is_file()));
    if let Some(path) = project {
        let resolve = |element: &str| -> Vec<Location> {
            [Some(&loaded.server.root), loaded.users_root()]
                .into_iter()
                .flatten()
                .filter_map(|root| root.find(element))
                .flat_map(|e| [loaded.locate(e.origin), loaded.locate(e.value_origin())])
                .collect()
        };
        match suppress::project::load(&path, &resolve) {
            Ok(mut more) => ignores.append(&mut more),
            Err(errors) => {
                report_all(errors);
                return Err(ExitCode::from(exit::USAGE_OR_CONFIG));
            }
        }
    }
    Ok(suppress::apply(findings, &ignores, Date::today()))
}

fn rule_info(r: &Rule) -> RuleInfo {
    RuleInfo {
        id: r.id.clone(),
        title: r.title.clone(),
        description: r.description.clone(),
        severity: r.severity,
        tags: r.tags.clone(),
        category: r.category.clone(),
        help_uri: r.references.iter().find(|u| u.starts_with("https://")).cloned(),
    }
}

pub fn load_pack(args: &super::RuleArgs) -> Result<RulePack, ExitCode> {
    RulePack::load(!args.no_builtin_rules, &args.dirs).map_err(|errors| {
        report_all(errors);
        ExitCode::from(exit::USAGE_OR_CONFIG)
    })
}
