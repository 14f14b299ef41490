//! A scripted run ([`run`]): every worker builds the same query ([`Script::build`]) and runs
//! a known sequence of steps (an input's arrivals, a clock reading, the end), each step at
//! timely times of its own, so that the output is, step by step, the one the query gives on
//! one worker.

use std::cell::RefCell;
use std::rc::Rc;
use std::sync::Arc;

use punctual_core::ops::Edge;
use punctual_core::Time;
use punctual_engine::Driver;
use timely::dataflow::operators::generic::operator::source;
use timely::dataflow::operators::probe::Probe;
use timely::dataflow::operators::Capability;

use crate::{arrive, guarded, route, run_stage, ClusterConfig, Error, Shipment};

/// One step of a scripted run, as [`Script::step`] gives it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Step {
    /// Something for input `i` (items, its end): [`Script::run_step`] runs on the worker that
    /// owns it.
    Input(usize),
    /// A clock reading: every worker ticks the inputs it owns ([`Driver::tick_input`]).
    Clock(Time),
    /// The end of the query: every worker closes its driver ([`Driver::close`]).
    Close,
}

/// A run given step by step: what builds the query on each worker, what each step does, and
/// what each worker reports at the end. Every worker calls [`Script::build`] and must get
/// the same query.
pub trait Script: Send + Sync + 'static {
    /// What a worker keeps beside its driver (input handles, dead-letter collectors).
    type Worker: 'static;
    /// What a worker reports at the end.
    type Output: Send + 'static;
    /// Builds the query's driver for worker `worker`.
    fn build(&self, worker: usize) -> Result<(Driver, Self::Worker), String>;
    /// Called on each worker once every process of the run is connected and its dataflow is
    /// built, before the first step (`worker` of `workers` in all). Nothing by default.
    fn started(&self, worker: usize, workers: usize) {
        let _ = (worker, workers);
    }
    /// Whether the outputs are gathered on worker 0 (by default): one stream, as on one
    /// worker. Without, each worker's outputs keep the results its operators made, and
    /// [`Script::drain`] reads them on every worker (for an output adapter that counts or
    /// stores wherever the results are, as a sink on every timely worker does).
    fn gather_outputs(&self) -> bool {
        true
    }
    /// How many steps the run has.
    fn steps(&self) -> usize;
    /// Step `step`.
    fn step(&self, step: usize) -> Step;
    /// Runs a [`Step::Input`] step on the worker that owns the input.
    fn run_step(&self, step: usize, driver: &mut Driver, worker: &mut Self::Worker);
    /// Takes what the outputs produced so far, as an output adapter would (the outputs are
    /// on worker 0, or on every worker without [`Script::gather_outputs`]): called on every
    /// worker after each step has reached the outputs. Nothing by default: the outputs keep
    /// everything for [`Script::finish`].
    fn drain(&self, driver: &mut Driver, worker: &mut Self::Worker) {
        let _ = (driver, worker);
    }
    /// What the worker reports once the run is over; `owns[i]` says whether it owned input
    /// `i` (its counters and dead letters are this worker's).
    fn finish(&self, driver: &mut Driver, worker: Self::Worker, owns: &[bool]) -> Self::Output;
}

/// Steps a timely time leaves room for per input: the passes (an input's stream fed once)
/// that one step makes, each at its own time.
const PASSES: i64 = 64;

/// Runs `script` on the cluster; returns what each of this process's workers reported, by
/// worker index. If another process is lost mid-run, every process ends with
/// [`Error::LostPeer`] (timely has no recovery: its peers' channels break).
pub fn run<S: Script>(script: Arc<S>, config: ClusterConfig) -> Result<Vec<S::Output>, Error> {
    let timely = config.clone();
    guarded(&config, move || run_timely(script, timely))
}

/// Where a scripted worker sends what its inputs released in one step: every shipment at a
/// timely time of its own within the step (`base`), by the input that released it and the
/// pass, so that a stage runs them in the order they were made.
struct Sending<'a> {
    edges: &'a [(Edge, Option<usize>)],
    owner: &'a [usize],
    me: usize,
    base: i64,
    inputs: usize,
}

impl Sending<'_> {
    /// Takes what this worker's inputs released (after a call for input `trigger`, or after
    /// the close for every input) into `sent`, each with its timely time.
    fn take(&self, driver: &mut Driver, trigger: Option<usize>, sent: &mut Vec<(i64, Shipment)>) {
        let mut k = 0i64;
        let mut per_input = vec![0i64; self.inputs.max(1)];
        driver.graph_mut().take_injections(|edge, parts| {
            let input = self.edges.get(edge).and_then(|e| e.1);
            if input.is_none_or(|i| self.owner.get(i) != Some(&self.me)) {
                return;
            }
            let (slot, pass) = match trigger {
                Some(t) => (t, &mut k),
                None => {
                    let i = input.unwrap_or(0);
                    (i, &mut per_input[i])
                }
            };
            let time = self.base + slot as i64 * PASSES + (*pass).min(PASSES - 1);
            *pass += 1;
            for (dest, batch) in parts.into_iter().enumerate() {
                if !batch.is_empty() {
                    sent.push((time, Shipment::new(dest, self.me, edge, batch)));
                }
            }
        });
    }
}

/// Runs step `step` of `script` on this worker: what it sent, each at its timely time.
fn one_step<S: Script>(
    script: &S,
    step: usize,
    driver: &mut Driver,
    state: &mut Option<S::Worker>,
    at: &Sending<'_>,
) -> Vec<(i64, Shipment)> {
    let mut sent = Vec::new();
    match script.step(step) {
        Step::Input(i) => {
            if at.owner.get(i) == Some(&at.me) {
                if let Some(state) = state.as_mut() {
                    script.run_step(step, driver, state);
                }
                at.take(driver, Some(i), &mut sent);
            }
        }
        Step::Clock(now) => {
            for (i, &o) in at.owner.iter().enumerate() {
                if o == at.me && driver.tick_input(i, now) {
                    at.take(driver, Some(i), &mut sent);
                }
            }
        }
        Step::Close => {
            driver.close();
            at.take(driver, None, &mut sent);
        }
    }
    sent
}

fn run_timely<S: Script>(script: Arc<S>, config: ClusterConfig) -> Result<Vec<S::Output>, Error> {
    let guards = crate::net::execute(&config, move |worker| scripted_worker(worker, &script))?;
    let mut outputs = Vec::new();
    for (worker, result) in guards.join().into_iter().enumerate() {
        match result {
            Ok(Ok(output)) => outputs.push(output),
            Ok(Err(e)) => return Err(e),
            Err(message) => return Err(Error::Worker { worker, message }),
        }
    }
    Ok(outputs)
}

/// One worker of a scripted run.
fn scripted_worker<S: Script>(
    worker: &mut timely::worker::Worker,
    script: &Arc<S>,
) -> Result<S::Output, Error> {
    let me = worker.index();
    let peers = worker.peers();
    let (mut driver, state) = script.build(me).map_err(|message| Error::Build {
        worker: me,
        message,
    })?;
    // One worker has nobody to exchange with: its graph runs whole.
    let edges = if peers > 1 {
        let gather = script.gather_outputs();
        driver.split(me, peers, &|_| gather)
    } else {
        Vec::new()
    };
    let failure: Rc<RefCell<Option<String>>> = Rc::new(RefCell::new(None));
    let owner = driver.owners(peers);
    let inputs = driver.input_count();
    let per_step = PASSES * (inputs.max(1) as i64);
    let last = edges.iter().map(|(e, _)| e.to_stage).max().unwrap_or(0);
    let shared = Rc::new(RefCell::new((driver, Some(state))));
    let probe = timely::dataflow::ProbeHandle::new();
    let edge_list: Rc<Vec<(Edge, Option<usize>)>> = Rc::new(edges);
    worker.dataflow::<i64, _, _>(|scope| {
        let ingress = {
            let shared = Rc::clone(&shared);
            let script = Arc::clone(script);
            let edges = Rc::clone(&edge_list);
            let owner = owner.clone();
            source(scope, "ingress", move |cap: Capability<i64>, info| {
                let activator = scope.activator_for(info.address);
                let mut cap = Some(cap);
                let mut step = 0usize;
                let steps = script.steps();
                script.started(me, peers);
                move |output| {
                    let Some(c) = cap.as_mut() else { return };
                    let mut guard = shared.borrow_mut();
                    let (driver, state) = &mut *guard;
                    let mut budget = 256;
                    while step < steps && budget > 0 {
                        let base = step as i64 * per_step;
                        c.downgrade(&base);
                        let at = Sending {
                            edges: &edges,
                            owner: &owner,
                            me,
                            base,
                            inputs,
                        };
                        let sent = one_step(script.as_ref(), step, driver, state, &at);
                        for (time, shipment) in sent {
                            output.session(&c.delayed(&time)).give(shipment);
                        }
                        if last == 0 {
                            if let Some(state) = state.as_mut() {
                                script.drain(driver, state);
                            }
                        }
                        step += 1;
                        budget -= 1;
                    }
                    if step >= steps {
                        cap = None;
                    } else {
                        activator.activate();
                    }
                }
            })
        };
        let stream = scripted_stages(ingress, last, &shared, script, &edge_list, &failure, me);
        stream.probe_with(&probe);
    });
    // Park when there is nothing to do: a message or an activation wakes the worker.
    while !probe.done() {
        worker.step_or_park(None);
    }
    if let Some(message) = failure.borrow_mut().take() {
        return Err(Error::Worker {
            worker: me,
            message,
        });
    }
    let mut guard = shared.borrow_mut();
    let (driver, state) = &mut *guard;
    let owns: Vec<bool> = owner.iter().map(|&o| o == me).collect();
    let state = state.take().ok_or_else(|| Error::Worker {
        worker: me,
        message: "the run ended twice".to_owned(),
    })?;
    Ok(script.finish(driver, state, &owns))
}

/// The stages after the ingress of a scripted worker, each a timely operator over the stream
/// before it; the last drains the outputs as the script says.
#[allow(
    clippy::type_complexity,
    reason = "the worker's shared driver and state"
)]
fn scripted_stages<'scope, S: Script>(
    ingress: timely::dataflow::StreamVec<'scope, i64, Shipment>,
    last: usize,
    shared: &Rc<RefCell<(Driver, Option<S::Worker>)>>,
    script: &Arc<S>,
    edges: &Rc<Vec<(Edge, Option<usize>)>>,
    failure: &Rc<RefCell<Option<String>>>,
    me: usize,
) -> timely::dataflow::StreamVec<'scope, i64, Shipment> {
    let mut stream = ingress;
    for stage in 1..=last {
        let shared = Rc::clone(shared);
        let script = Arc::clone(script);
        let edges = Rc::clone(edges);
        let failure = Rc::clone(failure);
        stream = run_stage(
            stream,
            stage,
            move |shipments| {
                let mut guard = shared.borrow_mut();
                let mut fail = failure.borrow_mut();
                let mut give = arrive(guard.0.graph_mut(), stage, shipments, &edges, &mut fail);
                if stage == last {
                    let (driver, state) = &mut *guard;
                    if let Some(state) = state.as_mut() {
                        script.drain(driver, state);
                    }
                }
                route(guard.0.graph_mut(), me, &mut give);
                give
                // A scripted run has its steps: nothing stops it from the outside.
            },
            || {},
        );
    }
    stream
}
