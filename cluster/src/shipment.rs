//! [`Shipment`]: a batch on its way between workers, and how it crosses between processes.

use punctual_core::ops::AnyBatch;

#[cfg(doc)]
use crate::StopSignal;

/// A batch on its way between workers: for edge `edge`, from worker `sender` to `dest`.
pub struct Shipment {
    pub(crate) dest: usize,
    pub(crate) sender: usize,
    pub(crate) edge: usize,
    pub(crate) batch: Carried,
}

/// The edge index of a shipment that carries no batch but a stop ([`StopSignal`]).
const STOP_EDGE: usize = usize::MAX;

/// A shipment's batch: as it is between threads, as bytes from another process.
pub(crate) enum Carried {
    Batch(Box<dyn AnyBatch>),
    Bytes(Vec<u8>),
}

impl Shipment {
    pub(crate) fn new(dest: usize, sender: usize, edge: usize, batch: Box<dyn AnyBatch>) -> Self {
        Shipment {
            dest,
            sender,
            edge,
            batch: Carried::Batch(batch),
        }
    }
}

impl Shipment {
    /// A stop for worker `dest`, from worker `sender` ([`StopSignal`]).
    pub(crate) fn stop(dest: usize, sender: usize) -> Self {
        Shipment {
            dest,
            sender,
            edge: STOP_EDGE,
            batch: Carried::Bytes(Vec::new()),
        }
    }

    /// Whether it is a stop.
    pub(crate) fn is_stop(&self) -> bool {
        self.edge == STOP_EDGE
    }
}

// Timely serializes what goes to a worker of another process (never between threads).
impl serde::Serialize for Shipment {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let bytes = match &self.batch {
            Carried::Bytes(b) => std::borrow::Cow::Borrowed(b),
            Carried::Batch(b) => {
                std::borrow::Cow::Owned(b.encode().map_err(serde::ser::Error::custom)?)
            }
        };
        serde::Serialize::serialize(
            &(
                self.dest as u64,
                self.sender as u64,
                self.edge as u64,
                &*bytes,
            ),
            s,
        )
    }
}

impl<'de> serde::Deserialize<'de> for Shipment {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let (dest, sender, edge, bytes): (u64, u64, u64, Vec<u8>) =
            serde::Deserialize::deserialize(d)?;
        Ok(Shipment {
            dest: dest as usize,
            sender: sender as usize,
            edge: edge as usize,
            batch: Carried::Bytes(bytes),
        })
    }
}
