//! A live worker's `ingress`: what the inputs of the parts it runs send it ([`Outbox`]), read
//! by its `ingress` operator ([`live_ingress`]) and sent on at the least CTI of those parts.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, Sender};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::time::Duration;

use punctual_core::Time;
use punctual_engine::Driver;
use punctual_runtime::{Backlog, Exchange};
use timely::dataflow::operators::generic::operator::source;
use timely::dataflow::operators::Capability;
use timely::scheduling::SyncActivator;

use crate::cut::Cuts;
use crate::{Shipment, StopSignal};

/// What the inputs of a part sent, for its worker's `ingress` operator.
pub(crate) enum Sent {
    /// From part `.0`: batches for the parts, how many events they hold, then the part's CTI
    /// (`None`: every input it owns has finished).
    Batches(usize, Vec<Shipment>, usize, Option<i64>),
    /// Every input part `.0` owns has ended.
    Ended(usize),
}

/// The executor's side of one part's query: under the query's lock, takes what the inputs
/// released for the parts and hands it to the timely thread that runs the part.
pub(crate) struct Outbox {
    /// The part, and how many there are.
    pub(crate) me: usize,
    pub(crate) parts: usize,
    /// Set on the first call: who owns each input.
    owners: OnceLock<Vec<usize>>,
    tx: Mutex<Sender<Sent>>,
    pub(crate) activator: OnceLock<SyncActivator>,
    /// Whether something was sent that the timely side has not read: only the first send
    /// after a read wakes it.
    unread: AtomicBool,
    /// The events sent that the timely side has not read: the inputs wait while there are
    /// more than [`ClusterConfig::backlog`](crate::ClusterConfig::backlog). Without a bound,
    /// inputs that read faster than the operators run would gather the whole input in memory
    /// (each batch in fresh memory, never in cache).
    backlog: Backlog,
    /// Counts what is on its way, for snapshots.
    cuts: Arc<Cuts>,
}

impl Outbox {
    pub(crate) fn new(
        (me, parts): (usize, usize),
        tx: Sender<Sent>,
        backlog: usize,
        cuts: Arc<Cuts>,
    ) -> Self {
        Outbox {
            me,
            parts,
            owners: OnceLock::new(),
            tx: Mutex::new(tx),
            activator: OnceLock::new(),
            unread: AtomicBool::new(false),
            backlog: Backlog::new(backlog),
            cuts,
        }
    }

    fn send(&self, sent: Sent) {
        let tx = self.tx.lock().unwrap_or_else(PoisonError::into_inner);
        self.cuts.gave(1);
        // The timely side is gone only once the run is over.
        let _ = tx.send(sent);
        if !self.unread.swap(true, Ordering::AcqRel) {
            if let Some(a) = self.activator.get() {
                let _ = a.activate();
            }
        }
    }
}

impl Exchange for Outbox {
    fn sent(&self, driver: &mut Driver) {
        let owners = self.owners.get_or_init(|| driver.owners(self.parts));
        let me = self.me;
        let mut shipments = Vec::new();
        let mut events = 0;
        driver.graph_mut().take_injections(|edge, parts| {
            for (dest, batch) in parts.into_iter().enumerate() {
                if !batch.is_empty() {
                    events += batch.events();
                    shipments.push(Shipment::new(dest, me, edge, batch));
                }
            }
        });
        let cti = (0..driver.input_count())
            .filter(|&i| owners.get(i) == Some(&me) && !driver.is_finished(i))
            .map(|i| driver.counters(i).map_or(Time::NEG_INF, |c| c.cti).ticks())
            .min();
        self.backlog.add(events);
        self.send(Sent::Batches(me, shipments, events, cti));
    }

    fn backlog(&self) -> Option<&Backlog> {
        Some(&self.backlog)
    }

    fn ended(&self, _driver: &mut Driver) {
        self.send(Sent::Ended(self.me));
    }
}

/// The timely side reads what the inputs sent at most once per this long, however often they
/// send (a wake-up of another thread costs more than a small batch): the latency it adds.
const READ_EVERY: Duration = Duration::from_millis(1);

/// Where each part a worker runs stands, for its ingress capability.
enum PartAt {
    /// Nothing heard yet: the capability waits for it.
    Unknown,
    /// Its CTI (`None`: its inputs have finished, it holds nothing back).
    At(Option<i64>),
    /// Its inputs have ended.
    Ended,
}

/// The least CTI of the parts, if every part has been heard from and one holds a CTI.
fn least(parts: &[PartAt]) -> Option<i64> {
    let mut least = None;
    for p in parts {
        match p {
            PartAt::Unknown => return None,
            PartAt::At(Some(t)) => least = Some(least.map_or(*t, |l: i64| l.min(*t))),
            PartAt::At(None) | PartAt::Ended => {}
        }
    }
    least
}

/// A live worker's `ingress` operator: reads what the inputs of the parts it runs (`outboxes`)
/// sent (at most once per [`READ_EVERY`]) and sends it on at the least CTI of those parts,
/// holding its capability there (restored, from `floor` on: after what the stages held); tells the parts of other workers of a stop; lets its
/// capability go once every part's inputs have ended (at once if it runs none).
pub(crate) fn live_ingress<'scope>(
    scope: timely::dataflow::Scope<'scope, i64>,
    rx: Receiver<Sent>,
    outboxes: Vec<Arc<Outbox>>,
    (signal, cuts): (StopSignal, Arc<Cuts>),
    at: std::rc::Rc<std::cell::RefCell<Vec<usize>>>,
    (me, floor): (usize, i64),
) -> timely::dataflow::StreamVec<'scope, i64, Shipment> {
    source(scope, "ingress", move |mut cap: Capability<i64>, info| {
        *at.borrow_mut() = info.address.to_vec();
        let later = scope.activator_for(info.address);
        let mut read_at: Option<std::time::Instant> = None;
        // Restored: after what the stages held (see `Cuts::started`).
        if floor > *cap.time() {
            cap.downgrade(&floor);
        }
        let mut cap = Some(cap);
        let mut told = false;
        let mut parts: Vec<PartAt> = outboxes.iter().map(|_| PartAt::Unknown).collect();
        let hosted: Vec<usize> = outboxes.iter().map(|o| o.me).collect();
        let index = move |part: usize| hosted.iter().position(|p| *p == part);
        move |output| {
            let Some(c) = cap.as_mut() else {
                // Ended: what the parts' clocks still send (a watermark's idle timeout
                // drives a part without inputs) carries nothing, but counts as on its way
                // until read.
                for o in &outboxes {
                    o.unread.store(false, Ordering::Release);
                }
                while rx.try_recv().is_ok() {
                    cuts.took(1);
                }
                return;
            };
            if let Some(wait) = read_at.and_then(|t| READ_EVERY.checked_sub(t.elapsed())) {
                // Read a moment ago: what came since waits for a batch to gather.
                later.activate_after(wait);
                return;
            }
            read_at = Some(std::time::Instant::now());
            for o in &outboxes {
                o.unread.store(false, Ordering::Release);
            }
            while let Ok(sent) = rx.try_recv() {
                // A batch goes at the CTI before it; then the capability moves on to the
                // least CTI of the parts (one not heard from holds it back).
                match sent {
                    Sent::Batches(part, shipments, events, cti) => {
                        if !shipments.is_empty() {
                            cuts.gave(shipments.len());
                            output.session(&*c).give_iterator(shipments.into_iter());
                        }
                        if let Some(i) = index(part) {
                            outboxes[i].backlog.take(events);
                            if !matches!(parts[i], PartAt::Ended) {
                                parts[i] = PartAt::At(cti);
                            }
                        }
                    }
                    Sent::Ended(part) => {
                        if let Some(i) = index(part) {
                            parts[i] = PartAt::Ended;
                        }
                    }
                }
                cuts.took(1);
                if let Some(t) = least(&parts).filter(|t| *t > *c.time()) {
                    c.downgrade(&t);
                }
            }
            cuts.set_cap(me, Some(*c.time()));
            if signal.is_stopped() && !told {
                // Every other part learns of the stop (while this worker can still send).
                told = true;
                let parts = outboxes.first().map_or(0, |o| o.parts);
                let from = outboxes.first().map_or(me, |o| o.me);
                let stops: Vec<Shipment> = (0..parts)
                    .filter(|p| index(*p).is_none())
                    .map(|p| Shipment::stop(p, from))
                    .collect();
                cuts.gave(stops.len());
                output.session(&*c).give_iterator(stops.into_iter());
            }
            if parts.iter().all(|p| matches!(p, PartAt::Ended)) {
                cap = None;
                cuts.set_cap(me, None);
            }
        }
    })
}
