//! [`GroupApply`]: per-key sub-queries.
//!
//! Events are routed to a sub-query per key (built on first use from a closure); every input CTI
//! goes to every group. Results of all groups are merged.
//!
//! CTI rule: output CTI = min over the groups' output CTIs and a *probe*: one more instance of the
//! sub-query that sees only the CTIs (built for `K::default()`). A group created later starts from
//! the current input CTI, so its results can never fall behind what the probe allows; the probe
//! keeps the output CTI honest before any group exists and after groups go idle.
//!
//! State: one sub-query per key that holds state or lags the probe; a group whose sub-query holds
//! nothing and whose CTI equals the probe's is dropped (it would behave exactly like a new one).

use std::hash::Hash;

use super::fxhash::FxHashMap;
use crate::batch::Batch;
use crate::time::Time;

use super::graph::{Graph, NodeId};
use super::{Held, HeldWhat, Payload, ReleaseBuffer, UnaryOperator};

/// One instance of a sub-query: its graph, where to feed it, where its results come out.
#[derive(Debug)]
pub struct SubQuery {
    /// The sub-query's graph.
    pub graph: Graph,
    /// Its source node.
    pub source: NodeId,
    /// Its output node (kept).
    pub output: NodeId,
}

#[derive(Debug)]
struct Group<P, O> {
    q: SubQuery,
    input: Batch<P>,
    out: Batch<O>,
    cti: Time,
}

impl<P: Payload, O: Payload> Group<P, O> {
    fn new(q: SubQuery) -> Self {
        Group {
            q,
            input: Batch::new(),
            out: Batch::new(),
            cti: Time::NEG_INF,
        }
    }

    /// Runs what was routed to the group; moves its results into `held`.
    fn run(&mut self, held: &mut ReleaseBuffer<O>) {
        if self.input.is_empty() {
            return;
        }
        self.q.graph.feed(self.q.source, &mut self.input);
        self.q.graph.take_output(self.q.output, &mut self.out);
        if let Some(t) = self.out.last_cti() {
            self.cti = t;
        }
        let mut events = Vec::new();
        self.out.drain_items(|item| events.push(item));
        for item in events {
            if let crate::event::StreamItem::Insert(e) = item {
                let (sync, other) = e.kind.encode();
                held.push(sync, other, e.payload);
            }
        }
    }

    fn idle(&self) -> bool {
        self.q.graph.state_sizes().iter().all(|s| s.2 == 0)
    }
}

/// Per-key sub-queries; see the module doc.
pub struct GroupApply<P, K, O, KF, B> {
    key: KF,
    build: B,
    groups: FxHashMap<K, Group<P, O>>,
    probe: Group<P, O>,
    cti: Time,
    held: ReleaseBuffer<O>,
}

impl<P, K, O, KF, B> std::fmt::Debug for GroupApply<P, K, O, KF, B> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GroupApply")
            .field("groups", &self.groups.len())
            .finish()
    }
}

impl<P, K, O, KF, B> GroupApply<P, K, O, KF, B>
where
    P: Payload,
    O: Payload,
    K: Hash + Eq + Clone + Default,
    KF: Fn(&P) -> K,
    B: Fn(&K) -> SubQuery,
{
    /// Groups by `key`; `build(key)` makes each group's sub-query.
    pub fn new(key: KF, build: B) -> Self {
        let probe = Group::new(build(&K::default()));
        GroupApply {
            key,
            build,
            groups: FxHashMap::default(),
            probe,
            cti: Time::NEG_INF,
            held: ReleaseBuffer::new(),
        }
    }
}

impl<P, K, O, KF, B> UnaryOperator<P, O> for GroupApply<P, K, O, KF, B>
where
    P: Payload,
    O: Payload,
    K: Hash + Eq + Clone + Default + Send + 'static,
    KF: Fn(&P) -> K + Send + 'static,
    B: Fn(&K) -> SubQuery + Send + 'static,
{
    const NAME: &'static str = "group and apply";

    fn placement(&self) -> super::Placement {
        super::Placement::ByKey
    }

    fn key_hash(&self, payload: &P) -> u64 {
        super::key_hash(&(self.key)(payload))
    }

    fn on_batch(&mut self, input: &Batch<P>, out: &mut Batch<O>) {
        for (range, cti) in input.segments() {
            for i in range {
                let p = &input.payloads()[i];
                let k = (self.key)(p);
                let group = match self.groups.get_mut(&k) {
                    Some(g) => g,
                    None => {
                        let mut g = Group::new((self.build)(&k));
                        if self.cti > Time::NEG_INF {
                            g.input.push_cti(self.cti);
                        }
                        self.groups.entry(k).or_insert(g)
                    }
                };
                group
                    .input
                    .push_event(input.sync()[i], input.other()[i], p.clone());
            }
            if let Some(t) = cti {
                self.cti = t;
                self.probe.input.push_cti(t);
                for g in self.groups.values_mut() {
                    g.input.push_cti(t);
                }
            }
            self.probe.run(&mut self.held);
            for g in self.groups.values_mut() {
                g.run(&mut self.held);
            }
            if cti.is_some() {
                let probe_cti = self.probe.cti;
                self.groups.retain(|_, g| !(g.cti == probe_cti && g.idle()));
                let t = self
                    .groups
                    .values()
                    .map(|g| g.cti)
                    .fold(probe_cti, Time::min);
                self.held.release(t, out);
            }
        }
    }

    fn state_size(&self) -> usize {
        self.groups
            .values()
            .map(|g| {
                g.q.graph
                    .state_sizes()
                    .iter()
                    .map(|s| s.2)
                    .sum::<usize>()
                    .max(1)
            })
            .sum::<usize>()
            + self.held.len()
    }

    /// What each group's sub-query holds; a group whose sub-query holds nothing is one group
    /// (its key) over all time.
    fn held(&self, f: &mut dyn FnMut(Held<'_>)) {
        for (key, g) in &self.groups {
            let mut any = false;
            g.q.graph.for_each_held(|_, h| {
                any = true;
                f(h);
            });
            if !any {
                f(Held {
                    what: HeldWhat::Group,
                    start: Time::NEG_INF,
                    end: Time::INF,
                    payload: key,
                });
            }
        }
        Held::results(&self.held, f);
    }
}
