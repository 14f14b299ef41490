//! How a query's report shows payloads it holds only as `&dyn Any` (what operators still held
//! when it ended).

use std::any::Any;
use std::fmt::Debug;
use std::sync::Arc;

use punctual_rows::Row;

type ShowFn = Arc<dyn Fn(&dyn Any) -> Option<String> + Send + Sync>;

/// The payload types a query can show: the built-in ones and those given to
/// [`Query::show_held`](crate::Query::show_held).
#[derive(Clone, Default)]
pub(crate) struct Shows(Vec<ShowFn>);

impl Shows {
    /// Shows values of `T` with its `Debug` form.
    pub(crate) fn add<T: Debug + 'static>(&mut self) {
        self.0.push(Arc::new(|a| {
            a.downcast_ref::<T>().map(|t| format!("{t:?}"))
        }));
    }

    /// `payload` shown, if its type is known.
    pub(crate) fn show(&self, payload: &dyn Any) -> Option<String> {
        builtin(payload).or_else(|| self.0.iter().find_map(|f| f(payload)))
    }
}

fn builtin(a: &dyn Any) -> Option<String> {
    macro_rules! display {
        ($($t:ty),*) => {
            $(if let Some(v) = a.downcast_ref::<$t>() {
                return Some(v.to_string());
            })*
        };
    }
    macro_rules! debug {
        ($($t:ty),*) => {
            $(if let Some(v) = a.downcast_ref::<$t>() {
                return Some(format!("{v:?}"));
            })*
        };
    }
    display!(Row, i8, i16, i32, i64, u8, u16, u32, u64, usize, isize, f32, f64, bool);
    debug!(String, &'static str, char, ());
    None
}
