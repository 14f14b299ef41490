//! [`PointRun`]: points handed to the ingress in bulk (columns, or records read through
//! functions, with or without a filter pushed down), as the one bulk loop reads them.

use punctual_core::ops::ReleaseBuffer;
use punctual_core::{Batch, Time};

use super::select::PointSelection;

/// Points handed to the ingress in bulk, read by index and moved in runs: what every bulk
/// entry point hands to the one loop.
pub(crate) trait PointRun<P> {
    fn len(&self) -> usize;
    fn time(&self, i: usize) -> Time;
    fn payload(&self, i: usize) -> P;
    /// The pushed-down predicate's verdict on a payload.
    fn keep(&self, _payload: &P) -> bool {
        true
    }
    /// Appends points `range`, released on arrival, to `batch`.
    fn release(&self, range: std::ops::Range<usize>, batch: &mut Batch<P>);
    /// With a predicate pushed down: reads points from the start of `range` while their time
    /// is finite and at or after `low` into `selection`, the kept ones only, and returns
    /// (points read, highest time read). Without one: `None`, nothing read.
    fn select(
        &self,
        range: std::ops::Range<usize>,
        selection: &mut PointSelection<P>,
        low: Time,
    ) -> Option<(usize, Time)>;
    /// Holds the kept points of `range` (valid, sorted, at or after the buffer's last in-order
    /// time), through `selection` if a predicate was pushed down; returns how many it
    /// filtered out.
    fn hold_sorted(
        &self,
        range: std::ops::Range<usize>,
        buffer: &mut ReleaseBuffer<P>,
        selection: &mut PointSelection<P>,
    ) -> usize;
}

/// Columns of equal length: runs move with one copy per column.
pub(crate) struct Columns<'a, P> {
    pub(crate) times: &'a [Time],
    pub(crate) payloads: &'a [P],
}

impl<P: Clone> PointRun<P> for Columns<'_, P> {
    fn len(&self) -> usize {
        self.times.len()
    }
    #[inline]
    fn time(&self, i: usize) -> Time {
        self.times[i]
    }
    #[inline]
    fn payload(&self, i: usize) -> P {
        self.payloads[i].clone()
    }
    #[inline]
    fn release(&self, range: std::ops::Range<usize>, batch: &mut Batch<P>) {
        batch.extend_points(&self.times[range.clone()], &self.payloads[range]);
    }
    fn select(
        &self,
        _: std::ops::Range<usize>,
        _: &mut PointSelection<P>,
        _: Time,
    ) -> Option<(usize, Time)> {
        None
    }
    #[inline]
    fn hold_sorted(
        &self,
        range: std::ops::Range<usize>,
        buffer: &mut ReleaseBuffer<P>,
        _: &mut PointSelection<P>,
    ) -> usize {
        buffer.push_sorted_points(&self.times[range.clone()], &self.payloads[range]);
        0
    }
}

/// A predicate pushed down into the ingress, or none.
pub(crate) trait Keep<P> {
    const ALL: bool;
    fn keep(&self, payload: &P) -> bool;
}

/// No predicate: every accepted point goes on.
pub(crate) struct KeepAll;

impl<P> Keep<P> for KeepAll {
    const ALL: bool = true;
    #[inline]
    fn keep(&self, _payload: &P) -> bool {
        true
    }
}

/// A predicate on the payload.
pub(crate) struct KeepWhere<F>(pub(crate) F);

impl<P, F: Fn(&P) -> bool> Keep<P> for KeepWhere<F> {
    const ALL: bool = false;
    #[inline]
    fn keep(&self, payload: &P) -> bool {
        (self.0)(payload)
    }
}

/// Records with the functions that read them (and a pushed-down predicate, or none): runs are
/// read straight into their destination.
pub(crate) struct Records<'a, R, T, F, K> {
    pub(crate) records: &'a [R],
    pub(crate) time: T,
    pub(crate) payload: F,
    pub(crate) keep: K,
}

impl<P, R, T, F, K> PointRun<P> for Records<'_, R, T, F, K>
where
    P: Clone,
    T: Fn(&R) -> Time,
    F: Fn(&R) -> P,
    K: Keep<P>,
{
    fn len(&self) -> usize {
        self.records.len()
    }
    #[inline]
    fn time(&self, i: usize) -> Time {
        (self.time)(&self.records[i])
    }
    #[inline]
    fn payload(&self, i: usize) -> P {
        (self.payload)(&self.records[i])
    }
    #[inline]
    fn keep(&self, payload: &P) -> bool {
        self.keep.keep(payload)
    }
    #[inline]
    fn release(&self, range: std::ops::Range<usize>, batch: &mut Batch<P>) {
        batch.extend_points_with(&self.records[range], &self.time, &self.payload);
    }
    #[inline]
    fn select(
        &self,
        range: std::ops::Range<usize>,
        selection: &mut PointSelection<P>,
        low: Time,
    ) -> Option<(usize, Time)> {
        if K::ALL {
            return None;
        }
        let records = &self.records[range];
        let keep = |p: &P| self.keep.keep(p);
        Some(selection.select(records, &self.time, &self.payload, keep, low))
    }
    #[inline]
    fn hold_sorted(
        &self,
        range: std::ops::Range<usize>,
        buffer: &mut ReleaseBuffer<P>,
        selection: &mut PointSelection<P>,
    ) -> usize {
        let records = &self.records[range];
        if K::ALL {
            buffer.push_sorted_points_with(records, &self.time, &self.payload);
            return 0;
        }
        // The run is valid and sorted: every record is admitted, the kept ones held in one
        // copy per column.
        let keep = |p: &P| self.keep.keep(p);
        let (read, _) = selection.select(records, &self.time, &self.payload, keep, Time::NEG_INF);
        debug_assert_eq!(read, records.len(), "a valid run is read whole");
        buffer.push_sorted_points(selection.times(), selection.payloads());
        records.len() - selection.len()
    }
}
