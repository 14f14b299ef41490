//! [`SnapshotWindow`] and [`CountWindow`]: windows defined by the events themselves.
//!
//! **Snapshot windows**: a window between every two consecutive event endpoints (starts and
//! ends); its members are the events whose lifetime covers it. Results keep the snapshot's
//! lifetime. An endpoint is known once the input CTI passes it, so the snapshot `[a, b)` closes
//! when the CTI passes `b`. CTI rule: output CTI = min(input CTI, start of the open snapshot)
//! while any event is active, else the input CTI.
//!
//! **Count windows** (StreamInsight's `CountByStartTimeWindow`): a window over every `n`
//! consecutive distinct start times, moving by one start time; the result is a point at the
//! window's end (one tick after its last start time). A window is complete once the input CTI
//! passes its last start time. CTI rule: output CTI = input CTI. End edges do not count (their
//! start edges did).
//!
//! Both aggregate per group: `key` picks the group and `make(key, result)` builds each result.

use std::collections::VecDeque;
use std::hash::Hash;

use super::fxhash::FxHashMap;
use crate::batch::Batch;
use crate::event::{EventKind, EventShape};
use crate::time::Time;

use super::{Aggregate, Held, HeldWhat, ReleaseBuffer, UnaryOperator};

/// Snapshot windows with an aggregate per group; see the module doc.
pub struct SnapshotWindow<P, K, A, O, KF, MK> {
    key: KF,
    agg: A,
    make: MK,
    /// Events that may still be members: start, end (`None`: open edge), payload.
    active: Vec<(Time, Option<Time>, P)>,
    /// Start of the open snapshot.
    open_from: Time,
    held: ReleaseBuffer<O>,
    _key: std::marker::PhantomData<fn() -> K>,
}

impl<P, K, A, O, KF, MK> std::fmt::Debug for SnapshotWindow<P, K, A, O, KF, MK> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SnapshotWindow")
            .field("active", &self.active.len())
            .field("open_from", &self.open_from)
            .finish()
    }
}

impl<P, K, A, O, KF, MK> SnapshotWindow<P, K, A, O, KF, MK>
where
    P: Clone + PartialEq,
    K: Hash + Eq + Clone,
    A: Aggregate<P>,
    KF: Fn(&P) -> K,
    MK: Fn(&K, A::Output) -> O,
    O: Clone,
{
    /// Snapshot windows grouped by `key`, aggregated by `agg`, results built by `make`.
    pub fn new(key: KF, agg: A, make: MK) -> Self {
        SnapshotWindow {
            key,
            agg,
            make,
            active: Vec::new(),
            open_from: Time::NEG_INF,
            held: ReleaseBuffer::new(),
            _key: std::marker::PhantomData,
        }
    }

    fn close(&mut self, t: Time, out: &mut Batch<O>) {
        let from = self.open_from;
        let mut bounds: Vec<Time> = self
            .active
            .iter()
            .flat_map(|(s, e, _)| [Some(*s), *e])
            .flatten()
            .filter(|&p| p > from && p < t)
            .collect();
        bounds.sort_unstable();
        bounds.dedup();
        let mut a = from;
        for b in bounds {
            if a != Time::NEG_INF {
                let mut groups: FxHashMap<K, A::State> = FxHashMap::default();
                for (s, e, p) in &self.active {
                    if *s <= a && e.is_none_or(|e| e >= b) {
                        let st = groups
                            .entry((self.key)(p))
                            .or_insert_with(|| self.agg.init());
                        self.agg.add(st, p);
                    }
                }
                for (k, st) in groups {
                    let o = (self.make)(&k, self.agg.result(&st));
                    self.held.push(a, b, o);
                }
            }
            a = b;
        }
        self.open_from = a;
        self.active.retain(|(_, e, _)| e.is_none_or(|e| e > a));
        if t == Time::INF {
            // Start edges never closed: no snapshot after the last bound ever ends.
            self.active.clear();
        }
        let out_cti = if self.active.is_empty() { t } else { t.min(a) };
        self.held.release(out_cti, out);
    }
}

impl<P, K, A, O, KF, MK> UnaryOperator<P, O> for SnapshotWindow<P, K, A, O, KF, MK>
where
    P: super::Payload,
    K: Hash + Eq + Clone + Send + 'static,
    A: Aggregate<P>,
    O: super::Payload,
    KF: Fn(&P) -> K + Send + 'static,
    MK: Fn(&K, A::Output) -> O + Send + 'static,
{
    const NAME: &'static str = "snapshot window";

    fn save_state(&self, out: &mut Vec<u8>) -> Result<(), super::StateError> {
        let state = (&self.active, self.open_from, &self.held);
        super::state::write(Self::NAME, &state, out)
    }

    fn restore_state(&mut self, bytes: &[u8]) -> Result<(), super::StateError> {
        (self.active, self.open_from, self.held) = super::state::read(Self::NAME, bytes)?;
        Ok(())
    }

    /// All on one worker: a snapshot window's boundaries are every event's start and end,
    /// whatever its group, so one group's windows depend on the others' events.
    fn placement(&self) -> super::Placement {
        super::Placement::One
    }

    fn output_shape(&self, _input: EventShape) -> EventShape {
        EventShape::Interval
    }

    fn on_batch(&mut self, input: &Batch<P>, out: &mut Batch<O>) {
        for (range, cti) in input.segments() {
            for i in range {
                let p = &input.payloads()[i];
                match input.kind(i) {
                    EventKind::EndEdge { start, end } => {
                        if let Some(a) = self
                            .active
                            .iter_mut()
                            .find(|a| a.0 == start && a.1.is_none() && a.2 == *p)
                        {
                            a.1 = Some(end);
                        }
                    }
                    kind => {
                        let (s, other) = kind.encode();
                        self.active
                            .push((s, (other != Time::INF).then_some(other), p.clone()));
                    }
                }
            }
            if let Some(t) = cti {
                self.close(t, out);
            }
        }
    }

    fn state_size(&self) -> usize {
        self.active.len() + self.held.len()
    }

    fn held(&self, f: &mut dyn FnMut(Held<'_>)) {
        for (start, end, payload) in &self.active {
            f(Held {
                what: HeldWhat::Event,
                start: *start,
                end: end.unwrap_or(Time::INF),
                payload,
            });
        }
        Held::results(&self.held, f);
    }
}

/// Count windows with an aggregate per group; see the module doc.
pub struct CountWindow<P, K, A, O, KF, MK> {
    n: usize,
    key: KF,
    agg: A,
    make: MK,
    /// Per group: distinct start times with their members, oldest first; and how many of them
    /// are final (the CTI passed them).
    groups: FxHashMap<K, VecDeque<(Time, Vec<P>)>>,
    held: ReleaseBuffer<O>,
}

impl<P, K, A, O, KF, MK> std::fmt::Debug for CountWindow<P, K, A, O, KF, MK> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CountWindow")
            .field("n", &self.n)
            .field("groups", &self.groups.len())
            .finish()
    }
}

impl<P, K, A, O, KF, MK> CountWindow<P, K, A, O, KF, MK>
where
    P: Clone,
    K: Hash + Eq + Clone,
    A: Aggregate<P>,
    KF: Fn(&P) -> K,
    MK: Fn(&K, A::Output) -> O,
    O: Clone,
{
    /// Windows of `n` (at least 1) distinct start times, grouped by `key`, aggregated by `agg`.
    pub fn new(n: usize, key: KF, agg: A, make: MK) -> Self {
        CountWindow {
            n: n.max(1),
            key,
            agg,
            make,
            groups: FxHashMap::default(),
            held: ReleaseBuffer::new(),
        }
    }

    fn close(&mut self, t: Time, out: &mut Batch<O>) {
        for (key, starts) in &mut self.groups {
            // Emit every complete window whose last start is final (below the CTI), then drop
            // the oldest start: windows slide by one start time.
            while starts.len() >= self.n && starts[self.n - 1].0 < t {
                let mut st = self.agg.init();
                for (_, members) in starts.iter().take(self.n) {
                    for m in members {
                        self.agg.add(&mut st, m);
                    }
                }
                let end = starts[self.n - 1].0.next_tick();
                self.held
                    .push(end, end.next_tick(), (self.make)(key, self.agg.result(&st)));
                starts.pop_front();
            }
        }
        if t == Time::INF {
            // No start can follow: the incomplete windows never fill.
            self.groups.clear();
        }
        self.groups.retain(|_, s| !s.is_empty());
        self.held.release(t, out);
    }
}

impl<P, K, A, O, KF, MK> UnaryOperator<P, O> for CountWindow<P, K, A, O, KF, MK>
where
    P: Clone + Send + 'static,
    K: Hash + Eq + Clone + Send + 'static,
    A: Aggregate<P>,
    O: Clone + Send + 'static,
    KF: Fn(&P) -> K + Send + 'static,
    MK: Fn(&K, A::Output) -> O + Send + 'static,
{
    const NAME: &'static str = "count window";

    fn placement(&self) -> super::Placement {
        super::Placement::ByKey
    }

    fn key_hash(&self, payload: &P) -> u64 {
        super::key_hash(&(self.key)(payload))
    }

    fn output_shape(&self, _input: EventShape) -> EventShape {
        EventShape::Interval
    }

    fn on_batch(&mut self, input: &Batch<P>, out: &mut Batch<O>) {
        for (range, cti) in input.segments() {
            for i in range {
                if let EventKind::EndEdge { .. } = input.kind(i) {
                    continue;
                }
                let p = &input.payloads()[i];
                let s = input.sync()[i];
                let starts = self.groups.entry((self.key)(p)).or_default();
                match starts.back_mut() {
                    Some((last, members)) if *last == s => members.push(p.clone()),
                    _ => starts.push_back((s, vec![p.clone()])),
                }
            }
            if let Some(t) = cti {
                self.close(t, out);
            }
        }
    }

    fn state_size(&self) -> usize {
        self.groups.values().map(VecDeque::len).sum::<usize>() + self.held.len()
    }

    fn held(&self, f: &mut dyn FnMut(Held<'_>)) {
        for (key, starts) in &self.groups {
            for (start, _) in starts {
                f(Held {
                    what: HeldWhat::Group,
                    start: *start,
                    end: Time::INF,
                    payload: key,
                });
            }
        }
        Held::results(&self.held, f);
    }
}
