//! From text to [`Script`]: the pest grammar (`grammar.pest`) and a Pratt parser for operator
//! precedence.

use std::sync::OnceLock;

use pest::iterators::{Pair, Pairs};
use pest::pratt_parser::{Assoc, Op, PrattParser};
use pest::Parser as _;
use punctual_core::TimeSpan;

use crate::ast::*;
use crate::SqlError;

#[derive(pest_derive::Parser)]
#[grammar = "grammar.pest"]
struct Grammar;

mod expected;
mod recognize;
mod window;
use expected::syntax;
use window::window;

/// Parses a script; a syntax error says where and what was expected.
pub fn parse(text: &str) -> Result<Script, SqlError> {
    crate::limits::check_nesting(text)?;
    let mut pairs = Grammar::parse(Rule::script, text).map_err(|e| {
        // A Stream Analytics construct the grammar does not take is named as such.
        let e = syntax(e, text);
        crate::unsupported::refuse_construct(text, e.pos()).unwrap_or(e)
    })?;
    let script = pairs
        .next()
        .ok_or_else(|| SqlError::syntax(Pos::default(), "empty"))?;
    let mut steps = Vec::new();
    let mut statements = Vec::new();
    for p in script.into_inner() {
        match p.as_rule() {
            Rule::with_clause => {
                for step in p.into_inner().filter(|s| s.as_rule() == Rule::step) {
                    let mut inner = step.into_inner();
                    let name = ident(next(&mut inner)?);
                    let _as = next(&mut inner)?;
                    steps.push((name, query(next(&mut inner)?)?));
                }
            }
            Rule::statement => {
                statements.push(query(next(&mut p.into_inner())?)?);
            }
            _ => {}
        }
    }
    Ok(Script { steps, statements })
}

fn pos(p: &Pair<'_, Rule>) -> Pos {
    let (line, col) = p.line_col();
    Pos { line, col }
}

fn next<'a>(pairs: &mut Pairs<'a, Rule>) -> Result<Pair<'a, Rule>, SqlError> {
    pairs.next().ok_or_else(|| {
        SqlError::syntax(
            Pos::default(),
            "the parser found less than its grammar promises",
        )
    })
}

/// A name: as written, without its brackets (`[Count]`) or, for an alias written as text
/// (`AS 'smVersion'`), its quotes.
fn ident(p: Pair<'_, Rule>) -> Ident {
    let text = p.as_str();
    let name = match p.as_rule() {
        Rule::string | Rule::dq_string => unquoted(text),
        _ => text
            .strip_prefix('[')
            .and_then(|t| t.strip_suffix(']'))
            .unwrap_or(text)
            .to_owned(),
    };
    Ident { name, pos: pos(&p) }
}

/// Quoted text without its quotes, a doubled quote read as one (`'it''s'`, `"a ""b"""`).
fn unquoted(text: &str) -> String {
    let quote = if text.starts_with('"') { "\"" } else { "'" };
    let inner = text
        .strip_prefix(quote)
        .and_then(|t| t.strip_suffix(quote))
        .unwrap_or(text);
    inner.replace(&quote.repeat(2), quote)
}

fn query(p: Pair<'_, Rule>) -> Result<Query, SqlError> {
    let mut selects = Vec::new();
    for s in p.into_inner() {
        if s.as_rule() == Rule::select {
            selects.push(select(s)?);
        }
    }
    Ok(Query { selects })
}

fn select(p: Pair<'_, Rule>) -> Result<Select, SqlError> {
    let at = pos(&p);
    let mut items = Vec::new();
    let mut into = None;
    let mut from = None;
    let mut joins = Vec::new();
    let mut applies = Vec::new();
    let mut filter = None;
    let mut group_by = Vec::new();
    let mut group_pos = None;
    let mut having = None;
    let mut recognize = None;
    for part in p.into_inner() {
        match part.as_rule() {
            Rule::select_list => {
                for item in part
                    .into_inner()
                    .filter(|x| x.as_rule() == Rule::select_item)
                {
                    items.push(select_item(item)?);
                }
            }
            Rule::into => into = Some(ident(last(part)?)),
            Rule::from => from = Some(source(last(part)?)?),
            Rule::recognize => recognize = Some(Box::new(recognize::recognize(part)?)),
            Rule::join => {
                let jp = pos(&part);
                let outer = part
                    .clone()
                    .into_inner()
                    .any(|x| x.as_rule() == Rule::left_outer);
                let mut inner = part.into_inner().filter(|x| {
                    !matches!(
                        x.as_rule(),
                        Rule::kw_inner | Rule::left_outer | Rule::kw_join | Rule::kw_on
                    )
                });
                let src = source(next_of(&mut inner)?)?;
                let on = expr(next_of(&mut inner)?)?;
                joins.push(JoinClause {
                    pos: jp,
                    source: src,
                    on,
                    outer,
                });
            }
            Rule::apply => applies.push(apply(part)?),
            Rule::where_clause => filter = Some(expr(last(part)?)?),
            Rule::group_by => {
                group_pos = Some(pos(&part));
                for g in part
                    .into_inner()
                    .filter(|x| x.as_rule() == Rule::group_item)
                {
                    let inner = last(g)?;
                    group_by.push(match inner.as_rule() {
                        Rule::window => {
                            GroupItem::Window(window(last(inner.clone())?)?, pos(&inner))
                        }
                        _ => GroupItem::Key(expr(inner)?),
                    });
                }
            }
            Rule::having => having = Some(expr(last(part)?)?),
            _ => {}
        }
    }
    Ok(Select {
        pos: at,
        items,
        into,
        from: from.ok_or_else(|| SqlError::syntax(at, "expected FROM"))?,
        recognize,
        applies,
        joins,
        filter,
        group_by,
        group_pos,
        having,
    })
}

/// `CROSS APPLY function(...) AS name` or `OUTER APPLY ...`.
fn apply(part: Pair<'_, Rule>) -> Result<Apply, SqlError> {
    let at = pos(&part);
    let mut outer = false;
    let mut function = None;
    let mut alias = None;
    for x in part.into_inner() {
        match x.as_rule() {
            Rule::kw_outer => outer = true,
            Rule::expr => function = Some(expr(x)?),
            Rule::ident => alias = Some(ident(x)),
            _ => {}
        }
    }
    let (Some(function), Some(alias)) = (function, alias) else {
        return Err(SqlError::syntax(at, "expected APPLY function(...) AS name"));
    };
    Ok(Apply {
        pos: at,
        outer,
        function,
        alias,
    })
}

fn next_of<'a>(it: &mut impl Iterator<Item = Pair<'a, Rule>>) -> Result<Pair<'a, Rule>, SqlError> {
    it.next().ok_or_else(|| {
        SqlError::syntax(
            Pos::default(),
            "the parser found less than its grammar promises",
        )
    })
}

/// The last inner pair (the one after the keywords).
fn last(p: Pair<'_, Rule>) -> Result<Pair<'_, Rule>, SqlError> {
    let at = pos(&p);
    p.into_inner()
        .last()
        .ok_or_else(|| SqlError::syntax(at, "the parser found less than its grammar promises"))
}

fn select_item(p: Pair<'_, Rule>) -> Result<SelectItem, SqlError> {
    let mut inner = p.into_inner();
    let first = next(&mut inner)?;
    Ok(match first.as_rule() {
        Rule::star => SelectItem::Star(pos(&first)),
        Rule::qualified_star => SelectItem::QualifiedStar(first.into_inner().map(ident).collect()),
        _ => {
            let e = expr(first)?;
            let alias = match inner.next() {
                Some(a) => Some(ident(last(a)?)),
                None => None,
            };
            SelectItem::Expr(e, alias)
        }
    })
}

fn source(p: Pair<'_, Rule>) -> Result<Source, SqlError> {
    let mut src = Source {
        name: Ident {
            name: String::new(),
            pos: pos(&p),
        },
        alias: None,
        timestamp_by: None,
        over: None,
    };
    for part in p.into_inner() {
        match part.as_rule() {
            Rule::ident => src.name = ident(part),
            Rule::source_alias => src.alias = Some(ident(last(part)?)),
            Rule::timestamp_by => {
                for t in part.into_inner() {
                    match t.as_rule() {
                        Rule::expr => src.timestamp_by = Some(expr(t)?),
                        Rule::over_key => src.over = Some(expr(last(t)?)?),
                        _ => {}
                    }
                }
            }
            _ => {}
        }
    }
    Ok(src)
}

/// The length of `n` units; `None` if it overflows.
pub(crate) fn unit_span(unit: &str, n: i64) -> Option<TimeSpan> {
    let per: i64 = match unit.to_ascii_lowercase().as_str() {
        "day" | "dd" | "d" => 864_000_000_000,
        "hour" | "hh" => 36_000_000_000,
        "minute" | "mi" | "n" => 600_000_000,
        "second" | "ss" | "s" => 10_000_000,
        "millisecond" | "ms" => 10_000,
        "microsecond" | "mcs" => 10,
        _ => 1,
    };
    n.checked_mul(per).map(TimeSpan::from_ticks)
}

fn pratt() -> &'static PrattParser<Rule> {
    static PRATT: OnceLock<PrattParser<Rule>> = OnceLock::new();
    PRATT.get_or_init(|| {
        PrattParser::new()
            .op(Op::infix(Rule::or, Assoc::Left))
            .op(Op::infix(Rule::and, Assoc::Left))
            .op(Op::prefix(Rule::not))
            .op(Op::infix(Rule::eq, Assoc::Left)
                | Op::infix(Rule::ne, Assoc::Left)
                | Op::infix(Rule::lt, Assoc::Left)
                | Op::infix(Rule::le, Assoc::Left)
                | Op::infix(Rule::gt, Assoc::Left)
                | Op::infix(Rule::ge, Assoc::Left)
                | Op::postfix(Rule::is_null)
                | Op::postfix(Rule::between)
                | Op::postfix(Rule::in_list)
                | Op::postfix(Rule::like))
            .op(Op::infix(Rule::add, Assoc::Left) | Op::infix(Rule::sub, Assoc::Left))
            .op(Op::infix(Rule::mul, Assoc::Left)
                | Op::infix(Rule::div, Assoc::Left)
                | Op::infix(Rule::rem, Assoc::Left))
            .op(Op::prefix(Rule::neg))
    })
}

/// An `expr` (or a `bound` of `BETWEEN`) pair.
fn expr(p: Pair<'_, Rule>) -> Result<Expr, SqlError> {
    let operators = crate::limits::operators_in(&p);
    let _depth = crate::limits::Depth::enter(operators + 1, pos(&p))?;
    pratt()
        .map_primary(primary)
        .map_prefix(|op, e| {
            let e = e?;
            let at = pos(&op);
            Ok(Expr {
                kind: match op.as_rule() {
                    Rule::not => ExprKind::Not(Box::new(e)),
                    _ => ExprKind::Neg(Box::new(e)),
                },
                pos: at,
            })
        })
        .map_postfix(|e, op| {
            let e = e?;
            let at = e.pos;
            let negated = op.clone().into_inner().any(|x| x.as_rule() == Rule::kw_not);
            let kind = match op.as_rule() {
                Rule::is_null => ExprKind::IsNull(Box::new(e), negated),
                Rule::between => {
                    let mut bounds = op.into_inner().filter(|x| x.as_rule() == Rule::bound);
                    let lo = expr(next_of(&mut bounds)?)?;
                    let hi = expr(next_of(&mut bounds)?)?;
                    ExprKind::Between(Box::new(e), Box::new(lo), Box::new(hi), negated)
                }
                Rule::in_list => {
                    let list = op
                        .into_inner()
                        .filter(|x| x.as_rule() == Rule::expr)
                        .map(expr)
                        .collect::<Result<_, _>>()?;
                    ExprKind::In(Box::new(e), list, negated)
                }
                _ => {
                    let pattern = op
                        .into_inner()
                        .filter(|x| !matches!(x.as_rule(), Rule::kw_not | Rule::kw_like))
                        .map(primary)
                        .next()
                        .ok_or_else(|| SqlError::syntax(at, "expected a pattern"))??;
                    ExprKind::Like(Box::new(e), Box::new(pattern), negated)
                }
            };
            Ok(Expr { kind, pos: at })
        })
        .map_infix(|a, op, b| {
            let (a, b) = (a?, b?);
            let at = a.pos;
            let op = match op.as_rule() {
                Rule::or => BinOp::Or,
                Rule::and => BinOp::And,
                Rule::eq => BinOp::Eq,
                Rule::ne => BinOp::Ne,
                Rule::lt => BinOp::Lt,
                Rule::le => BinOp::Le,
                Rule::gt => BinOp::Gt,
                Rule::ge => BinOp::Ge,
                Rule::add => BinOp::Add,
                Rule::sub => BinOp::Sub,
                Rule::mul => BinOp::Mul,
                Rule::div => BinOp::Div,
                _ => BinOp::Rem,
            };
            Ok(Expr {
                kind: ExprKind::Binary(op, Box::new(a), Box::new(b)),
                pos: at,
            })
        })
        .parse(p.into_inner())
}

fn primary(p: Pair<'_, Rule>) -> Result<Expr, SqlError> {
    let at = pos(&p);
    let kind = match p.as_rule() {
        Rule::expr => return expr(p),
        Rule::null => ExprKind::Null,
        Rule::true_lit => ExprKind::Bool(true),
        Rule::false_lit => ExprKind::Bool(false),
        Rule::number => {
            let text = p.as_str();
            match text.parse::<i64>() {
                Ok(i) => ExprKind::Int(i),
                Err(_) => ExprKind::Float(
                    text.parse()
                        .map_err(|_| SqlError::syntax(at, format!("`{text}` is not a number")))?,
                ),
            }
        }
        Rule::string | Rule::dq_string => ExprKind::Str(unquoted(p.as_str())),
        Rule::column => ExprKind::Column(p.into_inner().map(ident).collect()),
        Rule::timestamp_fn => ExprKind::Timestamp,
        Rule::cast => {
            let mut inner = p
                .into_inner()
                .filter(|x| x.as_rule() != Rule::kw_cast && x.as_rule() != Rule::kw_as);
            let e = expr(next_of(&mut inner)?)?;
            let ty = next_of(&mut inner)?.as_str().to_ascii_lowercase();
            let ty = match ty.split('(').next().unwrap_or_default() {
                "bigint" => SqlType::Bigint,
                "float" => SqlType::Float,
                "nvarchar" => SqlType::Nvarchar,
                "bit" => SqlType::Bit,
                "datetime" => SqlType::Datetime,
                _ => SqlType::Record,
            };
            ExprKind::Cast(Box::new(e), ty)
        }
        Rule::datediff => {
            let mut inner = p.into_inner();
            let unit = next(&mut inner)?.as_str().to_owned();
            let a = expr(next(&mut inner)?)?;
            let b = expr(next(&mut inner)?)?;
            let one = unit_span(&unit, 1).unwrap_or(TimeSpan::from_ticks(1));
            let name = |e: &Expr| match &e.kind {
                ExprKind::Column(path) if path.len() == 1 => Some(path[0].clone()),
                _ => None,
            };
            match (name(&a), name(&b)) {
                (Some(x), Some(y)) => ExprKind::DateDiff(one, x, y),
                _ => ExprKind::DateDiffOf(one, Box::new(a), Box::new(b)),
            }
        }
        Rule::case_expr => case(p)?,
        Rule::call => call(p, at)?,
        other => {
            return Err(SqlError::syntax(at, format!("unexpected {other:?}")));
        }
    };
    Ok(Expr { kind, pos: at })
}

/// `CASE [operand] WHEN ... THEN ... [ELSE ...] END`.
fn case(p: Pair<'_, Rule>) -> Result<ExprKind, SqlError> {
    let mut operand = None;
    let mut whens = Vec::new();
    let mut otherwise = None;
    for part in p.into_inner() {
        match part.as_rule() {
            Rule::expr => operand = Some(Box::new(expr(part)?)),
            Rule::when => {
                let mut w = part.into_inner().filter(|x| x.as_rule() == Rule::expr);
                let cond = expr(next_of(&mut w)?)?;
                let then = expr(next_of(&mut w)?)?;
                whens.push((cond, then));
            }
            Rule::else_clause => otherwise = Some(Box::new(expr(last(part)?)?)),
            _ => {}
        }
    }
    Ok(ExprKind::Case(operand, whens, otherwise))
}

/// A function call: its name, its arguments (or `*`), and an `OVER (ORDER BY ...)`.
fn call(p: Pair<'_, Rule>, at: Pos) -> Result<ExprKind, SqlError> {
    let mut name = None;
    let mut args = Vec::new();
    let mut star = false;
    let mut distinct = false;
    let mut order = None;
    let mut over = None;
    for part in p.into_inner() {
        match part.as_rule() {
            Rule::call_name => name = Some(ident(part)),
            Rule::count_star => star = true,
            Rule::distinct => distinct = true,
            Rule::expr => args.push(expr(part)?),
            Rule::over_order => {
                let mut e = None;
                let mut desc = false;
                for o in part.into_inner() {
                    match o.as_rule() {
                        Rule::expr => e = Some(expr(o)?),
                        Rule::desc => desc = true,
                        _ => {}
                    }
                }
                order = e.map(|e| (Box::new(e), desc));
            }
            Rule::over_window => over = Some(Box::new(over_window(part)?)),
            _ => {}
        }
    }
    Ok(ExprKind::Call {
        name: name.ok_or_else(|| SqlError::syntax(at, "expected a function name"))?,
        args,
        star,
        distinct,
        order,
        over,
    })
}

/// `LIMIT DURATION(unit, n)`: a positive length.
fn limit_duration(p: Pair<'_, Rule>) -> Result<TimeSpan, SqlError> {
    let at = pos(&p);
    let mut unit = None;
    let mut n = None;
    for x in p.into_inner() {
        match x.as_rule() {
            Rule::unit => unit = Some(x.as_str().to_owned()),
            Rule::duration => n = x.as_str().parse::<i64>().ok(),
            _ => {}
        }
    }
    let span = match (unit, n) {
        (Some(u), Some(n)) if n > 0 => unit_span(&u, n),
        _ => None,
    };
    span.ok_or_else(|| SqlError::syntax(at, "LIMIT DURATION takes a unit and a positive length"))
}

/// `OVER ([PARTITION BY keys] [LIMIT DURATION(unit, n)] [WHEN condition])`.
fn over_window(p: Pair<'_, Rule>) -> Result<Over, SqlError> {
    let mut over = Over {
        partition: Vec::new(),
        duration: None,
        when: None,
    };
    for part in p.into_inner() {
        match part.as_rule() {
            Rule::partition_by => {
                for e in part.into_inner().filter(|x| x.as_rule() == Rule::expr) {
                    over.partition.push(expr(e)?);
                }
            }
            Rule::limit_duration => over.duration = Some(limit_duration(part)?),
            Rule::over_when => over.when = Some(Box::new(expr(last(part)?)?)),
            _ => {}
        }
    }
    Ok(over)
}
