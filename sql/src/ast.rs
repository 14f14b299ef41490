//! The parsed form of a script: what was written, with where (line and column) for errors.

use punctual_core::TimeSpan;

/// A line and a column (both from 1) in the query text.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Pos {
    /// The line, from 1.
    pub line: usize,
    /// The column, from 1 (in characters).
    pub col: usize,
}

impl std::fmt::Display for Pos {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "line {}, column {}", self.line, self.col)
    }
}

/// A name as written, with where.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Ident {
    /// The name (brackets removed).
    pub name: String,
    /// Where it is.
    pub pos: Pos,
}

/// A whole script: `WITH` steps, then one or more statements (separated by `;`).
#[derive(Clone, Debug, PartialEq)]
pub struct Script {
    /// The named steps of `WITH`, in order.
    pub steps: Vec<(Ident, Query)>,
    /// The statements, each `SELECT ... INTO out ...` (or a `UNION` of them).
    pub statements: Vec<Query>,
}

impl Script {
    /// Every `SELECT` of the script: the steps' in order, then the statements'.
    pub fn selects(&self) -> impl Iterator<Item = &Select> {
        let steps = self.steps.iter().map(|(_, q)| q);
        steps.chain(&self.statements).flat_map(|q| &q.selects)
    }
}

/// One `SELECT`, or several joined by `UNION`.
#[derive(Clone, Debug, PartialEq)]
pub struct Query {
    /// The `SELECT`s, in order (the first one's `INTO` names the output).
    pub selects: Vec<Select>,
}

/// One `SELECT`.
#[derive(Clone, Debug, PartialEq)]
pub struct Select {
    /// Where the `SELECT` keyword is.
    pub pos: Pos,
    /// What it selects.
    pub items: Vec<SelectItem>,
    /// `INTO output`.
    pub into: Option<Ident>,
    /// `FROM input`.
    pub from: Source,
    /// `MATCH_RECOGNIZE (...)` over the source.
    pub recognize: Option<Box<Recognize>>,
    /// `CROSS APPLY` / `OUTER APPLY`, in order.
    pub applies: Vec<Apply>,
    /// `JOIN ... ON ...`, in order.
    pub joins: Vec<JoinClause>,
    /// `WHERE`.
    pub filter: Option<Expr>,
    /// `GROUP BY`: keys and at most one window.
    pub group_by: Vec<GroupItem>,
    /// Where `GROUP BY` is, if present.
    pub group_pos: Option<Pos>,
    /// `HAVING`.
    pub having: Option<Expr>,
}

impl Select {
    /// Its sources: `FROM`'s, then each join's, in order.
    pub fn sources(&self) -> impl Iterator<Item = &Source> {
        std::iter::once(&self.from).chain(self.joins.iter().map(|j| &j.source))
    }
}

/// One item of a select list.
#[derive(Clone, Debug, PartialEq)]
pub enum SelectItem {
    /// `*`: every field.
    Star(Pos),
    /// `alias.*`, every field of one source of a join, or `path.*` (`Location.*`,
    /// `e.Location.*`), every field of the record at that path: the names as written.
    QualifiedStar(Vec<Ident>),
    /// An expression, with its output name if given.
    Expr(Expr, Option<Ident>),
}

/// An input or step read by `FROM` or `JOIN`.
#[derive(Clone, Debug, PartialEq)]
pub struct Source {
    /// The input's or step's name.
    pub name: Ident,
    /// Its alias in this query.
    pub alias: Option<Ident>,
    /// `TIMESTAMP BY expr`: the event time, read from each record.
    pub timestamp_by: Option<Expr>,
    /// `OVER key` after `TIMESTAMP BY`: a watermark per key.
    pub over: Option<Expr>,
}

impl Source {
    /// The name it is referred to by in the query: its alias, or its name.
    pub fn reference(&self) -> &str {
        &self.alias.as_ref().unwrap_or(&self.name).name
    }
}

/// `CROSS APPLY function(e) AS alias` or `OUTER APPLY ...`: each event made into one event
/// per row the function gives (`GetArrayElements`: each element of an array;
/// `GetRecordProperties`: each property of a record), that row readable under `alias`.
#[derive(Clone, Debug, PartialEq)]
pub struct Apply {
    /// Where `CROSS` or `OUTER` is.
    pub pos: Pos,
    /// `OUTER APPLY`: an event whose function gives no row comes out once, with `NULL` for
    /// `alias`.
    pub outer: bool,
    /// The function's call.
    pub function: Expr,
    /// The name its rows are read by.
    pub alias: Ident,
}

/// `MATCH_RECOGNIZE (...) [AS alias]`: row pattern matching over a select's source, one row
/// per match (its `MEASURES`), as Stream Analytics and Flink SQL have it.
#[derive(Clone, Debug, PartialEq)]
pub struct Recognize {
    /// Where `MATCH_RECOGNIZE` is.
    pub pos: Pos,
    /// `LIMIT DURATION(unit, n)` (or Flink's `WITHIN INTERVAL 'n' UNIT`): a match's events are
    /// at most this long after its first.
    pub limit: Option<TimeSpan>,
    /// `PARTITION BY`: each value's events are matched apart.
    pub partition: Vec<Expr>,
    /// `MEASURES expr AS name, ...`: a match's row.
    pub measures: Vec<(Expr, Ident)>,
    /// `AFTER MATCH SKIP PAST LAST ROW` (the next match starts after this one's last event);
    /// `false`: `SKIP TO NEXT ROW`, Stream Analytics' (the next attempt starts at the event
    /// after this match's first, so matches may overlap).
    pub skip_past_last: bool,
    /// `PATTERN (...)`.
    pub pattern: Pattern,
    /// `DEFINE name AS condition, ...`.
    pub define: Vec<(Ident, Expr)>,
    /// The name its rows are read by.
    pub alias: Option<Ident>,
}

/// A `MATCH_RECOGNIZE` pattern: a regular expression over events, each symbol a pattern
/// variable (an event for which its `DEFINE` condition holds; any event without one).
#[derive(Clone, Debug, PartialEq)]
pub enum Pattern {
    /// A pattern variable.
    Var(Ident),
    /// `.`: any event.
    Any(Pos),
    /// One after the other.
    Seq(Vec<Pattern>),
    /// `a | b`: the first that matches, in the order written.
    Alt(Vec<Pattern>),
    /// `p*`, `p+`, `p?`, `p{n}`, `p{n,}`, `p{n,m}`, `p{,m}`: greedy (as many as can be).
    Repeat {
        /// What repeats.
        inner: Box<Pattern>,
        /// At least this many times.
        min: u32,
        /// At most this many times (`None`: no limit).
        max: Option<u32>,
    },
}

/// `[INNER | LEFT [OUTER]] JOIN source ON condition`.
#[derive(Clone, Debug, PartialEq)]
pub struct JoinClause {
    /// Where `JOIN` is.
    pub pos: Pos,
    /// What is joined.
    pub source: Source,
    /// The condition.
    pub on: Expr,
    /// `LEFT [OUTER] JOIN`: a left event without a partner comes out too, with `NULL` for
    /// the joined source.
    pub outer: bool,
}

/// An analytic function's `OVER ([PARTITION BY keys] [LIMIT DURATION(unit, n)] [WHEN
/// condition])`: which earlier events it looks at.
#[derive(Clone, Debug, PartialEq)]
pub struct Over {
    /// `PARTITION BY`: only events with the current event's values of these.
    pub partition: Vec<Expr>,
    /// `LIMIT DURATION(unit, n)`: only events at most this long before the current one.
    pub duration: Option<TimeSpan>,
    /// `WHEN`: only events for which this holds.
    pub when: Option<Box<Expr>>,
}

/// A window of `GROUP BY`.
#[derive(Clone, Debug, PartialEq)]
pub enum WindowSql {
    /// `TumblingWindow(unit, size [, offset] [, AllowedLateness(unit, n)])`.
    Tumbling {
        /// Window length.
        size: TimeSpan,
        /// Where windows start, from time 0.
        offset: TimeSpan,
        /// Allowed lateness (zero: none): results given early, then revised.
        lateness: TimeSpan,
    },
    /// `HoppingWindow(unit, size, hop [, offset] [, AllowedLateness(unit, n)])`.
    Hopping {
        /// Window length.
        size: TimeSpan,
        /// How far each window starts after the previous one.
        hop: TimeSpan,
        /// Where windows start, from time 0.
        offset: TimeSpan,
        /// Allowed lateness (zero: none): results given early, then revised.
        lateness: TimeSpan,
    },
    /// `SlidingWindow(unit, size)`: a result whenever an event enters or leaves the last
    /// `size`.
    Sliding {
        /// Window length.
        size: TimeSpan,
    },
    /// `SnapshotWindow()`: the events valid at the same moment.
    Snapshot,
    /// `SessionWindow(unit, timeout, max_duration) [OVER (PARTITION BY keys)]`: a window
    /// that opens at an event, stays open while each next event comes at most `timeout`
    /// after the one before, and closes `timeout` after its last event or at the first whole
    /// multiple of `max` (from the epoch) that is at least `max` after it opened.
    Session {
        /// The longest pause within a session.
        timeout: TimeSpan,
        /// The length at which a session is closed at the next whole multiple of it.
        max: TimeSpan,
        /// `PARTITION BY`: sessions of each partition apart (none: of the whole stream).
        partition: Vec<Expr>,
        /// Allowed lateness (zero: none): results given early, then revised.
        lateness: TimeSpan,
    },
}

/// One item of `GROUP BY`.
#[derive(Clone, Debug, PartialEq)]
pub enum GroupItem {
    /// A window.
    Window(WindowSql, Pos),
    /// A key.
    Key(Expr),
}

/// An expression, with where it starts.
#[derive(Clone, Debug, PartialEq)]
pub struct Expr {
    /// What it is.
    pub kind: ExprKind,
    /// Where it starts.
    pub pos: Pos,
}

/// Binary operators.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BinOp {
    /// `OR`.
    Or,
    /// `AND`.
    And,
    /// `=`.
    Eq,
    /// `<>` or `!=`.
    Ne,
    /// `<`.
    Lt,
    /// `<=`.
    Le,
    /// `>`.
    Gt,
    /// `>=`.
    Ge,
    /// `+` (also joins strings).
    Add,
    /// `-`.
    Sub,
    /// `*`.
    Mul,
    /// `/`.
    Div,
    /// `%`.
    Rem,
}

/// The types of `CAST`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SqlType {
    /// `bigint`: a 64-bit integer.
    Bigint,
    /// `float`.
    Float,
    /// `nvarchar(max)`: a string.
    Nvarchar,
    /// `bit`: a boolean.
    Bit,
    /// `datetime`: an RFC 3339 time.
    Datetime,
    /// `record`: a nested record.
    Record,
}

/// What an expression is.
#[derive(Clone, Debug, PartialEq)]
pub enum ExprKind {
    /// `NULL`.
    Null,
    /// `TRUE`, `FALSE`.
    Bool(bool),
    /// An integer.
    Int(i64),
    /// A number with a fraction or exponent.
    Float(f64),
    /// A string in single quotes.
    Str(String),
    /// A field: `name`, `source.name`, `record.field`.
    Column(Vec<Ident>),
    /// `NOT e`.
    Not(Box<Expr>),
    /// `-e`.
    Neg(Box<Expr>),
    /// `a op b`.
    Binary(BinOp, Box<Expr>, Box<Expr>),
    /// `e IS [NOT] NULL`.
    IsNull(Box<Expr>, bool),
    /// `e [NOT] BETWEEN lo AND hi`.
    Between(Box<Expr>, Box<Expr>, Box<Expr>, bool),
    /// `e [NOT] IN (list)`.
    In(Box<Expr>, Vec<Expr>, bool),
    /// `e [NOT] LIKE pattern`.
    Like(Box<Expr>, Box<Expr>, bool),
    /// `CASE [operand] WHEN .. THEN .. [ELSE ..] END`.
    Case(Option<Box<Expr>>, Vec<(Expr, Expr)>, Option<Box<Expr>>),
    /// `CAST(e AS type)`.
    Cast(Box<Expr>, SqlType),
    /// A function call: name, arguments (`COUNT(*)`: `star`), and `OVER (ORDER BY e
    /// [DESC])` (for `TopOne`).
    Call {
        /// The function's name.
        name: Ident,
        /// Its arguments.
        args: Vec<Expr>,
        /// `COUNT(*)`.
        star: bool,
        /// `COUNT(DISTINCT e)`: each value once.
        distinct: bool,
        /// `OVER (ORDER BY e [ASC|DESC])`: the expression and whether descending.
        order: Option<(Box<Expr>, bool)>,
        /// `OVER (PARTITION BY ... LIMIT DURATION(...) WHEN ...)` of an analytic function
        /// (`LAG`, `LAST`, `ISFIRST`).
        over: Option<Box<Over>>,
    },
    /// `DATEDIFF(unit, a, b)` of two names: in a join's `ON`, `b`'s time minus `a`'s (two
    /// sources); elsewhere, as [`ExprKind::DateDiffOf`] of two fields.
    DateDiff(TimeSpan, Ident, Ident),
    /// `DATEDIFF(unit, a, b)` of two values (times): how many boundaries of the unit lie
    /// between them (`b` after `a`: positive).
    DateDiffOf(TimeSpan, Box<Expr>, Box<Expr>),
    /// `System.Timestamp()`: the event's time (a window's end in a windowed query).
    Timestamp,
}
