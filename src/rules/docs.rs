//! The rules reference: each rule's page, from its definition alone (`rules explain` prints
//! it, `rules docs` writes docs/rules/).

use std::fmt::Write;
use std::path::Path;

use super::twin::LiveTwin;
use super::{Rule, RulePack};

/// A rule's page, in Markdown: what `rules explain` prints and docs/rules holds.
pub fn page(r: &Rule, live_twins: &[(String, String)]) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "# {}: {}\n", r.id, r.title);
    let sources: Vec<&str> = r.sources.iter().map(|s| s.name()).collect();
    let _ =
        writeln!(out, "severity: {} · category: {} · sources: {}", r.severity.name(), r.category, sources.join(", "));
    if !r.tags.is_empty() {
        let _ = writeln!(out, "tags: {}", r.tags.join(", "));
    }
    if let Some(v) = &r.versions {
        let _ = writeln!(out, "ClickHouse versions: {v}");
    }
    // a server's config is the default: only a rule that judges another says so
    if r.configs != [crate::facts::ConfigKind::Server] {
        let configs: Vec<&str> = r.configs.iter().map(|k| k.name()).collect();
        let _ = writeln!(
            out,
            "judges the config of: {} (keeper: a ClickHouseKeeperInstallation's node)",
            configs.join(", ")
        );
    }
    if r.opt_in {
        let _ = writeln!(out, "opt-in: runs only when `--select` names it");
    }
    let _ = writeln!(out, "\n{}", r.description.trim_end());
    let checks = &r.reads().start_checks;
    if let [check] = checks.iter().collect::<Vec<_>>().as_slice() {
        let _ = writeln!(out, "\nWhat it checks (in the server's start-up code): {}", check.doc());
    } else if !checks.is_empty() {
        let _ = writeln!(out, "\nWhat it checks (in the server's start-up code):");
        for check in checks {
            let _ = writeln!(out, "- `{check}`: {}", check.doc().replace('\n', "\n  "));
        }
    }
    if !r.params.is_empty() {
        let _ = writeln!(out, "\nParameters (--param {}.NAME=VALUE):", r.id);
        for p in &r.params {
            let doc = p.doc.as_deref().map_or(String::new(), |d| format!(": {d}"));
            let _ = writeln!(out, "- `{}` ({}, default {}){doc}", p.name, p.kind.name(), p.default);
        }
    }
    match &r.live_twin {
        Some(LiveTwin::Rule(live)) => {
            let _ = writeln!(out, "\nOn a running server: [`{live}`]({live}.md) judges the same objects.");
        }
        Some(LiveTwin::None(why)) => {
            let _ = writeln!(out, "\nOn a running server: no rule judges this, because {why}.");
        }
        None => {}
    }
    let in_files: Vec<String> =
        live_twins.iter().filter(|(l, _)| *l == r.id).map(|(_, c)| format!("[`{c}`]({c}.md)")).collect();
    if !in_files.is_empty() {
        let verb = if in_files.len() == 1 { "judges" } else { "judge" };
        let _ = writeln!(out, "\nIn the config files: {} {verb} the same objects.", in_files.join(" and "));
    }
    if !r.references.is_empty() {
        let _ = writeln!(out, "\nReferences:");
        for reference in &r.references {
            let _ = writeln!(out, "- {reference}");
        }
    }
    let fix = &r.remediation;
    if !fix.config.is_empty()
        || fix.manual.is_some()
        || fix.sql.is_some()
        || fix.command.is_some()
        || fix.manifest.is_some()
        || fix.manifest_manual.is_some()
        || fix.cluster_manifest.is_some()
        || fix.cluster_manual.is_some()
    {
        // each finding's advice is judged again (src/eval/restart.rs): what the audited
        // version reloads, or a removal of an element no server code reads, needs none
        let restart = if fix.restart {
            "needs a restart unless a finding's fix only changes what the server reloads"
        } else {
            "no restart needed"
        };
        let _ = writeln!(out, "\nFix ({restart}; `{{{{ }}}}` holes are filled in from the finding):");
        for (tree, template) in &fix.config {
            let file = format!("{}/zz-chaudit-fix.xml", tree.fragment_dir());
            let _ = writeln!(
                out,
                "\nIn `{file}` (`chaudit fix` writes it):\n\n```xml\n{}\n```",
                template.text().trim_end()
            );
        }
        if let Some(manual) = &fix.manual {
            let _ = writeln!(out, "\nFor you to do: {}", manual.text().trim_end());
        }
        if let Some(sql) = &fix.sql {
            let _ = writeln!(out, "\n```sql\n{}\n```", sql.text().trim_end());
        }
        if let Some(command) = &fix.command {
            let _ = writeln!(out, "\nOn the host:\n\n```sh\n{}\n```", command.text().trim_end());
        }
        if let Some(manifest) = &fix.manifest {
            let how = if fix.manifest_manual.is_some() {
                "an example to merge into the manifest (the values are yours to choose; chaudit prints the `kubectl patch`)"
            } else {
                "merged into the manifest instead (`chaudit fix` writes it; chaudit prints the `kubectl patch`)"
            };
            let _ =
                writeln!(out, "\nOn a ClickHouseInstallation, {how}:\n\n```yaml\n{}\n```", manifest.text().trim_end());
        }
        if let Some(manual) = &fix.manifest_manual {
            let _ = writeln!(
                out,
                "\nOn a Kubernetes manifest (a ClickHouseInstallation or ClickHouseKeeperInstallation), for you to do \
                 instead: {}",
                manual.text().trim_end()
            );
        }
        if let Some(manifest) = &fix.cluster_manifest {
            let how = if fix.cluster_manual.is_some() {
                "an example to merge into the manifest (the values are yours to choose; chaudit prints the `kubectl patch`)"
            } else {
                "merged into the manifest instead (`chaudit fix` writes it; chaudit prints the `kubectl patch`)"
            };
            let _ = writeln!(out, "\nOn a ClickHouseCluster, {how}:\n\n```yaml\n{}\n```", manifest.text().trim_end());
        }
        if let Some(manual) = &fix.cluster_manual {
            let _ = writeln!(out, "\nOn a ClickHouseCluster, for you to do instead: {}", manual.text().trim_end());
        }
    }
    let _ = writeln!(out, "\nRule file: `{}`", r.file);
    out
}

/// The rules reference: one page per rule (`ID.md`) and an index (`README.md`).
pub fn reference(pack: &RulePack) -> Vec<(String, String)> {
    let mut rules: Vec<_> = pack.rules.iter().collect();
    rules.sort_by(|a, b| (&a.category, &a.id).cmp(&(&b.category, &b.id)));
    let mut index = String::from(
        "# Rules reference\n\nEvery built-in rule, by category (generated by `chaudit rules docs docs/rules`; \
         `cargo test --test cli` fails when it is stale). `chaudit rules explain ID` prints the same page.\n",
    );
    let mut pages = vec![];
    let mut category = "";
    for r in &rules {
        if r.category != category {
            category = &r.category;
            let _ = write!(index, "\n## {category}\n\n| rule | severity | sources | title |\n|---|---|---|---|\n");
        }
        let sources: Vec<&str> = r.sources.iter().map(|s| s.name()).collect();
        let opt_in = if r.opt_in { " (opt-in)" } else { "" };
        let _ = writeln!(
            index,
            "| [`{}`]({}.md) | {} | {} | {}{opt_in} |",
            r.id,
            r.id,
            r.severity.name(),
            sources.join(", "),
            r.title.replace('|', "\\|")
        );
        pages.push((format!("{}.md", r.id), page(r, &pack.live_twins)));
    }
    pages.push(("README.md".into(), index));
    pages
}

/// Writes the rules reference to `dir`, as docs/rules/ holds it; pages of rules that no
/// longer exist are removed.
pub fn write(dir: &Path, pack: &RulePack) -> std::io::Result<()> {
    let pages = reference(pack);
    std::fs::create_dir_all(dir)?;
    for entry in std::fs::read_dir(dir)? {
        let path = entry?.path();
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or_default().to_string();
        if name.ends_with(".md") && !pages.iter().any(|(p, _)| *p == name) {
            std::fs::remove_file(&path)?;
        }
    }
    pages.iter().try_for_each(|(name, text)| std::fs::write(dir.join(name), text))
}
