//! chaudit: a ClickHouse settings-audit checklist engine.
//!
//! `config` loads and merges server configuration files exactly as ClickHouse does,
//! keeping the file, line and column of every value.

// Config errors carry the file text for their snippet; they are rare and on cold paths.
#![allow(clippy::result_large_err)]

pub mod audit;
pub mod baseline;
pub mod cluster;
pub mod collect;
pub mod config;
pub mod diff;
pub mod eval;
pub mod facts;
pub mod fix;
pub mod limits;
pub mod mask;
pub mod parallel;
pub mod redact;
pub mod regular_file;
pub mod report;
pub mod rules;
pub mod ruletest;
pub mod source;
pub mod spanned_yaml;
pub mod sql;
pub mod suggest;
pub mod suppress;
pub mod upgrade;
pub mod verdict;
pub mod version;
