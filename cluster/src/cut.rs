//! Snapshots of a run on several workers (threads of one process), cut at one moment of the
//! whole run: worker 0 begins a round every [`QueryWorker::checkpoint_every`]; every worker
//! holds the inputs of its parts at their commit points ([`QueryWorker::pause_inputs`]);
//! once every part's inputs are held, nothing is on its way between the workers (every
//! shipment given has been taken, every batch the inputs sent has been read) and every stage
//! has run what the workers' CTIs allow (the probe stands at the least CTI of the workers),
//! each worker cuts its parts: each one's driver state and the shipments the stages hold for
//! it for later times ([`QueryWorker::cut`]); worker 0 writes the cuts as one snapshot and
//! the inputs go on. A restore, on any number of workers, gives each stage back what it held
//! for the parts its worker runs ([`Pending::stage`]).

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::rc::Rc;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use punctual_runtime::{QueryWorker, WorkerCut};

use crate::Shipment;

/// What a stage holds until its time is complete, by timely time.
pub(crate) type Held = Rc<RefCell<BTreeMap<i64, Vec<Shipment>>>>;

/// What a worker's stages held in a snapshot: stage, timely time, shipments.
pub(crate) type Restored = Vec<(usize, i64, Vec<Shipment>)>;

/// The rounds of a run's snapshots, shared by the workers of this process.
pub(crate) struct Cuts {
    workers: usize,
    /// Shipments given that no stage has taken yet, and batches the workers' inputs sent that
    /// their ingress has not read.
    in_flight: AtomicI64,
    /// Each worker's ingress capability (`i64::MAX` once it has let it go).
    caps: Vec<AtomicI64>,
    round: Mutex<Round>,
    /// Each worker's wake-up: a worker parked between its steps looks at a round as soon as
    /// another moves it on.
    wakers: Mutex<Vec<Option<timely::scheduling::SyncActivator>>>,
    /// How many parts the run splits its keys into and how many stages it has, once worker 0
    /// has said ([`Cuts::publish`]).
    layout: Mutex<Option<Option<(usize, usize)>>>,
    laid_out: std::sync::Condvar,
    /// Restored: how many workers have started their parts, the latest time of what the
    /// stages held in the snapshot, and whether a worker could not start.
    started: Mutex<(usize, i64, bool)>,
    all_started: std::sync::Condvar,
}

#[derive(Default)]
struct Round {
    /// Rounds begun and rounds over (one is in progress while `begun > over`).
    begun: u64,
    over: u64,
    /// Whether each part's inputs are held, in the round in progress.
    held: Vec<bool>,
    /// Each part's cut, in the round in progress.
    cuts: Vec<Option<WorkerCut>>,
}

impl Cuts {
    pub(crate) fn new(workers: usize) -> Self {
        Cuts {
            workers,
            in_flight: AtomicI64::new(0),
            caps: (0..workers).map(|_| AtomicI64::new(i64::MIN)).collect(),
            round: Mutex::new(Round::default()),
            wakers: Mutex::new(vec![None; workers]),
            layout: Mutex::new(None),
            laid_out: std::sync::Condvar::new(),
            started: Mutex::new((0, i64::MIN, false)),
            all_started: std::sync::Condvar::new(),
        }
    }

    /// A worker has started its parts, whose stages held `restored` in the snapshot (`None`:
    /// it could not start); waits for the other workers of this process and returns the
    /// latest time of what every stage held (`None`: a worker could not start). What the
    /// inputs send is sent on at that time at the earliest, after what the stages held: a
    /// part's batches keep their order.
    pub(crate) fn started(&self, restored: Option<&Restored>) -> Option<i64> {
        let mut started = self.started.lock().unwrap_or_else(PoisonError::into_inner);
        started.0 += 1;
        match restored {
            Some(r) => {
                let latest = r.iter().map(|(_, t, _)| *t).max().unwrap_or(i64::MIN);
                started.1 = started.1.max(latest);
            }
            None => started.2 = true,
        }
        self.all_started.notify_all();
        while started.0 < self.workers && !started.2 {
            started = self
                .all_started
                .wait(started)
                .unwrap_or_else(PoisonError::into_inner);
        }
        (!started.2).then_some(started.1)
    }

    /// Worker 0 says how many parts the run has and how many stages (`None`: it could not
    /// start).
    pub(crate) fn publish(&self, layout: Option<(usize, usize)>) {
        *self.layout.lock().unwrap_or_else(PoisonError::into_inner) = Some(layout);
        self.laid_out.notify_all();
    }

    /// How many parts the run has and how many stages, once worker 0 has said (`None`: it
    /// could not start).
    pub(crate) fn layout(&self) -> Option<(usize, usize)> {
        let mut layout = self.layout.lock().unwrap_or_else(PoisonError::into_inner);
        loop {
            if let Some(l) = *layout {
                return l;
            }
            layout = self
                .laid_out
                .wait(layout)
                .unwrap_or_else(PoisonError::into_inner);
        }
    }

    fn parts(&self) -> usize {
        self.layout
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .flatten()
            .map_or(self.workers, |(parts, _)| parts)
    }

    /// Worker `w` is woken with `waker` when a round moves on.
    pub(crate) fn set_waker(&self, w: usize, waker: timely::scheduling::SyncActivator) {
        let mut wakers = self.wakers.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(slot) = wakers.get_mut(w) {
            *slot = Some(waker);
        }
    }

    /// Wakes every worker but `me`.
    fn wake_others(&self, me: usize) {
        let wakers = self.wakers.lock().unwrap_or_else(PoisonError::into_inner);
        for (w, waker) in wakers.iter().enumerate() {
            if let (true, Some(waker)) = (w != me, waker) {
                let _ = waker.activate();
            }
        }
    }

    /// `n` more shipments (or batches of the inputs) on their way.
    pub(crate) fn gave(&self, n: usize) {
        self.in_flight
            .fetch_add(i64::try_from(n).unwrap_or(i64::MAX), Ordering::AcqRel);
    }

    /// `n` of them arrived.
    pub(crate) fn took(&self, n: usize) {
        self.in_flight
            .fetch_sub(i64::try_from(n).unwrap_or(i64::MAX), Ordering::AcqRel);
    }

    /// Worker `w`'s ingress holds its capability at `at` (`None`: it let it go).
    pub(crate) fn set_cap(&self, w: usize, at: Option<i64>) {
        if let Some(c) = self.caps.get(w) {
            c.store(at.unwrap_or(i64::MAX), Ordering::Release);
        }
    }

    fn round(&self) -> std::sync::MutexGuard<'_, Round> {
        self.round.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Whether nothing is on its way and every stage has run what the CTIs allow: the probe
    /// at the end of the stages stands at the least of the workers' capabilities.
    fn settled(&self, probe: &timely::dataflow::ProbeHandle<i64>) -> bool {
        if self.in_flight.load(Ordering::Acquire) != 0 {
            return false;
        }
        let least = self
            .caps
            .iter()
            .map(|c| c.load(Ordering::Acquire))
            .min()
            .unwrap_or(i64::MAX);
        !probe.less_than(&least)
    }
}

/// A worker's query with checkpoints (on the workers of one process: several processes are
/// refused): how often a snapshot is due, and what its stages held in the snapshot it was
/// restored from. `(None, [])` without checkpoints.
pub(crate) fn start(
    query: &QueryWorker,
    processes: usize,
) -> Result<(Option<Duration>, Restored), String> {
    let Some(every) = query.checkpoint_every() else {
        return Ok((None, Vec::new()));
    };
    if processes > 1 {
        return Err(
            "checkpoints: a run of several processes cannot take them; run its \
                    workers as threads of one process"
                .to_owned(),
        );
    }
    Ok((
        Some(every),
        Pending::decode(&query.take_restored_executor())?,
    ))
}

/// What every stage of a worker holds, for its parts' cuts.
#[derive(Default)]
pub(crate) struct Pending {
    stages: Vec<(usize, Held)>,
}

impl Pending {
    /// Stage `stage`'s store, with what the snapshot the run restored from held for it.
    pub(crate) fn stage(&mut self, stage: usize, restored: &mut Restored) -> Held {
        let held: Held = Rc::default();
        {
            let mut map = held.borrow_mut();
            for (_, time, shipments) in restored.extract_if(.., |(s, _, _)| *s == stage) {
                map.entry(time).or_default().extend(shipments);
            }
        }
        self.stages.push((stage, Rc::clone(&held)));
        held
    }

    /// What a restored worker's stages held ([`Pending::encode`]'s bytes; empty: nothing).
    pub(crate) fn decode(bytes: &[u8]) -> Result<Restored, String> {
        if bytes.is_empty() {
            return Ok(Vec::new());
        }
        bincode::deserialize(bytes).map_err(|e| format!("what the stages held: {e}"))
    }

    /// What the stages hold for part `part`.
    fn encode(&self, part: usize) -> Result<Vec<u8>, String> {
        let maps: Vec<_> = self.stages.iter().map(|(s, h)| (*s, h.borrow())).collect();
        let entries: Vec<(usize, i64, Vec<&Shipment>)> = maps
            .iter()
            .flat_map(|(s, map)| {
                map.iter().map(move |(t, v)| {
                    (
                        *s,
                        *t,
                        v.iter().filter(|x| x.dest == part).collect::<Vec<_>>(),
                    )
                })
            })
            .filter(|(_, _, v)| !v.is_empty())
            .collect();
        bincode::serialize(&entries).map_err(|e| format!("what the stages hold: {e}"))
    }
}

/// A worker's side of the rounds, for the parts it runs.
pub(crate) struct Cutter {
    me: usize,
    every: Duration,
    last: Instant,
    /// The round this worker's inputs are held for (0: none).
    held_for: u64,
}

/// The parts a worker runs: each one's index and query.
pub(crate) type Hosted<'a> = [(usize, &'a QueryWorker)];

impl Cutter {
    pub(crate) fn new(me: usize, every: Duration) -> Self {
        Cutter {
            me,
            every,
            last: Instant::now(),
            held_for: 0,
        }
    }

    /// After each step of the worker: begins a round when one is due (worker 0, which runs
    /// part 0), holds the inputs of the parts it runs, cuts each part once the run has
    /// settled, writes the snapshot once every part is in (worker 0), lets the inputs go once
    /// the round is over. Returns whether a round is in progress (the worker then steps again
    /// soon), or the reason a part could not be cut.
    pub(crate) fn step(
        &mut self,
        cuts: &Cuts,
        hosted: &Hosted<'_>,
        (handle, probe): (&tokio::runtime::Handle, &timely::dataflow::ProbeHandle<i64>),
        pending: &Pending,
        stopping: bool,
    ) -> Result<bool, String> {
        let resume = || hosted.iter().for_each(|(_, q)| q.resume_inputs());
        if stopping {
            // A drain: the inputs go on to their end; no more rounds.
            resume();
            return Ok(false);
        }
        let first = hosted.first().filter(|(p, _)| *p == 0).map(|(_, q)| *q);
        let now = {
            let mut round = cuts.round();
            let due = round.begun == round.over
                && self.last.elapsed() >= self.every
                && first.is_some_and(|q| !q.is_writing());
            if due {
                let parts = cuts.parts();
                round.begun += 1;
                round.held = vec![false; parts];
                round.cuts = (0..parts).map(|_| None).collect();
                cuts.wake_others(self.me);
            }
            if round.begun == round.over {
                if self.held_for != 0 {
                    self.held_for = 0;
                    resume();
                }
                return Ok(false);
            }
            round.begun
        };
        if self.held_for != now {
            self.held_for = now;
            hosted.iter().for_each(|(_, q)| q.pause_inputs());
        }
        let in_round = |r: &Round| r.begun == now && r.over < now;
        for (part, query) in hosted {
            let held = cuts.round().held.get(*part).copied().unwrap_or(true);
            if !held && handle.block_on(query.inputs_paused()) {
                let mut round = cuts.round();
                if in_round(&round) {
                    round.held[*part] = true;
                }
                drop(round);
                cuts.wake_others(self.me);
            }
        }
        let all_held = cuts.round().held.iter().all(|h| *h);
        if all_held && cuts.settled(probe) {
            for (part, query) in hosted {
                if cuts.round().cuts.get(*part).is_none_or(Option::is_some) {
                    continue;
                }
                if let Some(cut) = handle.block_on(query.cut(pending.encode(*part)?)) {
                    let cut = cut.map_err(|e| e.to_string())?;
                    let mut round = cuts.round();
                    if in_round(&round) {
                        round.cuts[*part] = Some(cut);
                    }
                    drop(round);
                    cuts.wake_others(self.me);
                }
            }
        }
        if let Some(query) = first {
            let mut round = cuts.round();
            if in_round(&round) && round.cuts.iter().all(Option::is_some) {
                let parts = round.cuts.drain(..).flatten().collect();
                query.write_snapshot(parts);
                round.over = round.begun;
                drop(round);
                cuts.wake_others(self.me);
                self.last = Instant::now();
                self.held_for = 0;
                resume();
                return Ok(false);
            }
        }
        Ok(true)
    }
}
