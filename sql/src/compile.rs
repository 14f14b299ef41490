//! From [`Script`] to streams: every select becomes the operators the Rust API builds
//! (`filter`, `map_with_time`, windows with `group_by` and `aggregate_into`, `join`,
//! `union`), so a query runs as fast as its Rust form.

use std::collections::HashMap;

use punctual_core::ops::{AnyStream, Payload, Stream, Ungrouped, Windowed};
use punctual_core::{Order, Time, TimeSpan};
use punctual_rows::{field_name, Row, Schema, Value};

use crate::aggs::{AggFn, SqlAggs};
use crate::ast::*;
use crate::eval::{Ctx, E};
use crate::join::JoinParts;
use crate::lower::{compile, constant, Grouping};
use crate::row_expr::{row_of, Cond, RowExpr};
use crate::scope::{canonical, err, walk, Scope};
use crate::select::{projection, Item};
use crate::stream::Rows;
use crate::{RowStream, SqlError};

mod grouped;

/// A stream the query can read, with its fields when they are known.
#[derive(Clone)]
pub(crate) struct Named {
    pub(crate) stream: RowStream,
    pub(crate) fields: Option<Vec<String>>,
    /// Whether it is an input (not a step).
    pub(crate) input: bool,
}

/// The parts of a join condition.
struct OnParts {
    keys: Vec<(Expr, Expr)>,
    /// `DATEDIFF(unit, a, b) BETWEEN lo AND hi`: unit, a, b, lo, hi, where.
    datediff: Option<(TimeSpan, Ident, Ident, i64, i64, Pos)>,
    rest: Vec<Expr>,
}

fn conjuncts(e: &Expr, out: &mut Vec<Expr>) {
    match &e.kind {
        ExprKind::Binary(BinOp::And, a, b) => {
            conjuncts(a, out);
            conjuncts(b, out);
        }
        _ => out.push(e.clone()),
    }
}

/// Output column names: the alias, or a column's last name, or a function's name.
fn item_name(e: &Expr, alias: &Option<Ident>, n: usize) -> String {
    if let Some(a) = alias {
        return a.name.clone();
    }
    match &e.kind {
        ExprKind::Column(path) => path
            .last()
            .map_or_else(|| format!("col{n}"), |p| p.name.clone()),
        ExprKind::Call { name, .. } => name.name.to_ascii_lowercase(),
        ExprKind::Timestamp => "timestamp".to_owned(),
        _ => format!("col{n}"),
    }
}

/// The result of a grouped query before its select list: the group's keys and aggregates.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
struct Group {
    /// The key values by position (a row of [`crate::aggs::slots`]).
    keys: Row,
    /// The aggregates' values by position.
    aggs: Row,
    /// Why the aggregates could not all be given (a `SUM` out of range), if so.
    fault: Option<String>,
}

pub(crate) struct Compiler<'a> {
    pub(crate) named: HashMap<String, Named>,
    pub(crate) text: &'a str,
}

impl Compiler<'_> {
    fn get(&self, name: &Ident) -> Result<Named, SqlError> {
        self.named.get(&name.name).cloned().ok_or_else(|| {
            let mut known: Vec<&str> = self.named.keys().map(String::as_str).collect();
            known.sort_unstable();
            err(
                name.pos,
                format!(
                    "no input or step named `{}` (there are: {})",
                    name.name,
                    known.join(", ")
                ),
            )
        })
    }

    pub(crate) fn script(mut self, script: &Script) -> Result<Vec<(String, RowStream)>, SqlError> {
        let _ = self.text;
        for (name, q) in &script.steps {
            if self.named.contains_key(&name.name) {
                return Err(err(
                    name.pos,
                    format!("`{}` is already an input or a step", name.name),
                ));
            }
            let n = self.query(q)?;
            let stream = n.stream.named(name.name.clone());
            self.named.insert(
                name.name.clone(),
                Named {
                    stream,
                    fields: n.fields,
                    input: false,
                },
            );
        }
        let mut outputs: Vec<(String, RowStream)> = Vec::new();
        for q in &script.statements {
            let first = &q.selects[0];
            let into = match (&first.into, script.statements.len()) {
                (Some(i), _) => i.name.clone(),
                (None, 1) => "output".to_owned(),
                (None, _) => {
                    return Err(err(
                        first.pos,
                        "with several statements, each needs INTO output",
                    ))
                }
            };
            for s in &q.selects[1..] {
                if let Some(i) = &s.into {
                    return Err(err(i.pos, "INTO goes in the first SELECT of a UNION"));
                }
            }
            if outputs.iter().any(|(o, _)| *o == into) {
                return Err(err(
                    first.into.as_ref().map_or(first.pos, |i| i.pos),
                    format!("two statements write INTO `{into}`: UNION them instead"),
                ));
            }
            let n = self.query(q)?;
            outputs.push((into, n.stream));
        }
        Ok(outputs)
    }

    fn query(&self, q: &Query) -> Result<Named, SqlError> {
        let mut parts = Vec::new();
        for s in &q.selects {
            parts.push(self.select(s)?);
        }
        let first = parts.remove(0);
        if parts.is_empty() {
            return Ok(first);
        }
        let rest: Vec<&RowStream> = parts.iter().map(|p| &p.stream).collect();
        Ok(Named {
            stream: first.stream.union(&rest),
            fields: first.fields,
            input: false,
        })
    }

    fn select(&self, s: &Select) -> Result<Named, SqlError> {
        let from = self.get(&s.from.name)?;
        self.check_timestamp_by(s)?;
        let mut scope = Scope {
            sources: vec![(s.from.reference().to_owned(), from.fields.clone())],
            nested: false,
        };
        let mut stream = from.stream.clone();
        // The last join, made once what follows it is known.
        let mut last: Option<JoinParts> = None;
        for (j, clause) in s.joins.iter().enumerate() {
            let (parts, combined) = self.join_clause(j, clause, &scope, &stream)?;
            if j + 1 < s.joins.len() {
                stream = parts.joined();
            } else {
                last = Some(parts);
            }
            scope = combined;
        }
        let filter = match &s.filter {
            Some(w) => Some(compile(w, &scope, None, false)?),
            None => None,
        };
        let grouped = !s.group_by.is_empty()
            || s.items.iter().any(|i| match i {
                SelectItem::Expr(e, _) => has_aggregate(e),
                _ => false,
            })
            || s.having.is_some();
        if let Some(parts) = last {
            if !grouped {
                // Named columns only, over fields of the two sources: computed as each
                // pair is found, with no joined row in between.
                let (items, names) = self.plain_items(s, &scope)?;
                let columns: Option<Vec<E>> = items
                    .iter()
                    .map(|i| match i {
                        Item::Expr(_, e) => Some(e.clone()),
                        _ => None,
                    })
                    .collect();
                let schema = names.as_ref().and_then(|n| Schema::new(n).ok());
                if let (Some(columns), Some(schema)) = (columns, schema) {
                    if parts.fuses(filter.as_ref(), &columns) {
                        return Ok(Named {
                            stream: parts.fused(filter, schema, columns),
                            fields: names,
                            input: false,
                        });
                    }
                }
            }
            stream = parts.joined();
        }
        if let Some(c) = filter {
            stream = Cond::new(c).filter(&stream);
        }
        if grouped {
            return self.grouped(s, &scope, stream);
        }
        // A plain select.
        let star_only =
            s.items.len() == 1 && matches!(s.items[0], SelectItem::Star(_)) && !scope.nested;
        if star_only {
            return Ok(Named {
                stream,
                fields: scope.sources[0].1.clone(),
                input: false,
            });
        }
        let (items, names) = self.plain_items(s, &scope)?;
        let stream = projection(items, &stream);
        Ok(Named {
            stream,
            fields: names,
            input: false,
        })
    }

    /// The `j`th join of a select, of the sources in `scope` (joined so far into `stream`)
    /// with the clause's source: its parts, and the scope of every source after it.
    fn join_clause(
        &self,
        j: usize,
        clause: &JoinClause,
        scope: &Scope,
        stream: &RowStream,
    ) -> Result<(JoinParts, Scope), SqlError> {
        let right = self.get(&clause.source.name)?;
        let rref = clause.source.reference().to_owned();
        if scope
            .sources
            .iter()
            .any(|(r, _)| r.eq_ignore_ascii_case(&rref))
        {
            return Err(err(
                clause.source.name.pos,
                format!(
                    "`{rref}` is joined twice: give one an alias (`JOIN {} AS other`)",
                    clause.source.name.name
                ),
            ));
        }
        let left_scope = Scope {
            sources: scope.sources.clone(),
            nested: scope.nested,
        };
        let right_scope = Scope {
            sources: vec![(rref.clone(), right.fields.clone())],
            nested: false,
        };
        let mut all = scope.sources.clone();
        all.push((rref.clone(), right.fields.clone()));
        let combined = Scope {
            sources: all,
            nested: true,
        };
        let parts = self.on_parts(&clause.on, &combined, scope.sources.len())?;
        // The right side sorted: the join reads it in time order.
        let (mut left_stream, mut right_stream) = (stream.clone(), right.stream.ordered());
        if let Some(dd) = &parts.datediff {
            (left_stream, right_stream) = datediff(dd, j, &combined, left_stream, right_stream)?;
        }
        let mut key_left = Vec::new();
        let mut key_right = Vec::new();
        for (l, r) in &parts.keys {
            key_left.push(compile(l, &left_scope, None, false)?);
            key_right.push(compile(r, &right_scope, None, false)?);
        }
        let mut rest = Vec::new();
        for x in &parts.rest {
            rest.push(compile(x, &combined, None, false)?);
        }
        let parts = JoinParts {
            left: left_stream,
            right: right_stream,
            keys: [key_left, key_right],
            rest,
            names: [field_name(&scope.sources[0].0), field_name(&rref)],
            pair: Schema::new([&scope.sources[0].0, &rref])
                .map_err(|e| err(clause.source.name.pos, e.to_string()))?,
            first: j == 0,
        };
        Ok((parts, combined))
    }

    /// Refuses a `TIMESTAMP BY` on a source that is a step rather than an input.
    fn check_timestamp_by(&self, s: &Select) -> Result<(), SqlError> {
        for src in std::iter::once(&s.from).chain(s.joins.iter().map(|j| &j.source)) {
            if let Some(t) = &src.timestamp_by {
                let n = self.get(&src.name)?;
                if !n.input {
                    return Err(err(
                        t.pos,
                        format!(
                            "TIMESTAMP BY belongs to an input; `{}` is a step",
                            src.name.name
                        ),
                    ));
                }
            }
        }
        Ok(())
    }

    /// A plain select's columns, and their names when they are known.
    fn plain_items(
        &self,
        s: &Select,
        scope: &Scope,
    ) -> Result<(Vec<Item>, Option<Vec<String>>), SqlError> {
        let mut items: Vec<Item> = Vec::new();
        let mut names: Option<Vec<String>> = Some(Vec::new());
        for (n, item) in s.items.iter().enumerate() {
            match item {
                SelectItem::Star(_) => {
                    if scope.nested {
                        for (r, fields) in &scope.sources {
                            items.push(Item::Copy(field_name(r), crate::eval::path([r])));
                            push_name(&mut names, Some(r.clone()));
                            let _ = fields;
                        }
                    } else {
                        items.push(Item::All);
                        match (&mut names, &scope.sources[0].1) {
                            (Some(ns), Some(f)) => ns.extend(f.iter().cloned()),
                            _ => names = None,
                        }
                    }
                }
                SelectItem::QualifiedStar(id) => {
                    let Some((r, fields)) = scope
                        .sources
                        .iter()
                        .find(|(r, _)| r.eq_ignore_ascii_case(&id.name))
                    else {
                        return Err(err(
                            id.pos,
                            format!("`{}` is not a source of this query", id.name),
                        ));
                    };
                    items.push(Item::Spread(if scope.nested {
                        vec![r.clone()]
                    } else {
                        vec![]
                    }));
                    match (&mut names, fields) {
                        (Some(ns), Some(f)) => ns.extend(f.iter().cloned()),
                        _ => names = None,
                    }
                }
                SelectItem::Expr(e, alias) => {
                    let name = item_name(e, alias, n + 1);
                    if let Some(ns) = &names {
                        if ns.contains(&name) {
                            return Err(err(
                                alias.as_ref().map_or(e.pos, |a| a.pos),
                                format!(
                                    "two columns are named `{name}`: give one an alias (AS other)"
                                ),
                            ));
                        }
                    }
                    push_name(&mut names, Some(name.clone()));
                    items.push(Item::Expr(
                        field_name(&name),
                        compile(e, scope, None, true)?,
                    ));
                }
            }
        }
        Ok((items, names))
    }

    fn on_parts(
        &self,
        on: &Expr,
        combined: &Scope,
        left_count: usize,
    ) -> Result<OnParts, SqlError> {
        let mut cs = Vec::new();
        conjuncts(on, &mut cs);
        let mut parts = OnParts {
            keys: Vec::new(),
            datediff: None,
            rest: Vec::new(),
        };
        for c in cs {
            match &c.kind {
                ExprKind::Between(a, lo, hi, false) if matches!(a.kind, ExprKind::DateDiff(..)) => {
                    let ExprKind::DateDiff(unit, x, y) = &a.kind else {
                        continue;
                    };
                    if parts.datediff.is_some() {
                        return Err(err(c.pos, "one DATEDIFF per join"));
                    }
                    parts.datediff = Some((
                        *unit,
                        x.clone(),
                        y.clone(),
                        constant(lo)?,
                        constant(hi)?,
                        c.pos,
                    ));
                }
                ExprKind::Binary(BinOp::Eq, a, b) => {
                    let (mut sa, mut sb) = (Vec::new(), Vec::new());
                    combined.sources_of(a, &mut sa);
                    combined.sources_of(b, &mut sb);
                    let left_only =
                        |v: &[usize]| !v.is_empty() && v.iter().all(|&i| i < left_count);
                    let right_only =
                        |v: &[usize]| !v.is_empty() && v.iter().all(|&i| i == left_count);
                    if left_only(&sa) && right_only(&sb) {
                        parts.keys.push((
                            strip(a, combined, left_count),
                            strip(b, combined, left_count),
                        ));
                    } else if right_only(&sa) && left_only(&sb) {
                        parts.keys.push((
                            strip(b, combined, left_count),
                            strip(a, combined, left_count),
                        ));
                    } else {
                        parts.rest.push(c.clone());
                    }
                }
                ExprKind::DateDiff(..) => {
                    return Err(err(
                        c.pos,
                        "DATEDIFF needs BETWEEN: DATEDIFF(unit, a, b) BETWEEN x AND y",
                    ));
                }
                _ => parts.rest.push(c.clone()),
            }
        }
        Ok(parts)
    }
}

/// An equality's side as written, for the stream it belongs to: `source.field` becomes
/// `field` when the source is not nested there.
fn strip(e: &Expr, combined: &Scope, left_count: usize) -> Expr {
    let mut e = e.clone();
    fn visit(e: &mut Expr, combined: &Scope, left_count: usize) {
        match &mut e.kind {
            ExprKind::Column(path) if path.len() > 1 => {
                let hit = combined
                    .sources
                    .iter()
                    .position(|(r, _)| r.eq_ignore_ascii_case(&path[0].name));
                // The right source's rows are flat; so are the left's before the first join.
                if hit == Some(left_count) || (hit == Some(0) && left_count == 1) {
                    path.remove(0);
                }
            }
            ExprKind::Not(a) | ExprKind::Neg(a) | ExprKind::IsNull(a, _) | ExprKind::Cast(a, _) => {
                visit(a, combined, left_count)
            }
            ExprKind::Binary(_, a, b) | ExprKind::Like(a, b, _) => {
                visit(a, combined, left_count);
                visit(b, combined, left_count);
            }
            ExprKind::Call { args, .. } => {
                for a in args {
                    visit(a, combined, left_count);
                }
            }
            _ => {}
        }
    }
    visit(&mut e, combined, left_count);
    e
}

fn has_aggregate(e: &Expr) -> bool {
    let mut found = false;
    walk(e, &mut |x| {
        if let ExprKind::Call { name, .. } = &x.kind {
            found |= AggFn::is_aggregate(&name.name);
        }
    });
    found
}

fn push_name(names: &mut Option<Vec<String>>, name: Option<String>) {
    match (names.as_mut(), name) {
        (Some(ns), Some(n)) => ns.push(n),
        _ => *names = None,
    }
}

/// A join on `DATEDIFF(unit, a, b) BETWEEN lo AND hi` (the `j`th join of its select, of the
/// `combined` sources) as a join of lifetimes: `a`'s events made to last from `a + lo` to
/// `a + hi`, `b`'s points.
fn datediff(
    dd: &(TimeSpan, Ident, Ident, i64, i64, Pos),
    j: usize,
    combined: &Scope,
    mut left_stream: RowStream,
    mut right_stream: Stream<Row>,
) -> Result<(RowStream, Stream<Row>), SqlError> {
    let (unit, a, b, lo, hi, at) = dd;
    if j > 0 {
        return Err(err(
            *at,
            "DATEDIFF in a join of more than two sources is not supported",
        ));
    }
    if lo > hi {
        return Err(err(*at, format!("BETWEEN {lo} AND {hi} matches nothing")));
    }
    let side = |id: &Ident| {
        combined
            .sources
            .iter()
            .position(|(r, _)| r.eq_ignore_ascii_case(&id.name))
            .ok_or_else(|| {
                err(
                    id.pos,
                    format!("`{}` is not a source of this join", id.name),
                )
            })
    };
    let (ia, ib) = (side(a)?, side(b)?);
    if ia == ib {
        return Err(err(b.pos, "DATEDIFF compares the two sources of the join"));
    }
    let span = |n: i64| {
        n.checked_mul(unit.ticks())
            .map(TimeSpan::from_ticks)
            .ok_or_else(|| err(*at, "the time difference is too large"))
    };
    // b's time minus a's within [lo, hi]: a's events last from a + lo to a + hi
    // (inclusive), b's are points; they overlap exactly when b is in range.
    let shift = span(*lo)?;
    let width = span(hi.checked_sub(*lo).unwrap_or(i64::MAX))?;
    let duration = TimeSpan::from_ticks(width.ticks().saturating_add(1));
    if ia == 0 {
        left_stream = left_stream.alter_lifetime(shift, duration);
        right_stream = right_stream.to_point_events();
    } else {
        right_stream = right_stream.alter_lifetime(shift, duration);
        left_stream = left_stream.to_point_events();
    }
    Ok((left_stream, right_stream))
}
