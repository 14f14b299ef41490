//! Computations that fail in a query (a bigint overflow, a division by zero, a cast that
//! fails, a `SUM` out of range, a `SUM` or `AVG` of a text): wherever they are in the query
//! (select list, `WHERE`, `HAVING`, group keys, aggregates' arguments, join keys and
//! conditions), the row, group or pair is dropped with the reason, counted and written to the
//! dead letters, never given a silent `NULL`.

use std::sync::atomic::{AtomicUsize, Ordering};

use punctual::cli::EXIT_OK;

use crate::cli_common::{cli, s, temp_dir, write};

/// Four readings at ticks 1 to 4: `a` is `i64::MAX` in the first, `b` is 0 in the second, `s`
/// is not a number in the third, `v` is a number, a text, a float and a boolean.
const READINGS: &str = "{\"t\":1,\"a\":9223372036854775807,\"b\":1,\"s\":\"7\",\"v\":1}\n\
                        {\"t\":2,\"a\":4,\"b\":0,\"s\":\"7\",\"v\":\"x\"}\n\
                        {\"t\":3,\"a\":4,\"b\":2,\"s\":\"seven\",\"v\":2.5}\n\
                        {\"t\":4,\"a\":4,\"b\":2,\"s\":\"7\",\"v\":true}\n";

/// What a query gave: its results' lines, its dead letters, its summary on stderr.
struct Ran {
    results: Vec<String>,
    dead: String,
    err: String,
}

impl Ran {
    /// Asserts the dead letters hold each of `reasons` and the summary says `count` were
    /// dropped.
    fn dropped(&self, count: usize, reasons: &[&str]) {
        for why in reasons {
            assert!(self.dead.contains(why), "{why}: {}", self.dead);
        }
        let letters = self.dead.lines().count();
        assert_eq!(letters, count, "{}", self.dead);
        if count == 0 {
            return;
        }
        assert!(
            self.err
                .contains(&format!("(dropped by an operator {count})")),
            "{}",
            self.err
        );
    }
}

/// Runs `query` (as [`run`]) and checks that it gives `results` and drops `count` rows, the
/// dead letters holding each of `reasons`.
fn gives(query: &str, results: &[&str], count: usize, reasons: &[&str]) {
    let ran = run(query);
    assert_eq!(ran.results, results, "{}", ran.err);
    ran.dropped(count, reasons);
}

/// Runs `query` over the readings as `r` (and as `q`, for joins), times in ticks.
fn run(query: &str) -> Ran {
    static RUNS: AtomicUsize = AtomicUsize::new(0);
    let dir = temp_dir(&format!("numbers-{}", RUNS.fetch_add(1, Ordering::Relaxed)));
    let input = dir.join("r.jsonl");
    write(&input, READINGS);
    let (out, dead) = (dir.join("out.jsonl"), dir.join("dead.jsonl"));
    let (r, q) = (format!("r={}", s(&input)), format!("q={}", s(&input)));
    let mut args = vec!["query", query, "--input", &r];
    if query.contains("JOIN q ") {
        args.extend(["--input", &q]);
    }
    args.extend([
        "--items",
        "--time-format",
        "ticks",
        "--output",
        s(&out),
        "--dead-letters",
        s(&dead),
    ]);
    let (code, _, err) = cli(&args);
    assert_eq!(code, EXIT_OK, "{query}: {err}");
    let written = std::fs::read_to_string(out).expect("written");
    let results = written
        .lines()
        .filter(|l| l.contains("point"))
        .map(|l| {
            // The payload only.
            let at = l.find("\"payload\":").map_or(0, |i| i + 10);
            l[at..l.len() - 1].to_owned()
        })
        .collect();
    Ran {
        results,
        dead: std::fs::read_to_string(dead).expect("written"),
        err,
    }
}

/// A row whose select list cannot be computed is dropped by its projection with the reason,
/// in a plain select and in a grouped one; before, the value was a silent NULL.
#[test]
fn a_failed_computation_in_a_select_list_drops_its_row() {
    gives(
        "SELECT a + b AS x, a / b AS y, CAST(s AS bigint) AS z FROM r TIMESTAMP BY t",
        &["{\"x\":6,\"y\":2,\"z\":7}"],
        3,
        &[
            "its select list cannot be computed: a bigint overflow",
            "a division by zero",
            "a text that is not an integer cast to bigint",
        ],
    );
    let ran = run(
        "SELECT b, SUM(b) / (b - b) AS q FROM r TIMESTAMP BY t GROUP BY b, TumblingWindow(second, 1)",
    );
    assert!(ran.results.is_empty(), "{:?}", ran.results);
    ran.dropped(
        3,
        &["its select list cannot be computed: a division by zero"],
    );
}

/// A row whose `WHERE` condition cannot be computed is dropped with the reason (before, the
/// condition was NULL and the row silently filtered); a group whose `HAVING` condition cannot
/// be computed likewise.
#[test]
fn a_failed_condition_drops_its_row_or_group() {
    gives(
        "SELECT t FROM r TIMESTAMP BY t WHERE a / b > 1 AND a + 1 > 0",
        &["{\"t\":3}", "{\"t\":4}"],
        2,
        &[
            "its WHERE condition cannot be computed: a bigint overflow",
            "its WHERE condition cannot be computed: a division by zero",
        ],
    );
    gives("SELECT b, COUNT(*) AS n FROM r TIMESTAMP BY t GROUP BY b, TumblingWindow(second, 1) HAVING COUNT(*) / (b - 1) >= 0", &["{\"b\":2,\"n\":2}"], 1, &["its HAVING condition cannot be computed: a division by zero"]);
}

/// A row whose group key or aggregate's argument cannot be computed, or whose `SUM` or `AVG`
/// argument is not a number, is dropped before the window with the reason: `AVG` is then
/// `SUM / COUNT` of the same members, and `COUNT(*)` counts them.
#[test]
fn a_failed_key_or_argument_drops_its_row_before_the_window() {
    gives("SELECT a * 2 AS k, COUNT(*) AS n FROM r TIMESTAMP BY t GROUP BY a * 2, TumblingWindow(second, 1)", &["{\"k\":8,\"n\":3}"], 1, &["its group keys or aggregates cannot be computed: a bigint overflow"]);
    gives("SELECT AVG(v) AS m, SUM(v) AS total, COUNT(v) AS c, COUNT(*) AS n FROM r TIMESTAMP BY t GROUP BY TumblingWindow(second, 1)", &["{\"m\":1.75,\"total\":3.5,\"c\":2,\"n\":2}"], 2, &[
            "its group keys or aggregates cannot be computed: a SUM or AVG of a text",
            "a SUM or AVG of a boolean",
        ]);
    gives("SELECT MAX(CAST(s AS bigint)) AS top FROM r TIMESTAMP BY t GROUP BY TumblingWindow(second, 1)", &["{\"top\":7}"], 1, &["a text that is not an integer cast to bigint"]);
}

/// A `SUM` of integers whose total leaves the bigint range fails its group (before, it
/// turned into a float), on the window's fast path and through `HAVING`.
#[test]
fn a_sum_out_of_range_drops_its_group() {
    let ran =
        run("SELECT SUM(a) AS total FROM r TIMESTAMP BY t GROUP BY TumblingWindow(second, 1)");
    assert!(ran.results.is_empty(), "{:?}", ran.results);
    ran.dropped(
        1,
        &["its select list cannot be computed: a SUM of integers outside the bigint range"],
    );
    let ran = run(
        "SELECT COUNT(*) AS n FROM r TIMESTAMP BY t GROUP BY TumblingWindow(second, 1) HAVING SUM(a) > 0",
    );
    assert!(ran.results.is_empty(), "{:?}", ran.results);
    ran.dropped(
        1,
        &["its aggregates cannot be computed: a SUM of integers outside the bigint range"],
    );
    gives(
        "SELECT b, SUM(a) AS total FROM r TIMESTAMP BY t GROUP BY b, TumblingWindow(second, 1)",
        &[
            "{\"b\":1,\"total\":9223372036854775807}",
            "{\"b\":0,\"total\":4}",
            "{\"b\":2,\"total\":8}",
        ],
        0,
        &[],
    );
}

/// A join's pair whose columns or conditions cannot be computed, and a row whose join key
/// cannot be, are dropped with the reason, whether the select is computed as each pair is
/// found or over the joined row.
#[test]
fn a_failed_computation_in_a_join_drops_its_pair() {
    gives(
        "SELECT r.t AS t, r.a * q.a AS p FROM r TIMESTAMP BY t JOIN q TIMESTAMP BY t ON r.t = q.t",
        &[
            "{\"t\":2,\"p\":16}",
            "{\"t\":3,\"p\":16}",
            "{\"t\":4,\"p\":16}",
        ],
        1,
        &["its select list cannot be computed: a bigint overflow"],
    );
    gives("SELECT r.t AS t FROM r TIMESTAMP BY t JOIN q TIMESTAMP BY t ON r.t = q.t AND r.a / q.b > 1", &["{\"t\":1}", "{\"t\":3}", "{\"t\":4}"], 1, &["its join conditions cannot be computed: a division by zero"]);
    let ran =
        run("SELECT * FROM r TIMESTAMP BY t JOIN q TIMESTAMP BY t ON r.t = q.t AND r.a / q.b > 1");
    assert_eq!(ran.results.len(), 3, "{:?}", ran.results);
    ran.dropped(
        1,
        &["its join conditions cannot be computed: a division by zero"],
    );
    gives("SELECT r.t AS t FROM r TIMESTAMP BY t JOIN q TIMESTAMP BY t ON r.a + 1 = q.a + 1 AND r.t = q.t", &["{\"t\":2}", "{\"t\":3}", "{\"t\":4}"], 2, &["its join keys cannot be computed: a bigint overflow"]);
}
