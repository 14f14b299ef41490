//! `punctual-bench`: Punctual on the shared benchmark workload (`../shared/bench`), with the
//! timely peer's command line and output format, so that `bench/compare.sh` can pair them.
//!
//! ```text
//! punctual-bench --query filter|window|join --data DIR [--reps N] [--cti N] [--delay-ms N]
//!                [--filter-in-graph]
//! ```
//!
//! Each query runs through Punctual's real path on one core: the fast stream's ingress with the
//! real settings (a CTI every `--cti` events, `--delay-ms` behind the highest timestamp, `Drop`;
//! the input is an unordered stream, released on arrival, since no query needs it sorted: the
//! window aggregates it, and the filter's and the join's outputs, which are only counted and
//! summed, are kept unordered), the real operators on a query graph, and an output that
//! checksums. The filter is pushed down into the ingress
//! (`Ingress::enqueue_point_records_where`: the refused events are never written out, and still
//! count for the CTIs); `--filter-in-graph` runs the graph's filter operator instead, with the
//! same output. Timestamps are the files' milliseconds converted to ticks. The join's reference stream enters through its own
//! ingress, importing the fast stream's CTIs: each version is a start edge, closed by an end
//! edge when the key's next version starts; versions are enqueued when the fast stream's
//! highest timestamp reaches them (as the timely peer releases them), and each block's
//! imported CTIs reach the reference stream after the fast stream's release of that block, in
//! the order the runtime's import gives. Loading the files is not
//! timed; the timing covers building the query, replaying and draining. The checksums for the
//! default 10 M events (`../shared/bench/README.md`) are verified: a mismatch exits with 1.

use std::process::ExitCode;

use punctual_samples::{arg, exit_code, ms};
use std::time::Instant;

use punctual::core::ops::{Count, QueryGraph, Stream, Sum, Unordered};
use punctual::policies::{Error as IngressError, Ingress, IngressConfig, IngressOutput};
use punctual::prelude::*;

/// (ts ms, value, key)
type Ev = (i64, i64, u32);

fn load(path: &str) -> Result<Vec<Ev>, String> {
    let bytes = std::fs::read(path).map_err(|e| format!("{path}: {e}"))?;
    if bytes.len() % 24 != 0 {
        return Err(format!(
            "{path}: {} bytes is not a whole number of 24-byte records",
            bytes.len()
        ));
    }
    Ok(bytes
        .chunks_exact(24)
        .map(|c| {
            let i64_at = |o: usize| {
                let mut b = [0u8; 8];
                b.copy_from_slice(&c[o..o + 8]);
                i64::from_le_bytes(b)
            };
            let mut k = [0u8; 4];
            k.copy_from_slice(&c[16..20]);
            (i64_at(0), i64_at(8), u32::from_le_bytes(k))
        })
        .collect())
}

struct Settings {
    cti: u64,
    delay: TimeSpan,
}

fn fast_ingress<P: Clone + PartialEq>(s: &Settings) -> Result<Ingress<P>, String> {
    let generation = AdvanceTimeGenerationSettings::every_events(s.cti)
        .delay(s.delay)
        .final_cti(true)
        .build()
        .map_err(|e| e.to_string())?;
    Ok(Ingress::new(IngressConfig {
        generation: Some(generation),
        policy: Some(AdvanceTimePolicy::Drop),
        on_arrival: true,
        ..IngressConfig::default()
    }))
}

/// Out count and checksum.
type Totals = (u64, u64);

/// The query's output: ordered, or unordered (released on arrival).
enum Output<O> {
    Ordered(Stream<O>),
    Unordered(Unordered<O>),
}

/// A query's graph, its fast source and its output.
struct Wiring<P, O> {
    graph: QueryGraph,
    /// The fast stream's source: unordered (released on arrival) for all three queries.
    source: Unordered<P>,
    output: Output<O>,
}

impl<P: Payload, O: Payload> Wiring<P, O> {
    fn feed(&self, batch: &mut Batch<P>) {
        self.graph.feed_unordered(&self.source, batch);
    }

    fn take(&self, into: &mut Batch<O>) {
        match &self.output {
            Output::Ordered(s) => self.graph.take_output(s, into),
            Output::Unordered(s) => self.graph.take_unordered_output(s, into),
        }
    }
}

/// Replays the fast stream through its ingress into the source, calling `after_block` after
/// every block with the highest start time the ingress has taken (`None` after the end) and the
/// CTIs issued (for the join's reference stream), and `drain` with the output. `enqueue` puts a
/// block into the ingress.
fn replay<P: Payload, O: Payload>(
    events: &[Ev],
    s: &Settings,
    w: &Wiring<P, O>,
    mut enqueue: impl FnMut(
        &mut Ingress<P>,
        &[Ev],
        &mut IngressOutput<P>,
    ) -> Result<usize, IngressError>,
    mut after_block: impl FnMut(Option<Time>, &[Time]),
    mut drain: impl FnMut(&Batch<O>),
) -> Result<(), String> {
    let mut ingress = fast_ingress::<P>(s)?;
    let mut out = IngressOutput::new();
    let mut results = Batch::new();
    let block = s.cti as usize;
    let mut ctis = Vec::new();
    for chunk in events.chunks(block) {
        // The block's decoded records, enqueued in one call: each read straight into the
        // released batch.
        enqueue(&mut ingress, chunk, &mut out).map_err(|e| e.to_string())?;
        ctis.clear();
        ctis.extend(out.batch.ctis().iter().map(|m| m.time));
        // The fast stream's release first, then what follows from it (the reference stream's
        // imported CTIs come after the release that issued them, as import does).
        w.feed(&mut out.batch);
        after_block(Some(ingress.counters().max_start), &ctis);
        out.dead_letters.clear();
        w.take(&mut results);
        drain(&results);
        results.clear();
    }
    ingress.finish(&mut out);
    ctis.clear();
    ctis.extend(out.batch.ctis().iter().map(|m| m.time));
    w.feed(&mut out.batch);
    after_block(None, &ctis);
    w.take(&mut results);
    drain(&results);
    Ok(())
}

/// The filter's predicate.
fn big(p: &(i64, u32)) -> bool {
    p.0 >= 500_000
}

fn filter(events: &[Ev], s: &Settings, in_graph: bool) -> Result<Totals, String> {
    let graph = QueryGraph::new();
    // The filter keeps each event where it is: on an unordered stream it runs on arrival, and
    // its output, which is only counted and summed, is taken as released (no hold, no sort).
    // By default it is pushed down into the ingress, which writes out only the events kept
    // (`Ingress::enqueue_point_records_where`); `--filter-in-graph` runs it as the graph's
    // filter operator instead (the same output).
    let fast = graph.unordered_source::<(i64, u32)>();
    let out = if in_graph {
        fast.filter(big)
    } else {
        fast.clone()
    };
    graph.keep_unordered_output(&out);
    let (mut n, mut sum) = (0u64, 0u64);
    let w = Wiring {
        graph,
        source: fast,
        output: Output::Unordered(out),
    };
    replay(
        events,
        s,
        &w,
        |ingress, chunk, out| {
            if in_graph {
                ingress.enqueue_point_records(chunk, |e| ms(e.0), |e| (e.1, e.2), out)
            } else {
                ingress.enqueue_point_records_where(chunk, |e| ms(e.0), |e| (e.1, e.2), big, out)
            }
        },
        |_, _| {},
        |b: &Batch<(i64, u32)>| {
            n += b.len() as u64;
            for p in b.payloads() {
                sum = sum.wrapping_add(p.0 as u64);
            }
        },
    )?;
    Ok((n, sum))
}

fn window(events: &[Ev], s: &Settings) -> Result<Totals, String> {
    let graph = QueryGraph::new();
    // An aggregate does not depend on the order of its input between CTIs: the fast stream is
    // unordered (released on arrival), which spares it the reorder buffer.
    let fast = graph.unordered_source::<(i64, u32)>();
    let out = fast
        .tumbling_window(TimeSpan::from_secs(1))
        .group_by(|p: &(i64, u32)| p.1)
        .aggregate((Count, Sum::of(|p: &(i64, u32)| p.0 as f64)));
    graph.keep_output(&out);
    let (mut n, mut sum) = (0u64, 0u64);
    let w = Wiring {
        graph,
        source: fast,
        output: Output::Ordered(out),
    };
    replay(
        events,
        s,
        &w,
        |ingress, chunk, out| {
            ingress.enqueue_point_records(chunk, |e| ms(e.0), |e| (e.1, e.2), out)
        },
        |_, _| {},
        |b: &Batch<(u32, (u64, f64))>| {
            n += b.len() as u64;
            for (_, (c, s)) in b.payloads() {
                sum = sum.wrapping_add(*c).wrapping_add(*s as u64);
            }
        },
    )?;
    Ok((n, sum))
}

fn join(events: &[Ev], reference: &[Ev], s: &Settings) -> Result<Totals, String> {
    let graph = QueryGraph::new();
    // The fast stream is unordered: each event waits (unsorted) in the join for the
    // reference's CTI, imported from the fast stream, and its result is counted as released.
    let fast = graph.unordered_source::<(i64, u32)>();
    let slow = graph.source::<(i64, u32)>();
    let out = fast.join_on(&slow, |p| p.1, |r| r.1, |p, r| (p.0, r.0));
    graph.keep_unordered_output(&out);
    let mut ref_ingress = Ingress::<(i64, u32)>::new(IngressConfig {
        policy: Some(AdvanceTimePolicy::Adjust),
        ..IngressConfig::default()
    });
    let mut ref_out = IngressOutput::new();
    let mut next = 0usize;
    let mut current: Vec<Option<(i64, i64)>> = Vec::new();
    let (mut n, mut sum) = (0u64, 0u64);
    let graph2 = graph.clone();
    let w = Wiring {
        graph,
        source: fast,
        output: Output::Unordered(out),
    };
    replay(
        events,
        s,
        &w,
        |ingress, chunk, out| {
            ingress.enqueue_point_records(chunk, |e| ms(e.0), |e| (e.1, e.2), out)
        },
        |high, ctis| {
            // (The fast stream's highest start, in milliseconds, from its ingress.)
            let max_ts = high.map_or(i64::MAX, |t| t.ticks() / 10_000);
            // Versions whose start the fast stream has reached: close the key's previous
            // version, open the new one.
            while next < reference.len() && reference[next].0 <= max_ts {
                let (start, value, key) = reference[next];
                let k = key as usize;
                if current.len() <= k {
                    current.resize(k + 1, None);
                }
                if let Some((prev_start, prev_value)) = current[k] {
                    let item = StreamItem::end_edge(ms(prev_start), ms(start), (prev_value, key));
                    let _ = ref_ingress.enqueue(item, &mut ref_out);
                }
                let _ = ref_ingress.enqueue(
                    StreamItem::start_edge(ms(start), (value, key)),
                    &mut ref_out,
                );
                current[k] = Some((start, value));
                next += 1;
            }
            for &t in ctis {
                ref_ingress.import_cti(t, &mut ref_out);
            }
            graph2.feed(&slow, &mut ref_out.batch);
        },
        |b: &Batch<(i64, i64)>| {
            n += b.len() as u64;
            for (v, r) in b.payloads() {
                sum = sum.wrapping_add((v * r) as u64);
            }
        },
    )?;
    Ok((n, sum))
}

/// The published checksums for the default 10 M events: (out, checksum).
fn expected(query: &str, n: usize) -> Option<Totals> {
    if n != 10_000_000 {
        return None;
    }
    match query {
        "filter" => Some((4_999_874, 3_750_355_147_595)),
        "window" => Some((999_964, 5_000_969_865_020)),
        "join" => Some((10_000_000, 2_561_554_183_133_202)),
        _ => None,
    }
}

fn main_inner() -> Result<bool, String> {
    let args: Vec<String> = std::env::args().collect();
    if args.iter().any(|a| a == "--help" || a == "-h") {
        println!(
            "punctual-bench --query filter|window|join --data DIR [--reps N] [--cti N] [--delay-ms N] [--filter-in-graph]"
        );
        return Ok(true);
    }
    let query: String = arg(&args, "--query", "window".to_string())?;
    let dir: String = arg(&args, "--data", "data".to_string())?;
    let reps: usize = arg(&args, "--reps", 5)?;
    let in_graph = args.iter().any(|a| a == "--filter-in-graph");
    let settings = Settings {
        cti: arg(&args, "--cti", 1000)?,
        delay: TimeSpan::from_millis(arg(&args, "--delay-ms", 2000)?),
    };
    let t = Instant::now();
    let events = load(&format!("{dir}/events.bin"))?;
    let reference = load(&format!("{dir}/reference.bin"))?;
    eprintln!(
        "loaded {} events, {} reference records in {:.2?}",
        events.len(),
        reference.len(),
        t.elapsed()
    );
    let mut rates = Vec::new();
    let mut ok = true;
    for rep in 0..reps.max(1) {
        let start = Instant::now();
        let (out, checksum) = match query.as_str() {
            "filter" => filter(&events, &settings, in_graph)?,
            "window" => window(&events, &settings)?,
            "join" => join(&events, &reference, &settings)?,
            other => return Err(format!("unknown query `{other}` (filter, window or join)")),
        };
        let secs = start.elapsed().as_secs_f64();
        let rate = events.len() as f64 / secs;
        rates.push(rate);
        let verdict = match expected(&query, events.len()) {
            Some(e) if e == (out, checksum) => "checksum=ok",
            Some(_) => {
                ok = false;
                "checksum=MISMATCH"
            }
            None => "checksum=unverified",
        };
        println!(
            "query={query} rep={rep} secs={secs:.3} events_per_s={rate:.0} out={out} checksum={checksum} {verdict}"
        );
        if let (false, Some(e)) = (ok, expected(&query, events.len())) {
            eprintln!("expected out={} checksum={}", e.0, e.1);
        }
    }
    rates.sort_by(f64::total_cmp);
    println!(
        "SUMMARY peer=punctual query={query} workers=1 cti={} median_events_per_s={:.0} min={:.0} max={:.0}",
        settings.cti,
        rates[rates.len() / 2],
        rates[0],
        rates[rates.len() - 1]
    );
    Ok(ok)
}

fn main() -> ExitCode {
    exit_code(main_inner())
}
