//! [`ReleaseBuffer`]: the one release idiom. Results wait here keyed by sync time; when the
//! output CTI advances to `t`, every result with sync `< t` is emitted in sync order (ties in
//! the order they were pushed), then `CTI(t)`. Results with sync `>= t` wait for a later CTI.
//!
//! Layout: results pushed in sync order (the common case) go to a *main run* held in columns
//! (sync, other, payload), so a release moves a prefix of it into the output batch column by
//! column. Results pushed out of order go to a small *side heap* of `(sync, push order)` keys,
//! from which a release pops exactly the ones it releases and merges them into the released
//! prefix of the main run. Nothing is ever re-sorted wholesale.
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

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

use crate::batch::Batch;
use crate::time::Time;

/// A result pushed out of sync order, in the side slab.
#[derive(Clone, Debug)]
struct SideEntry<P> {
    /// How many results had gone to the main run when this one was pushed: main results with a
    /// lower position were pushed before it (the tie-break against the main run).
    main_pos: u64,
    other: Time,
    payload: P,
}

/// Results waiting for a CTI; see the module doc.
///
/// A release costs the results it releases plus a heap pop for each out-of-order one among
/// them; pushing in order costs two or three column appends (the `other` column of a run of
/// points is implicit: `sync + 1`).
#[derive(Clone, Debug)]
pub struct ReleaseBuffer<P> {
    sync: VecDeque<Time>,
    /// Empty while every result in the main run is a point (`other = sync + 1`).
    other: VecDeque<Time>,
    points_only: bool,
    payload: VecDeque<P>,
    /// Main-run results removed from the front so far (the position of `sync[0]`).
    main_base: u64,
    /// The last sync time in the main run (`-inf` when it is empty).
    last_sync: Time,
    /// Out-of-order results: a heap of small keys `(sync, push order, slot)`, least first.
    side: BinaryHeap<Reverse<(Time, u64, u32)>>,
    slots: Vec<Option<SideEntry<P>>>,
    free: Vec<u32>,
    side_seq: u64,
    last_cti: Time,
}

impl<P> Default for ReleaseBuffer<P> {
    fn default() -> Self {
        ReleaseBuffer::new()
    }
}

/// Appends the first `n` items of `from` to `to` (without removing them).
#[inline]
fn copy_front<T: Clone>(from: &VecDeque<T>, n: usize, to: &mut Vec<T>) {
    let (a, b) = from.as_slices();
    if n <= a.len() {
        to.extend_from_slice(&a[..n]);
    } else {
        to.extend_from_slice(a);
        to.extend_from_slice(&b[..n - a.len()]);
    }
}

impl<P> ReleaseBuffer<P> {
    /// An empty buffer.
    pub fn new() -> Self {
        ReleaseBuffer {
            sync: VecDeque::new(),
            other: VecDeque::new(),
            points_only: true,
            payload: VecDeque::new(),
            main_base: 0,
            last_sync: Time::NEG_INF,
            side: BinaryHeap::new(),
            slots: Vec::new(),
            free: Vec::new(),
            side_seq: 0,
            last_cti: Time::NEG_INF,
        }
    }

    /// Holds a result in its `(sync, other)` encoding.
    #[inline]
    pub fn push(&mut self, sync: Time, other: Time, payload: P) {
        if self.last_sync <= sync {
            self.last_sync = sync;
            if !self.points_only {
                self.other.push_back(other);
            } else if other != sync.next_tick() {
                self.materialize_other();
                self.other.push_back(other);
            }
            self.sync.push_back(sync);
            self.payload.push_back(payload);
        } else {
            self.push_side(sync, other, payload);
        }
    }

    /// The main run stops being points only: write its `other` column out.
    #[cold]
    fn materialize_other(&mut self) {
        self.other.clear();
        self.other.extend(self.sync.iter().map(|s| s.next_tick()));
        self.points_only = false;
    }

    #[cold]
    #[inline(never)]
    fn push_side(&mut self, sync: Time, other: Time, payload: P) {
        self.side_seq += 1;
        let entry = Some(SideEntry {
            main_pos: self.main_base + self.sync.len() as u64,
            other,
            payload,
        });
        let slot = match self.free.pop() {
            Some(slot) => {
                self.slots[slot as usize] = entry;
                slot
            }
            None => {
                self.slots.push(entry);
                (self.slots.len() - 1) as u32
            }
        };
        self.side.push(Reverse((sync, self.side_seq, slot)));
    }

    fn take_slot(&mut self, slot: u32) -> Option<SideEntry<P>> {
        let entry = self.slots.get_mut(slot as usize)?.take();
        self.free.push(slot);
        entry
    }

    /// How many results are held.
    #[inline]
    pub fn len(&self) -> usize {
        self.sync.len() + self.side.len()
    }

    /// Whether nothing is held.
    pub fn is_empty(&self) -> bool {
        self.sync.is_empty() && self.side.is_empty()
    }

    /// The last CTI released (`-inf` before the first).
    pub fn last_cti(&self) -> Time {
        self.last_cti
    }

    /// Removes the first held result matching `pred` (used to take back an item that turned out
    /// not to exist, such as a start edge whose end edge leaves nothing of it).
    pub fn remove_first(
        &mut self,
        mut pred: impl FnMut(Time, Time, &P) -> bool,
    ) -> Option<(Time, Time, P)> {
        let other_of = |buf: &Self, i: usize| {
            if buf.points_only {
                buf.sync[i].next_tick()
            } else {
                buf.other[i]
            }
        };
        let found =
            (0..self.sync.len()).find(|&i| pred(self.sync[i], other_of(self, i), &self.payload[i]));
        if let Some(i) = found {
            let o = other_of(self, i);
            if !self.points_only {
                self.other.remove(i);
            }
            let (Some(s), Some(p)) = (self.sync.remove(i), self.payload.remove(i)) else {
                return None;
            };
            // Later main results moved down one position.
            let pos = self.main_base + i as u64;
            for e in self.slots.iter_mut().flatten() {
                if e.main_pos > pos {
                    e.main_pos -= 1;
                }
            }
            if self.sync.is_empty() {
                self.reset_main();
            }
            return Some((s, o, p));
        }
        let mut keys = std::mem::take(&mut self.side).into_vec();
        let pos = keys.iter().position(|Reverse((sync, _, slot))| {
            self.slots[*slot as usize]
                .as_ref()
                .is_some_and(|e| pred(*sync, e.other, &e.payload))
        });
        let removed = pos.map(|pos| keys.swap_remove(pos));
        self.side = BinaryHeap::from(keys);
        let Reverse((sync, _, slot)) = removed?;
        self.take_slot(slot).map(|e| (sync, e.other, e.payload))
    }

    /// Takes every held result out (in no particular order).
    pub fn drain_all(&mut self) -> impl Iterator<Item = (Time, Time, P)> + '_ {
        self.main_base += self.sync.len() as u64;
        self.last_sync = Time::NEG_INF;
        let points_only = std::mem::replace(&mut self.points_only, true);
        let mut other = self.other.drain(..);
        let main = self
            .sync
            .drain(..)
            .zip(self.payload.drain(..))
            .map(move |(s, p)| {
                let o = if points_only {
                    s.next_tick()
                } else {
                    other.next().unwrap_or(s.next_tick())
                };
                (s, o, p)
            });
        let slots = &mut self.slots;
        self.free.clear();
        let side = self
            .side
            .drain()
            .filter_map(move |Reverse((sync, _, slot))| {
                slots
                    .get_mut(slot as usize)
                    .and_then(Option::take)
                    .map(|e| (sync, e.other, e.payload))
            });
        main.chain(side)
    }

    fn reset_main(&mut self) {
        self.last_sync = Time::NEG_INF;
        self.points_only = true;
        self.other.clear();
    }
}

impl<P: Clone> ReleaseBuffer<P> {
    /// Emits every held result with sync `< t` into `out`, sorted (ties in push order), then
    /// `CTI(t)`; does nothing if `t` does not advance past the last CTI released. Returns
    /// whether it emitted the CTI.
    pub fn release(&mut self, t: Time, out: &mut Batch<P>) -> bool {
        if t <= self.last_cti {
            return false;
        }
        self.last_cti = t;
        self.release_into(t, out);
        out.push_cti(t);
        true
    }

    /// Appends every held result with sync `< t` to `out`, in sync order (ties in push order),
    /// without a CTI; returns how many. The results must sort after what `out` holds.
    pub fn release_into(&mut self, t: Time, out: &mut Batch<P>) -> usize {
        let nm = self.sync.partition_point(|&s| s < t);
        let before = out.len();
        let (sync, other, payload) = out.columns_mut();
        sync.reserve(nm);
        other.reserve(nm);
        payload.reserve(nm);
        let mut left = nm;
        let mut ns = 0;
        while let Some(&Reverse((side_sync, _, slot))) = self.side.peek() {
            if side_sync >= t {
                break;
            }
            self.side.pop();
            let Some(h) = self.take_slot(slot) else {
                continue;
            };
            ns += 1;
            // The main results that come before this one: lower sync, or equal sync and pushed
            // earlier.
            let mut k = 0;
            while k < left {
                let s = self.sync[k];
                if s < side_sync || (s == side_sync && self.main_base + (k as u64) < h.main_pos) {
                    k += 1;
                } else {
                    break;
                }
            }
            self.move_main(k, sync, other, payload);
            left -= k;
            sync.push(side_sync);
            other.push(h.other);
            payload.push(h.payload);
        }
        self.move_main(left, sync, other, payload);
        out.debug_check_from(before);
        nm + ns
    }

    /// Moves the first `n` results of the main run to the columns.
    #[inline]
    fn move_main(
        &mut self,
        n: usize,
        sync: &mut Vec<Time>,
        other: &mut Vec<Time>,
        payload: &mut Vec<P>,
    ) {
        if n == 0 {
            return;
        }
        copy_front(&self.sync, n, sync);
        if self.points_only {
            let from = sync.len() - n;
            other.extend(sync[from..].iter().map(|s| s.next_tick()));
        } else {
            copy_front(&self.other, n, other);
            self.other.drain(..n);
        }
        self.sync.drain(..n);
        if std::mem::needs_drop::<P>() {
            payload.extend(self.payload.drain(..n));
        } else {
            // No drop glue: cloning is a copy, and the originals need no dropping.
            copy_front(&self.payload, n, payload);
            self.payload.drain(..n);
        }
        self.main_base += n as u64;
        if self.sync.is_empty() {
            self.reset_main();
        }
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

    proptest::proptest! {
        /// Any pushes (points and intervals, in and out of order) interleaved with releases and
        /// removals come out as a stable sort by sync time of what was pushed.
        #[test]
        fn releases_are_a_stable_sort_of_the_pushes(
            ops in proptest::collection::vec((0i64..40, 0u8..10, proptest::bool::ANY), 0..200)
        ) {
            let t = Time::from_ticks;
            let mut buf = ReleaseBuffer::new();
            let mut reference: Vec<(Time, Time, usize)> = Vec::new();
            let mut out = Batch::new();
            let mut expected: Vec<(Time, Time, usize)> = Vec::new();
            let mut cti = 0i64;
            for (n, &(sync, action, interval)) in ops.iter().enumerate() {
                match action {
                    // Release up to a later CTI.
                    0 => {
                        cti += sync % 7 + 1;
                        let (now, later): (Vec<_>, Vec<_>) =
                            reference.drain(..).partition(|r| r.0 < t(cti));
                        let mut now = now;
                        now.sort_by_key(|r| r.0);
                        expected.extend(now);
                        reference = later;
                        buf.release(t(cti), &mut out);
                    }
                    // Take back the first held result with this payload parity.
                    1 => {
                        let parity = sync as usize % 2;
                        let got = buf.remove_first(|_, _, p| p % 2 == parity);
                        if let Some((s, o, p)) = got {
                            let pos = reference.iter().position(|r| r.2 == p);
                            proptest::prop_assert!(pos.is_some(), "removed {p}, which is not held");
                            let r = reference.remove(pos.unwrap_or(0));
                            proptest::prop_assert_eq!((r.0, r.1), (s, o));
                        } else {
                            proptest::prop_assert!(reference.iter().all(|r| r.2 % 2 != parity));
                        }
                    }
                    _ => {
                        let s = t(cti + sync);
                        let o = if interval { t(cti + sync + 5) } else { s.next_tick() };
                        buf.push(s, o, n);
                        reference.push((s, o, n));
                    }
                }
                proptest::prop_assert_eq!(buf.len(), reference.len());
            }
            let got: Vec<(Time, Time, usize)> = out
                .sync()
                .iter()
                .zip(out.other())
                .zip(out.payloads())
                .map(|((&s, &o), &p)| (s, o, p))
                .collect();
            proptest::prop_assert_eq!(got, expected);
            let mut rest: Vec<_> = buf.drain_all().collect();
            rest.sort_by_key(|r| r.2);
            reference.sort_by_key(|r| r.2);
            proptest::prop_assert_eq!(rest, reference);
            proptest::prop_assert!(buf.is_empty());
        }
    }
}
