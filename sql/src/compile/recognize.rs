//! `MATCH_RECOGNIZE` compiled over a select's source: its variables' conditions, its
//! measures as readings of a match, and the operator ([`crate::recognize`]).

use crate::recognize::{
    columns, partition_names, program, rewrite, variables, Matcher, Nav, NavKind,
};
use crate::scope::nearest;

use super::*;

/// The most variables a pattern names (each event's conditions are one 64-bit set).
const MAX_VARIABLES: usize = 64;

impl Compiler<'_> {
    /// A [`Node::Recognize`] over what `built` gives.
    pub(super) fn recognize(&self, built: Built, spec: &Recognize) -> Result<Built, SqlError> {
        let Some(limit) = spec.limit else {
            return Err(err(
                spec.pos,
                "MATCH_RECOGNIZE needs LIMIT DURATION(unit, n): how long after its first event a match may go on (its events are held that long)",
            ));
        };
        let mut vars = Vec::new();
        variables(&spec.pattern, &mut vars);
        if vars.len() > MAX_VARIABLES {
            return Err(err(
                spec.pos,
                format!(
                    "a pattern of {} variables: at most {MAX_VARIABLES}",
                    vars.len()
                ),
            ));
        }
        let names: Vec<&str> = vars.iter().map(|v| v.name.as_str()).collect();
        let index = |name: &str| names.iter().position(|n| n.eq_ignore_ascii_case(name));
        let conds = conditions(spec, &names, &built.scope)?;
        let Some(program) = program(&spec.pattern, &|n| {
            index(n).and_then(|i| u16::try_from(i).ok()).unwrap_or(0)
        }) else {
            return Err(err(
                spec.pos,
                "the pattern is too long once its quantifiers are counted out: use fewer or smaller counts",
            ));
        };
        let (navs, nav_names, measures) = measures(spec, &names, &built.scope)?;
        let nav_schema = Schema::new(&nav_names).map_err(|e| err(spec.pos, e.to_string()))?;
        let out = columns(spec);
        let out_schema = Schema::new(&out).map_err(|e| err(spec.pos, e.to_string()))?;
        let keep_keys: Vec<usize> = partition_names(spec)
            .iter()
            .enumerate()
            .filter(|(_, p)| out.iter().any(|o| o == *p) && !measured(spec, p))
            .map(|(k, _)| k)
            .collect();
        let partition: Vec<RowExpr> = spec
            .partition
            .iter()
            .map(|p| compile(p, &built.scope, None, false).map(RowExpr::new))
            .collect::<Result<_, _>>()?;
        let op = Matcher {
            program,
            conds,
            limit,
            skip_past_last: spec.skip_past_last,
            navs,
            nav_schema,
            measures,
            keep_keys,
            out_schema,
            scratch: Default::default(),
        };
        let label = self.label.borrow().clone();
        let stream: RowStream = built
            .stream
            .ordered()
            .process(
                move |r: &Row| partition.iter().map(|k| k.eval(r)).collect::<Vec<_>>(),
                op,
            )
            .named(label)
            .into();
        let alias = spec.alias.as_ref().map_or("", |a| a.name.as_str());
        Ok(Built {
            stream,
            scope: Scope {
                sources: vec![(alias.to_owned(), Some(out.clone()))],
                nested: false,
            },
            fields: Some(out),
            timed: Vec::new(),
        })
    }
}

/// Each variable's condition (`None`: any event), over the event at hand.
fn conditions(
    spec: &Recognize,
    names: &[&str],
    scope: &Scope,
) -> Result<Vec<Option<Cond>>, SqlError> {
    let index = |name: &str| names.iter().position(|n| n.eq_ignore_ascii_case(name));
    let mut conds: Vec<Option<Cond>> = vec![None; names.len()];
    for (name, cond) in &spec.define {
        let Some(v) = index(&name.name) else {
            let hint = nearest(&name.name, names.iter().copied())
                .map_or(String::new(), |n| format!(" (did you mean `{n}`?)"));
            return Err(err(
                name.pos,
                format!(
                    "DEFINE {}: the PATTERN has no variable `{}`{hint}; it has {}",
                    name.name,
                    name.name,
                    names.join(", ")
                ),
            ));
        };
        if conds[v].is_some() {
            return Err(err(name.pos, format!("`{}` is defined twice", name.name)));
        }
        let own = rewrite(cond, &mut |e| own_fields(e, &name.name, names))?;
        conds[v] = Some(Cond::new(compile(&own, scope, None, false)?));
    }
    Ok(conds)
}

/// The measures: what each reads of a match (`navs`, and the names they are read by) and each
/// measure as an expression over those.
#[allow(
    clippy::type_complexity,
    reason = "three lists its one caller takes apart"
)]
fn measures(
    spec: &Recognize,
    names: &[&str],
    scope: &Scope,
) -> Result<(Vec<Nav>, Vec<String>, Vec<E>), SqlError> {
    let mut navs: Vec<Nav> = Vec::new();
    let mut nav_names: Vec<String> = Vec::new();
    let mut measures = Vec::new();
    for (m, _) in &spec.measures {
        let mut read = |e: &Expr| -> Result<Option<Expr>, SqlError> {
            let Some((kind, var, field)) = navigation(e, names)? else {
                return Ok(None);
            };
            let value = match &field {
                Some(path) => RowExpr::new(compile(
                    &Expr {
                        kind: ExprKind::Column(path.clone()),
                        pos: e.pos,
                    },
                    scope,
                    None,
                    false,
                )?),
                None => RowExpr::new(E::Lit(Value::Bool(true))),
            };
            let name = format!("m{}", navs.len());
            navs.push(Nav {
                kind,
                var: var.and_then(|v| u16::try_from(v).ok()),
                value,
            });
            nav_names.push(name.clone());
            Ok(Some(Expr {
                kind: ExprKind::Column(vec![Ident { name, pos: e.pos }]),
                pos: e.pos,
            }))
        };
        let over_navs = rewrite(m, &mut read)?;
        measures.push(over_navs);
    }
    let nav_scope = Scope {
        sources: vec![(String::new(), Some(nav_names.clone()))],
        nested: false,
    };
    let measures = measures
        .iter()
        .map(|m| compile(m, &nav_scope, None, true))
        .collect::<Result<Vec<E>, SqlError>>()?;
    Ok((navs, nav_names, measures))
}

/// Whether a measure is named `name` (it then takes the partition's column's place).
fn measured(spec: &Recognize, name: &str) -> bool {
    spec.measures
        .iter()
        .any(|(_, n)| n.name.eq_ignore_ascii_case(name))
}

/// In the condition of variable `var`: `var.field` is the field of the event at hand (as a
/// bare `field` is); another variable's field is refused (a condition reads one event).
fn own_fields(e: &Expr, var: &str, vars: &[&str]) -> Result<Option<Expr>, SqlError> {
    match &e.kind {
        ExprKind::Column(path) if path.len() > 1 => {
            let first = &path[0].name;
            if first.eq_ignore_ascii_case(var) {
                return Ok(Some(Expr {
                    kind: ExprKind::Column(path[1..].to_vec()),
                    pos: e.pos,
                }));
            }
            if vars.iter().any(|v| v.eq_ignore_ascii_case(first)) {
                return Err(err(
                    path[0].pos,
                    format!(
                        "DEFINE {var}: `{first}.{}` reads another variable's event; a condition reads the event at hand (`{var}.{}`, or the field alone)",
                        path[1].name, path[1].name
                    ),
                ));
            }
            Ok(None)
        }
        ExprKind::Call { name, .. }
            if ["first", "last", "prev", "next", "classifier", "match_number"]
                .contains(&name.name.to_ascii_lowercase().as_str()) =>
        {
            Err(err(
                name.pos,
                format!(
                    "DEFINE {var}: {} is not supported in a condition, which reads the event at hand",
                    name.name
                ),
            ))
        }
        _ => Ok(None),
    }
}

/// What a measure's node reads of the match: `FIRST(v.f)`, `LAST(v.f)`, `COUNT(v.f)`,
/// `COUNT(*)`, `v.f` (the last of `v`'s), or a field alone (the match's last event's); `None`
/// for a node that reads none of it directly. The variable's index (`None`: any), and the
/// field's path.
#[allow(
    clippy::type_complexity,
    reason = "one reading, taken apart by its one caller"
)]
fn navigation(
    e: &Expr,
    vars: &[&str],
) -> Result<Option<(NavKind, Option<usize>, Option<Vec<Ident>>)>, SqlError> {
    let split = |path: &[Ident]| -> (Option<usize>, Vec<Ident>) {
        match path {
            [first, rest @ ..] if !rest.is_empty() => {
                match vars
                    .iter()
                    .position(|v| v.eq_ignore_ascii_case(&first.name))
                {
                    Some(v) => (Some(v), rest.to_vec()),
                    None => (None, path.to_vec()),
                }
            }
            _ => (None, path.to_vec()),
        }
    };
    match &e.kind {
        ExprKind::Column(path) => {
            let (var, field) = split(path);
            Ok(Some((NavKind::Last, var, Some(field))))
        }
        ExprKind::Call {
            name, args, star, ..
        } => {
            let kind = match name.name.to_ascii_lowercase().as_str() {
                "first" => NavKind::First,
                "last" => NavKind::Last,
                "count" => NavKind::Count,
                "sum" | "avg" | "min" | "max" | "collect" => {
                    return Err(err(
                        name.pos,
                        format!(
                            "{} in MEASURES is not supported yet: FIRST, LAST and COUNT are",
                            name.name
                        ),
                    ))
                }
                _ => return Ok(None),
            };
            if *star && kind == NavKind::Count {
                return Ok(Some((NavKind::Count, None, None)));
            }
            match args.as_slice() {
                [Expr {
                    kind: ExprKind::Column(path),
                    ..
                }] => {
                    let (var, field) = split(path);
                    Ok(Some((kind, var, Some(field))))
                }
                _ => Err(err(
                    name.pos,
                    format!(
                        "{}(...) in MEASURES reads one field of a variable's events: {}(A.field)",
                        name.name, name.name
                    ),
                )),
            }
        }
        _ => Ok(None),
    }
}
