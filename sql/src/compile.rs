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
use crate::plan::{LogicalPlan, Node};
use crate::row_expr::{row_of, Cond, RowExpr};
use crate::scope::{canonical, err, Scope};
use crate::select::{projection, Item};
use crate::stream::Rows;
use crate::{RowStream, SqlError};
use datediff::{datediff, DateDiffSides};

mod apply;
mod datediff;
mod grouped;
mod late_session;
mod recognize;
mod session;
pub(crate) use grouped::gate;

/// A stream the query can read, with its fields when they are known.
#[derive(Clone)]
pub(crate) struct Named {
    pub(crate) stream: RowStream,
    pub(crate) fields: Option<Vec<String>>,
}

/// The parts of a join condition.
pub(crate) struct OnParts {
    keys: Vec<(Expr, Expr)>,
    /// `DATEDIFF(unit, a, b) BETWEEN lo AND hi`: unit, a, b, lo, hi, where.
    datediff: Option<(TimeSpan, Ident, Ident, i64, i64, Pos)>,
    /// The conditions that are neither keys nor `DATEDIFF`.
    pub(crate) rest: Vec<Expr>,
}

/// What a node of the plan gives: its stream, the scope of its rows, their fields when known.
pub(crate) struct Built {
    pub(crate) stream: RowStream,
    pub(crate) scope: Scope,
    fields: Option<Vec<String>>,
    /// The sources whose events' times are the rows' times (a source's own rows; joined rows
    /// at the time of a source they hold, see [`Compiler::join`]): those a later join's
    /// `DATEDIFF` may name.
    timed: Vec<String>,
}

impl Built {
    /// A select's result: flat rows of `fields`.
    pub(crate) fn rows(stream: RowStream, fields: Option<Vec<String>>) -> Built {
        Built {
            stream,
            scope: Scope {
                sources: vec![(String::new(), fields.clone())],
                nested: false,
            },
            fields,
            timed: Vec::new(),
        }
    }
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
pub(crate) fn item_name(e: &Expr, alias: &Option<Ident>, n: usize) -> String {
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
    /// The name of the statement being built (a step's or an output's): its window is named
    /// so, as what the statement's results come from.
    pub(crate) label: std::cell::RefCell<String>,
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

    /// Builds every statement of `plan` in order (a step is read by those after it); gives
    /// each output's name and stream.
    pub(crate) fn plan(mut self, plan: &LogicalPlan) -> Result<Vec<(String, RowStream)>, SqlError> {
        let _ = self.text;
        let mut outputs: Vec<(String, RowStream)> = Vec::new();
        for s in &plan.statements {
            let name = &s.name;
            if !s.output && self.named.contains_key(&name.name) {
                return Err(err(
                    name.pos,
                    format!("`{}` is already an input or a step", name.name),
                ));
            }
            *self.label.borrow_mut() = name.name.clone();
            let built = self.node(&s.node)?;
            if s.output {
                outputs.push((name.name.clone(), built.stream));
                continue;
            }
            let named = Named {
                stream: built.stream.named(name.name.clone()),
                fields: built.fields,
            };
            self.named.insert(name.name.clone(), named);
        }
        Ok(outputs)
    }

    /// The operators of one node of the plan and of what it reads.
    fn node(&self, node: &Node) -> Result<Built, SqlError> {
        match node {
            Node::Source { name, alias, .. } => {
                let n = self.get(name)?;
                Ok(Built {
                    stream: n.stream,
                    scope: Scope {
                        sources: vec![(alias.clone(), n.fields.clone())],
                        nested: false,
                    },
                    fields: n.fields,
                    timed: vec![alias.clone()],
                })
            }
            Node::Filter {
                input, predicate, ..
            } => {
                let mut built = self.node(input)?;
                let c = compile(predicate, &built.scope, None, false)?;
                built.stream = Cond::new(c).filter(&built.stream);
                Ok(built)
            }
            Node::Join { .. } => {
                let (parts, scope, timed) = self.join(node)?;
                Ok(Built {
                    stream: parts.joined(),
                    scope,
                    fields: None,
                    timed,
                })
            }
            Node::FusedJoin {
                join,
                filter,
                items,
            } => self.fused(join, filter.as_ref(), items),
            Node::Apply {
                input,
                function,
                alias,
                outer,
            } => {
                let built = self.node(input)?;
                self.apply(built, function, alias, *outer)
            }
            Node::Recognize { input, spec } => {
                let built = self.node(input)?;
                self.recognize(built, spec)
            }
            Node::Project { input, items } => {
                let built = self.node(input)?;
                let (items, names) = self.plain_items(items, &built.scope, None)?;
                Ok(Built::rows(projection(items, &built.stream), names))
            }
            Node::Analytic {
                input,
                filter,
                items,
            } => {
                let built = self.node(input)?;
                self.analytic(built, filter.as_ref(), items)
            }
            Node::Group { input, select } => {
                let built = self.node(input)?;
                let n = self.grouped(select, &built.scope, built.stream)?;
                Ok(Built::rows(n.stream, n.fields))
            }
            Node::Union(nodes) => {
                let mut built = nodes
                    .iter()
                    .map(|n| self.node(n))
                    .collect::<Result<Vec<Built>, SqlError>>()?;
                let Some(first) = built.first() else {
                    return Err(err(Pos::default(), "a UNION of nothing"));
                };
                let rest: Vec<&RowStream> = built[1..].iter().map(|b| &b.stream).collect();
                let stream = first.stream.union(&rest);
                let fields = std::mem::take(&mut built[0].fields);
                Ok(Built::rows(stream, fields))
            }
        }
    }

    /// A join whose rows are the select's columns ([`Node::FusedJoin`]).
    fn fused(
        &self,
        join: &Node,
        filter: Option<&Expr>,
        items: &[SelectItem],
    ) -> Result<Built, SqlError> {
        let (parts, scope, _) = self.join(join)?;
        let filter = match filter {
            Some(w) => Some(compile(w, &scope, None, false)?),
            None => None,
        };
        let (items, names) = self.plain_items(items, &scope, None)?;
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
                let stream = parts.fused(filter, schema, columns);
                return Ok(Built::rows(stream, names));
            }
        }
        // (The rewrite fuses on the same terms; should they differ, the same rows come out
        // of a join, a filter and a select list.)
        let mut stream = parts.joined();
        if let Some(c) = filter {
            stream = Cond::new(c).filter(&stream);
        }
        Ok(Built::rows(projection(items, &stream), names))
    }

    /// A join of a plan ([`Node::Join`]): its parts, and the scope of every source of it.
    #[allow(
        clippy::type_complexity,
        reason = "the join, its scope, and its rows' timing"
    )]
    fn join(&self, node: &Node) -> Result<(JoinParts, Scope, Vec<String>), SqlError> {
        let Node::Join {
            left,
            right,
            on,
            outer,
            ..
        } = node
        else {
            return Err(err(Pos::default(), "a join of no sources"));
        };
        let left = self.node(left)?;
        let right_at = match &**right {
            Node::Source { name, .. } => name.clone(),
            Node::Filter { input, .. } => match &**input {
                Node::Source { name, .. } => name.clone(),
                _ => return Err(err(on.pos, "a join of a join")),
            },
            _ => return Err(err(on.pos, "a join of a join")),
        };
        let right = self.node(right)?;
        let rref = right.scope.sources[0].0.clone();
        let scope = &left.scope;
        if scope
            .sources
            .iter()
            .any(|(r, _)| r.eq_ignore_ascii_case(&rref))
        {
            return Err(err(
                right_at.pos,
                format!(
                    "`{rref}` is joined twice: give one an alias (`JOIN {} AS other`)",
                    right_at.name
                ),
            ));
        }
        let mut all = scope.sources.clone();
        all.push((rref.clone(), right.fields.clone()));
        let combined = Scope {
            sources: all,
            nested: true,
        };
        let count = scope.sources.len();
        let parts = on_parts(on, &combined, count)?;
        // The right side sorted: the join reads it in time order.
        let (mut left_stream, mut right_stream) = (left.stream, right.stream.ordered());
        // A left event without a partner (LEFT OUTER JOIN) is at its last tick plus this.
        let mut stamp = TimeSpan::ZERO;
        // Joined rows are at the time of the sources in `timed` (a DATEDIFF of 0 holds its
        // two sources at one time; without one the left's time stands).
        let mut timed = left.timed.clone();
        if let Some(dd) = &parts.datediff {
            let sides = DateDiffSides {
                combined: &combined,
                count,
                timed: &left.timed,
            };
            let right_timed;
            (left_stream, right_stream, stamp, right_timed) =
                datediff(dd, &sides, left_stream, right_stream)?;
            let (_, _, _, lo, hi, _) = dd;
            timed = match (right_timed, lo == hi && *lo == 0) {
                // Both at one time: the right's time is the left's.
                (_, true) => timed.into_iter().chain([rref.clone()]).collect(),
                // The right's points: the rows are at its time (an unmatched left row of an
                // outer join at another).
                (true, false) if *outer => Vec::new(),
                (true, false) => vec![rref.clone()],
                (false, false) => timed,
            };
        }
        let mut key_left = Vec::new();
        let mut key_right = Vec::new();
        for (l, r) in &parts.keys {
            key_left.push(compile(l, scope, None, false)?);
            key_right.push(compile(r, &right.scope, None, false)?);
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
                .map_err(|e| err(right_at.pos, e.to_string()))?,
            first: count == 1,
            outer: outer.then_some(stamp),
        };
        Ok((parts, combined, timed))
    }

    /// A plain select's columns, and their names when they are known.
    pub(crate) fn plain_items(
        &self,
        select: &[SelectItem],
        scope: &Scope,
        mut analytics: Option<&mut Grouping<'_>>,
    ) -> Result<(Vec<Item>, Option<Vec<String>>), SqlError> {
        let mut items: Vec<Item> = Vec::new();
        let mut names: Option<Vec<String>> = Some(Vec::new());
        for (n, item) in select.iter().enumerate() {
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
                SelectItem::QualifiedStar(path) => {
                    let source = match &path[..] {
                        [one] => scope
                            .sources
                            .iter()
                            .find(|(r, _)| r.eq_ignore_ascii_case(&one.name)),
                        _ => None,
                    };
                    match source {
                        // `source.*`: the source's fields.
                        Some((r, fields)) => {
                            items.push(Item::Spread(
                                scope.nested.then(|| E::Field(crate::eval::path([r]))),
                            ));
                            match (&mut names, fields) {
                                (Some(ns), Some(f)) => ns.extend(f.iter().cloned()),
                                _ => names = None,
                            }
                        }
                        // `path.*`: the fields of the record there, known as rows come.
                        None => {
                            items.push(Item::Record(scope.column(path)?));
                            names = None;
                        }
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
                        compile(e, scope, analytics.as_deref_mut(), true)?,
                    ));
                }
            }
        }
        Ok((items, names))
    }
}

/// A join's condition in parts: the keys (equalities between a field of the sources so far,
/// `left_count` of them, and one of the joined source), `DATEDIFF`, the rest.
pub(crate) fn on_parts(
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
                let left_only = |v: &[usize]| !v.is_empty() && v.iter().all(|&i| i < left_count);
                let right_only = |v: &[usize]| !v.is_empty() && v.iter().all(|&i| i == left_count);
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

fn push_name(names: &mut Option<Vec<String>>, name: Option<String>) {
    match (names.as_mut(), name) {
        (Some(ns), Some(n)) => ns.push(n),
        _ => *names = None,
    }
}
