//! Concept: a filter pushed down into the ingress. An adapter that knows the query wants only
//! some records (here from its configuration: a minimum value) hands its decoded records over
//! with `InputContext::enqueue_point_records_where`: the records the predicate refuses never
//! enter the query, yet they count for CTI generation and the CTI checks exactly as if they
//! had, so the query sees what a `filter` on the whole stream would pass. The refused records
//! are counted as `filtered` in the stream's counters (nothing disappears unaccounted). On an
//! unordered stream this is the fastest way to filter: a refused record is never written out.
//!
//! Run: `cargo run --example pushdown`

use async_trait::async_trait;
use punctual::adapters::{
    AdapterError, CollectOutput, DeclareAdvanceTimeProperties, InputAdapter, InputAdapterFactory,
    InputContext, InputOptions, Query,
};
use punctual::prelude::*;

/// A decoded record: (milliseconds, sensor, value).
type Record = (i64, char, i64);

/// Replays decoded records; `min_value`, if any, is pushed down into the ingress.
struct Decoded {
    records: Vec<Record>,
}

struct DecodedAdapter {
    records: Vec<Record>,
    min_value: Option<i64>,
}

impl InputAdapterFactory<Option<i64>, (char, i64)> for Decoded {
    type Adapter = DecodedAdapter;
    fn create(
        &self,
        min_value: &Option<i64>,
        _: EventShape,
    ) -> Result<DecodedAdapter, AdapterError> {
        Ok(DecodedAdapter {
            records: self.records.clone(),
            min_value: *min_value,
        })
    }
}

impl DeclareAdvanceTimeProperties<Option<i64>> for Decoded {}

#[async_trait]
impl InputAdapter<(char, i64)> for DecodedAdapter {
    async fn run(&mut self, ctx: &mut InputContext<(char, i64)>) -> Result<(), AdapterError> {
        let time = |r: &Record| Time::from_ticks(r.0 * 10_000);
        let payload = |r: &Record| (r.1, r.2);
        match self.min_value {
            Some(min) => {
                let keep = |p: &(char, i64)| p.1 >= min;
                ctx.enqueue_point_records_where(&self.records, time, payload, keep)
                    .await?;
            }
            None => {
                ctx.enqueue_point_records(&self.records, time, payload)
                    .await?;
            }
        }
        Ok(())
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    // Arrival order; the reading at 2 ms comes after CTI(3 ms) and is dropped in both streams.
    let records: Vec<Record> = vec![
        (1, 'a', 10),
        (3, 'b', 50),
        (2, 'a', 90),
        (5, 'a', 30),
        (6, 'b', 70),
        (9, 'a', 40),
        (8, 'b', 20),
        (12, 'a', 80),
    ];
    let factory = Decoded { records };
    // A CTI every 2 events, at the highest start so far.
    let settings = AdvanceTimeSettings::builder()
        .generation(
            AdvanceTimeGenerationSettings::every_events(2)
                .final_cti(true)
                .build()?,
        )
        .policy(AdvanceTimePolicy::Drop)
        .build()?;
    let mut query = Query::new("pushdown");
    let pushed = query.create_stream(
        InputOptions::new("pushed", EventShape::Point).settings(settings.clone()),
        &factory,
        &Some(40),
    )?;
    let whole = query.create_stream(
        InputOptions::new("whole", EventShape::Point).settings(settings),
        &factory,
        &None,
    )?;
    let filtered = whole.filter(|p| p.1 >= 40);
    let outs = [CollectOutput::new(), CollectOutput::new()];
    query.bind_output(&pushed, &outs[0], &())?;
    query.bind_output(&filtered, &outs[1], &())?;
    let report = query.start()?.wait().await?;

    println!("pushed down: {:?}", outs[0].items());
    assert_eq!(
        outs[0].items(),
        outs[1].items(),
        "the same stream either way"
    );
    for name in ["pushed", "whole"] {
        let c = report.counters(name).ok_or("no counters")?;
        println!(
            "{name}: {} in, {} released, {} dropped, {} filtered",
            c.events_in, c.released, c.dropped, c.filtered
        );
    }
    let pushed = report.counters("pushed").ok_or("no counters")?;
    // 10, 30 and 20 stayed out; 90 at 2 ms broke CTI(3 ms) first and was dropped.
    assert_eq!(
        (pushed.events_in, pushed.dropped, pushed.filtered),
        (8, 1, 3)
    );
    assert_eq!(pushed.released, 4);
    Ok(())
}
