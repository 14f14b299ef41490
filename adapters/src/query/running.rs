//! A started query: [`RunningQuery`] and the handles that watch or stop it from elsewhere.

use std::sync::Arc;

use tokio::time::Instant;

use punctual_core::ops::Explanation;
use punctual_policies::{ClockReading, IngressCounters};

use super::shell::Shell;
use super::tasks::Tasks;
use crate::error::QueryError;

#[cfg(doc)]
use punctual_policies::Ingress;

/// A handle that reads a running query's counters from elsewhere (while another task awaits
/// [`RunningQuery::wait`], say).
#[derive(Clone)]
pub struct Monitor {
    shell: Arc<Shell>,
}

impl std::fmt::Debug for Monitor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Monitor")
            .field("query", &self.shell.name)
            .finish()
    }
}

impl Monitor {
    /// The counters of the stream named `name`, as of its last call into the query.
    pub fn counters(&self, name: &str) -> Option<IngressCounters> {
        self.shell
            .streams
            .iter()
            .find(|s| s.name == name)
            .map(|s| s.counters())
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
    /// Tells every adapter that the query is stopping.
    pub fn stop(&self) {
        self.shell.signals.request_stop();
    }
}

/// Each stream's counters when the query ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct QueryReport {
    /// Stream names and counters, in creation order.
    pub streams: Vec<(String, IngressCounters)>,
    /// Per stream with a watermark strategy: the clock readings that issued CTIs. Feeding the
    /// same input to an [`Ingress`] with these readings at the same positions
    /// ([`Ingress::on_clock`]) gives the same output.
    pub clock_records: Vec<(String, Vec<ClockReading>)>,
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
        Monitor {
            shell: Arc::clone(&self.shell),
        }
    }

    /// A handle to stop the query from another task.
    pub fn stop_handle(&self) -> StopHandle {
        StopHandle {
            shell: Arc::clone(&self.shell),
        }
    }

    /// Stops the query: adapters are told to stop, final CTIs are issued where configured,
    /// outputs drain, and every task is joined.
    pub async fn stop(self) -> Result<QueryReport, QueryError> {
        self.shell.signals.request_stop();
        self.wait().await
    }

    /// Waits until every task has ended (all inputs exhausted, or a stop). Returns the first
    /// error of any task (after stopping the others), or each stream's counters. Tasks that do
    /// not end within the grace period after a stop are aborted and named in
    /// [`QueryError::StopTimeout`].
    pub async fn wait(mut self) -> Result<QueryReport, QueryError> {
        let mut first: Option<QueryError> = None;
        let shell = Arc::clone(&self.shell);
        let mut stop = shell.signals.subscribe();
        let mut deadline: Option<Instant> = None;
        loop {
            if deadline.is_none() && *stop.borrow() {
                deadline = Some(Instant::now() + self.tasks.grace);
            }
            let next = match deadline {
                None => tokio::select! {
                    r = self.tasks.set.join_next() => r,
                    _ = stop.changed() => continue,
                },
                Some(d) => tokio::select! {
                    r = self.tasks.set.join_next() => r,
                    _ = tokio::time::sleep_until(d) => {
                        let tasks = self.tasks.alive();
                        self.tasks.set.abort_all();
                        while self.tasks.set.join_next().await.is_some() {}
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
                    first.get_or_insert(e);
                    shell.signals.mark_failed();
                }
                // Only aborted tasks end this way; panics are caught inside the task.
                Some(Err(_)) => {}
            }
        }
        if let Some(f) = shell.signals.failure() {
            first.get_or_insert(QueryError::Stream(f));
        }
        match first {
            Some(e) => Err(e),
            None => Ok(QueryReport {
                streams: shell
                    .streams
                    .iter()
                    .map(|s| (s.name.clone(), s.counters()))
                    .collect(),
                clock_records: shell
                    .streams
                    .iter()
                    .map(|s| (s.name.clone(), s.clock_record()))
                    .filter(|(_, r)| !r.is_empty())
                    .collect(),
            }),
        }
    }
}
