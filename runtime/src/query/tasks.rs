//! The query's tasks: one per input adapter, one per output adapter, a clock for the watermark
//! strategies and a periodic `explain` log when they are wanted. Every task's error or panic
//! stops the query and comes back from `RunningQuery::wait`.

use std::collections::BTreeSet;
use std::panic::AssertUnwindSafe;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use futures::FutureExt;
use tokio::task::JoinSet;

use punctual_engine::InputId;

use super::shell::{Shell, Signals};
use crate::adapter::{InputAdapter, Payload};
use crate::clock::Clock;
use crate::context::InputContext;
use crate::error::QueryError;

/// The query's tasks, and the names of those still running.
pub(crate) struct Tasks {
    pub(crate) set: JoinSet<Result<(), QueryError>>,
    alive: Arc<Mutex<BTreeSet<String>>>,
    pub(crate) signals: Arc<Signals>,
    pub(crate) grace: Duration,
}

impl Tasks {
    pub(crate) fn new(signals: Arc<Signals>, grace: Duration) -> Self {
        Tasks {
            set: JoinSet::new(),
            alive: Arc::new(Mutex::new(BTreeSet::new())),
            signals,
            grace,
        }
    }

    /// Spawns a named task; its error or panic marks the query failed.
    pub(crate) fn spawn(
        &mut self,
        name: String,
        fut: impl std::future::Future<Output = Result<(), QueryError>> + Send + 'static,
    ) {
        let alive = Arc::clone(&self.alive);
        let signals = Arc::clone(&self.signals);
        alive
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(name.clone());
        self.set.spawn(async move {
            let r = AssertUnwindSafe(fut).catch_unwind().await;
            alive
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .remove(&name);
            let r = r.unwrap_or_else(|panic| {
                let message = panic
                    .downcast_ref::<&str>()
                    .map(|s| (*s).to_owned())
                    .or_else(|| panic.downcast_ref::<String>().cloned())
                    .unwrap_or_else(|| "(no message)".to_owned());
                Err(QueryError::Panicked {
                    task: name,
                    message,
                })
            });
            if let Err(e) = &r {
                signals.mark_failed(&e.to_string());
            }
            r
        });
    }

    /// The names of the tasks still running.
    pub(crate) fn alive(&self) -> Vec<String> {
        self.alive
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
            .cloned()
            .collect()
    }

    /// At the end of a stop's grace period: the tasks to abort and name in the stop timeout,
    /// or `None` when every task has finished its work (and is only waiting to be joined): no
    /// timeout then.
    pub(crate) fn overdue(&self) -> Option<Vec<String>> {
        Some(self.alive()).filter(|names| !names.is_empty())
    }
}

/// An input adapter before start.
pub(crate) struct PendingInput<P: Payload> {
    pub(crate) id: InputId<P>,
    pub(crate) name: String,
    pub(crate) adapter: Box<dyn InputAdapter<P>>,
}

/// An input adapter with its payload type erased.
pub(crate) trait ErasedInput: Send {
    /// The input's index in the query.
    fn index(&self) -> usize;
    fn spawn(self: Box<Self>, tasks: &mut Tasks, shell: &Arc<Shell>);
}

impl<P: Payload> ErasedInput for PendingInput<P> {
    fn index(&self) -> usize {
        self.id.index()
    }

    /// Runs the adapter until it returns (or, after a stop, until the grace period is over),
    /// then ends its input: the final CTI where configured, unless the query failed.
    fn spawn(self: Box<Self>, tasks: &mut Tasks, shell: &Arc<Shell>) {
        let PendingInput {
            id,
            name,
            mut adapter,
        } = *self;
        let grace = tasks.grace;
        let shell = Arc::clone(shell);
        let mut ctx = InputContext::new(Arc::clone(&shell), id);
        let reference = shell.streams[id.index()].reference;
        tasks.spawn(format!("input `{name}`"), async move {
            let mut stop = shell.signals.subscribe();
            if !reference {
                // The reference data's snapshots go in first.
                tokio::select! {
                    _ = shell.references_ready() => {}
                    _ = stop.wait_for(|s| *s) => {}
                }
            }
            let result = tokio::select! {
                r = adapter.run(&mut ctx) => Some(r),
                _ = async {
                    let _ = stop.wait_for(|s| *s).await;
                    tokio::time::sleep(grace).await;
                } => None,
            };
            let failed = match result {
                Some(Err(e)) if !e.is_stopping() => Some(QueryError::Adapter {
                    role: "input",
                    stream: name,
                    error: e,
                }),
                _ => None,
            };
            if let Some(e) = &failed {
                shell.signals.mark_failed(&e.to_string());
            }
            // No final CTI after a failure or an abort: no output looks complete.
            let final_cti = !shell.signals.has_failed() && !shell.signals.aborting();
            shell.end_input(id.index(), final_cti).await;
            failed.map_or(Ok(()), Err)
        });
    }
}

/// Reads the clock every `every` and hands the reading to the streams with a watermark
/// strategy, until the query ends.
pub(crate) fn spawn_clock(
    tasks: &mut Tasks,
    shell: &Arc<Shell>,
    (clock, every): (Arc<dyn Clock>, Duration),
) {
    let shell = Arc::clone(shell);
    tasks.spawn(format!("clock of `{}`", shell.name), async move {
        // The first reading one interval after the start, then every interval.
        let mut ticks = tokio::time::interval_at(tokio::time::Instant::now() + every, every);
        ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                _ = ticks.tick() => {
                    shell.tick(clock.now(), None).await;
                }
                _ = shell.signals.done() => return Ok(()),
            }
        }
    });
}

/// Every 10 s, one `debug` line per node of `explain` (target `punctual::explain`), until the
/// query ends.
pub(crate) fn spawn_explain_log(tasks: &mut Tasks, shell: &Arc<Shell>) {
    let shell = Arc::clone(shell);
    tasks.spawn(format!("explain of `{}`", shell.name), async move {
        let mut every = tokio::time::interval(Duration::from_secs(10));
        every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                _ = every.tick() => {
                    for e in shell.explain().await {
                        tracing::debug!(target: "punctual::explain", query = %shell.name, "{e}");
                    }
                }
                _ = shell.signals.done() => return Ok(()),
            }
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A task that has finished its work but is not joined yet is not overdue: a stop timeout
    /// always names the tasks it aborts.
    #[tokio::test]
    async fn only_tasks_still_at_work_are_overdue() {
        let signals = Arc::new(Signals::new());
        let mut tasks = Tasks::new(signals, Duration::from_secs(1));
        let (release, wait) = tokio::sync::oneshot::channel::<()>();
        tasks.spawn("input `slow`".into(), async move {
            let _ = wait.await;
            Ok(())
        });
        tasks.spawn("output `done`".into(), async { Ok(()) });
        tokio::task::yield_now().await;
        while tasks.alive().len() > 1 {
            tokio::task::yield_now().await;
        }
        assert_eq!(tasks.overdue(), Some(vec!["input `slow`".to_owned()]));
        let _ = release.send(());
        while !tasks.alive().is_empty() {
            tokio::task::yield_now().await;
        }
        assert_eq!(
            tasks.overdue(),
            None,
            "finished, not yet joined: nothing to name"
        );
        assert!(!tasks.set.is_empty());
    }
}
