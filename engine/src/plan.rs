//! [`Plan`]: a query being declared. Inputs, the operators composed on them, the streams read
//! from outside; [`Plan::build`] checks it and gives the [`Driver`] that runs it.

use std::any::Any;
use std::collections::HashMap;
use std::marker::PhantomData;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use punctual_core::ops::{AnyStream, Graph, NodeId, Payload, QueryGraph, Stream};
use punctual_core::{EventOrder, EventShape, Order, Ordered};
use punctual_policies::{Ingress, IngressConfig, IngressOutput, LateEvent, Watermark};

use crate::driver::Driver;
use crate::input::{Input, Slot};
use crate::options::InputOptions;
use crate::sink::DeadLetterSink;
use crate::{Error, Result};

/// Tells plans apart, so that a handle of one is never taken for a handle of another.
static PLANS: AtomicU64 = AtomicU64::new(0);

/// A handle on an input of a plan, for feeding it through the [`Driver`] built from that plan.
#[derive(Debug)]
pub struct InputId<P> {
    pub(crate) plan: u64,
    pub(crate) index: usize,
    _payload: PhantomData<fn() -> P>,
}

impl<P> Clone for InputId<P> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<P> Copy for InputId<P> {}

impl<P> InputId<P> {
    /// The input's position among the plan's inputs (creation order).
    pub fn index(&self) -> usize {
        self.index
    }
}

/// What [`Plan::partitioned_input`] gives: a handle per partition, and the source's stream
/// (the union of theirs).
pub type PartitionedInput<P, O> = (Vec<InputId<P>>, Stream<P, O>);

/// A handle on a stream read from outside, for taking what it produced from the [`Driver`].
#[derive(Debug)]
pub struct OutputId<P> {
    pub(crate) plan: u64,
    pub(crate) node: NodeId,
    _payload: PhantomData<fn() -> P>,
}

impl<P> Clone for OutputId<P> {
    fn clone(&self) -> Self {
        OutputId {
            plan: self.plan,
            node: self.node,
            _payload: PhantomData,
        }
    }
}

impl<P> OutputId<P> {
    /// The stream's node in the operator graph.
    pub fn node(&self) -> NodeId {
        self.node
    }
}

/// An input before the plan is built.
struct Pending<P> {
    name: String,
    node: NodeId,
    late: Option<Stream<LateEvent<P>>>,
    watermark: Option<Watermark<P>>,
    edge_key: Option<punctual_policies::EdgeKey<P>>,
    config: IngressConfig,
    import: Option<String>,
    reference: bool,
    sink: Option<Box<dyn DeadLetterSink<P>>>,
}

/// A pending input with its payload type erased.
trait PendingInput: Send {
    fn name(&self) -> &str;
    fn node(&self) -> NodeId;
    fn import(&self) -> Option<&str>;
    fn is_reference(&self) -> bool;
    fn as_any(&mut self) -> &mut dyn Any;
    /// The input, with the filters that directly follow it in `graph` fused into its ingress.
    fn build(self: Box<Self>, graph: &mut Graph) -> Box<dyn Input>;
}

impl<P: Payload> PendingInput for Pending<P> {
    fn name(&self) -> &str {
        &self.name
    }

    fn node(&self) -> NodeId {
        self.node
    }

    fn import(&self) -> Option<&str> {
        self.import.as_deref()
    }

    fn is_reference(&self) -> bool {
        self.reference
    }

    fn as_any(&mut self) -> &mut dyn Any {
        self
    }

    fn build(self: Box<Self>, graph: &mut Graph) -> Box<dyn Input> {
        let mut ingress = match self.watermark {
            Some(w) => Ingress::with_watermark(self.config, w),
            None => Ingress::new(self.config),
        };
        if let Some(keep) = graph.fuse_filters::<P>(self.node) {
            ingress.fuse_filter(keep);
        }
        if let Some(key) = self.edge_key {
            ingress.index_edges_by(key);
        }
        if self.late.is_some() {
            ingress.enable_late_output();
        }
        Box::new(Slot {
            name: self.name,
            ingress,
            out: IngressOutput::new(),
            node: self.node,
            late: self.late.map(|s| s.node()),
            sink: self.sink,
        })
    }
}

/// A query being declared: named inputs, the operators composed on their streams, the streams
/// read from outside. See the crate doc for an example.
pub struct Plan {
    name: String,
    id: u64,
    graph: QueryGraph,
    inputs: Vec<Box<dyn PendingInput>>,
    outputs: Vec<NodeId>,
    shapes: HashMap<NodeId, EventShape>,
    /// Partitioned inputs: the source's name, the union of its partitions, and the inputs
    /// that are its partitions.
    partitioned: Vec<(String, NodeId, Vec<usize>)>,
    max_held: usize,
}

impl std::fmt::Debug for Plan {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Plan")
            .field("name", &self.name)
            .field(
                "inputs",
                &self.inputs.iter().map(|i| i.name()).collect::<Vec<_>>(),
            )
            .field("outputs", &self.outputs.len())
            .finish()
    }
}

impl Plan {
    /// An empty plan for a query of this name.
    pub fn new(name: impl Into<String>) -> Self {
        Plan {
            name: name.into(),
            id: PLANS.fetch_add(1, Ordering::Relaxed),
            graph: QueryGraph::new(),
            inputs: Vec::new(),
            outputs: Vec::new(),
            shapes: HashMap::new(),
            partitioned: Vec::new(),
            max_held: crate::DEFAULT_MAX_HELD,
        }
    }

    /// The most events (or groups) the query may hold waiting for CTIs, across every input's
    /// reorder buffer and every operator (default [`DEFAULT_MAX_HELD`](crate::DEFAULT_MAX_HELD));
    /// see [`Driver::check_budget`]. Each input's own cap
    /// ([`InputOptions::max_buffered`](crate::InputOptions::max_buffered)) applies as well.
    pub fn max_held(&mut self, n: usize) {
        self.max_held = n.max(1);
    }

    /// The query's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Adds a named input stream; returns the handle to feed it with and its stream, to
    /// compose operators on. Its ingress takes the settings of `options` (without any, only
    /// the CTIs enqueued on it exist and violating events are rejected), or its watermark
    /// strategy.
    pub fn input<P: Payload, O: Order>(
        &mut self,
        options: InputOptions<O>,
    ) -> Result<(InputId<P>, Stream<P, O>)> {
        if self.has_input(&options.name) {
            return Err(Error::Bind(format!(
                "query `{}` already has a stream named `{}`",
                self.name, options.name
            )));
        }
        if O::ORDER == EventOrder::Arrival && options.shape == EventShape::Edge {
            return Err(Error::Bind(format!(
                "stream `{}` has the edge shape: an unordered stream takes points or intervals \
                 (an end edge can still change its start edge, which must wait for its CTI)",
                options.name
            )));
        }
        let watermark = match &options.watermark {
            None => None,
            Some(w) => Some(w.downcast_ref::<Watermark<P>>().cloned().ok_or_else(|| {
                Error::Bind(format!(
                    "the watermark strategy of `{}` is for another payload type than the stream's",
                    options.name
                ))
            })?),
        };
        let edge_key = match &options.edge_key {
            None => None,
            Some(k) => Some(
                k.downcast_ref::<punctual_policies::EdgeKey<P>>()
                    .cloned()
                    .ok_or_else(|| {
                        Error::Bind(format!(
                            "the edge key of `{}` is for another payload type than the stream's",
                            options.name
                        ))
                    })?,
            ),
        };
        if let Some(w) = &watermark {
            w.validate().map_err(|why| {
                Error::Bind(format!(
                    "the watermark strategy of `{}`: {why}",
                    options.name
                ))
            })?;
        }
        let mut config = options
            .settings
            .as_ref()
            .map(IngressConfig::from)
            .unwrap_or_default();
        config.max_buffered = options.max_buffered;
        config.order = O::ORDER;
        config.shape = options.shape;
        let stream = self.graph.source::<P, O>().named(options.name.clone());
        self.shapes.insert(stream.node(), options.shape);
        let import = options
            .settings
            .as_ref()
            .and_then(|s| s.import())
            .map(|i| i.stream().to_owned());
        self.inputs.push(Box::new(Pending::<P> {
            name: options.name,
            node: stream.node(),
            late: None,
            watermark,
            edge_key,
            config,
            import,
            reference: options.reference,
            sink: None,
        }));
        let id = InputId {
            plan: self.id,
            index: self.inputs.len() - 1,
            _payload: PhantomData,
        };
        Ok((id, stream))
    }

    /// Adds a source of `partitions` parts read independently (files, log partitions,
    /// connections): one input per partition, named `NAME#0`, `NAME#1`, ..., each with the
    /// settings of `options` applied to its own items (its own CTIs, generated or imported,
    /// and its own Drop/Adjust against them, so that what a policy does does not depend on
    /// where the partition is read), and the union of their streams under `NAME`, whose CTI
    /// is the least of theirs. On several workers, the partitions go round-robin over them
    /// ([`Driver::owners`]). A stream that imports CTIs from `NAME` imports those of its first
    /// partition; late events and dead letters of `NAME` are those of every partition. One
    /// partition is [`Plan::input`].
    ///
    /// ```
    /// use punctual_core::{Batch, EventShape, StreamItem, Time};
    /// use punctual_engine::{InputOptions, Plan};
    /// let t = Time::from_ticks;
    /// let mut plan = Plan::new("q");
    /// let (parts, readings) = plan
    ///     .partitioned_input::<u32, _>(InputOptions::new("readings", EventShape::Point), 2)
    ///     .unwrap();
    /// let out = plan.output(&readings).unwrap();
    /// let mut driver = plan.build().unwrap();
    /// assert_eq!(driver.input_name(parts[1].index()), Some("readings#1"));
    /// driver.enqueue(parts[0], StreamItem::point(t(5), 1)).unwrap();
    /// driver.enqueue(parts[0], StreamItem::Cti(t(9))).unwrap();
    /// driver.enqueue(parts[1], StreamItem::point(t(3), 2)).unwrap();
    /// driver.enqueue(parts[1], StreamItem::Cti(t(4))).unwrap();
    /// let mut got = Batch::new();
    /// driver.take_output(&out, &mut got);
    /// assert_eq!(got.payloads(), &[2]); // 1 waits for partition 1 to pass 5
    /// assert_eq!(got.last_cti(), Some(t(4)));
    /// ```
    pub fn partitioned_input<P: Payload, O: Order>(
        &mut self,
        options: InputOptions<O>,
        partitions: usize,
    ) -> Result<PartitionedInput<P, O>> {
        if partitions <= 1 {
            let (id, stream) = self.input(options)?;
            return Ok((vec![id], stream));
        }
        if self.has_input(&options.name) {
            return Err(Error::Bind(format!(
                "query `{}` already has a stream named `{}`",
                self.name, options.name
            )));
        }
        let mut ids = Vec::with_capacity(partitions);
        let mut streams = Vec::with_capacity(partitions);
        for p in 0..partitions {
            let mut part = options.clone();
            part.name = format!("{}#{p}", options.name);
            let (id, stream) = self.input::<P, O>(part)?;
            ids.push(id);
            streams.push(stream);
        }
        let others: Vec<&Stream<P, O>> = streams[1..].iter().collect();
        let stream = streams[0].union(&others).named(options.name.clone());
        self.shapes.insert(stream.node(), options.shape);
        let members = ids.iter().map(|id| id.index).collect();
        self.partitioned
            .push((options.name, stream.node(), members));
        Ok((ids, stream))
    }

    /// Marks a stream (an input or an operator's output, of either order: a `&Stream<P, O>`
    /// or an `&AnyStream<P>`) as read from outside: what it produces is kept for
    /// [`Driver::take_output`].
    pub fn output<P: Payload>(&mut self, stream: impl Into<AnyStream<P>>) -> Result<OutputId<P>> {
        match stream.into() {
            AnyStream::Ordered(s) => self.output_of(&s),
            AnyStream::Arrival(s) => self.output_of(&s),
        }
    }

    fn output_of<P: Payload, O: Order>(&mut self, stream: &Stream<P, O>) -> Result<OutputId<P>> {
        self.check(stream)?;
        self.graph.keep_output(stream);
        self.outputs.push(stream.node());
        Ok(OutputId {
            plan: self.id,
            node: stream.node(),
            _payload: PhantomData,
        })
    }

    /// The shape of the events on a stream: an input's declared shape, or what the operators
    /// make of their inputs' shapes (a window's results are points at the window's end, a
    /// filter's are its input's, a join's are points when either side is; `Edge`, any kind,
    /// where an operator cannot say).
    pub fn shape_of<P: Payload, O: Order>(&self, stream: &Stream<P, O>) -> EventShape {
        self.graph
            .shape_of(stream, &|node| self.shapes.get(&node).copied())
    }

    /// The input whose stream this is, if it is one.
    pub fn input_of<P: Payload, O: Order>(&self, stream: &Stream<P, O>) -> Option<InputId<P>> {
        let index = self.inputs.iter().position(|s| s.node() == stream.node())?;
        Some(InputId {
            plan: self.id,
            index,
            _payload: PhantomData,
        })
    }

    /// Whether the plan has an input of this name.
    pub fn has_input(&self, name: &str) -> bool {
        self.inputs.iter().any(|s| s.name() == name)
            || self.partitioned.iter().any(|(n, _, _)| n == name)
    }

    /// The inputs of the source whose stream starts at `node`: a partitioned source's
    /// partitions, or the one input (none for an operator's output).
    fn members(&self, node: NodeId) -> Vec<usize> {
        match self.partitioned.iter().find(|(_, n, _)| *n == node) {
            Some((_, _, members)) => members.clone(),
            None => self
                .inputs
                .iter()
                .position(|s| s.node() == node)
                .into_iter()
                .collect(),
        }
    }

    /// The name of an input.
    pub fn input_name<P>(&self, input: InputId<P>) -> Option<&str> {
        self.inputs.get(input.index).map(|i| i.name())
    }

    /// The late-data side output of an input stream: every event its policy or watermark
    /// strategy drops, with the reason and the CTI it broke, as an ordered stream (each a point
    /// at that CTI, sealed by the input's CTIs). Compose on it, or read it as an output.
    pub fn late_events<P: Payload, O: Order>(
        &mut self,
        stream: &Stream<P, O>,
    ) -> Result<Stream<LateEvent<P>>> {
        let graph = self.graph.clone();
        let mut lates = Vec::new();
        for i in self.inputs_of(stream, "late events")? {
            let pending = self.pending::<P>(i)?;
            let name = format!("late events of `{}`", pending.name);
            let late = pending
                .late
                .get_or_insert_with(|| graph.source::<LateEvent<P>, Ordered>().named(name))
                .clone();
            lates.push(late);
        }
        let others: Vec<&Stream<LateEvent<P>>> = lates[1..].iter().collect();
        let late = match others.is_empty() {
            true => lates[0].clone(),
            false => lates[0].union(&others),
        };
        // Each late event is a point at the CTI it broke.
        self.shapes.insert(late.node(), EventShape::Point);
        Ok(late)
    }

    /// Sends an input stream's dead letters (dropped, rejected, malformed and unreleased items,
    /// with reasons) to `sink`. Without a sink they are only counted.
    pub fn dead_letters<P: Payload, O: Order>(
        &mut self,
        stream: &Stream<P, O>,
        sink: impl DeadLetterSink<P> + 'static,
    ) -> Result<()> {
        let inputs = self.inputs_of(stream, "dead letters")?;
        if let [i] = inputs[..] {
            self.pending::<P>(i)?.sink = Some(Box::new(sink));
            return Ok(());
        }
        // The partitions of one source share its sink.
        let shared = Arc::new(Mutex::new(sink));
        for i in inputs {
            let sink = Arc::clone(&shared);
            self.pending::<P>(i)?.sink = Some(Box::new(move |letter| {
                sink.lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .dead_letter(letter)
            }));
        }
        Ok(())
    }

    /// Checks the plan and gives the driver that runs it: every import names an input of the
    /// plan and no import cycle exists. The filters that directly follow an input (as its only
    /// consumer, the input not read from outside) are fused into its ingress
    /// ([`Filter`](punctual_core::ops::Filter)). The operator graph moves into the driver:
    /// operators composed on the plan's streams afterwards are not part of it.
    pub fn build(self) -> Result<Driver> {
        // A partitioned source's name stands for its first partition.
        let index = |name: &str| {
            self.inputs
                .iter()
                .position(|s| s.name() == name)
                .or_else(|| {
                    self.partitioned
                        .iter()
                        .find(|(n, _, _)| n == name)
                        .and_then(|(_, _, m)| m.first().copied())
                })
        };
        let mut importers = vec![Vec::new(); self.inputs.len()];
        for (i, s) in self.inputs.iter().enumerate() {
            if let Some(source) = s.import() {
                let Some(j) = index(source) else {
                    return Err(Error::Bind(format!(
                        "stream `{}` imports CTIs from `{source}`, which is not a stream of query `{}`",
                        s.name(),
                        self.name
                    )));
                };
                importers[j].push(i);
            }
        }
        for start in 0..self.inputs.len() {
            let mut chain = vec![start];
            let mut cur = start;
            while let Some(j) = self.inputs[cur].import().and_then(index) {
                chain.push(j);
                if j == start {
                    let names: Vec<&str> = chain.iter().map(|&k| self.inputs[k].name()).collect();
                    return Err(Error::Bind(format!(
                        "import cycle: {}",
                        names.join(" imports ")
                    )));
                }
                if chain.len() > self.inputs.len() {
                    break; // a cycle not through `start`: found when starting from a stream on it
                }
                cur = j;
            }
        }
        let reference = self.inputs.iter().map(|s| s.is_reference()).collect();
        let mut graph = self.graph.take_graph();
        let inputs = self
            .inputs
            .into_iter()
            .map(|p| p.build(&mut graph))
            .collect();
        Ok(Driver::new(
            self.name,
            (self.id, self.max_held),
            graph,
            inputs,
            (importers, reference),
        ))
    }

    fn check<P: Payload, O: Order>(&self, stream: &Stream<P, O>) -> Result<()> {
        if stream.graph().same(&self.graph) {
            Ok(())
        } else {
            Err(Error::Bind(format!(
                "the stream is not of query `{}`",
                self.name
            )))
        }
    }

    /// The pending input whose stream this is.
    /// The inputs whose stream `stream` is: one input, or a partitioned source's partitions.
    fn inputs_of<P: Payload, O: Order>(
        &self,
        stream: &Stream<P, O>,
        what: &str,
    ) -> Result<Vec<usize>> {
        self.check(stream)?;
        let inputs = self.members(stream.node());
        if inputs.is_empty() {
            return Err(Error::Bind(format!(
                "{what} belong to input streams, not operator outputs"
            )));
        }
        Ok(inputs)
    }

    fn pending<P: Payload>(&mut self, index: usize) -> Result<&mut Pending<P>> {
        self.inputs
            .get_mut(index)
            .and_then(|s| s.as_any().downcast_mut::<Pending<P>>())
            .ok_or_else(|| Error::Bind("an input of another payload type".to_owned()))
    }
}
