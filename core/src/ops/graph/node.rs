//! [`Node`]: an operator as the graph sees it, its payload types erased.

use std::any::Any;

use crate::event::EventShape;

use super::super::state::StateError;
use super::super::{Held, OperatorDrop, Placement};
use super::AnyBatch;

/// A type-erased operator: takes a batch on one of its input ports, appends to its output.
pub trait Node: Send {
    /// Processes `input` (a `Batch` of the port's payload type) arriving on `port`, appending
    /// results and CTIs to `out` (a `Batch` of the node's output type).
    fn push(&mut self, port: usize, input: &dyn Any, out: &mut dyn Any);
    /// Like [`Node::push`], for an input batch no one reads after this node: the node may
    /// take or change its contents (the graph clears it afterwards). The default reads it.
    fn push_owned(&mut self, port: usize, input: &mut dyn Any, out: &mut dyn Any) {
        self.push(port, input, out);
    }
    /// Events (or groups) the operator holds right now; bounded by the CTI lag, not the stream.
    fn state_size(&self) -> usize {
        0
    }
    /// Events it dropped so far (see [`OperatorDrop`]).
    fn dropped(&self) -> u64 {
        0
    }
    /// What a window with allowed lateness took (see
    /// [`UnaryOperator::lateness`](super::super::UnaryOperator::lateness)).
    fn lateness(&self) -> super::super::LateCounts {
        super::super::LateCounts::default()
    }
    /// Moves the drops not yet taken to `into`.
    fn take_drops(&mut self, into: &mut Vec<OperatorDrop>) {
        let _ = into;
    }
    /// Visits everything it holds (as many items as [`Node::state_size`] counts).
    fn held(&self, f: &mut dyn FnMut(Held<'_>)) {
        let _ = f;
    }
    /// A short name for diagnostics (`join`, `hopping window`, ...).
    fn name(&self) -> &'static str;
    /// For a filter: its predicate (a `Box<dyn Predicate<P>>` for its payload type `P`), handed
    /// over to be fused into the ingress before it; the node then passes everything through.
    /// Other nodes give `None`.
    fn take_predicate(&mut self) -> Option<Box<dyn Any + Send>> {
        None
    }
    /// The shape of what it emits, given its inputs' shapes (by port); by default any kind
    /// (`Edge`).
    fn output_shape(&self, inputs: &[EventShape]) -> EventShape {
        let _ = inputs;
        EventShape::Edge
    }
    /// Where its input events may go when the graph runs split over workers; by default all
    /// on one worker.
    fn placement(&self) -> Placement {
        Placement::One
    }
    /// Whether every event it emits carries the payload of an event it received, unchanged
    /// (see [`UnaryOperator::keeps_payloads`](super::super::UnaryOperator::keeps_payloads); a
    /// union's are its inputs'). By default `false`.
    fn keeps_payloads(&self) -> bool {
        false
    }
    /// For an operator with two inputs: whether every worker may get all of its right input
    /// and keep its left events where they are (see
    /// [`BinaryOperator::replicable_right`](super::super::BinaryOperator::replicable_right)). By
    /// default `false`.
    fn replicable_right(&self) -> bool {
        false
    }
    /// Appends its state to `out` (see [`UnaryOperator::save_state`]).
    ///
    /// [`UnaryOperator::save_state`]: super::super::UnaryOperator::save_state
    fn save_state(&self, out: &mut Vec<u8>) -> Result<(), StateError> {
        let _ = out;
        Err(StateError::Unsupported(self.name()))
    }
    /// Takes the state [`Node::save_state`] wrote, on a node built the same way and fed
    /// nothing yet.
    fn restore_state(&mut self, bytes: &[u8]) -> Result<(), StateError> {
        let _ = bytes;
        Err(StateError::Unsupported(self.name()))
    }
    /// Splits a batch arriving on `port` on worker `me` over `dests` (empty batches of its
    /// type, one per worker), as its [`Node::placement`] says: each event to its worker,
    /// every CTI to each.
    fn scatter(
        &self,
        port: usize,
        batch: &mut dyn AnyBatch,
        me: usize,
        dests: &mut [Box<dyn AnyBatch>],
    ) {
        let _ = (port, me);
        batch.scatter_to(0, dests);
    }
}
