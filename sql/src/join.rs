//! A join of the query language as the temporal join operator: its keys, its other
//! conditions, and what it makes of each pair (a joined row, or the select's result at once).

use std::sync::Arc;

use punctual_core::ops::{Join, Stream};
use punctual_core::{Ordered, Row, Schema, Time, Value};

use crate::compile::GroupKey;
use crate::eval::{truthy, Ctx, E};

/// One join, compiled, before its operator is made.
pub(crate) struct JoinParts {
    /// The two streams (already shifted for `DATEDIFF`).
    pub(crate) left: Stream<Row>,
    pub(crate) right: Stream<Row>,
    /// The equalities' sides: the left's, the right's.
    pub(crate) keys: [Vec<E>; 2],
    /// The other conditions, over the joined row.
    pub(crate) rest: Vec<E>,
    /// The left source's name (the first join) and the right's.
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
                .all(|c| truthy(&c.eval(Ctx::row(&row, Time::NEG_INF))))
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
            let keep = rest.iter().chain(&filter).all(|c| truthy(&c.eval(cx)));
            keep.then(|| schema.row(columns.iter().map(|c| c.with(cx, Value::clone))))
        })
    }
}

/// The temporal join of `left` and `right` on their keys' values, `combine` making each
/// pair's result (or none).
fn join(
    left: Stream<Row>,
    right: Stream<Row>,
    kl: Vec<E>,
    kr: Vec<E>,
    combine: impl Fn(&Row, &Row) -> Option<Row> + Clone + Send + 'static,
) -> Stream<Row> {
    left.apply_binary(
        &right,
        Join::<_, _, _, _, _, _, _, Ordered>::new(key_of(kl, 0), key_of(kr, 1), combine),
    )
}

/// A side's join key: its equalities' values. A key with a `NULL` matches nothing: such rows
/// get a key of their side alone.
fn key_of(keys: Vec<E>, side: u8) -> impl Fn(&Row) -> (u8, GroupKey) + Clone {
    move |r: &Row| {
        let cx = Ctx::row(r, Time::NEG_INF);
        let key = match &keys[..] {
            [one] => GroupKey::One(one.eval(cx)),
            many => GroupKey::Many(many.iter().map(|k| k.eval(cx)).collect()),
        };
        let null = match &key {
            GroupKey::One(v) => matches!(v, Value::Null),
            GroupKey::Many(vs) => vs.iter().any(|v| matches!(v, Value::Null)),
        };
        if null {
            (side, GroupKey::Many(Vec::new()))
        } else {
            (2, key)
        }
    }
}
