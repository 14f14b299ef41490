//! [`Process`]: user-defined operators with per-key state and event-time timers (Flink's
//! `KeyedProcessFunction`, YTsaurus Flow's timers, StreamInsight's user-defined operators).
//!
//! The operator sees its input (an ordered stream) in time order, one event at a time, with the
//! state of the event's key, and can ask to be woken at a time for that key (a timer). Timers
//! fire in time order as time passes them: a timer at `t` fires once no event before or at `t`
//! can come any more (an event after `t` has arrived, or the input's CTI has passed `t`), after
//! the events at `t` and before the first event after it; ties fire in the order they were set.
//!
//! **The output CTI rule**, enforced: everything the operator emits while it handles an event
//! at `s` (or a timer at `t`) starts at `s` (or `t`) or later; an earlier start is moved up to
//! it. The output is held and released in sync order as the input's CTI advances, and the
//! output CTI is the input CTI: every later event or timer is at or after it, so nothing
//! emitted afterwards can start before it. A timer set in the past fires at the present. So a
//! user operator cannot break the CTI guarantee, whatever it does.
//!
//! ```
//! use punctual_core::ops::{Process, ProcessContext, QueryGraph};
//! use punctual_core::{Batch, Event, Ordered, Time, TimeSpan};
//! let t = Time::from_ticks;
//!
//! /// Counts each key's events and reports the count 10 ticks after its first one.
//! struct CountFor10;
//! impl Process<(char, i64), char> for CountFor10 {
//!     type State = u32;
//!     type Output = (char, u32);
//!     fn on_event(&mut self, key: &char, count: &mut u32, event: &Event<(char, i64)>,
//!                 ctx: &mut ProcessContext<'_, char, (char, u32)>) {
//!         if *count == 0 {
//!             ctx.set_timer(event.kind.start() + TimeSpan::from_ticks(10));
//!         }
//!         *count += 1;
//!     }
//!     fn on_timer(&mut self, key: &char, count: &mut u32, at: Time,
//!                 ctx: &mut ProcessContext<'_, char, (char, u32)>) {
//!         ctx.emit_point(at, (*key, *count));
//!         ctx.clear_state();
//!     }
//! }
//!
//! let graph = QueryGraph::new();
//! let input = graph.source::<(char, i64), Ordered>();
//! let counts = input.process(|e: &(char, i64)| e.0, CountFor10);
//! graph.keep_output(&counts);
//! let mut batch = Batch::new();
//! for (at, key) in [(1, 'a'), (2, 'b'), (5, 'a'), (12, 'a')] {
//!     batch.push_point(t(at), (key, at));
//! }
//! batch.push_cti(t(20));
//! graph.feed(&input, &mut batch);
//! let mut out = Batch::new();
//! graph.take_output(&counts, &mut out);
//! // 'a' at 1 and 5 (its timer at 11 fires before the event at 12, which starts a new count);
//! // 'b' at 2 (timer at 12); 'a' again from 12 (timer at 22: not yet).
//! assert_eq!(out.payloads(), &[('a', 2), ('b', 1)]);
//! assert_eq!(out.sync(), &[t(11), t(12)]);
//! assert_eq!(out.last_cti(), Some(t(20)));
//! ```

use std::collections::{BTreeMap, HashSet};
use std::hash::Hash;

use super::fxhash::FxHashMap;
use crate::batch::Batch;
use crate::event::{Event, EventShape};
use crate::time::Time;

use super::state::{self, StateError};
use super::{Held, HeldWhat, Key, ReleaseBuffer, UnaryOperator};

/// A user-defined operator over one key's events; see the module doc.
pub trait Process<P, K>: Send + 'static {
    /// Each key's state (a key without state has `Default::default()`); saved in snapshots.
    type State: Default + Send + serde::Serialize + serde::de::DeserializeOwned + 'static;
    /// What it emits.
    type Output: Clone + Send + serde::Serialize + serde::de::DeserializeOwned + 'static;
    /// Whether it keeps state in its own fields from one call to the next, beside the keys'
    /// states (which snapshots save with the operator). Then a snapshot needs
    /// [`Process::save_own`]; an operator whose fields are settings only (rebuilt from the
    /// query on restore) says `false`. By default `true`.
    const KEEPS_OWN_STATE: bool = true;

    /// Appends what it keeps in its own fields to `out`, for a snapshot (see
    /// [`Process::KEEPS_OWN_STATE`]). By default refused: a query with it cannot take
    /// snapshots until it says how.
    fn save_own(&self, out: &mut Vec<u8>) -> Result<(), StateError> {
        let _ = out;
        Err(StateError::Unsupported("process"))
    }

    /// Takes what [`Process::save_own`] wrote, on an operator built the same way.
    fn restore_own(&mut self, bytes: &[u8]) -> Result<(), StateError> {
        let _ = bytes;
        Err(StateError::Unsupported("process"))
    }

    /// An event of key `key`, in time order (sync time: an end edge comes at its end).
    fn on_event(
        &mut self,
        key: &K,
        state: &mut Self::State,
        event: &Event<P>,
        ctx: &mut ProcessContext<'_, K, Self::Output>,
    );

    /// A timer this key set at `at` fires (see the module doc for when).
    fn on_timer(
        &mut self,
        key: &K,
        state: &mut Self::State,
        at: Time,
        ctx: &mut ProcessContext<'_, K, Self::Output>,
    );

    /// The shape of what it emits over an input of shape `input`: [`EventShape::Point`] for
    /// an operator that emits only points (outputs then write one time per result), by
    /// default [`EventShape::Interval`] (points and intervals: it emits no edges).
    fn output_shape(&self, input: EventShape) -> EventShape {
        let _ = input;
        EventShape::Interval
    }
}

/// What a [`Process`] can do while it handles an event or a timer: the present time, timers for
/// the key at hand, emitting, dropping the key's state.
pub struct ProcessContext<'a, K, O> {
    now: Time,
    key: &'a K,
    timers: &'a mut Timers<K>,
    out: &'a mut ReleaseBuffer<O>,
    clear: bool,
}

impl<K: Hash + Eq + Clone, O> ProcessContext<'_, K, O> {
    /// The present: the time of the event or timer at hand.
    pub fn now(&self) -> Time {
        self.now
    }

    /// Wakes the operator for this key at `at` (the present, if `at` is before it). Setting the
    /// same time twice sets one timer.
    pub fn set_timer(&mut self, at: Time) {
        self.timers.set(self.key.clone(), at.max(self.now));
    }

    /// Cancels this key's timer at `at`, if it has one.
    pub fn cancel_timer(&mut self, at: Time) {
        self.timers.cancel(self.key, at);
    }

    /// Emits an event with lifetime `[start, end)`. A start before the present is moved to the
    /// present, and an end not after the start becomes one tick after it (the CTI rule).
    pub fn emit(&mut self, start: Time, end: Time, payload: O) {
        let start = start.max(self.now).min(Time::MAX_FINITE);
        let end = end.max(start.next_tick());
        self.out.push(start, end, payload);
    }

    /// Emits a point at `at` (at the present, if `at` is before it).
    pub fn emit_point(&mut self, at: Time, payload: O) {
        let at = at.max(self.now).min(Time::MAX_FINITE);
        self.out.push(at, at.next_tick(), payload);
    }

    /// Drops this key's state after the callback (its timers stay).
    pub fn clear_state(&mut self) {
        self.clear = true;
    }
}

/// Timers by time, ties in the order they were set; one per key and time.
#[derive(serde::Serialize, serde::Deserialize)]
#[serde(bound(
    serialize = "K: serde::Serialize + Hash + Eq",
    deserialize = "K: serde::Deserialize<'de> + Hash + Eq"
))]
pub(crate) struct Timers<K> {
    by_time: BTreeMap<(Time, u64), K>,
    set: HashSet<(K, Time)>,
    seq: u64,
}

impl<K: Hash + Eq + Clone> Timers<K> {
    fn new() -> Self {
        Timers {
            by_time: BTreeMap::new(),
            set: HashSet::new(),
            seq: 0,
        }
    }

    fn set(&mut self, key: K, at: Time) {
        if self.set.insert((key.clone(), at)) {
            self.seq += 1;
            self.by_time.insert((at, self.seq), key);
        }
    }

    fn cancel(&mut self, key: &K, at: Time) {
        // Left in the time index, skipped when it comes up.
        self.set.remove(&(key.clone(), at));
    }

    /// The next live timer before `before`, taken out.
    fn next_before(&mut self, before: Time) -> Option<(Time, K)> {
        loop {
            let (&(at, seq), _) = self.by_time.first_key_value()?;
            if at >= before {
                return None;
            }
            let key = self.by_time.remove(&(at, seq))?;
            if self.set.remove(&(key.clone(), at)) {
                return Some((at, key));
            }
        }
    }

    fn len(&self) -> usize {
        self.set.len()
    }

    /// Every live timer: its key and time.
    fn iter(&self) -> impl Iterator<Item = &(K, Time)> + '_ {
        self.set.iter()
    }
}

/// The graph operator that runs a [`Process`]: see the module doc.
pub struct ProcessOperator<Op, K, KF, P>
where
    Op: Process<P, K>,
{
    op: Op,
    key: KF,
    states: FxHashMap<K, Op::State>,
    timers: Timers<K>,
    held: ReleaseBuffer<Op::Output>,
    _payload: std::marker::PhantomData<fn(P)>,
}

impl<Op, K, KF, P> ProcessOperator<Op, K, KF, P>
where
    Op: Process<P, K>,
    K: Hash + Eq + Clone,
{
    /// Runs `op` over the events keyed by `key`.
    pub fn new(key: KF, op: Op) -> Self {
        ProcessOperator {
            op,
            key,
            states: FxHashMap::default(),
            timers: Timers::new(),
            held: ReleaseBuffer::new(),
            _payload: std::marker::PhantomData,
        }
    }

    /// Fires every timer before `before`, in time order.
    fn fire_before(&mut self, before: Time) {
        while let Some((at, key)) = self.timers.next_before(before) {
            let mut state = self.states.remove(&key).unwrap_or_default();
            let mut ctx = ProcessContext {
                now: at,
                key: &key,
                timers: &mut self.timers,
                out: &mut self.held,
                clear: false,
            };
            self.op.on_timer(&key, &mut state, at, &mut ctx);
            if !ctx.clear {
                self.states.insert(key, state);
            }
        }
    }
}

impl<Op, K, KF, P> std::fmt::Debug for ProcessOperator<Op, K, KF, P>
where
    Op: Process<P, K>,
{
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProcessOperator")
            .field("keys", &self.states.len())
            .finish_non_exhaustive()
    }
}

/// A process operator's state as read back: the keys' states, the timers, the held output
/// and the operator's own.
type Saved<K, S, O> = (Vec<(K, S)>, Timers<K>, ReleaseBuffer<O>, Vec<u8>);

impl<Op, K, KF, P> UnaryOperator<P, Op::Output> for ProcessOperator<Op, K, KF, P>
where
    P: Clone + Send + 'static,
    Op: Process<P, K>,
    K: Key,
    KF: Fn(&P) -> K + Send + 'static,
{
    const NAME: &'static str = "process";

    fn save_state(&self, out: &mut Vec<u8>) -> Result<(), StateError> {
        let mut own = Vec::new();
        if Op::KEEPS_OWN_STATE {
            self.op.save_own(&mut own)?;
        }
        let states: Vec<(&K, &Op::State)> = self.states.iter().collect();
        state::write(Self::NAME, &(states, &self.timers, &self.held, own), out)
    }

    fn restore_state(&mut self, bytes: &[u8]) -> Result<(), StateError> {
        let (states, timers, held, own): Saved<K, Op::State, Op::Output> =
            state::read(Self::NAME, bytes)?;
        if Op::KEEPS_OWN_STATE {
            self.op.restore_own(&own)?;
        }
        self.states = states.into_iter().collect();
        (self.timers, self.held) = (timers, held);
        Ok(())
    }

    fn output_shape(&self, input: EventShape) -> EventShape {
        self.op.output_shape(input)
    }

    fn placement(&self) -> super::Placement {
        super::Placement::ByKey
    }

    fn key_hash(&self, payload: &P) -> u64 {
        super::key_hash(&(self.key)(payload))
    }

    fn on_batch(&mut self, input: &Batch<P>, out: &mut Batch<Op::Output>) {
        for (range, cti) in input.segments() {
            for i in range {
                let sync = input.sync()[i];
                // Nothing before this event can come any more: earlier timers fire first.
                self.fire_before(sync);
                let event = Event {
                    kind: input.kind(i),
                    payload: input.payloads()[i].clone(),
                };
                let key = (self.key)(&event.payload);
                let mut state = self.states.remove(&key).unwrap_or_default();
                let mut ctx = ProcessContext {
                    now: sync,
                    key: &key,
                    timers: &mut self.timers,
                    out: &mut self.held,
                    clear: false,
                };
                self.op.on_event(&key, &mut state, &event, &mut ctx);
                if !ctx.clear {
                    self.states.insert(key, state);
                }
            }
            if let Some(t) = cti {
                self.fire_before(t);
                self.held.release(t, out);
            }
        }
    }

    fn state_size(&self) -> usize {
        self.states.len() + self.timers.len() + self.held.len()
    }

    /// A key's state is a group over all time; a timer is a group at its time.
    fn held(&self, f: &mut dyn FnMut(Held<'_>)) {
        for key in self.states.keys() {
            f(Held {
                what: HeldWhat::Group,
                start: Time::NEG_INF,
                end: Time::INF,
                payload: key,
            });
        }
        for (key, at) in self.timers.iter() {
            f(Held {
                what: HeldWhat::Group,
                start: *at,
                end: at.next_tick(),
                payload: key,
            });
        }
        Held::results(&self.held, f);
    }
}
