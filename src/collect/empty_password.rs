//! Whether users of the config files have an empty password: system.users shows an empty
//! `<password>` as `plaintext_password`, as it shows any other, so only a login tells them
//! apart. chaudit tries one (`SELECT 1` with an empty password) for each user with a
//! plaintext password that accepts connections from any address: what anyone who reaches
//! the port can try. A refused attempt is a `LoginFailure` in system.session_log.

use serde_json::{Value, json};

use super::client::Session;
use super::combined::{Answer, Rows};
use crate::facts::keys;

/// What `--dry-run` says of the attempt, and the query sent.
pub(crate) const PURPOSE: &str = "as each user with a plaintext password that accepts any address (at most 64), \
     with an empty password: does the server let it in (an empty <password> of the config files)";
pub(crate) const SQL: &str = "SELECT 1";

/// Users tried at most (a server with more open plaintext users is not tried past them).
const MAX_TRIED: usize = 64;

/// Adds `empty_password` (true, false, or null when the answer said neither) to the rows of
/// the `users` answer that qualify.
pub(crate) async fn mark(session: &Session, answers: &mut [Answer<'_>]) {
    let Some((_, Ok(rows))) = answers.iter_mut().find(|(name, _)| *name == keys::live::USERS.name()) else { return };
    let Ok(mut values) = rows.clone().into_values() else { return };
    let mut tried = 0;
    for row in &mut values {
        let Some(name) = row["name"].as_str().map(str::to_string) else { continue };
        let plaintext = row["auth_type"].as_str().is_some_and(|a| a.contains("plaintext_password"));
        if !plaintext || !open_to_any_address(row) || name == session.user || tried == MAX_TRIED {
            continue;
        }
        tried += 1;
        row["empty_password"] = json!(session.accepts_empty_password(&name).await);
    }
    *rows = Rows::Parsed(values);
}

fn open_to_any_address(row: &Value) -> bool {
    let listed = |key: &str, any: &[&str]| {
        row[key].as_array().is_some_and(|items| items.iter().any(|i| i.as_str().is_some_and(|s| any.contains(&s))))
    };
    listed("host_ip", &["::/0", "0.0.0.0/0"]) || listed("host_names_regexp", &[".*", "^.*$"])
}
