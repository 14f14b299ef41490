//! How batches cross processes: a [`Codecs`] registry, one codec per payload type.

use std::any::TypeId;
use std::collections::HashMap;
use std::sync::Arc;

use punctual_core::ops::AnyBatch;
use punctual_core::{Batch, Time};
use serde::de::DeserializeOwned;
use serde::Serialize;

/// Encodes and decodes batches of one payload type.
pub(crate) trait Codec: Send + Sync {
    fn encode(&self, batch: &dyn AnyBatch) -> Result<Vec<u8>, String>;
    fn decode(&self, bytes: &[u8]) -> Result<Box<dyn AnyBatch>, String>;
}

/// Batches of `P` in bincode (`JSON = false`) or JSON (`JSON = true`, for payloads whose
/// `Deserialize` needs a self-describing format).
struct Serde<P, const JSON: bool>(std::marker::PhantomData<fn() -> P>);

/// A batch as bytes: sync and other times in ticks, the CTIs (after how many events, time),
/// the payloads.
type Wire<P> = (Vec<i64>, Vec<i64>, Vec<(u64, i64)>, Vec<P>);

impl<P: Serialize + DeserializeOwned + Clone + Send + 'static, const JSON: bool> Codec
    for Serde<P, JSON>
{
    fn encode(&self, batch: &dyn AnyBatch) -> Result<Vec<u8>, String> {
        let b = batch
            .as_any()
            .downcast_ref::<Batch<P>>()
            .ok_or("a batch of another payload type")?;
        let ticks = |ts: &[Time]| ts.iter().map(|t| t.ticks()).collect::<Vec<_>>();
        let ctis: Vec<(u64, i64)> = b
            .ctis()
            .iter()
            .map(|m| (m.after as u64, m.time.ticks()))
            .collect();
        let wire = (ticks(b.sync()), ticks(b.other()), ctis, b.payloads());
        if JSON {
            serde_json::to_vec(&wire).map_err(|e| e.to_string())
        } else {
            bincode::serialize(&wire).map_err(|e| e.to_string())
        }
    }

    fn decode(&self, bytes: &[u8]) -> Result<Box<dyn AnyBatch>, String> {
        let (sync, other, ctis, payloads): Wire<P> = if JSON {
            serde_json::from_slice(bytes).map_err(|e| e.to_string())?
        } else {
            bincode::deserialize(bytes).map_err(|e| e.to_string())?
        };
        if sync.len() != other.len() || sync.len() != payloads.len() {
            return Err("a batch whose columns differ in length".to_owned());
        }
        let mut batch = Batch::with_capacity(payloads.len());
        let mut marks = ctis.into_iter().peekable();
        for (i, ((s, o), p)) in sync.into_iter().zip(other).zip(payloads).enumerate() {
            while let Some((_, t)) = marks.next_if(|m| m.0 == i as u64) {
                batch.push_cti(Time::from_ticks(t));
            }
            batch.push_event(Time::from_ticks(s), Time::from_ticks(o), p);
        }
        for (_, t) in marks {
            batch.push_cti(Time::from_ticks(t));
        }
        Ok(Box::new(batch))
    }
}

/// The payload types whose batches may cross processes, each with its codec: every
/// type that travels on an edge between workers (an input's stream, the input of an
/// operator placed by key or on one worker, an output) when the workers run in several
/// processes. A run on several processes checks at its start that every such type is here,
/// and names the ones missing. Workers that are threads of one process need none.
///
/// ```
/// use punctual_cluster::Codecs;
/// let codecs = Codecs::new().with::<(u32, i64)>().with_json::<punctual_core::Row>();
/// assert!(codecs.knows::<(u32, i64)>() && codecs.knows::<punctual_core::Row>());
/// ```
#[derive(Clone, Default)]
pub struct Codecs {
    map: HashMap<TypeId, Arc<dyn Codec>>,
}

impl std::fmt::Debug for Codecs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Codecs")
            .field("types", &self.map.len())
            .finish()
    }
}

impl Codecs {
    /// No codec.
    pub fn new() -> Self {
        Codecs::default()
    }

    /// Adds payload type `P`, sent in bincode (compact and fast; for types whose
    /// `Deserialize` does not need a self-describing format).
    pub fn with<P: Serialize + DeserializeOwned + Clone + Send + 'static>(mut self) -> Self {
        self.map.insert(
            TypeId::of::<Batch<P>>(),
            Arc::new(Serde::<P, false>(std::marker::PhantomData)),
        );
        self
    }

    /// Adds payload type `P`, sent as JSON: for types whose `Deserialize` needs a
    /// self-describing format (untagged enums, [`Row`](punctual_core::Row)).
    pub fn with_json<P: Serialize + DeserializeOwned + Clone + Send + 'static>(mut self) -> Self {
        self.map.insert(
            TypeId::of::<Batch<P>>(),
            Arc::new(Serde::<P, true>(std::marker::PhantomData)),
        );
        self
    }

    /// Whether payload type `P` has a codec.
    pub fn knows<P: 'static>(&self) -> bool {
        self.map.contains_key(&TypeId::of::<Batch<P>>())
    }

    /// The codec for batches like `batch`.
    pub(crate) fn get(&self, batch: &dyn AnyBatch) -> Option<Arc<dyn Codec>> {
        self.map.get(&batch.as_any().type_id()).cloned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_batch_crosses_as_bytes_with_its_ctis() {
        let t = Time::from_ticks;
        let mut b = Batch::new();
        b.push_cti(t(1));
        b.push_point(t(2), (7u32, "x".to_owned()));
        b.push_cti(t(3));
        b.push_event(t(4), Time::INF, (8, "y".to_owned()));
        for codecs in [
            Codecs::new().with::<(u32, String)>(),
            Codecs::new().with_json::<(u32, String)>(),
        ] {
            let codec = codecs.get(&b).expect("registered");
            let bytes = codec.encode(&b).expect("encodes");
            let back = codec.decode(&bytes).expect("decodes");
            let back = back
                .as_any()
                .downcast_ref::<Batch<(u32, String)>>()
                .expect("its type");
            assert_eq!(back, &b);
            assert!(codec.decode(&bytes[..bytes.len() / 2]).is_err());
        }
    }
}
