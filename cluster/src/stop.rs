//! [`StopSignal`]: a stop from the outside (Ctrl-C, say) for a run of [`run_query`](crate::run_query),
//! carried to every worker of every process.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// Stops a run of [`run_query`](crate::run_query) with a drain, as
/// [`StopHandle::stop`](punctual_runtime::StopHandle::stop) stops one query: every input
/// stops reading, what the operators hold comes out with the final CTIs, and the run ends as
/// if its inputs had ended. A stop given in one process reaches every worker of every
/// process (the first worker of this process that still has a running input tells the
/// others), so stopping one process of a run stops the run. Clones are the same signal.
///
/// ```
/// use punctual_cluster::ClusterConfig;
/// let config = ClusterConfig::threads(2);
/// let stop = config.stop.clone(); // give it to a Ctrl-C handler
/// assert!(!stop.is_stopped());
/// stop.stop();
/// assert!(config.stop.is_stopped());
/// ```
#[derive(Clone, Default)]
pub struct StopSignal {
    inner: Arc<Inner>,
}

#[derive(Default)]
struct Inner {
    stopped: AtomicBool,
    notify: tokio::sync::Notify,
}

impl StopSignal {
    /// A signal not given yet.
    pub fn new() -> Self {
        StopSignal::default()
    }

    /// Gives the signal (again: nothing more happens).
    pub fn stop(&self) {
        if !self.inner.stopped.swap(true, Ordering::SeqCst) {
            self.inner.notify.notify_waiters();
        }
    }

    /// Whether it was given.
    pub fn is_stopped(&self) -> bool {
        self.inner.stopped.load(Ordering::SeqCst)
    }

    /// Resolves once it is given.
    pub(crate) async fn stopped(&self) {
        loop {
            let notified = self.inner.notify.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if self.is_stopped() {
                return;
            }
            notified.await;
        }
    }
}

impl std::fmt::Debug for StopSignal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StopSignal")
            .field("stopped", &self.is_stopped())
            .finish()
    }
}

/// The same signal (clones of one another).
impl PartialEq for StopSignal {
    fn eq(&self, other: &StopSignal) -> bool {
        Arc::ptr_eq(&self.inner, &other.inner)
    }
}

impl Eq for StopSignal {}
