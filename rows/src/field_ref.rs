//! A field's name that remembers where it was found: [`FieldRef`].

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use super::{FieldName, Row, Value};

/// Where a field was not found (the position remembered for a schema without it).
const ABSENT: u32 = u32::MAX;

/// What a new `FieldRef` remembers: the schema number `u32::MAX`, which no schema has (the
/// interned ones are numbered from 1, far below; the others are 0 and never remembered), so
/// that a read compares one number.
const NOTHING: u64 = (u32::MAX as u64) << 32;

/// A field's name together with where it was last found (the field of exactly that name,
/// or, without one, the first whose name equals it ignoring ASCII case: the query
/// language's names, which match as Stream Analytics' do): reading it from rows of one schema
/// (the usual case: an input's rows share theirs) compares one number instead of looking
/// through the schema's names.
///
/// What it remembers is the last interned schema it was read from and the field's position
/// there (or that the schema has no such field); a row of another schema is looked up by
/// name, as [`Row::field_any_case`] does, and that schema is remembered instead. The answer
/// is always [`Row::field_any_case`]'s: the memory only saves the search. It is one atomic word, so a
/// `FieldRef` can be shared between threads (each read is a relaxed load; a new schema a
/// relaxed store).
///
/// ```
/// use punctual_rows::FieldRef;
/// use punctual_rows::{Schema, Value};
/// let celsius = FieldRef::new("celsius");
/// let a = Schema::new(["device", "celsius"]).unwrap();
/// let b = Schema::new(["celsius"]).unwrap();
/// let first = a.row([Value::from("d1"), Value::from(21.5)]);
/// let second = b.row([Value::from(19.0)]);
/// assert_eq!(first.field_ref(&celsius), Some(&Value::from(21.5)));
/// assert_eq!(second.field_ref(&celsius), Some(&Value::from(19.0)));
/// assert_eq!(first.field_ref(&FieldRef::new("missing")), None);
/// ```
pub struct FieldRef {
    name: Arc<str>,
    /// The schema's number (high half; `u32::MAX`: none yet) and the position (low half).
    seen: AtomicU64,
}

impl FieldRef {
    /// The field named `name` (a shared name: see [`FieldName`]), with nothing remembered yet.
    pub fn new(name: impl FieldName) -> FieldRef {
        FieldRef {
            name: name.into_name(),
            seen: AtomicU64::new(NOTHING),
        }
    }

    /// The field's name.
    pub fn name(&self) -> &Arc<str> {
        &self.name
    }
}

impl Clone for FieldRef {
    fn clone(&self) -> FieldRef {
        FieldRef {
            name: Arc::clone(&self.name),
            seen: AtomicU64::new(self.seen.load(Ordering::Relaxed)),
        }
    }
}

impl fmt::Debug for FieldRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("FieldRef").field(&self.name).finish()
    }
}

impl Row {
    /// The value of `field`, if the row has it: [`Row::field_any_case`] of its name, found without a
    /// search when the row's schema is the one `field` was last read from.
    #[inline]
    pub fn field_ref(&self, field: &FieldRef) -> Option<&Value> {
        let id = self.schema.id();
        let seen = field.seen.load(Ordering::Relaxed);
        if (seen >> 32) as u32 == id {
            // A position found in this schema is below its length (no need to read it: the
            // values past it are never there or `NULL`); `ABSENT` is past any row's values.
            let at = seen as u32 as usize;
            return match &*self.values {
                super::Values::Inline(v) => v.get(at),
                super::Values::Heap(v) => v.get(at),
            };
        }
        self.field_ref_slow(field, id)
    }

    /// [`Row::field_ref`] for a schema other than the one remembered: found by name, and
    /// remembered if the schema is interned.
    #[inline(never)]
    fn field_ref_slow(&self, field: &FieldRef, id: u32) -> Option<&Value> {
        let at = self
            .schema
            .position(&field.name)
            .or_else(|| self.schema.position_any_case(&field.name));
        if id != 0 {
            let position = at.map_or(ABSENT, |i| u32::try_from(i).unwrap_or(ABSENT));
            field
                .seen
                .store(u64::from(id) << 32 | u64::from(position), Ordering::Relaxed);
        }
        at.map(|i| &self.values()[i])
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Schema;

    /// Rows of several schemas, read in turns through one `FieldRef`, give what a lookup by
    /// name gives: the field where each schema has it, nothing where it has none.
    #[test]
    fn reads_what_a_lookup_by_name_reads_whatever_the_order_of_schemas() {
        let schemas = [
            Schema::new(["a", "x"]).unwrap(),
            Schema::new(["x", "a"]).unwrap(),
            Schema::new(["b"]).unwrap(),
            Schema::new(["c", "d", "e", "x"]).unwrap(),
            Schema::empty(),
            // Not interned (number 0): never remembered, always found by name.
            Schema::counted(&[crate::field_name("c"), crate::field_name("x")]),
        ];
        let rows: Vec<Row> = schemas
            .iter()
            .enumerate()
            .map(|(s, schema)| {
                let n = schema.len() as i64;
                schema.row((0..n).map(|i| Value::Int(10 * s as i64 + i)))
            })
            .collect();
        let x = FieldRef::new("x");
        let a = FieldRef::new("a");
        let x_name = crate::field_name("x");
        let a_name = crate::field_name("a");
        // Every order of pairs, twice each (the second read comes from memory).
        for i in 0..rows.len() {
            for j in 0..rows.len() {
                for r in [&rows[i], &rows[i], &rows[j], &rows[j], &rows[i]] {
                    assert_eq!(r.field_ref(&x), r.field(&x_name), "{r:?}");
                    assert_eq!(r.field_ref(&a), r.field(&a_name), "{r:?}");
                    let copy = x.clone();
                    assert_eq!(r.field_ref(&copy), r.field(&x_name), "{r:?}");
                }
            }
        }
        assert_eq!(rows[1].field_ref(&x), Some(&Value::Int(10)));
        assert_eq!(rows[3].field_ref(&x), Some(&Value::Int(33)));
        assert_eq!(rows[2].field_ref(&x), None);
        // A new `FieldRef` remembers no schema, not even the ones numbered 0.
        assert_eq!(
            rows[5].field_ref(&FieldRef::new("x")),
            Some(&Value::Int(51))
        );
        assert_eq!(rows[4].field_ref(&FieldRef::new("x")), None);
        // A name given as text, not shared, is found by its text.
        let unshared = FieldRef::new(Arc::<str>::from("x"));
        assert_eq!(rows[0].field_ref(&unshared), Some(&Value::Int(1)));
    }
}
