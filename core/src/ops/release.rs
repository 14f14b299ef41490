//! [`ReleaseBuffer`]: the one release idiom. Results wait here keyed by sync time; when the
//! output CTI advances to `t`, every result with sync `< t` is emitted in sync order (ties in
//! the order they were pushed), then `CTI(t)`. Results with sync `>= t` wait for a later CTI.
//!
//! The buffer remembers whether it is still sorted; it sorts (stably, so runs are merged
//! cheaply) only when something was pushed out of order.
//!
//! ```
//! use punctual_core::ops::ReleaseBuffer;
//! use punctual_core::{Batch, Time};
//! let t = Time::from_ticks;
//! let mut buf = ReleaseBuffer::new();
//! buf.push(t(7), t(8), "b");
//! buf.push(t(3), t(4), "a");
//! let mut out = Batch::new();
//! buf.release(t(5), &mut out);
//! assert_eq!(out.payloads(), &["a"]);
//! assert_eq!(out.last_cti(), Some(t(5)));
//! assert_eq!(buf.len(), 1);
//! ```

use std::collections::VecDeque;

use crate::batch::Batch;
use crate::time::Time;

#[derive(Clone, Debug)]
struct Held<P> {
    sync: Time,
    seq: u64,
    other: Time,
    payload: P,
}

/// Results waiting for a CTI; see the module doc.
///
/// Results pushed in sync order (the common case) go to a sorted main run; the others go to a
/// side list, sorted only when a CTI needs it. A release merges the two by sync time and push
/// order, so its cost is the results it releases plus sorting the out-of-order ones, never
/// re-sorting everything held.
#[derive(Clone, Debug)]
pub struct ReleaseBuffer<P> {
    main: VecDeque<Held<P>>,
    side: VecDeque<Held<P>>,
    side_sorted: bool,
    seq: u64,
    last_cti: Time,
}

impl<P> Default for ReleaseBuffer<P> {
    fn default() -> Self {
        ReleaseBuffer::new()
    }
}

impl<P> ReleaseBuffer<P> {
    /// An empty buffer.
    pub fn new() -> Self {
        ReleaseBuffer {
            main: VecDeque::new(),
            side: VecDeque::new(),
            side_sorted: true,
            seq: 0,
            last_cti: Time::NEG_INF,
        }
    }

    /// Holds a result in its `(sync, other)` encoding.
    #[inline]
    pub fn push(&mut self, sync: Time, other: Time, payload: P) {
        self.seq += 1;
        let held = Held {
            sync,
            seq: self.seq,
            other,
            payload,
        };
        if self.main.back().is_none_or(|last| last.sync <= sync) {
            self.main.push_back(held);
        } else {
            self.side.push_back(held);
            self.side_sorted = false;
        }
    }

    /// Emits every held result with sync `< t` into `out`, sorted (ties in push order), then
    /// `CTI(t)`; does nothing if `t` does not advance past the last CTI released. Returns
    /// whether it emitted the CTI.
    pub fn release(&mut self, t: Time, out: &mut Batch<P>) -> bool {
        if t <= self.last_cti {
            return false;
        }
        self.last_cti = t;
        self.release_events(t, |sync, other, payload| {
            out.push_event(sync, other, payload)
        });
        out.push_cti(t);
        true
    }

    /// Moves every held result with sync `< t` to `emit`, in sync order (ties in push order),
    /// without a CTI; returns how many.
    pub fn release_events(&mut self, t: Time, mut emit: impl FnMut(Time, Time, P)) -> usize {
        if !self.side_sorted {
            // The side list is a sorted run plus what arrived since: the adaptive stable sort
            // finds the run and merges the few new ones into it.
            self.side.make_contiguous().sort_by_key(|h| (h.sync, h.seq));
            self.side_sorted = true;
        }
        let nm = self.main.partition_point(|h| h.sync < t);
        let ns = self.side.partition_point(|h| h.sync < t);
        if ns == 0 {
            for h in self.main.drain(..nm) {
                emit(h.sync, h.other, h.payload);
            }
            return nm;
        }
        let (mut i, mut j) = (0, 0);
        while i < nm || j < ns {
            let take_main = j == ns
                || (i < nm && {
                    let (a, b) = (&self.main[0], &self.side[0]);
                    (a.sync, a.seq) <= (b.sync, b.seq)
                });
            let h = if take_main {
                i += 1;
                self.main.pop_front()
            } else {
                j += 1;
                self.side.pop_front()
            };
            if let Some(h) = h {
                emit(h.sync, h.other, h.payload);
            }
        }
        nm + ns
    }

    /// Removes the first held result matching `pred` (used to take back an item that turned out
    /// not to exist, such as a start edge whose end edge leaves nothing of it).
    pub fn remove_first(
        &mut self,
        mut pred: impl FnMut(Time, Time, &P) -> bool,
    ) -> Option<(Time, Time, P)> {
        for list in [&mut self.main, &mut self.side] {
            if let Some(pos) = list.iter().position(|h| pred(h.sync, h.other, &h.payload)) {
                return list.remove(pos).map(|h| (h.sync, h.other, h.payload));
            }
        }
        None
    }

    /// Takes every held result out (in no particular order).
    pub fn drain_all(&mut self) -> impl Iterator<Item = (Time, Time, P)> + '_ {
        self.main
            .drain(..)
            .chain(self.side.drain(..))
            .map(|h| (h.sync, h.other, h.payload))
    }

    /// The last CTI released (`-inf` before the first).
    pub fn last_cti(&self) -> Time {
        self.last_cti
    }

    /// How many results are held.
    pub fn len(&self) -> usize {
        self.main.len() + self.side.len()
    }

    /// Whether nothing is held.
    pub fn is_empty(&self) -> bool {
        self.main.is_empty() && self.side.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn out_of_order_results_merge_in_sync_then_push_order() {
        let t = Time::from_ticks;
        let mut buf = ReleaseBuffer::new();
        for (sync, p) in [
            (5, 'a'),
            (7, 'b'),
            (3, 'c'),
            (5, 'd'),
            (9, 'e'),
            (5, 'f'),
            (1, 'g'),
        ] {
            buf.push(t(sync), t(sync + 1), p);
        }
        let mut out = Batch::new();
        assert!(buf.release(t(6), &mut out));
        assert_eq!(out.payloads(), &['g', 'c', 'a', 'd', 'f']);
        assert!(!buf.release(t(6), &mut out), "a CTI that does not advance");
        buf.push(t(8), t(9), 'h');
        buf.release(Time::INF, &mut out);
        assert_eq!(out.payloads(), &['g', 'c', 'a', 'd', 'f', 'b', 'h', 'e']);
        assert!(buf.is_empty());
    }
}
