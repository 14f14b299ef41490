//! The gate that holds a worker's inputs while a snapshot of several workers is cut
//! ([`QueryWorker::pause_inputs`](super::QueryWorker::pause_inputs)).

use std::sync::atomic::{AtomicBool, Ordering};

/// Closed while the workers cut a snapshot: an input that has committed its position (and
/// the clock) waits at its next call into the driver until it opens; an input that has not
/// goes on until it commits.
#[derive(Debug, Default)]
pub(crate) struct Gate {
    closed: AtomicBool,
    opened: tokio::sync::Notify,
}

impl Gate {
    pub(crate) fn close(&self) {
        self.closed.store(true, Ordering::Release);
    }

    pub(crate) fn open(&self) {
        self.closed.store(false, Ordering::Release);
        self.opened.notify_waiters();
    }

    pub(crate) fn is_closed(&self) -> bool {
        self.closed.load(Ordering::Acquire)
    }

    /// Resolves once the gate is open (at once if it is).
    pub(crate) async fn opened(&self) {
        until(&self.opened, || !self.is_closed()).await;
    }
}

/// Resolves once `done` holds, checked at once and then each time `notify` wakes its waiters.
pub(crate) async fn until(notify: &tokio::sync::Notify, done: impl Fn() -> bool) {
    loop {
        let mut notified = std::pin::pin!(notify.notified());
        // Registered before the check: a wake-up between the check and the wait is not lost.
        notified.as_mut().enable();
        if done() {
            return;
        }
        notified.await;
    }
}

#[cfg(test)]
mod tests {
    use super::Gate;
    use std::sync::Arc;

    #[tokio::test]
    async fn a_closed_gate_holds_until_it_opens() {
        let gate = Arc::new(Gate::default());
        gate.opened().await;
        gate.close();
        let waiting = tokio::spawn({
            let gate = Arc::clone(&gate);
            async move { gate.opened().await }
        });
        tokio::task::yield_now().await;
        assert!(!waiting.is_finished());
        gate.open();
        waiting.await.expect("the waiting input goes on");
    }
}
