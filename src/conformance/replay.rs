//! A case as an ordinary [`Query`] of the runtime ([`Case::runtime_query`]): one input
//! adapter per stream replays the stream's arrivals, its clock readings and its end, each in
//! its turn ([`Turns`]), into the case's query, whose output and dead letters go to
//! [`CaseSinks`]. The cluster runs cases so ([`super::run_cluster`]), and a test runs every
//! case so on the local runtime against the conformance runner.

use std::sync::Arc;

use async_trait::async_trait;
use punctual_adapters::CollectOutput;
use punctual_core::ops::AnyStream;
use punctual_core::{EventShape, StreamItem, Time};
use punctual_engine::DeadLetterCollector;
use punctual_policies::{Arrival, DeadLetter};
use punctual_rows::Row;
use punctual_runtime::{
    AdapterError, EnqueueError, InputAdapter, InputAdapterFactory, InputContext, Query, QueryError,
};
use tokio::sync::watch;

use super::{unended, Case};

/// Which arrivals wait for which: the order of the case's arrivals that the streams' adapters
/// keep.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Turns {
    /// Every stream's arrivals in the case's global order, as the conformance runner feeds
    /// them: the same output item for item (one worker).
    Global,
    /// The order within each group of streams that import each other's CTIs (which run on one
    /// worker); the groups side by side, as live inputs are (several workers, where a wait
    /// for another worker's input could never end).
    PerImportGroup,
}

/// Where a case's query writes: its output and each stream's dead letters. Share one between
/// the queries of a cluster's workers: each writes what it holds (the output on worker 0,
/// the dead letters of a stream on the worker that owns it).
#[derive(Clone, Debug)]
pub struct CaseSinks {
    output: CollectOutput<Row>,
    letters: Vec<DeadLetterCollector<Row>>,
}

impl CaseSinks {
    /// Empty sinks for `case`'s streams.
    pub fn new(case: &Case) -> Self {
        CaseSinks {
            output: CollectOutput::new(),
            letters: case
                .streams
                .iter()
                .map(|_| DeadLetterCollector::new())
                .collect(),
        }
    }

    /// What the output received, in order.
    pub fn output(&self) -> Vec<StreamItem<Row>> {
        self.output.items()
    }

    /// Each stream's dead letters, by stream (declaration order).
    pub fn dead_letters(&self, case: &Case) -> Vec<(String, Vec<DeadLetter<Row>>)> {
        case.streams
            .iter()
            .zip(&self.letters)
            .map(|(s, l)| (s.name.clone(), l.letters()))
            .collect()
    }
}

/// What one step of a group's sequence does, on one stream.
#[derive(Clone, Copy, Debug)]
enum Action {
    /// The case's arrival of this index (an item, or `eof`).
    Arrival(usize),
    /// A clock reading, handed to the stream's watermark strategy.
    Tick(Time),
    /// The end of a stream no arrival ended.
    End,
}

/// The steps of one group of streams in the order the case gives them, and how far the
/// group has got.
#[derive(Debug)]
struct Sequence {
    steps: Vec<(usize, Action)>,
    at: watch::Sender<usize>,
}

impl Sequence {
    /// The sequence of the streams in `group`: their arrivals in the case's order, each clock
    /// reading for every one of them not ended yet, then the end of each stream no arrival
    /// ended, in declaration order.
    fn of(case: &Case, group: &[usize]) -> Sequence {
        let mut steps = Vec::new();
        let mut ended = vec![false; case.streams.len()];
        for (k, a) in case.arrivals.iter().enumerate() {
            match a.clock {
                Some(now) => steps.extend(
                    group
                        .iter()
                        .filter(|&&s| !ended[s])
                        .map(|&s| (s, Action::Tick(now))),
                ),
                None if group.contains(&a.stream) => {
                    steps.push((a.stream, Action::Arrival(k)));
                    ended[a.stream] |= a.item.is_none();
                }
                None => {}
            }
        }
        steps.extend(
            unended(case)
                .into_iter()
                .filter(|s| group.contains(s))
                .map(|s| (s, Action::End)),
        );
        Sequence {
            steps,
            at: watch::Sender::new(0),
        }
    }
}

/// The groups of streams that import each other's CTIs (directly or through others), each in
/// declaration order.
fn groups(case: &Case) -> Vec<Vec<usize>> {
    let n = case.streams.len();
    let mut group: Vec<usize> = (0..n).collect();
    fn root(group: &mut [usize], mut i: usize) -> usize {
        while group[i] != i {
            group[i] = group[group[i]];
            i = group[i];
        }
        i
    }
    for (i, spec) in case.streams.iter().enumerate() {
        let source = spec
            .import
            .as_ref()
            .and_then(|name| case.streams.iter().position(|s| &s.name == name));
        if let Some(j) = source {
            let (a, b) = (root(&mut group, i), root(&mut group, j));
            group[a.max(b)] = a.min(b);
        }
    }
    let mut out: Vec<Vec<usize>> = Vec::new();
    for i in 0..n {
        let r = root(&mut group, i);
        match out.iter_mut().find(|g| g[0] == r) {
            Some(g) => g.push(i),
            None => out.push(vec![i]),
        }
    }
    out
}

/// The configuration of one stream's adapter: the case, its group's [`Sequence`], the stream.
#[derive(Clone, Debug)]
struct Scripted {
    case: Arc<Case>,
    sequence: Arc<Sequence>,
    stream: usize,
}

/// The factory of [`ScriptedAdapter`]s.
struct ScriptedInput;

impl InputAdapterFactory<Scripted, Row> for ScriptedInput {
    type Adapter = ScriptedAdapter;

    fn create(
        &self,
        config: &Scripted,
        _shape: EventShape,
    ) -> Result<ScriptedAdapter, AdapterError> {
        Ok(ScriptedAdapter {
            script: config.clone(),
            ended_at: None,
        })
    }
}

/// The input adapter of one stream of a case: replays the stream's steps of its group's
/// [`Sequence`], each once the steps before it are in. At its end it returns, and the turn
/// passes on only when the adapter is dropped, which the runtime does once it has ended the
/// stream's input (its final CTI, and what the streams that import it take from it).
struct ScriptedAdapter {
    script: Scripted,
    /// The step that ended the stream, whose turn passes on when the adapter is dropped.
    ended_at: Option<usize>,
}

#[async_trait]
impl InputAdapter<Row> for ScriptedAdapter {
    async fn run(&mut self, ctx: &mut InputContext<Row>) -> Result<(), AdapterError> {
        let Scripted {
            case,
            sequence,
            stream,
        } = &self.script;
        let mut at = sequence.at.subscribe();
        loop {
            let mine = |k: &usize| sequence.steps.get(*k).is_none_or(|(s, _)| s == stream);
            let k = tokio::select! {
                k = at.wait_for(mine) => match k {
                    Ok(k) => *k,
                    Err(_) => return Ok(()),
                },
                () = ctx.stopping() => return Ok(()),
            };
            match sequence.steps.get(k).map(|step| step.1) {
                None => return Ok(()),
                Some(Action::Tick(now)) => {
                    ctx.tick(now).await;
                }
                Some(Action::End) => {
                    self.ended_at = Some(k);
                    return Ok(());
                }
                Some(Action::Arrival(a)) => {
                    let arrival = &case.arrivals[a];
                    let Some(item) = arrival.item.clone() else {
                        self.ended_at = Some(k);
                        return Ok(());
                    };
                    let from = Arrival {
                        time: arrival.arrival,
                        partition: arrival.partition,
                    };
                    // A rejected item is counted and dead-lettered; the stream goes on.
                    match ctx.enqueue_with(item, from).await {
                        Ok(_) | Err(EnqueueError::Rejected { .. }) => {}
                        Err(e) => return Err(e.into()),
                    }
                }
            }
            sequence.at.send_replace(k + 1);
        }
    }
}

impl Drop for ScriptedAdapter {
    fn drop(&mut self) {
        if let Some(k) = self.ended_at {
            self.script.sequence.at.send_replace(k + 1);
        }
    }
}

impl Case {
    /// The case as a [`Query`] of the runtime: each stream fed by an adapter that replays its
    /// arrivals (items with their arrival times and partitions, `eof`), the case's clock
    /// readings ([`InputContext::tick`]; the query reads no clock of its own) and, for a stream
    /// no arrival ends, its end after the arrivals, each in its turn as `turns` says; the
    /// case's query; the output and the dead letters to `sinks`. Each call makes new turns:
    /// on a cluster, every worker's query has its own, and a group's streams all run on one.
    pub fn runtime_query(
        self: &Arc<Self>,
        turns: Turns,
        sinks: &CaseSinks,
    ) -> Result<Query, QueryError> {
        let case = self;
        let mut query = Query::new(case.dir.display().to_string()).clock_from_inputs();
        let all: Vec<usize> = (0..case.streams.len()).collect();
        let groups = match turns {
            Turns::Global => vec![all],
            Turns::PerImportGroup => groups(case),
        };
        let mut config: Vec<Option<Scripted>> = vec![None; case.streams.len()];
        for group in groups {
            let sequence = Arc::new(Sequence::of(case, &group));
            for stream in group {
                config[stream] = Some(Scripted {
                    case: Arc::clone(case),
                    sequence: Arc::clone(&sequence),
                    stream,
                });
            }
        }
        let mut streams = Vec::new();
        for ((spec, config), letters) in case.streams.iter().zip(config).zip(&sinks.letters) {
            let config =
                config.ok_or_else(|| QueryError::Bind("a stream in no group".to_owned()))?;
            let stream = if spec.arrival {
                let s = query.create_stream(spec.options().unordered(), &ScriptedInput, &config)?;
                query.bind_dead_letters(&s, letters.clone())?;
                AnyStream::from(s)
            } else {
                let s = query.create_stream(spec.options(), &ScriptedInput, &config)?;
                query.bind_dead_letters(&s, letters.clone())?;
                AnyStream::from(s)
            };
            streams.push(stream);
        }
        let out = case
            .query(&streams)
            .map_err(|e| QueryError::Bind(e.to_string()))?;
        query.bind_output(&out, &sinks.output, &())?;
        Ok(query)
    }
}
