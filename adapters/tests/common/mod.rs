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

/// Point input `name`, no CTI settings.
pub fn point(name: &str) -> InputOptions {
    InputOptions::new(name, EventShape::Point)
}

/// The CSV file `path` timed by its column `time`, in ticks.
pub fn csv_ticks(path: &std::path::Path) -> punctual_adapters::CsvInputConfig {
    punctual_adapters::CsvInputConfig::new(path, "time")
        .time_format(punctual_adapters::line::TimeFormat::Ticks)
}

/// Point input `name` with a CTI at each new start time (`increasing_start_time`).
pub fn ordered(name: &str) -> InputOptions {
    InputOptions::new(name, EventShape::Point)
        .settings(punctual_policies::AdvanceTimeSettings::increasing_start_time())
}

/// A CTI after every `n` events at the highest start so far, a final CTI, `Drop`.
pub fn every_events_then_drop(n: u64) -> punctual_policies::AdvanceTimeSettings {
    use punctual_policies::{
        AdvanceTimeGenerationSettings, AdvanceTimePolicy, AdvanceTimeSettings,
    };
    let every = AdvanceTimeGenerationSettings::every_events(n)
        .final_cti(true)
        .build();
    let settings = AdvanceTimeSettings::builder().generation(every.expect("valid generation"));
    settings
        .policy(AdvanceTimePolicy::Drop)
        .build()
        .expect("valid settings")
}

/// The payloads of the events among `items`, in order (CTIs left out).
pub fn payloads<P: Clone>(items: &[StreamItem<P>]) -> Vec<P> {
    starts_and_payloads(items)
        .into_iter()
        .map(|(_, p)| p)
        .collect()
}

/// Each event's start time and payload among `items`, in order (CTIs left out).
pub fn starts_and_payloads<P: Clone>(items: &[StreamItem<P>]) -> Vec<(Time, P)> {
    let mut events = Vec::new();
    for item in items {
        if let StreamItem::Insert(e) = item {
            events.push((e.kind.start(), e.payload.clone()));
        }
    }
    events
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

/// Makes the named pipe `in.fifo` in `dir` (anew).
pub fn fifo(dir: &std::path::Path) -> std::path::PathBuf {
    let fifo = dir.join("in.fifo");
    let _ = std::fs::remove_file(&fifo);
    let made = std::process::Command::new("mkfifo").arg(&fifo).status();
    assert!(made.is_ok_and(|s| s.success()), "mkfifo runs");
    fifo
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

/// Binds a collecting output and `letters` to `s`, then runs `query` to its end: the output
/// and the report.
pub async fn collected<P: Payload + PartialEq>(
    mut query: Query,
    s: &Stream<P>,
    letters: &punctual_runtime::DeadLetterCollector<P>,
) -> (
    punctual_adapters::CollectOutput<P>,
    punctual_runtime::QueryReport,
) {
    let out = punctual_adapters::CollectOutput::new();
    query.bind_output(s, &out, &()).expect("binds");
    query.bind_dead_letters(s, letters.clone()).expect("binds");
    (out, run_to_end(query).await)
}

/// The JSON-lines file `path` (items) as the untyped input `options` of `query`.
pub fn jsonl_rows(
    query: &mut Query,
    options: InputOptions,
    path: impl AsRef<std::path::Path>,
) -> Stream<punctual_rows::Row> {
    let config = punctual_adapters::JsonLinesInputConfig::new(path.as_ref());
    let input = punctual_adapters::JsonLinesInput;
    query
        .create_stream(options, &input, &config)
        .expect("binds")
}

/// A query `name` whose point input `in` is a TCP server on a free loopback port, stopping
/// within `grace`: the query, its stream and the server's address.
pub fn tcp_server_query(
    name: &str,
    grace: std::time::Duration,
) -> (Query, Stream<i64>, std::net::SocketAddr) {
    let server = punctual_adapters::TcpServerInput::bind("127.0.0.1:0").expect("binds");
    let addr = server.local_addr();
    let mut query = Query::new(name).stop_grace(grace);
    let s = query
        .create_stream(point("in"), &server, &())
        .expect("binds");
    (query, s, addr)
}

/// How many events each input of `report` read, by the input's name.
pub fn events_in(report: &punctual_runtime::QueryReport) -> Vec<(&str, u64)> {
    report
        .streams
        .iter()
        .map(|(n, c)| (n.as_str(), c.events_in))
        .collect()
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
