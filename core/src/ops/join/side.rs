//! One side of the join: its events by key, the ones not yet paired in start order, and their
//! known ends, so that an event is forgotten once no event of the other side can meet it.
//!
//! Each key's events form a list in start order (ties in arrival order), so that a look for
//! the events that cover a time stops at the first that starts after it: against a reference
//! stream whose versions are all read ahead (a file), a probe reads the live version and the
//! next one, not every version to come. The list is linked both ways (the head's `prev` is the
//! tail), so that an event in order is appended at once, a late one walks back from the tail,
//! and an event is taken off its list at once when it expires.
//!
//! An end edge closes its start edge: the first entry of its key, start and payload. The
//! key's list is walked to it; once a walk is long (many open edges of one key, say reference
//! rows keyed alike, ended in any order), the open edges are indexed by start and payload
//! fingerprint from then on, so that each end edge is found without a walk.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};
use std::hash::Hash;

use crate::time::Time;

use super::super::fingerprint::Fingerprints;
use super::super::fxhash::FxHashMap;
use super::super::key_index::{KeyIndex, ABSENT};

/// A walk to the start edge an end edge closes longer than this makes the side index its
/// open edges.
const WALK_BEFORE_INDEX: usize = 32;

/// Open edges (entries without an end) by the fingerprint of their start and payload.
#[derive(Debug, Default, serde::Serialize, serde::Deserialize)]
struct OpenIndex {
    by_print: FxHashMap<u64, Vec<usize>>,
    #[serde(skip)]
    prints: Fingerprints,
}

impl OpenIndex {
    fn print<P: serde::Serialize>(&mut self, start: Time, payload: &P) -> u64 {
        self.prints.of(payload) ^ (start.ticks() as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15)
    }

    fn add(&mut self, print: u64, id: usize) {
        self.by_print.entry(print).or_default().push(id);
    }

    /// Takes `id` out of the bucket `print`; whether it was there.
    fn remove(&mut self, print: u64, id: usize) -> bool {
        let Some(ids) = self.by_print.get_mut(&print) else {
            return false;
        };
        let Some(at) = ids.iter().position(|&i| i == id) else {
            return false;
        };
        ids.swap_remove(at);
        if ids.is_empty() {
            self.by_print.remove(&print);
        }
        true
    }
}

#[derive(Debug, serde::Serialize, serde::Deserialize)]
pub(super) struct Entry<P, K> {
    pub(super) start: Time,
    pub(super) end: Option<Time>,
    pub(super) key: K,
    pub(super) payload: P,
    /// The next entry with the same key ([`NONE`] at the end): each key's entries form a list
    /// through the slots, so a probe reads the key's bucket and then the entries themselves.
    pub(super) next: usize,
    /// The previous entry with the same key; the head's is the list's tail.
    pub(super) prev: usize,
}

/// The end of a key's list (and the head of a key without one).
pub(super) const NONE: usize = ABSENT;

/// One input's events, by key, with the ones not yet paired in start order.
#[derive(Debug, serde::Serialize, serde::Deserialize)]
#[serde(bound(
    serialize = "P: serde::Serialize, K: serde::Serialize + Hash + Eq + Clone + 'static",
    deserialize = "P: serde::Deserialize<'de>, K: serde::Deserialize<'de> + Hash + Eq + Clone + 'static"
))]
pub(super) struct Side<P, K> {
    pub(super) slots: Vec<Option<Entry<P, K>>>,
    free: Vec<usize>,
    /// The first entry of each key's list.
    by_key: KeyIndex<K>,
    pub(super) pending: VecDeque<usize>,
    /// Known ends that arrived in order (points, mostly): expire from the front.
    expiry_fifo: VecDeque<(Time, usize)>,
    /// Known ends that arrived out of order.
    expiry: BinaryHeap<Reverse<(Time, usize)>>,
    pub(super) live: usize,
    /// The open edges by fingerprint, once a walk to one was long.
    open: Option<Box<OpenIndex>>,
}

impl<P: PartialEq, K: Hash + Eq + Clone + 'static> Side<P, K> {
    pub(super) fn new() -> Self {
        Side {
            slots: Vec::new(),
            free: Vec::new(),
            by_key: KeyIndex::new(),
            pending: VecDeque::new(),
            expiry_fifo: VecDeque::new(),
            expiry: BinaryHeap::new(),
            live: 0,
            open: None,
        }
    }

    pub(super) fn get(&self, id: usize) -> Option<&Entry<P, K>> {
        self.slots.get(id).and_then(Option::as_ref)
    }

    /// The entries with this key in start order (ties in arrival order), with their ids.
    #[inline]
    pub(super) fn with_key<'a>(
        &'a self,
        key: &K,
    ) -> impl Iterator<Item = (usize, &'a Entry<P, K>)> + 'a {
        self.chain(self.head(key))
    }

    /// The first entry of this key's list ([`NONE`] if there is none).
    #[inline]
    pub(super) fn head(&self, key: &K) -> usize {
        self.by_key.get(key)
    }

    /// The entries of a key's list from `id` on, with their ids.
    #[inline]
    pub(super) fn chain(&self, mut id: usize) -> impl Iterator<Item = (usize, &Entry<P, K>)> + '_ {
        std::iter::from_fn(move || {
            let e = self.get(id)?;
            let this = id;
            id = e.next;
            Some((this, e))
        })
    }

    pub(super) fn insert(&mut self, entry: Entry<P, K>)
    where
        P: serde::Serialize,
    {
        let (start, end) = (entry.start, entry.end);
        let key = entry.key.clone();
        let id = match self.free.pop() {
            Some(id) => {
                self.slots[id] = Some(entry);
                id
            }
            None => {
                self.slots.push(Some(entry));
                self.slots.len() - 1
            }
        };
        self.link(&key, id, start);
        if let (Some(index), None) = (self.open.as_mut(), end) {
            if let Some(e) = self.slots[id].as_ref() {
                let print = index.print(start, &e.payload);
                index.add(print, id);
            }
        }
        self.live += 1;
        self.pending.push_back(id);
        if let Some(e) = end {
            self.expire_at(e, id);
        }
    }

    fn entry(&mut self, id: usize) -> Option<&mut Entry<P, K>> {
        self.slots.get_mut(id).and_then(Option::as_mut)
    }

    fn start(&self, id: usize) -> Option<Time> {
        self.get(id).map(|e| e.start)
    }

    /// Puts the entry `id` (in its slot) into its key's list, after the last entry that starts
    /// no later than `start`: appended when it comes in order, else found from the tail.
    fn link(&mut self, key: &K, id: usize, start: Time) {
        let head = self.by_key.get(key);
        let Some(tail) = self.get(head).map(|h| h.prev) else {
            self.by_key.insert(key.clone(), id);
            if let Some(e) = self.entry(id) {
                (e.prev, e.next) = (id, NONE);
            }
            return;
        };
        // The entry it goes after: the last that starts no later (none: it is the new head).
        let mut after = tail;
        while self.start(after).is_some_and(|s| s > start) {
            if after == head {
                after = NONE;
                break;
            }
            after = self.get(after).map_or(NONE, |e| e.prev);
        }
        if after == NONE {
            if let Some(e) = self.entry(id) {
                (e.prev, e.next) = (tail, head);
            }
            if let Some(h) = self.entry(head) {
                h.prev = id;
            }
            self.by_key.set(key, id);
            return;
        }
        let next = self.get(after).map_or(NONE, |e| e.next);
        if let Some(e) = self.entry(id) {
            (e.prev, e.next) = (after, next);
        }
        if let Some(a) = self.entry(after) {
            a.next = id;
        }
        // The one after it points back to it; the head does too when it is the new tail.
        let back = if next == NONE { head } else { next };
        if let Some(b) = self.entry(back) {
            b.prev = id;
        }
    }

    fn expire_at(&mut self, end: Time, id: usize) {
        if self.expiry_fifo.back().is_none_or(|&(last, _)| last <= end) {
            self.expiry_fifo.push_back((end, id));
        } else {
            self.expiry.push(Reverse((end, id)));
        }
    }

    /// Closes the open edge (same key, start and payload) at `end`.
    pub(super) fn close(&mut self, key: &K, start: Time, payload: &P, end: Time)
    where
        P: serde::Serialize,
    {
        let found = match self.open.take() {
            Some(mut index) => {
                let found = self.find_indexed(&mut index, key, start, payload);
                self.open = Some(index);
                found
            }
            None => {
                let mut walked = 0;
                let found = self
                    .with_key(key)
                    .take_while(|(_, e)| e.start <= start)
                    .inspect(|_| walked += 1)
                    .find(|(_, e)| e.start == start && e.end.is_none() && e.payload == *payload)
                    .map(|(id, _)| id);
                if walked > WALK_BEFORE_INDEX {
                    self.index_open(found);
                }
                found
            }
        };
        if let Some(id) = found {
            if let Some(e) = self.slots[id].as_mut() {
                e.end = Some(end);
            }
            self.expire_at(end, id);
        }
    }

    /// The open edge an end edge closes, found by fingerprint (by a walk of its key's list
    /// if its fingerprint finds none: an equal payload serialized apart), out of the index.
    fn find_indexed(
        &self,
        index: &mut OpenIndex,
        key: &K,
        start: Time,
        payload: &P,
    ) -> Option<usize>
    where
        P: serde::Serialize,
    {
        let print = index.print(start, payload);
        let closes = |e: &Entry<P, K>| e.start == start && e.end.is_none() && e.payload == *payload;
        let by_print = index.by_print.get(&print).and_then(|ids| {
            ids.iter()
                .copied()
                .find(|&id| self.get(id).is_some_and(|e| e.key == *key && closes(e)))
        });
        if let Some(id) = by_print {
            index.remove(print, id);
            return Some(id);
        }
        let id = self
            .with_key(key)
            .take_while(|(_, e)| e.start <= start)
            .find(|(_, e)| closes(e))
            .map(|(id, _)| id)?;
        if let Some(e) = self.get(id) {
            let own = index.print(e.start, &e.payload);
            index.remove(own, id);
        }
        Some(id)
    }

    /// Indexes every open edge but `closing` (about to be closed).
    fn index_open(&mut self, closing: Option<usize>)
    where
        P: serde::Serialize,
    {
        let mut index = Box::<OpenIndex>::default();
        for (id, slot) in self.slots.iter().enumerate() {
            if let Some(e) = slot.as_ref().filter(|e| e.end.is_none()) {
                if Some(id) != closing {
                    let print = index.print(e.start, &e.payload);
                    index.add(print, id);
                }
            }
        }
        self.open = Some(index);
    }

    /// Takes the entry `id` (already out of its slot) off its key's list.
    fn unlink(&mut self, entry: &Entry<P, K>, id: usize) {
        let head = self.by_key.get(&entry.key);
        if head == NONE {
            return;
        }
        if head == id {
            match self.entry(entry.next) {
                Some(next) => {
                    // The new head keeps the tail.
                    next.prev = entry.prev;
                    self.by_key.set(&entry.key, entry.next);
                }
                None => {
                    self.by_key.remove(&entry.key);
                }
            }
            return;
        }
        if let Some(p) = self.entry(entry.prev) {
            p.next = entry.next;
        }
        // The one after it points back past it; the head does when it was the tail.
        let back = if entry.next == NONE { head } else { entry.next };
        if let Some(b) = self.entry(back) {
            b.prev = entry.prev;
        }
    }

    /// Forgets entries whose end is known and below `t`.
    pub(super) fn expire(&mut self, t: Time) {
        loop {
            let id = match (self.expiry_fifo.front(), self.expiry.peek()) {
                (Some(&(e, id)), _) if e < t => {
                    self.expiry_fifo.pop_front();
                    id
                }
                (_, Some(&Reverse((e, id)))) if e < t => {
                    self.expiry.pop();
                    id
                }
                _ => break,
            };
            if let Some(entry) = self.slots[id].take() {
                self.unlink(&entry, id);
                self.free.push(id);
                self.live -= 1;
            }
        }
    }
}
