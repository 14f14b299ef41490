//! The other half of a `LEFT [OUTER] JOIN`: each left event that no right event partners
//! (same keys, lifetimes that overlap, the other conditions hold), with `NULL` for the right,
//! once the CTIs prove that no partner can come any more.
//!
//! Both sides go through one operator, keyed by the join keys, in time order (sync time):
//! a left event waits until time passes its last tick (a timer there: it fires after every
//! event at that tick), and any right event seen by then that overlaps it and meets the
//! conditions partners it. Right events are kept while a later left event can still overlap
//! them (until their end). The result is a point at the left event's last tick plus a fixed
//! stamp (Stream Analytics' "latest time at which a partner could have occurred"; see
//! [`Unmatched::stamp`]).

use punctual_core::ops::{Process, ProcessContext, Stream};
use punctual_core::{Event, EventKind, EventShape, Time, TimeSpan};
use punctual_rows::{Row, Value};
use serde::{Deserialize, Serialize};

use crate::row_expr::RowExpr;
use crate::RowStream;

/// An event of either side of the join, through the one operator.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) enum Side {
    /// Of the left side.
    Left(Row),
    /// Of the right side.
    Right(Row),
}

/// A left event waiting for a partner.
#[derive(serde::Serialize, serde::Deserialize)]
struct Waiting {
    /// Its last tick: it is decided when time passes this.
    last: Time,
    row: Row,
    partnered: bool,
}

/// A right event that a later left event may still overlap.
#[derive(serde::Serialize, serde::Deserialize)]
struct Kept {
    start: Time,
    /// `None`: a start edge whose end has not come yet.
    end: Option<Time>,
    row: Row,
}

/// One key's waiting left events and kept right events.
#[derive(Default, serde::Serialize, serde::Deserialize)]
pub(crate) struct Partners {
    waiting: Vec<Waiting>,
    kept: Vec<Kept>,
}

/// The operator; see the module doc.
pub(crate) struct Unmatched<H, M> {
    /// Whether a left row and a right row meet the join's other conditions.
    holds: H,
    /// The result row of a left row without a partner.
    make: M,
    /// Added to a left event's last tick to give its result's time (moved up to the
    /// present if it is before): `0` when the left side's lifetimes already end where a
    /// partner could last come (a `DATEDIFF` join stretches the left side so), `-lo` when the
    /// right side is the stretched one (`DATEDIFF(unit, right, left) BETWEEN lo AND hi`: a
    /// partner could come until `left - lo`).
    pub(crate) stamp: TimeSpan,
}

impl<H, M> Process<Side, Vec<Value>> for Unmatched<H, M>
where
    H: Fn(&Row, &Row) -> bool + Send + 'static,
    M: Fn(&Row) -> Row + Send + 'static,
{
    type State = Partners;
    const KEEPS_OWN_STATE: bool = false;
    type Output = Result<Row, String>;

    fn on_event(
        &mut self,
        _key: &Vec<Value>,
        p: &mut Partners,
        event: &Event<Side>,
        ctx: &mut ProcessContext<'_, Vec<Value>, Result<Row, String>>,
    ) {
        let now = ctx.now();
        p.kept.retain(|k| k.end.is_none_or(|end| end > now));
        match (&event.payload, event.kind) {
            (Side::Left(row), kind) => {
                let (start, last) = match kind {
                    EventKind::Point(t) => (t, t),
                    EventKind::Interval { start, end } => {
                        (start, Time::from_ticks(end.ticks() - 1))
                    }
                    _ => {
                        let why = "an edge on the left of a LEFT OUTER JOIN: only points and intervals can be found without a partner";
                        ctx.emit_point(now, Err(why.to_owned()));
                        return;
                    }
                };
                // Every right event seen so far starts at or before `start`: it overlaps
                // when it ends after it.
                let partnered = p
                    .kept
                    .iter()
                    .any(|k| k.end.is_none_or(|end| end > start) && (self.holds)(row, &k.row));
                p.waiting.push(Waiting {
                    last,
                    row: row.clone(),
                    partnered,
                });
                ctx.set_timer(last);
            }
            (Side::Right(row), EventKind::EndEdge { start, end }) => {
                if let Some(k) = p
                    .kept
                    .iter_mut()
                    .find(|k| k.start == start && k.end.is_none() && k.row == *row)
                {
                    k.end = Some(end);
                    // Let go of it (and of the key, once nothing else is held) at its end.
                    ctx.set_timer(end);
                }
                p.kept.retain(|k| k.end.is_none_or(|end| end > now));
            }
            (Side::Right(row), kind) => {
                let (start, end) = match kind {
                    EventKind::Point(t) => (t, Some(t.next_tick())),
                    EventKind::Interval { start, end } => (start, Some(end)),
                    _ => (kind.sync_time(), None),
                };
                // It starts now, after every waiting left event's start: it overlaps those
                // whose last tick is not before it.
                for w in p
                    .waiting
                    .iter_mut()
                    .filter(|w| !w.partnered && w.last >= start)
                {
                    w.partnered = (self.holds)(&w.row, row);
                }
                if let Some(end) = end {
                    // Let go of it (and of the key, once nothing else is held) at its end.
                    ctx.set_timer(end);
                }
                p.kept.push(Kept {
                    start,
                    end,
                    row: row.clone(),
                });
            }
        }
    }

    fn on_timer(
        &mut self,
        _key: &Vec<Value>,
        p: &mut Partners,
        at: Time,
        ctx: &mut ProcessContext<'_, Vec<Value>, Result<Row, String>>,
    ) {
        let stamp = Time::from_ticks(at.ticks().saturating_add(self.stamp.ticks()));
        let make = &self.make;
        p.waiting.retain(|w| {
            if w.last > at {
                return true;
            }
            if !w.partnered {
                ctx.emit_point(stamp, Ok(make(&w.row)));
            }
            false
        });
        p.kept.retain(|k| k.end.is_none_or(|end| end > at));
        if p.waiting.is_empty() && p.kept.is_empty() {
            ctx.clear_state();
        }
    }

    fn output_shape(&self, _input: EventShape) -> EventShape {
        EventShape::Point
    }
}

/// The left events of `left` that no event of `right` partners, each as `make` makes it,
/// a point at its last tick plus `stamp`: partners have equal keys (`kl` over the left,
/// `kr` over the right; a right row with a `NULL` key partners nothing), overlapping
/// lifetimes, and `holds`. `right` is already without rows whose keys are `NULL`.
pub(crate) fn unmatched(
    (left, right): (RowStream, Stream<Row>),
    (kl, kr): (Vec<RowExpr>, Vec<RowExpr>),
    holds: impl Fn(&Row, &Row) -> bool + Send + 'static,
    make: impl Fn(&Row) -> Row + Send + 'static,
    stamp: TimeSpan,
) -> RowStream {
    let lefts = left.ordered().map(|r| Side::Left(r.clone()));
    let rights = right.map(|r| Side::Right(r.clone()));
    let key = move |s: &Side| match s {
        Side::Left(r) => kl.iter().map(|k| k.eval(r)).collect::<Vec<Value>>(),
        Side::Right(r) => kr.iter().map(|k| k.eval(r)).collect(),
    };
    let op = Unmatched { holds, make, stamp };
    lefts
        .union(&[&rights])
        .process(key, op)
        .named("left outer join: left events without a partner")
        .keep_ok()
        .into()
}
