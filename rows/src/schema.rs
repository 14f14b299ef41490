//! A row's field names, shared by every row with the same names: [`Schema`].

use std::cell::RefCell;
use std::collections::HashMap;
use std::fmt;
use std::hash::{BuildHasherDefault, Hash, Hasher};
use std::sync::{Arc, Mutex, OnceLock};

use super::{FieldName, Row, Value};
use punctual_core::ops::FxHasher;

/// The names of a row's fields, in order: one pointer shared by every row with these names.
///
/// A row keeps its values by position and its names in its schema, so building a row costs
/// no name at all, and a row of up to [`Schema::INLINE`] fields keeps its values inline (no
/// allocation: in a batch, they sit in the batch's column). Schemas are interned for the
/// process: the same names in the same order are the same schema, whoever made them (the first
/// 16,384 sets of names; after that a schema is counted by reference instead).
///
/// Make a schema once where the names are known (an adapter's columns, a query's output) and
/// build rows from it with [`Schema::row`]; [`Row::from_fields`] finds the schema of its names
/// itself.
///
/// ```
/// use punctual_rows::{Row, Schema, Value};
/// let schema = Schema::new(["device", "celsius"]).unwrap();
/// let row = schema.row([Value::from("d1"), Value::from(21.5)]);
/// assert_eq!(row, Row::from_fields([("device", Value::from("d1")), ("celsius", Value::from(21.5))]));
/// assert_eq!(row.schema(), &schema);
/// assert!(Schema::new(["a", "a"]).is_err());
/// ```
#[derive(Clone)]
pub struct Schema(Names);

#[derive(Clone)]
enum Names {
    /// Interned for the process.
    Static(&'static SchemaData),
    /// Made after the process's interned schemas reached their bound.
    Counted(Arc<SchemaData>),
}

pub(crate) struct SchemaData {
    names: Vec<Arc<str>>,
    /// The interned schema's number (from 1), or 0 for a schema that is not interned (the
    /// empty one, a counted one): what a [`FieldRef`](super::FieldRef) remembers.
    id: u32,
}

static EMPTY: SchemaData = SchemaData {
    names: Vec::new(),
    id: 0,
};

/// A schema given the same name twice.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the field `{0}` is named twice")]
pub struct DuplicateField(pub String);

impl Schema {
    /// How many values a row keeps inline, without an allocation.
    pub const INLINE: usize = 2;

    /// The schema of no fields.
    pub fn empty() -> Schema {
        Schema(Names::Static(&EMPTY))
    }

    /// The schema of these names, in order; a name given twice is an error.
    pub fn new<K: FieldName>(names: impl IntoIterator<Item = K>) -> Result<Schema, DuplicateField> {
        let names: Vec<Arc<str>> = names.into_iter().map(FieldName::into_name).collect();
        for (i, n) in names.iter().enumerate() {
            if names[..i].contains(n) {
                return Err(DuplicateField(n.to_string()));
            }
        }
        Ok(Schema::of(&names))
    }

    /// The interned schema of these names (distinct, not checked here).
    pub(crate) fn of(names: &[Arc<str>]) -> Schema {
        if names.is_empty() {
            return Schema::empty();
        }
        let key = pointers_hash(names);
        let found = LOCAL.with(|local| {
            local.borrow().get(&key).and_then(|bucket| {
                bucket
                    .iter()
                    .find(|(n, _)| {
                        n.len() == names.len()
                            && n.iter().zip(names).all(|(a, b)| Arc::ptr_eq(a, b))
                    })
                    .map(|(_, s)| s.clone())
            })
        });
        if let Some(s) = found {
            return s;
        }
        let schema = global(names);
        if let Names::Static(_) = schema.0 {
            LOCAL.with(|local| {
                let mut local = local.borrow_mut();
                if local.len() < MAX_LOCAL {
                    local
                        .entry(key)
                        .or_default()
                        .push((names.to_vec(), schema.clone()));
                }
            });
        }
        schema
    }

    /// A schema counted by reference, as the process makes once its interned schemas reached
    /// their bound.
    #[cfg(test)]
    pub(crate) fn counted(names: &[Arc<str>]) -> Schema {
        Schema(Names::Counted(Arc::new(SchemaData {
            names: names.to_vec(),
            id: 0,
        })))
    }

    /// Whether the schema is counted by reference (not interned): dropping it releases it.
    #[inline(always)]
    pub(crate) fn is_counted(&self) -> bool {
        matches!(self.0, Names::Counted(_))
    }

    #[inline]
    fn data(&self) -> &SchemaData {
        match &self.0 {
            Names::Static(d) => d,
            Names::Counted(d) => d,
        }
    }

    /// The interned schema's number (from 1; unique for the process), or 0 if it is not
    /// interned.
    #[inline]
    pub(crate) fn id(&self) -> u32 {
        self.data().id
    }

    /// The names, in order.
    #[inline]
    pub fn names(&self) -> &[Arc<str>] {
        &self.data().names
    }

    /// How many fields.
    pub fn len(&self) -> usize {
        self.data().names.len()
    }

    /// Whether there are no fields.
    pub fn is_empty(&self) -> bool {
        self.data().names.is_empty()
    }

    /// Where the field named `name` is (a shared name: compared by pointer first, then by
    /// text).
    #[inline]
    pub fn position(&self, name: &Arc<str>) -> Option<usize> {
        let names = self.names();
        match names.iter().position(|k| Arc::ptr_eq(k, name)) {
            Some(i) => Some(i),
            None => position_by_text(names, name),
        }
    }

    /// Where the field named `name` is, or, without one, the first whose name equals it
    /// ignoring ASCII case (the query language's names: `make` reads `Make`).
    ///
    /// ```
    /// use punctual_rows::Schema;
    /// let s = Schema::new(["Make", "make", "Time"]).unwrap();
    /// assert_eq!(s.position_any_case("make"), Some(1)); // the exact name first
    /// assert_eq!(s.position_any_case("TIME"), Some(2));
    /// assert_eq!(s.position_any_case("weight"), None);
    /// ```
    pub fn position_any_case(&self, name: &str) -> Option<usize> {
        let names = self.names();
        names
            .iter()
            .position(|k| &**k == name)
            .or_else(|| names.iter().position(|k| k.eq_ignore_ascii_case(name)))
    }

    /// Where the field named `name` is.
    pub fn position_of(&self, name: &str) -> Option<usize> {
        self.names().iter().position(|k| &**k == name)
    }

    /// A row of these values, one per name in order (missing values are `NULL`, extra ones
    /// are left out).
    #[inline]
    pub fn row(&self, values: impl IntoIterator<Item = Value>) -> Row {
        Row::assemble(self.clone(), values)
    }

    /// Whether the two are the same schema object (so rows of both have values at the same
    /// positions): a pointer comparison.
    #[inline]
    pub fn same(&self, other: &Schema) -> bool {
        std::ptr::eq(self.data(), other.data())
    }
}

/// Where a name that is not one of `names`' shared names is, by its text: out of line, so
/// that the usual lookup (a shared name, found by pointer) is a short loop inlined where a
/// field is read.
#[cold]
#[inline(never)]
fn position_by_text(names: &[Arc<str>], name: &Arc<str>) -> Option<usize> {
    names.iter().position(|k| **k == **name)
}

impl PartialEq for Schema {
    fn eq(&self, other: &Schema) -> bool {
        self.same(other) || self.names() == other.names()
    }
}

impl Eq for Schema {}

impl fmt::Debug for Schema {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.names()).finish()
    }
}

/// Interned schemas a process keeps before it counts new ones by reference.
const MAX_SCHEMAS: usize = 1 << 14;
/// Schemas a thread finds by its names' pointers.
const MAX_LOCAL: usize = 4096;

type Interned = HashMap<Vec<Arc<str>>, &'static SchemaData, BuildHasherDefault<FxHasher>>;

fn global(names: &[Arc<str>]) -> Schema {
    static SCHEMAS: OnceLock<Mutex<Interned>> = OnceLock::new();
    let schemas = SCHEMAS.get_or_init(|| {
        // Before the first row with fields: values taken from rows as keys index the
        // operators' tables as integers do.
        punctual_core::ops::index_keys::<Value>(Value::table_index);
        Mutex::new(HashMap::default())
    });
    // A poisoned lock only means another thread panicked while holding it; the map is whole.
    let mut schemas = schemas.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(d) = schemas.get(names) {
        return Schema(Names::Static(d));
    }
    if schemas.len() >= MAX_SCHEMAS {
        return Schema(Names::Counted(Arc::new(SchemaData {
            names: names.to_vec(),
            id: 0,
        })));
    }
    // Numbered from 1 in the order they are interned (below `MAX_SCHEMAS`: fits).
    let data = SchemaData {
        names: names.to_vec(),
        id: u32::try_from(schemas.len() + 1).unwrap_or(0),
    };
    let data: &'static SchemaData = Box::leak(Box::new(data));
    schemas.insert(names.to_vec(), data);
    Schema(Names::Static(data))
}

/// Schemas found by the pointers of their names (the names are kept, so a pointer is not
/// reused for another name while it is here).
type Local = HashMap<u64, Vec<(Vec<Arc<str>>, Schema)>, BuildHasherDefault<FxHasher>>;

thread_local! {
    static LOCAL: RefCell<Local> = RefCell::new(HashMap::default());
}

fn pointers_hash(names: &[Arc<str>]) -> u64 {
    let mut h = FxHasher::default();
    for n in names {
        (Arc::as_ptr(n) as *const u8 as usize).hash(&mut h);
    }
    h.finish()
}
