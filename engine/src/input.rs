//! One input of a running query: its ingress, what the ingress released and has not been fed
//! yet, where that goes in the operator graph, and where its dead letters go. Typed by payload
//! ([`Slot`]); the driver keeps them behind [`Input`], which does what needs no payload type.

use std::any::Any;

use punctual_core::ops::{Graph, NodeId, Payload, StateError};
use punctual_core::Time;
use punctual_policies::{ClockReading, Ingress, IngressCounters, IngressOutput};

use crate::sink::DeadLetterSink;

/// A typed input.
pub(crate) struct Slot<P> {
    pub(crate) name: String,
    pub(crate) ingress: Ingress<P>,
    pub(crate) out: IngressOutput<P>,
    /// The input's source node.
    pub(crate) node: NodeId,
    /// The source node of its late-data side output, if bound.
    pub(crate) late: Option<NodeId>,
    pub(crate) sink: Option<Box<dyn DeadLetterSink<P>>>,
}

/// What the driver does with an input without knowing its payload type.
pub(crate) trait Input: Send {
    fn name(&self) -> &str;
    fn as_any(&mut self) -> &mut dyn Any;
    fn ingress_counters(&self) -> IngressCounters;
    fn is_finished(&self) -> bool;
    fn has_watermark(&self) -> bool;
    fn paused_partitions(&self) -> Vec<usize>;
    fn clock_record(&self) -> &[ClockReading];
    /// Issues an imported CTI; whether it advanced the stream.
    fn import_cti(&mut self, t: Time) -> bool;
    /// A clock reading for the watermark strategy; whether it issued a CTI.
    fn on_clock(&mut self, now: Time) -> bool;
    /// End of input; whether it issued a final CTI.
    fn finish(&mut self) -> bool;
    /// The query has ended: what is still held is unreleased.
    fn close(&mut self);
    /// Appends the CTIs released and not fed yet to `into`.
    fn released_ctis(&self, into: &mut Vec<Time>);
    /// Feeds what was released into the graph (the stream at its source node, the late-data
    /// side output at its own) and hands the dead letters to the sink.
    fn feed(&mut self, graph: &mut Graph);
    /// Its source node and its late-data side output's, if bound.
    fn sources(&self) -> (NodeId, Option<NodeId>);
    /// Its ingress's state, for a snapshot (nothing released may be waiting to be fed).
    fn save_state(&self) -> Result<Vec<u8>, StateError>;
    /// Takes what [`Input::save_state`] wrote.
    fn restore_state(&mut self, bytes: &[u8]) -> Result<(), StateError>;
}

impl<P: Payload> Input for Slot<P> {
    fn name(&self) -> &str {
        &self.name
    }

    fn as_any(&mut self) -> &mut dyn Any {
        self
    }

    fn ingress_counters(&self) -> IngressCounters {
        self.ingress.counters()
    }

    fn is_finished(&self) -> bool {
        self.ingress.is_finished()
    }

    fn has_watermark(&self) -> bool {
        self.ingress.has_watermark()
    }

    fn paused_partitions(&self) -> Vec<usize> {
        self.ingress.paused_partitions()
    }

    fn clock_record(&self) -> &[ClockReading] {
        self.ingress.clock_record()
    }

    fn import_cti(&mut self, t: Time) -> bool {
        self.ingress.import_cti(t, &mut self.out)
    }

    fn on_clock(&mut self, now: Time) -> bool {
        self.ingress.on_clock(now, &mut self.out)
    }

    fn finish(&mut self) -> bool {
        self.ingress.finish(&mut self.out)
    }

    fn close(&mut self) {
        self.ingress.close(&mut self.out);
    }

    fn released_ctis(&self, into: &mut Vec<Time>) {
        into.extend(self.out.batch.ctis().iter().map(|m| m.time));
    }

    fn sources(&self) -> (NodeId, Option<NodeId>) {
        (self.node, self.late)
    }

    fn save_state(&self) -> Result<Vec<u8>, StateError> {
        if !self.out.batch.is_empty() || !self.out.late.is_empty() {
            return Err(StateError::NotNow(format!(
                "input `{}` released events not fed yet",
                self.name
            )));
        }
        self.ingress.save_state()
    }

    fn restore_state(&mut self, bytes: &[u8]) -> Result<(), StateError> {
        self.ingress.restore_state(bytes)
    }

    fn feed(&mut self, graph: &mut Graph) {
        if !self.out.batch.is_empty() {
            graph.feed(self.node, &mut self.out.batch);
        }
        match self.late {
            Some(late) if !self.out.late.is_empty() => graph.feed(late, &mut self.out.late),
            _ => self.out.late.clear(),
        }
        match &mut self.sink {
            Some(sink) => self
                .out
                .dead_letters
                .drain(..)
                .for_each(|d| sink.dead_letter(d)),
            None => self.out.dead_letters.clear(),
        }
    }
}
