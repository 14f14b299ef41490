//! Every conformance case through snapshots: the query's state saved after every arrival and
//! restored into a query built anew gives what the run without snapshots gives: the same
//! output items and CTIs in the same order, the same counters and dead letters, for every
//! operator, input order and watermark strategy the cases use.

use std::path::{Path, PathBuf};

use punctual::conformance::{find_cases, run_case, run_restoring, Case};

/// Runs every case under `root` through snapshots: how many ran (without snapshots), how
/// many gave the same through them, and what went wrong.
fn check_tree(root: &Path) -> (usize, usize, Vec<String>) {
    let mut failures = Vec::new();
    let (mut ran, mut restored) = (0, 0);
    for dir in find_cases(root).expect("the cases") {
        let name = dir.strip_prefix(root).unwrap_or(&dir).display().to_string();
        let Ok(plain) = run_case(&dir) else {
            continue; // refused without snapshots too: the conformance test covers it
        };
        ran += 1;
        let case = Case::load(&dir).expect("loads");
        match run_restoring(&case) {
            Err(e) => failures.push(format!("{name}: {e}")),
            Ok(run) => {
                let counters: Vec<_> = plain.counters.iter().map(|(_, c)| *c).collect();
                let letters: Vec<usize> = plain.dead_letters.iter().map(|(_, l)| l.len()).collect();
                if run.output != plain.output {
                    failures.push(format!(
                        "{name}: after {} restores the output differs:\n  {:?}\nagainst\n  {:?}",
                        run.restores, run.output, plain.output
                    ));
                } else if run.counters != counters {
                    failures.push(format!(
                        "{name}: the counters differ: {:?} against {counters:?}",
                        run.counters
                    ));
                } else if run.dead_letters != letters {
                    failures.push(format!(
                        "{name}: the dead letters differ: {:?} against {letters:?}",
                        run.dead_letters
                    ));
                } else {
                    restored += 1;
                }
            }
        }
    }
    (ran, restored, failures)
}

#[test]
fn every_case_continues_from_a_snapshot_after_every_arrival() {
    let mut roots = vec![PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("conformance")];
    let shared = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../shared/conformance");
    if shared.is_dir() {
        roots.push(shared);
    }
    for root in roots {
        let (ran, restored, failures) = check_tree(&root);
        assert!(failures.is_empty(), "{}", failures.join("\n"));
        assert!(ran >= 20, "only {ran} cases under {}", root.display());
        assert_eq!(restored, ran, "under {}", root.display());
    }
}

/// Sessions with allowed lateness (an operator of their own, which no case uses): given
/// early, revised by late events, through a snapshot after every arrival.
#[test]
fn sessions_with_allowed_lateness_continue_from_a_snapshot_after_every_arrival() {
    let dir = std::env::temp_dir().join(format!("punctual-snapshots-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a temporary folder");
    std::fs::write(
        dir.join("case.toml"),
        r#"
description = "sessions with allowed lateness"
[streams.readings]
shape = "point"
order = "arrival"
generate = { every = 2, delay = 6, final = true }
[query]
sql = """
SELECT k, COUNT(*) AS n, SUM(v) AS total
FROM readings
GROUP BY k, SessionWindow(tick, 5, 10, AllowedLateness(tick, 4))
    OVER (PARTITION BY k)
"""
"#,
    )
    .expect("written");
    let arrivals: String = [
        (2, "a", 1),
        (6, "a", 2),
        (3, "b", 10),
        (12, "b", 20),
        (9, "a", 3),
        (20, "a", 4),
        (15, "b", 5),
        (14, "a", 6),
        (30, "b", 7),
        (26, "a", 8),
        (27, "b", 9),
        (41, "a", 10),
    ]
    .iter()
    .map(|(t, k, v)| {
        format!(
            "{{\"stream\": \"readings\", \"kind\": \"point\", \"start\": {t}, \"payload\": {{\"k\": \"{k}\", \"v\": {v}}}}}\n"
        )
    })
    .collect();
    std::fs::write(dir.join("arrivals.jsonl"), arrivals).expect("written");
    std::fs::write(dir.join("expected.jsonl"), "").expect("written");
    let plain = run_case(&dir).expect("runs");
    let restored = run_restoring(&Case::load(&dir).expect("loads")).expect("restores");
    std::fs::remove_dir_all(&dir).ok();
    let revisions = plain
        .output
        .iter()
        .filter(|i| {
            matches!(i, punctual::core::StreamItem::Insert(e)
                if matches!(e.kind, punctual::core::EventKind::EndEdge { .. }))
        })
        .count();
    assert!(plain.output.len() >= 8, "{:?}", plain.output);
    assert!(revisions >= 1, "no session ended: {:?}", plain.output);
    assert_eq!(restored.output, plain.output);
    assert_eq!(restored.restores, 12);
}
