//! [`PointRun`]: points handed to the ingress in bulk (columns, or records read through
//! functions), as the one bulk loop reads them, with the stream's fused filter if it has one.

use punctual_core::ops::{Predicate, ReleaseBuffer};
use punctual_core::{Batch, Time};

use super::select::PointSelection;

/// Points handed to the ingress in bulk, read by index and moved in runs: what every bulk
/// entry point hands to the one loop.
pub(crate) trait PointRun<P> {
    fn len(&self) -> usize;
    fn time(&self, i: usize) -> Time;
    fn payload(&self, i: usize) -> P;
    /// How many points from the start of `range` have their times in `admit`, and the highest
    /// of those times (`-inf` if none).
    fn admitted(
        &self,
        range: std::ops::Range<usize>,
        admit: std::ops::Range<Time>,
    ) -> (usize, Time) {
        let mut top = Time::NEG_INF;
        for i in range.clone() {
            let t = self.time(i);
            if !admit.contains(&t) {
                return (i - range.start, top);
            }
            top = top.max(t);
        }
        (range.len(), top)
    }
    /// Appends points `range`, released on arrival, to `batch`.
    fn release(&self, range: std::ops::Range<usize>, batch: &mut Batch<P>);
    /// Reads points from the start of `range` while their time is finite and at or after
    /// `low` into `selection`, the ones `keep` keeps (and, with `REFUSED`, the others apart);
    /// returns (points read, highest time read).
    fn select<const REFUSED: bool>(
        &self,
        range: std::ops::Range<usize>,
        selection: &mut PointSelection<P>,
        low_keep: (Time, &dyn Predicate<P>),
    ) -> (usize, Time);
    /// Holds points from the start of `range` in the reorder buffer while their times lie in
    /// `admit`, runs in order with one copy per column; returns how many it held and the
    /// highest of their times.
    fn hold(
        &self,
        range: std::ops::Range<usize>,
        admit: std::ops::Range<Time>,
        buffer: &mut ReleaseBuffer<P>,
    ) -> (usize, Time);
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
    fn select<const REFUSED: bool>(
        &self,
        range: std::ops::Range<usize>,
        selection: &mut PointSelection<P>,
        (low, keep): (Time, &dyn Predicate<P>),
    ) -> (usize, Time) {
        let (times, payloads) = (&self.times[range.clone()], &self.payloads[range]);
        selection.select_columns::<REFUSED>(times, payloads, keep, low)
    }
    #[inline]
    fn hold(
        &self,
        range: std::ops::Range<usize>,
        admit: std::ops::Range<Time>,
        buffer: &mut ReleaseBuffer<P>,
    ) -> (usize, Time) {
        let (n, top) = self.admitted(range.clone(), admit);
        let (times, payloads) = (&self.times[range.clone()], &self.payloads[range]);
        buffer.push_point_run(&times[..n], &payloads[..n]);
        (n, top)
    }
}

/// Records with the functions that read them: runs are read straight into their destination.
pub(crate) struct Records<'a, R, T, F> {
    pub(crate) records: &'a [R],
    pub(crate) time: T,
    pub(crate) payload: F,
}

impl<P, R, T, F> PointRun<P> for Records<'_, R, T, F>
where
    P: Clone,
    T: Fn(&R) -> Time,
    F: Fn(&R) -> P,
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
    fn release(&self, range: std::ops::Range<usize>, batch: &mut Batch<P>) {
        batch.extend_points_with(&self.records[range], &self.time, &self.payload);
    }
    #[inline]
    fn select<const REFUSED: bool>(
        &self,
        range: std::ops::Range<usize>,
        selection: &mut PointSelection<P>,
        (low, keep): (Time, &dyn Predicate<P>),
    ) -> (usize, Time) {
        let records = &self.records[range];
        selection.select::<REFUSED, _>(records, &self.time, &self.payload, keep, low)
    }
    #[inline]
    fn hold(
        &self,
        range: std::ops::Range<usize>,
        admit: std::ops::Range<Time>,
        buffer: &mut ReleaseBuffer<P>,
    ) -> (usize, Time) {
        let records = &self.records[range];
        buffer.push_point_records(records, &self.time, &self.payload, admit)
    }
}
