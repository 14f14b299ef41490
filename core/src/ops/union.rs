//! [`Union`] of n inputs with the same payload type.
//!
//! CTI rule: output CTI = the minimum of the inputs' CTIs ([`CtiFrontier`]). Every event passes
//! unchanged, held until the output CTI passes its sync time, so the output is sorted and each
//! segment is the same whatever the interleaving of the inputs. A union of unordered streams
//! ([`Union::arrival`]) holds nothing: each event passes on as it arrives.
//!
//! Each input arrives sorted (its batches are sorted and sealed by its CTIs), so each is held in
//! its own release buffer, in order, and a release merges the inputs' released prefixes (ties in
//! input order), copying whole runs where the inputs do not interleave; when one input alone
//! holds events (a partition read on this worker while the others are read elsewhere), its
//! prefix goes out directly, in one copy.

use crate::event::EventShape;
use std::any::Any;

use crate::batch::Batch;
use crate::time::Time;

use super::graph::{input, output, Node};
use super::state::{self, StateError};
use super::{CtiFrontier, Held, HeldWhat, ReleaseBuffer};

/// Merges n inputs; see the module doc.
#[derive(Debug)]
pub struct Union<P> {
    frontier: CtiFrontier,
    /// Whether the inputs are sorted streams (held until the output CTI passes them, then
    /// merged) or unordered ones (passed on as they arrive: each event is at or after its
    /// input's CTI, so at or after the minimum).
    sorted: bool,
    held: Vec<ReleaseBuffer<P>>,
    /// Scratch: each input's released prefix, before the merge.
    released: Vec<Batch<P>>,
    /// Scratch: the merge position in each of `released`.
    at: Vec<usize>,
}

impl<P: Clone + Send + 'static> Union<P> {
    /// A union of `inputs` inputs.
    pub fn new(inputs: usize) -> Self {
        Union {
            frontier: CtiFrontier::new(inputs),
            sorted: true,
            held: (0..inputs).map(|_| ReleaseBuffer::new()).collect(),
            released: (0..inputs).map(|_| Batch::new()).collect(),
            at: vec![0; inputs],
        }
    }

    /// A union of `inputs` unordered inputs ([`Unordered`](crate::Unordered)): nothing is
    /// held, every event passes on as it arrives.
    pub fn arrival(inputs: usize) -> Self {
        Union {
            frontier: CtiFrontier::new(inputs),
            sorted: false,
            held: Vec::new(),
            released: Vec::new(),
            at: Vec::new(),
        }
    }

    /// Processes a batch of input `port`.
    pub fn on_batch(&mut self, port: usize, batch: &Batch<P>, out: &mut Batch<P>) {
        if !self.sorted {
            for (range, cti) in batch.segments() {
                out.extend_from_columns(
                    &batch.sync()[range.clone()],
                    &batch.other()[range.clone()],
                    &batch.payloads()[range],
                );
                if let Some(t) = cti.and_then(|t| self.frontier.advance(port, t)) {
                    out.push_cti(t);
                }
            }
            return;
        }
        for (range, cti) in batch.segments() {
            if let Some(held) = self.held.get_mut(port) {
                held.push_run(
                    &batch.sync()[range.clone()],
                    &batch.other()[range.clone()],
                    &batch.payloads()[range],
                );
            }
            if let Some(t) = cti.and_then(|t| self.frontier.advance(port, t)) {
                self.release(t, out);
            }
        }
    }

    /// The output CTI advanced to `t`: merge what every input holds below it, then the CTI.
    fn release(&mut self, t: Time, out: &mut Batch<P>) {
        // One input holds events, the others nothing (a partition read on this worker while
        // the others are read elsewhere, inputs whose events come in turns): its prefix is
        // already the merge, and goes out in one copy.
        let mut holding = self.held.iter().enumerate().filter(|(_, h)| !h.is_empty());
        if let (Some((k, _)), None) = (holding.next(), holding.next()) {
            if let Some(held) = self.held.get_mut(k) {
                held.release_into(t, out);
            }
            out.push_cti(t);
            return;
        }
        for ((held, released), at) in self
            .held
            .iter_mut()
            .zip(&mut self.released)
            .zip(&mut self.at)
        {
            released.clear();
            held.release_into(t, released);
            *at = 0;
        }
        if let [a, b] = &self.released[..] {
            merge_two(a, b, out);
            out.push_cti(t);
            return;
        }
        loop {
            // The input with the least next event (ties: the lower input), and the next event
            // of any other input: its run up to there goes out in one copy.
            let mut best: Option<(usize, Time)> = None;
            let mut second = Time::INF;
            for (k, (b, &i)) in self.released.iter().zip(&self.at).enumerate() {
                let Some(&s) = b.sync().get(i) else {
                    continue;
                };
                match best {
                    Some((_, bs)) if s >= bs => second = second.min(s),
                    Some((_, bs)) => {
                        second = second.min(bs);
                        best = Some((k, s));
                    }
                    None => best = Some((k, s)),
                }
            }
            let Some((k, _)) = best else {
                break;
            };
            let from = self.at[k];
            let b = &self.released[k];
            // Events of input k up to `second` (equal ones too when k is the lower input of
            // the tie: inputs below k have nothing at `second`, or it would be `best`).
            let tie = self.tie_after(k, second);
            let run = b.sync()[from..].partition_point(|&s| s < second || (s == second && !tie));
            let to = from + run.max(1);
            out.extend_from_columns(
                &b.sync()[from..to],
                &b.other()[from..to],
                &b.payloads()[from..to],
            );
            self.at[k] = to;
        }
        out.push_cti(t);
    }

    /// Whether an input below `k` has its next event at `s` (then it goes first on a tie).
    fn tie_after(&self, k: usize, s: Time) -> bool {
        self.released[..k]
            .iter()
            .zip(&self.at)
            .any(|(b, &i)| b.sync().get(i) == Some(&s))
    }
}

/// Appends events `range` of `from` to `out`: one by one when few, else one copy per column.
#[inline]
fn copy_events<P: Clone>(from: &Batch<P>, range: std::ops::Range<usize>, out: &mut Batch<P>) {
    if range.len() < 8 {
        for i in range {
            out.push_event(from.sync()[i], from.other()[i], from.payloads()[i].clone());
        }
    } else {
        out.extend_from_columns(
            &from.sync()[range.clone()],
            &from.other()[range.clone()],
            &from.payloads()[range],
        );
    }
}

/// Appends the merge of two sorted batches' events to `out` (ties: `a` first).
fn merge_two<P: Clone>(a: &Batch<P>, b: &Batch<P>, out: &mut Batch<P>) {
    let (mut i, mut j) = (0, 0);
    let (sa, sb) = (a.sync(), b.sync());
    while let (Some(&x), Some(&y)) = (sa.get(i), sb.get(j)) {
        if x <= y {
            // A run of `a` up to `y`: short runs element by element, long ones in one copy.
            let run = sa[i..].iter().take(8).take_while(|&&s| s <= y).count();
            let end = if run == 8 {
                i + sa[i..].partition_point(|&s| s <= y)
            } else {
                i + run
            };
            copy_events(a, i..end, out);
            i = end;
        } else {
            let run = sb[j..].iter().take(8).take_while(|&&s| s < x).count();
            let end = if run == 8 {
                j + sb[j..].partition_point(|&s| s < x)
            } else {
                j + run
            };
            copy_events(b, j..end, out);
            j = end;
        }
    }
    out.extend_from_columns(&sa[i..], &a.other()[i..], &a.payloads()[i..]);
    out.extend_from_columns(&sb[j..], &b.other()[j..], &b.payloads()[j..]);
}

impl<P: super::Payload> Node for Union<P> {
    fn push(&mut self, port: usize, batch: &dyn Any, out: &mut dyn Any) {
        self.on_batch(port, input::<P>(batch), output::<P>(out));
    }
    fn push_owned(&mut self, port: usize, batch: &mut dyn Any, out: &mut dyn Any) {
        if self.sorted {
            return self.on_batch(port, input::<P>(batch), output::<P>(out));
        }
        // Unordered: the events pass on as they are (moved, not copied), each CTI as the
        // frontier over the inputs says.
        let frontier = &mut self.frontier;
        output::<P>(out).append_mapping_ctis(output::<P>(batch), |t| frontier.advance(port, t));
    }
    fn state_size(&self) -> usize {
        self.held.iter().map(ReleaseBuffer::len).sum()
    }
    fn held(&self, f: &mut dyn FnMut(Held<'_>)) {
        for buffer in &self.held {
            buffer.for_each(|s, o, p| f(Held::encoded(HeldWhat::Event, s, o, p)));
        }
    }
    fn name(&self) -> &'static str {
        "union"
    }
    fn save_state(&self, out: &mut Vec<u8>) -> Result<(), StateError> {
        state::write("union", &(&self.frontier, &self.held), out)
    }
    fn restore_state(&mut self, bytes: &[u8]) -> Result<(), StateError> {
        let (frontier, held): (CtiFrontier, Vec<ReleaseBuffer<P>>) = state::read("union", bytes)?;
        if held.len() != self.held.len() {
            return Err(StateError::Mismatch(
                "a union of another number of inputs".into(),
            ));
        }
        (self.frontier, self.held) = (frontier, held);
        Ok(())
    }
    fn output_shape(&self, inputs: &[EventShape]) -> EventShape {
        inputs.iter().fold(EventShape::Point, |a, &b| a.or(b))
    }
    fn placement(&self) -> super::Placement {
        super::Placement::Anywhere
    }
    fn keeps_payloads(&self) -> bool {
        true
    }
    fn scatter(
        &self,
        _port: usize,
        batch: &mut dyn super::AnyBatch,
        me: usize,
        dests: &mut [Box<dyn super::AnyBatch>],
    ) {
        batch.scatter_to(me, dests);
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

    /// Three inputs (the general merge): interleaved and equal times come out sorted, ties in
    /// input order, whatever order the inputs' batches arrive in.
    #[test]
    fn three_inputs_merge_sorted_with_ties_in_input_order() {
        let t = Time::from_ticks;
        let inputs: [&[(i64, char)]; 3] = [
            &[(1, 'a'), (4, 'b'), (4, 'c'), (9, 'd')],
            &[(2, 'e'), (4, 'f'), (5, 'g'), (6, 'h')],
            &[(0, 'i'), (4, 'j'), (10, 'k')],
        ];
        for order in [[0, 1, 2], [2, 1, 0], [1, 2, 0]] {
            let mut u = Union::new(3);
            let mut out = Batch::new();
            for &port in &order {
                let mut b = Batch::new();
                for &(s, p) in inputs[port] {
                    b.push_event(t(s), t(s + 1), p);
                }
                b.push_cti(t(20));
                u.on_batch(port, &b, &mut out);
            }
            let got: String = out.payloads().iter().collect();
            assert_eq!(got, "iaebcfjghdk", "arrival order {order:?}");
            assert_eq!(out.last_cti(), Some(t(20)));
        }
    }

    /// An unordered union given batches it may take (`push_owned`) gives what it gives when
    /// it reads them (`push`), item for item, into an empty output or after what is there.
    #[test]
    fn an_unordered_union_moves_owned_batches_with_the_same_output() {
        let t = Time::from_ticks;
        // (port, events, CTI after them)
        let steps: [(usize, &[i64], Option<i64>); 6] = [
            (0, &[5, 3], Some(3)),
            (1, &[7], None),
            (1, &[4, 9], Some(4)),
            (0, &[6], Some(8)),
            (1, &[], Some(10)),
            (0, &[12, 11], Some(11)),
        ];
        for drain_each in [true, false] {
            let (mut read, mut owned) = (Union::<i64>::arrival(2), Union::<i64>::arrival(2));
            let (mut out_read, mut out_owned): (Batch<i64>, Batch<i64>) =
                (Batch::new(), Batch::new());
            let (mut items_read, mut items_owned) = (Vec::new(), Vec::new());
            for &(port, events, cti) in &steps {
                let mut b = Batch::new();
                for &e in events {
                    b.push_event(t(e), t(e + 1), e);
                }
                if let Some(c) = cti {
                    b.push_cti(t(c));
                }
                Node::push(&mut read, port, &b, &mut out_read);
                Node::push_owned(&mut owned, port, &mut b, &mut out_owned);
                assert!(b.is_empty(), "an owned batch is taken");
                if drain_each {
                    out_read.drain_items(|i| items_read.push(i));
                    out_owned.drain_items(|i| items_owned.push(i));
                }
            }
            out_read.drain_items(|i| items_read.push(i));
            out_owned.drain_items(|i| items_owned.push(i));
            assert_eq!(items_owned, items_read);
            assert!(items_read.contains(&crate::event::StreamItem::Cti(t(8))));
        }
    }
}
