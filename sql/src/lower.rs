//! Expressions compiled: fields resolved in a scope, and in a grouped select, group keys and
//! aggregates lifted into slots.

use punctual_rows::Value;

use crate::aggs::{AggFn, NumFn};
use crate::analytic::{analytic, is_analytic, Analytic};
use crate::ast::*;
use crate::eval::{Func, E};
use crate::row_expr::RowExpr;
use crate::scope::{canonical, err, has_aggregate, Scope};
use crate::SqlError;

/// How expressions are compiled: over rows (with the scope), or over a group (keys and
/// aggregates lifted into slots).
pub(crate) struct Grouping<'a> {
    pub(crate) keys: &'a [(String, Pos)],
    pub(crate) aggs: Vec<AggFn>,
    /// Over each event, not a group (a select of one source): its analytic functions
    /// (`LAG`, `LAST`, `ISFIRST`), each lifted into a slot as an aggregate is.
    pub(crate) analytics: Option<Vec<Analytic>>,
}

impl Grouping<'_> {
    /// Analytic functions lifted over each row of a plain select.
    pub(crate) fn over_rows() -> Grouping<'static> {
        Grouping {
            keys: &[],
            aggs: Vec::new(),
            analytics: Some(Vec::new()),
        }
    }
}

/// Compiles `e` in `scope` (over a group with `group`; `System.Timestamp()` allowed with
/// `time_ok`). Every few levels of a deep expression are compiled as a point where its
/// evaluation makes room on the stack ([`E::Deep`]).
pub(crate) fn compile(
    e: &Expr,
    scope: &Scope,
    group: Option<&mut Grouping<'_>>,
    time_ok: bool,
) -> Result<E, SqlError> {
    let level = crate::limits::Compiling::enter();
    let compiled = compile_level(e, scope, group, time_ok)?;
    Ok(if level.makes_room() {
        E::Deep(Box::new(compiled))
    } else {
        compiled
    })
}

fn compile_level(
    e: &Expr,
    scope: &Scope,
    mut group: Option<&mut Grouping<'_>>,
    time_ok: bool,
) -> Result<E, SqlError> {
    if let Some(g) = group.as_deref() {
        let c = canonical(e);
        if let Some(i) = g.keys.iter().position(|(k, _)| *k == c) {
            return Ok(E::Key(i));
        }
    }
    let sub = |x: &Expr, group: Option<&mut Grouping<'_>>| compile(x, scope, group, time_ok);
    Ok(match &e.kind {
        ExprKind::Null => E::Lit(Value::Null),
        ExprKind::Bool(b) => E::Lit(Value::Bool(*b)),
        ExprKind::Int(i) => E::Lit(Value::Int(*i)),
        ExprKind::Float(f) => E::Lit(Value::Float(*f)),
        ExprKind::Str(s) => E::Lit(Value::from(s.clone())),
        ExprKind::Column(path) => {
            if group.as_ref().is_some_and(|g| g.analytics.is_none()) {
                return Err(err(
                    e.pos,
                    format!(
                        "`{}` is neither a key of GROUP BY nor inside an aggregate",
                        path.iter()
                            .map(|p| p.name.as_str())
                            .collect::<Vec<_>>()
                            .join(".")
                    ),
                ));
            }
            scope.column(path)?
        }
        ExprKind::Timestamp => {
            if !time_ok {
                return Err(err(
                    e.pos,
                    "System.Timestamp() is only available in the select list",
                ));
            }
            E::Time
        }
        ExprKind::Not(a) => E::Not(Box::new(sub(a, group)?)),
        ExprKind::Neg(a) => E::Neg(Box::new(sub(a, group)?)),
        ExprKind::Binary(op, a, b) => {
            let a = sub(a, group.as_deref_mut())?;
            E::Bin(*op, Box::new(a), Box::new(sub(b, group)?))
        }
        ExprKind::IsNull(a, n) => E::IsNull(Box::new(sub(a, group)?), *n),
        ExprKind::Between(a, lo, hi, n) => {
            let a = sub(a, group.as_deref_mut())?;
            let lo = sub(lo, group.as_deref_mut())?;
            E::Between(Box::new(a), Box::new(lo), Box::new(sub(hi, group)?), *n)
        }
        ExprKind::In(a, list, n) => {
            let a = sub(a, group.as_deref_mut())?;
            let mut items = Vec::new();
            for x in list {
                items.push(sub(x, group.as_deref_mut())?);
            }
            E::In(Box::new(a), items, *n)
        }
        ExprKind::Like(a, p, n) => {
            let a = sub(a, group.as_deref_mut())?;
            E::Like(Box::new(a), Box::new(sub(p, group)?), *n)
        }
        ExprKind::Case(o, whens, other) => case(o, whens, other, |x| sub(x, group.as_deref_mut()))?,
        ExprKind::Cast(a, ty) => E::Cast(Box::new(sub(a, group)?), *ty),
        ExprKind::DateDiff(unit, a, b) => {
            let source = |i: &Ident| {
                scope
                    .sources
                    .iter()
                    .any(|(r, _)| r.eq_ignore_ascii_case(&i.name))
            };
            if source(a) || source(b) {
                return Err(err(
                    e.pos,
                    "DATEDIFF of two sources belongs in the ON condition of a JOIN, as `DATEDIFF(unit, a, b) BETWEEN x AND y`",
                ));
            }
            let field = |i: &Ident| Expr {
                kind: ExprKind::Column(vec![i.clone()]),
                pos: i.pos,
            };
            let a = sub(&field(a), group.as_deref_mut())?;
            let unit = E::Lit(Value::Int(unit.ticks()));
            E::Call(Func::DateDiff, vec![unit, a, sub(&field(b), group)?])
        }
        ExprKind::DateDiffOf(unit, a, b) => {
            let a = sub(a, group.as_deref_mut())?;
            let unit = E::Lit(Value::Int(unit.ticks()));
            E::Call(Func::DateDiff, vec![unit, a, sub(b, group)?])
        }
        ExprKind::Call { .. } => return call(e, scope, group, time_ok),
    })
}

/// A function call: an analytic function (lifted into a slot of a select over each event),
/// an aggregate (into a slot of a group), or a function of its arguments.
fn call(
    e: &Expr,
    scope: &Scope,
    mut group: Option<&mut Grouping<'_>>,
    time_ok: bool,
) -> Result<E, SqlError> {
    let ExprKind::Call {
        name,
        args,
        star,
        distinct,
        order,
        over,
    } = &e.kind
    else {
        return Err(err(e.pos, "not a call"));
    };
    if let Some(found) = crate::functions::called(&name.name) {
        if *star || *distinct || order.is_some() || over.is_some() {
            return Err(err(
                name.pos,
                format!(
                    "`{}` takes its arguments only (no *, DISTINCT or OVER)",
                    name.name
                ),
            ));
        }
        return registered(
            found.map_err(|why| err(name.pos, why))?,
            (name, args),
            scope,
            group,
            time_ok,
        );
    }
    if is_analytic(&name.name) {
        return match group.and_then(|g| g.analytics.as_mut()) {
            Some(list) => {
                list.push(analytic(name, args, over.as_deref(), scope)?);
                Ok(E::Agg(list.len() - 1))
            }
            None => Err(err(
                name.pos,
                format!(
                    "{} is an analytic function: it reads a select of one source (no JOIN, no GROUP BY), in its WHERE or its columns",
                    name.name.to_uppercase()
                ),
            )),
        };
    }
    if let Some(o) = over {
        return Err(err(
            o.partition.first().map_or(name.pos, |p| p.pos),
            format!(
                "OVER (PARTITION BY ... LIMIT DURATION ...) goes with LAG, LAST or ISFIRST, not {}",
                name.name.to_uppercase()
            ),
        ));
    }
    if AggFn::is_aggregate(&name.name) {
        let Some(g) = group.filter(|g| g.analytics.is_none()) else {
            return Err(err(
                name.pos,
                format!(
                    "{} is an aggregate: it needs a window in GROUP BY (TumblingWindow, HoppingWindow, SlidingWindow or SnapshotWindow)",
                    name.name.to_uppercase()
                ),
            ));
        };
        let f = aggregate(name, args, (*star, *distinct), order, scope)?;
        g.aggs.push(f);
        return Ok(E::Agg(g.aggs.len() - 1));
    }
    function_call(name, args, *star || *distinct || order.is_some(), |a| {
        compile(a, scope, group.as_deref_mut(), time_ok)
    })
}

/// A call of a registered function (`udf.NAME(...)`, a function of its arguments) or
/// aggregate (`uda.NAME(...)`, into a slot of a group, its arguments over each member).
fn registered(
    found: crate::functions::Called,
    (name, args): (&Ident, &[Expr]),
    scope: &Scope,
    mut group: Option<&mut Grouping<'_>>,
    time_ok: bool,
) -> Result<E, SqlError> {
    match found {
        crate::functions::Called::Function(udf) => {
            let mut compiled = Vec::new();
            for a in args {
                compiled.push(compile(a, scope, group.as_deref_mut(), time_ok)?);
            }
            Ok(E::Udf(Box::new(udf), compiled))
        }
        crate::functions::Called::Aggregate(uda) => {
            let Some(g) = group.filter(|g| g.analytics.is_none()) else {
                return Err(err(
                    name.pos,
                    format!(
                        "`{}` is an aggregate: it needs a window in GROUP BY",
                        name.name
                    ),
                ));
            };
            let mut members = Vec::new();
            for a in args {
                if has_aggregate(a) {
                    return Err(err(a.pos, "an aggregate inside an aggregate"));
                }
                members.push(RowExpr::new(compile(a, scope, None, false)?));
            }
            g.aggs.push(AggFn::User(uda, members));
            Ok(E::Agg(g.aggs.len() - 1))
        }
    }
}

/// `CASE [o] WHEN a THEN b ... [ELSE other] END`, its parts compiled by `sub`.
fn case(
    o: &Option<Box<Expr>>,
    whens: &[(Expr, Expr)],
    other: &Option<Box<Expr>>,
    mut sub: impl FnMut(&Expr) -> Result<E, SqlError>,
) -> Result<E, SqlError> {
    let o = match o {
        Some(o) => Some(Box::new(sub(o)?)),
        None => None,
    };
    let mut ws = Vec::new();
    for (a, b) in whens {
        let a = sub(a)?;
        ws.push((a, sub(b)?));
    }
    let other = match other {
        Some(x) => Some(Box::new(sub(x)?)),
        None => None,
    };
    Ok(E::Case(o, ws, other))
}

/// The aggregate a call names (`COUNT(*)`, `SUM(x)`, `TopOne() OVER (ORDER BY x)`, ...), its
/// arguments compiled over each member in `scope`.
fn aggregate(
    name: &Ident,
    args: &[Expr],
    (star, distinct): (bool, bool),
    order: &Option<(Box<Expr>, bool)>,
    scope: &Scope,
) -> Result<AggFn, SqlError> {
    let member = |x: &Expr| compile(x, scope, None, false).map(RowExpr::new);
    let lower = name.name.to_ascii_lowercase();
    let one = |args: &[Expr]| -> Result<RowExpr, SqlError> {
        match args {
            [a] => {
                if has_aggregate(a) {
                    return Err(err(a.pos, "an aggregate inside an aggregate"));
                }
                member(a)
            }
            _ => Err(err(
                name.pos,
                format!("{} takes one argument", name.name.to_uppercase()),
            )),
        }
    };
    let f = match (lower.as_str(), star) {
        ("count", true) => AggFn::Num(NumFn::CountStar),
        ("count", false) if distinct => AggFn::CountDistinct(one(args)?),
        ("count", false) => AggFn::Num(NumFn::Count(one(args)?)),
        ("sum", _) => AggFn::Num(NumFn::Sum(one(args)?)),
        ("avg", _) => AggFn::Num(NumFn::Avg(one(args)?)),
        ("min", _) => AggFn::Min(one(args)?),
        ("max", _) => AggFn::Max(one(args)?),
        ("collecttop", _) => {
            let Some((o, desc)) = order else {
                return Err(err(
                    name.pos,
                    "CollectTop needs an order: CollectTop(k) OVER (ORDER BY expr [DESC])",
                ));
            };
            let k = match args {
                [a] => constant(a)?,
                _ => return Err(err(name.pos, "CollectTop takes one argument: how many")),
            };
            let Some(k) = usize::try_from(k)
                .ok()
                .filter(|&k| (1..=10_000).contains(&k))
            else {
                return Err(err(args[0].pos, "CollectTop takes 1 to 10000 members"));
            };
            AggFn::CollectTop(k, member(o)?, *desc)
        }
        _ => {
            let Some((o, desc)) = order else {
                return Err(err(
                    name.pos,
                    "TopOne needs an order: TopOne() OVER (ORDER BY expr [DESC])",
                ));
            };
            if !args.is_empty() {
                return Err(err(name.pos, "TopOne takes no arguments"));
            }
            AggFn::TopOne(member(o)?, *desc)
        }
    };
    if star && lower != "count" {
        return Err(err(name.pos, "only COUNT takes *"));
    }
    if distinct && lower != "count" {
        return Err(err(
            name.pos,
            format!(
                "only COUNT takes DISTINCT, not {}",
                name.name.to_uppercase()
            ),
        ));
    }
    if order.is_some() && lower != "topone" && lower != "collecttop" {
        return Err(err(
            name.pos,
            "only TopOne and CollectTop take OVER (ORDER BY ...)",
        ));
    }
    Ok(f)
}

/// A call of a function (not an aggregate), its arguments compiled by `arg`; `starred`: it
/// was given `*` or `OVER (ORDER BY ...)`, which only aggregates take.
fn function_call(
    name: &Ident,
    args: &[Expr],
    starred: bool,
    mut arg: impl FnMut(&Expr) -> Result<E, SqlError>,
) -> Result<E, SqlError> {
    let Some((func, min, max)) = Func::lookup(&name.name) else {
        if let Some(refusal) = crate::unsupported::refuse_function(&name.name, name.pos) {
            return Err(refusal);
        }
        return Err(err(name.pos, unknown_function(&name.name)));
    };
    if starred {
        return Err(err(
            name.pos,
            format!("{} is not an aggregate", name.name.to_uppercase()),
        ));
    }
    if args.len() < min || args.len() > max {
        let takes = if min == max {
            format!("{min}")
        } else if max == usize::MAX {
            format!("at least {min}")
        } else {
            format!("{min} to {max}")
        };
        return Err(err(
            name.pos,
            format!(
                "{} takes {takes} arguments, not {}",
                name.name.to_uppercase(),
                args.len()
            ),
        ));
    }
    let mut compiled = Vec::new();
    for a in args {
        compiled.push(arg(a)?);
    }
    Ok(E::Call(func, compiled))
}

/// Every function and aggregate the language has, as its docs write them.
const FUNCTIONS: &[&str] = &[
    "UPPER",
    "LOWER",
    "LEN",
    "CONCAT",
    "SUBSTRING",
    "TRIM",
    "LTRIM",
    "RTRIM",
    "REPLACE",
    "CHARINDEX",
    "ABS",
    "ROUND",
    "FLOOR",
    "CEILING",
    "POWER",
    "SQRT",
    "SIGN",
    "COALESCE",
    "DATEDIFF",
    "GetArrayElement",
    "GetArrayLength",
    "GetRecordPropertyValue",
    "CreatePoint",
    "CreateLineString",
    "CreatePolygon",
    "ST_DISTANCE",
    "ST_WITHIN",
    "ST_INTERSECTS",
    "ST_OVERLAPS",
];
const AGGREGATES: &[&str] = &["COUNT", "SUM", "AVG", "MIN", "MAX", "TopOne", "CollectTop"];

/// The refusal of an unknown function: the nearest name the language has, if one is near
/// (`UPER`: `UPPER`), and the list.
fn unknown_function(name: &str) -> String {
    let near = crate::scope::nearest(name, FUNCTIONS.iter().chain(AGGREGATES).copied())
        .map_or(String::new(), |n| format!("did you mean {n}? "));
    format!(
        "unknown function `{name}` ({near}functions: {}; aggregates: {}; analytic functions: LAG, LAST, ISFIRST)",
        FUNCTIONS.join(", "),
        AGGREGATES.join(", ")
    )
}

/// An integer constant (`BETWEEN` bounds of `DATEDIFF`).
pub(crate) fn constant(e: &Expr) -> Result<i64, SqlError> {
    match &e.kind {
        ExprKind::Int(i) => Ok(*i),
        ExprKind::Neg(a) => constant(a).map(|i| -i),
        _ => Err(err(e.pos, "a whole number is needed here")),
    }
}
