//! Stream Analytics' analytic functions, `LAG`, `LAST` and `ISFIRST`, in a select of one
//! source: each is computed for every event of the source in time order (events of one moment
//! in the order they arrive), before the `WHERE` (which does not hide events from them), over
//! the earlier events `OVER (PARTITION BY keys LIMIT DURATION(unit, n) WHEN condition)` lets
//! it see:
//!
//! - `LAG(e [, k [, default]])`: `e` over the `k`-th latest earlier event (1 by default) of the
//!   current event's partition, at most the duration before it, for which the `WHEN`
//!   condition held; `default` (`NULL` unless given, computed over the current event) if there
//!   is none;
//! - `LAST(e [, default])`: the same with the current event included (`LAG` at 0);
//! - `ISFIRST(unit, n)`: 1 if the event is the first of its partition (for which `WHEN`
//!   holds) in its tumbling window of `n` units, 0 otherwise. The windows are the language's
//!   tumbling windows: `(end - n, end]`, ends at whole multiples of `n` from the epoch.
//!
//! State follows the CTIs: each partition keeps the events its functions can still read (at
//! most `k`, within the duration), and partitions that time has emptied are let go.

use std::collections::VecDeque;

use punctual_core::ops::state::{self, StateError};
use punctual_core::ops::{FxHashMap, Process, ProcessContext};
use punctual_core::{Event, EventKind, EventShape, Time, TimeSpan};
use punctual_rows::{Row, Value};

use crate::ast::{Expr, ExprKind, Ident, Over, SelectItem};
use crate::compile::{Built, Compiler};
use crate::eval::{Ctx, E};
use crate::lower::Grouping;
use crate::lower::{compile, constant};
use crate::scope::{err, Scope};
use crate::select::{project_in, Item};
use crate::SqlError;

/// Whether `name` is an analytic function (any case).
pub(crate) fn is_analytic(name: &str) -> bool {
    matches!(
        name.to_ascii_lowercase().as_str(),
        "lag" | "last" | "isfirst"
    )
}

/// What one analytic function computes.
#[derive(Clone, Debug)]
enum Kind {
    /// `LAG(value, offset, default)`; `LAST` is offset 0.
    Lag {
        value: E,
        offset: usize,
        default: Option<E>,
    },
    /// `ISFIRST(unit, n)`: windows of this length.
    IsFirst(TimeSpan),
}

/// One analytic function of a select, compiled.
#[derive(Clone, Debug)]
pub(crate) struct Analytic {
    kind: Kind,
    partition: Vec<E>,
    duration: TimeSpan,
    when: Option<E>,
}

/// Compiles a call of the analytic function `name` over one row of `scope`.
pub(crate) fn analytic(
    name: &Ident,
    args: &[Expr],
    over: Option<&Over>,
    scope: &Scope,
) -> Result<Analytic, SqlError> {
    let lower = name.name.to_ascii_lowercase();
    let upper = name.name.to_uppercase();
    let row_expr = |x: &Expr| compile(x, scope, None, false);
    let (partition, duration, when) = match over {
        Some(o) => {
            let mut keys = Vec::new();
            for k in &o.partition {
                keys.push(row_expr(k)?);
            }
            let when = match &o.when {
                Some(w) => Some(row_expr(w)?),
                None => None,
            };
            (keys, o.duration, when)
        }
        None => (Vec::new(), None, None),
    };
    let kind = match lower.as_str() {
        "isfirst" => {
            if duration.is_some() {
                return Err(err(
                    name.pos,
                    "ISFIRST takes its window as arguments (ISFIRST(minute, 10)), not LIMIT DURATION",
                ));
            }
            Kind::IsFirst(window(name, args)?)
        }
        _ => {
            let value = args.first().ok_or_else(|| {
                err(
                    name.pos,
                    format!("{upper} takes the value to look up first"),
                )
            })?;
            let (offset, default) = match (lower.as_str(), &args[1..]) {
                ("last", []) => (0, None),
                ("last", [d]) => (0, Some(d)),
                ("lag", []) => (1, None),
                ("lag", [k]) => (offset(k)?, None),
                ("lag", [k, d]) => (offset(k)?, Some(d)),
                _ => {
                    return Err(err(
                        name.pos,
                        format!(
                            "{upper} takes at most {} arguments",
                            if lower == "lag" { 3 } else { 2 }
                        ),
                    ))
                }
            };
            Kind::Lag {
                value: row_expr(value)?,
                offset,
                default: default.map(row_expr).transpose()?,
            }
        }
    };
    let duration = match (&kind, duration) {
        (Kind::IsFirst(size), _) => *size,
        (_, Some(d)) => d,
        (_, None) => {
            return Err(err(
                name.pos,
                format!("{upper} needs OVER (LIMIT DURATION(unit, n)): how far back it looks"),
            ))
        }
    };
    Ok(Analytic {
        kind,
        partition,
        duration,
        when,
    })
}

/// `LAG`'s offset: a whole number of at least 1.
fn offset(k: &Expr) -> Result<usize, SqlError> {
    let n = constant(k)?;
    usize::try_from(n)
        .ok()
        .filter(|&n| (1..=10_000).contains(&n))
        .ok_or_else(|| err(k.pos, "LAG's offset is a whole number from 1 to 10000"))
}

/// `ISFIRST(unit, n)`'s window length.
fn window(name: &Ident, args: &[Expr]) -> Result<TimeSpan, SqlError> {
    let [unit, n] = args else {
        return Err(err(
            name.pos,
            "ISFIRST takes a unit and a length: ISFIRST(minute, 10)",
        ));
    };
    let unit_name = match &unit.kind {
        ExprKind::Column(path) if path.len() == 1 => path[0].name.clone(),
        _ => {
            return Err(err(
                unit.pos,
                "ISFIRST's first argument is a unit (second, minute, ...)",
            ))
        }
    };
    const UNITS: &[&str] = &[
        "day",
        "dd",
        "d",
        "hour",
        "hh",
        "minute",
        "mi",
        "n",
        "second",
        "ss",
        "s",
        "millisecond",
        "ms",
        "microsecond",
        "mcs",
        "tick",
    ];
    if !UNITS.contains(&unit_name.to_ascii_lowercase().as_str()) {
        return Err(err(
            unit.pos,
            format!("`{unit_name}` is not a unit of time (second, minute, hour, ...)"),
        ));
    }
    let n = constant(n)?;
    if n <= 0 {
        return Err(err(args[1].pos, "ISFIRST's window length is positive"));
    }
    crate::parse::unit_span(&unit_name, n)
        .ok_or_else(|| err(unit.pos, format!("`{unit_name}` is not a unit of time")))
}

/// What one function keeps: per partition, the events it can still read (`LAG`, `LAST`), or
/// the last window it saw an event in (`ISFIRST`).
#[derive(Debug, Default, serde::Serialize, serde::Deserialize)]
struct Kept {
    events: FxHashMap<Vec<Value>, VecDeque<(Time, Value)>>,
    windows: FxHashMap<Vec<Value>, i64>,
}

/// The select: its analytic functions, its `WHERE` and its columns, over each event.
pub(crate) struct AnalyticSelect {
    analytics: Vec<Analytic>,
    kept: Vec<Kept>,
    filter: Option<E>,
    items: Vec<Item>,
    /// When partitions emptied by time are next let go.
    sweep_at: Time,
}

impl AnalyticSelect {
    pub(crate) fn new(analytics: Vec<Analytic>, filter: Option<E>, items: Vec<Item>) -> Self {
        AnalyticSelect {
            kept: analytics.iter().map(|_| Kept::default()).collect(),
            analytics,
            filter,
            items,
            sweep_at: Time::NEG_INF,
        }
    }

    /// Each function's value at the event `row` at `t`, the functions' state moved past it.
    fn values(&mut self, row: &Row, t: Time) -> Vec<Value> {
        let cx = Ctx::row(row, t);
        let mut out = Vec::with_capacity(self.analytics.len());
        for (a, kept) in self.analytics.iter().zip(&mut self.kept) {
            let key: Vec<Value> = a
                .partition
                .iter()
                .map(|k| k.with(&cx, Value::clone))
                .collect();
            let counts = a.when.as_ref().is_none_or(|w| w.holds(&cx));
            let value = match &a.kind {
                Kind::IsFirst(size) => {
                    let w = window_of(t, *size);
                    let first = counts && kept.windows.get(&key) != Some(&w);
                    if first {
                        kept.windows.insert(key, w);
                    }
                    Value::Int(i64::from(first))
                }
                Kind::Lag {
                    value,
                    offset,
                    default,
                } => {
                    let since = t - a.duration;
                    let seen = kept.events.entry(key).or_default();
                    while seen.front().is_some_and(|(at, _)| *at < since) {
                        seen.pop_front();
                    }
                    let current = counts.then(|| (t, value.with(&cx, Value::clone)));
                    // `LAST` (offset 0) reads this event if it counts; `LAG` the `offset`-th
                    // latest before it.
                    let found = if *offset == 0 {
                        seen.extend(current);
                        seen.back().map(|(_, v)| v.clone())
                    } else {
                        let found = seen
                            .len()
                            .checked_sub(*offset)
                            .and_then(|i| seen.get(i))
                            .map(|(_, v)| v.clone());
                        seen.extend(current);
                        found
                    };
                    while seen.len() > (*offset).max(1) {
                        seen.pop_front();
                    }
                    match (found, default) {
                        (Some(v), _) => v,
                        (None, Some(d)) => d.with(&cx, Value::clone),
                        (None, None) => Value::Null,
                    }
                }
            };
            out.push(value);
        }
        if t >= self.sweep_at {
            self.sweep(t);
        }
        out
    }

    /// Lets go of partitions with nothing the functions can still read at `t`.
    fn sweep(&mut self, t: Time) {
        let mut longest = TimeSpan::from_ticks(1);
        for (a, kept) in self.analytics.iter().zip(&mut self.kept) {
            longest = longest.max(a.duration);
            let since = t - a.duration;
            kept.events
                .retain(|_, seen| seen.back().is_some_and(|(at, _)| *at >= since));
            if let Kind::IsFirst(size) = a.kind {
                let now = window_of(t, size);
                kept.windows.retain(|_, w| *w >= now);
            }
        }
        self.sweep_at = t + longest;
    }

    /// The select's row for the event `row` at `t`, if its `WHERE` holds.
    fn select(&mut self, row: &Row, t: Time) -> Result<Option<Row>, String> {
        let values = self.values(row, t);
        crate::limits::checked("its WHERE condition or select list", || {
            let cx = Ctx {
                row,
                pair: None,
                time: t,
                keys: &[],
                aggs: &values,
            };
            if self.filter.as_ref().is_some_and(|f| !f.holds(&cx)) {
                return None;
            }
            Some(project_in(&self.items, row, &cx))
        })
    }
}

/// The tumbling window of `size` that holds `t`: `(end - size, end]`, numbered by its end.
fn window_of(t: Time, size: TimeSpan) -> i64 {
    let size = size.ticks().max(1);
    t.ticks()
        .saturating_sub(1)
        .div_euclid(size)
        .saturating_add(1)
}

impl Process<Row, ()> for AnalyticSelect {
    type State = ();
    type Output = Result<Row, String>;

    fn save_own(&self, out: &mut Vec<u8>) -> Result<(), StateError> {
        state::write("process", &(&self.kept, self.sweep_at), out)
    }

    fn restore_own(&mut self, bytes: &[u8]) -> Result<(), StateError> {
        let (kept, sweep_at): (Vec<Kept>, Time) = state::read("process", bytes)?;
        if kept.len() != self.kept.len() {
            return Err(StateError::Mismatch(
                "another number of analytic functions".to_owned(),
            ));
        }
        (self.kept, self.sweep_at) = (kept, sweep_at);
        Ok(())
    }

    fn on_event(
        &mut self,
        _key: &(),
        _state: &mut (),
        event: &Event<Row>,
        ctx: &mut ProcessContext<'_, (), Result<Row, String>>,
    ) {
        match event.kind {
            EventKind::Point(t) => match self.select(&event.payload, t) {
                Ok(Some(row)) => ctx.emit_point(t, Ok(row)),
                Ok(None) => {}
                Err(why) => ctx.emit_point(t, Err(why)),
            },
            EventKind::Interval { start, end } => match self.select(&event.payload, start) {
                Ok(Some(row)) => ctx.emit(start, end, Ok(row)),
                Ok(None) => {}
                Err(why) => ctx.emit_point(start, Err(why)),
            },
            kind => ctx.emit_point(
                kind.sync_time(),
                Err(
                    "an edge: analytic functions (LAG, LAST, ISFIRST) read points and intervals"
                        .to_owned(),
                ),
            ),
        }
        // What the functions keep is the operator's own (per partition), not the key's.
        ctx.clear_state();
    }

    fn on_timer(
        &mut self,
        _key: &(),
        _state: &mut (),
        _at: Time,
        _ctx: &mut ProcessContext<'_, (), Result<Row, String>>,
    ) {
    }

    /// Each event's row at its own lifetime: points stay points.
    fn output_shape(&self, input: EventShape) -> EventShape {
        match input {
            EventShape::Point => EventShape::Point,
            _ => EventShape::Interval,
        }
    }
}

impl Compiler<'_> {
    /// A select of one source with analytic functions ([`crate::plan::Node::Analytic`]): the
    /// functions over every event of `built` in time order, then its `WHERE`, then its
    /// columns; an event whose condition or columns cannot be computed is dropped with the
    /// reason.
    pub(crate) fn analytic(
        &self,
        built: Built,
        filter: Option<&Expr>,
        items: &[SelectItem],
    ) -> Result<Built, SqlError> {
        let mut lifted = Grouping::over_rows();
        let filter = match filter {
            Some(w) => Some(compile(w, &built.scope, Some(&mut lifted), false)?),
            None => None,
        };
        let (items, names) = self.plain_items(items, &built.scope, Some(&mut lifted))?;
        let analytics = lifted.analytics.unwrap_or_default();
        let select = AnalyticSelect::new(analytics, filter, items);
        let label = format!("{}: analytic functions", self.label.borrow());
        let stream = built
            .stream
            .ordered()
            .process(|_: &Row| (), select)
            .named(label)
            .keep_ok();
        Ok(Built::rows(stream.into(), names))
    }
}
