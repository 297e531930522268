//! Properties of the merge that hold for any tree.

use chaudit::config::{self, Element, LoadOptions, Node, SourceMap, merge::merge_children, xml};
use proptest::prelude::*;

/// A small XML tree: few names so fragments pair with existing elements often.
fn tree(depth: u32) -> BoxedStrategy<String> {
    let leaf = (
        prop::sample::select(vec!["a", "b", "c"]),
        prop::option::of(Just("k=\"1\"")),
        prop::sample::select(vec!["1", "2", ""]),
    )
        .prop_map(|(n, attr, text)| format!("<{n} {}>{text}</{n}>", attr.unwrap_or_default()));
    if depth == 0 {
        return leaf.boxed();
    }
    let branch = (prop::sample::select(vec!["a", "b", "c"]), prop::collection::vec(tree(depth - 1), 0..4))
        .prop_map(|(n, children)| format!("<{n}>{}</{n}>", children.concat()));
    prop_oneof![leaf, branch].boxed()
}

fn document(max_children: usize) -> impl Strategy<Value = String> {
    prop::collection::vec(tree(2), 0..max_children).prop_map(|c| format!("<clickhouse>{}</clickhouse>", c.concat()))
}

/// The tree without provenance, for comparing shapes and values.
fn shape(e: &Element) -> String {
    let mut attrs: Vec<String> = e.attributes.iter().map(|a| format!("{}={}", a.name, a.value)).collect();
    attrs.sort();
    let children: Vec<String> = e
        .children
        .iter()
        .filter_map(|n| match n {
            Node::Element(c) => Some(shape(c)),
            Node::Text(t) if !t.is_whitespace() => Some(format!("'{}'", t.value)),
            _ => None,
        })
        .collect();
    format!("{}[{}]({})", e.name, attrs.join(","), children.join(","))
}

fn merged(main: &str, fragments: &[&str]) -> Element {
    let mut sources = SourceMap::new("/".into());
    let id = sources.add("/config.xml".into(), main.into());
    let mut root = xml::parse(&sources, id).unwrap();
    for (i, f) in fragments.iter().enumerate() {
        let id = sources.add(format!("/config.d/{i}.xml").into(), (*f).into());
        let with = xml::parse(&sources, id).unwrap();
        merge_children(&mut root, with, &sources).unwrap();
    }
    root
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn an_empty_fragment_changes_nothing(main in document(5)) {
        let before = merged(&main, &[]);
        let after = merged(&main, &["<clickhouse/>"]);
        prop_assert_eq!(shape(&before), shape(&after));
    }

    #[test]
    fn a_fragment_without_remove_is_idempotent(main in document(5), fragment in document(4)) {
        let once = merged(&main, &[&fragment]);
        let twice = merged(&main, &[&fragment, &fragment]);
        prop_assert_eq!(shape(&once), shape(&twice));
    }

    #[test]
    fn fragments_apply_in_path_order(main in document(4), fragments in prop::collection::vec(document(3), 1..4)) {
        // Written to disk in reverse order, under names that sort in list order.
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("config.xml"), &main).unwrap();
        std::fs::create_dir(dir.path().join("config.d")).unwrap();
        std::fs::create_dir(dir.path().join("conf.d")).unwrap();
        for (i, f) in fragments.iter().enumerate().rev() {
            // conf.d sorts before config.d, so the first fragment goes there
            let path = if i == 0 { dir.path().join("conf.d/z.xml") } else { dir.path().join(format!("config.d/{i:02}.xml")) };
            std::fs::write(path, f).unwrap();
        }
        let options = LoadOptions { default_include_from: "/nonexistent".into(), env: Default::default() };
        let loaded = config::load(&dir.path().join("config.xml"), &options).unwrap();
        let expected = merged(&main, &fragments.iter().map(String::as_str).collect::<Vec<_>>());
        prop_assert_eq!(shape(&loaded.server.root), shape(&expected));
    }

    #[test]
    fn the_last_fragment_setting_a_scalar_wins(values in prop::collection::vec(0u32..1000, 1..6)) {
        let fragments: Vec<String> = values.iter().map(|v| format!("<clickhouse><max_threads>{v}</max_threads></clickhouse>")).collect();
        let root = merged("<clickhouse><max_threads>7</max_threads></clickhouse>", &fragments.iter().map(String::as_str).collect::<Vec<_>>());
        prop_assert_eq!(root.child("max_threads").unwrap().value(), values.last().unwrap().to_string());
        prop_assert_eq!(root.child("max_threads").unwrap().history.len(), values.len());
    }
}
