//! [`CtiFrontier`]: the multi-input CTI rule, written once. Union, join, anti-semi-join, clip and
//! group-and-apply use it; nobody re-derives `min` inline.
//!
//! Each input is *not yet reported* (`-inf`), *at* some time `t`, or *ended* (`CTI(+inf)`).
//! The output CTI is the minimum over the inputs, and it never regresses.
//!
//! ```
//! use punctual_core::ops::CtiFrontier;
//! use punctual_core::Time;
//! let t = Time::from_ticks;
//! let mut f = CtiFrontier::new(2);
//! assert_eq!(f.advance(0, t(5)), None);          // input 1 has not reported yet
//! assert_eq!(f.advance(1, t(4)), Some(t(4)));
//! assert_eq!(f.advance(1, t(12)), Some(t(5)));
//! assert_eq!(f.advance(0, Time::INF), Some(t(12)));
//! assert_eq!(f.advance(1, t(3)), None);          // a stale CTI changes nothing
//! ```

use crate::time::Time;

/// The CTIs of several inputs and the output CTI they allow. See the module doc.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct CtiFrontier {
    inputs: Vec<Time>,
    output: Time,
}

impl CtiFrontier {
    /// A frontier over `n` inputs, none reported yet.
    pub fn new(n: usize) -> Self {
        CtiFrontier {
            inputs: vec![Time::NEG_INF; n],
            output: Time::NEG_INF,
        }
    }

    /// Records `CTI(t)` on `input`; returns the new output CTI if it advanced. CTIs that do not
    /// advance their input are ignored.
    pub fn advance(&mut self, input: usize, t: Time) -> Option<Time> {
        let slot = self.inputs.get_mut(input)?;
        if t <= *slot {
            return None;
        }
        *slot = t;
        let min = self.inputs.iter().copied().min().unwrap_or(Time::INF);
        if min > self.output {
            self.output = min;
            Some(min)
        } else {
            None
        }
    }

    /// The output CTI: the minimum over the inputs (`-inf` until every input has reported).
    pub fn output(&self) -> Time {
        self.output
    }

    /// The CTI of one input.
    pub fn input(&self, input: usize) -> Time {
        self.inputs.get(input).copied().unwrap_or(Time::NEG_INF)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn output_is_the_minimum_and_never_regresses() {
        let t = Time::from_ticks;
        let mut f = CtiFrontier::new(3);
        assert_eq!(f.advance(0, t(1)), None);
        assert_eq!(f.advance(1, t(1)), None);
        assert_eq!(f.advance(2, t(9)), Some(t(1)));
        assert_eq!(f.advance(0, t(3)), None, "input 1 still at 1");
        assert_eq!(f.advance(1, Time::INF), Some(t(3)));
        assert_eq!(f.advance(0, Time::INF), Some(t(9)));
        assert_eq!(f.advance(2, Time::INF), Some(Time::INF));
        assert_eq!(f.output(), Time::INF);
        assert_eq!(f.advance(7, t(1)), None, "no such input");
    }
}
