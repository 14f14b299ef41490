//! What operators hold ([`Held`]) and drop ([`DropLog`]), as diagnostics read them.

use std::any::Any;

use crate::event::EventKind;
use crate::time::Time;

use super::{OperatorDrop, ReleaseBuffer};

/// What an operator holds when it is asked ([`UnaryOperator::held`](super::UnaryOperator::held)): an event kept as state
/// (a join's side, a window's member), a result waiting for the output CTI, or an open group
/// (a window not closed yet, a key's state).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HeldWhat {
    /// An input event kept as state.
    Event,
    /// A result computed and waiting for the output CTI.
    Result,
    /// An open window or a key's state.
    Group,
}

impl HeldWhat {
    /// `event`, `result` or `group`.
    pub fn as_str(self) -> &'static str {
        match self {
            HeldWhat::Event => "event",
            HeldWhat::Result => "result",
            HeldWhat::Group => "group",
        }
    }
}

/// One thing an operator holds: what it is, its lifetime `[start, end)` as far as known
/// (`end` is `+inf` while it is open), and its payload, typed as the operator holds it (an
/// input's or the output's payload type, or `()` for a group), for a reader that knows the
/// type to show it.
#[derive(Clone, Copy)]
pub struct Held<'a> {
    /// What it is.
    pub what: HeldWhat,
    /// Its start.
    pub start: Time,
    /// Its end (`+inf` while open).
    pub end: Time,
    /// Its payload.
    pub payload: &'a dyn Any,
}

impl std::fmt::Debug for Held<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Held")
            .field("what", &self.what)
            .field("start", &self.start)
            .field("end", &self.end)
            .finish_non_exhaustive()
    }
}

impl<'a> Held<'a> {
    /// A held event or result given in the `(sync, other)` encoding (see [`crate::event`]).
    pub fn encoded(what: HeldWhat, sync: Time, other: Time, payload: &'a dyn Any) -> Self {
        Held {
            what,
            start: sync.min(other),
            end: sync.max(other),
            payload,
        }
    }

    /// Every result a release buffer holds, as [`HeldWhat::Result`].
    pub fn results<P: 'static>(buffer: &'a ReleaseBuffer<P>, f: &mut dyn FnMut(Held<'_>)) {
        buffer.for_each(|s, o, p| f(Held::encoded(HeldWhat::Result, s, o, p)));
    }
}

/// How many unread drops an operator keeps (the count goes on).
pub const MAX_KEPT_DROPS: usize = 1024;

/// An operator's drops: how many, and the first [`MAX_KEPT_DROPS`] not yet taken, with their
/// reasons (what [`UnaryOperator::dropped`] and [`UnaryOperator::take_drops`] answer).
#[derive(Debug, Default, serde::Serialize, serde::Deserialize)]
pub(crate) struct DropLog {
    dropped: u64,
    drops: Vec<OperatorDrop>,
}

impl DropLog {
    /// Counts and records an event the operator does not take.
    pub(crate) fn record(&mut self, kind: EventKind, reason: String) {
        self.dropped += 1;
        if self.drops.len() < MAX_KEPT_DROPS {
            self.drops.push(OperatorDrop { kind, reason });
        }
    }

    /// Events dropped so far.
    pub(crate) fn count(&self) -> u64 {
        self.dropped
    }

    /// Moves the drops not yet taken to `into`.
    pub(crate) fn take(&mut self, into: &mut Vec<OperatorDrop>) {
        into.append(&mut self.drops);
    }
}
