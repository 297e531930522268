//! The generated parts of docs/ stay current: the rules reference (one page per rule) and
//! the page of every query the live audit sends; the YAML examples of docs/ load. `CHAUDIT_UPDATE_DOCS=1 cargo test --test
//! docs` rewrites them.

mod support;

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

fn chaudit(args: &[&str]) -> String {
    let out =
        Command::new(env!("CARGO_BIN_EXE_chaudit")).args(args).current_dir(support::repo_root()).output().unwrap();
    assert!(out.status.success(), "chaudit {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

fn update() -> bool {
    std::env::var_os("CHAUDIT_UPDATE_DOCS").is_some()
}

fn markdown_files(dir: &Path) -> BTreeMap<String, String> {
    std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .flatten()
                .map(|e| e.path())
                .filter(|p| p.extension().is_some_and(|x| x == "md"))
                .map(|p| (p.file_name().unwrap().to_string_lossy().into_owned(), std::fs::read_to_string(&p).unwrap()))
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn the_rules_reference_is_current() {
    let committed = support::repo_root().join("docs/rules");
    if update() {
        chaudit(&["rules", "docs", committed.to_str().unwrap()]);
    }
    let dir = tempfile::tempdir().unwrap();
    chaudit(&["rules", "docs", dir.path().to_str().unwrap()]);
    let (fresh, written) = (markdown_files(dir.path()), markdown_files(&committed));
    let stale: Vec<&String> =
        fresh.keys().chain(written.keys()).filter(|name| fresh.get(*name) != written.get(*name)).collect();
    assert!(stale.is_empty(), "docs/rules is stale ({stale:?}): run `cargo run -- rules docs docs/rules`");
    // `rules explain` prints the page the reference holds, for every rule
    let explained: Vec<&String> = fresh
        .iter()
        .filter(|(name, _)| *name != "README.md")
        .filter(|(name, page)| chaudit(&["rules", "explain", name.trim_end_matches(".md")]) != **page)
        .map(|(name, _)| name)
        .collect();
    assert!(explained.is_empty(), "`rules explain` differs from the reference page: {explained:?}");
}

#[test]
fn the_queries_page_is_current() {
    let mut page = String::from(
        "# Every query the live audit sends\n\n\
         Generated from `--dry-run`, which prints the plan and sends nothing (`CHAUDIT_UPDATE_DOCS=1 cargo test \
         --test docs` rewrites this page; the test fails when it is stale). Every query is a SELECT or an \
         EXPLAIN; each carries a `chaudit-...` query_id. See [live.md](live.md) for how the answers are used.\n",
    );
    let plans = [
        ("One node: `chaudit --dsn URL --dry-run`", &["--dsn", "http://localhost:8123", "--dry-run"][..]),
        (
            "A cluster through clusterAllReplicas: `chaudit --dsn URL --cluster NAME --dry-run`",
            &["--dsn", "http://localhost:8123", "--cluster", "NAME", "--dry-run"],
        ),
        (
            "The pre-upgrade review: `chaudit upgrade --to VERSION --dsn URL --dry-run`",
            &["upgrade", "--to", "26.9", "--dsn", "http://localhost:8123", "--dry-run"],
        ),
    ];
    for (title, args) in plans {
        page.push_str(&format!("\n## {title}\n\n```sql\n{}```\n", chaudit(args)));
    }
    let path = support::repo_root().join("docs/queries.md");
    if update() {
        std::fs::write(&path, &page).unwrap();
    }
    let written = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(written == page, "docs/queries.md is stale: run `CHAUDIT_UPDATE_DOCS=1 cargo test --test docs`");
}

/// Every relative link of README.md and docs/ names a file that exists (anchors aside).
#[test]
fn links_resolve() {
    let root = support::repo_root();
    let mut pages = vec![root.join("README.md")];
    for dir in [root.join("docs"), root.join("docs/rules")] {
        pages.extend(
            std::fs::read_dir(dir)
                .unwrap()
                .flatten()
                .map(|e| e.path())
                .filter(|p| p.extension().is_some_and(|x| x == "md")),
        );
    }
    let mut broken = Vec::new();
    for page in &pages {
        let text = std::fs::read_to_string(page).unwrap();
        for (i, _) in text.match_indices("](") {
            let rest = &text[i + 2..];
            let Some(end) = rest.find(')') else { continue };
            let target = rest[..end].split('#').next().unwrap_or_default();
            if target.is_empty() || target.contains("://") || target.contains(' ') {
                continue;
            }
            if !page.parent().unwrap().join(target).exists() {
                broken.push(format!("{}: {target}", page.strip_prefix(&root).unwrap().display()));
            }
        }
    }
    assert!(broken.is_empty(), "links to nothing: {broken:?}");
}

/// The fenced YAML blocks of a page, unindented.
fn yaml_blocks(page: &str) -> Vec<String> {
    let text = std::fs::read_to_string(support::repo_root().join(page)).unwrap();
    let mut blocks = Vec::new();
    let mut lines = text.lines();
    while let Some(line) = lines.next() {
        let Some(indent) = line.find("```yaml") else { continue };
        let body: Vec<&str> = lines.by_ref().take_while(|l| l.trim() != "```").collect();
        blocks.push(body.iter().map(|l| l.get(indent..).unwrap_or("")).collect::<Vec<_>>().join("\n"));
    }
    blocks
}

#[test]
fn every_yaml_example_in_the_docs_loads() {
    // the rule of docs/writing-rules.md, beside the built-in pack (its id made its own)
    let [rule] = yaml_blocks("docs/writing-rules.md").try_into().expect("one rule example");
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("cache")).unwrap();
    let id = rule.lines().next().unwrap().split_whitespace().nth(1).unwrap().to_string();
    std::fs::write(dir.path().join("cache/example.yaml"), rule.replacen(&id, "docs-example", 1)).unwrap();
    let listed = chaudit(&["rules", "list", "--rules", dir.path().to_str().unwrap()]);
    assert!(listed.contains("docs-example"), "{listed}");
    // the suppressions of docs/ci.md, as a project file of an audit
    let [suppressions] = yaml_blocks("docs/ci.md").try_into().expect("one suppressions example");
    let file = dir.path().join("suppressions.yaml");
    std::fs::write(&file, suppressions).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_chaudit"))
        .args(["--config", "examples/production/config.xml", "--suppressions", file.to_str().unwrap()])
        .current_dir(support::repo_root())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", String::from_utf8_lossy(&out.stderr));
}

#[test]
fn every_helper_function_of_the_rules_is_documented() {
    let source = std::fs::read_to_string(support::repo_root().join("src/rules/expr.rs")).unwrap();
    let page = std::fs::read_to_string(support::repo_root().join("docs/writing-rules.md")).unwrap();
    let registered: Vec<&str> =
        source.split("add_function(\"").skip(1).filter_map(|rest| rest.split('"').next()).collect();
    assert!(registered.contains(&"num") && registered.contains(&"shorten"), "not read: {registered:?}");
    let missing: Vec<&&str> = registered.iter().filter(|name| !page.contains(&format!("`{name}("))).collect();
    assert!(missing.is_empty(), "docs/writing-rules.md does not document {missing:?}");
}

/// README's `chaudit diff` run prints what README shows: the example, and a copy with one
/// setting changed.
#[test]
fn the_readme_diff_run_is_what_it_prints() {
    let readme = std::fs::read_to_string(support::repo_root().join("README.md")).unwrap();
    let block = readme.split("```text\n$ chaudit diff a/config.xml b/config.xml\n").nth(1).expect("the diff run");
    let shown = block.split("```").next().unwrap();
    let dir = tempfile::tempdir().unwrap();
    for side in ["a", "b"] {
        support::copy_tree(&support::repo_root().join("examples/production"), &dir.path().join(side));
    }
    let config = dir.path().join("b/config.xml");
    let text = std::fs::read_to_string(&config).unwrap();
    let changed = text.replace("<max_concurrent_queries>100<", "<max_concurrent_queries>150<");
    assert_ne!(text, changed, "the example sets max_concurrent_queries to 100");
    std::fs::write(&config, changed).unwrap();
    let (code, out, stderr) = support::chaudit(dir.path(), &["diff", "a/config.xml", "b/config.xml"]);
    assert_eq!(code, 1, "{stderr}");
    assert_eq!(out, shown);
}
