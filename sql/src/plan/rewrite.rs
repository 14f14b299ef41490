//! The rewrites of a logical plan, each a function from a node to the node it becomes,
//! applied in this order by [`LogicalPlan::rewritten`]:
//!
//! 1. [`push_down_filters`]: a `WHERE` condition over one side of a join filters that side
//!    before the join (fewer pairs; over an input, the filter runs as the input reads).
//! 2. [`reference_data`]: a join of two inputs without `DATEDIFF` reads its right side as
//!    reference data (read first, its CTIs imported from the left side).
//! 3. [`fuse_joins`]: a plain select over a join of two sources computes its columns (and
//!    its `WHERE`) on each pair as the join finds it, with no joined row in between.

use std::collections::HashMap;

use super::{LogicalPlan, Node};
use crate::ast::*;
use crate::compile::{item_name, on_parts};
use crate::lower::compile;
use crate::scope::{walk, Scope};

/// The fields of an input, when they are known (`None`: any field may be there).
pub type Fields<'a> = &'a dyn Fn(&str) -> Option<Vec<String>>;

impl LogicalPlan {
    /// The plan after every rewrite, given the inputs' fields (`fields(name)`; a step's are
    /// those of its select list).
    pub fn rewritten(mut self, fields: Fields<'_>) -> LogicalPlan {
        let mut steps: HashMap<String, Option<Vec<String>>> = HashMap::new();
        for s in &mut self.statements {
            let lookup = |name: &str| match steps.get(name) {
                Some(f) => f.clone(),
                None => fields(name),
            };
            let node = std::mem::replace(&mut s.node, Node::Union(Vec::new()));
            let node = reference_data(push_down_filters(node));
            s.node = fuse_joins(node, &lookup);
            if !s.output {
                let known = fields_of(&s.node, &lookup);
                steps.insert(s.name.name.clone(), known);
            }
        }
        self
    }
}

/// Applies `f` to each node `node` reads (not to `node` itself).
fn children(node: Node, f: &mut dyn FnMut(Node) -> Node) -> Node {
    let mut each = |n: Box<Node>| Box::new(f(*n));
    match node {
        Node::Source { .. } => node,
        Node::Filter {
            input,
            predicate,
            pushed,
        } => Node::Filter {
            input: each(input),
            predicate,
            pushed,
        },
        Node::Join {
            left,
            right,
            on,
            reference,
            outer,
        } => Node::Join {
            left: each(left),
            right: each(right),
            on,
            reference,
            outer,
        },
        Node::FusedJoin {
            join,
            filter,
            items,
        } => Node::FusedJoin {
            join: each(join),
            filter,
            items,
        },
        Node::Apply {
            input,
            function,
            alias,
            outer,
        } => Node::Apply {
            input: each(input),
            function,
            alias,
            outer,
        },
        Node::Recognize { input, spec } => Node::Recognize {
            input: each(input),
            spec,
        },
        Node::Project { input, items } => Node::Project {
            input: each(input),
            items,
        },
        Node::Analytic {
            input,
            filter,
            items,
        } => Node::Analytic {
            input: each(input),
            filter,
            items,
        },
        Node::Group { input, select } => Node::Group {
            input: each(input),
            select,
        },
        Node::Union(nodes) => Node::Union(nodes.into_iter().map(f).collect()),
    }
}

/// The names a source is referred to by under `node` (a source, a filter of one, a join).
fn aliases(node: &Node) -> Vec<&str> {
    match node {
        Node::Source { alias, .. } => vec![alias.as_str()],
        Node::Filter { input, .. } => aliases(input),
        Node::Join { left, right, .. } => {
            let mut all = aliases(left);
            all.extend(aliases(right));
            all
        }
        _ => Vec::new(),
    }
}

/// The conjuncts of `e` (`a AND b AND c`: `a`, `b`, `c`).
fn conjuncts(e: Expr, into: &mut Vec<Expr>) {
    match e.kind {
        ExprKind::Binary(BinOp::And, a, b) => {
            conjuncts(*a, into);
            conjuncts(*b, into);
        }
        _ => into.push(e),
    }
}

/// `a AND b AND ...` of `parts` (at least one).
fn and(mut parts: Vec<Expr>) -> Expr {
    let first = parts.remove(0);
    parts.into_iter().fold(first, |a, b| Expr {
        pos: a.pos,
        kind: ExprKind::Binary(BinOp::And, Box::new(a), Box::new(b)),
    })
}

/// The sources (by the names in `names`) a condition reads, if it reads only fields named
/// with their source (`r.x`) and not the time: `None` when it cannot be moved.
fn sources_read<'a>(e: &Expr, names: &[&'a str]) -> Option<Vec<&'a str>> {
    let mut read = Vec::new();
    let mut movable = true;
    walk(e, &mut |x| match &x.kind {
        ExprKind::Column(path) => {
            let source = names
                .iter()
                .find(|n| path.len() >= 2 && n.eq_ignore_ascii_case(&path[0].name));
            match source {
                Some(n) => read.push(*n),
                None => movable = false,
            }
        }
        ExprKind::Timestamp | ExprKind::DateDiff(..) => movable = false,
        ExprKind::Call { name, .. } if crate::aggs::AggFn::is_aggregate(&name.name) => {
            movable = false
        }
        _ => {}
    });
    (movable && !read.is_empty()).then_some(read)
}

/// Moves each condition of a filter over a join that reads only one side of it (fields
/// named with their source, `r.x`; not the time) below the join, onto that side; the rest
/// stays above. The results are the same: a pair's condition on one side holds exactly when
/// it holds on that side's event. A condition whose fields are not named with their source
/// stays where it is written, and so does one on the right side of a `LEFT OUTER JOIN` (it
/// reads the `NULL`s of a left event without a partner: `WHERE r.x IS NULL`).
pub fn push_down_filters(node: Node) -> Node {
    let node = children(node, &mut push_down_filters);
    let Node::Filter {
        input,
        predicate,
        pushed,
    } = node
    else {
        return node;
    };
    let Node::Join {
        left,
        right,
        on,
        reference,
        outer,
    } = *input
    else {
        return Node::Filter {
            input,
            predicate,
            pushed,
        };
    };
    let (lefts, rights) = (aliases(&left), aliases(&right));
    let mut all = lefts.clone();
    all.extend(&rights);
    let mut parts = Vec::new();
    conjuncts(predicate, &mut parts);
    let (mut to_left, mut to_right, mut kept) = (Vec::new(), Vec::new(), Vec::new());
    for c in parts {
        match sources_read(&c, &all) {
            Some(read) if !outer && read.iter().all(|s| rights.contains(s)) => to_right.push(c),
            Some(read) if read.iter().all(|s| lefts.contains(s)) => to_left.push(c),
            _ => kept.push(c),
        }
    }
    let onto = |side: Box<Node>, conditions: Vec<Expr>| match conditions.is_empty() {
        true => side,
        // Pushed again: a side that is itself a join takes what reads one of its own sides.
        false => Box::new(push_down_filters(Node::Filter {
            input: side,
            predicate: and(conditions),
            pushed: true,
        })),
    };
    let join = Node::Join {
        left: onto(left, to_left),
        right: onto(right, to_right),
        on,
        reference,
        outer,
    };
    match kept.is_empty() {
        true => join,
        false => Node::Filter {
            input: Box::new(join),
            predicate: and(kept),
            pushed,
        },
    }
}

/// The source under `node` (itself, or what a filter reads).
fn source(node: &Node) -> Option<(&Ident, bool)> {
    match node {
        Node::Source { name, input, .. } => Some((name, *input)),
        Node::Filter { input, .. } => source(input),
        Node::Join { left, .. } => source(left),
        _ => None,
    }
}

/// Whether `e` holds a `DATEDIFF`.
pub(crate) fn has_datediff(e: &Expr) -> bool {
    let mut found = false;
    walk(e, &mut |x| {
        found |= matches!(x.kind, ExprKind::DateDiff(..))
    });
    found
}

/// Marks a join without `DATEDIFF` of two inputs (the select's first source and the joined
/// one, neither a step) as a join with reference data: whoever creates the inputs reads the
/// right one first and imports its CTIs from the left one ([`crate::SqlQuery::inputs`]).
pub fn reference_data(node: Node) -> Node {
    match children(node, &mut reference_data) {
        Node::Join {
            left,
            right,
            on,
            reference,
            outer,
        } => {
            let inputs = [source(&left), source(&right)]
                .iter()
                .all(|s| s.is_some_and(|(_, input)| input));
            Node::Join {
                reference: reference || (inputs && !has_datediff(&on)),
                left,
                right,
                on,
                outer,
            }
        }
        other => other,
    }
}

/// The scope of the rows `node` gives (a source or a filter of one: its fields, flat; a
/// join: every source's, nested), `None` for a node that is neither.
fn scope_of(node: &Node, fields: Fields<'_>) -> Option<Scope> {
    match node {
        Node::Source { name, alias, .. } => Some(Scope {
            sources: vec![(alias.clone(), fields(&name.name))],
            nested: false,
        }),
        Node::Filter { input, .. } => scope_of(input, fields),
        Node::Join { left, right, .. } => {
            let mut sources = scope_of(left, fields)?.sources;
            sources.extend(scope_of(right, fields)?.sources);
            Some(Scope {
                sources,
                nested: true,
            })
        }
        _ => None,
    }
}

/// Whether a plain select's columns and `WHERE` over a join of two sources can be computed
/// on each pair (each reads fields of the sources: not a whole record, nor the time), and so
/// can the join's conditions that are not keys.
fn fuses(join: &Node, filter: Option<&Expr>, items: &[SelectItem], fields: Fields<'_>) -> bool {
    let Node::Join {
        left, on, outer, ..
    } = join
    else {
        return false;
    };
    // A left event without a partner has no pair to compute the columns on.
    if *outer || matches!(**left, Node::Join { .. }) {
        return false;
    }
    let Some(scope) = scope_of(join, fields) else {
        return false;
    };
    let Ok(parts) = on_parts(on, &scope, 1) else {
        return false;
    };
    let pairs =
        |e: &Expr, time_ok: bool| compile(e, &scope, None, time_ok).is_ok_and(|c| c.reads_pairs());
    let columns = items.iter().all(|i| match i {
        SelectItem::Expr(e, _) => pairs(e, true),
        _ => false,
    });
    columns && filter.is_none_or(|w| pairs(w, false)) && parts.rest.iter().all(|c| pairs(c, false))
}

/// Makes a plain select of named columns over a join of two sources (with or without a
/// `WHERE` above the join) a [`Node::FusedJoin`] when every column, the `WHERE` and the
/// join's other conditions read fields of the two sources (see [`Node::FusedJoin`]).
pub fn fuse_joins(node: Node, fields: Fields<'_>) -> Node {
    let node = children(node, &mut |n| fuse_joins(n, fields));
    let Node::Project { input, items } = node else {
        return node;
    };
    let (join, filter, pushed) = match *input {
        Node::Filter {
            input: join,
            predicate,
            pushed,
        } if matches!(*join, Node::Join { .. }) => (join, Some(predicate), pushed),
        join @ Node::Join { .. } => (Box::new(join), None, false),
        other => {
            return Node::Project {
                input: Box::new(other),
                items,
            }
        }
    };
    if fuses(&join, filter.as_ref(), &items, fields) {
        return Node::FusedJoin {
            join,
            filter,
            items,
        };
    }
    let input = match filter {
        Some(predicate) => Box::new(Node::Filter {
            input: join,
            predicate,
            pushed,
        }),
        None => join,
    };
    Node::Project { input, items }
}

/// The fields of the rows `node` gives, when they are known.
pub(crate) fn fields_of(node: &Node, fields: Fields<'_>) -> Option<Vec<String>> {
    let named = |items: &[SelectItem]| {
        items
            .iter()
            .enumerate()
            .map(|(n, i)| match i {
                SelectItem::Expr(e, alias) => Some(item_name(e, alias, n + 1)),
                _ => None,
            })
            .collect()
    };
    match node {
        Node::Source { name, .. } => fields(&name.name),
        Node::Filter { input, .. } => fields_of(input, fields),
        Node::Join { .. } | Node::Apply { .. } => None,
        Node::Recognize { spec, .. } => Some(crate::recognize::columns(spec)),
        Node::FusedJoin { items, .. }
        | Node::Project { items, .. }
        | Node::Analytic { items, .. } => named(items),
        Node::Group { select, .. } => named(&select.items),
        Node::Union(nodes) => nodes.first().and_then(|n| fields_of(n, fields)),
    }
}
