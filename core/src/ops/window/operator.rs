//! [`HoppingWindow`] as an operator of the graph: its CTI rule, what it holds and drops.

use crate::batch::Batch;
use crate::event::EventShape;

use super::{HoppingWindow, WindowOutput};
use crate::ops::{
    Aggregate, Held, HeldWhat, Key, OperatorDrop, Payload, StateError, UnaryOperator,
};

impl<P, K, A, O, KF, MK> UnaryOperator<P, O> for HoppingWindow<P, K, A, O, KF, MK>
where
    P: Payload,
    K: Key,
    A: Aggregate<P>,
    A::State: serde::Serialize + serde::de::DeserializeOwned,
    O: Payload,
    KF: Fn(&P) -> K + Send + 'static,
    MK: Fn(&K, A::Output) -> O + Send + 'static,
{
    const NAME: &'static str = "hopping window";

    fn name(&self) -> &'static str {
        if self.spec.size == self.spec.hop {
            "tumbling window"
        } else {
            Self::NAME
        }
    }

    fn placement(&self) -> crate::ops::Placement {
        crate::ops::Placement::ByKey
    }

    fn save_state(&self, out: &mut Vec<u8>) -> Result<(), StateError> {
        self.save(out)
    }

    fn restore_state(&mut self, bytes: &[u8]) -> Result<(), StateError> {
        self.restore(bytes)
    }

    fn key_hash(&self, payload: &P) -> u64 {
        crate::ops::key_hash(&(self.key)(payload))
    }

    fn output_shape(&self, _input: EventShape) -> EventShape {
        if self.late.is_some() {
            return EventShape::Edge;
        }
        match self.spec.output {
            WindowOutput::PointAtEnd | WindowOutput::PointAtLastTick => EventShape::Point,
            WindowOutput::Window => EventShape::Interval,
        }
    }

    fn on_batch(&mut self, input: &Batch<P>, out: &mut Batch<O>) {
        let tumbling = self.spec.size == self.spec.hop;
        for (range, cti) in input.segments() {
            let sync = &input.sync()[range.clone()];
            let other = &input.other()[range.clone()];
            let payloads = &input.payloads()[range];
            if let Some(late) = self.late.as_mut() {
                late.note(self.cti, (sync, other, payloads), &self.key);
            }
            let mut i = 0;
            while i < sync.len() {
                if let (true, Some(c)) = (tumbling, self.current.as_mut()) {
                    // The common case in a tight loop: points and intervals inside the current
                    // tumbling window, which overlap no other window.
                    let (ws, we) = (c.start, c.end);
                    while let (Some(&s), Some(&o), Some(p)) =
                        (sync.get(i), other.get(i), payloads.get(i))
                    {
                        if !(ws <= s && s < o && o <= we) {
                            break;
                        }
                        let agg = &self.agg;
                        let state = c.groups.entry((self.key)(p), || agg.init());
                        agg.add(state, p);
                        i += 1;
                    }
                    if i == sync.len() {
                        break;
                    }
                }
                self.one(sync[i], other[i], &payloads[i]);
                i += 1;
            }
            if let Some(t) = cti {
                if t > self.cti {
                    self.close(t, out);
                }
            }
        }
    }

    fn state_size(&self) -> usize {
        self.windows.values().map(|g| g.len()).sum::<usize>()
            + self.current.as_ref().map_or(0, |c| c.groups.len())
            + self.previous.as_ref().map_or(0, |c| c.groups.len())
            + self.spans.len()
            + self.open_count
            + self.held.len()
            + self.late.as_ref().map_or(0, |l| l.held())
    }

    fn lateness(&self) -> crate::ops::LateCounts {
        self.late.as_ref().map(|l| l.counts()).unwrap_or_default()
    }

    fn held(&self, f: &mut dyn FnMut(Held<'_>)) {
        let stored = self
            .windows
            .iter()
            .map(|(&n, g)| (self.spec.start(n), self.spec.end(n), g));
        let cached = [&self.current, &self.previous]
            .into_iter()
            .flatten()
            .map(|c| (c.start, c.end, &c.groups));
        for (start, end, groups) in stored.chain(cached) {
            for key in groups.keys() {
                f(Held {
                    what: HeldWhat::Group,
                    start,
                    end,
                    payload: key,
                });
            }
        }
        for s in (self.spans.iter()).chain(self.open.values().flat_map(|l| l.iter())) {
            f(Held {
                what: HeldWhat::Event,
                start: s.start,
                end: s.end,
                payload: &s.payload,
            });
        }
        Held::results(&self.held, f);
        for (start, value) in self.late.iter().flat_map(|l| l.in_force()) {
            f(Held {
                what: HeldWhat::Result,
                start,
                end: crate::time::Time::INF,
                payload: value,
            });
        }
    }

    fn dropped(&self) -> u64 {
        self.drops.count()
    }

    fn take_drops(&mut self, into: &mut Vec<OperatorDrop>) {
        self.drops.take(into);
    }
}
