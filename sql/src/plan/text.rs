//! A plan as text: each node on a line of its own, indented under what reads it, and
//! expressions written back as the language writes them.

use std::fmt::{self, Write};

use super::Node;
use crate::ast::*;

/// Writes `node` and what it reads at `depth` (two spaces a level).
pub(super) fn node(f: &mut fmt::Formatter<'_>, node: &Node, depth: usize) -> fmt::Result {
    let pad = "  ".repeat(depth);
    match node {
        Node::Source { name, alias, input } => {
            let what = if *input { "input" } else { "step" };
            write!(f, "{pad}{what} `{}`", name.name)?;
            if *alias != name.name {
                write!(f, " AS {alias}")?;
            }
            writeln!(f)
        }
        Node::Filter {
            input,
            predicate,
            pushed,
        } => {
            let pushed = if *pushed { " (pushed down)" } else { "" };
            writeln!(f, "{pad}filter {}{pushed}", expr(predicate))?;
            self::node(f, input, depth + 1)
        }
        Node::Join {
            left,
            right,
            on,
            reference,
            outer,
        } => {
            writeln!(f, "{pad}{} on {}", join_kind(*outer, *reference), expr(on))?;
            self::node(f, left, depth + 1)?;
            self::node(f, right, depth + 1)
        }
        Node::FusedJoin {
            join,
            filter,
            items,
        } => {
            write!(f, "{pad}fused into the join: columns {}", list(items))?;
            if let Some(w) = filter {
                write!(f, " where {}", expr(w))?;
            }
            writeln!(f)?;
            self::node(f, join, depth + 1)
        }
        Node::Project { input, items } => {
            writeln!(f, "{pad}select {}", list(items))?;
            self::node(f, input, depth + 1)
        }
        Node::Recognize { input, spec } => {
            writeln!(f, "{pad}{}", crate::recognize::describe(spec))?;
            self::node(f, input, depth + 1)
        }
        Node::Apply {
            input,
            function,
            alias,
            outer,
        } => {
            let how = if *outer { "outer" } else { "cross" };
            writeln!(f, "{pad}{how} apply {} AS {}", expr(function), alias.name)?;
            self::node(f, input, depth + 1)
        }
        Node::Analytic {
            input,
            filter,
            items,
        } => {
            write!(
                f,
                "{pad}over each event in time order: select {}",
                list(items)
            )?;
            if let Some(w) = filter {
                write!(f, " where {}", expr(w))?;
            }
            writeln!(f)?;
            self::node(f, input, depth + 1)
        }
        Node::Group { input, select } => {
            writeln!(f, "{pad}{}", group(select))?;
            self::node(f, input, depth + 1)
        }
        Node::Union(nodes) => {
            writeln!(f, "{pad}union")?;
            nodes.iter().try_for_each(|n| self::node(f, n, depth + 1))
        }
    }
}

/// A grouped select in one line: its keys and window, its columns, its `HAVING`.
fn group(select: &Select) -> String {
    let keys: Vec<String> = select
        .group_by
        .iter()
        .map(|g| match g {
            GroupItem::Key(e) => expr(e),
            GroupItem::Window(w, _) => window(w),
        })
        .collect();
    let mut line = format!(
        "group by {}: select {}",
        keys.join(", "),
        list(&select.items)
    );
    if let Some(h) = &select.having {
        line.push_str(&format!(" having {}", expr(h)));
    }
    line
}

/// What a join is, in words.
fn join_kind(outer: bool, reference: bool) -> &'static str {
    match (outer, reference) {
        (false, true) => "join with reference data",
        (false, false) => "join",
        (true, true) => "left outer join with reference data",
        (true, false) => "left outer join",
    }
}

/// A select list as written.
fn list(items: &[SelectItem]) -> String {
    let items: Vec<String> = items
        .iter()
        .map(|i| match i {
            SelectItem::Star(_) => "*".to_owned(),
            SelectItem::QualifiedStar(path) => {
                let names: Vec<&str> = path.iter().map(|p| p.name.as_str()).collect();
                format!("{}.*", names.join("."))
            }
            SelectItem::Expr(e, None) => expr(e),
            SelectItem::Expr(e, Some(alias)) => format!("{} AS {}", expr(e), alias.name),
        })
        .collect();
    items.join(", ")
}

fn window(w: &WindowSql) -> String {
    let late = |l: &punctual_core::TimeSpan| {
        if l.ticks() > 0 {
            format!(", AllowedLateness({l})")
        } else {
            String::new()
        }
    };
    match w {
        WindowSql::Tumbling {
            size,
            offset,
            lateness,
        } if offset.ticks() == 0 => format!("TumblingWindow({size}{})", late(lateness)),
        WindowSql::Tumbling {
            size,
            offset,
            lateness,
        } => format!("TumblingWindow({size}, {offset}{})", late(lateness)),
        WindowSql::Hopping {
            size,
            hop,
            offset,
            lateness,
        } if offset.ticks() == 0 => format!("HoppingWindow({size}, {hop}{})", late(lateness)),
        WindowSql::Hopping {
            size,
            hop,
            offset,
            lateness,
        } => format!("HoppingWindow({size}, {hop}, {offset}{})", late(lateness)),
        WindowSql::Sliding { size } => format!("SlidingWindow({size})"),
        WindowSql::Snapshot => "SnapshotWindow()".to_owned(),
        WindowSql::Session {
            timeout,
            max,
            partition,
            lateness,
        } if partition.is_empty() => format!("SessionWindow({timeout}, {max}{})", late(lateness)),
        WindowSql::Session {
            timeout,
            max,
            partition,
            lateness,
        } => format!(
            "SessionWindow({timeout}, {max}{}) OVER (PARTITION BY {})",
            late(lateness),
            partition.iter().map(expr).collect::<Vec<_>>().join(", ")
        ),
    }
}

fn op(op: BinOp) -> &'static str {
    match op {
        BinOp::Or => "OR",
        BinOp::And => "AND",
        BinOp::Eq => "=",
        BinOp::Ne => "<>",
        BinOp::Lt => "<",
        BinOp::Le => "<=",
        BinOp::Gt => ">",
        BinOp::Ge => ">=",
        BinOp::Add => "+",
        BinOp::Sub => "-",
        BinOp::Mul => "*",
        BinOp::Div => "/",
        BinOp::Rem => "%",
    }
}

/// An expression as the language writes it; an operand that is itself an operation is
/// parenthesised (so the text reads the same whatever the precedence).
pub(crate) fn expr(e: &Expr) -> String {
    let mut out = String::new();
    write_expr(&mut out, e, false);
    out
}

fn not(negated: bool) -> &'static str {
    if negated {
        "NOT "
    } else {
        ""
    }
}

fn write_expr(out: &mut String, e: &Expr, nested: bool) {
    let compound = matches!(
        e.kind,
        ExprKind::Binary(..)
            | ExprKind::Between(..)
            | ExprKind::In(..)
            | ExprKind::Like(..)
            | ExprKind::IsNull(..)
            | ExprKind::Not(..)
    );
    if nested && compound {
        out.push('(');
    }
    let sub = |out: &mut String, e: &Expr| write_expr(out, e, true);
    // (Writing to a String cannot fail.)
    let _ = match &e.kind {
        ExprKind::Null => write!(out, "NULL"),
        ExprKind::Bool(b) => write!(out, "{}", if *b { "TRUE" } else { "FALSE" }),
        ExprKind::Int(n) => write!(out, "{n}"),
        ExprKind::Float(x) => write!(out, "{x:?}"),
        ExprKind::Str(s) => write!(out, "'{}'", s.replace('\'', "''")),
        ExprKind::Column(path) => {
            let names: Vec<&str> = path.iter().map(|p| p.name.as_str()).collect();
            write!(out, "{}", names.join("."))
        }
        ExprKind::Not(a) => {
            out.push_str("NOT ");
            sub(out, a);
            Ok(())
        }
        ExprKind::Neg(a) => {
            out.push('-');
            sub(out, a);
            Ok(())
        }
        ExprKind::Binary(o, a, b) => {
            sub(out, a);
            let _ = write!(out, " {} ", op(*o));
            sub(out, b);
            Ok(())
        }
        ExprKind::IsNull(a, negated) => {
            sub(out, a);
            write!(out, " IS {}NULL", not(*negated))
        }
        ExprKind::Between(a, lo, hi, negated) => {
            sub(out, a);
            let _ = write!(out, " {}BETWEEN ", not(*negated));
            sub(out, lo);
            out.push_str(" AND ");
            sub(out, hi);
            Ok(())
        }
        ExprKind::In(a, list, negated) => {
            sub(out, a);
            let _ = write!(out, " {}IN (", not(*negated));
            for (i, x) in list.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                sub(out, x);
            }
            write!(out, ")")
        }
        ExprKind::Like(a, b, negated) => {
            sub(out, a);
            let _ = write!(out, " {}LIKE ", not(*negated));
            sub(out, b);
            Ok(())
        }
        ExprKind::Case(subject, whens, otherwise) => {
            case(out, subject.as_deref(), whens, otherwise.as_deref());
            Ok(())
        }
        ExprKind::Cast(a, t) => {
            out.push_str("CAST(");
            write_expr(out, a, false);
            write!(out, " AS {})", format!("{t:?}").to_ascii_lowercase())
        }
        ExprKind::Call { .. } => {
            write_call(out, e);
            Ok(())
        }
        ExprKind::DateDiff(..) | ExprKind::DateDiffOf(..) => {
            write_datediff(out, e);
            Ok(())
        }
        ExprKind::Timestamp => write!(out, "System.Timestamp()"),
    };
    if nested && compound {
        out.push(')');
    }
}

/// `CASE [subject] WHEN .. THEN .. [ELSE ..] END`.
fn case(
    out: &mut String,
    subject: Option<&Expr>,
    whens: &[(Expr, Expr)],
    otherwise: Option<&Expr>,
) {
    out.push_str("CASE");
    if let Some(s) = subject {
        out.push(' ');
        write_expr(out, s, true);
    }
    for (w, t) in whens {
        out.push_str(" WHEN ");
        write_expr(out, w, true);
        out.push_str(" THEN ");
        write_expr(out, t, true);
    }
    if let Some(o) = otherwise {
        out.push_str(" ELSE ");
        write_expr(out, o, true);
    }
    out.push_str(" END");
}

/// A function call, with `*` or `DISTINCT` (`before` its arguments) and `OVER (ORDER BY ..)`
/// as written.
fn call(
    out: &mut String,
    name: &Ident,
    (before, args): (&str, &[Expr]),
    order: Option<&(Box<Expr>, bool)>,
) {
    out.push_str(&name.name);
    out.push('(');
    out.push_str(before);
    for (i, a) in args.iter().enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        write_expr(out, a, false);
    }
    out.push(')');
    if let Some((by, desc)) = order {
        out.push_str(" OVER (ORDER BY ");
        write_expr(out, by, false);
        out.push_str(if *desc { " DESC)" } else { ")" });
    }
}

/// ` OVER ([PARTITION BY ..] [LIMIT DURATION(..)] [WHEN ..])`.
fn write_over(out: &mut String, over: &Over) {
    out.push_str(" OVER (");
    let mut parts = Vec::new();
    if !over.partition.is_empty() {
        let mut p = String::from("PARTITION BY ");
        for (i, k) in over.partition.iter().enumerate() {
            if i > 0 {
                p.push_str(", ");
            }
            write_expr(&mut p, k, false);
        }
        parts.push(p);
    }
    if let Some(d) = over.duration {
        let (unit, n) = unit_and_length(d);
        parts.push(format!("LIMIT DURATION({unit}, {n})"));
    }
    if let Some(w) = &over.when {
        let mut p = String::from("WHEN ");
        write_expr(&mut p, w, false);
        parts.push(p);
    }
    out.push_str(&parts.join(" "));
    out.push(')');
}

/// A call: its name, arguments, `OVER (ORDER BY ..)` or analytic `OVER (..)`.
fn write_call(out: &mut String, e: &Expr) {
    let ExprKind::Call {
        name,
        args,
        star,
        distinct,
        order,
        over,
    } = &e.kind
    else {
        return;
    };
    let before = match (*star, *distinct) {
        (true, _) => "*",
        (_, true) => "DISTINCT ",
        _ => "",
    };
    call(out, name, (before, args), order.as_ref());
    if let Some(over) = over {
        write_over(out, over);
    }
}

/// A span as the language writes one: the largest unit it is a whole number of, and how many.
fn unit_and_length(span: punctual_core::TimeSpan) -> (&'static str, i64) {
    let ticks = span.ticks();
    let (unit, per) = [
        ("day", 864_000_000_000),
        ("hour", 36_000_000_000),
        ("minute", 600_000_000),
        ("second", 10_000_000),
        ("millisecond", 10_000),
        ("microsecond", 10),
    ]
    .into_iter()
    .find(|(_, per)| ticks % per == 0)
    .unwrap_or(("tick", 1));
    (unit, ticks / per)
}

/// `DATEDIFF(unit, a, b)` of two names or two values.
fn write_datediff(out: &mut String, e: &Expr) {
    out.push_str("DATEDIFF(");
    match &e.kind {
        ExprKind::DateDiff(unit, a, b) => {
            let _ = write!(out, "{}, {}, {}", unit_and_length(*unit).0, a.name, b.name);
        }
        ExprKind::DateDiffOf(unit, a, b) => {
            out.push_str(unit_and_length(*unit).0);
            out.push_str(", ");
            write_expr(out, a, false);
            out.push_str(", ");
            write_expr(out, b, false);
        }
        _ => {}
    }
    out.push(')');
}
