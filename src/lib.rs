//! chaudit: a ClickHouse settings-audit checklist engine.
//!
//! `config` loads and merges server configuration files exactly as ClickHouse does,
//! keeping the file, line and column of every value.

pub mod config;
