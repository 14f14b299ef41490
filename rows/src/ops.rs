//! The untyped forms of the operators, over [`Row`] payloads whose fields are named in
//! configuration (the CLI and the conformance cases): a field comparison for filters, and
//! aggregates over named fields whose results are written back into a row.
//!
//! ```
//! use punctual_core::ops::Aggregate;
//! use punctual_rows::{Cmp, Row, RowAggFn, RowAggregates, RowPredicate, Value};
//! let hot = RowPredicate::new("t", Cmp::Gt, Value::Int(20));
//! assert!(hot.eval(&Row::new().with("t", 21.5)));
//! let aggs = RowAggregates::new(vec![
//!     (RowAggFn::Sum, Some("t".into()), "total".into()),
//!     (RowAggFn::Count, None, "n".into()),
//! ]);
//! let mut s = aggs.init();
//! aggs.add(&mut s, &Row::new().with("t", 1i64));
//! aggs.add(&mut s, &Row::new().with("t", 3i64));
//! let out = Row::new().with_all(aggs.result(&s));
//! assert_eq!(out, Row::new().with("total", 4i64).with("n", 2i64));
//! ```

use std::cmp::Ordering;

use punctual_core::ops::Aggregate;

use crate::{Row, Value};

/// A comparison operator.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cmp {
    /// `==`
    Eq,
    /// `!=`
    Ne,
    /// `<`
    Lt,
    /// `<=`
    Le,
    /// `>`
    Gt,
    /// `>=`
    Ge,
}

impl Cmp {
    /// Parses `==`, `!=`, `<`, `<=`, `>`, `>=`.
    pub fn parse(text: &str) -> Option<Cmp> {
        Some(match text {
            "==" => Cmp::Eq,
            "!=" => Cmp::Ne,
            "<" => Cmp::Lt,
            "<=" => Cmp::Le,
            ">" => Cmp::Gt,
            ">=" => Cmp::Ge,
            _ => return None,
        })
    }
}

/// Orders two values: numbers by value, strings by text, booleans false < true; `None` when
/// they cannot be ordered (different kinds, `NaN`).
pub fn compare_values(a: &Value, b: &Value) -> Option<Ordering> {
    match (a, b) {
        (Value::Str(x), Value::Str(y)) => Some(x.cmp(y)),
        (Value::Bool(x), Value::Bool(y)) => Some(x.cmp(y)),
        (Value::Int(x), Value::Int(y)) => Some(x.cmp(y)),
        _ => a.as_f64()?.partial_cmp(&b.as_f64()?),
    }
}

/// `row[field] cmp value`; a missing field or values that cannot be compared make it false
/// (except `!=`, which is true for values that differ).
#[derive(Clone, Debug, PartialEq)]
pub struct RowPredicate {
    field: String,
    cmp: Cmp,
    value: Value,
}

impl RowPredicate {
    /// The predicate `row[field] cmp value`.
    pub fn new(field: impl Into<String>, cmp: Cmp, value: Value) -> Self {
        RowPredicate {
            field: field.into(),
            cmp,
            value,
        }
    }

    /// Evaluates it on a row.
    pub fn eval(&self, row: &Row) -> bool {
        let Some(v) = row.get(&self.field) else {
            return false;
        };
        match self.cmp {
            Cmp::Eq => *v == self.value,
            Cmp::Ne => *v != self.value,
            cmp => match compare_values(v, &self.value) {
                Some(o) => match cmp {
                    Cmp::Lt => o.is_lt(),
                    Cmp::Le => o.is_le(),
                    Cmp::Gt => o.is_gt(),
                    _ => o.is_ge(),
                },
                None => false,
            },
        }
    }
}

/// An aggregate function over a named field.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RowAggFn {
    /// Number of members (no field).
    Count,
    /// Sum of a numeric field (an integer while every value is one).
    Sum,
    /// Smallest value of a field.
    Min,
    /// Largest value of a field.
    Max,
    /// Mean of a numeric field.
    Avg,
}

impl RowAggFn {
    /// Parses `count`, `sum`, `min`, `max`, `avg`.
    pub fn parse(text: &str) -> Option<RowAggFn> {
        Some(match text {
            "count" => RowAggFn::Count,
            "sum" => RowAggFn::Sum,
            "min" => RowAggFn::Min,
            "max" => RowAggFn::Max,
            "avg" => RowAggFn::Avg,
            _ => return None,
        })
    }
}

/// The running state of one [`RowAggFn`].
#[derive(Clone, Debug)]
pub enum RowAggState {
    /// Count.
    Count(u64),
    /// Sum: integer sum, float sum, whether all were integers, how many numbers.
    Sum(i64, f64, bool, u64),
    /// Extremum so far.
    Extremum(Option<Value>),
    /// Avg: sum and count.
    Avg(f64, u64),
}

/// Several aggregates over named fields, each written under its own name:
/// `(function, field, output name)`. Members missing the field (or with a non-numeric value for
/// sum and avg) are left out of that aggregate.
#[derive(Clone, Debug, PartialEq)]
pub struct RowAggregates {
    specs: Vec<(RowAggFn, Option<String>, String)>,
}

impl RowAggregates {
    /// The aggregates `(function, field, output name)`.
    pub fn new(specs: Vec<(RowAggFn, Option<String>, String)>) -> Self {
        RowAggregates { specs }
    }
}

impl Aggregate<Row> for RowAggregates {
    type State = Vec<RowAggState>;
    type Output = Vec<(String, Value)>;

    fn init(&self) -> Self::State {
        self.specs
            .iter()
            .map(|(f, _, _)| match f {
                RowAggFn::Count => RowAggState::Count(0),
                RowAggFn::Sum => RowAggState::Sum(0, 0.0, true, 0),
                RowAggFn::Min | RowAggFn::Max => RowAggState::Extremum(None),
                RowAggFn::Avg => RowAggState::Avg(0.0, 0),
            })
            .collect()
    }

    fn add(&self, state: &mut Self::State, row: &Row) {
        for ((f, field, _), st) in self.specs.iter().zip(state.iter_mut()) {
            let v = field.as_deref().and_then(|k| row.get(k));
            match (st, v) {
                (RowAggState::Count(n), _) => *n += 1,
                (RowAggState::Sum(i, x, all_int, n), Some(v)) => {
                    if let Some(f) = v.as_f64() {
                        *x += f;
                        *n += 1;
                        match v.as_i64().and_then(|k| i.checked_add(k)) {
                            Some(sum) => *i = sum,
                            None => *all_int = false,
                        }
                    }
                }
                (RowAggState::Extremum(cur), Some(v)) => {
                    let better = match cur {
                        None => true,
                        Some(c) => compare_values(v, c).is_some_and(|o| {
                            if *f == RowAggFn::Min {
                                o.is_lt()
                            } else {
                                o.is_gt()
                            }
                        }),
                    };
                    if better {
                        *cur = Some(v.clone());
                    }
                }
                (RowAggState::Avg(x, n), Some(v)) => {
                    if let Some(f) = v.as_f64() {
                        *x += f;
                        *n += 1;
                    }
                }
                _ => {}
            }
        }
    }

    fn result(&self, state: &Self::State) -> Self::Output {
        self.specs
            .iter()
            .zip(state)
            .map(|((_, _, name), st)| {
                let v = match st {
                    RowAggState::Count(n) => Value::Int(i64::try_from(*n).unwrap_or(i64::MAX)),
                    RowAggState::Sum(i, _, true, _) => Value::Int(*i),
                    RowAggState::Sum(_, x, false, _) => Value::Float(*x),
                    RowAggState::Extremum(v) => v.clone().unwrap_or(Value::Null),
                    RowAggState::Avg(_, 0) => Value::Null,
                    RowAggState::Avg(x, n) => Value::Float(*x / *n as f64),
                };
                (name.clone(), v)
            })
            .collect()
    }
}
