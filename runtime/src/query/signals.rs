//! [`Signals`]: what every task of a running query shares: stop (and how), the first
//! failure, whether every input has ended, the outputs' progress and the final report.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, Ordering};
use std::sync::{Mutex, MutexGuard, PoisonError};

use tokio::sync::watch;

use super::running::{Ending, QueryReport, StopMode};
use crate::error::EnqueueError;

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The query's signals, shared by every task: stop (and how), the first failure, whether
/// every input has ended, the outputs' progress, and the report the outputs finish with.
#[derive(Debug)]
pub(crate) struct Signals {
    stop: watch::Sender<bool>,
    /// 0: not stopping; 1: a drain; 2: an abort.
    mode: AtomicU8,
    done: watch::Sender<bool>,
    failure: Mutex<Option<EnqueueError>>,
    failed: AtomicBool,
    /// Why the query failed, first reason only.
    why: Mutex<Option<String>>,
    /// Batches the outputs have written.
    progress: AtomicU64,
    /// The report of the ended query, for the outputs' `finish`.
    report: Mutex<Option<QueryReport>>,
}

impl Signals {
    pub(crate) fn new() -> Self {
        Signals {
            stop: watch::channel(false).0,
            mode: AtomicU8::new(0),
            done: watch::channel(false).0,
            failure: Mutex::new(None),
            failed: AtomicBool::new(false),
            why: Mutex::new(None),
            progress: AtomicU64::new(0),
            report: Mutex::new(None),
        }
    }
}

impl Signals {
    /// Asks every task to stop; an abort wins over a drain asked for before or after it.
    pub(crate) fn request_stop(&self, mode: StopMode) {
        let code = match mode {
            StopMode::Drain => 1,
            StopMode::Abort => 2,
        };
        self.mode.fetch_max(code, Ordering::SeqCst);
        self.stop.send_replace(true);
    }

    /// Whether a stop was asked for (a drain or an abort): set before the stop watch says so.
    pub(crate) fn stopping(&self) -> bool {
        self.mode.load(Ordering::SeqCst) != 0
    }

    /// Whether the query is being stopped with a drain (final CTIs), not aborted or failed.
    pub(crate) fn draining(&self) -> bool {
        self.mode.load(Ordering::SeqCst) == 1
    }

    /// Whether the query is being aborted (no final CTIs).
    pub(crate) fn aborting(&self) -> bool {
        self.mode.load(Ordering::SeqCst) == 2
    }

    pub(crate) fn subscribe(&self) -> watch::Receiver<bool> {
        self.stop.subscribe()
    }

    /// Resolves once every input has ended (and the outputs are closing).
    pub(crate) async fn done(&self) {
        let mut done = self.done.subscribe();
        let _ = done.wait_for(|d| *d).await;
    }

    /// Marks the query failed (a task returned an error, `why`): streams issue no final CTIs,
    /// so that no output looks complete when it is not.
    pub(crate) fn mark_failed(&self, why: &str) {
        lock(&self.why).get_or_insert_with(|| why.to_owned());
        self.failed.store(true, Ordering::SeqCst);
        self.request_stop(StopMode::Drain);
    }

    pub(crate) fn has_failed(&self) -> bool {
        self.failed.load(Ordering::SeqCst)
    }

    /// A stream failed the query (its reorder buffer reached the cap).
    pub(crate) fn fail(&self, e: EnqueueError) {
        let why = e.to_string();
        lock(&self.failure).get_or_insert(e);
        self.mark_failed(&why);
    }

    pub(crate) fn failure(&self) -> Option<EnqueueError> {
        lock(&self.failure).clone()
    }

    /// How the query is ending, as far as is known now.
    pub(crate) fn ending(&self) -> Ending {
        if self.has_failed() {
            let why = lock(&self.why).clone();
            return Ending::Failed(why.unwrap_or_else(|| "a task failed".to_owned()));
        }
        match self.mode.load(Ordering::SeqCst) {
            0 => Ending::Completed,
            1 => Ending::Drained,
            _ => Ending::Aborted,
        }
    }

    /// An output wrote a batch.
    pub(crate) fn made_progress(&self) {
        self.progress.fetch_add(1, Ordering::SeqCst);
    }

    /// How many batches the outputs have written.
    pub(crate) fn progress(&self) -> u64 {
        self.progress.load(Ordering::SeqCst)
    }

    /// The report of the ended query (set when the last input has ended).
    /// Keeps the ended query's report for the outputs' `finish`.
    pub(crate) fn set_report(&self, report: QueryReport) {
        *lock(&self.report) = Some(report);
    }

    /// Says that every input has ended and the report is made.
    pub(crate) fn mark_done(&self) {
        self.done.send_replace(true);
    }

    pub(crate) fn final_report(&self) -> Option<QueryReport> {
        lock(&self.report).clone()
    }
}
