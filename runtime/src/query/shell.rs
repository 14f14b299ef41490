//! The tokio shell around a query's [`Driver`]: every task that touches the query (input
//! adapters enqueueing, the clock ticking, `explain`) runs the driver under one async lock and
//! then hands what the outputs produced to their tasks, in order, awaiting when an output is
//! behind (backpressure). The driver runs the whole query synchronously inside that call:
//! ingress, imports, operators; there is no channel between an input and the operators.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use async_trait::async_trait;
use tokio::sync::{watch, Mutex as AsyncMutex};
use tokio::time::Instant;

use punctual_core::Time;
use punctual_engine::Driver;
use punctual_policies::{ClockReading, IngressCounters};

use super::held_payloads::Shows;
use super::report::{held_items_shown, keep_drops, node_label};
use super::running::{Ending, OperatorDropItem, QueryReport};
use super::worker::Exchange;
use crate::checkpoint::SourcePosition;
use crate::error::EnqueueError;
use crate::observe::{OperatorMetrics, StreamMetrics};

pub(crate) use super::signals::Signals;

/// Whether a blocked send to an output gives way to the stop signal.
pub(crate) enum SendMode<'a> {
    /// An adapter's enqueue: it returns [`EnqueueError::Stopping`] when the query stops while
    /// it waits (what it released stays queued for the next send).
    StopAware(&'a mut watch::Receiver<bool>),
    /// The end of an input, the clock: waits for the outputs whatever happens.
    Always,
}

/// The shell's end of an output: takes what the driver produced for the output and sends
/// it to the output task.
#[async_trait]
pub(crate) trait OutputPort: Send {
    /// Sends what the output produced since the last call, if anything.
    async fn flush(
        &mut self,
        driver: &mut Driver,
        mode: &mut SendMode<'_>,
    ) -> Result<(), EnqueueError>;

    /// Whether the output's queue has room for a batch now.
    fn has_room(&self) -> bool;

    /// [`OutputPort::flush`] without waiting: what does not fit waits for the next flush.
    fn try_flush(&mut self, driver: &mut Driver);

    /// Whether everything the output produced has been sent to its task.
    fn is_clear(&self) -> bool;

    /// The output's name.
    fn name(&self) -> &str;

    /// Tells the output task, after what was sent to it, to make what it wrote durable and
    /// give its position: the answer comes on the receiver.
    async fn mark(&mut self) -> tokio::sync::oneshot::Receiver<Result<u64, crate::AdapterError>>;
}

/// What runs under the lock.
pub(crate) struct Engine {
    pub(crate) driver: Driver,
    /// The outputs' ports; dropped (closing the outputs) when the last input has ended.
    pub(crate) ports: Vec<Box<dyn OutputPort>>,
    /// Inputs whose adapter has not ended.
    pub(crate) live: usize,
    operator_metrics: OperatorMetrics,
    /// The operators' drops so far, the first [`MAX_REPORTED_HELD`] of them.
    drops: Vec<OperatorDropItem>,
    /// Where each input's source stands, for snapshots.
    pub(crate) inputs_at: Vec<InputAt>,
    /// Whether the executor of several workers was told that this worker's inputs ended.
    told_end: bool,
}

/// Where an input's source stands after its calls into the driver: the position its adapter
/// committed last, and whether a call has changed the state since (a snapshot waits for it).
#[derive(Clone, Debug, Default)]
pub(crate) struct InputAt {
    pub(crate) position: Option<SourcePosition>,
    pub(crate) dirty: bool,
}

impl Engine {
    /// Input `input` changed the state: dirty until it commits its position.
    fn touch(&mut self, input: Option<usize>) {
        if let Some(at) = input.and_then(|i| self.inputs_at.get_mut(i)) {
            at.dirty = true;
        }
    }
}

/// What the query handle keeps of one input stream between calls: its counters as of the last
/// call, its metric handles, the partitions to pause, and when its CTI last advanced.
#[derive(Debug)]
pub(crate) struct StreamView {
    pub(crate) name: String,
    /// Whether the stream is reference data (the other inputs wait until it is ready).
    pub(crate) reference: bool,
    /// Whether it is ready (a reference input that has enqueued its snapshot).
    ready: AtomicBool,
    state: Mutex<ViewState>,
}

#[derive(Debug)]
struct ViewState {
    counters: IngressCounters,
    metrics: StreamMetrics,
    paused: Vec<usize>,
    clock_record: Vec<ClockReading>,
    /// The CTI, and when it last advanced.
    cti_since: (Time, Instant),
}

impl StreamView {
    fn new(name: String, reference: bool) -> Self {
        StreamView {
            reference,
            ready: AtomicBool::new(!reference),
            state: Mutex::new(ViewState {
                counters: IngressCounters::default(),
                metrics: StreamMetrics::new(&name),
                paused: Vec::new(),
                clock_record: Vec::new(),
                cti_since: (Time::NEG_INF, Instant::now()),
            }),
            name,
        }
    }

    fn lock(&self) -> MutexGuard<'_, ViewState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Whether it is ready: always for an ordinary input; for a reference input, once its
    /// adapter has said so, enqueued a CTI of its own, or ended.
    pub(crate) fn is_ready(&self) -> bool {
        self.ready.load(Ordering::SeqCst)
    }

    /// The counters as of the last call.
    pub(crate) fn counters(&self) -> IngressCounters {
        self.lock().counters
    }

    /// The partitions its watermark alignment asks to pause, as of the last call.
    pub(crate) fn paused(&self) -> Vec<usize> {
        self.lock().paused.clone()
    }

    /// The clock readings that issued CTIs (filled in when the query ends).
    pub(crate) fn clock_record(&self) -> Vec<ClockReading> {
        self.lock().clock_record.clone()
    }

    /// How long since its CTI last advanced.
    pub(crate) fn quiet_for(&self, now: Instant) -> std::time::Duration {
        now - self.lock().cti_since.1
    }
}

/// Query-wide state shared by every task: the engine, the inputs' views, the signals.
pub(crate) struct Shell {
    pub(crate) name: String,
    pub(crate) engine: AsyncMutex<Engine>,
    pub(crate) streams: Vec<StreamView>,
    pub(crate) signals: Arc<Signals>,
    /// How many reference inputs are not ready yet.
    unready: watch::Sender<usize>,
    /// Payload types the report shows.
    show: Shows,
    /// As one worker of several: the executor's side, and the inputs this worker owns.
    pub(crate) worker: Option<WorkerSide>,
    /// With checkpoints: where each input resumes, restored from a snapshot (`None`: from
    /// its start).
    pub(crate) resume: Option<Vec<Option<SourcePosition>>>,
    /// With checkpoints: where snapshots go, and the number of the last one written.
    pub(crate) snapshots: std::sync::OnceLock<super::snapshots::Snapshots>,
    /// As one worker of several with checkpoints: holds the inputs while a snapshot is cut.
    pub(crate) gate: super::gate::Gate,
}

/// A worker's shell (see [`Query::start_worker`](super::Query::start_worker)): which inputs
/// run here, and the executor that carries what crosses to the other workers.
pub(crate) struct WorkerSide {
    pub(crate) exchange: Arc<dyn Exchange>,
    pub(crate) owned: Vec<bool>,
    /// How many workers run the query.
    pub(crate) workers: usize,
}

impl Shell {
    pub(crate) fn new(
        driver: Driver,
        signals: Arc<Signals>,
        show: Shows,
        worker: Option<WorkerSide>,
        resume: Option<Vec<Option<SourcePosition>>>,
    ) -> Self {
        let streams: Vec<StreamView> = (0..driver.input_count())
            .map(|i| {
                let name = driver.input_name(i).unwrap_or_default().to_owned();
                StreamView::new(name, driver.is_reference(i))
            })
            .collect();
        if let Some(w) = &worker {
            // Another worker's input is not waited for here.
            for (view, owned) in streams.iter().zip(&w.owned) {
                if !owned {
                    view.ready.store(true, Ordering::SeqCst);
                }
            }
        }
        let unready = streams.iter().filter(|s| !s.is_ready()).count();
        let live = match &worker {
            Some(w) => w.owned.iter().filter(|o| **o).count(),
            None => driver.input_count(),
        };
        Shell {
            name: driver.name().to_owned(),
            engine: AsyncMutex::new(Engine {
                driver,
                ports: Vec::new(),
                live,
                operator_metrics: OperatorMetrics::default(),
                drops: Vec::new(),
                inputs_at: (0..streams.len())
                    .map(|i| InputAt {
                        position: resume.as_ref().and_then(|r| r.get(i).cloned().flatten()),
                        dirty: false,
                    })
                    .collect(),
                told_end: false,
            }),
            streams,
            signals,
            unready: watch::channel(unready).0,
            show,
            worker,
            resume,
            snapshots: std::sync::OnceLock::new(),
            gate: super::gate::Gate::default(),
        }
    }

    /// Whether input `index` runs here (always, unless this is one worker of several).
    pub(crate) fn owns(&self, index: usize) -> bool {
        self.worker
            .as_ref()
            .is_none_or(|w| w.owned.get(index).copied().unwrap_or(false))
    }

    /// Hands what the inputs sent to the other workers to the executor.
    fn exchange(&self, driver: &mut Driver) {
        if let Some(w) = &self.worker {
            w.exchange.sent(driver);
        }
    }

    /// Hands the outputs' ports to the engine (before any task runs).
    pub(crate) fn install_ports(&self, ports: Vec<Box<dyn OutputPort>>) {
        if let Ok(mut engine) = self.engine.try_lock() {
            engine.ports = ports;
        }
    }

    /// Input `index` is ready (a reference input that has enqueued its snapshot; nothing for
    /// an ordinary input).
    pub(crate) fn mark_ready(&self, index: usize) {
        let Some(view) = self.streams.get(index) else {
            return;
        };
        if !view.ready.swap(true, Ordering::SeqCst) {
            self.unready.send_modify(|n| *n = n.saturating_sub(1));
        }
    }

    /// Resolves once every reference input is ready (at once without any).
    pub(crate) async fn references_ready(&self) {
        let mut unready = self.unready.subscribe();
        let _ = unready.wait_for(|n| *n == 0).await;
    }

    /// Runs `f` on the driver, publishes every input's counters, and sends what the outputs
    /// produced.
    /// `input`: the input whose adapter makes the call (its state changes: a snapshot waits
    /// until it commits its position).
    pub(crate) async fn drive<R>(
        &self,
        mut mode: SendMode<'_>,
        input: Option<usize>,
        f: impl FnOnce(&mut Driver) -> R,
    ) -> Result<R, EnqueueError> {
        let mut engine = loop {
            let engine = self.engine.lock().await;
            if !self.held(&engine, input) {
                break engine;
            }
            drop(engine);
            self.gate.opened().await;
        };
        let r = self.step(&mut engine, input, f);
        let Engine { driver, ports, .. } = &mut *engine;
        for port in ports.iter_mut() {
            port.flush(driver, &mut mode).await?;
        }
        drop(engine);
        // As one worker of several: the executor's backlog waits outside the lock (the
        // executor takes the lock to run what it carries).
        if let Some(backlog) = self.backlog() {
            backlog.room().await;
        }
        Ok(r)
    }

    /// Whether a call of `input` (`None`: the clock) waits at the gate: it is closed, the
    /// query is not stopping, and the input has committed what it enqueued.
    fn held(&self, engine: &Engine, input: Option<usize>) -> bool {
        self.gate.is_closed()
            && !self.signals.stopping()
            && input.is_none_or(|i| engine.inputs_at.get(i).is_none_or(|at| !at.dirty))
    }

    /// The executor's backlog, as one worker of several whose executor keeps one.
    fn backlog(&self) -> Option<&super::Backlog> {
        self.worker.as_ref().and_then(|w| w.exchange.backlog())
    }

    /// As one worker of several: runs `f` (what came from the other workers) on the driver
    /// and sends what the outputs produced, whatever happens (the outputs are behind: it
    /// waits).
    pub(crate) async fn receive<R>(&self, f: impl FnOnce(&mut Driver) -> R) -> R {
        let mut engine = self.engine.lock().await;
        let r = f(&mut engine.driver);
        self.publish(&mut engine);
        let Engine { driver, ports, .. } = &mut *engine;
        for port in ports.iter_mut() {
            // An output that is gone has failed and reported it.
            let _ = port.flush(driver, &mut SendMode::Always).await;
        }
        r
    }

    /// As one worker of several: every worker has ended; the outputs close and the query
    /// ends.
    pub(crate) async fn end_worker(&self) {
        let mut engine = self.engine.lock().await;
        self.publish(&mut engine);
        let Engine { driver, ports, .. } = &mut *engine;
        for port in ports.iter_mut() {
            let _ = port.flush(driver, &mut SendMode::Always).await;
        }
        let report = self.report_of(&engine.driver, self.signals.ending(), false);
        self.signals.set_report(report);
        engine.ports.clear();
        self.signals.mark_done();
    }

    /// [`Shell::drive`] if it can run now without waiting (the engine is free, every
    /// output's queue has room and so has the executor's backlog); `None` (and `f` not run)
    /// otherwise.
    pub(crate) fn try_drive<R>(
        &self,
        input: Option<usize>,
        f: impl FnOnce(&mut Driver) -> R,
    ) -> Option<R> {
        if self.backlog().is_some_and(|b| b.is_full()) {
            return None;
        }
        let mut engine = self.engine.try_lock().ok()?;
        if !engine.ports.iter().all(|p| p.has_room()) || self.held(&engine, input) {
            return None;
        }
        let r = self.step(&mut engine, input, f);
        let Engine { driver, ports, .. } = &mut *engine;
        for port in ports.iter_mut() {
            // Room was checked under the lock, and only the engine sends: each fits.
            port.try_flush(driver);
        }
        Some(r)
    }

    /// Runs `f` on the driver for `input` (none: the clock), then exchanges with the other
    /// workers and publishes what the handle shows; what `f` returned.
    fn step<R>(
        &self,
        engine: &mut Engine,
        input: Option<usize>,
        f: impl FnOnce(&mut Driver) -> R,
    ) -> R {
        let r = f(&mut engine.driver);
        engine.touch(input);
        self.exchange(&mut engine.driver);
        self.publish(engine);
        r
    }

    /// Publishes what the handle shows of each input, and the operators' metrics.
    fn publish(&self, engine: &mut Engine) {
        let now = Instant::now();
        let mut buffered = 0u64;
        for (i, view) in self.streams.iter().enumerate() {
            let Some(c) = engine.driver.counters(i) else {
                continue;
            };
            buffered += c.buffered + c.open_edges;
            let mut state = view.lock();
            state.counters = c;
            state.metrics.record(&c);
            if engine.driver.has_watermark(i) {
                state.paused = engine.driver.paused_partitions(i);
            }
            if c.cti > state.cti_since.0 {
                state.cti_since = (c.cti, now);
            }
        }
        let Engine {
            driver,
            operator_metrics,
            drops: kept,
            ..
        } = engine;
        let held = operator_metrics
            .record(&self.name, driver)
            .saturating_add(usize::try_from(buffered).unwrap_or(usize::MAX));
        // (Counted in the passes above; the details only when over the budget.)
        if held > driver.max_held() {
            if let Err(over) = driver.check_budget() {
                if !self.signals.has_failed() {
                    self.signals.fail(EnqueueError::OverBudget(Box::new(over)));
                }
            }
        }
        keep_drops(&self.name, driver, kept);
    }

    /// The adapter of input `index` has ended: its final CTI if `final_cti` (not after a
    /// failure, so that no output looks complete when it is not). When it was the last, the
    /// query ends: every input's unreleased events are counted and the outputs close.
    pub(crate) async fn end_input(&self, index: usize, final_cti: bool) {
        self.mark_ready(index);
        // An end changes the state: not while a snapshot is cut.
        if !self.signals.stopping() {
            self.gate.opened().await;
        }
        let mut engine = self.engine.lock().await;
        if final_cti {
            engine.driver.finish(index);
        }
        engine.live = engine.live.saturating_sub(1);
        self.end_if_done(&mut engine).await;
    }

    /// Publishes and flushes; if no input is live any more (at once for a query without
    /// inputs), ends the query: unreleased events are counted, the outputs close.
    async fn end_if_done(&self, engine: &mut Engine) {
        if engine.live == 0 && !engine.driver.is_closed() {
            self.final_snapshot(engine).await;
            engine.driver.close();
            for (i, view) in self.streams.iter().enumerate() {
                view.lock().clock_record = engine.driver.clock_record(i).to_vec();
            }
        }
        if engine.live == 0 && !std::mem::replace(&mut engine.told_end, true) {
            if let Some(w) = &self.worker {
                // Its inputs have ended (a driver restored from a snapshot may have been
                // closed then); the query goes on until every worker's have.
                w.exchange.sent(&mut engine.driver);
                w.exchange.ended(&mut engine.driver);
            }
        }
        self.publish(engine);
        let Engine { driver, ports, .. } = &mut *engine;
        for port in ports.iter_mut() {
            // An output that is gone has failed and reported it.
            let _ = port.flush(driver, &mut SendMode::Always).await;
        }
        if engine.live == 0 && self.worker.is_none() {
            let report = self.report_of(&engine.driver, self.signals.ending(), false);
            self.signals.set_report(report);
            engine.ports.clear();
            self.signals.mark_done();
        }
    }

    /// Ends the query at once if it has no inputs at all.
    pub(crate) async fn start(&self) {
        let mut engine = self.engine.lock().await;
        if engine.live == 0 {
            self.end_if_done(&mut engine).await;
        }
    }

    /// A clock reading for every stream with a watermark strategy (as one worker of several:
    /// every stream this worker reads; another worker's are ticked there), or for input
    /// `only`. Returns whether it issued a CTI.
    pub(crate) async fn tick(&self, now: Time, only: Option<usize>) -> bool {
        self.drive(SendMode::Always, None, |driver| {
            let ticked = |i: usize| self.owns(i) && only.is_none_or(|o| o == i);
            let mut issued = false;
            for i in (0..driver.input_count()).filter(|&i| ticked(i)) {
                issued |= driver.tick_input(i, now);
            }
            for (i, view) in self.streams.iter().enumerate() {
                if driver.has_watermark(i) && ticked(i) {
                    let cti = driver.counters(i).map_or(Time::NEG_INF, |c| c.cti);
                    view.lock().metrics.record_clock(now, cti);
                }
            }
            issued
        })
        .await
        .unwrap_or(false)
    }

    /// The query's report as of now, with this ending.
    pub(crate) async fn report(&self, ending: Ending) -> QueryReport {
        let mut engine = self.engine.lock().await;
        let Engine { driver, drops, .. } = &mut *engine;
        keep_drops(&self.name, driver, drops);
        let mut report = self.report_of(driver, ending, true);
        report.drops.clone_from(drops);
        report
    }

    /// The report; with `items`, what the operators hold item by item (a visit of all their
    /// state: for the final report only).
    fn report_of(&self, driver: &Driver, ending: Ending, items: bool) -> QueryReport {
        let (mut held, mut dropped, mut lateness) = (Vec::new(), Vec::new(), Vec::new());
        driver.for_each_operator(|n| {
            if n.lateness != punctual_core::ops::LateCounts::default() {
                lateness.push((node_label(&n), n.lateness));
            }
            if n.state > 0 {
                held.push((node_label(&n), n.state));
            }
            if n.dropped > 0 {
                dropped.push((node_label(&n), n.dropped));
            }
        });
        let held_items = if items && !held.is_empty() {
            held_items_shown(driver, &self.show)
        } else {
            Vec::new()
        };
        QueryReport {
            streams: self
                .streams
                .iter()
                .map(|s| (s.name.clone(), s.counters()))
                .collect(),
            clock_records: self
                .streams
                .iter()
                .map(|s| (s.name.clone(), s.clock_record()))
                .filter(|(_, r)| !r.is_empty())
                .collect(),
            ending,
            held,
            held_items,
            dropped,
            lateness,
            drops: Vec::new(),
            explanations: driver.explain(),
        }
    }

    /// Where every node stands, with how long each input's CTI has been quiet.
    pub(crate) async fn explain(&self) -> Vec<punctual_core::ops::Explanation> {
        let mut lines = self.engine.lock().await.driver.explain();
        let now = Instant::now();
        let quiet = |label: &str| {
            self.streams
                .iter()
                .find(|v| v.name == label)
                .map(|v| v.quiet_for(now))
        };
        for e in &mut lines {
            if e.operator == "input" && e.cti < Time::INF {
                e.quiet_for = quiet(&e.label);
            }
            e.held_quiet_for = e.held_by.as_ref().and_then(|(l, _)| quiet(l));
        }
        lines
    }
}
