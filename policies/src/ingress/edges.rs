//! The open start edges of a stream, by the start they came with: an end edge is matched to
//! its start edge by that start and an equal payload, and learns what became of it (accepted
//! at some start, dangling, or dropped; see [`StartEdge`]).
//!
//! Payloads are only comparable for equality, so matching is a scan of the open edges that
//! share the end edge's start. With an edge key ([`Ingress::index_edges_by`]), the scan covers
//! only those whose payloads also share the key: many edges at one start (a snapshot of
//! reference data) match in constant time.
//!
//! [`Ingress::index_edges_by`]: super::Ingress::index_edges_by

use std::collections::HashMap;
use std::sync::Arc;

use punctual_core::Time;

use super::policy::StartEdge;

/// A function that gives equal payloads equal keys, for matching end edges to start edges
/// without a scan (see [`Ingress::index_edges_by`](super::Ingress::index_edges_by)).
pub type EdgeKey<P> = Arc<dyn Fn(&P) -> u64 + Send + Sync>;

#[derive(Debug)]
struct OpenEdge<P> {
    payload: P,
    state: StartEdge,
}

/// Where a found start edge is: its bucket's key and its place in it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct EdgeRef {
    key: u64,
    idx: usize,
}

/// The start edges whose end edge has not come yet.
pub(crate) struct OpenEdges<P> {
    by_start: HashMap<(Time, u64), Vec<OpenEdge<P>>>,
    key: Option<EdgeKey<P>>,
    len: usize,
}

impl<P> std::fmt::Debug for OpenEdges<P> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OpenEdges")
            .field("starts", &self.by_start.len())
            .field("keyed", &self.key.is_some())
            .finish()
    }
}

impl<P: PartialEq> OpenEdges<P> {
    pub(crate) fn new() -> Self {
        OpenEdges {
            by_start: HashMap::new(),
            key: None,
            len: 0,
        }
    }

    /// Matches edges by `key` as well as by start (set before the first edge).
    pub(crate) fn index_by(&mut self, key: EdgeKey<P>) {
        self.key = Some(key);
    }

    /// How many start edges are open.
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    fn key_of(&self, payload: &P) -> u64 {
        self.key.as_ref().map_or(0, |k| k(payload))
    }

    /// Records a start edge that came with start `start`.
    pub(crate) fn add(&mut self, start: Time, payload: P, state: StartEdge) {
        let key = self.key_of(&payload);
        self.by_start
            .entry((start, key))
            .or_default()
            .push(OpenEdge { payload, state });
        self.len += 1;
    }

    /// The start edge an end edge with this start and payload closes (the first one that
    /// came, among equal ones): where it is, and its state.
    pub(crate) fn find(&self, start: Time, payload: &P) -> Option<(EdgeRef, StartEdge)> {
        let key = self.key_of(payload);
        let list = self.by_start.get(&(start, key))?;
        let idx = list.iter().position(|e| e.payload == *payload)?;
        Some((EdgeRef { key, idx }, list[idx].state))
    }

    /// Changes the state of a found edge.
    pub(crate) fn set_state(&mut self, start: Time, at: EdgeRef, state: StartEdge) {
        if let Some(edge) = self
            .by_start
            .get_mut(&(start, at.key))
            .and_then(|l| l.get_mut(at.idx))
        {
            edge.state = state;
        }
    }

    /// Forgets a found edge (its end edge came).
    pub(crate) fn remove(&mut self, start: Time, at: EdgeRef) {
        if let Some(list) = self.by_start.get_mut(&(start, at.key)) {
            if at.idx < list.len() {
                list.remove(at.idx);
                self.len -= 1;
            }
            if list.is_empty() {
                self.by_start.remove(&(start, at.key));
            }
        }
    }
}
