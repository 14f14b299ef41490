//! The open start edges of a stream, by the start they came with: an end edge is matched to
//! its start edge by that start and an equal payload, and learns what became of it (accepted
//! at some start, dangling, or dropped; see [`StartEdge`]).
//!
//! Payloads are only comparable for equality, so matching is a scan of the open edges that
//! share the end edge's start. With an edge key ([`Ingress::index_edges_by`]), the scan covers
//! only those whose payloads also share the key: many edges at one start (a snapshot of
//! reference data) match in constant time.
//!
//! The edges are kept compactly, for streams that hold millions open: each in a slot of one
//! vector (its start, key, state and payload, and the slot of the next edge of its start and
//! key), and a hash table of slot numbers (the first and last edge of each start and key),
//! about 42 bytes an edge besides its payload.
//!
//! [`Ingress::index_edges_by`]: super::Ingress::index_edges_by

use std::collections::BTreeMap;
use std::sync::Arc;

use hashbrown::HashTable;

use punctual_core::Time;

use super::policy::StartEdge;

/// A function that gives equal payloads equal keys, for matching end edges to start edges
/// without a scan (see [`Ingress::index_edges_by`](super::Ingress::index_edges_by)).
pub type EdgeKey<P> = Arc<dyn Fn(&P) -> u64 + Send + Sync>;

/// No slot.
const NONE: u32 = u32::MAX;

/// What became of an open edge ([`StartEdge`] without its time, which is [`Slot::at`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
enum State {
    Open,
    Dangling,
    Dropped,
}

/// One open edge, packed: 32 bytes besides its payload.
#[derive(Debug, serde::Serialize, serde::Deserialize)]
pub(crate) struct Slot<P> {
    start: Time,
    key: u64,
    /// Where it was accepted (open or dangling).
    at: Time,
    /// The next edge of the same start and key, in the order they came.
    next: u32,
    state: State,
    payload: P,
}

impl<P> Slot<P> {
    fn state(&self) -> StartEdge {
        match self.state {
            State::Open => StartEdge::Open(self.at),
            State::Dangling => StartEdge::Dangling(self.at),
            State::Dropped => StartEdge::Dropped,
        }
    }

    fn set_state(&mut self, state: StartEdge) {
        (self.state, self.at) = match state {
            StartEdge::Open(t) => (State::Open, t),
            StartEdge::Dangling(t) => (State::Dangling, t),
            StartEdge::Dropped => (State::Dropped, Time::NEG_INF),
        };
    }
}

/// Where a found start edge is: its slot, and the one before it in its chain.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct EdgeRef {
    slot: u32,
    prev: u32,
}

/// Slots per chunk of [`Slots`].
const CHUNK: usize = 1 << 12;

/// The slots, in chunks of [`CHUNK`]: growing never moves the ones there are (a vector of
/// millions would be copied whole at each doubling, and twice its size held meanwhile).
#[derive(Debug)]
struct Slots<P> {
    chunks: Vec<Vec<Option<Slot<P>>>>,
    len: usize,
}

impl<P> Slots<P> {
    fn get(&self, i: u32) -> Option<&Slot<P>> {
        let i = i as usize;
        self.chunks.get(i / CHUNK)?.get(i % CHUNK)?.as_ref()
    }

    fn get_mut(&mut self, i: u32) -> Option<&mut Option<Slot<P>>> {
        let i = i as usize;
        self.chunks.get_mut(i / CHUNK)?.get_mut(i % CHUNK)
    }

    /// Whether slot `i` holds an edge at `start` with `key`.
    fn is(&self, i: u32, start: Time, key: u64) -> bool {
        self.get(i)
            .is_some_and(|s| s.start == start && s.key == key)
    }

    /// Puts `slot` in a new slot at the end; its number.
    fn push(&mut self, slot: Slot<P>) -> u32 {
        if self.len.is_multiple_of(CHUNK) && self.len / CHUNK == self.chunks.len() {
            self.chunks.push(Vec::with_capacity(CHUNK));
        }
        if let Some(chunk) = self.chunks.get_mut(self.len / CHUNK) {
            chunk.push(Some(slot));
        }
        self.len += 1;
        u32::try_from(self.len - 1).unwrap_or(NONE)
    }

    /// Empties every slot, keeping the first chunk's room.
    fn clear(&mut self) {
        self.chunks.truncate(1);
        if let Some(first) = self.chunks.first_mut() {
            first.clear();
        }
        self.len = 0;
    }
}

/// The start edges whose end edge has not come yet.
pub(crate) struct OpenEdges<P> {
    /// The edges; a freed slot is `None` until reused.
    slots: Slots<P>,
    free: Vec<u32>,
    /// Per start and key, the first and the last edge's slots.
    index: HashTable<(u32, u32)>,
    key: Option<EdgeKey<P>>,
    len: usize,
    /// The accepted edges whose start edge is still in the reorder buffer (accepted at or
    /// after the last CTI, which releases only what is before it), by their accepted start:
    /// counted there as `buffered`, not again as open.
    pending: BTreeMap<Time, u32>,
    pending_len: usize,
    /// The last CTI.
    frontier: Time,
}

impl<P> std::fmt::Debug for OpenEdges<P> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OpenEdges")
            .field("open", &self.len)
            .field("keyed", &self.key.is_some())
            .finish()
    }
}

/// The hash of a start and key.
fn hash(start: Time, key: u64) -> u64 {
    let h = (start.ticks() as u64).rotate_left(29) ^ key;
    let h = h.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    h ^ (h >> 32)
}

/// The open edges as a snapshot holds them: every slot (freed ones `None`), the free list,
/// each chain's first and last slot, and the counts; the key function is the query's.
pub(crate) type Saved<P> = (
    Vec<Option<Slot<P>>>,
    Vec<u32>,
    Vec<(u32, u32)>,
    usize,
    BTreeMap<Time, u32>,
    usize,
    Time,
);

impl<P: serde::Serialize> serde::Serialize for OpenEdges<P> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let slots: Vec<&Option<Slot<P>>> = self.slots.chunks.iter().flatten().collect();
        let chains: Vec<&(u32, u32)> = self.index.iter().collect();
        let counts = (self.len, &self.pending, self.pending_len, self.frontier);
        (
            slots, &self.free, chains, counts.0, counts.1, counts.2, counts.3,
        )
            .serialize(s)
    }
}

impl<P: PartialEq> OpenEdges<P> {
    /// Takes the open edges a snapshot saved (into edges made new, their key function set).
    pub(crate) fn restore(&mut self, saved: Saved<P>) -> Result<(), String> {
        let (slots, free, chains, len, pending, pending_len, frontier) = saved;
        let mut restored = OpenEdges::new();
        restored.key = self.key.take();
        restored.slots.len = slots.len();
        let mut slots = slots.into_iter();
        loop {
            let mut chunk = Vec::with_capacity(CHUNK);
            chunk.extend(slots.by_ref().take(CHUNK));
            if chunk.is_empty() {
                break;
            }
            restored.slots.chunks.push(chunk);
        }
        for (first, last) in chains {
            let (Some(a), Some(_)) = (restored.slots.get(first), restored.slots.get(last)) else {
                return Err(format!(
                    "an edge chain from slot {first} to {last}, not both held"
                ));
            };
            let h = hash(a.start, a.key);
            let slots = &restored.slots;
            restored.index.insert_unique(h, (first, last), |&(f, _)| {
                slots.get(f).map_or(0, |s| hash(s.start, s.key))
            });
        }
        if free.iter().any(|&i| restored.slots.get(i).is_some()) {
            return Err("a free slot that holds an edge".to_owned());
        }
        restored.free = free;
        (restored.len, restored.pending) = (len, pending);
        (restored.pending_len, restored.frontier) = (pending_len, frontier);
        *self = restored;
        Ok(())
    }
}

impl<P: PartialEq> OpenEdges<P> {
    pub(crate) fn new() -> Self {
        OpenEdges {
            slots: Slots {
                chunks: Vec::new(),
                len: 0,
            },
            free: Vec::new(),
            index: HashTable::new(),
            key: None,
            len: 0,
            pending: BTreeMap::new(),
            pending_len: 0,
            frontier: Time::NEG_INF,
        }
    }

    /// The accepted start of an edge in `state`, if its start edge is still held.
    fn held_at(&self, state: StartEdge) -> Option<Time> {
        match state {
            StartEdge::Open(t) | StartEdge::Dangling(t) if t >= self.frontier => Some(t),
            _ => None,
        }
    }

    fn pend(&mut self, state: StartEdge) {
        if let Some(t) = self.held_at(state) {
            *self.pending.entry(t).or_default() += 1;
            self.pending_len += 1;
        }
    }

    fn unpend(&mut self, state: StartEdge) {
        if let Some(t) = self.held_at(state) {
            if let Some(n) = self.pending.get_mut(&t) {
                *n -= 1;
                self.pending_len -= 1;
                if *n == 0 {
                    self.pending.remove(&t);
                }
            }
        }
    }

    /// The CTI `t` released the start edges before it: they are open edges now.
    pub(crate) fn release(&mut self, t: Time) {
        if t <= self.frontier {
            return;
        }
        self.frontier = t;
        if self.pending_len == 0 {
            return;
        }
        let still = self.pending.split_off(&t);
        let released: u32 = self.pending.values().sum();
        self.pending_len -= released as usize;
        self.pending = still;
    }

    /// How many start edges are open whose start edge has left the reorder buffer (released,
    /// or dropped and kept to recognise its end edge).
    pub(crate) fn released_len(&self) -> usize {
        self.len - self.pending_len
    }

    /// Matches edges by `key` as well as by start (set before the first edge).
    pub(crate) fn index_by(&mut self, key: EdgeKey<P>) {
        self.key = Some(key);
    }

    fn key_of(&self, payload: &P) -> u64 {
        self.key.as_ref().map_or(0, |k| k(payload))
    }

    fn slot(&self, i: u32) -> Option<&Slot<P>> {
        self.slots.get(i)
    }

    fn slot_mut(&mut self, i: u32) -> Option<&mut Slot<P>> {
        self.slots.get_mut(i).and_then(Option::as_mut)
    }

    /// The (first, last) slots of `start` and `key`.
    fn chain(&self, start: Time, key: u64) -> Option<(u32, u32)> {
        let slots = &self.slots;
        self.index
            .find(hash(start, key), |&(first, _)| slots.is(first, start, key))
            .copied()
    }

    /// Records a start edge that came with start `start`.
    pub(crate) fn add(&mut self, start: Time, payload: P, state: StartEdge) {
        self.pend(state);
        let key = self.key_of(&payload);
        let mut slot = Slot {
            start,
            key,
            at: Time::NEG_INF,
            next: NONE,
            state: State::Dropped,
            payload,
        };
        slot.set_state(state);
        let at = match self.free.pop() {
            Some(i) => {
                if let Some(free) = self.slots.get_mut(i) {
                    *free = Some(slot);
                }
                i
            }
            None => self.slots.push(slot),
        };
        self.len += 1;
        let h = hash(start, key);
        let slots = &mut self.slots;
        let entry = self
            .index
            .find_mut(h, |&(first, _)| slots.is(first, start, key));
        match entry {
            Some((_, last)) => {
                let before = std::mem::replace(last, at);
                if let Some(Some(s)) = slots.get_mut(before) {
                    s.next = at;
                }
            }
            None => {
                let slots = &self.slots;
                self.index.insert_unique(h, (at, at), |&(first, _)| {
                    slots.get(first).map_or(0, |s| hash(s.start, s.key))
                });
            }
        }
    }

    /// The start edge an end edge with this start and payload closes (the first one that
    /// came, among equal ones): where it is, and its state.
    pub(crate) fn find(&self, start: Time, payload: &P) -> Option<(EdgeRef, StartEdge)> {
        let (first, _) = self.chain(start, self.key_of(payload))?;
        let (mut prev, mut at) = (NONE, first);
        while let Some(s) = self.slot(at) {
            if s.payload == *payload {
                return Some((EdgeRef { slot: at, prev }, s.state()));
            }
            (prev, at) = (at, s.next);
        }
        None
    }

    /// Changes the state of a found edge.
    pub(crate) fn set_state(&mut self, _start: Time, at: EdgeRef, state: StartEdge) {
        let Some(s) = self.slot_mut(at.slot) else {
            return;
        };
        let before = s.state();
        s.set_state(state);
        self.unpend(before);
        self.pend(state);
    }

    /// Forgets a found edge (its end edge came).
    pub(crate) fn remove(&mut self, start: Time, at: EdgeRef) {
        let Some(gone) = self.slots.get_mut(at.slot).and_then(Option::take) else {
            return;
        };
        self.free.push(at.slot);
        self.len -= 1;
        self.unpend(gone.state());
        if let Some(p) = self.slot_mut(at.prev) {
            p.next = gone.next;
        }
        let h = hash(start, gone.key);
        let slots = &self.slots;
        let Ok(entry) = self.index.find_entry(h, |&(first, _)| {
            first == at.slot || slots.is(first, start, gone.key)
        }) else {
            return;
        };
        // The chain's first and last, without it.
        let (first, last) = *entry.get();
        let first = if first == at.slot { gone.next } else { first };
        let last = if last == at.slot { at.prev } else { last };
        if first == NONE {
            entry.remove();
        } else {
            *entry.into_mut() = (first, last);
        }
        if self.len == 0 {
            // Nothing open: the slots are taken from the first again (their room is kept).
            self.slots.clear();
            self.free.clear();
        }
    }
}
