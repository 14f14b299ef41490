//! The aggregates of a grouped query: `COUNT(*)`, `COUNT`, `SUM`, `AVG`, `MIN`, `MAX`,
//! `TopOne() OVER (ORDER BY ...)`, over expressions of each member.

use punctual_core::ops::Aggregate;
use punctual_rows::compare_values;
use punctual_rows::{Row, Schema, Value};

use crate::row_expr::RowExpr;

/// One aggregate of a query.
#[derive(Clone, Debug)]
// A tag of its own (not a niche in the expression's): one load to tell the aggregate.
#[repr(u8)]
pub(crate) enum AggFn {
    /// `COUNT(*)`, `COUNT`, `SUM` or `AVG`.
    Num(NumFn),
    Min(RowExpr),
    Max(RowExpr),
    /// The member first by the order (descending if `true`), as a record.
    TopOne(RowExpr, bool),
    /// The first `k` members by the order, as a list of `{rank, value}` records.
    CollectTop(usize, RowExpr, bool),
    /// `COUNT(DISTINCT e)`: how many values of `e` that are not `NULL`, each once (equal
    /// numbers, `4` and `4.0`, once).
    CountDistinct(RowExpr),
    /// A registered aggregate (`uda.NAME(...)`) over its arguments' values.
    User(crate::functions::Uda, Vec<RowExpr>),
}

impl AggFn {
    /// Whether `name` is an aggregate (any case).
    pub(crate) fn is_aggregate(name: &str) -> bool {
        let lower = name.to_ascii_lowercase();
        lower.starts_with("uda.")
            || matches!(
                lower.as_str(),
                "count" | "sum" | "avg" | "min" | "max" | "topone" | "collecttop"
            )
    }
}

impl AggFn {
    /// The argument the rows are checked on before they are aggregated, if any, and whether
    /// it must be a number (`SUM`, `AVG`): one that may fail to compute, or any of theirs.
    pub(crate) fn checked_arg(&self) -> Option<(RowExpr, bool)> {
        match self {
            AggFn::Num(NumFn::Sum(e) | NumFn::Avg(e)) => Some((e.clone(), true)),
            AggFn::Num(NumFn::Count(e))
            | AggFn::Min(e)
            | AggFn::Max(e)
            | AggFn::TopOne(e, _)
            | AggFn::CollectTop(_, e, _)
            | AggFn::CountDistinct(e) => e.may_fault().then(|| (e.clone(), false)),
            AggFn::Num(NumFn::None | NumFn::CountStar) => None,
            // Its arguments are computed as the member is added; a fault there is the
            // aggregate's (its result is what the aggregate makes of a `NULL`).
            AggFn::User(..) => None,
        }
    }

    /// Whether its result may fail (a `SUM` of integers outside the `bigint` range).
    pub(crate) fn may_fail(&self) -> bool {
        matches!(self, AggFn::Num(NumFn::Sum(_)))
    }
}

/// The running state of one aggregate kept aside (see [`AggStates`]).
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub(crate) enum AggState {
    Num(Acc),
    Extremum(Option<Value>),
    Top(Option<Box<(Value, Row)>>),
    /// The first members so far, in order.
    Tops(Vec<(Value, Row)>),
    /// The values seen, each once.
    Distinct(std::collections::HashSet<Value>),
    /// A registered aggregate's state.
    User(Value),
}

/// The running state of a `COUNT`, `SUM` or `AVG`: the same few numbers for each, so that
/// adding a member matches on the aggregate only.
#[derive(Clone, Copy, Debug, Default, serde::Serialize, serde::Deserialize)]
pub(crate) struct Acc {
    /// Integer sum (while it fits).
    int: i64,
    /// Float sum.
    float: f64,
    /// Members counted (`COUNT`) or summed (`SUM`, `AVG`: not `NULL`, numbers).
    n: u64,
    /// A float was summed: the sum is `float`.
    float_seen: bool,
    /// The integer sum left the `bigint` range (a `SUM` of integers only then fails).
    overflow: bool,
}

/// A `COUNT`, `SUM` or `AVG`, whose state is an [`Acc`].
#[derive(Clone, Debug)]
#[repr(u8)]
pub(crate) enum NumFn {
    /// No aggregate (an inline place not taken).
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
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
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
            match f {
                AggFn::Num(num) if heads < head.len() => {
                    head[heads] = num;
                    places.push(Place::Head(heads));
                    heads += 1;
                }
                f => {
                    places.push(Place::Tail(tail.len()));
                    tail.push(f);
                }
            }
        }
        let states: Vec<AggState> = tail
            .iter()
            .map(|f| match f {
                AggFn::Num(_) => AggState::Num(Acc::default()),
                AggFn::Min(_) | AggFn::Max(_) => AggState::Extremum(None),
                AggFn::TopOne(..) => AggState::Top(None),
                AggFn::CollectTop(..) => AggState::Tops(Vec::new()),
                AggFn::CountDistinct(_) => AggState::Distinct(Default::default()),
                AggFn::User(uda, _) => AggState::User(uda.aggregate.init()),
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
                    None => self.overflow = true,
                }
            }
            Value::Float(x) => {
                self.float += x;
                self.n += 1;
                self.float_seen = true;
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
        NumFn::Sum(_) if acc.float_seen => Value::Float(acc.float),
        NumFn::Sum(_) if acc.overflow => {
            crate::limits::fault("a SUM of integers outside the bigint range");
            Value::Null
        }
        NumFn::Sum(_) => Value::Int(acc.int),
        NumFn::Avg(_) => Value::Float(acc.float / acc.n as f64),
    }
}

/// The schema of `n` values read by position only: their names are their positions.
pub(crate) fn slots(n: usize) -> Schema {
    Schema::new((0..n).map(|i| i.to_string())).unwrap_or_else(|_| Schema::empty())
}

/// Adds `row` to one aggregate's state.
#[inline(always)]
fn add_one(f: &AggFn, st: &mut AggState, row: &Row) {
    match (f, st) {
        (AggFn::Num(f), AggState::Num(acc)) => add_num(f, acc, row),
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
        (AggFn::CountDistinct(e), AggState::Distinct(seen)) => e.with(row, |v| {
            if !matches!(v, Value::Null) && !seen.contains(v) {
                seen.insert(v.clone());
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
        (AggFn::User(uda, args), AggState::User(state)) => {
            let values: Vec<Value> = args.iter().map(|a| a.eval(row)).collect();
            uda.aggregate.accumulate(state, &values);
        }
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

    /// The aggregates' results. A `SUM` that cannot be given (integers outside the `bigint`
    /// range) is `NULL` with a fault, which the group's select takes right after.
    #[inline]
    fn result(&self, state: &AggStates) -> Row {
        let _stale = crate::limits::take_fault();
        let tail = state.tail.as_deref().unwrap_or_default();
        self.slots.row(self.places.iter().map(|&place| match place {
            Place::Head(i) => num_result(&self.head[i], &state.head[i]),
            Place::Tail(i) => match (self.tail.get(i), tail.get(i)) {
                (Some(f), Some(st)) => tail_result(f, st),
                _ => Value::Null,
            },
        }))
    }
}

/// The result of an aggregate kept as an [`AggState`].
fn tail_result(f: &AggFn, st: &AggState) -> Value {
    match (f, st) {
        (AggFn::Num(f), AggState::Num(acc)) => num_result(f, acc),
        (_, AggState::Num(_)) => Value::Null,
        (AggFn::User(uda, _), AggState::User(state)) => uda.aggregate.result(state),
        (_, AggState::User(_)) => Value::Null,
        (_, AggState::Extremum(v)) => v.clone().unwrap_or(Value::Null),
        (_, AggState::Distinct(seen)) => Value::Int(i64::try_from(seen.len()).unwrap_or(i64::MAX)),
        (_, AggState::Top(v)) => v
            .as_ref()
            .map_or(Value::Null, |top| Value::from(top.1.clone())),
        (_, AggState::Tops(tops)) => Value::from(
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

    /// `SUM`, `AVG`, `COUNT(v)` and `COUNT(*)` of one set of members.
    type Want = [Value; 4];

    /// `COUNT`, `SUM` and `AVG` over integers, floats, `NULL`, text and a missing field, and a
    /// sum of integers past `i64::MAX` (`NULL` with a fault), give what the language says, whether
    /// the aggregate is kept inline (the first two) or aside, and in the query's order
    /// whatever their places.
    #[test]
    fn counts_sums_and_averages_inline_or_aside() {
        let v = || RowExpr::new(E::Field(path(["v"])));
        let numeric = || {
            [
                NumFn::Sum(v()),
                NumFn::Avg(v()),
                NumFn::Count(v()),
                NumFn::CountStar,
            ]
            .map(AggFn::Num)
        };
        let schema = Schema::new(["v", "w"]).unwrap();
        let other = Schema::new(["w"]).unwrap();
        let row = |x: Value| schema.row([x, Value::Null]);
        let (int, float) = (Value::Int, Value::Float);
        let cases: Vec<(Vec<Row>, Want)> = vec![
            (vec![], [Value::Null, Value::Null, int(0), int(0)]),
            (vec![row(int(3))], [int(3), float(3.0), int(1), int(1)]),
            (
                vec![
                    row(int(3)),
                    row(Value::Null),
                    row(float(0.5)),
                    row(Value::from("x")),
                    other.row([int(1)]),
                ],
                [float(3.5), float(1.75), int(3), int(5)],
            ),
            (
                vec![row(int(i64::MAX)), row(int(2))],
                [
                    Value::Null,
                    float((i64::MAX as f64 + 2.0) / 2.0),
                    int(2),
                    int(2),
                ],
            ),
            (
                vec![row(int(-4)), row(int(1))],
                [int(-3), float(-1.5), int(2), int(2)],
            ),
        ];
        // Inline places taken by the first two numeric aggregates of each list: Sum and Avg,
        // or (reversed) COUNT(*) and COUNT(v), or Sum and Avg after a MIN that stays aside.
        let lists: Vec<(Vec<AggFn>, Vec<usize>)> = vec![
            (
                numeric().into_iter().chain(numeric()).collect(),
                vec![0, 1, 2, 3, 0, 1, 2, 3],
            ),
            (
                numeric().into_iter().rev().chain(numeric()).collect(),
                vec![3, 2, 1, 0, 0, 1, 2, 3],
            ),
            (
                [AggFn::Min(v())].into_iter().chain(numeric()).collect(),
                vec![4, 0, 1, 2, 3],
            ),
        ];
        for (fns, which) in lists {
            let aggs = SqlAggs::new(fns.clone());
            let inline = aggs.head.iter().filter(|f| !matches!(f, NumFn::None));
            assert_eq!(inline.count(), 2);
            assert_eq!(aggs.tail.len(), fns.len() - 2);
            for (members, want) in &cases {
                let mut st = aggs.init();
                for m in members {
                    aggs.add(&mut st, m);
                }
                let _stale = crate::limits::take_fault();
                crate::limits::fault("a stale fault, cleared by the result");
                let got = aggs.result(&st);
                let overflow = members.first() == Some(&row(int(i64::MAX)));
                assert_eq!(
                    crate::limits::take_fault().as_deref(),
                    overflow.then_some("a SUM of integers outside the bigint range")
                );
                assert_eq!(got.values().len(), fns.len());
                for (got, &w) in got.values().iter().zip(&which) {
                    let same = match (got, want.get(w)) {
                        (Value::Int(a), Some(Value::Int(b))) => a == b,
                        (Value::Float(a), Some(Value::Float(b))) => a.to_bits() == b.to_bits(),
                        (Value::Null, Some(Value::Null)) => true,
                        // The MIN.
                        (_, None) => true,
                        _ => false,
                    };
                    assert!(same, "{members:?}: {got:?}, not {:?}", want.get(w));
                }
            }
        }
    }
}
