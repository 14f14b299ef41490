//! Concept: a user-defined operator with per-key state and event-time timers (`Stream::process`):
//! session windows. Each user's clicks form a session until they pause for longer than the
//! gap; a timer at `last click + gap` closes the session, and fires only once time has passed
//! it (a later click of anyone, or the input's CTI), so the result is the same whatever order
//! the clicks arrive in between CTIs.
//!
//! Run: `cargo run --example sessions`

use punctual::adapters::{CollectOutput, MemoryInput};
use punctual::core::ops::{Process, ProcessContext};
use punctual::prelude::*;
use punctual::runtime::{InputOptions, Query};

/// A user's open session (saved in snapshots with the operator: serde).
#[derive(Default, serde::Serialize, serde::Deserialize)]
struct Session {
    first: Option<Time>,
    clicks: u32,
    /// When the session closes if no click comes before.
    closes: Option<Time>,
}

/// Sessions per user with a gap: emits (user, clicks, first click) as a point at the session's
/// end, `last click + gap` (an operator emits at or after the present: the time of the timer).
struct Sessions {
    gap: TimeSpan,
}

impl Process<(String, u32), String> for Sessions {
    type State = Session;
    type Output = (String, u32, Time);
    /// `gap` is a setting: all the state is the sessions'.
    const KEEPS_OWN_STATE: bool = false;

    fn on_event(
        &mut self,
        _user: &String,
        session: &mut Session,
        click: &Event<(String, u32)>,
        ctx: &mut ProcessContext<'_, String, (String, u32, Time)>,
    ) {
        let at = click.kind.start();
        session.first.get_or_insert(at);
        session.clicks += 1;
        // The session now closes a gap after this click, not after the previous one.
        if let Some(old) = session.closes.replace(at + self.gap) {
            ctx.cancel_timer(old);
        }
        ctx.set_timer(at + self.gap);
    }

    fn on_timer(
        &mut self,
        user: &String,
        session: &mut Session,
        at: Time,
        ctx: &mut ProcessContext<'_, String, (String, u32, Time)>,
    ) {
        let first = session.first.unwrap_or(at);
        ctx.emit_point(at, (user.clone(), session.clicks, first));
        ctx.clear_state();
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let s = |x: i64| Time::EPOCH + TimeSpan::from_secs(x);
    // (second, user): ann clicks at 0, 10, 25, then after a pause at 100; bob at 5 and 50;
    // some clicks arrive out of order (within 10 s).
    let clicks: Vec<StreamItem<(String, u32)>> = [
        (0, "ann"),
        (10, "ann"),
        (5, "bob"),
        (25, "ann"),
        (50, "bob"),
        (100, "ann"),
        (101, "ann"),
    ]
    .into_iter()
    .enumerate()
    .map(|(n, (at, user))| StreamItem::point(s(at), (user.to_owned(), n as u32)))
    .collect();
    let mut query = Query::new("sessions");
    let input = query.create_stream(
        InputOptions::new("clicks", EventShape::Point).settings(
            AdvanceTimeSettings::unordered_start_time(TimeSpan::from_secs(10)),
        ),
        &MemoryInput,
        &clicks,
    )?;
    let sessions = input.process(
        |c: &(String, u32)| c.0.clone(),
        Sessions {
            gap: TimeSpan::from_secs(30),
        },
    );
    let out = CollectOutput::new();
    query.bind_output(&sessions, &out, &())?;
    query.start()?.wait().await?;
    let secs = |t: Time| (t - Time::EPOCH).ticks() / 10_000_000;
    let got: Vec<(String, i64, i64, u32)> = out
        .items()
        .into_iter()
        .filter_map(|i| match i {
            StreamItem::Insert(e) => Some((
                e.payload.0,
                secs(e.payload.2),
                secs(e.kind.start()),
                e.payload.1,
            )),
            StreamItem::Cti(_) => None,
        })
        .collect();
    for (user, from, to, clicks) in &got {
        println!("{user}: a session from {from} s to {to} s, {clicks} clicks");
    }
    // ann: 0, 10, 25 (closes at 55); bob: 5 (closes at 35), then 50 (closes at 80); ann: 100,
    // 101 (closes at 131, released by the final CTI).
    assert_eq!(
        got.iter()
            .map(|(user, from, to, clicks)| (user.as_str(), *from, *to, *clicks))
            .collect::<Vec<_>>(),
        [
            ("bob", 5, 35, 1),
            ("ann", 0, 55, 3),
            ("bob", 50, 80, 1),
            ("ann", 100, 131, 2)
        ]
    );
    Ok(())
}
