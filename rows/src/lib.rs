//! # punctual-rows
//!
//! The untyped payload: a [`Row`] of named [`Value`]s, for adapters whose schema is only known
//! from configuration (the CLI, the conformance runner, JSON lines read without a Rust type),
//! with its JSON and binary codecs. Expressions over rows (conditions, aggregates) are the
//! query language's (`punctual-sql`).
//!
//! Equality follows JSON: numbers compare by value (`4 == 4.0`), objects compare as maps (field
//! order does not matter). Rows serialize to and from JSON objects.
//!
//! ```
//! use punctual_rows::{Row, Value};
//! let a: Row = serde_json::from_str(r#"{"k": "A", "v": 4}"#).unwrap();
//! let b: Row = serde_json::from_str(r#"{"v": 4.0, "k": "A"}"#).unwrap();
//! assert_eq!(a, b);
//! assert_eq!(a.get("k"), Some(&Value::from("A")));
//! ```

use std::cell::RefCell;
use std::collections::HashMap;
use std::fmt;
use std::hash::BuildHasherDefault;
use std::mem::ManuallyDrop;
use std::sync::{Arc, Mutex, PoisonError};

use punctual_core::ops::FxHasher;

mod codec;
mod field_ref;
mod schema;
mod text;
mod value;

pub use field_ref::FieldRef;
pub use schema::{DuplicateField, Schema};
pub use text::Text;
pub use value::{compare_values, Value};

/// Named values in insertion order; compared as a map.
///
/// A row is its [`Schema`] (the names, shared by every row with the same names: one pointer)
/// and its values by position. A row of up to [`Schema::INLINE`] fields keeps its values
/// inline, so building one allocates nothing and a batch of them keeps them in its column; a
/// wider row keeps them in one allocation, shared by its clones (copied on the first change).
/// Field names are shared `Arc<str>`: a name given as text is the one [`field_name`] gives
/// for that text, and finding a field by a shared name ([`Row::field`]) compares pointers
/// first.
#[derive(Clone)]
pub struct Row {
    // Dropped by `Row`'s own `drop`: see there.
    schema: ManuallyDrop<Schema>,
    values: ManuallyDrop<Values>,
}

impl Drop for Row {
    /// Rows are dropped per event, and most own nothing (an interned schema, inline numbers):
    /// whether there is anything to release is a few comparisons, inlined where the row is
    /// dropped. (The derived drop glue was a call per row, with the rare cases' registers
    /// saved.)
    #[inline]
    fn drop(&mut self) {
        if self.schema.is_counted() || self.values.owns() {
            self.release();
        }
    }
}

impl Row {
    /// Drops what the row owns (leaving it empty).
    #[cold]
    #[inline(never)]
    fn release(&mut self) {
        drop(std::mem::replace(&mut *self.schema, Schema::empty()));
        drop(std::mem::replace(
            &mut *self.values,
            Values::Inline(Default::default()),
        ));
    }
}

/// A row's values, one per name of its schema.
enum Values {
    /// Up to [`Schema::INLINE`] values (the rest `Null`).
    Inline([Value; Schema::INLINE]),
    /// More, shared.
    Heap(Arc<[Value]>),
}

impl Values {
    /// Whether dropping the values releases something.
    #[inline(always)]
    fn owns(&self) -> bool {
        match self {
            Values::Inline([a, b]) => a.owns() || b.owns(),
            Values::Heap(_) => true,
        }
    }
}

// Written out for two inline values: an array's `clone` and `from_fn` are loops that are not
// always inlined, and rows are cloned and built per event.
const _: () = assert!(Schema::INLINE == 2);

impl Clone for Values {
    #[inline]
    fn clone(&self) -> Values {
        match self {
            Values::Inline([a, b]) => Values::Inline([a.clone(), b.clone()]),
            Values::Heap(v) => Values::Heap(Arc::clone(v)),
        }
    }
}

impl Default for Row {
    fn default() -> Row {
        Row {
            schema: ManuallyDrop::new(Schema::empty()),
            values: ManuallyDrop::new(Values::Inline(Default::default())),
        }
    }
}

impl fmt::Debug for Row {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map().entries(self.fields()).finish()
    }
}

/// What can name a field of a [`Row`]: text (`&str`, `String`), made the shared name of that
/// text ([`field_name`]), or a shared name (`Arc<str>`) taken as it is.
pub trait FieldName {
    /// The name, shared.
    fn into_name(self) -> Arc<str>;
}

impl FieldName for &str {
    fn into_name(self) -> Arc<str> {
        field_name(self)
    }
}

impl FieldName for String {
    fn into_name(self) -> Arc<str> {
        field_name(&self)
    }
}

impl FieldName for &String {
    fn into_name(self) -> Arc<str> {
        field_name(self)
    }
}

impl FieldName for Arc<str> {
    fn into_name(self) -> Arc<str> {
        self
    }
}

impl FieldName for &Arc<str> {
    fn into_name(self) -> Arc<str> {
        Arc::clone(self)
    }
}

/// Names the process keeps shared before it stops adding (then a name not among them is
/// allocated per use).
const MAX_NAMES: usize = 4096;

type NameTable = HashMap<Box<str>, Arc<str>, BuildHasherDefault<FxHasher>>;

/// The process's shared names; each thread keeps the ones it used in front of it ([`NAMES`]),
/// so the lock is taken once per name and thread.
static SHARED_NAMES: Mutex<Option<NameTable>> = Mutex::new(None);

thread_local! {
    static NAMES: RefCell<NameTable> = RefCell::new(HashMap::default());
}

/// The shared name for `text`: the same `Arc` every time, on every thread (for the first
/// 4,096 names the process sees), so that rows built field by field do not allocate a name per
/// field, and a lookup by a shared name (a compiled query's) in a row made elsewhere (an input
/// adapter's, on another thread) compares pointers.
///
/// ```
/// use punctual_rows::field_name;
/// use std::sync::Arc;
/// assert!(Arc::ptr_eq(&field_name("device"), &field_name("device")));
/// let there = std::thread::spawn(|| field_name("device")).join().unwrap();
/// assert!(Arc::ptr_eq(&field_name("device"), &there));
/// ```
pub fn field_name(text: &str) -> Arc<str> {
    NAMES.with(|names| {
        let mut names = names.borrow_mut();
        if let Some(name) = names.get(text) {
            return Arc::clone(name);
        }
        let name = shared_name(text);
        if names.len() < MAX_NAMES {
            names.insert(Box::from(text), Arc::clone(&name));
        }
        name
    })
}

/// The process's shared name for `text` (a new one if there is none and no room).
fn shared_name(text: &str) -> Arc<str> {
    let mut shared = SHARED_NAMES.lock().unwrap_or_else(PoisonError::into_inner);
    let table = shared.get_or_insert_with(HashMap::default);
    if let Some(name) = table.get(text) {
        return Arc::clone(name);
    }
    let name: Arc<str> = Arc::from(text);
    if table.len() < MAX_NAMES {
        table.insert(Box::from(text), Arc::clone(&name));
    }
    name
}

impl Eq for Row {}

impl std::hash::Hash for Row {
    /// Order-insensitive, like `==`.
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        let mut acc = 0u64;
        for (k, v) in self.named() {
            let mut h = std::collections::hash_map::DefaultHasher::new();
            (k, v).hash(&mut h);
            acc = acc.wrapping_add(std::hash::Hasher::finish(&h));
        }
        (self.len(), acc).hash(state);
    }
}

impl Row {
    /// An empty row.
    pub fn new() -> Row {
        Row::default()
    }

    /// A row of these fields, in order (a name given twice keeps its first place and its last
    /// value). Its schema is found by its names (interned: see [`Schema`]); a row of up to
    /// [`Schema::INLINE`] fields allocates nothing, a wider one allocates its values once.
    ///
    /// ```
    /// use punctual_rows::{Row, Value};
    /// let row = Row::from_fields([("k", Value::from("A")), ("v", Value::from(4))]);
    /// assert_eq!(row, Row::new().with("k", "A").with("v", 4));
    /// ```
    pub fn from_fields<K: FieldName>(fields: impl IntoIterator<Item = (K, Value)>) -> Row {
        fields.into_iter().collect()
    }

    /// A row of `schema`'s names with these values by position (missing ones `NULL`, extra
    /// ones left out).
    #[inline(always)]
    pub(crate) fn assemble(schema: Schema, values: impl IntoIterator<Item = Value>) -> Row {
        let n = schema.len();
        let mut values = values.into_iter();
        // Both ways give the values in registers (a wide row's are one pointer), so that the
        // row is written once, where it goes: a row returned from a call out of line would be
        // built in a stack slot both ways share and copied from there.
        let (schema, values) = if n > Schema::INLINE {
            let (schema, values) = Row::heap_values(schema, values);
            (schema, Values::Heap(values))
        } else {
            let mut next = |i: usize| {
                if i < n {
                    values.next().unwrap_or_default()
                } else {
                    Value::Null
                }
            };
            let first = next(0);
            (schema, Values::Inline([first, next(1)]))
        };
        Row {
            schema: ManuallyDrop::new(schema),
            values: ManuallyDrop::new(values),
        }
    }

    /// The values of a row of `schema`, wider than [`Schema::INLINE`] (missing ones `NULL`),
    /// in one allocation; the schema is given back, so that the caller holds nothing across
    /// the call.
    #[inline(never)]
    fn heap_values(schema: Schema, values: impl Iterator<Item = Value>) -> (Schema, Arc<[Value]>) {
        let n = schema.len();
        // An iterator of known length: one allocation, of the row's size.
        let mut values = values.chain(std::iter::repeat(Value::Null)).take(n);
        let values = (0..n).map(|_| values.next().unwrap_or_default()).collect();
        (schema, values)
    }

    /// The row's schema: its field names, in order.
    pub fn schema(&self) -> &Schema {
        &self.schema
    }

    /// The row's values, in the order of its schema's names.
    #[inline]
    pub fn values(&self) -> &[Value] {
        match &*self.values {
            Values::Inline(v) => &v[..self.schema.len()],
            Values::Heap(v) => v,
        }
    }

    /// The values to change in place (copied first if shared).
    fn values_mut(&mut self) -> &mut [Value] {
        let n = self.schema.len();
        match &mut *self.values {
            Values::Inline(v) => &mut v[..n],
            Values::Heap(v) => Arc::make_mut(v),
        }
    }

    /// The value of `field`, if present.
    pub fn get(&self, field: &str) -> Option<&Value> {
        self.schema.position_of(field).map(|i| &self.values()[i])
    }

    /// The value of the field named `name` (a shared name: compared by pointer first, then by
    /// text), if present: what a query compiled against field names uses.
    #[inline]
    pub fn field(&self, name: &Arc<str>) -> Option<&Value> {
        self.schema.position(name).map(|i| &self.values()[i])
    }

    /// The field named `name`, or, without one, the first whose name equals it ignoring
    /// ASCII case ([`Schema::position_any_case`]): how the query language reads a field.
    pub fn field_any_case(&self, name: &str) -> Option<&Value> {
        self.schema
            .position_any_case(name)
            .map(|i| &self.values()[i])
    }

    /// Sets `field` (replacing an existing value), keeping first-insertion order.
    pub fn set(&mut self, field: impl FieldName, value: impl Into<Value>) {
        let field = field.into_name();
        let value = value.into();
        if let Some(i) = self.schema.position(&field) {
            self.values_mut()[i] = value;
            return;
        }
        // One more field: another schema.
        let mut names = self.schema.names().to_vec();
        names.push(field);
        let schema = Schema::of(&names);
        let mut old = std::mem::take(self);
        let n = old.schema.len();
        let values: Vec<Value> = match &mut *old.values {
            Values::Inline(v) => std::mem::take(v).into_iter().take(n).collect(),
            Values::Heap(v) => v.iter().cloned().collect(),
        };
        *self = Row::assemble(schema, values.into_iter().chain(std::iter::once(value)));
    }

    /// The row with `field` set; for building rows in one expression.
    pub fn with(mut self, field: impl FieldName, value: impl Into<Value>) -> Row {
        self.set(field, value);
        self
    }

    /// Sets every field of `other`, in its order (sharing its field names): a field both
    /// have takes `other`'s value, in its place here.
    ///
    /// ```
    /// use punctual_rows::Row;
    /// let mut a = Row::new().with("k", "A").with("v", 1);
    /// a.extend(&Row::new().with("v", 2).with("w", 3));
    /// let fields: Vec<String> = a.fields().map(|(k, v)| format!("{k}={v:?}")).collect();
    /// assert_eq!(fields, ["k=Str(\"A\")", "v=Int(2)", "w=Int(3)"]);
    /// ```
    pub fn extend(&mut self, other: &Row) {
        if self.is_empty() {
            *self = other.clone();
            return;
        }
        *self = self
            .named()
            .chain(other.named())
            .map(|(k, v)| (k, v.clone()))
            .collect();
    }

    /// The row with every `(field, value)` set, in order.
    pub fn with_all<K: FieldName>(mut self, fields: impl IntoIterator<Item = (K, Value)>) -> Row {
        if self.is_empty() {
            return fields.into_iter().collect();
        }
        for (k, v) in fields {
            self.set(k, v);
        }
        self
    }

    /// Names (shared) and values, in order.
    fn named(&self) -> impl Iterator<Item = (&Arc<str>, &Value)> {
        self.schema.names().iter().zip(self.values())
    }

    /// Fields in insertion order.
    pub fn fields(&self) -> impl Iterator<Item = (&str, &Value)> {
        self.named().map(|(k, v)| (&**k, v))
    }

    /// Number of fields.
    pub fn len(&self) -> usize {
        self.schema.len()
    }

    /// Whether the row has no fields.
    pub fn is_empty(&self) -> bool {
        self.schema.is_empty()
    }

    /// Converts a JSON value; anything but an object is an error naming what it was.
    pub fn from_json(json: serde_json::Value) -> Result<Row, NotAnObject> {
        match json {
            serde_json::Value::Object(o) => Ok(object(o)),
            other => Err(NotAnObject(kind_name(&Value::from_json(other)))),
        }
    }

    /// The row as a JSON object.
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::Value::Object(
            self.named()
                .map(|(k, v)| (k.to_string(), v.to_json()))
                .collect(),
        )
    }
}

/// A JSON object as a row.
fn object(o: serde_json::Map<String, serde_json::Value>) -> Row {
    o.into_iter()
        .map(|(k, v)| (field_name(&k), Value::from_json(v)))
        .collect()
}

/// A row of these fields: a name given twice keeps its first place and its last value.
impl<K: FieldName> FromIterator<(K, Value)> for Row {
    fn from_iter<I: IntoIterator<Item = (K, Value)>>(iter: I) -> Row {
        fn build(
            (names, values): &mut (Vec<Arc<str>>, Vec<Value>),
            iter: impl Iterator<Item = (Arc<str>, Value)>,
        ) -> Row {
            for (k, v) in iter {
                match names.iter().position(|n| *n == k) {
                    Some(i) => values[i] = v,
                    None => {
                        names.push(k);
                        values.push(v);
                    }
                }
            }
            let schema = Schema::of(names);
            names.clear();
            Row::assemble(schema, values.drain(..))
        }
        let iter = iter.into_iter().map(|(k, v)| (k.into_name(), v));
        // The fields are gathered in vectors the thread keeps (unless a row is being built
        // from the values of this one: nested rows).
        SCRATCH.with(|scratch| match scratch.try_borrow_mut() {
            Ok(mut fields) => {
                fields.0.clear();
                fields.1.clear();
                build(&mut fields, iter)
            }
            Err(_) => build(&mut (Vec::new(), Vec::new()), iter),
        })
    }
}

type Scratch = (Vec<Arc<str>>, Vec<Value>);

thread_local! {
    /// Where [`Row`]'s `from_iter` gathers fields.
    static SCRATCH: RefCell<Scratch> = const { RefCell::new((Vec::new(), Vec::new())) };
}

fn kind_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Int(_) | Value::Float(_) => "a number",
        Value::Str(_) => "a string",
        Value::List(_) => "a list",
        Value::Row(_) => "an object",
    }
}

/// A payload that should be a JSON object was something else.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("a payload must be a JSON object, not {0}")]
pub struct NotAnObject(pub &'static str);

impl PartialEq for Row {
    fn eq(&self, other: &Row) -> bool {
        if self.schema.same(&other.schema) {
            return self.values() == other.values();
        }
        self.len() == other.len() && self.named().all(|(k, v)| other.field(k) == Some(v))
    }
}

impl fmt::Display for Row {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.to_json())
    }
}

#[cfg(test)]
mod tests;
