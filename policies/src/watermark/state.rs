//! The running state of a watermark strategy: per input partition and per substream, what
//! it has seen, and the CTI it proposes.

use super::*;

/// What a watermark decided about one event.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// Keep it with this (possibly changed) start; whether it was late or out of order.
    Keep {
        start: Time,
        late: bool,
        out_of_order: bool,
    },
    /// Drop it, for this reason.
    Drop(DropCause),
}

/// Per-partition state of the partitioned strategy.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub(crate) struct Partition {
    max: Time,
    /// The first clock reading after its last event (`None`: no reading after an event yet).
    last_seen: Option<Time>,
    /// Whether an event came in since the last clock reading.
    busy: bool,
    /// The least and highest times of its next batch, as the adapter reported them.
    ahead: Option<(Time, Time)>,
    /// The times of its last events (the `recent_min` guard).
    recent: std::collections::VecDeque<Time>,
    /// The highest time per dimension (the `dimensions` guard).
    dims: HashMap<u64, Time>,
}

impl Partition {
    fn new() -> Self {
        Partition {
            max: Time::NEG_INF,
            last_seen: None,
            busy: false,
            ahead: None,
            recent: std::collections::VecDeque::new(),
            dims: HashMap::new(),
        }
    }
}

/// Per-partition state of the arrival strategy.
#[derive(Clone, Copy, Debug, serde::Serialize, serde::Deserialize)]
pub(crate) struct ArrivalPart {
    /// The partition's watermark so far.
    watermark: Time,
    /// The highest arrival time seen.
    max_arrival: Time,
    /// The first clock reading after its last event: when that event was seen, at the latest.
    seen_at: Option<Time>,
    /// Whether an event came in since the last clock reading.
    busy: bool,
}

impl ArrivalPart {
    const NEW: ArrivalPart = ArrivalPart {
        watermark: Time::NEG_INF,
        max_arrival: Time::NEG_INF,
        seen_at: None,
        busy: false,
    };
}

/// The running state of a strategy.
pub(crate) struct State<P> {
    pub(crate) spec: Watermark<P>,
    /// Arrival strategy: per substream key, its watermark.
    substreams: HashMap<u64, Time>,
    /// Arrival strategy: per input partition seen.
    arrival_parts: Vec<ArrivalPart>,
    max_time: Time,
    partitions: Vec<Partition>,
    /// The latest clock reading, the first one, and the first after the last event.
    now: Option<Time>,
    started: Option<Time>,
    last_event_clock: Option<Time>,
    /// Whether an event came in since the last clock reading.
    busy: bool,
    last_emit_clock: Option<Time>,
    pending: Time,
}

impl<P> std::fmt::Debug for State<P> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("State")
            .field("spec", &self.spec)
            .field("substreams", &self.substreams.len())
            .field("arrival_partitions", &self.arrival_parts.len())
            .finish()
    }
}

/// A strategy's running state as a snapshot holds it (its settings are the query's).
pub(crate) type Saved = (
    HashMap<u64, Time>,
    Vec<ArrivalPart>,
    Vec<Partition>,
    (Time, Time),
    (Option<Time>, Option<Time>, Option<Time>, Option<Time>),
    bool,
);

impl<P> State<P> {
    /// Its running state, for a snapshot.
    pub(crate) fn saved(&self) -> Saved {
        (
            self.substreams.clone(),
            self.arrival_parts.clone(),
            self.partitions.clone(),
            (self.max_time, self.pending),
            (
                self.now,
                self.started,
                self.last_event_clock,
                self.last_emit_clock,
            ),
            self.busy,
        )
    }

    /// Takes the running state [`State::saved`] gave.
    pub(crate) fn restore(&mut self, saved: Saved) {
        let (substreams, arrival_parts, partitions, times, clocks, busy) = saved;
        (self.substreams, self.arrival_parts, self.partitions) =
            (substreams, arrival_parts, partitions);
        (self.max_time, self.pending) = times;
        (
            self.now,
            self.started,
            self.last_event_clock,
            self.last_emit_clock,
        ) = clocks;
        self.busy = busy;
    }

    pub(crate) fn new(spec: Watermark<P>) -> Self {
        let n = match &spec.kind {
            Kind::Partitioned { partitions, .. } => *partitions,
            _ => 0,
        };
        let arrival_parts = match &spec.kind {
            Kind::Arrival(a) => vec![ArrivalPart::NEW; a.partitions],
            _ => Vec::new(),
        };
        State {
            spec,
            substreams: HashMap::new(),
            arrival_parts,
            max_time: Time::NEG_INF,
            partitions: vec![Partition::new(); n],
            now: None,
            started: None,
            last_event_clock: None,
            busy: false,
            last_emit_clock: None,
            pending: Time::NEG_INF,
        }
    }

    /// Whether the final CTI is issued at end of input.
    pub(crate) fn final_cti(&self) -> bool {
        self.spec.final_cti
    }

    /// The arrival strategy's watermark of an input partition (`-inf` if unseen).
    fn arrival_watermark(&self, partition: Option<usize>) -> Time {
        let i = partition.unwrap_or(0).min(MAX_ARRIVAL_PARTITIONS - 1);
        self.arrival_parts
            .get(i)
            .map_or(Time::NEG_INF, |p| p.watermark)
    }

    /// The arrival strategy's stream watermark: the minimum over the partitions (`-inf` while
    /// one has been neither seen nor estimated).
    fn arrival_candidate(&self) -> Option<Time> {
        self.arrival_parts.iter().map(|p| p.watermark).min()
    }

    /// Steps 1–3 of the arrival strategy (what becomes of an event given its arrival; `app`
    /// is the stream's CTI); the identity for the others.
    pub(crate) fn judge(
        &self,
        start: Time,
        payload: &P,
        arrival: Arrival,
        app: Time,
    ) -> Result<Verdict, &'static str> {
        let Kind::Arrival(a) = &self.spec.kind else {
            return Ok(Verdict::Keep {
                start,
                late: false,
                out_of_order: false,
            });
        };
        let at = arrival
            .time
            .ok_or("the arrival watermark strategy needs each event's arrival time")?;
        if !at.is_finite() {
            return Err("an event's arrival time must be a finite time");
        }
        if a.arrival_time {
            // Arrival times only grow within a partition; one below the CTI all the same
            // (partitions merged, clocks apart) is out of order.
            if at < app {
                if a.policy == AdvanceTimePolicy::Drop {
                    return Ok(Verdict::Drop(DropCause::OutOfOrder));
                }
                return Ok(Verdict::Keep {
                    start: app,
                    late: false,
                    out_of_order: true,
                });
            }
            return Ok(Verdict::Keep {
                start: at,
                late: false,
                out_of_order: false,
            });
        }
        if a.early.is_some_and(|e| start - at > e) {
            return Ok(Verdict::Drop(DropCause::Early));
        }
        let mut t = start;
        let mut late = false;
        if let Some(l) = a.late {
            if at - t > l {
                if a.policy == AdvanceTimePolicy::Drop {
                    return Ok(Verdict::Drop(DropCause::LateArrival));
                }
                t = at - l;
                late = true;
            }
        }
        // Below its substream's (or partition's) watermark, or the stream's CTI: out of order.
        let own = match &a.substream {
            Some(key) => self
                .substreams
                .get(&key(payload))
                .copied()
                .unwrap_or(Time::NEG_INF),
            None => self.arrival_watermark(arrival.partition),
        };
        let wm = own.max(app);
        let mut out_of_order = false;
        if t < wm {
            if a.policy == AdvanceTimePolicy::Drop {
                return Ok(Verdict::Drop(DropCause::OutOfOrder));
            }
            t = wm;
            out_of_order = true;
        }
        Ok(Verdict::Keep {
            start: t,
            late,
            out_of_order,
        })
    }

    /// Step 4 and the other strategies' bookkeeping after an accepted event; returns a CTI
    /// candidate to issue now (punctuated emission), if any.
    pub(crate) fn observe(&mut self, start: Time, payload: &P, arrival: Arrival) -> Option<Time> {
        self.max_time = self.max_time.max(start);
        self.busy = true;
        let candidate = match &self.spec.kind {
            Kind::Arrival(a) => {
                let at = arrival.time.unwrap_or(start);
                let i = arrival
                    .partition
                    .unwrap_or(0)
                    .min(MAX_ARRIVAL_PARTITIONS - 1);
                if self.arrival_parts.len() <= i {
                    self.arrival_parts.resize(i + 1, ArrivalPart::NEW);
                }
                let part = &mut self.arrival_parts[i];
                part.max_arrival = part.max_arrival.max(at);
                part.busy = true;
                let w = if a.arrival_time {
                    part.max_arrival
                } else {
                    match (&a.substream, a.late) {
                        (Some(key), Some(l)) => {
                            let slot = self.substreams.entry(key(payload)).or_insert(Time::NEG_INF);
                            *slot = (*slot).max(start - a.out_of_order);
                            part.max_arrival - l
                        }
                        _ => start - a.out_of_order,
                    }
                };
                part.watermark = part.watermark.max(w);
                self.arrival_candidate()
            }
            Kind::Bounded(b) => Some(self.max_time - *b),
            Kind::Partitioned {
                recent, dimension, ..
            } => {
                let last = self.partitions.len() - 1;
                let part = &mut self.partitions[arrival.partition.unwrap_or(0).min(last)];
                part.max = part.max.max(start);
                part.busy = true;
                if let Some(n) = recent {
                    if part.recent.len() == *n {
                        part.recent.pop_front();
                    }
                    part.recent.push_back(start);
                }
                if let Some(key) = dimension {
                    let slot = part.dims.entry(key(payload)).or_insert(Time::NEG_INF);
                    *slot = (*slot).max(start);
                }
                self.partition_candidate()
            }
        };
        let candidate = candidate?;
        match self.spec.emission {
            Emission::Punctuated => Some(candidate),
            Emission::Periodic(_) => {
                self.pending = self.pending.max(candidate);
                None
            }
        }
    }

    /// Whether a partition counts for the stream's CTI: always without an idle timeout or a
    /// clock; else if seen within the timeout, or never seen but the stream started less than
    /// the timeout ago (an unavailable partition is waited for that long).
    fn counts(&self, p: &Partition) -> bool {
        match (self.spec.idle_timeout, self.now) {
            (Some(timeout), Some(now)) => match p.last_seen {
                Some(seen) => now - seen < timeout,
                None => self.started.is_none_or(|s| now - s < timeout),
            },
            _ => true,
        }
    }

    /// A partition's watermark: `highest - bound` (the highest being the least over the
    /// dimensions' with that guard), raised by the look-ahead term, capped by the recent
    /// events' least time.
    fn partition_estimate(&self, p: &Partition) -> Time {
        let Kind::Partitioned {
            bound,
            look_ahead,
            recent,
            dimension,
            ..
        } = &self.spec.kind
        else {
            return Time::NEG_INF;
        };
        let max = match dimension {
            Some(_) => p.dims.values().copied().min().unwrap_or(p.max),
            None => p.max,
        };
        let mut estimate = max - *bound;
        if let (true, Some((lo, hi))) = (*look_ahead, p.ahead) {
            estimate = estimate.max(lo.min(hi - *bound));
        }
        if recent.is_some() {
            if let Some(&least) = p.recent.iter().min() {
                estimate = estimate.min(least);
            }
        }
        estimate
    }

    /// Min over the partitions that count of their watermarks; if none counts, the input is
    /// idle: `now - idle_timeout`.
    fn partition_candidate(&self) -> Option<Time> {
        let counting = self
            .partitions
            .iter()
            .filter(|p| self.counts(p))
            .map(|p| self.partition_estimate(p))
            .min();
        match counting {
            Some(m) => Some(m),
            None => self.spec.idle_timeout.zip(self.now).map(|(t, now)| now - t),
        }
    }

    /// The adapter has read partition `partition`'s next batch, whose times lie in
    /// `[min, max]`: the look-ahead term of the partitioned strategy; returns the candidate it
    /// allows, if any.
    pub(crate) fn look_ahead(&mut self, partition: usize, min: Time, max: Time) -> Option<Time> {
        let Kind::Partitioned {
            look_ahead: true, ..
        } = &self.spec.kind
        else {
            return None;
        };
        let last = self.partitions.len() - 1;
        self.partitions[partition.min(last)].ahead = Some((min, max));
        self.partition_candidate()
    }

    /// A clock reading: the candidate that the clock allows (periodic emission, idle inputs,
    /// idle partitions), if any.
    ///
    /// Also returns whether the reading mattered to the strategy's state (the first reading,
    /// or the first after events: it bounds when they were seen), so that a record of the
    /// readings that mattered or issued a CTI replays the same output.
    pub(crate) fn on_clock(&mut self, now: Time) -> (Option<Time>, bool) {
        self.now = Some(now);
        let mut mattered = self.started.is_none();
        self.started.get_or_insert(now);
        if std::mem::take(&mut self.busy) {
            self.last_event_clock = Some(now);
            mattered = true;
        }
        for part in &mut self.partitions {
            if std::mem::take(&mut part.busy) {
                part.last_seen = Some(now);
            }
        }
        let candidate = self.clock_candidate(now);
        (candidate, mattered)
    }

    /// What a clock reading allows (see [`State::on_clock`]).
    fn clock_candidate(&mut self, now: Time) -> Option<Time> {
        let mut best = None::<Time>;
        let mut offer = |t: Time| best = Some(best.map_or(t, |b: Time| b.max(t)));
        if let Emission::Periodic(interval) = self.spec.emission {
            if self.pending > Time::NEG_INF
                && self.last_emit_clock.is_none_or(|l| now - l >= interval)
            {
                self.last_emit_clock = Some(now);
                offer(self.pending);
            }
        }
        match &self.spec.kind {
            Kind::Arrival(a) => {
                if let Some(l) = a.late {
                    for part in &mut self.arrival_parts {
                        if std::mem::take(&mut part.busy) {
                            // Events are coming in: their times move the watermark, not the
                            // clock. The first reading after an event bounds when it was seen.
                            part.seen_at = Some(now);
                            continue;
                        }
                        if part.max_arrival == Time::NEG_INF {
                            // Never an event: estimated from the clock's first reading on.
                            part.max_arrival = now;
                            part.seen_at = Some(now);
                        }
                        let Some(seen) = part.seen_at else {
                            part.seen_at = Some(now);
                            continue;
                        };
                        // Quiet: the estimated arrival time, minus the late tolerance.
                        let estimated = part.max_arrival + (now - seen).max(TimeSpan::ZERO);
                        part.watermark = part.watermark.max(estimated - l);
                    }
                    if let Some(c) = self.arrival_candidate() {
                        offer(c);
                    }
                }
            }
            Kind::Bounded(_) => {
                if let Some(timeout) = self.spec.idle_timeout {
                    let quiet_since = self.last_event_clock.or(self.started);
                    if quiet_since.is_some_and(|s| now - s >= timeout) {
                        offer(now - timeout);
                    }
                }
            }
            Kind::Partitioned { .. } => {
                if self.spec.idle_timeout.is_some() {
                    if let Some(c) = self.partition_candidate() {
                        offer(c);
                    }
                }
            }
        }
        best
    }

    /// Partitions whose watermark is more than the maximum drift ahead of `cti`.
    pub(crate) fn paused(&self, cti: Time) -> Vec<usize> {
        let Kind::Partitioned {
            max_drift: Some(drift),
            ..
        } = &self.spec.kind
        else {
            return Vec::new();
        };
        if cti == Time::NEG_INF {
            return Vec::new();
        }
        self.partitions
            .iter()
            .enumerate()
            .filter(|(_, p)| self.partition_estimate(p) > cti + *drift)
            .map(|(i, _)| i)
            .collect()
    }
}
