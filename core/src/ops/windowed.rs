//! Windows over a stream waiting for an aggregate ([`Windowed`]): what
//! [`Stream::hopping_window`], [`Stream::snapshot_window`] and [`Stream::count_window`] give,
//! grouped or not, made into a window operator by `aggregate`.

use std::hash::Hash;

use crate::order::{Order, Ordered};
use crate::time::Time;

use super::aggregate::{Aggregate, Count};
use super::snapshot::{CountWindow, SnapshotWindow};
use super::stream::Stream;
use super::window::{HoppingWindow, WindowOutput, WindowSpec};
use super::Payload;

/// No grouping: one result per window.
#[derive(Clone, Copy, Debug)]
pub struct Ungrouped;

/// Grouping by a key function: one result per window and group.
#[derive(Clone, Copy, Debug)]
pub struct GroupedBy<F>(F);

#[derive(Clone, Copy, Debug)]
pub(super) enum WindowKind {
    Hopping(WindowSpec),
    Snapshot,
    Count(usize),
}

/// Windows over a stream (of order `O`), waiting for an aggregate. See
/// [`Stream::hopping_window`], [`Stream::snapshot_window`], [`Stream::count_window`].
#[derive(Debug)]
pub struct Windowed<P, G, O = Ordered> {
    pub(super) stream: Stream<P, O>,
    pub(super) kind: WindowKind,
    pub(super) group: G,
}

impl<P: Payload, G, O: Order> Windowed<P, G, O> {
    /// Hopping windows start at `alignment + n * hop` (default: time 0); other kinds ignore it.
    pub fn alignment(mut self, alignment: Time) -> Self {
        if let WindowKind::Hopping(spec) = &mut self.kind {
            *spec = spec.alignment(alignment);
        }
        self
    }

    /// The output policy of hopping windows (default [`WindowOutput::PointAtEnd`]); other kinds
    /// ignore it.
    pub fn output(mut self, output: WindowOutput) -> Self {
        if let WindowKind::Hopping(spec) = &mut self.kind {
            *spec = spec.output(output);
        }
        self
    }

    /// The most windows one event may count in (default
    /// [`DEFAULT_MAX_WINDOWS_PER_EVENT`](super::DEFAULT_MAX_WINDOWS_PER_EVENT), a million);
    /// an event over more is dropped, counted in the operator's `dropped` and logged with the
    /// reason (see [`WindowSpec::max_windows_per_event`]). Other kinds ignore it.
    pub fn max_windows_per_event(mut self, n: u64) -> Self {
        if let WindowKind::Hopping(spec) = &mut self.kind {
            *spec = spec.max_windows_per_event(n);
        }
        self
    }

    fn build<K, A, Out, KF, MK>(self, key: KF, agg: A, make: MK) -> Stream<Out>
    where
        K: Hash + Eq + Clone + Send + 'static,
        A: Aggregate<P>,
        Out: Payload,
        KF: Fn(&P) -> K + Send + 'static,
        MK: Fn(&K, A::Output) -> Out + Send + 'static,
    {
        // Snapshot and count windows are made from ordered streams only.
        match self.kind {
            WindowKind::Hopping(spec) => {
                self.stream.unary(HoppingWindow::new(spec, key, agg, make))
            }
            WindowKind::Snapshot => self.stream.unary(SnapshotWindow::new(key, agg, make)),
            WindowKind::Count(n) => self.stream.unary(CountWindow::new(n, key, agg, make)),
        }
    }
}

impl<P: Payload, O: Order> Windowed<P, Ungrouped, O> {
    /// One result per window and distinct `key`.
    pub fn group_by<K, F>(self, key: F) -> Windowed<P, GroupedBy<F>, O>
    where
        K: Hash + Eq + Clone + Send + 'static,
        F: Fn(&P) -> K + Send + 'static,
    {
        Windowed {
            stream: self.stream,
            kind: self.kind,
            group: GroupedBy(key),
        }
    }

    /// Aggregates each window's members.
    pub fn aggregate<A>(self, agg: A) -> Stream<A::Output>
    where
        A: Aggregate<P>,
        A::Output: Payload,
    {
        self.build(|_: &P| (), agg, |_: &(), o| o)
    }

    /// Counts each window's members.
    pub fn count(self) -> Stream<u64> {
        self.aggregate(Count)
    }
}

impl<P: Payload, K, F, O: Order> Windowed<P, GroupedBy<F>, O>
where
    K: Clone + Hash + Eq + Send + 'static,
    F: Fn(&P) -> K + Send + 'static,
{
    /// Aggregates each window's members per group; results are `(key, value)`.
    pub fn aggregate<A>(self, agg: A) -> Stream<(K, A::Output)>
    where
        A: Aggregate<P>,
        A::Output: Payload,
        K: Payload,
    {
        self.aggregate_into(agg, |k: &K, o| (k.clone(), o))
    }

    /// Aggregates per group, building each result with `make(key, value)`.
    pub fn aggregate_into<A, Out>(
        self,
        agg: A,
        make: impl Fn(&K, A::Output) -> Out + Send + 'static,
    ) -> Stream<Out>
    where
        A: Aggregate<P>,
        Out: Payload,
    {
        let key = self.group.0;
        Windowed {
            stream: self.stream,
            kind: self.kind,
            group: Ungrouped,
        }
        .build(key, agg, make)
    }

    /// Counts each window's members per group.
    pub fn count(self) -> Stream<(K, u64)>
    where
        K: Payload,
    {
        self.aggregate(Count)
    }
}
