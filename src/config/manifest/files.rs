//! The manifest's `files`: where the operator puts each (config.d, conf.d, users.d), and
//! each file's fragment, parsed in place when it is a block scalar so its lines are the
//! manifest's.

use super::*;

/// Where the operator puts a file of `files`.
pub(super) enum Place {
    Server,
    Users,
}

/// A `files` key as the operator reads it (files_generator.go): `config.d/` or `{common}/`
/// (or no prefix, at the installation's level) for config.d, `conf.d/` or `{hosts}/` (or no
/// prefix, at a cluster's) for conf.d, `users.d/` or `{users}/` for users.d; another prefix is
/// ignored, a subfolder dropped. Only the names ClickHouse reads from those folders count
/// (.xml, .conf, .yaml, .yml).
pub(super) fn placement(key: &str) -> Option<(Place, &str)> {
    let (prefix, rest) = key.split_once('/').unwrap_or(("", key));
    let place = match prefix {
        "" | "config.d" | "{common}" | "conf.d" | "{hosts}" => Place::Server,
        "users.d" | "{users}" => Place::Users,
        _ => return None,
    };
    let name = rest.rsplit('/').next().unwrap_or(rest);
    let extension = name.rsplit_once('.').map(|(_, e)| e.to_ascii_lowercase());
    matches!(extension.as_deref(), Some("xml" | "conf" | "yaml" | "yml")).then_some((place, name))
}

/// The path a `files` key is merged at on the host (`conf.d/NAME`, `config.d/NAME`,
/// `users.d/NAME`): ClickHouse merges the fragments of conf.d/ and config.d/ in the order of
/// their paths, and those of users.d/ in the order of their names.
pub(super) fn merge_path(key: &str, cluster_level: bool) -> String {
    let (prefix, rest) = key.split_once('/').unwrap_or(("", key));
    let name = rest.rsplit('/').next().unwrap_or(rest);
    let dir = match prefix {
        "conf.d" | "{hosts}" => "conf.d",
        "" if cluster_level => "conf.d",
        "users.d" | "{users}" => "users.d",
        _ => "config.d",
    };
    format!("{dir}/{name}")
}

/// The files given inline in the installation's `files` and its first cluster's, each parsed
/// with where the operator puts it, in the order ClickHouse merges them: that of their paths
/// on the host, not the manifest's.
pub(super) fn inline_files(
    sources: &mut SourceMap,
    manifest: &SourceFile,
    installation_files: Option<&Yaml>,
    cluster_files: Option<&Yaml>,
) -> Result<Vec<(Place, Element)>> {
    let mut given = Vec::new();
    for (files, cluster_level) in [(installation_files, false), (cluster_files, true)] {
        let Some(Yaml::Mapping(pairs, _)) = files else { continue };
        for (key, value) in pairs {
            let (Some(name), Yaml::Scalar(content, at)) = (key.as_str(), value) else { continue };
            let Some((place, file_name)) = placement(name) else { continue };
            given.push((merge_path(name, cluster_level), place, file_name, content, *at));
        }
    }
    given.sort_by(|a, b| a.0.cmp(&b.0));
    let mut parsed = Vec::new();
    for (_, place, file_name, content, at) in given {
        if let Some(fragment) = file_fragment(sources, manifest, file_name, content, at)? {
            parsed.push((place, fragment));
        }
    }
    Ok(parsed)
}

/// A file given inline: parsed where it stands in the manifest when it is a block scalar
/// (`|`), so its elements keep the manifest's lines; otherwise as a file of its own, named
/// after the manifest and the key. A root other than `<clickhouse>`/`<yandex>` is skipped,
/// as ClickHouse skips such a fragment.
pub(super) fn file_fragment(
    sources: &mut SourceMap,
    manifest: &SourceFile,
    name: &str,
    content: &str,
    at: Origin,
) -> Result<Option<Element>> {
    let file = match in_place(&manifest.text(), at.offset as usize, content) {
        Some(text) => SourceFile::new(manifest.path.clone(), manifest.display.clone(), text),
        None => SourceFile::new(
            manifest.path.with_file_name(format!("{}#{name}", manifest.display)),
            format!("{}#{name}", manifest.display),
            content.to_string(),
        ),
    };
    let yaml = name.ends_with(".yaml") || name.ends_with(".yml");
    let id = sources.next_id();
    let parsed = if yaml { crate::config::yaml::parse(&file, id) } else { crate::config::xml::parse(&file, id) };
    sources.push(file);
    let fragment = parsed?;
    Ok(matches!(fragment.name.as_str(), "clickhouse" | "yandex").then_some(fragment))
}

/// The manifest's text with everything but a block scalar's lines blanked (newlines kept):
/// parsed, its positions are the manifest's. `None` when the lines are not the scalar's
/// content as written (a quoted or folded scalar).
pub(super) fn in_place(text: &str, scalar: usize, content: &str) -> Option<String> {
    let mut out: Vec<u8> = text.bytes().map(|b| if b == b'\n' { b'\n' } else { b' ' }).collect();
    // the scalar's position is its `|` indicator, or (as the parser reports some) its first line
    let indicator = text.get(scalar..)?.starts_with(['|', '>']);
    let line_start = text[..scalar].rfind('\n').map_or(0, |i| i + 1);
    let mut pos = if indicator { scalar + text[scalar..].find('\n')? + 1 } else { line_start };
    for line in content.lines() {
        let end = text[pos..].find('\n').map_or(text.len(), |i| pos + i);
        let written = &text[pos..end];
        let indent = written.len().checked_sub(line.len())?;
        if !written.ends_with(line) || !written[..indent].trim().is_empty() {
            return None;
        }
        out[pos + indent..end].copy_from_slice(line.as_bytes());
        pos = (end + 1).min(text.len());
    }
    String::from_utf8(out).ok()
}
