//! `MATCH_RECOGNIZE (...)`: its clauses, in any order, each at most once.

use pest::iterators::Pair;

use super::{expr, ident, last, limit_duration, pos, unit_span, Rule};
use crate::ast::{Pattern, Pos, Recognize};
use crate::SqlError;

/// The largest count a quantifier takes (`A{1000}`): a pattern is matched by trying its
/// branches, and a longer one would be a pattern no stream could fill in time.
const MAX_REPEAT: u32 = 1000;

pub(super) fn recognize(p: Pair<'_, Rule>) -> Result<Recognize, SqlError> {
    let at = pos(&p);
    let mut r = Recognize {
        pos: at,
        limit: None,
        partition: Vec::new(),
        measures: Vec::new(),
        skip_past_last: false,
        pattern: Pattern::Seq(Vec::new()),
        define: Vec::new(),
        alias: None,
    };
    let mut seen: Vec<Rule> = Vec::new();
    for part in p.into_inner() {
        let rule = part.as_rule();
        if rule != Rule::kw_match_recognize && seen.contains(&rule) {
            return Err(SqlError::syntax(
                pos(&part),
                format!("{} is given twice in MATCH_RECOGNIZE", clause_name(rule)),
            ));
        }
        seen.push(rule);
        match rule {
            Rule::limit_duration => r.limit = Some(limit_duration(part)?),
            Rule::within => r.limit = Some(within(part)?),
            Rule::partition_by => {
                for e in part.into_inner().filter(|x| x.as_rule() == Rule::expr) {
                    r.partition.push(expr(e)?);
                }
            }
            Rule::measures => {
                for m in part.into_inner().filter(|x| x.as_rule() == Rule::measure) {
                    let mut e = None;
                    let mut name = None;
                    for x in m.into_inner() {
                        match x.as_rule() {
                            Rule::expr => e = Some(expr(x)?),
                            Rule::ident => name = Some(ident(x)),
                            _ => {}
                        }
                    }
                    if let (Some(e), Some(name)) = (e, name) {
                        r.measures.push((e, name));
                    }
                }
            }
            Rule::after_skip => {
                r.skip_past_last = part.into_inner().any(|x| x.as_rule() == Rule::skip_past);
            }
            Rule::pattern => r.pattern = alternatives(last(part)?)?,
            Rule::define => {
                for d in part
                    .into_inner()
                    .filter(|x| x.as_rule() == Rule::definition)
                {
                    let mut name = None;
                    let mut cond = None;
                    for x in d.into_inner() {
                        match x.as_rule() {
                            Rule::ident => name = Some(ident(x)),
                            Rule::expr => cond = Some(expr(x)?),
                            _ => {}
                        }
                    }
                    if let (Some(name), Some(cond)) = (name, cond) {
                        r.define.push((name, cond));
                    }
                }
            }
            Rule::source_alias => r.alias = Some(ident(last(part)?)),
            _ => {}
        }
    }
    if !seen.contains(&Rule::pattern) {
        return Err(SqlError::syntax(
            at,
            "MATCH_RECOGNIZE needs a PATTERN (...)",
        ));
    }
    if !seen.contains(&Rule::measures) {
        return Err(SqlError::syntax(
            at,
            "MATCH_RECOGNIZE needs MEASURES: a match's row (MEASURES FIRST(A.time) AS started)",
        ));
    }
    Ok(r)
}

/// How a clause is named in a refusal.
fn clause_name(rule: Rule) -> &'static str {
    match rule {
        Rule::limit_duration | Rule::within => "LIMIT DURATION (or WITHIN)",
        Rule::partition_by => "PARTITION BY",
        Rule::order_by_time => "ORDER BY",
        Rule::measures => "MEASURES",
        Rule::one_row => "ONE ROW PER MATCH",
        Rule::after_skip => "AFTER MATCH SKIP",
        Rule::pattern => "PATTERN",
        Rule::define => "DEFINE",
        _ => "an alias",
    }
}

/// Flink's `WITHIN INTERVAL 'n' UNIT`.
fn within(p: Pair<'_, Rule>) -> Result<punctual_core::TimeSpan, SqlError> {
    let at = pos(&p);
    let mut n = None;
    let mut unit = None;
    for x in p.into_inner() {
        match x.as_rule() {
            Rule::string => n = x.as_str().trim_matches('\'').trim().parse::<i64>().ok(),
            Rule::unit => unit = Some(x.as_str().to_owned()),
            _ => {}
        }
    }
    match (n, unit) {
        (Some(n), Some(u)) if n > 0 => unit_span(&u, n),
        _ => None,
    }
    .ok_or_else(|| {
        SqlError::syntax(
            at,
            "WITHIN INTERVAL takes a positive length and a unit ('10' SECOND)",
        )
    })
}

fn alternatives(p: Pair<'_, Rule>) -> Result<Pattern, SqlError> {
    let mut alts = p
        .into_inner()
        .map(sequence)
        .collect::<Result<Vec<_>, _>>()?;
    Ok(if alts.len() == 1 {
        alts.remove(0)
    } else {
        Pattern::Alt(alts)
    })
}

fn sequence(p: Pair<'_, Rule>) -> Result<Pattern, SqlError> {
    let mut atoms = p.into_inner().map(atom).collect::<Result<Vec<_>, _>>()?;
    Ok(if atoms.len() == 1 {
        atoms.remove(0)
    } else {
        Pattern::Seq(atoms)
    })
}

fn atom(p: Pair<'_, Rule>) -> Result<Pattern, SqlError> {
    let mut inner = p.into_inner();
    let mut pattern = match inner.next() {
        Some(x) if x.as_rule() == Rule::ident => Pattern::Var(ident(x)),
        Some(x) if x.as_rule() == Rule::pattern_any => Pattern::Any(pos(&x)),
        Some(x) => alternatives(x)?,
        None => return Err(SqlError::syntax(Pos::default(), "an empty pattern")),
    };
    if let Some(q) = inner.next() {
        let (min, max) = quantifier(q)?;
        pattern = Pattern::Repeat {
            inner: Box::new(pattern),
            min,
            max,
        };
    }
    Ok(pattern)
}

/// A quantifier's least and most counts.
fn quantifier(q: Pair<'_, Rule>) -> Result<(u32, Option<u32>), SqlError> {
    let at = pos(&q);
    let mut parts = q.into_inner();
    let Some(kind) = parts.next() else {
        return Err(SqlError::syntax(at, "expected a quantifier"));
    };
    if parts.next().is_some() {
        return Err(SqlError::compile(
            at,
            "reluctant quantifiers (`*?`, `+?`) are not supported: a quantifier takes as many events as it can",
        ));
    }
    let count = |x: Pair<'_, Rule>| -> Result<u32, SqlError> {
        x.as_str()
            .parse::<u32>()
            .ok()
            .filter(|n| *n <= MAX_REPEAT)
            .ok_or_else(|| {
                SqlError::compile(pos(&x), format!("a quantifier counts at most {MAX_REPEAT}"))
            })
    };
    Ok(match kind.as_rule() {
        Rule::star => (0, None),
        Rule::plus => (1, None),
        Rule::question => (0, Some(1)),
        _ => {
            let mut min = 0;
            let mut max = None;
            let mut comma = false;
            for x in kind.into_inner() {
                match x.as_rule() {
                    Rule::repeat_min => min = count(x)?,
                    Rule::repeat_comma => comma = true,
                    Rule::repeat_max => max = Some(count(x)?),
                    _ => {}
                }
            }
            if !comma {
                max = Some(min);
            }
            match max {
                Some(0) => return Err(SqlError::compile(at, "a quantifier of at most 0 events")),
                Some(m) if m < min => {
                    return Err(SqlError::compile(
                        at,
                        format!("{{{min},{m}}}: the most is less than the least"),
                    ))
                }
                _ => (min, max),
            }
        }
    })
}
