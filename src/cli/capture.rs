//! `--timeline FILE.svg`: what a command's inputs and outputs carried, kept in a bounded
//! amount of memory (a lane's first events, then counts; its CTIs thinned) and drawn as a
//! timeline when the run ends.

use std::path::Path;
use std::sync::{Arc, Mutex, PoisonError};

use async_trait::async_trait;

use punctual_core::ops::AnyStream;
use punctual_core::{Batch, EventShape, StreamItem, Time};
use punctual_policies::{DeadLetter, DeadLetterReason};
use punctual_rows::Row;
use punctual_runtime::{AdapterError, OutputAdapter, OutputAdapterFactory};

use crate::timeline::{render_picture, Lane, Mark, Picture, Tally, SUMMARY_ABOVE};

/// How many CTIs of a lane a timeline draws at most, before it draws one in two, then one in
/// four, ... (the last one always).
const CTIS_DRAWN: usize = 100;

/// What one lane carried, in a bounded amount of memory whatever the run's length: its first
/// events (up to [`SUMMARY_ABOVE`]), then counts of all of them; its CTIs, thinned.
#[derive(Default)]
struct Kept {
    /// The events while there are few (each drawn on a row of its own).
    events: Vec<(punctual_core::Event<Row>, Mark)>,
    /// Every event once there are many (drawn as counts).
    tally: Tally,
    ctis: Ctis,
}

impl Kept {
    fn event(&mut self, event: &punctual_core::Event<Row>, mark: Mark) {
        if self.tally.total() == 0 && self.events.len() < SUMMARY_ABOVE {
            self.events.push((event.clone(), mark));
            return;
        }
        // Many: counted from now on, the ones kept so far too.
        for (e, m) in self.events.drain(..) {
            self.tally.add(e.kind.sync_time(), &m);
        }
        self.tally.add(event.kind.sync_time(), &mark);
    }
}

/// A lane's CTIs, every `stride`-th of them kept (the stride doubled when too many are), and
/// the last.
#[derive(Debug)]
struct Ctis {
    kept: Vec<Time>,
    stride: u64,
    seen: u64,
    last: Option<Time>,
}

impl Default for Ctis {
    fn default() -> Self {
        Ctis {
            kept: Vec::new(),
            stride: 1,
            seen: 0,
            last: None,
        }
    }
}

impl Ctis {
    fn add(&mut self, t: Time) {
        if self.seen.is_multiple_of(self.stride) {
            self.kept.push(t);
            if self.kept.len() >= 2 * CTIS_DRAWN {
                // Those at a multiple of the doubled stride stay: every other one.
                let mut i = 0;
                self.kept.retain(|_| {
                    i += 1;
                    i % 2 == 1
                });
                self.stride *= 2;
            }
        }
        self.seen += 1;
        self.last = Some(t);
    }

    /// The CTIs to draw: those kept and the last.
    fn drawn(&self) -> Vec<Time> {
        let mut drawn = self.kept.clone();
        if let Some(last) = self.last {
            if drawn.last() != Some(&last) {
                drawn.push(last);
            }
        }
        drawn
    }
}

/// Keeps what a stream carries, for the picture; an output adapter factory.
#[derive(Clone, Default)]
pub(super) struct Capture {
    kept: Arc<Mutex<Kept>>,
    /// Whether the stream is an output (its events are results).
    results: bool,
}

impl Capture {
    fn kept(&self) -> std::sync::MutexGuard<'_, Kept> {
        self.kept.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A dead letter of the stream: a dropped or rejected event is drawn as such.
    pub(super) fn letter(&self, letter: &DeadLetter<Row>) {
        let Some(StreamItem::Insert(e)) = &letter.item else {
            return;
        };
        let mark = match letter.reason {
            DeadLetterReason::Late | DeadLetterReason::Watermark(_) => Mark::Dropped,
            DeadLetterReason::Rejected(_) => Mark::Rejected,
            _ => return,
        };
        self.kept().event(e, mark);
    }

    /// The lane: the events carried (plain, or as results), the dropped and rejected ones,
    /// in time order (or counted), and the CTIs.
    fn lane(&self, label: &str) -> Lane {
        let kept = self.kept();
        let mut events = kept.events.clone();
        events.sort_by_key(|(e, _)| e.kind.start());
        let ctis = kept.ctis.drawn();
        let label = match kept.ctis.stride {
            1 => label.to_owned(),
            n => format!("{label} (1 CTI in {n} drawn)"),
        };
        Lane {
            label,
            events,
            ctis,
            tally: kept.tally.clone(),
        }
    }
}

#[async_trait]
impl OutputAdapter<Row> for Capture {
    async fn write(&mut self, batch: &Batch<Row>) -> Result<(), AdapterError> {
        let mark = if self.results {
            Mark::Output
        } else {
            Mark::Plain
        };
        let mut kept = self.kept();
        for item in batch.items() {
            match item {
                StreamItem::Cti(t) => kept.ctis.add(t),
                StreamItem::Insert(e) => {
                    let event = punctual_core::Event {
                        kind: e.kind,
                        payload: e.payload.clone(),
                    };
                    kept.event(&event, mark);
                }
            }
        }
        Ok(())
    }
}

impl OutputAdapterFactory<(), Row> for Capture {
    type Adapter = Capture;
    fn create(&self, _: &(), _: EventShape) -> Result<Capture, AdapterError> {
        Ok(self.clone())
    }
}

/// The lanes of a run: each input (released events, dropped and rejected ones) and each
/// output (results).
#[derive(Default)]
pub(super) struct Timeline {
    inputs: Vec<(String, Capture)>,
    outputs: Vec<(String, Capture)>,
}

impl Timeline {
    /// Keeps what input `name` releases (a copy of the stream is bound to a capture).
    pub(super) fn input<O: punctual_core::Order>(
        &mut self,
        query: &mut punctual_runtime::Query,
        name: &str,
        stream: &punctual_core::ops::Stream<Row, O>,
    ) -> Result<Capture, punctual_runtime::QueryError> {
        let capture = Capture::default();
        query.bind_output(stream.map(Row::clone), &capture, &())?;
        self.inputs.push((name.to_owned(), capture.clone()));
        Ok(capture)
    }

    /// Keeps what output `name` receives.
    pub(super) fn output(
        &mut self,
        query: &mut punctual_runtime::Query,
        name: &str,
        stream: impl Into<AnyStream<Row>>,
    ) -> Result<(), punctual_runtime::QueryError> {
        let capture = Capture {
            results: true,
            ..Capture::default()
        };
        match stream.into() {
            AnyStream::Ordered(s) => query.bind_output(s.map(Row::clone), &capture, &())?,
            AnyStream::Arrival(s) => query.bind_output(s.map(Row::clone), &capture, &())?,
        }
        self.outputs.push((name.to_owned(), capture));
        Ok(())
    }

    /// Writes the picture to `path`.
    pub(super) fn write(&self, title: &str, path: &Path) -> Result<(), String> {
        let mut lanes: Vec<Lane> = self
            .inputs
            .iter()
            .map(|(n, c)| c.lane(&format!("in: {n}")))
            .collect();
        lanes.extend(
            self.outputs
                .iter()
                .map(|(n, c)| c.lane(&format!("out: {n}"))),
        );
        let svg = render_picture(&Picture {
            title: title.to_owned(),
            lanes,
        });
        std::fs::write(path, svg).map_err(|e| format!("{}: {e}", path.display()))
    }
}
