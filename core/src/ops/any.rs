//! [`AnyStream`]: a stream whose order is known when the query is built, not when it is
//! compiled.

use crate::order::{EventOrder, Order, Ordered, Unordered};

use super::graph::NodeId;
use super::stream::{QueryGraph, Stream};
use super::Payload;

/// A stream of either order, told apart when the query is built: what code that makes
/// queries from a description (a query language, a job file) holds when an input may be read
/// in arrival order or sorted. Operators are on [`Stream`]: match to use them; outputs bind
/// either (`Query::bind_output` and the engine's `Plan::output` take a `&Stream<P, O>` or an
/// `&AnyStream<P>`).
///
/// ```
/// use punctual_core::ops::{AnyStream, QueryGraph};
/// use punctual_core::{EventOrder, Unordered};
/// let graph = QueryGraph::new();
/// let input = AnyStream::from(&graph.source::<i64, Unordered>());
/// assert_eq!(input.order(), EventOrder::Arrival);
/// let kept = match &input {
///     AnyStream::Ordered(s) => AnyStream::from(s.filter(|v| *v > 0)),
///     AnyStream::Arrival(s) => AnyStream::from(s.filter(|v| *v > 0)),
/// };
/// assert_eq!(kept.order(), EventOrder::Arrival); // a filter keeps the order
/// let sorted = kept.ordered(); // a reorder: events held until a CTI passes them
/// ```
#[derive(Clone, Debug)]
pub enum AnyStream<P> {
    /// Events sorted by sync time between CTIs.
    Ordered(Stream<P, Ordered>),
    /// Events in arrival order between CTIs.
    Arrival(Stream<P, Unordered>),
}

impl<P: Payload> AnyStream<P> {
    /// The stream sorted: itself if it is, else through [`Stream::ordered`].
    pub fn ordered(&self) -> Stream<P> {
        match self {
            AnyStream::Ordered(s) => s.clone(),
            AnyStream::Arrival(s) => s.ordered(),
        }
    }

    /// The order of its events between CTIs.
    pub fn order(&self) -> EventOrder {
        match self {
            AnyStream::Ordered(_) => EventOrder::Sorted,
            AnyStream::Arrival(_) => EventOrder::Arrival,
        }
    }

    /// Its node in the graph.
    pub fn node(&self) -> NodeId {
        match self {
            AnyStream::Ordered(s) => s.node(),
            AnyStream::Arrival(s) => s.node(),
        }
    }

    /// The graph it belongs to.
    pub fn graph(&self) -> &QueryGraph {
        match self {
            AnyStream::Ordered(s) => s.graph(),
            AnyStream::Arrival(s) => s.graph(),
        }
    }
}

impl<P: Payload, O: Order> From<&Stream<P, O>> for AnyStream<P> {
    fn from(s: &Stream<P, O>) -> Self {
        match O::ORDER {
            EventOrder::Sorted => AnyStream::Ordered(s.graph().stream(s.node())),
            EventOrder::Arrival => AnyStream::Arrival(s.graph().stream(s.node())),
        }
    }
}

impl<P: Payload, O: Order> From<Stream<P, O>> for AnyStream<P> {
    fn from(s: Stream<P, O>) -> Self {
        AnyStream::from(&s)
    }
}

impl<P: Payload> From<&AnyStream<P>> for AnyStream<P> {
    fn from(s: &AnyStream<P>) -> Self {
        s.clone()
    }
}
