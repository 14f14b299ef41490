//! Integration and conformance tests of Punctual live in this package's test targets.
