//! The logical plan: what a query computes, as a tree of logical operators over named
//! sources, between the syntax tree and the operators. A query is parsed, made into a plan
//! ([`LogicalPlan`]), rewritten (each rewrite a function of its own, in [`rewrite`]), and
//! only then built into operators; `punctual explain` prints the plan as it will run.
//!
//! ```
//! let sql = punctual_sql::SqlQuery::parse(
//!     "SELECT r.device, r.celsius FROM readings r JOIN limits l ON r.device = l.device
//!      WHERE l.max < 100",
//! )
//! .unwrap();
//! let plan = sql.plan(&[]).unwrap();
//! let shown = plan.to_string();
//! assert!(shown.contains("filter l.max < 100 (pushed down)"), "{shown}");
//! ```

use std::fmt;

use crate::ast::*;
use crate::scope::{err, has_analytic};
use crate::SqlError;

pub mod rewrite;
#[cfg(test)]
mod tests;
pub(crate) mod text;

/// A query's plan: each `WITH` step, then each statement, in order.
#[derive(Clone, Debug, PartialEq)]
pub struct LogicalPlan {
    /// The statements, steps first.
    pub statements: Vec<Statement>,
}

/// One statement of a plan: a step (`WITH name AS (...)`) or what an output receives.
#[derive(Clone, Debug, PartialEq)]
pub struct Statement {
    /// The step's or output's name.
    pub name: Ident,
    /// Whether it is an output (`INTO`), not a step.
    pub output: bool,
    /// What it computes.
    pub node: Node,
}

/// A logical operator and what it reads.
#[derive(Clone, Debug, PartialEq)]
pub enum Node {
    /// An input or an earlier step, read under a name (its alias in this select).
    Source {
        /// The input's or step's name, as written.
        name: Ident,
        /// The name the select refers to it by.
        alias: String,
        /// Whether it is an input (not a step).
        input: bool,
    },
    /// The events of `input` for which `predicate` holds.
    Filter {
        /// What it filters.
        input: Box<Node>,
        /// The condition, in the scope of `input`.
        predicate: Expr,
        /// Whether a rewrite moved it below a join ([`rewrite::push_down_filters`]).
        pushed: bool,
    },
    /// The temporal join of `left` (one source, or a join of several) with `right` (one
    /// source) on `on`.
    Join {
        /// The sources so far.
        left: Box<Node>,
        /// The source joined to them.
        right: Box<Node>,
        /// The condition (keys, `DATEDIFF`, other conditions), over both.
        on: Expr,
        /// Whether `right` is read as reference data ([`rewrite::reference_data`]).
        reference: bool,
        /// `LEFT [OUTER] JOIN`: a left event without a partner comes out too, with `NULL`
        /// for `right`.
        outer: bool,
    },
    /// A join whose results are the select's columns, each pair's computed as it is found,
    /// with no joined row in between ([`rewrite::fuse_joins`]).
    FusedJoin {
        /// The join (a [`Node::Join`] of two sources).
        join: Box<Node>,
        /// The select's `WHERE`, if any, over the pair.
        filter: Option<Expr>,
        /// The select's columns, every one a named expression.
        items: Vec<SelectItem>,
    },
    /// Each event of `input` made into one event per row `function` gives of it
    /// (`CROSS APPLY GetArrayElements(e) AS alias`), that row under `alias` beside the
    /// event's record.
    Apply {
        /// What it reads.
        input: Box<Node>,
        /// The call (`GetArrayElements(...)` or `GetRecordProperties(...)`).
        function: Expr,
        /// The name its rows are read by.
        alias: Ident,
        /// `OUTER APPLY`: an event whose function gives no row comes out once, with `NULL`
        /// under `alias`.
        outer: bool,
    },
    /// `MATCH_RECOGNIZE`: one row per match of its pattern over the events of `input`
    /// (see [`crate::ast::Recognize`]).
    Recognize {
        /// What it reads (one source).
        input: Box<Node>,
        /// The clause.
        spec: Box<crate::ast::Recognize>,
    },
    /// A plain select list over each event of `input`.
    Project {
        /// What it reads.
        input: Box<Node>,
        /// The columns.
        items: Vec<SelectItem>,
    },
    /// A select of one source whose `WHERE` or columns read analytic functions (`LAG`,
    /// `LAST`, `ISFIRST`): they are computed over every event of `input` in time order, then
    /// the `WHERE` holds or not, then the columns are made.
    Analytic {
        /// The source.
        input: Box<Node>,
        /// `WHERE`.
        filter: Option<Expr>,
        /// The columns.
        items: Vec<SelectItem>,
    },
    /// A grouped select: its window, keys, aggregates, `HAVING` and select list.
    Group {
        /// What it reads (the sources, after `WHERE`).
        input: Box<Node>,
        /// The select (its `GROUP BY`, items and `HAVING` are what this node computes).
        select: Box<Select>,
    },
    /// `UNION` of several selects.
    Union(Vec<Node>),
}

impl LogicalPlan {
    /// The plan of a parsed script as written (no rewrite applied yet). Refuses what the
    /// script says wrongly about its steps and outputs (a step named twice, an output
    /// written twice, `INTO` in the wrong place, `TIMESTAMP BY` on a step).
    pub fn of(script: &Script) -> Result<LogicalPlan, SqlError> {
        let mut steps: Vec<&str> = Vec::new();
        let mut statements = Vec::new();
        for (name, q) in &script.steps {
            if steps.contains(&name.name.as_str()) {
                return Err(err(
                    name.pos,
                    format!("`{}` is already an input or a step", name.name),
                ));
            }
            let node = query(q, &steps)?;
            steps.push(&name.name);
            statements.push(Statement {
                name: name.clone(),
                output: false,
                node,
            });
        }
        let mut outputs: Vec<String> = Vec::new();
        for q in &script.statements {
            let first = &q.selects[0];
            let into = match (&first.into, script.statements.len()) {
                (Some(i), _) => i.clone(),
                (None, 1) => Ident {
                    name: "output".to_owned(),
                    pos: first.pos,
                },
                (None, _) => {
                    return Err(err(
                        first.pos,
                        "with several statements, each needs INTO output",
                    ))
                }
            };
            for s in &q.selects[1..] {
                if let Some(i) = &s.into {
                    return Err(err(i.pos, "INTO goes in the first SELECT of a UNION"));
                }
            }
            if outputs.contains(&into.name) {
                return Err(err(
                    into.pos,
                    format!(
                        "two statements write INTO `{}`: UNION them instead",
                        into.name
                    ),
                ));
            }
            outputs.push(into.name.clone());
            statements.push(Statement {
                name: into,
                output: true,
                node: query(q, &steps)?,
            });
        }
        Ok(LogicalPlan { statements })
    }
}

/// A query (one select, or a `UNION`), reading the `steps` defined before it.
fn query(q: &Query, steps: &[&str]) -> Result<Node, SqlError> {
    let mut nodes = q
        .selects
        .iter()
        .map(|s| select(s, steps))
        .collect::<Result<Vec<Node>, SqlError>>()?;
    Ok(match nodes.len() {
        1 => nodes.remove(0),
        _ => Node::Union(nodes),
    })
}

/// One select as written: its sources joined in order, `WHERE`, then the group or the
/// select list.
fn select(s: &Select, steps: &[&str]) -> Result<Node, SqlError> {
    let source = |src: &Source| -> Result<Node, SqlError> {
        let input = !steps.contains(&src.name.name.as_str());
        if let (Some(t), false) = (&src.timestamp_by, input) {
            return Err(err(
                t.pos,
                format!(
                    "TIMESTAMP BY belongs to an input; `{}` is a step",
                    src.name.name
                ),
            ));
        }
        Ok(Node::Source {
            name: src.name.clone(),
            alias: src.reference().to_owned(),
            input,
        })
    };
    let mut node = source(&s.from)?;
    let analytic = s.filter.as_ref().is_some_and(has_analytic)
        || s.items.iter().any(|i| match i {
            SelectItem::Expr(e, _) => has_analytic(e),
            _ => false,
        });
    let grouped = !s.group_by.is_empty()
        || s.items.iter().any(|i| match i {
            SelectItem::Expr(e, _) => crate::scope::has_aggregate(e),
            _ => false,
        })
        || s.having.is_some();
    if let (Some(_), Some(j)) = (s.applies.first(), s.joins.first()) {
        return Err(err(
            j.pos,
            "APPLY and JOIN in one select: apply in a step (WITH step AS (SELECT ... CROSS APPLY ...)) and join the step",
        ));
    }
    if let (true, Some(a)) = (analytic, s.applies.first()) {
        return Err(err(
            a.pos,
            "analytic functions (LAG, LAST, ISFIRST) in a select with APPLY: apply in a step (WITH) and read the step",
        ));
    }
    if let Some(r) = &s.recognize {
        node = recognized(s, r, node, analytic)?;
    }
    for a in &s.applies {
        node = Node::Apply {
            input: Box::new(node),
            function: a.function.clone(),
            alias: a.alias.clone(),
            outer: a.outer,
        };
    }
    if analytic && !grouped && s.joins.is_empty() {
        return Ok(Node::Analytic {
            input: Box::new(node),
            filter: s.filter.clone(),
            items: s.items.clone(),
        });
    }
    for clause in &s.joins {
        node = Node::Join {
            left: Box::new(node),
            right: Box::new(source(&clause.source)?),
            on: clause.on.clone(),
            reference: false,
            outer: clause.outer,
        };
    }
    if let Some(w) = &s.filter {
        node = Node::Filter {
            input: Box::new(node),
            predicate: w.clone(),
            pushed: false,
        };
    }
    if grouped {
        return Ok(Node::Group {
            input: Box::new(node),
            select: Box::new(grouped_select(s)),
        });
    }
    let star_only = s.joins.is_empty() && matches!(s.items.as_slice(), [SelectItem::Star(_)]);
    if star_only {
        return Ok(node);
    }
    Ok(Node::Project {
        input: Box::new(node),
        items: s.items.clone(),
    })
}

/// A grouped select as Stream Analytics reads it: `GROUP BY System.Timestamp()` is the
/// snapshot window (the events of one moment), and a name in `HAVING` that is a column's
/// alias and not a key of `GROUP BY` is that column's expression (outside an aggregate's
/// arguments, which read the input's fields).
/// `MATCH_RECOGNIZE` over `node`, the select's source; refused beside a join, an apply or
/// analytic functions in the same select.
fn recognized(
    s: &Select,
    r: &crate::ast::Recognize,
    node: Node,
    analytic: bool,
) -> Result<Node, SqlError> {
    if let Some(j) = s.joins.first() {
        return Err(err(
            j.pos,
            "MATCH_RECOGNIZE and JOIN in one select: match in a step (WITH step AS (SELECT * FROM a MATCH_RECOGNIZE (...))) and join the step",
        ));
    }
    if let Some(a) = s.applies.first() {
        return Err(err(
            a.pos,
            "MATCH_RECOGNIZE and APPLY in one select: apply in a step (WITH) and match over the step",
        ));
    }
    if analytic {
        return Err(err(
            r.pos,
            "analytic functions (LAG, LAST, ISFIRST) over MATCH_RECOGNIZE's rows: match in a step (WITH) and read the step",
        ));
    }
    Ok(Node::Recognize {
        input: Box::new(node),
        spec: Box::new(r.clone()),
    })
}

fn grouped_select(s: &Select) -> Select {
    let mut s = s.clone();
    for g in &mut s.group_by {
        if let GroupItem::Key(e) = g {
            if matches!(e.kind, ExprKind::Timestamp) {
                *g = GroupItem::Window(WindowSql::Snapshot, e.pos);
            }
        }
    }
    let keys: Vec<&str> = s
        .group_by
        .iter()
        .filter_map(|g| match g {
            GroupItem::Key(Expr {
                kind: ExprKind::Column(path),
                ..
            }) => path.last().map(|p| p.name.as_str()),
            _ => None,
        })
        .collect();
    let aliases: Vec<(String, Expr)> = s
        .items
        .iter()
        .filter_map(|i| match i {
            SelectItem::Expr(e, Some(alias))
                if !keys.iter().any(|k| k.eq_ignore_ascii_case(&alias.name)) =>
            {
                Some((alias.name.clone(), e.clone()))
            }
            _ => None,
        })
        .collect();
    if let Some(h) = &mut s.having {
        substitute_aliases(h, &aliases);
    }
    s
}

/// Replaces each bare name in `e` that is one of `aliases` by its expression, outside the
/// arguments of aggregates.
fn substitute_aliases(e: &mut Expr, aliases: &[(String, Expr)]) {
    if let ExprKind::Column(path) = &e.kind {
        if let [name] = path.as_slice() {
            if let Some((_, x)) = aliases
                .iter()
                .find(|(a, _)| a.eq_ignore_ascii_case(&name.name))
            {
                *e = x.clone();
            }
        }
        return;
    }
    let each = |es: &mut [&mut Expr]| {
        for x in es {
            substitute_aliases(x, aliases);
        }
    };
    match &mut e.kind {
        ExprKind::Not(a) | ExprKind::Neg(a) | ExprKind::IsNull(a, _) | ExprKind::Cast(a, _) => {
            each(&mut [a])
        }
        ExprKind::Binary(_, a, b) | ExprKind::Like(a, b, _) => each(&mut [a, b]),
        ExprKind::Between(a, b, c, _) => each(&mut [a, b, c]),
        ExprKind::In(a, list, _) => {
            substitute_aliases(a, aliases);
            list.iter_mut().for_each(|x| substitute_aliases(x, aliases));
        }
        ExprKind::Case(subject, whens, otherwise) => {
            if let Some(x) = subject {
                substitute_aliases(x, aliases);
            }
            for (w, t) in whens {
                substitute_aliases(w, aliases);
                substitute_aliases(t, aliases);
            }
            if let Some(x) = otherwise {
                substitute_aliases(x, aliases);
            }
        }
        ExprKind::Call { name, args, .. } if !crate::aggs::AggFn::is_aggregate(&name.name) => {
            args.iter_mut().for_each(|x| substitute_aliases(x, aliases));
        }
        _ => {}
    }
}

impl fmt::Display for LogicalPlan {
    /// The plan as an indented tree: each statement, then its operators, each above what it
    /// reads.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // (On a stack with room: an expression is written as deep as the limits allow.)
        crate::limits::with_room(|| {
            for s in &self.statements {
                let what = if s.output { "output" } else { "step" };
                writeln!(f, "{what} `{}`", s.name.name)?;
                text::node(f, &s.node, 1)?;
            }
            Ok(())
        })
    }
}
