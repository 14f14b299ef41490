//! `punctual explain JOB.toml` and `punctual query --explain`: before the run, the plan (each
//! input with how it is read and where its CTIs come from, each operator with what it reads,
//! each output); after it, where every operator's CTI ended, which input held one back, and
//! what was dropped or adjusted, with counts.

use punctual_core::ops::{AnyStream, Explanation};
use punctual_core::Time;

use super::*;

/// How an input is read and where its CTIs come from, in words.
pub(super) fn describe_input(u: &InputUse, input: &JobInput) -> String {
    let source = if !input.path.as_os_str().is_empty() {
        let format = match format_of(&input.path, input.format) {
            Format::Csv => "CSV",
            Format::Jsonl => "JSON lines",
        };
        format!("{} ({format})", input.path.display())
    } else if input.connect.is_some() || input.listen.is_some() {
        "TCP (JSON lines)".to_owned()
    } else if input.kafka.is_some() {
        "Kafka (JSON)".to_owned()
    } else if input.nats.is_some() {
        "NATS JetStream (JSON)".to_owned()
    } else {
        "MQTT (JSON)".to_owned()
    };
    let time = input
        .time
        .clone()
        .or_else(|| match u.timestamp_field.as_deref() {
            Some([field]) => Some(field.clone()),
            _ => None,
        });
    let format = match input.time_format {
        None | Some(TimeFormat::Auto | TimeFormat::Rfc3339) => "RFC 3339",
        Some(TimeFormat::Rfc3339At(_)) => "RFC 3339, without an offset at the input's zone",
        Some(TimeFormat::EpochMs) => "epoch milliseconds",
        Some(TimeFormat::EpochS) => "epoch seconds",
        Some(TimeFormat::Ticks) => "ticks",
    };
    let reference = input.reference.unwrap_or(u.reference_of.is_some());
    let csv =
        !input.path.as_os_str().is_empty() && format_of(&input.path, input.format) == Format::Csv;
    let events = match (&time, &input.end) {
        (None, _) if reference && (csv || super::json_records(&input.path)) => {
            "a static table: every row valid for all time".to_owned()
        }
        (None, _) => "items (kind, start, payload)".to_owned(),
        (Some(t), None) if reference => {
            let key = input.key.clone().unwrap_or_else(|| u.reference_key.clone());
            format!(
                "a table of versions: each row valid from `{t}` ({format}) until the next row with the same {}",
                key.join(", ")
            )
        }
        (Some(t), None) => format!("points at `{t}` ({format})"),
        (Some(t), Some(e)) => format!("intervals from `{t}` to `{e}` ({format})"),
    };
    let policy = match input.policy.unwrap_or(Policy::Adjust) {
        Policy::Adjust => "a late event is moved up to the CTI (adjusted)",
        Policy::Drop => "a late event is dropped",
    };
    let import = input.import.clone().or_else(|| u.reference_of.clone());
    let ctis = match (&input.watermark, &input.generate, input.delay, &import) {
        (Some(_), _, _, _) => "CTIs from its watermark strategy".to_owned(),
        (None, Some(g), _, _) => format!("CTIs generated, {} behind the newest event", g.delay),
        (None, None, delay, Some(from)) if delay.is_none() && reference => {
            format!("reference data, read first; CTIs imported from `{from}`")
        }
        (None, None, delay, import) => {
            let mut c = format!(
                "a CTI after every event, {} behind the newest",
                delay.unwrap_or(TimeSpan::ZERO)
            );
            if let Some(from) = import {
                c.push_str(&format!("; CTIs also imported from `{from}`"));
            }
            c
        }
    };
    // Edges: items, a table of versions, reference data with an end.
    let edges = match (&time, &input.end) {
        (None, _) => !(reference && csv),
        // (A table of versions says its key already.)
        (Some(_), None) => false,
        (Some(_), Some(_)) => reference,
    };
    let key = input
        .key
        .clone()
        .or_else(|| (reference && !u.reference_key.is_empty()).then(|| u.reference_key.clone()));
    let matched = match (edges, key) {
        (false, _) => String::new(),
        (true, Some(key)) => format!("; end edges found by their key ({})", key.join(", ")),
        (true, None) => "; end edges found among the open edges of their start (no key)".to_owned(),
    };
    format!("{source}: {events}{matched}; {ctis}; {policy}")
}

/// The plan as `explain` prints it: the inputs, the query's logical plan after its rewrites,
/// the operators (from `built`, the query's output streams), the outputs.
pub(super) fn plan(
    job: &Job,
    uses: &[InputUse],
    logical: &punctual_sql::plan::LogicalPlan,
    built: &[(String, RowStream)],
) -> Vec<String> {
    let mut lines = vec!["plan:".to_owned()];
    for u in uses {
        if let Some(input) = job.inputs.get(&u.name) {
            lines.push(format!(
                "  input `{}`: {}",
                u.name,
                describe_input(u, input)
            ));
        }
    }
    lines.push("  logical plan (after its rewrites):".to_owned());
    lines.extend(logical.to_string().lines().map(|l| format!("    {l}")));
    if let Some((_, stream)) = built.first() {
        let explained = match stream {
            AnyStream::Ordered(s) => s.graph().explain(),
            AnyStream::Arrival(s) => s.graph().explain(),
        };
        for e in explained.iter().filter(|e| e.operator != "input") {
            let reads: Vec<String> = e.inputs.iter().map(|(n, _)| format!("`{n}`")).collect();
            lines.push(format!(
                "  {} `{}` reads {}",
                e.operator,
                e.label,
                reads.join(", ")
            ));
        }
    }
    for (name, out) in &job.outputs {
        let target = if out.path.as_os_str() == "-" {
            "standard output".to_owned()
        } else if out.path.as_os_str().is_empty() {
            "TCP, Kafka or MQTT (items)".to_owned()
        } else {
            out.path.display().to_string()
        };
        let layout = match out.rows() {
            Ok(Some(r)) if r.ctis => "flat rows with CTIs",
            Ok(Some(_)) => "flat rows",
            _ => "items",
        };
        lines.push(format!("  output `{name}`: {target}, {layout}"));
    }
    lines
}

/// Prints the plan on `err`, from a build of the query that is not run; the exit code if
/// the query cannot be built.
pub(super) fn print_plan(parts: &parts::Parts, err: &mut dyn Write) -> Result<(), u8> {
    match parts.build(None) {
        Ok(_) => {
            if let Ok(plan) = parts.plan.lock() {
                for line in plan.iter() {
                    let _ = writeln!(err, "{line}");
                }
            }
            Ok(())
        }
        Err(parts::RunError::Usage(m)) => {
            let _ = writeln!(err, "error: {m}");
            Err(EXIT_USAGE)
        }
        Err(e) => {
            let _ = writeln!(err, "error: {}", parts::run_error_text(&e));
            Err(EXIT_FAILED)
        }
    }
}

/// What `explain` says after the run: each operator's last CTI, which input held one back,
/// and what the inputs and operators dropped or adjusted.
pub(super) fn after(report: &punctual_runtime::QueryReport) -> Vec<String> {
    let mut lines = vec!["after the run:".to_owned()];
    let show = |t: Time| match t {
        Time::NEG_INF => "no CTI".to_owned(),
        Time::INF => "the final CTI".to_owned(),
        t => t.rfc3339().to_string(),
    };
    for e in report.explanations.iter().filter(|e| e.operator != "input") {
        let mut line = format!(
            "  {} `{}`: at {}, {} event{} out",
            e.operator,
            e.label,
            show(e.cti),
            e.events_out,
            if e.events_out == 1 { "" } else { "s" }
        );
        if let Some((input, t)) = held_back(e) {
            line.push_str(&format!(", held back by `{input}` (at {})", show(t)));
        }
        if e.dropped > 0 {
            line.push_str(&format!(", dropped {}", e.dropped));
        }
        lines.push(line);
    }
    for (name, c) in &report.streams {
        let mut parts = vec![format!("{} in, {} released", c.events_in, c.released)];
        for (what, n) in [
            ("adjusted", c.adjusted),
            ("dropped as late", c.dropped),
            ("malformed", c.malformed),
            ("rejected", c.rejected),
            ("never released", c.unreleased),
        ] {
            if n > 0 {
                parts.push(format!("{n} {what}"));
            }
        }
        lines.push(format!("  input `{name}`: {}", parts.join(", ")));
    }
    lines
}

/// The input holding an operator's CTI back, if its CTI did not reach the end.
fn held_back(e: &Explanation) -> Option<(String, Time)> {
    e.held_by.clone().filter(|_| e.cti < Time::INF)
}
