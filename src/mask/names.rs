//! Which element, attribute and key names hold a credential.

use std::sync::LazyLock;

use aho_corasick::AhoCorasick;

/// Elements, attributes and keys ClickHouse reads a credential from (its users, access
/// storages, clusters and inter-server settings, disks and object storages, backups, encryption
/// codecs and disks, Kafka, RabbitMQ, NATS, LDAP, Keeper, OpenSSL, HTTP handlers' headers,
/// named collections and dictionary sources). Names that merely contain one of these are
/// judged by [`is_secret_name`]: `allow_plaintext_password` or `show_named_collections_secrets`
/// are switches, `private_key_file` a path.
const SECRET_NAMES: &[&str] = &[
    "password",
    "password_sha256_hex",
    "password_double_sha1_hex",
    "password_bcrypt_hash",
    "ssh_key",
    "secret",
    "secret_access_key",
    "access_key_id",
    "session_token",
    "server_side_encryption_customer_key_base64",
    "server_side_encryption_kms_key_id",
    "account_key",
    "connection_string",
    "key",
    "key_hex",
    "current_key",
    "current_key_hex",
    "key_command",
    "private_key",
    "passphrase",
    "privatekeypassphrasehandler",
    "interserver_http_credentials",
    "identity",
    "token",
    "access_token",
    "bearer_token",
    "sasl_password",
    "kafka_sasl_password",
    "sasl_oauthbearer_client_secret",
    "ssl_key_password",
    "ssl_keystore_password",
    "ssl_truststore_password",
    "bind_password",
    "hmac_secret",
    "client_secret",
    "static_key",
    "api_key",
    "authorization",
];

/// Words that make any name a credential's, unless it is a switch or a path (see
/// [`is_secret_name`]): `kafka_ssl_key_password`, `nats_credential_file` is a path.
const SECRET_WORDS: &[&str] = &["password", "passwd", "secret", "token", "credential", "passphrase"];

/// Names with these prefixes are switches (`allow_no_password`, `show_named_collections_secrets`).
const SWITCH_PREFIXES: &[&str] =
    &["allow_", "show_", "display_", "format_display_", "enable_", "use_", "require_", "check_", "max_", "min_"];

/// Names with these suffixes hold a path, a type or a limit, not the secret itself.
const NOT_VALUE_SUFFIXES: &[&str] =
    &["_file", "_path", "_dir", "_type", "_mode", "_method", "_processors", "_timeout", "_length", "_size", "_ms"];

/// Whether `text` may name a secret: a name of [`SECRET_NAMES`] or [`SECRET_WORDS`] or a
/// stem a misspelling of one keeps (`pasword`, `secert`, `secret_acces_key`), in any case.
/// The cheap test before text is parsed for tags and keys.
pub(super) fn may_name_secret(text: &str) -> bool {
    static STEMS: LazyLock<AhoCorasick> = LazyLock::new(|| {
        // not "sec" or "auth": most messages say "seconds" or "authentication"
        let stems = ["pass", "pasw", "pwd", "secr", "ecret", "secer", "key", "token", "cred"];
        AhoCorasick::builder()
            .ascii_case_insensitive(true)
            .build(SECRET_NAMES.iter().chain(SECRET_WORDS).chain(&stems))
            .expect("a few short names make an automaton")
    });
    STEMS.is_match(text)
}

/// Whether an element, attribute or key of this name holds a credential: a name of
/// [`SECRET_NAMES`], a misspelling of one (ClickHouse then ignores the element, but its value
/// is still the credential someone meant to write), or a name holding one of
/// [`SECRET_WORDS`] that is not a switch or a path. A path (`a.b.password`,
/// `storage_configuration/disks/s3/secret_access_key`) is judged by its last name,
/// `@attribute` as the attribute.
pub fn is_secret_name(name: &str) -> bool {
    let name = name.rsplit(['.', '/']).next().unwrap_or(name).trim_start_matches('@');
    if SECRET_NAMES.iter().any(|secret| secret.eq_ignore_ascii_case(name)) {
        return true;
    }
    if name.len() > 64 || !name.is_ascii() {
        return false;
    }
    let lower = name.to_ascii_lowercase();
    if SWITCH_PREFIXES.iter().any(|p| lower.starts_with(p)) || NOT_VALUE_SUFFIXES.iter().any(|s| lower.ends_with(s)) {
        return false;
    }
    // every word where it stands, in one pass (a substring search per word cost more than
    // the rest of the judgement); no word overlaps itself, so none is missed
    static WORDS: LazyLock<AhoCorasick> =
        LazyLock::new(|| AhoCorasick::new(SECRET_WORDS).expect("a few short words make an automaton"));
    let mut holds_word = false;
    for word in WORDS.find_overlapping_iter(lower.as_str()) {
        // a name about a credential's absence (`passwordless_users`) holds names, not one
        if lower[word.end()..].starts_with("less") {
            return false;
        }
        holds_word = true;
    }
    if holds_word {
        return true;
    }
    // a report asks about the same names (evidence keys, tags) once per finding
    thread_local! {
        static MISSPELLED: std::cell::RefCell<rustc_hash::FxHashMap<String, bool>> = Default::default();
    }
    MISSPELLED.with(|seen| {
        let mut seen = seen.borrow_mut();
        if let Some(&known) = seen.get(&lower) {
            return known;
        }
        let misspelled = is_misspelled_secret(&lower);
        if seen.len() < 4096 {
            seen.insert(lower, misspelled);
        }
        misspelled
    })
}

/// One edit (two for long names) away from a credential's name of six letters or more. A
/// typo keeps the first or the last letter: the edit distance is computed only then (it was a
/// seventh of an audit that reports 100,000 unknown elements).
fn is_misspelled_secret(lower: &str) -> bool {
    let (first, last) = (lower.as_bytes().first(), lower.as_bytes().last());
    SECRET_NAMES.iter().filter(|secret| secret.len() >= 6).any(|secret| {
        let allowed = if secret.len() >= 12 { 2 } else { 1 };
        let bytes = secret.as_bytes();
        lower.len().abs_diff(secret.len()) <= allowed
            && (first == bytes.first() || last == bytes.last())
            && strsim::osa_distance(lower, secret) <= allowed
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secret_names() {
        for name in [
            "password",
            "password_sha256_hex",
            "password_double_sha1_hex",
            "secret_access_key",
            "access_key_id",
            "key",
            "key_hex",
            "server_side_encryption_customer_key_base64",
            "interserver_http_credentials",
            "access_token",
            "connection_string",
            "profiles.analyst.password",
            "app/password",
            "storage_configuration/disks/s3d/secret_access_key",
            "kafka/sasl_password",
            "sasl_oauthbearer_client_secret",
            "kafka_ssl_key_password",
            "@password",
            // misspelled: ClickHouse ignores the element, the value is still a credential
            "secret_acces_key",
            "pasword",
            "secert",
            "Secret_Acess_Key",
        ] {
            assert!(is_secret_name(name), "{name}");
        }
        for name in [
            "max_threads",
            "networks",
            "keep_alive_timeout",
            "primary_key_cache",
            "user",
            "endpoint",
            "secure",
            "allow_nullable_key",
            "allow_plaintext_password",
            "show_named_collections_secrets",
            "allow_no_password",
            "private_key_file",
            "nats_credential_file",
            "keys",
            "region",
            "passwordless_users",
        ] {
            assert!(!is_secret_name(name), "{name}");
        }
    }

    #[test]
    fn every_secret_name_passes_the_cheap_test() {
        for name in SECRET_NAMES.iter().chain(SECRET_WORDS).chain(&["pasword", "secert", "secret_acces_key"]) {
            assert!(may_name_secret(&format!("<{name}>")), "{name}");
        }
    }
}
