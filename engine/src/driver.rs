//! [`Driver`]: a built query, run by whoever feeds it.
//!
//! After every call that feeds an input, the driver feeds what that input's ingress released
//! into the operator graph (the source's release first), then issues each CTI it emitted on
//! every stream that imports it, at once, and so on down the import graph (each importer's
//! release fed in turn). Outputs keep what they produce until [`Driver::take_output`]; dead
//! letters go to the input's sink as they happen.

use punctual_core::ops::{Edge, EdgeEnd, Explanation, Graph, Held, NodeStats};
use punctual_core::{Batch, StreamItem, Time};
use punctual_policies::{
    Arrival, ClockReading, EnqueueSummary, Enqueued, Error, Ingress, IngressCounters,
    IngressOutput, MalformedRecord,
};

use crate::input::{Input, Slot};
use crate::plan::{InputId, OutputId};

/// A built query: every input's ingress, the import graph, the operator graph and the outputs,
/// fed and read synchronously. See the crate doc for an example.
pub struct Driver {
    pub(crate) name: String,
    plan: u64,
    max_held: usize,
    pub(crate) graph: Graph,
    pub(crate) inputs: Vec<Box<dyn Input>>,
    /// For each input, the inputs that import its CTIs.
    importers: Vec<Vec<usize>>,
    /// For each input, whether it is reference data (it keeps its own end).
    reference: Vec<bool>,
    /// For each reference input, whether an imported `CTI(+inf)` waits for its own end.
    pub(crate) withheld: Vec<bool>,
    /// Scratch: the CTIs an input released in one call.
    ctis: Vec<Time>,
    /// Scratch, by depth in the import graph: the CTIs an importer took.
    imported: Vec<Vec<Time>>,
    pub(crate) closed: bool,
}

impl std::fmt::Debug for Driver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Driver")
            .field("name", &self.name)
            .field(
                "inputs",
                &self.inputs.iter().map(|i| i.name()).collect::<Vec<_>>(),
            )
            .finish()
    }
}

impl Driver {
    pub(crate) fn new(
        name: String,
        (plan, max_held): (u64, usize),
        graph: Graph,
        inputs: Vec<Box<dyn Input>>,
        (importers, reference): (Vec<Vec<usize>>, Vec<bool>),
    ) -> Self {
        Driver {
            name,
            plan,
            max_held,
            graph,
            withheld: vec![false; inputs.len()],
            inputs,
            importers,
            reference,
            ctis: Vec::new(),
            imported: Vec::new(),
            closed: false,
        }
    }

    /// The query's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// How many inputs the query has.
    pub fn input_count(&self) -> usize {
        self.inputs.len()
    }

    /// The name of input `index` (creation order).
    pub fn input_name(&self, index: usize) -> Option<&str> {
        self.inputs.get(index).map(|i| i.name())
    }

    /// Runs `f` on an input's ingress and its output, then feeds what it released into the
    /// graph and imports its CTIs: the one way anything reaches an ingress.
    ///
    /// # Panics
    /// If `input` is a handle of another plan (a programming error, like an index out of
    /// bounds).
    fn with_input<P: Clone + PartialEq + Send + Sync + 'static, R>(
        &mut self,
        input: InputId<P>,
        f: impl FnOnce(&mut Ingress<P>, &mut IngressOutput<P>) -> R,
    ) -> R {
        assert_eq!(
            input.plan, self.plan,
            "an InputId of another plan used with the driver of query `{}`",
            self.name
        );
        let slot = self.inputs[input.index]
            .as_any()
            .downcast_mut::<Slot<P>>()
            .expect("an InputId's payload type is its input's");
        let r = f(&mut slot.ingress, &mut slot.out);
        self.propagate(input.index);
        r
    }

    /// Feeds input `i`'s release into the graph, then issues the CTIs it emitted on its
    /// importers (and theirs on their importers, and so on).
    fn propagate(&mut self, i: usize) {
        let mut ctis = std::mem::take(&mut self.ctis);
        ctis.clear();
        if !self.importers[i].is_empty() {
            self.inputs[i].released_ctis(&mut ctis);
        }
        self.inputs[i].feed(&mut self.graph);
        if !ctis.is_empty() {
            self.import(i, &ctis, 0);
        }
        self.ctis = ctis;
    }

    /// Issues the CTIs `ts` (in order), just emitted by input `from`, on every input that
    /// imports them: each importer takes them all, then what it released is fed at once (one
    /// pass through the graph for the lot, whose operators see the same items in the same
    /// order as one pass per CTI would give them), then the CTIs it took go on to its own
    /// importers. A reference input whose adapter has not ended keeps an imported `CTI(+inf)`
    /// for its end.
    fn import(&mut self, from: usize, ts: &[Time], depth: usize) {
        if self.imported.len() <= depth {
            self.imported.resize_with(depth + 1, Vec::new);
        }
        for k in 0..self.importers[from].len() {
            let j = self.importers[from][k];
            let mut taken = std::mem::take(&mut self.imported[depth]);
            taken.clear();
            for &t in ts {
                if t == Time::INF && self.reference[j] && !self.inputs[j].is_finished() {
                    self.withheld[j] = true;
                    continue;
                }
                if self.inputs[j].import_cti(t) {
                    taken.push(t);
                }
            }
            if !taken.is_empty() {
                self.inputs[j].feed(&mut self.graph);
                self.import(j, &taken, depth + 1);
            }
            self.imported[depth] = taken;
        }
    }

    /// Enqueues one item on an input (see [`Ingress::enqueue`]). An error means the item was
    /// rejected (counted and dead-lettered too); the input goes on.
    pub fn enqueue<P: Clone + PartialEq + Send + Sync + 'static>(
        &mut self,
        input: InputId<P>,
        item: StreamItem<P>,
    ) -> Result<Enqueued, Error> {
        self.with_input(input, |ingress, out| ingress.enqueue(item, out))
    }

    /// Enqueues one item with its arrival time and partition, for the watermark strategies
    /// (see [`Ingress::enqueue_with`]).
    pub fn enqueue_with<P: Clone + PartialEq + Send + Sync + 'static>(
        &mut self,
        input: InputId<P>,
        item: StreamItem<P>,
        arrival: Arrival,
    ) -> Result<Enqueued, Error> {
        self.with_input(input, |ingress, out| {
            ingress.enqueue_with(item, arrival, out)
        })
    }

    /// Enqueues a block of items (see [`Ingress::enqueue_items`]: runs of points take the bulk
    /// loop); the graph runs once, after the last.
    pub fn enqueue_items<P: Clone + PartialEq + Send + Sync + 'static>(
        &mut self,
        input: InputId<P>,
        items: impl IntoIterator<Item = StreamItem<P>>,
    ) -> Result<EnqueueSummary, Error> {
        self.with_input(input, |ingress, out| ingress.enqueue_items(items, out))
    }

    /// Enqueues a block of items with their arrivals (see [`Ingress::enqueue_items_with`]);
    /// the graph runs once, after the last.
    pub fn enqueue_items_with<P: Clone + PartialEq + Send + Sync + 'static>(
        &mut self,
        input: InputId<P>,
        items: impl IntoIterator<Item = (StreamItem<P>, Arrival)>,
    ) -> Result<EnqueueSummary, Error> {
        self.with_input(input, |ingress, out| ingress.enqueue_items_with(items, out))
    }

    /// Enqueues points (see [`Ingress::enqueue_points`]).
    pub fn enqueue_points<P: Clone + PartialEq + Send + Sync + 'static>(
        &mut self,
        input: InputId<P>,
        points: impl IntoIterator<Item = (Time, P)>,
    ) -> Result<EnqueueSummary, Error> {
        self.with_input(input, |ingress, out| ingress.enqueue_points(points, out))
    }

    /// Enqueues points given as columns (see [`Ingress::enqueue_point_columns`]).
    pub fn enqueue_point_columns<P: Clone + PartialEq + Send + Sync + 'static>(
        &mut self,
        input: InputId<P>,
        times: &[Time],
        payloads: &[P],
    ) -> Result<EnqueueSummary, Error> {
        self.with_input(input, |ingress, out| {
            ingress.enqueue_point_columns(times, payloads, out)
        })
    }

    /// Enqueues points given as records (see [`Ingress::enqueue_point_records`]).
    pub fn enqueue_point_records<P: Clone + PartialEq + Send + Sync + 'static, R>(
        &mut self,
        input: InputId<P>,
        records: &[R],
        time: impl Fn(&R) -> Time,
        payload: impl Fn(&R) -> P,
    ) -> Result<EnqueueSummary, Error> {
        self.with_input(input, |ingress, out| {
            ingress.enqueue_point_records(records, time, payload, out)
        })
    }

    /// Records an input record the adapter could not parse (see
    /// [`Ingress::report_malformed`]).
    pub fn report_malformed<P: Clone + PartialEq + Send + Sync + 'static>(
        &mut self,
        input: InputId<P>,
        record: MalformedRecord,
    ) {
        self.with_input(input, |ingress, out| ingress.report_malformed(record, out));
    }

    /// Records `n` input records that carry no item (see [`Ingress::report_skipped`]).
    pub fn report_skipped<P: Clone + PartialEq + Send + Sync + 'static>(
        &mut self,
        input: InputId<P>,
        n: u64,
    ) {
        self.with_input(input, |ingress, _| ingress.report_skipped(n));
    }

    /// The adapter of `input` has read its next batch for input partition `partition`, with
    /// start times in `[min, max]` (see [`Ingress::look_ahead`]). Returns whether a CTI was
    /// issued.
    pub fn look_ahead<P: Clone + PartialEq + Send + Sync + 'static>(
        &mut self,
        input: InputId<P>,
        partition: usize,
        (min, max): (Time, Time),
    ) -> bool {
        self.with_input(input, |ingress, out| {
            ingress.look_ahead(partition, min, max, out)
        })
    }

    /// End of input `index`: its final CTI, if its settings ask for one (see
    /// [`Ingress::finish`]), or, for a reference input, the final CTI it imported while its
    /// adapter ran. Returns whether it issued one. Its held events may still be released by
    /// imported CTIs.
    pub fn finish(&mut self, index: usize) -> bool {
        let Some(input) = self.inputs.get_mut(index) else {
            return false;
        };
        let mut issued = input.finish();
        self.propagate(index);
        if std::mem::take(&mut self.withheld[index]) && self.inputs[index].import_cti(Time::INF) {
            issued = true;
            self.inputs[index].feed(&mut self.graph);
            self.import(index, &[Time::INF], 0);
        }
        issued
    }

    /// Whether input `index` is reference data (see `InputOptions::reference`).
    pub fn is_reference(&self, index: usize) -> bool {
        self.reference.get(index).copied().unwrap_or(false)
    }

    /// A clock reading, on the application-time scale, for every input whose watermark
    /// strategy takes one and that has not finished (idle inputs, idle partitions, periodic
    /// emission). Returns whether any issued a CTI.
    pub fn tick(&mut self, now: Time) -> bool {
        let mut issued = false;
        for i in 0..self.inputs.len() {
            issued |= self.tick_input(i, now);
        }
        issued
    }

    /// [`Driver::tick`] for input `index` alone (an executor that runs inputs on different
    /// workers ticks each where it runs). Returns whether it issued a CTI.
    pub fn tick_input(&mut self, index: usize, now: Time) -> bool {
        let Some(input) = self.inputs.get_mut(index) else {
            return false;
        };
        if input.has_watermark() && !input.is_finished() && input.on_clock(now) {
            self.propagate(index);
            return true;
        }
        false
    }

    /// The inputs that import input `index`'s CTIs.
    pub fn importers(&self, index: usize) -> &[usize] {
        self.importers.get(index).map_or(&[], Vec::as_slice)
    }

    /// Which worker owns each input: inputs linked by CTI imports stay together, the groups go
    /// round-robin over the workers.
    pub fn owners(&self, workers: usize) -> Vec<usize> {
        let n = self.input_count();
        let mut group: Vec<usize> = (0..n).collect();
        fn root(group: &mut [usize], mut i: usize) -> usize {
            while group[i] != i {
                group[i] = group[group[i]];
                i = group[i];
            }
            i
        }
        for i in 0..n {
            for &j in self.importers(i) {
                let (a, b) = (root(&mut group, i), root(&mut group, j));
                group[a.max(b)] = a.min(b);
            }
        }
        let mut ordinal: Vec<Option<usize>> = vec![None; n];
        let mut next = 0;
        (0..n)
            .map(|i| {
                let r = root(&mut group, i);
                let k = *ordinal[r].get_or_insert_with(|| {
                    next += 1;
                    next - 1
                });
                k % workers.max(1)
            })
            .collect()
    }

    /// Runs this driver as worker `me` of `workers`, each running the same query (see
    /// [`Graph::split`]; `gather`: whether an output, by its node, is gathered on worker 0,
    /// or left in parts on every worker): what its inputs
    /// release, and what crosses between workers, is kept for the executor
    /// ([`Driver::graph_mut`]) instead of running on. Returns the edges between the workers,
    /// each with the input whose stream it carries (for an input's stream, or its late-data
    /// side output).
    pub fn split(
        &mut self,
        me: usize,
        workers: usize,
        gather: &dyn Fn(punctual_core::ops::NodeId) -> bool,
    ) -> Vec<(Edge, Option<usize>)> {
        let sources: Vec<(usize, punctual_core::ops::NodeId)> = self
            .inputs
            .iter()
            .enumerate()
            .flat_map(|(i, input)| {
                let (node, late) = input.sources();
                std::iter::once((i, node)).chain(late.map(|l| (i, l)))
            })
            .collect();
        // Reference data may be replicated to every worker (see `Graph::split`).
        let replicable: Vec<punctual_core::ops::NodeId> = self
            .inputs
            .iter()
            .enumerate()
            .filter(|(i, _)| self.is_reference(*i))
            .map(|(_, input)| input.sources().0)
            .collect();
        self.graph
            .split(me, workers, gather, &replicable)
            .into_iter()
            .map(|edge| {
                let input = match edge.to {
                    EdgeEnd::Source(node) => sources.iter().find(|s| s.1 == node).map(|s| s.0),
                    _ => None,
                };
                (edge, input)
            })
            .collect()
    }

    /// The operator graph, for an executor that runs it split over workers
    /// ([`Driver::split`]): what to send, what was received.
    pub fn graph_mut(&mut self) -> &mut Graph {
        &mut self.graph
    }

    /// Ends the query: every input is closed; what its ingress still holds is counted as
    /// `unreleased` and sent to its dead letters. Further calls do nothing.
    pub fn close(&mut self) {
        if std::mem::replace(&mut self.closed, true) {
            return;
        }
        for input in &mut self.inputs {
            input.close();
            input.feed(&mut self.graph);
        }
    }

    /// Whether [`Driver::close`] has run.
    pub fn is_closed(&self) -> bool {
        self.closed
    }

    /// Moves what an output produced since the last call to the end of `into`.
    ///
    /// # Panics
    /// If `output` is a handle of another plan.
    pub fn take_output<P: Send + 'static>(&mut self, output: &OutputId<P>, into: &mut Batch<P>) {
        assert_eq!(
            output.plan, self.plan,
            "an OutputId of another plan used with the driver of query `{}`",
            self.name
        );
        self.graph.take_output(output.node, into);
    }

    /// The counters of input `index`.
    pub fn counters(&self, index: usize) -> Option<IngressCounters> {
        self.inputs.get(index).map(|i| i.ingress_counters())
    }

    /// Whether input `index` has finished (end of input, or the query closed).
    pub fn is_finished(&self, index: usize) -> bool {
        self.inputs.get(index).is_some_and(|i| i.is_finished())
    }

    /// Whether input `index` takes its CTIs from a watermark strategy (and clock readings).
    pub fn has_watermark(&self, index: usize) -> bool {
        self.inputs.get(index).is_some_and(|i| i.has_watermark())
    }

    /// The partitions input `index`'s watermark alignment asks to pause.
    pub fn paused_partitions(&self, index: usize) -> Vec<usize> {
        self.inputs
            .get(index)
            .map(|i| i.paused_partitions())
            .unwrap_or_default()
    }

    /// The clock readings that issued CTIs on input `index`.
    pub fn clock_record(&self, index: usize) -> &[ClockReading] {
        self.inputs.get(index).map_or(&[], |i| i.clock_record())
    }

    /// Where every input and operator stands: its CTI, each input's CTI, the input holding it
    /// back, the state it holds (see [`Explanation`]).
    pub fn explain(&self) -> Vec<Explanation> {
        self.graph.explain()
    }

    /// Visits every operator without allocating (for metrics): see
    /// The most the query may hold waiting for CTIs ([`Plan::max_held`]).
    ///
    /// [`Plan::max_held`]: crate::Plan::max_held
    pub fn max_held(&self) -> usize {
        self.max_held
    }

    /// What the query holds waiting for CTIs: every input's buffered events and every
    /// operator's events or groups.
    pub fn held(&self) -> usize {
        let inputs: u64 = (0..self.inputs.len())
            .filter_map(|i| self.counters(i))
            .map(|c| c.buffered + c.open_edges)
            .sum();
        let mut operators = 0;
        self.graph.for_each_operator(|n| operators += n.state);
        usize::try_from(inputs)
            .unwrap_or(usize::MAX)
            .saturating_add(operators)
    }

    /// Checks what the query holds against its budget ([`Plan::max_held`]): over it, names the
    /// input or operator holding the most and the input whose CTI it waits for (following
    /// the lowest input CTI upstream from that operator). A runtime fails the query with it.
    ///
    /// [`Plan::max_held`]: crate::Plan::max_held
    pub fn check_budget(&self) -> Result<(), crate::OverBudget> {
        let held = self.held();
        if held <= self.max_held {
            return Ok(());
        }
        let lines = self.graph.explain();
        // The input with the most buffered, and the operator with the most state.
        let input = (0..self.inputs.len())
            .filter_map(|i| Some((i, self.counters(i)?)))
            .max_by_key(|(_, c)| c.buffered + c.open_edges);
        let operator = lines
            .iter()
            .filter(|l| l.operator != "input")
            .max_by_key(|l| l.state);
        let input_most = input.map_or(0, |(_, c)| (c.buffered + c.open_edges) as usize);
        let (holder, most, waits_for) = match operator {
            Some(op) if op.state > input_most => {
                // Upstream along the lowest input CTI, to an input.
                let mut at = op;
                for _ in 0..lines.len() {
                    let Some((label, _)) = &at.held_by else { break };
                    match lines.iter().find(|l| &l.label == label) {
                        Some(next) if next.operator != "input" => at = next,
                        Some(next) => {
                            at = next;
                            break;
                        }
                        None => break,
                    }
                }
                (
                    format!("{} `{}`", op.operator, op.label),
                    op.state,
                    at.label.clone(),
                )
            }
            _ => {
                let name = input
                    .and_then(|(i, _)| self.input_name(i))
                    .unwrap_or("?")
                    .to_owned();
                (format!("input `{name}`"), input_most, name)
            }
        };
        let cti = (0..self.inputs.len())
            .find(|&i| self.input_name(i) == Some(waits_for.as_str()))
            .and_then(|i| self.counters(i))
            .map_or(punctual_core::Time::NEG_INF, |c| c.cti);
        Err(crate::OverBudget {
            query: self.name.clone(),
            held,
            budget: self.max_held,
            holder,
            most,
            input: waits_for,
            cti,
        })
    }

    /// Moves every operator's drops not yet taken to `into` (see [`Graph::take_drops`]).
    pub fn take_operator_drops(
        &mut self,
        into: &mut Vec<(String, &'static str, punctual_core::ops::OperatorDrop)>,
    ) {
        self.graph.take_drops(into);
    }

    /// [`Graph::for_each_operator`].
    pub fn for_each_operator(&self, f: impl FnMut(NodeStats<'_>)) {
        self.graph.for_each_operator(f);
    }

    /// Visits everything every operator holds now, with the operator's stats: what a query
    /// that ends before its CTIs released it reports ([`Graph::for_each_held`]).
    pub fn for_each_held(&self, f: impl FnMut(&NodeStats<'_>, Held<'_>)) {
        self.graph.for_each_held(f);
    }
}
