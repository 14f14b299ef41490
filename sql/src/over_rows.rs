//! The language's expressions for programs that name fields in their own configuration rather
//! than in a query (the conformance cases' steps, say): a [`Condition`] over one row, as a
//! `WHERE` of one source, and [`Aggregates`] over the members of a window or group, as a
//! grouped select's. They are compiled and computed as in a query: the same comparisons, the
//! same `NULL`s, the same refusals.
//!
//! ```
//! use punctual_core::ops::Aggregate;
//! use punctual_rows::Row;
//! use punctual_sql::{Aggregates, Condition};
//!
//! let hot = Condition::parse("t > 20").unwrap();
//! assert!(hot.holds(&Row::new().with("t", 21.5)));
//! assert!(!hot.holds(&Row::new().with("other", 30)));
//!
//! let aggs = Aggregates::parse(&[("SUM(t)", "total"), ("COUNT(*)", "n")]).unwrap();
//! let mut state = aggs.init();
//! aggs.add(&mut state, &Row::new().with("t", 1i64));
//! aggs.add(&mut state, &Row::new().with("t", 3i64));
//! assert_eq!(aggs.result(&state), Ok(Row::new().with("total", 4i64).with("n", 2i64)));
//! ```

use punctual_core::ops::Aggregate;
use punctual_core::Time;
use punctual_rows::{Row, Schema, Value};

use crate::aggs::{AggFn, AggStates, SqlAggs};
use crate::ast::{Expr, Pos, Select, SelectItem};
use crate::eval::{Ctx, E};
use crate::lower::{compile, Grouping};
use crate::row_expr::{row_of, Cond};
use crate::scope::{err, has_aggregate, Scope};
use crate::stream::RowStream;
use crate::SqlError;

/// The one source an expression of this module reads: its fields, unqualified.
fn one_row() -> Scope {
    Scope {
        sources: vec![("row".to_owned(), None)],
        nested: false,
    }
}

/// The select `text` makes with `SELECT ... FROM row` around it (`head` before, `tail` after,
/// each on lines of their own), with positions moved back into `text`; refused unless it
/// is that select alone.
fn wrapped(head: &str, text: &str, tail: &str) -> Result<Select, SqlError> {
    let lines = head.lines().count();
    let whole = format!("{head}\n{text}\n{tail}");
    let last = text.lines().count().max(1);
    let end = text.lines().last().map_or(0, |l| l.chars().count()) + 1;
    // Before the text: its start; after it (the end of the select): its end.
    let moved = |pos: Pos| match pos.line.checked_sub(lines) {
        None | Some(0) => Pos { line: 1, col: 1 },
        Some(line) if line <= last => Pos { line, col: pos.col },
        Some(_) => Pos {
            line: last,
            col: end,
        },
    };
    let script = crate::parse::parse(&whole).map_err(|e| match e {
        SqlError::Syntax { pos, message } => SqlError::syntax(moved(pos), message),
        SqlError::Compile { pos, message } => SqlError::compile(moved(pos), message),
    })?;
    let one = || err(Pos { line: 1, col: 1 }, "not one expression");
    let [query] = script.statements.as_slice() else {
        return Err(one());
    };
    let [select] = query.selects.as_slice() else {
        return Err(one());
    };
    let alone = script.steps.is_empty()
        && select.joins.is_empty()
        && select.group_by.is_empty()
        && select.having.is_none()
        && select.into.is_none();
    if !alone {
        return Err(one());
    }
    Ok(select.clone())
}

/// A condition of the language over one row, its fields named without a source: what
/// `WHERE` holds in a query of one source. A row passes when it is `TRUE` (`NULL`, a missing
/// field compared, passes not).
#[derive(Clone, Debug)]
pub struct Condition {
    cond: Cond,
}

impl Condition {
    /// Parses and compiles `text` (`t > 20 AND device = 'a'`); an aggregate, or anything
    /// but one expression, is refused.
    pub fn parse(text: &str) -> Result<Condition, SqlError> {
        let select = wrapped("SELECT * FROM row WHERE", text, "")?;
        let Some(e) = select.filter else {
            return Err(err(Pos { line: 1, col: 1 }, "no condition"));
        };
        if has_aggregate(&e) {
            return Err(err(e.pos, "a condition over one row cannot aggregate"));
        }
        let e = compile(&e, &one_row(), None, false)?;
        Ok(Condition { cond: Cond::new(e) })
    }

    /// Whether it holds over `row`.
    pub fn holds(&self, row: &Row) -> bool {
        self.cond.holds(row)
    }

    /// `stream`'s rows where it holds, in the stream's order (a `&Stream<Row, O>` of either
    /// order, or a [`RowStream`]); a row over which it cannot be computed (an overflow, a
    /// division by zero) is dropped with the reason, as a query's `WHERE` drops it.
    pub fn filter(&self, stream: impl Into<RowStream>) -> RowStream {
        self.cond.clone().filter(&stream.into())
    }
}

/// Aggregates of the language over the members of a window or a group (`SUM(v)`,
/// `COUNT(*)`, `AVG(v) * 2`, ...), each under its name: their result is one row. A member
/// whose argument cannot be aggregated (a `SUM` of a text) is left out by [`Aggregates::gate`],
/// with the reason, as a query leaves it out; a result that cannot be given (a `SUM` of
/// integers outside the `bigint` range) is an `Err` with the reason.
#[derive(Clone, Debug)]
pub struct Aggregates {
    fns: Vec<AggFn>,
    aggs: SqlAggs,
    items: Vec<E>,
    names: Schema,
}

impl Aggregates {
    /// Parses and compiles `(expression, name)` pairs; an expression must aggregate (a field
    /// outside an aggregate has no value over a group).
    pub fn parse(items: &[(&str, &str)]) -> Result<Aggregates, SqlError> {
        let mut grouping = Grouping {
            keys: &[],
            aggs: Vec::new(),
            analytics: None,
        };
        let mut compiled = Vec::new();
        for (text, _) in items {
            let select = wrapped("SELECT", text, "FROM row")?;
            let [SelectItem::Expr(e, None)] = select.items.as_slice() else {
                return Err(err(Pos { line: 1, col: 1 }, "not one expression"));
            };
            compiled.push(Aggregates::item(e, &mut grouping)?);
        }
        let names = Schema::new(items.iter().map(|(_, name)| *name))
            .map_err(|e| err(Pos { line: 1, col: 1 }, e.to_string()))?;
        Ok(Aggregates {
            aggs: SqlAggs::new(grouping.aggs.clone()),
            fns: grouping.aggs,
            items: compiled,
            names,
        })
    }

    fn item(e: &Expr, grouping: &mut Grouping<'_>) -> Result<E, SqlError> {
        if !has_aggregate(e) {
            return Err(err(
                e.pos,
                "not an aggregate: over a group, a field has no one value",
            ));
        }
        compile(e, &one_row(), Some(grouping), false)
    }

    /// `stream` without the members whose arguments cannot be aggregated, each dropped with
    /// the reason: put it before the window.
    pub fn gate(&self, stream: impl Into<RowStream>) -> RowStream {
        crate::compile::gate(stream.into(), &[], &self.fns)
    }
}

/// The running state of [`Aggregates`] over one window or group.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct AggregatesState(AggStates);

impl Aggregate<Row> for Aggregates {
    type State = AggregatesState;
    type Output = Result<Row, String>;

    fn init(&self) -> AggregatesState {
        AggregatesState(self.aggs.init())
    }

    fn add(&self, state: &mut AggregatesState, row: &Row) {
        self.aggs.add(&mut state.0, row);
    }

    fn result(&self, state: &AggregatesState) -> Result<Row, String> {
        crate::limits::checked("its aggregates", || {
            let aggs = self.aggs.result(&state.0);
            let empty = Row::new();
            let cx = Ctx {
                row: &empty,
                pair: None,
                time: Time::NEG_INF,
                keys: &[],
                aggs: aggs.values(),
            };
            row_of(&self.names, &self.items, |e| e.with(&cx, Value::clone))
        })
    }
}
