//! Outputs: each output adapter runs as a task, fed over a bounded channel by the [`Shell`]
//! through its [`OutputPort`]; emptied batches come back to be reused, so that the steady
//! state does not allocate.
//!
//! [`Shell`]: super::shell::Shell

use async_trait::async_trait;
use tokio::sync::{mpsc, oneshot};

use punctual_core::{Batch, EventShape};
use punctual_engine::{Driver, OutputId};

use super::running::Monitor;
use super::shell::{OutputPort, SendMode};
use super::tasks::Tasks;
use crate::adapter::{OutputAdapter, OutputContext, Payload};
use crate::error::{EnqueueError, QueryError};

/// An output binding before start: which stream, its shape, and the adapter.
pub(crate) struct PendingOutput<P: Payload> {
    pub(crate) name: String,
    pub(crate) shape: EventShape,
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
    /// Its name.
    fn name(&self) -> &str;
    /// Spawns the output task (first rewound to `rewind`, with checkpoints); returns the
    /// shell's port to it.
    fn spawn(
        self: Box<Self>,
        tasks: &mut Tasks,
        capacity: usize,
        monitor: &Monitor,
        rewind: Option<u64>,
    ) -> Box<dyn OutputPort>;
}

impl<P: Payload> ErasedOutput for PendingOutput<P> {
    fn node(&self) -> punctual_core::ops::NodeId {
        self.id.node()
    }

    fn per_worker(&self) -> bool {
        self.per_worker
    }

    fn name(&self) -> &str {
        &self.name
    }

    fn checkpoint_refusal(&self) -> Option<String> {
        if !self.adapter.can_checkpoint() {
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
        rewind: Option<u64>,
    ) -> Box<dyn OutputPort> {
        let PendingOutput {
            name,
            shape,
            id,
            mut adapter,
            ..
        } = *self;
        let (tx, mut rx) = mpsc::channel::<Message<P>>(capacity);
        let (recycle, recycled) = mpsc::channel::<Batch<P>>(capacity + 2);
        let context = OutputContext::new(name.clone(), shape, monitor.clone());
        let signals = std::sync::Arc::clone(&tasks.signals);
        let task_name = name.clone();
        tasks.spawn(format!("output `{name}`"), async move {
            let name = task_name;
            let fail = |source| QueryError::Adapter {
                role: "output",
                stream: name.clone(),
                error: source,
            };
            // With checkpoints: back to the snapshot's position (the start, without one),
            // dropping what was written after it.
            if let Some(at) = rewind {
                adapter.rewind(at).await.map_err(fail)?;
            }
            adapter.open(&context).await.map_err(fail)?;
            while let Some(message) = rx.recv().await {
                let mut batch = match message {
                    Message::Batch(batch) => batch,
                    Message::Mark(reply) => {
                        let at = adapter.checkpoint().await;
                        let failed = at.as_ref().err().map(ToString::to_string);
                        let _ = reply.send(at);
                        if let Some(why) = failed {
                            return Err(fail(crate::AdapterError::Config(format!(
                                "a checkpoint failed: {why}"
                            ))));
                        }
                        continue;
                    }
                };
                adapter.write(&batch).await.map_err(fail)?;
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
            name,
            pending: Batch::new(),
            tx,
            recycled,
        })
    }
}

/// What the shell sends an output task: a batch, or a mark after which it gives its position
/// for a snapshot.
enum Message<P> {
    Batch(Batch<P>),
    Mark(oneshot::Sender<Result<u64, crate::AdapterError>>),
}

struct Port<P> {
    id: OutputId<P>,
    name: String,
    /// What the output produced and has not been sent yet.
    pending: Batch<P>,
    tx: mpsc::Sender<Message<P>>,
    recycled: mpsc::Receiver<Batch<P>>,
}

/// Sends what is pending through `permit` (a reused batch takes its place).
fn send<P>(
    permit: mpsc::Permit<'_, Message<P>>,
    pending: &mut Batch<P>,
    recycled: &mut mpsc::Receiver<Batch<P>>,
) {
    let mut batch = recycled.try_recv().unwrap_or_default();
    std::mem::swap(&mut batch, pending);
    permit.send(Message::Batch(batch));
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

    fn is_clear(&self) -> bool {
        self.pending.is_empty()
    }

    fn name(&self) -> &str {
        &self.name
    }

    async fn mark(&mut self) -> oneshot::Receiver<Result<u64, crate::AdapterError>> {
        let (reply, answer) = oneshot::channel();
        // An output task that is gone has failed and reported it: the answer never comes.
        let _ = self.tx.send(Message::Mark(reply)).await;
        answer
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
