//! The snapshot task of a query with checkpoints ([`crate::checkpoint`]): every interval it
//! waits for a consistent moment (no input between its calls and its position's commit, no
//! output batch waiting to be sent), saves the query's state and the inputs' positions under
//! the lock, marks each output after the batches it was sent, and writes the snapshot once
//! every output has made its writes durable and given its position.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::oneshot;

use super::shell::{Engine, Shell};
use super::tasks::Tasks;
use crate::checkpoint::{Checkpoints, Snapshot, SourcePosition};
use crate::error::{AdapterError, QueryError};

/// How long a snapshot waits before it looks again for a consistent moment.
const RETRY: Duration = Duration::from_millis(2);

/// What a snapshot took under the lock: the state, the inputs' positions, the outputs' marks.
type Taken = (
    Vec<u8>,
    Vec<Option<SourcePosition>>,
    Vec<(String, oneshot::Receiver<Result<u64, AdapterError>>)>,
);

impl Shell {
    /// Takes a snapshot now if the query is at a consistent moment; `None` if it is not (try
    /// again soon) or the query has ended.
    async fn take_snapshot(&self) -> Option<Result<Taken, QueryError>> {
        let mut engine = self.engine.lock().await;
        self.snapshot_of(&mut engine).await
    }

    /// The snapshot of the query as `engine` stands, if it is at a consistent moment.
    async fn snapshot_of(&self, engine: &mut Engine) -> Option<Result<Taken, QueryError>> {
        if engine.driver.is_closed()
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
    /// of the whole run, taken while the engine is held, so that a query run again on the
    /// directory has nothing left to do. Skipped if an input did not commit its end.
    pub(crate) async fn final_snapshot(&self, engine: &mut Engine) {
        if self.signals.stopping() || self.signals.has_failed() {
            return;
        }
        let Some((checkpoints, seq)) = self.snapshots.get() else {
            return;
        };
        let mut mode = super::shell::SendMode::Always;
        for port in engine.ports.iter_mut() {
            let _ = port.flush(&mut engine.driver, &mut mode).await;
        }
        let Some(Ok(taken)) = self.snapshot_of(engine).await else {
            return;
        };
        let n = seq.fetch_add(1, std::sync::atomic::Ordering::AcqRel) + 1;
        if let Err(e) = write(self, checkpoints, taken, n).await {
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
        state,
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

/// Spawns the snapshot task: a snapshot every `checkpoints.interval()`, numbered on from
/// `seq`, until the query ends.
pub(crate) fn spawn_snapshots(
    tasks: &mut Tasks,
    shell: &Arc<Shell>,
    checkpoints: Checkpoints,
    seq: u64,
) {
    let every = checkpoints.interval();
    let _ = shell
        .snapshots
        .set((checkpoints, std::sync::atomic::AtomicU64::new(seq)));
    let shell = Arc::clone(shell);
    tasks.spawn(format!("checkpoints of `{}`", shell.name), async move {
        let Some((checkpoints, seq)) = shell.snapshots.get() else {
            return Ok(());
        };
        loop {
            tokio::select! {
                _ = tokio::time::sleep(every) => {}
                _ = shell.signals.done() => return Ok(()),
            }
            tokio::task::yield_now().await;
            let taken = loop {
                if shell.signals.stopping() {
                    return Ok(());
                }
                match shell.take_snapshot().await {
                    Some(taken) => break taken?,
                    None => tokio::select! {
                        _ = tokio::time::sleep(RETRY) => {}
                        _ = shell.signals.done() => return Ok(()),
                    },
                }
            };
            let n = seq.fetch_add(1, std::sync::atomic::Ordering::AcqRel) + 1;
            if !write(&shell, checkpoints, taken, n).await? {
                return Ok(());
            }
        }
    });
}
