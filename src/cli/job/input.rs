//! A job's inputs: each as a stream of the query, read as its table in the job says.

use punctual_adapters::csv::Validity;
use punctual_core::ops::Stream;
use punctual_core::{EventOrder, Order};
use punctual_rows::Row;
use punctual_sql::InputUse;

use super::timing::{line_format, over_and_time, time_format};
use super::*;

/// An input's stream, and its records' fields when they are known.
type Created<O> = (Stream<Row, O>, Option<Vec<String>>);

/// The watermark strategy of an input: Flink's bounded out-of-orderness (`bounded`), or Stream
/// Analytics' tolerances (`out_of_order`, `late`, `early`; over arrival times: a Kafka input's,
/// or a file's `arrival` field), one
/// watermark per value of the `OVER` field if the query gives one. `policy` is the input's.
fn watermark(
    w: &JobWatermark,
    input: &JobInput,
    over: Option<String>,
    policy: AdvanceTimePolicy,
) -> Result<punctual_policies::Watermark<Row>, String> {
    use punctual_policies::Watermark;
    let mut strategy = match (w.bounded, w.out_of_order) {
        (Some(bound), None) => {
            if w.late.is_some() || w.early.is_some() {
                return Err("`late` and `early` are Stream Analytics' tolerances: they go with `out_of_order`, not `bounded`".into());
            }
            Watermark::<Row>::bounded(bound).policy(policy)
        }
        (None, Some(out_of_order)) => {
            if input.kafka.is_none() && input.arrival.is_none() {
                return Err("watermark = { out_of_order = ... } (Stream Analytics' tolerances) needs arrival times: a Kafka input's, or a JSON-lines file's field named by `arrival = \"FIELD\"`; without them give `bounded`".into());
            }
            let mut s = Watermark::<Row>::arrival(out_of_order).policy(policy);
            match w.late {
                Some(Late::Within(late)) => s = s.late(late),
                Some(Late::Indefinite) => s = s.no_late_limit(),
                None => {}
            }
            if let Some(early) = w.early {
                s = s.early(early);
            }
            s
        }
        _ => {
            return Err("watermark takes `bounded` (Flink's bounded out-of-orderness) or `out_of_order` (Stream Analytics' tolerances, with `late` and `early`), one of them".into())
        }
    };
    strategy = strategy.final_cti(w.final_cti);
    if let Some(t) = w.idle_timeout {
        strategy = strategy.idle_timeout(t);
    }
    if let Some(name) = over {
        // Read as the language reads a field: in any ASCII case.
        strategy = strategy.substream(move |r: &Row| {
            use std::hash::{Hash, Hasher};
            let mut h = std::collections::hash_map::DefaultHasher::new();
            r.field_any_case(&name).hash(&mut h);
            h.finish()
        });
    }
    Ok(strategy)
}

/// A row's key for matching its end edge to its start edge: a hash of the `fields`' values
/// (equal rows, equal keys).
pub(in crate::cli) fn fields_key(fields: Vec<String>) -> impl Fn(&Row) -> u64 + Send + Sync {
    let fields: Vec<std::sync::Arc<str>> = fields.into_iter().map(Into::into).collect();
    move |r: &Row| {
        use std::hash::{Hash, Hasher};
        let mut h = std::collections::hash_map::DefaultHasher::new();
        for f in &fields {
            r.field(f).hash(&mut h);
        }
        h.finish()
    }
}

/// How a CSV input's rows are valid when it is reference data: without a time column, for
/// all time; with a start and no end, until the next row of its key (`key`, or the fields the
/// join compares); else as events (`None`).
fn reference_table(
    u: &InputUse,
    input: &JobInput,
    timed: bool,
) -> Result<Option<Validity>, String> {
    let reference = input.reference.unwrap_or(u.reference_of.is_some());
    let file = !input.path.as_os_str().is_empty()
        && input.kafka.is_none()
        && input.mqtt.is_none()
        && input.nats.is_none()
        && input.connect.is_none()
        && input.listen.is_none();
    let csv = file && format_of(&input.path, input.format) == Format::Csv;
    // JSON-lines records without a time, read as reference data: a static table, as a CSV
    // file without a time column is.
    if reference && !timed && file && !csv && super::json_records(&input.path) {
        return Ok(Some(Validity::Always));
    }
    let table = match (reference && csv, timed, &input.end) {
        (true, false, _) => Some(Validity::Always),
        (true, true, None) => {
            let key = input.key.clone().unwrap_or_else(|| u.reference_key.clone());
            if key.is_empty() {
                return Err(format!(
                    "each row of `{}` is valid from its time until the next row with the same key, and the join compares none of its fields: name the key (key = [\"device\"], or --input {}=FILE,key=device)",
                    u.name, u.name
                ));
            }
            Some(Validity::UntilNext { key })
        }
        _ => None,
    };
    Ok(table)
}

/// Creates one input stream as the job reads it: CSV or JSON lines; flat records timed by
/// `time` (or the query's `TIMESTAMP BY`), or items in the JSON-lines form; CTIs generated
/// (`delay`, `generate`) or imported (`import`, or from the input it is reference data for);
/// its events in the order `order` gives its options (sorted, or in arrival order).
pub(super) fn create_input<O: Order>(
    query: &mut punctual_runtime::Query,
    u: &InputUse,
    input: &JobInput,
    order: impl FnOnce(punctual_runtime::InputOptions) -> punctual_runtime::InputOptions<O>,
) -> Result<Created<O>, RunError> {
    use punctual_runtime::InputOptions;
    let usage = |m: String| RunError::Usage(format!("input `{}`: {m}", u.name));
    let (over, time) = over_and_time(u, input).map_err(usage)?;
    let reference = input.reference.unwrap_or(u.reference_of.is_some());
    let table = reference_table(u, input, time.is_some()).map_err(usage)?;
    let shape = match (&table, &time, &input.end) {
        (Some(Validity::Always), _, _) => EventShape::Interval,
        (Some(Validity::UntilNext { .. }), _, _) => EventShape::Edge,
        // Reference data's empty ends: still valid (start edges).
        (None, Some(_), Some(_)) if reference => EventShape::Edge,
        (None, Some(_), None) => EventShape::Point,
        (None, Some(_), Some(_)) => EventShape::Interval,
        (None, None, _) => EventShape::Edge,
    };
    if input.key.is_some() && shape != EventShape::Edge {
        return Err(usage("`key` names the key of edges (items, or a reference table of versions: CSV reference data with a time column and no `end`) or of a table's versions; these records are points or intervals, which have none".into()));
    }
    let settings = cti_settings(u, input, reference).map_err(usage)?;
    let policy = input.policy.unwrap_or(super::Policy::Adjust).engine();
    let mut options = InputOptions::new(u.name.clone(), shape).settings(settings);
    // Edges matched by their key (given, or the join's), not by a scan of those at a start.
    let edge_key = input
        .key
        .clone()
        .or_else(|| (reference && !u.reference_key.is_empty()).then(|| u.reference_key.clone()));
    if let (EventShape::Edge, Some(fields)) = (shape, edge_key) {
        options = options.edge_key(fields_key(fields));
    }
    if let Some(n) = input.max_buffered {
        if n == 0 {
            return Err(usage(
                "`max_buffered = 0`: the reorder buffer holds 1 event or more".into(),
            ));
        }
        options = options.max_buffered(n);
    }
    if let Some(w) = &input.watermark {
        options = options.watermark(watermark(w, input, over, policy).map_err(usage)?);
    }
    if reference {
        // Read first: the other inputs start once it is in.
        options = options.reference();
    }
    if O::ORDER == EventOrder::Arrival && shape == EventShape::Edge {
        return Err(usage(
            "order = \"arrival\" takes records with a time field (points, or intervals with `end`); items of any kind are read in time order".into(),
        ));
    }
    let options = order(options);
    let time_format = time_format(input).map_err(usage)?;
    if input.fields.as_ref().is_some_and(Vec::is_empty) {
        return Err(usage(
            "`fields = []` lists no field: list the records' fields, or leave `fields` out to read them from the file".into(),
        ));
    }
    check_source(input).map_err(usage)?;
    let lines =
        line_format(u, input, (time.as_deref(), table.as_ref()), time_format).map_err(usage)?;
    if let Some(table) = &input.kafka {
        let stream = crate::cli::brokers::kafka(query, options, table, lines).map_err(usage)?;
        return Ok((stream, input.fields.clone()));
    }
    if let Some(table) = &input.mqtt {
        let stream = crate::cli::brokers::mqtt(query, options, table, lines).map_err(usage)?;
        return Ok((stream, input.fields.clone()));
    }
    if let Some(table) = &input.nats {
        let stream = crate::cli::brokers::nats(query, options, table, lines).map_err(usage)?;
        return Ok((stream, input.fields.clone()));
    }
    if input.connect.is_some() || input.listen.is_some() {
        let stream = tcp_stream(query, options, (u, input), &lines)?;
        return Ok((stream, input.fields.clone()));
    }
    match format_of(&input.path, input.format) {
        Format::Csv => csv_stream(query, (options, time_format), (u, input), (time, table)),
        Format::Jsonl => {
            let time = time.as_deref();
            jsonl_stream(query, (options, time_format, lines), (u, input), time)
        }
    }
}

/// The CTI settings of an input: generated (`delay`, `generate`; by default a CTI after every
/// event) or imported (`import`, or from the input it is reference data for), with its
/// policy (adjust by default, as Stream Analytics does); a watermark strategy is set apart.
fn cti_settings(
    u: &InputUse,
    input: &JobInput,
    reference: bool,
) -> Result<AdvanceTimeSettings, String> {
    let import = input.import.clone().or_else(|| u.reference_of.clone());
    // Stream Analytics' default: a late event is moved up to the CTI, not lost.
    let policy = input.policy.unwrap_or(super::Policy::Adjust).engine();
    let mut builder = AdvanceTimeSettings::builder().policy(policy);
    let has_import = import.is_some();
    if let Some(from) = import {
        builder = builder.import(AdvanceTimeImportSettings::new(from));
    }
    if input.watermark.is_some() && (input.generate.is_some() || input.delay.is_some()) {
        return Err("give `watermark`, `delay` or `generate`, one of them".into());
    }
    // A delay is how far behind the newest event the CTIs stay, for events that come out of
    // order: below zero it would turn every event but the first into a late one.
    let delays = [input.delay, input.generate.as_ref().map(|g| g.delay)];
    if let Some(d) = delays.into_iter().flatten().find(|d| d.ticks() < 0) {
        return Err(format!(
            "delay = \"{d}\": a delay cannot be negative (it is how far the CTIs stay behind the newest event; \"0s\" for events in order)"
        ));
    }
    let generation = match (&input.generate, input.delay) {
        _ if input.watermark.is_some() => None,
        (Some(_), Some(_)) => return Err("give `delay` or `generate`, not both".into()),
        (Some(g), None) => {
            let b = match (g.every, g.duration) {
                (Some(n), None) if n > 0 => AdvanceTimeGenerationSettings::every_events(n),
                (None, Some(d)) if d.ticks() > 0 => AdvanceTimeGenerationSettings::every_duration(d),
                _ => {
                    return Err(
                        "generate takes `every = N` (events, above zero) or `duration = \"5s\"` (above zero), one of them".into(),
                    )
                }
            };
            Some(
                b.delay(g.delay)
                    .final_cti(g.final_cti)
                    .build()
                    .map_err(|e| e.to_string())?,
            )
        }
        (None, delay) if !reference || delay.is_some() => Some(
            AdvanceTimeGenerationSettings::every_events(1)
                .delay(delay.unwrap_or(TimeSpan::ZERO))
                .final_cti(true)
                .build()
                .map_err(|e| e.to_string())?,
        ),
        (None, _) => None,
    };
    let generation_or_import = generation.is_some() || has_import;
    if let Some(g) = generation {
        builder = builder.generation(g);
    }
    let settings = if generation_or_import {
        builder.build().map_err(|e| e.to_string())?
    } else {
        AdvanceTimeSettings::policy_only(policy)
    };
    Ok(settings)
}

/// Refuses an input without exactly one source, or with options its source does not take.
fn check_source(input: &JobInput) -> Result<(), String> {
    let sources = [
        !input.path.as_os_str().is_empty(),
        input.connect.is_some(),
        input.listen.is_some(),
        input.kafka.is_some(),
        input.mqtt.is_some(),
        input.nats.is_some(),
    ];
    if sources.iter().filter(|&&s| s).count() != 1 {
        return Err(
            "give one source: `path` (a file, or \"-\"), `connect`, `listen`, `kafka`, `mqtt` or `nats`"
                .into(),
        );
    }
    if let Some(parts) = input
        .split
        .filter(|p| !(1..=punctual_adapters::MAX_SPLIT).contains(p))
    {
        return Err(format!(
            "`split = {parts}`: a file is split into 1 to {} parts (each part is an input with its own open file)",
            punctual_adapters::MAX_SPLIT
        ));
    }
    let broker = input.kafka.is_some() || input.mqtt.is_some() || input.nats.is_some();
    if let Some(field) = &input.arrival {
        let json_file = !input.path.as_os_str().is_empty()
            && format_of(&input.path, input.format) == Format::Jsonl;
        if !json_file {
            return Err(format!(
                "`arrival = \"{field}\"` reads each record's arrival time from a JSON-lines file; a Kafka input's arrival is its messages' timestamps, and CSV, TCP and MQTT inputs take none"
            ));
        }
        if input
            .watermark
            .as_ref()
            .is_none_or(|w| w.out_of_order.is_none())
        {
            return Err(format!(
                "`arrival = \"{field}\"` gives arrival times for Stream Analytics' tolerances: add watermark = {{ out_of_order = \"0s\", late = \"5s\" }} (`--input NAME=FILE,arrival={field},out_of_order=0s,late=5s` on `query`)"
            ));
        }
    }
    if input.split.is_some() && (broker || input.connect.is_some() || input.listen.is_some()) {
        return Err(
            "`split` reads a file by byte ranges; a Kafka topic's partitions are `partitions = [...]` in `kafka`".into(),
        );
    }
    if broker
        && (input.format == Some(Format::Csv) || input.stream.is_some() || input.end.is_some())
    {
        return Err(
            "a Kafka or MQTT input reads JSON: flat records timed by `time` (or the query's TIMESTAMP BY), or items ({\"kind\":\"point\",\"start\":...}); CSV, `end` and `stream` are for files".into(),
        );
    }
    Ok(())
}

/// A TCP input: one partition per address (an input `NAME#p` each, read on its own worker);
/// a server listens where its partition is read.
fn tcp_stream<O: Order>(
    query: &mut punctual_runtime::Query,
    options: punctual_runtime::InputOptions<O>,
    (u, input): (&InputUse, &JobInput),
    lines: &punctual_adapters::line::LineFormat,
) -> Result<Stream<Row, O>, RunError> {
    let usage = |m: String| RunError::Usage(format!("input `{}`: {m}", u.name));
    if input.format == Some(Format::Csv) || input.stream.is_some() || input.end.is_some() {
        return Err(usage(
            "a TCP input reads JSON lines: flat records timed by `time` (or the query's TIMESTAMP BY), or items ({\"kind\":\"point\",\"start\":...}); CSV, `end` and `stream` are for files".into(),
        ));
    }
    let stream = if let Some(addrs) = &input.connect {
        let servers: Vec<_> = addrs
            .list()
            .into_iter()
            .map(|connect| punctual_adapters::TcpClientConfig::new(connect).lines(lines.clone()))
            .collect();
        if servers.is_empty() {
            return Err(usage("`connect` names no server".into()));
        }
        let clients = punctual_runtime::Partitioned(punctual_adapters::TcpClientInput);
        query.create_stream::<_, Row, _, _>(options, &clients, &servers)?
    } else {
        let ports: Vec<_> = input
            .listen
            .as_ref()
            .map(|a| a.list())
            .unwrap_or_default()
            .into_iter()
            .map(|listen| punctual_adapters::TcpListenConfig::new(listen).lines(lines.clone()))
            .collect();
        if ports.is_empty() {
            return Err(usage("`listen` names no address".into()));
        }
        let servers = punctual_runtime::Partitioned(punctual_adapters::TcpListenInput);
        query.create_stream::<_, Row, _, _>(options, &servers, &ports)?
    };
    Ok(stream)
}

/// A CSV file input: its time (and end) columns checked against the header or `fields`, its
/// first time against its format, a reference table's validity, the columns the query reads.
fn csv_stream<O: Order>(
    query: &mut punctual_runtime::Query,
    (options, time_format): (punctual_runtime::InputOptions<O>, TimeFormat),
    (u, input): (&InputUse, &JobInput),
    (time, table): (Option<String>, Option<Validity>),
) -> Result<Created<O>, RunError> {
    use punctual_adapters::{CsvInput, CsvInputConfig};
    let usage = |m: String| RunError::Usage(format!("input `{}`: {m}", u.name));
    if input.stream.is_some() {
        return Err(usage("`stream` is for JSON-lines arrival logs".into()));
    }
    let time = match (time, &table) {
        (Some(time), _) => time,
        (None, Some(Validity::Always)) => String::new(),
        (None, _) => {
            return Err(usage(
                "a CSV input needs its time column (TIMESTAMP BY column in the query, or time = \"COLUMN\"); a table without one is reference data, joined without DATEDIFF".into(),
            ))
        }
    };
    // The columns as `fields` lists them, or as the file's header has them: each
    // message says which it read.
    let (header, whose, they) = match &input.fields {
        Some(listed) => (
            Some(listed.clone()),
            "`fields` of the input does not list".to_owned(),
            "it lists",
        ),
        None => (
            csv_header(&input.path),
            format!("{} has no column", input.path.display()),
            "its columns",
        ),
    };
    // The time and end columns as the header names them (a query's `TIMESTAMP BY TIME`
    // reads the column `Time`: names match in any ASCII case, the exact one first).
    let mut time = time;
    let mut end = input.end.clone();
    if let Some(h) = &header {
        let timed = (!time.is_empty()).then_some(&mut time);
        for column in timed.into_iter().chain(end.as_mut()) {
            match column_named(h, column) {
                Some(named) => *column = named,
                None => {
                    return Err(usage(format!(
                        "{whose} `{column}` ({they}: {})",
                        h.join(", ")
                    )))
                }
            }
        }
    }
    if !time.is_empty() {
        let first = crate::cli::first_time::TimeIn::Column(&time);
        crate::cli::first_time::check(&input.path, &first, time_format).map_err(usage)?;
    }
    let mut config = CsvInputConfig::new(&input.path, time)
        .time_format(time_format)
        .nullable(input.nullable.iter().flatten().cloned());
    if let (Some(h), Some(listed)) = (&header, &input.nullable) {
        if let Some(missing) = listed.iter().find(|c| column_named(h, c).is_none()) {
            return Err(usage(format!(
                "`nullable`: {whose} `{missing}` ({they}: {})",
                h.join(", ")
            )));
        }
    }
    if let Some(table) = table {
        config = config.table(table);
    }
    if let Some(end) = end {
        config = config.end(end);
    }
    if let Some(parts) = input.split {
        config = config.split(parts);
    }
    // Each row with the columns the query reads only (all, if it reads whole records).
    if let (Some(read), Some(h)) = (&u.fields_read, &header) {
        config = config.columns(read.iter().filter_map(|f| column_named(h, f)));
    }
    let stream = query.create_stream::<_, Row, _, _>(options, &CsvInput, &config)?;
    Ok((stream, header))
}

/// The column of `header` named `name`, or, without one, the first named so in another
/// ASCII case (the query language's names match so).
fn column_named(header: &[String], name: &str) -> Option<String> {
    header
        .iter()
        .find(|h| *h == name)
        .or_else(|| header.iter().find(|h| h.eq_ignore_ascii_case(name)))
        .cloned()
}

/// A JSON-lines file input: flat records timed by `time`, or items; its fields as `fields`
/// lists them or as its first lines have them.
fn jsonl_stream<O: Order>(
    query: &mut punctual_runtime::Query,
    (options, time_format, lines): (
        punctual_runtime::InputOptions<O>,
        TimeFormat,
        punctual_adapters::line::LineFormat,
    ),
    (u, input): (&InputUse, &JobInput),
    time: Option<&str>,
) -> Result<Created<O>, RunError> {
    use punctual_adapters::{JsonLinesInput, JsonLinesInputConfig};
    let usage = |m: String| RunError::Usage(format!("input `{}`: {m}", u.name));
    if input.nullable.is_some() {
        return Err(usage(
            "`nullable` is for CSV columns; a JSON field is null as `null`".into(),
        ));
    }
    if input.end.is_some() {
        return Err(usage(
            "`end` is for CSV inputs; JSON lines give intervals as items".into(),
        ));
    }
    if let Some(field) = time {
        let first = crate::cli::first_time::TimeIn::Field(field);
        crate::cli::first_time::check(&input.path, &first, time_format).map_err(usage)?;
    }
    let fields = input
        .fields
        .clone()
        .or_else(|| json_fields(&input.path, lines.is_flat(), input.stream.as_deref()));
    let mut config = JsonLinesInputConfig::new(&input.path);
    config.lines = lines;
    if let Some(stream) = &input.stream {
        config = config.stream(stream.clone());
    }
    if let Some(parts) = input.split {
        config = config.split(parts);
    }
    let stream = query.create_stream::<_, Row, _, _>(options, &JsonLinesInput, &config)?;
    Ok((stream, fields))
}
