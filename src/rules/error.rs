//! Problems in rule files, each pointing at the file, line and column.

use std::path::PathBuf;

use miette::Diagnostic;
use thiserror::Error;

use crate::config::error::FileProblem;

#[derive(Debug, Error, Diagnostic)]
pub enum RuleError {
    #[error("cannot read rules from {path}: {message}")]
    #[diagnostic(code(chaudit::rules::read))]
    Read { path: PathBuf, message: String },

    #[error(transparent)]
    #[diagnostic(transparent)]
    Invalid(FileProblem),
}
