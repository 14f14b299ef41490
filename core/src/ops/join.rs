//! [`Join`]: the temporal inner join, optionally on an equality key.
//!
//! Each pair of a left and a right event whose lifetimes overlap (and whose keys are equal, and
//! for which the combine function returns a payload) yields one event with the intersection
//! lifetime. CTI rule: output CTI = min of both sides' CTIs ([`CtiFrontier`]).
//!
//! A result is released once its start is below the output CTI: as a point or an interval if its
//! end is already final, otherwise as a start edge, followed by its end edge once the end is final
//! and below the output CTI. An open start edge ends at or after its side's CTI, so a result's end
//! is final when the known end is no later than the CTI of every side whose end is unknown.
//!
//! State: each side keeps its events until their end is known and below the output CTI (no future
//! event of the other side can overlap them then); memory is bounded by the CTI lag and by the
//! open edges, not by the stream. A point that arrives below the other side's CTI is joined at
//! once and never stored: every partner it can have has arrived (the common case of a fast
//! stream of points against a slower reference stream whose CTIs are imported). Its results go
//! straight to the output, without waiting for the CTI, when nothing else is held and its side
//! stores nothing: every result that can still come is then at or after it, and it is final
//! (every later CTI of the output is above it). A left point at or above the right side's CTI
//! (the imported CTI comes after the release that issued it) waits in a columnar run, not in
//! the left side's table, and is joined the same way when the right CTI passes it; a right
//! point is joined at once only below the earliest waiting left point, so that it meets them.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};
use std::hash::Hash;

use crate::batch::Batch;
use crate::event::EventKind;
use crate::time::Time;

use super::key_index::{KeyIndex, ABSENT};
use super::release::recycle_empty_runs;
use super::{BinaryOperator, CtiFrontier, ReleaseBuffer};

#[derive(Debug)]
struct Entry<P, K> {
    start: Time,
    end: Option<Time>,
    key: K,
    payload: P,
    /// The next entry with the same key ([`NONE`] at the end): each key's entries form a list
    /// through the slots, so a probe reads the key's bucket and then the entries themselves.
    next: usize,
}

/// The end of a key's list (and the head of a key without one).
const NONE: usize = ABSENT;

/// One input's events, by key, with the ones not yet paired in start order.
#[derive(Debug)]
struct Side<P, K> {
    slots: Vec<Option<Entry<P, K>>>,
    free: Vec<usize>,
    /// The first entry of each key's list.
    by_key: KeyIndex<K>,
    pending: VecDeque<usize>,
    /// Known ends that arrived in order (points, mostly): expire from the front.
    expiry_fifo: VecDeque<(Time, usize)>,
    /// Known ends that arrived out of order.
    expiry: BinaryHeap<Reverse<(Time, usize)>>,
    live: usize,
}

impl<P: PartialEq, K: Hash + Eq + Clone + 'static> Side<P, K> {
    fn new() -> Self {
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

    fn get(&self, id: usize) -> Option<&Entry<P, K>> {
        self.slots.get(id).and_then(Option::as_ref)
    }

    /// The entries with this key, newest first, with their ids.
    #[inline]
    fn with_key<'a>(&'a self, key: &K) -> impl Iterator<Item = (usize, &'a Entry<P, K>)> + 'a {
        self.chain(self.head(key))
    }

    /// The first entry of this key's list ([`NONE`] if there is none).
    #[inline]
    fn head(&self, key: &K) -> usize {
        self.by_key.get(key)
    }

    /// The entries of a key's list from `id` on, with their ids.
    #[inline]
    fn chain(&self, mut id: usize) -> impl Iterator<Item = (usize, &Entry<P, K>)> + '_ {
        std::iter::from_fn(move || {
            let e = self.get(id)?;
            let this = id;
            id = e.next;
            Some((this, e))
        })
    }

    fn insert(&mut self, mut entry: Entry<P, K>) {
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
    fn close(&mut self, key: &K, start: Time, payload: &P, end: Time) {
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
    fn expire(&mut self, t: Time) {
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

#[derive(Debug)]
struct OpenResult<O> {
    left: usize,
    right: usize,
    start: Time,
    payload: O,
}

/// The temporal join; see the module doc. `combine` returns `None` to reject a pair (a join
/// predicate), `Some(payload)` to emit it.
pub struct Join<L, R, K, O, KL, KR, C> {
    key_left: KL,
    key_right: KR,
    combine: C,
    frontier: CtiFrontier,
    left: Side<L, K>,
    right: Side<R, K>,
    open: Vec<OpenResult<O>>,
    held: ReleaseBuffer<O>,
    pairs: Vec<(usize, usize)>,
    /// Left points at or above the right side's CTI: they wait here (in time order, as the
    /// left input comes) instead of in the left side's table, and are joined when the right
    /// CTI passes them.
    waiting: Waiting<L>,
}

impl<L, R, K, O, KL, KR, C> std::fmt::Debug for Join<L, R, K, O, KL, KR, C> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Join")
            .field("left", &self.left.live)
            .field("right", &self.right.live)
            .field("open", &self.open.len())
            .finish()
    }
}

impl<L, R, K, O, KL, KR, C> Join<L, R, K, O, KL, KR, C>
where
    L: Clone + PartialEq,
    R: PartialEq,
    K: Hash + Eq + Clone + 'static,
    O: Clone,
    KL: Fn(&L) -> K,
    KR: Fn(&R) -> K,
    C: Fn(&L, &R) -> Option<O>,
{
    /// A join matching `key_left(l) == key_right(r)`, emitting `combine(l, r)` where it is `Some`.
    pub fn new(key_left: KL, key_right: KR, combine: C) -> Self {
        Join {
            key_left,
            key_right,
            combine,
            frontier: CtiFrontier::new(2),
            left: Side::new(),
            right: Side::new(),
            open: Vec::new(),
            held: ReleaseBuffer::new(),
            pairs: Vec::new(),
            waiting: Waiting::new(),
        }
    }

    /// The final end of the pair's intersection, or `None` while it may still change.
    fn final_end(&self, l: &Entry<L, K>, r: &Entry<R, K>) -> Option<Time> {
        match (l.end, r.end) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (Some(a), None) => (a <= self.frontier.input(1)).then_some(a),
            (None, Some(b)) => (b <= self.frontier.input(0)).then_some(b),
            (None, None) => None,
        }
    }

    /// The output CTI advanced to `t`: emit what it allows.
    fn release(&mut self, t: Time, out: &mut Batch<O>) {
        // 1. Pairs starting before `t`: each is found once, from the side that starts later
        //    (ties go to the left), when that event is no longer pending.
        self.pairs.clear();
        while let Some(&id) = self.left.pending.front() {
            let Some(l) = self.left.slots.get(id).and_then(Option::as_ref) else {
                self.left.pending.pop_front();
                continue;
            };
            if l.start >= t {
                break;
            }
            self.left.pending.pop_front();
            for (rid, r) in self.right.with_key(&l.key) {
                if r.start <= l.start && r.end.is_none_or(|e| e > l.start) {
                    self.pairs.push((id, rid));
                }
            }
        }
        while let Some(&rid) = self.right.pending.front() {
            let Some(r) = self.right.slots.get(rid).and_then(Option::as_ref) else {
                self.right.pending.pop_front();
                continue;
            };
            if r.start >= t {
                break;
            }
            self.right.pending.pop_front();
            for (id, l) in self.left.with_key(&r.key) {
                if l.start < r.start && l.end.is_none_or(|e| e > r.start) {
                    self.pairs.push((id, rid));
                }
            }
        }
        for k in 0..self.pairs.len() {
            let (id, rid) = self.pairs[k];
            let (Some(l), Some(r)) = (self.left.get(id), self.right.get(rid)) else {
                continue;
            };
            let Some(payload) = (self.combine)(&l.payload, &r.payload) else {
                continue;
            };
            let start = l.start.max(r.start);
            match self.final_end(l, r) {
                Some(end) => self.held.push(start, end, payload),
                None => {
                    self.held.push(start, Time::INF, payload.clone());
                    self.open.push(OpenResult {
                        left: id,
                        right: rid,
                        start,
                        payload,
                    });
                }
            }
        }
        // 2. End edges of earlier results whose end is now final and below `t`.
        let mut k = 0;
        while k < self.open.len() {
            let o = &self.open[k];
            let end = match (self.left.get(o.left), self.right.get(o.right)) {
                (Some(l), Some(r)) => self.final_end(l, r),
                _ => None,
            };
            match end {
                Some(e) if e < t => {
                    let o = self.open.swap_remove(k);
                    self.held.push(e, o.start, o.payload);
                }
                _ => k += 1,
            }
        }
        // 3. Emit, then forget what can no longer match.
        self.held.release(t, out);
        self.left.expire(t);
        self.right.expire(t);
    }
}

/// Adds event `i` of a batch to a side.
#[inline]
fn absorb<P: Clone + PartialEq, K: Hash + Eq + Clone + 'static>(
    side: &mut Side<P, K>,
    key: &impl Fn(&P) -> K,
    batch: &Batch<P>,
    i: usize,
) {
    let payload = &batch.payloads()[i];
    match batch.kind(i) {
        EventKind::EndEdge { start, end } => side.close(&key(payload), start, payload, end),
        kind => {
            let (start, other) = kind.encode();
            side.insert(Entry {
                start,
                end: (other != Time::INF).then_some(other),
                key: key(payload),
                payload: payload.clone(),
                next: NONE,
            });
        }
    }
}

/// The side a segment arrives on, and the other one.
struct Sides<'a, P, Q, K, KF> {
    own: &'a mut Side<P, K>,
    own_key: &'a KF,
    /// Where this side's points above the other side's CTI wait, if not in `own`.
    waiting: Option<&'a mut Waiting<P>>,
    other: &'a Side<Q, K>,
    /// The other side's CTI.
    other_cti: Time,
}

/// Takes one segment of one side. A point below the other side's CTI can gain no partner any
/// more (every event of the other side starting at or before it has arrived): it is joined at
/// once and never stored; its results go straight to `out` while `direct` (nothing else held)
/// and this side stores nothing, else to `held`. Anything else is stored for the release.
/// `combine` takes this side's payload first.
#[inline]
fn absorb_segment<P, Q, K, O, KF>(
    input: &Batch<P>,
    range: std::ops::Range<usize>,
    sides: Sides<'_, P, Q, K, KF>,
    combine: impl Fn(&P, &Q) -> Option<O>,
    direct: bool,
    held: &mut ReleaseBuffer<O>,
    out: &mut Batch<O>,
) where
    P: Clone + PartialEq,
    Q: PartialEq,
    K: Hash + Eq + Clone + 'static,
    O: Clone,
    KF: Fn(&P) -> K,
{
    let Sides {
        own,
        own_key,
        mut waiting,
        other,
        other_cti,
    } = sides;
    let sync = &input.sync()[range.clone()];
    let ends = &input.other()[range.clone()];
    let payloads = &input.payloads()[range.clone()];
    let mut first = 0;
    if direct && own.live == 0 {
        // The common case, in its own loop: points below the other side's CTI, joined at once
        // and appended to the output's columns.
        // A point with exactly one result (the usual case against a reference stream) adds
        // only its payload at once: its time columns are copied in runs afterwards.
        let before = out.len();
        let (osync, oother, opayload) = out.columns_mut();
        let mut copied = 0;
        for (k, ((&s, &o), payload)) in sync.iter().zip(ends).zip(payloads).enumerate() {
            if s >= other_cti || o != s.next_tick() {
                break;
            }
            let n = opayload.len();
            for (_, e) in other.with_key(&own_key(payload)) {
                if e.start <= s && e.end.is_none_or(|end| end > s) {
                    if let Some(result) = combine(payload, &e.payload) {
                        opayload.push(result);
                    }
                }
            }
            let results = opayload.len() - n;
            if results != 1 {
                osync.extend_from_slice(&sync[copied..k]);
                oother.extend_from_slice(&ends[copied..k]);
                osync.extend(std::iter::repeat_n(s, results));
                oother.extend(std::iter::repeat_n(o, results));
                copied = k + 1;
            }
            first = k + 1;
        }
        osync.extend_from_slice(&sync[copied..first]);
        oother.extend_from_slice(&ends[copied..first]);
        out.debug_check_from(before);
    }
    // The rest, after an event that is stored (or with results held already): results wait
    // for the CTI.
    for (k, ((&s, &o), payload)) in sync.iter().zip(ends).zip(payloads).enumerate().skip(first) {
        if s < other_cti && o == s.next_tick() {
            for (_, e) in other.with_key(&own_key(payload)) {
                if e.start <= s && e.end.is_none_or(|end| end > s) {
                    if let Some(result) = combine(payload, &e.payload) {
                        held.push_point(s, result);
                    }
                }
            }
        } else if let (Some(w), true) = (waiting.as_deref_mut(), o == s.next_tick()) {
            w.push(s, payload.clone());
        } else {
            absorb(own, own_key, input, range.start + k);
        }
    }
}

impl<L, R, K, O, KL, KR, C> BinaryOperator<L, R, O> for Join<L, R, K, O, KL, KR, C>
where
    L: Clone + PartialEq + Send + 'static,
    R: Clone + PartialEq + Send + 'static,
    K: Hash + Eq + Clone + Send + 'static,
    O: Clone + Send + 'static,
    KL: Fn(&L) -> K + Send + 'static,
    KR: Fn(&R) -> K + Send + 'static,
    C: Fn(&L, &R) -> Option<O> + Send + 'static,
{
    const NAME: &'static str = "join";

    fn on_left(&mut self, input: &Batch<L>, out: &mut Batch<O>) {
        for (range, cti) in input.segments() {
            let combine = &self.combine;
            let direct = self.held.is_empty() && self.open.is_empty();
            absorb_segment(
                input,
                range,
                Sides {
                    own: &mut self.left,
                    own_key: &self.key_left,
                    waiting: Some(&mut self.waiting),
                    other: &self.right,
                    other_cti: self.frontier.input(1),
                },
                |l: &L, r: &R| combine(l, r),
                direct,
                &mut self.held,
                out,
            );
            if let Some(t) = cti.and_then(|t| self.frontier.advance(0, t)) {
                self.release(t, out);
            }
        }
    }

    fn on_right(&mut self, input: &Batch<R>, out: &mut Batch<O>) {
        for (range, cti) in input.segments() {
            let combine = &self.combine;
            let direct = self.held.is_empty() && self.open.is_empty();
            absorb_segment(
                input,
                range,
                Sides {
                    own: &mut self.right,
                    own_key: &self.key_right,
                    waiting: None,
                    other: &self.left,
                    // Below the earliest waiting left point too: a right point at or above it
                    // may still meet one, so it is stored.
                    other_cti: self.frontier.input(0).min(self.waiting.min()),
                },
                |r: &R, l: &L| combine(l, r),
                direct,
                &mut self.held,
                out,
            );
            if let Some(t) = cti.filter(|&t| t > self.frontier.input(1)) {
                // Every right event below `t` is in: the left points waiting below it are
                // final. Their results wait (sorted) for the output CTI.
                let (right, key_left, combine, held) =
                    (&self.right, &self.key_left, &self.combine, &mut self.held);
                let mut probe = |s: Time, payload: &L| {
                    for (_, e) in right.with_key(&key_left(payload)) {
                        if e.start <= s && e.end.is_none_or(|end| end > s) {
                            if let Some(result) = combine(payload, &e.payload) {
                                held.push_point(s, result);
                            }
                        }
                    }
                };
                self.waiting.release(t, |points| match points {
                    Released::Run(times, payloads) => {
                        for (&s, p) in times.iter().zip(payloads) {
                            probe(s, p);
                        }
                    }
                    Released::One(s, p) => probe(s, p),
                });
            }
            if let Some(t) = cti.and_then(|t| self.frontier.advance(1, t)) {
                self.release(t, out);
            }
        }
    }

    fn state_size(&self) -> usize {
        self.left.live + self.right.live + self.open.len() + self.held.len() + self.waiting.len()
    }
}

/// Points of an unordered input waiting for the other side's CTI to pass them: the ones that
/// came in time order in a run held as columns (released in slices); the others, as they come,
/// in `late`, which a release sorts (by time, descending) into one of a few `runs` it then
/// pops from the back. Each out-of-order point is sorted once and released in constant time;
/// a release looks at the back of each run, and the runs are merged when they grow many.
#[derive(Debug)]
struct Waiting<P> {
    /// The run, in time order through the chunks (each from its `front` on): plain vectors,
    /// so that a run goes in with one `extend_from_slice` per column (a `memcpy` for `Copy`
    /// payloads; `VecDeque::extend` wrote item by item) and comes out as one slice per column.
    chunks: VecDeque<Chunk<P>>,
    /// Emptied chunks, their vectors reused.
    spare: Vec<Chunk<P>>,
    late: Vec<(Time, P)>,
    late_min: Time,
    runs: VecDeque<Vec<(Time, P)>>,
    /// Emptied runs, reused.
    pool: Vec<Vec<(Time, P)>>,
}

/// Sorted runs of out-of-order points kept before they are merged into one.
const MAX_LATE_RUNS: usize = 32;

/// A piece of the waiting run: points from `front` on (those before it are released, and
/// dropped when the chunk is emptied).
#[derive(Debug)]
struct Chunk<P> {
    sync: Vec<Time>,
    payload: Vec<P>,
    front: usize,
}

impl<P> Default for Chunk<P> {
    fn default() -> Self {
        Chunk {
            sync: Vec::new(),
            payload: Vec::new(),
            front: 0,
        }
    }
}

impl<P> Chunk<P> {
    fn len(&self) -> usize {
        self.sync.len() - self.front
    }
}

/// Points go onto the last chunk while it holds fewer than this.
const CHUNK_POINTS: usize = 4096;

/// What [`Waiting::release`] hands out: a slice of the run, or one out-of-order point.
enum Released<'a, P> {
    Run(&'a [Time], &'a [P]),
    One(Time, &'a P),
}

impl<P> Waiting<P> {
    fn len(&self) -> usize {
        self.chunks.iter().map(Chunk::len).sum::<usize>()
            + self.late.len()
            + self.runs.iter().map(Vec::len).sum::<usize>()
    }
}

impl<P: Clone> Waiting<P> {
    fn new() -> Self {
        Waiting {
            chunks: VecDeque::new(),
            spare: Vec::new(),
            late: Vec::new(),
            late_min: Time::INF,
            runs: VecDeque::new(),
            pool: Vec::new(),
        }
    }

    /// The last time of the run (`-inf` when it is empty).
    #[inline]
    fn last(&self) -> Time {
        self.chunks
            .back()
            .and_then(|c| c.sync.last())
            .copied()
            .unwrap_or(Time::NEG_INF)
    }

    /// The earliest time held (`+inf` when empty).
    fn min(&self) -> Time {
        let runs = self
            .runs
            .iter()
            .filter_map(|r| r.last().map(|e| e.0))
            .min()
            .unwrap_or(Time::INF);
        self.chunks
            .front()
            .map_or(Time::INF, |c| c.sync[c.front])
            .min(self.late_min)
            .min(runs)
    }

    /// Adds points sorted by time, at or after [`Waiting::last`].
    #[inline]
    fn push_run(&mut self, sync: &[Time], payloads: &[P]) {
        let chunk = self.last_chunk();
        chunk.sync.extend_from_slice(sync);
        chunk.payload.extend_from_slice(payloads);
    }

    /// The chunk to append to: the last one, or a new one when it is full (or there is none).
    fn last_chunk(&mut self) -> &mut Chunk<P> {
        if self
            .chunks
            .back()
            .is_none_or(|c| c.sync.len() >= CHUNK_POINTS)
        {
            let chunk = self.spare.pop().unwrap_or_default();
            self.chunks.push_back(chunk);
        }
        let last = self.chunks.len() - 1;
        &mut self.chunks[last]
    }

    #[inline]
    fn push(&mut self, s: Time, payload: P) {
        if self.last() <= s {
            let chunk = self.last_chunk();
            chunk.sync.push(s);
            chunk.payload.push(payload);
        } else {
            self.late_min = self.late_min.min(s);
            self.late.push((s, payload));
        }
    }

    /// Takes out every point with time `< t`, in no particular order: slices of the run,
    /// then the out-of-order ones one by one.
    fn release(&mut self, t: Time, mut f: impl FnMut(Released<'_, P>)) {
        while let Some(chunk) = self.chunks.front_mut() {
            let k = chunk.front + chunk.sync[chunk.front..].partition_point(|&s| s < t);
            if k > chunk.front {
                f(Released::Run(
                    &chunk.sync[chunk.front..k],
                    &chunk.payload[chunk.front..k],
                ));
                chunk.front = k;
            }
            if k < chunk.sync.len() {
                break;
            }
            if let Some(mut emptied) = self.chunks.pop_front() {
                emptied.sync.clear();
                emptied.payload.clear();
                emptied.front = 0;
                self.spare.push(emptied);
            }
        }
        if !self.late.is_empty() && self.late_min < t {
            // Sort the new ones into a run (descending: the earliest at the back).
            let mut run = self.pool.pop().unwrap_or_default();
            std::mem::swap(&mut run, &mut self.late);
            run.sort_unstable_by_key(|x| Reverse(x.0));
            self.runs.push_back(run);
            self.late_min = Time::INF;
            if self.runs.len() > MAX_LATE_RUNS {
                let mut all = self.pool.pop().unwrap_or_default();
                for mut r in self.runs.drain(..) {
                    all.append(&mut r);
                    self.pool.push(r);
                }
                all.sort_unstable_by_key(|x| Reverse(x.0));
                self.runs.push_back(all);
            }
        }
        let mut emptied = false;
        for run in &mut self.runs {
            while run.last().is_some_and(|e| e.0 < t) {
                if let Some((s, p)) = run.pop() {
                    f(Released::One(s, &p));
                }
            }
            emptied |= run.is_empty();
        }
        if emptied {
            recycle_empty_runs(&mut self.runs, &mut self.pool, MAX_LATE_RUNS);
        }
    }
}

/// The temporal join of an *unordered* left stream (released on arrival, see
/// [`crate::ops::Unordered`]) with an ordinary right stream; its output is unordered too: each
/// result is emitted as soon as it is final, not sorted. The pairs, lifetimes and CTIs are
/// [`Join`]'s (output CTI = min of both sides' CTIs); per CTI the results are the same multiset.
///
/// A left point is joined once the right side's CTI passes it (every right event that can
/// overlap it has arrived then): at once if it already has, else when it does, from an
/// unsorted hold. Nothing sorts the points, which is the point: with CTIs imported from the
/// left stream, every point waits one CTI lag, and an ordered input would hold and sort it in
/// the ingress instead. Left intervals are held until the left CTI passes them and joined by
/// an ordinary [`Join`] inside, which also keeps the right side's events; that join's left CTI
/// is held at the earliest waiting point, so that it keeps every right event such a point
/// can still meet.
pub struct UnorderedJoin<L, R, K, O, KL, KR, C> {
    inner: Join<L, R, K, O, KL, KR, C>,
    waiting: Waiting<L>,
    /// Left events that are not points, until the left CTI passes them.
    intervals: ReleaseBuffer<L>,
    left_cti: Time,
    left: Batch<L>,
    right: Batch<R>,
    results: Batch<O>,
    /// Scratch: the heads of the key lists of a block of points being joined.
    heads: Vec<usize>,
}

impl<L, R, K, O, KL, KR, C> std::fmt::Debug for UnorderedJoin<L, R, K, O, KL, KR, C> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("UnorderedJoin")
            .field("inner", &self.inner)
            .field("waiting", &self.waiting.len())
            .field("intervals", &self.intervals.len())
            .finish()
    }
}

impl<L, R, K, O, KL, KR, C> UnorderedJoin<L, R, K, O, KL, KR, C>
where
    L: Clone + PartialEq + Send + 'static,
    R: Clone + PartialEq + Send + 'static,
    K: Hash + Eq + Clone + Send + 'static,
    O: Clone + Send + 'static,
    KL: Fn(&L) -> K + Send + 'static,
    KR: Fn(&R) -> K + Send + 'static,
    C: Fn(&L, &R) -> Option<O> + Send + 'static,
{
    /// A join matching `key_left(l) == key_right(r)`, emitting `combine(l, r)` where it is `Some`.
    pub fn new(key_left: KL, key_right: KR, combine: C) -> Self {
        UnorderedJoin {
            inner: Join::new(key_left, key_right, combine),
            waiting: Waiting::new(),
            intervals: ReleaseBuffer::new(),
            left_cti: Time::NEG_INF,
            left: Batch::new(),
            right: Batch::new(),
            results: Batch::new(),
            heads: Vec::new(),
        }
    }

    /// Joins the left point at `s` with the right events now known (all of them that can
    /// overlap it: the right CTI is above `s`), emitting the results.
    #[inline]
    fn probe(inner: &Join<L, R, K, O, KL, KR, C>, s: Time, payload: &L, out: &mut Batch<O>) {
        for (_, e) in inner.right.with_key(&(inner.key_left)(payload)) {
            if e.start <= s && e.end.is_none_or(|end| end > s) {
                if let Some(result) = (inner.combine)(payload, &e.payload) {
                    out.push_on_arrival(s, s.next_tick(), result);
                }
            }
        }
    }

    /// [`UnorderedJoin::probe`] for points given as columns; a point with exactly one result
    /// (the usual case against a reference stream) adds only its payload at once, its times
    /// are copied in runs afterwards.
    ///
    /// The key lookups of a block of points are done first, in a loop of their own, then the
    /// entries are read: each loop is short, so the processor has many independent loads in
    /// flight (the right side's table and entries are seldom in L1).
    fn probe_run(
        inner: &Join<L, R, K, O, KL, KR, C>,
        times: &[Time],
        payloads: &[L],
        heads: &mut Vec<usize>,
        out: &mut Batch<O>,
    ) {
        const BLOCK: usize = 256;
        for (times, payloads) in times.chunks(BLOCK).zip(payloads.chunks(BLOCK)) {
            heads.clear();
            heads.extend(
                payloads
                    .iter()
                    .map(|p| inner.right.head(&(inner.key_left)(p))),
            );
            Self::probe_block(inner, times, payloads, heads, out);
        }
    }

    /// [`UnorderedJoin::probe_run`] for one block, its lists' heads found.
    #[inline]
    fn probe_block(
        inner: &Join<L, R, K, O, KL, KR, C>,
        times: &[Time],
        payloads: &[L],
        heads: &[usize],
        out: &mut Batch<O>,
    ) {
        let before = out.len();
        let (osync, oother, opayload) = out.columns_mut();
        let mut copied = 0;
        for (k, ((&s, payload), &head)) in times.iter().zip(payloads).zip(heads).enumerate() {
            let n = opayload.len();
            for (_, e) in inner.right.chain(head) {
                if e.start <= s && e.end.is_none_or(|end| end > s) {
                    if let Some(result) = (inner.combine)(payload, &e.payload) {
                        opayload.push(result);
                    }
                }
            }
            let results = opayload.len() - n;
            if results != 1 {
                osync.extend_from_slice(&times[copied..k]);
                oother.extend(times[copied..k].iter().map(|s| s.next_tick()));
                osync.extend(std::iter::repeat_n(s, results));
                oother.extend(std::iter::repeat_n(s.next_tick(), results));
                copied = k + 1;
            }
        }
        osync.extend_from_slice(&times[copied..]);
        oother.extend(times[copied..].iter().map(|s| s.next_tick()));
        out.debug_check_from(before);
    }

    /// Moves what the inner join emitted to the output.
    fn forward(&mut self, out: &mut Batch<O>) {
        out.append(&mut self.results);
        self.results.clear();
    }

    /// Advances the inner join's left CTI to the left CTI, held at the earliest waiting
    /// point, with the intervals it passes.
    fn sync_left(&mut self, out: &mut Batch<O>) {
        let t = self.left_cti.min(self.waiting.min());
        if t <= self.inner.frontier.input(0) {
            return;
        }
        self.left.clear();
        self.intervals.release(t, &mut self.left);
        self.inner.on_left(&self.left, &mut self.results);
        self.forward(out);
    }
}

impl<L, R, K, O, KL, KR, C> BinaryOperator<L, R, O> for UnorderedJoin<L, R, K, O, KL, KR, C>
where
    L: Clone + PartialEq + Send + 'static,
    R: Clone + PartialEq + Send + 'static,
    K: Hash + Eq + Clone + Send + 'static,
    O: Clone + Send + 'static,
    KL: Fn(&L) -> K + Send + 'static,
    KR: Fn(&R) -> K + Send + 'static,
    C: Fn(&L, &R) -> Option<O> + Send + 'static,
{
    const NAME: &'static str = "join (unordered)";

    fn on_left(&mut self, input: &Batch<L>, out: &mut Batch<O>) {
        for (range, cti) in input.segments() {
            let right_cti = self.inner.frontier.input(1);
            let sync = &input.sync()[range.clone()];
            let ends = &input.other()[range.clone()];
            let payloads = &input.payloads()[range];
            let mut i = 0;
            while i < sync.len() {
                // A run of points in time order that must wait (the usual case), in one go.
                let (start, mut last) = (i, self.waiting.last());
                while i < sync.len()
                    && sync[i] >= right_cti
                    && sync[i] >= last
                    && ends[i] == sync[i].next_tick()
                {
                    last = sync[i];
                    i += 1;
                }
                if i > start {
                    self.waiting.push_run(&sync[start..i], &payloads[start..i]);
                    continue;
                }
                let (s, o, payload) = (sync[i], ends[i], &payloads[i]);
                if o != s.next_tick() {
                    self.intervals.push(s, o, payload.clone());
                } else if s < right_cti {
                    Self::probe(&self.inner, s, payload, out);
                } else {
                    self.waiting.push(s, payload.clone());
                }
                i += 1;
            }
            if let Some(t) = cti {
                self.left_cti = self.left_cti.max(t);
                self.sync_left(out);
            }
        }
    }

    fn on_right(&mut self, input: &Batch<R>, out: &mut Batch<O>) {
        for (range, cti) in input.segments() {
            if !range.is_empty() {
                self.right.clear();
                for i in range {
                    self.right.push_event(
                        input.sync()[i],
                        input.other()[i],
                        input.payloads()[i].clone(),
                    );
                }
                self.inner.on_right(&self.right, &mut self.results);
                self.forward(out);
            }
            let Some(t) = cti else { continue };
            if t <= self.inner.frontier.input(1) {
                continue;
            }
            // Every right event below `t` is in: the points waiting below it are final.
            let (inner, heads) = (&self.inner, &mut self.heads);
            self.waiting.release(t, |points| match points {
                Released::Run(times, payloads) => {
                    Self::probe_run(inner, times, payloads, heads, out)
                }
                Released::One(s, payload) => Self::probe(inner, s, payload, out),
            });
            // Their results are out: the inner join's left CTI may pass them now (before the
            // right CTI, so that the output CTIs are the ordered join's).
            self.sync_left(out);
            self.right.clear();
            self.right.push_cti(t);
            self.inner.on_right(&self.right, &mut self.results);
            self.forward(out);
        }
    }

    fn state_size(&self) -> usize {
        self.inner.state_size() + self.waiting.len() + self.intervals.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Waiting points come out with their own payloads, exactly once, runs and late ones,
    /// whether they went in one by one or in runs, across many chunks, and released in steps
    /// that cut chunks anywhere.
    #[test]
    fn waiting_points_come_out_once_with_their_payloads_across_chunks() {
        let mut w = Waiting::<(u8, i64)>::new();
        let (mut next, mut pushed, mut late) = (0i64, 0usize, 0usize);
        let mut released = Vec::new();
        for round in 0..400i64 {
            // Runs of up to 297 points in time order, some of them one by one.
            let n = round * 37 % 297 + 1;
            let times: Vec<Time> = (next..next + n).map(Time::from_ticks).collect();
            let payloads: Vec<(u8, i64)> = (next..next + n).map(|v| (7, v)).collect();
            if round % 2 == 0 {
                w.push_run(&times, &payloads);
            } else {
                for (t, p) in times.iter().zip(payloads) {
                    w.push(*t, p);
                }
            }
            next += n;
            pushed += n as usize;
            if round % 4 == 0 && next > 3 {
                w.push(Time::from_ticks(next - 3), (7, next - 3)); // out of order
                pushed += 1;
                late += 1;
            }
            let t = Time::from_ticks(next - round % 50 * 150);
            w.release(t, |r| match r {
                Released::Run(ts, ps) => {
                    released.extend(ts.iter().zip(ps).map(|(t, p)| (t.ticks(), p.1)));
                }
                Released::One(t, p) => released.push((t.ticks(), p.1)),
            });
            assert!(
                w.min() >= t,
                "round {round}: {:?} left below {t:?}",
                w.min()
            );
        }
        assert!(
            w.chunks.len() + w.spare.len() >= 2,
            "the run went through several chunks"
        );
        w.release(Time::INF, |r| match r {
            Released::Run(ts, ps) => {
                released.extend(ts.iter().zip(ps).map(|(t, p)| (t.ticks(), p.1)));
            }
            Released::One(t, p) => released.push((t.ticks(), p.1)),
        });
        assert!(
            released.iter().all(|(t, v)| t == v),
            "a payload left its time"
        );
        assert_eq!((released.len(), w.len()), (pushed, 0));
        let mut sorted = released.clone();
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!(
            sorted.len() + late,
            pushed,
            "each point once (the late ones repeat a time)"
        );
    }

    /// Points below the right side's CTI are joined at once: a point with no partner adds
    /// nothing, one with two partners adds two results, each with the point's lifetime, in
    /// input order.
    #[test]
    fn points_joined_on_arrival_keep_their_times_whatever_their_number_of_results() {
        let t = Time::from_ticks;
        let mut join = Join::new(
            |l: &(u8, i64)| l.0,
            |r: &(u8, i64)| r.0,
            |l, r| Some(l.1 * r.1),
        );
        let mut out = Batch::new();
        let mut right = Batch::new();
        right.push_event(t(0), t(100), (1, 10));
        right.push_event(t(2), t(50), (1, 100));
        right.push_event(t(3), t(4), (2, 1000)); // over before any point
        right.push_cti(t(20));
        join.on_right(&right, &mut out);
        let mut left = Batch::new();
        for (at, key, v) in [(5, 1, 1), (6, 2, 2), (7, 1, 3), (8, 3, 4), (9, 1, 5)] {
            left.push_event(t(at), t(at + 1), (key, v));
        }
        left.push_cti(t(10));
        join.on_left(&left, &mut out);
        let got: Vec<(Time, Time, i64)> = (0..out.len())
            .map(|i| (out.sync()[i], out.other()[i], out.payloads()[i]))
            .collect();
        // Newest partner first for each point (the right side's list order).
        assert_eq!(
            got,
            vec![
                (t(5), t(6), 100),
                (t(5), t(6), 10),
                (t(7), t(8), 300),
                (t(7), t(8), 30),
                (t(9), t(10), 500),
                (t(9), t(10), 50),
            ]
        );
        assert_eq!(out.last_cti(), Some(t(10)));
    }
}
