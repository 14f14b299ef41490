//! The `punctual` command-line program. See `punctual --help`.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use punctual::conformance::{find_cases, run_case};

const HELP: &str = "\
punctual: run Punctual queries and conformance cases from the command line

USAGE:
    punctual run CASE_DIR        run one case; print its output as JSON lines (stdout)
                                 and each input stream's counters (stderr)
    punctual check PATH...       run every case at or below each PATH, print a diff for
                                 each failing case and a closing line `N passed, N failed`
    punctual --help              this text

EXAMPLES:
    punctual run tests/conformance/ingress/unordered-with-delay
    punctual check tests/conformance ../shared/conformance/ingress

EXIT CODES:
    0  success (for `check`: every case passed)
    1  a case failed or could not be run
    2  bad command line
";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("run") if args.len() == 2 => cmd_run(Path::new(&args[1])),
        Some("check") if args.len() >= 2 => {
            cmd_check(args[1..].iter().map(PathBuf::from).collect())
        }
        Some("--help" | "-h" | "help") => {
            print!("{HELP}");
            ExitCode::SUCCESS
        }
        _ => {
            eprint!("error: bad command line\n\n{HELP}");
            ExitCode::from(2)
        }
    }
}

fn cmd_run(dir: &Path) -> ExitCode {
    match run_case(dir) {
        Ok(run) => {
            for line in run.output_lines() {
                println!("{line}");
            }
            for (name, c) in &run.counters {
                eprintln!(
                    "stream {name}: events_in={} released={} dropped={} adjusted={} rejected={} \
                     stale_ctis={} unreleased={} dangling_edges={} ctis_out={}",
                    c.events_in,
                    c.released,
                    c.dropped,
                    c.adjusted,
                    c.rejected,
                    c.stale_ctis,
                    c.unreleased,
                    c.dangling_edges,
                    c.ctis_out
                );
            }
            for (name, letters) in &run.dead_letters {
                for d in letters {
                    eprintln!(
                        "dead letter on {name} at CTI {}: {} ({:?})",
                        d.cti, d.reason, d.item
                    );
                }
            }
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(1)
        }
    }
}

fn cmd_check(roots: Vec<PathBuf>) -> ExitCode {
    let (mut passed, mut failed) = (0usize, 0usize);
    for root in roots {
        let cases = match find_cases(&root) {
            Ok(c) if c.is_empty() => {
                eprintln!(
                    "error: no case (a folder with case.toml) at or below {}",
                    root.display()
                );
                failed += 1;
                continue;
            }
            Ok(c) => c,
            Err(e) => {
                eprintln!("error: {e}");
                failed += 1;
                continue;
            }
        };
        for dir in cases {
            match run_case(&dir)
                .map_err(|e| vec![e.to_string()])
                .and_then(|run| {
                    run.check()
                        .map_err(|ms| ms.iter().map(|m| m.to_string()).collect())
                        .map(|()| run)
                }) {
                Ok(_) => {
                    passed += 1;
                    println!("PASS {}", dir.display());
                }
                Err(problems) => {
                    failed += 1;
                    println!("FAIL {}", dir.display());
                    for p in problems {
                        println!("  {}", p.replace('\n', "\n  "));
                    }
                }
            }
        }
    }
    println!("{passed} passed, {failed} failed");
    if failed == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}
