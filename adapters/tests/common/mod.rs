//! Helpers the runtime tests share: closures as input adapters, factories of one adapter.

#![allow(dead_code)] // each test crate uses its share

use futures::future::BoxFuture;

use punctual_adapters::MemoryInput;
use punctual_core::ops::{Payload, Stream};
use punctual_core::{EventShape, Order, StreamItem, Time};
use punctual_runtime::{
    AdapterError, InputAdapter, InputAdapterFactory, InputContext, InputOptions, OutputAdapter,
    OutputAdapterFactory, Query,
};

pub fn t(x: i64) -> Time {
    Time::from_ticks(x)
}

/// An input adapter defined by a closure over its context.
pub struct FnInput<F>(Option<F>);

pub type Run<'a> = BoxFuture<'a, Result<(), AdapterError>>;

#[async_trait::async_trait]
impl<F> InputAdapter<i64> for FnInput<F>
where
    F: for<'a> FnOnce(&'a mut InputContext<i64>) -> Run<'a> + Send,
{
    async fn run(&mut self, ctx: &mut InputContext<i64>) -> Result<(), AdapterError> {
        match self.0.take() {
            Some(f) => f(ctx).await,
            None => Ok(()),
        }
    }
}

/// A factory handing out one pre-built adapter.
pub struct Given<A>(std::sync::Mutex<Option<A>>);

pub fn given<A>(a: A) -> Given<A> {
    Given(std::sync::Mutex::new(Some(a)))
}

impl<A> Given<A> {
    /// The adapter, the first time; a configuration error after.
    fn take(&self) -> Result<A, AdapterError> {
        self.0
            .lock()
            .expect("no test panics while holding it")
            .take()
            .ok_or_else(|| AdapterError::Config("used".into()))
    }
}

impl<A: InputAdapter<i64> + 'static> InputAdapterFactory<(), i64> for Given<A> {
    type Adapter = A;
    fn create(&self, _: &(), _: EventShape) -> Result<A, AdapterError> {
        self.take()
    }
}

impl<A: OutputAdapter<i64> + 'static> OutputAdapterFactory<(), i64> for Given<A> {
    type Adapter = A;
    fn create(&self, _: &(), _: EventShape) -> Result<A, AdapterError> {
        self.take()
    }
}

pub fn input<F>(f: F) -> Given<FnInput<F>>
where
    F: for<'a> FnOnce(&'a mut InputContext<i64>) -> Run<'a> + Send + 'static,
{
    given(FnInput(Some(f)))
}

/// `items` as the input `options` of `query`, replayed from memory ([`MemoryInput`]).
#[allow(
    clippy::ptr_arg,
    reason = "the memory adapter's configuration is the vector itself"
)]
pub fn memory<P: Payload, O: Order>(
    query: &mut Query,
    options: InputOptions<O>,
    items: &Vec<StreamItem<P>>,
) -> Stream<P, O> {
    query
        .create_stream(options, &MemoryInput, items)
        .expect("a valid input")
}

/// Counts per value (`i64` points) in tumbling windows of 100 ticks, a CTI every 50 events
/// and a final one, read by `factory` from `config` into the JSON-lines file `out`, dead
/// letters to `letters`; with checkpoints in `state` (a snapshot as often as it can) if given.
pub fn counts_query<C, F>(
    factory: &F,
    config: &C,
    state: Option<&std::path::Path>,
    out: &std::path::Path,
    letters: &punctual_runtime::DeadLetterCollector<i64>,
) -> Query
where
    F: InputAdapterFactory<C, i64>,
    F::Adapter: 'static,
{
    use punctual_adapters::{JsonLinesOutput, JsonLinesOutputConfig};
    use punctual_policies::{AdvanceTimeGenerationSettings, AdvanceTimeSettings};
    let mut q = Query::new("counts").clock_from_inputs();
    if let Some(state) = state {
        q = q.checkpoints(
            punctual_runtime::Checkpoints::new(state).every(std::time::Duration::ZERO),
        );
    }
    let every = AdvanceTimeGenerationSettings::every_events(50)
        .final_cti(true)
        .build()
        .expect("valid");
    let settings = AdvanceTimeSettings::builder()
        .generation(every)
        .build()
        .expect("valid");
    let s = q
        .create_stream::<_, i64, _, _>(
            InputOptions::new("in", EventShape::Point).settings(settings),
            factory,
            config,
        )
        .expect("binds");
    q.bind_dead_letters(&s, letters.clone()).expect("binds");
    let counts = s
        .tumbling_window(punctual_core::TimeSpan::from_ticks(100))
        .group_by(|v: &i64| *v)
        .count();
    q.bind_output(&counts, &JsonLinesOutput, &JsonLinesOutputConfig::new(out))
        .expect("binds");
    q
}

/// Runs `items` (points of `i64` from memory) into the output `factory` makes of `config`,
/// to the end.
pub async fn write_items<C, F>(items: &[StreamItem<i64>], factory: &F, config: &C)
where
    F: OutputAdapterFactory<C, i64>,
    F::Adapter: 'static,
{
    let mut query = Query::new("write");
    let s = memory(
        &mut query,
        InputOptions::new("in", EventShape::Point),
        &items.to_vec(),
    );
    query.bind_output(&s, factory, config).expect("binds");
    query.start().expect("starts").wait().await.expect("runs");
}

/// Starts `query` and waits for its end; its report.
pub async fn run_to_end(query: Query) -> punctual_runtime::QueryReport {
    query.start().expect("starts").wait().await.expect("runs")
}

/// Starts `query` and waits for its end, which must be a failure; what it says.
pub async fn failure_of(query: Query) -> String {
    let failure = query.start().expect("starts").wait().await;
    failure.expect_err("fails").to_string()
}
