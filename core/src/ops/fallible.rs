//! Operators that may refuse an event with a reason: the refused event is dropped, counted in
//! the operator's `dropped` and recorded with the reason ([`OperatorDrop`]), which a query
//! reports as a dead letter of the operator. A start edge and its end edge carry equal
//! payloads, so a pure function refuses both or neither.
//!
//! - [`TryFilter`]: keeps, leaves out or refuses each event (a condition that cannot be
//!   computed for it).
//! - [`TryMapWithTime`]: projects each event or refuses it.
//! - [`KeepOk`]: keeps the `Ok` results of an operator that made `Result`s in one step.

use crate::batch::Batch;
use crate::event::EventKind;
use crate::order::Order;
use crate::time::Time;

use super::state::{self, StateError};
use super::stream::Stream;
use super::{DropLog, OperatorDrop, Payload, UnaryOperator};

impl<P: Payload, O: Order> Stream<P, O> {
    /// Like [`Stream::filter`], with a predicate that may refuse an event (`Err(why)`): the
    /// event is dropped, counted in the operator's `dropped` and kept with the reason (the
    /// operator's drops, which a query reports as dead letters), where `Ok(false)` leaves it
    /// out as a filter does. CTIs unchanged. Never fused into an ingress.
    ///
    /// ```
    /// use punctual_core::ops::QueryGraph;
    /// use punctual_core::{Batch, Ordered, Time};
    /// let graph = QueryGraph::new();
    /// let input = graph.source::<i64, Ordered>();
    /// let big = input.try_filter(|v| match 100_i64.checked_div(*v) {
    ///     Some(q) => Ok(q < 50),
    ///     None => Err("a division by zero".to_owned()),
    /// });
    /// graph.keep_output(&big);
    /// let mut batch = Batch::new();
    /// batch.push_point(Time::from_ticks(1), 1);
    /// batch.push_point(Time::from_ticks(2), 0);
    /// batch.push_point(Time::from_ticks(3), 4);
    /// graph.feed(&input, &mut batch);
    /// let mut out = Batch::new();
    /// graph.take_output(&big, &mut out);
    /// assert_eq!(out.payloads(), &[4]);
    /// ```
    pub fn try_filter(
        &self,
        predicate: impl Fn(&P) -> Result<bool, String> + Send + 'static,
    ) -> Stream<P, O> {
        self.unary(TryFilter::new(predicate))
    }

    /// Like [`Stream::map_with_time`], with a function that may refuse an event (`Err(why)`):
    /// the event is dropped, counted in the operator's `dropped` and kept with the reason
    /// (the operator's drops, which a query reports as dead letters).
    ///
    /// ```
    /// use punctual_core::ops::QueryGraph;
    /// use punctual_core::{Batch, Ordered, Time};
    /// let graph = QueryGraph::new();
    /// let input = graph.source::<i64, Ordered>();
    /// let halves = input.try_map_with_time(|_, v| match v % 2 {
    ///     0 => Ok(v / 2),
    ///     _ => Err(format!("{v} is odd")),
    /// });
    /// graph.keep_output(&halves);
    /// let mut batch = Batch::new();
    /// batch.push_point(Time::from_ticks(1), 4);
    /// batch.push_point(Time::from_ticks(2), 5);
    /// graph.feed(&input, &mut batch);
    /// let mut out = Batch::new();
    /// graph.take_output(&halves, &mut out);
    /// assert_eq!(out.payloads(), &[2]);
    /// ```
    pub fn try_map_with_time<Q: Payload>(
        &self,
        f: impl Fn(Time, &P) -> Result<Q, String> + Send + 'static,
    ) -> Stream<Q, O> {
        self.unary(TryMapWithTime::new(f))
    }
}

impl<Q: Payload, O: Order> Stream<Result<Q, String>, O> {
    /// Each event whose payload is `Ok(q)`, with payload `q`; an `Err(why)` event is dropped,
    /// counted in the operator's `dropped` and kept with the reason (the operator's drops,
    /// which a query reports as dead letters). CTIs unchanged. What an operator that makes
    /// its results in one step (a window's aggregate) uses to refuse some of them.
    ///
    /// ```
    /// use punctual_core::ops::QueryGraph;
    /// use punctual_core::{Batch, Ordered, Time};
    /// let graph = QueryGraph::new();
    /// let input = graph.source::<Result<i64, String>, Ordered>();
    /// let kept = input.keep_ok();
    /// graph.keep_output(&kept);
    /// let mut batch = Batch::new();
    /// batch.push_point(Time::from_ticks(1), Ok(4));
    /// batch.push_point(Time::from_ticks(2), Err("no value".to_owned()));
    /// graph.feed(&input, &mut batch);
    /// let mut out = Batch::new();
    /// graph.take_output(&kept, &mut out);
    /// assert_eq!(out.payloads(), &[4]);
    /// ```
    pub fn keep_ok(&self) -> Stream<Q, O> {
        self.unary(KeepOk::default())
    }
}

/// Keeps the events its predicate keeps (`Ok(true)`), leaves out those it does not
/// (`Ok(false)`) and refuses the others (`Err(why)`: dropped with the reason). CTIs pass
/// unchanged.
#[derive(Debug)]
pub struct TryFilter<F> {
    predicate: F,
    drops: DropLog,
    /// Whether each event of the batch being read goes on (kept between batches: no
    /// allocation in steady state).
    verdicts: Vec<bool>,
}

impl<F> TryFilter<F> {
    /// A filter with this predicate.
    pub fn new(predicate: F) -> Self {
        TryFilter {
            predicate,
            drops: DropLog::default(),
            verdicts: Vec::new(),
        }
    }
}

impl<P, F> UnaryOperator<P, P> for TryFilter<F>
where
    P: Clone + Send + 'static,
    F: Fn(&P) -> Result<bool, String> + Send + 'static,
{
    const NAME: &'static str = "filter";
    fn save_state(&self, out: &mut Vec<u8>) -> Result<(), StateError> {
        state::write("filter", &self.drops, out)
    }
    fn restore_state(&mut self, bytes: &[u8]) -> Result<(), StateError> {
        self.drops = state::read("filter", bytes)?;
        Ok(())
    }

    const FORWARDS: bool = true;

    fn on_batch(&mut self, input: &Batch<P>, out: &mut Batch<P>) {
        for (range, cti) in input.segments() {
            for i in range {
                let (s, o) = (input.sync()[i], input.other()[i]);
                let p = &input.payloads()[i];
                match (self.predicate)(p) {
                    Ok(true) => out.push_event(s, o, p.clone()),
                    Ok(false) => {}
                    Err(reason) => self.drops.record(EventKind::decode(s, o), reason),
                }
            }
            if let Some(t) = cti {
                out.push_cti(t);
            }
        }
    }

    fn on_owned_batch(&mut self, input: &mut Batch<P>, out: &mut Batch<P>) {
        // Judged in one pass (the refused recorded with their times), then compacted where
        // they are and moved: no payload is copied.
        self.verdicts.clear();
        for (i, p) in input.payloads().iter().enumerate() {
            self.verdicts.push(match (self.predicate)(p) {
                Ok(keep) => keep,
                Err(reason) => {
                    let (s, o) = (input.sync()[i], input.other()[i]);
                    self.drops.record(EventKind::decode(s, o), reason);
                    false
                }
            });
        }
        if self.verdicts.iter().any(|&keep| !keep) {
            let mut verdicts = self.verdicts.iter();
            input.retain(|_| verdicts.next().copied().unwrap_or(false));
        }
        out.append(input);
    }

    fn dropped(&self) -> u64 {
        self.drops.count()
    }

    fn take_drops(&mut self, into: &mut Vec<OperatorDrop>) {
        self.drops.take(into);
    }
}

/// Like [`MapWithTime`](super::MapWithTime), with a function that may refuse an event
/// (`Err(why)`): the event is dropped, counted in the operator's `dropped` and recorded with
/// the reason ([`OperatorDrop`]), as a dead letter of the operator. A start edge and its end
/// edge carry equal payloads, so a pure function refuses both or neither.
#[derive(Debug)]
pub struct TryMapWithTime<F> {
    f: F,
    drops: DropLog,
}

impl<F> TryMapWithTime<F> {
    /// A projection with this function of `(start, payload)`.
    pub fn new(f: F) -> Self {
        TryMapWithTime {
            f,
            drops: DropLog::default(),
        }
    }
}

impl<P, Q, F> UnaryOperator<P, Q> for TryMapWithTime<F>
where
    P: Send + 'static,
    Q: Send + 'static,
    F: Fn(Time, &P) -> Result<Q, String> + Send + 'static,
{
    const NAME: &'static str = "map";
    fn save_state(&self, out: &mut Vec<u8>) -> Result<(), StateError> {
        state::write("map", &self.drops, out)
    }
    fn restore_state(&mut self, bytes: &[u8]) -> Result<(), StateError> {
        self.drops = state::read("map", bytes)?;
        Ok(())
    }

    const PER_EVENT: bool = true;

    fn on_batch(&mut self, input: &Batch<P>, out: &mut Batch<Q>) {
        for (range, cti) in input.segments() {
            for i in range {
                let (s, o) = (input.sync()[i], input.other()[i]);
                // An end edge's sync time is its end; its start is the other time.
                match (self.f)(if o < s { o } else { s }, &input.payloads()[i]) {
                    Ok(q) => out.push_event(s, o, q),
                    Err(reason) => self.drops.record(EventKind::decode(s, o), reason),
                }
            }
            if let Some(t) = cti {
                out.push_cti(t);
            }
        }
    }

    fn dropped(&self) -> u64 {
        self.drops.count()
    }

    fn take_drops(&mut self, into: &mut Vec<OperatorDrop>) {
        self.drops.take(into);
    }
}

/// Keeps each event whose payload is `Ok(q)`, with payload `q`; an event whose payload is
/// `Err(why)` is dropped, counted in the operator's `dropped` and recorded with the reason
/// ([`OperatorDrop`]). CTIs pass unchanged. A batch no one else reads is moved, not copied.
#[derive(Debug, Default)]
pub struct KeepOk {
    drops: DropLog,
}

impl<Q> UnaryOperator<Result<Q, String>, Q> for KeepOk
where
    Q: Clone + Send + 'static,
{
    const NAME: &'static str = "keep ok";
    fn save_state(&self, out: &mut Vec<u8>) -> Result<(), StateError> {
        state::write("keep ok", &self.drops, out)
    }
    fn restore_state(&mut self, bytes: &[u8]) -> Result<(), StateError> {
        self.drops = state::read("keep ok", bytes)?;
        Ok(())
    }

    const PER_EVENT: bool = true;

    fn on_batch(&mut self, input: &Batch<Result<Q, String>>, out: &mut Batch<Q>) {
        for (range, cti) in input.segments() {
            for i in range {
                let (s, o) = (input.sync()[i], input.other()[i]);
                match &input.payloads()[i] {
                    Ok(q) => out.push_event(s, o, q.clone()),
                    Err(why) => self.drops.record(EventKind::decode(s, o), why.clone()),
                }
            }
            if let Some(t) = cti {
                out.push_cti(t);
            }
        }
    }

    fn on_owned_batch(&mut self, input: &mut Batch<Result<Q, String>>, out: &mut Batch<Q>) {
        // The payloads moved out column by column; the emptied column goes back (its
        // allocation kept for the next batch).
        let mut payloads = std::mem::take(input.columns_mut().2);
        let mut moved = payloads.drain(..);
        for (range, cti) in input.segments() {
            for i in range {
                let Some(p) = moved.next() else { break };
                let (s, o) = (input.sync()[i], input.other()[i]);
                match p {
                    Ok(q) => out.push_event(s, o, q),
                    Err(why) => self.drops.record(EventKind::decode(s, o), why),
                }
            }
            if let Some(t) = cti {
                out.push_cti(t);
            }
        }
        drop(moved);
        input.clear();
        *input.columns_mut().2 = payloads;
    }

    fn dropped(&self) -> u64 {
        self.drops.count()
    }

    fn take_drops(&mut self, into: &mut Vec<OperatorDrop>) {
        self.drops.take(into);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Points 0..20 with CTIs after every seventh, some events refused and some left out:
    /// a batch read in place and one moved give the same events, CTIs and drops.
    #[test]
    fn batches_read_or_moved_give_the_same_results() {
        let mut batch = Batch::new();
        for i in 0..20_i64 {
            batch.push_point(Time::from_ticks(i), i);
            if i % 7 == 6 {
                batch.push_cti(Time::from_ticks(i + 1));
            }
        }
        let judge = |v: &i64| match v % 5 {
            0 => Err(format!("{v} refused")),
            1 => Ok(false),
            _ => Ok(true),
        };
        let (mut read, mut moved) = (TryFilter::new(judge), TryFilter::new(judge));
        let (mut by_read, mut by_move) = (Batch::new(), Batch::new());
        read.on_batch(&batch, &mut by_read);
        moved.on_owned_batch(&mut batch.clone(), &mut by_move);
        assert_eq!(by_read, by_move);
        assert_eq!(
            by_read.payloads(),
            &[2, 3, 4, 7, 8, 9, 12, 13, 14, 17, 18, 19]
        );
        assert_eq!(by_read.ctis().len(), 2);
        let (mut a, mut b) = (Vec::new(), Vec::new());
        read.take_drops(&mut a);
        moved.take_drops(&mut b);
        assert_eq!(a, b);
        assert_eq!(a.len(), 4);
        assert_eq!(a[1].reason, "5 refused");
        let results: Batch<Result<i64, String>> = {
            let mut r = Batch::new();
            for (i, v) in batch.payloads().iter().enumerate() {
                r.push_point(Time::from_ticks(i as i64), judge(v).map(|_| *v));
                if i == 9 {
                    r.push_cti(Time::from_ticks(10));
                }
            }
            r
        };
        let (mut read, mut moved) = (KeepOk::default(), KeepOk::default());
        let (mut by_read, mut by_move) = (Batch::new(), Batch::new());
        UnaryOperator::<Result<i64, String>, i64>::on_batch(&mut read, &results, &mut by_read);
        moved.on_owned_batch(&mut results.clone(), &mut by_move);
        assert_eq!(by_read, by_move);
        assert_eq!(by_read.len(), 16);
        assert_eq!(by_read.ctis().len(), 1);
        assert_eq!(read.drops.count(), 4);
        assert_eq!(moved.drops.count(), 4);
    }
}
