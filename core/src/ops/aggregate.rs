//! Aggregates over a window's members: [`Count`], [`Sum`], [`Avg`], [`Min`], [`Max`], [`TopK`],
//! tuples of aggregates (computed side by side), and any user-defined [`Aggregate`].
//!
//! ```
//! use punctual_core::ops::{Aggregate, Avg, Count};
//! let agg = (Count, Avg::of(|x: &f64| *x));
//! let mut state = agg.init();
//! for x in [1.0, 2.0, 6.0] {
//!     agg.add(&mut state, &x);
//! }
//! assert_eq!(agg.result(&state), (3, 3.0));
//! ```

/// An incremental aggregate: a state that members are added to (and, where the aggregate
/// supports it, removed from), and a result read from the state.
pub trait Aggregate<P>: Send + 'static {
    /// The running state: saved in snapshots (serde), as payloads are.
    type State: Clone + Send + serde::Serialize + serde::de::DeserializeOwned;
    /// The result.
    type Output: Send + 'static;
    /// The state of an empty set.
    fn init(&self) -> Self::State;
    /// Adds a member.
    fn add(&self, state: &mut Self::State, member: &P);
    /// Removes a member added before; returns `false` if the aggregate cannot remove (then the
    /// caller recomputes from the members).
    fn remove(&self, state: &mut Self::State, member: &P) -> bool {
        let _ = (state, member);
        false
    }
    /// The result for the members added so far.
    fn result(&self, state: &Self::State) -> Self::Output;
}

/// Counts members.
#[derive(Clone, Copy, Debug, Default)]
pub struct Count;

impl<P> Aggregate<P> for Count {
    type State = u64;
    type Output = u64;
    fn init(&self) -> u64 {
        0
    }
    fn add(&self, state: &mut u64, _: &P) {
        *state += 1;
    }
    fn remove(&self, state: &mut u64, _: &P) -> bool {
        *state = state.saturating_sub(1);
        true
    }
    fn result(&self, state: &u64) -> u64 {
        *state
    }
}

/// Sums a numeric field of the members.
#[derive(Clone, Copy, Debug)]
pub struct Sum<F>(pub F);

impl<F> Sum<F> {
    /// The sum of `field(member)`.
    pub fn of(field: F) -> Self {
        Sum(field)
    }
}

impl<P, F: Fn(&P) -> f64 + Send + 'static> Aggregate<P> for Sum<F> {
    type State = f64;
    type Output = f64;
    fn init(&self) -> f64 {
        0.0
    }
    fn add(&self, state: &mut f64, member: &P) {
        *state += (self.0)(member);
    }
    fn remove(&self, state: &mut f64, member: &P) -> bool {
        *state -= (self.0)(member);
        true
    }
    fn result(&self, state: &f64) -> f64 {
        *state
    }
}

/// Averages a numeric field of the members.
#[derive(Clone, Copy, Debug)]
pub struct Avg<F>(pub F);

impl<F> Avg<F> {
    /// The mean of `field(member)`.
    pub fn of(field: F) -> Self {
        Avg(field)
    }
}

impl<P, F: Fn(&P) -> f64 + Send + 'static> Aggregate<P> for Avg<F> {
    type State = (f64, u64);
    type Output = f64;
    fn init(&self) -> (f64, u64) {
        (0.0, 0)
    }
    fn add(&self, state: &mut (f64, u64), member: &P) {
        state.0 += (self.0)(member);
        state.1 += 1;
    }
    fn remove(&self, state: &mut (f64, u64), member: &P) -> bool {
        state.0 -= (self.0)(member);
        state.1 = state.1.saturating_sub(1);
        true
    }
    fn result(&self, state: &(f64, u64)) -> f64 {
        if state.1 == 0 {
            f64::NAN
        } else {
            state.0 / state.1 as f64
        }
    }
}

/// An aggregate that keeps the member value that is first in one direction: `Min` and `Max`.
macro_rules! extreme {
    ($name:ident, $doc:literal, $of:literal, $before:tt) => {
        #[doc = $doc]
        #[derive(Clone, Copy, Debug)]
        pub struct $name<F>(pub F);

        impl<F> $name<F> {
            #[doc = $of]
            pub fn of(field: F) -> Self {
                $name(field)
            }
        }

        impl<P, V, F> Aggregate<P> for $name<F>
        where
            V: PartialOrd + Clone + Send + serde::Serialize + serde::de::DeserializeOwned + 'static,
            F: Fn(&P) -> V + Send + 'static,
        {
            type State = Option<V>;
            type Output = Option<V>;
            fn init(&self) -> Option<V> {
                None
            }
            fn add(&self, state: &mut Option<V>, member: &P) {
                let v = (self.0)(member);
                if state.as_ref().is_none_or(|s| v $before *s) {
                    *state = Some(v);
                }
            }
            fn result(&self, state: &Option<V>) -> Option<V> {
                state.clone()
            }
        }
    };
}

extreme!(
    Min,
    "The smallest value of a field (`None` for no members). Cannot remove.",
    "The minimum of `field(member)`.",
    <
);
extreme!(
    Max,
    "The largest value of a field (`None` for no members). Cannot remove.",
    "The maximum of `field(member)`.",
    >
);

/// The `k` members with the largest values of a field, largest first (ties: earliest added
/// first). Cannot remove.
#[derive(Clone, Copy, Debug)]
pub struct TopK<F> {
    k: usize,
    field: F,
}

impl<F> TopK<F> {
    /// The `k` members with the largest `field(member)`.
    pub fn by(k: usize, field: F) -> Self {
        TopK { k, field }
    }
}

impl<P, V, F> Aggregate<P> for TopK<F>
where
    P: Clone + Send + serde::Serialize + serde::de::DeserializeOwned + 'static,
    V: PartialOrd + Clone + Send + serde::Serialize + serde::de::DeserializeOwned + 'static,
    F: Fn(&P) -> V + Send + 'static,
{
    type State = Vec<(V, P)>;
    type Output = Vec<P>;
    fn init(&self) -> Vec<(V, P)> {
        Vec::new()
    }
    fn add(&self, state: &mut Vec<(V, P)>, member: &P) {
        let v = (self.field)(member);
        let pos = state.partition_point(|(w, _)| *w >= v);
        if pos < self.k {
            state.insert(pos, (v, member.clone()));
            state.truncate(self.k);
        }
    }
    fn result(&self, state: &Vec<(V, P)>) -> Vec<P> {
        state.iter().map(|(_, p)| p.clone()).collect()
    }
}

impl<P, A: Aggregate<P>, B: Aggregate<P>> Aggregate<P> for (A, B) {
    type State = (A::State, B::State);
    type Output = (A::Output, B::Output);
    fn init(&self) -> Self::State {
        (self.0.init(), self.1.init())
    }
    fn add(&self, state: &mut Self::State, member: &P) {
        self.0.add(&mut state.0, member);
        self.1.add(&mut state.1, member);
    }
    fn remove(&self, state: &mut Self::State, member: &P) -> bool {
        // Both or neither: check that both can before changing either.
        let mut a = state.0.clone();
        let mut b = state.1.clone();
        if self.0.remove(&mut a, member) && self.1.remove(&mut b, member) {
            *state = (a, b);
            true
        } else {
            false
        }
    }
    fn result(&self, state: &Self::State) -> Self::Output {
        (self.0.result(&state.0), self.1.result(&state.1))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtin_aggregates() {
        let xs = [3.0, 1.0, 4.0, 1.0, 5.0];
        fn run<A: Aggregate<f64>>(a: &A, xs: &[f64]) -> A::Output {
            let mut s = a.init();
            xs.iter().for_each(|x| a.add(&mut s, x));
            a.result(&s)
        }
        assert_eq!(run(&Count, &xs), 5);
        assert_eq!(run(&Sum::of(|x: &f64| *x), &xs), 14.0);
        assert_eq!(run(&Avg::of(|x: &f64| *x), &xs), 2.8);
        assert_eq!(run(&Min::of(|x: &f64| *x), &xs), Some(1.0));
        assert_eq!(run(&Max::of(|x: &f64| *x), &xs), Some(5.0));
        assert_eq!(run(&TopK::by(2, |x: &f64| *x), &xs), vec![5.0, 4.0]);
        let pair = (Count, Sum::of(|x: &f64| *x));
        let mut s = pair.init();
        xs.iter().for_each(|x| pair.add(&mut s, x));
        assert!(pair.remove(&mut s, &5.0));
        assert_eq!(pair.result(&s), (4, 9.0));
        let no_remove = (Count, Max::of(|x: &f64| *x));
        let mut s = no_remove.init();
        no_remove.add(&mut s, &1.0);
        assert!(!no_remove.remove(&mut s, &1.0));
        assert_eq!(
            no_remove.result(&s),
            (1, Some(1.0)),
            "unchanged after a refused remove"
        );
    }
}
