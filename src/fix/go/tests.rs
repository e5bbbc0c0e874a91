//! Tests of the Go side.
