//! The side list of a release buffer: results pushed out of sync order. At a release, the ones
//! pushed since the last release are sorted into a run (descending, so that the earliest are
//! popped from the back), and every run gives up its results below the CTI; a run is sorted
//! once (by keys that carry positions, see [`sort_entries`]), and a release looks at the back
//! of each run only. When runs grow many, they are merged.

use std::collections::VecDeque;

use crate::time::Time;

/// Sorted runs kept before they are merged into one.
const MAX_RUNS: usize = 64;

/// A result pushed out of sync order.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
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
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
#[serde(bound(
    serialize = "P: serde::Serialize",
    deserialize = "P: serde::Deserialize<'de>"
))]
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
    #[serde(skip)]
    pool: Vec<Vec<SideEntry<P>>>,
    /// Room for the sort keys of [`sort_entries`].
    #[serde(skip)]
    keys: SortKeys,
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
            keys: SortKeys::default(),
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
        if !self.new.is_empty() && self.new_min < t {
            let mut run = self.pool.pop().unwrap_or_default();
            std::mem::swap(&mut run, &mut self.new);
            self.new_min = Time::INF;
            sort_entries(&mut run, Order::Descending, Pushed::InOrder, &mut self.keys);
            self.runs.push_back(run);
            if self.runs.len() > MAX_RUNS {
                // Many small runs (frequent CTIs, few late results each): merge them into one,
                // so that a release never looks at more than MAX_RUNS runs.
                let mut all = self.pool.pop().unwrap_or_default();
                for mut r in self.runs.drain(..) {
                    all.append(&mut r);
                    self.pool.push(r);
                }
                sort_entries(&mut all, Order::Descending, Pushed::Mixed, &mut self.keys);
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
            sort_entries(ready, Order::Ascending, Pushed::Mixed, &mut self.keys);
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

/// Which way [`sort_entries`] sorts.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Order {
    Ascending,
    Descending,
}

/// Whether the entries [`sort_entries`] sorts are in push order (`seq` rising with the
/// position), as the results pushed since the last release are.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Pushed {
    InOrder,
    Mixed,
}

/// Room for the keys of [`sort_entries`], reused from sort to sort.
#[derive(Clone, Debug, Default)]
struct SortKeys {
    /// A sync time's offset from the least and a position, in one word.
    packed: Vec<u64>,
    /// `(sync, seq, position)`, where they do not fit in one word.
    wide: Vec<(Time, u64, u32)>,
    /// The position of the entry each place takes.
    from: Vec<u32>,
}

/// Sorts `entries` by `(sync, seq)`. An entry is four words and a payload (a row is six more):
/// rather than move entries at every step of a sort, keys that carry each entry's position are
/// sorted, and then each entry is moved to its place once, following the cycles of the
/// permutation the keys give. Entries in push order, whose sync times span less than what a
/// word holds beside a position (the usual case: late results within a few seconds), are
/// sorted by one word each, `(sync - least) << bits | position` (the position stands in for
/// `seq`: they rise together); others by `(sync, seq, position)`.
fn sort_entries<P>(
    entries: &mut [SideEntry<P>],
    order: Order,
    pushed: Pushed,
    keys: &mut SortKeys,
) {
    let n = entries.len();
    if n < 2 {
        return;
    }
    if u32::try_from(n).is_err() {
        match order {
            Order::Ascending => entries.sort_unstable_by_key(|e| (e.sync, e.seq)),
            Order::Descending => {
                entries.sort_unstable_by_key(|e| std::cmp::Reverse((e.sync, e.seq)))
            }
        }
        return;
    }
    let from = &mut keys.from;
    from.clear();
    let bits = usize::BITS - (n - 1).leading_zeros();
    let (least, most) = entries
        .iter()
        .fold((Time::INF, Time::NEG_INF), |(lo, hi), e| {
            (lo.min(e.sync), hi.max(e.sync))
        });
    let span = most.ticks().abs_diff(least.ticks());
    if pushed == Pushed::InOrder && span.leading_zeros() >= bits {
        let packed = &mut keys.packed;
        packed.clear();
        packed.extend(
            entries
                .iter()
                .zip(0u64..)
                .map(|(e, i)| (e.sync.ticks().abs_diff(least.ticks()) << bits) | i),
        );
        packed.sort_unstable();
        let mask = (1u64 << bits) - 1;
        // Below 2^32: the positions are below n.
        let position = |k: &u64| (k & mask) as u32;
        match order {
            Order::Ascending => from.extend(packed.iter().map(position)),
            Order::Descending => from.extend(packed.iter().rev().map(position)),
        }
    } else {
        let wide = &mut keys.wide;
        wide.clear();
        wide.extend(entries.iter().zip(0u32..).map(|(e, i)| (e.sync, e.seq, i)));
        wide.sort_unstable();
        match order {
            Order::Ascending => from.extend(wide.iter().map(|k| k.2)),
            Order::Descending => from.extend(wide.iter().rev().map(|k| k.2)),
        }
    }
    // Each cycle of the permutation once, a place marked done by pointing it at itself.
    for start in 0..n {
        let mut here = start;
        loop {
            let source = from[here] as usize;
            from[here] = here as u32;
            if source == start || source == here {
                break;
            }
            entries.swap(here, source);
            here = source;
        }
    }
}
