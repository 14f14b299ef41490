//! [`PointSelection`]: points read from records and filtered on the way, for a filter pushed
//! down into the ingress of an unordered stream.

use punctual_core::ops::{Predicate, ReleaseBuffer};
use punctual_core::{Batch, Time};

use super::refused::Refused;

/// Points read from records and filtered on the way, in reusable columns: a filter fused into
/// the read of an adapter's records (what [`Batch::extend_points_with`] followed by
/// a filter gives, without writing out the points the filter refuses). The columns keep their
/// room from one selection to the next, so that each record is written without a branch on
/// the predicate (often a coin flip): it goes to the write position, which advances only past
/// kept ones. The selection is then appended to a batch with [`PointSelection::append_to`]
/// (one copy per column, of the kept points only). A selection for an ordered stream also
/// keeps the refused points' times apart ([`PointSelection::hold_in`] holds them until a CTI
/// passes them, so that they are counted as the filter after the ingress would count them).
#[derive(Debug, Clone)]
pub(crate) struct PointSelection<P> {
    /// Start times; valid up to `kept`, room (stale values) after it.
    times: Vec<Time>,
    /// Payloads; as `times`.
    payloads: Vec<P>,
    kept: usize,
    /// The refused points' start times (a selection that keeps them), as `times`.
    refused_times: Vec<Time>,
    refused: usize,
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
            refused_times: Vec::new(),
            refused: 0,
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

    /// The start times of the points the last selection that keeps them refused, in order.
    #[cfg(test)]
    pub(crate) fn refused_times(&self) -> &[Time] {
        &self.refused_times[..self.refused]
    }

    /// Appends the kept points, released on arrival, to `batch` ([`Batch::extend_points`];
    /// payloads that own something are moved, [`Batch::append_points`], and the selection is
    /// left empty). Every event after the batch's last CTI must be
    /// at or after it (checked in debug builds): select with that CTI as `low`.
    pub(crate) fn append_to(&mut self, batch: &mut Batch<P>)
    where
        P: Clone,
    {
        self.hand_over(batch, Batch::append_points, Batch::extend_points);
    }

    /// Holds the kept points in `kept` and the refused ones' times (a selection that keeps
    /// them) in `refused` ([`ReleaseBuffer::push_point_run`]; payloads that own something are
    /// moved, [`ReleaseBuffer::append_point_run`], and the selection is left empty).
    pub(crate) fn hold_in(&mut self, kept: &mut ReleaseBuffer<P>, refused: &mut Refused)
    where
        P: Clone,
    {
        self.hand_over(
            kept,
            ReleaseBuffer::append_point_run,
            ReleaseBuffer::push_point_run,
        );
        if self.refused > 0 {
            refused.extend(&self.refused_times[..self.refused]);
            self.refused = 0;
        }
    }

    /// Gives the kept points to `to`: `moved` takes payloads that own something (the
    /// selection holds exactly the kept ones, see `select`; they are moved out, not copied and
    /// then dropped, and the selection is left empty), `copied` the others.
    #[inline]
    fn hand_over<T>(
        &mut self,
        to: &mut T,
        moved: impl FnOnce(&mut T, &[Time], &mut Vec<P>),
        copied: impl FnOnce(&mut T, &[Time], &[P]),
    ) {
        if std::mem::needs_drop::<P>() {
            debug_assert_eq!(self.payloads.len(), self.kept);
            moved(to, &self.times[..self.kept], &mut self.payloads);
            self.times.clear();
            self.kept = 0;
        } else {
            copied(to, self.times(), self.payloads());
        }
    }

    /// [`PointSelection::select`] for points given as columns: the predicate judges the
    /// payload column in place, 64 at a time.
    pub(crate) fn select_columns<const REFUSED: bool>(
        &mut self,
        times: &[Time],
        payloads: &[P],
        keep: &dyn Predicate<P>,
        low: Time,
    ) -> (usize, Time)
    where
        P: Clone,
    {
        let low = low.max(Time::MIN_FINITE);
        let read = times
            .iter()
            .take_while(|&&t| t >= low && t < Time::MAX_FINITE)
            .count();
        let top = times[..read].iter().copied().fold(Time::NEG_INF, Time::max);
        self.times.clear();
        self.payloads.clear();
        self.refused_times.clear();
        for (ts, ps) in times[..read].chunks(64).zip(payloads[..read].chunks(64)) {
            let mask = keep.mask(ps);
            for (i, (&t, p)) in ts.iter().zip(ps).enumerate() {
                if (mask >> i) & 1 == 1 {
                    self.times.push(t);
                    self.payloads.push(p.clone());
                } else if REFUSED {
                    self.refused_times.push(t);
                }
            }
        }
        self.kept = self.times.len();
        self.refused = self.refused_times.len();
        (read, top)
    }

    /// [`Self::select`] of payloads that own something: each is built once, and moved in or
    /// dropped; no stale payloads are kept alive as room.
    #[inline]
    fn select_owning<const REFUSED: bool, R>(
        &mut self,
        records: &[R],
        time: impl Fn(&R) -> Time,
        payload: impl Fn(&R) -> P,
        keep: &dyn Predicate<P>,
        admit: impl Fn(Time) -> bool,
    ) -> (usize, Time) {
        let (mut read, mut top) = (records.len(), Time::NEG_INF);
        // A payload that owns something is built once, and moved in or dropped; no stale
        // payloads are kept alive as room.
        self.times.clear();
        self.payloads.clear();
        self.refused_times.clear();
        for (k, r) in records.iter().enumerate() {
            let t = time(r);
            if !admit(t) {
                read = k;
                break;
            }
            top = top.max(t);
            let p = payload(r);
            if keep.keep(&p) {
                self.times.push(t);
                self.payloads.push(p);
            } else if REFUSED {
                self.refused_times.push(t);
            }
        }
        self.kept = self.times.len();
        self.refused = self.refused_times.len();
        (read, top)
    }

    /// Reads `records` (start time and payload through `time` and `payload`) in order, and
    /// stops before the first whose time is below `low` or infinite (`Time::MAX_FINITE` counts
    /// as infinite here); of the records before it, keeps those whose payload `keep` keeps,
    /// replacing the previous selection; with `REFUSED`, it keeps the others apart. Returns how
    /// many records it read (all of them, or up to the refused one) and the highest time it
    /// read (`-inf` if none).
    pub(crate) fn select<const REFUSED: bool, R>(
        &mut self,
        records: &[R],
        time: impl Fn(&R) -> Time,
        payload: impl Fn(&R) -> P,
        keep: &dyn Predicate<P>,
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
            return self.select_owning::<REFUSED, R>(records, time, payload, keep, admit);
        }
        self.refused = 0;
        let Some(first) = records.first() else {
            self.kept = 0;
            return (0, top);
        };
        let n = records.len();
        if self.times.len() < n {
            self.times.resize(n, Time::NEG_INF);
            self.payloads.resize(n, payload(first));
        }
        if REFUSED && self.refused_times.len() < n {
            self.refused_times.resize(n, Time::NEG_INF);
        }
        let times = &mut self.times[..n];
        let payloads = &mut self.payloads[..n];
        let refused_times = if REFUSED {
            &mut self.refused_times[..n]
        } else {
            &mut [][..]
        };
        // The refused records' write position (`r <= k`); only with `REFUSED`.
        let mut r = 0;
        // The highest time, one running maximum per lane (a chain of maxima through one
        // variable compiled to branches, mispredicted at each late record).
        let mut tops = [Time::NEG_INF; 4];
        // The records a few kilobytes on are prefetched: this loop does too much work per
        // record for the processor to keep enough of the input's cache misses in flight by
        // itself (see `punctual_core::hint`).
        let ahead = punctual_core::hint::prefetch_distance::<R>();
        // Blocks of up to 64 records: each is read and written from the write position `w`
        // (`w <= k`, so it fits), then judged by the predicate in one call (its mask), then
        // its kept records are moved down within it, without a branch per record.
        let (mut w, mut k) = (0, 0);
        while k < n {
            let block = &records[k..n.min(k + 64)];
            let (tw, pw) = (&mut times[w..], &mut payloads[w..]);
            let mut j = 0;
            // Four at a time while all four are admitted (the usual case): one branch for
            // the four.
            while j + 4 <= block.len() {
                let four = &block[j..j + 4];
                let ts = [
                    time(&four[0]),
                    time(&four[1]),
                    time(&four[2]),
                    time(&four[3]),
                ];
                if !(admit(ts[0]) & admit(ts[1]) & admit(ts[2]) & admit(ts[3])) {
                    break;
                }
                punctual_core::hint::prefetch_run(records, k + j + ahead, 4);
                for (lane, t) in tops.iter_mut().zip(ts) {
                    *lane = (*lane).max(t);
                }
                let (t4, p4) = (&mut tw[j..j + 4], &mut pw[j..j + 4]);
                for i in 0..4 {
                    t4[i] = ts[i];
                    p4[i] = payload(&four[i]);
                }
                j += 4;
            }
            let mut stopped = false;
            while j < block.len() {
                let t = time(&block[j]);
                if !admit(t) {
                    stopped = true;
                    break;
                }
                top = top.max(t);
                tw[j] = t;
                pw[j] = payload(&block[j]);
                j += 1;
            }
            let mask = keep.mask(&pw[..j]);
            let (c, f) = compact::<REFUSED, P>(&mut tw[..j], &mut pw[..j], refused_times, r, mask);
            r += f;
            w += c;
            k += j;
            if stopped {
                read = k;
                break;
            }
        }
        top = tops.into_iter().fold(top, Time::max);
        self.kept = w;
        self.refused = r;
        (read, top)
    }
}

/// Moves the kept records of a block (its `mask`, bit `i` for record `i`) down within it, in
/// order, without a branch per record; with `REFUSED`, writes each refused record's time into
/// `refused_times` from `r` on. Returns how many were kept and refused.
#[inline(always)]
fn compact<const REFUSED: bool, P: Clone>(
    tw: &mut [Time],
    pw: &mut [P],
    refused_times: &mut [Time],
    r: usize,
    mask: u64,
) -> (usize, usize) {
    let j = tw.len().min(pw.len());
    let mut c = 0;
    let mut f = 0;
    if REFUSED {
        // Each refused record's time written at the refused ones' position in their own
        // column (`r + j <= n`: no more refused than read).
        let rt = &mut refused_times[r..r + j];
        for i in 0..j {
            let (t, bit) = (tw[i], ((mask >> i) & 1) as usize);
            rt[f.min(i)] = t;
            let d = c.min(i);
            tw[d] = t;
            pw[d] = pw[i].clone();
            c += bit;
            f += 1 - bit;
        }
    } else {
        for i in 0..j {
            // `c <= i`: saying so drops the bounds checks.
            let d = c.min(i);
            tw[d] = tw[i];
            pw[d] = pw[i].clone();
            c += ((mask >> i) & 1) as usize;
        }
    }
    (c, f)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A selection against the obvious filter, across several blocks of 64, stopping at an
    /// inadmissible record, for payloads with and without drop glue, with room left over from
    /// a longer selection before it; and the columns' selection alike. The second round keeps
    /// the refused points apart: they are exactly the rest of the prefix, in order.
    #[test]
    fn a_selection_is_the_filtered_prefix() {
        selections::<false>();
        selections::<true>();
    }

    fn selections<const REFUSED: bool>() {
        let t = Time::from_ticks;
        let mut copies = PointSelection::new();
        let mut strings = PointSelection::new();
        let mut columns = PointSelection::new();
        let keep = |v: &i64| v % 3 != 0;
        let keep_strings = |v: &String| v.parse::<i64>().is_ok_and(|v| v % 3 != 0);
        for (len, stop, low) in [
            (300, None, 0),
            (200, Some(150), 0),
            (70, Some(3), 5),
            (0, None, 0),
        ] {
            let records: Vec<(i64, i64)> = (0..len)
                .map(|i| {
                    let at = if Some(i) == stop { -1 } else { 10 + i * 7 % 13 };
                    (at, i)
                })
                .collect();
            let admitted = records.iter().take_while(|r| r.0 >= low).count();
            let want: Vec<(Time, i64)> = records[..admitted]
                .iter()
                .filter(|r| keep(&r.1))
                .map(|r| (t(r.0), r.1))
                .collect();
            let rest: Vec<(Time, i64)> = if REFUSED {
                records[..admitted]
                    .iter()
                    .filter(|r| !keep(&r.1))
                    .map(|r| (t(r.0), r.1))
                    .collect()
            } else {
                Vec::new()
            };
            let top = records[..admitted].iter().map(|r| t(r.0)).max();
            let got = copies.select::<REFUSED, _>(&records, |r| t(r.0), |r| r.1, &keep, t(low));
            assert_eq!(got, (admitted, top.unwrap_or(Time::NEG_INF)), "len {len}");
            let pairs: Vec<(Time, i64)> = copies
                .times()
                .iter()
                .copied()
                .zip(copies.payloads().iter().copied())
                .collect();
            assert_eq!(pairs, want, "len {len}");
            let rest_times: Vec<Time> = rest.iter().map(|r| r.0).collect();
            assert_eq!(copies.refused_times(), &rest_times[..], "len {len}");
            let got = strings.select::<REFUSED, _>(
                &records,
                |r| t(r.0),
                |r| r.1.to_string(),
                &keep_strings,
                t(low),
            );
            assert_eq!(got, (admitted, top.unwrap_or(Time::NEG_INF)), "len {len}");
            assert_eq!(strings.len(), want.len());
            assert_eq!(strings.refused_times(), copies.refused_times(), "len {len}");
            let mut moved = Batch::new();
            strings.append_to(&mut moved);
            let texts: Vec<String> = want.iter().map(|p| p.1.to_string()).collect();
            assert_eq!(moved.payloads(), &texts[..], "len {len}");
            assert_eq!(moved.sync(), copies.times(), "len {len}");
            assert_eq!(strings.len(), 0);
            let (times, payloads): (Vec<Time>, Vec<i64>) =
                records.iter().map(|r| (t(r.0), r.1)).unzip();
            let got = columns.select_columns::<REFUSED>(&times, &payloads, &keep, t(low));
            assert_eq!(got.0, admitted);
            assert_eq!(columns.payloads(), copies.payloads());
            assert_eq!(columns.refused_times(), copies.refused_times());
            let (mut held, mut apart) = (ReleaseBuffer::new(), Refused::default());
            columns.hold_in(&mut held, &mut apart);
            assert_eq!((held.len(), apart.len()), (want.len(), rest.len()));
            let mut batch = Batch::new();
            copies.append_to(&mut batch);
            assert_eq!(batch.len(), want.len());
            assert!(batch
                .other()
                .iter()
                .zip(batch.sync())
                .all(|(o, s)| *o == s.next_tick()));
        }
    }
}
