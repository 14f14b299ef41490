//! A grouped select: its windows, groups and aggregates, `HAVING` and the select list over
//! each group's result.

use super::*;
use punctual_core::ops::WindowOutput;

use super::session::sessions;

impl Compiler<'_> {
    pub(super) fn grouped(
        &self,
        s: &Select,
        scope: &Scope,
        stream: RowStream,
    ) -> Result<Named, SqlError> {
        let GroupBy {
            window,
            partition,
            keys,
            key_exprs,
        } = group_by(s, scope)?;
        let label = self.label.borrow().clone();
        let mut grouping = Grouping {
            keys: &keys,
            aggs: Vec::new(),
            analytics: None,
        };
        let (items, names) = select_list(s, scope, &mut grouping)?;
        let having = match &s.having {
            Some(h) => Some(compile(h, scope, Some(&mut grouping), false)?),
            None => None,
        };
        // Rows whose keys or aggregates' arguments cannot be computed are dropped with the
        // reason before the window; a group whose aggregates cannot be given (a SUM out of
        // range) is dropped with the reason by the select after it.
        let stream = gate(stream, &key_exprs, &grouping.aggs);
        let aggs_may_fail = grouping.aggs.iter().any(AggFn::may_fail);
        let aggs = SqlAggs::new(grouping.aggs);
        let select_reads_time = items.iter().any(E::reads_time);
        let checked = aggs_may_fail || items.iter().any(E::may_fault);
        let key_slots = crate::aggs::slots(key_exprs.len().max(1));
        let schema = Schema::new(&names).map_err(|e| err(s.pos, e.to_string()))?;
        let empty = Row::new();
        // The select's row of a group's keys and aggregates, at time `t`.
        let select = move |t: Time, keys: &[Value], aggs: &[Value]| {
            let cx = Ctx {
                row: &empty,
                pair: None,
                time: t,
                keys,
                aggs,
            };
            row_of(
                &schema,
                &items,
                #[inline(always)]
                |e| e.with(&cx, Value::clone),
            )
        };
        if let WindowSql::Tumbling { lateness, .. }
        | WindowSql::Hopping { lateness, .. }
        | WindowSql::Session { lateness, .. } = window
        {
            if lateness.ticks() > 0 && stream.order() == punctual_core::EventOrder::Sorted {
                return Err(err(
                    s.pos,
                    "AllowedLateness needs its input read in arrival order: the results it gives early would miss the events a sorted input still holds (give the input `order = \"arrival\"` in a job, `order=arrival` on `query --input`)",
                ));
            }
        }
        let stream: RowStream = match window {
            // With no HAVING and no System.Timestamp(), the select's row is made as each
            // group's aggregates are (no row of keys, no row of aggregates, no pass after).
            WindowSql::Tumbling {
                size,
                offset,
                lateness,
            }
            | WindowSql::Hopping {
                size,
                offset,
                lateness,
                ..
            } if having.is_none() && !select_reads_time => {
                let hop = match window {
                    WindowSql::Hopping { hop, .. } => hop,
                    _ => size,
                };
                let spans = (size, hop, offset, lateness);
                if checked {
                    // The window makes the row or the reason (a fault of the aggregates'
                    // results is still recorded), the projection after it drops the reasons.
                    let make = move |k: &[Value], aggs: Row| {
                        let row = select(Time::NEG_INF, k, aggs.values());
                        crate::limits::take_fault().map_or(Ok(row), |why| {
                            Err(format!("its select list cannot be computed: {why}"))
                        })
                    };
                    match hopping(&stream, spans, key_exprs, aggs, make, &label) {
                        AnyStream::Ordered(s) => s.keep_ok().into(),
                        AnyStream::Arrival(s) => s.keep_ok().into(),
                    }
                } else {
                    let make =
                        move |k: &[Value], aggs: Row| select(Time::NEG_INF, k, aggs.values());
                    hopping(&stream, spans, key_exprs, aggs, make, &label)
                }
            }
            _ => {
                let flags = (aggs_may_fail, label.as_str());
                let window = (window, partition);
                let over = (having, aggs_may_fail, checked);
                match groups(window, &stream, key_exprs, aggs, key_slots, flags) {
                    AnyStream::Ordered(g) => selected(g, over, select).into(),
                    AnyStream::Arrival(g) => selected(g, over, select).into(),
                }
            }
        };
        Ok(Named {
            stream,
            fields: Some(names),
        })
    }
}

/// A `GROUP BY` compiled: its window (exactly one), the window's partition (a session
/// window's `PARTITION BY`), its keys as written (with where) and compiled.
struct GroupBy {
    window: WindowSql,
    partition: Vec<E>,
    keys: Vec<(String, Pos)>,
    key_exprs: Vec<E>,
}

fn group_by(s: &Select, scope: &Scope) -> Result<GroupBy, SqlError> {
    let mut window = None;
    let mut keys: Vec<(String, Pos)> = Vec::new();
    let mut key_exprs = Vec::new();
    for g in &s.group_by {
        match g {
            GroupItem::Window(w, at) => {
                if window.is_some() {
                    return Err(err(*at, "one window per GROUP BY"));
                }
                window = Some(w.clone());
            }
            GroupItem::Key(e) => {
                keys.push((canonical(e), e.pos));
                key_exprs.push(compile(e, scope, None, false)?);
            }
        }
    }
    let Some(window) = window else {
        return Err(err(
            s.group_pos.unwrap_or(s.pos),
            "a query with aggregates or GROUP BY needs a window in GROUP BY: TumblingWindow, HoppingWindow, SlidingWindow, SessionWindow or SnapshotWindow",
        ));
    };
    let mut partition = Vec::new();
    if let WindowSql::Session { partition: p, .. } = &window {
        for e in p {
            partition.push(compile(e, scope, None, false)?);
        }
    }
    Ok(GroupBy {
        window,
        partition,
        keys,
        key_exprs,
    })
}

/// The select list of a grouped query, compiled over the group's keys and aggregates (those
/// it reads join `grouping`), with the columns' names.
fn select_list(
    s: &Select,
    scope: &Scope,
    grouping: &mut Grouping<'_>,
) -> Result<(Vec<E>, Vec<String>), SqlError> {
    let mut items = Vec::new();
    let mut names = Vec::new();
    for (n, item) in s.items.iter().enumerate() {
        let SelectItem::Expr(e, alias) = item else {
            let at = match item {
                SelectItem::Star(p) => *p,
                SelectItem::QualifiedStar(path) => path.first().map_or(s.pos, |i| i.pos),
                SelectItem::Expr(e, _) => e.pos,
            };
            return Err(err(
                at,
                "a grouped query selects keys and aggregates, not *",
            ));
        };
        let name = item_name(e, alias, n + 1);
        if names.contains(&name) {
            return Err(err(
                alias.as_ref().map_or(e.pos, |a| a.pos),
                format!("two columns are named `{name}`: give one an alias (AS other)"),
            ));
        }
        names.push(name.clone());
        items.push(compile(e, scope, Some(&mut *grouping), true)?);
    }
    Ok((items, names))
}

/// The groups of `window` (partitioned by the second part for a session window) over
/// `stream` by `keys` with `aggs` over each, as points at each window's end (or each moment a
/// sliding or snapshot window changes). With `aggs_may_fail`, each group keeps the fault its
/// aggregates' results recorded (a `SUM` out of range).
fn groups(
    (window, partition): (WindowSql, Vec<E>),
    stream: &RowStream,
    keys: Vec<E>,
    aggs: SqlAggs,
    key_slots: Schema,
    (aggs_may_fail, label): (bool, &str),
) -> AnyStream<Group> {
    let group = move |k: &[Value], aggs: Row| Group {
        keys: key_slots.row(k.iter().cloned()),
        aggs,
        fault: if aggs_may_fail {
            crate::limits::take_fault().map(std::borrow::Cow::into_owned)
        } else {
            None
        },
    };
    match window {
        WindowSql::Tumbling {
            size,
            offset,
            lateness,
        } => hopping(
            stream,
            (size, size, offset, lateness),
            keys,
            aggs,
            group,
            label,
        ),
        WindowSql::Hopping {
            size,
            hop,
            offset,
            lateness,
        } => hopping(
            stream,
            (size, hop, offset, lateness),
            keys,
            aggs,
            group,
            label,
        ),
        WindowSql::Sliding { size } => grouped_by(
            stream.ordered().alter_duration(size).snapshot_window(),
            keys,
            aggs,
            group,
        )
        .to_point_events()
        .into(),
        WindowSql::Snapshot => grouped_by(stream.ordered().snapshot_window(), keys, aggs, group)
            .to_point_events()
            .into(),
        WindowSql::Session {
            timeout,
            max,
            lateness,
            ..
        } => sessions(
            stream,
            (timeout, max, lateness),
            partition,
            keys,
            aggs,
            group,
            label,
        ),
    }
}

/// The select list over `groups` (each at its time), those whose `HAVING` holds: `over` is
/// the condition, whether the aggregates may fail, whether anything may fail.
fn selected<O: Order>(
    groups: Stream<Group, O>,
    (having, aggs_may_fail, checked): (Option<E>, bool, bool),
    select: impl Fn(Time, &[Value], &[Value]) -> Row + Send + 'static,
) -> Stream<Row, O> {
    let groups = match having {
        Some(h) => having_filter(groups, h, aggs_may_fail),
        None => groups,
    };
    if checked {
        groups.try_map_with_time(move |t, g| {
            if let Some(why) = &g.fault {
                return Err(format!("its aggregates cannot be computed: {why}"));
            }
            crate::limits::checked("its select list", || {
                select(t, g.keys.values(), g.aggs.values())
            })
        })
    } else {
        groups.map_with_time(move |t, g| select(t, g.keys.values(), g.aggs.values()))
    }
}

/// `groups` whose `HAVING` condition `h` holds; a group whose condition (or, with
/// `aggs_may_fail`, whose aggregates) cannot be computed is dropped with the reason.
fn having_filter<O: Order>(
    groups: Stream<Group, O>,
    h: E,
    aggs_may_fail: bool,
) -> Stream<Group, O> {
    let checked = aggs_may_fail || h.may_fault();
    let empty = Row::new();
    let holds = move |g: &Group| {
        h.holds(&Ctx {
            row: &empty,
            pair: None,
            time: Time::NEG_INF,
            keys: g.keys.values(),
            aggs: g.aggs.values(),
        })
    };
    if !checked {
        return groups.filter(holds);
    }
    groups.try_filter(move |g| {
        if let Some(why) = &g.fault {
            return Err(format!("its aggregates cannot be computed: {why}"));
        }
        crate::limits::checked("its HAVING condition", || holds(g))
    })
}

/// `stream` without the rows whose group `keys` or aggregates' arguments cannot be computed
/// (an overflow, a division by zero, a failed cast) or whose `SUM` or `AVG` argument is not a
/// number (a text, a boolean, a record): each is dropped with the reason, before the window.
/// The stream itself when no key and no argument can fail.
pub(crate) fn gate(stream: RowStream, keys: &[E], aggs: &[AggFn]) -> RowStream {
    // What may fail to compute, evaluated with the fault slot looked at after; and the
    // arguments that must be numbers, only looked at (the usual case: a field).
    let fallible: Vec<RowExpr> = keys
        .iter()
        .filter(|k| k.may_fault())
        .map(|k| RowExpr::new(k.clone()))
        .chain(
            aggs.iter()
                .filter_map(AggFn::checked_arg)
                .filter(|(arg, _)| arg.may_fault())
                .map(|(arg, _)| arg),
        )
        .collect();
    let numbers: Vec<RowExpr> = aggs
        .iter()
        .filter_map(AggFn::checked_arg)
        .filter_map(|(arg, number)| number.then_some(arg))
        .collect();
    if fallible.is_empty() && numbers.is_empty() {
        return stream;
    }
    let what = "its group keys or aggregates";
    stream.try_filter(move |r| {
        for arg in &numbers {
            if let Some(why) = arg.with(r, not_a_number) {
                return Err(format!("{what} cannot be computed: {why}"));
            }
        }
        if fallible.is_empty() {
            return Ok(true);
        }
        crate::limits::checked(what, || {
            for e in &fallible {
                e.with(r, |_| ());
            }
            true
        })
    })
}

/// Why `v` cannot be summed or averaged, if it cannot (`NULL` is left out, not refused).
#[inline]
fn not_a_number(v: &Value) -> Option<&'static str> {
    match v {
        Value::Null | Value::Int(_) | Value::Float(_) => None,
        Value::Str(_) => Some("a SUM or AVG of a text"),
        Value::Bool(_) => Some("a SUM or AVG of a boolean"),
        _ => Some("a SUM or AVG of a value that is not a number"),
    }
}

/// Hopping windows of `size` every `hop` (aligned to `offset`) over `stream` in the order it
/// has (their results are sorted either way), grouped and aggregated as [`grouped_by`] says,
/// as Stream Analytics defines them: the windows end every `hop` (from `offset`), a window
/// ending at `end` holds the events after `end - size` up to `end` inclusive, and its result
/// is at `end`. (The Rust API's windows start every `hop` and hold `[start, end)`: they are
/// laid so that each ends one tick after a Stream Analytics window's end, each result a point
/// at the window's last tick, [`WindowOutput::PointAtLastTick`].)
fn hopping<Out: Payload>(
    stream: &RowStream,
    (size, hop, offset, lateness): (TimeSpan, TimeSpan, TimeSpan, TimeSpan),
    keys: Vec<E>,
    aggs: SqlAggs,
    make: impl Fn(&[Value], Row) -> Out + Send + 'static,
    label: &str,
) -> AnyStream<Out> {
    let at = Time::from_ticks(0) + offset + TimeSpan::from_ticks(1) - size;
    let last = WindowOutput::PointAtLastTick;
    match stream {
        AnyStream::Ordered(s) => {
            let windowed = s.hopping_window(size, hop).alignment(at).output(last);
            grouped_by(windowed, keys, aggs, make).named(label).into()
        }
        AnyStream::Arrival(s) if lateness.ticks() > 0 => {
            let windowed = s
                .hopping_window(size, hop)
                .alignment(at)
                .output(last)
                .allowed_lateness(lateness);
            grouped_by(windowed, keys, aggs, make).named(label).into()
        }
        AnyStream::Arrival(s) => {
            let windowed = s.hopping_window(size, hop).alignment(at).output(last);
            grouped_by(windowed, keys, aggs, make).named(label).into()
        }
    }
}

/// A window's groups by `keys` with `aggs` over each, each group's result what `make` makes
/// of its keys' values and its aggregates. One key (or none) is that value, several a
/// vector: a group of one integer key is found by indexing the window's table, as in a
/// typed query.
fn grouped_by<O: Order, R: Order, Out: Payload>(
    windowed: Windowed<Row, Ungrouped, O, R>,
    keys: Vec<E>,
    aggs: SqlAggs,
    make: impl Fn(&[Value], Row) -> Out + Send + 'static,
) -> Stream<Out, R> {
    let mut keys: Vec<RowExpr> = keys.into_iter().map(RowExpr::new).collect();
    match keys.len() {
        0 | 1 => {
            let one = move |k: &Value, aggs| make(std::slice::from_ref(k), aggs);
            match keys.pop() {
                // A field: a key function of its own, short enough to be inlined in the
                // window's loop.
                Some(RowExpr::Field(f)) => windowed
                    .group_by(move |r: &Row| r.field_ref(&f).cloned().unwrap_or(Value::Null))
                    .aggregate_into(aggs, one),
                key => windowed
                    .group_by(move |r: &Row| {
                        key.as_ref()
                            .map_or(Value::Null, |k| k.with(r, Value::clone))
                    })
                    .aggregate_into(aggs, one),
            }
        }
        _ => windowed
            .group_by(move |r: &Row| keys.iter().map(|k| k.eval(r)).collect::<Vec<_>>())
            .aggregate_into(aggs, move |k: &Vec<Value>, aggs| make(k, aggs)),
    }
}
