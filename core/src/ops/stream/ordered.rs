//! The operators that take an ordered [`Stream`] only: time shifts and lifetimes, the
//! anti-semi-join and clip, group-and-apply, snapshot and count windows, user processes.

use crate::order::Ordered;
use crate::time::{Time, TimeSpan};

use super::{QueryGraph, Stream};
use crate::ops::anti_join::{AntiSemiJoin, ClipDuration};
use crate::ops::group_apply::{GroupApply, SubQuery};
use crate::ops::process::{Process, ProcessOperator};
use crate::ops::select::{AlterDuration, AlterLifetime, Shift};
use crate::ops::windowed::{Ungrouped, WindowKind, Windowed};
use crate::ops::Key;
use crate::ops::{BinaryOperator, Payload, UnaryOperator};

impl<P: Payload> Stream<P, Ordered> {
    /// Adds any unary operator (its input and output ordered streams).
    pub fn apply<Out: Payload, Op: UnaryOperator<P, Out>>(&self, op: Op) -> Stream<Out> {
        self.unary(op)
    }

    /// Adds any binary operator with `right` as its second input (inputs and output ordered
    /// streams). Both streams must belong to the same query.
    pub fn apply_binary<R: Payload, Out: Payload, Op: BinaryOperator<P, R, Out>>(
        &self,
        right: &Stream<R>,
        op: Op,
    ) -> Stream<Out> {
        self.binary(right, op)
    }

    /// Moves events and CTIs by `by`.
    pub fn shift(&self, by: TimeSpan) -> Stream<P> {
        self.apply(Shift::new(by))
    }

    /// Gives every event the lifetime `[start, start + d)`. CTIs unchanged.
    pub fn alter_duration(&self, d: TimeSpan) -> Stream<P> {
        self.apply(AlterDuration::new(d))
    }

    /// Shifts by `shift`, then sets durations to `duration`: StreamInsight's
    /// `AlterEventLifetime` with a constant offset.
    pub fn alter_lifetime(&self, shift: TimeSpan, duration: TimeSpan) -> Stream<P> {
        self.shift(shift).alter_duration(duration)
    }

    /// New lifetimes from functions of the old (StreamInsight's `AlterEventLifetime` with
    /// selectors): start `start(old start)`, duration `duration(old start, old duration)`
    /// (`TimeSpan::MAX` for a start edge still open). `start` applies to CTIs too and must not
    /// decrease as its argument grows; a start below the last CTI or the previous result's is
    /// clamped to it (see [`AlterLifetime`]).
    ///
    /// ```
    /// use punctual_core::ops::QueryGraph;
    /// use punctual_core::{Batch, Ordered, Time, TimeSpan};
    /// let t = Time::from_ticks;
    /// let graph = QueryGraph::new();
    /// let input = graph.source::<char, Ordered>();
    /// // Each event starts at its start rounded down to 10 and lasts twice as long.
    /// let altered = input.alter_lifetime_with(|s| Time::from_ticks(s.ticks() / 10 * 10), |_, d| {
    ///     TimeSpan::from_ticks(d.ticks().saturating_mul(2))
    /// });
    /// graph.keep_output(&altered);
    /// let mut batch = Batch::new();
    /// batch.push_event(t(13), t(16), 'a');
    /// batch.push_cti(t(20));
    /// graph.feed(&input, &mut batch);
    /// let mut out = Batch::new();
    /// graph.take_output(&altered, &mut out);
    /// assert_eq!((out.sync()[0], out.other()[0]), (t(10), t(16)));
    /// assert_eq!(out.last_cti(), Some(t(20)));
    /// ```
    pub fn alter_lifetime_with(
        &self,
        start: impl Fn(Time) -> Time + Send + 'static,
        duration: impl Fn(Time, TimeSpan) -> TimeSpan + Send + 'static,
    ) -> Stream<P> {
        self.apply(AlterLifetime::new(start, duration))
    }

    /// Runs a user-defined operator over the events keyed by `key`, with per-key state and
    /// event-time timers (see [`Process`]). Its output CTI is the input's, and the operator
    /// cannot emit below it.
    pub fn process<K, Op>(
        &self,
        key: impl Fn(&P) -> K + Send + 'static,
        op: Op,
    ) -> Stream<Op::Output>
    where
        K: Key,
        Op: Process<P, K>,
        Op::Output: Payload,
    {
        self.apply(ProcessOperator::new(key, op))
    }

    /// Every event as a point at its start (StreamInsight's `ToPointEventStream`).
    pub fn to_point_events(&self) -> Stream<P> {
        self.alter_duration(TimeSpan::TICK)
    }

    /// A signal: each event lasts until the next event with an equal key starts (or to the
    /// last finite tick, if none does), StreamInsight's `ToSignal` idiom (`AlterEventDuration(max)` then
    /// `ClipEventDuration` against the stream itself).
    ///
    /// ```
    /// use punctual_core::ops::QueryGraph;
    /// use punctual_core::{Batch, Ordered, Time};
    /// let t = Time::from_ticks;
    /// let graph = QueryGraph::new();
    /// let readings = graph.source::<(char, i64), Ordered>();
    /// let signal = readings.to_signal(|r| r.0);
    /// graph.keep_output(&signal);
    /// let mut batch = Batch::new();
    /// batch.push_point(t(1), ('a', 10));
    /// batch.push_point(t(4), ('a', 12));
    /// batch.push_cti(t(5));
    /// graph.feed(&readings, &mut batch);
    /// let mut out = Batch::new();
    /// graph.take_output(&signal, &mut out);
    /// // 10 holds from 1 until 12 replaces it at 4.
    /// assert_eq!((out.sync()[0], out.other()[0], out.payloads()[0]), (t(1), t(4), ('a', 10)));
    /// ```
    pub fn to_signal<K>(&self, key: impl Fn(&P) -> K + Clone + Send + 'static) -> Stream<P>
    where
        K: Key,
    {
        self.alter_duration(TimeSpan::MAX)
            .clip_duration_on(self, key.clone(), key)
    }

    /// Left anti-semi-join on a key: the parts of each event's lifetime where no event of
    /// `right` with an equal key overlaps it.
    pub fn anti_join_on<R: Payload, K>(
        &self,
        right: &Stream<R>,
        key_left: impl Fn(&P) -> K + Send + 'static,
        key_right: impl Fn(&R) -> K + Send + 'static,
    ) -> Stream<P>
    where
        K: Key,
    {
        self.apply_binary(right, AntiSemiJoin::new(key_left, key_right))
    }

    /// Left anti-semi-join: the parts of each event's lifetime where no event of `right`
    /// overlaps it.
    pub fn anti_join<R: Payload>(&self, right: &Stream<R>) -> Stream<P> {
        self.anti_join_on(right, |_: &P| (), |_: &R| ())
    }

    /// Clips each event's end to the start of the next event of `right` with an equal key
    /// (StreamInsight's `ClipEventDuration`).
    pub fn clip_duration_on<R: Payload, K>(
        &self,
        right: &Stream<R>,
        key_left: impl Fn(&P) -> K + Send + 'static,
        key_right: impl Fn(&R) -> K + Send + 'static,
    ) -> Stream<P>
    where
        K: Key,
    {
        self.apply_binary(right, ClipDuration::new(key_left, key_right))
    }

    /// Runs a sub-query per key: `f(key, stream_of_that_key)`. Every CTI reaches every group;
    /// output CTI = min over the groups (see [`GroupApply`]). The sub-query is also built once
    /// for `K::default()`, to see only CTIs.
    pub fn group_apply<K, Out: Payload>(
        &self,
        key: impl Fn(&P) -> K + Send + 'static,
        f: impl Fn(&K, Stream<P>) -> Stream<Out> + Send + 'static,
    ) -> Stream<Out>
    where
        K: Key + Default,
    {
        let build = move |k: &K| {
            let g = QueryGraph::new();
            let source = g.source::<P, Ordered>();
            let output = f(k, source.clone());
            g.keep_output(&output);
            SubQuery {
                graph: g.take_graph(),
                source: source.node(),
                output: output.node(),
            }
        };
        self.apply(GroupApply::new(key, build))
    }

    /// Snapshot windows: one between every two consecutive event endpoints.
    pub fn snapshot_window(&self) -> Windowed<P, Ungrouped> {
        Windowed {
            stream: self.clone(),
            kind: WindowKind::Snapshot,
            group: Ungrouped,
            results: std::marker::PhantomData,
        }
    }

    /// Count windows over `n` consecutive distinct start times, moving by one start time; the
    /// result is a point one tick after the last start time.
    pub fn count_window(&self, n: usize) -> Windowed<P, Ungrouped> {
        Windowed {
            stream: self.clone(),
            kind: WindowKind::Count(n),
            group: Ungrouped,
            results: std::marker::PhantomData,
        }
    }
}
