//! The one probe of the join: a point of one side against the events of the other side with
//! its key whose lifetimes cover it. Everything that joins a point (on arrival, from the
//! waiting run, in a sweep) goes through here.

use std::hash::Hash;

use crate::batch::{push_point_ends, Batch};
use crate::time::Time;

use super::side::Side;

/// Calls `emit` with `combine(payload, e)` for every event `e` of `other` on the list that
/// starts at `head` (see [`Side::head`]) whose lifetime covers `s` and for which `combine`
/// gives a result.
#[inline]
pub(super) fn probe<P, Q, K, O>(
    other: &Side<Q, K>,
    head: usize,
    s: Time,
    payload: &P,
    combine: &impl Fn(&P, &Q) -> Option<O>,
    mut emit: impl FnMut(O),
) where
    Q: PartialEq,
    K: Hash + Eq + Clone + 'static,
{
    // The key's entries in start order: the ones after `s` cannot cover it.
    for (_, e) in other.chain(head).take_while(|(_, e)| e.start <= s) {
        if e.end.is_none_or(|end| end > s) {
            if let Some(result) = combine(payload, &e.payload) {
                emit(result);
            }
        }
    }
}

/// Probes points given as columns (start times and payloads) and appends every result, as a
/// point at its start, to `out`, in input order. The key lookups of a block of points are done
/// first, in a loop of their own, then the entries are read: each loop is short, so the
/// processor has many independent loads in flight (the other side's table and entries are
/// seldom in L1). A point with exactly one result (the usual case against a reference stream)
/// adds only its payload at once: the time columns are copied in runs afterwards.
pub(super) fn probe_points<P, Q, K, O>(
    other: &Side<Q, K>,
    key: &impl Fn(&P) -> K,
    combine: &impl Fn(&P, &Q) -> Option<O>,
    (times, payloads): (&[Time], &[P]),
    heads: &mut Vec<usize>,
    out: &mut Batch<O>,
) where
    Q: PartialEq,
    K: Hash + Eq + Clone + 'static,
{
    const BLOCK: usize = 256;
    for (times, payloads) in times.chunks(BLOCK).zip(payloads.chunks(BLOCK)) {
        heads.clear();
        heads.extend(payloads.iter().map(|p| other.head(&key(p))));
        let (osync, oother, opayload) = out.columns_mut();
        let mut copied = 0;
        for (k, ((&s, payload), &head)) in times.iter().zip(payloads).zip(heads.iter()).enumerate()
        {
            let n = opayload.len();
            probe(other, head, s, payload, combine, |r| opayload.push(r));
            let results = opayload.len() - n;
            if results != 1 {
                osync.extend_from_slice(&times[copied..k]);
                osync.extend(std::iter::repeat_n(s, results));
                copied = k + 1;
            }
        }
        osync.extend_from_slice(&times[copied..]);
        let from = oother.len();
        push_point_ends(&osync[from..], oother);
    }
}
