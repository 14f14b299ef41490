//! # punctual-adapters
//!
//! Async adapter traits and factories, query binding, the tokio runtime and built-in adapters.

#![warn(missing_docs)]

pub mod line;
