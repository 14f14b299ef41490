//! A started query: [`RunningQuery`] and the handles that watch or stop it from elsewhere.

use std::sync::{Arc, OnceLock};

use tokio::time::Instant;

use punctual_core::ops::{Explanation, HeldWhat};
use punctual_core::Time;
use punctual_policies::{ClockReading, IngressCounters};

use super::shell::Shell;
use super::tasks::Tasks;
use crate::error::QueryError;

#[cfg(doc)]
use punctual_policies::Ingress;

/// A handle that reads a query's counters from elsewhere (while another task awaits
/// [`RunningQuery::wait`], say, or from an output adapter through its
/// [`OutputContext`](crate::OutputContext)). It can be taken from the [`Query`](crate::Query)
/// before it starts; until then it knows no counters.
#[derive(Clone, Default)]
pub struct Monitor {
    shell: Arc<OnceLock<Arc<Shell>>>,
}

impl std::fmt::Debug for Monitor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Monitor")
            .field("query", &self.shell.get().map(|s| s.name.as_str()))
            .finish()
    }
}

impl Monitor {
    /// Connects the monitor to the started query.
    pub(crate) fn attach(&self, shell: &Arc<Shell>) {
        let _ = self.shell.set(Arc::clone(shell));
    }

    /// The counters of the stream named `name`, as of its last call into the query (`None`
    /// before the query starts, or for a name it does not have).
    pub fn counters(&self, name: &str) -> Option<IngressCounters> {
        self.shell
            .get()?
            .streams
            .iter()
            .find(|s| s.name == name)
            .map(|s| s.counters())
    }

    /// Every stream's name and counters, in creation order (empty before the query starts).
    pub fn streams(&self) -> Vec<(String, IngressCounters)> {
        self.shell.get().map_or_else(Vec::new, |shell| {
            shell
                .streams
                .iter()
                .map(|s| (s.name.clone(), s.counters()))
                .collect()
        })
    }
}

/// A handle that can stop a running query from elsewhere.
#[derive(Clone)]
pub struct StopHandle {
    shell: Arc<Shell>,
}

impl std::fmt::Debug for StopHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StopHandle")
            .field("query", &self.shell.name)
            .finish()
    }
}

impl StopHandle {
    /// Stops the query with a drain ([`RunningQuery::stop`]).
    pub fn stop(&self) {
        self.shell.signals.request_stop(StopMode::Drain);
    }

    /// Stops the query without a drain ([`RunningQuery::abort`]).
    pub fn abort(&self) {
        self.shell.signals.request_stop(StopMode::Abort);
    }
}

/// How a query is stopped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StopMode {
    /// Adapters are told to stop; every input issues its final CTI where configured (in its
    /// advance-time settings, or by its adapter at the end of its input, as the file inputs
    /// do), so every window and held event is released, as if the input had ended there. What
    /// the file, standard-input and TCP inputs had read is enqueued, not lost.
    Drain,
    /// Adapters are told to stop; no final CTI: open windows and buffered events are not
    /// emitted as if final, and are reported instead (`unreleased` in the counters and the
    /// dead letters, [`QueryReport::held`] for the operators).
    Abort,
}

/// How a query ended: in its report, and what each output adapter's
/// [`finish`](crate::OutputAdapter::finish) is told.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Ending {
    /// Every input ended by itself; final CTIs where configured.
    Completed,
    /// Stopped with [`StopMode::Drain`]: final CTIs where configured.
    Drained,
    /// Stopped with [`StopMode::Abort`]: no final CTI; what was open is reported.
    Aborted,
    /// A task failed (its error); no final CTI.
    Failed(String),
}

impl Ending {
    /// Whether the output is complete: every input ended by itself or was drained.
    pub fn is_complete(&self) -> bool {
        matches!(self, Ending::Completed | Ending::Drained)
    }
}

impl std::fmt::Display for Ending {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Ending::Completed => f.write_str("completed"),
            Ending::Drained => f.write_str("stopped with a drain"),
            Ending::Aborted => f.write_str("aborted"),
            Ending::Failed(why) => write!(f, "failed: {why}"),
        }
    }
}

/// What a query did: each stream's counters, how it ended, and what its operators still held.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct QueryReport {
    /// Stream names and counters, in creation order.
    pub streams: Vec<(String, IngressCounters)>,
    /// Per stream with a watermark strategy: the clock readings that issued CTIs. Feeding the
    /// same input to an [`Ingress`] with these readings at the same positions
    /// ([`Ingress::on_clock`]) gives the same output.
    pub clock_records: Vec<(String, Vec<ClockReading>)>,
    /// How the query ended.
    pub ending: Ending,
    /// The operators that still held events or groups when it ended (open windows, a join's
    /// events waiting for a CTI), by label, with how many: what an abort or a failure left
    /// unreleased in the operators (the inputs' own count is `unreleased` in their counters).
    /// Empty after a complete run whose inputs all ended with a final CTI.
    pub held: Vec<(String, usize)>,
    /// What the operators held when the query ended, item by item (the operators' dead
    /// letters): the first [`MAX_REPORTED_HELD`] of them, in operator order; `held` has the
    /// counts. Empty after a complete run.
    pub held_items: Vec<HeldItem>,
    /// The operators that dropped events, by label, with how many: events over a window's
    /// limit of windows per event ([`WindowSpec::max_windows_per_event`]); each drop is also
    /// logged (`warn`) with the event's lifetime and the reason.
    ///
    /// [`WindowSpec::max_windows_per_event`]: punctual_core::ops::WindowSpec::max_windows_per_event
    pub dropped: Vec<(String, u64)>,
    /// The windows with allowed lateness, by label, with the events they took on time and
    /// late (under the window's watermark, admitted by its input's CTI: each may have revised
    /// a result); the input's `dropped` counts those behind the CTI (the side output).
    pub lateness: Vec<(String, punctual_core::ops::LateCounts)>,
    /// The operators' drops one by one, with the reason (the operators' dead letters): the
    /// first [`MAX_REPORTED_HELD`] of the run; `dropped` has the counts.
    pub drops: Vec<OperatorDropItem>,
    /// Where every node of the query stood when the report was made: its last CTI, the
    /// input holding it back, the events it emitted and dropped ([`RunningQuery::explain`]
    /// at that moment). Empty in a cluster run's merged report.
    pub explanations: Vec<Explanation>,
}

/// One event an operator dropped (see [`QueryReport::drops`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OperatorDropItem {
    /// The operator, as [`QueryReport::dropped`] names it.
    pub operator: String,
    /// The event's lifetime: its start, and its end (`+inf` for an open start edge).
    pub start: Time,
    /// See `start`.
    pub end: Time,
    /// Why it was dropped.
    pub reason: String,
}

/// How many held items a [`QueryReport`] lists (`QueryReport::held` counts them all).
pub const MAX_REPORTED_HELD: usize = 1024;

/// One thing an operator still held when its query ended, never emitted: an event kept as
/// state, a result waiting for a CTI, or an open window or group (see [`HeldWhat`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HeldItem {
    /// The operator, as [`QueryReport::held`] names it.
    pub operator: String,
    /// What it is.
    pub what: HeldWhat,
    /// Its lifetime as far as known (`end` is `+inf` while open).
    pub start: Time,
    /// See `start`.
    pub end: Time,
    /// Its payload (a group's key), shown when its type is one the query knows how to show:
    /// [`Row`](punctual_rows::Row), strings, numbers, `bool`, `char`, `()` for nothing, and
    /// any type given to [`Query::show_held`](crate::Query::show_held).
    pub payload: Option<String>,
}

impl std::fmt::Display for HeldItem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} held {} [{}, {})",
            self.operator,
            self.what.as_str(),
            self.start,
            self.end
        )?;
        match &self.payload {
            Some(p) => write!(f, " {p}"),
            None => Ok(()),
        }
    }
}

/// A query that failed: the error, and the report of what it did until then (counters,
/// dead letters counted, what was left unreleased).
#[derive(Debug)]
pub struct QueryFailure {
    /// What went wrong first.
    pub error: QueryError,
    /// What the query did.
    pub report: Box<QueryReport>,
}

impl std::fmt::Display for QueryFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.error.fmt(f)
    }
}

impl std::error::Error for QueryFailure {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.error.source()
    }
}

impl From<QueryFailure> for QueryError {
    fn from(failure: QueryFailure) -> Self {
        failure.error
    }
}

impl QueryReport {
    /// The counters of the stream named `name`.
    pub fn counters(&self, name: &str) -> Option<IngressCounters> {
        self.streams
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, c)| *c)
    }
}

/// A started query.
pub struct RunningQuery {
    pub(crate) tasks: Tasks,
    pub(crate) shell: Arc<Shell>,
    pub(crate) monitor: Monitor,
    /// The checkpoint directory's lock, held while the query runs.
    pub(crate) _checkpoint_lock: Option<std::fs::File>,
}

impl std::fmt::Debug for RunningQuery {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RunningQuery")
            .field("name", &self.shell.name)
            .finish()
    }
}

impl RunningQuery {
    /// The counters of the stream named `name`, as of its last call into the query.
    pub fn counters(&self, name: &str) -> Option<IngressCounters> {
        self.monitor().counters(name)
    }

    /// Where every input and operator of the query stands: its CTI, each input's CTI, the
    /// input holding it back (and for how long its CTI has not moved), the state it holds.
    pub async fn explain(&self) -> Vec<Explanation> {
        self.shell.explain().await
    }

    /// A handle to read the streams' counters from another task.
    pub fn monitor(&self) -> Monitor {
        self.monitor.clone()
    }

    /// A handle to stop the query from another task.
    pub fn stop_handle(&self) -> StopHandle {
        StopHandle {
            shell: Arc::clone(&self.shell),
        }
    }

    /// Stops the query with a drain: adapters are told to stop, final CTIs are issued where
    /// configured (every window is released), outputs drain, and every task is joined
    /// ([`RunningQuery::wait`]). The report's ending is [`Ending::Drained`].
    pub async fn stop(self) -> Result<QueryReport, QueryFailure> {
        self.shell.signals.request_stop(StopMode::Drain);
        self.wait().await
    }

    /// Stops the query without a drain: adapters are told to stop, no final CTI is issued, so
    /// nothing is emitted as if final; what the inputs buffered is counted `unreleased` (and
    /// dead-lettered), what the operators held is in [`QueryReport::held`], and the report's
    /// ending is [`Ending::Aborted`].
    pub async fn abort(self) -> Result<QueryReport, QueryFailure> {
        self.shell.signals.request_stop(StopMode::Abort);
        self.wait().await
    }

    /// Waits until every task has ended (all inputs exhausted, or a stop). Returns the report,
    /// or the first error of any task (after stopping the others) with the report. Tasks that
    /// do not end within the grace period after a stop are aborted and named in
    /// [`QueryError::StopTimeout`]; outputs that are still writing when it runs out get another
    /// period, as long as they make progress.
    pub async fn wait(mut self) -> Result<QueryReport, QueryFailure> {
        let mut first: Option<QueryError> = None;
        let shell = Arc::clone(&self.shell);
        let mut stop = shell.signals.subscribe();
        let mut deadline: Option<(Instant, u64)> = None;
        loop {
            if deadline.is_none() && *stop.borrow() {
                deadline = Some((Instant::now() + self.tasks.grace, shell.signals.progress()));
            }
            let next = match deadline {
                None => tokio::select! {
                    r = self.tasks.set.join_next() => r,
                    _ = stop.changed() => continue,
                },
                Some((d, progress)) => tokio::select! {
                    r = self.tasks.set.join_next() => r,
                    _ = tokio::time::sleep_until(d) => {
                        let now = shell.signals.progress();
                        if now != progress {
                            // The outputs are still writing: another period.
                            deadline = Some((Instant::now() + self.tasks.grace, now));
                            continue;
                        }
                        let Some(tasks) = self.tasks.overdue() else {
                            // Every task is done, only not joined yet: join them.
                            deadline = Some((Instant::now() + self.tasks.grace, now));
                            continue;
                        };
                        // Aborted at their next await; one that blocks its thread (or never
                        // awaits) cannot be, and is left behind rather than waited for.
                        self.tasks.set.abort_all();
                        self.tasks.set.detach_all();
                        first.get_or_insert(QueryError::StopTimeout {
                            grace: self.tasks.grace,
                            tasks,
                        });
                        break;
                    }
                },
            };
            match next {
                None => break,
                Some(Ok(Ok(()))) => {}
                Some(Ok(Err(e))) => {
                    shell.signals.mark_failed(&e.to_string());
                    first.get_or_insert(e);
                }
                // Only aborted tasks end this way; panics are caught inside the task.
                Some(Err(_)) => {}
            }
        }
        if let Some(f) = shell.signals.failure() {
            first.get_or_insert(QueryError::Stream(f));
        }
        let ending = match &first {
            Some(e) => Ending::Failed(e.to_string()),
            None => shell.signals.ending(),
        };
        let report = shell.report(ending).await;
        if !report.held.is_empty() {
            // Not released, and not an input's `unreleased`: say so where it will be seen.
            tracing::warn!(
                query = %shell.name,
                held = ?report.held,
                first = %report.held_items.first().map(ToString::to_string).unwrap_or_default(),
                "the query ended with events or groups still held by operators (an input without \
                 a final CTI?); they were not emitted"
            );
        }
        match first {
            Some(error) => Err(QueryFailure {
                error,
                report: Box::new(report),
            }),
            None => Ok(report),
        }
    }
}
