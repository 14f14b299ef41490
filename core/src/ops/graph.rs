//! The synchronous executor: a DAG of operator nodes over [`Batch`]es.
//!
//! Nodes are added in topological order (a node can only consume nodes that already exist), so
//! one pass in index order delivers a fed batch everywhere it goes. A node's output batch is read
//! by reference by each consumer (multicast costs nothing: no input is read twice), then cleared
//! and reused. Outputs bound to the outside are kept until taken with [`Graph::take_output`].
//!
//! Nodes are type-erased ([`Node`]); the typed [`Stream`](super::Stream) handles guarantee that
//! every edge connects a producer and a consumer of the same payload type.

use std::any::Any;

use crate::batch::Batch;
use crate::event::EventShape;
use crate::order::EventOrder;

use super::filter::Predicate;
use super::split::Split;
use super::{Held, OperatorDrop, Payload};
use crate::time::Time;

mod any_batch;
mod node;
mod saved;
pub use any_batch::AnyBatch;
pub use node::Node;

/// One operator's numbers, as [`Graph::for_each_operator`] visits them.
#[derive(Clone, Copy, Debug)]
pub struct NodeStats<'a> {
    /// The node.
    pub node: NodeId,
    /// The operator's name.
    pub operator: &'static str,
    /// Its label, if it has one.
    pub label: Option<&'a str>,
    /// Events it emitted so far.
    pub events_out: u64,
    /// Events or groups it holds.
    pub state: usize,
    /// Events it dropped (see [`OperatorDrop`]).
    pub dropped: u64,
    /// What a window with allowed lateness took: events on time and late ones.
    pub lateness: super::LateCounts,
    /// Its output CTI.
    pub cti: Time,
}

/// Where one node of a graph stands: its output CTI, each input's CTI, and which input holds
/// its output CTI back (the one with the lowest CTI, for an operator with several inputs or
/// an output not yet at `+inf`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Explanation {
    /// The node.
    pub node: NodeId,
    /// Its label (a step's or stream's name), or `node N`.
    pub label: String,
    /// The operator's name, or `input` for a source.
    pub operator: &'static str,
    /// The last CTI it emitted (`-inf`: none yet).
    pub cti: Time,
    /// Each input's label and last CTI.
    pub inputs: Vec<(String, Time)>,
    /// The input with the lowest CTI and that CTI, if one holds the output back.
    pub held_by: Option<(String, Time)>,
    /// Events or groups the operator holds.
    pub state: usize,
    /// Events it has emitted so far.
    pub events_out: u64,
    /// Events it has dropped so far (see [`OperatorDrop`]).
    pub dropped: u64,
    /// For an input: how long since its CTI last advanced (filled in by a runtime with a clock;
    /// `None` in the synchronous core).
    pub quiet_for: Option<std::time::Duration>,
    /// How long since the CTI of the input in `held_by` last advanced (likewise).
    pub held_quiet_for: Option<std::time::Duration>,
}

impl std::fmt::Display for Explanation {
    /// One line: "join `enriched` at CTI 5, held by input `lookup` (no CTI yet); inputs: ...".
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let show = |t: Time| {
            if t == Time::NEG_INF {
                "no CTI yet".to_owned()
            } else {
                format!("CTI {t}")
            }
        };
        write!(f, "{} `{}`: {}", self.operator, self.label, show(self.cti))?;
        if let Some(q) = self.quiet_for {
            write!(f, " (no new CTI for {} s)", q.as_secs())?;
        }
        if let Some((input, t)) = &self.held_by {
            write!(f, ", held at {} by input `{input}`", show(*t))?;
            if let Some(q) = self.held_quiet_for {
                write!(f, ": no new CTI for {} s", q.as_secs())?;
            }
        }
        if !self.inputs.is_empty() {
            let list: Vec<String> = self
                .inputs
                .iter()
                .map(|(n, t)| format!("`{n}` {}", show(*t)))
                .collect();
            write!(f, "; inputs: {}", list.join(", "))?;
        }
        if self.state > 0 {
            write!(f, "; holds {} items", self.state)?;
        }
        if self.dropped > 0 {
            write!(f, "; dropped {} events", self.dropped)?;
        }
        Ok(())
    }
}

/// Index of a node in a [`Graph`].
pub type NodeId = usize;

/// Downcasts a node's input; a mismatch is a broken invariant of the typed builder.
pub(crate) fn input<P: 'static>(any: &dyn Any) -> &Batch<P> {
    any.downcast_ref::<Batch<P>>()
        .expect("the typed stream builder connects matching payload types")
}

/// Downcasts a node's output; a mismatch is a broken invariant of the typed builder.
pub(crate) fn output<P: 'static>(any: &mut dyn Any) -> &mut Batch<P> {
    any.downcast_mut::<Batch<P>>()
        .expect("the typed stream builder connects matching payload types")
}

pub(super) struct Slot {
    pub(super) node: Option<Box<dyn Node>>,
    /// The order of the node's output stream, which its batches must keep (checked in debug
    /// builds).
    #[cfg_attr(not(debug_assertions), allow(dead_code))]
    pub(super) order: EventOrder,
    pub(super) out: Box<dyn AnyBatch>,
    pub(super) consumers: Vec<(NodeId, usize)>,
    /// The nodes feeding each input port.
    pub(super) inputs: Vec<NodeId>,
    /// The last CTI seen on each input port.
    pub(super) input_ctis: Vec<Time>,
    /// The last CTI this node emitted.
    pub(super) cti: Time,
    /// Events this node emitted so far.
    pub(super) events_out: u64,
    pub(super) label: Option<String>,
    /// For outputs read from outside: what was produced since the last take.
    pub(super) kept: Option<Box<dyn AnyBatch>>,
}

/// The operator DAG; see the module doc.
pub struct Graph {
    pub(super) slots: Vec<Slot>,
    /// Set when the graph runs as one worker of several ([`Graph::split`]).
    pub(super) split: Option<Box<Split>>,
}

impl std::fmt::Debug for Graph {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Graph")
            .field("nodes", &self.slots.len())
            .finish()
    }
}

impl Default for Graph {
    fn default() -> Self {
        Graph::new()
    }
}

impl Graph {
    /// An empty graph.
    pub fn new() -> Self {
        Graph {
            slots: Vec::new(),
            split: None,
        }
    }

    /// Adds a source of a stream of this order: a node with no operator whose output is
    /// whatever is fed to it.
    pub fn add_source<P: Payload>(&mut self, order: EventOrder) -> NodeId {
        self.slots.push(Slot {
            node: None,
            order,
            out: Box::new(Batch::<P>::new()),
            consumers: Vec::new(),
            inputs: Vec::new(),
            input_ctis: Vec::new(),
            cti: Time::NEG_INF,
            events_out: 0,
            label: None,
            kept: None,
        });
        self.slots.len() - 1
    }

    /// Adds an operator node producing `Batch<O>` of a stream of this order, consuming
    /// `inputs` (node, in port order).
    pub fn add_node<O: Payload>(
        &mut self,
        node: Box<dyn Node>,
        inputs: &[NodeId],
        order: EventOrder,
    ) -> NodeId {
        let id = self.slots.len();
        for (port, &from) in inputs.iter().enumerate() {
            debug_assert!(from < id, "nodes consume only earlier nodes");
            if let Some(slot) = self.slots.get_mut(from) {
                slot.consumers.push((id, port));
            }
        }
        self.slots.push(Slot {
            node: Some(node),
            order,
            out: Box::new(Batch::<O>::new()),
            consumers: Vec::new(),
            inputs: inputs.to_vec(),
            input_ctis: vec![Time::NEG_INF; inputs.len()],
            cti: Time::NEG_INF,
            events_out: 0,
            label: None,
            kept: None,
        });
        id
    }

    /// Marks `node`'s output (of payload type `P`) as read from outside: what it produces is
    /// kept until [`Graph::take_output`].
    pub fn keep_output<P: Payload>(&mut self, node: NodeId) {
        if let Some(slot) = self.slots.get_mut(node) {
            slot.kept.get_or_insert_with(|| Box::new(Batch::<P>::new()));
        }
    }

    /// Number of nodes.
    pub fn len(&self) -> usize {
        self.slots.len()
    }

    /// Whether the graph has no nodes.
    pub fn is_empty(&self) -> bool {
        self.slots.is_empty()
    }

    /// Feeds a batch into source `source` and runs everything downstream of it. The batch is
    /// left empty (its capacity swapped with the source's previous buffer).
    pub fn feed<P: Payload>(&mut self, source: NodeId, batch: &mut Batch<P>) {
        let Some(slot) = self.slots.get_mut(source) else {
            return;
        };
        if let Some(split) = self.split.as_mut() {
            if let Some(edge) = split.injection(source) {
                split.inject_out(edge, batch);
                return;
            }
        }
        std::mem::swap(output::<P>(slot.out.as_any_mut()), batch);
        batch.clear();
        self.run_from(source);
    }

    /// Like [`Graph::feed`], for a type-erased batch (of the source's payload type).
    pub fn feed_any(&mut self, source: NodeId, batch: &mut dyn AnyBatch) {
        let Some(slot) = self.slots.get_mut(source) else {
            return;
        };
        if let Some(split) = self.split.as_mut() {
            if let Some(edge) = split.injection(source) {
                split.inject_out(edge, batch);
                return;
            }
        }
        batch.swap_with(slot.out.as_any_mut());
        batch.clear();
        self.run_from(source);
    }

    pub(super) fn run_from(&mut self, from: NodeId) {
        for i in from..self.slots.len() {
            self.process(i);
        }
    }

    /// Hands what node `i` produced to its consumers (and, split, to the edges leaving this
    /// worker), then to its kept output.
    pub(super) fn process(&mut self, i: NodeId) {
        if self.slots[i].out.is_empty() {
            return;
        }
        #[cfg(debug_assertions)]
        {
            let slot = &self.slots[i];
            if let Err(e) = slot.out.check(slot.order, slot.cti) {
                let name = slot.node.as_ref().map_or("input", |n| n.name());
                panic!("node {i} ({name}) broke its stream's invariants: {e}");
            }
        }
        let cti = self.slots[i].out.last_cti();
        if let Some(t) = cti {
            self.slots[i].cti = t;
        }
        self.slots[i].events_out += self.slots[i].out.events() as u64;
        let consumers = self.slots[i].consumers.len();
        // The last consumer of a batch that is not kept owns it: a filter, say, then
        // compacts it in place instead of copying what it keeps.
        let owned_by_last = self.slots[i].kept.is_none();
        for c in 0..consumers {
            let (j, port) = self.slots[i].consumers[c];
            let owned = owned_by_last && c + 1 == consumers;
            if let Some(split) = self.split.as_mut() {
                if let Some(edge) = split.routed(i, c) {
                    let out = &mut self.slots[i].out;
                    split.route_out(edge, out, owned);
                    continue;
                }
            }
            let (before, after) = self.slots.split_at_mut(j);
            let src = &mut before[i];
            let dst = &mut after[0];
            if let (Some(t), Some(slot)) = (cti, dst.input_ctis.get_mut(port)) {
                *slot = t;
            }
            if let Some(node) = dst.node.as_mut() {
                if owned {
                    node.push_owned(port, src.out.as_any_mut(), dst.out.as_any_mut());
                } else {
                    node.push(port, src.out.as_any(), dst.out.as_any_mut());
                }
            }
        }
        let slot = &mut self.slots[i];
        match slot.kept.as_mut() {
            Some(kept) => match self.split.as_mut().and_then(|s| s.output(i)) {
                Some(edge) => {
                    if let Some(split) = self.split.as_mut() {
                        split.route_out(edge, &mut slot.out, true);
                    }
                }
                None => slot.out.move_into(kept.as_any_mut()),
            },
            None => slot.out.clear(),
        }
    }

    /// Fuses the filters that directly follow `source` into one predicate for its ingress:
    /// while the node reached so far is not read from outside and has exactly one consumer,
    /// and that consumer is a filter, the filter hands its predicate over (and passes
    /// everything through from then on). Returns the predicates' conjunction, or `None` when
    /// no filter follows that way.
    pub fn fuse_filters<P: 'static>(&mut self, source: NodeId) -> Option<Box<dyn Predicate<P>>> {
        let mut fused: Option<Box<dyn Predicate<P>>> = None;
        let mut at = source;
        while let Some(slot) = self.slots.get(at) {
            let [(next, 0)] = slot.consumers[..] else {
                break;
            };
            if slot.kept.is_some() || self.slots[next].inputs.len() != 1 {
                break;
            }
            let Some(taken) = self.slots[next]
                .node
                .as_mut()
                .and_then(|n| n.take_predicate())
            else {
                break;
            };
            let Ok(predicate) = taken.downcast::<Box<dyn Predicate<P>>>() else {
                break;
            };
            fused = Some(match fused {
                None => *predicate,
                Some(first) => super::filter::both(first, *predicate),
            });
            at = next;
        }
        fused
    }

    /// The shape of the events `node` emits: for a source, what `source` says (any kind if
    /// nothing), for an operator what it makes of its inputs' shapes.
    pub fn shape_of(
        &self,
        node: NodeId,
        source: &dyn Fn(NodeId) -> Option<EventShape>,
    ) -> EventShape {
        let Some(slot) = self.slots.get(node) else {
            return EventShape::Edge;
        };
        match &slot.node {
            None => source(node).unwrap_or(EventShape::Edge),
            Some(op) => {
                let inputs: Vec<EventShape> = slot
                    .inputs
                    .iter()
                    .map(|&i| self.shape_of(i, source))
                    .collect();
                op.output_shape(&inputs)
            }
        }
    }

    /// Moves what the kept output `node` produced since the last call to the end of `into`.
    pub fn take_output<P: Send + 'static>(&mut self, node: NodeId, into: &mut Batch<P>) {
        if let Some(kept) = self.slots.get_mut(node).and_then(|s| s.kept.as_mut()) {
            into.append(output::<P>(kept.as_any_mut()));
        }
    }

    /// Gives a node a name for diagnostics (a query step's or an input stream's name).
    pub fn set_label(&mut self, node: NodeId, label: impl Into<String>) {
        if let Some(slot) = self.slots.get_mut(node) {
            slot.label = Some(label.into());
        }
    }

    /// A node's name, if it was given one ([`Graph::set_label`]).
    pub fn label(&self, node: NodeId) -> Option<&str> {
        self.slots.get(node).and_then(|s| s.label.as_deref())
    }

    /// Where every node's CTI stands: see [`Explanation`].
    pub fn explain(&self) -> Vec<Explanation> {
        let label = |i: NodeId| {
            self.slots
                .get(i)
                .and_then(|s| s.label.clone())
                .unwrap_or_else(|| format!("node {i}"))
        };
        self.slots
            .iter()
            .enumerate()
            .map(|(i, s)| {
                let inputs: Vec<(String, Time)> = s
                    .inputs
                    .iter()
                    .zip(&s.input_ctis)
                    .map(|(&from, &t)| (label(from), t))
                    .collect();
                let held_by = inputs
                    .iter()
                    .filter(|(_, t)| *t < Time::INF)
                    .min_by_key(|(_, t)| *t)
                    .filter(|_| inputs.len() > 1 || s.cti < Time::INF)
                    .map(|(name, t)| (name.clone(), *t));
                Explanation {
                    node: i,
                    label: label(i),
                    operator: s.node.as_ref().map_or("input", |n| n.name()),
                    cti: s.cti,
                    inputs,
                    held_by,
                    state: s.node.as_ref().map_or(0, |n| n.state_size()),
                    events_out: s.events_out,
                    dropped: s.node.as_ref().map_or(0, |n| n.dropped()),
                    quiet_for: None,
                    held_quiet_for: None,
                }
            })
            .collect()
    }

    /// Visits every operator node (not the sources) without allocating: its id, operator name,
    /// label, events emitted, state size and output CTI.
    pub fn for_each_operator(&self, mut f: impl FnMut(NodeStats<'_>)) {
        for (i, s) in self.slots.iter().enumerate() {
            if let Some(n) = &s.node {
                f(NodeStats {
                    node: i,
                    operator: n.name(),
                    label: s.label.as_deref(),
                    events_out: s.events_out,
                    state: n.state_size(),
                    dropped: n.dropped(),
                    lateness: n.lateness(),
                    cti: s.cti,
                });
            }
        }
    }

    /// Visits everything every operator node holds, with the node's stats (what a query that
    /// ends before its CTIs released it reports).
    pub fn for_each_held(&self, mut f: impl FnMut(&NodeStats<'_>, Held<'_>)) {
        self.for_each_operator(|n| {
            if n.state > 0 {
                if let Some(node) = self.slots[n.node].node.as_ref() {
                    node.held(&mut |h| f(&n, h));
                }
            }
        });
    }

    /// Moves every operator's drops not yet taken to `into`, with the node as reports name it
    /// (its operator and label, `` hopping window `averages` ``, or its operator and number,
    /// `hopping window 3`) and the operator's name.
    pub fn take_drops(&mut self, into: &mut Vec<(String, &'static str, OperatorDrop)>) {
        let mut taken = Vec::new();
        for (i, s) in self.slots.iter_mut().enumerate() {
            if let Some(n) = s.node.as_mut() {
                n.take_drops(&mut taken);
                if !taken.is_empty() {
                    let name = n.name();
                    let label = match &s.label {
                        Some(l) => format!("{name} `{l}`"),
                        None => format!("{name} {i}"),
                    };
                    into.extend(taken.drain(..).map(|d| (label.clone(), name, d)));
                }
            }
        }
    }

    /// Each operator node's name and state size.
    pub fn state_sizes(&self) -> Vec<(NodeId, &'static str, usize)> {
        self.slots
            .iter()
            .enumerate()
            .filter_map(|(i, s)| s.node.as_ref().map(|n| (i, n.name(), n.state_size())))
            .collect()
    }
}
