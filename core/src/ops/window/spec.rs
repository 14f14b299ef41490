//! [`WindowSpec`]: the size, hop, alignment and output policy of hopping windows, and the
//! window arithmetic over them.

use crate::time::{Time, TimeSpan};

use super::DEFAULT_MAX_WINDOWS_PER_EVENT;

/// What a window result looks like.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum WindowOutput {
    /// A point at the window's end; output CTI = input CTI.
    #[default]
    PointAtEnd,
    /// An interval with the window's lifetime; output CTI held back to the earliest open window.
    Window,
    /// A point at the last tick the window holds (its end minus one tick); output CTI = input
    /// CTI. With windows laid one tick later (alignment + 1 tick), these are Stream
    /// Analytics' windows: each holds `(end - size, end]` and its result is at `end`.
    PointAtLastTick,
}

/// Size, hop, alignment and output policy of hopping windows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WindowSpec {
    pub(super) size: i64,
    pub(super) hop: i64,
    pub(super) alignment: i64,
    pub(super) output: WindowOutput,
    pub(super) max_windows: u64,
    /// Allowed lateness in ticks (0: none; see [`late`](super::late)).
    pub(super) lateness: i64,
}

impl WindowSpec {
    /// Hopping windows of `size` every `hop`, aligned at time 0, results at window ends. Size
    /// and hop are at least one tick.
    pub fn hopping(size: TimeSpan, hop: TimeSpan) -> Self {
        WindowSpec {
            size: size.ticks().max(1),
            hop: hop.ticks().max(1),
            alignment: 0,
            output: WindowOutput::PointAtEnd,
            max_windows: DEFAULT_MAX_WINDOWS_PER_EVENT,
            lateness: 0,
        }
    }

    /// Tumbling windows: hop = size.
    pub fn tumbling(size: TimeSpan) -> Self {
        Self::hopping(size, size)
    }

    /// Windows start at `alignment + n * hop`.
    pub fn alignment(mut self, alignment: Time) -> Self {
        self.alignment = alignment.ticks();
        self
    }

    /// The output policy.
    pub fn output(mut self, output: WindowOutput) -> Self {
        self.output = output;
        self
    }

    /// The most windows one event may count in (at least 1; default
    /// [`DEFAULT_MAX_WINDOWS_PER_EVENT`]); an event over more is dropped with the reason (see
    /// the module doc).
    pub fn max_windows_per_event(mut self, n: u64) -> Self {
        self.max_windows = n.max(1);
        self
    }

    /// Results given once the CTI plus `lateness` passes them, then revised until the CTI
    /// closes their window (see [`Windowed::allowed_lateness`](crate::ops::Windowed)).
    /// Zero (the default) gives each result once, final.
    pub(crate) fn allowed_lateness(mut self, lateness: TimeSpan) -> Self {
        self.lateness = lateness.ticks().max(0);
        self
    }

    /// The allowed lateness (zero: none).
    pub fn lateness(&self) -> TimeSpan {
        TimeSpan::from_ticks(self.lateness)
    }

    pub(super) fn start(&self, n: i64) -> Time {
        let t = i128::from(self.alignment) + i128::from(n) * i128::from(self.hop);
        clamp(t)
    }

    pub(super) fn end(&self, n: i64) -> Time {
        self.start(n) + TimeSpan::from_ticks(self.size)
    }

    /// The first window whose end is after `x`.
    #[inline]
    pub(super) fn first_ending_after(&self, x: Time) -> i64 {
        if x == Time::NEG_INF {
            return i64::MIN;
        }
        // i64 arithmetic when it cannot overflow (always, for real times); i128 otherwise.
        match x
            .ticks()
            .checked_sub(self.alignment)
            .and_then(|v| v.checked_sub(self.size))
        {
            Some(v) => v.div_euclid(self.hop).saturating_add(1),
            None => {
                let v =
                    (i128::from(x.ticks()) - i128::from(self.alignment) - i128::from(self.size))
                        .div_euclid(i128::from(self.hop))
                        + 1;
                v.clamp(i128::from(i64::MIN), i128::from(i64::MAX)) as i64
            }
        }
    }

    /// The last window starting before `x`.
    #[inline]
    pub(super) fn last_starting_before(&self, x: Time) -> i64 {
        if x == Time::INF {
            return i64::MAX;
        }
        match x
            .ticks()
            .checked_sub(self.alignment)
            .and_then(|v| v.checked_sub(1))
        {
            Some(v) => v.div_euclid(self.hop),
            None => {
                let v = (i128::from(x.ticks()) - i128::from(self.alignment) - 1)
                    .div_euclid(i128::from(self.hop));
                v.clamp(i128::from(i64::MIN), i128::from(i64::MAX)) as i64
            }
        }
    }
}

fn clamp(t: i128) -> Time {
    Time::from_ticks(t.clamp(
        i128::from(Time::MIN_FINITE.ticks()),
        i128::from(Time::MAX_FINITE.ticks()),
    ) as i64)
}
