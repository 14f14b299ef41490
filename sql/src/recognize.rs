//! `MATCH_RECOGNIZE`: row pattern matching (Stream Analytics', Flink SQL's), as an operator
//! with per-partition state that follows the CTIs.
//!
//! Each partition's events are read in time order (events of one moment in the order they
//! arrive). A match is sought from each event in turn (a *start*): the pattern is tried as a
//! regular expression over the events from the start on, each symbol an event for which its
//! variable's `DEFINE` condition holds (any event for a variable without one), every event at
//! most `LIMIT DURATION` after the start's. Quantifiers are greedy and alternatives are tried
//! in the order written: the match is the first the pattern's preferences reach, as a
//! backtracking regular expression finds it. A start is *decided* once no event still to come
//! could change its match: every branch preferred to the match found has failed on events
//! that are in, or the duration after the start has passed (by an event after it, or the
//! CTI). A decided match comes out then, one row (`ONE ROW PER MATCH`), a point at that
//! moment; `AFTER MATCH SKIP TO NEXT ROW` (Stream Analytics') tries the next start after the
//! match's first event, so matches may overlap; `SKIP PAST LAST ROW` (Flink's default) after
//! its last. Starts are decided in order, so rows come out in the order of their starts.
//!
//! A match holds at least one event (a pattern that could match none, `A?`, matches where it
//! matches some). Events are read at their start: an interval or a start edge counts once,
//! where it starts; an end edge adds nothing.

use std::collections::{HashSet, VecDeque};

use punctual_core::ops::{Process, ProcessContext};
use punctual_core::{Event, EventKind, EventShape, Time, TimeSpan};
use punctual_rows::{Row, Schema, Value};

use crate::ast::{Expr, ExprKind, Pattern, Recognize};
use crate::eval::{Ctx, E};
use crate::row_expr::{Cond, RowExpr};

/// The longest program a pattern compiles to (quantifiers' counts multiply it).
pub(crate) const MAX_PROGRAM: usize = 10_000;

/// One instruction of a pattern's program (a backtracking matcher's).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Inst {
    /// An event for which this variable holds (`None`: any event, `.`).
    Sym(Option<u16>),
    /// Try the first, then the second.
    Split(usize, usize),
    /// Go on at.
    Jmp(usize),
    /// A match.
    Match,
}

/// The program of `pattern`, its variables numbered by `var`; `None` when it would be
/// longer than [`MAX_PROGRAM`].
pub(crate) fn program(pattern: &Pattern, var: &dyn Fn(&str) -> u16) -> Option<Vec<Inst>> {
    let mut out = Vec::new();
    emit(pattern, var, &mut out)?;
    out.push(Inst::Match);
    Some(out)
}

fn emit(p: &Pattern, var: &dyn Fn(&str) -> u16, out: &mut Vec<Inst>) -> Option<()> {
    if out.len() > MAX_PROGRAM {
        return None;
    }
    match p {
        Pattern::Var(v) => out.push(Inst::Sym(Some(var(&v.name)))),
        Pattern::Any(_) => out.push(Inst::Sym(None)),
        Pattern::Seq(items) => {
            for i in items {
                emit(i, var, out)?;
            }
        }
        Pattern::Alt(alts) => {
            let mut jumps = Vec::new();
            for (k, a) in alts.iter().enumerate() {
                if k + 1 < alts.len() {
                    let split = out.len();
                    out.push(Inst::Split(split + 1, 0));
                    emit(a, var, out)?;
                    jumps.push(out.len());
                    out.push(Inst::Jmp(0));
                    let next = out.len();
                    out[split] = Inst::Split(split + 1, next);
                } else {
                    emit(a, var, out)?;
                }
            }
            let end = out.len();
            for j in jumps {
                out[j] = Inst::Jmp(end);
            }
        }
        Pattern::Repeat { inner, min, max } => {
            for _ in 0..*min {
                emit(inner, var, out)?;
            }
            match max {
                None => {
                    let split = out.len();
                    out.push(Inst::Split(split + 1, 0));
                    emit(inner, var, out)?;
                    out.push(Inst::Jmp(split));
                    let end = out.len();
                    out[split] = Inst::Split(split + 1, end);
                }
                Some(max) => {
                    let mut splits = Vec::new();
                    for _ in *min..*max {
                        splits.push(out.len());
                        out.push(Inst::Split(out.len() + 1, 0));
                        emit(inner, var, out)?;
                    }
                    let end = out.len();
                    for s in splits {
                        out[s] = Inst::Split(s + 1, end);
                    }
                }
            }
        }
    }
    (out.len() <= MAX_PROGRAM).then_some(())
}

/// What a try from one start gave.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Attempt {
    /// The match: the events from the start up to `end` (exclusive); each one's variable is
    /// in [`Scratch::vars`].
    Found { end: usize },
    /// No match from this start.
    Fail,
    /// Events still to come could change it.
    Open,
}

/// The events a try reads: each one's time and the variables that hold for it (bit `v`).
pub(crate) trait Symbols {
    fn len(&self) -> usize;
    fn time(&self, i: usize) -> Time;
    fn holds(&self, i: usize, var: u16) -> bool;
}

/// What a try works in, kept from one try to the next so that a try allocates nothing once
/// they have grown: the variables of the events taken so far, the choice points (instruction,
/// event) still to try, and the states tried (one tried before failed, or the try would
/// have ended, so it is not tried again).
#[derive(Default)]
pub(crate) struct Scratch {
    pub(crate) vars: Vec<u16>,
    stack: Vec<(usize, usize)>,
    tried: HashSet<(usize, usize)>,
}

/// Tries `program` from event `start` of `events`, each event at most `limit` after the
/// start's; every event at or before `known` is among `events` (none still to come).
pub(crate) fn attempt(
    program: &[Inst],
    events: &dyn Symbols,
    (start, limit, known): (usize, TimeSpan, Time),
    scratch: &mut Scratch,
) -> Attempt {
    let Some(first) = (start < events.len()).then(|| events.time(start)) else {
        return Attempt::Open;
    };
    let last_allowed = first + limit;
    let closed = last_allowed <= known;
    let Scratch { vars, stack, tried } = scratch;
    vars.clear();
    stack.clear();
    tried.clear();
    stack.push((0, start));
    while let Some((mut pc, mut i)) = stack.pop() {
        loop {
            if !tried.insert((pc, i)) {
                break;
            }
            vars.truncate(i - start);
            match program[pc] {
                // A match holds one event or more: an empty one is none.
                Inst::Match if i == start => break,
                Inst::Match => return Attempt::Found { end: i },
                Inst::Jmp(to) => pc = to,
                Inst::Split(a, b) => {
                    stack.push((b, i));
                    pc = a;
                }
                Inst::Sym(v) => {
                    if i == events.len() {
                        if closed {
                            break;
                        }
                        return Attempt::Open;
                    }
                    if events.time(i) > last_allowed || !v.is_none_or(|v| events.holds(i, v)) {
                        break;
                    }
                    vars.push(v.unwrap_or(u16::MAX));
                    pc += 1;
                    i += 1;
                }
            }
        }
    }
    Attempt::Fail
}

/// One event a partition holds.
#[derive(serde::Serialize, serde::Deserialize)]
pub(crate) struct Held {
    time: Time,
    row: Row,
    /// Bit `v`: variable `v` holds.
    holds: u64,
}

/// A partition's state: its events from the first undecided start on.
#[derive(Default, serde::Serialize, serde::Deserialize)]
pub(crate) struct Partition {
    events: VecDeque<Held>,
    /// The timer set for the first undecided start, if any.
    timer: Option<Time>,
}

impl Symbols for VecDeque<Held> {
    fn len(&self) -> usize {
        VecDeque::len(self)
    }
    fn time(&self, i: usize) -> Time {
        self[i].time
    }
    fn holds(&self, i: usize, var: u16) -> bool {
        self[i].holds & (1 << var) != 0
    }
}

/// A measure's reading of a match: the first or last value of a field over the events of a
/// variable (all of the match's, for `None`), or how many of them have it.
#[derive(Clone, Debug)]
pub(crate) struct Nav {
    pub(crate) kind: NavKind,
    pub(crate) var: Option<u16>,
    pub(crate) value: RowExpr,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum NavKind {
    First,
    Last,
    /// Events with a value that is not `NULL` (`COUNT(*)`: every event, `value` a constant).
    Count,
}

/// The operator: a partition's events matched against the pattern.
pub(crate) struct Matcher {
    pub(crate) program: Vec<Inst>,
    /// Each variable's condition (`None`: any event).
    pub(crate) conds: Vec<Option<Cond>>,
    pub(crate) limit: TimeSpan,
    pub(crate) skip_past_last: bool,
    pub(crate) navs: Vec<Nav>,
    pub(crate) nav_schema: Schema,
    /// The measures, over the row of the navigations' values.
    pub(crate) measures: Vec<E>,
    /// The partition's values kept in the output (by position), then the measures.
    pub(crate) keep_keys: Vec<usize>,
    pub(crate) out_schema: Schema,
    pub(crate) scratch: Scratch,
}

impl Matcher {
    /// Decides the partition's starts that events and time allow, in order, emitting each
    /// match; `known`: every event at or before it is in.
    fn decide(
        &mut self,
        key: &[Value],
        part: &mut Partition,
        known: Time,
        ctx: &mut ProcessContext<'_, Vec<Value>, Row>,
    ) {
        let mut next = 0;
        while next < part.events.len() {
            let range = (next, self.limit, known);
            match attempt(&self.program, &part.events, range, &mut self.scratch) {
                Attempt::Open => break,
                Attempt::Fail => next += 1,
                Attempt::Found { end } => {
                    let vars = &self.scratch.vars;
                    let row = self.row(key, &part.events, next, vars, ctx.now());
                    ctx.emit_point(ctx.now(), row);
                    next = if self.skip_past_last {
                        end.max(next + 1)
                    } else {
                        next + 1
                    };
                }
            }
        }
        part.events.drain(..next.min(part.events.len()));
        match part.events.front() {
            Some(first) => {
                let at = first.time + self.limit;
                if part.timer != Some(at) {
                    if let Some(old) = part.timer {
                        ctx.cancel_timer(old);
                    }
                    part.timer = Some(at);
                    ctx.set_timer(at);
                }
            }
            None => ctx.clear_state(),
        }
    }

    /// A match's row: the partition's kept values, then the measures.
    fn row(
        &self,
        key: &[Value],
        events: &VecDeque<Held>,
        start: usize,
        vars: &[u16],
        now: Time,
    ) -> Row {
        let matched = || {
            vars.iter()
                .enumerate()
                .map(move |(k, v)| (*v, &events[start + k].row))
        };
        let navs = self.nav_schema.row(self.navs.iter().map(|n| {
            let of_var = |(v, _): &(u16, &Row)| n.var.is_none_or(|w| w == *v);
            match n.kind {
                NavKind::First => matched()
                    .find(of_var)
                    .map_or(Value::Null, |(_, r)| n.value.eval(r)),
                NavKind::Last => matched()
                    .filter(of_var)
                    .last()
                    .map_or(Value::Null, |(_, r)| n.value.eval(r)),
                NavKind::Count => {
                    let count = matched()
                        .filter(of_var)
                        .filter(|(_, r)| !matches!(n.value.eval(r), Value::Null))
                        .count();
                    Value::Int(i64::try_from(count).unwrap_or(i64::MAX))
                }
            }
        }));
        let cx = Ctx::row(&navs, now);
        let keys = self
            .keep_keys
            .iter()
            .map(|&k| key.get(k).cloned().unwrap_or(Value::Null));
        let measures = self.measures.iter().map(|m| m.with(&cx, Value::clone));
        self.out_schema.row(keys.chain(measures))
    }
}

impl Process<Row, Vec<Value>> for Matcher {
    type State = Partition;
    const KEEPS_OWN_STATE: bool = false;
    type Output = Row;

    fn on_event(
        &mut self,
        key: &Vec<Value>,
        part: &mut Partition,
        event: &Event<Row>,
        ctx: &mut ProcessContext<'_, Vec<Value>, Row>,
    ) {
        let time = match event.kind {
            EventKind::Point(t) | EventKind::StartEdge(t) => t,
            EventKind::Interval { start, .. } => start,
            EventKind::EndEdge { .. } => return,
        };
        let mut holds = 0u64;
        for (v, cond) in self.conds.iter().enumerate() {
            if cond.as_ref().is_none_or(|c| c.holds(&event.payload)) {
                holds |= 1 << v;
            }
        }
        part.events.push_back(Held {
            time,
            row: event.payload.clone(),
            holds,
        });
        // Events of this moment may still come; every earlier one is in.
        self.decide(
            key,
            part,
            Time::from_ticks(time.ticks().saturating_sub(1)),
            ctx,
        );
    }

    fn on_timer(
        &mut self,
        key: &Vec<Value>,
        part: &mut Partition,
        at: Time,
        ctx: &mut ProcessContext<'_, Vec<Value>, Row>,
    ) {
        if part.timer == Some(at) {
            part.timer = None;
        }
        self.decide(key, part, at, ctx);
    }

    fn output_shape(&self, _input: EventShape) -> EventShape {
        EventShape::Point
    }
}

/// The columns of a `MATCH_RECOGNIZE`'s rows: the `PARTITION BY` fields a measure does not
/// name, then the measures.
pub(crate) fn columns(spec: &Recognize) -> Vec<String> {
    let measures = spec.measures.iter().map(|(_, n)| n.name.clone());
    partition_names(spec)
        .into_iter()
        .filter(|p| {
            !spec
                .measures
                .iter()
                .any(|(_, n)| n.name.eq_ignore_ascii_case(p))
        })
        .chain(measures)
        .collect()
}

/// Each `PARTITION BY` expression's name: a field's own name, `colN` otherwise.
pub(crate) fn partition_names(spec: &Recognize) -> Vec<String> {
    spec.partition
        .iter()
        .enumerate()
        .map(|(k, e)| match &e.kind {
            ExprKind::Column(path) => path.last().map_or(String::new(), |i| i.name.clone()),
            _ => format!("col{}", k + 1),
        })
        .collect()
}

/// The clause in one line, for `explain`.
pub(crate) fn describe(spec: &Recognize) -> String {
    let partition: Vec<String> = spec.partition.iter().map(crate::plan::text::expr).collect();
    let limit = spec.limit.map_or(String::new(), |d| format!(" within {d}"));
    format!(
        "match_recognize {}{}{} -> {}",
        pattern_text(&spec.pattern),
        if partition.is_empty() {
            String::new()
        } else {
            format!(" per {}", partition.join(", "))
        },
        limit,
        columns(spec).join(", ")
    )
}

/// A pattern as written.
pub(crate) fn pattern_text(p: &Pattern) -> String {
    match p {
        Pattern::Var(v) => v.name.clone(),
        Pattern::Any(_) => ".".into(),
        Pattern::Seq(items) => items.iter().map(pattern_text).collect::<Vec<_>>().join(" "),
        Pattern::Alt(alts) => format!(
            "({})",
            alts.iter()
                .map(pattern_text)
                .collect::<Vec<_>>()
                .join(" | ")
        ),
        Pattern::Repeat { inner, min, max } => {
            let q = match (min, max) {
                (0, None) => "*".to_owned(),
                (1, None) => "+".to_owned(),
                (0, Some(1)) => "?".to_owned(),
                (n, None) => format!("{{{n},}}"),
                (n, Some(m)) if n == m => format!("{{{n}}}"),
                (n, Some(m)) => format!("{{{n},{m}}}"),
            };
            if matches!(**inner, Pattern::Seq(_)) {
                format!("({}){q}", pattern_text(inner))
            } else {
                format!("{}{q}", pattern_text(inner))
            }
        }
    }
}

/// The variables `pattern` names, in order of first appearance.
pub(crate) fn variables(p: &Pattern, out: &mut Vec<crate::ast::Ident>) {
    match p {
        Pattern::Var(v) => {
            if !out.iter().any(|o| o.name.eq_ignore_ascii_case(&v.name)) {
                out.push(v.clone());
            }
        }
        Pattern::Any(_) => {}
        Pattern::Seq(items) | Pattern::Alt(items) => items.iter().for_each(|i| variables(i, out)),
        Pattern::Repeat { inner, .. } => variables(inner, out),
    }
}

/// Rewrites `e` bottom-up where `f` says: `f` returns `Some(replacement)` for a node it
/// replaces (its children are then not visited) or `None` to go into its children.
pub(crate) fn rewrite(
    e: &Expr,
    f: &mut dyn FnMut(&Expr) -> Result<Option<Expr>, crate::SqlError>,
) -> Result<Expr, crate::SqlError> {
    if let Some(new) = f(e)? {
        return Ok(new);
    }
    let kind = match &e.kind {
        ExprKind::Not(a) => ExprKind::Not(boxed(a, f)?),
        ExprKind::Neg(a) => ExprKind::Neg(boxed(a, f)?),
        ExprKind::Binary(op, a, b) => ExprKind::Binary(*op, boxed(a, f)?, boxed(b, f)?),
        ExprKind::IsNull(a, not) => ExprKind::IsNull(boxed(a, f)?, *not),
        ExprKind::Between(a, lo, hi, not) => {
            ExprKind::Between(boxed(a, f)?, boxed(lo, f)?, boxed(hi, f)?, *not)
        }
        ExprKind::In(a, list, not) => {
            let a = boxed(a, f)?;
            let list = list
                .iter()
                .map(|x| rewrite(x, &mut *f))
                .collect::<Result<Vec<_>, _>>()?;
            ExprKind::In(a, list, *not)
        }
        ExprKind::Like(a, b, not) => ExprKind::Like(boxed(a, f)?, boxed(b, f)?, *not),
        ExprKind::Case(operand, whens, other) => {
            let operand = match operand {
                Some(o) => Some(boxed(o, f)?),
                None => None,
            };
            let whens = whens
                .iter()
                .map(|(w, t)| Ok((rewrite(w, &mut *f)?, rewrite(t, &mut *f)?)))
                .collect::<Result<Vec<_>, crate::SqlError>>()?;
            let other = match other {
                Some(o) => Some(boxed(o, f)?),
                None => None,
            };
            ExprKind::Case(operand, whens, other)
        }
        ExprKind::Cast(a, t) => ExprKind::Cast(boxed(a, f)?, *t),
        ExprKind::Call {
            name,
            args,
            star,
            distinct,
            order,
            over,
        } => ExprKind::Call {
            name: name.clone(),
            args: args
                .iter()
                .map(|x| rewrite(x, &mut *f))
                .collect::<Result<Vec<_>, _>>()?,
            star: *star,
            distinct: *distinct,
            order: order.clone(),
            over: over.clone(),
        },
        ExprKind::DateDiffOf(u, a, b) => ExprKind::DateDiffOf(*u, boxed(a, f)?, boxed(b, f)?),
        other => other.clone(),
    };
    Ok(Expr { kind, pos: e.pos })
}

fn boxed(
    e: &Expr,
    f: &mut dyn FnMut(&Expr) -> Result<Option<Expr>, crate::SqlError>,
) -> Result<Box<Expr>, crate::SqlError> {
    rewrite(e, f).map(Box::new)
}
