//! A harness for testing queries: a scripted source, a manual clock, a collector that records
//! every output item with its CTIs, and assertions that compare segment by segment (the events
//! between two CTIs as a multiset: their order is free).
//!
//! ```
//! use punctual::prelude::*;
//! use punctual::runtime::{InputOptions, Query};
//! use punctual::testing::{assert_segments, Collector, Script};
//!
//! # #[tokio::main(flavor = "current_thread", start_paused = true)]
//! # async fn main() {
//! let t = Time::from_ticks;
//! let script = Script::new().point(t(1), 10).point(t(3), 30).cti(t(5)).point(t(6), 60).cti(Time::INF);
//! let mut query = Query::new("test");
//! let s = query.create_stream(InputOptions::new("in", EventShape::Point), &script, &()).unwrap();
//! let out = Collector::new();
//! query.bind_output(&s.filter(|v| *v > 10), &out, &()).unwrap();
//! query.start().unwrap().wait().await.unwrap();
//! assert_segments(&out.items(), &[
//!     StreamItem::point(t(3), 30), StreamItem::Cti(t(5)),
//!     StreamItem::point(t(6), 60), StreamItem::Cti(Time::INF),
//! ]);
//! # }
//! ```

use std::fmt::Debug;
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use async_trait::async_trait;

use punctual_core::ops::Payload;
use punctual_core::{Event, EventShape, StreamItem, Time, TimeSpan};
use punctual_runtime::{AdapterError, InputAdapter, InputAdapterFactory, InputContext};

pub use punctual_adapters::CollectOutput as Collector;
pub use punctual_runtime::ManualClock;

#[derive(Clone, Debug)]
enum Step<P> {
    Item(StreamItem<P>),
    Clock(TimeSpan),
}

/// A scripted input: items, and clock advances between them. It is its own factory (config
/// `()`), for one stream.
#[derive(Debug)]
pub struct Script<P> {
    steps: Vec<Step<P>>,
    clock: Option<ManualClock>,
    taken: Mutex<bool>,
}

impl<P> Default for Script<P> {
    fn default() -> Self {
        Script {
            steps: Vec::new(),
            clock: None,
            taken: Mutex::new(false),
        }
    }
}

impl<P> Script<P> {
    /// An empty script.
    pub fn new() -> Self {
        Self::default()
    }

    fn push(mut self, step: Step<P>) -> Self {
        self.steps.push(step);
        self
    }

    /// A point event at `t`.
    pub fn point(self, t: Time, payload: P) -> Self {
        self.push(Step::Item(StreamItem::point(t, payload)))
    }

    /// An interval event `[start, end)`.
    pub fn interval(self, start: Time, end: Time, payload: P) -> Self {
        self.push(Step::Item(StreamItem::interval(start, end, payload)))
    }

    /// A start edge.
    pub fn start(self, start: Time, payload: P) -> Self {
        self.push(Step::Item(StreamItem::start_edge(start, payload)))
    }

    /// An end edge closing the start edge at `start`.
    pub fn end(self, start: Time, end: Time, payload: P) -> Self {
        self.push(Step::Item(StreamItem::end_edge(start, end, payload)))
    }

    /// A CTI.
    pub fn cti(self, t: Time) -> Self {
        self.push(Step::Item(StreamItem::Cti(t)))
    }

    /// Any item.
    pub fn item(self, item: StreamItem<P>) -> Self {
        self.push(Step::Item(item))
    }

    /// Moves `clock` forward by `by` here: the query's clock task reads it before (so the items
    /// scripted so far count as seen at the old time) and after (the script sleeps two seconds
    /// of tokio time each time; use a paused tokio clock in tests).
    pub fn advance_clock(mut self, clock: &ManualClock, by: TimeSpan) -> Self {
        self.clock = Some(clock.clone());
        self.push(Step::Clock(by))
    }
}

/// The adapter a [`Script`] makes.
#[derive(Debug)]
pub struct ScriptAdapter<P> {
    steps: Vec<Step<P>>,
    clock: Option<ManualClock>,
}

#[async_trait]
impl<P: Payload> InputAdapter<P> for ScriptAdapter<P> {
    async fn run(&mut self, ctx: &mut InputContext<P>) -> Result<(), AdapterError> {
        for step in std::mem::take(&mut self.steps) {
            match step {
                // Rejections are part of what a test may script: they are counted, not errors.
                Step::Item(item) => match ctx.enqueue(item).await {
                    Err(punctual_runtime::EnqueueError::Rejected { .. }) | Ok(_) => {}
                    Err(e) => return Err(e.into()),
                },
                Step::Clock(by) => {
                    tokio::time::sleep(Duration::from_secs(2)).await;
                    if let Some(c) = &self.clock {
                        c.advance(by);
                    }
                    tokio::time::sleep(Duration::from_secs(2)).await;
                }
            }
        }
        Ok(())
    }
}

impl<P: Payload> InputAdapterFactory<(), P> for Script<P> {
    type Adapter = ScriptAdapter<P>;

    fn create(&self, _: &(), _shape: EventShape) -> Result<ScriptAdapter<P>, AdapterError> {
        let mut taken = self.taken.lock().unwrap_or_else(PoisonError::into_inner);
        if *taken {
            return Err(AdapterError::Config("a Script feeds one stream".into()));
        }
        *taken = true;
        Ok(ScriptAdapter {
            steps: self.steps.clone(),
            clock: self.clock.clone(),
        })
    }
}

/// The output cut at its CTIs: each segment's events, and the CTI that closes it (`None` for
/// events after the last CTI).
pub fn segments<P: Clone>(items: &[StreamItem<P>]) -> Vec<(Vec<Event<P>>, Option<Time>)> {
    let mut out = vec![(Vec::new(), None)];
    for item in items {
        match item {
            StreamItem::Insert(e) => {
                if let Some(last) = out.last_mut() {
                    last.0.push(e.clone());
                }
            }
            StreamItem::Cti(t) => {
                if let Some(last) = out.last_mut() {
                    last.1 = Some(*t);
                }
                out.push((Vec::new(), None));
            }
        }
    }
    if out.last().is_some_and(|s| s.0.is_empty() && s.1.is_none()) {
        out.pop();
    }
    out
}

/// The differences between two outputs, segment by segment: CTIs must match exactly, each
/// segment's events as a multiset. Empty when they agree.
pub fn segment_differences<P: Clone + PartialEq + Debug>(
    actual: &[StreamItem<P>],
    expected: &[StreamItem<P>],
) -> Vec<String> {
    let (a, e) = (segments(actual), segments(expected));
    let mut diffs = Vec::new();
    for k in 0..a.len().max(e.len()) {
        let empty = (Vec::new(), None);
        let (sa, se) = (a.get(k).unwrap_or(&empty), e.get(k).unwrap_or(&empty));
        if sa.1 != se.1 {
            diffs.push(format!(
                "segment {k}: closed by {:?}, expected {:?}",
                sa.1, se.1
            ));
        }
        let mut unmatched: Vec<&Event<P>> = sa.0.iter().collect();
        for ev in &se.0 {
            match unmatched.iter().position(|x| *x == ev) {
                Some(i) => {
                    unmatched.swap_remove(i);
                }
                None => diffs.push(format!("segment {k}: missing {ev:?}")),
            }
        }
        for ev in unmatched {
            diffs.push(format!("segment {k}: unexpected {ev:?}"));
        }
    }
    diffs
}

/// Panics with every difference unless `actual` matches `expected` segment by segment.
#[track_caller]
pub fn assert_segments<P: Clone + PartialEq + Debug>(
    actual: &[StreamItem<P>],
    expected: &[StreamItem<P>],
) {
    let diffs = segment_differences(actual, expected);
    assert!(
        diffs.is_empty(),
        "outputs differ:\n  {}\nactual: {actual:?}",
        diffs.join("\n  ")
    );
}
