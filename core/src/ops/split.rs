//! One graph run as one worker of several: [`Graph::split`].
//!
//! Every worker builds the same graph and runs every operator, each on its share of the
//! events; what crosses from one worker to another travels on the graph's *edges*:
//!
//! - an input's stream, from the worker that owns the input (its adapter and ingress) to
//!   every worker: the CTIs go to all; the events stay on the owner, unless the stream leads,
//!   through operators that keep payloads (filter, union, shift, ...:
//!   [`Node::keeps_payloads`]), to an operator that must see events together: then they go
//!   where that operator needs them as soon as they are read, and its input does not cross
//!   workers again;
//! - an input of reference data ([`Graph::split`]'s `replicable`) that is the right input
//!   of a join (or an anti-semi-join, a clip): to every worker, events and CTIs, so that the
//!   join's left events need not cross at all;
//! - the input of an operator that must see events together (its [`Placement`]): events by a
//!   hash of their key (or all to one worker), CTIs to all;
//! - an input that crosses from one stage to a later one (see below) without a placement:
//!   events stay, CTIs go to all;
//! - an output: events to worker 0, where the output is read.
//!
//! A node's *stage* is how many routed edges lie on the longest path from an input to it
//! (inputs' streams are stage 1, their ingress stage 0); outputs are read one stage after the
//! last. An executor runs the stages in order for each step (an arrival, say) and hands each
//! edge's batches from every sender to the receiving worker, which merges them into one
//! stream ([`AnyBatch::merge_from`]): each sender's items in their order, and the CTI every
//! sender has passed. Because every worker sees every CTI and a keyed operator's results
//! and CTI on all its keys are the union and the minimum of its results and CTIs on each
//! share of them, the merged output of a step is the output of the graph run whole.
//!
//! [`Placement`]: super::Placement
//! [`Node::keeps_payloads`]: super::graph::Node::keeps_payloads

use std::any::TypeId;
use std::sync::{Mutex, PoisonError};

use crate::time::Time;

use super::graph::{AnyBatch, Graph, NodeId};
use super::Placement;

/// Where an edge of a split graph ends (see [`Graph::split`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EdgeEnd {
    /// An input's source node: the edge carries the input's stream from its owner.
    Source(NodeId),
    /// An operator's input port.
    Port(NodeId, usize),
    /// A kept output, read on worker 0.
    Output(NodeId),
}

/// An edge between the workers of a split graph: what one stage sends the next.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Edge {
    /// The node whose output it carries; `None` for an input's stream (from its ingress).
    pub from: Option<NodeId>,
    /// Where it goes.
    pub to: EdgeEnd,
    /// The stage that sends it (0: the inputs' ingress).
    pub from_stage: usize,
    /// The stage that receives it.
    pub to_stage: usize,
}

/// Where a node's events are, on a split graph, when it is known (see `Graph::placed_by`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Place {
    /// By the placement of an operator's input (node and port).
    By(NodeId, usize),
    /// On every worker: reference data replicated to the right input of an operator that
    /// allows it ([`Node::replicable_right`](super::graph::Node::replicable_right)).
    Everywhere,
}

/// What one edge brought in one step: the edge, and each sender's batch with its index.
pub type Received = (usize, Vec<(usize, Box<dyn AnyBatch>)>);

/// A split graph's routing state (see the module doc).
pub(super) struct Split {
    me: usize,
    workers: usize,
    edges: Vec<EdgeSlot>,
    /// For each node and each of its consumers (by position): the routed edge, if any.
    routed: Vec<Vec<Option<usize>>>,
    /// For each node: the edge carrying its input's stream, if it is a source.
    injection: Vec<Option<usize>>,
    /// For each node: the edge carrying its output to worker 0, if it is kept.
    output: Vec<Option<usize>>,
    /// For each node: where its events are placed, if that is known (see
    /// `Graph::placed_by`).
    placed: Vec<Option<Place>>,
    /// Input streams fed since the last take, in the order fed.
    injected: Vec<(usize, Box<dyn AnyBatch>)>,
}

struct EdgeSlot {
    edge: Edge,
    /// What this worker sends on it, not taken yet.
    outbox: Option<Box<dyn AnyBatch>>,
    /// Receiving: the last CTI from each sender, and the last CTI delivered.
    latest: Vec<Time>,
    emitted: Time,
    /// Receiving an ordered stream: merged events no CTI has passed yet (a release buffer).
    pending: Option<Box<dyn std::any::Any + Send>>,
    /// Emptied batches of the edge's type, with their capacity, for the next sends: every
    /// worker sends and receives on every edge, so what one receives it reuses to send.
    spare: Vec<Box<dyn AnyBatch>>,
}

impl EdgeSlot {
    /// `n` empty batches like `like`, from the spares first.
    fn empties(&mut self, like: &dyn AnyBatch, n: usize) -> Vec<Box<dyn AnyBatch>> {
        (0..n).map(|_| self.empty(like)).collect()
    }

    /// An empty batch like `like`: this edge's spare, or one another worker of this process
    /// put back ([`SPARES`]), or a new one.
    fn empty(&mut self, like: &dyn AnyBatch) -> Box<dyn AnyBatch> {
        self.spare
            .pop()
            .or_else(|| {
                let mut spares = SPARES.lock().unwrap_or_else(PoisonError::into_inner);
                let kind = like.as_any().type_id();
                spares.iter_mut().find(|(k, _)| *k == kind)?.1.pop()
            })
            .unwrap_or_else(|| like.new_empty())
    }

    /// Keeps an emptied batch for reuse: a few per worker on the edge, more for the other
    /// workers of this process (a worker that only receives on an edge gives back what one
    /// that only sends needs).
    fn keep(&mut self, mut batch: Box<dyn AnyBatch>, workers: usize) {
        batch.clear();
        if self.spare.len() < 4 * workers {
            self.spare.push(batch);
            return;
        }
        let mut spares = SPARES.lock().unwrap_or_else(PoisonError::into_inner);
        let kind = batch.as_any().type_id();
        let index = match spares.iter().position(|(k, _)| *k == kind) {
            Some(i) => i,
            None => {
                spares.push((kind, Vec::new()));
                spares.len() - 1
            }
        };
        if spares[index].1.len() < SPARES_PER_TYPE {
            spares[index].1.push(batch);
        }
    }
}

/// Emptied batches, with their capacity, by type, that the workers of this process share:
/// on an edge that one worker only sends on and another only receives on, what the receiver
/// empties is what the sender fills next (no allocation per step).
static SPARES: Mutex<Vec<Spares>> = Mutex::new(Vec::new());

/// Emptied batches of one type ([`SPARES`]).
type Spares = (TypeId, Vec<Box<dyn AnyBatch>>);

/// How many emptied batches of one type [`SPARES`] keeps.
const SPARES_PER_TYPE: usize = 32;

impl Split {
    pub(super) fn injection(&self, node: NodeId) -> Option<usize> {
        self.injection.get(node).copied().flatten()
    }

    pub(super) fn output(&self, node: NodeId) -> Option<usize> {
        self.output.get(node).copied().flatten()
    }

    pub(super) fn routed(&self, node: NodeId, consumer: usize) -> Option<usize> {
        self.routed.get(node)?.get(consumer).copied().flatten()
    }

    /// Keeps what a source was fed, for [`Graph::take_injections`]: `batch`'s contents move
    /// out, and it gets an emptied buffer of the edge in return.
    pub(super) fn inject_out(&mut self, edge: usize, batch: &mut dyn AnyBatch) {
        let Some(slot) = self.edges.get_mut(edge) else {
            return;
        };
        let mut held = slot.empty(batch);
        batch.swap_with(held.as_any_mut());
        self.injected.push((edge, held));
    }

    /// Moves (or copies, when others still read it) a node's output to an edge's outbox.
    pub(super) fn route_out(&mut self, edge: usize, out: &mut Box<dyn AnyBatch>, owned: bool) {
        let Some(slot) = self.edges.get_mut(edge) else {
            return;
        };
        let outbox = slot.outbox.get_or_insert_with(|| out.new_empty());
        if owned {
            out.move_into(outbox.as_any_mut());
        } else {
            out.copy_into(outbox.as_any_mut());
        }
    }
}

impl Graph {
    /// Makes this graph worker `me` of `workers`, each running the same graph (see the
    /// module doc), and returns the edges between them, by index. From now on, a stream fed
    /// to a source is kept for [`Graph::take_injections`] instead of running, and what
    /// crosses an edge is kept for [`Graph::take_routed`]; the executor hands them over to
    /// [`Graph::receive_injection`] and [`Graph::receive`] on the receiving worker.
    ///
    /// An output for which `gather` is false is not gathered: each worker keeps the part of
    /// it its own operators made (for an output adapter on every worker; each part has every
    /// CTI).
    ///
    /// `replicable` are sources of reference data (slow, small streams that fast ones are
    /// looked up in): one whose only consumer is the right input of a join, an
    /// anti-semi-join or a clip (through filters or shifts) goes whole to every worker, and
    /// the operator's left events stay where they are instead of crossing by key.
    pub fn split(
        &mut self,
        me: usize,
        workers: usize,
        gather: &dyn Fn(NodeId) -> bool,
        replicable: &[NodeId],
    ) -> Vec<Edge> {
        let n = self.slots.len();
        let (placed, replicated) = self.placed_by(replicable);
        let mut stage = vec![0usize; n];
        let mut edges = Vec::new();
        let mut routed = vec![Vec::new(); n];
        let mut injection = vec![None; n];
        let mut output = vec![None; n];
        // Whether the events node `i` sends to port `port` of `j` must cross workers.
        let keyed_edge = |i: NodeId, j: NodeId, port: usize| {
            self.slots[j]
                .node
                .as_ref()
                .is_some_and(|node| node.placement() != Placement::Anywhere)
                && placed[i] != Some(Place::By(j, port))
                && !replicated[j]
        };
        for j in 0..n {
            let slot = &self.slots[j];
            stage[j] = match &slot.node {
                None => 1,
                Some(_) => slot
                    .inputs
                    .iter()
                    .enumerate()
                    .map(|(port, &i)| stage[i] + usize::from(keyed_edge(i, j, port)))
                    .max()
                    .unwrap_or(1),
            };
        }
        let last = stage.iter().copied().max().unwrap_or(1) + 1;
        for (j, slot) in self.slots.iter().enumerate() {
            if slot.node.is_none() {
                injection[j] = Some(edges.len());
                edges.push(Edge {
                    from: None,
                    to: EdgeEnd::Source(j),
                    from_stage: 0,
                    to_stage: stage[j],
                });
            }
        }
        for (i, slot) in self.slots.iter().enumerate() {
            for &(j, port) in &slot.consumers {
                let keyed = keyed_edge(i, j, port);
                routed[i].push((keyed || stage[i] != stage[j]).then(|| {
                    edges.push(Edge {
                        from: Some(i),
                        to: EdgeEnd::Port(j, port),
                        from_stage: stage[i],
                        to_stage: stage[j],
                    });
                    edges.len() - 1
                }));
            }
            if slot.kept.is_some() && gather(i) {
                output[i] = Some(edges.len());
                edges.push(Edge {
                    from: Some(i),
                    to: EdgeEnd::Output(i),
                    from_stage: stage[i],
                    to_stage: last,
                });
            }
        }
        let list = edges.clone();
        self.split = Some(Box::new(Split {
            me,
            workers: workers.max(1),
            edges: edges
                .into_iter()
                .map(|edge| EdgeSlot {
                    edge,
                    outbox: None,
                    latest: vec![Time::NEG_INF; workers.max(1)],
                    emitted: Time::NEG_INF,
                    pending: None,
                    spare: Vec::new(),
                })
                .collect(),
            routed,
            injection,
            output,
            placed,
            injected: Vec::new(),
        }));
        list
    }

    /// Where each node's events are placed on the workers, when it is known, and which
    /// operators get their right input on every worker:
    ///
    /// - a `replicable` input (reference data) whose only consumer is, through operators
    ///   with one input that keep payloads, the right input of an operator that allows it
    ///   ([`Node::replicable_right`](super::graph::Node::replicable_right)) goes to every
    ///   worker; that operator's left events stay where they are;
    /// - any other input's stream is placed, where it is read, by the placement of the
    ///   operator it leads to through operators that keep payloads (each the only consumer of
    ///   the one before: filter, union, shift, ...), so that this operator gets its events
    ///   without another crossing;
    /// - an operator that keeps payloads is placed as its inputs are, when they all are
    ///   placed alike.
    fn placed_by(&self, replicable: &[NodeId]) -> (Vec<Option<Place>>, Vec<bool>) {
        let n = self.slots.len();
        let keeps = |j: NodeId| {
            self.slots[j].node.as_ref().is_some_and(|node| {
                node.placement() == Placement::Anywhere && node.keeps_payloads()
            })
        };
        // The operator input that a chain of only consumers keeping payloads leads to from
        // `j`, with the chain (`single`: through operators with one input only).
        let lead = |j: NodeId, single: bool| -> (Option<(NodeId, usize)>, Vec<NodeId>) {
            let mut at = j;
            let mut chain = vec![j];
            loop {
                match self.slots[at].consumers[..] {
                    [(next, _)]
                        if keeps(next) && (!single || self.slots[next].inputs.len() == 1) =>
                    {
                        at = next;
                        chain.push(next);
                    }
                    [(next, port)] => {
                        let keyed = self.slots[next]
                            .node
                            .as_ref()
                            .is_some_and(|node| node.placement() != Placement::Anywhere);
                        break (keyed.then_some((next, port)), chain);
                    }
                    _ => break (None, chain),
                }
            }
        };
        let mut placed: Vec<Option<Place>> = vec![None; n];
        let mut replicated = vec![false; n];
        for &source in replicable {
            if self.slots.get(source).is_none_or(|s| s.node.is_some()) {
                continue;
            }
            if let (Some((j, 1)), chain) = lead(source, true) {
                if self.slots[j]
                    .node
                    .as_ref()
                    .is_some_and(|n| n.replicable_right())
                {
                    replicated[j] = true;
                    chain
                        .iter()
                        .for_each(|&c| placed[c] = Some(Place::Everywhere));
                }
            }
        }
        for j in 0..n {
            if placed[j].is_some() {
                continue;
            }
            placed[j] = match &self.slots[j].node {
                None => match lead(j, false).0 {
                    // Left events of an operator whose right input is everywhere stay.
                    Some((k, _)) if replicated[k] => None,
                    found => found.map(|(k, port)| Place::By(k, port)),
                },
                Some(_) if keeps(j) => {
                    let inputs = &self.slots[j].inputs;
                    let first = inputs.first().and_then(|&i| placed[i]);
                    first.filter(|_| inputs.iter().all(|&i| placed[i] == first))
                }
                Some(_) => None,
            };
        }
        (placed, replicated)
    }

    /// Takes the input streams fed since the last call, in the order fed: for each, its edge
    /// and what goes to each worker (the events to this one, the CTIs to all).
    pub fn take_injections(&mut self, mut f: impl FnMut(usize, Vec<Box<dyn AnyBatch>>)) {
        let Some(split) = self.split.as_mut() else {
            return;
        };
        let (me, workers) = (split.me, split.workers);
        for (edge, mut batch) in std::mem::take(&mut split.injected) {
            let Some(slot) = split.edges.get_mut(edge) else {
                continue;
            };
            let mut parts = slot.empties(batch.as_ref(), workers);
            // Placed where it is read by the operator it leads to, if any; otherwise the
            // events stay here.
            let placed = match slot.edge.to {
                EdgeEnd::Source(source) => split.placed.get(source).copied().flatten(),
                _ => None,
            };
            match placed {
                Some(Place::Everywhere) => {
                    if let Some((last, rest)) = parts.split_last_mut() {
                        for part in rest {
                            batch.copy_into(part.as_any_mut());
                        }
                        batch.move_into(last.as_any_mut());
                    }
                }
                Some(Place::By(j, port)) => match self.slots.get(j).and_then(|s| s.node.as_ref()) {
                    Some(node) => node.scatter(port, batch.as_mut(), me, &mut parts),
                    None => batch.scatter_to(me, &mut parts),
                },
                None => batch.scatter_to(me, &mut parts),
            }
            slot.keep(batch, workers);
            f(edge, parts);
        }
    }

    /// Takes what this worker sends on each routed edge since the last call: for each edge
    /// with something to send, what goes to each worker (as the receiving node's placement
    /// says; every CTI to all).
    pub fn take_routed(&mut self, mut f: impl FnMut(usize, Vec<Box<dyn AnyBatch>>)) {
        let Some(split) = self.split.as_mut() else {
            return;
        };
        let (me, workers) = (split.me, split.workers);
        for (e, slot) in split.edges.iter_mut().enumerate() {
            let Some(mut batch) = slot.outbox.take() else {
                continue;
            };
            if batch.is_empty() {
                slot.outbox = Some(batch);
                continue;
            }
            let mut parts = slot.empties(batch.as_ref(), workers);
            match slot.edge.to {
                EdgeEnd::Port(j, port) => match self.slots.get(j).and_then(|s| s.node.as_ref()) {
                    Some(node) => node.scatter(port, batch.as_mut(), me, &mut parts),
                    None => batch.scatter_to(me, &mut parts),
                },
                EdgeEnd::Output(_) => batch.scatter_to(0, &mut parts),
                EdgeEnd::Source(_) => batch.scatter_to(me, &mut parts),
            }
            batch.clear();
            slot.outbox = Some(batch);
            f(e, parts);
        }
    }

    /// Runs an input's stream received from its owner (see [`Graph::take_injections`]):
    /// as if fed to its source here.
    pub fn receive_injection(&mut self, edge: usize, mut batch: Box<dyn AnyBatch>) {
        let Some(EdgeEnd::Source(source)) = self
            .split
            .as_ref()
            .and_then(|s| s.edges.get(edge))
            .map(|s| s.edge.to)
        else {
            return;
        };
        let Some(slot) = self.slots.get_mut(source) else {
            return;
        };
        batch.move_into(slot.out.as_any_mut());
        self.run_from(source);
        if let Some(slot) = self.split.as_mut().and_then(|s| s.edges.get_mut(edge)) {
            let workers = slot.latest.len();
            slot.keep(batch, workers);
        }
    }

    /// Runs one step's batches received on routed edges: for each edge, the batch each
    /// sender sent (with the sender's index). Each edge's batches are merged into one stream
    /// (see the module doc); they reach their nodes in the order the unsplit graph would
    /// have pushed them (by the node that sent them), each node running when its turn comes.
    pub fn receive(&mut self, mut received: Vec<Received>) {
        let Some(split) = self.split.as_mut() else {
            return;
        };
        let workers = split.workers;
        let mut merged: Vec<(usize, NodeId, EdgeEnd, Box<dyn AnyBatch>)> = Vec::new();
        for (edge, runs) in &mut received {
            let Some(slot) = split.edges.get_mut(*edge) else {
                continue;
            };
            let Some(first) = runs.first() else {
                continue;
            };
            let mut batch = slot.empty(first.1.as_ref());
            let order = slot
                .edge
                .from
                .and_then(|i| self.slots.get(i))
                .map(|s| s.order);
            let pending = match order {
                Some(crate::order::EventOrder::Sorted) => {
                    let held = slot
                        .pending
                        .get_or_insert_with(|| first.1.new_release_buffer());
                    Some(held.as_mut() as &mut dyn std::any::Any)
                }
                _ => None,
            };
            batch.merge_from(runs, &mut slot.latest, &mut slot.emitted, pending);
            for (_, run) in runs.drain(..) {
                slot.keep(run, workers);
            }
            let from = slot.edge.from.unwrap_or(0);
            merged.push((*edge, from, slot.edge.to, batch));
        }
        merged.sort_by_key(|m| (m.1, m.0));
        let mut next = merged.into_iter().peekable();
        for i in 0..self.slots.len() {
            while let Some((edge, _, to, mut batch)) = next.next_if(|m| m.1 == i) {
                self.deliver(to, batch.as_mut());
                if let Some(slot) = self.split.as_mut().and_then(|s| s.edges.get_mut(edge)) {
                    slot.keep(batch, workers);
                }
            }
            self.process(i);
        }
    }

    /// Pushes a merged batch into its node's port (or a kept output).
    fn deliver(&mut self, to: EdgeEnd, batch: &mut dyn AnyBatch) {
        match to {
            EdgeEnd::Port(j, port) => {
                let Some(dst) = self.slots.get_mut(j) else {
                    return;
                };
                if let (Some(t), Some(c)) = (batch.last_cti(), dst.input_ctis.get_mut(port)) {
                    *c = t;
                }
                if let Some(node) = dst.node.as_mut() {
                    node.push_owned(port, batch.as_any_mut(), dst.out.as_any_mut());
                }
            }
            // A gathered output is read on worker 0; the others get only its CTIs, which
            // nobody reads there.
            EdgeEnd::Output(_) if self.split.as_ref().is_some_and(|s| s.me != 0) => batch.clear(),
            EdgeEnd::Output(o) => {
                if let Some(kept) = self.slots.get_mut(o).and_then(|s| s.kept.as_mut()) {
                    batch.move_into(kept.as_any_mut());
                }
            }
            EdgeEnd::Source(s) => {
                if let Some(slot) = self.slots.get_mut(s) {
                    batch.move_into(slot.out.as_any_mut());
                }
            }
        }
    }

    /// How many edges the split graph has (none unless split).
    pub fn edge_count(&self) -> usize {
        self.split.as_ref().map_or(0, |s| s.edges.len())
    }

    /// An empty batch of the type edge `edge` carries (to tell its payload type).
    pub fn edge_batch(&self, edge: usize) -> Option<&dyn AnyBatch> {
        let e = self.split.as_ref()?.edges.get(edge)?.edge;
        let node = match (e.from, e.to) {
            (Some(i), _) => i,
            (None, EdgeEnd::Source(s)) => s,
            (None, _) => return None,
        };
        self.slots.get(node).map(|s| s.out.as_ref())
    }

    /// Whether the graph runs split ([`Graph::split`]).
    pub fn is_split(&self) -> bool {
        self.split.is_some()
    }
}

mod saved;
pub(super) use saved::SavedEdge;
#[cfg(test)]
mod tests;
