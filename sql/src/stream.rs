//! A query's streams of rows in either order: what it reads and what it writes.
//!
//! An input read in arrival order (an unordered stream) stays so through the operators that
//! take it (`WHERE`, the select list, tumbling and hopping windows, the left side of a join);
//! anything else reads it sorted (a reorder first). A window's results are sorted whatever
//! its input.

use punctual_core::ops::{AnyStream, Payload, Stream};
use punctual_core::{Time, TimeSpan, Unordered};
use punctual_rows::Row;

/// A query's stream of rows, sorted or in arrival order: an input of
/// [`crate::SqlQuery::build`] and each of its outputs.
///
/// An output is in arrival order when it comes from an input in arrival order through
/// operators that keep it (`WHERE`, the select list, tumbling and hopping windows, the left
/// side of a join): its results pass on as soon as they are final, in no particular order
/// between CTIs; per CTI they are the results of the same query over the input sorted. Bind
/// it as it is (an output adapter takes either order) or sort it with
/// [`AnyStream::ordered`].
///
/// ```
/// use punctual_core::ops::{AnyStream, QueryGraph};
/// use punctual_core::{Unordered};
/// use punctual_rows::{Row};
/// use punctual_sql::{SqlInput, SqlQuery};
///
/// let graph = QueryGraph::new();
/// let readings = graph.source::<Row, Unordered>();
/// let sql = SqlQuery::parse("SELECT v FROM readings WHERE v > 1").unwrap();
/// let outputs = sql.build(&[SqlInput::new("readings", &readings)]).unwrap();
/// // A filter and a projection keep the input's order.
/// assert!(matches!(outputs[0].1, AnyStream::Arrival(_)));
/// ```
pub type RowStream = AnyStream<Row>;

/// The operators a query builds, on a stream of either order: each keeps the order it can
/// and sorts where it must.
pub(crate) trait Rows {
    /// The stream with a label for `explain` and diagnostics.
    fn named(self, label: String) -> RowStream;
    /// The rows that satisfy `keep`, in the same order.
    fn filter(&self, keep: impl Fn(&Row) -> bool + Send + 'static) -> RowStream;
    /// `Stream::keep_ok` of `made`, in its order.
    fn kept_ok(made: AnyStream<Result<Row, String>>) -> RowStream;
    /// Each row made into the rows `f` gives (`Err`: dropped with the reason), each with
    /// the row's lifetime, in the same order.
    fn flat_map_ok(
        &self,
        f: impl Fn(&Row) -> Vec<Result<Row, String>> + Send + 'static,
    ) -> RowStream;
    /// `Stream::try_filter`, in this stream's order.
    fn try_filter(&self, keep: impl Fn(&Row) -> Result<bool, String> + Send + 'static)
        -> RowStream;
    /// Each row made into another, with the event's start time; in the same order.
    fn map_with_time(&self, f: impl Fn(Time, &Row) -> Row + Send + 'static) -> RowStream;
    /// `Stream::try_map_with_time`, in this stream's order.
    fn try_map_with_time(
        &self,
        f: impl Fn(Time, &Row) -> Result<Row, String> + Send + 'static,
    ) -> RowStream;
    /// The union with `rest`: in arrival order if all are, else sorted.
    fn union(&self, rest: &[&RowStream]) -> RowStream;
    /// The temporal equi-join with `right` (`Stream::join_on_filter_map`), in this
    /// stream's order.
    fn join<K: punctual_core::ops::Key, Out: Payload>(
        &self,
        right: &Stream<Row>,
        key_left: impl Fn(&Row) -> K + Send + 'static,
        key_right: impl Fn(&Row) -> K + Send + 'static,
        combine: impl Fn(&Row, &Row) -> Option<Out> + Send + 'static,
    ) -> AnyStream<Out>;
    /// Each event's lifetime moved to start `shift` later and last `duration` (sorted
    /// first).
    fn alter_lifetime(&self, shift: TimeSpan, duration: TimeSpan) -> RowStream;
    /// Each event as a point at its start (sorted first).
    fn to_point_events(&self) -> RowStream;
}

impl Rows for RowStream {
    fn named(self, label: String) -> RowStream {
        match self {
            AnyStream::Ordered(s) => s.named(label).into(),
            AnyStream::Arrival(s) => s.named(label).into(),
        }
    }

    fn filter(&self, keep: impl Fn(&Row) -> bool + Send + 'static) -> RowStream {
        match self {
            AnyStream::Ordered(s) => s.filter(keep).into(),
            AnyStream::Arrival(s) => s.filter(keep).into(),
        }
    }

    fn kept_ok(made: AnyStream<Result<Row, String>>) -> RowStream {
        match made {
            AnyStream::Ordered(s) => s.keep_ok().into(),
            AnyStream::Arrival(s) => s.keep_ok().into(),
        }
    }

    fn flat_map_ok(
        &self,
        f: impl Fn(&Row) -> Vec<Result<Row, String>> + Send + 'static,
    ) -> RowStream {
        match self {
            AnyStream::Ordered(s) => s.flat_map(f).keep_ok().into(),
            AnyStream::Arrival(s) => s.flat_map(f).keep_ok().into(),
        }
    }

    fn try_filter(
        &self,
        keep: impl Fn(&Row) -> Result<bool, String> + Send + 'static,
    ) -> RowStream {
        match self {
            AnyStream::Ordered(s) => s.try_filter(keep).into(),
            AnyStream::Arrival(s) => s.try_filter(keep).into(),
        }
    }

    fn map_with_time(&self, f: impl Fn(Time, &Row) -> Row + Send + 'static) -> RowStream {
        match self {
            AnyStream::Ordered(s) => s.map_with_time(f).into(),
            AnyStream::Arrival(s) => s.map_with_time(f).into(),
        }
    }

    fn try_map_with_time(
        &self,
        f: impl Fn(Time, &Row) -> Result<Row, String> + Send + 'static,
    ) -> RowStream {
        match self {
            AnyStream::Ordered(s) => s.try_map_with_time(f).into(),
            AnyStream::Arrival(s) => s.try_map_with_time(f).into(),
        }
    }

    fn union(&self, rest: &[&RowStream]) -> RowStream {
        let all: Vec<&RowStream> = std::iter::once(self).chain(rest.iter().copied()).collect();
        let arrival: Option<Vec<&Stream<Row, Unordered>>> = all
            .iter()
            .map(|s| match s {
                AnyStream::Arrival(s) => Some(s),
                AnyStream::Ordered(_) => None,
            })
            .collect();
        if let Some(arrival) = arrival {
            return arrival[0].union(&arrival[1..]).into();
        }
        let sorted: Vec<Stream<Row>> = all.iter().map(|s| s.ordered()).collect();
        let others: Vec<&Stream<Row>> = sorted[1..].iter().collect();
        sorted[0].union(&others).into()
    }

    fn join<K: punctual_core::ops::Key, Out: Payload>(
        &self,
        right: &Stream<Row>,
        key_left: impl Fn(&Row) -> K + Send + 'static,
        key_right: impl Fn(&Row) -> K + Send + 'static,
        combine: impl Fn(&Row, &Row) -> Option<Out> + Send + 'static,
    ) -> AnyStream<Out> {
        match self {
            AnyStream::Ordered(s) => s
                .join_on_filter_map(right, key_left, key_right, combine)
                .into(),
            AnyStream::Arrival(s) => s
                .join_on_filter_map(right, key_left, key_right, combine)
                .into(),
        }
    }

    fn alter_lifetime(&self, shift: TimeSpan, duration: TimeSpan) -> RowStream {
        self.ordered().alter_lifetime(shift, duration).into()
    }

    fn to_point_events(&self) -> RowStream {
        self.ordered().to_point_events().into()
    }
}
