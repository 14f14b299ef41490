//! Windows over a stream waiting for an aggregate ([`Windowed`]): what
//! [`Stream::hopping_window`], [`Stream::snapshot_window`] and [`Stream::count_window`] give,
//! grouped or not, made into a window operator by `aggregate`.

use crate::order::{Order, Ordered, Unordered};
use crate::time::{Time, TimeSpan};

use super::aggregate::{Aggregate, Count};
use super::snapshot::{CountWindow, SnapshotWindow};
use super::stream::Stream;
use super::window::{HoppingWindow, WindowOutput, WindowSpec};
use super::{Key, Payload};

/// No grouping: one result per window.
#[derive(Clone, Copy, Debug)]
pub struct Ungrouped;

/// Grouping by a key function: one result per window and group.
#[derive(Clone, Copy, Debug)]
pub struct GroupedBy<F>(F);

#[derive(Clone, Copy, Debug)]
pub(super) enum WindowKind {
    Hopping(WindowSpec),
    Snapshot,
    Count(usize),
}

/// Windows over a stream (of order `O`), waiting for an aggregate whose results come in
/// order `R` ([`Ordered`]; [`Unordered`] with [`Windowed::allowed_lateness`]). See
/// [`Stream::hopping_window`], [`Stream::snapshot_window`], [`Stream::count_window`].
#[derive(Debug)]
pub struct Windowed<P, G, O = Ordered, R = Ordered> {
    pub(super) stream: Stream<P, O>,
    pub(super) kind: WindowKind,
    pub(super) group: G,
    pub(super) results: std::marker::PhantomData<R>,
}

impl<P: Payload, G> Windowed<P, G, Unordered> {
    /// Flink's allowed lateness: each window gives its result as soon as the input CTI plus
    /// `lateness` passes it (on time), revises it at each later CTI if events that came since
    /// changed it, and makes it final when the CTI reaches the window's end. Meant for an
    /// unordered input whose CTIs trail its watermark by `lateness` (its generation delay is
    /// the out-of-orderness plus the lateness): events up to `lateness` behind the watermark
    /// still count, later ones break the CTI and go where its policy sends them (dropped to
    /// the dead letters, as Flink's late-data side output). Only over an unordered stream: a
    /// sorted one holds its events until the CTI passes them, so the results given early
    /// would miss them.
    ///
    /// Each result, per window and group, is a chain of edges: `S(a)` at the result's time
    /// `a` (the window's end by default), then for each revision `E(t, w)` and `S(w)`, `w` the
    /// watermark the changing events came under, and finally `E(t, end + lateness)`. So a
    /// result's value at any time is the one known when the watermark was there; a consumer
    /// tells the on-time value (its start is `a`) from revisions (later starts). The results
    /// are unordered (a start edge comes before the CTI passes it). Hopping and tumbling
    /// windows: snapshot and count windows are made from sorted streams only, and a window
    /// kind that is not hopping ignores it.
    /// The operator counts the events it took on time and late ([`NodeStats::lateness`]).
    ///
    /// [`NodeStats::lateness`]: crate::ops::NodeStats::lateness
    ///
    /// ```
    /// use punctual_core::ops::QueryGraph;
    /// use punctual_core::{Batch, StreamItem, Time, TimeSpan, Unordered};
    /// let t = Time::from_ticks;
    /// let graph = QueryGraph::new();
    /// let input = graph.source::<u32, Unordered>();
    /// let counts = input
    ///     .tumbling_window(TimeSpan::from_ticks(10))
    ///     .allowed_lateness(TimeSpan::from_ticks(5))
    ///     .count();
    /// graph.keep_output(&counts);
    /// let mut batch = Batch::new();
    /// batch.push_point(t(3), 1);
    /// batch.push_cti(t(6)); // the watermark (11) is past the window's end: given on time
    /// batch.push_point(t(7), 1); // late: counts, under the CTI's lateness
    /// batch.push_cti(t(10)); // revised, then final
    /// graph.feed(&input, &mut batch);
    /// let mut out = Batch::new();
    /// graph.take_output(&counts, &mut out);
    /// let mut items = Vec::new();
    /// out.drain_items(|i| items.push(i));
    /// assert_eq!(items[0], StreamItem::start_edge(t(10), 1));
    /// assert_eq!(items[2], StreamItem::end_edge(t(10), t(11), 1)); // revised under 6 + 5
    /// assert_eq!(items[3], StreamItem::start_edge(t(11), 2));
    /// assert_eq!(items[4], StreamItem::end_edge(t(11), t(15), 2)); // final at 10 + 5
    /// ```
    pub fn allowed_lateness(self, lateness: TimeSpan) -> Windowed<P, G, Unordered, Unordered> {
        let kind = match self.kind {
            WindowKind::Hopping(spec) => WindowKind::Hopping(spec.allowed_lateness(lateness)),
            other => other,
        };
        Windowed {
            stream: self.stream,
            kind,
            group: self.group,
            results: std::marker::PhantomData,
        }
    }
}

impl<P: Payload, G, O: Order, R: Order> Windowed<P, G, O, R> {
    /// Hopping windows start at `alignment + n * hop` (default: time 0); other kinds ignore it.
    pub fn alignment(mut self, alignment: Time) -> Self {
        if let WindowKind::Hopping(spec) = &mut self.kind {
            *spec = spec.alignment(alignment);
        }
        self
    }

    /// The output policy of hopping windows (default [`WindowOutput::PointAtEnd`]); other kinds
    /// ignore it.
    pub fn output(mut self, output: WindowOutput) -> Self {
        if let WindowKind::Hopping(spec) = &mut self.kind {
            *spec = spec.output(output);
        }
        self
    }

    /// The most windows one event may count in (default
    /// [`DEFAULT_MAX_WINDOWS_PER_EVENT`](super::DEFAULT_MAX_WINDOWS_PER_EVENT), a million);
    /// an event over more is dropped, counted in the operator's `dropped` and logged with the
    /// reason (see [`WindowSpec::max_windows_per_event`]). Other kinds ignore it.
    pub fn max_windows_per_event(mut self, n: u64) -> Self {
        if let WindowKind::Hopping(spec) = &mut self.kind {
            *spec = spec.max_windows_per_event(n);
        }
        self
    }

    fn build<K, A, Out, KF, MK>(self, key: KF, agg: A, make: MK) -> Stream<Out, R>
    where
        K: Key,
        A: Aggregate<P>,
        Out: Payload,
        KF: Fn(&P) -> K + Send + 'static,
        MK: Fn(&K, A::Output) -> Out + Send + 'static,
    {
        // Snapshot and count windows are made from ordered streams only.
        match self.kind {
            WindowKind::Hopping(spec) => {
                self.stream.unary(HoppingWindow::new(spec, key, agg, make))
            }
            WindowKind::Snapshot => self.stream.unary(SnapshotWindow::new(key, agg, make)),
            WindowKind::Count(n) => self.stream.unary(CountWindow::new(n, key, agg, make)),
        }
    }
}

impl<P: Payload, O: Order, R: Order> Windowed<P, Ungrouped, O, R> {
    /// One result per window and distinct `key`.
    pub fn group_by<K, F>(self, key: F) -> Windowed<P, GroupedBy<F>, O, R>
    where
        K: Key,
        F: Fn(&P) -> K + Send + 'static,
    {
        Windowed {
            stream: self.stream,
            kind: self.kind,
            group: GroupedBy(key),
            results: self.results,
        }
    }

    /// Aggregates each window's members.
    pub fn aggregate<A>(self, agg: A) -> Stream<A::Output, R>
    where
        A: Aggregate<P>,
        A::Output: Payload,
    {
        self.build(|_: &P| (), agg, |_: &(), o| o)
    }

    /// Counts each window's members.
    pub fn count(self) -> Stream<u64, R> {
        self.aggregate(Count)
    }
}

impl<P: Payload, K, F, O: Order, R: Order> Windowed<P, GroupedBy<F>, O, R>
where
    K: Key,
    F: Fn(&P) -> K + Send + 'static,
{
    /// Aggregates each window's members per group; results are `(key, value)`.
    pub fn aggregate<A>(self, agg: A) -> Stream<(K, A::Output), R>
    where
        A: Aggregate<P>,
        A::Output: Payload,
        K: Payload,
    {
        self.aggregate_into(agg, |k: &K, o| (k.clone(), o))
    }

    /// Aggregates per group, building each result with `make(key, value)`.
    pub fn aggregate_into<A, Out>(
        self,
        agg: A,
        make: impl Fn(&K, A::Output) -> Out + Send + 'static,
    ) -> Stream<Out, R>
    where
        A: Aggregate<P>,
        Out: Payload,
    {
        let key = self.group.0;
        Windowed {
            stream: self.stream,
            kind: self.kind,
            group: Ungrouped,
            results: self.results,
        }
        .build(key, agg, make)
    }

    /// Counts each window's members per group.
    pub fn count(self) -> Stream<(K, u64), R>
    where
        K: Payload,
    {
        self.aggregate(Count)
    }
}
