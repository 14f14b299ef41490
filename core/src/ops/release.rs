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
    other: Time,
    payload: P,
}

/// Results waiting for a CTI; see the module doc.
#[derive(Clone, Debug)]
pub struct ReleaseBuffer<P> {
    held: VecDeque<Held<P>>,
    sorted: bool,
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
            held: VecDeque::new(),
            sorted: true,
            last_cti: Time::NEG_INF,
        }
    }

    /// Holds a result in its `(sync, other)` encoding.
    pub fn push(&mut self, sync: Time, other: Time, payload: P) {
        if let Some(last) = self.held.back() {
            self.sorted &= last.sync <= sync;
        }
        self.held.push_back(Held {
            sync,
            other,
            payload,
        });
    }

    /// Emits every held result with sync `< t` into `out`, sorted, then `CTI(t)`; does nothing
    /// if `t` does not advance past the last CTI released. Returns whether it emitted the CTI.
    pub fn release(&mut self, t: Time, out: &mut Batch<P>) -> bool {
        if t <= self.last_cti {
            return false;
        }
        self.last_cti = t;
        if !self.sorted {
            self.held.make_contiguous().sort_by_key(|h| h.sync);
            self.sorted = true;
        }
        let n = self.held.partition_point(|h| h.sync < t);
        for h in self.held.drain(..n) {
            out.push_event(h.sync, h.other, h.payload);
        }
        out.push_cti(t);
        true
    }

    /// Removes the first held result matching `pred` (used to take back an item that turned out
    /// not to exist, such as a start edge whose end edge leaves nothing of it).
    pub fn remove_first(
        &mut self,
        mut pred: impl FnMut(Time, Time, &P) -> bool,
    ) -> Option<(Time, Time, P)> {
        let pos = self
            .held
            .iter()
            .position(|h| pred(h.sync, h.other, &h.payload))?;
        self.held.remove(pos).map(|h| (h.sync, h.other, h.payload))
    }

    /// Takes every held result out, in the order pushed.
    pub fn drain_all(&mut self) -> impl Iterator<Item = (Time, Time, P)> + '_ {
        self.held.drain(..).map(|h| (h.sync, h.other, h.payload))
    }

    /// The last CTI released (`-inf` before the first).
    pub fn last_cti(&self) -> Time {
        self.last_cti
    }

    /// How many results are held.
    pub fn len(&self) -> usize {
        self.held.len()
    }

    /// Whether nothing is held.
    pub fn is_empty(&self) -> bool {
        self.held.is_empty()
    }
}
