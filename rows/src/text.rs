//! The text of a string [`Value`](super::Value): shared, one pointer wide.

use std::borrow::Borrow;
use std::fmt;
use std::ops::Deref;
use std::sync::Arc;

/// A string value's text. It is shared (cloning it does not copy the text) and one pointer
/// wide, so that a [`Value`](super::Value) is two words and rows keep their values inline;
/// it reads as a `&str` (`Deref`).
///
/// ```
/// use punctual_rows::{Text, Value};
/// let v = Value::Str(Text::from("sensor-1"));
/// assert_eq!(v.as_str(), Some("sensor-1"));
/// let Value::Str(text) = &v else { unreachable!() };
/// assert!(text.starts_with("sensor"));
/// assert_eq!(text, "sensor-1");
/// ```
#[derive(Clone, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Text(Arc<String>);

impl Text {
    /// The text as a string slice.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl Deref for Text {
    type Target = str;
    fn deref(&self) -> &str {
        &self.0
    }
}

impl AsRef<str> for Text {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

impl Borrow<str> for Text {
    fn borrow(&self) -> &str {
        &self.0
    }
}

impl From<&str> for Text {
    fn from(s: &str) -> Text {
        Text(Arc::new(s.to_owned()))
    }
}

impl From<String> for Text {
    fn from(s: String) -> Text {
        Text(Arc::new(s))
    }
}

impl From<&String> for Text {
    fn from(s: &String) -> Text {
        Text::from(s.as_str())
    }
}

impl From<Text> for String {
    fn from(t: Text) -> String {
        Arc::unwrap_or_clone(t.0)
    }
}

impl FromIterator<char> for Text {
    fn from_iter<I: IntoIterator<Item = char>>(iter: I) -> Text {
        Text::from(iter.into_iter().collect::<String>())
    }
}

impl<'a> FromIterator<&'a str> for Text {
    fn from_iter<I: IntoIterator<Item = &'a str>>(iter: I) -> Text {
        Text::from(iter.into_iter().collect::<String>())
    }
}

impl FromIterator<String> for Text {
    fn from_iter<I: IntoIterator<Item = String>>(iter: I) -> Text {
        Text::from(iter.into_iter().collect::<String>())
    }
}

impl PartialEq<str> for Text {
    fn eq(&self, other: &str) -> bool {
        self.as_str() == other
    }
}

impl PartialEq<&str> for Text {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

impl fmt::Debug for Text {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.as_str(), f)
    }
}

impl fmt::Display for Text {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self)
    }
}
