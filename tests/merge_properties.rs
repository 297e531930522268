//! Properties of the merge that hold for any tree.

use chaudit::config::merge::{SUBSTITUTION_ATTRIBUTES, identity, merge_fragments};
use chaudit::config::{self, Element, LoadOptions, Node, SourceMap, xml};
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

/// A fragment whose elements may carry remove, replace or an extra attribute.
fn fragment() -> impl Strategy<Value = String> {
    let marker = prop::sample::select(vec!["", " remove=\"1\"", " replace=\"0\"", " k=\"1\"", " k=\"2\""]);
    prop::collection::vec((tree(2), marker), 0..5).prop_map(|children| {
        let body: String = children
            .into_iter()
            .map(|(t, m)| match t.find('>') {
                // put the marker into the element's start tag (before a self-closing slash too)
                Some(end) if !m.is_empty() && !t[..end].contains('=') => format!("{}{}{}", &t[..end], m, &t[end..]),
                _ => t,
            })
            .collect();
        format!("<clickhouse>{body}</clickhouse>")
    })
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
            Node::Text(t) if !t.is_whitespace() => Some(format!("'{}'", t.value())),
            _ => None,
        })
        .collect();
    format!("{}[{}]({})", e.name, attrs.join(","), children.join(","))
}

/// A `<clickhouse>` document's content.
fn body(document: &str) -> &str {
    document.strip_prefix("<clickhouse>").and_then(|d| d.strip_suffix("</clickhouse>")).unwrap_or("")
}

fn parse_all(main: &str, fragments: &[&str]) -> (Element, Vec<Element>) {
    let mut sources = SourceMap::new("/".into());
    let id = sources.add("/config.xml".into(), main.into());
    let root = xml::parse(sources.file(id), id).unwrap();
    let parsed = fragments
        .iter()
        .enumerate()
        .map(|(i, f)| {
            let id = sources.add(format!("/config.d/{i}.xml").into(), (*f).into());
            xml::parse(sources.file(id), id).unwrap()
        })
        .collect();
    (root, parsed)
}

fn merged(main: &str, fragments: &[&str]) -> Element {
    let (mut root, parsed) = parse_all(main, fragments);
    merge_fragments(&mut root, parsed, &SourceMap::new("/".into())).unwrap();
    root
}

/// ClickHouse's ConfigProcessor::mergeRecursive, transliterated one fragment at a time: the
/// reference the indexed merge must agree with.
fn reference_merge(target: &mut Element, mut with: Element) {
    target.children.retain(|n| !matches!(n, Node::Text(t) if !t.is_cdata() && !t.is_whitespace()));
    let mut unmatched: Vec<Option<String>> =
        target.children.iter().map(|n| if let Node::Element(e) = n { Some(identity(e)) } else { None }).collect();
    for node in std::mem::take(&mut with.children) {
        let Node::Element(mut w) = node else {
            target.children.push(node);
            unmatched.push(None);
            continue;
        };
        let (remove, replace) = (w.has_attribute("remove"), w.has_attribute("replace"));
        let id = identity(&w);
        match unmatched.iter().position(|u| u.as_deref() == Some(id.as_str())) {
            Some(i) => {
                unmatched[i] = None;
                if remove {
                    target.children[i] = Node::Comment(chaudit::config::tree::Text::new("removed", false, w.origin));
                } else if replace {
                    target.children[i] = Node::Element(w);
                } else if let Node::Element(e) = &mut target.children[i] {
                    if w.has_child_nodes() {
                        for a in SUBSTITUTION_ATTRIBUTES {
                            e.remove_attribute(a);
                        }
                    }
                    for a in &w.attributes {
                        e.set_attribute(&a.name, &a.value);
                    }
                    let children = std::mem::take(&mut w.children);
                    w.children = children;
                    reference_merge(e, w);
                }
            }
            None if remove => {}
            None => {
                strip(&mut w);
                target.children.push(Node::Element(w));
                unmatched.push(None);
            }
        }
    }
    target.children.retain(|n| !matches!(n, Node::Comment(c) if c.value() == "removed"));
}

fn strip(e: &mut Element) {
    e.children.retain(|n| !matches!(n, Node::Element(c) if c.has_attribute("remove")));
    for c in e.elements_mut() {
        c.remove_attribute("replace");
        strip(c);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn the_merge_equals_clickhouse_merging_fragment_by_fragment(
        main in document(6),
        fragments in prop::collection::vec(fragment(), 1..5),
    ) {
        let refs: Vec<&str> = fragments.iter().map(String::as_str).collect();
        let (mut expected, parsed) = parse_all(&main, &refs);
        for f in parsed {
            reference_merge(&mut expected, f);
        }
        prop_assert_eq!(shape(&merged(&main, &refs)), shape(&expected));
    }

    #[test]
    fn indexed_sections_merge_as_clickhouse_does(
        main in document(6),
        fragments in prop::collection::vec((fragment(), fragment()), 1..5),
    ) {
        // 40 filler siblings make the root and <w> big enough for the merge's hash index,
        // kept from one fragment to the next
        let fillers: String = (0..40).map(|i| format!("<f{i}/>")).collect();
        let main = format!("<clickhouse>{fillers}<w>{fillers}{}</w>{}</clickhouse>", body(&main), body(&main));
        let fragments: Vec<String> = fragments
            .iter()
            .map(|(w, top)| format!("<clickhouse><w>{}</w>{}</clickhouse>", body(w), body(top)))
            .collect();
        let refs: Vec<&str> = fragments.iter().map(String::as_str).collect();
        let (mut expected, parsed) = parse_all(&main, &refs);
        for f in parsed {
            reference_merge(&mut expected, f);
        }
        prop_assert_eq!(shape(&merged(&main, &refs)), shape(&expected));
    }

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
        let options = LoadOptions { default_include_from: chaudit::config::DefaultInclude::None, env: Default::default(), env_origin: None, roots: Default::default(), base: None };
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
