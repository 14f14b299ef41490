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
    let first = next(&mut inner)?;
    let mut lateness = None;
    let spans = if first.as_rule() == Rule::window_parts {
        named_parts(first, rule == Rule::hopping, &mut lateness)?
    } else {
        let unit = first.as_str().to_owned();
        let mut spans = Vec::new();
        for d in inner {
            if d.as_rule() == Rule::lateness_part {
                lateness = Some(lateness_of(d)?);
            } else {
                spans.push(length(&unit, &d)?);
            }
        }
        spans
    };
    let lateness = lateness.map_or(TimeSpan::from_ticks(0), |(s, _)| s);
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
            lateness,
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
            lateness,
        },
        _ => WindowSql::Sliding {
            size: positive(
                get(0).ok_or_else(|| SqlError::syntax(at, "expected a size"))?,
                "size",
            )?,
        },
    })
}

/// `n` units (`d` a `duration` pair), with where it is written.
fn length(unit: &str, d: &Pair<'_, Rule>) -> Result<(TimeSpan, Pos), SqlError> {
    let dp = pos(d);
    let n: i64 = d
        .as_str()
        .parse()
        .map_err(|_| SqlError::syntax(dp, "a whole number that fits in 64 bits"))?;
    let span = unit_span(unit, n)
        .ok_or_else(|| SqlError::compile(dp, format!("{n} {unit} is too long a time")))?;
    Ok((span, dp))
}

/// `AllowedLateness(unit, n)`: above zero.
fn lateness_of(p: Pair<'_, Rule>) -> Result<(TimeSpan, Pos), SqlError> {
    let at = pos(&p);
    let mut inner = p.into_inner();
    let unit = next(&mut inner)?.as_str().to_owned();
    let span = length(&unit, &next(&mut inner)?)?;
    if span.0.ticks() <= 0 {
        return Err(SqlError::compile(
            at,
            "AllowedLateness must be above zero (leave it out for none)",
        ));
    }
    Ok(span)
}

/// `Duration(unit, n), [Hop(unit, n),] [Offset(unit, n)]` in the order the positional form
/// takes them: the size, the hop (a hopping window), the offset (if given); an
/// `AllowedLateness(unit, n)` among them goes to `lateness`.
fn named_parts(
    p: Pair<'_, Rule>,
    hopping: bool,
    lateness: &mut Option<(TimeSpan, Pos)>,
) -> Result<Vec<(TimeSpan, Pos)>, SqlError> {
    let at = pos(&p);
    let (mut size, mut hop, mut offset) = (None, None, None);
    for part in p.into_inner() {
        let part_at = pos(&part);
        if part.as_rule() == Rule::lateness_part {
            if lateness.replace(lateness_of(part)?).is_some() {
                return Err(SqlError::compile(part_at, "allowedlateness is given twice"));
            }
            continue;
        }
        let mut inner = part.into_inner();
        let name = next(&mut inner)?.as_str().to_ascii_lowercase();
        let unit = next(&mut inner)?.as_str().to_owned();
        let span = length(&unit, &next(&mut inner)?)?;
        let slot =
            match name.as_str() {
                "duration" => &mut size,
                "hop" if hopping => &mut hop,
                "hop" => return Err(SqlError::compile(
                    part_at,
                    "Hop(...) is a hopping window's: a tumbling window takes Duration and Offset",
                )),
                _ => &mut offset,
            };
        if slot.replace(span).is_some() {
            return Err(SqlError::compile(part_at, format!("{name} is given twice")));
        }
    }
    let missing = |what: &str| SqlError::syntax(at, format!("expected {what}(unit, n)"));
    let mut spans = vec![size.ok_or_else(|| missing("Duration"))?];
    if hopping {
        spans.push(hop.ok_or_else(|| missing("Hop"))?);
    }
    spans.extend(offset);
    Ok(spans)
}

/// `SessionWindow(unit, timeout, max)` or `SessionWindow(Timeout(unit, n), MaxDuration(unit,
/// n))`, with its `OVER (PARTITION BY keys)` if any.
fn session(p: Pair<'_, Rule>) -> Result<WindowSql, SqlError> {
    let mut unit = String::new();
    let mut spans = Vec::new();
    let mut partition = Vec::new();
    let mut parts: Vec<Pair<'_, Rule>> = Vec::new();
    let mut lateness = TimeSpan::from_ticks(0);
    for x in p.into_inner() {
        match x.as_rule() {
            Rule::session_parts => parts.extend(x.into_inner()),
            Rule::lateness_part => lateness = lateness_of(x)?.0,
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
        lateness,
    })
}
