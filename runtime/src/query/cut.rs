//! Snapshots of a query on several workers, cut by its executor: the executor holds every
//! worker's inputs at their commit points ([`QueryWorker::pause_inputs`]), waits until
//! nothing is on its way between the workers, takes each worker's part
//! ([`QueryWorker::cut`]: its driver's state and what the executor itself holds for it),
//! and has worker 0 write them as one snapshot ([`QueryWorker::write_snapshot`]) before it
//! lets the inputs go on ([`QueryWorker::resume_inputs`]).

use std::sync::atomic::Ordering;
use std::sync::{Arc, PoisonError};
use std::time::Duration;

use super::snapshots::{write_parts, Taken};
use super::QueryWorker;
use crate::checkpoint::WorkerState;
use crate::error::QueryError;

/// One worker's part of a snapshot of several workers ([`QueryWorker::cut`]).
pub struct WorkerCut {
    taken: Taken,
    executor: Vec<u8>,
}

impl std::fmt::Debug for WorkerCut {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WorkerCut")
            .field("state", &self.taken.0.len())
            .field("executor", &self.executor.len())
            .finish()
    }
}

impl QueryWorker {
    /// With checkpoints ([`Query::checkpoints`](super::Query::checkpoints)): how often a
    /// snapshot is due. `None` without.
    pub fn checkpoint_every(&self) -> Option<Duration> {
        self.shell.snapshots.get().map(|s| s.checkpoints.interval())
    }

    /// What the executor held for this worker in the snapshot the query was restored from
    /// (as it gave it to [`QueryWorker::cut`]); empty when it started from the beginning.
    /// Taken once.
    pub fn take_restored_executor(&self) -> Vec<u8> {
        self.shell.snapshots.get().map_or_else(Vec::new, |s| {
            std::mem::take(&mut *s.executor.lock().unwrap_or_else(PoisonError::into_inner))
        })
    }

    /// Holds this worker's inputs (and clock) at their next call into the driver after the
    /// position they committed last; an input that has enqueued since goes on until it
    /// commits. A stop lets them go.
    pub fn pause_inputs(&self) {
        self.shell.gate.close();
    }

    /// Lets the inputs go on after [`QueryWorker::pause_inputs`].
    pub fn resume_inputs(&self) {
        self.shell.gate.open();
    }

    /// Whether every input of this worker has committed what it enqueued (so that, paused,
    /// none changes the state any more).
    pub async fn inputs_paused(&self) -> bool {
        let engine = self.shell.engine.lock().await;
        engine.inputs_at.iter().all(|at| !at.dirty)
    }

    /// This worker's part of a snapshot, if it is at a consistent moment (no input between a
    /// call and its commit, no output batch waiting to be sent; `None` otherwise, or when the
    /// query is stopping): its driver's state, its inputs' positions, its outputs marked
    /// after what they were sent, and `executor`, what the executor holds for it (given back
    /// by [`QueryWorker::take_restored_executor`] after a restore). The executor makes sure
    /// nothing else is on its way to or from this worker.
    pub async fn cut(&self, executor: Vec<u8>) -> Option<Result<WorkerCut, QueryError>> {
        let mut engine = self.shell.engine.lock().await;
        let taken = self.shell.snapshot_of(&mut engine).await?;
        Some(taken.map(|taken| WorkerCut { taken, executor }))
    }

    /// Whether a snapshot is being written ([`QueryWorker::write_snapshot`]).
    pub fn is_writing(&self) -> bool {
        self.shell
            .snapshots
            .get()
            .is_some_and(|s| s.writing.load(Ordering::Acquire))
    }

    /// Writes the workers' parts (`cuts`, by worker) as the next snapshot, in a task of its
    /// own (the inputs may go on at once: the outputs were marked); on worker 0, which holds
    /// the outputs. Each input's position comes from the worker that owns it. A failure to
    /// write fails the query.
    pub fn write_snapshot(&self, cuts: Vec<WorkerCut>) {
        let Some(snapshots) = self.shell.snapshots.get() else {
            return;
        };
        snapshots.writing.store(true, Ordering::Release);
        let mut workers = Vec::with_capacity(cuts.len());
        let mut positions = vec![None; self.owners.len()];
        let mut marks = Vec::new();
        for (w, cut) in cuts.into_iter().enumerate() {
            let (driver, at, mut marked) = cut.taken;
            for (i, owner) in self.owners.iter().enumerate() {
                if *owner == w {
                    positions[i] = at.get(i).cloned().flatten();
                }
            }
            marks.append(&mut marked);
            workers.push(WorkerState {
                driver,
                executor: cut.executor,
            });
        }
        let shell = Arc::clone(&self.shell);
        tokio::spawn(async move {
            let Some(snapshots) = shell.snapshots.get() else {
                return;
            };
            let n = snapshots.seq.fetch_add(1, Ordering::AcqRel) + 1;
            let parts = (workers, positions, marks);
            if let Err(e) = write_parts(&shell, &snapshots.checkpoints, parts, n).await {
                shell.signals.mark_failed(&e.to_string());
            }
            snapshots.writing.store(false, Ordering::Release);
        });
    }
}
