//! What a default change can do to what runs now, read from the change itself (its name and
//! its two values): the review ranks what refuses or changes today's queries before lowered
//! limits, other numbers, formats and new permissions.

use serde::Serialize;

use super::history::DefaultChange;

/// The kind of change, most disruptive first (the review's order among changes alike otherwise).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, strum::IntoStaticStr)]
#[serde(rename_all = "kebab-case")]
#[strum(serialize_all = "kebab-case")]
pub enum Risk {
    /// An `allow_*` switch turned off: what the running version accepts is refused.
    Disallows,
    /// A switch turned on or off, or another choice (an algorithm, a method, a mode): what
    /// queries or the server do changes.
    ChangesBehaviour,
    /// A `max_*` limit lowered, or set where there was none: what runs now may reach it.
    LimitLowered,
    /// Another number: a size, a timeout, a threshold.
    Number,
    /// The input or output of one data format.
    Format,
    /// A feature's gate (`allow_experimental_*`, `allow_suspicious_*`, `allow_*_type`) turned
    /// on: what the running version refuses is accepted.
    Permits,
}

impl Risk {
    pub fn of(change: &DefaultChange) -> Risk {
        let name = change.name.as_str();
        let (from, to) = (change.from_default.trim(), change.to_default.trim());
        let (from_switch, to_switch) = (switch(from), switch(to));
        if name.starts_with("allow_")
            && let (Some(from), Some(to)) = (from_switch, to_switch)
        {
            // turned on, a gate of a feature permits it; another `allow_` turns on an optimization
            let gate =
                ["allow_experimental_", "allow_suspicious_", "allow_deprecated_"].iter().any(|p| name.starts_with(p))
                    || name.ends_with("_type");
            if from && !to {
                return Risk::Disallows;
            }
            if gate {
                return Risk::Permits;
            }
        }
        if ["input_format_", "output_format_", "format_"].iter().any(|p| name.starts_with(p)) {
            return Risk::Format;
        }
        if from_switch.is_some() && to_switch.is_some() {
            return Risk::ChangesBehaviour;
        }
        match (number(from), number(to)) {
            (Some(from), Some(to)) => {
                let limit = name.starts_with("max_") || name.contains("_max_");
                // 0 is "no limit" for ClickHouse's max_ settings
                let lowered = to > 0.0 && (from == 0.0 || to < from);
                if limit && lowered { Risk::LimitLowered } else { Risk::Number }
            }
            _ => Risk::ChangesBehaviour,
        }
    }

    pub fn name(self) -> &'static str {
        self.into()
    }

    /// As the review prints it beside the change.
    pub fn label(self) -> &'static str {
        match self {
            Risk::Disallows => "refuses what the running version accepts",
            Risk::ChangesBehaviour => "changes behaviour",
            Risk::LimitLowered => "a limit lowered",
            Risk::Number => "a number",
            Risk::Format => "one format's input or output",
            Risk::Permits => "accepts what was refused",
        }
    }
}

fn switch(value: &str) -> Option<bool> {
    match value {
        "0" | "false" | "False" => Some(false),
        "1" | "true" | "True" => Some(true),
        _ => None,
    }
}

fn number(value: &str) -> Option<f64> {
    value.parse::<f64>().ok().filter(|n| n.is_finite())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::facts::catalog::SettingKind;

    fn risk(name: &str, from: &str, to: &str) -> Risk {
        Risk::of(&DefaultChange {
            kind: SettingKind::Session,
            name: name.into(),
            from_default: from.into(),
            to_default: to.into(),
            steps: Vec::new(),
            revertible: true,
        })
    }

    #[test]
    fn each_change_is_read_from_its_name_and_values() {
        assert_eq!(risk("http_max_fields", "1000000", "1000"), Risk::LimitLowered);
        assert_eq!(risk("max_bytes_to_read", "0", "100"), Risk::LimitLowered);
        assert_eq!(risk("max_threads", "8", "0"), Risk::Number);
        assert_eq!(risk("allow_dynamic_type_in_join_keys", "1", "0"), Risk::Disallows);
        assert_eq!(risk("async_insert", "0", "1"), Risk::ChangesBehaviour);
        assert_eq!(risk("network_compression_method", "LZ4", "ZSTD"), Risk::ChangesBehaviour);
        assert_eq!(risk("http_connection_timeout", "1", "2"), Risk::Number);
        assert_eq!(risk("http_receive_timeout", "30", "180"), Risk::Number);
        assert_eq!(risk("output_format_parquet_use_custom_encoder", "0", "1"), Risk::Format);
        assert_eq!(risk("allow_experimental_nullable_tuple_type", "0", "1"), Risk::Permits);
        assert_eq!(risk("allow_aggregate_partitions_independently", "0", "1"), Risk::ChangesBehaviour);
        assert!(Risk::Disallows < Risk::ChangesBehaviour && Risk::ChangesBehaviour < Risk::LimitLowered);
    }
}
