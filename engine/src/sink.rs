//! Where an input's dead letters go.

use std::sync::{Arc, Mutex, PoisonError};

use punctual_policies::DeadLetter;

/// Receives a stream's dead letters: every dropped, rejected, malformed or unreleased item with
/// its reason. Closures `FnMut(DeadLetter<P>)` are sinks.
pub trait DeadLetterSink<P>: Send {
    /// One dead letter.
    fn dead_letter(&mut self, letter: DeadLetter<P>);
}

impl<P, F: FnMut(DeadLetter<P>) + Send> DeadLetterSink<P> for F {
    fn dead_letter(&mut self, letter: DeadLetter<P>) {
        self(letter)
    }
}

/// A dead-letter sink that keeps every letter in memory; clone it to read them while or after
/// the query runs.
#[derive(Debug)]
pub struct DeadLetterCollector<P> {
    letters: Arc<Mutex<Vec<DeadLetter<P>>>>,
}

impl<P> Clone for DeadLetterCollector<P> {
    fn clone(&self) -> Self {
        DeadLetterCollector {
            letters: Arc::clone(&self.letters),
        }
    }
}

impl<P> Default for DeadLetterCollector<P> {
    fn default() -> Self {
        DeadLetterCollector {
            letters: Arc::new(Mutex::new(Vec::new())),
        }
    }
}

impl<P: Clone> DeadLetterCollector<P> {
    /// An empty collector.
    pub fn new() -> Self {
        Self::default()
    }

    /// The letters received so far.
    pub fn letters(&self) -> Vec<DeadLetter<P>> {
        self.letters
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }
}

impl<P> DeadLetterCollector<P> {
    /// The reasons of the letters received so far, as text, in the order received: why each
    /// item is a dead letter and, for a malformed record, where it was (file and line, peer,
    /// topic and offset).
    ///
    /// ```
    /// use punctual_engine::{DeadLetterCollector, DeadLetterSink};
    /// use punctual_policies::{DeadLetter, DeadLetterReason};
    /// use punctual_core::{StreamItem, Time};
    /// let mut letters = DeadLetterCollector::<i64>::new();
    /// letters.dead_letter(DeadLetter {
    ///     item: Some(StreamItem::point(Time::from_ticks(1), 7)),
    ///     reason: DeadLetterReason::Late,
    ///     cti: Time::from_ticks(5),
    /// });
    /// assert_eq!(letters.reasons(), vec![DeadLetterReason::Late.to_string()]);
    /// ```
    pub fn reasons(&self) -> Vec<String> {
        self.letters
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
            .map(|d| d.reason.to_string())
            .collect()
    }
}

impl<P: Send> DeadLetterSink<P> for DeadLetterCollector<P> {
    fn dead_letter(&mut self, letter: DeadLetter<P>) {
        self.letters
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(letter);
    }
}
