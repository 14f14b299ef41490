//! [`ReleaseBuffer`]: the one release idiom. Results wait here keyed by sync time; when the
//! output CTI advances to `t`, every result with sync `< t` is emitted in sync order (ties in
//! the order they were pushed), then `CTI(t)`. Results with sync `>= t` wait for a later CTI.
//!
//! Layout: results pushed in sync order (the common case) go to a *main run* held in chunks of
//! columns (sync, other, payload; see [`run`]), so a release moves a prefix of it into the
//! output batch in slices. Results pushed out of order go to a small *side list* (see
//! [`side`]): at a release, its results below the CTI are taken, sorted, and merged into the
//! released prefix of the main run at the places found by galloping. Nothing is ever re-sorted
//! wholesale, and a late result costs a small sort.
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

mod run;
mod side;

use crate::batch::Batch;
use crate::time::Time;

use run::{gallop, MainRun};
use side::{Side, SideEntry};

/// What [`ReleaseBuffer::release_unsorted`] hands out.
#[derive(Debug)]
pub enum Released<'a, P> {
    /// Points (each ends one tick after its start): start times and payloads.
    Points(&'a [Time], &'a [P]),
    /// One result: sync time, other time (see [`crate::event`]) and payload.
    One(Time, Time, &'a P),
}

/// Results waiting for a CTI; see the module doc.
///
/// Pushing in order costs two or three column appends (the `other` column of a run of points
/// is implicit: `sync + 1`); a release costs the results it releases, copied in slices, plus a
/// small sort of the out-of-order ones among them.
/// Saved in a snapshot as it is (serde), so that a restored buffer releases the same results
/// in the same order.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
#[serde(bound(
    serialize = "P: serde::Serialize",
    deserialize = "P: serde::Deserialize<'de>"
))]
pub struct ReleaseBuffer<P> {
    run: MainRun<P>,
    side: Side<P>,
    /// Scratch: the out-of-order results a release emits.
    #[serde(skip)]
    ready: Vec<SideEntry<P>>,
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
            run: MainRun::new(),
            side: Side::new(),
            ready: Vec::new(),
            last_cti: Time::NEG_INF,
        }
    }

    /// Holds a result in its `(sync, other)` encoding.
    #[inline]
    pub fn push(&mut self, sync: Time, other: Time, payload: P) {
        if self.run.last() <= sync {
            self.run.push(sync, other, payload);
        } else {
            self.push_side(sync, other, payload);
        }
    }

    /// Holds a point (`other = sync + 1`): [`ReleaseBuffer::push`] for the common case.
    #[inline]
    pub fn push_point(&mut self, sync: Time, payload: P) {
        self.push(sync, sync.next_tick(), payload);
    }

    /// Holds points given as columns (in arrival order): [`ReleaseBuffer::push_point`] for
    /// each. Every maximal run in sync order at or after [`ReleaseBuffer::last_in_order`]
    /// extends the main run with one copy per column; a point that breaks the order goes to
    /// the side list, and the run after it continues the main run.
    ///
    /// ```
    /// use punctual_core::ops::ReleaseBuffer;
    /// use punctual_core::{Batch, Time};
    /// let t = Time::from_ticks;
    /// let mut buf = ReleaseBuffer::new();
    /// buf.push_point_run(&[t(1), t(4), t(2), t(5)], &['a', 'b', 'c', 'd']);
    /// let mut out = Batch::new();
    /// buf.release(t(5), &mut out);
    /// assert_eq!(out.payloads(), &['a', 'c', 'b']);
    /// ```
    ///
    /// # Panics
    /// If the columns differ in length (a caller's bug, as with `copy_from_slice`).
    pub fn push_point_run(&mut self, sync: &[Time], payloads: &[P])
    where
        P: Clone,
    {
        assert_eq!(sync.len(), payloads.len(), "one payload per time");
        let mut i = 0;
        while i < sync.len() {
            let n = in_order(&sync[i..], self.run.last());
            if n > 0 {
                self.run.push_points(&sync[i..i + n], &payloads[i..i + n]);
                i += n;
            }
            if let Some(&t) = sync.get(i) {
                self.push_side(t, t.next_tick(), payloads[i].clone());
                i += 1;
            }
        }
    }

    /// [`ReleaseBuffer::push_point_run`] with the payloads moved out of `payloads` (left
    /// empty, with its room): for payloads that own something (rows, strings), no copy made
    /// and dropped.
    ///
    /// ```
    /// use punctual_core::ops::ReleaseBuffer;
    /// use punctual_core::{Batch, Time};
    /// let t = Time::from_ticks;
    /// let mut buf = ReleaseBuffer::new();
    /// let mut names: Vec<String> = ["a", "b", "c"].map(String::from).into();
    /// buf.append_point_run(&[t(1), t(4), t(2)], &mut names);
    /// assert!(names.is_empty());
    /// let mut out = Batch::new();
    /// buf.release(t(5), &mut out);
    /// assert_eq!(out.payloads(), &["a", "c", "b"]);
    /// ```
    ///
    /// # Panics
    /// If the columns differ in length (a caller's bug, as with `copy_from_slice`).
    pub fn append_point_run(&mut self, sync: &[Time], payloads: &mut Vec<P>) {
        assert_eq!(sync.len(), payloads.len(), "one payload per time");
        self.append_points_from(sync, &mut payloads.drain(..));
    }

    /// [`ReleaseBuffer::append_point_run`] with the payloads taken from `moved`, which gives
    /// (at least) one per time.
    pub(crate) fn append_points_from(
        &mut self,
        sync: &[Time],
        moved: &mut impl Iterator<Item = P>,
    ) {
        let mut i = 0;
        while i < sync.len() {
            let n = in_order(&sync[i..], self.run.last());
            if n > 0 {
                self.run.append_points(&sync[i..i + n], moved);
                i += n;
            }
            let Some(&t) = sync.get(i) else { break };
            let Some(p) = moved.next() else { break };
            self.push_side(t, t.next_tick(), p);
            i += 1;
        }
    }

    /// Holds results given as columns (in arrival order): [`ReleaseBuffer::push`] for each,
    /// in bulk when they are points ([`ReleaseBuffer::push_point_run`]: runs in sync order
    /// extend the main run with one copy per column), one by one otherwise.
    ///
    /// ```
    /// use punctual_core::ops::ReleaseBuffer;
    /// use punctual_core::{Batch, Time};
    /// let t = Time::from_ticks;
    /// let mut buf = ReleaseBuffer::new();
    /// buf.push_run(&[t(1), t(3)], &[t(2), t(4)], &['a', 'b']); // points
    /// buf.push_run(&[t(2)], &[t(9)], &['c']); // an interval
    /// let mut out = Batch::new();
    /// buf.release(t(5), &mut out);
    /// assert_eq!(out.payloads(), &['a', 'c', 'b']);
    /// assert_eq!(out.other(), &[t(2), t(9), t(4)]);
    /// ```
    ///
    /// # Panics
    /// If the columns differ in length (a caller's bug, as with `copy_from_slice`).
    pub fn push_run(&mut self, sync: &[Time], other: &[Time], payloads: &[P])
    where
        P: Clone,
    {
        assert!(
            sync.len() == other.len() && sync.len() == payloads.len(),
            "one other time and one payload per sync time"
        );
        let points = sync
            .iter()
            .zip(other)
            .fold(true, |all, (s, o)| all & (*o == s.next_tick()));
        if points {
            self.push_point_run(sync, payloads);
        } else {
            for ((&s, &o), p) in sync.iter().zip(other).zip(payloads) {
                self.push(s, o, p.clone());
            }
        }
    }

    /// [`ReleaseBuffer::push_point_run`] for points given as records, with the functions that
    /// read a record's start time and payload (each may be called more than once for a
    /// record), from the start of `records` while their start times lie in `admit` (an
    /// ingress stops at a point that breaks a CTI); returns how many it held and the highest
    /// of their times (`-inf` if none). Runs in order are read straight into the main run,
    /// one column at a time.
    ///
    /// ```
    /// use punctual_core::ops::ReleaseBuffer;
    /// use punctual_core::Time;
    /// let t = Time::from_ticks;
    /// let mut buf = ReleaseBuffer::new();
    /// let records = [(1, 'a'), (4, 'b'), (2, 'c'), (0, 'd'), (5, 'e')];
    /// let held = buf.push_point_records(&records, |r| t(r.0), |r| r.1, t(1)..Time::INF);
    /// assert_eq!(held, (3, t(4))); // stops at 'd'
    /// assert_eq!(buf.len(), 3);
    /// ```
    pub fn push_point_records<R>(
        &mut self,
        records: &[R],
        time: impl Fn(&R) -> Time,
        payload: impl Fn(&R) -> P,
        admit: std::ops::Range<Time>,
    ) -> (usize, Time) {
        let (mut i, mut top) = (0, Time::NEG_INF);
        loop {
            let (start, mut last) = (i, self.run.last().max(admit.start));
            while let Some(r) = records.get(i) {
                let t = time(r);
                if t < last || t >= admit.end {
                    break;
                }
                last = t;
                i += 1;
            }
            if i > start {
                // The last of a run in order is its highest.
                top = top.max(last);
                self.run
                    .push_points_with(&records[start..i], &time, &payload);
            }
            match records.get(i) {
                Some(r) if admit.contains(&time(r)) => {
                    let t = time(r);
                    top = top.max(t);
                    self.push_side(t, t.next_tick(), payload(r));
                    i += 1;
                }
                _ => return (i, top),
            }
        }
    }

    /// The last sync time pushed in order (`-inf` when the main run is empty): a point at or
    /// after it extends the main run.
    #[inline]
    pub fn last_in_order(&self) -> Time {
        self.run.last()
    }

    #[cold]
    #[inline(never)]
    fn push_side(&mut self, sync: Time, other: Time, payload: P) {
        self.side.push(sync, other, payload, self.run.pushed());
    }

    /// How many results are held.
    #[inline]
    pub fn len(&self) -> usize {
        self.run.len() + self.side.len()
    }

    /// Whether nothing is held.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The last CTI released (`-inf` before the first).
    pub fn last_cti(&self) -> Time {
        self.last_cti
    }

    /// The least sync time held (`+inf` when nothing is).
    pub fn earliest(&self) -> Time {
        self.run.first().min(self.side.earliest())
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
        let nm = self.run.count_below(t);
        let mut left = nm;
        for chunk in &self.run.chunks {
            if left == 0 {
                break;
            }
            let (lo, hi) = (chunk.front, (chunk.front + left).min(chunk.sync.len()));
            if chunk.points_only() {
                f(Released::Points(
                    &chunk.sync[lo..hi],
                    &chunk.payload[lo..hi],
                ));
            } else {
                for i in lo..hi {
                    f(Released::One(
                        chunk.sync[i],
                        chunk.other(i),
                        &chunk.payload[i],
                    ));
                }
            }
            left -= hi - lo;
        }
        self.run.drop_front(nm);
        let mut ready = std::mem::take(&mut self.ready);
        self.side.take_ready(t, false, &mut ready);
        let ns = ready.len();
        for e in ready.drain(..) {
            f(Released::One(e.sync, e.other, &e.payload));
        }
        self.ready = ready;
        nm + ns
    }

    /// Removes the first held result matching `pred` (used to take back an item that turned out
    /// not to exist, such as a start edge whose end edge leaves nothing of it).
    pub fn remove_first(
        &mut self,
        mut pred: impl FnMut(Time, Time, &P) -> bool,
    ) -> Option<(Time, Time, P)> {
        if let Some((pos, removed)) = self.run.remove_first(&mut pred) {
            // Later main results moved down one position.
            for e in self.side.entries_mut() {
                if e.main_pos > pos {
                    e.main_pos -= 1;
                }
            }
            return Some(removed);
        }
        let e = self.side.remove_first(pred)?;
        Some((e.sync, e.other, e.payload))
    }

    /// Visits every held result as `(sync, other, payload)`, in no particular order, without
    /// taking it (what a query reports as held when it ends).
    pub fn for_each(&self, mut f: impl FnMut(Time, Time, &P)) {
        for chunk in &self.run.chunks {
            for i in chunk.front..chunk.sync.len() {
                f(chunk.sync[i], chunk.other(i), &chunk.payload[i]);
            }
        }
        for e in self.side.entries() {
            f(e.sync, e.other, &e.payload);
        }
    }

    /// Takes every held result out (in no particular order).
    pub fn drain_all(&mut self) -> impl Iterator<Item = (Time, Time, P)> + '_ {
        let main = self.run.drain();
        let side = self.side.drain().map(|e| (e.sync, e.other, e.payload));
        main.into_iter().chain(side)
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
        let nm = self.run.count_below(t);
        let mut ready = std::mem::take(&mut self.ready);
        self.side.take_ready(t, true, &mut ready);
        let ns = ready.len();
        if nm + ns == 0 {
            self.ready = ready;
            return 0;
        }
        let (sync, other, payload) = out.columns_mut();
        sync.reserve(nm + ns);
        other.reserve(nm + ns);
        payload.reserve(nm + ns);
        if std::mem::needs_drop::<P>() {
            // Payloads that own something are moved, never cloned.
            let mut side = ready.drain(..).peekable();
            self.run
                .move_front_into(nm, &mut side, sync, other, payload);
            for h in side {
                sync.push(h.sync);
                other.push(h.other);
                payload.push(h.payload);
            }
        } else {
            // Copies (a clone of a payload without drop glue is one): each chunk's released
            // slice is copied in pieces between the places where the out-of-order results go.
            let mut side = ready.drain(..).peekable();
            let mut left = nm;
            for chunk in &self.run.chunks {
                if left == 0 {
                    break;
                }
                let (lo, hi) = (chunk.front, (chunk.front + left).min(chunk.sync.len()));
                let slice = &chunk.sync[lo..hi];
                let start = chunk.start + lo as u64;
                let mut done = 0;
                while let Some(h) = side.peek() {
                    let cut = done + place(&slice[done..], start + done as u64, h);
                    if cut == slice.len() {
                        break;
                    }
                    sync.extend_from_slice(&slice[done..cut]);
                    chunk.copy_other(lo + done, lo + cut, other);
                    payload.extend_from_slice(&chunk.payload[lo + done..lo + cut]);
                    if let Some(h) = side.next() {
                        sync.push(h.sync);
                        other.push(h.other);
                        payload.push(h.payload);
                    }
                    done = cut;
                }
                sync.extend_from_slice(&slice[done..]);
                chunk.copy_other(lo + done, hi, other);
                payload.extend_from_slice(&chunk.payload[lo + done..hi]);
                left -= hi - lo;
            }
            for h in side {
                sync.push(h.sync);
                other.push(h.other);
                payload.push(h.payload);
            }
            self.run.drop_front(nm);
        }
        self.ready = ready;
        nm + ns
    }
}

/// How many times from the start of `sync` are in order and at or after `last`.
#[inline]
fn in_order(sync: &[Time], mut last: Time) -> usize {
    sync.iter()
        .take_while(|&&t| {
            let ok = t >= last;
            last = t;
            ok
        })
        .count()
}

/// How many of `slice` (main results from position `start`) go before out-of-order result
/// `h`: those with lower sync, and those with equal sync pushed before it.
#[inline]
fn place<P>(slice: &[Time], start: u64, h: &SideEntry<P>) -> usize {
    let below = gallop(slice, |x| x < h.sync);
    let equal = gallop(&slice[below..], |x| x == h.sync);
    let pushed_before = h.main_pos.saturating_sub(start + below as u64) as usize;
    below + equal.min(pushed_before)
}

#[cfg(test)]
mod tests;
