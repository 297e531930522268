//! chaudit's caps on what it reads, in one place: each input file, the growth of a config
//! tree by its substitutions, and each answer of a server. The error that stops at a cap
//! names it (docs/security.md, "Limits").

/// Bytes of one input file: a config file, users config, include file, rule file,
/// snapshot, suppressions, baseline, password file, CA file.
pub const MAX_INPUT_FILE_BYTES: u64 = 512 << 20;

/// Nodes (elements, text, comments) that substitutions (`incl`, `from_env`, `<include>`)
/// may add to one config tree, in all: far above any real config, far below "billion laughs".
pub const MAX_SUBSTITUTED_NODES: usize = 1_000_000;

/// What YAML aliases may add to one document, all together: nodes, and bytes of scalar
/// text. Each alias is a copy of its anchor's tree, so nine lines of nested aliases can ask
/// for billions of nodes; real configs and rules reuse a few small blocks.
pub const MAX_ALIAS_NODES: u64 = 200_000;
pub const MAX_ALIAS_BYTES: u64 = 32 << 20;

/// Bytes of one server's answer to one query (an answer through clusterAllReplicas may be
/// this much per replica).
pub const MAX_ANSWER_BYTES: u64 = 256 << 20;

/// Rows of one server's answer to one query (per replica through clusterAllReplicas): small
/// rows cost more held than their bytes.
pub const MAX_ANSWER_ROWS: u64 = 5_000_000;

/// Bytes of one row (one line) of a server's answer.
pub const MAX_ROW_BYTES: usize = 16 << 20;

/// A size as the errors say it: `256 MiB` when it is whole mebibytes, else `N bytes`.
pub fn bytes(n: u64) -> String {
    if n >= 1 << 20 && n.is_multiple_of(1 << 20) { format!("{} MiB", n >> 20) } else { format!("{n} bytes") }
}

#[cfg(test)]
mod tests {
    #[test]
    fn sizes_are_said_in_mib() {
        assert_eq!(super::bytes(super::MAX_INPUT_FILE_BYTES), "512 MiB");
        assert_eq!(super::bytes(1000), "1000 bytes");
    }
}
