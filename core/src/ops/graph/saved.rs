//! The graph's state in a snapshot: each node's operator state and the CTIs and counts the
//! graph keeps for it.

use serde::{Deserialize, Serialize};

use super::super::split::SavedEdge;
use super::super::state::{self, StateError};
use super::Graph;
use crate::time::Time;

/// One node as saved.
#[derive(Serialize, Deserialize)]
struct SavedSlot {
    /// The operator's name, to check the graph it is restored into.
    name: String,
    input_ctis: Vec<Time>,
    cti: Time,
    events_out: u64,
    state: Vec<u8>,
}

impl Graph {
    /// The state of every node, to be restored into a graph built by the same query
    /// ([`Graph::restore_state`]) that then continues exactly as this one would. Refused if an
    /// operator cannot save its state ([`StateError::Unsupported`]), or if an output holds
    /// results not yet taken ([`Graph::take_output`]). Of one worker of several
    /// ([`Graph::split`]), it holds that worker's share and what it merges from the others;
    /// the executor keeps what is on its way between them.
    pub fn save_state(&self) -> Result<Vec<u8>, StateError> {
        let mut slots = Vec::with_capacity(self.slots.len());
        for (i, s) in self.slots.iter().enumerate() {
            if s.kept.as_ref().is_some_and(|k| !k.is_empty()) {
                return Err(StateError::NotNow(format!(
                    "output node {i} ({}) holds results not yet taken",
                    s.node.as_ref().map_or("an input", |n| n.name())
                )));
            }
            let mut bytes = Vec::new();
            if let Some(node) = &s.node {
                node.save_state(&mut bytes)?;
            }
            slots.push(SavedSlot {
                name: s.node.as_ref().map_or("input", |n| n.name()).to_owned(),
                input_ctis: s.input_ctis.clone(),
                cti: s.cti,
                events_out: s.events_out,
                state: bytes,
            });
        }
        let split = self.save_split()?;
        let mut out = Vec::new();
        state::write("graph", &(slots, split), &mut out)?;
        Ok(out)
    }

    /// Restores what [`Graph::save_state`] saved, into a graph built by the same query and
    /// fed nothing yet; refused, the graph unchanged or partly restored (to be dropped), if
    /// the snapshot is of another graph.
    pub fn restore_state(&mut self, bytes: &[u8]) -> Result<(), StateError> {
        let (slots, split): (Vec<SavedSlot>, Option<Vec<SavedEdge>>) = state::read("graph", bytes)?;
        if slots.len() != self.slots.len() {
            return Err(StateError::Mismatch(format!(
                "it has {} nodes, the query {}",
                slots.len(),
                self.slots.len()
            )));
        }
        for (i, (saved, slot)) in slots.into_iter().zip(&mut self.slots).enumerate() {
            let name = slot.node.as_ref().map_or("input", |n| n.name());
            if saved.name != name || saved.input_ctis.len() != slot.input_ctis.len() {
                return Err(StateError::Mismatch(format!(
                    "node {i} is a {} in the snapshot, a {name} in the query",
                    saved.name
                )));
            }
            if let Some(node) = &mut slot.node {
                node.restore_state(&saved.state)?;
            }
            slot.input_ctis = saved.input_ctis;
            slot.cti = saved.cti;
            slot.events_out = saved.events_out;
        }
        self.restore_split(split)
    }
}
