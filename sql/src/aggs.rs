//! The aggregates of a grouped query: `COUNT(*)`, `COUNT`, `SUM`, `AVG`, `MIN`, `MAX`,
//! `TopOne() OVER (ORDER BY ...)`, over expressions of each member.

use punctual_core::ops::{compare_values, Aggregate};
use punctual_core::{Row, Schema, Value};

use crate::row_expr::RowExpr;

/// One aggregate of a query.
#[derive(Clone, Debug)]
// A tag of its own (not a niche in the expression's): one load to tell the aggregate.
#[repr(u8)]
pub(crate) enum AggFn {
    CountStar,
    Count(RowExpr),
    Sum(RowExpr),
    Avg(RowExpr),
    Min(RowExpr),
    Max(RowExpr),
    /// The member first by the order (descending if `true`), as a record.
    TopOne(RowExpr, bool),
    /// The first `k` members by the order, as a list of `{rank, value}` records.
    CollectTop(usize, RowExpr, bool),
}

impl AggFn {
    /// Whether `name` is an aggregate (any case).
    pub(crate) fn is_aggregate(name: &str) -> bool {
        matches!(
            name.to_ascii_lowercase().as_str(),
            "count" | "sum" | "avg" | "min" | "max" | "topone" | "collecttop"
        )
    }
}

/// The running state of one aggregate.
#[derive(Clone, Debug)]
pub(crate) enum AggState {
    Count(u64),
    /// Integer sum, float sum, whether every value was an integer (and the sum fits), count.
    Sum(i64, f64, bool, u64),
    Avg(f64, u64),
    Extremum(Option<Value>),
    Top(Option<Box<(Value, Row)>>),
    /// The first members so far, in order.
    Tops(Vec<(Value, Row)>),
}

/// The states of a query's aggregates: the first two inline (kept in the window's table with
/// the group, not behind a pointer per group), the others in a vector.
#[derive(Clone, Debug)]
pub(crate) struct AggStates {
    head: [AggState; 2],
    tail: Vec<AggState>,
}

impl AggStates {
    fn iter(&self) -> impl Iterator<Item = &AggState> {
        self.head.iter().chain(&self.tail)
    }
}

/// A grouped query's aggregates, computed together; their results are a row of one value
/// per aggregate, by position (inline, with no allocation, for up to two).
#[derive(Clone, Debug)]
pub(crate) struct SqlAggs {
    fns: Vec<AggFn>,
    slots: Schema,
    /// The states of a new group, made once (a group's states start as a copy).
    empty: AggStates,
}

impl SqlAggs {
    pub(crate) fn new(fns: Vec<AggFn>) -> SqlAggs {
        let mut states = fns.iter().map(|f| match f {
            AggFn::CountStar | AggFn::Count(_) => AggState::Count(0),
            AggFn::Sum(_) => AggState::Sum(0, 0.0, true, 0),
            AggFn::Avg(_) => AggState::Avg(0.0, 0),
            AggFn::Min(_) | AggFn::Max(_) => AggState::Extremum(None),
            AggFn::TopOne(..) => AggState::Top(None),
            AggFn::CollectTop(..) => AggState::Tops(Vec::new()),
        });
        // Slots past the aggregates are never read (every use zips with them).
        let mut next = || states.next().unwrap_or(AggState::Count(0));
        let head = [next(), next()];
        let empty = AggStates {
            head,
            tail: states.collect(),
        };
        SqlAggs {
            slots: slots(fns.len()),
            fns,
            empty,
        }
    }
}

/// The schema of `n` values read by position only: their names are their positions.
pub(crate) fn slots(n: usize) -> Schema {
    Schema::new((0..n).map(|i| i.to_string())).unwrap_or_else(|_| Schema::empty())
}

/// What a value adds to a sum: an integer, a float, or nothing.
fn sum_term(v: &Value) -> Option<Result<i64, f64>> {
    match *v {
        Value::Int(i) => Some(Ok(i)),
        Value::Float(f) => Some(Err(f)),
        _ => None,
    }
}

/// Adds `row` to one aggregate's state.
#[inline(always)]
fn add_one(f: &AggFn, st: &mut AggState, row: &Row) {
    match (f, st) {
        (AggFn::CountStar, AggState::Count(n)) => *n += 1,
        (AggFn::Count(e), AggState::Count(n)) if !e.with(row, |v| matches!(v, Value::Null)) => {
            *n += 1;
        }
        (AggFn::Sum(e), AggState::Sum(i, x, all_int, n)) => match e.with(row, sum_term) {
            Some(Ok(v)) => {
                *x += v as f64;
                *n += 1;
                match i.checked_add(v) {
                    Some(s) => *i = s,
                    None => *all_int = false,
                }
            }
            Some(Err(v)) => {
                *x += v;
                *n += 1;
                *all_int = false;
            }
            None => {}
        },
        (AggFn::Avg(e), AggState::Avg(x, n)) => {
            if let Some(v) = e.with(row, Value::as_f64) {
                *x += v;
                *n += 1;
            }
        }
        (AggFn::Min(e) | AggFn::Max(e), AggState::Extremum(cur)) => e.with(row, |v| {
            if matches!(v, Value::Null) {
                return;
            }
            let min = matches!(f, AggFn::Min(_));
            let better = match cur {
                None => true,
                Some(c) => {
                    compare_values(v, c).is_some_and(|o| if min { o.is_lt() } else { o.is_gt() })
                }
            };
            if better {
                *cur = Some(v.clone());
            }
        }),
        (AggFn::TopOne(e, desc), AggState::Top(cur)) => e.with(row, |v| {
            let better =
                match cur {
                    None => true,
                    // Ties keep the first member.
                    Some(top) => compare_values(v, &top.0).is_some_and(|o| {
                        if *desc {
                            o.is_gt()
                        } else {
                            o.is_lt()
                        }
                    }),
                };
            if better {
                *cur = Some(Box::new((v.clone(), row.clone())));
            }
        }),
        (AggFn::CollectTop(k, e, desc), AggState::Tops(tops)) => e.with(row, |v| {
            // After every member it comes after (ties keep the first first).
            let at = tops.partition_point(|(c, _)| {
                compare_values(v, c).is_none_or(|o| if *desc { o.is_le() } else { o.is_ge() })
            });
            if at < *k {
                tops.insert(at, (v.clone(), row.clone()));
                tops.truncate(*k);
            }
        }),
        _ => {}
    }
}

impl Aggregate<Row> for SqlAggs {
    type State = AggStates;
    type Output = Row;

    fn init(&self) -> AggStates {
        self.empty.clone()
    }

    fn add(&self, state: &mut AggStates, row: &Row) {
        // Unrolled for the usual one or two aggregates (a loop over the head and the tail
        // cost more per row than the aggregates themselves).
        match (&self.fns[..], &mut state.head) {
            ([f], [a, _]) => add_one(f, a, row),
            ([f, g], [a, b]) => {
                add_one(f, a, row);
                add_one(g, b, row);
            }
            (fns, head) => {
                let (first, rest) = fns.split_at(fns.len().min(2));
                for (f, st) in first.iter().zip(head) {
                    add_one(f, st, row);
                }
                for (f, st) in rest.iter().zip(&mut state.tail) {
                    add_one(f, st, row);
                }
            }
        }
    }

    fn result(&self, state: &AggStates) -> Row {
        self.slots
            .row(self.fns.iter().zip(state.iter()).map(|(_, st)| {
                match st {
                    AggState::Count(n) => Value::Int(i64::try_from(*n).unwrap_or(i64::MAX)),
                    AggState::Sum(_, _, _, 0) => Value::Null,
                    AggState::Sum(i, _, true, _) => Value::Int(*i),
                    AggState::Sum(_, x, false, _) => Value::Float(*x),
                    AggState::Avg(_, 0) => Value::Null,
                    AggState::Avg(x, n) => Value::Float(*x / *n as f64),
                    AggState::Extremum(v) => v.clone().unwrap_or(Value::Null),
                    AggState::Top(v) => v
                        .as_ref()
                        .map_or(Value::Null, |top| Value::from(top.1.clone())),
                    AggState::Tops(tops) => Value::from(
                        tops.iter()
                            .enumerate()
                            .map(|(i, (_, r))| {
                                Value::from(
                                    Row::new()
                                        .with("rank", Value::Int(i as i64 + 1))
                                        .with("value", Value::from(r.clone())),
                                )
                            })
                            .collect::<Vec<_>>(),
                    ),
                }
            }))
    }
}
