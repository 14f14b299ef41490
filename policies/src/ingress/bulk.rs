//! The bulk entry points: items or points in arrival order, from an iterator, as columns, or
//! as records read through functions, all through one loop (which applies the stream's fused filter, if
//! it has one, as it reads). Each
//! gives exactly what enqueuing the points one by one gives (CTIs, drops, dead letters,
//! counters); only the speed differs. The loop takes runs of valid points up to the next
//! generated CTI (or the buffer's cap) in one pass of the stream's [`Hold`]; whatever breaks a
//! run (a late or invalid point, a full buffer, the CTI boundary) takes the general path of
//! [`Ingress::enqueue`] for that one point.

use std::cell::Cell;

use punctual_core::{Event, EventKind, StreamItem, Time};

use super::output::{EnqueueSummary, IngressOutput};
use super::run::{Columns, PointRun, Records};
use super::Ingress;
use crate::settings::GenerationFrequency;
use crate::watermark::Arrival;
use crate::Error;

#[cfg(doc)]
use super::hold::Hold;

/// Points taken from an iterator per pass of the loop.
const CHUNK: usize = 1024;

/// The positions of a chunk's points, the records of a run whose payloads are moved out of
/// their column ([`Ingress::enqueue_moved`]).
static INDEX: [u16; CHUNK] = {
    let mut index = [0; CHUNK];
    let mut i = 0;
    while i < CHUNK {
        index[i] = i as u16;
        i += 1;
    }
    index
};

/// Points gathered for the bulk loop ([`Ingress::enqueue_items`]): pairs, whose payloads the
/// loop copies (no drop glue), or columns, whose payloads it moves out.
trait Gathered<P> {
    /// Adds a point; how many are gathered now.
    fn push(&mut self, t: Time, payload: P) -> usize;
    /// The points gathered through the bulk loop; leaves none.
    fn enqueue(
        &mut self,
        ingress: &mut Ingress<P>,
        summary: &mut EnqueueSummary,
        out: &mut IngressOutput<P>,
    ) -> Result<(), Error>;
}

impl<P: Clone + PartialEq> Gathered<P> for Vec<(Time, P)> {
    fn push(&mut self, t: Time, payload: P) -> usize {
        Vec::push(self, (t, payload));
        self.len()
    }

    fn enqueue(
        &mut self,
        ingress: &mut Ingress<P>,
        summary: &mut EnqueueSummary,
        out: &mut IngressOutput<P>,
    ) -> Result<(), Error> {
        ingress.enqueue_chunk(self, summary, out)
    }
}

impl<P: Clone + PartialEq> Gathered<P> for (Vec<Time>, Vec<Option<P>>) {
    fn push(&mut self, t: Time, payload: P) -> usize {
        self.0.push(t);
        self.1.push(Some(payload));
        self.0.len()
    }

    fn enqueue(
        &mut self,
        ingress: &mut Ingress<P>,
        summary: &mut EnqueueSummary,
        out: &mut IngressOutput<P>,
    ) -> Result<(), Error> {
        ingress.enqueue_moved(self, summary, out)
    }
}

impl<P: Clone + PartialEq> Ingress<P> {
    /// Enqueues items in arrival order, with the same result as [`Ingress::enqueue`] for each
    /// (CTIs generated between them included), and counts what became of them: the way an
    /// adapter hands over a block of what it read. Runs of points go through the bulk loop
    /// (payloads without drop glue copied, those that own memory, such as rows, moved).
    /// Rejected items do not stop it (they are counted and sent to the dead letters with their
    /// reason); a full reorder buffer does, with [`Error::BufferFull`]: that item
    /// was rejected, the items after it were not enqueued, and what happened before it is in
    /// the counters.
    ///
    /// ```
    /// use punctual_core::{StreamItem, Time};
    /// use punctual_policies::{Ingress, IngressConfig, IngressOutput};
    /// let t = Time::from_ticks;
    /// let mut ingress = Ingress::new(IngressConfig::default());
    /// let mut out = IngressOutput::new();
    /// let items = [
    ///     StreamItem::point(t(3), 'b'),
    ///     StreamItem::point(t(1), 'a'),
    ///     StreamItem::interval(t(2), t(9), 'i'),
    ///     StreamItem::Cti(t(4)),
    ///     StreamItem::point(t(2), 'x'), // breaks CTI(4): rejected
    /// ];
    /// let summary = ingress.enqueue_items(items, &mut out).unwrap();
    /// assert_eq!((summary.accepted, summary.ctis, summary.rejected), (3, 1, 1));
    /// assert_eq!(out.batch.payloads(), &['a', 'i', 'b']);
    /// ```
    pub fn enqueue_items(
        &mut self,
        items: impl IntoIterator<Item = StreamItem<P>>,
        out: &mut IngressOutput<P>,
    ) -> Result<EnqueueSummary, Error> {
        let mut summary = EnqueueSummary::default();
        let items = items.into_iter();
        if std::mem::needs_drop::<P>() {
            let mut columns = std::mem::take(&mut self.moving);
            let result = self.enqueue_items_in_runs(items, &mut columns, &mut summary, out);
            columns.0.clear();
            columns.1.clear();
            self.moving = columns;
            return result.map(|()| summary);
        }
        let mut chunk = std::mem::take(&mut self.scratch);
        chunk.clear();
        let result = self.enqueue_items_in_runs(items, &mut chunk, &mut summary, out);
        chunk.clear();
        self.scratch = chunk;
        result.map(|()| summary)
    }

    /// [`Ingress::enqueue_items`] with each item's arrival (its time and partition), which
    /// the watermark strategies judge events by: [`Ingress::enqueue_with`] for each. Without
    /// a watermark strategy arrivals change nothing, and the items take the bulk loop.
    pub fn enqueue_items_with(
        &mut self,
        items: impl IntoIterator<Item = (StreamItem<P>, Arrival)>,
        out: &mut IngressOutput<P>,
    ) -> Result<EnqueueSummary, Error> {
        if self.watermark.is_none() {
            return self.enqueue_items(items.into_iter().map(|(item, _)| item), out);
        }
        let mut summary = EnqueueSummary::default();
        for (item, arrival) in items {
            summary.record(self.enqueue_with(item, arrival, out))?;
        }
        Ok(summary)
    }

    /// Enqueues point events in arrival order: [`Ingress::enqueue_items`] on
    /// `StreamItem::point(t, p)` for each.
    ///
    /// ```
    /// use punctual_core::Time;
    /// use punctual_policies::{AdvanceTimeGenerationSettings, Ingress, IngressConfig, IngressOutput};
    /// use punctual_policies::AdvanceTimePolicy;
    /// let t = Time::from_ticks;
    /// let mut ingress = Ingress::new(IngressConfig {
    ///     generation: Some(AdvanceTimeGenerationSettings::every_events(2).build().unwrap()),
    ///     policy: Some(AdvanceTimePolicy::Drop),
    ///     ..IngressConfig::default()
    /// });
    /// let mut out = IngressOutput::new();
    /// let points = [(t(1), 'a'), (t(3), 'b'), (t(2), 'c'), (t(4), 'd')];
    /// let summary = ingress.enqueue_points(points, &mut out).unwrap();
    /// assert_eq!((summary.accepted, summary.dropped), (3, 1));
    /// // CTI(3) after 'b' releases 'a'; 'c' at 2 breaks it and is dropped; 'd' waits for a CTI.
    /// assert_eq!(out.batch.payloads(), &['a']);
    /// assert_eq!(out.batch.last_cti(), Some(t(3)));
    /// assert_eq!(ingress.counters().dropped, 1);
    /// ```
    pub fn enqueue_points(
        &mut self,
        points: impl IntoIterator<Item = (Time, P)>,
        out: &mut IngressOutput<P>,
    ) -> Result<EnqueueSummary, Error> {
        let items = points.into_iter().map(|(t, p)| StreamItem::point(t, p));
        self.enqueue_items(items, out)
    }

    /// Points gathered (moved out of their items) and taken by the bulk loop a chunk at a
    /// time; any other item ends the chunk and takes the general path.
    fn enqueue_items_in_runs(
        &mut self,
        items: impl Iterator<Item = StreamItem<P>>,
        gathered: &mut impl Gathered<P>,
        summary: &mut EnqueueSummary,
        out: &mut IngressOutput<P>,
    ) -> Result<(), Error> {
        for item in items {
            match item {
                StreamItem::Insert(Event {
                    kind: EventKind::Point(t),
                    payload,
                }) => {
                    if gathered.push(t, payload) == CHUNK {
                        gathered.enqueue(self, summary, out)?;
                    }
                }
                other => {
                    gathered.enqueue(self, summary, out)?;
                    summary.record(self.enqueue(other, out))?;
                }
            }
        }
        gathered.enqueue(self, summary, out)
    }

    /// The points of the columns through the bulk loop, each payload moved out as the loop
    /// reads it (once, in order: see [`Ingress::enqueue_point_run`]); leaves them empty. (A
    /// copy and a drop of the original would cost, for a row of text, two atomic operations
    /// per text field.)
    fn enqueue_moved(
        &mut self,
        (times, payloads): &mut (Vec<Time>, Vec<Option<P>>),
        summary: &mut EnqueueSummary,
        out: &mut IngressOutput<P>,
    ) -> Result<(), Error> {
        let n = times.len().min(payloads.len()).min(INDEX.len());
        let spare = payloads.first().cloned().flatten();
        let result = match spare {
            Some(spare) => {
                let cells = Cell::from_mut(&mut payloads[..]).as_slice_of_cells();
                let run = Records {
                    records: &INDEX[..n],
                    time: |&i: &u16| times[usize::from(i)],
                    payload: |&i: &u16| {
                        cells[usize::from(i)].take().unwrap_or_else(|| {
                            debug_assert!(false, "the bulk loop read a payload twice");
                            spare.clone()
                        })
                    },
                };
                self.enqueue_point_run(&run, out)
            }
            None => Ok(EnqueueSummary::default()),
        };
        times.clear();
        payloads.clear();
        summary.add(result?);
        Ok(())
    }

    /// The points of `chunk` through the bulk loop; leaves it empty.
    fn enqueue_chunk(
        &mut self,
        chunk: &mut Vec<(Time, P)>,
        summary: &mut EnqueueSummary,
        out: &mut IngressOutput<P>,
    ) -> Result<(), Error> {
        if chunk.is_empty() {
            return Ok(());
        }
        let run = Records {
            records: &chunk[..],
            time: |r: &(Time, P)| r.0,
            payload: |r: &(Time, P)| r.1.clone(),
        };
        let result = self.enqueue_point_run(&run, out);
        chunk.clear();
        summary.add(result?);
        Ok(())
    }

    /// Enqueues point events given as columns (start times and payloads, in arrival order),
    /// with the same result as [`Ingress::enqueue_points`] on the pairs: for an adapter that
    /// parses its input into columns. Runs of valid points in time order go into the reorder
    /// buffer with one copy per column. Errors as [`Ingress::enqueue_points`], and
    /// [`Error::ColumnLengths`] (nothing enqueued) when the columns differ in length.
    ///
    /// ```
    /// use punctual_core::Time;
    /// use punctual_policies::{AdvanceTimeGenerationSettings, Ingress, IngressConfig, IngressOutput};
    /// use punctual_policies::AdvanceTimePolicy;
    /// let t = Time::from_ticks;
    /// let mut ingress = Ingress::new(IngressConfig {
    ///     generation: Some(AdvanceTimeGenerationSettings::every_events(2).build().unwrap()),
    ///     policy: Some(AdvanceTimePolicy::Drop),
    ///     ..IngressConfig::default()
    /// });
    /// let mut out = IngressOutput::new();
    /// let times = [t(1), t(3), t(2), t(4)];
    /// let summary = ingress.enqueue_point_columns(&times, &['a', 'b', 'c', 'd'], &mut out);
    /// assert_eq!(summary.unwrap().dropped, 1);
    /// assert_eq!(out.batch.payloads(), &['a']); // CTI(3); 'c' at 2 is dropped
    /// ```
    pub fn enqueue_point_columns(
        &mut self,
        times: &[Time],
        payloads: &[P],
        out: &mut IngressOutput<P>,
    ) -> Result<EnqueueSummary, Error> {
        if times.len() != payloads.len() {
            return Err(Error::ColumnLengths {
                times: times.len(),
                payloads: payloads.len(),
            });
        }
        self.enqueue_point_run(&Columns { times, payloads }, out)
    }

    /// Enqueues point events given as records (in arrival order) with the functions that read
    /// a record's start time and payload: the same result as [`Ingress::enqueue_points`] on
    /// `records.iter().map(|r| (time(r), payload(r)))`, without building columns first: for
    /// an adapter whose decoded records are already in memory (a slice of structs), each
    /// record is read straight into the reorder buffer or, on an unordered stream, the
    /// released batch. `time` and `payload` may be called more than once for a record. Errors
    /// as [`Ingress::enqueue_points`].
    ///
    /// ```
    /// use punctual_core::Time;
    /// use punctual_policies::{AdvanceTimeGenerationSettings, Ingress, IngressConfig, IngressOutput};
    /// use punctual_policies::AdvanceTimePolicy;
    /// // (milliseconds, value, sensor): a decoded record.
    /// let records = [(1_i64, 10_i64, 7_u32), (3, 30, 7), (2, 20, 8), (4, 40, 8)];
    /// let mut ingress = Ingress::new(IngressConfig {
    ///     generation: Some(AdvanceTimeGenerationSettings::every_events(2).build().unwrap()),
    ///     policy: Some(AdvanceTimePolicy::Drop),
    ///     ..IngressConfig::default()
    /// });
    /// let mut out = IngressOutput::new();
    /// let ms = |r: &(i64, i64, u32)| Time::from_ticks(r.0 * 10_000);
    /// let summary = ingress.enqueue_point_records(&records, ms, |r| (r.1, r.2), &mut out);
    /// assert_eq!(summary.unwrap().dropped, 1);
    /// assert_eq!(out.batch.payloads(), &[(10, 7)]); // CTI(3 ms); the record at 2 ms is dropped
    /// ```
    pub fn enqueue_point_records<R>(
        &mut self,
        records: &[R],
        time: impl Fn(&R) -> Time,
        payload: impl Fn(&R) -> P,
        out: &mut IngressOutput<P>,
    ) -> Result<EnqueueSummary, Error> {
        self.enqueue_point_run(
            &Records {
                records,
                time,
                payload,
            },
            out,
        )
    }

    /// How many points the loop may take before generation must look (up to the next CTI by
    /// count, one at a time by duration, any number without generation) and the buffer is
    /// full.
    fn budget(&self) -> usize {
        let room = self.config.max_buffered.saturating_sub(self.hold.len());
        let generation = match self.config.generation.map(|g| g.frequency()) {
            Some(GenerationFrequency::EveryEvents(n)) => {
                usize::try_from(n.get().saturating_sub(self.since_cti)).unwrap_or(usize::MAX)
            }
            Some(GenerationFrequency::EveryDuration(_)) => 1,
            None => usize::MAX,
        };
        room.min(generation)
    }

    /// One point through the general path ([`Ingress::enqueue`]), with the fused filter's
    /// verdict.
    fn enqueue_point(
        &mut self,
        t: Time,
        payload: P,
        keep: bool,
        out: &mut IngressOutput<P>,
    ) -> Result<super::Enqueued, Error> {
        self.items_seen += 1;
        self.counters.events_in += 1;
        let event = Event {
            kind: EventKind::Point(t),
            payload,
        };
        self.insert(event, Arrival::default(), keep, out)
    }

    /// The one loop behind every bulk entry point.
    fn enqueue_point_run(
        &mut self,
        points: &impl PointRun<P>,
        out: &mut IngressOutput<P>,
    ) -> Result<EnqueueSummary, Error> {
        let len = points.len();
        let mut summary = EnqueueSummary::default();
        let mut i = 0;
        while i < len {
            // A watermark strategy looks at each point: none go in a run.
            let budget = if self.watermark.is_some() {
                0
            } else {
                self.budget()
            };
            let end = len.min(i.saturating_add(budget));
            let low = self.app.max(Time::MIN_FINITE);
            let keep = self.filter.as_ref().map(|f| &*f.0);
            let taken = self.hold.take_points(
                points,
                (i..end, low),
                (&mut self.selection, keep),
                &mut out.batch,
            );
            let n = taken.read;
            self.items_seen += n as u64;
            self.counters.events_in += n as u64;
            self.counters.released += taken.released as u64;
            self.counters.filtered += taken.filtered as u64;
            self.since_cti += n as u64;
            summary.accepted += n;
            self.high = self.high.max(taken.top);
            if n > 0 {
                self.generate(out);
            }
            i += n;
            if i < len && (i < end || n == 0) {
                // Invalid, breaking the CTI, over the cap, or generation (or a watermark
                // strategy) must look at this point: the general path.
                let p = points.payload(i);
                let keep = self.keeps(&p);
                summary.record(self.enqueue_point(points.time(i), p, keep, out))?;
                i += 1;
            }
        }
        Ok(summary)
    }
}
