//! The audit as one library call: a [`Request`] (what to read, which rules, the exit
//! policy) in, an [`Audited`] (the report with its verdict) out. Offline,
//! snapshot, live and cluster audits are this one path; the command line only maps its
//! arguments to a request and the verdict to an exit code.

pub mod snapshot;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use miette::Diagnostic;
use thiserror::Error;

use crate::baseline::Baseline;
use crate::collect::NodeDocuments;
use crate::collect::cluster::Collected;
use crate::config::{self, ConfigError, LoadOptions, LoadedConfig};
use crate::eval::{OutcomeKind, Selection, SelectionError, Variables, evaluate_with};
use crate::facts::{self, Facts, Source, keys};
use crate::report::{Report, RuleInfo, Run, RunError};
use crate::rules::{Rule, RuleError, RulePack};
use crate::suppress::{self, SuppressionError, date::Date};
use crate::verdict::{self, Failure, Policy};
use crate::version::Version;

pub use snapshot::read_snapshot;

/// Which rules: the built-in pack and/or rule directories, the selection and params.
#[derive(Debug, Clone, Default)]
pub struct RulesRequest {
    pub builtin: bool,
    pub dirs: Vec<PathBuf>,
    pub select: Vec<String>,
    pub ignore: Vec<String>,
    /// `--param [RULE.]NAME=VALUE`, checked against the rules' declared params.
    pub params: Vec<(String, String)>,
}

/// Where the suppressions of the project file come from.
#[derive(Debug, Clone)]
pub enum ProjectSuppressions {
    /// `.chaudit.yaml` in the working directory, when there is one.
    Default,
    /// A named file: it must exist.
    File(PathBuf),
}

/// What a server (or a cluster) gave: collected before the audit by the caller, which
/// owns the connection, its progress display and its errors.
pub enum Live {
    Node(Box<NodeDocuments>),
    Cluster { name: Option<String>, collected: Box<Collected> },
}

pub struct Request {
    /// The main server config; config.d/, conf.d/ and the users config come with it.
    pub config: Option<PathBuf>,
    pub load: LoadOptions,
    /// The version the config runs on, for version-gated rules (a server's own wins).
    pub version: Option<Version>,
    /// A recorded snapshot (`chaudit collect`), audited as if collected now.
    pub snapshot: Option<PathBuf>,
    /// Facts of the machine chaudit runs on (`--host-facts`).
    pub host: Option<std::sync::Arc<crate::facts::document::Document>>,
    pub rules: RulesRequest,
    pub suppressions: ProjectSuppressions,
    pub baseline: Option<PathBuf>,
    pub write_baseline: Option<PathBuf>,
    /// Where the caller writes the report (`-o`): checked, with `write_baseline`, to name no
    /// input of the run before anything is written.
    pub output: Option<PathBuf>,
    pub policy: Policy,
    /// Whether the report carries the merged config trees read (for the HTML report).
    pub config_view: bool,
    /// Whether the run keeps the findings' config fragments as rendered, before the report
    /// masks them (`chaudit fix` writes them): 100,000 findings' copies are not held otherwise.
    pub fix_fragments: bool,
}

impl Request {
    /// The files the request names that the run reads.
    pub fn inputs(&self) -> Vec<(&'static str, &Path)> {
        let mut inputs: Vec<(&'static str, &Path)> = Vec::new();
        inputs.extend(self.config.as_deref().map(|p| ("the main config", p)));
        inputs.extend(self.snapshot.as_deref().map(|p| ("the snapshot", p)));
        inputs.extend(self.baseline.as_deref().map(|p| ("the baseline", p)));
        match &self.suppressions {
            ProjectSuppressions::File(path) => inputs.push(("the suppressions file", path)),
            ProjectSuppressions::Default => inputs.push(("the suppressions file", Path::new(".chaudit.yaml"))),
        }
        inputs
    }

    /// Checks that the outputs (`-o`, `--write-baseline`) name no input and not each other:
    /// `loaded` adds every file of the config (fragments, include_from files, the users config).
    pub fn check_outputs(&self, loaded: Option<&LoadedConfig>) -> Result<(), crate::regular_file::WriteError> {
        let outputs = [("the report", &self.output), ("the baseline to write", &self.write_baseline)];
        let outputs: Vec<(&'static str, &Path)> =
            outputs.iter().filter_map(|(w, p)| Some((*w, p.as_deref()?))).collect();
        let mut inputs = self.inputs();
        inputs.extend(loaded.into_iter().flat_map(LoadedConfig::inputs));
        for (i, (_, output)) in outputs.iter().enumerate() {
            inputs.extend(outputs[..i].iter().copied());
            crate::regular_file::ensure_not_input(output, &inputs)?;
        }
        Ok(())
    }
}

/// Why an audit could not run. `class()` says whether the user asked for something
/// impossible (usage, config, rule pack) or the run itself failed.
#[derive(Debug, Error, Diagnostic)]
pub enum AuditError {
    #[error(
        "nothing to audit: give --config /etc/clickhouse-server/config.xml and/or a server (-h HOST[:PORT], \
         --dsn http://host:8123; CLICKHOUSE_HOST, CLICKHOUSE_USER and CLICKHOUSE_PASSWORD then complete it, \
         they never start a live audit alone) (see --help)"
    )]
    #[diagnostic(code(chaudit::audit::nothing))]
    NothingToAudit,
    #[error(transparent)]
    #[diagnostic(transparent)]
    Config(Box<ConfigError>),
    #[error("the rule pack has {} problem(s)", .0.len())]
    #[diagnostic(code(chaudit::rules::pack))]
    Rules(#[related] Vec<RuleError>),
    #[error(transparent)]
    #[diagnostic(transparent)]
    Selection(#[from] SelectionError),
    #[error("{0}")]
    #[diagnostic(code(chaudit::snapshot::invalid))]
    Snapshot(String),
    #[error("the suppressions have {} problem(s)", .0.len())]
    #[diagnostic(code(chaudit::suppress::file))]
    Suppressions(#[related] Vec<SuppressionError>),
    #[error("{0}")]
    #[diagnostic(code(chaudit::baseline::read))]
    Baseline(String),
    #[error("baseline: {0}")]
    #[diagnostic(code(chaudit::baseline::write))]
    WriteBaseline(crate::regular_file::WriteError),
    /// An output names an input of the run (or another output): nothing is written.
    #[error("{0}")]
    #[diagnostic(code(chaudit::output))]
    Output(crate::regular_file::WriteError),
    /// The server (or a cluster) could not be read.
    #[error("{message}")]
    #[diagnostic(code(chaudit::collect::failed))]
    Collection { failure: Failure, message: String },
}

impl AuditError {
    pub fn class(&self) -> Failure {
        match self {
            // a target that is not a regular file is the user's mistake
            AuditError::WriteBaseline(e) if e.is_usage() => Failure::Usage,
            AuditError::WriteBaseline(_) => Failure::Runtime,
            AuditError::Output(e) if e.is_usage() => Failure::Usage,
            AuditError::Output(_) => Failure::Runtime,
            AuditError::Collection { failure, .. } => *failure,
            _ => Failure::Usage,
        }
    }
}

/// The audit's result: the report (with its verdict), and the loaded config (for snippets).
pub struct Audited {
    pub report: Report,
    pub loaded: Option<LoadedConfig>,
    /// A config tree ClickHouse refuses while the other loads: which one, and its error
    /// (the report's status is [`Status::NotAudited`](crate::verdict::Status::NotAudited)).
    pub broken: Option<(&'static str, ConfigError)>,
    /// The config fragments of the findings, by fingerprint, as rendered (when the request
    /// asks for them): the report masks their secrets, `chaudit fix` writes them as they are.
    pub fragments: Vec<(String, Vec<crate::eval::Fragment>)>,
    /// The baseline to write (`--write-baseline`): its path and text, written with the
    /// report by [`Audited::write_files`].
    pub baseline_file: Option<(PathBuf, String)>,
}

impl Audited {
    pub fn status(&self) -> crate::verdict::Status {
        self.report.summary.status
    }

    /// Writes the baseline (`--write-baseline`) and the report to `output`, all or none;
    /// with no `output` (the report goes to stdout), the baseline alone.
    pub fn write_files(
        &self,
        output: Option<&Path>,
        report: impl FnOnce(&mut dyn std::io::Write) -> std::io::Result<()>,
    ) -> Result<(), crate::regular_file::WriteError> {
        let mut transaction = crate::regular_file::Transaction::default();
        let mut paths = Vec::new();
        let staged = self
            .baseline_file
            .as_ref()
            .map_or(Ok(()), |(path, text)| {
                paths.push(path.as_path());
                transaction.stage(path, text.as_bytes())
            })
            .and_then(|()| match output {
                Some(path) => {
                    paths.push(path);
                    transaction.stage_with(path, report)
                }
                None => Ok(()),
            });
        // the report's target, when the baseline's failed first, is said to be left as well
        paths.extend(output.filter(|o| !paths.contains(o)));
        staged.and_then(|()| transaction.commit()).map_err(|e| crate::regular_file::none_written(e, &paths))
    }
}

/// Runs the audit. `collect` reads the server(s), if the request has any; it runs while
/// the rule pack compiles.
pub fn run(
    request: &Request,
    collect: impl FnOnce() -> Result<Option<Live>, AuditError>,
) -> Result<Audited, AuditError> {
    // the rule pack compiles while the config loads and the server answers
    let (pack, gathered) = std::thread::scope(|scope| {
        let pack = scope.spawn(|| {
            let pack =
                RulePack::load_for_audit(request.rules.builtin, &request.rules.dirs).map_err(AuditError::Rules)?;
            // the built-in rules that read only the config are checked (their expressions
            // parsed) while the config still loads: they run whenever there is a config
            if request.config.is_some() {
                for rule in pack.rules.iter().filter(|r| r.sources.iter().all(|s| *s == Source::Config)) {
                    rule.reads();
                }
            }
            Ok::<RulePack, AuditError>(pack)
        });
        let gathered = gather(request, collect);
        (pack.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic)), gathered)
    });
    let pack = pack?;
    let (mut loaded, mut facts, live) = gathered?;
    // a manifest runs the version of its pod template's image, unless a server or the request says
    let image = match (&facts.version, &loaded) {
        (None, Some(l)) => l.manifest.as_ref().and_then(|m| m.image_version()),
        _ => None,
    };
    if let Some((_, version)) = &image {
        facts.version = Some(*version);
    }
    // before anything is written: no report or baseline over a file the run reads
    request.check_outputs(loaded.as_ref()).map_err(AuditError::Output)?;
    let rules = &request.rules;
    let selection = Selection::new(&pack, &rules.select, &rules.ignore, &rules.params)?;
    // only the config facts read by the selected rules that can apply are built (an offline
    // audit builds none for the live rules), for the version that reads them; a cluster's
    // replicas bring their own sources
    let can_apply = |rule: &crate::rules::Rule| {
        matches!(live, Some(Live::Cluster { .. }))
            || rule.sources.iter().all(|s| *s == Source::Config || facts.sources.contains(s))
    };
    let wanted: BTreeSet<String> = pack
        .rules
        .iter()
        .filter(|r| selection.includes(r) && can_apply(r))
        .flat_map(|r| r.reads_of(Source::Config).map(str::to_string))
        .collect();
    let config_facts = |version: Option<Version>| {
        let (Some(loaded), Some(main)) = (&loaded, &request.config) else { return None };
        Some(facts::config::facts_read(loaded, &wanted, loaded.target(main), version))
    };
    let mut evaluation = match &live {
        // each replica reads the config with the catalog of the version it runs
        Some(Live::Cluster { name, collected }) => {
            crate::cluster::audit(&pack, &facts, &config_facts, name.as_deref(), collected, &selection)
        }
        _ => {
            if let Some(mut config) = config_facts(facts.version) {
                config.merge(std::mem::replace(&mut facts, Facts::empty(String::new())));
                facts = config;
            }
            let variables = Variables::of(&facts);
            let evaluation = evaluate_with(&pack, &facts, &variables, &selection);
            // as the facts and the pack below: the process is about to end
            std::mem::forget(variables);
            evaluation
        }
    };
    let installation = loaded.as_ref().and_then(|l| l.manifest.as_ref());
    for finding in &mut evaluation.findings {
        finding.remediation.in_manifest_terms(&finding.fingerprint, installation);
    }
    let mut warnings = match &loaded {
        Some(loaded) => suppress_findings(loaded, &request.suppressions, &mut evaluation.findings)?,
        None => suppress_findings_without_config(&request.suppressions, &mut evaluation.findings)?,
    };
    if let Some(path) = &request.baseline {
        Baseline::read(path).map_err(AuditError::Baseline)?.apply(&mut evaluation.findings);
    }
    // one of the two trees ClickHouse refuses: the other was audited, the run was not what was asked
    let broken = loaded.as_mut().and_then(|l| match (l.users_error.take(), l.server_error.take()) {
        (Some(err), _) => Some(("users", err)),
        (None, Some(err)) => Some(("server", err)),
        (None, None) => None,
    });
    // the broken tree's error keeps its file and line (CI formats place it there)
    let errors: Vec<RunError> = broken
        .iter()
        .flat_map(|(tree, err)| {
            let other = if *tree == "users" { "server" } else { "users" };
            RunError::of(err).into_iter().map(move |mut e| {
                e.message = format!(
                    "the {tree} config cannot be processed; only the {other} config was audited: {}",
                    e.message
                );
                e
            })
        })
        .collect();
    let mut baseline_file = None;
    if let Some(path) = &request.write_baseline {
        let mut baseline = Baseline::of(&evaluation.findings);
        let judged =
            verdict::judge(&evaluation.outcomes, !errors.is_empty(), None, 0, request.policy.allow_inconclusive);
        if !judged.status.judged() && path.is_file() {
            // what this run could not judge keeps its old entries: a broken run loses nothing
            let unjudged: BTreeSet<String> = judged.unjudged.into_iter().map(|u| u.rule_id).collect();
            let everything = judged.status == verdict::Status::NotAudited;
            let old = Baseline::read(path).map_err(AuditError::Baseline)?;
            baseline = baseline.keeping(old, |e| everything || unjudged.contains(&e.rule_id));
        }
        baseline.apply(&mut evaluation.findings);
        baseline_file = Some((path.clone(), baseline.to_text()));
    }
    // what ClickHouse would start with and log (a users_config naming no file, an `incl` with no substitution)
    if let Some(loaded) = loaded.as_mut() {
        warnings.extend(std::mem::take(&mut loaded.problems).iter().map(ToString::to_string));
    }
    // the users the entrypoint's file changes matter only to the rules about users
    if wanted.contains(keys::config::USERS.name()) {
        warnings.extend(loaded.as_ref().and_then(config::entrypoint::note));
    }
    if let Some((image, version)) = &image {
        warnings.push(format!(
            "judged as ClickHouse {version}, the version of the pod template's image {image} (--clickhouse-version overrides it)"
        ));
    }
    if let Some(keeper) =
        loaded.as_ref().and_then(|l| l.manifest.as_ref()).filter(|m| m.kind == config::manifest::KEEPER_KIND)
    {
        warnings.push(format!(
            "the ClickHouseKeeperInstallation `{}` is audited as the Keeper config of its first host: the rules of a \
             ClickHouse server's config do not apply",
            keeper.name
        ));
    }
    let unread = evaluation.outcomes.iter().filter(|o| o.outcome == OutcomeKind::Inconclusive).count();
    if unread > 0 {
        warnings.push(format!("{unread} rule(s) inconclusive: some facts could not be read (see their reasons)"));
    }
    facts.target = target_name(request, loaded.as_ref(), &facts, live.as_ref());
    let fragments = if request.fix_fragments {
        evaluation
            .findings
            .iter()
            .filter(|f| !f.remediation.fragments.is_empty())
            .map(|f| (f.fingerprint.clone(), f.remediation.fragments.clone()))
            .collect()
    } else {
        Vec::new()
    };
    let config_view = match (&loaded, request.config_view) {
        (Some(loaded), true) => {
            let pointed: Vec<config::Location> =
                evaluation.findings.iter().filter_map(|f| f.location.clone()).collect();
            crate::report::ConfigView::of(loaded, broken.as_ref().map(|(tree, _)| *tree), &pointed)
        }
        _ => Vec::new(),
    };
    let mut report = Report::of(Run {
        target: facts.target.clone(),
        evaluation,
        policy: request.policy,
        errors,
        failure: None,
        warnings,
        rules: pack.rules.iter().filter(|r| selection.includes(r)).map(rule_info).collect(),
        artifact_base: request
            .config
            .as_ref()
            .and_then(|m| m.parent())
            .map(|p| p.display().to_string())
            .unwrap_or_default(),
    });
    report.config = config_view;
    // the process is about to end: freeing a big config's facts, or the rules' syntax trees,
    // node by node only delays it
    std::mem::forget(facts);
    std::mem::forget(pack);
    Ok(Audited { report, loaded, broken, fragments, baseline_file })
}

/// The config, the snapshot, the server and the host: everything the rules will read.
fn gather(
    request: &Request,
    collect: impl FnOnce() -> Result<Option<Live>, AuditError>,
) -> Result<(Option<LoadedConfig>, Facts, Option<Live>), AuditError> {
    let loaded = match &request.config {
        Some(main) => Some(config::load_each(main, &request.load).map_err(|e| AuditError::Config(Box::new(e)))?),
        None => None,
    };
    // the config's facts are built once the rules are known (only what they read)
    let mut facts = Facts::empty(String::new());
    facts.version = request.version;
    let mut live = None;
    if let Some(path) = &request.snapshot {
        let (recorded, cluster) = read_snapshot(path)?;
        facts.merge(recorded);
        live = cluster;
    }
    match collect()? {
        Some(Live::Node(node)) => {
            let NodeDocuments { live: documents, log, .. } = *node;
            facts.add_live(documents.into_value());
            if let Some(log) = log {
                facts.add_log(log);
            }
        }
        Some(cluster @ Live::Cluster { .. }) => live = Some(cluster),
        None => {}
    }
    if let Some(host) = &request.host {
        facts.add_host(std::sync::Arc::clone(host));
    }
    if loaded.is_none() && facts.is_empty() && live.is_none() {
        return Err(AuditError::NothingToAudit);
    }
    Ok((loaded, facts, live))
}

/// What the report calls the audited thing: the config path and/or the server (no password).
fn target_name(request: &Request, loaded: Option<&LoadedConfig>, facts: &Facts, live: Option<&Live>) -> String {
    if let Some(Live::Cluster { name, collected }) = live {
        let what = name.as_ref().map_or_else(|| "nodes".to_string(), |n| format!("cluster {n}"));
        return format!("{what} ({} replicas, {})", collected.nodes.len(), collected.path.name());
    }
    let config = request.config.as_ref().map(|p| loaded.map_or_else(|| p.display().to_string(), |l| l.target(p)));
    let server = facts.collected(Source::Live).map(|live| keys::live::ENDPOINT.text(live).to_string());
    match (config, server) {
        (Some(c), Some(s)) => format!("{c} + {s}"),
        (Some(c), None) => c,
        (None, Some(s)) => s,
        (None, None) => facts.target.clone(),
    }
}

/// The project file's path, if one applies: a named file must exist.
fn project_file(suppressions: &ProjectSuppressions) -> Result<Option<PathBuf>, AuditError> {
    match suppressions {
        ProjectSuppressions::Default => Ok(Some(PathBuf::from(".chaudit.yaml")).filter(|p| p.is_file())),
        // not a regular file (a FIFO): the reader refuses it and says what it is
        ProjectSuppressions::File(path) if path.exists() => Ok(Some(path.clone())),
        ProjectSuppressions::File(path) => Err(AuditError::Suppressions(vec![SuppressionError::Read {
            path: path.display().to_string(),
            message: "no such file (named with --suppressions)".into(),
        }])),
    }
}

/// Inline ignore comments and the project file, applied to the findings; returns the
/// warnings (unused or expired suppressions).
fn suppress_findings(
    loaded: &LoadedConfig,
    suppressions: &ProjectSuppressions,
    findings: &mut [crate::eval::Finding],
) -> Result<Vec<String>, AuditError> {
    let (mut ignores, errors) = suppress::inline::collect(&loaded.sources);
    if !errors.is_empty() {
        return Err(AuditError::Suppressions(errors));
    }
    if let Some(path) = project_file(suppressions)? {
        let resolve = |element: &str| -> Vec<config::Location> {
            [Some(&loaded.server.root), loaded.users_root()]
                .into_iter()
                .flatten()
                .filter_map(|root| root.find(element))
                .flat_map(|e| [loaded.locate(e.origin), loaded.locate(e.value_origin())])
                .collect()
        };
        ignores.append(&mut suppress::project::load(&path, &resolve).map_err(AuditError::Suppressions)?);
    }
    Ok(suppress::apply(findings, &ignores, Date::today()))
}

/// A live, snapshot or host audit without config files: only the project file applies
/// (an `element:` entry has no tree to resolve against and matches nothing).
fn suppress_findings_without_config(
    suppressions: &ProjectSuppressions,
    findings: &mut [crate::eval::Finding],
) -> Result<Vec<String>, AuditError> {
    let Some(path) = project_file(suppressions)? else { return Ok(Vec::new()) };
    let ignores = suppress::project::load(&path, &|_| Vec::new()).map_err(AuditError::Suppressions)?;
    Ok(suppress::apply(findings, &ignores, Date::today()))
}

pub fn rule_info(r: &Rule) -> RuleInfo {
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
