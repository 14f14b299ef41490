//! Compiled expressions and their evaluation over rows.

use std::cmp::Ordering;

use punctual_rows::compare_values;
use std::sync::Arc;

use punctual_core::Time;
use punctual_rows::FieldRef;
use punctual_rows::{field_name, Row, Value};

use crate::ast::{BinOp, SqlType};

mod call;
mod geospatial;
pub(crate) use call::Func;
use call::{call, cast};

/// A compiled expression: fields resolved to paths, aggregates and group keys to slots.
#[derive(Clone, Debug)]
#[repr(u8)]
pub(crate) enum E {
    Lit(Value),
    /// A path into the row.
    Field(Path),
    /// The first of these paths the row has (an unqualified name in a join whose inputs'
    /// fields are not known).
    FirstOf(Vec<Path>),
    /// A group key of a grouped query.
    Key(usize),
    /// An aggregate's value in a grouped query.
    Agg(usize),
    /// The event's time.
    Time,
    Not(Box<E>),
    Neg(Box<E>),
    Bin(BinOp, Box<E>, Box<E>),
    IsNull(Box<E>, bool),
    Between(Box<E>, Box<E>, Box<E>, bool),
    In(Box<E>, Vec<E>, bool),
    Like(Box<E>, Box<E>, bool),
    Case(Option<Box<E>>, Vec<(E, E)>, Option<Box<E>>),
    Cast(Box<E>, SqlType),
    Call(Func, Vec<E>),
    /// A registered function (`udf.NAME(...)`) of its arguments.
    Udf(Box<crate::functions::Udf>, Vec<E>),
    /// A level of a deep expression where evaluation makes room on the stack for the levels
    /// below (see `limits::LEVELS_PER_ROOM`).
    Deep(Box<E>),
}

/// What an expression is evaluated against.
#[derive(Clone, Copy)]
pub(crate) struct Ctx<'a> {
    pub(crate) row: &'a Row,
    /// Two joined sources' rows under their names, read as if they were the row
    /// `{names[0]: rows[0], names[1]: rows[1]}` (which is then not built).
    pub(crate) pair: Option<(&'a [Arc<str>; 2], [&'a Row; 2])>,
    pub(crate) time: Time,
    pub(crate) keys: &'a [Value],
    pub(crate) aggs: &'a [Value],
}

impl<'a> Ctx<'a> {
    pub(crate) fn row(row: &'a Row, time: Time) -> Self {
        Ctx {
            row,
            pair: None,
            time,
            keys: &[],
            aggs: &[],
        }
    }

    /// The context of a pair of joined rows (no time: see [`E::reads_pairs`]).
    pub(crate) fn pair(names: &'a [Arc<str>; 2], rows: [&'a Row; 2], empty: &'a Row) -> Self {
        Ctx {
            row: empty,
            pair: Some((names, rows)),
            time: Time::NEG_INF,
            keys: &[],
            aggs: &[],
        }
    }
}

/// A path into a row: field names (shared, so that a lookup compares pointers first), the
/// last of which remembers where it was found (see [`FieldRef`]): a path is read from rows
/// of one schema, or of a few.
#[derive(Clone, Debug)]
pub(crate) struct Path {
    names: Vec<Arc<str>>,
    pub(crate) last: FieldRef,
}

impl std::ops::Deref for Path {
    type Target = [Arc<str>];

    fn deref(&self) -> &[Arc<str>] {
        &self.names
    }
}

/// The path of these names.
pub(crate) fn path<S: AsRef<str>>(names: impl IntoIterator<Item = S>) -> Path {
    let names: Vec<Arc<str>> = names.into_iter().map(|n| field_name(n.as_ref())).collect();
    let last = FieldRef::new(names.last().map_or_else(|| field_name(""), Arc::clone));
    Path { names, last }
}

/// The value at `path`: a field of the row, of one of a pair's rows, or nested in either.
#[inline(always)]
fn lookup<'r>(cx: &Ctx<'r>, path: &Path) -> Option<&'r Value> {
    match (&path.names[..], cx.pair) {
        // The common case, inline: a field of the row.
        ([_], None) => cx.row.field_ref(&path.last),
        ([first, _], Some((names, [a, b]))) => {
            if Arc::ptr_eq(&names[0], first) {
                a.field_ref(&path.last)
            } else if Arc::ptr_eq(&names[1], first) {
                b.field_ref(&path.last)
            } else {
                lookup_path(cx, path)
            }
        }
        _ => lookup_path(cx, path),
    }
}

#[inline(never)]
fn lookup_path<'r>(cx: &Ctx<'r>, path: &[Arc<str>]) -> Option<&'r Value> {
    let (first, rest) = path.split_first()?;
    let (mut v, rest) = match cx.pair {
        None => (cx.row.field_any_case(first)?, rest),
        Some((names, [a, b])) => {
            let same = |n: &Arc<str>| Arc::ptr_eq(n, first) || **n == **first;
            let side = if same(&names[0]) {
                a
            } else if same(&names[1]) {
                b
            } else {
                return None;
            };
            let (second, rest) = rest.split_first()?;
            (side.field_any_case(second)?, rest)
        }
    };
    for p in rest {
        match v {
            Value::Row(r) => v = r.field_any_case(p)?,
            _ => return None,
        }
    }
    Some(v)
}

/// `true` only for a boolean true (`NULL` and everything else are not).
pub(crate) fn truthy(v: &Value) -> bool {
    matches!(v, Value::Bool(true))
}

fn num(v: &Value) -> Option<f64> {
    match v {
        Value::Int(i) => Some(*i as f64),
        Value::Float(f) => Some(*f),
        _ => None,
    }
}

fn text(v: &Value) -> Option<String> {
    match v {
        Value::Null => None,
        Value::Str(s) => Some(s.to_string()),
        Value::Int(i) => Some(i.to_string()),
        Value::Float(f) => Some(f.to_string()),
        Value::Bool(b) => Some(if *b { "1" } else { "0" }.to_owned()),
        other => Some(other.to_json().to_string()),
    }
}

/// A float result, if finite; else `NULL` and a fault (the row's projection drops it).
fn float(x: f64) -> Value {
    if x.is_finite() {
        Value::Float(x)
    } else {
        crate::limits::fault("the result is not a finite number");
        Value::Null
    }
}

/// An integer result, if it fits (`checked` gave one); else `NULL` and a fault with `why`.
#[inline]
fn int(checked: Option<i64>, why: &'static str) -> Value {
    match checked {
        Some(i) => Value::Int(i),
        None => {
            crate::limits::fault(why);
            Value::Null
        }
    }
}

/// `a op b` for an arithmetic operator or a comparison (not `AND`, `OR`).
#[inline]
pub(crate) fn binary(op: BinOp, a: &Value, b: &Value) -> Value {
    match op {
        BinOp::Add | BinOp::Sub | BinOp::Mul | BinOp::Div | BinOp::Rem => arith(op, a, b),
        _ => compare(op, a, b),
    }
}

/// `a op b` for an arithmetic operator: integers inline, the rest out of line.
#[inline]
fn arith(op: BinOp, a: &Value, b: &Value) -> Value {
    if let (Value::Int(x), Value::Int(y)) = (a, b) {
        let r = match op {
            BinOp::Add => x.checked_add(*y),
            BinOp::Sub => x.checked_sub(*y),
            BinOp::Mul => x.checked_mul(*y),
            BinOp::Div => x.checked_div(*y),
            _ => x.checked_rem(*y),
        };
        if let Some(r) = r {
            return Value::Int(r);
        }
        let why = match op {
            BinOp::Div | BinOp::Rem if *y == 0 => "a division by zero",
            _ => "a bigint overflow (the result is outside -2^63..2^63-1)",
        };
        return int(None, why);
    }
    arith_other(op, a, b)
}

/// [`arith`] of values that are not two integers.
#[inline(never)]
fn arith_other(op: BinOp, a: &Value, b: &Value) -> Value {
    if op == BinOp::Add {
        if let (Value::Str(x), Value::Str(y)) = (a, b) {
            if !crate::limits::text_room(x.len().saturating_add(y.len())) {
                return Value::Null;
            }
            return Value::from(format!("{x}{y}"));
        }
    }
    match (num(a), num(b)) {
        (Some(x), Some(y)) => float(match op {
            BinOp::Add => x + y,
            BinOp::Sub => x - y,
            BinOp::Mul => x * y,
            BinOp::Div => x / y,
            _ => x % y,
        }),
        _ => Value::Null,
    }
}

fn compare(op: BinOp, a: &Value, b: &Value) -> Value {
    ordered(op, a, b).map_or(Value::Null, Value::Bool)
}

/// Whether `a op b` is true (`ordered(op, a, b) == Some(true)`), numbers of one kind compared
/// without a branch on the outcome: a filter's outcome is often a coin toss, and a branch on
/// it is mispredicted half the time.
#[inline]
pub(crate) fn compared(op: BinOp, a: &Value, b: &Value) -> bool {
    /// `x op y` as the operator says (`NaN` equals nothing, differs from everything and has no
    /// order, as in `ordered`).
    #[inline]
    fn by<T: PartialOrd>(op: BinOp, x: T, y: T) -> bool {
        match op {
            BinOp::Eq => x == y,
            BinOp::Ne => x != y,
            BinOp::Lt => x < y,
            BinOp::Le => x <= y,
            BinOp::Gt => x > y,
            _ => x >= y,
        }
    }
    match (a, b) {
        (Value::Int(x), Value::Int(y)) => by(op, x, y),
        (Value::Float(x), Value::Float(y)) => by(op, x, y),
        _ => ordered(op, a, b) == Some(true),
    }
}

/// A comparison's truth, `None` for `NULL`: a side is `NULL`, or an order (`<`, `>=`, ...)
/// compares values that have none (values of different kinds are never equal).
fn ordered(op: BinOp, a: &Value, b: &Value) -> Option<bool> {
    if matches!(a, Value::Null) || matches!(b, Value::Null) {
        return None;
    }
    match compare_values(a, b) {
        Some(o) => Some(match op {
            BinOp::Eq => o == Ordering::Equal,
            BinOp::Ne => o != Ordering::Equal,
            BinOp::Lt => o == Ordering::Less,
            BinOp::Le => o != Ordering::Greater,
            BinOp::Gt => o == Ordering::Greater,
            _ => o != Ordering::Less,
        }),
        None => match op {
            BinOp::Eq => Some(false),
            BinOp::Ne => Some(true),
            _ => None,
        },
    }
}

/// `LIKE`: `%` any run, `_` any one character.
fn like(s: &str, pattern: &str) -> bool {
    let s: Vec<char> = s.chars().collect();
    let p: Vec<char> = pattern.chars().collect();
    let (mut i, mut j) = (0, 0);
    let (mut star, mut mark) = (None, 0);
    while i < s.len() {
        if j < p.len() && (p[j] == '_' || p[j] == s[i]) {
            i += 1;
            j += 1;
        } else if j < p.len() && p[j] == '%' {
            star = Some(j);
            mark = i;
            j += 1;
        } else if let Some(st) = star {
            j = st + 1;
            mark += 1;
            i = mark;
        } else {
            return false;
        }
    }
    p[j..].iter().all(|&c| c == '%')
}

fn not(v: Value) -> Value {
    match v {
        Value::Bool(b) => Value::Bool(!b),
        _ => Value::Null,
    }
}

impl E {
    /// Whether the expression reads the event's time (`System.Timestamp()`) anywhere.
    pub(crate) fn reads_time(&self) -> bool {
        match self {
            E::Time => true,
            E::Lit(_) | E::Field(_) | E::FirstOf(_) | E::Key(_) | E::Agg(_) => false,
            E::Not(a) | E::Neg(a) | E::IsNull(a, _) | E::Cast(a, _) | E::Deep(a) => a.reads_time(),
            E::Bin(_, a, b) | E::Like(a, b, _) => a.reads_time() || b.reads_time(),
            E::Between(a, b, c, _) => a.reads_time() || b.reads_time() || c.reads_time(),
            E::In(a, list, _) => a.reads_time() || list.iter().any(E::reads_time),
            E::Case(subject, whens, otherwise) => {
                subject.as_ref().is_some_and(|e| e.reads_time())
                    || whens.iter().any(|(c, t)| c.reads_time() || t.reads_time())
                    || otherwise.as_ref().is_some_and(|e| e.reads_time())
            }
            E::Call(_, args) | E::Udf(_, args) => args.iter().any(E::reads_time),
        }
    }

    /// Whether the expression can be evaluated over a pair of joined rows ([`Ctx::pair`]):
    /// it reads fields of the sources (paths of two names or more), not a source's whole
    /// record, nor the time.
    pub(crate) fn reads_pairs(&self) -> bool {
        match self {
            E::Lit(_) | E::Key(_) | E::Agg(_) => true,
            E::Time => false,
            E::Field(p) => p.len() >= 2,
            E::FirstOf(ps) => ps.iter().all(|p| p.len() >= 2),
            E::Not(a) | E::Neg(a) | E::IsNull(a, _) | E::Cast(a, _) | E::Deep(a) => a.reads_pairs(),
            E::Bin(_, a, b) | E::Like(a, b, _) => a.reads_pairs() && b.reads_pairs(),
            E::Between(a, b, c, _) => a.reads_pairs() && b.reads_pairs() && c.reads_pairs(),
            E::In(a, list, _) => a.reads_pairs() && list.iter().all(E::reads_pairs),
            E::Case(subject, whens, otherwise) => {
                subject.as_ref().is_none_or(|e| e.reads_pairs())
                    && whens
                        .iter()
                        .all(|(c, t)| c.reads_pairs() && t.reads_pairs())
                    && otherwise.as_ref().is_none_or(|e| e.reads_pairs())
            }
            E::Call(_, args) | E::Udf(_, args) => args.iter().all(E::reads_pairs),
        }
    }

    /// The value of a literal, a field, a group key or an aggregate, by reference (no copy,
    /// no call); `None` for anything to compute. Inlined where it is called, with the
    /// context it is given: a row's field is then read with no branch on the context's kind.
    #[inline(always)]
    pub(crate) fn peek<'a>(&'a self, cx: &Ctx<'a>) -> Option<&'a Value> {
        static NULL: Value = Value::Null;
        match self {
            E::Lit(v) => Some(v),
            E::Field(path) => Some(lookup(cx, path).unwrap_or(&NULL)),
            E::Key(i) => Some(cx.keys.get(*i).unwrap_or(&NULL)),
            E::Agg(i) => Some(cx.aggs.get(*i).unwrap_or(&NULL)),
            _ => None,
        }
    }

    /// Applies `f` to the expression's value: by reference for a literal or a field, else to
    /// the value computed.
    #[inline(always)]
    pub(crate) fn with<'a, T>(&'a self, cx: &Ctx<'a>, f: impl FnOnce(&Value) -> T) -> T {
        match self.peek(cx) {
            Some(v) => f(v),
            None => f(&self.eval(cx)),
        }
    }

    /// Whether the condition holds: its value is `TRUE` (`NULL` and `FALSE` do not hold).
    /// `AND`, `OR` and comparisons answer without making the values in between. Inlined
    /// where it is called: a comparison of a row's field with a literal (a filter's usual
    /// condition) is then read in place, the rest by [`E::holds_any`].
    #[inline(always)]
    pub(crate) fn holds(&self, cx: &Ctx<'_>) -> bool {
        if let (
            E::Bin(
                op @ (BinOp::Eq | BinOp::Ne | BinOp::Lt | BinOp::Le | BinOp::Gt | BinOp::Ge),
                a,
                b,
            ),
            None,
        ) = (self, cx.pair)
        {
            if let (E::Field(path), E::Lit(v)) = (&**a, &**b) {
                if path.len() == 1 {
                    static NULL: Value = Value::Null;
                    return compared(*op, cx.row.field_ref(&path.last).unwrap_or(&NULL), v);
                }
            }
        }
        self.holds_any(cx)
    }

    /// [`E::holds`] for any condition.
    fn holds_any(&self, cx: &Ctx<'_>) -> bool {
        match self {
            E::Bin(BinOp::And, a, b) => a.holds(cx) && b.holds(cx),
            E::Bin(BinOp::Or, a, b) => a.holds(cx) || b.holds(cx),
            E::Bin(
                op @ (BinOp::Eq | BinOp::Ne | BinOp::Lt | BinOp::Le | BinOp::Gt | BinOp::Ge),
                a,
                b,
            ) => a.with(cx, |a| b.with(cx, |b| compared(*op, a, b))),
            E::Deep(e) => crate::limits::with_eval_room(|| e.holds(cx)),
            _ => truthy(&self.eval(cx)),
        }
    }

    pub(crate) fn eval(&self, cx: &Ctx<'_>) -> Value {
        match self {
            E::Lit(v) => v.clone(),
            E::Field(path) => lookup(cx, path).cloned().unwrap_or(Value::Null),
            E::FirstOf(paths) => paths
                .iter()
                .find_map(|p| lookup(cx, p))
                .cloned()
                .unwrap_or(Value::Null),
            E::Key(i) => cx.keys.get(*i).cloned().unwrap_or(Value::Null),
            E::Agg(i) => cx.aggs.get(*i).cloned().unwrap_or(Value::Null),
            E::Time => Value::from(&*cx.time.rfc3339()),
            E::Deep(e) => crate::limits::with_eval_room(|| e.eval(cx)),
            E::Not(e) => not(e.eval(cx)),
            E::Neg(e) => match e.eval(cx) {
                Value::Int(i) => int(i.checked_neg(), "a bigint overflow (-(-2^63))"),
                Value::Float(f) => Value::Float(-f),
                _ => Value::Null,
            },
            E::Bin(BinOp::And, a, b) => match (a.eval(cx), b.eval(cx)) {
                (Value::Bool(false), _) | (_, Value::Bool(false)) => Value::Bool(false),
                (Value::Bool(true), Value::Bool(true)) => Value::Bool(true),
                _ => Value::Null,
            },
            E::Bin(BinOp::Or, a, b) => match (a.eval(cx), b.eval(cx)) {
                (Value::Bool(true), _) | (_, Value::Bool(true)) => Value::Bool(true),
                (Value::Bool(false), Value::Bool(false)) => Value::Bool(false),
                _ => Value::Null,
            },
            E::Bin(op, a, b) => match (a.peek(cx), b.peek(cx)) {
                // Two fields or literals (the usual case): read in place, no closures.
                (Some(a), Some(b)) => binary(*op, a, b),
                _ => a.with(cx, |a| b.with(cx, |b| binary(*op, a, b))),
            },
            E::IsNull(e, negated) => Value::Bool(matches!(e.eval(cx), Value::Null) != *negated),
            E::Between(e, lo, hi, negated) => {
                let v = e.eval(cx);
                let inside = match (
                    compare(BinOp::Ge, &v, &lo.eval(cx)),
                    compare(BinOp::Le, &v, &hi.eval(cx)),
                ) {
                    (Value::Bool(a), Value::Bool(b)) => Value::Bool(a && b),
                    _ => Value::Null,
                };
                if *negated {
                    not(inside)
                } else {
                    inside
                }
            }
            E::In(e, list, negated) => {
                let v = e.eval(cx);
                if matches!(v, Value::Null) {
                    return Value::Null;
                }
                let found = list
                    .iter()
                    .any(|x| truthy(&compare(BinOp::Eq, &v, &x.eval(cx))));
                Value::Bool(found != *negated)
            }
            E::Like(e, p, negated) => match (e.eval(cx), p.eval(cx)) {
                (Value::Str(s), Value::Str(p)) => Value::Bool(like(&s, &p) != *negated),
                _ => Value::Null,
            },
            E::Case(operand, whens, otherwise) => {
                let subject = operand.as_ref().map(|o| o.eval(cx));
                for (cond, then) in whens {
                    let hit = match &subject {
                        Some(s) => truthy(&compare(BinOp::Eq, s, &cond.eval(cx))),
                        None => truthy(&cond.eval(cx)),
                    };
                    if hit {
                        return then.eval(cx);
                    }
                }
                otherwise.as_ref().map_or(Value::Null, |o| o.eval(cx))
            }
            E::Cast(e, ty) => cast(e.eval(cx), *ty),
            E::Call(f, args) => call(*f, args, cx),
            E::Udf(udf, args) => {
                let values: Vec<Value> = args.iter().map(|a| a.eval(cx)).collect();
                (udf.f)(&values).unwrap_or_else(|why| {
                    crate::limits::fault(format!("udf.{}: {why}", udf.name));
                    Value::Null
                })
            }
        }
    }
}

/// The comparison operators, for tests over each.
#[cfg(test)]
pub(crate) const COMPARISONS: [BinOp; 6] = [
    BinOp::Eq,
    BinOp::Ne,
    BinOp::Lt,
    BinOp::Le,
    BinOp::Gt,
    BinOp::Ge,
];

#[cfg(test)]
mod tests;
