//! Problems in rule files, each pointing at the file, line and column.

use std::path::PathBuf;
use std::sync::Arc;

use miette::{Diagnostic, NamedSource, SourceSpan};
use thiserror::Error;

#[derive(Debug, Error, Diagnostic)]
pub enum RuleError {
    #[error("cannot read rules from {path}: {message}")]
    #[diagnostic(code(chaudit::rules::read))]
    Read { path: PathBuf, message: String },

    #[error("{at}: {message}")]
    #[diagnostic(code(chaudit::rules::invalid))]
    Invalid {
        message: String,
        at: String,
        #[source_code]
        src: NamedSource<Arc<String>>,
        #[label("{label}")]
        span: SourceSpan,
        label: String,
        #[help]
        help: Option<String>,
    },
}
