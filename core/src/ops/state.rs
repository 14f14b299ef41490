//! Operator state in snapshots: what an operator writes when the query takes a snapshot at a
//! CTI, and reads back into an operator built the same way, so that the restored operator
//! continues exactly as the one saved would have ([`UnaryOperator::save_state`],
//! [`Graph::save_state`](super::Graph::save_state)).
//!
//! An operator saves its state, not its functions: a key function, an aggregate's settings
//! and a combine function come from the query, built again on restore. Payloads, keys
//! ([`Key`]) and aggregate states ([`Aggregate::State`](super::Aggregate::State)) are written
//! with serde, in bincode.
//!
//! [`UnaryOperator::save_state`]: super::UnaryOperator::save_state

use serde::de::DeserializeOwned;
use serde::Serialize;

use super::Payload;

/// Why a snapshot of operator state could not be written or read back.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum StateError {
    /// The operator keeps state it cannot save yet: a query with it cannot take snapshots.
    #[error("the {0} operator cannot save its state in a snapshot")]
    Unsupported(&'static str),
    /// The bytes are not the state of this operator (a snapshot of another query, or damaged).
    #[error("the state of the {operator} operator cannot be read back: {message}")]
    Unreadable {
        /// The operator.
        operator: &'static str,
        /// What was wrong.
        message: String,
    },
    /// A snapshot cannot be taken at this moment.
    #[error("a snapshot cannot be taken now: {0}")]
    NotNow(String),
    /// The snapshot does not fit the graph it is restored into.
    #[error("the snapshot does not fit this query: {0}")]
    Mismatch(String),
}

/// What a group key needs: to be hashed and compared (to find its group) and a payload's
/// bounds ([`Payload`]: to go into a snapshot, and between workers).
///
/// ```
/// use punctual_core::ops::Key;
/// fn groups_by<K: Key>() {}
/// groups_by::<(u32, String)>();
/// ```
pub trait Key: Payload + std::hash::Hash + Eq {}

impl<T: Payload + std::hash::Hash + Eq> Key for T {}

/// Appends `value` to `out`, in the format every operator's state uses.
pub fn write<T: Serialize + ?Sized>(
    operator: &'static str,
    value: &T,
    out: &mut Vec<u8>,
) -> Result<(), StateError> {
    bincode::serialize_into(out, value).map_err(|e| StateError::Unreadable {
        operator,
        message: format!("cannot be written: {e}"),
    })
}

/// Reads back what [`write()`] wrote: the whole of `bytes`, nothing left over.
pub fn read<T: DeserializeOwned>(operator: &'static str, bytes: &[u8]) -> Result<T, StateError> {
    use bincode::Options;
    bincode::DefaultOptions::new()
        .with_fixint_encoding()
        .with_limit(bytes.len() as u64)
        .deserialize(bytes)
        .map_err(|e| StateError::Unreadable {
            operator,
            message: e.to_string(),
        })
}
