//! [`Filter`]: keeps the events whose payload satisfies a predicate. CTIs pass unchanged.
//!
//! A filter that directly follows an input (and is that input's only consumer) is *fused into
//! the input's ingress* when the query is built: the ingress takes the filter's [`Predicate`]
//! and applies it as it reads, so refused events are never written out, and the filter node
//! passes what reaches it through unchanged. Chains of such filters fuse into one predicate.
//! The stream the query sees is the same either way; the input's counters show the refused
//! events as `filtered` once a CTI passes them (an event no CTI passed stays `buffered`, then
//! `unreleased`, as it would in front of the filter).
//!
//! On an unordered stream the filter keeps each event where it is, so its output has the order
//! of its input.

use crate::batch::Batch;

use super::UnaryOperator;

/// A predicate on payloads that a filter hands to an ingress when it is fused into it. Every
/// closure `Fn(&P) -> bool` is one.
/// [`Predicate::mask`] judges up to 64 payloads in one call, so that the ingress pays one
/// dynamic call per block of events and the predicate's loop is compiled with the predicate
/// inlined.
pub trait Predicate<P>: Send {
    /// Whether the event with this payload goes on.
    fn keep(&self, payload: &P) -> bool;

    /// One bit per payload (bit `i` for `payloads[i]`; at most 64 payloads), set where the
    /// event goes on.
    fn mask(&self, payloads: &[P]) -> u64;
}

/// Every closure on payloads is a predicate.
impl<P, F: Fn(&P) -> bool + Send> Predicate<P> for F {
    #[inline]
    fn keep(&self, payload: &P) -> bool {
        self(payload)
    }

    fn mask(&self, payloads: &[P]) -> u64 {
        debug_assert!(payloads.len() <= 64, "a mask covers at most 64 payloads");
        let mut mask = 0u64;
        for (i, p) in payloads.iter().take(64).enumerate() {
            mask |= u64::from(self(p)) << i;
        }
        mask
    }
}

/// Two predicates, both of which must keep an event: a chain of fused filters.
struct Both<P>(Box<dyn Predicate<P>>, Box<dyn Predicate<P>>);

impl<P> Predicate<P> for Both<P> {
    fn keep(&self, payload: &P) -> bool {
        self.0.keep(payload) && self.1.keep(payload)
    }

    fn mask(&self, payloads: &[P]) -> u64 {
        self.0.mask(payloads) & self.1.mask(payloads)
    }
}

/// The predicate of `first` followed by the filter `then`: an event goes on if both keep it.
pub fn both<P: 'static>(
    first: Box<dyn Predicate<P>>,
    then: Box<dyn Predicate<P>>,
) -> Box<dyn Predicate<P>> {
    Box::new(Both(first, then))
}

/// Keeps events whose payload satisfies the predicate; CTIs pass unchanged. See the module doc
/// for its fusion into an ingress.
#[derive(Debug)]
pub struct Filter<F> {
    /// `None` once fused into an ingress: the filter then passes everything through.
    predicate: Option<F>,
}

impl<F> Filter<F> {
    /// A filter with this predicate.
    pub fn new(predicate: F) -> Self {
        Filter {
            predicate: Some(predicate),
        }
    }
}

impl<P, F> UnaryOperator<P, P> for Filter<F>
where
    P: Clone + Send + 'static,
    F: Fn(&P) -> bool + Send + 'static,
{
    const NAME: &'static str = "filter";
    const STATELESS: bool = true;

    const FORWARDS: bool = true;

    fn on_batch(&mut self, input: &Batch<P>, out: &mut Batch<P>) {
        let Some(predicate) = &self.predicate else {
            let mut copy = input.clone();
            out.append(&mut copy);
            return;
        };
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
                    if predicate(p) {
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
                let os = &mut osync[base..];
                let n = os.len();
                let (oo, op) = (&mut oother[base..base + n], &mut opayload[base..base + n]);
                let mut w = 0;
                let (sync, other, payload) = (&sync[..n], &other[..n], &payload[..n]);
                for k in 0..n {
                    let keep = predicate(&payload[k]);
                    // `w <= k` always; saying so lets the compiler drop the bounds checks.
                    let d = w.min(k);
                    os[d] = sync[k];
                    oo[d] = other[k];
                    op[d] = payload[k].clone();
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

    fn on_owned_batch(&mut self, input: &mut Batch<P>, out: &mut Batch<P>) {
        // Compacted where it is, then moved (the columns swapped when `out` is empty, as it
        // is after every run of the graph): no copy of what is kept.
        if let Some(predicate) = &self.predicate {
            input.retain(predicate);
        }
        out.append(input);
    }

    fn take_predicate(&mut self) -> Option<Box<dyn Predicate<P>>> {
        let predicate = self.predicate.take()?;
        Some(Box::new(predicate))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A mask has the bit of every kept payload, for any length up to 64; a chain keeps what
    /// both keep.
    #[test]
    fn masks_have_a_bit_per_kept_payload() {
        let even: Box<dyn Predicate<u32>> = Box::new(|v: &u32| v.is_multiple_of(2));
        let small: Box<dyn Predicate<u32>> = Box::new(|v: &u32| *v < 40);
        let values: Vec<u32> = (0..64).collect();
        let m = even.mask(&values);
        assert_eq!(m.count_ones(), 32);
        assert!((0..64u32).all(|i| (m >> i & 1 == 1) == i.is_multiple_of(2)));
        assert_eq!(even.mask(&values[..3]), 0b101);
        let chain = both(even, small);
        let m = chain.mask(&values);
        assert!((0..64u32).all(|i| (m >> i & 1 == 1) == (i.is_multiple_of(2) && i < 40)));
        assert!(chain.keep(&38) && !chain.keep(&39) && !chain.keep(&42));
    }

    /// Once its predicate is taken, a filter passes everything through.
    #[test]
    fn a_fused_filter_passes_everything_through() {
        let t = crate::time::Time::from_ticks;
        let mut filter = Filter::new(|v: &u32| *v > 5);
        let predicate = UnaryOperator::<u32, u32>::take_predicate(&mut filter);
        assert!(predicate.is_some_and(|p| p.keep(&6) && !p.keep(&5)));
        let mut input = Batch::new();
        input.push_point(t(1), 1);
        input.push_point(t(2), 9);
        input.push_cti(t(3));
        let mut out = Batch::new();
        filter.on_batch(&input, &mut out);
        assert_eq!(out, input);
    }
}
