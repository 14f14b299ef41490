//! The typed query API: [`Stream`] handles over a shared [`QueryGraph`], composed LINQ-style.
//!
//! ```
//! use punctual_core::ops::{Avg, QueryGraph};
//! use punctual_core::{Batch, Ordered, Time, TimeSpan};
//!
//! #[derive(Clone, PartialEq, Debug, serde::Serialize, serde::Deserialize)]
//! struct Reading { device: u32, value: f64 }
//!
//! let graph = QueryGraph::new();
//! let readings = graph.source::<Reading, Ordered>();
//! let calibration = graph.source::<(u32, f64), Ordered>();
//! let averages = readings
//!     .filter(|r| r.value >= 0.0)
//!     .join_on(&calibration, |r| r.device, |c| c.0, |r, c| Reading { device: r.device, value: r.value * c.1 })
//!     .hopping_window(TimeSpan::from_ticks(10), TimeSpan::from_ticks(5))
//!     .group_by(|r| r.device)
//!     .aggregate(Avg::of(|r: &Reading| r.value));
//! graph.keep_output(&averages);
//!
//! let t = Time::from_ticks;
//! let mut cal = Batch::new();
//! cal.push_event(t(0), Time::INF, (7, 2.0)); // a start edge: device 7's factor from time 0
//! cal.push_cti(Time::INF);
//! let mut r = Batch::new();
//! r.push_event(t(1), t(2), Reading { device: 7, value: 1.5 });
//! r.push_cti(Time::INF);
//! graph.feed(&calibration, &mut cal);
//! graph.feed(&readings, &mut r);
//! let mut out = Batch::new();
//! graph.take_output(&averages, &mut out);
//! assert_eq!(out.payloads(), &[(7, 3.0), (7, 3.0)]); // windows [-5, 5) and [0, 10)
//! ```

use std::marker::PhantomData;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use crate::batch::Batch;
use crate::event::EventShape;
use crate::order::{EventOrder, Order, Ordered, Unordered};
use crate::time::{Time, TimeSpan};

use super::filter::Filter;
use super::graph::{Graph, NodeId};
use super::join::Join;
use super::select::{FlatMap, Map, MapWithTime, Reorder};
use super::union::Union;
use super::window::WindowSpec;
use super::windowed::{Ungrouped, WindowKind, Windowed};
use super::{BinaryNode, BinaryOperator, Key, Payload, UnaryNode, UnaryOperator};

mod ordered;

/// A query's operator graph, shared by the [`Stream`] handles that build it.
#[derive(Clone, Debug, Default)]
pub struct QueryGraph {
    inner: Arc<Mutex<Graph>>,
}

impl QueryGraph {
    /// An empty graph.
    pub fn new() -> Self {
        QueryGraph::default()
    }

    fn lock(&self) -> MutexGuard<'_, Graph> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Adds a source stream of order `O`: batches fed to it (by an ingress) flow to its
    /// consumers. An unordered source ([`Unordered`](crate::Unordered)) takes batches whose events are in
    /// arrival order between CTIs; only order-insensitive operators take it (see
    /// [`crate::order`]), and their results are ordinary streams where the order matters.
    ///
    /// ```
    /// use punctual_core::ops::{Count, QueryGraph};
    /// use punctual_core::{Batch, Time, TimeSpan, Unordered};
    /// let t = Time::from_ticks;
    /// let graph = QueryGraph::new();
    /// let input = graph.source::<u32, Unordered>();
    /// let counts = input.tumbling_window(TimeSpan::from_ticks(10)).aggregate(Count);
    /// graph.keep_output(&counts);
    /// let mut batch = Batch::new();
    /// batch.push_point(t(12), 1); // at or after the CTI below: released on arrival
    /// batch.push_point(t(3), 2);
    /// batch.push_cti(t(10));
    /// batch.push_point(t(15), 3);
    /// batch.push_cti(t(21)); // a result at 20 waits for a CTI above it
    /// graph.feed(&input, &mut batch);
    /// let mut out = Batch::new();
    /// graph.take_output(&counts, &mut out);
    /// assert_eq!(out.payloads(), &[1, 2]); // window [0, 10): 1 member; [10, 20): 2
    /// assert_eq!(out.sync(), &[t(10), t(20)]);
    /// ```
    pub fn source<P: Payload, O: Order>(&self) -> Stream<P, O> {
        let node = self.lock().add_source::<P>(O::ORDER);
        self.stream(node)
    }

    pub(super) fn stream<P, O>(&self, node: NodeId) -> Stream<P, O> {
        Stream {
            graph: self.clone(),
            node,
            _payload: PhantomData,
        }
    }

    /// Keeps what `stream` produces for [`QueryGraph::take_output`]: an unordered stream's
    /// events as they are released, in arrival order, with its CTIs (for consumers that count,
    /// sum or store, this spares the hold until the CTI and the sort of [`Stream::ordered`]).
    ///
    /// ```
    /// use punctual_core::ops::QueryGraph;
    /// use punctual_core::{Batch, Time, Unordered};
    /// let t = Time::from_ticks;
    /// let graph = QueryGraph::new();
    /// let input = graph.source::<i64, Unordered>();
    /// let big = input.filter(|v| *v >= 10);
    /// graph.keep_output(&big);
    /// let mut batch = Batch::new();
    /// batch.push_point(t(7), 30);
    /// batch.push_point(t(2), 5);
    /// batch.push_point(t(4), 20);
    /// batch.push_cti(t(5));
    /// graph.feed(&input, &mut batch);
    /// let mut out = Batch::new();
    /// graph.take_output(&big, &mut out);
    /// assert_eq!(out.payloads(), &[30, 20]); // in arrival order, 30 at 7 before the CTI at 5
    /// assert_eq!(out.last_cti(), Some(t(5)));
    /// ```
    pub fn keep_output<P: Payload, O: Order>(&self, stream: &Stream<P, O>) {
        self.lock().keep_output::<P>(stream.node);
    }

    /// The shape of the events on `stream`: for a source, what `source` says of its node (any
    /// kind if nothing); for an operator's output, what the operator makes of its inputs'
    /// shapes (a window's results are points at the window's end, say, a filter's are its
    /// input's).
    ///
    /// ```
    /// use punctual_core::ops::{Count, QueryGraph};
    /// use punctual_core::{EventShape, TimeSpan};
    /// let graph = QueryGraph::new();
    /// let input = graph.source::<u32, punctual_core::Ordered>();
    /// let kept = input.filter(|v| *v > 3);
    /// let counts = kept.tumbling_window(TimeSpan::from_ticks(10)).aggregate(Count);
    /// let shapes = |_| Some(EventShape::Interval);
    /// assert_eq!(graph.shape_of(&kept, &shapes), EventShape::Interval);
    /// assert_eq!(graph.shape_of(&counts, &shapes), EventShape::Point);
    /// ```
    pub fn shape_of<P: Payload, O: Order>(
        &self,
        stream: &Stream<P, O>,
        source: &dyn Fn(NodeId) -> Option<EventShape>,
    ) -> EventShape {
        self.lock().shape_of(stream.node, source)
    }

    /// Feeds a batch (as an ingress of the source's order releases it, with CTI marks) into a
    /// source stream and runs everything downstream. The batch is left empty.
    pub fn feed<P: Payload, O: Order>(&self, source: &Stream<P, O>, batch: &mut Batch<P>) {
        self.lock().feed(source.node, batch);
    }

    /// Appends what a kept output produced since the last call to `into`.
    pub fn take_output<P: Payload, O: Order>(&self, stream: &Stream<P, O>, into: &mut Batch<P>) {
        self.lock().take_output(stream.node, into);
    }

    /// Takes the graph out (to run it), leaving an empty one.
    pub fn take_graph(&self) -> Graph {
        std::mem::take(&mut *self.lock())
    }

    /// Whether two handles share one graph.
    pub fn same(&self, other: &QueryGraph) -> bool {
        Arc::ptr_eq(&self.inner, &other.inner)
    }

    /// Where every node's CTI stands and what holds it back; see [`Graph::explain`].
    pub fn explain(&self) -> Vec<super::Explanation> {
        self.lock().explain()
    }

    /// Names a stream's node for diagnostics.
    pub fn set_label<P, O>(&self, stream: &Stream<P, O>, label: impl Into<String>) {
        self.lock().set_label(stream.node, label);
    }

    /// A stream's node's name, if it was given one ([`QueryGraph::set_label`]).
    pub fn label<P, O>(&self, stream: &Stream<P, O>) -> Option<String> {
        self.lock().label(stream.node).map(str::to_owned)
    }

    /// Each operator's name and state size (events or groups held).
    pub fn state_sizes(&self) -> Vec<(NodeId, &'static str, usize)> {
        self.lock().state_sizes()
    }

    /// The state of every operator, for a snapshot: see [`Graph::save_state`].
    pub fn save_state(&self) -> Result<Vec<u8>, super::StateError> {
        self.lock().save_state()
    }

    /// Restores a snapshot into a graph built the same way: see [`Graph::restore_state`].
    pub fn restore_state(&self, bytes: &[u8]) -> Result<(), super::StateError> {
        self.lock().restore_state(bytes)
    }
}

/// A typed stream of a query: a source or an operator's output, ordered (`O =` [`Ordered`],
/// the default) or unordered ([`Unordered`](crate::Unordered): events in arrival order between CTIs, see
/// [`crate::order`]). Cheap to clone; using one stream as the input of several operators
/// multicasts it without reading it twice.
///
/// Every operator takes an ordered stream. An unordered one is taken by those whose results
/// do not depend on the order of their input between CTIs: [`Stream::filter`] and
/// [`Stream::map`] (their output is unordered too), [`Stream::join_on`] and its siblings as
/// the left side (output unordered), hopping and tumbling windows (output ordered), and
/// [`Stream::ordered`], which holds the events until their CTI and sorts them. An aggregate
/// adds members in arrival order: counts, integer sums, minima and maxima are exactly the
/// ordered path's; a floating-point sum may differ in its last bits.
#[derive(Debug)]
pub struct Stream<P, O = Ordered> {
    graph: QueryGraph,
    node: NodeId,
    _payload: PhantomData<fn() -> (P, O)>,
}

impl<P, O> Clone for Stream<P, O> {
    fn clone(&self) -> Self {
        Stream {
            graph: self.graph.clone(),
            node: self.node,
            _payload: PhantomData,
        }
    }
}

impl<P: Payload, O: Order> Stream<P, O> {
    /// The node in the graph.
    pub fn node(&self) -> NodeId {
        self.node
    }

    /// The graph it belongs to.
    pub fn graph(&self) -> &QueryGraph {
        &self.graph
    }

    /// Names this stream's node for diagnostics (`explain`), and returns it.
    pub fn named(self, label: impl Into<String>) -> Self {
        self.graph.set_label(&self, label);
        self
    }

    /// Adds a unary operator whose output has order `Q`.
    pub(super) fn unary<Out: Payload, Q: Order, Op: UnaryOperator<P, Out>>(
        &self,
        op: Op,
    ) -> Stream<Out, Q> {
        let node = self.graph.lock().add_node::<Out>(
            UnaryNode::<Op, P, Out>::boxed(op),
            &[self.node],
            Q::ORDER,
        );
        self.graph.stream(node)
    }

    /// Adds a binary operator with `right` as its second input, its output of order `Q`.
    fn binary<R: Payload, RO: Order, Out: Payload, Q: Order, Op: BinaryOperator<P, R, Out>>(
        &self,
        right: &Stream<R, RO>,
        op: Op,
    ) -> Stream<Out, Q> {
        assert!(
            self.graph.same(&right.graph),
            "both streams of a binary operator must belong to one query"
        );
        let node = self.graph.lock().add_node::<Out>(
            BinaryNode::<Op, P, R, Out>::boxed(op),
            &[self.node, right.node],
            Q::ORDER,
        );
        self.graph.stream(node)
    }

    /// Keeps events whose payload satisfies `predicate`, where they are. CTIs unchanged.
    /// Filtering an unordered stream before [`Stream::ordered`] means only the events kept
    /// wait for their CTI. A filter (or a chain of them) right after an input, and its only
    /// consumer, runs fused into the input's ingress ([`Filter`]).
    pub fn filter(&self, predicate: impl Fn(&P) -> bool + Send + 'static) -> Stream<P, O> {
        self.unary(Filter::new(predicate))
    }

    /// Projects each payload, keeping each event where it is. CTIs unchanged.
    pub fn map<Q: Payload>(&self, f: impl Fn(&P) -> Q + Send + 'static) -> Stream<Q, O> {
        self.unary(Map::new(f))
    }

    /// Makes each event into the events of the payloads `f` gives for its payload (none, one
    /// or several), each with the event's lifetime and in that order. CTIs unchanged.
    ///
    /// ```
    /// use punctual_core::ops::QueryGraph;
    /// use punctual_core::{Batch, Ordered, Time};
    /// let graph = QueryGraph::new();
    /// let input = graph.source::<Vec<i64>, Ordered>();
    /// let each = input.flat_map(|v: &Vec<i64>| v.clone());
    /// graph.keep_output(&each);
    /// let mut batch = Batch::new();
    /// batch.push_point(Time::from_ticks(7), vec![1, 2]);
    /// batch.push_point(Time::from_ticks(8), vec![]);
    /// graph.feed(&input, &mut batch);
    /// let mut out = Batch::new();
    /// graph.take_output(&each, &mut out);
    /// assert_eq!(out.payloads(), &[1, 2]);
    /// assert_eq!(out.sync(), &[Time::from_ticks(7), Time::from_ticks(7)]);
    /// ```
    pub fn flat_map<Q: Payload, I: IntoIterator<Item = Q>>(
        &self,
        f: impl Fn(&P) -> I + Send + 'static,
    ) -> Stream<Q, O> {
        self.unary(FlatMap::new(f))
    }

    /// Like [`Stream::map`], with the event's start time given to `f` as well: for a
    /// payload that records when (a window's result at the window's end, say).
    ///
    /// ```
    /// use punctual_core::ops::QueryGraph;
    /// use punctual_core::{Batch, Ordered, Time};
    /// let graph = QueryGraph::new();
    /// let input = graph.source::<i64, Ordered>();
    /// let stamped = input.map_with_time(|at, v| (at.ticks(), *v));
    /// graph.keep_output(&stamped);
    /// let mut batch = Batch::new();
    /// batch.push_point(Time::from_ticks(7), 30);
    /// graph.feed(&input, &mut batch);
    /// let mut out = Batch::new();
    /// graph.take_output(&stamped, &mut out);
    /// assert_eq!(out.payloads(), &[(7, 30)]);
    /// ```
    pub fn map_with_time<Q: Payload>(
        &self,
        f: impl Fn(Time, &P) -> Q + Send + 'static,
    ) -> Stream<Q, O> {
        self.unary(MapWithTime::new(f))
    }

    /// The ordinary stream: an unordered stream's events held until a CTI passes them, then
    /// released sorted by sync time (ties in arrival order) before the CTI ([`Reorder`]);
    /// what an ordered source with the same settings gives, segment by segment. An ordered
    /// stream is returned as it is.
    ///
    /// ```
    /// use punctual_core::ops::QueryGraph;
    /// use punctual_core::{Batch, Time, Unordered};
    /// let t = Time::from_ticks;
    /// let graph = QueryGraph::new();
    /// let input = graph.source::<i64, Unordered>();
    /// let big = input.filter(|v| *v >= 10).ordered();
    /// graph.keep_output(&big);
    /// let mut batch = Batch::new();
    /// batch.push_point(t(7), 30); // released on arrival, before its CTI
    /// batch.push_point(t(2), 5);
    /// batch.push_point(t(4), 20);
    /// batch.push_cti(t(5));
    /// graph.feed(&input, &mut batch);
    /// let mut out = Batch::new();
    /// graph.take_output(&big, &mut out);
    /// assert_eq!(out.payloads(), &[20]); // 30 at 7 waits for a CTI above 7
    /// assert_eq!(out.last_cti(), Some(t(5)));
    /// ```
    pub fn ordered(&self) -> Stream<P, Ordered> {
        match O::ORDER {
            EventOrder::Sorted => self.graph.stream(self.node),
            EventOrder::Arrival => self.unary(Reorder::default()),
        }
    }

    /// Adds any unary operator that takes its input in arrival order (events in any order
    /// between CTIs, each after every CTI below it) and gives its results so too: an
    /// unordered stream. What such an operator emits before a CTI must be at or past the CTI
    /// before it.
    pub fn apply_unordered<Out: Payload, Op: UnaryOperator<P, Out>>(
        &self,
        op: Op,
    ) -> Stream<Out, Unordered> {
        self.unary(op)
    }

    /// Temporal equi-join ([`Join`]) with an ordered stream: each pair with
    /// `key_left(l) == key_right(r)` whose lifetimes overlap yields `combine(l, r)` with the
    /// intersection lifetime. Output CTI = min of both sides' CTIs. The output has this
    /// stream's order: from an unordered stream, each result is emitted once it is final (for
    /// a point, when `right`'s CTI passes it), in no particular order between CTIs; per CTI
    /// the results are the ordered join's. Suited to a fast stream joined with a slow
    /// reference stream that imports its CTIs.
    ///
    /// ```
    /// use punctual_core::ops::QueryGraph;
    /// use punctual_core::{Batch, Ordered, Time, Unordered};
    /// let t = Time::from_ticks;
    /// let graph = QueryGraph::new();
    /// let fast = graph.source::<(u32, i64), Unordered>();
    /// let reference = graph.source::<(u32, char), Ordered>();
    /// let named = fast.join_on(&reference, |f| f.0, |r| r.0, |f, r| (r.1, f.1));
    /// graph.keep_output(&named);
    /// let mut versions = Batch::new();
    /// versions.push_event(t(0), t(100), (1, 'A'));
    /// versions.push_event(t(0), t(100), (2, 'B'));
    /// versions.push_cti(t(5));
    /// graph.feed(&reference, &mut versions);
    /// let mut readings = Batch::new();
    /// readings.push_point(t(8), (2, 80)); // waits for the reference's CTI
    /// readings.push_point(t(3), (1, 30)); // below it: joined at once
    /// readings.push_cti(t(3));
    /// graph.feed(&fast, &mut readings);
    /// let mut out = Batch::new();
    /// graph.take_output(&named, &mut out);
    /// assert_eq!(out.payloads(), &[('A', 30)]);
    /// let mut cti = Batch::new();
    /// cti.push_cti(t(10));
    /// graph.feed(&reference, &mut cti);
    /// graph.take_output(&named, &mut out);
    /// assert_eq!(out.payloads(), &[('A', 30), ('B', 80)]);
    /// assert_eq!(out.last_cti(), Some(t(3))); // min of both sides' CTIs
    /// ```
    pub fn join_on<R: Payload, K, Out: Payload>(
        &self,
        right: &Stream<R>,
        key_left: impl Fn(&P) -> K + Send + 'static,
        key_right: impl Fn(&R) -> K + Send + 'static,
        combine: impl Fn(&P, &R) -> Out + Send + 'static,
    ) -> Stream<Out, O>
    where
        K: Key,
    {
        self.join_on_filter_map(right, key_left, key_right, move |l, r| Some(combine(l, r)))
    }

    /// [`Stream::join_on`] where `combine` may leave a pair out: each pair with equal keys
    /// and overlapping lifetimes yields `combine(l, r)` where it is `Some` (a condition on the
    /// pair and the result made in one step, with no result built for a pair left out).
    ///
    /// ```
    /// use punctual_core::ops::QueryGraph;
    /// use punctual_core::{Batch, Ordered, Time};
    /// let t = Time::from_ticks;
    /// let graph = QueryGraph::new();
    /// let orders = graph.source::<(u32, i64), Ordered>();
    /// let limits = graph.source::<(u32, i64), Ordered>();
    /// let over = orders.join_on_filter_map(&limits, |o| o.0, |l| l.0, |o, l| {
    ///     (o.1 > l.1).then_some(o.1 - l.1)
    /// });
    /// graph.keep_output(&over);
    /// let mut l = Batch::new();
    /// l.push_event(t(0), t(100), (1, 50));
    /// l.push_cti(t(100));
    /// graph.feed(&limits, &mut l);
    /// let mut o = Batch::new();
    /// o.push_point(t(3), (1, 40));
    /// o.push_point(t(4), (1, 70));
    /// o.push_cti(t(10));
    /// graph.feed(&orders, &mut o);
    /// let mut out = Batch::new();
    /// graph.take_output(&over, &mut out);
    /// assert_eq!(out.payloads(), &[20]);
    /// ```
    pub fn join_on_filter_map<R: Payload, K, Out: Payload>(
        &self,
        right: &Stream<R>,
        key_left: impl Fn(&P) -> K + Send + 'static,
        key_right: impl Fn(&R) -> K + Send + 'static,
        combine: impl Fn(&P, &R) -> Option<Out> + Send + 'static,
    ) -> Stream<Out, O>
    where
        K: Key,
    {
        self.binary(
            right,
            Join::<_, _, _, _, _, _, _, O>::new(key_left, key_right, combine),
        )
    }

    /// Temporal cross join: every overlapping pair yields `combine(left, right)` with the
    /// intersection lifetime (see [`Stream::join_on`]).
    pub fn join<R: Payload, Out: Payload>(
        &self,
        right: &Stream<R>,
        combine: impl Fn(&P, &R) -> Out + Send + 'static,
    ) -> Stream<Out, O> {
        self.join_where(right, |_, _| true, combine)
    }

    /// Temporal cross join with a predicate on each pair (see [`Stream::join_on`]).
    pub fn join_where<R: Payload, Out: Payload>(
        &self,
        right: &Stream<R>,
        predicate: impl Fn(&P, &R) -> bool + Send + 'static,
        combine: impl Fn(&P, &R) -> Out + Send + 'static,
    ) -> Stream<Out, O> {
        self.join_on_filter_map(
            right,
            |_| (),
            |_| (),
            move |l, r| predicate(l, r).then(|| combine(l, r)),
        )
    }

    /// Hopping windows of `size` every `hop`; pick an aggregate on the result. On an
    /// unordered stream, members are added as they arrive; the results are an ordinary
    /// stream either way.
    pub fn hopping_window(&self, size: TimeSpan, hop: TimeSpan) -> Windowed<P, Ungrouped, O> {
        Windowed {
            stream: self.clone(),
            kind: WindowKind::Hopping(WindowSpec::hopping(size, hop)),
            group: Ungrouped,
            results: std::marker::PhantomData,
        }
    }

    /// Tumbling windows of `size`; pick an aggregate on the result.
    pub fn tumbling_window(&self, size: TimeSpan) -> Windowed<P, Ungrouped, O> {
        self.hopping_window(size, size)
    }
}

impl<P: Payload, O: Order> Stream<P, O> {
    /// Merges this stream with `others` (of the same order): the output CTI is the minimum
    /// of the inputs' CTIs. Ordered streams are merged in sync order (each input's events wait
    /// until every input's CTI has passed them); on unordered streams every event passes on as
    /// it arrives.
    ///
    /// ```
    /// use punctual_core::ops::QueryGraph;
    /// use punctual_core::{Batch, Time, Unordered};
    /// let t = Time::from_ticks;
    /// let graph = QueryGraph::new();
    /// let (a, b) = (graph.source::<u32, Unordered>(), graph.source::<u32, Unordered>());
    /// let both = a.union(&[&b]);
    /// graph.keep_output(&both);
    /// let mut batch = Batch::new();
    /// batch.push_point(t(9), 1);
    /// batch.push_cti(t(5));
    /// graph.feed(&a, &mut batch);
    /// batch.push_point(t(3), 2);
    /// batch.push_cti(t(4));
    /// graph.feed(&b, &mut batch);
    /// let mut out = Batch::new();
    /// graph.take_output(&both, &mut out);
    /// assert_eq!(out.payloads(), &[1, 2]); // as they came
    /// assert_eq!(out.last_cti(), Some(t(4))); // the minimum
    /// ```
    pub fn union(&self, others: &[&Stream<P, O>]) -> Stream<P, O> {
        match O::ORDER {
            EventOrder::Sorted => self.union_with(others, Union::<P>::new, EventOrder::Sorted),
            EventOrder::Arrival => {
                self.union_with(others, Union::<P>::arrival, EventOrder::Arrival)
            }
        }
    }

    /// A union node over this stream and `others` (of one query), made by `make` for the
    /// number of inputs, with an output of `order`.
    fn union_with(
        &self,
        others: &[&Stream<P, O>],
        make: fn(usize) -> Union<P>,
        order: EventOrder,
    ) -> Stream<P, O> {
        let mut inputs = vec![self.node];
        for o in others {
            assert!(
                self.graph.same(&o.graph),
                "a union's streams must belong to one query"
            );
            inputs.push(o.node);
        }
        let node = self
            .graph
            .lock()
            .add_node::<P>(Box::new(make(inputs.len())), &inputs, order);
        self.graph.stream(node)
    }
}
