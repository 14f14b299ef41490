//! A batch as bytes, for batches that travel between processes: its columns and CTI marks in
//! bincode. Every payload type is `Serialize + DeserializeOwned` ([`Payload`](crate::ops::Payload)),
//! so every batch of a query can travel; the compact format writes times as ticks.

use serde::de::DeserializeOwned;
use serde::Serialize;

use super::{Batch, CtiMark};
use crate::time::Time;

/// Why bytes are not a batch, or a batch cannot be written.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct WireError(String);

impl<P: Serialize> Batch<P> {
    /// The batch as bytes ([`Batch::from_bytes`] reads them back).
    ///
    /// ```
    /// use punctual_core::{Batch, Time};
    /// let mut b = Batch::new();
    /// b.push_point(Time::from_ticks(2), ("a".to_owned(), 7u32));
    /// b.push_cti(Time::from_ticks(3));
    /// let bytes = b.to_bytes().unwrap();
    /// assert_eq!(Batch::from_bytes(&bytes), Ok(b));
    /// ```
    pub fn to_bytes(&self) -> Result<Vec<u8>, WireError> {
        let wire = (&self.sync, &self.other, &self.ctis, &self.payload);
        bincode::serialize(&wire).map_err(|e| WireError(format!("cannot write a batch: {e}")))
    }
}

impl<P: DeserializeOwned> Batch<P> {
    /// Reads a batch that [`Batch::to_bytes`] wrote; bytes that are not one (cut short,
    /// columns of different lengths, CTIs out of order) are an error, never a panic.
    pub fn from_bytes(bytes: &[u8]) -> Result<Batch<P>, WireError> {
        type Wire<P> = (Vec<Time>, Vec<Time>, Vec<CtiMark>, Vec<P>);
        let (sync, other, ctis, payload): Wire<P> = bincode::deserialize(bytes)
            .map_err(|e| WireError(format!("cannot read a batch: {e}")))?;
        if sync.len() != other.len() || sync.len() != payload.len() {
            return Err(WireError(format!(
                "cannot read a batch: {} sync times, {} other times, {} payloads",
                sync.len(),
                other.len(),
                payload.len()
            )));
        }
        let in_order = ctis.windows(2).all(|w| {
            let (a, b) = (w[0], w[1]);
            a.after <= b.after && a.time < b.time
        });
        if !in_order || ctis.last().is_some_and(|m| m.after > sync.len()) {
            return Err(WireError(
                "cannot read a batch: its CTIs are out of order or past its events".to_owned(),
            ));
        }
        Ok(Batch {
            sync,
            other,
            payload,
            ctis,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_batch_crosses_as_bytes_with_its_ctis_and_infinite_times() {
        let t = Time::from_ticks;
        let mut b = Batch::new();
        b.push_cti(t(1));
        b.push_point(t(2), (7u32, "x".to_owned()));
        b.push_cti(t(3));
        b.push_event(t(4), Time::INF, (8, "y".to_owned()));
        b.push_cti(Time::INF);
        let bytes = b.to_bytes().expect("writes");
        assert_eq!(Batch::from_bytes(&bytes).as_ref(), Ok(&b));
        // Cut short, or of another payload type: an error, not a panic.
        assert!(Batch::<(u32, String)>::from_bytes(&bytes[..bytes.len() / 2]).is_err());
        assert!(Batch::<(u64, u64)>::from_bytes(&bytes).is_err());
    }

    #[test]
    fn forged_columns_are_refused() {
        let t = Time::from_ticks;
        let forged: (Vec<Time>, Vec<Time>, Vec<CtiMark>, Vec<u8>) =
            (vec![t(1)], vec![t(2), t(3)], Vec::new(), vec![1]);
        let bytes = bincode::serialize(&forged).expect("writes");
        assert!(Batch::<u8>::from_bytes(&bytes).is_err());
        let mark = |after, at| CtiMark { after, time: t(at) };
        let forged: (Vec<Time>, Vec<Time>, Vec<CtiMark>, Vec<u8>) = (
            vec![t(1)],
            vec![t(2)],
            vec![mark(0, 5), mark(1, 4)],
            vec![1],
        );
        let bytes = bincode::serialize(&forged).expect("writes");
        assert!(Batch::<u8>::from_bytes(&bytes).is_err());
    }
}
