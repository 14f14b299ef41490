//! [`Batch`]: the columnar unit of data past ingress, the one container events travel in.
//!
//! A batch holds events in three columns (`sync`, `other`, `payload`; see [`crate::event`] for
//! the encoding) plus CTI marks between them. A mark says "after the first `n` events of this
//! batch, `CTI(t)`". Several CTIs may share one batch, so that a stream with a CTI after every
//! event still moves in batches of thousands of rows.
//!
//! Invariants, by the order of the stream the batch belongs to ([`Batch::check`] tests them;
//! the operator graph does so for every batch in debug builds):
//! - always: CTI marks strictly increase, and every event after `CTI(t)` has sync time `>= t`;
//! - on an ordered stream ([`EventOrder::Sorted`]) also: events are sorted by sync time over the
//!   whole batch, so every event before `CTI(t)` has sync `< t`.
//!
//! Batches are reused: [`Batch::clear`] keeps the columns' capacity, so a steady-state pipeline
//! does not allocate. A point's `other` time (`start + 1`) is written by one function,
//! [`Batch::extend_points`] and its siblings, wherever points are built from start times.
//!
//! ```
//! use punctual_core::{Batch, EventOrder, Time, StreamItem, Event};
//! let t = Time::from_ticks;
//! let mut b = Batch::new();
//! b.push_event(t(1), t(2), "a");
//! b.push_cti(t(2));
//! b.push_event(t(4), t(9), "b");
//! assert_eq!(b.check(EventOrder::Sorted), Ok(()));
//! let items: Vec<_> = b.items().collect();
//! assert_eq!(items, vec![
//!     StreamItem::Insert(Event::point(t(1), &"a")),
//!     StreamItem::Cti(t(2)),
//!     StreamItem::Insert(Event::interval(t(4), t(9), &"b")),
//! ]);
//! ```

use crate::event::{Event, EventKind, StreamItem};
use crate::order::EventOrder;
use crate::time::Time;

/// A CTI between the events of a batch.
#[derive(Clone, Copy, PartialEq, Eq, Debug, serde::Serialize, serde::Deserialize)]
pub struct CtiMark {
    /// How many of the batch's events come before this CTI.
    pub after: usize,
    /// The CTI's time.
    pub time: Time,
}

/// Events in columns, with CTI marks between them. See the module doc.
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

/// Appends the `other` time of a point (`start + 1`, see [`Time::next_tick`]) for each start
/// time: the one place where points get their end.
#[inline]
pub(crate) fn push_point_ends(starts: &[Time], other: &mut Vec<Time>) {
    other.extend(starts.iter().map(|t| t.next_tick()));
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

    /// Appends an event in its `(sync, other)` encoding. It must keep the batch's invariants
    /// (see the module doc): at or after the last CTI, and on an ordered stream at or after
    /// the last event.
    #[inline]
    pub fn push_event(&mut self, sync: Time, other: Time, payload: P) {
        self.sync.push(sync);
        self.other.push(other);
        self.payload.push(payload);
    }

    /// Appends an event given by kind.
    #[inline]
    pub fn push(&mut self, kind: EventKind, payload: P) {
        let (sync, other) = kind.encode();
        self.push_event(sync, other, payload);
    }

    /// Appends a point at `start` (its end is the next tick).
    #[inline]
    pub fn push_point(&mut self, start: Time, payload: P) {
        self.push_event(start, start.next_tick(), payload);
    }

    /// Appends a CTI after the events pushed so far. CTIs in a batch strictly increase
    /// (checked in debug builds).
    #[inline]
    pub fn push_cti(&mut self, time: Time) {
        debug_assert!(
            self.ctis.last().is_none_or(|m| m.time < time),
            "CTIs in a batch must strictly increase"
        );
        self.ctis.push(CtiMark {
            after: self.sync.len(),
            time,
        });
    }

    /// Appends points given as columns (start times and payloads), with one copy per column.
    ///
    /// # Panics
    /// If the columns differ in length (a caller's bug, as with `copy_from_slice`).
    #[inline]
    pub fn extend_points(&mut self, starts: &[Time], payloads: &[P])
    where
        P: Clone,
    {
        assert_eq!(starts.len(), payloads.len(), "one payload per time");
        self.sync.extend_from_slice(starts);
        push_point_ends(starts, &mut self.other);
        self.payload.extend_from_slice(payloads);
    }

    /// Appends points given as columns, moving the payloads out of `payloads` (left empty,
    /// with room): [`Batch::extend_points`] for payloads that own something (rows,
    /// strings), with no copy made and dropped. Into a batch with no events the payload
    /// column moves whole (the two vectors swap: no payload is copied).
    ///
    /// ```
    /// use punctual_core::{Batch, Time};
    /// let t = Time::from_ticks;
    /// let mut batch = Batch::new();
    /// let mut names = vec![String::from("a"), String::from("b")];
    /// batch.append_points(&[t(3), t(1)], &mut names);
    /// assert_eq!(batch.payloads(), &["a", "b"]);
    /// assert!(names.is_empty());
    /// names.push(String::from("c"));
    /// batch.append_points(&[t(2)], &mut names);
    /// assert_eq!(batch.payloads(), &["a", "b", "c"]);
    /// assert_eq!(batch.sync(), &[t(3), t(1), t(2)]);
    /// assert!(names.is_empty());
    /// ```
    ///
    /// # Panics
    /// If the columns differ in length (a caller's bug, as with `copy_from_slice`).
    #[inline]
    pub fn append_points(&mut self, starts: &[Time], payloads: &mut Vec<P>) {
        assert_eq!(starts.len(), payloads.len(), "one payload per time");
        self.sync.extend_from_slice(starts);
        push_point_ends(starts, &mut self.other);
        if self.payload.is_empty() {
            std::mem::swap(&mut self.payload, payloads);
        } else {
            self.payload.append(payloads);
        }
    }

    /// Appends points given as records with the functions that read a record's start time and
    /// payload, one column at a time (an adapter's decoded records go in without being copied
    /// into columns first).
    ///
    /// ```
    /// use punctual_core::{Batch, Time};
    /// let mut batch = Batch::new();
    /// let records = [(30_i64, "b"), (10, "a")]; // (milliseconds, payload)
    /// batch.extend_points_with(&records, |r| Time::from_ticks(r.0 * 10_000), |r| r.1);
    /// assert_eq!(batch.payloads(), &["b", "a"]);
    /// assert_eq!(batch.other()[1], Time::from_ticks(100_001));
    /// ```
    #[inline]
    pub fn extend_points_with<R>(
        &mut self,
        records: &[R],
        time: impl Fn(&R) -> Time,
        payload: impl Fn(&R) -> P,
    ) {
        let before = self.sync.len();
        self.sync.extend(records.iter().map(time));
        push_point_ends(&self.sync[before..], &mut self.other);
        self.payload.extend(records.iter().map(payload));
    }

    /// Whether the batch keeps the invariants of a stream of this order (see the module
    /// doc); `Err` says which it breaks and where.
    ///
    /// ```
    /// use punctual_core::{Batch, EventOrder, Time};
    /// let t = Time::from_ticks;
    /// let mut b = Batch::new();
    /// b.push_point(t(7), 'a');
    /// b.push_point(t(3), 'b');
    /// b.push_cti(t(5)); // 7 comes before CTI(5): released on arrival
    /// assert!(b.check(EventOrder::Arrival).is_ok());
    /// assert!(b.check(EventOrder::Sorted).is_err());
    /// ```
    pub fn check(&self, order: EventOrder) -> Result<(), String> {
        let n = self.sync.len();
        if self.other.len() != n || self.payload.len() != n {
            return Err(format!(
                "columns of unequal lengths: {n} sync, {} other, {} payload",
                self.other.len(),
                self.payload.len()
            ));
        }
        let mut from = 0;
        let mut last: Option<Time> = None;
        for m in &self.ctis {
            if m.after < from || m.after > n {
                return Err(format!("CTI({:?}) marked after event {}", m.time, m.after));
            }
            if last.is_some_and(|l| l >= m.time) {
                return Err(format!("CTI({:?}) does not advance", m.time));
            }
            if let Some(l) = last {
                if let Some(s) = self.sync[from..].iter().find(|&&s| s < l) {
                    return Err(format!("an event at {s:?} after CTI({l:?})"));
                }
            }
            if order == EventOrder::Sorted {
                if let Some(s) = self.sync[from..m.after].iter().find(|&&s| s >= m.time) {
                    return Err(format!("an event at {s:?} before CTI({:?})", m.time));
                }
            }
            from = m.after;
            last = Some(m.time);
        }
        if let Some(l) = last {
            if let Some(s) = self.sync[from..].iter().find(|&&s| s < l) {
                return Err(format!("an event at {s:?} after CTI({l:?})"));
            }
        }
        if order == EventOrder::Sorted {
            if let Some(w) = self.sync.windows(2).find(|w| w[0] > w[1]) {
                return Err(format!("events out of order: {:?} before {:?}", w[0], w[1]));
            }
        }
        Ok(())
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
    /// (which the graph checks in debug builds).
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
        self.sync.extend_from_slice(sync);
        self.other.extend_from_slice(other);
        self.payload.extend_from_slice(payload);
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

    /// Moves every event of `other` to the end of this batch, and each of its CTIs that
    /// `cti` maps to a time (at or before it: the CTIs of a union, say), leaving `other`
    /// empty. The columns move whole when this batch has no events (no copy).
    pub(crate) fn append_mapping_ctis(
        &mut self,
        other: &mut Batch<P>,
        mut cti: impl FnMut(Time) -> Option<Time>,
    ) {
        let base = self.sync.len();
        let mut marks = std::mem::take(&mut other.ctis);
        marks.retain_mut(|m| match cti(m.time) {
            Some(t) => {
                debug_assert!(
                    t <= m.time,
                    "a mapped CTI must not pass the events after it"
                );
                m.time = t;
                m.after += base;
                true
            }
            None => false,
        });
        if base == 0 {
            std::mem::swap(&mut self.sync, &mut other.sync);
            std::mem::swap(&mut self.other, &mut other.other);
            std::mem::swap(&mut self.payload, &mut other.payload);
        } else {
            self.sync.append(&mut other.sync);
            self.other.append(&mut other.other);
            self.payload.append(&mut other.payload);
        }
        self.ctis.append(&mut marks);
        other.ctis = marks;
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

mod exchange;
mod wire;
pub use wire::WireError;

#[cfg(test)]
mod tests;
