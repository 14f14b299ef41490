//! Which fields of an input a query reads: what an input adapter needs to put in each row.

use crate::ast::{Expr, ExprKind, GroupItem, Script, SelectItem};
use crate::scope::walk;

/// The fields of input `input` that the query reads (in order of first mention), or `None`
/// when it reads whole records: `*` or `source.*` over it, the source itself as a value,
/// `TopOne` or `CollectTop` (whose results are members). A `TIMESTAMP BY` field is not
/// counted (the input reads it for the event's time, not the query); an `OVER` key is.
/// `steps` are the script's step names (a source of that name is a step, not the input).
pub(crate) fn fields_read(script: &Script, input: &str, steps: &[&str]) -> Option<Vec<String>> {
    if steps.contains(&input) {
        return None;
    }
    let mut read: Vec<String> = Vec::new();
    for s in script.selects() {
        let sources: Vec<_> = s.sources().collect();
        let (mine, others): (Vec<_>, Vec<_>) =
            sources.iter().partition(|src| src.name.name == input);
        if mine.is_empty() {
            continue;
        }
        let is = |refs: &[&&crate::ast::Source], name: &str| {
            refs.iter()
                .any(|src| src.reference().eq_ignore_ascii_case(name))
        };
        let mut exprs: Vec<&Expr> = Vec::new();
        let mut star_records: Vec<String> = Vec::new();
        for item in &s.items {
            match item {
                SelectItem::Star(_) => return None,
                SelectItem::QualifiedStar(path) => match &path[..] {
                    [source] if is(&mine, &source.name) => return None,
                    // A record's fields: the record (`e.Location.*` or `Location.*`).
                    [first, field, ..] if is(&mine, &first.name) => {
                        star_records.push(field.name.clone())
                    }
                    [first, ..] if !is(&others, &first.name) => {
                        star_records.push(first.name.clone())
                    }
                    _ => {}
                },
                SelectItem::Expr(e, _) => exprs.push(e),
            }
        }
        exprs.extend(s.filter.iter().chain(&s.having));
        exprs.extend(s.joins.iter().map(|j| &j.on));
        exprs.extend(s.applies.iter().map(|a| &a.function));
        // The rows an APPLY gives are read by its alias: not the input's fields.
        let applied = |name: &str| {
            s.applies
                .iter()
                .any(|a| a.alias.name.eq_ignore_ascii_case(name))
        };
        exprs.extend(s.group_by.iter().filter_map(|g| match g {
            GroupItem::Key(e) => Some(e),
            GroupItem::Window(..) => None,
        }));
        exprs.extend(mine.iter().filter_map(|src| src.over.as_ref()));
        let mut whole = false;
        let mut add = |name: &str| {
            if !read.iter().any(|r| r == name) {
                read.push(name.to_owned());
            }
        };
        for r in &star_records {
            add(r);
        }
        for e in exprs {
            walk(e, &mut |x| match &x.kind {
                ExprKind::Column(path) => {
                    let first = &path[0].name;
                    if is(&mine, first) {
                        match path.get(1) {
                            Some(field) => add(&field.name),
                            None => whole = true,
                        }
                        // A field of the same name as the source, to be safe.
                        add(first);
                    } else if !is(&others, first) && !applied(first) {
                        add(first);
                    }
                }
                // Two names outside a join's ON: two fields (in ON, two sources).
                ExprKind::DateDiff(_, a, b) => {
                    for n in [a, b] {
                        if !is(&mine, &n.name) && !is(&others, &n.name) {
                            add(&n.name);
                        }
                    }
                }
                ExprKind::Call { name, .. }
                    if ["topone", "collecttop"]
                        .contains(&name.name.to_ascii_lowercase().as_str()) =>
                {
                    whole = true;
                }
                _ => {}
            });
        }
        if whole {
            return None;
        }
    }
    Some(read)
}
