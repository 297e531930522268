//! `chaudit fix` as one library call: audit a config tree, write the config fragments of
//! its findings to files that sort after every other fragment (`config.d/zz-chaudit-fix.xml`
//! and `users.d/zz-chaudit-fix.xml`, folding in an earlier run's), then audit again and say
//! which findings the fix cleared. The user's own files are never edited: removals are
//! ClickHouse's own `remove="1"` markers in the fix file. On a ClickHouseInstallation the
//! operator writes the server's files: its fixes are merged into the manifest file itself
//! (see [`manifest`]).

mod manifest;
mod manifest_change;
mod manifest_yaml;

use manifest::ManifestEdit;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use crate::audit::{self, AuditError, Audited, ProjectSuppressions, Request, RulesRequest};
use crate::config::fragment;
use crate::config::{LoadOptions, LoadedConfig};
use crate::eval::Finding;
use crate::rules::{ConfigTree, FIX_FILE, Severity};
use crate::verdict::{Failure, Policy};
use crate::version::Version;

/// What to fix, and how.
pub struct FixRequest {
    /// The main server config.
    pub config: PathBuf,
    pub load: LoadOptions,
    pub version: Option<Version>,
    pub rules: RulesRequest,
    /// Plan and show the fix files, write nothing.
    pub dry_run: bool,
    /// Where to write the SQL of the findings fixed by a statement, with the fix files (all
    /// or none).
    pub sql: Option<PathBuf>,
}

/// A finding as the fix reports it.
#[derive(Debug, Clone)]
pub struct Item {
    pub rule_id: String,
    pub severity: Severity,
    /// `file:line`, when the finding has a place.
    pub at: Option<String>,
    pub message: String,
}

/// `rule [severity] (file:line): message`.
impl std::fmt::Display for Item {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let at = self.at.as_deref().map_or_else(String::new, |a| format!(" ({a})"));
        write!(f, "{} [{}]{at}: {}", self.rule_id, self.severity.name(), self.message)
    }
}

impl Item {
    fn of(f: &Finding) -> Item {
        Item {
            rule_id: f.rule_id.clone(),
            severity: f.severity,
            at: f.location.as_ref().map(|l| format!("{}:{}", l.file, l.line)),
            message: f.message.clone(),
        }
    }
}

/// One fix file: where it goes, what it held before and what it holds now.
#[derive(Debug, Clone)]
pub struct FixFile {
    pub path: PathBuf,
    /// The path as shown: relative to the main config's directory when under it.
    pub shown: String,
    pub tree: ConfigTree,
    /// The file's text before the run (empty when it did not exist).
    pub before: String,
    pub after: String,
    /// How many findings' fragments went into it this run.
    pub fixes: usize,
    /// The Kubernetes manifest itself, edited: the installation the fixes went into.
    pub manifest: Option<String>,
}

impl FixFile {
    /// The change as a unified diff (`--dry-run`), secrets masked on both sides (an earlier
    /// run's file may hold one); masking keeps the line count, so the hunks stay true.
    pub fn diff(&self) -> String {
        let shown = &self.shown;
        let old = if self.before.is_empty() { "/dev/null".to_string() } else { format!("a/{shown}") };
        let (before, after) = (crate::mask::mask_source(&self.before), crate::mask::mask_source(&self.after));
        similar::TextDiff::from_lines(before.as_ref(), after.as_ref())
            .unified_diff()
            .header(&old, &format!("b/{shown}"))
            .to_string()
    }
}

/// What the run did and what the re-audit found.
#[derive(Debug, Default)]
pub struct FixOutcome {
    pub files: Vec<FixFile>,
    /// Findings whose fragments were written.
    pub applied: Vec<Item>,
    /// Findings only the user can fix (a password, a host to choose), with what to do.
    pub needs_user: Vec<(Item, String)>,
    /// Findings with neither fragments nor steps (a live finding's SQL, a query to run).
    pub sql: Vec<(Item, String)>,
    /// Findings fixed by a command on the server's host, with it.
    pub commands: Vec<(Item, String)>,
    /// Findings with no remediation chaudit can write or describe.
    pub no_fix: Vec<Item>,
    /// Findings with a fragment that the re-audit still reports, each with why.
    pub remaining: Vec<(Item, String)>,
    /// Findings of medium severity or more that the fixed tree has and the original had not.
    pub introduced: Vec<Item>,
    /// Some written fix needs a server restart to take effect.
    pub restart: Vec<String>,
    /// Warnings (a user fragment sorting after the fix file).
    pub warnings: Vec<String>,
    /// Nothing written: `--dry-run`.
    pub dry_run: bool,
}

impl FixOutcome {
    /// The findings this run leaves at or above `fail_on` (none: `--fail-on never`), each with
    /// why: a fixed finding the re-audit still reports, one only the user can fix (a value to
    /// choose, or a fix refused), one fixed by SQL, one with no fix; and every finding of
    /// medium or more the fix brought. A run that leaves none exits 0: `chaudit fix && deploy`
    /// deploys no tree the server refuses.
    /// The fix's verdict: failing while a finding is [`unresolved`](Self::unresolved).
    pub fn status(&self, fail_on: Option<Severity>) -> crate::verdict::Status {
        crate::verdict::of_counts(self.unresolved(fail_on).len(), 0)
    }

    pub fn unresolved(&self, fail_on: Option<Severity>) -> Vec<(&Item, String)> {
        let counts = |item: &Item| fail_on.is_some_and(|floor| item.severity >= floor);
        let mut out: Vec<(&Item, String)> = Vec::new();
        out.extend(self.remaining.iter().map(|(item, why)| (item, why.clone())));
        out.extend(
            self.needs_user.iter().filter(|(i, _)| counts(i)).map(|(item, _)| (item, "needs you (see above)".into())),
        );
        out.extend(
            self.sql
                .iter()
                .filter(|(i, _)| counts(i))
                .map(|(item, _)| (item, "fixed by SQL on the server (--sql FILE writes it)".into())),
        );
        out.extend(
            self.commands
                .iter()
                .filter(|(i, _)| counts(i))
                .map(|(item, _)| (item, "fixed by a command on the host".into())),
        );
        out.extend(self.no_fix.iter().filter(|i| counts(i)).map(|item| (item, "no fix chaudit can write".into())));
        out.extend(self.introduced.iter().map(|item| (item, "brought by the fix".into())));
        out
    }
}

#[derive(Debug, thiserror::Error, miette::Diagnostic)]
pub enum FixError {
    #[error(transparent)]
    #[diagnostic(transparent)]
    Audit(#[from] AuditError),
    /// A tree ClickHouse would refuse cannot be fixed by adding a fragment to it.
    #[error("{tree} config does not load, so no fragment can be merged into it: {reason}")]
    #[diagnostic(code(chaudit::fix::unloadable))]
    Unloadable { tree: &'static str, reason: String },
    #[error("the fix file {path} is not a config fragment chaudit can fold into: {reason}")]
    #[diagnostic(code(chaudit::fix::earlier_file), help("move it away, or delete it, and run `chaudit fix` again"))]
    EarlierFile { path: String, reason: String },
    #[error("{0}")]
    #[diagnostic(code(chaudit::fix::write))]
    Write(crate::regular_file::WriteError),
    #[error(transparent)]
    #[diagnostic(code(chaudit::fix::lock))]
    Lock(#[from] crate::regular_file::lock::LockError),
    /// The manifest holds a value chaudit masks in everything it writes (a credential of this
    /// run, a value from the environment): written, the manifest would lose it.
    #[error("{path} holds a value chaudit masks in everything it writes; the manifest is not written")]
    #[diagnostic(
        code(chaudit::fix::masked_manifest),
        help("run `chaudit fix --dry-run` and merge the fixes it lists by hand")
    )]
    MaskedManifest { path: String },
    #[error("cannot create {path}: {source}")]
    #[diagnostic(code(chaudit::fix::mkdir))]
    Mkdir { path: String, source: std::io::Error },
}

impl FixError {
    /// Bad arguments or config (exit 2), or the run failed (exit 3).
    pub fn class(&self) -> Failure {
        match self {
            FixError::Audit(e) => e.class(),
            FixError::Write(e) if e.is_usage() => Failure::Usage,
            FixError::Write(_) | FixError::Mkdir { .. } | FixError::Lock(_) | FixError::MaskedManifest { .. } => {
                Failure::Runtime
            }
            FixError::Unloadable { .. } | FixError::EarlierFile { .. } => Failure::Usage,
        }
    }
}

const HEADER: &str = "Written by `chaudit fix`: remediations of its findings, merged after every other fragment.\n\
It folds into the next run's; edit or delete it as any fragment.";

/// Audits, writes the fix files (unless a dry run), audits again. The tree is locked from
/// the first audit to the last: a second run waits, and folds in this one's fixes.
pub fn run(request: &FixRequest) -> Result<FixOutcome, FixError> {
    if let Some(sql) = &request.sql {
        crate::regular_file::ensure_replaceable(sql).map_err(FixError::Write)?;
    }
    let _lock = match crate::regular_file::lock::TreeLock::acquire(
        &request.config,
        !request.dry_run,
        crate::regular_file::lock::WAIT,
    ) {
        Ok(lock) => Some(lock),
        // a main config that cannot be opened: the audit says why, with its own error
        Err(crate::regular_file::lock::LockError::Io { .. }) => None,
        Err(busy) => return Err(busy.into()),
    };
    let before = audit_tree(request)?;
    let Some(loaded) = &before.loaded else { return Err(FixError::Audit(AuditError::NothingToAudit)) };
    // a tree ClickHouse refuses (the audit's `broken`: its error taken from `loaded`): its
    // findings are unknown, and a fix of the other tree would look like all there is to fix
    if let Some((tree, e)) = &before.broken {
        let tree = if *tree == "users" { "the users" } else { "the server" };
        return Err(FixError::Unloadable { tree, reason: e.to_string() });
    }
    let targets = Targets::of(&request.config, loaded);
    // a fix file that is a FIFO, a device, a directory or a link: refused before any is read
    for target in [Some(&targets.server), targets.users.as_ref()].into_iter().flatten() {
        crate::regular_file::ensure_replaceable(target).map_err(FixError::Write)?;
    }
    let mut outcome = FixOutcome { dry_run: request.dry_run, ..FixOutcome::default() };
    let fragments: BTreeMap<&str, &Vec<crate::eval::Fragment>> =
        before.fragments.iter().map(|(fp, f)| (fp.as_str(), f)).collect();
    let mut documents: BTreeMap<PathBuf, (ConfigTree, fragment::Node, usize)> = BTreeMap::new();
    let mut fixed_fingerprints = BTreeSet::new();
    let mut edit = ManifestEdit::of(request, loaded);
    for finding in before.report.findings.iter().filter(|f| f.is_active()) {
        let item = Item::of(finding);
        let Some(fragments) = fragments.get(finding.fingerprint.as_str()).filter(|_| !edit.operator_files) else {
            if let Some(how) = edit.operator_owned(finding) {
                outcome.needs_user.push((item, how));
            } else if let (Some(fix), None) = (&finding.remediation.manifest, &finding.remediation.manual) {
                let written = edit.merge(fix);
                record(&mut outcome, &mut fixed_fingerprints, finding, item, written);
            } else if let Some(manual) = &finding.remediation.manual {
                let example =
                    finding.remediation.manifest.as_ref().map_or_else(String::new, |fix| {
                        format!("\nFor example, merged into the manifest:\n{}", fix.merge)
                    });
                outcome.needs_user.push((item, format!("{}{example}", manual.trim_end())));
            } else if let Some(sql) = &finding.remediation.sql {
                outcome.sql.push((item, sql.clone()));
            } else if let Some(command) = &finding.remediation.command {
                outcome.commands.push((item, command.clone()));
            } else {
                outcome.no_fix.push(item);
            }
            continue;
        };
        let written = plan(fragments, &targets, &mut documents, &request.config);
        record(&mut outcome, &mut fixed_fingerprints, finding, item, written);
    }
    for (path, (tree, doc, fixes)) in documents {
        let before_text = read_existing(&path)?;
        let base = request.config.parent().unwrap_or(Path::new(""));
        let shown = path.strip_prefix(base).unwrap_or(&path).display().to_string();
        outcome.files.push(FixFile {
            path,
            shown,
            tree,
            before: before_text,
            after: doc.render(HEADER),
            fixes,
            manifest: None,
        });
    }
    outcome.warnings = later_fragments(&outcome.files);
    if let Some(file) = edit.file(request)? {
        outcome.files.push(file);
    }
    outcome.restart.sort();
    outcome.restart.dedup();
    if let Some(sql) = &request.sql {
        // the fix files are outputs too: the SQL never goes over one of them
        let mut inputs = request_inputs(request);
        inputs.extend(loaded.inputs());
        inputs.extend(outcome.files.iter().map(|f| ("a fix file", f.path.as_path())));
        crate::regular_file::ensure_not_input(sql, &inputs).map_err(FixError::Write)?;
    }
    // a dry run writes only the SQL file, when asked
    write_all(&outcome, request.sql.as_deref())?;
    if request.dry_run || outcome.files.is_empty() {
        return Ok(outcome);
    }
    let after = audit_tree(request)?;
    judge(&before, &after, &fixed_fingerprints, &mut outcome);
    Ok(outcome)
}

/// Where each tree's fix file goes.
struct Targets {
    server: PathBuf,
    /// None: the users come from no file chaudit can add a fragment beside.
    users: Option<PathBuf>,
}

impl Targets {
    fn of(main: &Path, loaded: &LoadedConfig) -> Targets {
        let server = main.with_extension("d").join(FIX_FILE);
        let users = match (&loaded.users, loaded.users_in_main) {
            (Some(users), _) => users.files.first().map(|id| {
                // a users file of the base: its fragment goes into the tree's users.d/
                let path = &loaded.sources.file(*id).path;
                let path = loaded.mount.as_ref().map_or_else(|| path.clone(), |mount| mount.in_tree(path));
                path.with_extension("d").join(FIX_FILE)
            }),
            // users in config.xml itself: its config.d/ is their fragment directory too
            (None, true) => Some(server.clone()),
            (None, false) => None,
        };
        Targets { server, users }
    }

    fn path(&self, tree: ConfigTree) -> Option<&PathBuf> {
        match tree {
            ConfigTree::Server => Some(&self.server),
            ConfigTree::Users => self.users.as_ref(),
        }
    }
}

/// Folds one finding's fragments into the documents, all or none; or says why it cannot.
/// A fix written (into the fix files or the manifest), or why the user must make it.
fn record(
    outcome: &mut FixOutcome,
    fixed: &mut BTreeSet<String>,
    finding: &crate::eval::Finding,
    item: Item,
    written: Result<(), String>,
) {
    match written {
        Ok(()) => {
            fixed.insert(finding.fingerprint.clone());
            if finding.remediation.restart {
                outcome.restart.push(finding.rule_id.clone());
            }
            outcome.applied.push(item);
        }
        Err(why) => outcome.needs_user.push((item, why)),
    }
}

fn plan(
    fragments: &[crate::eval::Fragment],
    targets: &Targets,
    documents: &mut BTreeMap<PathBuf, (ConfigTree, fragment::Node, usize)>,
    main: &Path,
) -> Result<(), String> {
    let mut parsed = Vec::new();
    for fragment in fragments {
        // a secret stays where its owner wrote it (or in the environment), never copied
        if crate::mask::holds_secret(&fragment.xml) {
            return Err(
                "the fix would copy a secret value into a new file: make this change where the value is written".into(),
            );
        }
        let path = targets
            .path(fragment.tree)
            .ok_or("the users come from no users config file (user_directories names none): add the fragment where your users are defined")?;
        let node = fragment::parse(&fragment.xml).map_err(|e| format!("the rule's fragment is not a config: {e}"))?;
        parsed.push((path.clone(), fragment.tree, node));
    }
    for (path, tree, node) in parsed {
        if !documents.contains_key(&path) {
            let existing = read_existing(&path).map_err(|e| e.to_string())?;
            let doc = if existing.is_empty() {
                fragment::Node::root()
            } else {
                fragment::parse(&existing).map_err(|reason| {
                    let shown = path.strip_prefix(main.parent().unwrap_or(Path::new(""))).unwrap_or(&path);
                    format!("the earlier fix file {} does not parse: {reason}", shown.display())
                })?
            };
            documents.insert(path.clone(), (tree, doc, 0));
        }
        if let Some((_, doc, fixes)) = documents.get_mut(&path) {
            doc.fold(node);
            *fixes += 1;
        }
    }
    Ok(())
}

/// An earlier run's fix file, or nothing. A FIFO, a device, a directory or a link there is
/// refused without being opened (a FIFO would be waited on forever).
fn read_existing(path: &Path) -> Result<String, FixError> {
    crate::regular_file::ensure_replaceable(path).map_err(FixError::Write)?;
    match crate::regular_file::read_to_string(path) {
        Ok(text) => Ok(text),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(String::new()),
        Err(e) => Err(FixError::EarlierFile { path: path.display().to_string(), reason: e.to_string() }),
    }
}

/// The inputs a fix request names itself (the loaded config's files come with it).
fn request_inputs(request: &FixRequest) -> Vec<(&'static str, &Path)> {
    vec![("the main config", request.config.as_path())]
}

/// The fix files and the SQL file, all or none. A fragment directory created for them is
/// removed again when they cannot be written.
fn write_all(outcome: &FixOutcome, sql: Option<&Path>) -> Result<(), FixError> {
    let sql_text = sql.map(|_| sql_file(outcome));
    let fix_files = if outcome.dry_run { &[][..] } else { &outcome.files[..] };
    let mut files: Vec<(&Path, &[u8])> = fix_files.iter().map(|f| (f.path.as_path(), f.after.as_bytes())).collect();
    if let (Some(path), Some(text)) = (sql, &sql_text) {
        files.push((path, text.as_bytes()));
    }
    let mut created = Vec::new();
    for file in fix_files {
        let Some(dir) = file.path.parent() else { continue };
        if !dir.exists() {
            let made = std::fs::create_dir_all(dir);
            created.push(dir);
            if let Err(source) = made {
                remove_dirs(&created);
                return Err(FixError::Mkdir { path: dir.display().to_string(), source });
            }
        }
    }
    crate::regular_file::replace_all(&files).map_err(|e| {
        remove_dirs(&created);
        FixError::Write(e)
    })
}

fn remove_dirs(dirs: &[&Path]) {
    for dir in dirs.iter().rev() {
        let _ = std::fs::remove_dir(dir);
    }
}

/// The SQL of the findings, each headed by the finding it is for.
pub fn sql_file(outcome: &FixOutcome) -> String {
    let mut out = String::new();
    for (item, sql) in &outcome.sql {
        out.push_str(&format!("-- {item}\n{}\n\n", sql.trim_end()));
    }
    out
}

/// A fragment named after the fix file in its directory would merge after it and could undo it.
fn later_fragments(files: &[FixFile]) -> Vec<String> {
    let mut warnings = Vec::new();
    for file in files.iter().filter(|f| f.manifest.is_none()) {
        let Some(dir) = file.path.parent() else { continue };
        let Ok(entries) = std::fs::read_dir(dir) else { continue };
        let mut later: Vec<String> = entries
            .filter_map(Result::ok)
            // a name with a control character is shown written out
            .map(|e| crate::mask::without_controls(&e.file_name().to_string_lossy()).into_owned())
            .filter(|name| name.as_str() > FIX_FILE && !name.starts_with('.'))
            .collect();
        later.sort();
        if !later.is_empty() {
            warnings.push(format!(
                "{} merges after {}: it may undo the fix ({})",
                later.join(", "),
                file.path.display(),
                "the re-audit tells"
            ));
        }
    }
    warnings
}

fn audit_tree(request: &FixRequest) -> Result<Audited, AuditError> {
    let audit = Request {
        config: Some(request.config.clone()),
        load: request.load.clone(),
        version: request.version,
        snapshot: None,
        host: None,
        rules: request.rules.clone(),
        suppressions: ProjectSuppressions::Default,
        baseline: None,
        write_baseline: None,
        output: None,
        policy: Policy { fail_on: Some(Severity::Medium), allow_inconclusive: true },
        config_view: false,
        fix_fragments: true,
    };
    audit::run(&audit, || Ok(None))
}

/// Which fixed findings the re-audit still reports (and why), and what it reports anew.
fn judge(before: &Audited, after: &Audited, fixed: &BTreeSet<String>, outcome: &mut FixOutcome) {
    if let Some((_, e)) = &after.broken {
        for item in &outcome.applied {
            outcome.remaining.push((item.clone(), format!("the fixed config does not load: {e}")));
        }
        return;
    }
    let key = |f: &Finding| (f.rule_id.clone(), f.message.clone());
    let old: BTreeSet<_> = before.report.findings.iter().map(key).collect();
    for f in before.report.findings.iter().filter(|f| fixed.contains(&f.fingerprint)) {
        let still = after.report.findings.iter().find(|a| a.fingerprint == f.fingerprint || key(a) == key(f));
        if let Some(still) = still {
            let at = still.location.as_ref().map_or_else(String::new, |l| format!(" at {}:{}", l.file, l.line));
            outcome.remaining.push((Item::of(f), format!("still reported{at} after the fix: {}", still.message)));
        }
    }
    outcome.introduced = after
        .report
        .findings
        .iter()
        .filter(|f| f.is_active() && f.severity >= Severity::Medium && !old.contains(&key(f)))
        .map(Item::of)
        .collect();
}
