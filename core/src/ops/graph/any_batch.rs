//! [`AnyBatch`]: a batch of any payload type, as the graph's type-erased nodes exchange them.

use std::any::Any;

use super::output;
use crate::batch::{Batch, WireError};
use crate::ops::state::{self, StateError};
use crate::ops::Payload;
use crate::order::EventOrder;
use crate::time::Time;

/// A batch of any payload type, as nodes exchange them.
pub trait AnyBatch: Any + Send {
    /// Whether it holds neither events nor CTIs.
    fn is_empty(&self) -> bool;
    /// Empties it, keeping capacity.
    fn clear(&mut self);
    /// As `&dyn Any`, for downcasting.
    fn as_any(&self) -> &dyn Any;
    /// As `&mut dyn Any`, for downcasting.
    fn as_any_mut(&mut self) -> &mut dyn Any;
    /// Moves everything into `dst`, a batch of the same type.
    fn move_into(&mut self, dst: &mut dyn Any);
    /// The last CTI in the batch, if any.
    fn last_cti(&self) -> Option<Time>;
    /// How many events it holds.
    fn events(&self) -> usize;
    /// Swaps contents with `other`, a batch of the same type.
    fn swap_with(&mut self, other: &mut dyn Any);
    /// Whether it keeps the invariants of a stream of this `order` ([`Batch::check`]) and
    /// comes after `cti`, the stream's last CTI (no event below it).
    fn check(&self, order: EventOrder, cti: Time) -> Result<(), String>;
    /// An empty batch of the same type.
    fn new_empty(&self) -> Box<dyn AnyBatch>;
    /// The name of its payload type, for messages.
    fn payload_name(&self) -> &'static str;
    /// An empty release buffer of its payload type (see [`AnyBatch::merge_from`]).
    fn new_release_buffer(&self) -> Box<dyn Any + Send>;
    /// A release buffer of its payload type ([`AnyBatch::new_release_buffer`]) as bytes, for
    /// a snapshot; refused if `buffer` is of another type.
    fn save_release_buffer(&self, buffer: &dyn Any) -> Result<Vec<u8>, StateError>;
    /// A release buffer read back from what [`AnyBatch::save_release_buffer`] wrote.
    fn restore_release_buffer(&self, bytes: &[u8]) -> Result<Box<dyn Any + Send>, StateError>;
    /// Appends a copy of everything to `dst`, a batch of the same type.
    fn copy_into(&self, dst: &mut dyn Any);
    /// Splits it over `dests` (empty batches of the same type, one per worker): every event
    /// to worker `to`, every CTI to each (see [`Graph::split`](crate::ops::Graph::split)); it is left empty.
    fn scatter_to(&mut self, to: usize, dests: &mut [Box<dyn AnyBatch>]);
    /// Merges what several workers sent in one step (`runs`, batches of the same type, with
    /// the sender's index) into this batch, as one stream: the CTI that every sender has
    /// passed (`latest`, by sender) whenever it passes `emitted` (see [`Graph::split`](crate::ops::Graph::split)); for
    /// an ordered stream, events wait in `pending` (a release buffer of the payload type,
    /// [`AnyBatch::new_release_buffer`]) until a CTI passes them, as one operator would hold
    /// them.
    fn merge_from(
        &mut self,
        runs: &mut [(usize, Box<dyn AnyBatch>)],
        latest: &mut [Time],
        emitted: &mut Time,
        pending: Option<&mut dyn Any>,
    );
    /// Its contents as bytes, for a batch that travels to another process
    /// ([`Batch::to_bytes`]).
    fn encode(&self) -> Result<Vec<u8>, WireError>;
    /// A batch of the same payload type read from bytes that [`AnyBatch::encode`] wrote
    /// ([`Batch::from_bytes`]).
    fn decode(&self, bytes: &[u8]) -> Result<Box<dyn AnyBatch>, WireError>;
}

impl<P: Payload> AnyBatch for Batch<P> {
    fn encode(&self) -> Result<Vec<u8>, WireError> {
        self.to_bytes()
    }
    fn decode(&self, bytes: &[u8]) -> Result<Box<dyn AnyBatch>, WireError> {
        Ok(Box::new(Batch::<P>::from_bytes(bytes)?))
    }
    fn is_empty(&self) -> bool {
        Batch::is_empty(self)
    }
    fn clear(&mut self) {
        Batch::clear(self)
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
    fn as_any_mut(&mut self) -> &mut dyn Any {
        self
    }
    fn move_into(&mut self, dst: &mut dyn Any) {
        output::<P>(dst).append(self);
    }
    fn last_cti(&self) -> Option<Time> {
        Batch::last_cti(self)
    }
    fn events(&self) -> usize {
        Batch::len(self)
    }
    fn swap_with(&mut self, other: &mut dyn Any) {
        std::mem::swap(self, output::<P>(other));
    }
    fn check(&self, order: EventOrder, cti: Time) -> Result<(), String> {
        Batch::check(self, order)?;
        match self.sync().iter().find(|&&s| s < cti) {
            Some(s) => Err(format!("an event at {s:?} after CTI({cti:?})")),
            None => Ok(()),
        }
    }
    fn new_empty(&self) -> Box<dyn AnyBatch> {
        Box::new(Batch::<P>::new())
    }
    fn payload_name(&self) -> &'static str {
        std::any::type_name::<P>()
    }
    fn new_release_buffer(&self) -> Box<dyn Any + Send> {
        Box::new(crate::ops::ReleaseBuffer::<P>::new())
    }
    fn save_release_buffer(&self, buffer: &dyn Any) -> Result<Vec<u8>, StateError> {
        let buffer = buffer
            .downcast_ref::<crate::ops::ReleaseBuffer<P>>()
            .ok_or_else(|| StateError::Mismatch("a merge buffer of another type".to_owned()))?;
        let mut out = Vec::new();
        state::write("merge", buffer, &mut out)?;
        Ok(out)
    }
    fn restore_release_buffer(&self, bytes: &[u8]) -> Result<Box<dyn Any + Send>, StateError> {
        let buffer: crate::ops::ReleaseBuffer<P> = state::read("merge", bytes)?;
        Ok(Box::new(buffer))
    }
    fn copy_into(&self, dst: &mut dyn Any) {
        output::<P>(dst).append(&mut self.clone());
    }
    fn scatter_to(&mut self, to: usize, dests: &mut [Box<dyn AnyBatch>]) {
        // Every event to one worker: the batch itself goes there (its buffer stays here), the
        // others get the CTIs.
        for (w, d) in dests.iter_mut().enumerate() {
            if w != to {
                let d = output::<P>(d.as_any_mut());
                for m in self.ctis() {
                    d.push_cti(m.time);
                }
            }
        }
        match dests.get_mut(to) {
            Some(d) => std::mem::swap(self, output::<P>(d.as_any_mut())),
            None => self.clear(),
        }
    }
    fn merge_from(
        &mut self,
        runs: &mut [(usize, Box<dyn AnyBatch>)],
        latest: &mut [Time],
        emitted: &mut Time,
        pending: Option<&mut dyn Any>,
    ) {
        let mut typed: Vec<(usize, Batch<P>)> = runs
            .iter_mut()
            .map(|(sender, b)| (*sender, std::mem::take(output::<P>(b.as_any_mut()))))
            .collect();
        let pending = pending.and_then(|p| p.downcast_mut::<crate::ops::ReleaseBuffer<P>>());
        self.merge_runs(&mut typed, latest, emitted, pending);
    }
}
