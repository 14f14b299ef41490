//! A split graph's routing state in a snapshot: on each edge, the CTI each sender has passed,
//! the CTI delivered, and the merged events no CTI has passed yet.

use serde::{Deserialize, Serialize};

use super::super::state::StateError;
use super::Graph;
use crate::time::Time;

/// One edge as saved.
#[derive(Serialize, Deserialize)]
pub(in crate::ops) struct SavedEdge {
    latest: Vec<Time>,
    emitted: Time,
    pending: Option<Vec<u8>>,
}

impl Graph {
    /// The routing state of a split graph (`None` for a whole one). Refused while an edge
    /// holds what was not taken to be sent, or an input's stream what was not taken to be
    /// carried: the executor takes both after every call.
    pub(in crate::ops) fn save_split(&self) -> Result<Option<Vec<SavedEdge>>, StateError> {
        let Some(split) = self.split.as_ref() else {
            return Ok(None);
        };
        if !split.injected.is_empty() {
            return Err(StateError::NotNow(
                "an input's stream holds what was not taken to the other workers".to_owned(),
            ));
        }
        let mut edges = Vec::with_capacity(split.edges.len());
        for (i, slot) in split.edges.iter().enumerate() {
            if slot.outbox.as_ref().is_some_and(|b| !b.is_empty()) {
                return Err(StateError::NotNow(format!(
                    "edge {i} holds what was not taken to the other workers"
                )));
            }
            let pending = match (&slot.pending, self.edge_batch(i)) {
                (Some(p), Some(like)) => Some(like.save_release_buffer(p.as_ref())?),
                _ => None,
            };
            edges.push(SavedEdge {
                latest: slot.latest.clone(),
                emitted: slot.emitted,
                pending,
            });
        }
        Ok(Some(edges))
    }

    /// Restores what [`Graph::save_split`] saved into a graph split the same way.
    pub(in crate::ops) fn restore_split(
        &mut self,
        saved: Option<Vec<SavedEdge>>,
    ) -> Result<(), StateError> {
        let workers = self.split.as_ref().map(|s| s.workers);
        let saved = match (saved, workers) {
            (None, None) => return Ok(()),
            (Some(saved), Some(_)) => saved,
            (Some(_), None) => {
                return Err(StateError::Mismatch(
                    "it is of one worker of several, the query runs on one".to_owned(),
                ))
            }
            (None, Some(_)) => {
                return Err(StateError::Mismatch(
                    "it is of a query on one worker, this one runs on several".to_owned(),
                ))
            }
        };
        let edges = self.split.as_ref().map_or(0, |s| s.edges.len());
        if saved.len() != edges {
            return Err(StateError::Mismatch(format!(
                "it has {} edges between the workers, the query {edges}",
                saved.len()
            )));
        }
        for (i, edge) in saved.into_iter().enumerate() {
            let pending = match (edge.pending, self.edge_batch(i)) {
                (Some(bytes), Some(like)) => Some(like.restore_release_buffer(&bytes)?),
                _ => None,
            };
            let Some(slot) = self.split.as_mut().and_then(|s| s.edges.get_mut(i)) else {
                continue;
            };
            if edge.latest.len() != slot.latest.len() {
                return Err(StateError::Mismatch(format!(
                    "edge {i} has {} senders, the query's {}",
                    edge.latest.len(),
                    slot.latest.len()
                )));
            }
            slot.latest = edge.latest;
            slot.emitted = edge.emitted;
            slot.pending = pending;
        }
        Ok(())
    }
}
