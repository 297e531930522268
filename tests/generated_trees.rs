//! Generated config trees, merged by chaudit and by the real clickhouse-server 25.8.2.1.
//!
//! A seeded generator (proptest's strategies, drawn with a fixed seed, so every run sees the
//! same trees) writes whole trees to disk: config.xml with config.d/ and conf.d/ fragments, a
//! users file (users.xml or accounts.xml, named by `users_config`) with its own `NAME.d/`,
//! include_from files (set in the main config, in a fragment or in the users file; sometimes
//! missing) with `incl` targets, `incl` on any element including the roots (present, missing,
//! `optional="true"`, nested paths), `<include incl|from_env=.../>`, `from_env` (set through
//! the tree's `env` file, or unset), `replace`/`remove` at several depths, `<yandex>` roots,
//! repeated element names and identity attributes. Names come from a vocabulary of three, so
//! fragments collide. YAML fragments (and a YAML main config) are written as well: the engine build has no yaml-cpp,
//! so the engine's tree gets the XML a YAML file stands for (same stem, same place in the
//! merge order) and chaudit's tree the YAML: that compares chaudit's YAML conversion plus
//! merge with the engine's merge of the equivalent XML.
//!
//! scripts/engine-preprocess.py --batch runs the engine on every tree (one loaded engine,
//! forked per tree); each tree is then loaded by chaudit and compared with the engine's
//! preprocessed config.xml and users.xml as differential_engine compares its hand-picked
//! trees (tests/support/preprocessed.rs). A tree the engine refuses must be refused.
//! Each tree is read again split over a base, as `--base DIR` reads it (generated_trees/based.rs).
//!
//! `CHAUDIT_GENERATED_TREES=N` runs N trees (default 400), `CHAUDIT_GENERATED_SEED=S` draws
//! another sequence (default 0).

#[path = "generated_trees/based.rs"]
mod based;
mod support;

use std::fmt::Write as _;
use std::path::Path;
use std::process::Command;

use chaudit::config::{DefaultInclude, LoadOptions};
use proptest::prelude::*;
use proptest::strategy::ValueTree;
use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};
use support::preprocessed;

/// Element names: few, so fragments pair with what is there.
const NAMES: &[&str] = &["alpha", "beta", "gamma"];
/// Texts, one with an entity (kept escaped in the files).
const TEXTS: &[&str] = &["1", "2", "x y", "a&amp;b"];
/// Environment variables a tree may set (E3 never is).
const VARIABLES: &[&str] = &["E1", "E2", "E3"];
/// What a set variable holds: text, an element, an entity, empty.
const VALUES: &[&str] = &["v1", "<beta>7</beta>", "a&amp;b", ""];
/// `incl` targets: t1..t3 at the include file's top, `gamma/t1` nested, `t9` never there.
const TARGETS: &[&str] = &["t1", "t2", "t3", "gamma/t1", "t9"];

/// One generated element.
#[derive(Clone, Debug)]
struct El {
    name: String,
    attrs: Vec<(String, String)>,
    text: Option<String>,
    children: Vec<El>,
}

impl El {
    fn xml(&self, out: &mut String, indent: usize) {
        let pad = "    ".repeat(indent);
        write!(out, "{pad}<{}", self.name).unwrap();
        for (k, v) in &self.attrs {
            write!(out, " {k}=\"{v}\"").unwrap();
        }
        match (&self.text, self.children.is_empty()) {
            (None, true) => out.push_str("/>\n"),
            (Some(t), true) => writeln!(out, ">{t}</{}>", self.name).unwrap(),
            (text, false) => {
                out.push_str(">\n");
                if let Some(t) = text {
                    writeln!(out, "{pad}    {t}").unwrap();
                }
                for c in &self.children {
                    c.xml(out, indent + 1);
                }
                writeln!(out, "{pad}</{}>", self.name).unwrap();
            }
        }
    }

    /// Whether YAML can say exactly this element: a text only without attributes and
    /// children; a repeated name only for texts (a list of scalars); no entities in texts.
    fn yaml_expressible(&self) -> bool {
        let mut seen = std::collections::HashMap::new();
        for c in &self.children {
            *seen.entry(c.name.as_str()).or_insert(0) += 1;
        }
        let repeats_ok = self
            .children
            .iter()
            .all(|c| seen[c.name.as_str()] == 1 || (c.attrs.is_empty() && c.children.is_empty() && c.text.is_some()));
        // a YAML list puts the repeats of a name together: they must be together already
        let together = self.children.iter().enumerate().all(|(i, c)| {
            let last = self.children.iter().rposition(|x| x.name == c.name).unwrap();
            self.children[i..=last].iter().all(|x| x.name == c.name)
        });
        let text_ok = match &self.text {
            Some(t) => self.attrs.is_empty() && self.children.is_empty() && !t.contains('&') && !t.is_empty(),
            None => true,
        };
        // an element with neither text, attributes nor children is `name: ~` in YAML (null:
        // no child node)
        repeats_ok && together && text_ok && self.children.iter().all(El::yaml_expressible)
    }

    /// The YAML for this element's content (its attributes and children), as a mapping.
    fn yaml_body(&self, out: &mut String, indent: usize) {
        let pad = "  ".repeat(indent);
        for (k, v) in &self.attrs {
            writeln!(out, "{pad}\"@{k}\": \"{v}\"").unwrap();
        }
        let mut done = std::collections::HashSet::new();
        for c in &self.children {
            if !done.insert(c.name.clone()) {
                continue;
            }
            let same: Vec<&El> = self.children.iter().filter(|x| x.name == c.name).collect();
            if same.len() > 1 {
                let items: Vec<String> = same.iter().map(|x| format!("\"{}\"", x.text.as_deref().unwrap())).collect();
                writeln!(out, "{pad}{}: [{}]", c.name, items.join(", ")).unwrap();
            } else if let Some(t) = &c.text {
                writeln!(out, "{pad}{}: \"{t}\"", c.name).unwrap();
            } else if c.attrs.is_empty() && c.children.is_empty() {
                // null: an element without child nodes (`""` would be an empty text node,
                // which XML cannot write: a value that drops the old element's substitution)
                writeln!(out, "{pad}{}: ~", c.name).unwrap();
            } else {
                writeln!(out, "{pad}{}:", c.name).unwrap();
                c.yaml_body(out, indent + 1);
            }
        }
    }
}

/// A file of the tree: its path, the XML, and a YAML twin for chaudit's copy.
#[derive(Clone, Debug)]
struct File {
    path: String,
    root: El,
    yaml: bool,
}

#[derive(Clone, Debug)]
struct Tree {
    files: Vec<File>,
    env: Vec<(String, String)>,
}

fn attr(k: &str, v: &str) -> (String, String) {
    (k.to_string(), v.to_string())
}

/// An element's attributes: identity `k`, a marker, a substitution.
fn attributes() -> impl Strategy<Value = Vec<(String, String)>> {
    let identity = prop_oneof![6 => Just(None), 1 => Just(Some(attr("k", "1"))), 1 => Just(Some(attr("k", "2")))];
    let marker = prop_oneof![
        8 => Just(vec![]),
        2 => Just(vec![attr("replace", "1")]),
        1 => Just(vec![attr("replace", "replace")]),
        2 => Just(vec![attr("remove", "1")]),
    ];
    let substitution = prop_oneof![
        10 => Just(vec![]),
        2 => prop::sample::select(TARGETS).prop_map(|t| vec![attr("incl", t)]),
        1 => prop::sample::select(TARGETS).prop_map(|t| vec![attr("incl", t), attr("optional", "true")]),
        2 => prop::sample::select(VARIABLES).prop_map(|v| vec![attr("from_env", v)]),
    ];
    (identity, marker, substitution).prop_map(|(i, m, s)| i.into_iter().chain(m).chain(s).collect())
}

fn element(depth: u32) -> BoxedStrategy<El> {
    let name = prop::sample::select(NAMES).prop_map(str::to_string);
    let text = prop_oneof![2 => Just(None), 3 => prop::sample::select(TEXTS).prop_map(|t| Some(t.to_string()))];
    let leaf = (name.clone(), attributes(), text)
        .prop_map(|(name, attrs, text)| {
            // a from_env element with a value of its own is refused unless it has replace;
            // keep that shape rare (it refuses the whole tree)
            let text = if attrs.iter().any(|(k, _)| k == "from_env") { None } else { text };
            El { name, attrs, text, children: vec![] }
        })
        .boxed();
    if depth == 0 {
        return leaf;
    }
    let branch = (name, attributes(), prop::collection::vec(element(depth - 1), 1..4), prop::bool::weighted(0.2))
        .prop_map(|(name, mut attrs, children, refused)| {
            // from_env on an element with children and without replace refuses the tree:
            // kept for one branch in five
            if !refused && !attrs.iter().any(|(k, _)| k == "replace") {
                attrs.retain(|(k, _)| k != "from_env");
            }
            El { name, attrs, text: None, children }
        });
    prop_oneof![3 => leaf, 2 => branch].boxed()
}

/// `<include incl|from_env=.../>`, with `merge` sometimes.
fn include_element() -> impl Strategy<Value = El> {
    let source = prop_oneof![
        prop::sample::select(TARGETS).prop_map(|t| attr("incl", t)),
        prop::sample::select(VARIABLES).prop_map(|v| attr("from_env", v)),
    ];
    (source, any::<bool>()).prop_map(|(s, merge)| {
        let mut attrs = vec![s];
        if merge {
            attrs.push(attr("merge", "true"));
        }
        El { name: "include".into(), attrs, text: None, children: vec![] }
    })
}

/// The top-level elements of a document.
fn body(max: usize) -> impl Strategy<Value = Vec<El>> {
    let item = prop_oneof![8 => element(2), 1 => include_element()];
    prop::collection::vec(item, 0..max)
}

/// A root's own attributes: mostly none, sometimes `incl` (optional too).
fn root_attributes() -> impl Strategy<Value = Vec<(String, String)>> {
    prop_oneof![
        6 => Just(vec![]),
        1 => prop::sample::select(TARGETS).prop_map(|t| vec![attr("incl", t)]),
        1 => prop::sample::select(TARGETS).prop_map(|t| vec![attr("incl", t), attr("optional", "true")]),
    ]
}

fn root_name() -> impl Strategy<Value = String> {
    prop_oneof![6 => Just("clickhouse".to_string()), 1 => Just("yandex".to_string())]
}

/// Where include_from is set, and which file it names (`missing.xml`: none).
#[derive(Clone, Copy, Debug)]
enum IncludeFrom {
    None,
    Main,
    Fragment,
    Users,
}

fn tree() -> impl Strategy<Value = Tree> {
    let include_from = prop_oneof![
        2 => Just(IncludeFrom::None),
        4 => Just(IncludeFrom::Main),
        2 => Just(IncludeFrom::Fragment),
        2 => Just(IncludeFrom::Users),
    ];
    let include_file = prop_oneof![8 => Just("include.xml"), 1 => Just("missing.xml")];
    let fragment = || (root_name(), root_attributes(), body(4), prop::bool::weighted(0.25));
    let main = (root_attributes(), body(5), prop::bool::weighted(0.1), prop::bool::weighted(0.2));
    let users = (prop::bool::ANY, root_attributes(), body(3));
    let targets = (root_name(), prop::collection::vec(element(1), 0..3), prop::collection::vec(element(1), 0..2));
    let env = prop::collection::vec(prop::sample::select(VALUES), 2);
    (
        main,
        prop::collection::vec(fragment(), 0..4),
        prop::collection::vec(fragment(), 0..3),
        (users, prop::collection::vec(fragment(), 0..3)),
        (include_from, include_file, targets),
        (env, prop::bool::ANY, prop::bool::ANY),
    )
        .prop_map(
            |(main, config_d, conf_d, (users, users_d), (include_from, include_file, targets), (env, e1, e2))| {
                build(main, config_d, conf_d, users, users_d, include_from, include_file, targets, (env, e1, e2))
            },
        )
}

/// Whether a document can be written as YAML: its root without attributes, no
/// `<include>` (repeated, it would be a list of mappings), every element expressible.
fn yaml_document(root: &El) -> bool {
    root.attrs.is_empty() && root.children.iter().all(|c| c.name != "include") && root.yaml_expressible()
}

type Fragment = (String, Vec<(String, String)>, Vec<El>, bool);

#[allow(clippy::too_many_arguments)]
fn build(
    (main_root_attrs, main_body, yandex_main, yaml_main): (Vec<(String, String)>, Vec<El>, bool, bool),
    config_d: Vec<Fragment>,
    conf_d: Vec<Fragment>,
    (accounts, users_root_attrs, users_body): (bool, Vec<(String, String)>, Vec<El>),
    users_d: Vec<Fragment>,
    include_from: IncludeFrom,
    include_file: &str,
    (include_root, top_targets, nested): (String, Vec<El>, Vec<El>),
    (values, e1, e2): (Vec<&str>, bool, bool),
) -> Tree {
    let leaf =
        |name: &str, text: &str| El { name: name.into(), attrs: vec![], text: Some(text.into()), children: vec![] };
    let users_file = if accounts { "accounts.xml" } else { "users.xml" };
    let users_dir = if accounts { "accounts.d" } else { "users.d" };
    let mut files = Vec::new();

    // the main config: what the server needs to write both preprocessed files, then the
    // generated elements (none of them a server setting)
    let mut children =
        vec![leaf("path", "/var/lib/clickhouse/"), leaf("users_config", users_file), leaf("http_port", "18123")];
    if let IncludeFrom::Main = include_from {
        children.push(leaf("include_from", include_file));
    }
    children.extend(main_body);
    let root = |name: &str, attrs, children| El { name: name.into(), attrs, text: None, children };
    let main = root(if yandex_main { "yandex" } else { "clickhouse" }, main_root_attrs, children);
    let yaml = yaml_main && !yandex_main && yaml_document(&main);
    files.push(File { path: "config.xml".into(), root: main, yaml });
    let mut fragments = |dir: &str, list: Vec<Fragment>, with_include_from: bool| {
        for (i, (name, attrs, mut body, yaml)) in list.into_iter().enumerate() {
            if with_include_from && i == 0 {
                body.insert(0, leaf("include_from", include_file));
            }
            let el = root(&name, attrs, body);
            let yaml = yaml && yaml_document(&el);
            files.push(File { path: format!("{dir}/{:02}-f.xml", i * 10 + 10), root: el, yaml });
        }
    };
    let fragment_has_include_from = matches!(include_from, IncludeFrom::Fragment) && !config_d.is_empty();
    fragments("config.d", config_d, fragment_has_include_from);
    fragments("conf.d", conf_d, matches!(include_from, IncludeFrom::Fragment) && !fragment_has_include_from);
    fragments(users_dir, users_d, false);

    // the users file: a default profile and user, then the generated elements
    let mut children = vec![
        El { name: "profiles".into(), attrs: vec![], text: None, children: vec![root("default", vec![], vec![])] },
        El {
            name: "users".into(),
            attrs: vec![],
            text: None,
            children: vec![root("default", vec![], vec![leaf("password", ""), leaf("profile", "default")])],
        },
    ];
    if let IncludeFrom::Users = include_from {
        children.push(leaf("include_from", include_file));
    }
    children.extend(users_body);
    files.push(File { path: users_file.into(), root: root("clickhouse", users_root_attrs, children), yaml: false });

    // the include file: t1..t3 (some), and gamma/t1 (nested)
    // no `incl` inside what is included: t1 naming t2 naming t1 loops in both (the engine
    // recurses until it crashes)
    fn no_incl(e: &mut El) {
        e.attrs.retain(|(k, _)| k != "incl" && k != "optional");
        e.children.iter_mut().for_each(no_incl);
    }
    let mut targets: Vec<El> = top_targets
        .into_iter()
        .enumerate()
        .map(|(i, mut e)| {
            e.name = format!("t{}", i + 1);
            no_incl(&mut e);
            e
        })
        .collect();
    if !nested.is_empty() {
        let mut t1 = nested[0].clone();
        no_incl(&mut t1);
        t1.name = "t1".into();
        targets.push(root("gamma", vec![], vec![t1]));
    }
    files.push(File { path: "include.xml".into(), root: root(&include_root, vec![], targets), yaml: false });

    let mut env = Vec::new();
    if e1 {
        env.push(("E1".to_string(), values[0].to_string()));
    }
    if e2 {
        env.push(("E2".to_string(), values[1].to_string()));
    }
    Tree { files, env }
}

impl Tree {
    /// Writes the engine's tree (`tree/`) and chaudit's (`ours/`: YAML twins) under `case`.
    fn write(&self, case: &Path) {
        for (dir, yaml_twins) in [("tree", false), ("ours", true)] {
            for f in &self.files {
                let (path, text) = if yaml_twins && f.yaml {
                    (f.path.replace(".xml", ".yaml"), f.yaml())
                } else {
                    (f.path.clone(), f.xml())
                };
                let path = case.join(dir).join(path);
                std::fs::create_dir_all(path.parent().unwrap()).unwrap();
                std::fs::write(&path, text).unwrap();
            }
        }
        let env: String = self.env.iter().map(|(k, v)| format!("{k}={v}\n")).collect();
        std::fs::write(case.join("env"), env).unwrap();
    }

    /// Every file as chaudit reads it, and the environment: what a failure prints.
    fn listing(&self) -> String {
        let mut out = String::new();
        for f in &self.files {
            if f.yaml {
                writeln!(
                    out,
                    "--- {} (chaudit's copy; the engine's is the XML below)\n{}",
                    f.path.replace(".xml", ".yaml"),
                    f.yaml()
                )
                .unwrap();
            }
            writeln!(out, "--- {}\n{}", f.path, f.xml()).unwrap();
        }
        writeln!(out, "--- env\n{}", self.env.iter().map(|(k, v)| format!("{k}={v}\n")).collect::<String>()).unwrap();
        out
    }
}

impl File {
    /// The XML: indented, or, for a file with a YAML twin, without any whitespace between
    /// elements (YAMLParser makes no whitespace nodes, and they count: a `from_env` element
    /// with only whitespace inside has a value).
    fn xml(&self) -> String {
        let mut out = String::new();
        self.root.xml(&mut out, 0);
        if self.yaml {
            out = out.lines().map(str::trim).collect::<String>() + "\n";
        }
        out
    }

    fn yaml(&self) -> String {
        let mut out = String::new();
        self.root.yaml_body(&mut out, 0);
        if out.is_empty() {
            out.push_str("{}\n");
        }
        out
    }
}

fn count() -> usize {
    std::env::var("CHAUDIT_GENERATED_TREES").ok().and_then(|n| n.parse().ok()).unwrap_or(400)
}

fn seed() -> u64 {
    std::env::var("CHAUDIT_GENERATED_SEED").ok().and_then(|n| n.parse().ok()).unwrap_or(0)
}

/// The trees of a run: the same for the same seed.
fn generate(n: usize, seed: u64) -> Vec<Tree> {
    let mut bytes = [0u8; 32];
    bytes[..8].copy_from_slice(&seed.to_le_bytes());
    let mut runner = TestRunner::new_with_rng(Config::default(), TestRng::from_seed(RngAlgorithm::ChaCha, &bytes));
    let strategy = tree();
    (0..n).map(|_| strategy.new_tree(&mut runner).expect("a tree").current()).collect()
}

/// Runs the engine on every `dir/*/tree` (engine-preprocess.py --batch).
fn run_engine(dir: &Path) {
    let out = Command::new(support::server_engine_python())
        .arg(support::repo_root().join("scripts/engine-preprocess.py"))
        .arg("--batch")
        .arg(dir)
        .output()
        .expect("run engine-preprocess.py --batch");
    assert!(out.status.success(), "engine-preprocess.py --batch failed:\n{}", String::from_utf8_lossy(&out.stderr));
}

fn options(case: &Path) -> LoadOptions {
    let mut options = LoadOptions::for_fixture(case);
    options.default_include_from = DefaultInclude::None;
    options
}

/// Every tree written under `dir`, run by the engine, loaded by chaudit and compared.
fn outcomes(trees: &[Tree], dir: &Path) -> Vec<preprocessed::Compared> {
    for (i, t) in trees.iter().enumerate() {
        t.write(&dir.join(format!("{i:05}")));
    }
    run_engine(dir);
    (0..trees.len())
        .map(|i| {
            let case = dir.join(format!("{i:05}"));
            let main = if trees[i].files[0].yaml { "ours/config.yaml" } else { "ours/config.xml" };
            preprocessed::compare(&format!("tree {i}"), &case.join(main), &case.join("expected"), &options(&case))
        })
        .collect()
}

/// A failure without its tree's name: what minimizing keeps.
fn kind(failures: &[String]) -> Option<String> {
    let first = failures.first()?;
    let rest = first.split_once(' ').map(|(_, r)| r).unwrap_or(first);
    let rest = rest.split_once(' ').map(|(_, r)| r).unwrap_or(rest); // "tree N"
    // a difference: where (positions left out) and what
    Some(match rest.split_once(": /") {
        Some((file, what)) => {
            let mut out = format!("{file}: /");
            let mut skipping = false;
            for c in what.chars() {
                match c {
                    '[' if !out.ends_with(' ') && !out.ends_with('<') => skipping = true,
                    ']' if skipping => skipping = false,
                    _ if !skipping => out.push(c),
                    _ => {}
                }
            }
            out
        }
        None => rest.split(" (").next().unwrap_or(rest).to_string(),
    })
}

/// `tree` with one thing less: a fragment, an element, an attribute, a text, a variable
/// (the elements the server needs in the main and users files stay).
fn smaller(tree: &Tree) -> Vec<Tree> {
    fn elements(e: &El, at: &mut Vec<usize>, top: bool, out: &mut Vec<Vec<usize>>) {
        for (i, c) in e.children.iter().enumerate() {
            let kept = ["path", "users_config", "http_port", "profiles", "users"];
            if top && kept.contains(&c.name.as_str()) {
                continue;
            }
            at.push(i);
            out.push(at.clone());
            elements(c, at, false, out);
            at.pop();
        }
    }
    fn at<'a>(e: &'a mut El, path: &[usize]) -> &'a mut El {
        path.iter().fold(e, |e, &i| &mut e.children[i])
    }
    let mut out = Vec::new();
    for (f, file) in tree.files.iter().enumerate() {
        if file.path.contains(".d/") {
            let mut t = tree.clone();
            t.files.remove(f);
            out.push(t);
        }
    }
    for (f, file) in tree.files.iter().enumerate() {
        let mut paths = vec![vec![]];
        elements(&file.root, &mut vec![], true, &mut paths);
        for path in paths {
            let Some((&last, parent)) = path.split_last() else { continue };
            let mut t = tree.clone();
            at(&mut t.files[f].root, parent).children.remove(last);
            out.push(t);
        }
    }
    for (f, file) in tree.files.iter().enumerate() {
        let mut paths = vec![vec![]];
        elements(&file.root, &mut vec![], true, &mut paths);
        for path in paths {
            let e = at(&mut file.root.clone(), &path).clone();
            for k in 0..e.attrs.len() {
                let mut t = tree.clone();
                at(&mut t.files[f].root, &path).attrs.remove(k);
                out.push(t);
            }
            if e.text.is_some() {
                let mut t = tree.clone();
                at(&mut t.files[f].root, &path).text = None;
                out.push(t);
            }
        }
    }
    for k in 0..tree.env.len() {
        let mut t = tree.clone();
        t.env.remove(k);
        out.push(t);
    }
    // a file YAML can no longer say (a repeated element lost its text) is written as XML
    for t in &mut out {
        for f in &mut t.files {
            f.yaml = f.yaml && yaml_document(&f.root);
        }
    }
    out
}

/// The smallest tree found that fails as `tree` does: one thing removed at a time while
/// the failure keeps its kind, candidates run 24 to a batch, for at most `budget`.
fn minimize(tree: &Tree, failure: &str, dir: &Path, budget: std::time::Duration) -> Tree {
    let started = std::time::Instant::now();
    let mut best = tree.clone();
    let mut round = 0;
    'rounds: while started.elapsed() < budget {
        for chunk in smaller(&best).chunks(24) {
            if started.elapsed() >= budget {
                break 'rounds;
            }
            round += 1;
            let batch = dir.join(format!("minimize-{round}"));
            let results = outcomes(chunk, &batch);
            let _ = std::fs::remove_dir_all(&batch);
            if let Some(i) = results.iter().position(|r| kind(&r.failures).as_deref() == Some(failure)) {
                best = chunk[i].clone();
                continue 'rounds;
            }
        }
        break;
    }
    best
}

#[test]
fn generated_trees_merge_as_the_engine_merges() {
    let (n, seed) = (count(), seed());
    let started = std::time::Instant::now();
    let mut trees = generate(n, seed);
    // CHAUDIT_GENERATED_ONLY=3,17: those trees of the sequence alone
    if let Ok(only) = std::env::var("CHAUDIT_GENERATED_ONLY") {
        let keep: Vec<usize> = only.split(',').filter_map(|i| i.trim().parse().ok()).collect();
        trees = keep.iter().filter_map(|&i| trees.get(i).cloned()).collect();
    }
    let n = trees.len();
    let dir = tempfile::tempdir().unwrap();
    let engine = std::time::Instant::now();
    let results = outcomes(&trees, &dir.path().join("trees"));
    let engine = engine.elapsed().as_secs_f64();
    if let Ok(keep) = std::env::var("CHAUDIT_GENERATED_KEEP") {
        let _ = std::fs::remove_dir_all(&keep);
        support::copy_tree(&dir.path().join("trees"), Path::new(&keep));
    }
    let files: usize = results.iter().map(|r| r.files).sum();
    let refused = results.iter().filter(|r| r.refused_by_both).count();
    let failing: Vec<usize> = (0..n).filter(|&i| !results[i].failures.is_empty()).collect();
    // and each tree split over a base (`--base DIR`), against the same engine merge
    let based: Vec<preprocessed::Compared> = (0..n)
        .map(|i| {
            let case = dir.path().join(format!("trees/{i:05}"));
            based::compare(&case, i, options(&case))
        })
        .collect();
    let based_files: usize = based.iter().map(|r| r.files).sum();
    let based: Vec<String> = based.into_iter().flat_map(|r| r.failures).collect();
    let yaml = trees.iter().flat_map(|t| &t.files).filter(|f| f.yaml).count();
    eprintln!(
        "{n} generated trees (seed {seed}, {yaml} YAML fragments): {files} files compared, {refused} trees refused by both, {} differ; over a base {based_files} files compared, {} differ; {:.1} s (engine and comparison {engine:.1} s)",
        failing.len(),
        based.len(),
        started.elapsed().as_secs_f64()
    );
    for &i in &failing {
        eprintln!("{}", results[i].failures.join("\n"));
    }
    let mut kinds: Vec<String> = failing.iter().filter_map(|&i| kind(&results[i].failures)).collect();
    kinds.sort();
    kinds.dedup();
    let mut report = Vec::new();
    // each kind of failure once, its tree minimized (a minute at most for each)
    for k in &kinds {
        let i = failing.iter().copied().find(|&i| kind(&results[i].failures).as_ref() == Some(k)).unwrap();
        let small = minimize(&trees[i], k, dir.path(), std::time::Duration::from_secs(60));
        let again = outcomes(std::slice::from_ref(&small), &dir.path().join(format!("final-{i}")));
        let case = dir.path().join(format!("final-{i}/00000/expected/log"));
        let log = std::fs::read_to_string(case).unwrap_or_default();
        let log: String = log
            .lines()
            .filter(|l| !l.starts_with(char::is_numeric) && !l.trim().is_empty())
            .take(12)
            .collect::<Vec<_>>()
            .join("\n");
        report.push(format!(
            "{} (tree {i}, minimized)\n{}--- engine log\n{log}\n",
            again[0].failures.join("\n"),
            small.listing()
        ));
    }
    assert!(based.is_empty(), "{} differences of trees read over a base:\n{}", based.len(), based.join("\n"));
    assert!(
        failing.is_empty(),
        "{} of {n} trees differ ({} kinds):\n{}\n\n{}",
        failing.len(),
        kinds.len(),
        failing.iter().flat_map(|&i| results[i].failures.clone()).collect::<Vec<_>>().join("\n"),
        report.join("\n\n")
    );
}
