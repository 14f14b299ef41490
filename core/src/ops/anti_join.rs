//! Left-held binary operators: [`AntiSemiJoin`] and [`ClipDuration`].
//!
//! Both hold each left event until the right input can no longer change its result: until the
//! right CTI reaches the left event's end (for clip, or until a clipping right event is known).
//! A left start edge is held until its end edge arrives.
//!
//! CTI rule (both): output CTI = min(left CTI, right CTI, start of the earliest left event still
//! held), so every result is released before a CTI passes its start.
//!
//! - [`AntiSemiJoin`] (left anti-semi-join): the parts of each left lifetime where no right event
//!   with an equal key overlaps it, as intervals (or points).
//! - [`ClipDuration`] (StreamInsight's `ClipEventDuration`): each left event's end is clipped to
//!   the start of the first right event with an equal key that starts after the left event
//!   starts (and before it ends).
//!
//! State: the held left events, and the right events that can still overlap a held or future
//! left event (those ending after the output CTI).

use std::hash::Hash;

use super::fxhash::FxHashMap;
use crate::batch::Batch;
use crate::event::{EventKind, EventShape};
use crate::time::Time;

use super::state::{self, StateError};
use super::{BinaryOperator, CtiFrontier, Held as HeldItem, HeldWhat, Key, Payload, ReleaseBuffer};

#[derive(Debug, serde::Serialize, serde::Deserialize)]
struct Held<P, K> {
    start: Time,
    end: Option<Time>,
    key: K,
    payload: P,
}

/// What a left-held operator computes once a left event is final.
trait LeftHeldRule: Send + 'static {
    const NAME: &'static str;
    /// The result lifetimes of a left event `[start, end)` (`None` end: still open, so it ends
    /// at or after `ctis.0`, the left CTI) given the right lifetimes with its key, or `None` if
    /// either side can still change them. `ctis` = (left CTI, right CTI).
    fn results(
        start: Time,
        end: Option<Time>,
        rights: &[(Time, Option<Time>)],
        ctis: (Time, Time),
    ) -> Option<Vec<(Time, Time)>>;
}

/// Shared state of the left-held operators.
struct LeftHeld<P, R, K, KL, KR, Rule> {
    key_left: KL,
    key_right: KR,
    frontier: CtiFrontier,
    held: Vec<Held<P, K>>,
    rights: FxHashMap<K, Vec<(Time, Option<Time>, R)>>,
    out: ReleaseBuffer<P>,
    scratch: Vec<(Time, Option<Time>)>,
    _rule: std::marker::PhantomData<fn() -> Rule>,
}

impl<P, R, K, KL, KR, Rule> LeftHeld<P, R, K, KL, KR, Rule>
where
    P: Clone + PartialEq,
    R: PartialEq,
    K: Hash + Eq + Clone,
    KL: Fn(&P) -> K,
    KR: Fn(&R) -> K,
    Rule: LeftHeldRule,
{
    fn new(key_left: KL, key_right: KR) -> Self {
        LeftHeld {
            key_left,
            key_right,
            frontier: CtiFrontier::new(2),
            held: Vec::new(),
            rights: FxHashMap::default(),
            out: ReleaseBuffer::new(),
            scratch: Vec::new(),
            _rule: std::marker::PhantomData,
        }
    }

    fn on_left(&mut self, input: &Batch<P>, out: &mut Batch<P>) {
        for (range, cti) in input.segments() {
            for i in range {
                let payload = &input.payloads()[i];
                match input.kind(i) {
                    EventKind::EndEdge { start, end } => {
                        if let Some(h) = self
                            .held
                            .iter_mut()
                            .find(|h| h.start == start && h.end.is_none() && h.payload == *payload)
                        {
                            h.end = Some(end);
                        }
                    }
                    kind => {
                        let (start, other) = kind.encode();
                        self.held.push(Held {
                            start,
                            end: (other != Time::INF).then_some(other),
                            key: (self.key_left)(payload),
                            payload: payload.clone(),
                        });
                    }
                }
            }
            if let Some(t) = cti {
                self.frontier.advance(0, t);
            }
            self.step(out);
        }
    }

    fn on_right(&mut self, input: &Batch<R>, out: &mut Batch<P>)
    where
        R: Clone,
    {
        for (range, cti) in input.segments() {
            for i in range {
                let payload = &input.payloads()[i];
                let key = (self.key_right)(payload);
                match input.kind(i) {
                    EventKind::EndEdge { start, end } => {
                        if let Some(r) = self.rights.get_mut(&key).and_then(|v| {
                            v.iter_mut()
                                .find(|r| r.0 == start && r.1.is_none() && r.2 == *payload)
                        }) {
                            r.1 = Some(end);
                        }
                    }
                    kind => {
                        let (start, other) = kind.encode();
                        let end = (other != Time::INF).then_some(other);
                        self.rights
                            .entry(key)
                            .or_default()
                            .push((start, end, payload.clone()));
                    }
                }
            }
            if let Some(t) = cti {
                self.frontier.advance(1, t);
            }
            self.step(out);
        }
    }

    /// Finalizes what the right CTI allows, then releases up to the output CTI.
    fn step(&mut self, out: &mut Batch<P>) {
        let ctis = (self.frontier.input(0), self.frontier.input(1));
        if ctis.0 == Time::INF {
            // No end edge can follow the left's final CTI: an open start edge lasts forever.
            for h in &mut self.held {
                h.end.get_or_insert(Time::INF);
            }
        }
        let mut k = 0;
        while k < self.held.len() {
            let h = &self.held[k];
            self.scratch.clear();
            if let Some(rs) = self.rights.get(&h.key) {
                self.scratch.extend(rs.iter().map(|r| (r.0, r.1)));
            }
            match Rule::results(h.start, h.end, &self.scratch, ctis) {
                Some(parts) => {
                    let h = self.held.swap_remove(k);
                    for (s, e) in parts {
                        self.out.push(s, e, h.payload.clone());
                    }
                }
                None => k += 1,
            }
        }
        let earliest = self.held.iter().map(|h| h.start).min().unwrap_or(Time::INF);
        let t = self.frontier.output().min(earliest);
        if t > self.out.last_cti() {
            self.out.release(t, out);
            // Right events ending at or before both the output CTI and every held start can
            // no longer overlap anything.
            if t == Time::INF {
                self.rights.clear();
            }
            for rs in self.rights.values_mut() {
                rs.retain(|r| r.1.is_none_or(|e| e > t));
            }
            self.rights.retain(|_, v| !v.is_empty());
        }
    }

    fn state_size(&self) -> usize {
        self.held.len() + self.rights.values().map(Vec::len).sum::<usize>() + self.out.len()
    }
}

impl<P: 'static, R: 'static, K, KL, KR, Rule> LeftHeld<P, R, K, KL, KR, Rule> {
    /// Visits what `state_size` counts.
    fn held(&self, f: &mut dyn FnMut(HeldItem<'_>)) {
        let event = |start: Time, end: Option<Time>, payload| HeldItem {
            what: HeldWhat::Event,
            start,
            end: end.unwrap_or(Time::INF),
            payload,
        };
        for h in &self.held {
            f(event(h.start, h.end, &h.payload));
        }
        for (start, end, payload) in self.rights.values().flatten() {
            f(event(*start, *end, payload));
        }
        HeldItem::results(&self.out, f);
    }
}

/// The anti-semi-join rule: subtract the right lifetimes from the left one.
pub struct AntiRule;

impl LeftHeldRule for AntiRule {
    const NAME: &'static str = "anti-semi-join";

    fn results(
        start: Time,
        end: Option<Time>,
        rights: &[(Time, Option<Time>)],
        (_, cti_right): (Time, Time),
    ) -> Option<Vec<(Time, Time)>> {
        let end = end?;
        if cti_right < end {
            return None;
        }
        let mut covers: Vec<(Time, Time)> = rights
            .iter()
            .map(|&(s, e)| (s, e.unwrap_or(Time::INF)))
            .filter(|&(s, e)| s < end && e > start)
            .collect();
        covers.sort_unstable();
        let mut parts = Vec::new();
        let mut at = start;
        for (s, e) in covers {
            if s > at {
                parts.push((at, s.min(end)));
            }
            at = at.max(e);
            if at >= end {
                break;
            }
        }
        if at < end {
            parts.push((at, end));
        }
        Some(parts)
    }
}

/// The clip rule: end the left event where the first later right event starts.
pub struct ClipRule;

impl LeftHeldRule for ClipRule {
    const NAME: &'static str = "clip duration";

    fn results(
        start: Time,
        end: Option<Time>,
        rights: &[(Time, Option<Time>)],
        (cti_left, cti_right): (Time, Time),
    ) -> Option<Vec<(Time, Time)>> {
        let first = rights
            .iter()
            .map(|r| r.0)
            .filter(|&s| s > start && end.is_none_or(|e| s < e))
            .min();
        match (first, end) {
            // A right event starting at or before the right CTI is the first one (nothing can
            // come before it), and the left event reaches it if its end is known to be after it,
            // or, while open, once the left CTI reaches it (an open edge ends at or after it).
            (Some(s), Some(_)) if s <= cti_right => Some(vec![(start, s)]),
            (Some(s), None) if s <= cti_right && s <= cti_left => Some(vec![(start, s)]),
            (_, Some(e)) if cti_right >= e => Some(vec![(start, e)]),
            _ => None,
        }
    }
}

/// Left anti-semi-join; see the module doc.
pub struct AntiSemiJoin<P, R, K, KL, KR>(LeftHeld<P, R, K, KL, KR, AntiRule>);

/// Clip event duration; see the module doc.
pub struct ClipDuration<P, R, K, KL, KR>(LeftHeld<P, R, K, KL, KR, ClipRule>);

/// The state as read back: the frontier, the held left events, the right events by key, and
/// the results waiting for the CTI.
type Saved<P, R, K> = (
    CtiFrontier,
    Vec<Held<P, K>>,
    Vec<(K, Vec<(Time, Option<Time>, R)>)>,
    ReleaseBuffer<P>,
);

impl<P: Payload, R: Payload, K: Key, KL, KR, Rule> LeftHeld<P, R, K, KL, KR, Rule> {
    fn save(&self, name: &'static str, out: &mut Vec<u8>) -> Result<(), StateError> {
        let rights: Vec<_> = self.rights.iter().collect();
        state::write(name, &(&self.frontier, &self.held, rights, &self.out), out)
    }

    fn restore(&mut self, name: &'static str, bytes: &[u8]) -> Result<(), StateError> {
        let (frontier, held, rights, out): Saved<P, R, K> = state::read(name, bytes)?;
        (self.frontier, self.held, self.out) = (frontier, held, out);
        self.rights = rights.into_iter().collect();
        Ok(())
    }
}

macro_rules! left_held_op {
    ($op:ident, $rule:ty) => {
        impl<P, R, K, KL, KR> $op<P, R, K, KL, KR>
        where
            P: Clone + PartialEq,
            R: PartialEq,
            K: Hash + Eq + Clone,
            KL: Fn(&P) -> K,
            KR: Fn(&R) -> K,
        {
            /// The operator matching `key_left(l) == key_right(r)`.
            pub fn new(key_left: KL, key_right: KR) -> Self {
                $op(LeftHeld::new(key_left, key_right))
            }
        }

        impl<P, R, K, KL, KR> std::fmt::Debug for $op<P, R, K, KL, KR> {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.debug_struct(stringify!($op))
                    .field("held", &self.0.held.len())
                    .finish()
            }
        }

        impl<P, R, K, KL, KR> BinaryOperator<P, R, P> for $op<P, R, K, KL, KR>
        where
            P: Payload,
            R: Payload,
            K: Key,
            KL: Fn(&P) -> K + Send + 'static,
            KR: Fn(&R) -> K + Send + 'static,
        {
            const NAME: &'static str = <$rule as LeftHeldRule>::NAME;

            fn placement(&self) -> super::Placement {
                super::Placement::ByKey
            }

            fn replicable_right(&self) -> bool {
                true
            }

            fn left_key_hash(&self, payload: &P) -> u64 {
                super::key_hash(&(self.0.key_left)(payload))
            }

            fn right_key_hash(&self, payload: &R) -> u64 {
                super::key_hash(&(self.0.key_right)(payload))
            }

            fn output_shape(&self, left: EventShape, _right: EventShape) -> EventShape {
                left
            }

            fn on_left(&mut self, input: &Batch<P>, out: &mut Batch<P>) {
                self.0.on_left(input, out);
            }

            fn on_right(&mut self, input: &Batch<R>, out: &mut Batch<P>) {
                self.0.on_right(input, out);
            }

            fn state_size(&self) -> usize {
                self.0.state_size()
            }

            fn held(&self, f: &mut dyn FnMut(HeldItem<'_>)) {
                self.0.held(f);
            }

            fn save_state(&self, out: &mut Vec<u8>) -> Result<(), StateError> {
                self.0.save(Self::NAME, out)
            }

            fn restore_state(&mut self, bytes: &[u8]) -> Result<(), StateError> {
                self.0.restore(Self::NAME, bytes)
            }
        }
    };
}

left_held_op!(AntiSemiJoin, AntiRule);
left_held_op!(ClipDuration, ClipRule);

#[cfg(test)]
mod tests {
    use super::*;

    fn t(x: i64) -> Time {
        Time::from_ticks(x)
    }

    #[test]
    fn anti_rule_subtracts_right_lifetimes() {
        let rights = [(t(2), Some(t(4))), (t(3), Some(t(6)))];
        let parts = AntiRule::results(t(0), Some(t(10)), &rights, (t(0), t(10)));
        assert_eq!(parts, Some(vec![(t(0), t(2)), (t(6), t(10))]));
        let waiting = AntiRule::results(t(0), Some(t(10)), &[], (t(0), t(9)));
        assert_eq!(waiting, None, "right CTI below the end");
        let open = AntiRule::results(t(0), Some(t(10)), &[(t(5), None)], (t(0), t(10)));
        assert_eq!(open, Some(vec![(t(0), t(5))]));
    }

    #[test]
    fn clip_rule_ends_at_the_next_right_start() {
        let next = [(t(4), Some(t(5)))];
        let same_start = [(t(0), Some(t(5)))];
        let later = [(t(19), Some(t(20)))];
        let clip = ClipRule::results;
        assert_eq!(
            clip(t(0), Some(t(10)), &next, (t(0), t(4))),
            Some(vec![(t(0), t(4))])
        );
        assert_eq!(
            clip(t(0), Some(t(10)), &same_start, (t(0), t(10))),
            Some(vec![(t(0), t(10))])
        );
        assert_eq!(
            clip(t(0), None, &[], (t(0), t(100))),
            None,
            "an open left edge waits"
        );
        assert_eq!(
            clip(t(0), None, &later, (t(1), Time::INF)),
            None,
            "it may end before 19"
        );
        assert_eq!(
            clip(t(0), None, &later, (t(19), Time::INF)),
            Some(vec![(t(0), t(19))])
        );
    }
}
