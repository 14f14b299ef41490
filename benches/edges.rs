//! Many rows valid from one moment, ended last-first or in a scattered order, through
//! `punctual job` (what users run): a job file reads `n` start edges at one time and their end
//! edges, matched by the input's `key`, and counts them in a tumbling window. The time per
//! edge stays flat as `n` grows (a scan of the open edges would make it grow with `n`).
//!
//! `cargo bench -p punctual --bench edges`

use std::path::{Path, PathBuf};

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};

/// The order the edges end in.
#[derive(Clone, Copy)]
enum Ends {
    LastFirst,
    /// A permutation (7919 is prime to every `n` here).
    Scattered,
}

/// The job over `n` edges ended in `ends` order, with its files in `dir`.
fn job(dir: &Path, n: usize, ends: Ends) -> PathBuf {
    let order: Vec<usize> = match ends {
        Ends::LastFirst => (0..n).rev().collect(),
        Ends::Scattered => (0..n).map(|i| (i * 7919) % n).collect(),
    };
    let rows = dir.join(format!("rows-{n}.jsonl"));
    let mut text = String::with_capacity(n * 180);
    for i in 0..n {
        text.push_str(&format!(
            "{{\"kind\":\"start\",\"start\":\"2026-12-01T10:00:00Z\",\"payload\":{{\"id\":{i}}}}}\n"
        ));
    }
    for i in order {
        text.push_str(&format!(
            "{{\"kind\":\"end\",\"start\":\"2026-12-01T10:00:00Z\",\"end\":\"2026-12-01T10:00:01Z\",\"payload\":{{\"id\":{i}}}}}\n"
        ));
    }
    std::fs::write(&rows, text).expect("written");
    let job = dir.join(format!("count-{n}.toml"));
    std::fs::write(
        &job,
        format!(
            "query = \"SELECT COUNT(*) AS n INTO out FROM rows GROUP BY TumblingWindow(second, 1)\"\n\
             [inputs.rows]\npath = \"{}\"\nkey = [\"id\"]\n[outputs.out]\npath = \"{}\"\n",
            rows.display(),
            dir.join(format!("out-{n}.jsonl")).display()
        ),
    )
    .expect("written");
    job
}

fn bench(c: &mut Criterion) {
    let dir = std::env::temp_dir().join(format!("punctual-bench-edges-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a temp dir");
    for (name, ends) in [
        ("edges_ended_last_first", Ends::LastFirst),
        ("edges_ended_scattered", Ends::Scattered),
    ] {
        let mut g = c.benchmark_group(name);
        g.sample_size(10);
        for n in [25_000usize, 50_000, 100_000] {
            let job = job(&dir, n, ends);
            let args = vec!["job".to_owned(), job.display().to_string()];
            g.throughput(Throughput::Elements(n as u64));
            g.bench_with_input(BenchmarkId::from_parameter(n), &args, |b, args| {
                b.iter(|| {
                    let (mut out, mut err) = (Vec::new(), Vec::new());
                    assert_eq!(punctual::cli::main(args, &mut out, &mut err), 0);
                });
            });
        }
        g.finish();
    }
    let _ = std::fs::remove_dir_all(&dir);
}

criterion_group!(benches, bench);
criterion_main!(benches);
