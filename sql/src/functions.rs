//! User-defined functions and aggregates: Rust closures and types registered under a name
//! ([`Functions`]) and called from a query as `udf.NAME(...)` and `uda.NAME(...)`, as Stream
//! Analytics calls its JavaScript and C# ones.
//!
//! ```
//! use punctual_rows::Value;
//! use punctual_sql::{Functions, SqlQuery};
//!
//! let functions = Functions::new().function("hex2int", |args: &[Value]| match &args[0] {
//!     Value::Str(s) => i64::from_str_radix(s, 16)
//!         .map(Value::Int)
//!         .map_err(|e| format!("not hexadecimal: {e}")),
//!     Value::Null => Ok(Value::Null),
//!     _ => Err("hex2int reads a text".to_owned()),
//! });
//! let sql = SqlQuery::parse("SELECT Device_id, udf.Hex2Int(HexValue) AS Decimal FROM Input")
//!     .unwrap()
//!     .with_functions(functions);
//! assert!(sql.functions().has_function("hex2int"));
//! ```

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

use punctual_rows::Value;

/// A scalar function: the values of its arguments to its value, or why it cannot make one
/// (the row is then dropped with that reason, counted and dead-lettered).
pub type ScalarFunction = dyn Fn(&[Value]) -> Result<Value, String> + Send + Sync;

/// A user-defined aggregate, as Stream Analytics' JavaScript aggregates are written: a state
/// made at the start of each group and window, each member's arguments accumulated into it,
/// the result computed from it.
///
/// ```
/// use punctual_rows::Value;
/// use punctual_sql::UserAggregate;
///
/// /// The product of the members' first argument (numbers; others are left out).
/// struct Product;
/// impl UserAggregate for Product {
///     fn init(&self) -> Value {
///         Value::Float(1.0)
///     }
///     fn accumulate(&self, state: &mut Value, args: &[Value]) {
///         if let (Value::Float(p), Some(x)) = (&*state, args[0].as_f64()) {
///             *state = Value::Float(p * x);
///         }
///     }
///     fn result(&self, state: &Value) -> Value {
///         state.clone()
///     }
/// }
/// ```
pub trait UserAggregate: Send + Sync + 'static {
    /// The state of a group with no members yet.
    fn init(&self) -> Value;
    /// Adds a member, given the values of the call's arguments over it.
    fn accumulate(&self, state: &mut Value, args: &[Value]);
    /// The result for the members accumulated so far.
    fn result(&self, state: &Value) -> Value;
}

/// The functions and aggregates a query may call, by name (any ASCII case). Cheap to clone:
/// each is shared.
#[derive(Clone, Default)]
pub struct Functions {
    scalars: BTreeMap<String, Arc<ScalarFunction>>,
    aggregates: BTreeMap<String, Arc<dyn UserAggregate>>,
}

impl Functions {
    /// No functions.
    pub fn new() -> Functions {
        Functions::default()
    }

    /// With `f` callable as `udf.NAME(...)` (replacing one of the same name).
    pub fn function(
        mut self,
        name: &str,
        f: impl Fn(&[Value]) -> Result<Value, String> + Send + Sync + 'static,
    ) -> Functions {
        self.scalars.insert(name.to_ascii_lowercase(), Arc::new(f));
        self
    }

    /// With `aggregate` callable as `uda.NAME(...)` in a grouped select (replacing one of the
    /// same name).
    pub fn aggregate(mut self, name: &str, aggregate: impl UserAggregate) -> Functions {
        self.aggregates
            .insert(name.to_ascii_lowercase(), Arc::new(aggregate));
        self
    }

    /// Whether a function of this name is registered.
    pub fn has_function(&self, name: &str) -> bool {
        self.scalars.contains_key(&name.to_ascii_lowercase())
    }

    /// Whether an aggregate of this name is registered.
    pub fn has_aggregate(&self, name: &str) -> bool {
        self.aggregates.contains_key(&name.to_ascii_lowercase())
    }

    /// The functions' names, then the aggregates', each sorted.
    pub fn names(&self) -> (Vec<&str>, Vec<&str>) {
        (
            self.scalars.keys().map(String::as_str).collect(),
            self.aggregates.keys().map(String::as_str).collect(),
        )
    }

    /// Adds every function and aggregate of `other` (replacing those of the same names).
    pub fn extend(&mut self, other: &Functions) {
        for (k, v) in &other.scalars {
            self.scalars.insert(k.clone(), v.clone());
        }
        for (k, v) in &other.aggregates {
            self.aggregates.insert(k.clone(), v.clone());
        }
    }
}

impl fmt::Debug for Functions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (scalars, aggregates) = self.names();
        f.debug_struct("Functions")
            .field("udf", &scalars)
            .field("uda", &aggregates)
            .finish()
    }
}

/// A registered scalar function as an expression calls it.
#[derive(Clone)]
pub(crate) struct Udf {
    pub(crate) name: String,
    pub(crate) f: Arc<ScalarFunction>,
}

impl fmt::Debug for Udf {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "udf.{}", self.name)
    }
}

/// A registered aggregate as a grouped select calls it.
#[derive(Clone)]
pub(crate) struct Uda {
    pub(crate) name: String,
    pub(crate) aggregate: Arc<dyn UserAggregate>,
}

impl fmt::Debug for Uda {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "uda.{}", self.name)
    }
}

thread_local! {
    /// The functions of the query being compiled (see [`compiling_with`]).
    static COMPILING: RefCell<Functions> = RefCell::new(Functions::default());
}

/// `compile` run with `functions` as those its expressions may call.
pub(crate) fn compiling_with<T>(functions: &Functions, compile: impl FnOnce() -> T) -> T {
    let before = COMPILING.with(|c| c.replace(functions.clone()));
    let out = compile();
    COMPILING.with(|c| *c.borrow_mut() = before);
    out
}

/// What `udf.NAME` and `uda.NAME` name: `Ok(Some(..))` a registered one, `Ok(None)` a name
/// without that prefix, `Err(why)` one not registered.
pub(crate) enum Called {
    Function(Udf),
    Aggregate(Uda),
}

/// The registered function or aggregate `name` calls (`udf.NAME`, `uda.NAME`), `None` if it
/// has neither prefix, or why not.
pub(crate) fn called(name: &str) -> Option<Result<Called, String>> {
    let lower = name.to_ascii_lowercase();
    let (kind, short) = lower.split_once('.')?;
    if kind != "udf" && kind != "uda" {
        return None;
    }
    Some(COMPILING.with(|c| {
        let c = c.borrow();
        let (scalars, aggregates) = c.names();
        let found = match kind {
            "udf" => c.scalars.get(short).map(|f| {
                Called::Function(Udf {
                    name: short.to_owned(),
                    f: f.clone(),
                })
            }),
            _ => c.aggregates.get(short).map(|a| {
                Called::Aggregate(Uda {
                    name: short.to_owned(),
                    aggregate: a.clone(),
                })
            }),
        };
        found.ok_or_else(|| {
            let registered = if kind == "udf" { scalars } else { aggregates };
            let listed = if registered.is_empty() {
                "none is registered: register it from Rust with SqlQuery::with_functions, or run the job with a binary that does (punctual::cli::main_with)".to_owned()
            } else {
                format!("registered: {}", registered.join(", "))
            };
            format!("`{name}` is not a registered {} ({listed})", if kind == "udf" { "function" } else { "aggregate" })
        })
    }))
}
