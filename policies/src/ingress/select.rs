//! [`PointSelection`]: points read from records and filtered on the way, for a filter pushed
//! down into the ingress of an unordered stream.

use punctual_core::{Batch, Time};

/// Points read from records and filtered on the way, in reusable columns: a filter fused into
/// the read of an adapter's records (what [`Batch::extend_points_with`] followed by
/// a filter gives, without writing out the points the filter refuses). The columns keep their
/// room from one selection to the next, so that each record is written without a branch on
/// the predicate (often a coin flip): it goes to the write position, which advances only past
/// kept ones. The selection is then appended to a batch with [`PointSelection::append_to`]
/// (one copy per column, of the kept points only).
///
#[derive(Debug, Clone)]
pub(crate) struct PointSelection<P> {
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
    pub(crate) fn new() -> Self {
        PointSelection {
            times: Vec::new(),
            payloads: Vec::new(),
            kept: 0,
        }
    }

    /// The start times of the points the last [`PointSelection::select`] kept, in order.
    pub(crate) fn times(&self) -> &[Time] {
        &self.times[..self.kept]
    }

    /// Their payloads.
    pub(crate) fn payloads(&self) -> &[P] {
        &self.payloads[..self.kept]
    }

    /// Number of points kept.
    pub(crate) fn len(&self) -> usize {
        self.kept
    }

    /// Appends the kept points, released on arrival, to `batch`
    /// ([`Batch::extend_points`]). Every event after the batch's last CTI must be
    /// at or after it (checked in debug builds): select with that CTI as `low`.
    pub(crate) fn append_to(&self, batch: &mut Batch<P>)
    where
        P: Clone,
    {
        batch.extend_points(self.times(), self.payloads());
    }

    /// Reads `records` (start time and payload through `time` and `payload`) in order, and
    /// stops before the first whose time is below `low` or infinite (`Time::MAX_FINITE` counts
    /// as infinite here); of the records before it, keeps those whose payload satisfies
    /// `keep`, replacing the previous selection. Returns how many records it read (all of
    /// them, or up to the refused one) and the highest time it read (`-inf` if none).
    /// `payload` may be called more than once for a record.
    pub(crate) fn select<R>(
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
        // itself (see `punctual_core::hint`).
        let ahead = punctual_core::hint::prefetch_distance::<R>();
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
            punctual_core::hint::prefetch_run(records, k + ahead, 4);
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
