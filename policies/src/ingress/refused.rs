//! [`Refused`]: the sync times of the events a filter fused into an ordered stream's ingress
//! refused, until a CTI passes them. The ingress counts such an event as the filter after it
//! would see it: `filtered` once a CTI passes it, `buffered` until then, `unreleased` if the
//! stream closes first. Only the count below a CTI is ever asked, so only times are kept: the
//! ones that come in order in a sorted column read from a moving head (a push is a store, a
//! release a binary search), the late ones in a min-heap.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use punctual_core::Time;

/// See the module doc.
#[derive(Debug, Default, serde::Serialize, serde::Deserialize)]
pub(crate) struct Refused {
    /// Times in order; the live ones from `head` on.
    run: Vec<Time>,
    head: usize,
    /// Times below the run's last when they came.
    late: BinaryHeap<Reverse<Time>>,
}

impl Refused {
    /// Times held.
    pub(crate) fn len(&self) -> usize {
        self.run.len() - self.head + self.late.len()
    }

    /// The earliest time held (`+inf` if none).
    pub(crate) fn earliest(&self) -> Time {
        let run = self.run.get(self.head).copied().unwrap_or(Time::INF);
        self.late.peek().map_or(run, |&Reverse(t)| t.min(run))
    }

    /// Holds one time.
    #[inline]
    pub(crate) fn push(&mut self, t: Time) {
        if self.run.last().is_none_or(|&last| last <= t) {
            self.run.push(t);
        } else {
            self.late.push(Reverse(t));
        }
    }

    /// Holds times given in arrival order: each run in order is one copy.
    pub(crate) fn extend(&mut self, times: &[Time]) {
        let mut i = 0;
        while i < times.len() {
            let mut last = self.run.last().copied().unwrap_or(Time::NEG_INF);
            let n = times[i..]
                .iter()
                .take_while(|&&t| {
                    let ok = t >= last;
                    last = t;
                    ok
                })
                .count();
            self.run.extend_from_slice(&times[i..i + n]);
            i += n;
            if let Some(&t) = times.get(i) {
                self.late.push(Reverse(t));
                i += 1;
            }
        }
    }

    /// Forgets every time below `t` (a CTI passed them); returns how many.
    pub(crate) fn release(&mut self, t: Time) -> usize {
        let live = &self.run[self.head..];
        let n = live.partition_point(|&x| x < t);
        self.head += n;
        if self.head == self.run.len() {
            self.run.clear();
            self.head = 0;
        } else if self.head >= 4096 && self.head * 2 >= self.run.len() {
            self.run.drain(..self.head);
            self.head = 0;
        }
        let mut late = 0;
        while self.late.peek().is_some_and(|&Reverse(x)| x < t) {
            self.late.pop();
            late += 1;
        }
        n + late
    }

    /// Forgets one time equal to `t`, if one is held (a refused start edge that its end edge
    /// removes; the refused events at one time are alike for the counts).
    pub(crate) fn remove(&mut self, t: Time) -> bool {
        let live = &self.run[self.head..];
        let at = live.partition_point(|&x| x < t);
        if live.get(at) == Some(&t) {
            self.run.remove(self.head + at);
            return true;
        }
        let before = self.late.len();
        let mut found = false;
        self.late.retain(|&Reverse(x)| {
            let hit = !found && x == t;
            found |= hit;
            !hit
        });
        self.late.len() < before
    }

    /// Forgets every time (the stream is closed); returns how many there were.
    pub(crate) fn clear(&mut self) -> usize {
        let n = self.len();
        self.run.clear();
        self.head = 0;
        self.late.clear();
        n
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Against a plain list: counts below each CTI, removals and the length, with times in
    /// order, late, and equal.
    #[test]
    fn counts_what_a_list_counts() {
        let t = Time::from_ticks;
        let mut refused = Refused::default();
        let mut list: Vec<Time> = Vec::new();
        let mut x: u64 = 7;
        let mut cti = 0;
        for step in 0..20_000u64 {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let r = x >> 33;
            let at = t(cti + (step as i64 / 3) % 50 + (r % 40) as i64 - 10).max(t(cti));
            match r % 7 {
                0 => {
                    let times = [at, at + punctual_core::TimeSpan::from_ticks(2), at];
                    refused.extend(&times);
                    list.extend_from_slice(&times);
                }
                1 if !list.is_empty() => {
                    let pick = list[(r as usize / 7) % list.len()];
                    assert!(refused.remove(pick));
                    let i = list.iter().position(|&y| y == pick).expect("held");
                    list.swap_remove(i);
                    assert!(!refused.remove(t(-1)));
                }
                2 => {
                    cti += (r % 9) as i64;
                    let below = list.iter().filter(|&&y| y < t(cti)).count();
                    list.retain(|&y| y >= t(cti));
                    assert_eq!(refused.release(t(cti)), below);
                }
                _ => {
                    refused.push(at);
                    list.push(at);
                }
            }
            assert_eq!(refused.len(), list.len());
        }
        assert_eq!(refused.clear(), list.len());
        assert_eq!(refused.len(), 0);
    }
}
