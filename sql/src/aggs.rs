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

/// The running state of a `COUNT`, `SUM` or `AVG`: the same few numbers for each, so that
/// adding a member matches on the aggregate only.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Acc {
    /// Integer sum (while `all_int`).
    int: i64,
    /// Float sum.
    float: f64,
    /// Members counted (`COUNT`) or summed (`SUM`, `AVG`: not `NULL`, numbers).
    n: u64,
    /// A float was summed, or the integer sum overflowed: the sum is `float`.
    not_int: bool,
}

/// One of the first two `COUNT`, `SUM` or `AVG` of a query, kept as an [`Acc`].
#[derive(Clone, Debug)]
#[repr(u8)]
enum NumFn {
    /// No aggregate in this place.
    None,
    CountStar,
    Count(RowExpr),
    Sum(RowExpr),
    Avg(RowExpr),
}

/// Where an aggregate's state is: the `i`th of the numeric ones kept inline, or the `i`th of
/// the others.
#[derive(Clone, Copy, Debug)]
enum Place {
    Head(usize),
    Tail(usize),
}

/// The states of a query's aggregates: the first two `COUNT`, `SUM` or `AVG` as numbers
/// inline (kept in the window's table with the group, not behind a pointer, and added to
/// without a match on the state), the others as [`AggState`]s (none: no allocation).
#[derive(Clone, Debug)]
pub(crate) struct AggStates {
    head: [Acc; 2],
    tail: Option<Box<[AggState]>>,
}

/// A grouped query's aggregates, computed together; their results are a row of one value
/// per aggregate, by position (inline, with no allocation, for up to two).
#[derive(Clone, Debug)]
pub(crate) struct SqlAggs {
    head: [NumFn; 2],
    tail: Vec<AggFn>,
    /// Each aggregate's state, in the query's order.
    places: Vec<Place>,
    slots: Schema,
    /// The states of a new group, made once (a group's states start as a copy).
    empty: AggStates,
}

impl SqlAggs {
    pub(crate) fn new(fns: Vec<AggFn>) -> SqlAggs {
        let mut head = [NumFn::None, NumFn::None];
        let mut heads = 0;
        let mut tail = Vec::new();
        let mut places = Vec::with_capacity(fns.len());
        for f in fns {
            let num = match (&f, heads < head.len()) {
                (AggFn::CountStar, true) => NumFn::CountStar,
                (AggFn::Count(e), true) => NumFn::Count(e.clone()),
                (AggFn::Sum(e), true) => NumFn::Sum(e.clone()),
                (AggFn::Avg(e), true) => NumFn::Avg(e.clone()),
                _ => {
                    places.push(Place::Tail(tail.len()));
                    tail.push(f);
                    continue;
                }
            };
            head[heads] = num;
            places.push(Place::Head(heads));
            heads += 1;
        }
        let states: Vec<AggState> = tail
            .iter()
            .map(|f| match f {
                AggFn::CountStar | AggFn::Count(_) => AggState::Count(0),
                AggFn::Sum(_) => AggState::Sum(0, 0.0, true, 0),
                AggFn::Avg(_) => AggState::Avg(0.0, 0),
                AggFn::Min(_) | AggFn::Max(_) => AggState::Extremum(None),
                AggFn::TopOne(..) => AggState::Top(None),
                AggFn::CollectTop(..) => AggState::Tops(Vec::new()),
            })
            .collect();
        let empty = AggStates {
            head: [Acc::default(); 2],
            tail: (!states.is_empty()).then(|| states.into_boxed_slice()),
        };
        SqlAggs {
            slots: slots(places.len()),
            head,
            tail,
            places,
            empty,
        }
    }
}

impl Acc {
    /// Adds a number to the sum (anything else is left out).
    #[inline(always)]
    fn sum(&mut self, v: &Value) {
        match *v {
            Value::Int(i) => {
                self.float += i as f64;
                self.n += 1;
                match self.int.checked_add(i) {
                    Some(s) => self.int = s,
                    None => self.not_int = true,
                }
            }
            Value::Float(x) => {
                self.float += x;
                self.n += 1;
                self.not_int = true;
            }
            _ => {}
        }
    }
}

/// Adds `row` to one of the numeric aggregates.
#[inline(always)]
fn add_num(f: &NumFn, acc: &mut Acc, row: &Row) {
    match f {
        NumFn::None => {}
        NumFn::CountStar => acc.n += 1,
        NumFn::Count(e) => acc.n += u64::from(e.with(row, |v| !matches!(v, Value::Null))),
        NumFn::Sum(e) => e.with(row, |v| acc.sum(v)),
        NumFn::Avg(e) => {
            if let Some(v) = e.with(row, Value::as_f64) {
                acc.float += v;
                acc.n += 1;
            }
        }
    }
}

/// A numeric aggregate's result.
fn num_result(f: &NumFn, acc: &Acc) -> Value {
    match f {
        NumFn::None => Value::Null,
        NumFn::CountStar | NumFn::Count(_) => Value::Int(i64::try_from(acc.n).unwrap_or(i64::MAX)),
        NumFn::Sum(_) | NumFn::Avg(_) if acc.n == 0 => Value::Null,
        NumFn::Sum(_) if !acc.not_int => Value::Int(acc.int),
        NumFn::Sum(_) => Value::Float(acc.float),
        NumFn::Avg(_) => Value::Float(acc.float / acc.n as f64),
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

impl SqlAggs {
    /// Adds `row` to the aggregates kept as [`AggState`]s.
    #[inline(never)]
    fn add_tail(&self, states: &mut [AggState], row: &Row) {
        for (f, st) in self.tail.iter().zip(states) {
            add_one(f, st, row);
        }
    }
}

impl Aggregate<Row> for SqlAggs {
    type State = AggStates;
    type Output = Row;

    fn init(&self) -> AggStates {
        self.empty.clone()
    }

    #[inline(always)]
    fn add(&self, state: &mut AggStates, row: &Row) {
        let [f, g] = &self.head;
        let [a, b] = &mut state.head;
        add_num(f, a, row);
        add_num(g, b, row);
        if let Some(tail) = &mut state.tail {
            self.add_tail(tail, row);
        }
    }

    fn result(&self, state: &AggStates) -> Row {
        let tail = state.tail.as_deref().unwrap_or_default();
        self.slots.row(self.places.iter().map(|&place| match place {
            Place::Head(i) => num_result(&self.head[i], &state.head[i]),
            Place::Tail(i) => tail.get(i).map_or(Value::Null, tail_result),
        }))
    }
}

/// The result of an aggregate kept as an [`AggState`].
fn tail_result(st: &AggState) -> Value {
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
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::eval::{path, E};
    use crate::row_expr::RowExpr;

    /// The first two `COUNT`, `SUM` or `AVG` are kept as numbers, the rest as states: the
    /// same aggregate gives the same result either way, over integers, floats, `NULL`,
    /// text, a missing field, and a sum past `i64::MAX` (which becomes a float sum); and
    /// results come in the query's order whatever their place.
    #[test]
    fn numbers_inline_and_states_aside_give_the_same_results() {
        let v = || RowExpr::new(E::Field(path(["v"])));
        let numeric = || {
            [
                AggFn::Sum(v()),
                AggFn::Avg(v()),
                AggFn::Count(v()),
                AggFn::CountStar,
            ]
        };
        // Everything aside: a MIN first takes no inline place, and the inline places are
        // taken by the first two numeric ones of each list.
        let lists: Vec<Vec<AggFn>> = vec![
            numeric().into_iter().chain(numeric()).collect(),
            [AggFn::Min(v())]
                .into_iter()
                .chain(numeric())
                .chain(numeric())
                .collect(),
            numeric().into_iter().rev().chain(numeric()).collect(),
        ];
        let schema = Schema::new(["v", "w"]).unwrap();
        let other = Schema::new(["w"]).unwrap();
        let member_sets: Vec<Vec<Row>> = vec![
            vec![],
            vec![schema.row([Value::Int(3), Value::Null])],
            vec![
                schema.row([Value::Int(3), Value::Null]),
                schema.row([Value::Null, Value::Null]),
                schema.row([Value::Float(0.5), Value::Null]),
                schema.row([Value::from("x"), Value::Null]),
                other.row([Value::Int(1)]),
            ],
            vec![
                schema.row([Value::Int(i64::MAX), Value::Null]),
                schema.row([Value::Int(2), Value::Null]),
            ],
            vec![
                other.row([Value::Int(1)]),
                schema.row([Value::Int(-4), Value::Null]),
            ],
        ];
        for fns in lists {
            let aggs = SqlAggs::new(fns.clone());
            let heads = aggs
                .head
                .iter()
                .filter(|f| !matches!(f, NumFn::None))
                .count();
            assert_eq!(heads, 2);
            assert_eq!(aggs.tail.len(), fns.len() - 2);
            for members in &member_sets {
                let mut st = aggs.init();
                for m in members {
                    aggs.add(&mut st, m);
                }
                let got = aggs.result(&st);
                let got = got.values();
                assert_eq!(got.len(), fns.len());
                // Each aggregate aside (after two that take the inline places).
                for (i, f) in fns.iter().enumerate() {
                    let aside = SqlAggs::new(vec![AggFn::CountStar, AggFn::CountStar, f.clone()]);
                    assert_eq!(aside.tail.len(), 1);
                    let mut st = aside.init();
                    for m in members {
                        aside.add(&mut st, m);
                    }
                    let want = aside.result(&st).values()[2].clone();
                    let same = match (&got[i], &want) {
                        (Value::Int(a), Value::Int(b)) => a == b,
                        (Value::Float(a), Value::Float(b)) => a.to_bits() == b.to_bits(),
                        (Value::Null, Value::Null) => true,
                        _ => false,
                    };
                    assert!(same, "{f:?} over {members:?}: {:?}, aside {want:?}", got[i]);
                }
            }
        }
    }
}
