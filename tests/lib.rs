//! Integration and conformance tests of Punctual live in this package's test targets; what
//! several of them share is here.

pub mod split_cases;
