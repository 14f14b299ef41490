//! Allowed lateness of [`HoppingWindow`]: results given before they are final, then revised.
//!
//! With lateness `L`, the input CTI `c` trails a *watermark* `c + L`. A window `[ws, we)` is
//! given once the watermark is past its end (`c + L > we`), and stays open to the events the
//! CTI still allows (`c < we`). Its result is at `a`, its *anchor*: `we`, or `we - 1 tick`
//! with [`WindowOutput::PointAtLastTick`](super::WindowOutput) (every time of a chain is then
//! one tick earlier than below, so that the chain ends at `a + L`). Each result is a chain of
//! edges per group:
//!
//! - the first value as `S(a)` (on time);
//! - at each later CTI advance, if the events that came since changed it, `E(t, w)` for the
//!   value in force and `S(w)` for the new one, where `w` is the watermark those events came
//!   under (the CTI before the advance, plus `L`): a revision;
//! - when the CTI reaches `we` (no event of the window can come), `E(t, we + L)` for the last
//!   value: final. A window the CTI closes before it was given gives `S(a)` and `E(a, we + L)`
//!   at once (or from `w`, if it was due before with no members and late ones came under `w`).
//!
//! Every start is below `we + L` (a revision comes from events that came while `c < we`) and
//! above the one before (the watermark only grows, and a window is given under a watermark
//! past `we`), so no edge is empty; every time is at or past the CTI, so CTI promises hold.
//! The output is unordered (a start edge at `a` comes before the CTI reaches `a`).

use std::collections::BTreeMap;
use std::hash::Hash;

use crate::batch::Batch;
use crate::event::EventKind;
use crate::ops::fxhash::FxHashMap;
use crate::ops::Aggregate;
use crate::time::{Time, TimeSpan};

use super::HoppingWindow;

/// Each group's value in force in a window given: since when, and the result.
type Chain<K, O> = FxHashMap<K, (Time, O)>;

/// The lateness state of a [`HoppingWindow`]; see the module doc.
#[derive(serde::Serialize, serde::Deserialize)]
#[serde(bound(
    serialize = "K: serde::Serialize + Hash + Eq, O: serde::Serialize",
    deserialize = "K: serde::Deserialize<'de> + Hash + Eq, O: serde::Deserialize<'de>"
))]
pub(super) struct Late<K, O> {
    lateness: TimeSpan,
    /// The windows given and not yet final, with each group's value in force.
    chains: BTreeMap<i64, Chain<K, O>>,
    /// The groups that took an event under the watermark (late) since the last CTI: only
    /// theirs of the windows given may have changed.
    touched: FxHashMap<K, ()>,
    /// The watermark the events since the last CTI came under (set at each CTI).
    came_under: Time,
    /// Events taken on time and late (under the watermark, within the lateness).
    counts: crate::ops::LateCounts,
    /// Results made at this CTI, emitted in this order before it.
    #[serde(skip)]
    out: Vec<(EventKind, O)>,
}

impl<K: Hash + Eq, O> Late<K, O> {
    pub(super) fn new(lateness: TimeSpan) -> Self {
        Late {
            lateness,
            chains: BTreeMap::new(),
            touched: FxHashMap::default(),
            came_under: Time::NEG_INF,
            counts: crate::ops::LateCounts::default(),
            out: Vec::new(),
        }
    }

    /// Events taken on time, and late: under the watermark when they came (a window they
    /// fall in may have been given already), within the lateness (the CTI let them in).
    pub(super) fn counts(&self) -> crate::ops::LateCounts {
        self.counts
    }

    /// Groups whose value is given and may still change.
    pub(super) fn held(&self) -> usize {
        self.chains.values().map(FxHashMap::len).sum()
    }

    /// The values given and in force (each from its start), window by window.
    pub(super) fn in_force(&self) -> impl Iterator<Item = (Time, &O)> + '_ {
        self.chains
            .values()
            .flat_map(|links| links.values().map(|(start, value)| (*start, value)))
    }

    /// Notes the input events of a batch segment (their sync times, ends and payloads)
    /// before they are added, the input CTI being `cti`: those under the watermark (`cti`
    /// plus the lateness) are late and may change their group's value in a window given (a
    /// window given ends at or before the watermark).
    #[inline]
    pub(super) fn note<P>(
        &mut self,
        cti: Time,
        (sync, other, payloads): (&[Time], &[Time], &[P]),
        key: impl Fn(&P) -> K,
    ) {
        let watermark = cti + self.lateness;
        let (mut events, mut late) = (0u64, 0u64);
        for ((&s, &o), p) in sync.iter().zip(other).zip(payloads) {
            // An end edge (`other < sync`) changes windows, but is not an event.
            let event = u64::from(o > s);
            events += event;
            if s < watermark {
                self.touched.insert(key(p), ());
                late += event;
            }
        }
        self.counts.late += late;
        self.counts.on_time += events - late;
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
    /// How far window results are before their window's end: one tick with
    /// [`PointAtLastTick`](super::WindowOutput::PointAtLastTick), else none. A chain's times
    /// are all that much earlier than the watermarks and ends they come from.
    fn before_end(&self) -> TimeSpan {
        match self.spec.output {
            super::WindowOutput::PointAtLastTick => TimeSpan::from_ticks(1),
            _ => TimeSpan::from_ticks(0),
        }
    }

    /// Before the input CTI advances to `t` (and closes windows up to `last`): revises the
    /// given windows that stay open, and gives those whose watermark `t + L` is now past
    /// their anchor. Call with the current window flushed.
    pub(super) fn give_and_revise(&mut self, t: Time, last: i64) {
        let Some(late) = self.late.as_mut() else {
            return;
        };
        let lateness = late.lateness;
        let came_under = self.cti + lateness;
        late.came_under = came_under;
        let mut touched = std::mem::take(&mut late.touched);
        if t == Time::INF {
            // Every window closes: nothing is given before its end.
            return;
        }
        self.give_due(last, (t + lateness, came_under), &touched);
        // Kept, emptied, for the events to come.
        touched.clear();
        if let Some(late) = self.late.as_mut() {
            late.touched = touched;
        }
    }

    /// Gives the windows after `last` whose end the `watermark` passed, and revises the
    /// given windows whose groups in `touched` took late events (which came under
    /// `came_under`).
    fn give_due(
        &mut self,
        last: i64,
        (watermark, came_under): (Time, Time),
        touched: &FxHashMap<K, ()>,
    ) {
        let before = self.before_end();
        let from = last.saturating_add(1).max(self.first_open);
        let mut due = Vec::new();
        self.windows_with_members(
            from,
            |n| {
                let we = self.spec.end(n);
                (we < watermark).then_some(we)
            },
            &mut due,
        );
        for (n, we) in due {
            let given = self
                .late
                .as_ref()
                .is_some_and(|l| l.chains.contains_key(&n));
            if touched.is_empty() && (given || we < came_under) {
                // Nothing late came: it is as it was.
                continue;
            }
            if given {
                // Only the groups that took late events may have changed.
                let now = self.peek(n, Some(touched));
                if let Some(late) = self.late.as_mut() {
                    late.revise(n, now, came_under - before, (None, Some(touched)));
                }
                continue;
            }
            let now = self.peek(n, None);
            let Some(late) = self.late.as_mut() else {
                continue;
            };
            // Due at this CTI (on time), or before it with nothing then (late members made
            // its first value).
            let start = if we < came_under { came_under } else { we } - before;
            let mut links = Chain::with_capacity_and_hasher(now.len(), Default::default());
            for (key, value) in now {
                late.out.push((EventKind::StartEdge(start), value.clone()));
                links.insert(key, (start, value));
            }
            late.chains.insert(n, links);
        }
    }

    /// The windows from `from` on with members (stored, or overlapped by a kept member), in
    /// order, while `take(n)` gives a value; pushes `(n, value)` to `into`.
    fn windows_with_members(
        &self,
        from: i64,
        take: impl Fn(i64) -> Option<Time>,
        into: &mut Vec<(i64, Time)>,
    ) {
        let mut candidates: Vec<i64> = self.windows.range(from..).map(|(n, _)| *n).collect();
        for s in self
            .spans
            .iter()
            .chain(self.open.values().flat_map(|l| l.iter()))
        {
            let lo = self.spec.first_ending_after(s.start).max(from);
            let hi = self.spec.last_starting_before(s.end);
            let mut n = lo;
            while n <= hi {
                match take(n) {
                    Some(_) => candidates.push(n),
                    None => break,
                }
                n += 1;
            }
        }
        candidates.sort_unstable();
        candidates.dedup();
        for n in candidates {
            match take(n) {
                Some(v) => into.push((n, v)),
                None => break,
            }
        }
    }

    /// Window `n`'s results if it closed now, by group (of the groups in `only`, if given),
    /// without taking its state.
    fn peek(&self, n: i64, only: Option<&FxHashMap<K, ()>>) -> Vec<(K, O)> {
        let (ws, we) = (self.spec.start(n), self.spec.end(n));
        let mut states: Vec<(K, A::State)> = Vec::new();
        match (self.windows.get(&n), only) {
            (Some(groups), None) => {
                states.reserve(groups.len());
                states.extend(groups.iter().map(|(k, s)| (k.clone(), s.clone())));
            }
            (Some(groups), Some(only)) => {
                for k in only.keys() {
                    if let Some(s) = groups.get(k) {
                        states.push((k.clone(), s.clone()));
                    }
                }
            }
            (None, _) => {}
        }
        // The kept members (long spans, open start edges) overlapping it, by group: the
        // groups are found by key only if there are any.
        let mut at: Option<FxHashMap<K, usize>> = None;
        for s in self
            .spans
            .iter()
            .chain(self.open.range(..we).flat_map(|(_, l)| l.iter()))
        {
            if s.start < we && ws < s.end && only.is_none_or(|o| o.contains_key(&s.key)) {
                let at = at.get_or_insert_with(|| {
                    states
                        .iter()
                        .enumerate()
                        .map(|(i, (k, _))| (k.clone(), i))
                        .collect()
                });
                let i = *at.entry(s.key.clone()).or_insert_with(|| {
                    states.push((s.key.clone(), self.agg.init()));
                    states.len() - 1
                });
                self.agg.add(&mut states[i].1, &s.payload);
            }
        }
        states
            .into_iter()
            .map(|(k, s)| {
                let value = (self.make)(&k, self.agg.result(&s));
                (k, value)
            })
            .collect()
    }

    /// Window `n` closes with `results` (by group): its chain ends at its end plus the
    /// lateness, revised first if the events since the last CTI changed it.
    pub(super) fn close_late(&mut self, n: i64, results: Vec<(K, O)>) {
        let we = self.spec.end(n);
        let before = self.before_end();
        let Some(late) = self.late.as_mut() else {
            return;
        };
        let came_under = late.came_under;
        let final_end = we + late.lateness - before;
        if late.chains.contains_key(&n) {
            late.revise(n, results, came_under - before, (Some(final_end), None));
        } else {
            // Never given: its first value is final (at its anchor, or, if it was due before
            // this CTI with nothing, where its late members came).
            let start = if we < came_under { came_under } else { we } - before;
            for (_, value) in results {
                late.out.push((EventKind::StartEdge(start), value.clone()));
                late.out.push((
                    EventKind::EndEdge {
                        start,
                        end: final_end,
                    },
                    value,
                ));
            }
        }
    }

    /// Emits this CTI's results, then `CTI(t)`.
    pub(super) fn emit_late(&mut self, t: Time, out: &mut Batch<O>) {
        if let Some(late) = self.late.as_mut() {
            for (kind, value) in late.out.drain(..) {
                out.push(kind, value);
            }
            if t == Time::INF {
                late.chains.clear();
            }
        }
        out.push_cti(t);
    }
}

impl<K: Hash + Eq + Clone, O: Clone + PartialEq> Late<K, O> {
    /// Window `n`'s values are `now` (by group; of the groups in `only`, if given, the others
    /// as they were): each changed one is revised at `at`, a group gone ends there; with
    /// `close`, every value ends there and the window is final. Each group's items come
    /// together.
    fn revise(
        &mut self,
        n: i64,
        now: Vec<(K, O)>,
        at: Time,
        (close, only): (Option<Time>, Option<&FxHashMap<K, ()>>),
    ) {
        let Some(mut links) = self.chains.remove(&n) else {
            return;
        };
        let mut present: FxHashMap<K, ()> = FxHashMap::with_capacity_and_hasher(
            if close.is_none() { now.len() } else { 0 },
            Default::default(),
        );
        for (key, value) in now {
            let start = match links.remove(&key) {
                Some((start, before)) if before == value => start,
                Some((start, before)) => {
                    self.out
                        .push((EventKind::EndEdge { start, end: at }, before));
                    self.out.push((EventKind::StartEdge(at), value.clone()));
                    at
                }
                None => {
                    self.out.push((EventKind::StartEdge(at), value.clone()));
                    at
                }
            };
            match close {
                Some(end) => self.out.push((EventKind::EndEdge { start, end }, value)),
                None => {
                    present.insert(key.clone(), ());
                    links.insert(key, (start, value));
                }
            }
        }
        // A group gone (an end edge took its last member out): its value ends here. Without
        // `only`, every group not in `now` is gone; with it, those of `only` not in `now`.
        let gone: Vec<K> = match (close, only) {
            (Some(_), _) | (None, None) => links
                .keys()
                .filter(|k| !present.contains_key(*k))
                .cloned()
                .collect(),
            (None, Some(only)) => only
                .keys()
                .filter(|k| !present.contains_key(*k) && links.contains_key(*k))
                .cloned()
                .collect(),
        };
        for key in gone {
            if let Some((start, value)) = links.remove(&key) {
                self.out
                    .push((EventKind::EndEdge { start, end: at }, value));
            }
        }
        if close.is_none() {
            self.chains.insert(n, links);
        }
    }
}
