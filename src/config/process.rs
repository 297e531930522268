//! ClickHouse's ConfigProcessor::processConfig: one tree (the server's or the users') parsed,
//! its fragments merged in path order, its include_from file read and substitutions applied.

use super::*;
use crate::source::Packer;

/// ClickHouse's ConfigProcessor::processConfig: parse, merge fragments, substitute.
pub fn process(
    fs: &dyn ConfigFs,
    main: &Path,
    options: &LoadOptions,
    sources: &mut SourceMap,
    problems: &mut Vec<ConfigError>,
) -> Result<ConfigTree> {
    let main_id = files::read(fs, sources, main)?;
    let mut root = files::parse(sources.file(main_id), main_id)?;
    let mut packer = Packer::default();
    sources.file_mut(main_id).pack(&mut packer);
    let mut used = vec![main_id];
    let paths = files::merge_files(fs, main)?;
    let first_id = sources.next_id().0;
    let base_dir = sources.base_dir().to_path_buf();
    let mut merger = Merger::new(&root);
    // Each fragment is read and parsed on a worker while the ones before it merge here, and
    // is dropped once merged: the tree grows, not a heap of parsed fragments.
    let read_and_parse = |k: usize, path: &PathBuf| {
        let file = files::read_file(fs, path, &base_dir)?;
        let id = FileId(first_id + k as u32);
        let parsed = files::parse(&file, id);
        Ok((file, parsed))
    };
    crate::parallel::pipeline(&paths, read_and_parse, |read: Result<_>| {
        let (mut file, parsed) = read?;
        // packed on this thread, which would otherwise wait for the parsing workers
        file.pack(&mut packer);
        let id = sources.push(file);
        let fragment = parsed?;
        if !same_root(&root.name, &fragment.name) {
            if is_clickhouse_root(&root.name) {
                let p = Pointer::new(sources, fragment.origin, fragment.name.len() + 1);
                return Err(ConfigError::RootMismatch {
                    found: fragment.name.to_string(),
                    expected: root.name.to_string(),
                    at: p.at,
                    src: p.src,
                    span: p.span,
                });
            }
            let path = sources.file(id).display.clone();
            problems.push(ConfigError::FragmentSkipped {
                path,
                found: fragment.name.to_string(),
                expected: root.name.to_string(),
            });
            return Ok(());
        }
        for attribute in fragment.attributes.iter().filter(|a| matches!(a.name.as_str(), "replace" | "remove")) {
            let p = Pointer::new(sources, fragment.origin, fragment.name.len() + 1);
            problems.push(ConfigError::RootAttributeIgnored {
                attribute: attribute.name.clone(),
                origin: fragment.origin,
                at: p.at,
                src: p.src,
                span: p.span,
            });
        }
        merger.merge(&mut root, fragment, sources)?;
        used.push(id);
        Ok(())
    })?;
    merger.finish(&mut root);

    let include_from = read_include_from(fs, &mut root, main, options, sources, problems)?;
    if let Some((id, _)) = &include_from {
        used.push(*id);
    }
    Substituter {
        include_from: include_from.as_ref().map(|(_, e)| e),
        env: &options.env,
        env_origin: options.env_origin.as_deref(),
        sources,
        problems,
        added: 0,
    }
    .run(&mut root)?;
    Ok(ConfigTree { root, files: used })
}

fn same_root(a: &str, b: &str) -> bool {
    a == b || (is_clickhouse_root(a) && is_clickhouse_root(b))
}

fn is_clickhouse_root(name: &str) -> bool {
    name == "clickhouse" || name == "yandex"
}

/// The include_from file (after substituting the `<include_from>` element itself), or
/// /etc/metrika.xml when there is no such element and that file exists.
fn read_include_from(
    fs: &dyn ConfigFs,
    root: &mut Element,
    main: &Path,
    options: &LoadOptions,
    sources: &mut SourceMap,
    problems: &mut Vec<ConfigError>,
) -> Result<Option<(FileId, Element)>> {
    let element = root.elements_mut().find(|e| e.name == "include_from");
    let path = match element {
        Some(element) => {
            let kept = Substituter {
                include_from: None,
                env: &options.env,
                env_origin: options.env_origin.as_deref(),
                sources,
                problems,
                added: 0,
            }
            .element(element)?;
            let value = element.value();
            if !kept || value.is_empty() {
                return Ok(None);
            }
            // ClickHouse resolves a relative path against its working directory; the
            // config's own directory is the best offline stand-in.
            let named = Named::resolve(main, &value, &options.roots);
            if !fs.exists(&named.path) {
                let p = Pointer::new(sources, element.value_origin(), value.len());
                let refused = "ClickHouse refuses to start with 'File not found'";
                let help = match named.missing_help() {
                    Some(more) => format!("{refused}; {more}"),
                    None => refused.to_string(),
                };
                return Err(ConfigError::IncludeFromMissing {
                    path: named.named,
                    read_as: named.read_as,
                    help,
                    at: p.at,
                    src: p.src,
                    span: p.span,
                });
            }
            named.path
        }
        None => match options.default_include_from.path_for(fs, main, &options.roots) {
            Some(path) => path,
            None => return Ok(None),
        },
    };
    let id = files::read(fs, sources, &path)?;
    let parsed = files::parse(sources.file(id), id)?;
    sources.file_mut(id).pack(&mut Packer::default());
    Ok(Some((id, parsed)))
}
