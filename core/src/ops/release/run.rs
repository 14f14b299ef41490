//! The main run of a release buffer: the results pushed in sync order, in chunks of plain
//! column vectors, so that a run of points goes in with one copy per column and a released
//! prefix comes out as slices. A chunk of points keeps no `other` column (it is `sync + 1`)
//! until a result that is not a point arrives in it.

use std::collections::VecDeque;

use crate::batch::push_point_ends;
use crate::time::Time;

/// Results a chunk holds (its vectors are made with this capacity and never grow); small in
/// unit tests, so that they cross chunks often.
#[cfg(not(test))]
const CHUNK: usize = 4096;
#[cfg(test)]
const CHUNK: usize = 8;

/// Results a chunk of payloads `P` holds: [`CHUNK`], or an eighth of it (at least 4) for
/// payloads with drop glue, which a release moves out of the chunk's front and so shifts the
/// rest of the chunk down (a copy of up to the chunk's payloads per release; copies are taken
/// without moving anything): a smaller chunk bounds that shift.
const fn chunk_len<P>() -> usize {
    if !std::mem::needs_drop::<P>() {
        CHUNK
    } else if CHUNK / 8 < 4 {
        4
    } else {
        CHUNK / 8
    }
}

/// A piece of the run: results from `front` on (those before it are released).
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub(super) struct Chunk<P> {
    pub(super) sync: Vec<Time>,
    /// Empty while every result of the chunk is a point.
    other: Vec<Time>,
    pub(super) payload: Vec<P>,
    pub(super) front: usize,
    /// The position in the run (counting from its first push ever) of `sync[0]`.
    pub(super) start: u64,
}

impl<P> Chunk<P> {
    fn new() -> Self {
        Chunk {
            sync: Vec::with_capacity(chunk_len::<P>()),
            other: Vec::new(),
            payload: Vec::with_capacity(chunk_len::<P>()),
            front: 0,
            start: 0,
        }
    }

    fn room(&self) -> usize {
        chunk_len::<P>().saturating_sub(self.sync.len())
    }

    /// Whether every result of the chunk is a point.
    pub(super) fn points_only(&self) -> bool {
        self.other.is_empty()
    }

    /// The other time of result `i`.
    pub(super) fn other(&self, i: usize) -> Time {
        if self.points_only() {
            self.sync[i].next_tick()
        } else {
            self.other[i]
        }
    }

    /// Appends the other times of results `lo..hi` to `to`.
    pub(super) fn copy_other(&self, lo: usize, hi: usize, to: &mut Vec<Time>) {
        if self.points_only() {
            push_point_ends(&self.sync[lo..hi], to);
        } else {
            to.extend_from_slice(&self.other[lo..hi]);
        }
    }
}

/// The main run; see the module doc.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
#[serde(bound(
    serialize = "P: serde::Serialize",
    deserialize = "P: serde::Deserialize<'de>"
))]
pub(super) struct MainRun<P> {
    pub(super) chunks: VecDeque<Chunk<P>>,
    /// Emptied chunks, their vectors reused.
    #[serde(skip)]
    spare: Vec<Chunk<P>>,
    len: usize,
    /// Results pushed to the run so far (the position the next one gets).
    pushed: u64,
    /// The last sync time pushed (`-inf` when the run is empty).
    last: Time,
}

impl<P> MainRun<P> {
    pub(super) fn new() -> Self {
        MainRun {
            chunks: VecDeque::new(),
            spare: Vec::new(),
            len: 0,
            pushed: 0,
            last: Time::NEG_INF,
        }
    }

    pub(super) fn len(&self) -> usize {
        self.len
    }

    /// The position the next result pushed gets.
    pub(super) fn pushed(&self) -> u64 {
        self.pushed
    }

    /// The last sync time pushed (`-inf` when the run is empty): a result at or after it
    /// belongs to the run.
    pub(super) fn last(&self) -> Time {
        self.last
    }

    /// The first sync time held (`+inf` when empty).
    pub(super) fn first(&self) -> Time {
        self.chunks
            .front()
            .and_then(|c| c.sync.get(c.front))
            .copied()
            .unwrap_or(Time::INF)
    }

    /// The chunk to append to, with room for at least one result.
    fn tail(&mut self) -> &mut Chunk<P> {
        if self.chunks.back().is_none_or(|c| c.room() == 0) {
            let mut chunk = self.spare.pop().unwrap_or_else(Chunk::new);
            chunk.start = self.pushed;
            self.chunks.push_back(chunk);
        }
        let last = self.chunks.len() - 1;
        &mut self.chunks[last]
    }

    /// Appends a result (at or after [`MainRun::last`]).
    #[inline]
    pub(super) fn push(&mut self, sync: Time, other: Time, payload: P) {
        let chunk = self.tail();
        if !chunk.points_only() {
            chunk.other.push(other);
        } else if other != sync.next_tick() {
            let ends = &mut chunk.other;
            push_point_ends(&chunk.sync, ends);
            ends.push(other);
        }
        chunk.sync.push(sync);
        chunk.payload.push(payload);
        self.len += 1;
        self.pushed += 1;
        self.last = sync;
    }

    /// Appends points given as records, sorted and at or after [`MainRun::last`], one
    /// column at a time.
    pub(super) fn push_points_with<R>(
        &mut self,
        mut records: &[R],
        time: impl Fn(&R) -> Time,
        payload: impl Fn(&R) -> P,
    ) {
        while !records.is_empty() {
            let chunk = self.tail();
            let (now, rest) = records.split_at(chunk.room().min(records.len()));
            let before = chunk.sync.len();
            chunk.sync.extend(now.iter().map(&time));
            if !chunk.points_only() {
                let (sync, other) = (&chunk.sync, &mut chunk.other);
                push_point_ends(&sync[before..], other);
            }
            chunk.payload.extend(now.iter().map(&payload));
            self.last = chunk.sync.last().copied().unwrap_or(self.last);
            self.len += now.len();
            self.pushed += now.len() as u64;
            records = rest;
        }
    }

    /// Appends points given as columns, sorted and at or after [`MainRun::last`], one copy
    /// per column.
    pub(super) fn push_points(&mut self, mut sync: &[Time], mut payloads: &[P])
    where
        P: Clone,
    {
        while !sync.is_empty() {
            let chunk = self.tail();
            let n = chunk.room().min(sync.len());
            chunk.sync.extend_from_slice(&sync[..n]);
            if !chunk.points_only() {
                push_point_ends(&sync[..n], &mut chunk.other);
            }
            chunk.payload.extend_from_slice(&payloads[..n]);
            self.last = sync[n - 1];
            self.len += n;
            self.pushed += n as u64;
            sync = &sync[n..];
            payloads = &payloads[n..];
        }
    }

    /// [`MainRun::push_points`] with the payloads moved out of `payloads` (payloads that own
    /// something: no copy made and dropped). Kept apart from `push_points`, whose copy is one
    /// `extend_from_slice`.
    pub(super) fn append_points(
        &mut self,
        mut sync: &[Time],
        payloads: &mut impl Iterator<Item = P>,
    ) {
        while !sync.is_empty() {
            let chunk = self.tail();
            let n = chunk.room().min(sync.len());
            chunk.sync.extend_from_slice(&sync[..n]);
            if !chunk.points_only() {
                push_point_ends(&sync[..n], &mut chunk.other);
            }
            chunk.payload.extend(payloads.by_ref().take(n));
            self.last = sync[n - 1];
            self.len += n;
            self.pushed += n as u64;
            sync = &sync[n..];
        }
    }

    /// How many results from the front have sync `< t`: a gallop from the front (the results
    /// released are the oldest, and are read next anyway), chunk by chunk.
    pub(super) fn count_below(&self, t: Time) -> usize {
        let mut n = 0;
        for chunk in &self.chunks {
            let s = &chunk.sync[chunk.front..];
            let k = gallop(s, |x| x < t);
            n += k;
            if k < s.len() {
                break;
            }
        }
        n
    }

    /// Drops the first `n` results (already copied out), recycling emptied chunks.
    pub(super) fn drop_front(&mut self, mut n: usize) {
        self.len -= n;
        while n > 0 {
            let Some(chunk) = self.chunks.front_mut() else {
                break;
            };
            let k = n.min(chunk.sync.len() - chunk.front);
            chunk.front += k;
            n -= k;
            if chunk.front == chunk.sync.len() {
                self.recycle_front();
            }
        }
        if self.len == 0 {
            // Nothing held: the next result starts the run afresh, whatever its time.
            while !self.chunks.is_empty() {
                self.recycle_front();
            }
            self.last = Time::NEG_INF;
        }
    }

    /// Moves the first `n` results out into `sync`, `other` and `payload` (for payloads
    /// with drop glue, which a release must not clone), merged with the out-of-order results
    /// `side` (sorted) that go among them: each goes where [`place`](super::place) says,
    /// those that go after all `n` are left in `side`. Each chunk's released part goes out in
    /// pieces, nothing allocated. (The copy path in `release_into` merges the same way over
    /// slices, kept apart so that a copy stays one `extend_from_slice` per piece.)
    pub(super) fn move_front_into(
        &mut self,
        n: usize,
        side: &mut std::iter::Peekable<std::vec::Drain<'_, super::SideEntry<P>>>,
        sync: &mut Vec<Time>,
        other: &mut Vec<Time>,
        payload: &mut Vec<P>,
    ) {
        let mut left = n;
        while left > 0 {
            let Some(chunk) = self.chunks.front_mut() else {
                break;
            };
            let Chunk {
                sync: csync,
                other: cother,
                payload: cpayload,
                front,
                start,
            } = chunk;
            let (lo, hi) = (*front, (*front + left).min(csync.len()));
            let slice = &csync[lo..hi];
            let at = *start + lo as u64;
            let others = |a: usize, b: usize, to: &mut Vec<Time>| {
                if cother.is_empty() {
                    push_point_ends(&slice[a..b], to);
                } else {
                    to.extend_from_slice(&cother[lo + a..lo + b]);
                }
            };
            // The results before `front` were released already (copies): dropped here.
            let mut moved = cpayload.drain(..hi);
            moved.by_ref().take(lo).for_each(drop);
            let mut done = 0;
            while let Some(h) = side.peek() {
                let cut = done + super::place(&slice[done..], at + done as u64, h);
                if cut == slice.len() {
                    break;
                }
                sync.extend_from_slice(&slice[done..cut]);
                others(done, cut, other);
                payload.extend(moved.by_ref().take(cut - done));
                if let Some(h) = side.next() {
                    sync.push(h.sync);
                    other.push(h.other);
                    payload.push(h.payload);
                }
                done = cut;
            }
            sync.extend_from_slice(&slice[done..]);
            others(done, slice.len(), other);
            payload.extend(moved);
            csync.drain(..hi);
            if !cother.is_empty() {
                cother.drain(..hi);
            }
            *start += hi as u64;
            *front = 0;
            left -= hi - lo;
            if csync.is_empty() {
                self.recycle_front();
            }
        }
        self.len -= n - left;
        if self.len == 0 {
            self.drop_front(0);
        }
    }

    fn recycle_front(&mut self) {
        if let Some(mut chunk) = self.chunks.pop_front() {
            // Payloads before `front` were moved out (or are copies): drop what is left.
            chunk.sync.clear();
            chunk.other.clear();
            chunk.payload.clear();
            chunk.front = 0;
            if self.spare.len() < 4 {
                self.spare.push(chunk);
            }
        }
    }

    /// Removes the first result matching `pred`; returns it and its position.
    pub(super) fn remove_first(
        &mut self,
        mut pred: impl FnMut(Time, Time, &P) -> bool,
    ) -> Option<(u64, (Time, Time, P))> {
        let (c, i) = self.chunks.iter().enumerate().find_map(|(c, chunk)| {
            (chunk.front..chunk.sync.len())
                .find(|&i| pred(chunk.sync[i], chunk.other(i), &chunk.payload[i]))
                .map(|i| (c, i))
        })?;
        let chunk = &mut self.chunks[c];
        let pos = chunk.start + i as u64;
        let other = chunk.other(i);
        if !chunk.points_only() {
            chunk.other.remove(i);
        }
        let sync = chunk.sync.remove(i);
        let payload = chunk.payload.remove(i);
        // Later results moved down one position.
        for later in self.chunks.iter_mut().skip(c + 1) {
            later.start -= 1;
        }
        self.pushed -= 1;
        self.len -= 1;
        if self.len == 0 {
            self.drop_front(0);
        } else if let Some(&last) = self.chunks.back().and_then(|c| c.sync.last()) {
            self.last = last;
        }
        Some((pos, (sync, other, payload)))
    }

    /// Takes every result out, in order.
    pub(super) fn drain(&mut self) -> Vec<(Time, Time, P)> {
        let mut all = Vec::with_capacity(self.len);
        while let Some(mut chunk) = self.chunks.pop_front() {
            let front = chunk.front;
            let times: Vec<(Time, Time)> = (front..chunk.sync.len())
                .map(|i| (chunk.sync[i], chunk.other(i)))
                .collect();
            let payloads = chunk.payload.drain(front..);
            all.extend(times.into_iter().zip(payloads).map(|((s, o), p)| (s, o, p)));
        }
        self.len = 0;
        self.last = Time::NEG_INF;
        all
    }
}

/// The length of the prefix of sorted `s` whose elements satisfy `below`: a gallop from the
/// front (1, 2, 4, ... elements), then a binary search in the last step.
#[inline]
pub(super) fn gallop(s: &[Time], below: impl Fn(Time) -> bool) -> usize {
    let mut lo = 0;
    let mut step = 1;
    while lo + step <= s.len() && below(s[lo + step - 1]) {
        lo += step;
        step *= 2;
    }
    let hi = (lo + step).min(s.len());
    lo + s[lo..hi].partition_point(|&x| below(x))
}
