//! What the cluster executor does with batches between workers: [`Batch::split_to`] sends
//! each event to the worker that owns it (every CTI to every worker), and
//! [`Batch::merge_runs`] merges what several workers sent for one edge back into one stream.

use super::{Batch, CtiMark};
use crate::time::Time;

thread_local! {
    /// [`Batch::split_to`]'s destination of each event and cursor of each destination (kept:
    /// no allocation per split).
    static SPLIT_SCRATCH: std::cell::RefCell<(Vec<u32>, Vec<usize>)> =
        const { std::cell::RefCell::new((Vec::new(), Vec::new())) };
}

/// Writes the times of one segment of events at their destinations' cursors (`at`, moved on
/// by each event): `to[i]` is event `i`'s destination, whose time columns already have room.
fn scatter_times<P>(
    to: &[u32],
    sync: &[Time],
    other: &[Time],
    dests: &mut [Batch<P>],
    at: &mut [usize],
) {
    for ((&d, &s), &o) in to.iter().zip(sync).zip(other) {
        let d = d as usize;
        let (Some(dst), Some(k)) = (dests.get_mut(d), at.get_mut(d)) else {
            continue;
        };
        if let (Some(ds), Some(dother)) = (dst.sync.get_mut(*k), dst.other.get_mut(*k)) {
            *ds = s;
            *dother = o;
        }
        *k += 1;
    }
}

impl<P> Batch<P> {
    /// Moves every event to `dests[dest(payload)]` and copies every CTI to every destination,
    /// each after the events that preceded it: each destination gets a stream of its own
    /// events with all the CTIs (what a worker sends another when a graph runs split, see
    /// [`crate::ops::Graph::split`]). The batch is left empty.
    pub(crate) fn split_to(&mut self, dests: &mut [Batch<P>], mut dest: impl FnMut(&P) -> usize) {
        let Some(last) = dests.len().checked_sub(1) else {
            self.clear();
            return;
        };
        SPLIT_SCRATCH.with(|scratch| {
            let (to, at) = &mut *scratch.borrow_mut();
            // Each event's destination, and each destination's share: its columns grow by
            // exactly that (one reservation), then each segment between two CTIs is written
            // in one pass with a cursor per destination.
            to.clear();
            to.extend(self.payload.iter().map(|p| dest(p).min(last) as u32));
            at.clear();
            at.resize(dests.len(), 0);
            for &d in to.iter() {
                at[d as usize] += 1;
            }
            for (d, a) in dests.iter_mut().zip(at.iter_mut()) {
                let len = d.sync.len();
                d.sync.resize(len + *a, Time::default());
                d.other.resize(len + *a, Time::default());
                d.payload.reserve(*a);
                *a = len;
            }
            // Each segment's events, then its CTI to every destination, after the events
            // of the segment that went there; the last segment has no CTI after it.
            // (The columns have one length; the least keeps a slice in bounds regardless.)
            let n = to.len().min(self.sync.len()).min(self.other.len());
            let mut from = 0;
            for m in self.ctis.drain(..).map(Some).chain(std::iter::once(None)) {
                let end = m.map_or(n, |m| m.after.clamp(from, n));
                scatter_times(
                    &to[from..end],
                    &self.sync[from..end],
                    &self.other[from..end],
                    dests,
                    at,
                );
                from = end;
                let Some(m) = m else { break };
                for (dst, &after) in dests.iter_mut().zip(at.iter()) {
                    dst.ctis.push(CtiMark {
                        after,
                        time: m.time,
                    });
                }
            }
            for (payload, &d) in self.payload.drain(..).zip(to.iter()) {
                if let Some(dst) = dests.get_mut(d as usize) {
                    dst.payload.push(payload);
                }
            }
            self.sync.clear();
            self.other.clear();
        });
    }

    /// Room for `n` more events.
    fn reserve(&mut self, n: usize) {
        self.sync.reserve(n);
        self.other.reserve(n);
        self.payload.reserve(n);
    }

    /// Merges the streams several workers sent for one edge in one step (`runs`: sender
    /// index and its stream, each a valid stream of its own) into `self`, one stream: each
    /// run's items keep their order; between runs the smallest next item goes first (an
    /// event by its sync time, a CTI by its time, before events at that time). A sender's
    /// CTI updates `latest[sender]`; the merged stream gets `CTI(min(latest))` whenever that
    /// minimum passes `emitted`, the last CTI it got. Every run is left empty.
    ///
    /// With `pending` (for an ordered stream), the merged stream releases each event as the
    /// one operator would: before the first CTI above its sync time, events in sync order;
    /// those no CTI has passed yet wait in `pending` (the release buffer) for a later step.
    pub(crate) fn merge_runs(
        &mut self,
        runs: &mut [(usize, Batch<P>)],
        latest: &mut [Time],
        emitted: &mut Time,
        mut pending: Option<&mut crate::ops::ReleaseBuffer<P>>,
    ) where
        P: Clone,
    {
        struct Head<'a, P> {
            sync: std::vec::Drain<'a, Time>,
            other: std::vec::Drain<'a, Time>,
            payload: std::vec::Drain<'a, P>,
            marks: std::iter::Peekable<std::vec::Drain<'a, CtiMark>>,
            event: usize,
            sender: usize,
        }
        if pending.is_none() {
            self.reserve(runs.iter().map(|(_, r)| r.sync.len()).sum());
        }
        // Drained, not consumed: each run keeps its capacity for the next step.
        let mut heads: Vec<Head<'_, P>> = runs
            .iter_mut()
            .map(|(sender, run)| Head {
                sync: run.sync.drain(..),
                other: run.other.drain(..),
                payload: run.payload.drain(..),
                marks: run.ctis.drain(..).peekable(),
                event: 0,
                sender: *sender,
            })
            .collect();
        loop {
            // Every run's events up to its next CTI, in bulk (an ordered stream's wait in
            // `pending`, which releases them sorted).
            for head in heads.iter_mut() {
                let upto = head.marks.peek().map_or(usize::MAX, |m| m.after);
                let n = upto.saturating_sub(head.event);
                match pending.as_deref_mut() {
                    Some(held) if !std::mem::needs_drop::<P>() => {
                        // Copies: the run's events in bulk, then skipped.
                        let n = n.min(head.sync.len());
                        held.push_run(
                            &head.sync.as_slice()[..n],
                            &head.other.as_slice()[..n],
                            &head.payload.as_slice()[..n],
                        );
                        if n > 0 {
                            head.sync.nth(n - 1);
                            head.other.nth(n - 1);
                            head.payload.nth(n - 1);
                        }
                        head.event += n;
                    }
                    Some(held) => {
                        let events = head
                            .sync
                            .by_ref()
                            .take(n)
                            .zip(head.other.by_ref())
                            .zip(head.payload.by_ref());
                        for ((s, o), p) in events {
                            held.push(s, o, p);
                            head.event += 1;
                        }
                    }
                    None => {
                        let before = self.sync.len();
                        self.sync.extend(head.sync.by_ref().take(n));
                        let taken = self.sync.len() - before;
                        self.other.extend(head.other.by_ref().take(taken));
                        self.payload.extend(head.payload.by_ref().take(taken));
                        head.event += taken;
                    }
                }
            }
            // Then the smallest next CTI (ties: the lower run).
            let mut best: Option<(usize, Time)> = None;
            for (h, head) in heads.iter_mut().enumerate() {
                if let Some(m) = head.marks.peek() {
                    if best.is_none_or(|(_, t)| m.time < t) {
                        best = Some((h, m.time));
                    }
                }
            }
            let Some((h, _)) = best else { break };
            let head = &mut heads[h];
            if let Some(m) = head.marks.next() {
                if let Some(l) = latest.get_mut(head.sender) {
                    *l = (*l).max(m.time);
                }
            }
            // A sender whose next item in this step is a CTI counts at that CTI: the senders
            // advance together through a step, as the one operator they share would, instead
            // of one at a time.
            let mut min = Time::INF;
            for (w, &l) in latest.iter().enumerate() {
                let next = heads.iter_mut().find(|h| h.sender == w).and_then(|h| {
                    let event = h.event;
                    let m = h.marks.peek()?;
                    (m.after == event).then_some(m.time)
                });
                min = min.min(next.unwrap_or(l).max(l));
            }
            if min > *emitted {
                *emitted = min;
                if let Some(p) = pending.as_deref_mut() {
                    p.release_into(min, self);
                }
                self.push_cti(min);
            }
        }
    }
}
