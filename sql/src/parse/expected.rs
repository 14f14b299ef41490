//! A syntax error as the user reads it: where, and what was expected there, in words (every
//! way to start an operand is "an expression").

use super::Rule;
use crate::ast::Pos;
use crate::SqlError;

/// The error pest gave, in the language's words; where the word there is a misspelling of a
/// keyword that could stand there, the keyword it is near (`PARTITON`: `PARTITION BY`).
pub(super) fn syntax(e: pest::error::Error<Rule>, text: &str) -> SqlError {
    let (line, col) = match e.line_col {
        pest::error::LineColLocation::Pos(p) | pest::error::LineColLocation::Span(p, _) => p,
    };
    let message = match &e.variant {
        pest::error::ErrorVariant::ParsingError { positives, .. } => {
            // Where an operand may start, every way to start one is "an expression".
            let operand = positives.iter().any(|r| {
                matches!(
                    r,
                    Rule::number
                        | Rule::string
                        | Rule::dq_string
                        | Rule::null
                        | Rule::kw_case
                        | Rule::case_expr
                        | Rule::cast
                )
            });
            let mut names: Vec<&str> = positives
                .iter()
                .filter_map(|r| match r {
                    Rule::ident
                    | Rule::call_name
                    | Rule::column
                    | Rule::call
                    | Rule::number
                    | Rule::string
                    | Rule::dq_string
                    | Rule::null
                    | Rule::true_lit
                    | Rule::false_lit
                    | Rule::kw_case
                    | Rule::case_expr
                    | Rule::cast
                    | Rule::kw_cast
                    | Rule::datediff
                    | Rule::timestamp_fn
                    | Rule::not
                    | Rule::neg
                        if operand =>
                    {
                        Some("an expression")
                    }
                    r => rule_name(*r),
                })
                .collect();
            names.sort_unstable();
            names.dedup();
            let hint = misspelled(text, (line, col), &names);
            let expected = match names.len() {
                0 => "unexpected text".to_owned(),
                1 => format!("expected {}", names[0]),
                _ => {
                    let last = names.pop().unwrap_or_default();
                    format!("expected {} or {last}", names.join(", "))
                }
            };
            expected + &hint
        }
        pest::error::ErrorVariant::CustomError { message } => message.clone(),
    };
    SqlError::syntax(Pos { line, col }, message)
}

/// ` (did you mean X?)` when the word at `(line, col)` of `text` is a keyword of `names`
/// misspelled (one or two letters off); empty otherwise.
fn misspelled(text: &str, (line, col): (usize, usize), names: &[&str]) -> String {
    let Some(rest) = text.lines().nth(line.saturating_sub(1)).and_then(|l| {
        l.chars()
            .skip(col.saturating_sub(1))
            .collect::<String>()
            .into()
    }) else {
        return String::new();
    };
    let word: String = rest
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
        .collect();
    // The keywords among the names (`PARTITION BY`'s is `PARTITION`), not descriptions.
    let keywords = names.iter().filter_map(|n| {
        let first = n.split_whitespace().next()?;
        first
            .chars()
            .all(|c| c.is_ascii_uppercase() || c == '_')
            .then_some((first, *n))
    });
    let keywords: Vec<(&str, &str)> = keywords.collect();
    if word.is_empty() || keywords.iter().any(|(k, _)| k.eq_ignore_ascii_case(&word)) {
        return String::new();
    }
    crate::scope::nearest(&word, keywords.iter().map(|(k, _)| *k))
        .and_then(|k| keywords.iter().find(|(kw, _)| *kw == k))
        .map_or(String::new(), |(_, name)| {
            format!(" (`{word}`: did you mean {name}?)")
        })
}

/// How a rule is named in "expected ..." (rules that are parts of others are left out).
fn rule_name(r: Rule) -> Option<&'static str> {
    Some(match r {
        Rule::EOI => "the end of the query",
        Rule::expr | Rule::primary | Rule::bound => "an expression",
        Rule::ident | Rule::call_name | Rule::column => "a name",
        Rule::select_item | Rule::select_list => "a select item",
        Rule::kw_select => "SELECT",
        Rule::kw_from | Rule::from => "FROM",
        Rule::kw_where => "WHERE",
        Rule::kw_group => "GROUP BY",
        Rule::kw_by => "BY",
        Rule::kw_having => "HAVING",
        Rule::kw_into | Rule::into => "INTO",
        Rule::kw_as | Rule::alias | Rule::source_alias => "AS",
        Rule::kw_join | Rule::join => "JOIN",
        Rule::kw_on => "ON",
        Rule::kw_and | Rule::and => "AND",
        Rule::kw_or | Rule::or => "OR",
        Rule::kw_union | Rule::union_op => "UNION",
        Rule::kw_timestamp | Rule::timestamp_by => "TIMESTAMP BY",
        Rule::kw_over | Rule::over_key | Rule::over_order => "OVER",
        Rule::kw_then => "THEN",
        Rule::kw_when | Rule::when => "WHEN",
        Rule::kw_else | Rule::else_clause => "ELSE",
        Rule::kw_end => "END",
        Rule::kw_is | Rule::is_null => "IS",
        Rule::kw_between | Rule::between => "BETWEEN",
        Rule::kw_in | Rule::in_list => "IN",
        Rule::kw_like | Rule::like => "LIKE",
        Rule::kw_order => "ORDER BY",
        Rule::comma => "`,`",
        Rule::kw_limit | Rule::limit_duration => "LIMIT DURATION",
        Rule::kw_within | Rule::within => "WITHIN",
        Rule::kw_partition | Rule::partition_by => "PARTITION BY",
        Rule::kw_measures | Rule::measures => "MEASURES",
        Rule::kw_one | Rule::one_row => "ONE ROW PER MATCH",
        Rule::kw_after | Rule::after_skip => "AFTER MATCH SKIP",
        Rule::kw_pattern | Rule::pattern => "PATTERN",
        Rule::kw_define | Rule::define => "DEFINE",
        Rule::kw_match_recognize | Rule::recognize => "MATCH_RECOGNIZE",
        Rule::unit => "a time unit (day, hour, minute, second, millisecond, microsecond, tick)",
        Rule::duration => "a whole number",
        Rule::type_name => "a type (bigint, float, nvarchar(max), bit, datetime, record)",
        Rule::window | Rule::group_item => "a window or a key",
        Rule::eq | Rule::ne | Rule::lt | Rule::le | Rule::gt | Rule::ge => "a comparison",
        Rule::add | Rule::sub | Rule::mul | Rule::div | Rule::rem => "an operator",
        _ => return None,
    })
}
