//! [`Union`] of n inputs with the same payload type.
//!
//! CTI rule: output CTI = the minimum of the inputs' CTIs ([`CtiFrontier`]). Every event passes
//! unchanged, held until the output CTI passes its sync time, so the output is sorted and each
//! segment is the same whatever the interleaving of the inputs.

use std::any::Any;

use crate::batch::Batch;

use super::graph::{input, output, Node};
use super::{CtiFrontier, ReleaseBuffer};

/// Merges n inputs; see the module doc.
#[derive(Debug)]
pub struct Union<P> {
    frontier: CtiFrontier,
    held: ReleaseBuffer<P>,
}

impl<P: Clone + Send + 'static> Union<P> {
    /// A union of `inputs` inputs.
    pub fn new(inputs: usize) -> Self {
        Union {
            frontier: CtiFrontier::new(inputs),
            held: ReleaseBuffer::new(),
        }
    }

    /// Processes a batch of input `port`.
    pub fn on_batch(&mut self, port: usize, batch: &Batch<P>, out: &mut Batch<P>) {
        for (range, cti) in batch.segments() {
            for i in range {
                self.held.push(
                    batch.sync()[i],
                    batch.other()[i],
                    batch.payloads()[i].clone(),
                );
            }
            if let Some(t) = cti.and_then(|t| self.frontier.advance(port, t)) {
                self.held.release(t, out);
            }
        }
    }
}

impl<P: Clone + Send + 'static> Node for Union<P> {
    fn push(&mut self, port: usize, batch: &dyn Any, out: &mut dyn Any) {
        self.on_batch(port, input::<P>(batch), output::<P>(out));
    }
    fn state_size(&self) -> usize {
        self.held.len()
    }
    fn name(&self) -> &'static str {
        "union"
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::time::Time;

    #[test]
    fn releases_at_the_minimum_cti() {
        let t = Time::from_ticks;
        let mut u = Union::new(2);
        let mut a = Batch::new();
        a.push_event(t(1), t(2), 'a');
        a.push_cti(t(5));
        let mut out = Batch::new();
        u.on_batch(0, &a, &mut out);
        assert!(out.is_empty(), "input 1 has not reported");
        let mut b = Batch::new();
        b.push_event(t(3), t(4), 'b');
        b.push_cti(t(4));
        u.on_batch(1, &b, &mut out);
        assert_eq!(out.payloads(), &['a', 'b']);
        assert_eq!(out.last_cti(), Some(t(4)));
    }
}
