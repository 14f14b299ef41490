//! The windows of `GROUP BY`: tumbling, hopping, sliding, snapshot and session windows.

use pest::iterators::Pair;
use punctual_core::TimeSpan;

use super::{expr, last, next, pos, unit_span, Rule};
use crate::ast::{Pos, WindowSql};
use crate::SqlError;

pub(super) fn window(p: Pair<'_, Rule>) -> Result<WindowSql, SqlError> {
    let rule = p.as_rule();
    if rule == Rule::session {
        return session(p);
    }
    let at = pos(&p);
    let mut inner = p.into_inner();
    if rule == Rule::snapshot {
        return Ok(WindowSql::Snapshot);
    }
    let unit = next(&mut inner)?.as_str().to_owned();
    let mut spans = Vec::new();
    for d in inner {
        let dp = pos(&d);
        let n: i64 = d
            .as_str()
            .parse()
            .map_err(|_| SqlError::syntax(dp, "a whole number that fits in 64 bits"))?;
        let span = unit_span(&unit, n)
            .ok_or_else(|| SqlError::compile(dp, format!("{n} {unit} is too long a time")))?;
        spans.push((span, dp));
    }
    let positive = |(s, p): (TimeSpan, Pos), what: &str| {
        if s.ticks() > 0 {
            Ok(s)
        } else {
            Err(SqlError::compile(
                p,
                format!("the window's {what} must be above zero"),
            ))
        }
    };
    let get = |i: usize| spans.get(i).copied();
    let zero = TimeSpan::from_ticks(0);
    Ok(match rule {
        Rule::tumbling => WindowSql::Tumbling {
            size: positive(
                get(0).ok_or_else(|| SqlError::syntax(at, "expected a size"))?,
                "size",
            )?,
            offset: get(1).map_or(zero, |x| x.0),
        },
        Rule::hopping => WindowSql::Hopping {
            size: positive(
                get(0).ok_or_else(|| SqlError::syntax(at, "expected a size"))?,
                "size",
            )?,
            hop: positive(
                get(1).ok_or_else(|| SqlError::syntax(at, "expected a hop"))?,
                "hop",
            )?,
            offset: get(2).map_or(zero, |x| x.0),
        },
        _ => WindowSql::Sliding {
            size: positive(
                get(0).ok_or_else(|| SqlError::syntax(at, "expected a size"))?,
                "size",
            )?,
        },
    })
}

/// `SessionWindow(unit, timeout, max)` or `SessionWindow(Timeout(unit, n), MaxDuration(unit,
/// n))`, with its `OVER (PARTITION BY keys)` if any.
fn session(p: Pair<'_, Rule>) -> Result<WindowSql, SqlError> {
    let mut unit = String::new();
    let mut spans = Vec::new();
    let mut partition = Vec::new();
    let mut parts: Vec<Pair<'_, Rule>> = Vec::new();
    for x in p.into_inner() {
        match x.as_rule() {
            Rule::session_parts => parts.extend(x.into_inner()),
            Rule::session_over => {
                for e in last(x)?.into_inner().filter(|x| x.as_rule() == Rule::expr) {
                    partition.push(expr(e)?);
                }
            }
            _ => parts.push(x),
        }
    }
    for x in parts {
        let at = pos(&x);
        match x.as_rule() {
            Rule::unit => x.as_str().clone_into(&mut unit),
            Rule::duration => {
                let what = if spans.is_empty() {
                    "timeout"
                } else {
                    "maximum duration"
                };
                let span = x
                    .as_str()
                    .parse::<i64>()
                    .ok()
                    .filter(|n| *n > 0)
                    .and_then(|n| unit_span(&unit, n))
                    .ok_or_else(|| {
                        SqlError::compile(
                            at,
                            format!("the session window's {what} must be a whole number of {unit} above zero that fits in 64 bits"),
                        )
                    })?;
                spans.push((span, at));
            }
            _ => {}
        }
    }
    let [(timeout, _), (max, max_at)] = spans[..] else {
        return Err(SqlError::syntax(
            Pos::default(),
            "the parser found less than its grammar promises",
        ));
    };
    if max < timeout {
        return Err(SqlError::compile(
            max_at,
            format!("the session window's maximum duration ({max}) is shorter than its timeout ({timeout})"),
        ));
    }
    Ok(WindowSql::Session {
        timeout,
        max,
        partition,
    })
}
