//! Snapshots of a query with checkpoints ([`crate::checkpoint`]). They are taken on the data
//! path: when an input commits its position ([`InputContext::commit_position`]) and a snapshot
//! is due (every [`Checkpoints::every`], none being written), and every input has committed
//! what it enqueued and every output batch has been sent, the query's state and the inputs'
//! positions are saved under the lock and each output is marked after the batches it was sent;
//! a task then waits for the outputs to make their writes durable and give their positions,
//! and writes the snapshot. (A timer task would starve: a file input that reads from its
//! buffer and finds room for its batches never yields to it.)
//!
//! [`InputContext::commit_position`]: crate::InputContext::commit_position

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use tokio::sync::oneshot;
use tokio::time::Instant;

use super::shell::{Engine, SendMode, Shell};
use crate::checkpoint::{Checkpoints, Snapshot, SourcePosition, WorkerState};
use crate::error::{AdapterError, QueryError};

/// A query's snapshots: where they go, the number of the last one, when it was taken, and
/// whether one is being written.
pub(crate) struct Snapshots {
    pub(super) checkpoints: Checkpoints,
    pub(super) seq: AtomicU64,
    last: Mutex<Instant>,
    pub(super) writing: Arc<AtomicBool>,
    /// As one worker of several: what the executor held between the workers in the snapshot
    /// this run was restored from (this worker's part; empty from the start).
    pub(super) executor: Mutex<Vec<u8>>,
}

impl Snapshots {
    /// Snapshots in `checkpoints`, numbered on from `seq`; `executor`: what the executor of
    /// several workers held, restored.
    pub(crate) fn new(checkpoints: Checkpoints, seq: u64, executor: Vec<u8>) -> Self {
        Snapshots {
            checkpoints,
            seq: AtomicU64::new(seq),
            last: Mutex::new(Instant::now()),
            writing: Arc::new(AtomicBool::new(false)),
            executor: Mutex::new(executor),
        }
    }

    /// Whether a snapshot is due now: its interval has passed and none is being written.
    fn due(&self) -> bool {
        !self.writing.load(Ordering::Acquire)
            && self
                .last
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .elapsed()
                >= self.checkpoints.interval()
    }
}

/// The outputs' marks: each one's name, and where its position will come.
type Marks = Vec<(String, oneshot::Receiver<Result<u64, AdapterError>>)>;

/// What a snapshot took under the lock: the state, the inputs' positions, the outputs' marks.
pub(super) type Taken = (Vec<u8>, Vec<Option<SourcePosition>>, Marks);

/// The parts of a snapshot: each worker's state, the inputs' positions, the outputs' marks.
pub(super) type Parts = (Vec<WorkerState>, Vec<Option<SourcePosition>>, Marks);

impl Shell {
    /// Input `index` stands at `at`: everything it read is enqueued. Takes a snapshot if one
    /// is due and the query is at a consistent moment.
    pub(crate) async fn commit(self: &Arc<Self>, index: usize, at: SourcePosition) {
        let mut engine = self.engine.lock().await;
        if let Some(slot) = engine.inputs_at.get_mut(index) {
            slot.position = Some(at);
            slot.dirty = false;
        }
        // As one worker of several, the executor cuts snapshots across the workers.
        let Some(snapshots) = self
            .snapshots
            .get()
            .filter(|s| self.worker.is_none() && s.due())
        else {
            return;
        };
        let Some(taken) = self.snapshot_of(&mut engine).await else {
            return;
        };
        drop(engine);
        let taken = match taken {
            Ok(taken) => taken,
            Err(e) => return self.signals.mark_failed(&e.to_string()),
        };
        *snapshots
            .last
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = Instant::now();
        snapshots.writing.store(true, Ordering::Release);
        let shell = Arc::clone(self);
        tokio::spawn(async move {
            let Some(snapshots) = shell.snapshots.get() else {
                return;
            };
            let n = snapshots.seq.fetch_add(1, Ordering::AcqRel) + 1;
            if let Err(e) = write(&shell, &snapshots.checkpoints, taken, n).await {
                shell.signals.mark_failed(&e.to_string());
            }
            snapshots.writing.store(false, Ordering::Release);
        });
    }

    /// The snapshot of the query as `engine` stands, if it is at a consistent moment: no input
    /// between its calls and its commit, no output batch waiting to be sent.
    pub(super) async fn snapshot_of(
        &self,
        engine: &mut Engine,
    ) -> Option<Result<Taken, QueryError>> {
        // (As one worker of several, a worker whose inputs have ended closes its driver
        // while the others go on.)
        if (engine.driver.is_closed() && self.worker.is_none())
            || self.signals.stopping()
            || engine.inputs_at.iter().any(|i| i.dirty)
            || !engine.ports.iter().all(|p| p.is_clear())
        {
            return None;
        }
        let state = match engine.driver.save_state() {
            Ok(state) => state,
            Err(e) => return Some(Err(QueryError::Bind(format!("checkpoints: {e}")))),
        };
        let positions = engine
            .inputs_at
            .iter()
            .map(|i| i.position.clone())
            .collect();
        let mut marks = Vec::with_capacity(engine.ports.len());
        for port in engine.ports.iter_mut() {
            marks.push((port.name().to_owned(), port.mark().await));
        }
        Some(Ok((state, positions, marks)))
    }

    /// Every input has ended, on its own (not at a stop): with checkpoints, the last snapshot,
    /// of the whole run, taken and written while the engine is held, so that a query run again
    /// on the directory has nothing left to do. Skipped if an input did not commit its end.
    pub(crate) async fn final_snapshot(&self, engine: &mut Engine) {
        if self.signals.stopping() || self.signals.has_failed() {
            return;
        }
        let Some(snapshots) = self.snapshots.get().filter(|_| self.worker.is_none()) else {
            return;
        };
        for port in engine.ports.iter_mut() {
            let _ = port.flush(&mut engine.driver, &mut SendMode::Always).await;
        }
        let Some(Ok(taken)) = self.snapshot_of(engine).await else {
            return;
        };
        // After a snapshot still being written (a later number, written last).
        while snapshots.writing.load(Ordering::Acquire) {
            tokio::task::yield_now().await;
        }
        let n = snapshots.seq.fetch_add(1, Ordering::AcqRel) + 1;
        if let Err(e) = write(self, &snapshots.checkpoints, taken, n).await {
            self.signals
                .mark_failed(&format!("the last snapshot failed: {e}"));
        }
    }
}

/// Waits for the outputs' positions and writes snapshot number `seq`; `Ok(false)` when an
/// output did not answer (it failed and said why, or the query is ending): nothing written.
async fn write(
    shell: &Shell,
    checkpoints: &Checkpoints,
    (state, positions, marks): Taken,
    seq: u64,
) -> Result<bool, QueryError> {
    let workers = vec![WorkerState {
        driver: state,
        executor: Vec::new(),
    }];
    write_parts(shell, checkpoints, (workers, positions, marks), seq).await
}

/// [`write`] for the parts of several workers: each one's state, every input's position,
/// every output's mark.
pub(super) async fn write_parts(
    shell: &Shell,
    checkpoints: &Checkpoints,
    (workers, positions, marks): Parts,
    seq: u64,
) -> Result<bool, QueryError> {
    let mut outputs = Vec::with_capacity(marks.len());
    for (name, mark) in marks {
        match mark.await {
            Ok(Ok(at)) => outputs.push((name, at)),
            _ => return Ok(false),
        }
    }
    let snapshot = Snapshot {
        query: shell.name.clone(),
        identity: checkpoints.identity_hash(),
        seq,
        inputs: shell
            .streams
            .iter()
            .map(|s| s.name.clone())
            .zip(positions)
            .collect(),
        outputs,
        workers,
    };
    let writer = checkpoints.clone();
    match tokio::task::spawn_blocking(move || writer.save(&snapshot)).await {
        Ok(Ok(())) => Ok(true),
        Ok(Err(error)) => Err(QueryError::Create {
            stream: "checkpoints".to_owned(),
            error,
        }),
        Err(e) => Err(QueryError::Bind(format!("checkpoints: {e}"))),
    }
}
