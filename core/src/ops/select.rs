//! Per-event operators.
//!
//! - [`Filter`]: keeps the events whose payload satisfies a predicate. CTIs pass unchanged.
//! - [`Map`] (project): transforms each payload. CTIs pass unchanged. A start edge and its end
//!   edge carry equal payloads, so a pure function keeps them matched.
//! - [`Shift`]: moves every event and every CTI by the same span.
//! - [`AlterDuration`]: gives every event the lifetime `[start, start + d)`; a start edge becomes
//!   that interval and its end edge is dropped. CTIs pass unchanged.

use crate::batch::Batch;
use crate::event::EventKind;
use crate::time::TimeSpan;

use super::UnaryOperator;

/// Keeps events whose payload satisfies the predicate; CTIs pass unchanged.
#[derive(Debug)]
pub struct Filter<F> {
    predicate: F,
}

impl<F> Filter<F> {
    /// A filter with this predicate.
    pub fn new(predicate: F) -> Self {
        Filter { predicate }
    }
}

impl<P, F> UnaryOperator<P, P> for Filter<F>
where
    P: Clone + Send + 'static,
    F: Fn(&P) -> bool + Send + 'static,
{
    const NAME: &'static str = "filter";

    fn on_batch(&mut self, input: &Batch<P>, out: &mut Batch<P>) {
        for (range, cti) in input.segments() {
            let (sync, other, payload) = (
                &input.sync()[range.clone()],
                &input.other()[range.clone()],
                &input.payloads()[range],
            );
            let base = out.len();
            let (osync, oother, opayload) = out.columns_mut();
            if std::mem::needs_drop::<P>() {
                for ((&s, &o), p) in sync.iter().zip(other).zip(payload) {
                    if (self.predicate)(p) {
                        osync.push(s);
                        oother.push(o);
                        opayload.push(p.clone());
                    }
                }
            } else {
                // Payloads without drop glue are cheap to copy: copy the segment, then compact
                // it in place without a branch per event (the predicate is often a coin flip).
                osync.extend_from_slice(sync);
                oother.extend_from_slice(other);
                opayload.extend_from_slice(payload);
                let (os, oo, op) = (
                    &mut osync[base..],
                    &mut oother[base..],
                    &mut opayload[base..],
                );
                let mut w = 0;
                for ((&s, &o), p) in sync.iter().zip(other).zip(payload) {
                    let keep = (self.predicate)(p);
                    os[w] = s;
                    oo[w] = o;
                    op[w] = p.clone();
                    w += usize::from(keep);
                }
                let w = base + w;
                osync.truncate(w);
                oother.truncate(w);
                opayload.truncate(w);
            }
            if let Some(t) = cti {
                out.push_cti(t);
            }
        }
    }
}

/// Transforms each payload; CTIs pass unchanged.
#[derive(Debug)]
pub struct Map<F> {
    f: F,
}

impl<F> Map<F> {
    /// A projection with this function.
    pub fn new(f: F) -> Self {
        Map { f }
    }
}

impl<P, Q, F> UnaryOperator<P, Q> for Map<F>
where
    P: Send + 'static,
    Q: Send + 'static,
    F: Fn(&P) -> Q + Send + 'static,
{
    const NAME: &'static str = "map";

    fn on_batch(&mut self, input: &Batch<P>, out: &mut Batch<Q>) {
        for (range, cti) in input.segments() {
            for i in range {
                out.push_event(
                    input.sync()[i],
                    input.other()[i],
                    (self.f)(&input.payloads()[i]),
                );
            }
            if let Some(t) = cti {
                out.push_cti(t);
            }
        }
    }
}

/// Moves events and CTIs by a span (infinities stay put).
#[derive(Debug, Clone, Copy)]
pub struct Shift {
    by: TimeSpan,
}

impl Shift {
    /// Shift by `by` (negative moves back).
    pub fn new(by: TimeSpan) -> Self {
        Shift { by }
    }
}

impl<P: Clone + Send + 'static> UnaryOperator<P, P> for Shift {
    const NAME: &'static str = "shift";

    fn on_batch(&mut self, input: &Batch<P>, out: &mut Batch<P>) {
        for (range, cti) in input.segments() {
            for i in range {
                out.push_event(
                    input.sync()[i] + self.by,
                    input.other()[i] + self.by,
                    input.payloads()[i].clone(),
                );
            }
            if let Some(t) = cti {
                out.push_cti(t + self.by);
            }
        }
    }
}

/// Sets every event's lifetime to `[start, start + d)`; CTIs pass unchanged.
#[derive(Debug, Clone, Copy)]
pub struct AlterDuration {
    duration: TimeSpan,
}

impl AlterDuration {
    /// New lifetimes of length `duration` (at least one tick; shorter spans are taken as one).
    pub fn new(duration: TimeSpan) -> Self {
        AlterDuration {
            duration: duration.max(TimeSpan::TICK),
        }
    }
}

impl<P: Clone + Send + 'static> UnaryOperator<P, P> for AlterDuration {
    const NAME: &'static str = "alter duration";

    fn on_batch(&mut self, input: &Batch<P>, out: &mut Batch<P>) {
        for (range, cti) in input.segments() {
            for i in range {
                if let EventKind::EndEdge { .. } = input.kind(i) {
                    continue;
                }
                let start = input.sync()[i];
                out.push_event(start, start + self.duration, input.payloads()[i].clone());
            }
            if let Some(t) = cti {
                out.push_cti(t);
            }
        }
    }
}
