//! `--timeline FILE.svg`: what a command's inputs and outputs carried, kept (the first events
//! of each lane) and drawn as a timeline when the run ends.

use std::path::Path;
use std::sync::{Arc, Mutex, PoisonError};

use async_trait::async_trait;

use punctual_adapters::{AdapterError, OutputAdapter, OutputAdapterFactory};
use punctual_core::ops::AnyStream;
use punctual_core::{Batch, EventShape, Row, StreamItem};
use punctual_policies::{DeadLetter, DeadLetterReason};

use crate::timeline::{render_picture, Lane, Mark, Picture};

/// How many events of each lane a timeline draws (every CTI is drawn).
pub(super) const DRAWN: usize = 500;

/// What one lane carried: its items (CTIs, and the first [`DRAWN`] events) and the events
/// left out.
#[derive(Default)]
struct Kept {
    items: Vec<StreamItem<Row>>,
    events: usize,
    left_out: u64,
    letters: Vec<(punctual_core::Event<Row>, Mark)>,
}

/// Keeps what a stream carries, for the picture; an output adapter factory.
#[derive(Clone, Default)]
pub(super) struct Capture(Arc<Mutex<Kept>>);

impl Capture {
    fn kept(&self) -> std::sync::MutexGuard<'_, Kept> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
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
        let mut kept = self.kept();
        if kept.events < DRAWN {
            kept.events += 1;
            kept.letters.push((e.clone(), mark));
        } else {
            kept.left_out += 1;
        }
    }

    /// The lane: the events carried (plain, or as results), then the dropped and rejected
    /// ones, in time order.
    fn lane(&self, label: &str, results: bool) -> Lane {
        let kept = self.kept();
        let mut lane = if results {
            Lane::output(label, &kept.items)
        } else {
            let mut lane = Lane::output(label, &kept.items);
            for (_, mark) in &mut lane.events {
                *mark = Mark::Plain;
            }
            lane
        };
        lane.events.extend(kept.letters.iter().cloned());
        lane.events.sort_by_key(|(e, _)| e.kind.start());
        if kept.left_out > 0 {
            lane.label = format!("{label} (first {DRAWN} events)");
        }
        lane
    }
}

#[async_trait]
impl OutputAdapter<Row> for Capture {
    async fn write(&mut self, batch: &Batch<Row>) -> Result<(), AdapterError> {
        let mut kept = self.kept();
        for item in batch.items() {
            match item {
                StreamItem::Cti(t) => kept.items.push(StreamItem::Cti(t)),
                StreamItem::Insert(e) if kept.events < DRAWN => {
                    kept.events += 1;
                    kept.items.push(StreamItem::Insert(punctual_core::Event {
                        kind: e.kind,
                        payload: e.payload.clone(),
                    }));
                }
                StreamItem::Insert(_) => kept.left_out += 1,
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
        query: &mut punctual_adapters::Query,
        name: &str,
        stream: &punctual_core::ops::Stream<Row, O>,
    ) -> Result<Capture, punctual_adapters::QueryError> {
        let capture = Capture::default();
        query.bind_output(stream.map(Row::clone), &capture, &())?;
        self.inputs.push((name.to_owned(), capture.clone()));
        Ok(capture)
    }

    /// Keeps what output `name` receives.
    pub(super) fn output(
        &mut self,
        query: &mut punctual_adapters::Query,
        name: &str,
        stream: impl Into<AnyStream<Row>>,
    ) -> Result<(), punctual_adapters::QueryError> {
        let capture = Capture::default();
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
            .map(|(n, c)| c.lane(&format!("in: {n}"), false))
            .collect();
        lanes.extend(
            self.outputs
                .iter()
                .map(|(n, c)| c.lane(&format!("out: {n}"), true)),
        );
        let svg = render_picture(&Picture {
            title: title.to_owned(),
            lanes,
        });
        std::fs::write(path, svg).map_err(|e| format!("{}: {e}", path.display()))
    }
}
