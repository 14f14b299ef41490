//! The sources a select reads, and how a column name resolves among them; expressions
//! visited and compared as written.

use crate::ast::*;
use crate::eval::E;
use crate::SqlError;

/// One source in the scope of a select: the name it is referred to by, and its fields.
pub(crate) struct Scope {
    pub(crate) sources: Vec<(String, Option<Vec<String>>)>,
    /// Whether rows are nested by source (after a join) or flat.
    pub(crate) nested: bool,
}

pub(crate) fn err(pos: Pos, message: impl Into<String>) -> SqlError {
    SqlError::compile(pos, message)
}

/// The one of `names` nearest to `name` in spelling (any case), if it is near: at most two
/// edits (a letter added, dropped or changed) for a name of five letters or more, one for a
/// shorter one.
pub(crate) fn nearest<'a>(name: &str, names: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    let lower = name.to_ascii_lowercase();
    let within = if lower.chars().count() >= 5 { 2 } else { 1 };
    names
        .into_iter()
        .map(|n| (edits(&lower, &n.to_ascii_lowercase()), n))
        .filter(|(d, _)| *d <= within)
        .min_by_key(|(d, _)| *d)
        .map(|(_, n)| n)
}

/// How many letters must be added, dropped or changed to make `a` into `b` (Levenshtein).
fn edits(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut diagonal = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let above = row[j + 1];
            row[j + 1] = (above + 1)
                .min(row[j] + 1)
                .min(diagonal + usize::from(ca != *cb));
            diagonal = above;
        }
    }
    row[b.len()]
}

impl Scope {
    fn field_list(fields: &[String]) -> String {
        if fields.is_empty() {
            "none".to_owned()
        } else {
            fields.join(", ")
        }
    }

    /// "`name` is not a field of `source` (did you mean ...? its fields: ...)".
    fn not_a_field(name: &str, source: &str, fields: &[String]) -> String {
        let near = nearest(name, fields.iter().map(String::as_str))
            .map_or(String::new(), |n| format!("did you mean `{n}`? "));
        format!(
            "`{name}` is not a field of `{source}` ({near}its fields: {})",
            Scope::field_list(fields)
        )
    }

    /// Whether `fields` (when known) has `name`, in any ASCII case (as the rows are read).
    fn has(fields: &Option<Vec<String>>, name: &str) -> Option<bool> {
        fields
            .as_ref()
            .map(|f| f.iter().any(|x| x.eq_ignore_ascii_case(name)))
    }

    /// A column reference, resolved to a path into the row.
    pub(crate) fn column(&self, path: &[Ident]) -> Result<E, SqlError> {
        let Some(first) = path.first() else {
            return Err(err(Pos::default(), "an empty name"));
        };
        let source = |name: &str| {
            self.sources
                .iter()
                .position(|(r, _)| r.eq_ignore_ascii_case(name))
        };
        // `source.field...`
        if path.len() > 1 {
            if let Some(i) = source(&first.name) {
                let (r, fields) = &self.sources[i];
                let field = &path[1];
                if Scope::has(fields, &field.name) == Some(false) {
                    return Err(err(
                        field.pos,
                        Scope::not_a_field(&field.name, r, fields.as_deref().unwrap_or_default()),
                    ));
                }
                let rest = path[1..].iter().map(|p| p.name.as_str());
                return Ok(E::Field(if self.nested {
                    crate::eval::path(std::iter::once(r.as_str()).chain(rest))
                } else {
                    crate::eval::path(rest)
                }));
            }
        }
        let names: Vec<String> = path.iter().map(|p| p.name.clone()).collect();
        if !self.nested {
            let (r, fields) = &self.sources[0];
            if Scope::has(fields, &first.name) == Some(false) {
                return Err(err(
                    first.pos,
                    Scope::not_a_field(&first.name, r, fields.as_deref().unwrap_or_default()),
                ));
            }
            return Ok(E::Field(crate::eval::path(&names)));
        }
        let candidates: Vec<&(String, Option<Vec<String>>)> = self
            .sources
            .iter()
            .filter(|(_, f)| Scope::has(f, &first.name) != Some(false))
            .collect();
        let known = candidates.iter().all(|(_, f)| f.is_some());
        let with =
            |r: &str| crate::eval::path(std::iter::once(r).chain(names.iter().map(String::as_str)));
        match (candidates.as_slice(), known) {
            ([], _) => Err(err(
                first.pos,
                format!(
                    "`{}` is not a field of any source ({})",
                    first.name,
                    self.sources
                        .iter()
                        .map(|(r, _)| r.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            )),
            ([(r, _)], true) => Ok(E::Field(with(r))),
            (many, true) => Err(err(
                first.pos,
                format!(
                    "`{}` is a field of {}: say which (`{}.{}`)",
                    first.name,
                    many.iter()
                        .map(|(r, _)| format!("`{r}`"))
                        .collect::<Vec<_>>()
                        .join(" and "),
                    many[0].0,
                    first.name
                ),
            )),
            (some, false) => Ok(E::FirstOf(some.iter().map(|(r, _)| with(r)).collect())),
        }
    }

    /// The sources an expression refers to (by index), for splitting join conditions.
    pub(crate) fn sources_of(&self, e: &Expr, into: &mut Vec<usize>) {
        walk(e, &mut |x| {
            if let ExprKind::Column(path) = &x.kind {
                let hit = if path.len() > 1 {
                    self.sources
                        .iter()
                        .position(|(r, _)| r.eq_ignore_ascii_case(&path[0].name))
                } else {
                    None
                };
                match hit {
                    Some(i) => into.push(i),
                    None => {
                        // Unqualified: every source that may have it.
                        for (i, (_, f)) in self.sources.iter().enumerate() {
                            if Scope::has(f, &path[0].name) != Some(false) {
                                into.push(i);
                            }
                        }
                    }
                }
            }
        });
    }
}

/// Whether an expression holds an aggregate call.
pub(crate) fn has_aggregate(e: &Expr) -> bool {
    let mut found = false;
    walk(e, &mut |x| {
        if let ExprKind::Call { name, .. } = &x.kind {
            found |= crate::aggs::AggFn::is_aggregate(&name.name);
        }
    });
    found
}

/// Visits `e` and every expression inside it.
pub(crate) fn walk(e: &Expr, f: &mut dyn FnMut(&Expr)) {
    f(e);
    match &e.kind {
        ExprKind::Not(a) | ExprKind::Neg(a) | ExprKind::IsNull(a, _) | ExprKind::Cast(a, _) => {
            walk(a, f)
        }
        ExprKind::Binary(_, a, b) | ExprKind::Like(a, b, _) | ExprKind::DateDiffOf(_, a, b) => {
            walk(a, f);
            walk(b, f);
        }
        ExprKind::Between(a, b, c, _) => {
            walk(a, f);
            walk(b, f);
            walk(c, f);
        }
        ExprKind::In(a, list, _) => {
            walk(a, f);
            for x in list {
                walk(x, f);
            }
        }
        ExprKind::Case(o, whens, other) => {
            if let Some(o) = o {
                walk(o, f);
            }
            for (a, b) in whens {
                walk(a, f);
                walk(b, f);
            }
            if let Some(o) = other {
                walk(o, f);
            }
        }
        ExprKind::Call {
            args, order, over, ..
        } => {
            for a in args {
                walk(a, f);
            }
            if let Some((o, _)) = order {
                walk(o, f);
            }
            if let Some(over) = over {
                for p in &over.partition {
                    walk(p, f);
                }
                if let Some(w) = &over.when {
                    walk(w, f);
                }
            }
        }
        _ => {}
    }
}

/// `e` with every position zeroed and names lower-cased: equal for the same expression
/// written twice (a `GROUP BY` key repeated in the select list).
pub(crate) fn canonical(e: &Expr) -> String {
    let mut c = e.clone();
    zero(&mut c);
    format!("{:?}", c.kind).to_ascii_lowercase()
}

fn zero(e: &mut Expr) {
    e.pos = Pos::default();
    let z = |x: &mut Expr| zero(x);
    match &mut e.kind {
        ExprKind::Column(path) => {
            for p in path {
                p.pos = Pos::default();
            }
        }
        ExprKind::Not(a) | ExprKind::Neg(a) | ExprKind::IsNull(a, _) | ExprKind::Cast(a, _) => z(a),
        ExprKind::Binary(_, a, b) | ExprKind::Like(a, b, _) | ExprKind::DateDiffOf(_, a, b) => {
            z(a);
            z(b);
        }
        ExprKind::Between(a, b, c, _) => {
            z(a);
            z(b);
            z(c);
        }
        ExprKind::In(a, list, _) => {
            z(a);
            list.iter_mut().for_each(z);
        }
        ExprKind::Case(o, whens, other) => {
            if let Some(o) = o {
                z(o);
            }
            for (a, b) in whens {
                z(a);
                z(b);
            }
            if let Some(o) = other {
                z(o);
            }
        }
        ExprKind::Call {
            name,
            args,
            order,
            over,
            ..
        } => {
            name.pos = Pos::default();
            args.iter_mut().for_each(z);
            if let Some((o, _)) = order {
                z(o);
            }
            if let Some(over) = over {
                over.partition.iter_mut().for_each(z);
                if let Some(w) = &mut over.when {
                    z(w);
                }
            }
        }
        ExprKind::DateDiff(_, a, b) => {
            a.pos = Pos::default();
            b.pos = Pos::default();
        }
        _ => {}
    }
}

/// Whether an expression holds an analytic function (`LAG`, `LAST`, `ISFIRST`).
pub(crate) fn has_analytic(e: &Expr) -> bool {
    let mut found = false;
    walk(e, &mut |x| {
        if let ExprKind::Call { name, .. } = &x.kind {
            found |= crate::analytic::is_analytic(&name.name);
        }
    });
    found
}
