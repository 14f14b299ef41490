//! A join of the query language as the temporal join operator: its keys, its other
//! conditions, and what it makes of each pair (a joined row, or the select's result at once).

use std::sync::Arc;

use punctual_core::ops::{Join, Stream};
use punctual_core::{Ordered, Row, Schema, Time, Value};

use crate::eval::{Ctx, E};

/// One join, compiled, before its operator is made.
pub(crate) struct JoinParts {
    /// The two streams (already shifted for `DATEDIFF`).
    pub(crate) left: Stream<Row>,
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
}

impl JoinParts {
    /// The join whose results are joined rows: each source's record under its name (a later
    /// join adds its source to the left's joined row).
    pub(crate) fn joined(self) -> Stream<Row> {
        let JoinParts {
            left,
            right,
            keys: [kl, kr],
            rest,
            names: [_, rname],
            pair,
            first,
        } = self;
        join(left, right, kl, kr, move |a, b| {
            let row = if first {
                pair.row([Value::from(a.clone()), Value::from(b.clone())])
            } else {
                a.clone().with(&rname, Value::from(b.clone()))
            };
            rest.iter()
                .all(|c| c.holds(&Ctx::row(&row, Time::NEG_INF)))
                .then_some(row)
        })
    }

    /// Whether the select's `WHERE` and columns can be evaluated on each pair as it is
    /// found, without a joined row: the first and only join, every expression reading fields
    /// of the sources (not a whole record, nor the time).
    pub(crate) fn fuses(&self, filter: Option<&E>, columns: &[E]) -> bool {
        self.first
            && self.rest.iter().all(E::reads_pairs)
            && filter.is_none_or(E::reads_pairs)
            && columns.iter().all(E::reads_pairs)
    }

    /// The join whose results are the select's rows (see [`JoinParts::fuses`]): each pair
    /// that meets the other conditions and `filter` gives `columns`, named by `schema`.
    pub(crate) fn fused(self, filter: Option<E>, schema: Schema, columns: Vec<E>) -> Stream<Row> {
        let JoinParts {
            left,
            right,
            keys: [kl, kr],
            rest,
            names,
            ..
        } = self;
        let empty = Row::new();
        join(left, right, kl, kr, move |a, b| {
            let cx = Ctx::pair(&names, [a, b], &empty);
            let keep = rest.iter().chain(&filter).all(|c| c.holds(&cx));
            keep.then(|| schema.row(columns.iter().map(|c| c.with(&cx, Value::clone))))
        })
    }
}

/// The temporal join of `left` and `right` on their keys' values, `combine` making each
/// pair's result (or none). A key with a `NULL` matches nothing: such rows are left out before
/// the join. One key is that value (an integer key is found by indexing the join's table, as
/// in a typed query), several a vector.
fn join<C>(left: Stream<Row>, right: Stream<Row>, kl: Vec<E>, kr: Vec<E>, combine: C) -> Stream<Row>
where
    C: Fn(&Row, &Row) -> Option<Row> + Clone + Send + 'static,
{
    let (left, right) = (without_null_keys(left, &kl), without_null_keys(right, &kr));
    match (&kl[..], &kr[..]) {
        ([l], [r]) => {
            let (l, r) = (l.clone(), r.clone());
            let key = |e: E| move |row: &Row| e.with(&Ctx::row(row, Time::NEG_INF), Value::clone);
            left.apply_binary(
                &right,
                Join::<_, _, _, _, _, _, _, Ordered>::new(key(l), key(r), combine),
            )
        }
        _ => {
            let key = |keys: Vec<E>| {
                move |row: &Row| {
                    let cx = Ctx::row(row, Time::NEG_INF);
                    keys.iter().map(|k| k.eval(&cx)).collect::<Vec<Value>>()
                }
            };
            left.apply_binary(
                &right,
                Join::<_, _, _, _, _, _, _, Ordered>::new(key(kl), key(kr), combine),
            )
        }
    }
}

/// The stream without the rows whose key has a `NULL` (as it is when the join has no key).
fn without_null_keys(stream: Stream<Row>, keys: &[E]) -> Stream<Row> {
    if keys.is_empty() {
        return stream;
    }
    let keys = keys.to_vec();
    stream.filter(move |row: &Row| {
        let cx = Ctx::row(row, Time::NEG_INF);
        keys.iter()
            .all(|k| !k.with(&cx, |v| matches!(v, Value::Null)))
    })
}
