//! The auditing user's own limits that could end an answer early as if it were whole: with
//! overflow mode `break` the server stops at the limit without an error. A user that may
//! change settings gets the mode sent as `throw`; a readonly=1 user cannot, so an answer that
//! may have reached a limit is not taken as whole.

use std::time::Duration;

use super::CollectError;

/// The user's limits whose overflow mode `break` ends an answer early as if it were whole
/// (no error): a user that may change settings gets them sent as `throw`; a readonly=1 user
/// cannot, so an answer that may have reached one is not taken as whole.
#[derive(Debug, Default, serde::Deserialize)]
pub(crate) struct Guard {
    #[serde(deserialize_with = "crate::facts::typed::uint")]
    max_result_rows: u64,
    #[serde(deserialize_with = "crate::facts::typed::uint")]
    max_result_bytes: u64,
    result_overflow_mode: String,
    #[serde(deserialize_with = "crate::facts::typed::uint")]
    max_rows_to_read: u64,
    #[serde(deserialize_with = "crate::facts::typed::uint")]
    max_bytes_to_read: u64,
    read_overflow_mode: String,
    max_execution_time: f64,
    timeout_overflow_mode: String,
}

impl Guard {
    fn result_breaks(&self) -> bool {
        self.result_overflow_mode == "break" && (self.max_result_rows > 0 || self.max_result_bytes > 0)
    }

    fn read_breaks(&self) -> bool {
        self.read_overflow_mode == "break" && (self.max_rows_to_read > 0 || self.max_bytes_to_read > 0)
    }

    fn timeout_breaks(&self) -> bool {
        self.timeout_overflow_mode == "break" && self.max_execution_time > 0.0
    }

    /// The settings that turn each `break` into `throw` (for a user that may send settings).
    pub(crate) fn throw_settings(&self) -> impl Iterator<Item = (&'static str, &'static str)> {
        [
            (self.result_breaks(), "result_overflow_mode"),
            (self.read_breaks(), "read_overflow_mode"),
            (self.timeout_breaks(), "timeout_overflow_mode"),
        ]
        .into_iter()
        .filter_map(|(breaks, name)| breaks.then_some((name, "throw")))
    }

    /// A refusal over one of the user's limits, with the settings that made it (the server
    /// says "max rows: 50.00", not which setting).
    pub(crate) fn named(&self, e: CollectError) -> CollectError {
        match e {
            CollectError::Query { purpose, message, code: code @ Some(158 | 307 | 396) } => {
                let message = format!(
                    "{message} (the user's max_result_rows = {}, max_result_bytes = {}, max_rows_to_read = {}, \
                     max_bytes_to_read = {}; chaudit sends their overflow modes as 'throw' so that no answer is cut short)",
                    self.max_result_rows, self.max_result_bytes, self.max_rows_to_read, self.max_bytes_to_read
                );
                CollectError::Query { purpose, message, code }
            }
            other => other,
        }
    }

    /// Why an answer of `rows` rows that took `took` may have been cut by a limit with
    /// `break`, for a readonly=1 user (who cannot send `throw`); `None` when it cannot have been.
    pub(crate) fn cut(&self, rows: u64, took: Duration) -> Option<String> {
        let cannot = "readonly = 1: chaudit cannot send the `throw` mode, so the answer may be cut short";
        if self.result_overflow_mode == "break" && self.max_result_rows > 0 && rows > self.max_result_rows {
            let max = self.max_result_rows;
            return Some(format!(
                "{rows} rows came, past the user's max_result_rows = {max} with result_overflow_mode = 'break' ({cannot})"
            ));
        }
        // bytes as the server counts them (allocated in memory) are not the answer's: any
        // answer with rows may have reached the limit
        if self.result_overflow_mode == "break" && self.max_result_bytes > 0 && rows > 0 {
            let max = self.max_result_bytes;
            return Some(format!("the user's max_result_bytes = {max} with result_overflow_mode = 'break' ({cannot})"));
        }
        if self.read_breaks() {
            let (rows, bytes) = (self.max_rows_to_read, self.max_bytes_to_read);
            return Some(format!(
                "the user's max_rows_to_read = {rows}, max_bytes_to_read = {bytes} with read_overflow_mode = 'break' \
                 ({cannot})"
            ));
        }
        if self.timeout_breaks() && took.as_secs_f64() >= self.max_execution_time {
            let max = self.max_execution_time;
            return Some(format!(
                "the answer took {:.1} s, the user's max_execution_time = {max} with timeout_overflow_mode = 'break' \
                 ({cannot})",
                took.as_secs_f64()
            ));
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn guard(json: serde_json::Value) -> Guard {
        let mut all = serde_json::json!({
            "max_result_rows": "0", "max_result_bytes": "0", "result_overflow_mode": "throw",
            "max_rows_to_read": "0", "max_bytes_to_read": "0", "read_overflow_mode": "throw",
            "max_execution_time": 0.0, "timeout_overflow_mode": "throw",
        });
        all.as_object_mut().unwrap().extend(json.as_object().unwrap().clone());
        serde_json::from_value(all).unwrap()
    }

    #[test]
    fn only_a_limit_that_breaks_can_cut_an_answer() {
        let second = Duration::from_secs(1);
        assert!(guard(serde_json::json!({})).cut(u64::MAX, second).is_none());
        let bi = guard(serde_json::json!({"max_result_rows": "50", "result_overflow_mode": "break"}));
        assert_eq!(bi.throw_settings().collect::<Vec<_>>(), [("result_overflow_mode", "throw")]);
        assert!(bi.cut(50, second).is_none(), "50 rows did not pass max_result_rows = 50");
        let why = bi.cut(51, second).unwrap();
        assert!(
            why.starts_with("51 rows came, past the user's max_result_rows = 50 with result_overflow_mode = 'break'")
        );
        // thrown, not cut: the server's error says so
        let throws = guard(serde_json::json!({"max_result_rows": "50"}));
        assert!(throws.cut(1_000, second).is_none() && throws.throw_settings().next().is_none());
        let bytes = guard(serde_json::json!({"max_result_bytes": "1000000", "result_overflow_mode": "break"}));
        assert!(bytes.cut(0, second).is_none() && bytes.cut(1, second).unwrap().contains("max_result_bytes = 1000000"));
        let read = guard(serde_json::json!({"max_rows_to_read": "10", "read_overflow_mode": "break"}));
        assert!(read.cut(0, second).unwrap().contains("read_overflow_mode = 'break'"));
        let slow = guard(serde_json::json!({"max_execution_time": 2.0, "timeout_overflow_mode": "break"}));
        assert!(slow.cut(5, second).is_none() && slow.cut(5, 2 * second).unwrap().contains("max_execution_time = 2"));
    }
}
