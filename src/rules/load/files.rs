//! Rule files found under a directory: every YAML file that is not a fixture's.

use super::*;

/// Rule files found under a directory (recursively), sorted.
pub fn rule_files(fs: &impl ConfigFs, dir: &Path) -> Result<Vec<PathBuf>, RuleError> {
    fn walk(fs: &impl ConfigFs, dir: &Path, out: &mut Vec<PathBuf>) -> std::io::Result<()> {
        for (path, listed_as_file) in fs.read_dir(dir)? {
            // links are followed; what is neither a file nor a directory is taken as a file,
            // and refused when it is read
            let candidate = path.extension().is_some_and(|e| e == "yaml" || e == "yml");
            if listed_as_file || fs.is_file(&path).unwrap_or(true) {
                if candidate && is_rule_file(fs, &path) {
                    out.push(path);
                }
            } else {
                match walk(fs, &path, out) {
                    Err(e) if e.kind() == std::io::ErrorKind::NotADirectory && candidate => out.push(path),
                    Err(e) if e.kind() == std::io::ErrorKind::NotADirectory => {}
                    other => other?,
                }
            }
        }
        Ok(())
    }
    let mut files = Vec::new();
    walk(fs, dir, &mut files).map_err(|e| RuleError::Read { path: dir.to_path_buf(), message: e.to_string() })?;
    files.sort();
    Ok(files)
}

/// Fixture trees live in directories beside the rules; a rule file is a YAML file whose
/// directory has no config.xml (fixtures may hold YAML configs).
fn is_rule_file(fs: &impl ConfigFs, path: &Path) -> bool {
    let dir = path.parent().unwrap_or(Path::new("."));
    !["config.xml", "config.yaml", "config.yml"].iter().any(|main| fs.exists(&dir.join(main)))
        && !path
            .components()
            .any(|c| c.as_os_str() == "users.d" || c.as_os_str() == "config.d" || c.as_os_str() == "conf.d")
}
