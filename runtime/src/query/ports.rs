//! Outputs: each output adapter runs as a task, fed over a bounded channel by the [`Shell`]
//! through its [`OutputPort`]; emptied batches come back to be reused, so that the steady
//! state does not allocate.
//!
//! [`Shell`]: super::shell::Shell

use async_trait::async_trait;
use tokio::sync::mpsc;

use punctual_core::{Batch, EventShape};
use punctual_engine::{Driver, OutputId};

use super::running::Monitor;
use super::shell::{OutputPort, SendMode};
use super::tasks::Tasks;
use crate::adapter::{OutputAdapter, OutputContext, Payload};
use crate::checkpoint::{self, Checkpoints};
use crate::error::{EnqueueError, QueryError};

/// An output binding before start: which stream, its shape, and the adapter.
pub(crate) struct PendingOutput<P: Payload> {
    pub(crate) name: String,
    pub(crate) shape: EventShape,
    /// Whether it is bound to an ordered stream.
    pub(crate) ordered: bool,
    pub(crate) id: OutputId<P>,
    pub(crate) adapter: Box<dyn OutputAdapter<P>>,
    /// Whether each worker writes its share ([`OutputAdapterFactory::per_worker`]).
    ///
    /// [`OutputAdapterFactory::per_worker`]: crate::OutputAdapterFactory::per_worker
    pub(crate) per_worker: bool,
}

/// An output binding with its payload type erased.
pub(crate) trait ErasedOutput: Send {
    /// The stream's node.
    fn node(&self) -> punctual_core::ops::NodeId;
    /// Whether each worker of several writes its share of the output.
    fn per_worker(&self) -> bool;
    /// Why it cannot take part in checkpoints, if it cannot.
    fn checkpoint_refusal(&self) -> Option<String>;
    /// Spawns the output task; returns the shell's port to it.
    fn spawn(
        self: Box<Self>,
        tasks: &mut Tasks,
        capacity: usize,
        monitor: &Monitor,
        checkpoints: Option<Checkpoints>,
    ) -> Box<dyn OutputPort>;
}

impl<P: Payload> ErasedOutput for PendingOutput<P> {
    fn node(&self) -> punctual_core::ops::NodeId {
        self.id.node()
    }

    fn per_worker(&self) -> bool {
        self.per_worker
    }

    fn checkpoint_refusal(&self) -> Option<String> {
        if !self.ordered {
            Some(format!(
                "output `{}` is bound to an unordered stream (its position is not a CTI)",
                self.name
            ))
        } else if !self.adapter.can_checkpoint() {
            Some(format!(
                "output `{}` cannot checkpoint (a JSON-lines file output can)",
                self.name
            ))
        } else {
            None
        }
    }

    fn spawn(
        self: Box<Self>,
        tasks: &mut Tasks,
        capacity: usize,
        monitor: &Monitor,
        checkpoints: Option<Checkpoints>,
    ) -> Box<dyn OutputPort> {
        let PendingOutput {
            name,
            shape,
            id,
            mut adapter,
            ..
        } = *self;
        let (tx, mut rx) = mpsc::channel::<Batch<P>>(capacity);
        let (recycle, recycled) = mpsc::channel::<Batch<P>>(capacity + 2);
        let context = OutputContext::new(name.clone(), shape, monitor.clone());
        let signals = std::sync::Arc::clone(&tasks.signals);
        tasks.spawn(format!("output `{name}`"), async move {
            let fail = |source| QueryError::Adapter {
                role: "output",
                stream: name.clone(),
                error: source,
            };
            // With checkpoints: back to the last recorded position, and what was written
            // through its CTI is skipped as the inputs replay.
            let mut restoring = None;
            if let Some(c) = &checkpoints {
                let at = c.load(&name).map_err(fail)?;
                adapter
                    .rewind(at.map_or(0, |p| p.bytes))
                    .await
                    .map_err(fail)?;
                restoring = at.map(|p| p.cti);
            }
            let mut last_checkpoint: Option<tokio::time::Instant> = None;
            adapter.open(&context).await.map_err(fail)?;
            while let Some(mut batch) = rx.recv().await {
                let rest = restoring.map(|t| checkpoint::after(&batch, t));
                let to_write = match &rest {
                    None => Some(&batch),
                    Some(None) => None, // written before the checkpoint
                    Some(Some(rest)) => {
                        restoring = None;
                        Some(rest)
                    }
                };
                if let Some(b) = to_write {
                    adapter.write(b).await.map_err(fail)?;
                    // (Never at the final CTI: a stop with a drain emits one as if the input
                    // had ended; a restart continues from the last finite checkpoint.)
                    let at = checkpoint::ends_with_cti(b).filter(|t| *t < punctual_core::Time::INF);
                    if let (Some(c), Some(cti)) = (&checkpoints, at) {
                        let due = last_checkpoint.is_none_or(|at| at.elapsed() >= c.interval());
                        if due {
                            let bytes = adapter.checkpoint().await.map_err(fail)?;
                            c.save(&name, checkpoint::Position { cti, bytes })
                                .map_err(fail)?;
                            last_checkpoint = Some(tokio::time::Instant::now());
                        }
                    }
                }
                signals.made_progress();
                batch.clear();
                let _ = recycle.try_send(batch);
                if rx.is_empty() {
                    adapter.idle().await.map_err(fail)?;
                }
            }
            match signals.final_report() {
                Some(report) => adapter.finish(&report).await.map_err(fail),
                // The query was torn down before its end was known (a stop timeout).
                None => Ok(()),
            }
        });
        Box::new(Port {
            id,
            pending: Batch::new(),
            tx,
            recycled,
        })
    }
}

struct Port<P> {
    id: OutputId<P>,
    /// What the output produced and has not been sent yet.
    pending: Batch<P>,
    tx: mpsc::Sender<Batch<P>>,
    recycled: mpsc::Receiver<Batch<P>>,
}

/// Sends what is pending through `permit` (a reused batch takes its place).
fn send<P>(
    permit: mpsc::Permit<'_, Batch<P>>,
    pending: &mut Batch<P>,
    recycled: &mut mpsc::Receiver<Batch<P>>,
) {
    let mut batch = recycled.try_recv().unwrap_or_default();
    std::mem::swap(&mut batch, pending);
    permit.send(batch);
}

#[async_trait]
impl<P: Payload> OutputPort for Port<P> {
    async fn flush(
        &mut self,
        driver: &mut Driver,
        mode: &mut SendMode<'_>,
    ) -> Result<(), EnqueueError> {
        driver.take_output(&self.id, &mut self.pending);
        if self.pending.is_empty() {
            return Ok(());
        }
        let permit = match mode {
            SendMode::Always => self.tx.reserve().await,
            SendMode::StopAware(stop) => tokio::select! {
                biased;
                p = self.tx.reserve() => p,
                _ = stop.wait_for(|s| *s) => return Err(EnqueueError::Stopping),
            },
        };
        match permit {
            Ok(permit) => send(permit, &mut self.pending, &mut self.recycled),
            // The output task is gone: it failed and reported it.
            Err(_) => self.pending.clear(),
        }
        Ok(())
    }

    fn has_room(&self) -> bool {
        self.tx.is_closed() || self.tx.capacity() > 0
    }

    fn try_flush(&mut self, driver: &mut Driver) {
        driver.take_output(&self.id, &mut self.pending);
        if self.pending.is_empty() {
            return;
        }
        match self.tx.try_reserve() {
            Ok(permit) => send(permit, &mut self.pending, &mut self.recycled),
            Err(mpsc::error::TrySendError::Full(())) => {}
            Err(mpsc::error::TrySendError::Closed(())) => self.pending.clear(),
        }
    }
}
