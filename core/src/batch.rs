//! [`Batch`]: the columnar unit of data past ingress.
//!
//! A batch holds events in three columns (`sync`, `other`, `payload`; see [`crate::event`] for
//! the encoding) plus CTI marks between them. A mark says "after the first `n` events of this
//! batch, `CTI(t)`". Invariants, checked in debug builds:
//! - events are sorted by sync time over the whole batch (events after `CTI(t)` have sync `>= t`
//!   and events before it sync `< t`, and each segment between marks is sorted);
//! - CTI marks strictly increase.
//!
//! Batches are reused: [`Batch::clear`] keeps the columns' capacity, so a steady-state pipeline
//! does not allocate. Several CTIs may share one batch, so that a stream with a CTI after every
//! event still moves in batches of thousands of rows.
//!
//! ```
//! use punctual_core::{Batch, Time, StreamItem, Event};
//! let t = Time::from_ticks;
//! let mut b = Batch::new();
//! b.push_event(t(1), t(2), "a");
//! b.push_cti(t(2));
//! b.push_event(t(4), t(9), "b");
//! let items: Vec<_> = b.items().collect();
//! assert_eq!(items, vec![
//!     StreamItem::Insert(Event::point(t(1), &"a")),
//!     StreamItem::Cti(t(2)),
//!     StreamItem::Insert(Event::interval(t(4), t(9), &"b")),
//! ]);
//! ```

use crate::event::{Event, EventKind, StreamItem};
use crate::time::Time;

/// A CTI between the events of a batch.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct CtiMark {
    /// How many of the batch's events come before this CTI.
    pub after: usize,
    /// The CTI's time.
    pub time: Time,
}

/// Sorted events in columns, with CTI marks between them. See the module doc.
#[derive(Clone, Debug, PartialEq)]
pub struct Batch<P> {
    sync: Vec<Time>,
    other: Vec<Time>,
    payload: Vec<P>,
    ctis: Vec<CtiMark>,
}

impl<P> Default for Batch<P> {
    fn default() -> Self {
        Batch::new()
    }
}

impl<P> Batch<P> {
    /// An empty batch.
    pub fn new() -> Batch<P> {
        Batch {
            sync: Vec::new(),
            other: Vec::new(),
            payload: Vec::new(),
            ctis: Vec::new(),
        }
    }

    /// An empty batch with room for `events` events.
    pub fn with_capacity(events: usize) -> Batch<P> {
        Batch {
            sync: Vec::with_capacity(events),
            other: Vec::with_capacity(events),
            payload: Vec::with_capacity(events),
            ctis: Vec::new(),
        }
    }

    /// Appends an event in its `(sync, other)` encoding.
    #[inline]
    pub fn push_event(&mut self, sync: Time, other: Time, payload: P) {
        debug_assert!(
            self.sync.last().is_none_or(|&last| last <= sync),
            "batch events must be sorted by sync time"
        );
        // Sorted, it is also at or after the last CTI: what `push_on_arrival` checks.
        self.push_on_arrival(sync, other, payload);
    }

    /// Appends an event given by kind.
    #[inline]
    pub fn push(&mut self, kind: EventKind, payload: P) {
        let (sync, other) = kind.encode();
        self.push_event(sync, other, payload);
    }

    /// Appends a CTI after the events pushed so far.
    #[inline]
    pub fn push_cti(&mut self, time: Time) {
        debug_assert!(
            self.ctis.last().is_none_or(|m| m.time < time),
            "CTIs in a batch must strictly increase"
        );
        debug_assert!(
            self.sync.last().is_none_or(|&s| s < time),
            "a CTI must come after the events it seals"
        );
        self.ctis.push(CtiMark {
            after: self.sync.len(),
            time,
        });
    }

    /// Appends an event *released on arrival*, for a batch that feeds an unordered source
    /// ([`crate::ops::QueryGraph::unordered_source`]): it may sort before events already in the
    /// batch, and at or after the CTI that follows it; it must not precede the last CTI mark
    /// (checked in debug builds). Ordered batches use [`Batch::push_event`].
    #[inline]
    pub fn push_on_arrival(&mut self, sync: Time, other: Time, payload: P) {
        debug_assert!(
            self.ctis.last().is_none_or(|m| m.time <= sync),
            "an event after CTI({:?}) must not have sync time {sync:?}",
            self.ctis.last().map(|m| m.time)
        );
        self.sync.push(sync);
        self.other.push(other);
        self.payload.push(payload);
    }

    /// Appends points released on arrival, given as columns (start times, in arrival order, and
    /// payloads): [`Batch::push_on_arrival`] for each, with one copy per column.
    ///
    /// # Panics
    /// If the columns differ in length (a caller's bug, as with `copy_from_slice`).
    #[inline]
    pub fn extend_points_on_arrival(&mut self, times: &[Time], payloads: &[P])
    where
        P: Clone,
    {
        assert_eq!(times.len(), payloads.len(), "one payload per time");
        debug_assert!(
            self.ctis
                .last()
                .is_none_or(|m| times.iter().all(|&s| s >= m.time)),
            "events after a CTI must not precede it"
        );
        self.sync.extend_from_slice(times);
        self.other.extend(times.iter().map(|t| t.next_tick()));
        self.payload.extend_from_slice(payloads);
    }

    /// Appends points released on arrival, given as records with the functions that read a
    /// record's start time and payload: [`Batch::push_on_arrival`] for each, one column at a
    /// time (an adapter's decoded records go in without being copied into columns first).
    ///
    /// ```
    /// use punctual_core::{Batch, Time};
    /// let mut batch = Batch::new();
    /// let records = [(30_i64, "b"), (10, "a")]; // (milliseconds, payload)
    /// batch.extend_points_on_arrival_with(&records, |r| Time::from_ticks(r.0 * 10_000), |r| r.1);
    /// assert_eq!(batch.payloads(), &["b", "a"]);
    /// assert_eq!(batch.other()[1], Time::from_ticks(100_001));
    /// ```
    #[inline]
    pub fn extend_points_on_arrival_with<R>(
        &mut self,
        records: &[R],
        time: impl Fn(&R) -> Time,
        payload: impl Fn(&R) -> P,
    ) {
        let before = self.sync.len();
        self.sync.extend(records.iter().map(time));
        let new = &self.sync[before..];
        debug_assert!(
            self.ctis
                .last()
                .is_none_or(|m| new.iter().all(|&s| s >= m.time)),
            "events after a CTI must not precede it"
        );
        self.other.extend(new.iter().map(|t| t.next_tick()));
        self.payload.extend(records.iter().map(payload));
    }

    /// Appends a CTI after events released on arrival: as [`Batch::push_cti`], except that the
    /// events before it may be at or after it (they were released before their CTI).
    #[inline]
    pub fn push_cti_on_arrival(&mut self, time: Time) {
        debug_assert!(
            self.ctis.last().is_none_or(|m| m.time < time),
            "CTIs in a batch must strictly increase"
        );
        self.ctis.push(CtiMark {
            after: self.sync.len(),
            time,
        });
    }

    /// Number of events (CTIs not counted).
    #[inline]
    pub fn len(&self) -> usize {
        self.sync.len()
    }

    /// Whether the batch holds neither events nor CTIs.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.sync.is_empty() && self.ctis.is_empty()
    }

    /// The sync-time column.
    #[inline]
    pub fn sync(&self) -> &[Time] {
        &self.sync
    }

    /// The other-time column.
    #[inline]
    pub fn other(&self) -> &[Time] {
        &self.other
    }

    /// The payload column.
    #[inline]
    pub fn payloads(&self) -> &[P] {
        &self.payload
    }

    /// The CTI marks, in order.
    #[inline]
    pub fn ctis(&self) -> &[CtiMark] {
        &self.ctis
    }

    /// The last CTI in the batch, if any.
    pub fn last_cti(&self) -> Option<Time> {
        self.ctis.last().map(|m| m.time)
    }

    /// The kind and times of event `i`.
    #[inline]
    pub fn kind(&self, i: usize) -> EventKind {
        EventKind::decode(self.sync[i], self.other[i])
    }

    /// Empties the batch, keeping its capacity.
    #[inline]
    pub fn clear(&mut self) {
        self.sync.clear();
        self.other.clear();
        self.payload.clear();
        self.ctis.clear();
    }

    /// Keeps only the events whose payload satisfies `keep`, in place and in order; every CTI
    /// stays, after the kept events that preceded it. A filter that owns its input uses this
    /// instead of copying the kept events out.
    ///
    /// ```
    /// use punctual_core::{Batch, Time};
    /// let t = Time::from_ticks;
    /// let mut batch = Batch::new();
    /// batch.push_event(t(1), t(2), 10);
    /// batch.push_event(t(2), t(3), 25);
    /// batch.push_cti(t(3));
    /// batch.push_event(t(4), t(5), 30);
    /// batch.retain(|v| *v >= 20);
    /// assert_eq!(batch.payloads(), &[25, 30]);
    /// assert_eq!(batch.ctis()[0].after, 1); // CTI(3) now follows the one event kept before it
    /// ```
    pub fn retain(&mut self, mut keep: impl FnMut(&P) -> bool)
    where
        P: Clone,
    {
        let n = self.sync.len();
        let (sync, other, payload) = (
            &mut self.sync[..n],
            &mut self.other[..n],
            &mut self.payload[..n],
        );
        let (mut w, mut start, mut tail) = (0, 0, n);
        for end in self
            .ctis
            .iter_mut()
            .map(|m| &mut m.after)
            .chain(std::iter::once(&mut tail))
        {
            for k in start..(*end).min(n) {
                let kept = keep(&payload[k]);
                // Without a branch on `kept` (a filter's predicate is often a coin flip): every
                // event moves to the write position, which advances only past kept ones. The
                // events between `w` and `k` are all rejected, so a swap keeps the order of the
                // kept ones and leaves the rejected ones after them, dropped by the truncation.
                let d = w.min(k);
                sync[d] = sync[k];
                other[d] = other[k];
                if std::mem::needs_drop::<P>() {
                    payload.swap(d, k);
                } else {
                    // Nothing to drop: the rejected payload may simply be overwritten.
                    payload[d] = payload[k].clone();
                }
                w += usize::from(kept);
            }
            start = *end;
            *end = w;
        }
        self.sync.truncate(w);
        self.other.truncate(w);
        self.payload.truncate(w);
    }

    /// The batch as segments: each is a range of event indices followed by the CTI that closes
    /// it (`None` for the events after the last CTI). Operators walk a batch this way.
    pub fn segments(&self) -> impl Iterator<Item = (std::ops::Range<usize>, Option<Time>)> + '_ {
        let mut start = 0;
        let marks = self.ctis.iter().map(|m| (m.after, Some(m.time)));
        let tail = std::iter::once((self.sync.len(), None));
        marks.chain(tail).filter_map(move |(end, cti)| {
            let range = start..end;
            start = end;
            (cti.is_some() || !range.is_empty()).then_some((range, cti))
        })
    }

    /// The event columns, for bulk appends inside the crate; callers keep the invariants
    /// (checked by [`Batch::debug_check`] in debug builds).
    #[inline]
    pub(crate) fn columns_mut(&mut self) -> (&mut Vec<Time>, &mut Vec<Time>, &mut Vec<P>) {
        (&mut self.sync, &mut self.other, &mut self.payload)
    }

    /// Appends events given as columns (sorted, after what the batch holds).
    #[inline]
    pub(crate) fn extend_from_columns(&mut self, sync: &[Time], other: &[Time], payload: &[P])
    where
        P: Clone,
    {
        let before = self.sync.len();
        self.sync.extend_from_slice(sync);
        self.other.extend_from_slice(other);
        self.payload.extend_from_slice(payload);
        self.debug_check_from(before);
    }

    /// Checks the invariants for the events from index `from` on, in debug builds (sorted
    /// events, consistent CTI marks).
    #[inline]
    pub(crate) fn debug_check_from(&self, from: usize) {
        debug_assert!(
            self.sync[from.saturating_sub(1).min(self.sync.len())..]
                .windows(2)
                .all(|w| w[0] <= w[1]),
            "batch events must be sorted by sync time"
        );
        debug_assert!(
            self.sync.len() == self.other.len() && self.sync.len() == self.payload.len(),
            "batch columns must have equal lengths"
        );
        debug_assert!(
            self.ctis
                .last()
                .is_none_or(|m| self.sync[m.after.max(from)..].iter().all(|&s| s >= m.time)),
            "events after a CTI must not precede it"
        );
    }

    /// Moves every event and CTI of `other` to the end of this batch, leaving `other` empty.
    pub fn append(&mut self, other: &mut Batch<P>) {
        if self.is_empty() {
            // Nothing to keep here: take the other's columns whole.
            std::mem::swap(self, other);
            return;
        }
        let base = self.sync.len();
        // What both kinds of stream keep: no event after a CTI precedes it (an ordered stream
        // is also sorted; an unordered one, released on arrival, need not be).
        debug_assert!(
            self.ctis
                .last()
                .is_none_or(|m| other.sync.iter().all(|&s| s >= m.time)),
            "appending must keep every event at or after the CTIs before it"
        );
        self.ctis.extend(other.ctis.drain(..).map(|m| CtiMark {
            after: m.after + base,
            time: m.time,
        }));
        self.sync.append(&mut other.sync);
        self.other.append(&mut other.other);
        self.payload.append(&mut other.payload);
    }

    /// Events and CTIs in stream order, payloads borrowed.
    pub fn items(&self) -> Items<'_, P> {
        Items {
            batch: self,
            event: 0,
            cti: 0,
        }
    }

    /// Moves every event and CTI of the batch, in stream order, into owned items; the batch is
    /// left empty with its capacity.
    pub fn drain_items(&mut self, mut f: impl FnMut(StreamItem<P>)) {
        let mut marks = self.ctis.drain(..).peekable();
        for (i, ((sync, other), payload)) in self
            .sync
            .drain(..)
            .zip(self.other.drain(..))
            .zip(self.payload.drain(..))
            .enumerate()
        {
            while let Some(m) = marks.next_if(|m| m.after == i) {
                f(StreamItem::Cti(m.time));
            }
            f(StreamItem::Insert(Event {
                kind: EventKind::decode(sync, other),
                payload,
            }));
        }
        for m in marks {
            f(StreamItem::Cti(m.time));
        }
    }
}

/// Iterator over a batch's items; see [`Batch::items`].
#[derive(Debug)]
pub struct Items<'a, P> {
    batch: &'a Batch<P>,
    event: usize,
    cti: usize,
}

impl<'a, P> Iterator for Items<'a, P> {
    type Item = StreamItem<&'a P>;

    fn next(&mut self) -> Option<Self::Item> {
        if let Some(mark) = self.batch.ctis.get(self.cti) {
            if mark.after == self.event {
                self.cti += 1;
                return Some(StreamItem::Cti(mark.time));
            }
        }
        let i = self.event;
        let payload = self.batch.payload.get(i)?;
        self.event += 1;
        Some(StreamItem::Insert(Event {
            kind: self.batch.kind(i),
            payload,
        }))
    }
}

/// Points read from records and filtered on the way, in reusable columns: a filter fused into
/// the read of an adapter's records (what [`Batch::extend_points_on_arrival_with`] followed by
/// a filter gives, without writing out the points the filter refuses). The columns keep their
/// room from one selection to the next, so that each record is written without a branch on
/// the predicate (often a coin flip): it goes to the write position, which advances only past
/// kept ones. The selection is then appended to a batch with [`PointSelection::append_to`]
/// (one copy per column, of the kept points only).
///
/// ```
/// use punctual_core::{Batch, PointSelection, Time};
/// let records = [(30_i64, 5_i64), (10, 50), (20, 500), (-1, 5000), (40, 50_000)];
/// let mut selection = PointSelection::new();
/// let (read, top) = selection.select(
///     &records,
///     |r| Time::from_ticks(r.0),
///     |r| r.1,
///     |v| *v >= 50,
///     Time::from_ticks(0), // stops at the record at -1
/// );
/// assert_eq!((read, top), (3, Time::from_ticks(30)));
/// assert_eq!(selection.payloads(), &[50, 500]);
/// assert_eq!(selection.times(), &[Time::from_ticks(10), Time::from_ticks(20)]);
/// let mut batch = Batch::new();
/// selection.append_to(&mut batch);
/// assert_eq!(batch.payloads(), &[50, 500]);
/// assert_eq!(batch.other()[0], Time::from_ticks(11));
/// ```
#[derive(Debug, Clone)]
pub struct PointSelection<P> {
    /// Start times; valid up to `kept`, room (stale values) after it.
    times: Vec<Time>,
    /// Payloads; as `times`.
    payloads: Vec<P>,
    kept: usize,
}

impl<P> Default for PointSelection<P> {
    fn default() -> Self {
        PointSelection::new()
    }
}

impl<P> PointSelection<P> {
    /// An empty selection, without room yet (it grows to the longest run selected).
    pub fn new() -> Self {
        PointSelection {
            times: Vec::new(),
            payloads: Vec::new(),
            kept: 0,
        }
    }

    /// The start times of the points the last [`PointSelection::select`] kept, in order.
    pub fn times(&self) -> &[Time] {
        &self.times[..self.kept]
    }

    /// Their payloads.
    pub fn payloads(&self) -> &[P] {
        &self.payloads[..self.kept]
    }

    /// Number of points kept.
    pub fn len(&self) -> usize {
        self.kept
    }

    /// Whether the last selection kept nothing.
    pub fn is_empty(&self) -> bool {
        self.kept == 0
    }

    /// Appends the kept points, released on arrival, to `batch`
    /// ([`Batch::extend_points_on_arrival`]). Every event after the batch's last CTI must be
    /// at or after it (checked in debug builds): select with that CTI as `low`.
    pub fn append_to(&self, batch: &mut Batch<P>)
    where
        P: Clone,
    {
        let times = self.times();
        debug_assert!(
            batch
                .ctis
                .last()
                .is_none_or(|m| times.iter().all(|&s| s >= m.time)),
            "events after a CTI must not precede it"
        );
        batch.sync.extend_from_slice(times);
        // Selected times are finite (and below `Time::MAX_FINITE`): a point's end is one tick
        // on, without the saturation `Time::next_tick` needs at the ends of time.
        batch.other.extend(
            times
                .iter()
                .map(|t| Time::from_ticks(t.ticks().wrapping_add(1))),
        );
        batch.payload.extend_from_slice(self.payloads());
    }

    /// Reads `records` (start time and payload through `time` and `payload`) in order, and
    /// stops before the first whose time is below `low` or infinite (`Time::MAX_FINITE` counts
    /// as infinite here); of the records before it, keeps those whose payload satisfies
    /// `keep`, replacing the previous selection. Returns how many records it read (all of
    /// them, or up to the refused one) and the highest time it read (`-inf` if none).
    /// `payload` may be called more than once for a record.
    pub fn select<R>(
        &mut self,
        records: &[R],
        time: impl Fn(&R) -> Time,
        payload: impl Fn(&R) -> P,
        keep: impl Fn(&P) -> bool,
        low: Time,
    ) -> (usize, Time)
    where
        P: Clone,
    {
        let low = low.max(Time::MIN_FINITE);
        // `low <= t < Time::MAX_FINITE` as one unsigned comparison: the distance from `low`,
        // wrapped, below the width of the range (empty when `low` is not below the end).
        let width = Time::MAX_FINITE.ticks().wrapping_sub(low.ticks()) as u64;
        let width = if low < Time::MAX_FINITE { width } else { 0 };
        let admit = |t: Time| (t.ticks().wrapping_sub(low.ticks()) as u64) < width;
        let (mut read, mut top) = (records.len(), Time::NEG_INF);
        if std::mem::needs_drop::<P>() {
            // A payload that owns something is built once, and moved in or dropped; no stale
            // payloads are kept alive as room.
            self.times.clear();
            self.payloads.clear();
            for (k, r) in records.iter().enumerate() {
                let t = time(r);
                if !admit(t) {
                    read = k;
                    break;
                }
                top = top.max(t);
                let p = payload(r);
                if keep(&p) {
                    self.times.push(t);
                    self.payloads.push(p);
                }
            }
            self.kept = self.times.len();
            return (read, top);
        }
        let Some(first) = records.first() else {
            self.kept = 0;
            return (0, top);
        };
        let n = records.len();
        if self.times.len() < n {
            self.times.resize(n, Time::NEG_INF);
            self.payloads.resize(n, payload(first));
        }
        let times = &mut self.times[..n];
        let payloads = &mut self.payloads[..n];
        let mut w = 0;
        // Four records at a time while all four are admitted (the usual case): one branch for
        // the four, then each written as in the loop below (which takes the rest one at a
        // time; a closure shared by the two cost 2.5 instructions a record more).
        let mut k = 0;
        // The highest time, one running maximum per lane (a chain of maxima through one
        // variable compiled to branches, mispredicted at each late record).
        let mut tops = [Time::NEG_INF; 4];
        // The records a few kilobytes on are prefetched: this loop does too much work per
        // record for the processor to keep enough of the input's cache misses in flight by
        // itself (333 -> 462 M events/s on the benchmark's filter, see `crate::hint`).
        let ahead = crate::hint::prefetch_distance::<R>();
        for four in records.chunks_exact(4) {
            let ts = [
                time(&four[0]),
                time(&four[1]),
                time(&four[2]),
                time(&four[3]),
            ];
            if !(admit(ts[0]) & admit(ts[1]) & admit(ts[2]) & admit(ts[3])) {
                break;
            }
            crate::hint::prefetch_run(records, k + ahead, 4);
            for (lane, t) in tops.iter_mut().zip(ts) {
                *lane = (*lane).max(t);
            }
            // The four land in a window of four from the write position (`w <= k`, and
            // `k + 4 <= n`, so the window fits): one bounds check for the four, and within it
            // an index below four by construction.
            let (tw, pw) = (&mut times[w..w + 4], &mut payloads[w..w + 4]);
            let mut c = 0;
            for (r, t) in four.iter().zip(ts) {
                let p = payload(r);
                let kept = keep(&p);
                tw[c & 3] = t;
                pw[c & 3] = p;
                c += usize::from(kept);
            }
            w += c;
            k += 4;
        }
        top = tops.into_iter().fold(top, Time::max);
        for (k, r) in records.iter().enumerate().skip(k) {
            let t = time(r);
            if !admit(t) {
                read = k;
                break;
            }
            top = top.max(t);
            let p = payload(r);
            let kept = keep(&p);
            // `w <= k < n`: saying so drops the bounds checks.
            let d = w.min(k);
            times[d] = t;
            payloads[d] = p;
            w += usize::from(kept);
        }
        self.kept = w;
        (read, top)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn items_interleave_ctis_at_their_marks() {
        let t = Time::from_ticks;
        let mut b = Batch::new();
        b.push_cti(t(0));
        b.push(EventKind::Point(t(1)), 1);
        b.push(EventKind::StartEdge(t(1)), 2);
        b.push_cti(t(2));
        b.push_cti(t(3));
        b.push(
            EventKind::EndEdge {
                start: t(1),
                end: t(5),
            },
            2,
        );
        b.push_cti(Time::INF);
        let borrowed: Vec<StreamItem<i32>> = b.items().map(|i| i.map(|p| *p)).collect();
        let mut owned = Vec::new();
        b.drain_items(|i| owned.push(i));
        assert_eq!(borrowed, owned);
        assert_eq!(
            owned,
            vec![
                StreamItem::Cti(t(0)),
                StreamItem::point(t(1), 1),
                StreamItem::start_edge(t(1), 2),
                StreamItem::Cti(t(2)),
                StreamItem::Cti(t(3)),
                StreamItem::end_edge(t(1), t(5), 2),
                StreamItem::Cti(Time::INF),
            ]
        );
        assert!(b.is_empty());
    }

    /// `retain` against the obvious copy: same events in order, every CTI after the kept
    /// events that preceded it, for payloads with and without drop glue.
    #[test]
    fn retain_keeps_order_and_moves_marks() {
        let t = Time::from_ticks;
        for ctis_at in [vec![], vec![0], vec![3], vec![0, 5, 5, 12], vec![12]] {
            let mut b = Batch::new();
            let mut strings = Batch::new();
            let mut marks = ctis_at.iter().peekable();
            for i in 0..12i64 {
                while marks.next_if(|&&m| m == i as usize).is_some() {
                    let c = b.ctis.len() as i64;
                    b.push_cti(t(i * 10 - 5 + c));
                    strings.push_cti(t(i * 10 - 5 + c));
                }
                b.push_event(t(i * 10), t(i * 10 + 1), i * 7 % 5);
                strings.push_event(t(i * 10), t(i * 10 + 1), format!("{}", i * 7 % 5));
            }
            for c in marks {
                assert_eq!(*c, 12);
                let time = t(200 + b.ctis.len() as i64);
                b.push_cti(time);
                strings.push_cti(time);
            }
            let expected: Vec<StreamItem<i64>> = b
                .items()
                .filter(|i| match i {
                    StreamItem::Insert(e) => *e.payload >= 2,
                    StreamItem::Cti(_) => true,
                })
                .map(|i| i.map(|p| *p))
                .collect();
            b.retain(|v| *v >= 2);
            strings.retain(|v| v.as_str() >= "2");
            let got: Vec<StreamItem<i64>> = b.items().map(|i| i.map(|p| *p)).collect();
            assert_eq!(got, expected, "marks at {ctis_at:?}");
            let got_strings: Vec<StreamItem<i64>> = strings
                .items()
                .map(|i| i.map(|p| p.parse::<i64>().unwrap()))
                .collect();
            assert_eq!(got_strings, expected, "strings, marks at {ctis_at:?}");
        }
    }

    /// A selection against the obvious filter, for payloads with and without drop glue, with
    /// room left over from a longer selection before it.
    #[test]
    fn selection_is_the_filtered_prefix() {
        let t = Time::from_ticks;
        let mut copies = PointSelection::new();
        let mut strings = PointSelection::new();
        let runs: [&[(i64, i64)]; 4] = [
            &[(5, 1), (3, 2), (9, 3), (4, 4), (8, 5), (6, 6)],
            &[(7, 2), (2, 4), (9, 6)],
            &[(1, 3), (i64::MAX, 6), (5, 9)],
            &[],
        ];
        for (run, low) in runs.iter().zip([3, 3, 0, 0]) {
            let admitted = run
                .iter()
                .take_while(|r| r.0 >= low && t(r.0) < Time::MAX_FINITE)
                .count();
            let want: Vec<(Time, i64)> = run[..admitted]
                .iter()
                .filter(|r| r.1 % 2 == 0)
                .map(|r| (t(r.0), r.1))
                .collect();
            let top = run[..admitted].iter().map(|r| t(r.0)).max();
            let got = copies.select(run, |r| t(r.0), |r| r.1, |v| v % 2 == 0, t(low));
            assert_eq!(got, (admitted, top.unwrap_or(Time::NEG_INF)));
            let pairs: Vec<(Time, i64)> = copies
                .times()
                .iter()
                .copied()
                .zip(copies.payloads().iter().copied())
                .collect();
            assert_eq!(pairs, want);
            let got = strings.select(
                run,
                |r| t(r.0),
                |r| r.1.to_string(),
                |v| v.parse::<i64>().is_ok_and(|v| v % 2 == 0),
                t(low),
            );
            assert_eq!(got.0, admitted);
            let pairs: Vec<(Time, i64)> = strings
                .times()
                .iter()
                .copied()
                .zip(strings.payloads().iter().map(|v| v.parse().unwrap_or(-1)))
                .collect();
            assert_eq!(pairs, want);
            let mut batch = Batch::new();
            copies.append_to(&mut batch);
            assert_eq!(batch.len(), want.len());
            assert!(batch
                .other()
                .iter()
                .zip(batch.sync())
                .all(|(o, s)| o.ticks() == s.ticks() + 1));
        }
    }
}
