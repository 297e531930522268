//! Start-up claims judged by what the real clickhouse-server 25.8 does with the merged result,
//! by construction: every element under each disk, policy, cluster, profile, user and quota of
//! a sound tree is removed, and misspelled, one at a time; on each mutation the server is
//! started and chaudit audits the files offline. A refused tree needs a finding saying the server will not
//! start (and none saying ClickHouse ignores the change); a started tree may have no finding
//! saying it will not start. The sample: both mutations of every other element;
//! `CHAUDIT_STARTUP_CLAIMS=all` runs them all.

mod support;

use std::collections::HashMap;
use std::path::Path;

use chaudit::rules::RulePack;
use chaudit::rules::schema::Effect;

const CONFIG: &str = r#"<clickhouse>
    <users_config>users.xml</users_config>
    <storage_configuration>
        <disks>
            <local_a>
                <path>/var/lib/clickhouse/disks/local_a/</path>
                <keep_free_space_bytes>1024</keep_free_space_bytes>
            </local_a>
            <s3_a>
                <type>s3</type>
                <endpoint>https://bucket.s3.amazonaws.com/data/</endpoint>
                <access_key_id>key</access_key_id>
                <secret_access_key>secret</secret_access_key>
                <metadata_path>/var/lib/clickhouse/disks/s3_a/</metadata_path>
                <skip_access_check>true</skip_access_check>
            </s3_a>
            <s3_cache>
                <type>cache</type>
                <disk>s3_a</disk>
                <path>/var/lib/clickhouse/disks/s3_cache/</path>
                <max_size>10Gi</max_size>
            </s3_cache>
        </disks>
        <policies>
            <tiered>
                <volumes>
                    <hot>
                        <disk>local_a</disk>
                        <max_data_part_size_bytes>1073741824</max_data_part_size_bytes>
                    </hot>
                    <cold>
                        <disk>s3_cache</disk>
                    </cold>
                </volumes>
                <move_factor>0.2</move_factor>
            </tiered>
        </policies>
    </storage_configuration>
    <remote_servers>
        <main>
            <shard>
                <internal_replication>true</internal_replication>
                <replica>
                    <host>127.0.0.1</host>
                    <port>9000</port>
                </replica>
            </shard>
        </main>
    </remote_servers>
</clickhouse>
"#;

const USERS: &str = r#"<clickhouse>
    <profiles>
        <default/>
        <reporting>
            <max_memory_usage>10000000000</max_memory_usage>
            <readonly>1</readonly>
        </reporting>
    </profiles>
    <users>
        <default>
            <password></password>
            <networks><ip>127.0.0.1</ip></networks>
            <profile>default</profile>
            <quota>default</quota>
            <access_management>1</access_management>
        </default>
        <analyst>
            <password_sha256_hex>5e884898da28047151d0e56f8dc6292773603d0d6aabbdd62a11ef721d1542d8</password_sha256_hex>
            <networks>
                <ip>127.0.0.1</ip>
            </networks>
            <profile>reporting</profile>
            <quota>limited</quota>
        </analyst>
    </users>
    <quotas>
        <default>
            <interval>
                <duration>3600</duration>
                <queries>0</queries>
            </interval>
        </default>
        <limited>
            <interval>
                <duration>3600</duration>
                <queries>1000</queries>
                <errors>100</errors>
            </interval>
        </limited>
    </quotas>
</clickhouse>
"#;

/// The objects whose elements are mutated: (file, the path of their parent element).
const OBJECTS: &[(&str, &[&str])] = &[
    ("config.xml", &["storage_configuration", "disks"]),
    ("config.xml", &["storage_configuration", "policies"]),
    ("config.xml", &["remote_servers"]),
    ("users.xml", &["profiles"]),
    ("users.xml", &["users"]),
    ("users.xml", &["quotas"]),
];

/// Mutations whose verdict says nothing of chaudit's claims, and why.
const KNOWN_EXCEPTIONS: &[(&str, &str)] = &[(
    "s3_a/skip_access_check",
    "without it the server writes to the bucket at start, and nothing resolves in the harness's namespace",
)];

/// One mutated tree: which file, its new text, and what was done to which element.
struct Mutation {
    file: &'static str,
    text: String,
    what: String,
}

/// A tag misspelled by swapping its first two adjacent letters that differ.
fn misspell(tag: &str) -> String {
    let mut chars: Vec<char> = tag.chars().collect();
    let i = (0..chars.len() - 1).find(|&i| chars[i] != chars[i + 1]).expect("a tag with two different letters");
    chars.swap(i, i + 1);
    chars.into_iter().collect()
}

/// Every element below each object of `file`, removed and misspelled.
fn mutations_of(file: &'static str, text: &str, parents: &[&str]) -> Vec<Mutation> {
    let doc = roxmltree::Document::parse(text).unwrap();
    let mut parent = doc.root_element();
    for name in parents {
        parent = parent.children().find(|n| n.has_tag_name(*name)).unwrap();
    }
    let mut out = Vec::new();
    for object in parent.children().filter(|n| n.is_element()) {
        for node in object.descendants().skip(1).filter(|n| n.is_element()) {
            let path: Vec<&str> = node.ancestors().take_while(|a| *a != parent).map(|a| a.tag_name().name()).collect();
            let path: Vec<&str> = path.into_iter().rev().collect();
            let path = format!("{file}: {}", path.join("/"));
            let range = node.range();
            let tag = node.tag_name().name();
            out.push(Mutation {
                file,
                text: format!("{}{}", &text[..range.start], &text[range.end..]),
                what: format!("{path} removed"),
            });
            let wrong = misspell(tag);
            let element = &text[range.clone()];
            let closing = format!("</{tag}>");
            let renamed = match element.strip_suffix(&closing) {
                Some(body) => format!("<{wrong}{}</{wrong}>", &body[1 + tag.len()..]),
                None => format!("<{wrong}{}", &element[1 + tag.len()..]),
            };
            out.push(Mutation {
                file,
                text: format!("{}{renamed}{}", &text[..range.start], &text[range.end..]),
                what: format!("{path} misspelled <{wrong}>"),
            });
        }
    }
    out
}

fn all_mutations() -> Vec<Mutation> {
    OBJECTS
        .iter()
        .flat_map(|(file, parents)| mutations_of(file, if *file == "config.xml" { CONFIG } else { USERS }, parents))
        .collect()
}

fn write_tree(dir: &Path, mutation: Option<&Mutation>) -> std::path::PathBuf {
    let tree = dir.join("tree");
    std::fs::create_dir_all(&tree).unwrap();
    for (file, base) in [("config.xml", CONFIG), ("users.xml", USERS)] {
        let text = mutation.filter(|m| m.file == file).map_or(base, |m| m.text.as_str());
        std::fs::write(tree.join(file), text).unwrap();
    }
    tree
}

/// One finding of a JSON report.
#[derive(Debug, PartialEq)]
struct Finding {
    rule: String,
    severity: String,
    message: String,
}

/// What chaudit finds on a tree, offline.
fn audit(tree: &Path) -> Vec<Finding> {
    let config = tree.join("config.xml");
    let args = ["--format", "json", "--fail-on", "never", "--clickhouse-version", "25.8", "--config"];
    let mut all: Vec<&str> = args.to_vec();
    all.push(config.to_str().unwrap());
    let (code, out, err) = support::chaudit(tree, &all);
    assert_eq!(code, 0, "{}: {err}", tree.display());
    let report: serde_json::Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}:\n{out}"));
    let text = |f: &serde_json::Value, key: &str| f[key].as_str().unwrap_or_default().to_string();
    report["findings"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|f| Finding { rule: text(f, "rule_id"), severity: text(f, "severity"), message: text(f, "message") })
        .collect()
}

/// What a finding claims about start-up, by its rule's effect or its message's words; saying
/// the server will not start outweighs the rule's effect (misspelled-disk-element is
/// `ignored` but says so when its disk as written stops the server).
#[derive(PartialEq)]
enum Claim {
    Refused,
    Ignored,
    Neither,
}

fn claim(effects: &HashMap<String, Option<Effect>>, finding: &Finding) -> Claim {
    let effect = effects.get(&finding.rule).copied().flatten();
    if effect == Some(Effect::RefusesToStart) || finding.message.contains("will not start") {
        Claim::Refused
    } else if effect == Some(Effect::Ignored) || finding.message.contains("ignores") {
        Claim::Ignored
    } else {
        Claim::Neither
    }
}

/// The failures on one mutation; empty when chaudit's claims agree with the engine.
fn judge(
    effects: &HashMap<String, Option<Effect>>,
    mutation: &Mutation,
    verdict: &support::EngineStart,
    findings: &[Finding],
) -> Vec<String> {
    let what = &mutation.what;
    let claiming = |c: Claim| findings.iter().filter(move |f| claim(effects, f) == c);
    if verdict.started {
        return claiming(Claim::Refused)
            .map(|f| format!("{what}: the server starts, {} says it will not: {}", f.rule, f.message))
            .collect();
    }
    // the server's last error, without the stack trace hint
    let error = verdict.errors.last().map_or("", |e| e.split(", Stack trace").next().unwrap_or(e));
    let mut failures = Vec::new();
    if findings.is_empty() {
        failures.push(format!("{what}: MISSED, refused with no finding: {error}"));
    } else if claiming(Claim::Refused).next().is_none() {
        let said: Vec<String> =
            findings.iter().map(|f| format!("  {} ({}): {}", f.rule, f.severity, f.message)).collect();
        failures.push(format!("{what}: refused ({error}), no finding says so:\n{}", said.join("\n")));
    }
    failures.extend(
        claiming(Claim::Ignored)
            .map(|f| format!("{what}: refused ({error}), {} says ClickHouse ignores it: {}", f.rule, f.message)),
    );
    failures
}

#[test]
fn what_chaudit_says_of_start_up_is_what_the_server_does_with_each_mutation() {
    let pack = RulePack::load(false, &[support::repo_root().join("rules")]).expect("the rule pack loads");
    let effects: HashMap<String, Option<Effect>> = pack.rules.iter().map(|r| (r.id.clone(), r.effect)).collect();

    let dir = tempfile::tempdir().unwrap();
    let base = write_tree(dir.path(), None);
    let verdict = support::engine_start(&base);
    assert!(verdict.started, "the base tree does not start: {verdict:?}");
    let base_findings = audit(&base);
    assert!(
        !base_findings.iter().any(|f| f.severity == "critical"),
        "the base tree has critical findings: {base_findings:?}"
    );
    // the base's own findings are not about a mutation
    let mutation_findings =
        |tree: &Path| -> Vec<Finding> { audit(tree).into_iter().filter(|f| !base_findings.contains(f)).collect() };

    let everything = std::env::var("CHAUDIT_STARTUP_CLAIMS").is_ok_and(|v| v == "all");
    for (element, why) in KNOWN_EXCEPTIONS {
        eprintln!("left out: the mutations of {element}: {why}");
    }
    // both mutations of every other element
    let mutations: Vec<Mutation> = all_mutations()
        .into_iter()
        .enumerate()
        .filter(|(i, m)| (everything || i / 2 % 2 == 0) && !KNOWN_EXCEPTIONS.iter().any(|(e, _)| m.what.contains(e)))
        .map(|(_, m)| m)
        .collect();
    let mutation_findings = &mutation_findings;
    let started = std::time::Instant::now();
    // two at a time: each start mostly waits on the server
    let verdicts: Vec<(support::EngineStart, Vec<Finding>)> = std::thread::scope(|scope| {
        let halves: Vec<_> = mutations
            .chunks(mutations.len().div_ceil(2))
            .map(|chunk| {
                scope.spawn(move || {
                    chunk
                        .iter()
                        .map(|m| {
                            let dir = tempfile::tempdir().unwrap();
                            let tree = write_tree(dir.path(), Some(m));
                            (support::engine_start(&tree), mutation_findings(&tree))
                        })
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        halves.into_iter().flat_map(|h| h.join().unwrap()).collect()
    });
    let refused = verdicts.iter().filter(|(v, _)| !v.started).count();
    let failures: Vec<String> =
        mutations.iter().zip(&verdicts).flat_map(|(m, (v, findings))| judge(&effects, m, v, findings)).collect();
    eprintln!(
        "startup claims: {} mutation(s), {refused} refused, {} started, {} failure(s), {:.0} s",
        mutations.len(),
        mutations.len() - refused,
        failures.len(),
        started.elapsed().as_secs_f64()
    );
    assert!(failures.is_empty(), "{} failure(s):\n{}", failures.len(), failures.join("\n"));
}
