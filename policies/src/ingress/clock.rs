//! What a watermark strategy needs of the ingress besides the items: clock readings, the
//! adapter's look-ahead, the partitions to pause, and the record of the readings that mattered.

use punctual_core::Time;

use super::{Ingress, IngressOutput};
use crate::watermark::ClockReading;
#[cfg(doc)]
use crate::watermark::Watermark;

impl<P: Clone + PartialEq> Ingress<P> {
    /// Whether a watermark strategy makes this stream's CTIs (and takes clock readings).
    pub fn has_watermark(&self) -> bool {
        self.watermark.is_some()
    }

    /// The clock readings that issued CTIs so far, and those that told the strategy when events
    /// were seen; feeding the same readings after the same numbers of items (see
    /// [`ClockReading`]) replays the same output.
    pub fn clock_record(&self) -> &[ClockReading] {
        &self.clock_record
    }

    /// Partitions whose watermark runs more than the strategy's maximum drift ahead of the
    /// stream's CTI: the adapter should pause reading them (watermark alignment).
    pub fn paused_partitions(&self) -> Vec<usize> {
        self.watermark
            .as_ref()
            .map(|w| w.paused(self.app))
            .unwrap_or_default()
    }

    /// A clock reading (application-time scale): lets a watermark strategy advance the CTI with
    /// no events (idle input, idle partitions, periodic emission). Returns whether it issued a
    /// CTI. The readings that issued one, and those that told the strategy when events were
    /// seen (the first reading, the first after events), are recorded in
    /// [`Ingress::clock_record`].
    pub fn on_clock(&mut self, now: Time, out: &mut IngressOutput<P>) -> bool {
        let Some(w) = self.watermark.as_mut() else {
            return false;
        };
        let (candidate, mattered) = w.on_clock(now);
        let issued = match candidate {
            Some(c) => self.issue(c, out),
            None => false,
        };
        if issued || mattered {
            self.clock_record.push(ClockReading {
                after_items: self.items_seen,
                now,
            });
        }
        issued
    }

    /// The adapter has read (and not enqueued yet) the next batch of input partition
    /// `partition`, whose start times lie in `[min, max]`: the look-ahead term of a partitioned
    /// strategy with [`Watermark::look_ahead`] (YTsaurus Flow's estimate), which may issue a
    /// CTI at once. Returns whether it did; with any other strategy, or none, it does nothing.
    ///
    /// ```
    /// use punctual_core::{StreamItem, Time, TimeSpan};
    /// use punctual_policies::{Arrival, Ingress, IngressConfig, IngressOutput, Watermark};
    /// let t = Time::from_ticks;
    /// let strategy = Watermark::<u32>::partitioned(1, TimeSpan::from_ticks(10)).look_ahead();
    /// let mut ingress = Ingress::with_watermark(IngressConfig::default(), strategy);
    /// let mut out = IngressOutput::new();
    /// let p0 = Arrival { time: None, partition: Some(0) };
    /// ingress.enqueue_with(StreamItem::point(t(100), 1), p0, &mut out).unwrap();
    /// assert_eq!(ingress.app_time(), t(90)); // highest - bound
    /// // The next batch holds times 104 to 130: nothing in it is below min(104, 130 - 10).
    /// assert!(ingress.look_ahead(0, t(104), t(130), &mut out));
    /// assert_eq!(ingress.app_time(), t(104));
    /// ```
    pub fn look_ahead(
        &mut self,
        partition: usize,
        min: Time,
        max: Time,
        out: &mut IngressOutput<P>,
    ) -> bool {
        let candidate = self
            .watermark
            .as_mut()
            .and_then(|w| w.look_ahead(partition, min, max));
        candidate.is_some_and(|c| self.issue(c, out))
    }
}
