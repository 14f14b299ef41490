//! Session windows with allowed lateness, `SessionWindow(unit, timeout, max,
//! AllowedLateness(unit, n))`, over an input in arrival order: the sessions of
//! [`super::session`], given early and revised as the tumbling and hopping windows' results
//! are (docs/semantics.md, section 4a).
//!
//! With lateness `L` the input CTI `c` trails a watermark `c + L`. Each partition keeps its
//! events not yet final, by time, and at each CTI advance makes its sessions from them anew (a
//! late event may join a session, move its close, or join two). A session is given once the
//! watermark is past its close (`c + L > close + 1 tick`: the close is the session's last
//! instant), and final once the CTI is (`c > close`): no event still to come can join it.
//! Each group of a session (by the `GROUP BY` keys) has a chain of edges: its first value
//! from the close, a revision from the watermark the changing events came under (less one
//! tick, as the language's windows hold their end), the last value ending at the final close
//! plus `L`. A given session a late event joined to an earlier one ends its values where the
//! events came, and the earlier one's chain goes on with the joined values.

use std::collections::BTreeMap;

use punctual_core::ops::{Aggregate, FxHashMap, Held, HeldWhat, Placement, UnaryOperator};
use std::collections::HashSet;

/// A set hashed as the maps are.
type FxHashSet<T> = HashSet<T, std::hash::BuildHasherDefault<punctual_core::ops::FxHasher>>;
use punctual_core::{Batch, EventKind, EventShape};

use super::session::{check_after, keys_order};
use super::*;

/// What a group's result is made into, from its keys' values and its aggregates.
type Make<Out> = Box<dyn Fn(&[Value], Row) -> Out + Send>;

/// One given session not final yet: its first event (its identity: a session only grows)
/// and each group's value in force, with where it started.
#[derive(serde::Serialize, serde::Deserialize)]
struct Chain<Out> {
    first: Time,
    links: Vec<(Vec<Value>, Time, Out)>,
}

/// One partition: its events not yet final, by time, and its given sessions, in order.
#[derive(serde::Serialize, serde::Deserialize)]
struct Part<Out> {
    events: BTreeMap<Time, Vec<Row>>,
    chains: Vec<Chain<Out>>,
    /// A CTI past this gives or closes one of its sessions (nothing happens to it below,
    /// unless events come).
    wake: Time,
}

impl<Out> Default for Part<Out> {
    fn default() -> Self {
        Part {
            events: BTreeMap::new(),
            chains: Vec::new(),
            wake: Time::NEG_INF,
        }
    }
}

/// A session made from a partition's events: its first and last event, its close.
#[derive(Clone, Copy, Debug)]
struct Made {
    first: Time,
    last: Time,
    close: Time,
}

/// The sessions with allowed lateness; see the module doc.
pub(super) struct LateSessions<Out> {
    timeout: TimeSpan,
    max: TimeSpan,
    lateness: TimeSpan,
    partition: Vec<RowExpr>,
    keys: Vec<RowExpr>,
    aggs: SqlAggs,
    make: Make<Out>,
    parts: FxHashMap<Vec<Value>, Part<Out>>,
    /// The partitions that took events since the last CTI.
    touched: FxHashSet<Vec<Value>>,
    cti: Time,
    counts: punctual_core::ops::LateCounts,
    held: usize,
}

/// One tick.
const TICK: TimeSpan = TimeSpan::from_ticks(1);

impl<Out: Payload> LateSessions<Out> {
    /// Sessions of `timeout` and `max` with `lateness`, per `partition`, grouped by `keys`.
    pub(super) fn new(
        (timeout, max, lateness): (TimeSpan, TimeSpan, TimeSpan),
        partition: Vec<RowExpr>,
        keys: Vec<RowExpr>,
        aggs: SqlAggs,
        make: Make<Out>,
    ) -> Self {
        LateSessions {
            timeout,
            max,
            lateness,
            partition,
            keys,
            aggs,
            make,
            parts: FxHashMap::default(),
            touched: FxHashSet::default(),
            cti: Time::NEG_INF,
            counts: punctual_core::ops::LateCounts::default(),
            held: 0,
        }
    }

    /// The sessions of a partition's `events`, in order (Stream Analytics' rule: an event at
    /// or before the close joins, and moves the close to `timeout` after it, at most to the
    /// check).
    fn sessions(&self, events: &BTreeMap<Time, Vec<Row>>) -> Vec<Made> {
        let mut made: Vec<Made> = Vec::new();
        for &t in events.keys() {
            match made.last_mut() {
                Some(s) if t <= s.close => {
                    s.last = t;
                    s.close = (t + self.timeout).min(check_after(s.first, self.max));
                }
                _ => made.push(Made {
                    first: t,
                    last: t,
                    close: (t + self.timeout).min(check_after(t, self.max)),
                }),
            }
        }
        made
    }

    /// The values of a session's groups (its events between `first` and `last`), in the
    /// order of their keys.
    fn values(&self, events: &BTreeMap<Time, Vec<Row>>, s: Made) -> Vec<(Vec<Value>, Out)> {
        let mut groups: FxHashMap<Vec<Value>, <SqlAggs as Aggregate<Row>>::State> =
            FxHashMap::default();
        for row in events.range(s.first..=s.last).flat_map(|(_, rows)| rows) {
            let key: Vec<Value> = self.keys.iter().map(|k| k.eval(row)).collect();
            let aggs = &self.aggs;
            aggs.add(groups.entry(key).or_insert_with(|| aggs.init()), row);
        }
        let mut groups: Vec<_> = groups.into_iter().collect();
        groups.sort_by(|(a, _), (b, _)| keys_order(a, b));
        groups
            .into_iter()
            .map(|(k, state)| {
                let v = (self.make)(&k, self.aggs.result(&state));
                (k, v)
            })
            .collect()
    }

    /// The input CTI advances from `self.cti` to `t`: every partition's sessions given,
    /// revised or made final, then `CTI(t)`.
    fn advance(&mut self, t: Time, out: &mut Batch<Out>) {
        let came_under = self.cti + self.lateness;
        let watermark = t + self.lateness;
        let touched = std::mem::take(&mut self.touched);
        let mut parts = std::mem::take(&mut self.parts);
        let mut held = 0;
        for (key, part) in &mut parts {
            let was_touched = touched.contains(key);
            if was_touched || t > part.wake {
                self.partition_advance(part, (t, came_under, watermark), was_touched, out);
            }
            held += part.events.values().map(Vec::len).sum::<usize>()
                + part.chains.iter().map(|c| c.links.len()).sum::<usize>();
        }
        parts.retain(|_, p| !p.events.is_empty() || !p.chains.is_empty());
        self.parts = parts;
        self.held = held;
        self.cti = t;
        out.push_cti(t);
    }

    /// One partition at a CTI advance to `t` (the events since the last came under
    /// `came_under`; the watermark is now `watermark`).
    fn partition_advance(
        &self,
        part: &mut Part<Out>,
        (t, came_under, watermark): (Time, Time, Time),
        touched: bool,
        out: &mut Batch<Out>,
    ) {
        let revised_at = came_under - TICK;
        let mut chains = std::mem::take(&mut part.chains).into_iter().peekable();
        let mut kept = Vec::new();
        let mut done_until = None;
        // A given session closes once the CTI passes its close; another is given once the
        // watermark passes its close plus a tick.
        let mut wake = Time::INF;
        for s in self.sessions(&part.events) {
            // The given sessions this one holds (a session only grows: each given one's first
            // event is in exactly one session now).
            let mut mine = Vec::new();
            while let Some(c) = chains.next_if(|c| c.first <= s.last) {
                mine.push(c);
            }
            let is_final = s.close < t;
            let due = s.close + TICK < watermark;
            if mine.is_empty() && !is_final && !due {
                wake = wake.min(s.close + TICK - self.lateness);
                continue;
            }
            if !is_final {
                wake = wake.min(s.close);
            }
            if !mine.is_empty() && !touched && !is_final {
                // Nothing came since: it is as it was.
                kept.extend(mine);
                continue;
            }
            let now = self.values(&part.events, s);
            let mut links = match mine.len() {
                0 => {
                    // On time at its close, or (due before this CTI with nothing then) where
                    // its late events came.
                    let start = if s.close + TICK < came_under {
                        revised_at
                    } else {
                        s.close
                    };
                    now.into_iter()
                        .map(|(k, v)| {
                            out.push(EventKind::StartEdge(start), v.clone());
                            (k, start, v)
                        })
                        .collect()
                }
                _ => {
                    let mut first = mine.remove(0);
                    // The others were joined to it: their values end where that was known.
                    for other in mine {
                        for (_, start, v) in other.links {
                            out.push(
                                EventKind::EndEdge {
                                    start,
                                    end: revised_at,
                                },
                                v,
                            );
                        }
                    }
                    revise(&mut first.links, now, revised_at, out);
                    first.links
                }
            };
            if is_final {
                let end = s.close + self.lateness;
                for (_, start, v) in links.drain(..) {
                    out.push(EventKind::EndEdge { start, end }, v);
                }
                done_until = Some(s.last);
            } else {
                kept.push(Chain {
                    first: s.first,
                    links,
                });
            }
        }
        // Sessions are final in order: their events go.
        if let Some(last) = done_until {
            part.events = part.events.split_off(&last.next_tick());
        }
        part.chains = kept;
        part.wake = wake;
    }
}

/// A chain's `links` take the values `now` (by group): each changed one ends at `at` and its
/// new value starts there; a new group starts there; a group gone ends there.
fn revise<Out: Payload>(
    links: &mut Vec<(Vec<Value>, Time, Out)>,
    now: Vec<(Vec<Value>, Out)>,
    at: Time,
    out: &mut Batch<Out>,
) {
    let mut old: FxHashMap<Vec<Value>, (Time, Out)> = links
        .drain(..)
        .map(|(k, start, v)| (k, (start, v)))
        .collect();
    for (k, v) in now {
        let start = match old.remove(&k) {
            Some((start, before)) if before == v => start,
            Some((start, before)) => {
                out.push(EventKind::EndEdge { start, end: at }, before);
                out.push(EventKind::StartEdge(at), v.clone());
                at
            }
            None => {
                out.push(EventKind::StartEdge(at), v.clone());
                at
            }
        };
        links.push((k, start, v));
    }
    let mut gone: Vec<_> = old.into_iter().collect();
    gone.sort_by(|(a, _), (b, _)| keys_order(a, b));
    for (_, (start, v)) in gone {
        out.push(EventKind::EndEdge { start, end: at }, v);
    }
}

/// The state as read back: the partitions, the ones touched, the CTI, the counts and how
/// many events are held.
type Saved<Out> = (
    Vec<(Vec<Value>, Part<Out>)>,
    Vec<Vec<Value>>,
    (Time, punctual_core::ops::LateCounts, usize),
);

impl<Out: Payload> UnaryOperator<Row, Out> for LateSessions<Out> {
    const NAME: &'static str = "session window";

    fn save_state(&self, out: &mut Vec<u8>) -> Result<(), punctual_core::ops::StateError> {
        let parts: Vec<_> = self.parts.iter().collect();
        let touched: Vec<_> = self.touched.iter().collect();
        let state = (parts, touched, (self.cti, self.counts, self.held));
        punctual_core::ops::state::write(Self::NAME, &state, out)
    }

    fn restore_state(&mut self, bytes: &[u8]) -> Result<(), punctual_core::ops::StateError> {
        let (parts, touched, (cti, counts, held)): Saved<Out> =
            punctual_core::ops::state::read(Self::NAME, bytes)?;
        self.parts = parts.into_iter().collect();
        self.touched = touched.into_iter().collect();
        (self.cti, self.counts, self.held) = (cti, counts, held);
        Ok(())
    }

    fn on_batch(&mut self, input: &Batch<Row>, out: &mut Batch<Out>) {
        for (range, cti) in input.segments() {
            let watermark = self.cti + self.lateness;
            for i in range {
                let t = match input.kind(i) {
                    EventKind::Point(t) | EventKind::StartEdge(t) => t,
                    EventKind::Interval { start, .. } => start,
                    EventKind::EndEdge { .. } => continue,
                };
                if t < watermark {
                    self.counts.late += 1;
                } else {
                    self.counts.on_time += 1;
                }
                let row = &input.payloads()[i];
                let key: Vec<Value> = self.partition.iter().map(|k| k.eval(row)).collect();
                let part = self.parts.entry(key.clone()).or_default();
                part.events.entry(t).or_default().push(row.clone());
                self.held += 1;
                self.touched.insert(key);
            }
            if let Some(t) = cti {
                if t > self.cti {
                    self.advance(t, out);
                }
            }
        }
    }

    fn placement(&self) -> Placement {
        Placement::ByKey
    }

    fn key_hash(&self, payload: &Row) -> u64 {
        let key: Vec<Value> = self.partition.iter().map(|k| k.eval(payload)).collect();
        punctual_core::ops::key_hash(&key)
    }

    fn output_shape(&self, _input: EventShape) -> EventShape {
        EventShape::Edge
    }

    fn state_size(&self) -> usize {
        self.held
    }

    fn held(&self, f: &mut dyn FnMut(Held<'_>)) {
        for part in self.parts.values() {
            for (&t, rows) in &part.events {
                for row in rows {
                    f(Held {
                        what: HeldWhat::Event,
                        start: t,
                        end: t.next_tick(),
                        payload: row,
                    });
                }
            }
            for chain in &part.chains {
                for (_, start, v) in &chain.links {
                    f(Held {
                        what: HeldWhat::Result,
                        start: *start,
                        end: Time::INF,
                        payload: v,
                    });
                }
            }
        }
    }

    fn lateness(&self) -> punctual_core::ops::LateCounts {
        self.counts
    }
}
