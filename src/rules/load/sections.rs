//! A rule's sections beyond its expressions: `applies`, `params`, `let` and `evidence`,
//! `remediation` and its config fragments, `effect`.

use super::*;

impl Parser<'_> {
    pub(super) fn applies(
        &mut self,
        origin: Origin,
    ) -> (Vec<Source>, Vec<Source>, Option<crate::version::VersionRange>) {
        let Some(applies) = self.doc.get("applies") else {
            self.error(origin, "missing `applies` (its `sources`: config, live, log, host, cluster)", None);
            return (Vec::new(), Vec::new(), None);
        };
        if let Yaml::Mapping(pairs, _) = applies {
            self.known_keys(pairs, &["sources", "optional", "versions"], "applies.");
        } else {
            self.error(applies.origin(), "`applies` maps `sources` (and `versions`)", None);
        }
        let mut sources = Vec::new();
        let mut optional = Vec::new();
        for (key, out) in [("sources", &mut sources), ("optional", &mut optional)] {
            for name in self.string_list(applies, key) {
                match Source::parse(&name) {
                    Some(s) => out.push(s),
                    None => self.error(
                        applies.get(key).map_or(applies.origin(), Yaml::origin),
                        format!("unknown source `{name}` (config, live, log, host, cluster)"),
                        None,
                    ),
                }
            }
        }
        if sources.is_empty() {
            self.error(
                applies.origin(),
                "`applies.sources` names at least one of config, live, log, host, cluster",
                None,
            );
        }
        let versions = self.optional_str(applies, "versions").and_then(|v| match v.parse() {
            Ok(range) => Some(range),
            Err(message) => {
                let at = applies.get("versions").map_or(origin, Yaml::origin);
                self.error(at, message, None);
                None
            }
        });
        (sources, optional, versions)
    }

    /// `params:`: `NAME: {type, default, doc}`, or `NAME: DEFAULT` (its type read from the
    /// literal).
    pub(super) fn params(&mut self) -> Vec<Param> {
        let mut out: Vec<Param> = Vec::new();
        let pairs = match self.doc.get("params") {
            None | Some(Yaml::Null(_)) => return out,
            Some(Yaml::Mapping(pairs, _)) => pairs,
            Some(other) => {
                self.error(other.origin(), "`params` maps names to `{type, default, doc}`", None);
                return out;
            }
        };
        for (key, value) in pairs {
            let Some(name) = key.as_str() else { continue };
            if !name.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_') {
                self.error(key.origin(), format!("param `{name}`: lowercase letters, digits and `_`"), None);
                continue;
            }
            let param = match value {
                Yaml::Scalar(literal, _) => {
                    let kind = ParamType::of_literal(literal);
                    kind.value(literal).ok().map(|default| Param { name: name.into(), kind, default, doc: None })
                }
                Yaml::Mapping(fields, origin) => {
                    self.known_keys(fields, &["type", "default", "doc"], &format!("params.{name}."));
                    let kind = self.required_scalar(value, "type", *origin, "a type name").and_then(|(t, at)| {
                        let kind = ParamType::parse(t);
                        if kind.is_none() {
                            self.error(
                                at,
                                format!("unknown param type `{t}`"),
                                Some(format!("one of {}", <ParamType as strum::VariantNames>::VARIANTS.join(", "))),
                            );
                        }
                        kind
                    });
                    let default = self.required_scalar(value, "default", *origin, "a value");
                    let doc = self.optional_str(value, "doc");
                    match (kind, default) {
                        (Some(kind), Some((literal, at))) => match kind.value(literal) {
                            Ok(default) => Some(Param { name: name.into(), kind, default, doc }),
                            Err(why) => {
                                self.error(at, format!("default of `{name}`: {why}"), None);
                                None
                            }
                        },
                        _ => None,
                    }
                }
                other => {
                    self.error(
                        other.origin(),
                        format!("param `{name}` is `{{type, default, doc}}` or a default"),
                        None,
                    );
                    None
                }
            };
            out.extend(param);
        }
        out
    }

    /// A mapping of names to expressions, in order: `evidence`, or `let` (each name a new
    /// variable, not the item's).
    pub(super) fn named_exprs(&mut self, key: &str, item: &str) -> Vec<(String, Expr)> {
        match self.doc.get(key) {
            None => Vec::new(),
            Some(Yaml::Mapping(pairs, _)) => pairs
                .iter()
                .filter_map(|(k, v)| match (k.as_str(), v) {
                    (Some(name), Yaml::Scalar(source, o)) => {
                        if key == "let" && !is_variable_name(name, item) {
                            let why = format!(
                                "`let` names a new variable: `{name}` is not an identifier, or is the item, `params`, \
                                 `version` or a source"
                            );
                            self.error(k.origin(), why, None);
                            return None;
                        }
                        self.compile(source, *o).map(|e| (name.to_string(), e))
                    }
                    _ => {
                        self.error(k.origin(), format!("`{key}` maps a name to an expression"), None);
                        None
                    }
                })
                .collect(),
            Some(other) => {
                self.error(other.origin(), format!("`{key}` maps names to expressions"), None);
                Vec::new()
            }
        }
    }

    pub(super) fn remediation(&mut self, origin: Origin) -> Option<Remediation> {
        let Some(node) = self.doc.get("remediation") else {
            self.error(origin, "missing `remediation` (restart, config, manual, sql or command)", None);
            return None;
        };
        match node {
            Yaml::Mapping(pairs, _) => {
                let known = ["restart", "config", "manual", "sql", "command", "manifest", "manifest_manual"];
                self.known_keys(pairs, &known, "remediation.")
            }
            other => self.error(
                other.origin(),
                "`remediation` maps `restart`, `config`, `manual`, `sql`, `command`, `manifest` and `manifest_manual`",
                None,
            ),
        }
        let restart = match node.get("restart").and_then(Yaml::as_str) {
            Some("true") => true,
            Some("false") | None => false,
            Some(other) => {
                self.error(node.origin(), format!("`restart` is true or false, not `{other}`"), None);
                false
            }
        };
        let config = self.fragments(node, origin)?;
        let manual = self.template(node, "manual", false, origin)?;
        let sql = self.template(node, "sql", false, origin)?;
        let command = self.template(node, "command", false, origin)?;
        let manifest = self.template(node, "manifest", false, origin)?;
        let manifest_manual = self.template(node, "manifest_manual", false, origin)?;
        if config.is_empty() && manual.is_none() && sql.is_none() && command.is_none() {
            self.error(
                node.origin(),
                "a remediation gives `config` fragments, `manual` steps, `sql` or a `command`",
                None,
            );
        }
        // with both, each finding has the one its templates render non-empty (a section with
        // an <engine> gets the manual step, one without it the fragment); a finding that
        // renders a fragment is written by `chaudit fix`, its manual text left unused
        Some(Remediation { restart, config, manual, sql, command, manifest, manifest_manual })
    }

    /// `effect:`: what ClickHouse does with the problem (every built-in config rule states
    /// it, and an engine test proves it on the rule's fixtures); one that stops the server
    /// is critical; a rule that does not read the config files has none (its fixtures are no
    /// tree an engine could start).
    pub(super) fn effect(&mut self, severity: Option<Severity>, sources: &[Source], origin: Origin) -> Option<Effect> {
        let node = self.doc.get("effect");
        let effect = match node.map(|n| (n.as_str(), n.origin())) {
            None => None,
            Some((text, at)) => {
                let parsed = text.and_then(Effect::parse);
                if parsed.is_none() {
                    self.error(
                        at,
                        "unknown effect",
                        Some(format!("one of {}", <Effect as strum::VariantNames>::VARIANTS.join(", "))),
                    );
                }
                parsed
            }
        };
        if effect.is_some() && !sources.contains(&Source::Config) {
            let at = node.map_or(origin, Yaml::origin);
            self.error(at, "`effect:` is what the server does with the config files: a rule of `config` only", None);
        }
        if effect == Some(Effect::RefusesToStart) && severity.is_some_and(|s| s != Severity::Critical) {
            let at = node.map_or(origin, Yaml::origin);
            self.error(at, "a problem that stops the server is `severity: critical`", None);
        }
        effect
    }

    /// `config:` maps a tree (`server`, `users`) to the `<clickhouse>` fragment merged into it.
    fn fragments(&mut self, node: &Yaml, origin: Origin) -> Option<Vec<(ConfigTree, Template)>> {
        let Some(config) = node.get("config") else { return Some(Vec::new()) };
        let Yaml::Mapping(pairs, _) = config else {
            self.error(
                config.origin(),
                "`config` maps a tree (`server` or `users`) to the `<clickhouse>` fragment merged into it",
                None,
            );
            return None;
        };
        self.known_keys(pairs, &["server", "users"], "remediation.config.");
        let mut fragments = Vec::new();
        for (tree, key) in [(ConfigTree::Server, "server"), (ConfigTree::Users, "users")] {
            if let Some(template) = self.template(config, key, false, origin)? {
                fragments.push((tree, template));
            }
        }
        Some(fragments)
    }
}

/// Whether `name` can be a `let` variable: an identifier that hides nothing the rule reads.
fn is_variable_name(name: &str, item: &str) -> bool {
    let mut chars = name.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
        && name != item
        && !matches!(name, "params" | "version")
        && crate::facts::Source::parse(name).is_none()
}
