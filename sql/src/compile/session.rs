//! Stream Analytics' session windows, `SessionWindow(unit, timeout, max_duration) [OVER
//! (PARTITION BY keys)]`, as an operator with per-partition state and event-time timers.
//!
//! A session opens at an event (of its partition; of the whole stream without `PARTITION
//! BY`), takes every next event that comes at most `timeout` after the one before, and closes
//! at the earlier of `timeout` after its last event and its *check*: the first whole multiple
//! of `max_duration` from the epoch that is at least `max_duration` after it opened (Stream
//! Analytics checks the duration at `0, max, 2 max, ...`, so a session lasts up to twice
//! `max_duration`). An event exactly at the close belongs to the session (its end is
//! inclusive, as the language's other windows); an event after it opens the next one. At
//! the close, each group of the session (by the `GROUP BY` keys) gives its result, a point at
//! the close (`System.Timestamp()`), groups in the order of their keys.
//!
//! Events are read at their start: an interval or a start edge counts once, where it starts;
//! an end edge adds nothing.

use punctual_core::ops::{Aggregate, FxHashMap, Process, ProcessContext};
use punctual_core::{Event, EventKind, EventShape};
use std::cmp::Ordering;

use punctual_rows::compare_values;

use super::*;

/// The `GROUP BY` part of a session window: its groups' keys and aggregates and what a
/// group's result is made into.
pub(super) struct Sessions<Out> {
    timeout: TimeSpan,
    max: TimeSpan,
    keys: Vec<RowExpr>,
    aggs: SqlAggs,
    make: Make<Out>,
}

/// What a group's result is made into, from its keys' values and its aggregates.
type Make<Out> = Box<dyn Fn(&[Value], Row) -> Out + Send>;

/// One partition's open session.
#[derive(serde::Serialize, serde::Deserialize)]
pub(super) struct Session<S> {
    /// When it closes unless an event comes first (its timer); `None`: no session is open.
    closes: Option<Time>,
    /// The first whole multiple of the maximum duration at least that long after it opened.
    check: Time,
    /// Its groups' aggregates, by their keys' values.
    groups: FxHashMap<Vec<Value>, S>,
}

impl<S> Default for Session<S> {
    fn default() -> Self {
        Session {
            closes: None,
            check: Time::INF,
            groups: FxHashMap::default(),
        }
    }
}

/// The first whole multiple of `max` at or after `start + max` (`+inf` past the last finite
/// time).
pub(super) fn check_after(start: Time, max: TimeSpan) -> Time {
    let m = max.ticks().max(1);
    start
        .ticks()
        .checked_add(m)
        .and_then(|end| {
            let up = end.div_euclid(m) + i64::from(end.rem_euclid(m) != 0);
            up.checked_mul(m)
        })
        .filter(|c| *c < Time::INF.ticks())
        .map_or(Time::INF, Time::from_ticks)
}

impl<Out: Payload> Process<Row, Vec<Value>> for Sessions<Out> {
    type State = Session<<SqlAggs as Aggregate<Row>>::State>;
    type Output = Out;
    const KEEPS_OWN_STATE: bool = false;

    fn on_event(
        &mut self,
        _partition: &Vec<Value>,
        session: &mut Self::State,
        event: &Event<Row>,
        ctx: &mut ProcessContext<'_, Vec<Value>, Out>,
    ) {
        let t = match event.kind {
            EventKind::Point(t) | EventKind::StartEdge(t) => t,
            EventKind::Interval { start, .. } => start,
            EventKind::EndEdge { .. } => return,
        };
        // A session past its close has been closed by its timer before this event came.
        if let Some(old) = session.closes {
            ctx.cancel_timer(old);
        } else {
            session.check = check_after(t, self.max);
        }
        let closes = t.ticks().saturating_add(self.timeout.ticks());
        let closes = Time::from_ticks(closes.min(Time::MAX_FINITE.ticks())).min(session.check);
        session.closes = Some(closes);
        ctx.set_timer(closes);
        let key: Vec<Value> = self.keys.iter().map(|k| k.eval(&event.payload)).collect();
        let aggs = &self.aggs;
        aggs.add(
            session.groups.entry(key).or_insert_with(|| aggs.init()),
            &event.payload,
        );
    }

    fn on_timer(
        &mut self,
        _partition: &Vec<Value>,
        session: &mut Self::State,
        at: Time,
        ctx: &mut ProcessContext<'_, Vec<Value>, Out>,
    ) {
        let mut groups: Vec<_> = session.groups.drain().collect();
        groups.sort_by(|(a, _), (b, _)| keys_order(a, b));
        for (keys, state) in groups {
            ctx.emit_point(at, (self.make)(&keys, self.aggs.result(&state)));
        }
        ctx.clear_state();
    }

    fn output_shape(&self, _input: EventShape) -> EventShape {
        EventShape::Point
    }
}

/// An order of groups' keys: by value, key after key; values of different kinds (a number
/// and a text) by kind.
pub(super) fn keys_order(a: &[Value], b: &[Value]) -> Ordering {
    let kind = |v: &Value| match v {
        Value::Null => 0,
        Value::Bool(_) => 1,
        Value::Int(_) | Value::Float(_) => 2,
        Value::Str(_) => 3,
        Value::List(_) => 4,
        Value::Row(_) => 5,
    };
    a.iter()
        .zip(b)
        .map(|(x, y)| compare_values(x, y).unwrap_or_else(|| kind(x).cmp(&kind(y))))
        .find(|o| o.is_ne())
        .unwrap_or(Ordering::Equal)
}

/// The session windows of `stream` (in time order), each partition's apart, grouped by `keys`
/// with `aggs` over each group, each group's result what `make` makes of its keys' values and
/// aggregates.
#[allow(
    clippy::too_many_arguments,
    reason = "the window's two lengths and its partition, then the groups'"
)]
pub(super) fn sessions<Out: Payload>(
    stream: &RowStream,
    (timeout, max, lateness): (TimeSpan, TimeSpan, TimeSpan),
    partition: Vec<E>,
    keys: Vec<E>,
    aggs: SqlAggs,
    make: impl Fn(&[Value], Row) -> Out + Send + 'static,
    label: &str,
) -> AnyStream<Out> {
    let partition: Vec<RowExpr> = partition.into_iter().map(RowExpr::new).collect();
    if let (AnyStream::Arrival(s), true) = (stream, lateness.ticks() > 0) {
        let op = super::late_session::LateSessions::new(
            (timeout, max, lateness),
            partition,
            keys.into_iter().map(RowExpr::new).collect(),
            aggs,
            Box::new(make),
        );
        return s.apply_unordered(op).named(label).into();
    }
    let op = Sessions {
        timeout,
        max,
        keys: keys.into_iter().map(RowExpr::new).collect(),
        aggs,
        make: Box::new(make),
    };
    stream
        .ordered()
        .process(
            move |r: &Row| partition.iter().map(|k| k.eval(r)).collect::<Vec<_>>(),
            op,
        )
        .named(label)
        .into()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_check_is_the_first_multiple_of_the_maximum_at_least_that_long_after_the_start() {
        let max = TimeSpan::from_ticks(10);
        let at = |t| check_after(Time::from_ticks(t), max).ticks();
        assert_eq!(at(0), 10);
        assert_eq!(at(1), 20);
        assert_eq!(at(9), 20);
        assert_eq!(at(10), 20);
        assert_eq!(at(-1), 10);
        assert_eq!(at(-10), 0);
        assert_eq!(check_after(Time::MAX_FINITE, max), Time::INF);
    }
}
