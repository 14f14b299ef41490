//! Operators: CTI-aware transformations of ingress-ordered streams, and the typed [`Stream`]
//! API that wires them into a [`Graph`].
//!
//! Every operator takes sorted batches with CTI marks and appends sorted batches with CTI marks.
//! The general release rule (docs/semantics.md, section 4): when an operator's output CTI advances to
//! `t`, it first emits every result with sync time `< t` not yet emitted, then `CTI(t)`; results
//! with sync `>= t` wait. Multi-input operators take their output CTI from a [`CtiFrontier`];
//! operators that hold results use a [`ReleaseBuffer`]. Each operator's module states its CTI
//! rule.

mod aggregate;
mod anti_join;
mod any;
mod fallible;
mod filter;
mod fingerprint;
mod frontier;
pub(crate) mod fxhash;
mod graph;
mod group_apply;
mod groups;
mod held;
mod join;
mod key_index;
mod process;
mod release;
mod select;
mod snapshot;
mod split;
pub mod state;
mod stream;
mod union;
mod window;
mod windowed;

pub use aggregate::{Aggregate, Avg, Count, Max, Min, Sum, TopK};
pub use anti_join::{AntiSemiJoin, ClipDuration};
pub use any::AnyStream;
pub use fallible::{KeepOk, TryFilter, TryMapWithTime};
pub use filter::{both, Filter, Predicate};
pub use frontier::CtiFrontier;
pub use fxhash::{FxHashMap, FxHasher};
pub use graph::{AnyBatch, Explanation, Graph, Node, NodeId, NodeStats};
pub use group_apply::{GroupApply, SubQuery};
pub(crate) use held::DropLog;
pub use held::{Held, HeldWhat, MAX_KEPT_DROPS};
pub use join::Join;
pub use key_index::index_keys;
pub use process::{Process, ProcessContext, ProcessOperator};
pub use release::{ReleaseBuffer, Released};
pub use select::{AlterDuration, AlterLifetime, FlatMap, Map, MapWithTime, Reorder, Shift};
pub use snapshot::{CountWindow, SnapshotWindow};
pub use split::{Edge, EdgeEnd, Received};
pub use state::{Key, StateError};
pub use stream::{QueryGraph, Stream};
pub use union::Union;
pub use window::{HoppingWindow, WindowOutput, WindowSpec, DEFAULT_MAX_WINDOWS_PER_EVENT};
pub use windowed::{GroupedBy, Ungrouped, Windowed};

use std::any::Any;
use std::marker::PhantomData;

use crate::batch::Batch;
use crate::event::{EventKind, EventShape};

/// An event an operator could not take, with the reason (a window operator's limit on windows
/// per event, say): counted in its node's `dropped`, and handed to whoever reads the graph's
/// drops ([`Graph::take_drops`]).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct OperatorDrop {
    /// The event's lifetime (its payload stays with the operator's types).
    pub kind: EventKind,
    /// Why it was dropped.
    pub reason: String,
}

/// What a payload type needs to travel through a query: `Clone` (operators keep and repeat
/// payloads), `PartialEq` (an end edge is matched to its start edge by payload),
/// `Send + Sync + 'static` to cross tasks and threads, and `Serialize + DeserializeOwned` to
/// cross processes: the same query runs on one worker or on a cluster of processes
/// (`punctual-cluster`), where any stream may travel between them, so a payload type that
/// could not travel is refused when the query compiles rather than when a cluster run
/// starts. Derive them:
///
/// ```
/// use punctual_core::ops::Payload;
/// #[derive(Clone, PartialEq, serde::Serialize, serde::Deserialize)]
/// struct Reading {
///     device: String,
///     value: f64,
/// }
/// fn travels<P: Payload>() {}
/// travels::<Reading>();
/// travels::<(u32, String)>();
/// ```
///
/// A type without them, or one that borrows (`&'static str`: it cannot be read back from
/// bytes), is not a payload:
///
/// ```compile_fail
/// use punctual_core::ops::Payload;
/// #[derive(Clone, PartialEq)]
/// struct Reading {
///     value: f64,
/// }
/// fn travels<P: Payload>() {}
/// travels::<Reading>();
/// ```
///
/// ```compile_fail
/// fn travels<P: punctual_core::ops::Payload>() {}
/// travels::<(&'static str, u64)>();
/// ```
pub trait Payload:
    Clone + PartialEq + Send + Sync + serde::Serialize + serde::de::DeserializeOwned + 'static
{
}

impl<T> Payload for T where
    T: Clone + PartialEq + Send + Sync + serde::Serialize + serde::de::DeserializeOwned + 'static
{
}

/// Where an operator's input events may go when its graph runs split over several workers
/// ([`Graph::split`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Placement {
    /// On whichever worker they are: the operator keeps no state across events that others
    /// would need (filter, map, shift, union).
    Anywhere,
    /// By a hash of their key ([`UnaryOperator::key_hash`]): events with equal keys meet on
    /// one worker (windows and aggregates per key, group-and-apply, equijoins). An operator
    /// without a key hashes `()`: all its events meet on one worker.
    ByKey,
    /// All on one worker (an operator that does not say how it can be split).
    One,
}

/// The hash that places a key on a worker: the same in every process (no random seed).
pub fn key_hash<K: std::hash::Hash + ?Sized>(key: &K) -> u64 {
    use std::hash::Hasher;
    let mut h = FxHasher::default();
    key.hash(&mut h);
    h.finish()
}

/// What a window with allowed lateness took ([`UnaryOperator::lateness`]): the events that
/// came on time (at or past its watermark, the CTI plus the lateness) and the late ones (under
/// it, admitted by the CTI). Those later still broke the CTI: the input's `dropped`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct LateCounts {
    /// Events at or past the watermark when they came.
    pub on_time: u64,
    /// Events under the watermark, within the lateness.
    pub late: u64,
}

/// An operator with one input.
pub trait UnaryOperator<I, O>: Send + 'static {
    /// A short name for diagnostics: the kind of operator.
    const NAME: &'static str;
    /// The name diagnostics show for this operator ([`UnaryOperator::NAME`] by default); an
    /// operator whose settings make it a kind of its own says which (a hopping window whose
    /// hop is its size is a `tumbling window`).
    fn name(&self) -> &'static str {
        Self::NAME
    }
    /// Processes one input batch, appending results and CTIs to `out`.
    fn on_batch(&mut self, input: &Batch<I>, out: &mut Batch<O>);
    /// Like [`UnaryOperator::on_batch`], for an input that no one else reads after this
    /// operator (the graph gives its last consumer the batch this way): the operator may take
    /// or change its contents. The default reads it as [`UnaryOperator::on_batch`] does.
    fn on_owned_batch(&mut self, input: &mut Batch<I>, out: &mut Batch<O>) {
        self.on_batch(input, out);
    }
    /// Events or groups held now.
    fn state_size(&self) -> usize {
        0
    }
    /// Events it dropped so far (see [`OperatorDrop`]).
    fn dropped(&self) -> u64 {
        0
    }
    /// What a window with allowed lateness took so far: the events on time, and the late
    /// ones (under its watermark, admitted by the CTI: they may revise results already given).
    /// Zero for other operators.
    fn lateness(&self) -> LateCounts {
        LateCounts::default()
    }
    /// Moves the drops not yet taken (at most [`MAX_KEPT_DROPS`]) to `into`.
    fn take_drops(&mut self, into: &mut Vec<OperatorDrop>) {
        let _ = into;
    }
    /// Visits everything it holds (as many items as [`UnaryOperator::state_size`] counts),
    /// for the report of a query that ends before its CTIs released them.
    fn held(&self, f: &mut dyn FnMut(Held<'_>)) {
        let _ = f;
    }
    /// For a filter: hands its predicate over to be fused into the ingress before it, and
    /// from then on passes everything through. Other operators give `None`.
    fn take_predicate(&mut self) -> Option<Box<dyn Predicate<I>>> {
        None
    }
    /// Whether it forwards what it receives: every event it emits is one it received with the
    /// payload unchanged (it may drop events or move their times: filter, reorder, shift,
    /// lifetimes). Setting it makes the defaults those of such an operator: it runs anywhere
    /// ([`Placement::Anywhere`]), [`UnaryOperator::keeps_payloads`], and emits its input's
    /// shape. By default `false`.
    const FORWARDS: bool = false;
    /// Whether it works one event at a time: every event it emits comes from one it received,
    /// of the same kind (a map, a filter; any operator that
    /// [forwards](UnaryOperator::FORWARDS)). Setting it makes the defaults those of such an
    /// operator: it runs anywhere ([`Placement::Anywhere`]) and emits its input's shape. By
    /// default [`UnaryOperator::FORWARDS`].
    ///
    /// ```
    /// use punctual_core::ops::{Placement, UnaryOperator};
    /// use punctual_core::{Batch, EventShape};
    /// struct Tenths; // each reading in tenths of a degree
    /// impl UnaryOperator<f64, i64> for Tenths {
    ///     const NAME: &'static str = "tenths";
    ///     const PER_EVENT: bool = true;
    ///     fn on_batch(&mut self, input: &Batch<f64>, out: &mut Batch<i64>) {
    ///         for (range, cti) in input.segments() {
    ///             for i in range {
    ///                 let tenths = (input.payloads()[i] * 10.0).round() as i64;
    ///                 out.push_event(input.sync()[i], input.other()[i], tenths);
    ///             }
    ///             if let Some(t) = cti {
    ///                 out.push_cti(t);
    ///             }
    ///         }
    ///     }
    /// }
    /// assert_eq!(UnaryOperator::placement(&Tenths), Placement::Anywhere);
    /// assert_eq!(UnaryOperator::output_shape(&Tenths, EventShape::Point), EventShape::Point);
    /// assert!(!UnaryOperator::keeps_payloads(&Tenths));
    /// ```
    const PER_EVENT: bool = Self::FORWARDS;
    /// The shape of what it emits, given its input's (see [`EventShape`]: `Point` for points
    /// only, `Interval` for points and intervals, `Edge` for any kind). By default any kind
    /// (its input's for an operator that works [per event](UnaryOperator::PER_EVENT)).
    fn output_shape(&self, input: EventShape) -> EventShape {
        if Self::PER_EVENT {
            input
        } else {
            EventShape::Edge
        }
    }
    /// Where its input events may go when the graph runs split over workers. By default all
    /// on one worker ([`Placement::One`]; anywhere for an operator that works
    /// [per event](UnaryOperator::PER_EVENT)).
    fn placement(&self) -> Placement {
        if Self::PER_EVENT {
            Placement::Anywhere
        } else {
            Placement::One
        }
    }
    /// Whether every event it emits carries the payload of an event it received, unchanged
    /// (it may drop events or change their times: filter, reorder, shift, lifetimes). Then
    /// events placed by a key before it are still placed by that key after it, and a split
    /// graph places an input's events by the key of the operator that such operators lead
    /// to right where the input is read ([`Graph::split`](graph::Graph::split)). By default
    /// [`UnaryOperator::FORWARDS`].
    fn keeps_payloads(&self) -> bool {
        Self::FORWARDS
    }
    /// For [`Placement::ByKey`]: the hash of an input event's key ([`key_hash`]).
    fn key_hash(&self, payload: &I) -> u64 {
        let _ = payload;
        0
    }
    /// Whether it keeps no state from one batch to the next (a map, a filter): then it saves
    /// nothing in a snapshot. By default `false`.
    const STATELESS: bool = false;
    /// Appends its state to `out` for a snapshot: everything that decides what it emits from
    /// now on (held events and results, open groups, its CTIs, its counts), so that
    /// [`UnaryOperator::restore_state`] on an operator built the same way continues exactly
    /// as this one would. Its functions are not state: they come from the query. By default
    /// nothing for a [stateless](UnaryOperator::STATELESS) operator, else
    /// [`StateError::Unsupported`] (a query with it cannot take snapshots).
    fn save_state(&self, out: &mut Vec<u8>) -> Result<(), StateError> {
        let _ = out;
        if Self::STATELESS {
            Ok(())
        } else {
            Err(StateError::Unsupported(self.name()))
        }
    }
    /// Takes the state [`UnaryOperator::save_state`] wrote, on an operator fed nothing yet.
    fn restore_state(&mut self, bytes: &[u8]) -> Result<(), StateError> {
        if Self::STATELESS && bytes.is_empty() {
            Ok(())
        } else if Self::STATELESS {
            Err(StateError::Mismatch(format!(
                "the {} operator keeps no state",
                self.name()
            )))
        } else {
            Err(StateError::Unsupported(self.name()))
        }
    }
}

/// An operator with two inputs of possibly different payload types.
pub trait BinaryOperator<L, R, O>: Send + 'static {
    /// A short name for diagnostics.
    const NAME: &'static str;
    /// Processes a batch of the left input.
    fn on_left(&mut self, input: &Batch<L>, out: &mut Batch<O>);
    /// Processes a batch of the right input.
    fn on_right(&mut self, input: &Batch<R>, out: &mut Batch<O>);
    /// Like [`BinaryOperator::on_left`], for a batch no one reads after this operator (see
    /// [`UnaryOperator::on_owned_batch`]): the operator may take or change its contents. The
    /// default reads it as [`BinaryOperator::on_left`] does.
    fn on_owned_left(&mut self, input: &mut Batch<L>, out: &mut Batch<O>) {
        self.on_left(input, out);
    }
    /// Events or groups held now.
    fn state_size(&self) -> usize {
        0
    }
    /// Visits everything it holds (see [`UnaryOperator::held`]).
    fn held(&self, f: &mut dyn FnMut(Held<'_>)) {
        let _ = f;
    }
    /// The shape of what it emits, given its inputs' (see
    /// [`UnaryOperator::output_shape`]). By default any kind.
    fn output_shape(&self, left: EventShape, right: EventShape) -> EventShape {
        let _ = (left, right);
        EventShape::Edge
    }
    /// Where its input events may go when the graph runs split over workers (see
    /// [`UnaryOperator::placement`]); for [`Placement::ByKey`] both inputs are placed by
    /// their key. By default all on one worker.
    fn placement(&self) -> Placement {
        Placement::One
    }
    /// Whether each result comes from one left event and the right events it meets (none
    /// from right events alone: an inner join, an anti-semi-join, a clip). Then a split graph
    /// may give every worker all of a right input that is reference data, and leave the left
    /// events where they are: each worker's results are those of its left events. By default
    /// `false`.
    fn replicable_right(&self) -> bool {
        false
    }
    /// For [`Placement::ByKey`]: the hash of a left event's key.
    fn left_key_hash(&self, payload: &L) -> u64 {
        let _ = payload;
        0
    }
    /// For [`Placement::ByKey`]: the hash of a right event's key.
    fn right_key_hash(&self, payload: &R) -> u64 {
        let _ = payload;
        0
    }
    /// Appends its state to `out` (see [`UnaryOperator::save_state`]). By default
    /// [`StateError::Unsupported`].
    fn save_state(&self, out: &mut Vec<u8>) -> Result<(), StateError> {
        let _ = out;
        Err(StateError::Unsupported(Self::NAME))
    }
    /// Takes the state [`BinaryOperator::save_state`] wrote (see
    /// [`UnaryOperator::restore_state`]).
    fn restore_state(&mut self, bytes: &[u8]) -> Result<(), StateError> {
        let _ = bytes;
        Err(StateError::Unsupported(Self::NAME))
    }
}

/// Adapts a typed [`UnaryOperator`] to a graph [`Node`].
pub(crate) struct UnaryNode<Op, I, O> {
    op: Op,
    _types: PhantomData<fn(I) -> O>,
}

impl<Op, I, O> UnaryNode<Op, I, O> {
    pub(crate) fn boxed(op: Op) -> Box<dyn Node>
    where
        Op: UnaryOperator<I, O>,
        I: Clone + Send + 'static,
        O: Clone + Send + 'static,
    {
        Box::new(UnaryNode {
            op,
            _types: PhantomData,
        })
    }
}

impl<Op: UnaryOperator<I, O>, I: Clone + Send + 'static, O: Clone + Send + 'static> Node
    for UnaryNode<Op, I, O>
{
    fn push(&mut self, _port: usize, input: &dyn Any, out: &mut dyn Any) {
        self.op
            .on_batch(graph::input::<I>(input), graph::output::<O>(out));
    }
    fn push_owned(&mut self, _port: usize, input: &mut dyn Any, out: &mut dyn Any) {
        self.op
            .on_owned_batch(graph::output::<I>(input), graph::output::<O>(out));
    }
    fn state_size(&self) -> usize {
        self.op.state_size()
    }
    fn dropped(&self) -> u64 {
        self.op.dropped()
    }
    fn lateness(&self) -> LateCounts {
        self.op.lateness()
    }
    fn take_drops(&mut self, into: &mut Vec<OperatorDrop>) {
        self.op.take_drops(into);
    }
    fn held(&self, f: &mut dyn FnMut(Held<'_>)) {
        self.op.held(f);
    }
    fn name(&self) -> &'static str {
        self.op.name()
    }
    fn take_predicate(&mut self) -> Option<Box<dyn Any + Send>> {
        let predicate = self.op.take_predicate()?;
        Some(Box::new(predicate))
    }
    fn output_shape(&self, inputs: &[EventShape]) -> EventShape {
        self.op
            .output_shape(inputs.first().copied().unwrap_or(EventShape::Edge))
    }
    fn placement(&self) -> Placement {
        self.op.placement()
    }
    fn keeps_payloads(&self) -> bool {
        self.op.keeps_payloads()
    }
    fn save_state(&self, out: &mut Vec<u8>) -> Result<(), StateError> {
        self.op.save_state(out)
    }
    fn restore_state(&mut self, bytes: &[u8]) -> Result<(), StateError> {
        self.op.restore_state(bytes)
    }
    fn scatter(
        &self,
        _port: usize,
        batch: &mut dyn AnyBatch,
        me: usize,
        dests: &mut [Box<dyn AnyBatch>],
    ) {
        match self.op.placement() {
            Placement::ByKey => scatter_by(batch, dests, |p: &I| self.op.key_hash(p)),
            Placement::Anywhere => batch.scatter_to(me, dests),
            Placement::One => batch.scatter_to(0, dests),
        }
    }
}

/// Scatters a batch of `P` to `workers` batches by a hash of each payload (see
/// [`Node::scatter`]).
fn scatter_by<P: Clone + Send + 'static>(
    batch: &mut dyn AnyBatch,
    dests: &mut [Box<dyn AnyBatch>],
    hash: impl Fn(&P) -> u64,
) {
    let n = dests.len().max(1) as u128;
    // The destinations' columns, taken out of their boxes (their capacity with them).
    let mut typed: Vec<Batch<P>> = dests
        .iter_mut()
        .map(|d| std::mem::take(graph::output::<P>(d.as_any_mut())))
        .collect();
    // The worker of a hash: its high bits scaled to 0..n (a multiply, not a division).
    graph::output::<P>(batch.as_any_mut())
        .split_to(&mut typed, |p| ((u128::from(hash(p)) * n) >> 64) as usize);
    for (d, b) in dests.iter_mut().zip(typed) {
        *graph::output::<P>(d.as_any_mut()) = b;
    }
}

/// Adapts a typed [`BinaryOperator`] to a graph [`Node`] (port 0 left, port 1 right).
pub(crate) struct BinaryNode<Op, L, R, O> {
    op: Op,
    _types: PhantomData<fn(L, R) -> O>,
}

impl<Op, L, R, O> BinaryNode<Op, L, R, O> {
    pub(crate) fn boxed(op: Op) -> Box<dyn Node>
    where
        Op: BinaryOperator<L, R, O>,
        L: Clone + Send + 'static,
        R: Clone + Send + 'static,
        O: Clone + Send + 'static,
    {
        Box::new(BinaryNode {
            op,
            _types: PhantomData,
        })
    }
}

impl<Op, L, R, O> Node for BinaryNode<Op, L, R, O>
where
    Op: BinaryOperator<L, R, O>,
    L: Clone + Send + 'static,
    R: Clone + Send + 'static,
    O: Clone + Send + 'static,
{
    fn push(&mut self, port: usize, input: &dyn Any, out: &mut dyn Any) {
        let out = graph::output::<O>(out);
        if port == 0 {
            self.op.on_left(graph::input::<L>(input), out);
        } else {
            self.op.on_right(graph::input::<R>(input), out);
        }
    }
    fn push_owned(&mut self, port: usize, input: &mut dyn Any, out: &mut dyn Any) {
        let out = graph::output::<O>(out);
        if port == 0 {
            self.op.on_owned_left(graph::output::<L>(input), out);
        } else {
            self.op.on_right(graph::input::<R>(input), out);
        }
    }
    fn state_size(&self) -> usize {
        self.op.state_size()
    }
    fn held(&self, f: &mut dyn FnMut(Held<'_>)) {
        self.op.held(f);
    }
    fn name(&self) -> &'static str {
        Op::NAME
    }
    fn output_shape(&self, inputs: &[EventShape]) -> EventShape {
        let shape = |i: usize| inputs.get(i).copied().unwrap_or(EventShape::Edge);
        self.op.output_shape(shape(0), shape(1))
    }
    fn placement(&self) -> Placement {
        self.op.placement()
    }
    fn replicable_right(&self) -> bool {
        self.op.replicable_right()
    }
    fn save_state(&self, out: &mut Vec<u8>) -> Result<(), StateError> {
        self.op.save_state(out)
    }
    fn restore_state(&mut self, bytes: &[u8]) -> Result<(), StateError> {
        self.op.restore_state(bytes)
    }
    fn scatter(
        &self,
        port: usize,
        batch: &mut dyn AnyBatch,
        me: usize,
        dests: &mut [Box<dyn AnyBatch>],
    ) {
        match (self.op.placement(), port) {
            (Placement::ByKey, 0) => scatter_by(batch, dests, |p: &L| self.op.left_key_hash(p)),
            (Placement::ByKey, _) => scatter_by(batch, dests, |p: &R| self.op.right_key_hash(p)),
            (Placement::Anywhere, _) => batch.scatter_to(me, dests),
            (Placement::One, _) => batch.scatter_to(0, dests),
        }
    }
}
