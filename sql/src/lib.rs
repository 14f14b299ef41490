//! A Stream Analytics-style query language for Punctual.
//!
//! ```text
//! SELECT device, COUNT(*) AS n, AVG(celsius) AS mean, System.Timestamp() AS at
//! INTO per_device
//! FROM readings TIMESTAMP BY time
//! WHERE celsius > -40
//! GROUP BY device, TumblingWindow(second, 10)
//! ```
//!
//! A script is parsed ([`SqlQuery::parse`], with [pest](https://pest.rs)) and compiled onto
//! the streams of a query ([`SqlQuery::build`]) as the operators the Rust API builds: `WHERE`
//! is a filter, the select list a projection, `GROUP BY` with a window is a window with a
//! group-by and an aggregate, `JOIN` is the temporal join, `UNION` the union. A query in this
//! language runs on the one engine; its payloads are rows of named, dynamic values (each
//! result's names made once, values by position), which cost more per event than the typed
//! payloads of a Rust query (see the repository's BENCHMARKS.md).
//!
//! What it takes:
//!
//! - `SELECT items [INTO output] FROM source [JOIN source ON condition]... [WHERE condition]
//!   [GROUP BY keys, window] [HAVING condition]`, several joined by `UNION`;
//!   `WITH step AS (query), ...` before them; several statements separated by `;`, each
//!   with its own `INTO`.
//! - A source: `name [AS alias] [TIMESTAMP BY expr [OVER key]]` (`TIMESTAMP BY` is read by
//!   whoever creates the inputs: see [`SqlQuery::inputs`]).
//! - Expressions: numbers, `'strings'`, `NULL`, `TRUE`/`FALSE`, fields (`name`,
//!   `source.name`, `record.field`, `[odd name]`), `+ - * / %` (`+` joins strings),
//!   `= <> != < <= > >=`, `AND OR NOT` (three-valued, with `NULL`), `IS [NOT] NULL`,
//!   `[NOT] BETWEEN`, `[NOT] IN (...)`, `[NOT] LIKE` (`%`, `_`), `CASE`, `CAST(e AS bigint |
//!   float | nvarchar(max) | bit | datetime | record)`, and the functions UPPER, LOWER, LEN,
//!   CONCAT, SUBSTRING, TRIM, LTRIM, RTRIM, REPLACE, CHARINDEX, ABS, ROUND, FLOOR, CEILING,
//!   POWER, SQRT, SIGN, COALESCE.
//! - Aggregates: `COUNT(*)`, `COUNT(e)` (non-null values), `COUNT(DISTINCT e)`, `SUM`, `AVG`, `MIN`, `MAX`,
//!   `TopOne() OVER (ORDER BY e [DESC])` (the first member, as a record), `CollectTop(k) OVER
//!   (ORDER BY e [DESC])` (the first `k`, as a list of `{rank, value}` records); with a window in
//!   `GROUP BY`: `TumblingWindow(unit, size [, offset])`, `HoppingWindow(unit, size, hop [,
//!   offset])`, `SlidingWindow(unit, size)`, `SessionWindow(unit, timeout, max_duration)
//!   [OVER (PARTITION BY keys)]`, `SnapshotWindow()`. Units: `day`, `hour`,
//!   `minute`, `second`, `millisecond`, `microsecond` (and their Stream Analytics
//!   abbreviations), and `tick` (100 ns). `System.Timestamp()` is a result's time: a
//!   tumbling, hopping or session window's end, the moment a sliding or snapshot window changed, an
//!   event's start otherwise (as RFC 3339 text).
//! - Joins: `JOIN b ON a.k = b.k AND DATEDIFF(unit, a, b) BETWEEN x AND y` pairs events of
//!   `a` and `b` whose times differ by `x` to `y` units (`b`'s minus `a`'s); the result's
//!   time is `b`'s. Without `DATEDIFF`, the join is the temporal join of the two streams'
//!   lifetimes: a stream of points joined with reference data (intervals or edges) finds the
//!   reference valid at each point. Equalities between the two sides are the join's keys (a
//!   `NULL` key matches nothing); other conditions filter the pairs. A joined row holds each
//!   source's record under its alias (`SELECT *` gives them so). `LEFT [OUTER] JOIN` also
//!   gives each left event without a partner, with `NULL` for the right source, at the
//!   latest time a partner could have come.
//! - Records and arrays: `record.field`, `record.*`, `GetArrayElement`, `GetArrayLength`,
//!   `GetRecordPropertyValue`, and `CROSS APPLY` / `OUTER APPLY` with `GetArrayElements` and
//!   `GetRecordProperties` (an event per element or property).
//!
//! Where it differs from Stream Analytics: a result of `DATEDIFF` joins takes `b`'s time
//! (Stream Analytics: the later of the two); `SELECT *` over a join nests each source's
//! record under its alias; `System.Timestamp()` is not available in `WHERE` or `HAVING`;
//! `LIKE` is case-sensitive; an unnamed column is named after its field or function, or
//! `colN`.
//!
//! Errors say where (line and column) and what: a syntax error what was expected, a
//! compile error which field, source or function is unknown (fields are checked when the
//! inputs' fields are known).
//!
//! ```
//! use punctual_core::ops::QueryGraph;
//! use punctual_core::{Batch, Ordered, Time};
//! use punctual_rows::{Row};
//! use punctual_sql::{SqlInput, SqlQuery};
//!
//! let sql = SqlQuery::parse("SELECT v * 2 AS twice FROM readings WHERE v > 1").unwrap();
//! let graph = QueryGraph::new();
//! let readings = graph.source::<Row, Ordered>();
//! let outputs = sql.build(&[SqlInput::new("readings", &readings)]).unwrap();
//! let (name, out) = &outputs[0];
//! assert_eq!(name, "output");
//! let out = out.ordered(); // sorted already: its input is
//! graph.keep_output(&out);
//! let mut batch = Batch::new();
//! batch.push_point(Time::from_ticks(1), Row::new().with("v", 1));
//! batch.push_point(Time::from_ticks(2), Row::new().with("v", 5));
//! graph.feed(&readings, &mut batch);
//! let mut got = Batch::new();
//! graph.take_output(&out, &mut got);
//! assert_eq!(got.payloads(), &[Row::new().with("twice", 10)]);
//! ```

mod aggs;
mod analytic;
pub mod ast;
mod compile;
mod eval;
mod functions;
mod join;
mod limits;
mod lower;
mod outer_join;
mod over_rows;
pub(crate) mod parse;
pub mod plan;
mod reads;
mod recognize;
mod row_expr;
mod scope;
mod select;
mod stream;
mod unsupported;

use std::collections::HashMap;

use punctual_core::Time;
use punctual_rows::Value;

use ast::{ExprKind, Pos, Script};
pub use functions::{Functions, ScalarFunction, UserAggregate};
pub use limits::{MAX_DEPTH, MAX_NESTING};
pub use over_rows::{Aggregates, AggregatesState, Condition};
pub use stream::RowStream;

/// A query that could not be parsed or compiled: where, and why.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SqlError {
    /// The text does not follow the grammar.
    #[error("syntax error at {pos}: {message}")]
    Syntax {
        /// Where.
        pos: Pos,
        /// What was expected.
        message: String,
    },
    /// The query refers to something that does not exist, or combines what does not go.
    #[error("{pos}: {message}")]
    Compile {
        /// Where.
        pos: Pos,
        /// What is wrong.
        message: String,
    },
}

impl SqlError {
    pub(crate) fn syntax(pos: Pos, message: impl Into<String>) -> Self {
        SqlError::Syntax {
            pos,
            message: message.into(),
        }
    }

    pub(crate) fn compile(pos: Pos, message: impl Into<String>) -> Self {
        SqlError::Compile {
            pos,
            message: message.into(),
        }
    }

    /// Where the error is.
    pub fn pos(&self) -> Pos {
        match self {
            SqlError::Syntax { pos, .. } | SqlError::Compile { pos, .. } => *pos,
        }
    }

    /// The error as found in a file whose line `first_line` (from 1) is the query's first:
    /// its position counted in the file's lines, after the file's name, with the line and a
    /// caret ([`SqlError::show`]). A query that starts mid-line (`query = "SELECT ..."`) has
    /// its first line's columns counted from the query's start.
    ///
    /// ```
    /// let e = punctual_sql::SqlQuery::parse("SELECT a\nFROM r WHERE").unwrap_err();
    /// let shown = e.show_in_file("SELECT a\nFROM r WHERE", "job.toml", 3);
    /// assert!(shown.starts_with("job.toml: syntax error at line 4, column "), "{shown}");
    /// ```
    pub fn show_in_file(&self, text: &str, file: &str, first_line: usize) -> String {
        let pos = self.pos();
        let shifted = Pos {
            line: pos.line + first_line.saturating_sub(1),
            col: pos.col,
        };
        let moved = match self.clone() {
            SqlError::Syntax { message, .. } => SqlError::syntax(shifted, message),
            SqlError::Compile { message, .. } => SqlError::compile(shifted, message),
        };
        let shown = moved.show_lines(text, pos);
        format!("{file}: {shown}")
    }

    /// The error with the line of `text` it is on and a caret under its column.
    pub fn show(&self, text: &str) -> String {
        self.show_lines(text, self.pos())
    }

    /// The error, then the line of `text` at `pos` with a caret under its column.
    fn show_lines(&self, text: &str, pos: Pos) -> String {
        match text.lines().nth(pos.line.saturating_sub(1)) {
            Some(line) if pos.line > 0 => format!(
                "{self}\n  | {line}\n  | {}^",
                " ".repeat(pos.col.saturating_sub(1))
            ),
            _ => self.to_string(),
        }
    }
}

/// A parsed query (see the crate doc), ready to be built onto a query's streams.
#[derive(Clone, Debug)]
pub struct SqlQuery {
    script: Script,
    text: String,
    functions: Functions,
}

/// How a query reads one of its inputs: what [`SqlQuery::inputs`] tells whoever creates
/// the input streams.
#[derive(Clone, Debug, PartialEq)]
pub struct InputUse {
    /// The input's name.
    pub name: String,
    /// `TIMESTAMP BY`: the field (a path) that holds each record's event time, if it is a
    /// field.
    pub timestamp_field: Option<Vec<String>>,
    /// `OVER key` after `TIMESTAMP BY`: the field whose values each get their own
    /// watermark, if it is a field.
    pub over_field: Option<Vec<String>>,
    /// The input this one is joined to as reference data (a join without `DATEDIFF`, this
    /// input on its right): its CTIs should be imported from that input, so that the slow
    /// reference stream keeps pace with the fast one.
    pub reference_of: Option<String>,
    /// As reference data: its fields the join's equalities compare (`ON r.device =
    /// t.device` gives `["device"]`), in order; empty when the join compares none. A table
    /// of versions without an end (each row valid until the next row with the same key) is
    /// keyed by them.
    ///
    /// ```
    /// let sql = punctual_sql::SqlQuery::parse(
    ///     "SELECT r.v FROM readings r TIMESTAMP BY time
    ///      JOIN limits t ON r.device = t.device AND r.v > t.threshold",
    /// ).unwrap();
    /// assert_eq!(sql.inputs()[1].reference_key, vec!["device".to_owned()]);
    /// ```
    pub reference_key: Vec<String>,
    /// The fields of its records the query reads, in order of first mention; `None` when it
    /// reads whole records (`*` or `source.*` over it, the source as a value, `TopOne`,
    /// `CollectTop`). An adapter may leave the others out of each row (the `TIMESTAMP BY`
    /// field is not among them: the input reads it for the event's time).
    ///
    /// ```
    /// let sql = punctual_sql::SqlQuery::parse(
    ///     "SELECT device, AVG(celsius) AS mean FROM readings TIMESTAMP BY time
    ///      WHERE celsius > -40 GROUP BY device, TumblingWindow(second, 10)",
    /// ).unwrap();
    /// let fields = sql.inputs()[0].fields_read.clone();
    /// assert_eq!(fields, Some(vec!["device".to_owned(), "celsius".to_owned()]));
    /// ```
    pub fields_read: Option<Vec<String>>,
}

/// An input stream given to [`SqlQuery::build`]: its name, the stream (sorted, or in
/// arrival order: see [`RowStream`]), and its fields when known (references to other fields
/// are then errors).
#[derive(Clone)]
pub struct SqlInput<'a> {
    name: &'a str,
    stream: RowStream,
    fields: Option<&'a [String]>,
}

impl<'a> SqlInput<'a> {
    /// The input `name` (a `&Stream<Row, O>` of either order, or a [`RowStream`]), fields
    /// unknown.
    pub fn new(name: &'a str, stream: impl Into<RowStream>) -> Self {
        SqlInput {
            name,
            stream: stream.into(),
            fields: None,
        }
    }

    /// With its fields known.
    pub fn fields(mut self, fields: &'a [String]) -> Self {
        self.fields = Some(fields);
        self
    }
}

fn field_path(e: &ast::Expr) -> Option<Vec<String>> {
    match &e.kind {
        ExprKind::Column(path) => Some(path.iter().map(|p| p.name.clone()).collect()),
        _ => None,
    }
}

impl SqlQuery {
    /// Parses `text`; a syntax error says where and what was expected.
    ///
    /// ```
    /// let e = punctual_sql::SqlQuery::parse("SELECT x FROM").unwrap_err();
    /// assert_eq!(e.to_string(), "syntax error at line 1, column 14: expected a name");
    /// ```
    pub fn parse(text: &str) -> Result<SqlQuery, SqlError> {
        let script = limits::with_room(|| parse::parse(text))?;
        check_self_joins(&script)?;
        Ok(SqlQuery {
            script,
            text: text.to_owned(),
            functions: Functions::default(),
        })
    }

    /// The query with `functions` as the user-defined functions and aggregates it may call
    /// (`udf.NAME(...)`, `uda.NAME(...)`; see [`Functions`]), checked when it is built.
    pub fn with_functions(mut self, functions: Functions) -> SqlQuery {
        self.functions = functions;
        self
    }

    /// The user-defined functions and aggregates the query may call.
    pub fn functions(&self) -> &Functions {
        &self.functions
    }

    /// The query's text.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// The parsed script.
    pub fn script(&self) -> &Script {
        &self.script
    }

    /// The names the query writes `INTO`, in order (`output` for a single statement without
    /// `INTO`).
    pub fn outputs(&self) -> Vec<String> {
        let n = self.script.statements.len();
        self.script
            .statements
            .iter()
            .map(|q| match &q.selects[0].into {
                Some(i) => i.name.clone(),
                None if n == 1 => "output".to_owned(),
                None => String::new(),
            })
            .collect()
    }

    /// The inputs the query reads (every source that is not a `WITH` step), in order of
    /// appearance, with how it reads them.
    pub fn inputs(&self) -> Vec<InputUse> {
        let steps: Vec<&str> = self
            .script
            .steps
            .iter()
            .map(|(n, _)| n.name.as_str())
            .collect();
        let mut uses: Vec<InputUse> = Vec::new();
        for s in self.script.selects() {
            for src in s.sources() {
                if steps.contains(&src.name.name.as_str()) {
                    continue;
                }
                let at = match uses.iter().position(|u| u.name == src.name.name) {
                    Some(i) => i,
                    None => {
                        uses.push(InputUse {
                            name: src.name.name.clone(),
                            timestamp_field: None,
                            over_field: None,
                            reference_of: None,
                            reference_key: Vec::new(),
                            fields_read: None,
                        });
                        uses.len() - 1
                    }
                };
                let u = &mut uses[at];
                if let Some(t) = &src.timestamp_by {
                    u.timestamp_field = field_path(t);
                }
                if let Some(o) = &src.over {
                    u.over_field = field_path(o);
                }
            }
        }
        // The joins the plan reads as reference data ([`plan::rewrite::reference_data`]).
        limits::with_room(|| {
            if let Ok(plan) = plan::LogicalPlan::of(&self.script) {
                let plan = plan.rewritten(&|_| None);
                for s in &plan.statements {
                    reference_joins(&s.node, &mut uses);
                }
            }
        });
        for u in &mut uses {
            u.fields_read = reads::fields_read(&self.script, &u.name, &steps);
        }
        uses
    }

    /// Builds the query on its input streams (all of one query graph); returns each
    /// output's name and stream, in the order of [`SqlQuery::outputs`]. An output is in
    /// arrival order when it comes from inputs in arrival order through operators that keep
    /// it (see [`RowStream`]), sorted otherwise.
    pub fn build(&self, inputs: &[SqlInput<'_>]) -> Result<Vec<(String, RowStream)>, SqlError> {
        limits::with_room(|| self.build_here(inputs))
    }

    /// [`SqlQuery::build`] on the stack it is called on.
    fn build_here(&self, inputs: &[SqlInput<'_>]) -> Result<Vec<(String, RowStream)>, SqlError> {
        let named: HashMap<String, compile::Named> = inputs
            .iter()
            .map(|i| {
                (
                    i.name.to_owned(),
                    compile::Named {
                        stream: i.stream.clone(),
                        fields: i.fields.map(<[String]>::to_vec),
                    },
                )
            })
            .collect();
        let plan = self.plan(inputs)?;
        functions::compiling_with(&self.functions, || {
            compile::Compiler {
                named,
                text: &self.text,
                label: std::cell::RefCell::default(),
            }
            .plan(&plan)
        })
    }

    /// The query's logical plan after its rewrites ([`plan`]), with what the inputs' fields
    /// are when given (as [`SqlQuery::build`] makes it: `build` runs this plan).
    ///
    /// ```
    /// let sql = punctual_sql::SqlQuery::parse("SELECT x FROM a WHERE x > 1").unwrap();
    /// let plan = sql.plan(&[]).unwrap().to_string();
    /// assert_eq!(plan, "output `output`\n  select x\n    filter x > 1\n      input `a`\n");
    /// ```
    pub fn plan(&self, inputs: &[SqlInput<'_>]) -> Result<plan::LogicalPlan, SqlError> {
        let fields = |name: &str| {
            inputs
                .iter()
                .find(|i| i.name == name)
                .and_then(|i| i.fields.map(<[String]>::to_vec))
        };
        // (On a stack with room: the rewrites walk expressions as deep as the limits allow.)
        limits::with_room(|| Ok(plan::LogicalPlan::of(&self.script)?.rewritten(&fields)))
    }
}

/// Refuses a source joined with itself without `DATEDIFF`: such a join reads its right side
/// as reference data, which would be the same input (its own reference, importing its own
/// CTIs).
fn check_self_joins(script: &Script) -> Result<(), SqlError> {
    for s in script.selects() {
        for j in &s.joins {
            let timed = plan::rewrite::has_datediff(&j.on);
            if !timed && j.source.name.name == s.from.name.name {
                return Err(SqlError::compile(
                    j.pos,
                    format!(
                        "`{}` is joined with itself without DATEDIFF, which would make it reference data for itself: bound the join in time (ON ... AND DATEDIFF(second, a, b) BETWEEN 0 AND 10)",
                        s.from.name.name
                    ),
                ));
            }
        }
    }
    Ok(())
}

/// The fields of source `side` that the equalities of a join condition (its `AND`ed terms)
/// compare with something else.
fn join_key(e: &ast::Expr, side: &str, key: &mut Vec<String>) {
    let field = |e: &ast::Expr| match &e.kind {
        ExprKind::Column(path) => match path.as_slice() {
            [source, field] if source.name == side => Some(field.name.clone()),
            _ => None,
        },
        _ => None,
    };
    match &e.kind {
        ExprKind::Binary(ast::BinOp::And, a, b) => {
            join_key(a, side, key);
            join_key(b, side, key);
        }
        ExprKind::Binary(ast::BinOp::Eq, a, b) => {
            for f in [field(a), field(b)].into_iter().flatten() {
                if !key.contains(&f) {
                    key.push(f);
                }
            }
        }
        _ => {}
    }
}

/// Records each join with reference data under `node` on its right input's use: which input
/// it is the reference of (the first join that reads it so), and its key fields. Joins are
/// visited in the order they are written.
fn reference_joins(node: &plan::Node, uses: &mut [InputUse]) {
    use plan::Node;
    let source = |n: &Node| -> Option<(String, String)> {
        match n {
            Node::Source { name, alias, .. } => Some((name.name.clone(), alias.clone())),
            _ => None,
        }
    };
    match node {
        Node::Source { .. } => {}
        Node::Filter { input, .. }
        | Node::Project { input, .. }
        | Node::Analytic { input, .. }
        | Node::Apply { input, .. }
        | Node::Recognize { input, .. }
        | Node::Group { input, .. }
        | Node::FusedJoin { join: input, .. } => reference_joins(input, uses),
        Node::Union(nodes) => nodes.iter().for_each(|n| reference_joins(n, uses)),
        Node::Join {
            left,
            right,
            on,
            reference,
            ..
        } => {
            reference_joins(left, uses);
            let mut first = &**left;
            while let Node::Join { left, .. } | Node::Filter { input: left, .. } = first {
                first = left;
            }
            let mut joined = &**right;
            while let Node::Filter { input, .. } = joined {
                joined = input;
            }
            let (Some((left, _)), Some((right, alias)), true) =
                (source(first), source(joined), *reference)
            else {
                return;
            };
            if let Some(u) = uses.iter_mut().find(|u| u.name == right) {
                u.reference_of.get_or_insert(left);
                if u.reference_key.is_empty() {
                    join_key(on, &alias, &mut u.reference_key);
                }
            }
        }
    }
}

/// Reads an event time from a `TIMESTAMP BY` value: RFC 3339 text, or a number of
/// milliseconds since 1970-01-01T00:00:00Z.
pub fn time_of(v: &Value) -> Option<Time> {
    match v {
        Value::Str(s) => Time::parse_rfc3339(s).ok(),
        Value::Int(ms) => ms
            .checked_mul(10_000)
            .map(|t| Time::EPOCH + punctual_core::TimeSpan::from_ticks(t)),
        _ => None,
    }
}
