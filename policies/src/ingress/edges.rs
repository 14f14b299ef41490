//! The open start edges of a stream, by the start they came with: an end edge is matched to
//! its start edge by that start and an equal payload, and learns what became of it (accepted
//! at some start, dangling, or dropped; see [`StartEdge`]).

use std::collections::HashMap;

use punctual_core::Time;

use super::policy::StartEdge;

#[derive(Debug)]
struct OpenEdge<P> {
    payload: P,
    state: StartEdge,
}

/// The start edges whose end edge has not come yet.
#[derive(Debug)]
pub(crate) struct OpenEdges<P> {
    by_start: HashMap<Time, Vec<OpenEdge<P>>>,
}

impl<P: PartialEq> OpenEdges<P> {
    pub(crate) fn new() -> Self {
        OpenEdges {
            by_start: HashMap::new(),
        }
    }

    /// Records a start edge that came with start `start`.
    pub(crate) fn add(&mut self, start: Time, payload: P, state: StartEdge) {
        self.by_start
            .entry(start)
            .or_default()
            .push(OpenEdge { payload, state });
    }

    /// The start edge an end edge with this start and payload closes: its index among the
    /// edges of that start, and its state.
    pub(crate) fn find(&self, start: Time, payload: &P) -> Option<(usize, StartEdge)> {
        let list = self.by_start.get(&start)?;
        let idx = list.iter().position(|e| e.payload == *payload)?;
        Some((idx, list[idx].state))
    }

    /// Changes the state of a found edge.
    pub(crate) fn set_state(&mut self, start: Time, idx: usize, state: StartEdge) {
        if let Some(edge) = self.by_start.get_mut(&start).and_then(|l| l.get_mut(idx)) {
            edge.state = state;
        }
    }

    /// Forgets a found edge (its end edge came).
    pub(crate) fn remove(&mut self, start: Time, idx: usize) {
        if let Some(list) = self.by_start.get_mut(&start) {
            if idx < list.len() {
                list.remove(idx);
            }
            if list.is_empty() {
                self.by_start.remove(&start);
            }
        }
    }
}
