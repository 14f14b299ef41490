//! A driver's state in a snapshot: every input's ingress, the operator graph, and what the
//! driver keeps of the import graph. Taken between two calls, it holds no result: outputs
//! are taken first ([`Driver::take_output`]); restored into a driver built from the same
//! query, that driver continues exactly as the one saved would have.

use serde::{Deserialize, Serialize};

use punctual_core::ops::state::{read, write};
use punctual_core::ops::StateError;

use crate::Driver;

/// The state as saved.
#[derive(Serialize, Deserialize)]
struct Saved {
    query: String,
    inputs: Vec<(String, Vec<u8>)>,
    withheld: Vec<bool>,
    closed: bool,
    graph: Vec<u8>,
}

impl Driver {
    /// The state of the whole query, for a snapshot: each input's ingress (application time,
    /// CTI generation, reorder buffer, open edges, counters) and every operator's state. Take
    /// every output first ([`Driver::take_output`]). Refused with the reason if an operator or
    /// an input cannot save its state (a watermark strategy reads a clock; see
    /// [`UnaryOperator::save_state`](punctual_core::ops::UnaryOperator::save_state)).
    pub fn save_state(&self) -> Result<Vec<u8>, StateError> {
        let inputs = self
            .inputs
            .iter()
            .map(|i| Ok((i.name().to_owned(), i.save_state()?)))
            .collect::<Result<Vec<_>, StateError>>()?;
        let saved = Saved {
            query: self.name.clone(),
            inputs,
            withheld: self.withheld.clone(),
            closed: self.closed,
            graph: self.graph.save_state()?,
        };
        let mut out = Vec::new();
        write("query", &saved, &mut out)?;
        Ok(out)
    }

    /// Takes the state [`Driver::save_state`] wrote, on a driver built from the same query
    /// and fed nothing yet. A snapshot of another query (another name, other inputs, other
    /// operators) is refused with what differs.
    pub fn restore_state(&mut self, bytes: &[u8]) -> Result<(), StateError> {
        let saved: Saved = read("query", bytes)?;
        if saved.query != self.name {
            return Err(StateError::Mismatch(format!(
                "it is of query `{}`, this is `{}`",
                saved.query, self.name
            )));
        }
        let names: Vec<&str> = saved.inputs.iter().map(|(n, _)| n.as_str()).collect();
        let ours: Vec<&str> = self.inputs.iter().map(|i| i.name()).collect();
        if names != ours || saved.withheld.len() != self.withheld.len() {
            return Err(StateError::Mismatch(format!(
                "its inputs are {names:?}, the query's {ours:?}"
            )));
        }
        self.graph.restore_state(&saved.graph)?;
        for (input, (_, state)) in self.inputs.iter_mut().zip(&saved.inputs) {
            input.restore_state(state)?;
        }
        self.withheld = saved.withheld;
        self.closed = saved.closed;
        Ok(())
    }
}
