//! The side list of a release buffer: results pushed out of sync order. At a release, the ones
//! pushed since the last release are sorted into a run (descending, so that the earliest are
//! popped from the back), and every run gives up its results below the CTI; a run is sorted
//! once, and a release looks at the back of each run only. When runs grow many, they are merged.

use std::collections::VecDeque;

use crate::time::Time;

/// Sorted runs kept before they are merged into one.
const MAX_RUNS: usize = 64;

/// A result pushed out of sync order.
#[derive(Clone, Debug)]
pub(super) struct SideEntry<P> {
    pub(super) sync: Time,
    /// Push order among the side results (the tie-break between equal sync times).
    pub(super) seq: u64,
    /// The position in the main run the next in-order result had when this one was pushed:
    /// main results at a lower position were pushed before it (the tie-break against the main
    /// run).
    pub(super) main_pos: u64,
    pub(super) other: Time,
    pub(super) payload: P,
}

/// Out-of-order results; see the module doc.
#[derive(Clone, Debug)]
pub(super) struct Side<P> {
    /// Pushed since the last release that took any, unsorted.
    new: Vec<SideEntry<P>>,
    /// The least sync time in `new` (`+inf` when it is empty).
    new_min: Time,
    /// Earlier ones: runs sorted by `(sync, seq)` descending.
    runs: VecDeque<Vec<SideEntry<P>>>,
    len: usize,
    seq: u64,
    /// Emptied runs, reused.
    pool: Vec<Vec<SideEntry<P>>>,
}

impl<P> Side<P> {
    pub(super) fn new() -> Self {
        Side {
            new: Vec::new(),
            new_min: Time::INF,
            runs: VecDeque::new(),
            len: 0,
            seq: 0,
            pool: Vec::new(),
        }
    }

    pub(super) fn len(&self) -> usize {
        self.len
    }

    /// The least sync time held (`+inf` when empty).
    pub(super) fn earliest(&self) -> Time {
        let runs = self.runs.iter().filter_map(|r| r.last().map(|e| e.sync));
        runs.fold(self.new_min, Time::min)
    }

    pub(super) fn push(&mut self, sync: Time, other: Time, payload: P, main_pos: u64) {
        self.seq += 1;
        self.len += 1;
        self.new_min = self.new_min.min(sync);
        self.new.push(SideEntry {
            sync,
            seq: self.seq,
            main_pos,
            other,
            payload,
        });
    }

    /// Every result held, in no particular order.
    pub(super) fn entries(&self) -> impl Iterator<Item = &SideEntry<P>> {
        self.new
            .iter()
            .chain(self.runs.iter().flat_map(|r| r.iter()))
    }

    /// Every result held, in no particular order.
    pub(super) fn entries_mut(&mut self) -> impl Iterator<Item = &mut SideEntry<P>> {
        self.new
            .iter_mut()
            .chain(self.runs.iter_mut().flat_map(|r| r.iter_mut()))
    }

    /// Moves every result with sync `< t` to `ready` (emptied first): sorted by `(sync, seq)`
    /// if `sorted`, else in no particular order.
    pub(super) fn take_ready(&mut self, t: Time, sorted: bool, ready: &mut Vec<SideEntry<P>>) {
        ready.clear();
        if self.len == 0 {
            return;
        }
        let descending = |a: &SideEntry<P>, b: &SideEntry<P>| (b.sync, b.seq).cmp(&(a.sync, a.seq));
        if !self.new.is_empty() && self.new_min < t {
            let mut run = self.pool.pop().unwrap_or_default();
            std::mem::swap(&mut run, &mut self.new);
            self.new_min = Time::INF;
            run.sort_unstable_by(descending);
            self.runs.push_back(run);
            if self.runs.len() > MAX_RUNS {
                // Many small runs (frequent CTIs, few late results each): merge them into one,
                // so that a release never looks at more than MAX_RUNS runs.
                let mut all = self.pool.pop().unwrap_or_default();
                for mut r in self.runs.drain(..) {
                    all.append(&mut r);
                    self.pool.push(r);
                }
                all.sort_unstable_by(descending);
                self.runs.push_back(all);
            }
        }
        let mut emptied = false;
        let mut from_runs = 0;
        for run in self.runs.iter_mut() {
            let before = ready.len();
            while run.last().is_some_and(|e| e.sync < t) {
                if let Some(e) = run.pop() {
                    ready.push(e);
                }
            }
            if ready.len() > before {
                emptied |= run.is_empty();
                from_runs += 1;
            }
        }
        if emptied {
            let pool = &mut self.pool;
            self.runs.retain_mut(|r| {
                if r.is_empty() {
                    pool.push(std::mem::take(r));
                    false
                } else {
                    true
                }
            });
            pool.truncate(MAX_RUNS);
        }
        self.len -= ready.len();
        if sorted && from_runs > 1 {
            ready.sort_unstable_by_key(|e| (e.sync, e.seq));
        }
    }

    /// Removes the first result matching `pred`.
    pub(super) fn remove_first(
        &mut self,
        mut pred: impl FnMut(Time, Time, &P) -> bool,
    ) -> Option<SideEntry<P>> {
        let e = match self
            .new
            .iter()
            .position(|e| pred(e.sync, e.other, &e.payload))
        {
            Some(pos) => {
                let e = self.new.remove(pos);
                self.new_min = self.new.iter().map(|e| e.sync).min().unwrap_or(Time::INF);
                e
            }
            None => {
                let (r, pos) = self.runs.iter().enumerate().find_map(|(r, run)| {
                    run.iter()
                        .position(|e| pred(e.sync, e.other, &e.payload))
                        .map(|pos| (r, pos))
                })?;
                self.runs[r].remove(pos)
            }
        };
        self.len -= 1;
        Some(e)
    }

    /// Takes every result out, in no particular order.
    pub(super) fn drain(&mut self) -> impl Iterator<Item = SideEntry<P>> + '_ {
        self.len = 0;
        self.new_min = Time::INF;
        self.new.drain(..).chain(self.runs.drain(..).flatten())
    }
}
