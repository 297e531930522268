//! `chaudit upgrade --format json`: the review as one JSON document (README "Upgrade review").

use crate::upgrade::Review;

pub fn render(review: &Review) -> String {
    serde_json::to_string_pretty(review).unwrap_or_else(|e| format!("{{\"error\": \"{e}\"}}")) + "\n"
}
