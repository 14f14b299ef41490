//! One side of the join: its events by key, the ones not yet paired in start order, and their
//! known ends, so that an event is forgotten once no event of the other side can meet it.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};
use std::hash::Hash;

use crate::time::Time;

use super::super::key_index::{KeyIndex, ABSENT};

#[derive(Debug)]
pub(super) struct Entry<P, K> {
    pub(super) start: Time,
    pub(super) end: Option<Time>,
    pub(super) key: K,
    pub(super) payload: P,
    /// The next entry with the same key ([`NONE`] at the end): each key's entries form a list
    /// through the slots, so a probe reads the key's bucket and then the entries themselves.
    pub(super) next: usize,
}

/// The end of a key's list (and the head of a key without one).
pub(super) const NONE: usize = ABSENT;

/// One input's events, by key, with the ones not yet paired in start order.
#[derive(Debug)]
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
        }
    }

    pub(super) fn get(&self, id: usize) -> Option<&Entry<P, K>> {
        self.slots.get(id).and_then(Option::as_ref)
    }

    /// The entries with this key, newest first, with their ids.
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

    pub(super) fn insert(&mut self, mut entry: Entry<P, K>) {
        let end = entry.end;
        let key = entry.key.clone();
        let id = self.free.last().copied().unwrap_or(self.slots.len());
        entry.next = self.by_key.insert(key, id).unwrap_or(NONE);
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
        self.live += 1;
        self.pending.push_back(id);
        if let Some(e) = end {
            self.expire_at(e, id);
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
    pub(super) fn close(&mut self, key: &K, start: Time, payload: &P, end: Time) {
        let found = self
            .with_key(key)
            .find(|(_, e)| e.start == start && e.end.is_none() && e.payload == *payload)
            .map(|(id, _)| id);
        if let Some(id) = found {
            if let Some(e) = self.slots[id].as_mut() {
                e.end = Some(end);
            }
            self.expire_at(end, id);
        }
    }

    /// Takes the entry `id` (already out of its slot) off its key's list.
    fn unlink(&mut self, entry: &Entry<P, K>, id: usize) {
        let head = self.by_key.get(&entry.key);
        if head == NONE {
            return;
        }
        if head == id {
            if entry.next == NONE {
                self.by_key.remove(&entry.key);
            } else {
                self.by_key.set(&entry.key, entry.next);
            }
            return;
        }
        let mut prev = head;
        while let Some(p) = self.slots.get(prev).and_then(Option::as_ref) {
            if p.next == id {
                if let Some(p) = self.slots[prev].as_mut() {
                    p.next = entry.next;
                }
                return;
            }
            prev = p.next;
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
