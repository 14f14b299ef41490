//! [`HoppingWindow`]: hopping and tumbling windows with an aggregate, optionally per group.
//!
//! Windows are `[a + nH, a + nH + S)` for every integer n (size S, hop H, alignment a; tumbling
//! is H = S). An event belongs to every window its lifetime overlaps; empty windows emit
//! nothing. A window closes when the input CTI reaches its end.
//!
//! CTI rule:
//! - [`WindowOutput::PointAtEnd`] (default): each result is a point at the window's end; output
//!   CTI = input CTI (a result at exactly the CTI waits for the next one, by the release rule).
//! - [`WindowOutput::PointAtLastTick`]: each result is a point at the window's last tick (its
//!   end minus one tick); output CTI = input CTI (that result is released by the CTI that
//!   closes its window, which is past it).
//! - [`WindowOutput::Window`]: each result has the window's lifetime; output CTI = min(input CTI,
//!   start of the earliest window that can still change), so the CTI is pushed back to the start
//!   of the earliest open window.
//!
//! State: the aggregate states of windows not yet closed that have members, per group, and the
//! long-lived members. A member that overlaps a few windows is added to each at once; one that
//! overlaps many (a long interval, a start edge) is kept once and counted into each window as
//! it closes, so that the work is bounded by the windows that close, never by the lifetime. A
//! start edge counts in every window from its start until its end edge arrives; windows that
//! closed before then counted it.
//!
//! Limit: an event may count in at most [`WindowSpec::max_windows_per_event`] windows
//! ([`DEFAULT_MAX_WINDOWS_PER_EVENT`]). An interval over more is dropped when it arrives, a
//! start edge when a CTI would close more: counted in the operator's `dropped` and reported
//! as an [`OperatorDrop`] with the reason, never an allocation that takes the process down.

use std::collections::BTreeMap;
use std::hash::Hash;

use crate::batch::Batch;
use crate::event::EventKind;
use crate::time::Time;

use super::fingerprint::Fingerprints;
use super::groups::Groups;

mod late;
mod open;
mod operator;
mod saved;
mod spec;
use super::{Aggregate, DropLog, ReleaseBuffer};
use open::OpenAt;
pub use spec::{WindowOutput, WindowSpec};

/// The most windows one event may count in, by default: a 1 s tumbling window takes an
/// interval of up to about 11.5 days; larger ones are dropped with the reason.
pub const DEFAULT_MAX_WINDOWS_PER_EVENT: u64 = 1_000_000;

/// A member over more windows than this is kept once and counted as windows close.
const EAGER_WINDOWS: i64 = 64;

/// The group map of stored window `n`, a pooled (or new) one if it has none yet.
fn stored_window<'a, K: Hash + Eq + Clone + 'static, S>(
    windows: &'a mut BTreeMap<i64, Groups<K, S>>,
    pool: &mut Vec<Groups<K, S>>,
    n: i64,
) -> &'a mut Groups<K, S> {
    windows
        .entry(n)
        .or_insert_with(|| pool.pop().unwrap_or_default())
}

/// The cached window of [`HoppingWindow`].
struct Current<K, S> {
    n: i64,
    start: Time,
    end: Time,
    groups: Groups<K, S>,
}

/// Maps kept in the pool for reuse.
const POOL: usize = 4;

/// A member kept once: see [`HoppingWindow`]'s `spans`.
#[derive(serde::Serialize, serde::Deserialize)]
struct Span<K, P> {
    start: Time,
    /// `+inf` while a start edge is open.
    end: Time,
    key: K,
    payload: P,
    /// Windows it has counted in so far.
    windows: u64,
}

/// Hopping windows with an aggregate per group; see the module doc. `make(key, result)` builds
/// each result's payload.
pub struct HoppingWindow<P, K, A: Aggregate<P>, O, KF, MK> {
    spec: WindowSpec,
    key: KF,
    agg: A,
    make: MK,
    windows: BTreeMap<i64, Groups<K, A::State>>,
    /// The window the last single-window member went to, kept out of `windows` so that a
    /// run of members in one tumbling window costs one group lookup each.
    current: Option<Current<K, A::State>>,
    /// The window before it, if it was current just before: where the stragglers of an
    /// out-of-order input mostly go, found without a search.
    previous: Option<Current<K, A::State>>,
    /// Emptied group maps, reused for new windows.
    pool: Vec<Groups<K, A::State>>,
    /// Members over many windows (long intervals, closed start edges), counted into each
    /// window as it closes.
    spans: Vec<Span<K, P>>,
    /// Open start edges (end `+inf`) by start, counted into each window as it closes; an end
    /// edge finds its start edge among those of its start ([`OpenAt::take`]: a few searched
    /// from both ends, many by their payload's fingerprint).
    open: BTreeMap<Time, OpenAt<Span<K, P>>>,
    /// Fingerprints of the payloads of many open edges at one start.
    prints: Fingerprints,
    /// How many start edges `open` holds.
    open_count: usize,
    /// Reused at every CTI: the stored windows to close, the kept members' window ranges.
    scratch_windows: Vec<i64>,
    scratch_ranges: Vec<(i64, i64)>,
    /// Events dropped (over the window limit), and the drops not yet taken.
    drops: DropLog,
    cti: Time,
    /// The first window not yet closed (derived from `cti`, cached).
    first_open: i64,
    held: ReleaseBuffer<O>,
    /// With allowed lateness: the results given and not yet final (see [`late`]).
    late: Option<late::Late<K, O>>,
}

impl<P, K, A: Aggregate<P>, O, KF, MK> std::fmt::Debug for HoppingWindow<P, K, A, O, KF, MK> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HoppingWindow")
            .field("spec", &self.spec)
            .field("open_windows", &self.windows.len())
            .field("spans", &self.spans.len())
            .field("open_edges", &self.open_count)
            .finish()
    }
}

impl<P, K, A, O, KF, MK> HoppingWindow<P, K, A, O, KF, MK>
where
    P: Clone + PartialEq + serde::Serialize,
    K: Hash + Eq + Clone + 'static,
    A: Aggregate<P>,
    KF: Fn(&P) -> K,
    MK: Fn(&K, A::Output) -> O,
    O: Clone + PartialEq,
{
    /// Windows per `spec`, grouped by `key`, aggregated by `agg`, results built by `make`.
    pub fn new(spec: WindowSpec, key: KF, agg: A, make: MK) -> Self {
        HoppingWindow {
            spec,
            key,
            agg,
            make,
            windows: BTreeMap::new(),
            current: None,
            previous: None,
            pool: Vec::new(),
            spans: Vec::new(),
            open: BTreeMap::new(),
            prints: Fingerprints::default(),
            open_count: 0,
            scratch_windows: Vec::new(),
            scratch_ranges: Vec::new(),
            drops: DropLog::default(),
            cti: Time::NEG_INF,
            first_open: i64::MIN,
            held: ReleaseBuffer::new(),
            late: (spec.lateness > 0)
                .then(|| late::Late::new(crate::time::TimeSpan::from_ticks(spec.lateness))),
        }
    }

    /// Adds a member with lifetime `[start, end)` to every window not yet closed that it overlaps.
    #[inline(always)]
    fn add(&mut self, start: Time, end: Time, payload: &P) {
        if self.spec.size == self.spec.hop {
            // Tumbling: a member inside the current (or the previous) window's lifetime
            // overlaps no other window.
            for c in [self.current.as_mut(), self.previous.as_mut()]
                .into_iter()
                .flatten()
            {
                if c.start <= start && end <= c.end {
                    let state = c.groups.entry((self.key)(payload), || self.agg.init());
                    self.agg.add(state, payload);
                    return;
                }
            }
        }
        self.add_slow(start, end, payload);
    }

    #[cold]
    #[inline(never)]
    fn add_slow(&mut self, start: Time, end: Time, payload: &P) {
        let first = self.spec.first_ending_after(start).max(self.first_open);
        let last = self.spec.last_starting_before(end);
        if first > last {
            return;
        }
        let windows = i128::from(last) - i128::from(first) + 1;
        if windows > i128::from(self.spec.max_windows) {
            self.drop_event(
                EventKind::decode(start, end),
                format!(
                    "it overlaps {windows} windows, over the limit of {} windows per event",
                    self.spec.max_windows
                ),
            );
            return;
        }
        let key = (self.key)(payload);
        if windows > i128::from(EAGER_WINDOWS) {
            self.spans.push(Span {
                start,
                end,
                key,
                payload: payload.clone(),
                windows: 0,
            });
            return;
        }
        if first == last {
            if self.current.as_ref().is_some_and(|c| first < c.n) {
                // A late member of an earlier window (input out of order): the current window
                // stays, so that the members after it do not move it back and forth.
                let groups = match self.previous.as_mut() {
                    Some(p) if p.n == first => &mut p.groups,
                    _ => stored_window(&mut self.windows, &mut self.pool, first),
                };
                let state = groups.entry(key, || self.agg.init());
                self.agg.add(state, payload);
                return;
            }
            self.switch_current(first);
            if let Some(c) = self.current.as_mut() {
                let state = c.groups.entry(key, || self.agg.init());
                self.agg.add(state, payload);
            }
            return;
        }
        self.flush_current();
        let mut n = first;
        loop {
            let groups = stored_window(&mut self.windows, &mut self.pool, n);
            let state = groups.entry(key.clone(), || self.agg.init());
            self.agg.add(state, payload);
            if n == last {
                break;
            }
            n += 1;
        }
    }

    /// Makes window `n` the current one (the one before it, if current, becomes the previous).
    fn switch_current(&mut self, n: i64) {
        if self.current.as_ref().is_some_and(|c| c.n == n) {
            return;
        }
        match self.current.take() {
            Some(c) if c.n + 1 == n && self.previous.as_ref().is_none_or(|p| p.n < c.n) => {
                if let Some(p) = self.previous.replace(c) {
                    self.windows.insert(p.n, p.groups);
                }
            }
            other => {
                self.current = other;
                self.flush_current();
            }
        }
        if self.previous.as_ref().is_some_and(|p| p.n == n) {
            // Back to the window before: a stored window, like any other.
            if let Some(p) = self.previous.take() {
                self.windows.insert(p.n, p.groups);
            }
        }
        let groups = self
            .windows
            .remove(&n)
            .or_else(|| self.pool.pop())
            .unwrap_or_default();
        self.current = Some(Current {
            n,
            start: self.spec.start(n),
            end: self.spec.end(n),
            groups,
        });
    }

    /// Puts the current and the previous window back with the others.
    fn flush_current(&mut self) {
        for c in [self.current.take(), self.previous.take()]
            .into_iter()
            .flatten()
        {
            self.windows.insert(c.n, c.groups);
        }
    }

    /// Counts and records an event the operator does not take.
    fn drop_event(&mut self, kind: EventKind, reason: String) {
        self.drops.record(kind, reason);
    }

    fn emit(&mut self, n: i64, mut groups: Groups<K, A::State>) {
        if self.late.is_some() {
            let results: Vec<(K, O)> = groups
                .drain()
                .map(|(key, state)| {
                    let value = (self.make)(&key, self.agg.result(&state));
                    (key, value)
                })
                .collect();
            self.close_late(n, results);
            if self.pool.len() < POOL {
                self.pool.push(groups);
            }
            return;
        }
        let (ws, we) = (self.spec.start(n), self.spec.end(n));
        for (key, state) in groups.drain() {
            let payload = (self.make)(&key, self.agg.result(&state));
            match self.spec.output {
                WindowOutput::PointAtEnd => self.held.push(we, we.next_tick(), payload),
                WindowOutput::Window => self.held.push(ws, we, payload),
                WindowOutput::PointAtLastTick => {
                    let last = we - crate::time::TimeSpan::from_ticks(1);
                    self.held.push(last, we, payload);
                }
            }
        }
        if self.pool.len() < POOL {
            self.pool.push(groups);
        }
    }

    /// One input event of any kind.
    fn one(&mut self, sync: Time, other: Time, payload: &P) {
        match EventKind::decode(sync, other) {
            EventKind::StartEdge(s) => {
                let prints = &mut self.prints;
                self.open.entry(s).or_default().push(
                    Span {
                        start: s,
                        end: Time::INF,
                        key: (self.key)(payload),
                        payload: payload.clone(),
                        windows: 0,
                    },
                    |span| prints.of(&span.payload),
                );
                self.open_count += 1;
            }
            EventKind::EndEdge { start, end } => {
                // Its start edge (if not dropped over the limit) stops counting at `end`.
                let Some(list) = self.open.get_mut(&start) else {
                    return;
                };
                let prints = &mut self.prints;
                let Some(mut span) = list.take(|| prints.of(payload), |s| s.payload == *payload)
                else {
                    return;
                };
                if list.is_empty() {
                    self.open.remove(&start);
                }
                self.open_count -= 1;
                span.end = end;
                if self.spec.last_starting_before(end) >= self.first_open {
                    self.spans.push(span);
                }
            }
            kind => {
                let (start, end) = kind.encode();
                self.add(start, end, payload);
            }
        }
    }

    /// Closes window `n`: its stored members and the kept members overlapping it.
    fn close_window(&mut self, n: i64) {
        let mut groups = self
            .windows
            .remove(&n)
            .or_else(|| self.pool.pop())
            .unwrap_or_default();
        let (ws, we) = (self.spec.start(n), self.spec.end(n));
        for s in self
            .spans
            .iter()
            .chain(self.open.range(..we).flat_map(|(_, l)| l.iter()))
        {
            if s.start < we && ws < s.end {
                let state = groups.entry(s.key.clone(), || self.agg.init());
                self.agg.add(state, &s.payload);
            }
        }
        self.emit(n, groups);
    }

    /// The input CTI advanced to `t`: close every window ending at or before it.
    fn close(&mut self, t: Time, out: &mut Batch<O>) {
        self.flush_current();
        let first_open = self.spec.first_ending_after(self.cti);
        let last = self.last_to_close(t);
        self.give_and_revise(t, last);
        self.cti = t;
        self.first_open = self.spec.first_ending_after(t);
        if first_open <= last {
            let merged = self.count_kept(first_open, last);
            self.close_windows(first_open, last, &merged);
            self.scratch_ranges = merged;
            // Members whose last window has closed are done.
            let spec = self.spec;
            let open = self.first_open;
            self.spans
                .retain(|s| spec.last_starting_before(s.end) >= open);
        }
        if t == Time::INF {
            // Every window that will ever close has: what is left (start edges never closed,
            // past the last window) can count in nothing more.
            self.spans.clear();
            self.open.clear();
            self.open_count = 0;
        }
        if self.late.is_some() {
            self.emit_late(t, out);
            return;
        }
        let out_cti = match self.spec.output {
            WindowOutput::PointAtEnd | WindowOutput::PointAtLastTick => t,
            WindowOutput::Window if t == Time::INF => t,
            WindowOutput::Window => t.min(self.spec.start(self.spec.first_ending_after(t))),
        };
        self.held.release(out_cti, out);
    }

    /// The last window a CTI of `t` closes.
    fn last_to_close(&self, t: Time) -> i64 {
        let last = self.spec.first_ending_after(t).saturating_sub(1);
        if t != Time::INF {
            return last;
        }
        // Start edges never closed would fill windows forever: windows past the last one
        // with other members, or past the last finite CTI, are left out.
        let stored = self.windows.keys().next_back().copied();
        let spans = self
            .spans
            .iter()
            .map(|s| self.spec.last_starting_before(s.end))
            .max();
        let before = self.spec.first_ending_after(self.cti).saturating_sub(1);
        before
            .max(stored.unwrap_or(before))
            .max(spans.unwrap_or(before))
    }

    /// Counts the kept members (long spans, open start edges) in the windows
    /// `first_open..=last` they overlap; one that would go over the limit is dropped here.
    /// Returns those windows as ranges, sorted, overlapping and adjacent ones merged.
    fn count_kept(&mut self, first_open: i64, last: i64) -> Vec<(i64, i64)> {
        let mut ranges = std::mem::take(&mut self.scratch_ranges);
        ranges.clear();
        let mut over: Vec<(EventKind, u64)> = Vec::new();
        let spec = self.spec;
        let mut visit = |s: &mut Span<K, P>| -> bool {
            let lo = spec.first_ending_after(s.start).max(first_open);
            let hi = spec.last_starting_before(s.end).min(last);
            if lo <= hi {
                let n = (i128::from(hi) - i128::from(lo) + 1) as u64;
                if s.windows.saturating_add(n) > spec.max_windows {
                    over.push((
                        EventKind::decode(s.start, s.end),
                        s.windows.saturating_add(n),
                    ));
                    return false;
                }
                s.windows += n;
                ranges.push((lo, hi));
            }
            true
        };
        self.spans.retain_mut(&mut visit);
        let before = self.open_count;
        let mut left = 0;
        for list in self.open.values_mut() {
            list.retain_mut(&mut visit);
            left += list.len();
        }
        if left < before {
            self.open.retain(|_, l| !l.is_empty());
            self.open_count = left;
        }
        for (kind, windows) in over {
            let reason = format!(
                "a CTI would count it in {windows} windows, over the limit of {} windows per event",
                self.spec.max_windows
            );
            self.drop_event(kind, reason);
        }
        // Overlapping or adjacent ranges merged, in place.
        ranges.sort_unstable();
        let mut kept = 0usize;
        for i in 0..ranges.len() {
            let (lo, hi) = ranges[i];
            match kept.checked_sub(1).map(|k| &mut ranges[k]) {
                Some(m) if lo <= m.1.saturating_add(1) => m.1 = m.1.max(hi),
                _ => {
                    ranges[kept] = (lo, hi);
                    kept += 1;
                }
            }
        }
        ranges.truncate(kept);
        ranges
    }

    /// Closes, in order and each once, the stored windows in `first_open..=last` and the
    /// windows of the kept members' `merged` ranges.
    fn close_windows(&mut self, first_open: i64, last: i64, merged: &[(i64, i64)]) {
        let mut stored = std::mem::take(&mut self.scratch_windows);
        stored.clear();
        stored.extend(self.windows.range(first_open..=last).map(|(n, _)| *n));
        let (mut s, mut r) = (0, 0);
        let mut next_in_range: Option<i64> = merged.first().map(|m| m.0);
        loop {
            let from_stored = stored.get(s).copied();
            let n = match (from_stored, next_in_range) {
                (None, None) => break,
                (Some(a), Some(b)) => a.min(b),
                (Some(a), None) => a,
                (None, Some(b)) => b,
            };
            if from_stored == Some(n) {
                s += 1;
            }
            if next_in_range == Some(n) {
                next_in_range = if n < merged[r].1 {
                    Some(n + 1)
                } else {
                    r += 1;
                    merged.get(r).map(|m| m.0)
                };
            }
            self.close_window(n);
        }
        self.scratch_windows = stored;
    }
}

#[cfg(test)]
mod tests;
