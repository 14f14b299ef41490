//! [`HoppingWindow`]: hopping and tumbling windows with an aggregate, optionally per group.
//!
//! Windows are `[a + nH, a + nH + S)` for every integer n (size S, hop H, alignment a; tumbling
//! is H = S). An event belongs to every window its lifetime overlaps; empty windows emit
//! nothing. A window closes when the input CTI reaches its end.
//!
//! CTI rule:
//! - [`WindowOutput::PointAtEnd`] (default): each result is a point at the window's end; output
//!   CTI = input CTI (a result at exactly the CTI waits for the next one, by the release rule).
//! - [`WindowOutput::Window`]: each result has the window's lifetime; output CTI = min(input CTI,
//!   start of the earliest window that can still change), so the CTI is pushed back to the start
//!   of the earliest open window.
//!
//! State: the aggregate states of windows not yet closed that have members, per group, and the
//! start edges not yet closed. A start edge counts in every window from its start until its end
//! edge arrives; windows that closed before then counted it.

use std::collections::BTreeMap;
use std::hash::Hash;

use crate::batch::Batch;
use crate::event::{EventKind, EventShape};
use crate::time::{Time, TimeSpan};

use super::groups::Groups;
use super::{Aggregate, ReleaseBuffer, UnaryOperator};

/// What a window result looks like.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum WindowOutput {
    /// A point at the window's end; output CTI = input CTI.
    #[default]
    PointAtEnd,
    /// An interval with the window's lifetime; output CTI held back to the earliest open window.
    Window,
}

/// Size, hop, alignment and output policy of hopping windows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WindowSpec {
    size: i64,
    hop: i64,
    alignment: i64,
    output: WindowOutput,
}

impl WindowSpec {
    /// Hopping windows of `size` every `hop`, aligned at time 0, results at window ends. Size
    /// and hop are at least one tick.
    pub fn hopping(size: TimeSpan, hop: TimeSpan) -> Self {
        WindowSpec {
            size: size.ticks().max(1),
            hop: hop.ticks().max(1),
            alignment: 0,
            output: WindowOutput::PointAtEnd,
        }
    }

    /// Tumbling windows: hop = size.
    pub fn tumbling(size: TimeSpan) -> Self {
        Self::hopping(size, size)
    }

    /// Windows start at `alignment + n * hop`.
    pub fn alignment(mut self, alignment: Time) -> Self {
        self.alignment = alignment.ticks();
        self
    }

    /// The output policy.
    pub fn output(mut self, output: WindowOutput) -> Self {
        self.output = output;
        self
    }

    fn start(&self, n: i64) -> Time {
        let t = i128::from(self.alignment) + i128::from(n) * i128::from(self.hop);
        clamp(t)
    }

    fn end(&self, n: i64) -> Time {
        self.start(n) + TimeSpan::from_ticks(self.size)
    }

    /// The first window whose end is after `x`.
    #[inline]
    fn first_ending_after(&self, x: Time) -> i64 {
        if x == Time::NEG_INF {
            return i64::MIN;
        }
        // i64 arithmetic when it cannot overflow (always, for real times); i128 otherwise.
        match x
            .ticks()
            .checked_sub(self.alignment)
            .and_then(|v| v.checked_sub(self.size))
        {
            Some(v) => v.div_euclid(self.hop).saturating_add(1),
            None => {
                let v =
                    (i128::from(x.ticks()) - i128::from(self.alignment) - i128::from(self.size))
                        .div_euclid(i128::from(self.hop))
                        + 1;
                v.clamp(i128::from(i64::MIN), i128::from(i64::MAX)) as i64
            }
        }
    }

    /// The last window starting before `x`.
    #[inline]
    fn last_starting_before(&self, x: Time) -> i64 {
        if x == Time::INF {
            return i64::MAX;
        }
        match x
            .ticks()
            .checked_sub(self.alignment)
            .and_then(|v| v.checked_sub(1))
        {
            Some(v) => v.div_euclid(self.hop),
            None => {
                let v = (i128::from(x.ticks()) - i128::from(self.alignment) - 1)
                    .div_euclid(i128::from(self.hop));
                v.clamp(i128::from(i64::MIN), i128::from(i64::MAX)) as i64
            }
        }
    }
}

fn clamp(t: i128) -> Time {
    Time::from_ticks(t.clamp(
        i128::from(Time::MIN_FINITE.ticks()),
        i128::from(Time::MAX_FINITE.ticks()),
    ) as i64)
}

/// The group map of stored window `n`, a pooled (or new) one if it has none yet.
fn stored_window<'a, K: Hash + Eq + Clone + 'static, S>(
    windows: &'a mut BTreeMap<i64, Groups<K, S>>,
    pool: &mut Vec<Groups<K, S>>,
    n: i64,
) -> &'a mut Groups<K, S> {
    windows
        .entry(n)
        .or_insert_with(|| pool.pop().unwrap_or_default())
}

/// The cached window of [`HoppingWindow`].
struct Current<K, S> {
    n: i64,
    start: Time,
    end: Time,
    groups: Groups<K, S>,
}

/// Maps kept in the pool for reuse.
const POOL: usize = 4;

/// Hopping windows with an aggregate per group; see the module doc. `make(key, result)` builds
/// each result's payload.
pub struct HoppingWindow<P, K, A: Aggregate<P>, O, KF, MK> {
    spec: WindowSpec,
    key: KF,
    agg: A,
    make: MK,
    windows: BTreeMap<i64, Groups<K, A::State>>,
    /// The window the last single-window member went to, kept out of `windows` so that a
    /// run of members in one tumbling window costs one group lookup each.
    current: Option<Current<K, A::State>>,
    /// The window before it, if it was current just before: where the stragglers of an
    /// out-of-order input mostly go, found without a search.
    previous: Option<Current<K, A::State>>,
    /// Emptied group maps, reused for new windows.
    pool: Vec<Groups<K, A::State>>,
    open_edges: Vec<(Time, K, P)>,
    cti: Time,
    /// The first window not yet closed (derived from `cti`, cached).
    first_open: i64,
    held: ReleaseBuffer<O>,
}

impl<P, K, A: Aggregate<P>, O, KF, MK> std::fmt::Debug for HoppingWindow<P, K, A, O, KF, MK> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HoppingWindow")
            .field("spec", &self.spec)
            .field("open_windows", &self.windows.len())
            .field("open_edges", &self.open_edges.len())
            .finish()
    }
}

impl<P, K, A, O, KF, MK> HoppingWindow<P, K, A, O, KF, MK>
where
    P: Clone + PartialEq,
    K: Hash + Eq + Clone + 'static,
    A: Aggregate<P>,
    KF: Fn(&P) -> K,
    MK: Fn(&K, A::Output) -> O,
    O: Clone,
{
    /// Windows per `spec`, grouped by `key`, aggregated by `agg`, results built by `make`.
    pub fn new(spec: WindowSpec, key: KF, agg: A, make: MK) -> Self {
        HoppingWindow {
            spec,
            key,
            agg,
            make,
            windows: BTreeMap::new(),
            current: None,
            previous: None,
            pool: Vec::new(),
            open_edges: Vec::new(),
            cti: Time::NEG_INF,
            first_open: i64::MIN,
            held: ReleaseBuffer::new(),
        }
    }

    /// Adds a member with lifetime `[start, end)` to every window not yet closed that it overlaps.
    #[inline(always)]
    fn add(&mut self, start: Time, end: Time, payload: &P) {
        if self.spec.size == self.spec.hop {
            // Tumbling: a member inside the current (or the previous) window's lifetime
            // overlaps no other window.
            for c in [self.current.as_mut(), self.previous.as_mut()]
                .into_iter()
                .flatten()
            {
                if c.start <= start && end <= c.end {
                    let state = c.groups.entry((self.key)(payload), || self.agg.init());
                    self.agg.add(state, payload);
                    return;
                }
            }
        }
        self.add_slow(start, end, payload);
    }

    #[cold]
    #[inline(never)]
    fn add_slow(&mut self, start: Time, end: Time, payload: &P) {
        let first = self.spec.first_ending_after(start).max(self.first_open);
        let last = self.spec.last_starting_before(end);
        if first > last {
            return;
        }
        let key = (self.key)(payload);
        if first == last {
            if self.current.as_ref().is_some_and(|c| first < c.n) {
                // A late member of an earlier window (input out of order): the current window
                // stays, so that the members after it do not move it back and forth.
                let groups = match self.previous.as_mut() {
                    Some(p) if p.n == first => &mut p.groups,
                    _ => stored_window(&mut self.windows, &mut self.pool, first),
                };
                let state = groups.entry(key, || self.agg.init());
                self.agg.add(state, payload);
                return;
            }
            self.switch_current(first);
            if let Some(c) = self.current.as_mut() {
                let state = c.groups.entry(key, || self.agg.init());
                self.agg.add(state, payload);
            }
            return;
        }
        self.flush_current();
        let mut n = first;
        loop {
            let groups = stored_window(&mut self.windows, &mut self.pool, n);
            let state = groups.entry(key.clone(), || self.agg.init());
            self.agg.add(state, payload);
            if n == last {
                break;
            }
            n += 1;
        }
    }

    /// Makes window `n` the current one (the one before it, if current, becomes the previous).
    fn switch_current(&mut self, n: i64) {
        if self.current.as_ref().is_some_and(|c| c.n == n) {
            return;
        }
        match self.current.take() {
            Some(c) if c.n + 1 == n && self.previous.as_ref().is_none_or(|p| p.n < c.n) => {
                if let Some(p) = self.previous.replace(c) {
                    self.windows.insert(p.n, p.groups);
                }
            }
            other => {
                self.current = other;
                self.flush_current();
            }
        }
        if self.previous.as_ref().is_some_and(|p| p.n == n) {
            // Back to the window before: a stored window, like any other.
            if let Some(p) = self.previous.take() {
                self.windows.insert(p.n, p.groups);
            }
        }
        let groups = self
            .windows
            .remove(&n)
            .or_else(|| self.pool.pop())
            .unwrap_or_default();
        self.current = Some(Current {
            n,
            start: self.spec.start(n),
            end: self.spec.end(n),
            groups,
        });
    }

    /// Puts the current and the previous window back with the others.
    fn flush_current(&mut self) {
        for c in [self.current.take(), self.previous.take()]
            .into_iter()
            .flatten()
        {
            self.windows.insert(c.n, c.groups);
        }
    }

    fn emit(&mut self, n: i64, mut groups: Groups<K, A::State>) {
        let (ws, we) = (self.spec.start(n), self.spec.end(n));
        for (key, state) in groups.drain() {
            let payload = (self.make)(&key, self.agg.result(&state));
            match self.spec.output {
                WindowOutput::PointAtEnd => self.held.push(we, we.next_tick(), payload),
                WindowOutput::Window => self.held.push(ws, we, payload),
            }
        }
        if self.pool.len() < POOL {
            self.pool.push(groups);
        }
    }

    /// One input event of any kind.
    fn one(&mut self, sync: Time, other: Time, payload: &P) {
        match EventKind::decode(sync, other) {
            EventKind::StartEdge(s) => {
                self.open_edges
                    .push((s, (self.key)(payload), payload.clone()))
            }
            EventKind::EndEdge { start, end } => {
                if let Some(pos) = self
                    .open_edges
                    .iter()
                    .position(|(s, _, p)| *s == start && p == payload)
                {
                    self.open_edges.swap_remove(pos);
                    self.add(start, end, payload);
                }
            }
            kind => {
                let (start, end) = kind.encode();
                self.add(start, end, payload);
            }
        }
    }

    /// The input CTI advanced to `t`: close every window ending at or before it.
    fn close(&mut self, t: Time, out: &mut Batch<O>) {
        self.flush_current();
        let first_open = self.spec.first_ending_after(self.cti);
        let mut last = self.spec.first_ending_after(t).saturating_sub(1);
        if t == Time::INF {
            // Start edges never closed would fill windows forever: windows past the last one
            // with other members, or past the last finite CTI, are left out.
            let stored = self.windows.keys().next_back().copied();
            let before = self.spec.first_ending_after(self.cti).saturating_sub(1);
            last = stored.map_or(before, |s| s.max(before));
        }
        self.cti = t;
        self.first_open = self.spec.first_ending_after(t);
        if first_open <= last {
            let mut ns: Vec<i64> = self
                .windows
                .range(first_open..=last)
                .map(|(n, _)| *n)
                .collect();
            if let Some(edge_start) = self.open_edges.iter().map(|e| e.0).min() {
                let from = self.spec.first_ending_after(edge_start).max(first_open);
                ns.extend(from..=last);
                ns.sort_unstable();
                ns.dedup();
            }
            for n in ns {
                let mut groups = self
                    .windows
                    .remove(&n)
                    .or_else(|| self.pool.pop())
                    .unwrap_or_default();
                let we = self.spec.end(n);
                for (start, key, payload) in &self.open_edges {
                    if *start < we {
                        let state = groups.entry(key.clone(), || self.agg.init());
                        self.agg.add(state, payload);
                    }
                }
                self.emit(n, groups);
            }
        }
        let out_cti = match self.spec.output {
            WindowOutput::PointAtEnd => t,
            WindowOutput::Window if t == Time::INF => t,
            WindowOutput::Window => t.min(self.spec.start(self.spec.first_ending_after(t))),
        };
        self.held.release(out_cti, out);
    }
}

impl<P, K, A, O, KF, MK> UnaryOperator<P, O> for HoppingWindow<P, K, A, O, KF, MK>
where
    P: Clone + PartialEq + Send + 'static,
    K: Hash + Eq + Clone + Send + 'static,
    A: Aggregate<P>,
    O: Clone + Send + 'static,
    KF: Fn(&P) -> K + Send + 'static,
    MK: Fn(&K, A::Output) -> O + Send + 'static,
{
    const NAME: &'static str = "hopping window";

    fn output_shape(&self, _input: EventShape) -> EventShape {
        match self.spec.output {
            WindowOutput::PointAtEnd => EventShape::Point,
            WindowOutput::Window => EventShape::Interval,
        }
    }

    fn on_batch(&mut self, input: &Batch<P>, out: &mut Batch<O>) {
        let tumbling = self.spec.size == self.spec.hop;
        for (range, cti) in input.segments() {
            let sync = &input.sync()[range.clone()];
            let other = &input.other()[range.clone()];
            let payloads = &input.payloads()[range];
            let mut i = 0;
            while i < sync.len() {
                if let (true, Some(c)) = (tumbling, self.current.as_mut()) {
                    // The common case in a tight loop: points and intervals inside the current
                    // tumbling window, which overlap no other window.
                    let (ws, we) = (c.start, c.end);
                    while let (Some(&s), Some(&o), Some(p)) =
                        (sync.get(i), other.get(i), payloads.get(i))
                    {
                        if !(ws <= s && s < o && o <= we) {
                            break;
                        }
                        let agg = &self.agg;
                        let state = c.groups.entry((self.key)(p), || agg.init());
                        agg.add(state, p);
                        i += 1;
                    }
                    if i == sync.len() {
                        break;
                    }
                }
                self.one(sync[i], other[i], &payloads[i]);
                i += 1;
            }
            if let Some(t) = cti {
                if t > self.cti {
                    self.close(t, out);
                }
            }
        }
    }

    fn state_size(&self) -> usize {
        self.windows.values().map(|g| g.len()).sum::<usize>()
            + self.current.as_ref().map_or(0, |c| c.groups.len())
            + self.previous.as_ref().map_or(0, |c| c.groups.len())
            + self.open_edges.len()
            + self.held.len()
    }
}
