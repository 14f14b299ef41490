//! User-defined operators (`Stream::process`): events and timers in time order, per-key state,
//! and the output CTI rule held whatever the operator emits.

use punctual_core::ops::{Process, ProcessContext, QueryGraph};
use punctual_core::{Batch, Event, Ordered, Time, TimeSpan};

fn t(x: i64) -> Time {
    Time::from_ticks(x)
}

/// Records what it sees as (time, what) with the key's state (the times of its events since
/// its last timer), emits a point per event (asking for the past), and sets and cancels timers.
#[derive(Default)]
struct Recorder {
    seen: std::sync::Arc<std::sync::Mutex<Vec<(i64, String)>>>,
}

impl Process<(char, i64), char> for Recorder {
    type State = Vec<i64>;
    type Output = String;
    fn on_event(
        &mut self,
        key: &char,
        state: &mut Vec<i64>,
        event: &Event<(char, i64)>,
        ctx: &mut ProcessContext<'_, char, String>,
    ) {
        let at = event.kind.start().ticks();
        self.seen
            .lock()
            .expect("no test panics holding it")
            .push((at, format!("event {key}{}", event.payload.1)));
        state.push(at);
        ctx.set_timer(event.kind.start() + TimeSpan::from_ticks(5));
        ctx.set_timer(event.kind.start() + TimeSpan::from_ticks(5)); // the same timer
        ctx.set_timer(t(-100)); // in the past: fires at the present
        if event.payload.1 == 99 {
            ctx.cancel_timer(event.kind.start() + TimeSpan::from_ticks(5));
        }
        // Emitting in the past lands at the present.
        ctx.emit_point(t(0), format!("{key}@{at}"));
    }
    fn on_timer(
        &mut self,
        key: &char,
        state: &mut Vec<i64>,
        at: Time,
        ctx: &mut ProcessContext<'_, char, String>,
    ) {
        self.seen
            .lock()
            .expect("no test panics holding it")
            .push((at.ticks(), format!("timer {key} {state:?}")));
        ctx.clear_state();
    }
}

#[test]
fn events_and_timers_in_time_order_with_the_cti_rule_held() {
    let graph = QueryGraph::new();
    let input = graph.source::<(char, i64), Ordered>();
    let recorder = Recorder::default();
    let seen = std::sync::Arc::clone(&recorder.seen);
    let out_stream = input.process(|e: &(char, i64)| e.0, recorder);
    graph.keep_output(&out_stream);
    let mut batch = Batch::new();
    batch.push_point(t(1), ('a', 1));
    batch.push_point(t(3), ('b', 2));
    batch.push_point(t(6), ('a', 3));
    batch.push_point(t(6), ('b', 99));
    batch.push_cti(t(9));
    graph.feed(&input, &mut batch);
    let mut out = Batch::new();
    graph.take_output(&out_stream, &mut out);
    let seen: Vec<(i64, String)> = seen.lock().expect("no test panics holding it").clone();
    assert_eq!(
        seen,
        vec![
            (1, "event a1".to_owned()),
            // The timer set in the past fires before the next event, at its own time (1).
            (1, "timer a [1]".to_owned()),
            (3, "event b2".to_owned()),
            (3, "timer b [3]".to_owned()),
            // a's timer at 6 (set at 1, and again at 6: one timer) comes after the events at 6;
            // its state was cleared at 1, so it holds only 6.
            (6, "event a3".to_owned()),
            (6, "event b99".to_owned()),
            (6, "timer a [6]".to_owned()),
            (6, "timer b [6]".to_owned()),
            (8, "timer b []".to_owned()),
        ],
        "b's timer at 11 (from 6) was cancelled; a's at 11 waits for a CTI past it"
    );
    // Every emission landed at or after the time of the callback that made it, in order, and
    // the output CTI is the input's.
    assert_eq!(
        out.payloads(),
        &["a@1", "b@3", "a@6", "b@6"].map(String::from)
    );
    assert_eq!(out.sync(), &[t(1), t(3), t(6), t(6)]);
    assert_eq!(out.last_cti(), Some(t(9)));
}
