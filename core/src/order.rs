//! How a stream's events are ordered between its CTIs: sorted by sync time (the ordinary
//! stream), or in arrival order (an *unordered* stream).
//!
//! Both kinds keep the CTI promise: every event after `CTI(t)` has sync time `>= t`. An
//! ordered stream also keeps its events sorted by sync time, so every event before `CTI(t)` has
//! sync `< t`. An unordered stream's events are released as they arrive: between two CTIs they
//! are in no particular order, and an event may come before the CTI it will be under. Only
//! operators whose results do not depend on the order of their input between CTIs take an
//! unordered stream (filter, map, hopping and tumbling windows, the join's left side); the
//! typed [`Stream`](crate::ops::Stream) carries the order as its second type parameter
//! ([`Ordered`] or [`Unordered`]), so the compiler refuses the others.

use std::fmt::Debug;

/// The order of a stream's events between its CTIs, as a value: what [`Order::ORDER`] says of
/// a type, for code that is not generic over it (a batch's invariant check, an ingress'
/// configuration).
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Default)]
pub enum EventOrder {
    /// Sorted by sync time, each event before the first CTI above it.
    #[default]
    Sorted,
    /// In arrival order: every event after `CTI(t)` has sync `>= t`, nothing more.
    Arrival,
}

mod sealed {
    pub trait Sealed {}
    impl Sealed for super::Ordered {}
    impl Sealed for super::Unordered {}
}

/// The order of a stream, as a type: [`Ordered`] or [`Unordered`]. Sealed: there are only
/// these two.
pub trait Order: sealed::Sealed + Copy + Default + Debug + Send + Sync + 'static {
    /// The order as a value.
    const ORDER: EventOrder;
}

/// An ordinary stream: events sorted by sync time and sealed by CTIs (every event before
/// `CTI(t)` has sync `< t`, every event after it sync `>= t`).
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Default)]
pub struct Ordered;

/// An unordered stream: events in arrival order between CTIs, each released as soon as it is
/// accepted (or, past an operator, as soon as it is final); every event after `CTI(t)` still
/// has sync `>= t`.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Default)]
pub struct Unordered;

impl Order for Ordered {
    const ORDER: EventOrder = EventOrder::Sorted;
}

impl Order for Unordered {
    const ORDER: EventOrder = EventOrder::Arrival;
}
