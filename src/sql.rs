//! Reading the text of a logged query with a real SQL parser (sqlparser's ClickHouse
//! dialect): literals, comments and string contents never pass for clauses.

use std::ops::ControlFlow;

use sqlparser::ast::{Expr, GroupByExpr, LimitClause, SetExpr, Statement, Value, visit_expressions};
use sqlparser::dialect::ClickHouseDialect;
use sqlparser::keywords::Keyword;
use sqlparser::parser::Parser;
use sqlparser::tokenizer::{Location, Token, Tokenizer};

/// A Top-N query: one `SELECT ... ORDER BY ... LIMIT n` without GROUP BY or DISTINCT (an
/// aggregation never gets lazy materialization), not wrapped in EXPLAIN.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TopN {
    pub limit: u64,
    /// Where the LIMIT literal sits in the text (bytes).
    limit_at: std::ops::Range<usize>,
}

/// The Top-N reading of `query`, if it is one (a text the parser cannot read is not).
pub fn top_n(query: &str) -> Option<TopN> {
    let mut statements = Parser::parse_sql(&ClickHouseDialect {}, statement_text(query)?).ok()?;
    let Some(Statement::Query(query_ast)) = statements.pop().filter(|_| statements.is_empty()) else { return None };
    let SetExpr::Select(select) = query_ast.body.as_ref() else { return None };
    let grouped = match &select.group_by {
        GroupByExpr::All(_) => true,
        GroupByExpr::Expressions(keys, _) => !keys.is_empty(),
    };
    if grouped || select.distinct.is_some() || query_ast.order_by.is_none() {
        return None;
    }
    let limit = match query_ast.limit_clause.as_ref()? {
        LimitClause::LimitOffset { limit: Some(limit), limit_by, .. } if limit_by.is_empty() => limit,
        LimitClause::OffsetCommaLimit { limit, .. } => limit,
        LimitClause::LimitOffset { .. } => return None,
    };
    let Expr::Value(literal) = limit else { return None };
    let Value::Number(digits, _) = &literal.value else { return None };
    let start = byte_offset(query, literal.span.start)?;
    let end = byte_offset(query, literal.span.end)?;
    Some(TopN { limit: digits.parse().ok()?, limit_at: start..end })
}

/// `query` with its LIMIT set to `limit`, the rest of the text as it was.
pub fn with_limit(query: &str, top_n: &TopN, limit: u64) -> String {
    let mut text = query.to_string();
    text.replace_range(top_n.limit_at.clone(), &limit.to_string());
    text
}

/// `query` as EXPLAIN can read it in a subquery: one SELECT without its FORMAT clause and
/// final `;`; `None` for anything else, and for a query with a SETTINGS clause unless
/// `settings_allowed` (a readonly=1 auditor may send none).
pub fn explainable(query: &str, settings_allowed: bool) -> Option<String> {
    let text = statement_text(query)?;
    match Parser::parse_sql(&ClickHouseDialect {}, text).ok()?.as_slice() {
        [Statement::Query(parsed)] if settings_allowed || parsed.settings.is_none() => Some(text.to_string()),
        _ => None,
    }
}

/// The text of `query` up to a trailing `FORMAT name` and `;` (read token by token: the
/// parser takes a FORMAT after a FROM-less SELECT for an alias).
fn statement_text(query: &str) -> Option<&str> {
    let tokens = Tokenizer::new(&ClickHouseDialect {}, query).tokenize_with_location().ok()?;
    let mut significant: Vec<_> = tokens.iter().filter(|t| !matches!(t.token, Token::Whitespace(_))).collect();
    while significant.last().is_some_and(|t| t.token == Token::SemiColon) {
        significant.pop();
    }
    if let [.., keyword, name] = significant.as_slice()
        && matches!(&keyword.token, Token::Word(w) if w.keyword == Keyword::FORMAT)
        && matches!(name.token, Token::Word(_))
    {
        significant.truncate(significant.len() - 2);
    }
    let end = significant.last()?.span.end;
    Some(&query[..byte_offset(query, end)?])
}

/// The columns a SELECT filters on (its WHERE and PREWHERE), by their last name part.
pub fn filter_columns(query: &str) -> Vec<String> {
    let Some(select) = single_select(query) else { return Vec::new() };
    let mut columns = Vec::new();
    for filter in [&select.selection, &select.prewhere].into_iter().flatten() {
        let _ = visit_expressions(filter, |e| {
            match e {
                Expr::Identifier(name) => columns.push(name.value.clone()),
                Expr::CompoundIdentifier(parts) => columns.extend(parts.last().map(|p| p.value.clone())),
                _ => {}
            }
            ControlFlow::<()>::Continue(())
        });
    }
    columns
}

/// The leading ORDER BY column of a projection's query (`SELECT _part_offset ORDER BY user`):
/// the column its index serves.
pub fn projection_key(projection_query: &str) -> Option<String> {
    let statements = Parser::parse_sql(&ClickHouseDialect {}, projection_query).ok()?;
    let [Statement::Query(query)] = statements.as_slice() else { return None };
    let sqlparser::ast::OrderByKind::Expressions(keys) = &query.order_by.as_ref()?.kind else { return None };
    leading_column(&keys.first()?.expr)
}

/// The column an ORDER BY key starts with (`user`, `t.user`, `(user, id)`).
fn leading_column(key: &Expr) -> Option<String> {
    match key {
        Expr::Identifier(name) => Some(name.value.clone()),
        Expr::CompoundIdentifier(parts) => parts.last().map(|p| p.value.clone()),
        Expr::Tuple(items) => leading_column(items.first()?),
        Expr::Nested(inner) => leading_column(inner),
        _ => None,
    }
}

fn single_select(query: &str) -> Option<Box<sqlparser::ast::Select>> {
    let mut statements = Parser::parse_sql(&ClickHouseDialect {}, statement_text(query)?).ok()?;
    let Some(Statement::Query(parsed)) = statements.pop().filter(|_| statements.is_empty()) else { return None };
    match *parsed.body {
        SetExpr::Select(select) => Some(select),
        _ => None,
    }
}

/// The byte offset of a parser location (1-based line and column, in characters).
fn byte_offset(text: &str, at: Location) -> Option<usize> {
    let line_start =
        if at.line <= 1 { 0 } else { text.match_indices('\n').nth(usize::try_from(at.line).ok()? - 2)?.0 + 1 };
    let column = usize::try_from(at.column).ok()?.checked_sub(1)?;
    let line = &text[line_start..];
    Some(line_start + line.char_indices().nth(column).map_or(line.len(), |(i, _)| i))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limit(query: &str) -> Option<u64> {
        top_n(query).map(|t| t.limit)
    }

    #[test]
    fn reads_the_limit_of_a_top_n_select_only() {
        assert_eq!(limit("SELECT * FROM t ORDER BY x DESC LIMIT 20000"), Some(20000));
        assert_eq!(limit("select * from t order by x limit 10, 50"), Some(50));
        assert_eq!(limit("SELECT * FROM t ORDER BY x LIMIT 50 OFFSET 10 FORMAT Null"), Some(50));
        assert_eq!(limit("SELECT * FROM t LIMIT 5"), None);
        // an aggregation, EXPLAIN, and LIMIT inside a string are not Top-N reads
        assert_eq!(limit("SELECT a, count() FROM t GROUP BY a ORDER BY a LIMIT 20000"), None);
        assert_eq!(limit("EXPLAIN SELECT * FROM t ORDER BY x LIMIT 20000"), None);
        assert_eq!(limit("SELECT * FROM t WHERE s = 'ORDER BY x LIMIT 20000' ORDER BY x LIMIT 10"), Some(10));
        assert_eq!(limit("SELECT * FROM t WHERE s = 'ORDER BY x LIMIT 20000'"), None);
        assert_eq!(limit("SELECT DISTINCT a FROM t ORDER BY a LIMIT 20000"), None);
        assert_eq!(limit("not sql at all"), None);
    }

    #[test]
    fn explainable_text_drops_format_and_refuses_settings() {
        assert_eq!(explainable("SELECT 1 FORMAT Null;", false).as_deref(), Some("SELECT 1"));
        assert_eq!(
            explainable("select 'FORMAT' AS f\nFROM t  format JSON", false).as_deref(),
            Some("select 'FORMAT' AS f\nFROM t")
        );
        assert_eq!(
            explainable("SELECT * FROM t ORDER BY x LIMIT 10 ;", false).as_deref(),
            Some("SELECT * FROM t ORDER BY x LIMIT 10")
        );
        assert_eq!(explainable("SELECT x FROM t SETTINGS max_threads = 1", false), None);
        assert!(explainable("SELECT x FROM t SETTINGS max_threads = 1", true).is_some());
        assert_eq!(explainable("INSERT INTO t VALUES (1)", true), None);
    }

    #[test]
    fn filters_and_projection_keys_are_read_from_the_syntax() {
        let query = "SELECT sum(x) FROM t PREWHERE t.brand = 'b' WHERE year = 1997 AND f(region) = 'user = 1'";
        assert_eq!(filter_columns(query), ["year", "region", "brand"]);
        assert_eq!(projection_key("SELECT _part_offset ORDER BY P_BRAND"), Some("P_BRAND".into()));
        assert_eq!(projection_key("SELECT * ORDER BY (user, id)"), Some("user".into()));
        assert_eq!(projection_key("SELECT user, count() GROUP BY user"), None);
    }

    #[test]
    fn rewrites_only_the_limit_literal() {
        let query = "SELECT 'é LIMIT 7' AS s\nFROM t ORDER BY s LIMIT 20000 -- LIMIT 3";
        let top = top_n(query).unwrap();
        assert_eq!(with_limit(query, &top, 10000), "SELECT 'é LIMIT 7' AS s\nFROM t ORDER BY s LIMIT 10000 -- LIMIT 3");
    }
}
