//! The ingress's state in a snapshot: application time, the CTI generation's count, the
//! reorder buffer, the open edges and the counters. Its settings, fused filter and edge key
//! are the query's, built again on restore.

use punctual_core::ops::state::{read, write};
use punctual_core::ops::{Payload, StateError};
use punctual_core::Time;

use super::edges::Saved as SavedEdges;
use super::hold::Hold;
use super::{Ingress, IngressCounters};
use crate::watermark::{ClockReading, Saved as SavedWatermark, State};

const NAME: &str = "ingress";

/// The state as read back.
type Saved<P> = (
    (Time, Time, u64),
    Hold<P>,
    SavedEdges<P>,
    IngressCounters,
    (bool, u64),
    (Option<SavedWatermark>, Vec<ClockReading>),
);

impl<P: Payload> Ingress<P> {
    /// The state of this input's ingress for a snapshot, to be restored into an ingress made
    /// with the same settings ([`Ingress::restore_state`]) that then continues exactly as
    /// this one would (with a watermark strategy, its state: the clock readings it took go on
    /// from the ones saved).
    pub fn save_state(&self) -> Result<Vec<u8>, StateError> {
        let state = (
            (self.app, self.high, self.since_cti),
            &self.hold,
            &self.edges,
            self.counters,
            (self.finished, self.items_seen),
            (
                self.watermark.as_ref().map(State::saved),
                &self.clock_record,
            ),
        );
        let mut out = Vec::new();
        write(NAME, &state, &mut out)?;
        Ok(out)
    }

    /// Takes the state [`Ingress::save_state`] wrote, on an ingress made with the same
    /// settings and fed nothing yet.
    pub fn restore_state(&mut self, bytes: &[u8]) -> Result<(), StateError> {
        let (times, hold, edges, counters, (finished, items_seen), (watermark, clock)): Saved<P> =
            read(NAME, bytes)?;
        let (app, high, since_cti) = times;
        match (&mut self.watermark, watermark) {
            (Some(state), Some(saved)) => state.restore(saved),
            (None, None) => {}
            _ => {
                return Err(StateError::Mismatch(
                    "an input saved with a watermark strategy and restored without, or the reverse"
                        .to_owned(),
                ))
            }
        }
        self.clock_record = clock;
        if matches!(hold, Hold::Arrival) != matches!(self.hold, Hold::Arrival) {
            return Err(StateError::Mismatch(
                "an input saved in one order (sorted, arrival) and restored in the other"
                    .to_owned(),
            ));
        }
        self.edges
            .restore(edges)
            .map_err(|message| StateError::Unreadable {
                operator: NAME,
                message,
            })?;
        (self.app, self.high, self.since_cti) = (app, high, since_cti);
        self.hold = hold;
        self.counters = counters;
        (self.finished, self.items_seen) = (finished, items_seen);
        Ok(())
    }
}
