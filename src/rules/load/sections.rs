//! A rule's sections beyond its expressions, checked and compiled: `applies`, `params`, `let`
//! and `evidence`, `remediation` and its config fragments, `effect`.

use super::file::{Applies, Fragments, Named, ParamSpec, Params, RemediationFile};
use super::*;

impl Parser<'_> {
    pub(super) fn applies(
        &mut self,
        applies: &Spanned<Applies>,
    ) -> (Vec<Source>, Vec<Source>, Option<crate::version::VersionRange>) {
        let mut sources = Vec::new();
        let mut optional = Vec::new();
        for (names, out) in [(&applies.value.sources, &mut sources), (&applies.value.optional, &mut optional)] {
            for name in names {
                match Source::parse(&name.value) {
                    Some(s) => out.push(s),
                    None => self.error(
                        name.origin,
                        format!("unknown source `{}` (config, live, log, host, cluster)", name.value),
                        None,
                    ),
                }
            }
        }
        if applies.value.sources.is_empty() {
            self.error(
                applies.origin,
                "`applies.sources` names at least one of config, live, log, host, cluster",
                None,
            );
        }
        let versions = applies.value.versions.as_ref().and_then(|v| match v.value.parse() {
            Ok(range) => Some(range),
            Err(message) => {
                self.error(v.origin, message, None);
                None
            }
        });
        (sources, optional, versions)
    }

    /// `applies.configs`: the programs whose config the rule judges, a server's without it.
    pub(super) fn configs(&mut self, applies: &Spanned<Applies>) -> Vec<ConfigKind> {
        if applies.value.configs.is_empty() {
            return vec![ConfigKind::Server];
        }
        let mut configs = Vec::new();
        for name in &applies.value.configs {
            match name.value.parse::<ConfigKind>() {
                Ok(kind) => configs.push(kind),
                Err(_) => self.error(
                    name.origin,
                    format!(
                        "unknown config `{}` ({})",
                        name.value,
                        <ConfigKind as strum::VariantNames>::VARIANTS.join(", ")
                    ),
                    None,
                ),
            }
        }
        configs
    }

    /// `params:`: `NAME: {type, default, doc}`, or `NAME: DEFAULT` (its type read from the
    /// literal).
    pub(super) fn params(&mut self, params: &Params) -> Vec<Param> {
        let mut out: Vec<Param> = Vec::new();
        for (name, spec) in &params.0 {
            if !name.value.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_') {
                self.error(name.origin, format!("param `{}`: lowercase letters, digits and `_`", name.value), None);
                continue;
            }
            let (kind, default, doc) = match &spec.value {
                ParamSpec::Default(literal) => (ParamType::of_literal(literal), (literal, spec.origin), None),
                ParamSpec::Typed(fields) => {
                    let Some(kind) = ParamType::parse(&fields.kind.value) else {
                        self.error(
                            fields.kind.origin,
                            format!("unknown param type `{}`", fields.kind.value),
                            Some(format!("one of {}", <ParamType as strum::VariantNames>::VARIANTS.join(", "))),
                        );
                        continue;
                    };
                    (kind, (&fields.default.value, fields.default.origin), fields.doc.clone())
                }
            };
            match kind.value(default.0) {
                Ok(value) => out.push(Param { name: name.value.clone(), kind, default: value, doc }),
                Err(why) => self.error(default.1, format!("default of `{}`: {why}", name.value), None),
            }
        }
        out
    }

    /// Named expressions in order: `evidence`, or `let` (each name a new variable, not the
    /// item's).
    pub(super) fn named_exprs(&mut self, named: &Named, item: Option<&str>) -> Vec<(String, Expr)> {
        named
            .0
            .iter()
            .filter_map(|(name, source)| {
                if let Some(item) = item
                    && !is_variable_name(&name.value, item)
                {
                    let why = format!(
                        "`let` names a new variable: `{}` is not an identifier, or is the item, `params`, \
                         `version` or a source",
                        name.value
                    );
                    self.error(name.origin, why, None);
                    return None;
                }
                self.compile(&source.value, source.origin).map(|e| (name.value.clone(), e))
            })
            .collect()
    }

    pub(super) fn remediation(&mut self, remediation: &Spanned<RemediationFile>) -> Option<Remediation> {
        let file = &remediation.value;
        let config = match &file.config {
            None => Vec::new(),
            Some(fragments) => self.fragments(fragments.0.as_ref()?)?,
        };
        let manual = self.template(file.manual.as_ref())?;
        let sql = self.template(file.sql.as_ref())?;
        let command = self.template(file.command.as_ref())?;
        let manifest = self.template(file.manifest.as_ref())?;
        let manifest_manual = self.template(file.manifest_manual.as_ref())?;
        let cluster_manifest = self.template(file.cluster_manifest.as_ref())?;
        let cluster_manual = self.template(file.cluster_manual.as_ref())?;
        if config.is_empty() && manual.is_none() && sql.is_none() && command.is_none() {
            self.error(
                remediation.origin,
                "a remediation gives `config` fragments, `manual` steps, `sql` or a `command`",
                None,
            );
        }
        // with both, each finding has the one its templates render non-empty (a section with
        // an <engine> gets the manual step, one without it the fragment); a finding that
        // renders a fragment is written by `chaudit fix`, its manual text left unused
        Some(Remediation {
            restart: file.restart.0?,
            config,
            manual,
            sql,
            command,
            manifest,
            manifest_manual,
            cluster_manifest,
            cluster_manual,
        })
    }

    /// `effect:`: what ClickHouse does with the problem (every built-in config rule states
    /// it, and an engine test proves it on the rule's fixtures); one that stops the server
    /// is critical; a rule that does not read the config files has none (its fixtures are no
    /// tree an engine could start).
    pub(super) fn effect(
        &mut self,
        effect: Option<&Spanned<Effect>>,
        severity: Option<Severity>,
        sources: &[Source],
    ) -> Option<Effect> {
        let effect = effect?;
        if !sources.contains(&Source::Config) {
            self.error(
                effect.origin,
                "`effect:` is what the server does with the config files: a rule of `config` only",
                None,
            );
        }
        if effect.value == Effect::RefusesToStart && severity.is_some_and(|s| s != Severity::Critical) {
            self.error(effect.origin, "a problem that stops the server is `severity: critical`", None);
        }
        Some(effect.value)
    }

    /// `config:` maps a tree (`server`, `users`) to the `<clickhouse>` fragment merged into it.
    fn fragments(&mut self, fragments: &Fragments) -> Option<Vec<(ConfigTree, Template)>> {
        let mut out = Vec::new();
        for (tree, fragment) in [(ConfigTree::Server, &fragments.server), (ConfigTree::Users, &fragments.users)] {
            if let Some(template) = self.template(fragment.as_ref())? {
                out.push((tree, template));
            }
        }
        Some(out)
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
