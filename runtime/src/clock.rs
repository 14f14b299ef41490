//! Clocks for the watermark strategies: the runtime reads one at a fixed interval and hands the
//! readings to every stream with a watermark strategy, so idle inputs, idle partitions and
//! periodic emission advance CTIs without events. Tests use a [`ManualClock`] (together with
//! `tokio::time::pause` for the interval).
//!
//! ```
//! use punctual_runtime::{Clock, ManualClock};
//! use punctual_core::{Time, TimeSpan};
//! let clock = ManualClock::new(Time::from_ticks(100));
//! clock.advance(TimeSpan::from_ticks(50));
//! assert_eq!(clock.now(), Time::from_ticks(150));
//! ```

use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;

use punctual_core::{Time, TimeSpan};

/// A source of "now" in application time (ticks since the Unix epoch).
pub trait Clock: Send + Sync + 'static {
    /// The current reading.
    fn now(&self) -> Time;
}

/// The system's wall clock.
#[derive(Clone, Copy, Debug, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> Time {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .ok()
            .and_then(|d| Time::from_duration_since_epoch(d).ok())
            .unwrap_or(Time::EPOCH)
    }
}

/// A clock that moves only when told to; clones share the reading.
#[derive(Clone, Debug)]
pub struct ManualClock {
    ticks: Arc<AtomicI64>,
}

impl ManualClock {
    /// A clock reading `start`.
    pub fn new(start: Time) -> Self {
        ManualClock {
            ticks: Arc::new(AtomicI64::new(start.ticks())),
        }
    }

    /// Sets the reading.
    pub fn set(&self, now: Time) {
        self.ticks.store(now.ticks(), Ordering::SeqCst);
    }

    /// Moves the reading forward by `by`.
    pub fn advance(&self, by: TimeSpan) {
        self.ticks.fetch_add(by.ticks(), Ordering::SeqCst);
    }
}

impl Clock for ManualClock {
    fn now(&self) -> Time {
        Time::from_ticks(self.ticks.load(Ordering::SeqCst))
    }
}
