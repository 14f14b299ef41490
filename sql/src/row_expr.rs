//! Expressions over one row alone, compiled to the shape they are read in: [`RowExpr`] (an
//! aggregate's argument, a group's or a join's key, a select list's column), [`Cond`] (a
//! `WHERE` over one source) and [`PairExpr`] (a fused join's condition or column).

use std::sync::Arc;

use punctual_core::Time;
use punctual_rows::FieldRef;
use punctual_rows::{Row, Schema, Value};

use crate::ast::BinOp;
use crate::eval::{binary, compared, truthy, Ctx, E};
use crate::stream::{RowStream, Rows};

/// An expression evaluated over one row alone (an aggregate's argument, a group key): a
/// field of the row is read in place, with no context built per row; anything else is an
/// [`E`] evaluated in the row's context (no time: [`Time::NEG_INF`]).
#[derive(Clone, Debug)]
#[repr(u8)]
pub(crate) enum RowExpr {
    /// A field of the row.
    Field(FieldRef),
    /// Any other expression.
    Any(E),
}

impl RowExpr {
    /// Whether evaluating it may fail ([`E::may_fault`]).
    pub(crate) fn may_fault(&self) -> bool {
        match self {
            RowExpr::Field(_) => false,
            RowExpr::Any(e) => e.may_fault(),
        }
    }

    pub(crate) fn new(e: E) -> RowExpr {
        match e {
            E::Field(path) if path.len() == 1 => RowExpr::Field(path.last),
            e => RowExpr::Any(e),
        }
    }

    /// Applies `f` to the expression's value over `row` (by reference for a field).
    #[inline(always)]
    pub(crate) fn with<T>(&self, row: &Row, f: impl FnOnce(&Value) -> T) -> T {
        static NULL: Value = Value::Null;
        match self {
            RowExpr::Field(field) => f(row.field_ref(field).unwrap_or(&NULL)),
            RowExpr::Any(e) => e.with(&Ctx::row(row, Time::NEG_INF), f),
        }
    }

    /// The expression's value over `row`.
    pub(crate) fn eval(&self, row: &Row) -> Value {
        self.with(row, Value::clone)
    }

    /// The expression's value over `row` at time `t` (what `System.Timestamp()` reads): a
    /// select list's column.
    #[inline(always)]
    pub(crate) fn value_at(&self, row: &Row, t: Time) -> Value {
        match self {
            RowExpr::Field(field) => row.field_ref(field).cloned().unwrap_or(Value::Null),
            RowExpr::Any(e) => e.with(&Ctx::row(row, t), Value::clone),
        }
    }
}

/// A row of `schema` whose values are `value` of each of `columns`, in order: one or two
/// built at once (a row of up to two values is inline, and an iterator in between cost more
/// than values computed inline), more through an iterator. A value that a function out of
/// line returns is better taken through the iterator, as the row is built (see the fused
/// join): built first, it is copied into the array before its stores have settled.
#[inline(always)]
pub(crate) fn row_of<C>(schema: &Schema, columns: &[C], value: impl Fn(&C) -> Value) -> Row {
    match columns {
        [a] => schema.row([value(a)]),
        [a, b] => schema.row([value(a), value(b)]),
        columns => schema.row(columns.iter().map(value)),
    }
}

/// A condition over one row (a `WHERE` over one source): a comparison of a field with a
/// literal, the usual filter, compiled to that shape and compared in place (no context, no
/// walk of the expression per row); any other condition by [`E::holds`].
#[derive(Clone, Debug)]
pub(crate) enum Cond {
    /// `field op literal`, for a comparison operator.
    Compare(BinOp, FieldRef, Value),
    /// Any other condition.
    Any(E),
}

impl Cond {
    pub(crate) fn new(e: E) -> Cond {
        match e {
            E::Bin(
                op @ (BinOp::Eq | BinOp::Ne | BinOp::Lt | BinOp::Le | BinOp::Gt | BinOp::Ge),
                a,
                b,
            ) => match (*a, *b) {
                (E::Field(path), E::Lit(v)) if path.len() == 1 => Cond::Compare(op, path.last, v),
                (a, b) => Cond::Any(E::Bin(op, Box::new(a), Box::new(b))),
            },
            e => Cond::Any(e),
        }
    }

    /// Whether the condition holds over `row` (is `TRUE`: `NULL` and `FALSE` do not hold).
    #[inline(always)]
    pub(crate) fn holds(&self, row: &Row) -> bool {
        static NULL: Value = Value::Null;
        match self {
            Cond::Compare(op, field, v) => compared(*op, row.field_ref(field).unwrap_or(&NULL), v),
            Cond::Any(e) => e.holds(&Ctx::row(row, Time::NEG_INF)),
        }
    }
}

impl Cond {
    /// `stream` filtered by the condition. A comparison of a field with an integer (the
    /// usual filter) gets a filter of its own for its operator, the comparison compiled in:
    /// an integer field is compared with no match on the operator per row (anything else in
    /// the field as [`Cond::holds`] compares it). A row whose condition cannot be computed
    /// (an overflow, a division by zero, a failed cast) is dropped with the reason.
    pub(crate) fn filter(self, stream: &RowStream) -> RowStream {
        let (op, field, k) = match self {
            Cond::Any(e) if e.may_fault() => {
                return stream.try_filter(move |r| {
                    crate::limits::checked("its WHERE condition", || {
                        e.holds(&Ctx::row(r, Time::NEG_INF))
                    })
                })
            }
            Cond::Compare(op, field, Value::Int(k)) => (op, field, k),
            c => return stream.filter(move |r| c.holds(r)),
        };
        match op {
            BinOp::Eq => int_filter(stream, op, field, k, |x, k| x == k),
            BinOp::Ne => int_filter(stream, op, field, k, |x, k| x != k),
            BinOp::Lt => int_filter(stream, op, field, k, |x, k| x < k),
            BinOp::Le => int_filter(stream, op, field, k, |x, k| x <= k),
            BinOp::Gt => int_filter(stream, op, field, k, |x, k| x > k),
            _ => int_filter(stream, op, field, k, |x, k| x >= k),
        }
    }
}

/// `stream` filtered by `field op k`, `by` being `op` over integers.
fn int_filter(
    stream: &RowStream,
    op: BinOp,
    field: FieldRef,
    k: i64,
    by: impl Fn(i64, i64) -> bool + Send + 'static,
) -> RowStream {
    static NULL: Value = Value::Null;
    let lit = Value::Int(k);
    stream.filter(move |r| match r.field_ref(&field) {
        Some(&Value::Int(x)) => by(x, k),
        v => compared(op, v.unwrap_or(&NULL), &lit),
    })
}

/// A field of one of a pair's rows, or a literal: an operand read in place.
#[derive(Clone, Debug)]
pub(crate) enum Operand {
    /// The field of the left (0) or right (1) row.
    Side(usize, FieldRef),
    Lit(Value),
}

impl Operand {
    /// `e` as an operand over a pair whose sources are `names`: a literal, or a field of
    /// one source (its side found now, not per pair).
    fn new(e: &E, names: &[Arc<str>; 2]) -> Option<Operand> {
        match e {
            E::Lit(v) => Some(Operand::Lit(v.clone())),
            E::Field(path) => match &path[..] {
                [source, _] => names
                    .iter()
                    .position(|n| Arc::ptr_eq(n, source) || **n == **source)
                    .map(|side| Operand::Side(side, path.last.clone())),
                _ => None,
            },
            _ => None,
        }
    }

    #[inline(always)]
    fn read<'a>(&'a self, rows: [&'a Row; 2]) -> &'a Value {
        static NULL: Value = Value::Null;
        match self {
            Operand::Side(side, field) => rows[*side & 1].field_ref(field).unwrap_or(&NULL),
            Operand::Lit(v) => v,
        }
    }
}

/// An expression over a pair of joined rows (a fused join's condition or column), compiled
/// to the shape it is read in: a field or a literal read in place, or an arithmetic
/// operator or a comparison over two such (the sides of their fields found when compiled,
/// not by name per pair); anything else an [`E`] evaluated in the pair's context.
#[derive(Clone, Debug)]
pub(crate) enum PairExpr {
    One(Operand),
    Bin(BinOp, Operand, Operand),
    Any(E),
}

impl PairExpr {
    /// `e` over pairs of rows of the sources `names`.
    pub(crate) fn new(e: E, names: &[Arc<str>; 2]) -> PairExpr {
        if let Some(o) = Operand::new(&e, names) {
            return PairExpr::One(o);
        }
        if let E::Bin(op, a, b) = &e {
            if !matches!(op, BinOp::And | BinOp::Or) {
                if let (Some(a), Some(b)) = (Operand::new(a, names), Operand::new(b, names)) {
                    return PairExpr::Bin(*op, a, b);
                }
            }
        }
        PairExpr::Any(e)
    }

    /// The expression's value over the pair `rows`; `cx` is the pair's context (for
    /// [`PairExpr::Any`]).
    #[inline]
    pub(crate) fn value(&self, rows: [&Row; 2], cx: &Ctx<'_>) -> Value {
        match self {
            PairExpr::One(o) => o.read(rows).clone(),
            PairExpr::Bin(op, a, b) => binary(*op, a.read(rows), b.read(rows)),
            PairExpr::Any(e) => e.with(cx, Value::clone),
        }
    }

    /// Whether the condition holds over the pair `rows` (is `TRUE`).
    #[inline]
    pub(crate) fn holds(&self, rows: [&Row; 2], cx: &Ctx<'_>) -> bool {
        match self {
            PairExpr::Bin(
                op @ (BinOp::Eq | BinOp::Ne | BinOp::Lt | BinOp::Le | BinOp::Gt | BinOp::Ge),
                a,
                b,
            ) => compared(*op, a.read(rows), b.read(rows)),
            PairExpr::Any(e) => e.holds(cx),
            other => truthy(&other.value(rows, cx)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::eval::path;

    fn rows() -> Vec<Row> {
        let two = Schema::new(["v", "k"]).unwrap();
        let other = Schema::new(["k", "v", "w"]).unwrap();
        let none = Schema::new(["k"]).unwrap();
        vec![
            two.row([Value::Int(5), Value::Int(1)]),
            two.row([Value::Int(-3), Value::Null]),
            two.row([Value::Float(5.0), Value::Int(1)]),
            two.row([Value::Float(f64::NAN), Value::Int(1)]),
            two.row([Value::Str("5".into()), Value::Int(1)]),
            two.row([Value::Null, Value::Int(1)]),
            other.row([Value::Int(1), Value::Int(7), Value::Bool(true)]),
            none.row([Value::Int(1)]),
        ]
    }

    /// A condition compiled to a comparison of a field with a literal holds exactly where
    /// the expression it came from holds: every operator, literals of several kinds, rows
    /// with the field an integer, a float, NaN, text, `NULL`, elsewhere or missing.
    #[test]
    fn a_compiled_comparison_holds_where_its_expression_holds() {
        let ops = crate::eval::COMPARISONS;
        let literals = [
            Value::Int(5),
            Value::Int(-3),
            Value::Float(5.0),
            Value::Str("5".into()),
            Value::Null,
        ];
        let rows = rows();
        let (mut compiled, mut held) = (0, 0);
        for op in ops {
            for lit in &literals {
                let e = E::Bin(
                    op,
                    Box::new(E::Field(path(["v"]))),
                    Box::new(E::Lit(lit.clone())),
                );
                let c = Cond::new(e.clone());
                compiled += usize::from(matches!(c, Cond::Compare(..)));
                // Twice over the rows: the second read finds the field where it was.
                for r in rows.iter().chain(&rows) {
                    let want = e.holds(&Ctx::row(r, Time::NEG_INF));
                    assert_eq!(c.holds(r), want, "{e:?} over {r:?}");
                    held += usize::from(want);
                }
            }
        }
        assert_eq!(compiled, ops.len() * literals.len());
        assert!(held > 0);
        // Anything else is evaluated as it is.
        let e = E::Bin(
            BinOp::Gt,
            Box::new(E::Lit(Value::Int(6))),
            Box::new(E::Field(path(["v"]))),
        );
        let c = Cond::new(e.clone());
        assert!(matches!(c, Cond::Any(_)));
        for r in &rows {
            assert_eq!(c.holds(r), e.holds(&Ctx::row(r, Time::NEG_INF)), "{r:?}");
        }
    }

    /// A column's value is the expression's at the event's time: a field read in place (or
    /// `NULL` where it is missing), anything else evaluated, `System.Timestamp()` included.
    #[test]
    fn a_column_is_its_expression_at_the_time() {
        let t = Time::from_ticks(1_234_567);
        let exprs = [
            E::Field(path(["v"])),
            E::Field(path(["w"])),
            E::Time,
            E::Bin(
                BinOp::Mul,
                Box::new(E::Field(path(["v"]))),
                Box::new(E::Lit(Value::Int(3))),
            ),
        ];
        for e in exprs {
            let column = RowExpr::new(e.clone());
            assert_eq!(
                matches!(column, RowExpr::Field(_)),
                matches!(e, E::Field(_)),
                "{e:?}"
            );
            for r in rows() {
                let want = e.eval(&Ctx::row(&r, t));
                let got = column.value_at(&r, t);
                assert!(
                    got == want
                        || matches!((&got, &want), (Value::Float(a), Value::Float(b)) if a.is_nan() && b.is_nan()),
                    "{e:?} over {r:?}: {got:?}, not {want:?}"
                );
            }
        }
    }

    /// An expression over a pair, compiled, has the value the expression has in the pair's
    /// context, and holds where it holds: fields of either side (found by name, shared or
    /// not), literals, arithmetic and comparisons of two such, anything else as it is.
    #[test]
    fn a_compiled_pair_expression_is_what_it_was_compiled_from() {
        let names = [field_name_of("a"), field_name_of("b")];
        let field = |side: &str, f: &str| E::Field(path([side, f]));
        let bin = |op, x: E, y: E| E::Bin(op, Box::new(x), Box::new(y));
        let lit = |i: i64| E::Lit(Value::Int(i));
        let mut exprs = vec![field("a", "v"), field("b", "v"), field("b", "w"), lit(4)];
        for op in [
            BinOp::Mul,
            BinOp::Sub,
            BinOp::Div,
            BinOp::Lt,
            BinOp::Eq,
            BinOp::Ge,
        ] {
            exprs.push(bin(op, field("a", "v"), field("b", "v")));
            exprs.push(bin(op, field("b", "k"), lit(1)));
        }
        exprs.push(bin(BinOp::And, field("a", "v"), field("b", "v")));
        exprs.push(E::Not(Box::new(bin(BinOp::Lt, field("a", "v"), lit(0)))));
        let rows = rows();
        let empty = Row::new();
        let mut compiled = 0;
        for e in exprs {
            // The sources' names as the compiler has them, and as unshared text.
            for names in [names.clone(), [Arc::from("a"), Arc::from("b")]] {
                let p = PairExpr::new(e.clone(), &names);
                compiled += usize::from(!matches!(p, PairExpr::Any(_)));
                for (x, y) in rows.iter().zip(rows.iter().rev()) {
                    let cx = Ctx::pair(&names, [x, y], &empty);
                    let (want, got) = (e.eval(&cx), p.value([x, y], &cx));
                    let nan = |v: &Value| matches!(v, Value::Float(f) if f.is_nan());
                    assert!(
                        got == want || nan(&got) && nan(&want),
                        "{e:?}: {got:?}, not {want:?}"
                    );
                    assert_eq!(
                        p.holds([x, y], &cx),
                        e.holds(&cx),
                        "{e:?} over {x:?}, {y:?}"
                    );
                }
            }
        }
        assert!(compiled >= 2 * 16);
    }

    fn field_name_of(s: &str) -> Arc<str> {
        punctual_rows::field_name(s)
    }
}
