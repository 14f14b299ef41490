//! [`ReleaseBuffer`]: the one release idiom. Results wait here keyed by sync time; when the
//! output CTI advances to `t`, every result with sync `< t` is emitted in sync order (ties in
//! the order they were pushed), then `CTI(t)`. Results with sync `>= t` wait for a later CTI.
//!
//! Layout: results pushed in sync order (the common case) go to a *main run* held in columns
//! (sync, other, payload), so a release moves a prefix of it into the output batch column by
//! column. Results pushed out of order go to a small *side list*: at a release, the ones pushed
//! since the last release are sorted into a run, the prefix of every run below the CTI is
//! taken, sorted, and merged into the released prefix of the main run. Nothing is ever re-sorted
//! wholesale, and a late result costs a small sort, not a heap operation.
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

/// Sorted runs of out-of-order results kept before they are merged into one.
const MAX_RUNS: usize = 64;

use crate::batch::{push_point_ends, Batch};
use crate::time::Time;

/// What [`ReleaseBuffer::release_unsorted`] hands out.
#[derive(Debug)]
pub enum Released<'a, P> {
    /// Points (each ends one tick after its start): start times and payloads.
    Points(&'a [Time], &'a [P]),
    /// One result: sync time, other time (see [`crate::event`]) and payload.
    One(Time, Time, &'a P),
}

/// A result pushed out of sync order.
#[derive(Clone, Debug)]
struct SideEntry<P> {
    sync: Time,
    /// Push order among the side results (the tie-break between equal sync times).
    seq: u64,
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
    /// Out-of-order results pushed since the last release, unsorted.
    side_new: Vec<SideEntry<P>>,
    /// The least sync time in `side_new` (`+inf` when it is empty).
    side_new_min: Time,
    /// Earlier out-of-order results: sorted runs (one per release that had new ones), each
    /// sorted by `(sync, seq)` descending; a release pops its results from the back of each.
    runs: VecDeque<Vec<SideEntry<P>>>,
    /// Out-of-order results held, in `side_new` and `runs`.
    side_len: usize,
    side_seq: u64,
    /// Scratch: the out-of-order results a release emits.
    ready: Vec<SideEntry<P>>,
    /// Emptied runs, reused.
    pool: Vec<Vec<SideEntry<P>>>,
    /// Scratch: where the ready results go in the main run.
    cuts: Vec<usize>,
    last_cti: Time,
}

impl<P> Default for ReleaseBuffer<P> {
    fn default() -> Self {
        ReleaseBuffer::new()
    }
}

/// Appends items `lo..hi` of `from` to `to` (without removing them).
#[inline]
fn copy_range<T: Clone>(from: &VecDeque<T>, lo: usize, hi: usize, to: &mut Vec<T>) {
    let (a, b) = from.as_slices();
    let n = a.len();
    if hi <= n {
        to.extend_from_slice(&a[lo..hi]);
    } else if lo >= n {
        to.extend_from_slice(&b[lo - n..hi - n]);
    } else {
        to.extend_from_slice(&a[lo..]);
        to.extend_from_slice(&b[..hi - n]);
    }
}

/// Moves the empty runs to `pool` (at most `keep` of them stay there), keeping the others in
/// order: sorted runs of late items, emptied from the back by releases, reused.
pub(crate) fn recycle_empty_runs<T>(
    runs: &mut VecDeque<Vec<T>>,
    pool: &mut Vec<Vec<T>>,
    keep: usize,
) {
    runs.retain_mut(|r| {
        if r.is_empty() {
            pool.push(std::mem::take(r));
            false
        } else {
            true
        }
    });
    pool.truncate(keep);
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
            side_new: Vec::new(),
            side_new_min: Time::INF,
            runs: VecDeque::new(),
            side_len: 0,
            side_seq: 0,
            ready: Vec::new(),
            pool: Vec::new(),
            cuts: Vec::new(),
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

    /// Holds a point (`other = sync + 1`): [`ReleaseBuffer::push`] for the common case.
    #[inline]
    pub fn push_point(&mut self, sync: Time, payload: P) {
        if self.last_sync <= sync {
            self.last_sync = sync;
            if !self.points_only {
                self.other.push_back(sync.next_tick());
            }
            self.sync.push_back(sync);
            self.payload.push_back(payload);
        } else {
            self.push_side(sync, sync.next_tick(), payload);
        }
    }

    /// Holds points given as columns: [`ReleaseBuffer::push_point`] for each. A run in sync
    /// order that starts at or after [`ReleaseBuffer::last_in_order`] (what the ingress hands
    /// over) is appended with one copy per column; anything else is pushed point by point.
    ///
    /// # Panics
    /// If the columns differ in length (a caller's bug, as with `copy_from_slice`).
    pub fn push_point_run(&mut self, sync: &[Time], payloads: &[P])
    where
        P: Clone,
    {
        assert_eq!(sync.len(), payloads.len(), "one payload per time");
        if sync.is_empty() {
            return;
        }
        let in_order = sync.first().is_some_and(|&f| f >= self.last_sync)
            && sync.windows(2).all(|w| w[0] <= w[1]);
        if !in_order {
            for (&t, p) in sync.iter().zip(payloads) {
                self.push_point(t, p.clone());
            }
            return;
        }
        self.push_sorted_points(sync, payloads);
    }

    /// Holds points given as columns that are sorted by sync time and start at or after
    /// [`ReleaseBuffer::last_in_order`]: one copy per column (what the ingress hands over after
    /// checking exactly that). It is a logic error to pass a run that is not: results would
    /// then be released out of order (debug builds assert it).
    ///
    /// # Panics
    /// If the columns differ in length (a caller's bug, as with `copy_from_slice`).
    #[inline]
    pub fn push_sorted_points(&mut self, sync: &[Time], payloads: &[P])
    where
        P: Clone,
    {
        assert_eq!(sync.len(), payloads.len(), "one payload per time");
        let Some(&last) = sync.last() else {
            return;
        };
        debug_assert!(
            sync.first().is_some_and(|&f| f >= self.last_sync)
                && sync.windows(2).all(|w| w[0] <= w[1]),
            "push_sorted_points: a run out of order"
        );
        if !self.points_only {
            self.other.extend(sync.iter().map(|s| s.next_tick()));
        }
        // `extend` from a slice of `Copy` items is one copy.
        self.sync.extend(sync.iter());
        self.payload.extend(payloads.iter().cloned());
        self.last_sync = last;
    }

    /// [`ReleaseBuffer::push_sorted_points`] for points given as records, with the functions
    /// that read a record's start time and payload: the same contract (sorted by sync time,
    /// starting at or after [`ReleaseBuffer::last_in_order`]; a logic error otherwise), one
    /// column at a time.
    #[inline]
    pub fn push_sorted_points_with<R>(
        &mut self,
        records: &[R],
        time: impl Fn(&R) -> Time,
        payload: impl Fn(&R) -> P,
    ) {
        if records.is_empty() {
            return;
        }
        let before = self.sync.len();
        self.sync.extend(records.iter().map(time));
        debug_assert!(
            self.sync
                .range(before..)
                .zip(self.sync.range(before..).skip(1))
                .all(|(a, b)| a <= b)
                && self.sync.get(before).is_some_and(|&f| f >= self.last_sync),
            "push_sorted_points_with: a run out of order"
        );
        if !self.points_only {
            let (sync, other) = (&self.sync, &mut self.other);
            other.extend(sync.range(before..).map(|s| s.next_tick()));
        }
        self.payload.extend(records.iter().map(payload));
        self.last_sync = self.sync.back().copied().unwrap_or(Time::NEG_INF);
    }

    /// The last sync time pushed in order (`-inf` when the main run is empty): a point at or
    /// after it extends the main run.
    #[inline]
    pub fn last_in_order(&self) -> Time {
        self.last_sync
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
        self.side_len += 1;
        self.side_new_min = self.side_new_min.min(sync);
        self.side_new.push(SideEntry {
            sync,
            seq: self.side_seq,
            main_pos: self.main_base + self.sync.len() as u64,
            other,
            payload,
        });
    }

    /// Every out-of-order result held, in no particular order.
    fn side_entries_mut(&mut self) -> impl Iterator<Item = &mut SideEntry<P>> {
        self.side_new
            .iter_mut()
            .chain(self.runs.iter_mut().flat_map(|r| r.iter_mut()))
    }

    /// Moves every out-of-order result with sync `< t` to `self.ready`, sorted by `(sync, seq)`.
    fn take_ready(&mut self, t: Time, sorted: bool) {
        self.ready.clear();
        if self.side_len == 0 {
            return;
        }
        // Runs are sorted descending, so that a release pops their earliest results from the
        // back (no shifting of what stays).
        let descending = |a: &SideEntry<P>, b: &SideEntry<P>| (b.sync, b.seq).cmp(&(a.sync, a.seq));
        if !self.side_new.is_empty() && self.side_new_min < t {
            let mut run = self.pool.pop().unwrap_or_default();
            std::mem::swap(&mut run, &mut self.side_new);
            self.side_new_min = Time::INF;
            run.sort_unstable_by(descending);
            self.runs.push_back(run);
            if self.runs.len() > MAX_RUNS {
                // Many small runs (frequent CTIs, few late results each): merge them into one,
                // so that a release never looks at more than MAX_RUNS runs.
                let mut all = self.pool.pop().unwrap_or_default();
                for mut r in self.runs.drain(..) {
                    all.append(&mut r);
                    self.pool.push(r);
                }
                all.sort_unstable_by(descending);
                self.runs.push_back(all);
            }
        }
        let mut emptied = false;
        let mut from_runs = 0;
        for run in self.runs.iter_mut() {
            let before = self.ready.len();
            while run.last().is_some_and(|e| e.sync < t) {
                if let Some(e) = run.pop() {
                    self.ready.push(e);
                }
            }
            if self.ready.len() > before {
                emptied |= run.is_empty();
                from_runs += 1;
            }
        }
        if emptied {
            recycle_empty_runs(&mut self.runs, &mut self.pool, MAX_RUNS);
        }
        self.side_len -= self.ready.len();
        if sorted && from_runs > 1 {
            self.ready.sort_unstable_by_key(|e| (e.sync, e.seq));
        }
    }

    /// How many results are held.
    #[inline]
    pub fn len(&self) -> usize {
        self.sync.len() + self.side_len
    }

    /// Whether nothing is held.
    pub fn is_empty(&self) -> bool {
        self.sync.is_empty() && self.side_len == 0
    }

    /// The last CTI released (`-inf` before the first).
    pub fn last_cti(&self) -> Time {
        self.last_cti
    }

    /// The least sync time held (`+inf` when nothing is).
    pub fn earliest(&self) -> Time {
        let runs = self.runs.iter().filter_map(|r| r.last().map(|e| e.sync));
        runs.fold(self.side_new_min, Time::min)
            .min(self.sync.front().copied().unwrap_or(Time::INF))
    }

    /// Hands every held result with sync `< t` to `f` and forgets it, in no particular order
    /// and without a CTI: for a consumer that does not need them sorted (the join probing
    /// its waiting points). Runs of points come out as slices of start times and payloads
    /// ([`Released::Points`]), the rest one by one. Returns how many it released.
    ///
    /// ```
    /// use punctual_core::ops::{ReleaseBuffer, Released};
    /// use punctual_core::Time;
    /// let t = Time::from_ticks;
    /// let mut buf = ReleaseBuffer::new();
    /// for (at, p) in [(1, 'a'), (2, 'b'), (9, 'c'), (0, 'd')] {
    ///     buf.push_point(t(at), p);
    /// }
    /// let mut got = Vec::new();
    /// buf.release_unsorted(t(5), |r| match r {
    ///     Released::Points(_, payloads) => got.extend_from_slice(payloads),
    ///     Released::One(_, _, p) => got.push(*p),
    /// });
    /// got.sort();
    /// assert_eq!(got, ['a', 'b', 'd']);
    /// assert_eq!(buf.earliest(), t(9));
    /// ```
    pub fn release_unsorted(&mut self, t: Time, mut f: impl FnMut(Released<'_, P>)) -> usize {
        let nm = self.sync.partition_point(|&s| s < t);
        if nm > 0 {
            if self.points_only {
                let (sa, sb) = self.sync.as_slices();
                let (pa, pb) = self.payload.as_slices();
                // The two columns' ring buffers may wrap at different places: hand out the
                // pieces where both are contiguous.
                let mut at = 0;
                while at < nm {
                    let (ss, so) = if at < sa.len() {
                        (sa, 0)
                    } else {
                        (sb, sa.len())
                    };
                    let (ps, po) = if at < pa.len() {
                        (pa, 0)
                    } else {
                        (pb, pa.len())
                    };
                    let end = nm.min(so + ss.len()).min(po + ps.len());
                    f(Released::Points(
                        &ss[at - so..end - so],
                        &ps[at - po..end - po],
                    ));
                    at = end;
                }
            } else {
                for i in 0..nm {
                    f(Released::One(self.sync[i], self.other[i], &self.payload[i]));
                }
                self.other.drain(..nm);
            }
            self.sync.drain(..nm);
            self.payload.drain(..nm);
            self.main_base += nm as u64;
            if self.sync.is_empty() {
                self.reset_main();
            }
        }
        self.take_ready(t, false);
        let ns = self.ready.len();
        for e in self.ready.drain(..) {
            f(Released::One(e.sync, e.other, &e.payload));
        }
        nm + ns
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
            for e in self.side_entries_mut() {
                if e.main_pos > pos {
                    e.main_pos -= 1;
                }
            }
            if self.sync.is_empty() {
                self.reset_main();
            }
            return Some((s, o, p));
        }
        let pos = self
            .side_new
            .iter()
            .position(|e| pred(e.sync, e.other, &e.payload));
        let e = match pos {
            Some(pos) => {
                let e = self.side_new.remove(pos);
                self.side_new_min = self
                    .side_new
                    .iter()
                    .map(|e| e.sync)
                    .min()
                    .unwrap_or(Time::INF);
                e
            }
            None => {
                let (r, pos) = self.runs.iter().enumerate().find_map(|(r, run)| {
                    run.iter()
                        .position(|e| pred(e.sync, e.other, &e.payload))
                        .map(|pos| (r, pos))
                })?;
                self.runs[r].remove(pos)
            }
        };
        self.side_len -= 1;
        Some((e.sync, e.other, e.payload))
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
        self.side_len = 0;
        self.side_new_min = Time::INF;
        let side = self
            .side_new
            .drain(..)
            .chain(self.runs.drain(..).flatten())
            .map(|e| (e.sync, e.other, e.payload));
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
        let (sync, other, payload) = out.columns_mut();
        sync.reserve(nm);
        other.reserve(nm);
        payload.reserve(nm);
        self.take_ready(t, true);
        let mut ready = std::mem::take(&mut self.ready);
        let ns = ready.len();
        // Where each out-of-order result goes in the released prefix of the main run: after
        // the main results with lower sync, or equal sync and pushed earlier.
        let mut cuts = std::mem::take(&mut self.cuts);
        cuts.clear();
        {
            let (a, b) = self.sync.as_slices();
            let at = |i: usize| if i < a.len() { a[i] } else { b[i - a.len()] };
            let mut lo = 0;
            for h in &ready {
                let pushed_before = h.main_pos.saturating_sub(self.main_base) as usize;
                let before = |i: usize| {
                    let s = at(i);
                    s < h.sync || (s == h.sync && i < pushed_before)
                };
                // Galloping from the last cut (cuts are close together and the run between
                // them is copied next anyway), then a binary search in the last step.
                let mut step = 1;
                let mut l = lo;
                while l + step <= nm && before(l + step - 1) {
                    l += step;
                    step *= 2;
                }
                let mut r = (l + step).min(nm);
                while l < r {
                    let mid = l + (r - l) / 2;
                    let s = at(mid);
                    if s < h.sync || (s == h.sync && mid < pushed_before) {
                        l = mid + 1;
                    } else {
                        r = mid;
                    }
                }
                cuts.push(l);
                lo = l;
            }
        }
        // Copy the main run's released prefix in slices between the cuts, then drop it from
        // the run in one go.
        let mut moved = 0;
        for (h, &cut) in ready.drain(..).zip(&cuts) {
            self.copy_main(moved, cut, sync, other, payload);
            moved = cut;
            sync.push(h.sync);
            other.push(h.other);
            payload.push(h.payload);
        }
        self.copy_main(moved, nm, sync, other, payload);
        self.cuts = cuts;
        self.ready = ready;
        self.sync.drain(..nm);
        if !self.points_only {
            self.other.drain(..nm);
        }
        if !std::mem::needs_drop::<P>() {
            self.payload.drain(..nm);
        }
        self.main_base += nm as u64;
        if self.sync.is_empty() {
            self.reset_main();
        }
        nm + ns
    }

    /// Appends main-run results `from..to` to the columns: copies of the times, and of the
    /// payloads when they have no drop glue (a clone is then a copy; the originals are
    /// dropped from the run afterwards). Payloads with drop glue are moved out of the front
    /// instead (earlier calls have taken `from` of them already).
    #[inline]
    fn copy_main(
        &mut self,
        from: usize,
        to: usize,
        sync: &mut Vec<Time>,
        other: &mut Vec<Time>,
        payload: &mut Vec<P>,
    ) {
        if from >= to {
            return;
        }
        let start = sync.len();
        copy_range(&self.sync, from, to, sync);
        if self.points_only {
            push_point_ends(&sync[start..], other);
        } else {
            copy_range(&self.other, from, to, other);
        }
        if std::mem::needs_drop::<P>() {
            payload.extend(self.payload.drain(..to - from));
        } else {
            copy_range(&self.payload, from, to, payload);
        }
    }
}

#[cfg(test)]
mod tests;
