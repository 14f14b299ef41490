//! A join of the query language as the temporal join operator: its keys, its other
//! conditions, and what it makes of each pair (a joined row, or the select's result at once).

use std::sync::Arc;

use punctual_core::ops::{AnyStream, Payload, Stream};
use punctual_core::{Time, TimeSpan};
use punctual_rows::{Row, Schema, Value};

use crate::eval::{Ctx, E};
use crate::row_expr::{PairExpr, RowExpr};
use crate::stream::Rows;
use crate::RowStream;

/// One join, compiled, before its operator is made.
pub(crate) struct JoinParts {
    /// The two streams (already shifted for `DATEDIFF`): the left in either order, the
    /// right sorted.
    pub(crate) left: RowStream,
    pub(crate) right: Stream<Row>,
    /// The equalities' sides: the left's, the right's.
    pub(crate) keys: [Vec<E>; 2],
    /// The other conditions, over the joined row.
    pub(crate) rest: Vec<E>,
    /// The left source's name (the first join) and the right's: the shared names the
    /// compiled expressions' paths start with (compared by pointer first).
    pub(crate) names: [Arc<str>; 2],
    /// The joined row's schema (of the first join): the two names.
    pub(crate) pair: Schema,
    /// Whether the left stream is a source's (the first join), not joined rows.
    pub(crate) first: bool,
    /// `LEFT [OUTER] JOIN`: what is added to a left event's last tick to give the time of
    /// its result without a partner ([`crate::outer_join::Unmatched::stamp`]).
    pub(crate) outer: Option<TimeSpan>,
}

impl JoinParts {
    /// The join whose results are joined rows: each source's record under its name (a later
    /// join adds its source to the left's joined row).
    pub(crate) fn joined(self) -> RowStream {
        if self.outer.is_some() {
            return self.left_outer();
        }
        let JoinParts {
            left,
            right,
            keys: [kl, kr],
            rest,
            names: [_, rname],
            pair,
            first,
            ..
        } = self;
        let fallible = rest.iter().any(E::may_fault);
        let with_right = joined_row(first, pair, rname);
        let joined_row = move |a: &Row, b: &Row| with_right(a, Value::from(b.clone()));
        let holds = move |row: &Row| rest.iter().all(|c| c.holds(&Ctx::row(row, Time::NEG_INF)));
        if fallible {
            // A pair whose conditions cannot be computed is dropped with the reason.
            return RowStream::kept_ok(join(left, right, kl, kr, move |a, b| {
                let row = joined_row(a, b);
                match crate::limits::checked("its join conditions", || holds(&row)) {
                    Ok(keep) => keep.then_some(Ok(row)),
                    Err(why) => Some(Err(why)),
                }
            }));
        }
        join(left, right, kl, kr, move |a, b| {
            let row = joined_row(a, b);
            holds(&row).then_some(row)
        })
    }

    /// A `LEFT [OUTER] JOIN`: the joined rows of every pair, and each left event without a
    /// partner with `NULL` for the right source ([`crate::outer_join`]). A pair whose other
    /// conditions cannot be computed is dropped with the reason, and partners nothing.
    fn left_outer(self) -> RowStream {
        let JoinParts {
            left,
            right,
            keys: [kl, kr],
            rest,
            names: [_, rname],
            pair,
            first,
            outer,
        } = self;
        let joined_row = joined_row(first, pair, rname);
        let holds = {
            let joined_row = joined_row.clone();
            move |a: &Row, b: &Row| {
                let row = joined_row(a, Value::from(b.clone()));
                crate::limits::checked("its join conditions", || {
                    rest.iter().all(|c| c.holds(&Ctx::row(&row, Time::NEG_INF)))
                })
            }
        };
        let (left, right) = gated(left, right, &kl, &kr);
        let kl: Vec<RowExpr> = kl.into_iter().map(RowExpr::new).collect();
        let kr: Vec<RowExpr> = kr.into_iter().map(RowExpr::new).collect();
        let pairs = {
            let (joined_row, holds) = (joined_row.clone(), holds.clone());
            RowStream::kept_ok(join_gated(
                &left,
                &right,
                kl.clone(),
                kr.clone(),
                move |a: &Row, b: &Row| match holds(a, b) {
                    Ok(true) => Some(Ok(joined_row(a, Value::from(b.clone())))),
                    Ok(false) => None,
                    Err(why) => Some(Err(why)),
                },
            ))
        };
        let alone = crate::outer_join::unmatched(
            (left, right),
            (kl, kr),
            move |a, b| holds(a, b).unwrap_or(false),
            move |a| joined_row(a, Value::Null),
            outer.unwrap_or(TimeSpan::ZERO),
        );
        pairs.union(&[&alone])
    }

    /// Whether the select's `WHERE` and columns can be evaluated on each pair as it is
    /// found, without a joined row: the first and only join (an inner one), every expression
    /// reading fields of the sources (not a whole record, nor the time).
    pub(crate) fn fuses(&self, filter: Option<&E>, columns: &[E]) -> bool {
        self.outer.is_none()
            && self.first
            && self.rest.iter().all(E::reads_pairs)
            && filter.is_none_or(E::reads_pairs)
            && columns.iter().all(E::reads_pairs)
    }

    /// The join whose results are the select's rows (see [`JoinParts::fuses`]): each pair
    /// that meets the other conditions and `filter` gives `columns`, named by `schema`.
    pub(crate) fn fused(self, filter: Option<E>, schema: Schema, columns: Vec<E>) -> RowStream {
        let JoinParts {
            left,
            right,
            keys: [kl, kr],
            rest,
            names,
            ..
        } = self;
        let empty = Row::new();
        let fallible = rest.iter().chain(&filter).chain(&columns).any(E::may_fault);
        // One list of the conditions (a chain of two was walked for every pair).
        let conditions: Vec<PairExpr> = rest
            .into_iter()
            .chain(filter)
            .map(|c| PairExpr::new(c, &names))
            .collect();
        let columns: Vec<PairExpr> = columns
            .into_iter()
            .map(|c| PairExpr::new(c, &names))
            .collect();
        if fallible {
            // A pair whose conditions or columns cannot be computed gives a row of its own
            // schema holding the reason (as small as a result, in the join's output as one),
            // which the filter after the join drops with the reason.
            let failed = Schema::new(["\u{0}why"]).unwrap_or_else(|_| Schema::empty());
            let why = failed.clone();
            // Every place a fault can be recorded takes it, so none is left over before a
            // pair: one look at the fault slot after each step.
            let made: RowStream = join(left, right, kl, kr, move |a, b| {
                let (rows, cx) = ([a, b], Ctx::pair(&names, [a, b], &empty));
                let keep = conditions.iter().all(|c| c.holds(rows, &cx));
                if let Some(why) = crate::limits::take_fault() {
                    return Some(failed_row(&failed, "its join conditions", &why));
                }
                if !keep {
                    return None;
                }
                let row = schema.row(columns.iter().map(|c| c.value(rows, &cx)));
                Some(match crate::limits::take_fault() {
                    None => row,
                    Some(why) => failed_row(&failed, "its select list", &why),
                })
            });
            return made.try_filter(move |r| {
                if !r.schema().same(&why) {
                    return Ok(true);
                }
                Err(r
                    .values()
                    .first()
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_owned())
            });
        }
        join(left, right, kl, kr, move |a, b| {
            let (rows, cx) = ([a, b], Ctx::pair(&names, [a, b], &empty));
            let keep = conditions.iter().all(|c| c.holds(rows, &cx));
            // Each value is taken as the row is built (its function is out of line and
            // returns through memory: built first, into an array, each was copied before
            // its stores settled).
            keep.then(|| schema.row(columns.iter().map(|c| c.value(rows, &cx))))
        })
    }
}

/// The joined row of a left row and the right source's value (its record, or `NULL`): the
/// pair's record under the two sources' names (`first`, the first join), or the left's joined
/// row with the right's record added under its name.
fn joined_row(
    first: bool,
    pair: Schema,
    rname: Arc<str>,
) -> impl Fn(&Row, Value) -> Row + Clone + Send + 'static {
    move |a: &Row, b: Value| {
        if first {
            pair.row([Value::from(a.clone()), b])
        } else {
            a.clone().with(&rname, b)
        }
    }
}

/// The row of `failed`'s schema that stands for a pair whose `what` cannot be computed.
#[cold]
#[inline(never)]
fn failed_row(failed: &Schema, what: &str, why: &str) -> Row {
    failed.row([Value::from(format!("{what} cannot be computed: {why}"))])
}

/// The temporal join of `left` and `right` on their keys' values, `combine` making each
/// pair's result (or none). A key with a `NULL` matches nothing: the right's rows with one
/// are left out before the join. One key is that value (an integer key is found by indexing
/// the join's table, as in a typed query), several a vector. The results are in `left`'s
/// order.
fn join<C, Out>(
    left: RowStream,
    right: Stream<Row>,
    kl: Vec<E>,
    kr: Vec<E>,
    combine: C,
) -> AnyStream<Out>
where
    C: Fn(&Row, &Row) -> Option<Out> + Clone + Send + 'static,
    Out: Payload,
{
    let (left, right) = gated(left, right, &kl, &kr);
    let kl: Vec<RowExpr> = kl.into_iter().map(RowExpr::new).collect();
    let kr: Vec<RowExpr> = kr.into_iter().map(RowExpr::new).collect();
    join_gated(&left, &right, kl, kr, combine)
}

/// The two sides of a join as it reads them: without the rows whose keys cannot be computed
/// (dropped with the reason), and the right without the rows with a `NULL` key (a left row
/// with one then finds no match: keys are equal only to keys without a `NULL`), so the left,
/// often the fast stream, is not filtered.
fn gated(left: RowStream, right: Stream<Row>, kl: &[E], kr: &[E]) -> (RowStream, Stream<Row>) {
    let left = match key_gate(kl) {
        Some(gate) => left.try_filter(gate),
        None => left,
    };
    let right = match key_gate(kr) {
        Some(gate) => right.try_filter(gate),
        None => right,
    };
    if kr.is_empty() {
        return (left, right);
    }
    let keys: Vec<RowExpr> = kr.iter().cloned().map(RowExpr::new).collect();
    (left, right.filter(move |row| has_no_null(row, &keys)))
}

/// [`join`] of sides already [`gated`].
fn join_gated<C, Out>(
    left: &RowStream,
    right: &Stream<Row>,
    kl: Vec<RowExpr>,
    kr: Vec<RowExpr>,
    combine: C,
) -> AnyStream<Out>
where
    C: Fn(&Row, &Row) -> Option<Out> + Clone + Send + 'static,
    Out: Payload,
{
    match (&kl[..], &kr[..]) {
        ([l], [r]) => {
            let (l, r) = (l.clone(), r.clone());
            let key = |e: RowExpr| move |row: &Row| e.with(row, Value::clone);
            left.join(right, key(l), key(r), combine)
        }
        _ => {
            let key = |keys: Vec<RowExpr>| {
                move |row: &Row| keys.iter().map(|k| k.eval(row)).collect::<Vec<Value>>()
            };
            left.join(right, key(kl), key(kr), combine)
        }
    }
}

/// A check of a side's join `keys`, when one may fail to compute: a row whose keys cannot
/// be computed is refused with the reason.
fn key_gate(keys: &[E]) -> Option<impl Fn(&Row) -> Result<bool, String> + Send + 'static> {
    let keys: Vec<RowExpr> = keys
        .iter()
        .filter(|k| k.may_fault())
        .map(|k| RowExpr::new(k.clone()))
        .collect();
    if keys.is_empty() {
        return None;
    }
    Some(move |row: &Row| {
        crate::limits::checked("its join keys", || {
            for k in &keys {
                k.with(row, |_| ());
            }
            true
        })
    })
}

/// Whether none of the row's `keys` is `NULL` (a row with one is left out before the join).
fn has_no_null(row: &Row, keys: &[RowExpr]) -> bool {
    let null = |k: &RowExpr| k.with(row, |v| matches!(v, Value::Null));
    match keys {
        [k] => !null(k),
        keys => !keys.iter().any(null),
    }
}
